//! `convert`: the pipeline from inputs to one output, streamed.
//!
//! Chrome JSON and Perfetto: [`convert_timeline`] reads any number of inputs
//! (FDR files, `recv` directories, Trace2 streams) into the one timeline model
//! ([`crate::timeline`]) and hands it to the format's writer
//! ([`crate::out::chrome`], [`crate::out::perfetto`]); one FDR file is the
//! pipeline with one input.
//!
//! YAML: llvm-xray's format lists one FDR file's records, not a timeline:
//! [`Input`] reads the file in place ([`TraceFile`]), verifies and indexes it
//! in one pass ([`crate::read::index::scan`]), then merges its threads in TSC
//! order for [`crate::out::yaml`]. Nothing grows with the number of records.

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use flightrec_core::fdr::decoder::DecodeError;

use crate::names::Names;
use crate::out::chrome::ChromeSink;
use crate::out::perfetto::PerfettoSink;
use crate::out::yaml::write_yaml_events;
use crate::progress::Progress;
use crate::read::file::TraceFile;
use crate::read::index::{scan_file_cut_short, Index};
use crate::timeline::{merge_timeline, TimelineInput, TimelineReport};

/// Events between two page releases of the input.
const RELEASE_EVERY_EVENTS: u64 = 1 << 12;

/// Why a file was not converted. Example on [`Input`].
#[derive(Debug)]
pub enum ConvertError {
    /// The input could not be opened or read.
    Unreadable(io::Error),
    /// The input is not a valid FDR trace: the first error, with its offset.
    Invalid(DecodeError),
}

/// One FDR file, verified and indexed, ready to be written as llvm-xray's YAML.
///
/// ```
/// use flightrec_host::convert::{ConvertError, Converted, Input};
/// use flightrec_host::names::Names;
/// use flightrec_host::progress::Progress;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.xray");
/// std::fs::write(&path, include_bytes!("../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// let progress = Progress::new(true);
/// let input = Input::open(&path, &progress).unwrap();
/// assert!(input.cut_short().is_none()); // a whole file (or one with no end-block promise)
/// let mut yaml = Vec::new();
/// let done = input.write_yaml(&Names::empty(), &mut yaml, &progress).unwrap();
/// assert_eq!(done.events, 6);
/// let done: Converted = done;
/// assert_eq!((done.input_bytes as usize, input.index().threads()), (std::fs::metadata(&path).unwrap().len() as usize, 2));
/// assert!(done.summary_line(std::time::Duration::from_secs(1)).contains("6 records"));
///
/// // A bad file: its offset and reason.
/// std::fs::write(&path, include_bytes!("../../testdata/xray/bad-fn-action5.xray")).unwrap();
/// let err = Input::open(&path, &progress).unwrap_err();
/// assert!(matches!(err, ConvertError::Invalid(e) if e.offset == 112));
/// let missing = Input::open(&dir.path().join("missing"), &progress).unwrap_err();
/// assert!(matches!(missing, ConvertError::Unreadable(_)));
/// ```
#[derive(Debug)]
pub struct Input {
    file: TraceFile,
    index: Index,
    cut: Option<DecodeError>,
}

/// What a conversion did. Example on [`Input`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Converted {
    /// Bytes of input.
    pub input_bytes: u64,
    /// YAML records written.
    pub events: u64,
}

impl Converted {
    /// The throughput line printed after a conversion. Example on [`Input`].
    pub fn summary_line(&self, took: Duration) -> String {
        let secs = took.as_secs_f64().max(1e-9);
        format!(
            "{:.1} MB, {} records in {:.2} s: {:.1} MB/s, {:.2} M records/s",
            self.input_bytes as f64 / 1e6,
            self.events,
            secs,
            self.input_bytes as f64 / 1e6 / secs,
            self.events as f64 / 1e6 / secs
        )
    }
}

impl Input {
    /// Maps, verifies and indexes the file. Example on [`Input`].
    ///
    /// A file cut short between two buffers (no end block where its header
    /// promises one) opens with the buffers it holds; [`Input::cut_short`] says so.
    pub fn open(path: &Path, progress: &Progress) -> Result<Self, ConvertError> {
        let file = TraceFile::open(path).map_err(ConvertError::Unreadable)?;
        let (index, cut) = scan_file_cut_short(&file, progress).map_err(ConvertError::Invalid)?;
        Ok(Self { file, index, cut })
    }

