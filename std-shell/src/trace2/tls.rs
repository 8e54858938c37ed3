//! Per-thread Trace2 context: name, region stack, timers, counters and the
//! line buffer, owned by the thread (git's `tr2tls`).
//!
//! The context lives behind a thread-local raw pointer rather than a
//! thread-local value with a destructor: the C library runs thread-local
//! destructors *before* `atexit` handlers when a program calls `exit()`, and
//! the main thread's context must still be there for the `atexit` events.
//! Worker threads get a separate destructor ([`Reaper`]) that merges and frees
//! their context when they end.

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::Location;
use std::ptr;

use flightrec_core::trace2::{
    Event, Micros, Msg, ThreadCounters, ThreadName, ThreadState, ThreadTimers,
};

use super::clock;
use super::runtime::{runtime, Loc, Runtime};
use super::stats::{with_counter_defs, with_timer_defs, MAX_COUNTERS, MAX_TIMERS};

/// Deepest region nesting whose start times are stored (deeper levels still
/// count; see `RegionStack`).
pub(crate) const MAX_NESTING: usize = 64;

/// One thread's Trace2 state.
pub(crate) struct ThreadCtx {
    pub id: u32,
    pub state: ThreadState<MAX_NESTING>,
    pub timers: ThreadTimers<MAX_TIMERS>,
    pub counters: ThreadCounters<MAX_COUNTERS>,
    pub buf: Vec<u8>,
    pub scratch: Vec<u8>,
    pub merged: bool,
}

impl ThreadCtx {
    fn new(id: u32, name: ThreadName, start: Micros) -> Box<Self> {
        Box::new(ThreadCtx {
            id,
            state: ThreadState::new(name, start),
            timers: ThreadTimers::new(),
            counters: ThreadCounters::new(),
            buf: vec![0; 512],
            scratch: Vec::new(),
            merged: false,
        })
    }

    /// Formats and writes `ev` at `nesting`, `t_abs` = now.
    #[inline]
    pub(crate) fn emit_at(
        &mut self,
        rt: &Runtime,
        loc: Loc<'_>,
        nesting: u32,
        repo: Option<i32>,
        t_abs: Micros,
        ev: &Event<'_>,
    ) {
        let ThreadCtx { state, buf, .. } = self;
        let ctx = rt.line_ctx(
            state.name.as_bytes(),
            loc,
            nesting,
            repo,
            t_abs,
            clock::wall_now(),
        );
        rt.write_event(buf, &ctx, ev);
    }

    /// Formats and writes `ev` at the current nesting to the outputs `pick`
    /// selects.
    pub(crate) fn emit_where(
        &mut self,
        rt: &Runtime,
        loc: Loc<'_>,
        ev: &Event<'_>,
        pick: impl Fn(&super::runtime::Output) -> bool,
    ) {
        let nesting = self.state.nesting();
        let ThreadCtx { state, buf, .. } = self;
        let ctx = rt.line_ctx(
            state.name.as_bytes(),
            loc,
            nesting,
            None,
            rt.now(),
            clock::wall_now(),
        );
        rt.write_event_where(buf, &ctx, ev, pick);
    }

    /// Formats and writes `ev` at the current nesting.
    #[inline]
    pub(crate) fn emit(&mut self, rt: &Runtime, loc: Loc<'_>, ev: &Event<'_>) {
        let nesting = self.state.nesting();
        self.emit_at(rt, loc, nesting, None, rt.now(), ev);
    }

    /// Emits this thread's `th_timer` and `th_counter` events and merges its
    /// timers and counters into the process totals (once).
    pub(crate) fn report_and_merge(&mut self, rt: &Runtime) {
        if self.merged {
            return;
        }
        self.merged = true;
        let loc = Loc::from(Location::caller());
        let timers = self.timers;
        let counters = self.counters;
        with_timer_defs(|defs| {
            for ev in timers.thread_events(defs) {
                self.emit(rt, loc, &ev);
            }
        });
        with_counter_defs(|defs| {
            for ev in counters.thread_events(defs) {
                self.emit(rt, loc, &ev);
            }
        });
        rt.shared().totals.merge_thread(&timers, &counters);
    }
}

