//! The process-wide Trace2 runtime: the open destinations, the session id, the
//! shared counters, and the one function every event goes through.
//!
//! Whether Trace2 is on is a single relaxed atomic load ([`enabled`]); every
//! public call checks it first, so with no target configured tracing costs one
//! load and a branch.

use std::io::Write as _;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use flightrec_core::trace2::{Event, Format, IdCounter, LineCtx, Micros, ProcessStats, WallTime};

use super::clock;
use super::config::Trace2Config;
use super::sid::SessionId;
use super::stats::{MAX_COUNTERS, MAX_TIMERS};
use super::target::{BackgroundWriter, Destination, Pushed};

/// Set once a runtime with at least one open destination exists, cleared after
/// `atexit`.
static ENABLED: AtomicBool = AtomicBool::new(false);
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Longest line the runtime formats (a line that does not fit is dropped).
const MAX_LINE: usize = 16 << 20;

/// Whether Trace2 is on in this process: one relaxed atomic load.
///
/// ```
/// // No GIT_TRACE2* target is set in a doctest's environment.
/// assert!(!flightrec::trace2::enabled());
/// ```
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The runtime, when Trace2 is on.
#[inline(always)]
pub(crate) fn runtime() -> Option<&'static Runtime> {
    if !enabled() {
        return None;
    }
    RUNTIME.get()
}

/// The runtime even after `atexit` (for the exit handlers).
pub(crate) fn runtime_any() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// A source location as Trace2 prints it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loc<'a> {
    pub file: &'a str,
    pub line: u32,
}

impl Loc<'static> {
    /// Where `l` is, with its file as Trace2 prints it.
    pub(crate) fn from(l: &'static Location<'static>) -> Self {
        Loc {
            file: source_path(l.file()),
            line: l.line(),
        }
    }

    /// The caller's location.
    #[track_caller]
    pub(crate) fn caller() -> Self {
        Loc::from(Location::caller())
    }
}

/// The path Trace2 prints for a source file: as the compiler names it when it
/// is relative (a workspace member, like git's paths relative to its tree);
/// for an absolute path (a crate from a registry or another checkout) the part
/// from the crate's `src/`, `examples/`, `tests/` or `benches/` directory on.
///
/// ```
/// use flightrec::trace2::source_path;
/// assert_eq!(source_path("std-shell/src/main.rs"), "std-shell/src/main.rs");
/// assert_eq!(source_path("/home/u/.cargo/registry/src/x/foo-1.0/src/lib.rs"), "src/lib.rs");
/// assert_eq!(source_path("/elsewhere/build.rs"), "build.rs");
/// ```
pub fn source_path(file: &str) -> &str {
    if !file.starts_with('/') {
        return file;
    }
    let mut best: Option<usize> = None;
    for dir in ["/src/", "/examples/", "/tests/", "/benches/"] {
        if let Some(i) = file.rfind(dir) {
            best = Some(best.map_or(i, |b: usize| b.max(i)));
        }
    }
    match best {
        Some(i) => &file[i + 1..],
        None => file.rsplit('/').next().unwrap_or(file),
    }
}

/// One open destination with its line format.
#[derive(Debug)]
pub(crate) struct Output {
    /// Shared with the background writer, when there is one.
    pub dest: Arc<Destination>,
    pub format: Format,
}

/// State shared by all threads, behind one lock (used only off the hot path:
/// cmd_name, thread creation and exit, atexit).
pub(crate) struct Shared {
    pub hierarchy: Option<String>,
    pub params_emitted: bool,
    pub totals: ProcessStats<MAX_TIMERS, MAX_COUNTERS>,
    pub thread_ids: IdCounter,
    pub repo_ids: IdCounter,
}

/// A function that lists the config entries `trace2.configParams` asks for,
/// given to [`Builder::config_params`](super::Builder::config_params). It runs
/// once, at the first [`cmd_name`](super::cmd_name).
///
/// ```
/// use flightrec::trace2::config::Trace2Config;
/// use flightrec::trace2::{ConfigParam, ConfigParamsFn};
/// fn none(_: &Trace2Config) -> Vec<ConfigParam> {
///     Vec::new()
/// }
/// let lister: ConfigParamsFn = none;
/// let cfg = Trace2Config::load_from("MYAPP_TRACE2", |_| None);
/// assert!(lister(&cfg).is_empty());
/// ```
pub type ConfigParamsFn = fn(&Trace2Config) -> Vec<super::ConfigParam>;

/// Everything a traced process shares.
pub(crate) struct Runtime {
    pub sid: SessionId,
    pub depth: u32,
    pub outputs: Vec<Output>,
    pub origin: Instant,
    pub cfg: Trace2Config,
    pub version: String,
    pub config_params: Option<ConfigParamsFn>,
    pub shared: Mutex<Shared>,
    pub exit_code: AtomicI32,
    pub exit_emitted: AtomicBool,
    pub atexit_done: AtomicBool,
    pub child_ids: AtomicI64,
    pub exec_ids: AtomicI64,
    /// The writer thread of `WriteMode::Background` (slot = index in
    /// `outputs`); `None` in the default, direct mode.
    pub background: Option<BackgroundWriter>,
}

