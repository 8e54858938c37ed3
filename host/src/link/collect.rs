//! What `recv` does with each frame: one FDR file per source, written a buffer at a
//! time, and one text file of Trace2 lines.
//!
//! A source's file is created with its first buffer (header and buffer together, so
//! no file is ever left without a buffer) and every later buffer is appended and
//! handed to the operating system at once: a run that is interrupted keeps every
//! buffer it received, and the file is a valid FDR file after each one. Buffers that
//! arrive before their source's header (a receiver that joined late) wait in memory
//! for the header, within a bound ([`MAX_WAITING_BYTES`] over all sources): beyond
//! it they are dropped on arrival and counted. Each buffer is checked with the
//! core's verifier before it is written; one that does not verify is counted and
//! left out, so it cannot spoil the file.
//!
//! At most [`MAX_OPEN_FILES`] source files are open at once: the one used least
//! recently is closed to make room and reopened (for appending) when its source
//! sends again. When the process runs out of file descriptors anyway (a low
//! `ulimit -n`), open files are closed the same way until the open succeeds, so
//! any number of sources can be received with a few descriptors.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::FileHeader;
use flightrec_core::link::{compact, Frame, FrameKind, LinkStats, NoRingCount, NO_RING_CONTEXTS};
use flightrec_core::trace2::{Format, Target};

use crate::link::trace2::{Trace2LinkStats, Trace2Renderer, Trace2Strings};

/// Buffers held per source while its header has not arrived.
const MAX_WAITING: usize = 256;

/// Bytes of buffers held for all sources together while their headers have not
/// arrived (32 MiB); buffers beyond it are dropped on arrival and counted in
/// [`SourceReport::headerless_buffers`] and [`SourceReport::headerless_dropped`].
///
/// ```
/// use flightrec_host::link::collect::{Collector, MAX_WAITING_BYTES};
/// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
///
/// let dir = tempfile::tempdir().unwrap();
/// let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// let big = vec![0u8; MAX_WAITING_BYTES / 4];
/// for source in 1..=6 {
///     let head = FrameHead { kind: FrameKind::FdrBuffer, source, seq: 0 };
///     c.frame(&Frame { head, payload: &big }).unwrap();
/// }
/// assert_eq!(c.waiting_bytes(), MAX_WAITING_BYTES);
/// let dropped: u64 = c.sources().map(|(_, r)| r.headerless_dropped).sum();
/// assert_eq!(dropped, 2);
/// ```
pub const MAX_WAITING_BYTES: usize = 32 << 20;

/// Source files kept open at once; the least recently used is closed (and
/// reopened when needed) beyond it. Example on [`Collector::open_files`].
pub const MAX_OPEN_FILES: usize = 64;

/// What was received from one source.
///
/// ```
/// use flightrec_host::core::fdr::ring::RingStats;
/// use flightrec_host::core::link::{Frame, FrameHead, FrameKind, LinkStats};
/// use flightrec_host::link::collect::Collector;
///
/// let dir = tempfile::tempdir().unwrap();
/// let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// let frame = |kind, payload| Frame { head: FrameHead { kind, source: 3, seq: 0 }, payload };
/// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
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
    /// Buffers lost for want of a header: still waiting at the end, or dropped
    /// on arrival because the room for waiting buffers was full.
    pub headerless_buffers: u64,
    /// Of [`headerless_buffers`](Self::headerless_buffers), those dropped on
    /// arrival (more than 256 for the source, or [`MAX_WAITING_BYTES`] in all).
    pub headerless_dropped: u64,
    /// The latest counters the target sent.
    pub stats: Option<LinkStats>,
}

struct SourceState {
    header: Option<[u8; 32]>,
    /// The file of the current header, once created (`report.path`).
    started: bool,
    /// Its open handle, when open (closed to bound the open files).
    file: Option<File>,
    /// When the file was last written ([`Collector::tick`]), to close the one
    /// used least recently.
    last_used: u64,
    /// Files started for this source (a new header starts a new file).
    generation: u32,
    waiting: Vec<Vec<u8>>,
    report: SourceReport,
}

