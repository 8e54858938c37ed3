//! Clocks: where the core gets its ticks, its tick rate and the CPU id.
//!
//! The core never reads a clock by itself: every recording call (for example
//! [`Recorder::enter`](crate::fdr::ring::Recorder::enter)) takes a [`Timestamp`] from a
//! [`Clock`] the caller owns. That keeps the core portable (a TSC on x86_64 with `Tsc`
//! or `TscP`, a hardware timer with [`TimerClock`], the Cortex-M cycle counter or
//! SysTick with `DwtClock` and `SysTickClock` (feature `cortex-m`), a [`ManualClock`]
//! in tests) and keeps the hot path free of indirection.
//!
//! # Clocks shared by every context
//!
//! Firmware records from thread mode and from interrupt handlers that preempt it,
//! and every context wants the same time line. [`TimerClock`], `DwtClock` and
//! `SysTickClock` are made for that: declare one as a `static` and call `now(&self)`
//! from any context at any time. None of them locks or needs compare-and-swap; the
//! extension of a 16- or 32-bit counter to 64 bits is a [`SharedExtension`], which
//! stays right when a reading is preempted by another. [`Wrapping32`] instead keeps
//! its extension in `&mut self`: one per context, never shared.
//!
//! ```
//! use flightrec_core::clock::{Clock, Wrapping32};
//! // A 32-bit hardware counter that wrapped between two readings.
//! let mut readings = [0xFFFF_FF00u32, 0x0000_0100].into_iter();
//! let mut clock = Wrapping32::new(move || readings.next().unwrap_or(0), 64_000_000);
//! let a = clock.now();
//! let b = clock.now();
//! assert_eq!(b.tsc - a.tsc, 0x200);
//! ```

use core::num::NonZeroU64;

#[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
mod cortex_m;
mod shared;

#[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
pub use cortex_m::{DwtClock, SysTickClock};
pub use shared::{SharedExtension, TimerClock};

/// One reading of a clock: the tick count and the CPU (core) it was read on.
///
/// Every recording call takes one; a [`Clock`] makes it, or the caller fills it in
/// from timestamps it already has.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// let t = Timestamp { tsc: 1_000, cpu: 0 };
/// assert_eq!(t.tsc, 1_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Timestamp {
    /// Ticks since an arbitrary origin; 64 bits, so it does not wrap in practice.
    pub tsc: u64,
    /// The CPU (core) the reading was taken on; 0 on single-core targets.
    pub cpu: u16,
}

