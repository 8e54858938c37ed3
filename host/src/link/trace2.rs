//! Compact Trace2 events from a firmware's link ([`FrameKind::Trace2Compact`]) to
//! git's lines: what the firmware deferred (strings from its ELF, times in
//! microseconds, region nesting and `t_rel`, the formatting itself) is done here,
//! with the core's own formatters, so the lines are byte for byte those the
//! firmware would have formatted for the same events.
//!
//! Per frame source the renderer keeps the `session` (clock frequency, session
//! id, thread name) and a region stack: `t_abs` is the event's clock reading in
//! microseconds (`ticks * 1 000 000 / hz`), a `region_leave`'s `t_rel` the time
//! since its enter, a `data` event's `t_rel` the time since the innermost open
//! region (or the clock's zero) began. Events that cannot be rendered are counted
//! ([`Trace2LinkStats`]), never guessed: a payload that does not parse, an event
//! before its source's session, a `region_leave` with no region open. A string
//! id that the ELF does not name is written as `#<id>` and counted.
//!
//! [`FrameKind::Trace2Compact`]: flightrec_core::link::FrameKind::Trace2Compact
//!
//! ```
//! use flightrec_host::link::trace2::{Trace2Renderer, Trace2Strings};
//! use flightrec_host::core::link::trace2::{emit_to_slice, Exit, Session, Str};
//! use flightrec_host::core::trace2::{Format, Target};
//!
//! // The ELF's `.flightrec.trace2` section: ids 1 ("main") and 6 ("sid-1").
//! let strings = Trace2Strings::from_section(0, b"\0main\0sid-1\0");
//! let mut r = Trace2Renderer::new(strings, Format::new(Target::Event, true));
//! let mut payload = [0u8; 32];
//! let session = Session { hz: 1_000_000, sid: Str::Id(6), thread: Str::Id(1) };
//! let n = emit_to_slice(&session, 0, &mut payload).unwrap();
//! let mut out = Vec::new();
//! r.event(0, &payload[..n], &mut out);
//! let n = emit_to_slice(&Exit { code: 0 }, 2_500_000, &mut payload).unwrap();
//! r.event(0, &payload[..n], &mut out);
//! assert_eq!(
//!     String::from_utf8(out).unwrap(),
//!     "{\"event\":\"exit\",\"sid\":\"sid-1\",\"thread\":\"main\",\"t_abs\":2.500000,\"code\":0}\n"
//! );
//! assert_eq!(r.stats().events, 2);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use flightrec_core::link::trace2::{parse, Str, Trace2, SECTION};
use flightrec_core::names::elf::{find_section, is_elf};
use flightrec_core::trace2::perf::is_pad_capped;
use flightrec_core::trace2::{Args, Event, Format, LineCtx, Micros, Msg, RegionStack, Target};

use crate::names::elf::section_addr;
use crate::read::file::TraceFile;

/// Region levels whose start times are kept per source (deeper levels still
/// count; see [`RegionStack`]).
const REGION_LEVELS: usize = 64;

/// The interned strings of a firmware: the ELF's `.flightrec.trace2` section,
/// by id (a string's address).
///
/// ```
/// use flightrec_host::link::trace2::Trace2Strings;
/// // LLD puts the section at 0 behind a leading NUL; GNU ld at 1.
/// let s = Trace2Strings::from_section(0, b"\0firmware\0workload\0");
/// assert_eq!((s.get(1), s.get(10), s.get(2)), (Some(&b"firmware"[..]), Some(&b"workload"[..]), None));
/// assert_eq!(s.len(), 2);
/// let s = Trace2Strings::from_section(1, b"abc\0");
/// assert_eq!(s.get(1), Some(&b"abc"[..]));
/// // This example's own program is an ELF without the section: no strings.
/// let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
/// assert!(Trace2Strings::from_elf(&me).unwrap().is_empty());
/// assert!(Trace2Strings::from_elf(b"not an ELF").is_err());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Trace2Strings {
    by_id: HashMap<u32, Vec<u8>>,
}

impl Trace2Strings {
    /// No strings (every id is written as `#<id>`).
    ///
    /// ```
    /// use flightrec_host::link::trace2::Trace2Strings;
    /// assert!(Trace2Strings::empty().is_empty());
    /// ```
    pub fn empty() -> Self {
        Self::default()
    }

    /// The strings of a section whose bytes start at address `addr`: one at each
    /// address after a NUL (or at the start), up to the next NUL. Example on
    /// [`Trace2Strings`].
    pub fn from_section(addr: u64, data: &[u8]) -> Self {
        let mut by_id = HashMap::new();
        let mut at = 0usize;
        while at < data.len() {
            let end = data[at..]
                .iter()
                .position(|&b| b == 0)
                .map_or(data.len(), |n| at + n);
            if end > at {
                if let Ok(id) = u32::try_from(addr.saturating_add(at as u64)) {
                    by_id.insert(id, data[at..end].to_vec());
                }
            }
            at = end + 1;
        }
        Self { by_id }
    }

