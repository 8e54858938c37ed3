//! What `recv` does with each frame: one FDR file per source, written a buffer at a
//! time, and one text file of Trace2 lines.
//!
//! A source's file is created with its first buffer (header and buffer together, so
//! no file is ever left without a buffer) and every later buffer is appended and
//! handed to the operating system at once: a run that is interrupted keeps every
//! buffer it received, and the file is a valid FDR file after each one. Buffers that
//! arrive before their source's header (a receiver that joined late) wait in memory
//! for the header. Each buffer is checked with the core's verifier before it is
//! written; one that does not verify is counted and left out, so it cannot spoil
//! the file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::FileHeader;
use flightrec_core::link::{Frame, FrameKind, LinkStats};

/// Buffers held per source while its header has not arrived.
const MAX_WAITING: usize = 256;

/// What was received from one source.
///
/// ```
/// use flightrec_host::core::fdr::ring::RingStats;
/// use flightrec_host::core::link::{Frame, FrameHead, FrameKind, LinkStats};
/// use flightrec_host::collect::Collector;
///
/// let dir = tempfile::tempdir().unwrap();
/// let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// let frame = |kind, payload| Frame { head: FrameHead { kind, source: 3, seq: 0 }, payload };
/// let trace = include_bytes!("../../testdata/xray/crafted-v5.xray");
/// let (header, buffer) = trace.split_at(32);
///
/// c.frame(&frame(FrameKind::FileHeader, header)).unwrap();
/// c.frame(&frame(FrameKind::FdrBuffer, buffer)).unwrap();
/// // A buffer cut short does not verify: counted and left out.
/// c.frame(&frame(FrameKind::FdrBuffer, &buffer[..40])).unwrap();
/// let stats = LinkStats {
///     ring: RingStats { records_dropped: 12, ..RingStats::default() },
///     frames_failed: 0,
/// };
/// c.frame(&frame(FrameKind::Stats, &stats.to_bytes())).unwrap();
/// c.finish().unwrap();
///
/// let (id, report) = c.sources().next().unwrap();
/// assert_eq!(id, 3);
/// assert_eq!((report.buffers, report.invalid_buffers, report.headerless_buffers), (1, 1, 0));
/// assert_eq!(report.path.as_deref(), Some(dir.path().join("source-3.xray").as_path()));
/// assert_eq!(report.stats.unwrap().ring.records_dropped, 12);
/// ```
#[derive(Debug, Default)]
pub struct SourceReport {
    /// The file written, once there is one.
    pub path: Option<PathBuf>,
    /// Buffers written to the file.
    pub buffers: u64,
    /// Buffers that did not verify and were left out.
    pub invalid_buffers: u64,
    /// Buffers still waiting for a header at the end (lost).
    pub headerless_buffers: u64,
    /// The latest counters the target sent.
    pub stats: Option<LinkStats>,
}

struct SourceState {
    header: Option<[u8; 32]>,
    file: Option<File>,
    /// Files started for this source (a new header starts a new file).
    generation: u32,
    waiting: Vec<Vec<u8>>,
    report: SourceReport,
}

/// Writes received frames to files in a directory.
///
/// ```
/// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
/// use flightrec_host::collect::Collector;
///
/// let dir = tempfile::tempdir().unwrap();
/// let trace2 = dir.path().join("trace2.txt");
/// let mut c = Collector::new(&dir.path().join("out"), trace2.clone()).unwrap();
/// let frame = |kind, payload| Frame { head: FrameHead { kind, source: 7, seq: 0 }, payload };
/// let trace = include_bytes!("../../testdata/xray/crafted-v5.xray");
/// let (header, buffer) = trace.split_at(32);
///
/// // A receiver that joined late: the buffer waits for its header.
/// c.frame(&frame(FrameKind::FdrBuffer, buffer)).unwrap();
/// c.frame(&frame(FrameKind::FileHeader, header)).unwrap();
/// c.frame(&frame(FrameKind::Trace2Line, b"version 2.47.3")).unwrap();
/// c.finish().unwrap();
///
/// // The source's file is the trace, byte for byte.
/// let (id, report) = c.sources().next().unwrap();
/// assert_eq!((id, report.buffers), (7, 1));
/// assert_eq!(std::fs::read(report.path.as_ref().unwrap()).unwrap(), trace);
/// // Trace2 lines get their line end.
/// assert_eq!(c.trace2(), (1, trace2.as_path()));
/// assert_eq!(std::fs::read_to_string(&trace2).unwrap(), "version 2.47.3\n");
/// assert!(!c.had_problems());
///
/// // A counter frame of the wrong size is a bad control frame.
/// c.frame(&frame(FrameKind::Stats, b"short")).unwrap();
/// assert_eq!(c.bad_control_frames(), 1);
/// assert!(c.had_problems());
/// ```
pub struct Collector {
    dir: PathBuf,
    trace2_path: PathBuf,
    trace2: Option<File>,
    trace2_lines: u64,
    sources: BTreeMap<u32, SourceState>,
    bad_headers: u64,
    bad_stats: u64,
}

