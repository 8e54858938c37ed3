//! Clocks that every context reads at once: the 64-bit extension of a 16- or 32-bit
//! counter kept in atomics ([`SharedExtension`]), a hardware timer read through a
//! function ([`TimerClock`]), and the SysTick reading protocol that
//! `SysTickClock` (feature `cortex-m`) runs on the real registers.

use core::num::NonZeroU64;
use core::sync::atomic::{AtomicU32, Ordering};

// The count's load and store are ordered with the counter's reading: by an
// acquire load and a release store, or by compiler fences on one core (see
// `one_core`).
use crate::one_core::{after_load, before_store, LOAD, STORE};

use super::{Clock, Timestamp};

/// The 64-bit extension of a free-running counter of 16 to 32 bits, shared by every
/// context that reads the counter: a `static`, read with atomic loads and stores
/// only (no compare-and-swap, so it works on `thumbv6m`), and never locked.
///
/// It keeps the count of half periods of the counter seen so far. A reading loads
/// that count, then reads the counter: the counter's top bit says whether it is
/// still in the same half period or in the next one, which gives the 64-bit value,
/// and a reading that finds the next half period stores it. Two contexts that read
/// at once, or a reading preempted between its load and its store by readings in
/// a newer half period (its late store then lags by one), still get the right
/// values, provided that:
///
/// * the counter is read at least once per half period (2^31 ticks of a 32-bit
///   counter, 2^15 of a 16-bit one: a periodic interrupt that reads the clock does
///   it), and
/// * no reading is preempted for a half period or more.
///
/// ```
/// use flightrec_core::clock::SharedExtension;
/// static EXTENSION: SharedExtension = SharedExtension::new();
/// // A 16-bit timer read at 0xFFF0, then after it wrapped at 0x0010.
/// assert_eq!(EXTENSION.extend(16, || 0xFFF0), 0xFFF0);
/// assert_eq!(EXTENSION.extend(16, || 0x0010), 0x1_0010);
/// ```
#[derive(Debug, Default)]
pub struct SharedExtension {
    /// Half periods of the counter seen so far (wrapping).
    half_periods: AtomicU32,
}

impl SharedExtension {
    /// An extension starting at 0; a `const fn`, for `static`s.
    ///
    /// ```
    /// use flightrec_core::clock::SharedExtension;
    /// static EXTENSION: SharedExtension = SharedExtension::new();
    /// assert_eq!(EXTENSION.extend(32, || 5), 5);
    /// ```
    pub const fn new() -> Self {
        Self {
            half_periods: AtomicU32::new(0),
        }
    }

    /// Reads the counter with `read` and extends its low `bits` bits (16 to 32;
    /// other values are taken as the nearest) to 64 bits.
    ///
    /// ```
    /// use flightrec_core::clock::SharedExtension;
    /// let ext = SharedExtension::new();
    /// let mut counter = 0u32;
    /// let mut last = 0;
    /// for _ in 0..1_000 {
    ///     counter = counter.wrapping_add(0x3000_0000);
    ///     let now = ext.extend(32, || counter);
    ///     assert_eq!(now - last, 0x3000_0000);
    ///     last = now;
    /// }
    /// ```
    #[inline(always)]
    pub fn extend(&self, bits: u32, read: impl FnOnce() -> u32) -> u64 {
        let (seen, raw) = self.seen_and_read(read);
        // The common case, a reading in the half period the count says: nothing to
        // store, and the value is the count's periods above the reading.
        if in_counted_half(raw, seen, bits) {
            return extend_in_counted_half(seen, raw, bits);
        }
        // Twice per period of the counter: the reading is in the half period after
        // `seen`; count it, out of line (in line, the few instructions and the
        // store would be predicated on the straight path, paid on every reading;
        // a record path that must not call takes `extend_if_unshared`). The
        // store stays here: a pointer to the clock passed to a function that is
        // not inlined would keep the compiler from folding the clock's constant
        // fields, such as a `TimerClock`'s read function.
        let (half_periods, value) = extend_across(seen, raw, bits);
        before_store();
        self.half_periods.store(half_periods, STORE);
        value
    }