thread_local! {
    /// This thread's context (owned; null when none).
    static CTX: Cell<*mut ThreadCtx> = const { Cell::new(ptr::null_mut()) };
    /// Set while this thread is inside the runtime: a re-entrant call (a
    /// `Display` impl that traces, a signal) is dropped instead of aliasing.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    /// Frees a worker thread's context when the thread ends.
    static REAPER: Reaper = const { Reaper };
}

struct Reaper;

impl Drop for Reaper {
    fn drop(&mut self) {
        if BUSY.with(Cell::get) {
            return;
        }
        let p = CTX.with(|c| c.replace(ptr::null_mut()));
        if p.is_null() {
            return;
        }
        // SAFETY: a non-null CTX was made by Box::into_raw on this thread and
        // nothing else holds it (BUSY is clear); taking it out of CTX first
        // means it is freed exactly once.
        let ctx = unsafe { Box::from_raw(p) };
        if ctx.id == 0 {
            // The main thread keeps its context for the atexit events.
            CTX.with(|c| c.set(Box::into_raw(ctx)));
            return;
        }
        if let Some(rt) = super::runtime::runtime_any() {
            if !ctx.merged {
                rt.shared().totals.merge_thread(&ctx.timers, &ctx.counters);
            }
        }
    }
}

/// Clears BUSY when dropped, also on unwinding.
struct BusyReset;

impl Drop for BusyReset {
    fn drop(&mut self) {
        BUSY.with(|b| b.set(false));
    }
}

/// Runs `f` with this thread's context, creating a `thNN:unknown` one if the
/// thread has none. `None` when the thread is already inside the runtime.
#[inline]
pub(crate) fn with_ctx<R>(rt: &Runtime, f: impl FnOnce(&mut ThreadCtx) -> R) -> Option<R> {
    if BUSY.with(|b| b.replace(true)) {
        return None;
    }
    let _reset = BusyReset;
    let mut p = CTX.with(Cell::get);
    if p.is_null() {
        p = Box::into_raw(new_worker(rt, b"unknown"));
        CTX.with(|c| c.set(p));
        let _ = REAPER.try_with(|_| {});
    }
    // SAFETY: `p` came from Box::into_raw on this thread and is only reached
    // through CTX of this thread; BUSY guarantees no other `&mut` to it is live.
    Some(f(unsafe { &mut *p }))
}

/// Like [`with_ctx`], but only when the thread already has a context.
pub(crate) fn with_existing_ctx<R>(f: impl FnOnce(&mut ThreadCtx) -> R) -> Option<R> {
    if BUSY.with(|b| b.replace(true)) {
        return None;
    }
    let _reset = BusyReset;
    let p = CTX.with(Cell::get);
    if p.is_null() {
        return None;
    }
    // SAFETY: as in `with_ctx`.
    Some(f(unsafe { &mut *p }))
}

/// Replaces this thread's context by `new` (freeing and merging the old one).
fn set_ctx(rt: &Runtime, new: Option<Box<ThreadCtx>>) {
    let old = CTX.with(|c| c.replace(new.map_or(ptr::null_mut(), Box::into_raw)));
    if !old.is_null() {
        // SAFETY: `old` came from Box::into_raw on this thread and was just
        // removed from CTX, so this is its only owner.
        let old = unsafe { Box::from_raw(old) };
        if !old.merged {
            rt.shared().totals.merge_thread(&old.timers, &old.counters);
        }
    }
}

fn new_worker(rt: &Runtime, base: &[u8]) -> Box<ThreadCtx> {
    let id = rt.shared().thread_ids.next_id();
    ThreadCtx::new(id, ThreadName::worker(id, base), rt.now())
}

/// Makes the calling thread the main thread (id 0, `main`).
pub(crate) fn install_main(rt: &Runtime) {
    set_ctx(rt, Some(ThreadCtx::new(0, ThreadName::main(), 0)));
}

