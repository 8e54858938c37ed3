//! The process-wide Trace2 runtime state: the settings, the open outputs, the
//! session id, the shared counters and ids, and whether Trace2 is on.
//!
//! Whether Trace2 is on is a single relaxed atomic load ([`enabled`]); every
//! public call checks it first, so with no target configured tracing costs one
//! load and a branch.

use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use flightrec_core::trace2::{IdCounter, Micros, ProcessStats};

use super::clock;
use super::config::Trace2Config;
use super::config_param::ConfigParamsFn;
use super::outputs::Output;
use super::sid::SessionId;
use super::stat_defs::{MAX_COUNTERS, MAX_TIMERS};
use super::target::BackgroundWriter;
use super::warning::warn;

/// Set once a runtime with at least one open destination exists, cleared after
/// `atexit`.
static ENABLED: AtomicBool = AtomicBool::new(false);
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

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

/// State shared by all threads, behind one lock (used only off the hot path:
/// cmd_name, thread creation and exit, atexit).
pub(crate) struct Shared {
    pub hierarchy: Option<String>,
    pub params_emitted: bool,
    pub totals: ProcessStats<MAX_TIMERS, MAX_COUNTERS>,
    pub thread_ids: IdCounter,
    pub repo_ids: IdCounter,
}

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

    /// Waits until the background writer (if any) has written every line
    /// queued so far.
    pub(crate) fn flush(&self) {
        if let Some(bg) = &self.background {
            bg.flush();
        }
    }

    /// Writes what the background writer still holds, ends it, and reports
    /// the lines it dropped, once per destination; then the lines each
    /// destination lost to a failed write (after `atexit`).
    pub(crate) fn finish_background(&self) {
        if let Some(bg) = &self.background {
            for lost in bg.shutdown() {
                let (n, var) = (lost.lines, lost.dest.var());
                let where_ = match lost.unmarked {
                    0 => String::new(),
                    1 => "; the last run, on a thread that traced no more, is not marked".into(),
                    k => {
                        format!("; the last runs of {k} threads that traced no more are not marked")
                    }
                };
                warn(&format!(
                    "trace2: dropped {n} lines for '{var}': the background queue was full{where_}"
                ));
            }
        }
        for out in &self.outputs {
            if let Some(report) = out.dest.take_loss_report() {
                warn(&report);
            }
        }
    }
}

/// Waits until every line traced so far is written to its destinations.
///
/// In the default [`WriteMode::Direct`](super::target::WriteMode::Direct)
/// every line is written before its call returns and this does nothing. In
/// [`WriteMode::Background`](super::target::WriteMode::Background) it waits
/// for the writer thread: call it before handing the trace file to someone
/// else, or before starting a child process without [`child`](super::child())
/// (which flushes after `child_start` itself). Exit paths flush on their own.
///
/// ```
/// use flightrec::trace2::target::WriteMode;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace` (brief).
/// let t2 = flightrec::trace2::Builder::new()
///     .prefix("MYAPP_TRACE2")
///     .write_mode(WriteMode::background())
///     .init();
/// flightrec::trace2::cmd_name("report");
/// flightrec::trace2::flush();
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.ends_with("\ncmd_name report (report)\n"));
/// drop(t2);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn flush() {
    if let Some(rt) = runtime() {
        rt.flush();
    }
}