/// A source of ticks.
///
/// Implementations must be cheap: [`Clock::now`] is called once per recorded event.
/// The core provides [`ManualClock`], [`Wrapping32`], `Tsc` and `TscP` (x86_64); a target
/// with another counter implements the two methods itself:
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::clock::{Clock, Timestamp};
///
/// /// A 1 kHz tick count kept by a timer interrupt.
/// struct Millis(u64);
/// impl Clock for Millis {
///     fn now(&mut self) -> Timestamp {
///         Timestamp { tsc: self.0, cpu: 0 }
///     }
///     fn ticks_per_second(&self) -> NonZeroU64 {
///         NonZeroU64::new(1_000).unwrap()
///     }
/// }
///
/// let mut clock = Millis(250);
/// assert_eq!(clock.now(), Timestamp { tsc: 250, cpu: 0 });
/// assert_eq!(clock.ticks_per_second().get(), 1_000);
/// ```
///
/// The clocks of this module in use:
///
/// ```
/// use flightrec_core::clock::{Clock, ManualClock};
/// let mut clock = ManualClock::new(1_000_000_000);
/// clock.advance(5);
/// assert_eq!(clock.now().tsc, 5);
/// assert_eq!(clock.ticks_per_second().get(), 1_000_000_000);
/// ```
pub trait Clock {
    /// Reads the clock: the tick count now and the CPU it was read on.
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, ManualClock, Timestamp};
    /// let mut clock = ManualClock::new(1_000);
    /// clock.set(7);
    /// assert_eq!(clock.now(), Timestamp { tsc: 7, cpu: 0 });
    /// ```
    fn now(&mut self) -> Timestamp;

    /// [`now`](Self::now) when the reading changes nothing shared; `None` when
    /// it would (a shared clock's reading that starts a half period of its
    /// counter stores the new count), and then the caller reads the clock with
    /// `now`. For a record path that keeps its rare work out of line: the
    /// per-context recorders take this, and `now` out of line. By default the
    /// clock's `now`.
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, TimerClock};
    /// fn timer() -> u32 { 0x8000_0000 } // past half its period
    /// static CLOCK: TimerClock = TimerClock::new(timer, 32, 1_000);
    /// assert_eq!((&CLOCK).now_if_unshared(), None); // the first reading there
    /// assert_eq!((&CLOCK).now().tsc, 0x8000_0000); // `now` counts it
    /// assert_eq!((&CLOCK).now_if_unshared().map(|t| t.tsc), Some(0x8000_0000));
    /// ```
    #[inline(always)]
    fn now_if_unshared(&mut self) -> Option<Timestamp> {
        Some(self.now())
    }

    /// Ticks per second. Never zero: a trace with a zero frequency cannot be converted
    /// to time, so every clock must know (or be told, after calibration) its rate. It
    /// goes into the file header ([`RecorderConfig`](crate::fdr::ring::RecorderConfig)
    /// takes it).
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new(48_000_000).ticks_per_second().get(), 48_000_000);
    /// // A rate of 0 is never reported.
    /// assert_eq!(ManualClock::new(0).ticks_per_second().get(), 1);
    /// ```
    fn ticks_per_second(&self) -> NonZeroU64;
}