impl Runtime {
    /// Installs `rt` as the process runtime and turns tracing on. Fails when a
    /// runtime already exists.
    pub(crate) fn install(rt: Runtime) -> Result<&'static Runtime, ()> {
        RUNTIME.set(rt).map_err(|_| ())?;
        let rt = RUNTIME.get().ok_or(())?;
        ENABLED.store(true, Ordering::Release);
        Ok(rt)
    }

    /// Turns tracing off for good (after `atexit`).
    pub(crate) fn disable() {
        ENABLED.store(false, Ordering::Release);
    }

    /// The shared state, locked.
    pub(crate) fn shared(&self) -> MutexGuard<'_, Shared> {
        // A panic while the lock was held leaves plain data behind: keep going.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Microseconds since the runtime started (`t_abs`, and the time base of
    /// the region stacks).
    #[inline]
    pub(crate) fn now(&self) -> Micros {
        clock::micros_since(self.origin)
    }

    /// Nanoseconds since the runtime started (for timers).
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The common line inputs for an event formatted now.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn line_ctx<'a>(
        &'a self,
        thread: &'a [u8],
        loc: Loc<'a>,
        nesting: u32,
        repo: Option<i32>,
        t_abs: Micros,
        time: WallTime,
    ) -> LineCtx<'a> {
        LineCtx {
            time,
            utc_offset_secs: clock::utc_offset_cached(time.secs),
            file: loc.file.as_bytes(),
            line: loc.line,
            thread,
            sid: self.sid.full.as_bytes(),
            sid_depth: self.depth,
            nesting,
            repo,
            t_abs,
        }
    }

    /// Formats `ev` for every open destination (normal, perf, event) into
    /// `buf` and writes each line with one `write()`, or queues it for the
    /// background writer. A destination that fails disables itself and its
    /// warning (if any) is printed once.
    pub(crate) fn write_event(&self, buf: &mut Vec<u8>, ctx: &LineCtx<'_>, ev: &Event<'_>) {
        self.write_event_where(buf, ctx, ev, |_| true);
    }

    /// [`Self::write_event`] for the outputs `pick` selects.
    pub(crate) fn write_event_where(
        &self,
        buf: &mut Vec<u8>,
        ctx: &LineCtx<'_>,
        ev: &Event<'_>,
        pick: impl Fn(&Output) -> bool,
    ) {
        // A signal handler must not take the queue's lock: `signal` is
        // written directly, as in the default mode.
        let queue = match &self.background {
            Some(bg) if !matches!(ev, Event::Signal { .. }) => Some(bg),
            _ => None,
        };
        if let (Some(q), Event::Exit { .. }) = (queue, ev) {
            q.keep_all();
        }
        for (slot, out) in self.outputs.iter().enumerate() {
            if !out.dest.is_enabled() || !pick(out) {
                continue;
            }
            let n = format_into(&out.format, ctx, ev, buf);
            if n == 0 {
                continue;
            }
            let line = &buf[..n];
            if queue.is_some_and(|q| q.push(slot, line) != Pushed::Closed) {
                continue;
            }
            let warning = super::signal::while_writing(|| out.dest.write_line(line));
            if let Some(w) = warning {
                warn(&w);
            }
        }
        // What a child or the exec'd program writes must come after these.
        if let Some(q) = queue {
            if matches!(ev, Event::ChildStart { .. } | Event::Exec { .. }) {
                q.flush();
            }
        }
    }

    /// Waits until the background writer (if any) has written every line
    /// queued so far.
    pub(crate) fn flush(&self) {
        if let Some(bg) = &self.background {
            bg.flush();
        }
    }

    /// Writes what the background writer still holds, ends it, and reports
    /// the lines it dropped, once per destination (after `atexit`).
    pub(crate) fn finish_background(&self) {
        let Some(bg) = &self.background else { return };
        for (dest, n) in bg.shutdown() {
            warn(&format!(
                "trace2: dropped {n} lines for '{}': the background queue was full",
                dest.var()
            ));
        }
    }
}

/// Formats one line, growing `buf` until it fits (up to [`MAX_LINE`]); 0 when
/// the target writes nothing or the line is too long.
fn format_into(f: &Format, ctx: &LineCtx<'_>, ev: &Event<'_>, buf: &mut Vec<u8>) -> usize {
    if buf.len() < 512 {
        buf.resize(512, 0);
    }
    loop {
        match f.write_line(ctx, ev, buf) {
            Ok(n) => return n,
            Err(_) if buf.len() < MAX_LINE => {
                let len = (buf.len() * 2).min(MAX_LINE);
                buf.resize(len, 0);
            }
            Err(_) => return 0,
        }
    }
}

/// Prints `warning: <text>` on stderr, ignoring a failing stderr.
pub(crate) fn warn(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "warning: {text}");
}
