//! Git Trace2 lines in git's normal, perf and event formats, byte for byte as
//! git 2.47.3 writes them, into buffers the caller owns.
//!
//! * [`Event`]: every Trace2 event with its fields, borrowing the caller's data.
//! * [`LineCtx`]: the per-line inputs (time, file:line, thread, sid, nesting,
//!   repo, `t_abs`).
//! * [`normal`], [`perf`], [`json`]: one formatter per target, each writing one
//!   complete line (with its trailing LF) and returning its length, or
//!   [`BufferTooSmall`]. [`Format`] picks one at run time.
//! * [`ThreadName`], [`RegionStack`], [`ThreadState`]: thread names and region
//!   nesting; [`ThreadTimers`], [`ThreadCounters`], [`ProcessStats`]: timers and
//!   counters (see [`stats`] for the no-atomics concurrency design);
//!   [`ProcessClock`] for `t_abs` and [`IdCounter`] for repository and thread ids.
//! * [`redact`]: git's URL password redaction of argv and `def_param` values.
//!
//! Nothing here allocates, and no input makes a formatter panic.
//!
//! ```
//! use flightrec_core::trace2::{Event, Format, LineCtx, Target, ThreadState, ThreadName};
//! let mut main = ThreadState::<16>::new(ThreadName::main(), 0);
//! let sid = b"20231114T221320.123456Z-H65cb7838-P00001234";
//! let mut buf = [0u8; 512];
//! let perf = Format { target: Target::Perf, brief: true, event_nesting: 2 };
//!
//! let nesting = main.region_enter(8);
//! let ctx = LineCtx { nesting, t_abs: 8, ..LineCtx::new(sid, main.name.as_bytes()) };
//! let ev = Event::RegionEnter { category: Some(b"index"), label: Some(b"refresh"), msg: None };
//! let n = perf.write_line(&ctx, &ev, &mut buf).unwrap();
//! assert!(buf[..n].ends_with(b"| index        | label:refresh\n"));
//! ```

pub mod ctx;
pub mod event;
pub mod json;
pub mod line;
pub mod normal;
pub mod perf;
pub mod process;
pub mod redact;
pub mod stats;
pub mod text;
pub mod thread;
pub mod time;

pub use ctx::{sid_depth, LineCtx};
pub use event::{Args, Bytes, Event, Micros, Msg};
pub use line::{ns_to_printf_micros, BufferTooSmall, LineBuf};
pub use process::{IdCounter, ProcessClock};
pub use redact::{redact_url, Redacted, REDACTED};
pub use stats::{ProcessStats, StatDef, ThreadCounters, ThreadTimers, TimerStats};
pub use thread::{RegionError, RegionStack, ThreadName, ThreadState, MAX_THREAD_NAME};
pub use time::{civil_from_days, days_from_civil, write_sid_timestamp, Civil, WallTime};

/// One of git's three Trace2 targets.
///
/// ```
/// use flightrec_core::trace2::{Event, Format, LineCtx, Target};
/// let ctx = LineCtx::new(b"sid", b"main");
/// let ev = Event::CmdMode { mode: b"write" };
/// let mut buf = [0u8; 256];
/// let mut line = |target| {
///     let n = Format::new(target, true).write_line(&ctx, &ev, &mut buf).unwrap();
///     String::from_utf8(buf[..n].to_vec()).unwrap()
/// };
/// assert_eq!(line(Target::Normal), "cmd_mode write\n");
/// assert!(line(Target::Perf).ends_with("| cmd_mode     |     |           |           |              | write\n"));
/// assert_eq!(line(Target::Event), "{\"event\":\"cmd_mode\",\"sid\":\"sid\",\"thread\":\"main\",\"name\":\"write\"}\n");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Target {
    /// `GIT_TRACE2`: human-readable lines.
    Normal,
    /// `GIT_TRACE2_PERF`: columns for performance analysis.
    Perf,
    /// `GIT_TRACE2_EVENT`: JSON lines.
    Event,
}

/// A target with its settings: which format, brief or not, and the event
/// target's nesting filter.
///
/// ```
/// use flightrec_core::trace2::{Event, Format, LineCtx, Target};
/// let f = Format::new(Target::Normal, true);
/// let mut buf = [0u8; 64];
/// let n = f.write_line(&LineCtx::new(b"s", b"main"), &Event::CmdMode { mode: b"write" }, &mut buf).unwrap();
/// assert_eq!(&buf[..n], b"cmd_mode write\n");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Format {
    /// Which target's format.
    pub target: Target,
    /// The target's `brief` setting.
    pub brief: bool,
    /// `eventNesting` (event target only; see [`json::parse_event_nesting`]).
    pub event_nesting: u32,
}

impl Format {
    /// A format with git's default nesting filter (2). Example on [`Format`].
    pub const fn new(target: Target, brief: bool) -> Self {
        Format {
            target,
            brief,
            event_nesting: json::DEFAULT_EVENT_NESTING,
        }
    }

    /// Writes `ev` as one line of this format into `out` and returns its length;
    /// `Ok(0)` when the target writes nothing for the event. On
    /// [`BufferTooSmall`] the content of `out` is unspecified. Example on
    /// [`Format`].
    #[inline]
    pub fn write_line(
        &self,
        ctx: &LineCtx<'_>,
        ev: &Event<'_>,
        out: &mut [u8],
    ) -> Result<usize, BufferTooSmall> {
        match self.target {
            Target::Normal => normal::write_line(self.brief, ctx, ev, out),
            Target::Perf => perf::write_line(self.brief, ctx, ev, out),
            Target::Event => json::write_line(self.brief, self.event_nesting, ctx, ev, out),
        }
    }
}