/// Declares a zero-sized type that reads a clock `static`: a [`Clock`] that holds
/// no address, for the [`ContextRecorders`](crate::context::ContextRecorders) of
/// a `static`. Given `&CLOCK` instead, the recorders hold a pointer, which is not
/// zero, so the whole `static` (its recorders included, a few hundred bytes) goes
/// in `.data` and is copied from flash at boot; with the handle it is all zero
/// bytes until used and goes in `.bss`. A record reads the clock the same way
/// (the `static`'s address is a constant either way).
///
/// The `static` may be any clock of which a shared reference is a [`Clock`]:
/// [`TimerClock`], `DwtClock`, `SysTickClock`.
///
/// ```
/// use flightrec_core::clock::{Clock, TimerClock};
/// fn read_timer() -> u32 {
///     1234 // a volatile read of the timer's count register
/// }
/// static CLOCK: TimerClock = TimerClock::new(read_timer, 32, 48_000_000);
/// flightrec_core::static_clock!(
///     /// The time of every context.
///     pub Time = CLOCK
/// );
///
/// assert_eq!(core::mem::size_of::<Time>(), 0);
/// assert_eq!(Time.now().tsc, 1234);
/// assert_eq!(Time.ticks_per_second().get(), 48_000_000);
/// ```
#[macro_export]
macro_rules! static_clock {
    ($(#[$attr:meta])* $vis:vis $name:ident = $clock:path) => {
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        $vis struct $name;

        impl $crate::clock::Clock for $name {
            #[inline]
            fn now(&mut self) -> $crate::clock::Timestamp {
                $crate::clock::Clock::now(&mut &$clock)
            }

            #[inline]
            fn now_if_unshared(&mut self) -> ::core::option::Option<$crate::clock::Timestamp> {
                $crate::clock::Clock::now_if_unshared(&mut &$clock)
            }

            #[inline]
            fn ticks_per_second(&self) -> ::core::num::NonZeroU64 {
                $crate::clock::Clock::ticks_per_second(&&$clock)
            }
        }
    };
}

/// A clock the caller sets by hand: for tests, simulations, and replaying recorded
/// timestamps.
///
/// ```
/// use flightrec_core::clock::{Clock, ManualClock};
/// let mut clock = ManualClock::new(1_000);
/// clock.set(42);
/// clock.set_cpu(3);
/// assert_eq!(clock.now().tsc, 42);
/// assert_eq!(clock.now().cpu, 3);
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ManualClock {
    now: Timestamp,
    ticks_per_second: NonZeroU64,
}

impl ManualClock {
    /// A clock at tick 0 on CPU 0. A `ticks_per_second` of 0 is taken as 1, since a
    /// clock rate is never zero.
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, ManualClock, Timestamp};
    /// let mut clock = ManualClock::new(1_000_000);
    /// assert_eq!(clock.now(), Timestamp { tsc: 0, cpu: 0 });
    /// assert_eq!(clock.ticks_per_second().get(), 1_000_000);
    /// ```
    pub const fn new(ticks_per_second: u64) -> Self {
        let ticks_per_second = match NonZeroU64::new(ticks_per_second) {
            Some(f) => f,
            None => NonZeroU64::MIN,
        };
        Self {
            now: Timestamp { tsc: 0, cpu: 0 },
            ticks_per_second,
        }
    }

    /// Sets the tick count, for example to replay recorded timestamps. It may go
    /// backwards; the writer then records a TSCWrap.
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, ManualClock};
    /// let mut clock = ManualClock::new(1_000);
    /// clock.set(500);
    /// clock.set(100);
    /// assert_eq!(clock.now().tsc, 100);
    /// ```
    pub fn set(&mut self, tsc: u64) {
        self.now.tsc = tsc;
    }

    /// Moves the tick count forward by `ticks` (wrapping at `u64::MAX`).
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, ManualClock};
    /// let mut clock = ManualClock::new(1_000);
    /// clock.advance(10);
    /// clock.advance(5);
    /// assert_eq!(clock.now().tsc, 15);
    /// clock.set(u64::MAX);
    /// clock.advance(2);
    /// assert_eq!(clock.now().tsc, 1);
    /// ```
    pub fn advance(&mut self, ticks: u64) {
        self.now.tsc = self.now.tsc.wrapping_add(ticks);
    }

    /// Sets the CPU id returned with the next readings, to simulate a thread that
    /// migrates between cores (the writer records a NewCPUId).
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, ManualClock};
    /// let mut clock = ManualClock::new(1_000);
    /// clock.set_cpu(2);
    /// assert_eq!(clock.now().cpu, 2);
    /// assert_eq!(clock.now().cpu, 2);
    /// ```
    pub fn set_cpu(&mut self, cpu: u16) {
        self.now.cpu = cpu;
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&mut self) -> Timestamp {
        self.now
    }

    #[inline]
    fn ticks_per_second(&self) -> NonZeroU64 {
        self.ticks_per_second
    }
}

/// Extends a 32-bit wrapping counter (the Cortex-M DWT `CYCCNT`, a SysTick-driven
/// tick count, a free-running hardware timer) to 64 bits.
///
/// The reader function returns the raw counter. A wrap is detected when a reading is
/// smaller than the previous one, so the clock must be read at least once per wrap
/// period (at 64 MHz a 32-bit cycle counter wraps every 67 s): read it from a periodic
/// interrupt if the traced code can be idle longer than that. Each execution context
/// (thread, interrupt priority level) that records should own its own `Wrapping32`.
///
/// ```
/// use flightrec_core::clock::{Clock, Wrapping32};
/// let mut raw = 0xFFFF_FFF0u32;
/// let mut clock = Wrapping32::new(|| 0, 48_000_000);
/// // Feed readings by hand through `extend`, as a timer interrupt would.
/// assert_eq!(clock.extend(raw), 0xFFFF_FFF0);
/// raw = raw.wrapping_add(0x20);
/// assert_eq!(clock.extend(raw), 0x1_0000_0010);
/// ```
pub struct Wrapping32<F: FnMut() -> u32> {
    read: F,
    high: u32,
    last: u32,
    ticks_per_second: NonZeroU64,
    cpu: u16,
}