    /// [`extend`](Self::extend) when the reading is in the half period counted
    /// (it stores nothing then); `None` when it starts the next one, which
    /// `extend` counts.
    ///
    /// ```
    /// use flightrec_core::clock::SharedExtension;
    /// let ext = SharedExtension::new();
    /// assert_eq!(ext.extend_if_unshared(16, || 0x7FF0), Some(0x7FF0));
    /// assert_eq!(ext.extend_if_unshared(16, || 0x8000), None);
    /// assert_eq!(ext.extend(16, || 0x8000), 0x8000);
    /// assert_eq!(ext.extend_if_unshared(16, || 0x8001), Some(0x8001));
    /// ```
    #[inline(always)]
    pub fn extend_if_unshared(&self, bits: u32, read: impl FnOnce() -> u32) -> Option<u64> {
        let (seen, raw) = self.seen_and_read(read);
        in_counted_half(raw, seen, bits).then(|| extend_in_counted_half(seen, raw, bits))
    }

    /// The half periods counted, then the counter's reading: loaded before
    /// reading the counter, the count is at most one half period behind the
    /// reading (see the type's docs).
    #[inline(always)]
    fn seen_and_read(&self, read: impl FnOnce() -> u32) -> (u32, u32) {
        let seen = self.half_periods.load(LOAD);
        after_load();
        (seen, read())
    }
}

/// [`extend_counter`] out of line, for the reading that starts a half period.
#[cold]
#[inline(never)]
fn extend_across(seen: u32, raw: u32, bits: u32) -> (u32, u64) {
    extend_counter(seen, raw, bits)
}

/// Whether a `bits`-wide reading is in the half period that `seen` counts: its
/// top bit has `seen`'s parity ([`top_bit`]`(raw, bits) == seen & 1`). Both are
/// compared in bit 31, the reading's top bit shifted there and the parity put
/// there, which a sign test reads: on Thumb a shift or two, an exclusive or and
/// a branch on the sign, with no mask to build (three cycles fewer on the M0).
#[inline(always)]
fn in_counted_half(raw: u32, seen: u32, bits: u32) -> bool {
    let bits = bits.clamp(16, 32);
    ((raw << (32 - bits)) ^ (seen << 31)) as i32 >= 0
}

/// The top bit of a `bits`-wide reading (`bits` clamped to 16..=32, as in
/// [`extend_counter`]).
#[inline(always)]
fn top_bit(raw: u32, bits: u32) -> u32 {
    let bits = bits.clamp(16, 32);
    (raw >> (bits - 1)) & 1
}

/// The 64-bit value of a `bits`-bit counter reading `raw`, given `seen`, the half
/// periods counted before the reading (at most one behind); and the half periods
/// counted with this reading.
#[inline(always)]
fn extend_counter(seen: u32, raw: u32, bits: u32) -> (u32, u64) {
    // The reading's half period has the parity of its top bit: `seen` or the next.
    let half_periods = seen.wrapping_add(top_bit(raw, bits) ^ (seen & 1));
    (
        half_periods,
        extend_in_counted_half(half_periods, raw, bits),
    )
}

/// The 64-bit value of a `bits`-bit counter reading `raw` in the half period that
/// `half_periods` counts ([`in_counted_half`]): that count's periods above the
/// reading, with no parity to compare. `(periods << bits) | raw` with 32-bit
/// shifts only: a 64-bit shift by a variable amount is a library call on 32-bit
/// cores.
#[inline(always)]
fn extend_in_counted_half(half_periods: u32, raw: u32, bits: u32) -> u64 {
    let bits = bits.clamp(16, 32);
    let periods = half_periods >> 1;
    let (high, low) = if bits == 32 {
        (periods, raw)
    } else {
        let raw = raw & ((1 << bits) - 1);
        (periods >> (32 - bits), (periods << bits) | raw)
    };
    (u64::from(high) << 32) | u64::from(low)
}

/// A free-running hardware timer of 16 to 32 bits, read through a function the
/// firmware supplies, extended to 64 bits with a [`SharedExtension`]: a `static`
/// that every context reads at once (see [`SharedExtension`] for how often it must
/// be read).
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use flightrec_core::clock::{Clock, TimerClock};
///
/// // Stands for a 16-bit timer register, e.g. a volatile read of TIM2->CNT.
/// static FAKE_TIMER: AtomicU32 = AtomicU32::new(0xFFFE);
/// fn read_timer() -> u32 {
///     FAKE_TIMER.load(Ordering::Relaxed)
/// }
/// static CLOCK: TimerClock = TimerClock::new(read_timer, 16, 1_000_000);
///
/// let a = CLOCK.now();
/// FAKE_TIMER.store(0x0003, Ordering::Relaxed); // it wrapped
/// let b = CLOCK.now();
/// assert_eq!(b.tsc - a.tsc, 5);
/// // Generic code takes `&TimerClock` as a `Clock`.
/// assert_eq!((&CLOCK).ticks_per_second().get(), 1_000_000);
/// ```
#[derive(Debug)]
pub struct TimerClock {
    read: fn() -> u32,
    bits: u32,
    ticks_per_second: NonZeroU64,
    extension: SharedExtension,
}

