//! Timers and counters: per-thread accumulation without atomics, merged into
//! process-wide totals when a thread exits.
//!
//! # Concurrency design
//!
//! Each thread owns its [`ThreadTimers`] and [`ThreadCounters`] (plain fields,
//! `&mut self`), so any number of threads update their own at once with no
//! synchronisation and no atomic read-modify-write. At `thread_exit` (and for
//! the main thread at `atexit`) the thread's values are merged into the
//! process-wide [`ProcessStats`] through `&mut`, i.e. under whatever lock or
//! critical section the caller already uses to serialise thread exits. This is
//! what git itself does (`tr2tls` data merged under a mutex) and it needs no
//! compare-and-swap, so it builds unchanged for `thumbv6m-none-eabi`.

use super::event::Event;

/// Static description of a timer or counter (git's `tr2_timer_metadata` /
/// `tr2_counter_metadata`).
///
/// ```
/// use flightrec_core::trace2::StatDef;
/// const TEST2: StatDef = StatDef { category: b"test", name: b"test2", per_thread: true };
/// assert!(TEST2.per_thread);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StatDef {
    /// Category.
    pub category: &'static [u8],
    /// Name.
    pub name: &'static [u8],
    /// Whether each thread also reports its own value (`th_timer`/`th_counter`).
    pub per_thread: bool,
}

/// Accumulated intervals of one timer, in nanoseconds.
///
/// ```
/// use flightrec_core::trace2::{Event, StatDef, TimerStats};
/// let mut main = TimerStats::default();
/// main.record(300);
/// main.record(100);
/// let mut worker = TimerStats::default();
/// worker.record(500);
/// main.merge(&worker);
/// assert_eq!((main.intervals, main.total_ns, main.min_ns, main.max_ns), (3, 900, 100, 500));
/// const DEF: StatDef = StatDef { category: b"test", name: b"t", per_thread: false };
/// let ev = main.event(&DEF, false);
/// assert!(matches!(ev, Event::Timer { intervals: 3, total_ns: 900, per_thread: false, .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TimerStats {
    /// Number of measured intervals.
    pub intervals: u64,
    /// Sum of the intervals.
    pub total_ns: u64,
    /// Shortest interval (0 when none).
    pub min_ns: u64,
    /// Longest interval.
    pub max_ns: u64,
}

impl TimerStats {
    /// Adds one interval. Example on [`TimerStats`].
    pub fn record(&mut self, ns: u64) {
        self.min_ns = if self.intervals == 0 {
            ns
        } else {
            self.min_ns.min(ns)
        };
        self.max_ns = self.max_ns.max(ns);
        self.total_ns = self.total_ns.saturating_add(ns);
        self.intervals = self.intervals.saturating_add(1);
    }

    /// Merges another thread's statistics: totals and counts summed, min of
    /// mins, max of maxes. Example on [`TimerStats`].
    pub fn merge(&mut self, other: &TimerStats) {
        if other.intervals == 0 {
            return;
        }
        self.min_ns = if self.intervals == 0 {
            other.min_ns
        } else {
            self.min_ns.min(other.min_ns)
        };
        self.max_ns = self.max_ns.max(other.max_ns);
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.intervals = self.intervals.saturating_add(other.intervals);
    }

    /// The `timer`/`th_timer` event for these statistics. Example on
    /// [`TimerStats`].
    pub fn event(&self, def: &StatDef, per_thread: bool) -> Event<'static> {
        Event::Timer {
            per_thread,
            category: def.category,
            name: def.name,
            intervals: self.intervals,
            total_ns: self.total_ns,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
        }
    }
}

/// One thread's `T` timers. Nested starts of the same timer are counted and only
/// the outermost start/stop pair measures an interval (git's recursion rule).
///
/// ```
/// use flightrec_core::trace2::ThreadTimers;
/// let mut t = ThreadTimers::<2>::new();
/// t.start(0, 1_000);
/// t.start(0, 1_500); // recursion: not a new interval
/// t.stop(0, 1_800);
/// t.stop(0, 3_000);
/// assert_eq!(t.stats(0).unwrap().intervals, 1);
/// assert_eq!(t.stats(0).unwrap().total_ns, 2_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ThreadTimers<const T: usize> {
    stats: [TimerStats; T],
    started_ns: [u64; T],
    recursion: [u32; T],
}

impl<const T: usize> Default for ThreadTimers<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize> ThreadTimers<T> {
    /// No intervals yet. Example on [`ThreadTimers`].
    pub const fn new() -> Self {
        ThreadTimers {
            stats: [TimerStats {
                intervals: 0,
                total_ns: 0,
                min_ns: 0,
                max_ns: 0,
            }; T],
            started_ns: [0; T],
            recursion: [0; T],
        }
    }