impl<F: FnMut() -> u32> Wrapping32<F> {
    /// A clock reading `read`, which counts `ticks_per_second` (0 is taken as 1).
    ///
    /// On a Cortex-M, `read` would return the DWT `CYCCNT` register; here it counts by
    /// hand.
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, Wrapping32};
    /// let mut counter = 0u32;
    /// let mut clock = Wrapping32::new(
    ///     move || {
    ///         counter = counter.wrapping_add(0x8000_0000);
    ///         counter
    ///     },
    ///     64_000_000,
    /// );
    /// assert_eq!(clock.now().tsc, 0x8000_0000);
    /// assert_eq!(clock.now().tsc, 0x1_0000_0000); // the counter wrapped to 0
    /// assert_eq!(clock.ticks_per_second().get(), 64_000_000);
    /// ```
    pub fn new(read: F, ticks_per_second: u64) -> Self {
        Self {
            read,
            high: 0,
            last: 0,
            ticks_per_second: NonZeroU64::new(ticks_per_second).unwrap_or(NonZeroU64::MIN),
            cpu: 0,
        }
    }

    /// Sets the CPU id reported with every reading (for a per-core clock).
    ///
    /// ```
    /// use flightrec_core::clock::{Clock, Wrapping32};
    /// let mut core1 = Wrapping32::new(|| 42, 1_000).with_cpu(1);
    /// let t = core1.now();
    /// assert_eq!((t.tsc, t.cpu), (42, 1));
    /// ```
    pub fn with_cpu(mut self, cpu: u16) -> Self {
        self.cpu = cpu;
        self
    }

    /// Extends one raw reading to 64 bits, counting a wrap when it went backwards.
    ///
    /// [`Clock::now`] calls it with the reader's value; call it directly from a
    /// periodic interrupt to keep counting wraps while nothing is recorded.
    ///
    /// ```
    /// use flightrec_core::clock::Wrapping32;
    /// let mut clock = Wrapping32::new(|| 0, 1_000);
    /// assert_eq!(clock.extend(100), 100);
    /// assert_eq!(clock.extend(100), 100); // equal is not a wrap
    /// assert_eq!(clock.extend(50), 0x1_0000_0032); // backwards: one wrap
    /// ```
    #[inline]
    pub fn extend(&mut self, raw: u32) -> u64 {
        if raw < self.last {
            self.high = self.high.wrapping_add(1);
        }
        self.last = raw;
        (u64::from(self.high) << 32) | u64::from(raw)
    }
}

impl<F: FnMut() -> u32> Clock for Wrapping32<F> {
    #[inline]
    fn now(&mut self) -> Timestamp {
        let raw = (self.read)();
        Timestamp {
            tsc: self.extend(raw),
            cpu: self.cpu,
        }
    }

    #[inline]
    fn ticks_per_second(&self) -> NonZeroU64 {
        self.ticks_per_second
    }
}

/// The x86_64 time-stamp counter read with `rdtsc`. The CPU id is reported as 0
/// (reading it costs an `rdtscp`; use [`TscP`] for that).
///
/// The frequency is an input: the std shell measures it; firmware knows it.
///
/// ```
/// # #[cfg(target_arch = "x86_64")] {
/// use flightrec_core::clock::{Clock, Tsc};
/// let mut tsc = Tsc::new(3_000_000_000);
/// let a = tsc.now().tsc;
/// let b = tsc.now().tsc;
/// assert!(b >= a);
/// # }
/// ```
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct Tsc {
    ticks_per_second: NonZeroU64,
}

#[cfg(target_arch = "x86_64")]
impl Tsc {
    /// A TSC clock counting `ticks_per_second` (0 is taken as 1).
    ///
    /// ```
    /// # #[cfg(target_arch = "x86_64")] {
    /// use flightrec_core::clock::{Clock, Tsc};
    /// let tsc = Tsc::new(2_400_000_000);
    /// assert_eq!(tsc.ticks_per_second().get(), 2_400_000_000);
    /// assert_eq!(Tsc::new(0).ticks_per_second().get(), 1);
    /// # }
    /// ```
    pub const fn new(ticks_per_second: u64) -> Self {
        let ticks_per_second = match NonZeroU64::new(ticks_per_second) {
            Some(f) => f,
            None => NonZeroU64::MIN,
        };
        Self { ticks_per_second }
    }
}