/// Writes received frames to files in a directory.
///
/// ```
/// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
/// use flightrec_host::link::collect::Collector;
///
/// let dir = tempfile::tempdir().unwrap();
/// let trace2 = dir.path().join("trace2.txt");
/// let mut c = Collector::new(&dir.path().join("out"), trace2.clone()).unwrap();
/// let frame = |kind, payload| Frame { head: FrameHead { kind, source: 7, seq: 0 }, payload };
/// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
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
    /// Compact Trace2 events to lines.
    trace2_events: Trace2Renderer,
    sources: BTreeMap<u32, SourceState>,
    bad_headers: u64,
    bad_stats: u64,
    /// Bytes of all sources' `waiting` buffers.
    waiting_bytes: usize,
    /// Source files open now.
    open_files: usize,
    /// Counts writes, for `last_used`.
    tick: u64,
    /// The latest count of records the target made in each context without a
    /// ring (`None`: the contexts its table had no room to name).
    no_ring: BTreeMap<Option<u16>, u32>,
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
            trace2_events: Trace2Renderer::new(
                Trace2Strings::empty(),
                Format::new(Target::Event, false),
            ),
            sources: BTreeMap::new(),
            bad_headers: 0,
            bad_stats: 0,
            waiting_bytes: 0,
            open_files: 0,
            tick: 0,
            no_ring: BTreeMap::new(),
        })
    }

    /// The interned strings of the firmware that sends compact Trace2 events
    /// ([`FrameKind::Trace2Compact`]), from its ELF; without them each is written
    /// as `#<id>` and counted.
    ///
    /// ```
    /// use flightrec_host::link::collect::Collector;
    /// use flightrec_host::core::link::trace2::{emit_to_slice, Session, Str, Version};
    /// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
    /// use flightrec_host::link::trace2::Trace2Strings;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let trace2 = dir.path().join("trace2.txt");
    /// let mut c = Collector::new(dir.path(), trace2.clone()).unwrap();
    /// c.set_trace2_strings(Trace2Strings::from_section(0, b"\0main\0s1\00.1.0\0"));
    /// let mut p = [0u8; 32];
    /// let head = FrameHead { kind: FrameKind::Trace2Compact, source: 0, seq: 0 };
    /// let n = emit_to_slice(&Session { hz: 1000, sid: Str::Id(6), thread: Str::Id(1) }, 0, &mut p).unwrap();
    /// c.frame(&Frame { head, payload: &p[..n] }).unwrap();
    /// let n = emit_to_slice(&Version { exe: Str::Id(9) }, 5, &mut p).unwrap();
    /// c.frame(&Frame { head, payload: &p[..n] }).unwrap();
    /// c.finish().unwrap();
    /// assert_eq!(
    ///     std::fs::read_to_string(&trace2).unwrap(),
    ///     "{\"event\":\"version\",\"sid\":\"s1\",\"thread\":\"main\",\"time\":\"1970-01-01T00:00:00.000000Z\",\"evt\":\"4\",\"exe\":\"0.1.0\"}\n"
    /// );
    /// assert_eq!(c.trace2_events().lines, 1);
    /// assert!(!c.had_problems());
    /// ```
    pub fn set_trace2_strings(&mut self, strings: Trace2Strings) {
        self.trace2_events.set_strings(strings);
    }

    /// The format of the lines written for compact Trace2 events (git's event
    /// format, not brief, unless set); lines that come formatted are written as
    /// they are.
    ///
    /// ```
    /// use flightrec_host::link::collect::Collector;
    /// use flightrec_host::core::link::trace2::{emit_to_slice, Session, Str, Version};
    /// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
    /// use flightrec_host::core::trace2::{Format, Target};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let trace2 = dir.path().join("trace2.txt");
    /// let mut c = Collector::new(dir.path(), trace2.clone()).unwrap();
    /// c.set_trace2_format(Format::new(Target::Normal, true));
    /// let head = FrameHead { kind: FrameKind::Trace2Compact, source: 0, seq: 0 };
    /// let mut p = [0u8; 32];
    /// let session = Session { hz: 1000, sid: Str::Bytes(b"s"), thread: Str::Bytes(b"main") };
    /// let n = emit_to_slice(&session, 0, &mut p).unwrap();
    /// c.frame(&Frame { head, payload: &p[..n] }).unwrap();
    /// let n = emit_to_slice(&Version { exe: Str::Bytes(b"0.1.0") }, 5, &mut p).unwrap();
    /// c.frame(&Frame { head, payload: &p[..n] }).unwrap();
    /// c.finish().unwrap();
    /// assert_eq!(std::fs::read_to_string(&trace2).unwrap(), "version 0.1.0\n");
    /// ```
    pub fn set_trace2_format(&mut self, format: Format) {
        self.trace2_events.set_format(format);
    }

    /// What became of the compact Trace2 events (lines written, events left
    /// out). Example on [`Collector::set_trace2_strings`].
    pub fn trace2_events(&self) -> Trace2LinkStats {
        self.trace2_events.stats()
    }

    fn source(&mut self, id: u32) -> &mut SourceState {
        self.sources.entry(id).or_insert_with(|| SourceState {
            header: None,
            started: false,
            file: None,
            last_used: 0,
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
            FrameKind::FdrCompact | FrameKind::FdrPacked => {
                // At most 16/3 times the payload (a 2-byte token per 8-byte
                // record, 3 bytes for a packed metadata record of 16), which the
                // frame decoder's buffer bounds.
                let packed = frame.head.kind == FrameKind::FdrPacked;
                let len = if packed {
                    compact::unpacked_len(frame.payload)
                } else {
                    compact::expanded_len(frame.payload)
                };
                let mut bytes = match len {
                    Ok(len) => vec![0u8; len],
                    Err(_) => {
                        self.source(id).report.invalid_buffers += 1;
                        return Ok(());
                    }
                };
                let rebuilt = if packed {
                    compact::unpack(frame.payload, &mut bytes)
                } else {
                    compact::expand(frame.payload, &mut bytes)
                };
                match rebuilt {
                    Ok(_) => self.buffer(id, bytes),
                    Err(_) => {
                        self.source(id).report.invalid_buffers += 1;
                        Ok(())
                    }
                }
            }
            FrameKind::Trace2Line => self.trace2_line(frame.payload),
            FrameKind::Trace2Compact => {
                let mut line = Vec::new();
                if self.trace2_events.event(id, frame.payload, &mut line) > 0 {
                    self.trace2_line(&line)?;
                }
                Ok(())
            }
            FrameKind::Stats => {
                match LinkStats::parse(frame.payload) {
                    Some(s) => {
                        self.source(id).report.stats = Some(s);
                        let rest = &frame.payload[LinkStats::LEN..];
                        // Every source carries the same counts, which only
                        // grow: the latest (the largest) is kept.
                        for c in NoRingCount::parse_all(rest).into_iter().flatten() {
                            let n = self.no_ring.entry(c.context.map(|c| c.get())).or_default();
                            *n = (*n).max(c.records);
                        }
                    }
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
                src.started = false;
                if src.file.take().is_some() {
                    self.open_files -= 1;
                }
            }
            None => src.header = Some(bytes),
        }
        let waiting = std::mem::take(&mut self.source(id).waiting);
        self.waiting_bytes -= waiting.iter().map(Vec::len).sum::<usize>();
        for b in waiting {
            self.buffer(id, b)?;
        }
        Ok(())
    }

    /// Opens a file with `open`, closing the least recently used source files
    /// while the process is out of file descriptors.
    fn open_with_room(
        &mut self,
        path: &Path,
        open: impl Fn(&Path) -> io::Result<File>,
    ) -> io::Result<File> {
        loop {
            match open(path) {
                Ok(f) => return Ok(f),
                Err(e) if out_of_descriptors(&e) && self.close_least_recent() => {}
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            }
        }
    }

    /// Closes the open source file used least recently; false when none is open.
    fn close_least_recent(&mut self) -> bool {
        let lru = self
            .sources
            .values_mut()
            .filter(|s| s.file.is_some())
            .min_by_key(|s| s.last_used);
        match lru {
            Some(s) => {
                s.file = None;
                self.open_files -= 1;
                true
            }
            None => false,
        }
    }

    /// The open file of source `id`'s current header: created with the header
    /// on first use, reopened for appending after it was closed.
    fn source_file(&mut self, id: u32, header: &[u8; 32]) -> io::Result<&mut File> {
        self.tick += 1;
        let tick = self.tick;
        let src = self.source(id);
        src.last_used = tick;
        if src.file.is_none() {
            if self.open_files >= MAX_OPEN_FILES {
                self.close_least_recent();
            }
            let src = self.source(id);
            let file = if src.started {
                let path = src.report.path.clone().expect("a started file has a path");
                self.open_with_room(&path, |p| std::fs::OpenOptions::new().append(true).open(p))?
            } else {
                src.generation += 1;
                let name = if src.generation == 1 {
                    format!("source-{id}.xray")
                } else {
                    format!("source-{id}.{}.xray", src.generation)
                };
                let path = self.dir.join(name);
                let mut f = self.open_with_room(&path, |p| File::create(p))?;
                f.write_all(header)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                let src = self.source(id);
                src.report.path = Some(path);
                src.started = true;
                f
            };
            self.open_files += 1;
            self.source(id).file = Some(file);
        }
        Ok(self.source(id).file.as_mut().expect("opened above"))
    }

    fn buffer(&mut self, id: u32, bytes: Vec<u8>) -> io::Result<()> {
        let room = MAX_WAITING_BYTES - self.waiting_bytes;
        let src = self.source(id);
        let Some(header) = src.header else {
            if src.waiting.len() < MAX_WAITING && bytes.len() <= room {
                let len = bytes.len();
                src.waiting.push(bytes);
                self.waiting_bytes += len;
            } else {
                src.report.headerless_buffers += 1;
                src.report.headerless_dropped += 1;
            }
            return Ok(());
        };
        let mut file_bytes = header.to_vec();
        file_bytes.extend_from_slice(&bytes);
        if verify(&file_bytes).is_err() {
            src.report.invalid_buffers += 1;
            return Ok(());
        }
        let file = self.source_file(id, &header)?;
        // Straight to the operating system: nothing waits in a user-space buffer.
        let written = file.write_all(&bytes);
        let src = self.source(id);
        if let Err(e) = written {
            let path = src.report.path.as_deref().unwrap_or(Path::new("?"));
            return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
        }
        src.report.buffers += 1;
        Ok(())
    }

    fn trace2_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.trace2.is_none() {
            let path = self.trace2_path.clone();
            let f = self.open_with_room(&path, |p| File::create(p))?;
            self.trace2 = Some(f);
        }
        let file = self.trace2.as_mut().expect("created above");
        let mut out = line.to_vec();
        if !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        file.write_all(&out).map_err(|e| {
            io::Error::new(e.kind(), format!("{}: {e}", self.trace2_path.display()))
        })?;
        self.trace2_lines += 1;
        Ok(())
    }

    /// Ends the run: buffers still waiting for a header are counted as lost.
    ///
    /// ```
    /// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
    /// use flightrec_host::link::collect::Collector;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
    /// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
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
        let named = |path: &Path, e: io::Error| {
            io::Error::new(e.kind(), format!("{}: {e}", path.display()))
        };
        // Open files are synced and closed first, so that the files closed
        // earlier to make room can be opened again (one at a time) to sync.
        let mut closed = Vec::new();
        for src in self.sources.values_mut() {
            src.report.headerless_buffers += src.waiting.len() as u64;
            src.waiting.clear();
            let Some(path) = src.report.path.as_deref().filter(|_| src.started) else {
                continue;
            };
            match src.file.take() {
                Some(f) => {
                    self.open_files -= 1;
                    f.sync_data().map_err(|e| named(path, e))?;
                }
                None => closed.push(path.to_path_buf()),
            }
        }
        for path in closed {
            File::open(&path)
                .and_then(|f| f.sync_data())
                .map_err(|e| named(&path, e))?;
        }
        self.waiting_bytes = 0;
        if let Some(f) = &mut self.trace2 {
            f.sync_data().map_err(|e| named(&self.trace2_path, e))?;
        }
        let lines = self.no_ring_lines();
        if !lines.is_empty() {
            let path = self.dir.join(NO_RING_FILE);
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(&path, text).map_err(|e| named(&path, e))?;
            for l in &lines {
                eprintln!("flightrec recv: {l}");
            }
        }
        Ok(())
    }

    /// Bytes of buffers waiting for their source's header now (at most
    /// [`MAX_WAITING_BYTES`]). Example on [`MAX_WAITING_BYTES`].
    pub fn waiting_bytes(&self) -> usize {
        self.waiting_bytes
    }

    /// Source files open now (at most [`MAX_OPEN_FILES`]; none after
    /// [`finish`](Self::finish)).
    ///
    /// ```
    /// use flightrec_host::link::collect::{Collector, MAX_OPEN_FILES};
    /// use flightrec_host::core::link::{Frame, FrameHead, FrameKind};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
    /// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
    /// let sources = MAX_OPEN_FILES as u32 + 10;
    /// for round in 0..2 {
    ///     for source in 1..=sources {
    ///         let frame = |kind, payload| Frame { head: FrameHead { kind, source, seq: 0 }, payload };
    ///         if round == 0 {
    ///             c.frame(&frame(FrameKind::FileHeader, &trace[..32])).unwrap();
    ///         }
    ///         c.frame(&frame(FrameKind::FdrBuffer, &trace[32..])).unwrap();
    ///     }
    /// }
    /// assert_eq!(c.open_files(), MAX_OPEN_FILES);
    /// c.finish().unwrap();
    /// assert_eq!(c.open_files(), 0);
    /// // Every source's file has its header and both buffers.
    /// let mut twice = trace.to_vec();
    /// twice.extend_from_slice(&trace[32..]);
    /// for (_, report) in c.sources() {
    ///     assert_eq!(report.buffers, 2);
    ///     assert_eq!(std::fs::read(report.path.as_ref().unwrap()).unwrap(), twice);
    /// }
    /// ```
    pub fn open_files(&self) -> usize {
        self.open_files
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
            || self.trace2_events.stats().had_problems()
            || self
                .sources
                .values()
                .any(|s| s.report.invalid_buffers > 0 || s.report.headerless_buffers > 0)
    }
}

