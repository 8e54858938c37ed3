//! How the runtime's lines reach their destinations: one `write()` per line
//! on the calling thread (git's way, the default), or through a bounded queue
//! that a background thread writes in batches.

use std::ffi::{OsStr, OsString};

/// The environment variable that picks the write mode of a program that does
/// not choose one with [`Builder::write_mode`](crate::trace2::Builder::write_mode):
/// `direct` (or unset, or empty) or `background`, in any case. It is
/// flightrec's own setting, read whatever the program's Trace2 prefix is.
///
/// ```
/// assert_eq!(flightrec::trace2::target::WRITE_MODE_VAR, "FLIGHTREC_TRACE2_WRITE");
/// ```
pub const WRITE_MODE_VAR: &str = "FLIGHTREC_TRACE2_WRITE";

/// The queue size of [`WriteMode::background`], per destination: about
/// 4000 perf lines or 3000 event lines.
///
/// ```
/// use flightrec::trace2::target::{WriteMode, DEFAULT_QUEUE_BYTES};
/// assert_eq!(
///     WriteMode::background(),
///     WriteMode::Background { queue_bytes: DEFAULT_QUEUE_BYTES }
/// );
/// ```
pub const DEFAULT_QUEUE_BYTES: usize = 1 << 20;

/// How Trace2 lines are written.
///
/// [`WriteMode::Direct`] is git's way and the default: the thread that traces
/// formats each line and writes it with one `write()` before the call
/// returns, so the trace is complete up to the last call even if the process
/// is killed, and lines of many threads and processes never interleave.
///
/// [`WriteMode::Background`] is for programs that trace hot code and cannot
/// afford a system call per line. The calling thread formats the line as
/// before and appends it to a bounded in-memory queue of its destination; a
/// background thread writes the queued lines in batches, as few `write()`s as
/// keep every line whole (see the desktop guide). What it trades:
///
/// * When the queue is full, lines are dropped, never waited for, and whole
///   regions at a time: a `region_enter` that does not fit drops the thread's
///   lines up to its `region_leave`, and the leave of a region whose enter
///   was queued is always queued, so every thread's regions stay balanced.
///   Where lines went missing, the thread's next line is preceded by a region
///   `flightrec`/`dropped` spanning the gap, whose `region_enter` says
///   `<n> lines dropped: the background queue was full` (a `printf` in the
///   normal target). The number dropped is reported once per destination when the
///   process exits (`warning: trace2: dropped <n> lines for '<VAR>': the
///   background queue was full`).
/// * The queue is written out before `exit`/`atexit` finish (return from
///   `main`, `std::process::exit`, [`exit`](crate::trace2::exit), a panic),
///   before `child_start` lets a child run, before `exec`, and by
///   [`flush`](crate::trace2::flush). Lines still queued when the process dies
///   of a signal or `abort()` are lost; the direct mode loses none there.
/// * The writer thread is not copied by `fork()`: a forked child that goes on
///   tracing without `exec` writes its lines directly.
///
/// ```
/// use flightrec::trace2::target::WriteMode;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("perf");
/// # std::env::set_var("MYAPP_TRACE2_PERF", &trace);
/// // MYAPP_TRACE2_PERF names the file `perf`.
/// let t2 = flightrec::trace2::Builder::new()
///     .prefix("MYAPP_TRACE2")
///     .write_mode(WriteMode::background())
///     .init();
/// for i in 0..100 {
///     flightrec::printf!("line {i}");
/// }
/// drop(t2); // exit and atexit: every queued line is written first
/// let perf = std::fs::read_to_string(&trace)?;
/// assert_eq!(perf.lines().filter(|l| l.contains("| line ")).count(), 100);
/// assert!(perf.lines().last().unwrap().contains("| atexit "));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteMode {
    /// One `write()` per line on the calling thread, as git writes.
    #[default]
    Direct,
    /// Lines go through a queue of at most `queue_bytes` per destination
    /// (a line longer than that is still taken when the queue is empty) to a
    /// background writer thread.
    Background {
        /// The most bytes of lines each destination's queue holds.
        queue_bytes: usize,
    },
}

impl WriteMode {
    /// The background mode with [`DEFAULT_QUEUE_BYTES`]. Example on
    /// [`WriteMode`].
    pub const fn background() -> Self {
        WriteMode::Background {
            queue_bytes: DEFAULT_QUEUE_BYTES,
        }
    }

    /// Parses a [`WRITE_MODE_VAR`] value: empty or `direct` is
    /// [`WriteMode::Direct`], `background` is [`WriteMode::background`] (any
    /// case); anything else is `None`.
    ///
    /// ```
    /// use flightrec::trace2::target::WriteMode;
    /// use std::ffi::OsStr;
    /// assert_eq!(WriteMode::parse(OsStr::new("Background")), Some(WriteMode::background()));
    /// assert_eq!(WriteMode::parse(OsStr::new("direct")), Some(WriteMode::Direct));
    /// assert_eq!(WriteMode::parse(OsStr::new("")), Some(WriteMode::Direct));
    /// assert_eq!(WriteMode::parse(OsStr::new("async")), None);
    /// ```
    pub fn parse(value: &OsStr) -> Option<Self> {
        let v = std::os::unix::ffi::OsStrExt::as_bytes(value);
        if v.is_empty() || v.eq_ignore_ascii_case(b"direct") {
            Some(WriteMode::Direct)
        } else if v.eq_ignore_ascii_case(b"background") {
            Some(WriteMode::background())
        } else {
            None
        }
    }

    /// The mode [`WRITE_MODE_VAR`] asks for, read through `env`; an unknown
    /// value gives [`WriteMode::Direct`] and the warning to print (the text
    /// after `warning: `, worded as git's for an unknown target value).
    ///
    /// ```
    /// use flightrec::trace2::target::WriteMode;
    /// use std::ffi::OsString;
    /// let env = |v: &'static str| move |_: &str| Some(OsString::from(v));
    /// assert_eq!(WriteMode::from_env_with(env("background")), (WriteMode::background(), None));
    /// assert_eq!(WriteMode::from_env_with(|_| None), (WriteMode::Direct, None));
    /// assert_eq!(
    ///     WriteMode::from_env_with(env("fast")),
    ///     (
    ///         WriteMode::Direct,
    ///         Some("trace2: unknown value for 'FLIGHTREC_TRACE2_WRITE': 'fast'".to_string())
    ///     )
    /// );
    /// ```
    pub fn from_env_with(env: impl Fn(&str) -> Option<OsString>) -> (Self, Option<String>) {
        let Some(value) = env(WRITE_MODE_VAR) else {
            return (WriteMode::Direct, None);
        };
        match Self::parse(&value) {
            Some(mode) => (mode, None),
            None => (
                WriteMode::Direct,
                Some(format!(
                    "trace2: unknown value for '{WRITE_MODE_VAR}': '{}'",
                    value.to_string_lossy()
                )),
            ),
        }
    }
}
