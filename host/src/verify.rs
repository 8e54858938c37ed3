//! `verify`: the core's decoder and verifier over whole files, streamed.

use std::path::Path;

use std::collections::HashSet;

use flightrec_core::fdr::decoder::{DecodeError, Decoder, Summary};
use flightrec_core::fdr::records::Record;

use crate::names::Names;

use crate::progress::Progress;
use crate::read::file::TraceFile;
use crate::read::index::verify_only;

/// The verdict on one file.
///
/// ```
/// use flightrec_host::progress::Progress;
/// use flightrec_host::verify::{describe, verify_file, Verdict};
///
/// let dir = tempfile::tempdir().unwrap();
/// let good = dir.path().join("good.xray");
/// std::fs::write(&good, include_bytes!("../../testdata/xray/crafted-v5.xray")).unwrap();
/// let bad = dir.path().join("bad.xray");
/// std::fs::write(&bad, include_bytes!("../../testdata/xray/bad-fn-action5.xray")).unwrap();
/// let progress = Progress::new(true); // quiet: no bar
///
/// let Verdict::Valid(summary) = verify_file(&good, &progress) else { panic!("not valid") };
/// assert_eq!(
///     describe(&summary),
///     "version 5, 1000000000 Hz, 1 buffers, 10 function records, 1 custom and 0 typed events"
/// );
/// // llvm-xray: "Unknown function record type '5' at offset 112."
/// let Verdict::Invalid(e) = verify_file(&bad, &progress) else { panic!("not invalid") };
/// assert_eq!(e.to_string(), "at byte 112: unknown function record action 5");
/// let missing = verify_file(&dir.path().join("missing.xray"), &progress);
/// assert!(matches!(missing, Verdict::Unreadable(e) if e.kind() == std::io::ErrorKind::NotFound));
/// ```
#[derive(Debug)]
pub enum Verdict {
    /// The file is a valid FDR trace.
    Valid(Summary),
    /// The file is not valid: the first error, with its byte offset.
    Invalid(DecodeError),
    /// The file could not be read.
    Unreadable(std::io::Error),
}

/// Verifies one file in place (memory-mapped, pages dropped as the reading goes
/// on, so any size fits), showing the pass on `progress`. Example on
/// [`Verdict`].
///
/// FIFOs, sockets, devices and directories are [`Verdict::Unreadable`] with the
/// reason, without being opened.
pub fn verify_file(path: &Path, progress: &Progress) -> Verdict {
    let file = match TraceFile::open(path) {
        Ok(f) => f,
        Err(e) => return Verdict::Unreadable(e),
    };
    // The verdict without the block index: memory independent of the
    // number of buffers.
    let bytes = file.bytes();
    progress.pass(bytes.len() as u64, "verifying");
    let mut last = 0usize;
    let verdict = verify_only(bytes, &mut |at| {
        file.consumed(at.saturating_sub(last));
        last = at;
        progress.advance(at as u64);
    });
    match verdict {
        Ok(summary) => Verdict::Valid(summary),
        Err(e) => Verdict::Invalid(e),
    }
}

/// One line for a valid file: what it holds. Example on [`Verdict`].
///
/// A file that ends with the end block its header promises (what the desktop
/// runtime writes: see `flightrec_core::fdr::end`) says so, since only then is
/// it known to be whole.
pub fn describe(s: &Summary) -> String {
    format!(
        "version {}, {} Hz, {} buffers, {} function records, {} custom and {} typed events{}",
        s.header.version.number(),
        s.header.cycle_frequency.get(),
        s.buffers,
        s.function_records,
        s.custom_events,
        s.typed_events,
        if s.end_block {
            ", whole (end block)"
        } else {
            ""
        }
    )
}

/// The function ids of a trace that `names` does not name: how many distinct
/// ids the trace has, how many of them are unnamed, and the first few of
/// those (in the order they appear). What `verify --names ./program` says
/// when the program is not the one that wrote the trace.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::verify::unnamed_ids;
/// let bytes = include_bytes!("../../testdata/xray/crafted-v5.xray");
/// let names = Names::parse("1 main\n3 leaf\n").unwrap();
/// let (ids, unnamed, first) = unnamed_ids(bytes, &names, &mut |_| {});
/// assert_eq!((ids, unnamed), (4, 2));
/// assert_eq!(first, [2, 4]);
/// ```
pub fn unnamed_ids(
    bytes: &[u8],
    names: &Names,
    reached: &mut dyn FnMut(usize),
) -> (usize, usize, Vec<u32>) {
    /// Distinct ids remembered at most (a hostile trace cannot grow it).
    const MAX_IDS: usize = 1 << 20;
    const FIRST: usize = 8;
    let mut seen = HashSet::new();
    let mut unnamed = 0;
    let mut first = Vec::new();
    let Ok(decoder) = Decoder::new(bytes) else {
        return (0, 0, first);
    };
    for (n, item) in decoder.enumerate() {
        let Ok(d) = item else { break };
        if n % 4096 == 0 {
            reached(d.offset);
        }
        if let Record::Function { id, .. } = d.record {
            let id = id.get();
            if seen.len() < MAX_IDS && seen.insert(id) && names.get(id).is_none() {
                unnamed += 1;
                if first.len() < FIRST {
                    first.push(id);
                }
            }
        }
    }
    reached(bytes.len());
    (seen.len(), unnamed, first)
}