impl Collector {
    /// What the target counted in contexts without a ring (the latest count of
    /// each; `None` for the contexts beyond the ones its table names), from the
    /// counters frames. Example on [`NO_RING_FILE`].
    pub fn no_ring(&self) -> impl Iterator<Item = NoRingCount> + '_ {
        self.no_ring.iter().map(|(c, &records)| NoRingCount {
            context: c.map(flightrec_core::context::Context::new),
            records,
        })
    }

    /// One line per context without a ring that lost records, naming it:
    /// `interrupt priority 0x40 has no ring: 540 records`. Example on
    /// [`NO_RING_FILE`].
    pub fn no_ring_lines(&self) -> Vec<String> {
        self.no_ring()
            .filter(|c| c.records > 0)
            .map(|c| match c.context {
                Some(context) => format!("{context} has no ring: {} records", c.records),
                None => format!(
                    "contexts beyond the first {NO_RING_CONTEXTS} have no ring: {} records",
                    c.records
                ),
            })
            .collect()
    }
}

/// The file in the output directory that names each context whose records
/// found no ring on the target, and how many (written by
/// [`Collector::finish`], which also says it on stderr, only when there are
/// any).
///
/// ```
/// use flightrec_host::link::collect::{Collector, NO_RING_FILE};
/// use flightrec_host::core::link::{Frame, FrameHead, FrameKind, LinkStats};
///
/// let dir = tempfile::tempdir().unwrap();
/// let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// // Counters, then (context 0x140: priority 0x40, 540 records).
/// let mut payload = LinkStats::default().to_bytes().to_vec();
/// payload.extend_from_slice(&0x140u32.to_le_bytes());
/// payload.extend_from_slice(&540u32.to_le_bytes());
/// let head = FrameHead { kind: FrameKind::Stats, source: 1, seq: 0 };
/// c.frame(&Frame { head, payload: &payload }).unwrap();
/// // An old target's counters (no counts) still decode.
/// c.frame(&Frame { head, payload: &LinkStats::default().to_bytes() }).unwrap();
/// c.finish().unwrap();
/// assert_eq!(c.bad_control_frames(), 0);
/// assert_eq!(c.no_ring_lines(), ["interrupt priority 0x40 has no ring: 540 records"]);
/// let counts: Vec<_> = c.no_ring().map(|n| (n.context.map(|c| c.get()), n.records)).collect();
/// assert_eq!(counts, [(Some(0x140), 540)]);
/// assert_eq!(
///     std::fs::read_to_string(dir.path().join(NO_RING_FILE)).unwrap(),
///     "interrupt priority 0x40 has no ring: 540 records\n"
/// );
/// ```
pub const NO_RING_FILE: &str = "no-ring.txt";

/// Whether `e` says the process (EMFILE) or the system (ENFILE) has no file
/// descriptor left.
fn out_of_descriptors(e: &io::Error) -> bool {
    // EMFILE and ENFILE on Linux, the BSDs and macOS.
    cfg!(unix) && matches!(e.raw_os_error(), Some(23 | 24))
}