    /// Starts timer `id` at `now_ns` (ignored for an unknown id). Example on
    /// [`ThreadTimers`].
    pub fn start(&mut self, id: usize, now_ns: u64) {
        let (Some(depth), Some(started)) =
            (self.recursion.get_mut(id), self.started_ns.get_mut(id))
        else {
            return;
        };
        if *depth == 0 {
            *started = now_ns;
        }
        *depth = depth.saturating_add(1);
    }

    /// Stops timer `id` at `now_ns`; the outermost stop records an interval.
    /// A stop without a start is ignored. Example on [`ThreadTimers`].
    pub fn stop(&mut self, id: usize, now_ns: u64) {
        let (Some(depth), Some(&started), Some(stats)) = (
            self.recursion.get_mut(id),
            self.started_ns.get(id),
            self.stats.get_mut(id),
        ) else {
            return;
        };
        match *depth {
            0 => {}
            1 => {
                *depth = 0;
                stats.record(now_ns.saturating_sub(started));
            }
            _ => *depth -= 1,
        }
    }

    /// Statistics of timer `id`. Example on [`ThreadTimers`].
    pub fn stats(&self, id: usize) -> Option<&TimerStats> {
        self.stats.get(id)
    }

    /// The `th_timer` events this thread reports at its exit: per-thread timers
    /// with at least one interval, in id order.
    ///
    /// ```
    /// use flightrec_core::trace2::{Event, StatDef, ThreadTimers};
    /// const DEFS: [StatDef; 3] = [
    ///     StatDef { category: b"test", name: b"process_only", per_thread: false },
    ///     StatDef { category: b"test", name: b"unused", per_thread: true },
    ///     StatDef { category: b"test", name: b"per_thread", per_thread: true },
    /// ];
    /// let mut t = ThreadTimers::<3>::new();
    /// for id in [0, 2] {
    ///     t.start(id, 0);
    ///     t.stop(id, 10);
    /// }
    /// let names: Vec<&[u8]> = t
    ///     .thread_events(&DEFS)
    ///     .map(|ev| match ev {
    ///         Event::Timer { name, per_thread: true, .. } => name,
    ///         _ => unreachable!(),
    ///     })
    ///     .collect();
    /// assert_eq!(names, [b"per_thread"]);
    /// ```
    pub fn thread_events<'d>(
        &'d self,
        defs: &'d [StatDef],
    ) -> impl Iterator<Item = Event<'static>> + 'd {
        defs.iter()
            .zip(self.stats.iter())
            .filter(|(d, s)| d.per_thread && s.intervals > 0)
            .map(|(d, s)| s.event(d, true))
    }
}

/// One thread's `C` counters.
///
/// ```
/// use flightrec_core::trace2::ThreadCounters;
/// let mut c = ThreadCounters::<1>::new();
/// c.add(0, 2);
/// c.add(0, 3);
/// assert_eq!(c.value(0), Some(5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ThreadCounters<const C: usize> {
    values: [u64; C],
}

impl<const C: usize> Default for ThreadCounters<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const C: usize> ThreadCounters<C> {
    /// All zero. Example on [`ThreadCounters`].
    pub const fn new() -> Self {
        ThreadCounters { values: [0; C] }
    }

    /// Adds `v` to counter `id` (wrapping like git's `uint64_t`; unknown ids ignored).
    /// Example on [`ThreadCounters`].
    pub fn add(&mut self, id: usize, v: u64) {
        if let Some(x) = self.values.get_mut(id) {
            *x = x.wrapping_add(v);
        }
    }

    /// Value of counter `id`. Example on [`ThreadCounters`].
    pub fn value(&self, id: usize) -> Option<u64> {
        self.values.get(id).copied()
    }

    /// The `th_counter` events this thread reports at its exit: per-thread
    /// counters with a non-zero value, in id order.
    ///
    /// ```
    /// use flightrec_core::trace2::{Event, StatDef, ThreadCounters};
    /// const DEFS: [StatDef; 2] = [
    ///     StatDef { category: b"test", name: b"zero", per_thread: true },
    ///     StatDef { category: b"test", name: b"five", per_thread: true },
    /// ];
    /// let mut c = ThreadCounters::<2>::new();
    /// c.add(1, 5);
    /// let reported: Vec<(&[u8], u64)> = c
    ///     .thread_events(&DEFS)
    ///     .map(|ev| match ev {
    ///         Event::Counter { per_thread: true, name, value, .. } => (name, value),
    ///         _ => unreachable!(),
    ///     })
    ///     .collect();
    /// assert_eq!(reported, [(&b"five"[..], 5)]);
    /// ```
    pub fn thread_events<'d>(
        &'d self,
        defs: &'d [StatDef],
    ) -> impl Iterator<Item = Event<'static>> + 'd {
        defs.iter()
            .zip(self.values.iter())
            .filter(|(d, v)| d.per_thread && **v != 0)
            .map(|(d, v)| Event::Counter {
                per_thread: true,
                category: d.category,
                name: d.name,
                value: *v,
            })
    }
}