    /// Why the file is incomplete, when it was cut short between two buffers
    /// (`DecodeErrorKind::CutShort`, what `verify` reports): converted all the
    /// same. Example on [`Input`].
    pub fn cut_short(&self) -> Option<&DecodeError> {
        self.cut.as_ref()
    }

    /// The index. Example on [`Input`].
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Writes the trace as `llvm-xray convert --output-format=yaml` does, byte
    /// for byte. Example on [`Input`].
    pub fn write_yaml(
        &self,
        names: &Names,
        out: &mut impl Write,
        progress: &Progress,
    ) -> io::Result<Converted> {
        let bytes = self.file.bytes();
        let len = bytes.len() as u64;
        progress.pass(len, "sorting");
        let mut merged = self
            .index
            .merged_releasing(bytes, &mut |n| self.file.consumed(n));
        progress.pass(len, "writing");
        let mut read = 0u64;
        let mut n = 0u64;
        let next = || {
            n += 1;
            if n % RELEASE_EVERY_EVENTS == 0 {
                let r = merged.take_read();
                self.file.consumed(r);
                read += r as u64;
                progress.advance(read);
            }
            merged.next_event()
        };
        let events = write_yaml_events(self.index.header(), next, names, out)?;
        Ok(Converted {
            input_bytes: len,
            events,
        })
    }
}

/// The output format of a timeline. Example on [`convert_timeline`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineFormat {
    /// Chrome trace-event JSON.
    Chrome,
    /// Perfetto's protobuf trace.
    Perfetto,
}

/// Converts `inputs` to one timeline in `format` on `out`.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::TimelineInput;
///
/// let dir = tempfile::tempdir().unwrap();
/// let fdr = dir.path().join("t.xray");
/// std::fs::write(&fdr, include_bytes!("../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// // A Trace2 stream of process 4242 (as its session id says), main thread.
/// let t2 = dir.path().join("t2.json");
/// std::fs::write(&t2, concat!(
///     r#"{"event":"region_enter","sid":"S-P00001092","thread":"main","time":"1970-01-01T00:00:01.000000Z","label":"load"}"#, "\n",
///     "not json\n",
///     r#"{"event":"region_leave","sid":"S-P00001092","thread":"main","time":"1970-01-01T00:00:01.000001Z","label":"load"}"#, "\n",
/// )).unwrap();
/// let bad = dir.path().join("bad.xray");
/// std::fs::write(&bad, include_bytes!("../../testdata/xray/bad-fn-action5.xray")).unwrap();
/// let inputs: Vec<TimelineInput> = [&fdr, &t2, &bad]
///     .iter()
///     .map(|p| TimelineInput { path: p.to_path_buf(), names: Names::empty() })
///     .collect();
/// let mut json = Vec::new();
/// let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
/// // Threads 101 and 202 of process 4242, and its main thread (4242) from Trace2.
/// assert_eq!((report.sources, report.slices, report.tracks), (2, 4, 3));
/// // The bad FDR file and the bad line: reported with their offsets, the rest converted.
/// let problems: Vec<String> = report.problems.iter().map(|p| p.to_string()).collect();
/// assert!(problems[0].ends_with("bad.xray: at byte 112: unknown function record action 5; left out"));
/// assert!(problems[1].contains("t2.json: at byte 113: line 2: not JSON"), "{problems:?}");
/// let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
/// let events = doc["traceEvents"].as_array().unwrap();
/// let region = events.iter().find(|e| e["name"] == "load").unwrap();
/// assert_eq!((region["pid"].as_u64(), region["tid"].as_u64()), (Some(4242), Some(4242)));
/// assert_eq!(region["dur"].as_f64(), Some(1.0));
/// ```
pub fn convert_timeline(
    inputs: &[TimelineInput],
    format: TimelineFormat,
    out: &mut impl Write,
) -> io::Result<TimelineReport> {
    match format {
        TimelineFormat::Chrome => merge_timeline(inputs, &mut ChromeSink::new(out)),
        TimelineFormat::Perfetto => merge_timeline(inputs, &mut PerfettoSink::new(out)),
    }
}
