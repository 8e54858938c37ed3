//! Per-thread Trace2 context: name, region stack, timers, counters and the
//! line buffer, owned by the thread (git's `tr2tls`).
//!
//! The context lives in a thread-local slot without a destructor
//! (`ManuallyDrop`): the C library runs thread-local destructors *before*
//! `atexit` handlers when a program calls `exit()`, and the main thread's
//! context must still be there for the `atexit` events. Worker threads get a
//! separate destructor ([`Reaper`]) that merges and frees their context when
//! they end; the main thread's context is never freed (the process is ending).
//!
//! A call into the runtime takes the context out of its slot for the length
//! of the call and puts it back afterwards (also when unwinding), so the
//! thread has exactly one `&mut` to it; a re-entrant call on the same thread
//! (a `Display` impl that traces, a signal handler) finds the thread busy and
//! is dropped.

use std::cell::Cell;
use std::mem::ManuallyDrop;

use flightrec_core::trace2::{Micros, ThreadCounters, ThreadName, ThreadState, ThreadTimers};

use super::gap::Gaps;
use super::runtime::{runtime_any, Runtime};
use super::stat_defs::{MAX_COUNTERS, MAX_TIMERS};

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
    /// Set once the thread's timers and counters are in the process totals.
    pub merged: bool,
    /// A worker whose OS thread id is still to be said (a `data` event
    /// `flightrec`/`tid` before its first event, when the XRay runtime is on).
    pub tid_unsaid: bool,
    /// What the background writer's full queues made this thread drop.
    pub gaps: Gaps,
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
            tid_unsaid: id != 0,
            gaps: Gaps::default(),
        })
    }
}

thread_local! {
    /// This thread's context, when it has one and it is not lent out. No
    /// destructor (see the module docs): [`Reaper`] frees a worker's.
    static CTX: Cell<ManuallyDrop<Option<Box<ThreadCtx>>>> =
        const { Cell::new(ManuallyDrop::new(None)) };
    /// Set while this thread is inside the runtime (its context is lent out):
    /// a re-entrant call is dropped.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    /// Frees a worker thread's context when the thread ends.
    static REAPER: Reaper = const { Reaper };
}

/// Takes this thread's context out of its slot.
#[inline]
fn take_ctx() -> Option<Box<ThreadCtx>> {
    ManuallyDrop::into_inner(CTX.take())
}

/// Puts `ctx` in this thread's slot and returns what was there.
#[inline]
fn put_ctx(ctx: Option<Box<ThreadCtx>>) -> Option<Box<ThreadCtx>> {
    ManuallyDrop::into_inner(CTX.replace(ManuallyDrop::new(ctx)))
}

/// Registers this thread's [`Reaper`] (once; a no-op while the thread's
/// thread-locals are being destroyed).
fn arm_reaper() {
    let _ = REAPER.try_with(|_| {});
}

struct Reaper;

impl Drop for Reaper {
    fn drop(&mut self) {
        reap();
    }
}

/// At thread end: merges a worker's context into the process totals and frees
/// it; the main thread keeps its context for the `atexit` events.
fn reap() {
    if BUSY.with(Cell::get) {
        return;
    }
    let Some(ctx) = take_ctx() else { return };
    if ctx.id == 0 {
        put_ctx(Some(ctx));
        return;
    }
    if let Some(rt) = runtime_any() {
        if !ctx.merged {
            rt.shared().totals.merge_thread(&ctx.timers, &ctx.counters);
        }
    }
}

/// This thread's context lent out of [`CTX`] for one call (with [`BUSY`] set);
/// dropping it puts the context back and clears [`BUSY`], also on unwinding.
struct Lent(Option<Box<ThreadCtx>>);

impl Drop for Lent {
    #[inline]
    fn drop(&mut self) {
        if let Some(ctx) = self.0.take() {
            put_ctx(Some(ctx));
        }
        BUSY.with(|b| b.set(false));
    }
}

/// Lends this thread's context (`Lent(None)` when it has none); `None` when
/// the thread is already inside the runtime.
#[inline]
fn lend() -> Option<Lent> {
    if BUSY.with(|b| b.replace(true)) {
        return None;
    }
    Some(Lent(take_ctx()))
}

/// Runs `f` with this thread's context, creating one if the thread has none:
/// `thNN:<name>` for a thread with a std name (`thread::Builder::name`, as
/// tokio's `tokio-runtime-worker`), else `thNN:unknown`. `None` when the
/// thread is already inside the runtime.
#[inline]
pub(crate) fn with_ctx<R>(rt: &Runtime, f: impl FnOnce(&mut ThreadCtx) -> R) -> Option<R> {
    with_ctx_or(|| new_unnamed_worker(rt), f)
}

/// The context of a thread that did not call `thread_start`: named after the
/// thread's std name when it has one.
#[cold]
fn new_unnamed_worker(rt: &Runtime) -> Box<ThreadCtx> {
    let current = std::thread::current();
    let base = match current.name() {
        Some(name) if !name.is_empty() => name.as_bytes(),
        _ => b"unknown",
    };
    new_worker(rt, base)
}