/// Process-wide totals of `T` timers and `C` counters, fed by
/// [`merge_thread`](Self::merge_thread) under the caller's synchronisation.
///
/// ```
/// use flightrec_core::trace2::{ProcessStats, StatDef, ThreadCounters, ThreadTimers};
/// const TIMERS: [StatDef; 1] = [StatDef { category: b"test", name: b"test1", per_thread: false }];
/// const COUNTERS: [StatDef; 1] = [StatDef { category: b"test", name: b"test1", per_thread: false }];
/// let mut total = ProcessStats::<1, 1>::new();
/// for _thread in 0..2 {
///     let mut t = ThreadTimers::<1>::new();
///     let mut c = ThreadCounters::<1>::new();
///     t.start(0, 0);
///     t.stop(0, 500);
///     c.add(0, 4);
///     total.merge_thread(&t, &c); // e.g. inside a Mutex or critical section
/// }
/// assert_eq!(total.timer_events(&TIMERS).count(), 1);
/// assert_eq!(total.counter(0), Some(8));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProcessStats<const T: usize, const C: usize> {
    timers: [TimerStats; T],
    counters: [u64; C],
}

impl<const T: usize, const C: usize> Default for ProcessStats<T, C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const C: usize> ProcessStats<T, C> {
    /// Empty totals. Example on [`ProcessStats`].
    pub const fn new() -> Self {
        ProcessStats {
            timers: [TimerStats {
                intervals: 0,
                total_ns: 0,
                min_ns: 0,
                max_ns: 0,
            }; T],
            counters: [0; C],
        }
    }

    /// Adds one thread's timers and counters. Example on [`ProcessStats`].
    pub fn merge_thread(&mut self, timers: &ThreadTimers<T>, counters: &ThreadCounters<C>) {
        for (total, t) in self.timers.iter_mut().zip(timers.stats.iter()) {
            total.merge(t);
        }
        for (total, v) in self.counters.iter_mut().zip(counters.values.iter()) {
            *total = total.wrapping_add(*v);
        }
    }

    /// Total of timer `id`.
    ///
    /// ```
    /// use flightrec_core::trace2::{ProcessStats, ThreadCounters, ThreadTimers};
    /// let mut total = ProcessStats::<1, 0>::new();
    /// for length in [200, 50] {
    ///     let mut t = ThreadTimers::<1>::new();
    ///     t.start(0, 1_000);
    ///     t.stop(0, 1_000 + length);
    ///     total.merge_thread(&t, &ThreadCounters::new());
    /// }
    /// let timer = total.timer(0).unwrap();
    /// assert_eq!((timer.intervals, timer.total_ns, timer.min_ns, timer.max_ns), (2, 250, 50, 200));
    /// assert!(total.timer(1).is_none());
    /// ```
    pub fn timer(&self, id: usize) -> Option<&TimerStats> {
        self.timers.get(id)
    }

    /// Total of counter `id`. Example on [`ProcessStats`].
    pub fn counter(&self, id: usize) -> Option<u64> {
        self.counters.get(id).copied()
    }

    /// The `timer` events of `atexit`: timers with intervals, in id order.
    /// Example on [`ProcessStats`].
    pub fn timer_events<'d>(
        &'d self,
        defs: &'d [StatDef],
    ) -> impl Iterator<Item = Event<'static>> + 'd {
        defs.iter()
            .zip(self.timers.iter())
            .filter(|(_, s)| s.intervals > 0)
            .map(|(d, s)| s.event(d, false))
    }

    /// The `counter` events of `atexit`: non-zero counters, in id order.
    ///
    /// ```
    /// use flightrec_core::trace2::{Event, ProcessStats, StatDef, ThreadCounters, ThreadTimers};
    /// const DEFS: [StatDef; 2] = [
    ///     StatDef { category: b"test", name: b"never", per_thread: false },
    ///     StatDef { category: b"test", name: b"seen", per_thread: true },
    /// ];
    /// let mut c = ThreadCounters::<2>::new();
    /// c.add(1, 7);
    /// let mut total = ProcessStats::<0, 2>::new();
    /// total.merge_thread(&ThreadTimers::new(), &c);
    /// total.merge_thread(&ThreadTimers::new(), &c);
    /// let reported: Vec<(&[u8], u64)> = total
    ///     .counter_events(&DEFS)
    ///     .map(|ev| match ev {
    ///         Event::Counter { per_thread: false, name, value, .. } => (name, value),
    ///         _ => unreachable!(),
    ///     })
    ///     .collect();
    /// assert_eq!(reported, [(&b"seen"[..], 14)]);
    /// ```
    pub fn counter_events<'d>(
        &'d self,
        defs: &'d [StatDef],
    ) -> impl Iterator<Item = Event<'static>> + 'd {
        defs.iter()
            .zip(self.counters.iter())
            .filter(|(_, v)| **v != 0)
            .map(|(d, v)| Event::Counter {
                per_thread: false,
                category: d.category,
                name: d.name,
                value: *v,
            })
    }
}