#[cfg(target_arch = "x86_64")]
impl Clock for Tsc {
    #[inline(always)]
    fn now(&mut self) -> Timestamp {
        // SAFETY: `rdtsc` is part of the x86_64 baseline and has no preconditions.
        let tsc = unsafe { core::arch::x86_64::_rdtsc() };
        Timestamp { tsc, cpu: 0 }
    }

    #[inline]
    fn ticks_per_second(&self) -> NonZeroU64 {
        self.ticks_per_second
    }
}

/// The x86_64 time-stamp counter read with `rdtscp`, which also returns the CPU id
/// (Linux stores the CPU number in the low 12 bits of `IA32_TSC_AUX`).
///
/// Use it when a thread may migrate between cores and the trace should show it (the
/// writer records a NewCPUId on each change); `rdtscp` costs a little more than the
/// `rdtsc` of [`Tsc`].
///
/// ```
/// # #[cfg(target_arch = "x86_64")] {
/// use flightrec_core::clock::{Clock, TscP};
/// let mut tsc = TscP::new(3_000_000_000);
/// let t = tsc.now();
/// assert!(t.tsc > 0);
/// assert!(t.cpu <= 0xfff); // the 12 bits Linux keeps the CPU number in
/// # }
/// ```
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct TscP {
    ticks_per_second: NonZeroU64,
}

#[cfg(target_arch = "x86_64")]
impl TscP {
    /// A TSC clock counting `ticks_per_second` (0 is taken as 1).
    ///
    /// ```
    /// # #[cfg(target_arch = "x86_64")] {
    /// use flightrec_core::clock::{Clock, TscP};
    /// assert_eq!(TscP::new(3_000_000_000).ticks_per_second().get(), 3_000_000_000);
    /// assert_eq!(TscP::new(0).ticks_per_second().get(), 1);
    /// # }
    /// ```
    pub const fn new(ticks_per_second: u64) -> Self {
        let ticks_per_second = match NonZeroU64::new(ticks_per_second) {
            Some(f) => f,
            None => NonZeroU64::MIN,
        };
        Self { ticks_per_second }
    }
}

#[cfg(target_arch = "x86_64")]
impl Clock for TscP {
    #[inline(always)]
    fn now(&mut self) -> Timestamp {
        let mut aux = 0u32;
        // SAFETY: `rdtscp` is available on every x86_64 CPU made since 2006 and on all
        // hosts the std shell targets; it only writes the `aux` out-parameter.
        let tsc = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
        Timestamp {
            tsc,
            cpu: (aux & 0xfff) as u16,
        }
    }

    #[inline]
    fn ticks_per_second(&self) -> NonZeroU64 {
        self.ticks_per_second
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping32_counts_wraps() {
        let mut c = Wrapping32::new(|| 0, 0);
        assert_eq!(c.ticks_per_second().get(), 1);
        assert_eq!(c.extend(10), 10);
        assert_eq!(c.extend(5), (1 << 32) | 5);
        assert_eq!(c.extend(5), (1 << 32) | 5);
        assert_eq!(c.extend(u32::MAX), (1 << 32) | u64::from(u32::MAX));
        assert_eq!(c.extend(0), 2 << 32);
    }

    #[test]
    fn wrapping32_reads_through_function() {
        let mut v = 0u32;
        let mut c = Wrapping32::new(
            move || {
                v = v.wrapping_add(0x8000_0001);
                v
            },
            1000,
        )
        .with_cpu(2);
        let a = c.now();
        let b = c.now();
        let d = c.now();
        assert_eq!(a.cpu, 2);
        assert!(b.tsc > a.tsc && d.tsc > b.tsc);
    }

    #[test]
    fn manual_clock_zero_frequency_is_one() {
        assert_eq!(ManualClock::new(0).ticks_per_second().get(), 1);
    }
}
