//! Process-wide Trace2 context that needs no heap: the process start for
//! `t_abs`, and the counters git draws repository and thread ids from.

use super::event::Micros;

/// The process start, for `t_abs` (elapsed time since the process began,
/// from a monotonic clock in microseconds).
///
/// ```
/// use flightrec_core::trace2::ProcessClock;
/// let p = ProcessClock::new(1_000_000);
/// assert_eq!(p.t_abs(1_000_045), 45);
/// assert_eq!(p.t_abs(10), 0); // a reading before the start saturates
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProcessClock {
    start: Micros,
}

impl ProcessClock {
    /// A process that started at monotonic time `start` (µs). Example on
    /// [`ProcessClock`].
    pub const fn new(start: Micros) -> Self {
        ProcessClock { start }
    }

    /// `t_abs` at monotonic time `now` (µs). Example on [`ProcessClock`].
    #[inline]
    pub fn t_abs(&self, now: Micros) -> Micros {
        now.saturating_sub(self.start)
    }
}

/// Hands out ids 1, 2, 3, ... in order, like git's repository ids (`r1`) and
/// thread ids (`th01:`). Taking an id needs `&mut`, i.e. the caller's lock or
/// critical section when threads share the counter (no atomics needed, so it
/// works on `thumbv6m-none-eabi`).
///
/// ```
/// use flightrec_core::trace2::IdCounter;
/// let mut repos = IdCounter::new();
/// assert_eq!(repos.next_id(), 1);
/// assert_eq!(repos.next_id(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IdCounter {
    last: u32,
}

impl IdCounter {
    /// No id handed out yet. Example on [`IdCounter`].
    pub const fn new() -> Self {
        IdCounter { last: 0 }
    }

    /// The next id (saturates at `u32::MAX` instead of wrapping to 0). Example
    /// on [`IdCounter`].
    pub fn next_id(&mut self) -> u32 {
        self.last = self.last.saturating_add(1);
        self.last
    }
}