impl TimerClock {
    /// A clock over the `bits`-bit counter (16 to 32) that `read` returns, counting
    /// `ticks_per_second` (0 is taken as 1); a `const fn`, for `static`s.
    ///
    /// ```
    /// use flightrec_core::clock::TimerClock;
    /// fn read_timer() -> u32 { 42 }
    /// static CLOCK: TimerClock = TimerClock::new(read_timer, 32, 48_000_000);
    /// assert_eq!(CLOCK.now().tsc, 42);
    /// ```
    pub const fn new(read: fn() -> u32, bits: u32, ticks_per_second: u64) -> Self {
        Self {
            read,
            bits,
            ticks_per_second: nonzero_or_one(ticks_per_second),
            extension: SharedExtension::new(),
        }
    }

    /// The time now, on CPU 0. Safe from every context at once.
    ///
    /// ```
    /// use flightrec_core::clock::TimerClock;
    /// fn read_timer() -> u32 { 0x1_2345 }
    /// static CLOCK: TimerClock = TimerClock::new(read_timer, 16, 1_000);
    /// assert_eq!(CLOCK.now().tsc, 0x2345); // the low 16 bits only
    /// ```
    #[inline(always)]
    pub fn now(&self) -> Timestamp {
        Timestamp {
            tsc: self.extension.extend(self.bits, self.read),
            cpu: 0,
        }
    }
}

impl Clock for &TimerClock {
    #[inline(always)]
    fn now(&mut self) -> Timestamp {
        TimerClock::now(self)
    }

    #[inline(always)]
    fn now_if_unshared(&mut self) -> Option<Timestamp> {
        let tsc = self.extension.extend_if_unshared(self.bits, self.read)?;
        Some(Timestamp { tsc, cpu: 0 })
    }

    #[inline]
    fn ticks_per_second(&self) -> NonZeroU64 {
        self.ticks_per_second
    }
}

pub(crate) const fn nonzero_or_one(n: u64) -> NonZeroU64 {
    match NonZeroU64::new(n) {
        Some(f) => f,
        None => NonZeroU64::MIN,
    }
}

/// The core cycles of the SysTick periods counted so far, written by the
/// handler alone and read by every context: 32 bits extended with a
/// [`SharedExtension`] whose only writer that matters is the handler, which keeps
/// it current (a period has at most 2^24 cycles, far below the extension's half
/// period). Cycles rather than periods, so that a reading adds and does not
/// multiply (a 64-bit product is a library call on thumbv6m).
#[derive(Debug)]
#[cfg_attr(
    not(all(feature = "cortex-m", target_arch = "arm", target_os = "none")),
    allow(dead_code)
)]
pub(crate) struct TickCount {
    low: AtomicU32,
    extension: SharedExtension,
}

#[cfg_attr(
    not(all(feature = "cortex-m", target_arch = "arm", target_os = "none")),
    allow(dead_code)
)]
impl TickCount {
    pub(crate) const fn new() -> Self {
        Self {
            low: AtomicU32::new(0),
            extension: SharedExtension::new(),
        }
    }

    /// One more period of `period` cycles: the SysTick handler's job (the only
    /// writer).
    pub(crate) fn increment(&self, period: u32) {
        let next = self.low.load(Ordering::Relaxed).wrapping_add(period);
        // Ordered as the half-period count is.
        before_store();
        self.low.store(next, STORE);
        // Keeps the half-period count current, so no reader is ever two behind.
        self.extension.extend(32, || next);
    }

    pub(crate) fn get(&self) -> u64 {
        self.extension.extend(32, || {
            let low = self.low.load(LOAD);
            after_load();
            low
        })
    }
}

