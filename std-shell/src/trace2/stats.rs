//! Timers and counters declared as statics, registered on first use.
//!
//! Each thread adds to its own copy (no atomics, no lock); a thread's values
//! are merged into the process totals when it exits, and the totals are
//! reported as `timer`/`counter` events at `atexit`, like git.

use std::panic::Location;
use std::sync::atomic::AtomicUsize;

use flightrec_core::trace2::StatDef;

use super::emit::emit_in;
use super::runtime::{runtime, Loc, Runtime};
use super::stat_defs::{counter_id, timer_id, with_counter_defs, with_timer_defs, UNREGISTERED};
use super::tls::{with_ctx, ThreadCtx};

/// A stopwatch timer (git's `trace2_timer_start`/`stop`). Nested starts on one
/// thread count as one interval (the outermost pair).
///
/// The process total is reported as a `timer` event at `atexit`.
///
/// ```
/// use flightrec::trace2::{Timer, TimerScope};
/// static PARSE: Timer = Timer::new("index", "parse", false);
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// {
///     let _t: TimerScope<'_> = PARSE.scope(); // stops when dropped
///     std::thread::sleep(std::time::Duration::from_millis(2));
/// }
/// PARSE.start();
/// PARSE.start(); // nested: part of the second interval
/// PARSE.stop();
/// PARSE.stop();
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let timer = events.iter().find(|e| e["event"] == "timer").unwrap();
/// assert!(timer["category"] == "index" && timer["name"] == "parse");
/// assert_eq!(timer["intervals"], 2);
/// assert!(timer["t_max"].as_f64().unwrap() >= 0.002);
/// assert!(timer["t_total"].as_f64().unwrap() >= timer["t_max"].as_f64().unwrap());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Timer {
    def: StatDef,
    id: AtomicUsize,
}

impl Timer {
    /// A timer in `category` named `name`; `per_thread` also reports each
    /// thread's own total (`th_timer`) when the thread exits.
    ///
    /// ```
    /// use flightrec::trace2::Timer;
    /// static LOAD: Timer = Timer::new("pack", "load", true);
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
    /// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// std::thread::spawn(|| {
    ///     let _th = flightrec::trace2::thread_start("loader");
    ///     drop(LOAD.scope());
    /// })
    /// .join()
    /// .unwrap();
    /// drop(LOAD.scope()); // on the main thread
    /// drop(t2);
    /// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
    ///     .lines()
    ///     .map(serde_json::from_str)
    ///     .collect::<Result<_, _>>()?;
    /// let th_timers: Vec<&str> = events
    ///     .iter()
    ///     .filter(|e| e["event"] == "th_timer")
    ///     .map(|e| e["thread"].as_str().unwrap())
    ///     .collect();
    /// assert_eq!(th_timers, ["th01:loader", "main"]);
    /// let total = events.iter().find(|e| e["event"] == "timer").unwrap();
    /// assert_eq!(total["intervals"], 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
        timer_id(&self.id, self.def)
    }

    /// Starts an interval on this thread. Example on [`Timer`].
    #[inline]
    pub fn start(&self) {
        let Some(rt) = runtime() else { return };
        let Some(id) = self.id() else { return };
        with_ctx(rt, |c| c.timers.start(id, rt.now_ns()));
    }

    /// Stops the interval started last on this thread. Example on [`Timer`].
    #[inline]
    pub fn stop(&self) {
        let Some(rt) = runtime() else { return };
        let Some(id) = self.id() else { return };
        with_ctx(rt, |c| c.timers.stop(id, rt.now_ns()));
    }

    /// Starts an interval that stops when the guard is dropped. Example on
    /// [`Timer`].
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

/// Stops its timer when dropped (see [`Timer::scope`]). Example on [`Timer`].
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
/// The process total is reported as a `counter` event at `atexit`.
///
/// ```
/// use flightrec::trace2::Counter;
/// static RESEEKS: Counter = Counter::new("reftable", "reseeks_made", false);
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// RESEEKS.add(3);
/// std::thread::spawn(|| RESEEKS.add(4)).join().unwrap();
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let counter = events.iter().find(|e| e["event"] == "counter").unwrap();
/// assert!(counter["category"] == "reftable" && counter["name"] == "reseeks_made");
/// assert_eq!(counter["count"], 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Counter {
    def: StatDef,
    id: AtomicUsize,
}

impl Counter {
    /// A counter in `category` named `name`; `per_thread` also reports each
    /// thread's own value (`th_counter`) when the thread exits.
    ///
    /// ```
    /// use flightrec::trace2::Counter;
    /// static OBJECTS: Counter = Counter::new("pack", "objects", true);
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
    /// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// std::thread::spawn(|| {
    ///     let _th = flightrec::trace2::thread_start("indexer");
    ///     OBJECTS.add(5);
    /// })
    /// .join()
    /// .unwrap();
    /// OBJECTS.add(1);
    /// drop(t2);
    /// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
    ///     .lines()
    ///     .map(serde_json::from_str)
    ///     .collect::<Result<_, _>>()?;
    /// let counts: Vec<String> = events
    ///     .iter()
    ///     .filter(|e| e["event"] == "th_counter" || e["event"] == "counter")
    ///     .map(|e| format!("{} {} {}", e["event"], e["thread"], e["count"]))
    ///     .collect();
    /// assert_eq!(
    ///     counts,
    ///     [r#""th_counter" "th01:indexer" 5"#, r#""th_counter" "main" 1"#, r#""counter" "main" 6"#]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

    /// Adds `value` on this thread. Example on [`Counter`].
    #[inline]
    pub fn add(&self, value: u64) {
        let Some(rt) = runtime() else { return };
        let Some(id) = counter_id(&self.id, self.def) else {
            return;
        };
        with_ctx(rt, |c| c.counters.add(id, value));
    }
}

/// Emits the thread's `th_timer` and `th_counter` events and merges its
/// timers and counters into the process totals (once per thread).
pub(crate) fn report_thread(rt: &Runtime, c: &mut ThreadCtx) {
    if c.merged {
        return;
    }
    c.merged = true;
    let loc = Loc::from(Location::caller());
    let timers = c.timers;
    let counters = c.counters;
    with_timer_defs(|defs| {
        for ev in timers.thread_events(defs) {
            emit_in(rt, c, loc, &ev);
        }
    });
    with_counter_defs(|defs| {
        for ev in counters.thread_events(defs) {
            emit_in(rt, c, loc, &ev);
        }
    });
    rt.shared().totals.merge_thread(&timers, &counters);
}