/// Marks a thread's Trace2 lifetime: created by [`thread_start`], emits
/// `thread_exit` (after the thread's `th_timer`/`th_counter`) when dropped.
/// It stays on the thread that made it (it is not `Send`). Example on
/// [`thread_start`].
#[must_use = "the thread's Trace2 context ends when this guard is dropped"]
#[derive(Debug)]
pub struct ThreadGuard {
    kind: GuardKind,
    loc: &'static Location<'static>,
    _not_send: PhantomData<*const ()>,
}

#[derive(Debug, PartialEq, Eq)]
enum GuardKind {
    Inactive,
    /// `thread_start` on the main thread became a region.
    MainRegion,
    Worker,
}

/// Starts a thread's Trace2 context named `th<NN>:<base>` (git's
/// `trace2_thread_start`) and emits `thread_start`; the returned guard emits
/// `thread_exit` when dropped. On the main thread this becomes a region with
/// the message `thread-proc on main: <base>`, as in git.
///
/// ```
/// use flightrec::trace2::ThreadGuard;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let worker = std::thread::spawn(|| {
///     let _th: ThreadGuard = flightrec::trace2::thread_start("preload");
///     flightrec::trace2::data("index", "preloaded", "12"); // from th01:preload
/// }); // thread_exit when `_th` is dropped
/// worker.join().unwrap();
/// {
///     let _on_main = flightrec::trace2::thread_start("inline"); // a region on main
/// }
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let seen: Vec<String> = events
///     .iter()
///     .filter(|e| e["event"] != "version" && e["event"] != "start" && e["event"] != "cmd_ancestry")
///     .map(|e| format!("{} {}", e["thread"].as_str().unwrap(), e["event"].as_str().unwrap()))
///     .collect();
/// assert_eq!(
///     seen[..5],
///     [
///         "th01:preload thread_start",
///         "th01:preload data",
///         "th01:preload thread_exit",
///         "main region_enter",
///         "main region_leave",
///     ]
/// );
/// let enter = events.iter().find(|e| e["event"] == "region_enter").unwrap();
/// assert_eq!(enter["msg"], "thread-proc on main: inline");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn thread_start(base: &str) -> ThreadGuard {
    let loc = Location::caller();
    let inactive = ThreadGuard {
        kind: GuardKind::Inactive,
        loc,
        _not_send: PhantomData,
    };
    let Some(rt) = runtime() else { return inactive };
    let on_main = with_existing_ctx(|c| c.id == 0).unwrap_or(false);
    if on_main {
        let msg = format!("thread-proc on main: {base}");
        super::region::enter_raw(
            rt,
            Loc::from(loc),
            None,
            None,
            Some(Msg::Bytes(msg.as_bytes())),
            None,
        );
        return ThreadGuard {
            kind: GuardKind::MainRegion,
            ..inactive
        };
    }
    let ctx = new_worker(rt, base.as_bytes());
    set_ctx(rt, Some(ctx));
    let _ = REAPER.try_with(|_| {});
    with_ctx(rt, |c| {
        let t = c.state.start;
        c.emit_at(rt, Loc::from(loc), 1, None, t, &Event::ThreadStart)
    });
    ThreadGuard {
        kind: GuardKind::Worker,
        ..inactive
    }
}

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        let Some(rt) = runtime() else { return };
        let loc = Loc::from(self.loc);
        match self.kind {
            GuardKind::Inactive => {}
            GuardKind::MainRegion => {
                super::region::leave_raw(
                    rt,
                    loc,
                    None,
                    None,
                    Some(Msg::Bytes(b"thread-proc on main")),
                    None,
                );
            }
            GuardKind::Worker => {
                let ended = with_existing_ctx(|c| {
                    let now = rt.now();
                    c.state.regions.unwind();
                    c.report_and_merge(rt);
                    let t_rel = c.state.run_time(now);
                    c.emit_at(
                        rt,
                        loc,
                        c.state.nesting(),
                        None,
                        now,
                        &Event::ThreadExit { t_rel },
                    );
                });
                if ended.is_some() {
                    set_ctx(rt, None);
                }
            }
        }
    }
}