    /// The strings of a firmware ELF image; none when it has no such section
    /// (a firmware that interns no string). Example on [`Trace2Strings`].
    pub fn from_elf(image: &[u8]) -> Result<Self, String> {
        if !is_elf(image) {
            return Err("not an ELF file".into());
        }
        match find_section(image, SECTION) {
            Ok(None) => Ok(Self::empty()),
            Ok(Some(data)) => {
                let addr = section_addr(image, data)
                    .ok_or_else(|| format!("the {SECTION} section's header is out of bounds"))?;
                Ok(Self::from_section(addr, data))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Reads a firmware ELF file; errors name the file.
    ///
    /// ```
    /// use flightrec_host::link::trace2::Trace2Strings;
    /// let err = Trace2Strings::load(std::path::Path::new("/nonexistent/fw.elf")).unwrap_err();
    /// assert!(err.starts_with("/nonexistent/fw.elf: "), "{err}");
    /// ```
    pub fn load(path: &Path) -> Result<Self, String> {
        // Mapped, not read whole (see `FirmwareNames::load`).
        let file = TraceFile::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_elf(file.bytes()).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The string with this id. Example on [`Trace2Strings`].
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        self.by_id.get(&id).map(Vec::as_slice)
    }

    /// Number of strings. Example on [`Trace2Strings`].
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// True when there are none. Example on [`Trace2Strings`].
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

/// What the renderer did with the compact events it was given.
///
/// ```
/// use flightrec_host::link::trace2::{Trace2Renderer, Trace2Strings};
/// use flightrec_host::core::link::trace2::{emit_to_slice, RegionLeave, Version, Str};
/// use flightrec_host::core::trace2::{Format, Target};
///
/// let mut r = Trace2Renderer::new(Trace2Strings::empty(), Format::new(Target::Event, true));
/// let mut out = Vec::new();
/// r.event(0, b"\x63", &mut out); // not a compact event
/// let mut p = [0u8; 16];
/// let n = emit_to_slice(&Version { exe: Str::Id(4) }, 0, &mut p).unwrap();
/// r.event(0, &p[..n], &mut out); // before the source's session
/// let s = r.stats();
/// assert_eq!((s.events, s.malformed, s.without_session), (2, 1, 1));
/// assert!(out.is_empty());
/// assert!(s.had_problems());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trace2LinkStats {
    /// Payloads given.
    pub events: u64,
    /// Lines written (events the format filters out, and sessions, write none).
    pub lines: u64,
    /// Payloads that are not compact events (left out).
    pub malformed: u64,
    /// Events of a source whose session has not arrived (left out).
    pub without_session: u64,
    /// `region_leave` events with no region open (left out).
    pub unbalanced: u64,
    /// Events written with an id the ELF does not name (as `#<id>`).
    pub unknown_strings: u64,
    /// Perf lines nested deeper than
    /// [`MAX_PAD_NESTING`](flightrec_core::trace2::perf::MAX_PAD_NESTING) levels,
    /// padded for that many (as `trace2 render` pads them).
    pub pad_capped: u64,
}

impl Trace2LinkStats {
    /// Whether any event was left out or written with an unknown string. Example on
    /// [`Trace2LinkStats`].
    pub fn had_problems(&self) -> bool {
        self.malformed + self.without_session + self.unbalanced + self.unknown_strings > 0
    }
}

struct SourceState {
    hz: u64,
    sid: Vec<u8>,
    thread: Vec<u8>,
    regions: RegionStack<REGION_LEVELS>,
}

/// Turns compact Trace2 payloads into lines of one of git's formats.
///
/// ```
/// use flightrec_host::link::trace2::{Trace2Renderer, Trace2Strings};
/// use flightrec_host::core::link::trace2::{emit_to_slice, Printf, Session, Str};
/// use flightrec_host::core::trace2::{Format, Target};
///
/// let mut r = Trace2Renderer::new(Trace2Strings::empty(), Format::new(Target::Event, true));
/// // The firmware's strings and another format, set later.
/// r.set_strings(Trace2Strings::from_section(0, b"\0ready\0"));
/// r.set_format(Format::new(Target::Normal, true));
/// let mut out = Vec::new();
/// let mut p = [0u8; 32];
/// let session = Session { hz: 1000, sid: Str::Bytes(b"s"), thread: Str::Bytes(b"main") };
/// let n = emit_to_slice(&session, 0, &mut p).unwrap();
/// assert_eq!(r.event(5, &p[..n], &mut out), 0); // a session writes no line
/// let n = emit_to_slice(&Printf { msg: Some(Str::Id(1)) }, 2_500, &mut p).unwrap();
/// assert_eq!(r.event(5, &p[..n], &mut out), 6);
/// assert_eq!(out, b"ready\n");
/// assert_eq!((r.stats().events, r.stats().lines), (2, 1));
/// ```
pub struct Trace2Renderer {
    strings: Trace2Strings,
    format: Format,
    sources: BTreeMap<u32, SourceState>,
    stats: Trace2LinkStats,
    line: Vec<u8>,
}

impl Trace2Renderer {
    /// A renderer with a firmware's strings, writing `format`'s lines. Example on
    /// [`Trace2Renderer`].
    pub fn new(strings: Trace2Strings, format: Format) -> Self {
        Self {
            strings,
            format,
            sources: BTreeMap::new(),
            stats: Trace2LinkStats::default(),
            line: vec![0; 512],
        }
    }

    /// Replaces the strings (the firmware's ELF, read after the renderer was made).
    /// Example on [`Trace2Renderer`].
    pub fn set_strings(&mut self, strings: Trace2Strings) {
        self.strings = strings;
    }

    /// Replaces the format of the lines. Example on [`Trace2Renderer`].
    pub fn set_format(&mut self, format: Format) {
        self.format = format;
    }

    /// What was rendered so far. Example on [`Trace2LinkStats`].
    pub fn stats(&self) -> Trace2LinkStats {
        self.stats
    }

    /// Renders one payload of `source`: appends its line to `out` and returns the
    /// line's length (0 when it writes none). Example on [`Trace2Renderer`].
    pub fn event(&mut self, source: u32, payload: &[u8], out: &mut Vec<u8>) -> usize {
        self.stats.events += 1;
        let Ok(rec) = parse(payload) else {
            self.stats.malformed += 1;
            return 0;
        };
        let mut unknown = false;
        let f = Fields::of(&self.strings, &rec.event, &mut unknown);
        if let Trace2::Session(s) = rec.event {
            if s.hz == 0 {
                self.stats.malformed += 1;
                return 0;
            }
            if unknown {
                self.stats.unknown_strings += 1;
            }
            let [sid, thread, _] = f.strs;
            self.sources.insert(
                source,
                SourceState {
                    hz: s.hz,
                    sid: sid.unwrap_or_default(),
                    thread: thread.unwrap_or_default(),
                    regions: RegionStack::new(0),
                },
            );
            return 0;
        }
        let Some(src) = self.sources.get_mut(&source) else {
            self.stats.without_session += 1;
            return 0;
        };
        let t_abs = micros(rec.ticks, src.hz);
        let mut nesting = src.regions.nesting();
        let o = |i: usize| f.strs.get(i).and_then(|s| s.as_deref());
        let r = |i: usize| o(i).unwrap_or(b"");
        let argv: Vec<&[u8]> = f.argv.iter().map(Vec::as_slice).collect();
        let ev = match rec.event {
            // Handled above.
            Trace2::Session(_) => return 0,
            Trace2::Version(_) => Event::Version { exe: r(0) },
            Trace2::Start(_) => Event::Start {
                argv: Args::Bytes(&argv),
            },
            Trace2::Exit(e) => Event::Exit { code: e.code },
            Trace2::Atexit(e) => Event::Atexit { code: e.code },
            Trace2::Error(_) => Event::Error {
                msg: Msg::Bytes(r(0)),
                fmt: r(1),
            },
            Trace2::RegionEnter(_) => {
                src.regions.enter(t_abs);
                Event::RegionEnter {
                    category: o(0),
                    label: o(1),
                    msg: o(2).map(Msg::Bytes),
                }
            }
            Trace2::RegionLeave(_) => {
                let Ok(t_rel) = src.regions.leave(t_abs) else {
                    self.stats.unbalanced += 1;
                    return 0;
                };
                nesting = src.regions.nesting();
                Event::RegionLeave {
                    t_rel,
                    category: o(0),
                    label: o(1),
                    msg: o(2).map(Msg::Bytes),
                }
            }
            Trace2::Data(_) | Trace2::DataInt(_) => Event::Data {
                t_rel: src.regions.t_rel(t_abs),
                category: r(0),
                key: r(1),
                value: r(2),
            },
            Trace2::Printf(_) => Event::Printf {
                msg: o(0).map(Msg::Bytes),
            },
            Trace2::DataJson(_) => Event::DataJson {
                t_rel: src.regions.t_rel(t_abs),
                category: r(0),
                key: r(1),
                value: r(2),
            },
            Trace2::DefParam(_) => Event::DefParam {
                scope: r(0),
                param: r(1),
                value: o(2),
            },
            Trace2::Timer(t) => Event::Timer {
                per_thread: t.per_thread,
                category: r(0),
                name: r(1),
                intervals: t.intervals,
                total_ns: nanos(t.total_ticks, src.hz),
                min_ns: nanos(t.min_ticks, src.hz),
                max_ns: nanos(t.max_ticks, src.hz),
            },
            Trace2::Counter(c) => Event::Counter {
                per_thread: c.per_thread,
                category: r(0),
                name: r(1),
                value: c.value,
            },
        };
        if unknown {
            self.stats.unknown_strings += 1;
        }
        let ctx = LineCtx {
            nesting,
            t_abs,
            ..LineCtx::new(&src.sid, &src.thread)
        };
        loop {
            match self.format.write_line(&ctx, &ev, &mut self.line) {
                Ok(n) => {
                    out.extend_from_slice(&self.line[..n]);
                    if n > 0 {
                        self.stats.lines += 1;
                        if self.format.target == Target::Perf && is_pad_capped(nesting) {
                            self.stats.pad_capped += 1;
                        }
                    }
                    return n;
                }
                Err(_) => {
                    let len = self.line.len() * 2;
                    self.line.resize(len, 0);
                }
            }
        }
    }
}

/// An event's strings, looked up (an integer `data` value in decimal).
struct Fields {
    strs: [Option<Vec<u8>>; 3],
    argv: Vec<Vec<u8>>,
}

impl Fields {
    fn of(strings: &Trace2Strings, ev: &Trace2<'_>, unknown: &mut bool) -> Self {
        let mut text = |s: Str<'_>| -> Vec<u8> {
            match s {
                Str::Bytes(b) => b.to_vec(),
                Str::Id(id) => strings.get(id).map_or_else(
                    || {
                        *unknown = true;
                        format!("#{id}").into_bytes()
                    },
                    <[u8]>::to_vec,
                ),
            }
        };
        let mut argv = Vec::new();
        let strs = match *ev {
            Trace2::Session(s) => [Some(text(s.sid)), Some(text(s.thread)), None],
            Trace2::Version(v) => [Some(text(v.exe)), None, None],
            Trace2::Start(s) => {
                argv = s.argv.iter().map(&mut text).collect();
                [None, None, None]
            }
            Trace2::Exit(_) | Trace2::Atexit(_) => [None, None, None],
            Trace2::Error(e) => [Some(text(e.msg)), Some(text(e.fmt)), None],
            Trace2::RegionEnter(flightrec_core::link::trace2::RegionEnter {
                category,
                label,
                msg,
            })
            | Trace2::RegionLeave(flightrec_core::link::trace2::RegionLeave {
                category,
                label,
                msg,
            }) => [
                category.map(&mut text),
                label.map(&mut text),
                msg.map(&mut text),
            ],
            Trace2::Data(d) => [
                Some(text(d.category)),
                Some(text(d.key)),
                Some(text(d.value)),
            ],
            Trace2::DataInt(d) => [
                Some(text(d.category)),
                Some(text(d.key)),
                Some(itoa::Buffer::new().format(d.value).as_bytes().to_vec()),
            ],
            Trace2::Printf(p) => [p.msg.map(&mut text), None, None],
            Trace2::DataJson(d) => [
                Some(text(d.category)),
                Some(text(d.key)),
                Some(text(d.value)),
            ],
            Trace2::DefParam(d) => [
                Some(text(d.scope)),
                Some(text(d.param)),
                d.value.map(&mut text),
            ],
            Trace2::Timer(t) => [Some(text(t.category)), Some(text(t.name)), None],
            Trace2::Counter(c) => [Some(text(c.category)), Some(text(c.name)), None],
        };
        Self { strs, argv }
    }
}

/// `ticks` of a `hz` clock in nanoseconds (rounded down; a timer's times).
///
/// ```
/// use flightrec_host::link::trace2::nanos;
/// assert_eq!(nanos(3, 12_500_000), 240);
/// assert_eq!(nanos(u64::MAX, 1), u64::MAX); // saturates
/// ```
pub fn nanos(ticks: u64, hz: u64) -> u64 {
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(hz.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// `ticks` of a `hz` clock in microseconds (rounded down).
///
/// ```
/// use flightrec_host::link::trace2::micros;
/// assert_eq!(micros(12_500_000, 12_500_000), 1_000_000);
/// assert_eq!(micros(25, 12_500_000), 2);
/// assert_eq!(micros(u64::MAX, 1), u64::MAX); // saturates
/// ```
pub fn micros(ticks: u64, hz: u64) -> Micros {
    let us = u128::from(ticks) * 1_000_000 / u128::from(hz.max(1));
    u64::try_from(us).unwrap_or(u64::MAX)
}
