//! Timers and counters declared as statics, registered on first use.
//!
//! Each thread adds to its own copy (no atomics, no lock); a thread's values
//! are merged into the process totals when it exits, and the totals are
//! reported as `timer`/`counter` events at `atexit`, like git.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use flightrec_core::trace2::StatDef;

use super::runtime::runtime;
use super::tls::with_ctx;

/// Most timers a process can register (later ones are ignored).
pub const MAX_TIMERS: usize = 32;
/// Most counters a process can register (later ones are ignored).
pub const MAX_COUNTERS: usize = 32;

static TIMER_DEFS: Mutex<Vec<StatDef>> = Mutex::new(Vec::new());
static COUNTER_DEFS: Mutex<Vec<StatDef>> = Mutex::new(Vec::new());

/// Id slot value: not registered yet.
const UNREGISTERED: usize = 0;
/// Id slot value: the table was full.
const FULL: usize = usize::MAX;

fn register(
    slot: &AtomicUsize,
    table: &Mutex<Vec<StatDef>>,
    def: StatDef,
    max: usize,
) -> Option<usize> {
    let mut defs = table.lock().unwrap_or_else(|e| e.into_inner());
    // Another thread may have registered it while we waited for the lock.
    match slot.load(Ordering::Acquire) {
        UNREGISTERED => {}
        FULL => return None,
        v => return Some(v - 1),
    }
    if defs.len() >= max {
        slot.store(FULL, Ordering::Release);
        return None;
    }
    defs.push(def);
    slot.store(defs.len(), Ordering::Release);
    Some(defs.len() - 1)
}

#[inline]
fn id_of(
    slot: &AtomicUsize,
    table: &Mutex<Vec<StatDef>>,
    def: StatDef,
    max: usize,
) -> Option<usize> {
    match slot.load(Ordering::Acquire) {
        UNREGISTERED => register(slot, table, def, max),
        FULL => None,
        v => Some(v - 1),
    }
}

/// Runs `f` with the registered timer definitions (in id order).
pub(crate) fn with_timer_defs<R>(f: impl FnOnce(&[StatDef]) -> R) -> R {
    f(&TIMER_DEFS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `f` with the registered counter definitions (in id order).
pub(crate) fn with_counter_defs<R>(f: impl FnOnce(&[StatDef]) -> R) -> R {
    f(&COUNTER_DEFS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A stopwatch timer (git's `trace2_timer_start`/`stop`). Nested starts on one
/// thread count as one interval (the outermost pair).
///
/// ```
/// use flightrec::trace2::Timer;
/// static PARSE: Timer = Timer::new("index", "parse", false);
/// {
///     let _t = PARSE.scope(); // stops when dropped
/// }
/// PARSE.start();
/// PARSE.stop();
/// ```
#[derive(Debug)]
pub struct Timer {
    def: StatDef,
    id: AtomicUsize,
}

impl Timer {
    /// A timer in `category` named `name`; `per_thread` also reports each
    /// thread's own total (`th_timer`) when the thread exits.
    pub const fn new(category: &'static str, name: &'static str, per_thread: bool) -> Self {
        Timer {
            def: StatDef {
                category: category.as_bytes(),
                name: name.as_bytes(),
                per_thread,
            },
            id: AtomicUsize::new(UNREGISTERED),
        }
    }

    fn id(&self) -> Option<usize> {
        id_of(&self.id, &TIMER_DEFS, self.def, MAX_TIMERS)
    }

    /// Starts an interval on this thread.
    #[inline]
    pub fn start(&self) {
        let Some(rt) = runtime() else { return };
        let Some(id) = self.id() else { return };
        with_ctx(rt, |c| c.timers.start(id, rt.now_ns()));
    }

    /// Stops the interval started last on this thread.
    #[inline]
    pub fn stop(&self) {
        let Some(rt) = runtime() else { return };
        let Some(id) = self.id() else { return };
        with_ctx(rt, |c| c.timers.stop(id, rt.now_ns()));
    }

    /// Starts an interval that stops when the guard is dropped.
    #[inline]
    pub fn scope(&self) -> TimerScope<'_> {
        let active = runtime().is_some();
        if active {
            self.start();
        }
        TimerScope {
            timer: self,
            active,
        }
    }
}

/// Stops its timer when dropped (see [`Timer::scope`]).
#[must_use = "the interval ends when this guard is dropped"]
#[derive(Debug)]
pub struct TimerScope<'a> {
    timer: &'a Timer,
    active: bool,
}

impl Drop for TimerScope<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.active {
            self.timer.stop();
        }
    }
}

/// A counter (git's `trace2_counter_add`): per-thread sums, totalled at exit.
///
/// ```
/// use flightrec::trace2::Counter;
/// static RESEEKS: Counter = Counter::new("reftable", "reseeks_made", false);
/// RESEEKS.add(3);
/// ```
#[derive(Debug)]
pub struct Counter {
    def: StatDef,
    id: AtomicUsize,
}

impl Counter {
    /// A counter in `category` named `name`; `per_thread` also reports each
    /// thread's own value (`th_counter`) when the thread exits.
    pub const fn new(category: &'static str, name: &'static str, per_thread: bool) -> Self {
        Counter {
            def: StatDef {
                category: category.as_bytes(),
                name: name.as_bytes(),
                per_thread,
            },
            id: AtomicUsize::new(UNREGISTERED),
        }
    }

    /// Adds `value` on this thread.
    #[inline]
    pub fn add(&self, value: u64) {
        let Some(rt) = runtime() else { return };
        let Some(id) = id_of(&self.id, &COUNTER_DEFS, self.def, MAX_COUNTERS) else {
            return;
        };
        with_ctx(rt, |c| c.counters.add(id, value));
    }
}