impl Collector {
    /// A collector writing `source-<id>.xray` files into `dir` (created if needed)
    /// and Trace2 lines to `trace2_path`. Example on [`Collector`].
    pub fn new(dir: &Path, trace2_path: PathBuf) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            trace2_path,
            trace2: None,
            trace2_lines: 0,
            sources: BTreeMap::new(),
            bad_headers: 0,
            bad_stats: 0,
        })
    }

    fn source(&mut self, id: u32) -> &mut SourceState {
        self.sources.entry(id).or_insert_with(|| SourceState {
            header: None,
            file: None,
            generation: 0,
            waiting: Vec::new(),
            report: SourceReport::default(),
        })
    }

    /// Handles one accepted frame. Example on [`Collector`].
    pub fn frame(&mut self, frame: &Frame<'_>) -> io::Result<()> {
        let id = frame.head.source;
        match frame.head.kind {
            FrameKind::FileHeader => self.header(id, frame.payload),
            FrameKind::FdrBuffer => self.buffer(id, frame.payload.to_vec()),
            FrameKind::Trace2Line => self.trace2_line(frame.payload),
            FrameKind::Stats => {
                match LinkStats::parse(frame.payload) {
                    Some(s) => self.source(id).report.stats = Some(s),
                    None => self.bad_stats += 1,
                }
                Ok(())
            }
        }
    }

    fn header(&mut self, id: u32, payload: &[u8]) -> io::Result<()> {
        let Ok(bytes) = <[u8; 32]>::try_from(payload) else {
            self.bad_headers += 1;
            return Ok(());
        };
        if FileHeader::parse(&bytes).is_err() {
            self.bad_headers += 1;
            return Ok(());
        }
        let src = self.source(id);
        match src.header {
            Some(h) if h == bytes => {}
            Some(_) => {
                // Another trace from the same source (the target restarted with
                // other settings): it gets a new file.
                src.header = Some(bytes);
                src.file = None;
            }
            None => src.header = Some(bytes),
        }
        let waiting = std::mem::take(&mut self.source(id).waiting);
        for b in waiting {
            self.buffer(id, b)?;
        }
        Ok(())
    }

    fn buffer(&mut self, id: u32, bytes: Vec<u8>) -> io::Result<()> {
        let dir = self.dir.clone();
        let src = self.source(id);
        let Some(header) = src.header else {
            if src.waiting.len() < MAX_WAITING {
                src.waiting.push(bytes);
            } else {
                src.report.headerless_buffers += 1;
            }
            return Ok(());
        };
        let mut file_bytes = header.to_vec();
        file_bytes.extend_from_slice(&bytes);
        if verify(&file_bytes).is_err() {
            src.report.invalid_buffers += 1;
            return Ok(());
        }
        let file = match &mut src.file {
            Some(f) => f,
            None => {
                src.generation += 1;
                let name = if src.generation == 1 {
                    format!("source-{id}.xray")
                } else {
                    format!("source-{id}.{}.xray", src.generation)
                };
                let path = dir.join(name);
                let mut f = File::create(&path)?;
                f.write_all(&header)?;
                src.report.path = Some(path);
                src.file.insert(f)
            }
        };
        // Straight to the operating system: nothing waits in a user-space buffer.
        file.write_all(&bytes)?;
        src.report.buffers += 1;
        Ok(())
    }

    fn trace2_line(&mut self, line: &[u8]) -> io::Result<()> {
        let file = match &mut self.trace2 {
            Some(f) => f,
            None => self.trace2.insert(File::create(&self.trace2_path)?),
        };
        let mut out = line.to_vec();
        if !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        file.write_all(&out)?;
        self.trace2_lines += 1;
        Ok(())
    }

    /// Ends the run: buffers still waiting for a header are counted as lost.
    ///
    /// ```
    /// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
    /// use flightrec_host::collect::Collector;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
    /// let trace = include_bytes!("../../testdata/xray/crafted-v5.xray");
    /// let head = FrameHead { kind: FrameKind::FdrBuffer, source: 1, seq: 0 };
    /// c.frame(&Frame { head, payload: &trace[32..] }).unwrap();
    /// c.finish().unwrap();
    ///
    /// let (_, report) = c.sources().next().unwrap();
    /// assert_eq!((report.buffers, report.headerless_buffers), (0, 1));
    /// assert_eq!(report.path, None);
    /// assert!(c.had_problems());
    /// ```
    pub fn finish(&mut self) -> io::Result<()> {
        for src in self.sources.values_mut() {
            src.report.headerless_buffers += src.waiting.len() as u64;
            src.waiting.clear();
            if let Some(f) = &mut src.file {
                f.sync_data()?;
            }
        }
        if let Some(f) = &mut self.trace2 {
            f.sync_data()?;
        }
        Ok(())
    }

    /// Per-source results. Example on [`Collector`].
    pub fn sources(&self) -> impl Iterator<Item = (u32, &SourceReport)> {
        self.sources.iter().map(|(id, s)| (*id, &s.report))
    }

    /// Trace2 lines written, and where. Example on [`Collector`].
    pub fn trace2(&self) -> (u64, &Path) {
        (self.trace2_lines, &self.trace2_path)
    }

    /// Header and counter frames whose payload was not valid. Example on
    /// [`Collector`].
    pub fn bad_control_frames(&self) -> u64 {
        self.bad_headers + self.bad_stats
    }

    /// Whether anything was lost or left out after the link layer. Example on
    /// [`Collector`].
    pub fn had_problems(&self) -> bool {
        self.bad_control_frames() > 0
            || self
                .sources
                .values()
                .any(|s| s.report.invalid_buffers > 0 || s.report.headerless_buffers > 0)
    }
}
