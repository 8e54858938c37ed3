//! The registry of timer and counter definitions: each [`Timer`](super::Timer)
//! or [`Counter`](super::Counter) static gets an id (its index here) on first
//! use; the ids index the per-thread and process-wide value arrays.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use flightrec_core::trace2::StatDef;

/// Most timers a process can register (later ones are ignored).
///
/// ```
/// use flightrec::trace2::{Timer, MAX_TIMERS};
/// static TIMERS: [Timer; MAX_TIMERS + 1] = [const { Timer::new("test", "t", false) }; MAX_TIMERS + 1];
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// for timer in &TIMERS {
///     timer.start(); // the first use registers the timer
///     timer.stop();
/// }
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// assert_eq!(events.iter().filter(|e| e["event"] == "timer").count(), MAX_TIMERS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_TIMERS: usize = 32;
/// Most counters a process can register (later ones are ignored).
///
/// ```
/// use flightrec::trace2::{Counter, MAX_COUNTERS};
/// static COUNTERS: [Counter; MAX_COUNTERS + 1] =
///     [const { Counter::new("test", "c", false) }; MAX_COUNTERS + 1];
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// for counter in &COUNTERS {
///     counter.add(1); // the first use registers the counter
/// }
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// assert_eq!(events.iter().filter(|e| e["event"] == "counter").count(), MAX_COUNTERS);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_COUNTERS: usize = 32;

static TIMER_DEFS: Mutex<Vec<StatDef>> = Mutex::new(Vec::new());
static COUNTER_DEFS: Mutex<Vec<StatDef>> = Mutex::new(Vec::new());

/// Id slot value: not registered yet.
pub(crate) const UNREGISTERED: usize = 0;
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

/// The id of the timer whose id slot is `slot`, registering `def` on first
/// use; `None` once [`MAX_TIMERS`] are registered.
#[inline]
pub(crate) fn timer_id(slot: &AtomicUsize, def: StatDef) -> Option<usize> {
    id_of(slot, &TIMER_DEFS, def, MAX_TIMERS)
}

/// The id of the counter whose id slot is `slot`, registering `def` on first
/// use; `None` once [`MAX_COUNTERS`] are registered.
#[inline]
pub(crate) fn counter_id(slot: &AtomicUsize, def: StatDef) -> Option<usize> {
    id_of(slot, &COUNTER_DEFS, def, MAX_COUNTERS)
}

/// Runs `f` with the registered timer definitions (in id order).
pub(crate) fn with_timer_defs<R>(f: impl FnOnce(&[StatDef]) -> R) -> R {
    f(&TIMER_DEFS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `f` with the registered counter definitions (in id order).
pub(crate) fn with_counter_defs<R>(f: impl FnOnce(&[StatDef]) -> R) -> R {
    f(&COUNTER_DEFS.lock().unwrap_or_else(|e| e.into_inner()))
}