/// [`with_ctx`] with the context `make` creates when the thread has none.
#[inline]
fn with_ctx_or<R>(
    make: impl FnOnce() -> Box<ThreadCtx>,
    f: impl FnOnce(&mut ThreadCtx) -> R,
) -> Option<R> {
    let mut lent = lend()?;
    let ctx = match &mut lent.0 {
        Some(ctx) => ctx,
        none => {
            arm_reaper();
            none.insert(make())
        }
    };
    Some(f(ctx))
}

/// Like [`with_ctx`], but only when the thread already has a context.
pub(crate) fn with_existing_ctx<R>(f: impl FnOnce(&mut ThreadCtx) -> R) -> Option<R> {
    let mut lent = lend()?;
    lent.0.as_mut().map(|ctx| f(ctx))
}

/// Replaces this thread's context by `new`, merging the old one into the
/// process totals (unless it was merged already) and freeing it. `false`, and
/// nothing replaced, when the thread is inside the runtime.
fn set_ctx(rt: &Runtime, new: Option<Box<ThreadCtx>>) -> bool {
    if BUSY.with(Cell::get) {
        return false;
    }
    if let Some(old) = put_ctx(new) {
        if !old.merged {
            rt.shared().totals.merge_thread(&old.timers, &old.counters);
        }
    }
    true
}

fn new_worker(rt: &Runtime, base: &[u8]) -> Box<ThreadCtx> {
    let id = rt.shared().thread_ids.next_id();
    ThreadCtx::new(id, ThreadName::worker(id, base), rt.now())
}

/// Makes the calling thread the main thread (id 0, `main`).
pub(crate) fn install_main(rt: &Runtime) {
    set_ctx(rt, Some(ThreadCtx::new(0, ThreadName::main(), 0)));
}

/// Gives the calling thread a new worker context named `th<NN>:<base>`
/// (replacing the one it had). `false` when the thread is inside the runtime
/// (a `Display` impl that starts a thread): nothing changes then.
pub(crate) fn start_worker(rt: &Runtime, base: &[u8]) -> bool {
    if BUSY.with(Cell::get) {
        return false;
    }
    let started = set_ctx(rt, Some(new_worker(rt, base)));
    arm_reaper();
    started
}

/// Ends the calling thread's context (merged into the totals and freed).
pub(crate) fn end_thread(rt: &Runtime) {
    set_ctx(rt, None);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(id: u32) -> Box<ThreadCtx> {
        ThreadCtx::new(id, ThreadName::worker(id, b"test"), 0)
    }

    /// Runs `f` on a thread of its own (a fresh context slot).
    fn on_new_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    #[test]
    fn the_context_is_made_once_and_kept() {
        on_new_thread(|| {
            assert_eq!(with_existing_ctx(|c| c.id), None);
            assert_eq!(with_ctx_or(|| worker(7), |c| c.scratch.push(1)), Some(()));
            let second = with_ctx_or(|| panic!("made twice"), |c| (c.id, c.scratch.clone()));
            assert_eq!(second, Some((7, vec![1])));
            assert_eq!(with_existing_ctx(|c| c.id), Some(7));
        });
    }

    #[test]
    fn a_reentrant_call_is_dropped() {
        on_new_thread(|| {
            let inner = with_ctx_or(
                || worker(3),
                |c| {
                    c.scratch.push(1);
                    (
                        with_ctx_or(|| panic!("a second context"), |c| c.id),
                        with_existing_ctx(|c| c.id),
                    )
                },
            );
            assert_eq!(inner, Some((None, None)));
            // Back outside: the same context, not busy any more.
            assert_eq!(with_existing_ctx(|c| (c.id, c.scratch.len())), Some((3, 1)));
        });
    }

    #[test]
    fn a_panic_inside_puts_the_context_back() {
        on_new_thread(|| {
            let unwound = std::panic::catch_unwind(|| {
                with_ctx_or(
                    || worker(5),
                    |c| {
                        c.scratch.push(9);
                        panic!("in a Display impl");
                    },
                )
            });
            assert!(unwound.is_err());
            assert_eq!(
                with_existing_ctx(|c| (c.id, c.scratch.clone())),
                Some((5, vec![9]))
            );
        });
    }

    #[test]
    fn thread_end_frees_a_worker_and_keeps_main() {
        on_new_thread(|| {
            with_ctx_or(|| worker(4), |_| ());
            reap();
            assert_eq!(with_existing_ctx(|c| c.id), None);

            with_ctx_or(|| ThreadCtx::new(0, ThreadName::main(), 0), |_| ());
            reap();
            assert_eq!(with_existing_ctx(|c| c.id), Some(0));
            // The slot has no destructor: free it here so that a leak checker
            // (Miri) sees only what the reaper leaves behind.
            drop(take_ctx());
        });
    }

    #[test]
    fn the_reaper_frees_a_worker_when_its_thread_ends() {
        // Under Miri an unfreed context is reported as a leak.
        on_new_thread(|| {
            with_ctx_or(|| worker(6), |c| c.scratch.extend_from_slice(b"x"));
        });
    }
}