/// The time of a SysTick clock in core cycles: the cycles of the periods counted
/// by the handler (`ticks`) and the down-counting current value within the
/// period.
///
/// The reading protocol lives here, away from the registers, so that host tests
/// drive it with a fake SysTick: `read_current` reads the current value and
/// `read_pending` the interrupt's pending bit. A reading preempted by the handler
/// sees the tick count change and reads again; a reading the handler cannot preempt
/// (a higher priority, or interrupts masked) sees the pending bit of a wrap the
/// handler has not counted yet, and counts it itself.
#[cfg_attr(
    not(all(feature = "cortex-m", target_arch = "arm", target_os = "none")),
    allow(dead_code)
)]
pub(crate) fn systick_now(
    ticks: &TickCount,
    reload: u32,
    mut read_current: impl FnMut() -> u32,
    mut read_pending: impl FnMut() -> bool,
) -> u64 {
    loop {
        let before = ticks.get();
        let mut current = read_current();
        let mut uncounted = 0;
        if read_pending() {
            // The counter wrapped and the handler has not run: count the wrap, and
            // read the counter again, since the first read may predate the wrap.
            current = read_current();
            uncounted = reload + 1;
        }
        if ticks.get() == before {
            let within = reload.saturating_sub(current);
            // Both below 2^25: their sum fits 32 bits.
            return before + u64::from(uncounted + within);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    /// The half-period test and the value of a reading in the counted half are
    /// `extend_counter`'s, for every width, both parities, readings at and
    /// around each half's edges, and bits above the width.
    #[test]
    fn counted_half_agrees_with_extend_counter() {
        let seens = [
            0,
            1,
            2,
            3,
            0x7fff_fffe,
            0x7fff_ffff,
            0xffff_fffe,
            0xffff_ffff,
        ];
        for bits in 12..=34 {
            let w = bits.clamp(16, 32);
            let top = 1u32 << (w - 1);
            let mut raws = [0, 1, top - 1, top, top + 1, u32::MAX, 0x1234_5678, 0].to_vec();
            if w < 32 {
                raws.extend([(1 << w) - 1, 1 << w, (1 << w) | top, (3 << w) | 5]);
            }
            for &seen in &seens {
                for &raw in &raws {
                    let in_half = top_bit(raw, bits) == seen & 1;
                    assert_eq!(
                        in_counted_half(raw, seen, bits),
                        in_half,
                        "{bits} {seen:#x} {raw:#x}"
                    );
                    if in_half {
                        let (half_periods, value) = extend_counter(seen, raw, bits);
                        assert_eq!(half_periods, seen);
                        assert_eq!(extend_in_counted_half(seen, raw, bits), value);
                    }
                }
            }
        }
    }

    /// A fake 16-bit counter stepped by a fixed amount: every context's readings
    /// extended through one shared extension stay exact.
    #[test]
    fn extension_follows_many_wraps() {
        for bits in [16, 24, 32] {
            let ext = SharedExtension::new();
            let step = 1u64 << (bits - 2); // four readings per period
            let mask = if bits == 32 {
                u64::from(u32::MAX)
            } else {
                (1 << bits) - 1
            };
            for n in 0..100u64 {
                let truth = n * step + 3;
                assert_eq!(ext.extend(bits, || (truth & mask) as u32), truth);
            }
        }
    }

    /// The 32-bit-shift form of the value equals `(periods << bits) | raw` for
    /// every width and for counts near the top of the 64-bit range.
    #[test]
    fn value_is_periods_shifted_by_bits_plus_raw() {
        for bits in 16..=32u32 {
            for seen in [0u32, 1, 2, 7, 0x1234_5678, u32::MAX - 1, u32::MAX] {
                for raw in [0u32, 1, 0x7fff, 0x8000, 0xffff, 0x8000_0000, u32::MAX] {
                    let (half, value) = extend_counter(seen, raw, bits);
                    let masked = if bits == 32 {
                        raw
                    } else {
                        raw & ((1 << bits) - 1)
                    };
                    let expected = (u64::from(half >> 1) << bits) | u64::from(masked);
                    assert_eq!(value, expected, "bits {bits}, seen {seen:#x}, raw {raw:#x}");
                }
            }
        }
    }

    /// Context A loads the count, is preempted by B, whose reading crosses into the
    /// next half period, then reads the counter: its value is right. A late store
    /// that lags by one (from a reading made before B's) does no harm either.
    #[test]
    fn a_reading_preempted_mid_extension_stays_right() {
        let ext = SharedExtension::new();
        let truth = Cell::new((1u64 << 31) - 100);
        let read = || truth.get() as u32;
        assert_eq!(ext.extend(32, read), truth.get());
        // A: loads the count (0 half periods)...
        let seen = ext.half_periods.load(Ordering::Acquire);
        // ...B preempts: time crosses into half period 1, B reads and counts it.
        truth.set(truth.get() + 200);
        assert_eq!(ext.extend(32, read), truth.get());
        assert_eq!(ext.half_periods.load(Ordering::Relaxed), 1);
        // A resumes: reads the counter, one half period ahead of its load.
        truth.set(truth.get() + 10);
        let (half_periods, value) = extend_counter(seen, read(), 32);
        assert_eq!((half_periods, value), (1, truth.get()));
        // Time moves to half period 2 (past the 32-bit wrap); B counts it...
        truth.set((1 << 32) + 50);
        assert_eq!(ext.extend(32, read), truth.get());
        assert_eq!(ext.half_periods.load(Ordering::Relaxed), 2);
        // ...then a store from a reading made in half period 1 lands late.
        ext.half_periods.store(1, Ordering::Release);
        truth.set(truth.get() + 12_345);
        assert_eq!(ext.extend(32, read), truth.get());
        assert_eq!(ext.half_periods.load(Ordering::Relaxed), 2);
        // And the next wraps are counted as usual.
        for _ in 0..8 {
            truth.set(truth.get() + (3 << 29));
            assert_eq!(ext.extend(32, read), truth.get());
        }
    }

    /// Two contexts with one clock: B preempts A between A's load and A's counter
    /// read, at every point of a period of a 16-bit timer.
    #[test]
    fn interleaved_readers_agree_on_a_16_bit_timer() {
        let ext = SharedExtension::new();
        let truth = Cell::new(0u64);
        let read = || truth.get() as u32;
        for _ in 0..10_000 {
            // A starts a reading.
            let seen = ext.half_periods.load(Ordering::Acquire);
            // B preempts: time moves, B reads.
            truth.set(truth.get() + 7_919);
            assert_eq!(ext.extend(16, read), truth.get());
            // A finishes.
            truth.set(truth.get() + 13);
            let (half_periods, value) = extend_counter(seen, read(), 16);
            assert_eq!(value, truth.get());
            if half_periods != seen {
                ext.half_periods.store(half_periods, Ordering::Release);
            }
        }
    }

    /// A fake SysTick of period 1000 counting down, with its handler.
    struct FakeSysTick {
        cycles: Cell<u64>,
        handled: Cell<u64>,
        ticks: TickCount,
    }

    impl FakeSysTick {
        const RELOAD: u32 = 999;
        fn current(&self) -> u32 {
            Self::RELOAD - (self.cycles.get() % 1000) as u32
        }
        fn pending(&self) -> bool {
            self.cycles.get() / 1000 > self.handled.get()
        }
        fn handle(&self) {
            while self.pending() {
                self.handled.set(self.handled.get() + 1);
                self.ticks.increment(Self::RELOAD + 1);
            }
        }
    }

    /// The cycles of periods of different lengths add up past 2^32: 300 periods
    /// of SysTick's longest, 2^24 cycles, and a few short ones.
    #[test]
    fn tick_counts_add_periods_past_32_bits() {
        let ticks = TickCount::new();
        let mut truth = 0u64;
        for (n, period) in [(3, 1_000), (300, 1 << 24), (5, 12_345), (1, 1)] {
            for _ in 0..n {
                ticks.increment(period);
                truth += u64::from(period);
                assert_eq!(ticks.get(), truth);
            }
        }
        assert!(truth > 1 << 32);
        let within = systick_now(&ticks, 999, || 999 - 40, || false);
        assert_eq!(within, truth + 40);
    }

    /// Readings by a context that the handler cannot preempt, with the wrap not
    /// yet handled, and readings the handler preempts between their steps.
    #[test]
    fn systick_readings_count_unhandled_wraps_and_retry_when_preempted() {
        let st = FakeSysTick {
            cycles: Cell::new(0),
            handled: Cell::new(0),
            ticks: TickCount::new(),
        };
        // At most one wrap between handler runs: SysTick's pending bit holds one.
        for step in [1u64, 7, 333, 999, 1000] {
            for _ in 0..50 {
                st.cycles.set(st.cycles.get() + step);
                // A high-priority reader: the handler has not run.
                let now = systick_now(
                    &st.ticks,
                    FakeSysTick::RELOAD,
                    || st.current(),
                    || st.pending(),
                );
                assert_eq!(now, st.cycles.get());
                st.handle();
            }
        }
        // A thread-mode reader preempted by the handler after its first read: the
        // time moves past a wrap and the handler counts it; the reader retries.
        st.cycles.set(st.cycles.get() + 990);
        let first = Cell::new(true);
        let now = systick_now(
            &st.ticks,
            FakeSysTick::RELOAD,
            || {
                let v = st.current();
                if first.replace(false) {
                    st.cycles.set(st.cycles.get() + 20);
                    st.handle();
                }
                v
            },
            || st.pending(),
        );
        assert_eq!(now, st.cycles.get());
    }
}
