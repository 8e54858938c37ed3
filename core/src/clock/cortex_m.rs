//! Clocks of the Cortex-M core: the DWT cycle counter and SysTick, read with
//! volatile reads of their architectural registers (no `cortex-m` crate needed).
//! Both are `static`s that every context reads at once.
//!
//! Built with the `cortex-m` feature on `target_arch = "arm"`, `target_os = "none"`
//! only, so their examples are compiled out of the host's doc tests; the firmware
//! example (`examples/firmware-qemu`) runs `SysTickClock` under QEMU.

use core::num::NonZeroU64;
use core::ptr;

use super::shared::{nonzero_or_one, systick_now, SharedExtension, TickCount};
use super::{Clock, Timestamp};

/// Debug Exception and Monitor Control Register; bit 24 (TRCENA) powers the DWT.
const DEMCR: usize = 0xE000_EDFC;
const DEMCR_TRCENA: u32 = 1 << 24;
/// DWT control; bit 0 (CYCCNTENA) runs the cycle counter.
const DWT_CTRL: usize = 0xE000_1000;
const DWT_CYCCNT: usize = 0xE000_1004;
/// DWT lock access register (Cortex-M7): the key unlocks writes to the DWT.
const DWT_LAR: usize = 0xE000_1FB0;
const DWT_LAR_KEY: u32 = 0xC5AC_CE55;
/// SysTick control and status, reload value, current value.
const SYST_CSR: usize = 0xE000_E010;
const SYST_RVR: usize = 0xE000_E014;
const SYST_CVR: usize = 0xE000_E018;
/// Interrupt control and state; bit 26 (PENDSTSET) says SysTick is pending.
const ICSR: usize = 0xE000_ED04;
const ICSR_PENDSTSET: u32 = 1 << 26;

#[inline(always)]
fn read(addr: usize) -> u32 {
    // SAFETY: `addr` is one of the System Control Space registers above, which every
    // Cortex-M core maps at these fixed addresses (the `cortex-m` feature is for
    // Cortex-M targets only); reading them has no side effect.
    unsafe { ptr::read_volatile(addr as *const u32) }
}

#[inline(always)]
fn write(addr: usize, value: u32) {
    // SAFETY: as in `read`; the callers write only the fields documented here, which
    // configure the debug and timer blocks and touch no memory Rust owns.
    unsafe { ptr::write_volatile(addr as *mut u32, value) }
}

/// The DWT cycle counter (CYCCNT) of Cortex-M3, M4, M7, M33 and M55, extended to
/// 64 bits with a [`SharedExtension`]: it counts core cycles, so its rate is the
/// core clock. Cortex-M0 and M0+ have no cycle counter; use [`SysTickClock`].
///
/// ```
/// # #[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
/// # fn firmware() {
/// use flightrec_core::clock::DwtClock;
/// static CLOCK: DwtClock = DwtClock::new(64_000_000);
/// CLOCK.enable(); // once, at start-up
/// let a = CLOCK.now();
/// let b = CLOCK.now(); // from any context, at any time
/// assert!(b.tsc >= a.tsc);
/// # }
/// ```
#[derive(Debug)]
pub struct DwtClock {
    ticks_per_second: NonZeroU64,
    extension: SharedExtension,
}

impl DwtClock {
    /// A clock counting the core's cycles at `core_hz`; a `const fn`, for `static`s.
    /// Example on [`DwtClock`].
    pub const fn new(core_hz: u64) -> Self {
        Self {
            ticks_per_second: nonzero_or_one(core_hz),
            extension: SharedExtension::new(),
        }
    }

    /// Starts the cycle counter: powers the DWT, unlocks it (Cortex-M7) and enables
    /// CYCCNT. Call it once at start-up, before the contexts that read the clock
    /// run (its read-modify-write of DEMCR is not atomic). Example on [`DwtClock`].
    pub fn enable(&self) {
        write(DEMCR, read(DEMCR) | DEMCR_TRCENA);
        write(DWT_LAR, DWT_LAR_KEY);
        write(DWT_CTRL, read(DWT_CTRL) | 1);
    }

    /// The time now, in core cycles, on CPU 0. Example on [`DwtClock`].
    #[inline]
    pub fn now(&self) -> Timestamp {
        Timestamp {
            tsc: self.extension.extend(32, || read(DWT_CYCCNT)),
            cpu: 0,
        }
    }
}

impl Clock for &DwtClock {
    #[inline]
    fn now(&mut self) -> Timestamp {
        DwtClock::now(self)
    }

    #[inline]
    fn now_if_unshared(&mut self) -> Option<Timestamp> {
        let tsc = self.extension.extend_if_unshared(32, || read(DWT_CYCCNT))?;
        Some(Timestamp { tsc, cpu: 0 })
    }

    #[inline]
    fn ticks_per_second(&self) -> NonZeroU64 {
        self.ticks_per_second
    }
}

/// SysTick plus the cycles of the periods its handler counted: a clock in core
/// cycles for every Cortex-M, M0 included. The SysTick handler calls
/// [`tick`](SysTickClock::tick) first; every context, the handler and higher
/// priorities included, reads [`now`](SysTickClock::now) at any time (see
/// `systick_now` for how a reading copes with a wrap the handler has not counted
/// yet).
///
/// ```
/// # #[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
/// # fn firmware() {
/// use flightrec_core::clock::SysTickClock;
/// static CLOCK: SysTickClock = SysTickClock::new(12_000_000);
/// CLOCK.start(12_000 - 1); // a 1 kHz tick
/// // In the SysTick handler: `CLOCK.tick();` first.
/// let a = CLOCK.now();
/// let b = CLOCK.now();
/// assert!(b.tsc >= a.tsc);
/// # }
/// ```
#[derive(Debug)]
pub struct SysTickClock {
    ticks_per_second: NonZeroU64,
    ticks: TickCount,
}

impl SysTickClock {
    /// A clock for SysTick counting the core clock at `core_hz`; a `const fn`, for
    /// `static`s. Example on [`SysTickClock`].
    pub const fn new(core_hz: u64) -> Self {
        Self {
            ticks_per_second: nonzero_or_one(core_hz),
            ticks: TickCount::new(),
        }
    }

    /// Starts SysTick on the core clock with its interrupt, a period of
    /// `reload + 1` cycles (`reload` has 24 bits). Firmware that sets SysTick up
    /// itself may skip it: [`now`](Self::now) reads the reload value it finds.
    /// Example on [`SysTickClock`].
    pub fn start(&self, reload: u32) {
        write(SYST_CSR, 0);
        write(SYST_RVR, reload & 0x00FF_FFFF);
        write(SYST_CVR, 0);
        // CLKSOURCE (core clock), TICKINT, ENABLE.
        write(SYST_CSR, 0b111);
    }

    /// Counts one period: call it first thing in the SysTick handler.
    /// Example on [`SysTickClock`].
    #[inline]
    pub fn tick(&self) {
        // The period that ended, at the reload value in force now: a firmware
        // that changed the reload during this period counts it at the new length
        // (SysTick loads the new value only at the next wrap).
        self.ticks.increment((read(SYST_RVR) & 0x00FF_FFFF) + 1);
    }

    /// The time now, in core cycles, on CPU 0. Example on [`SysTickClock`].
    #[inline]
    pub fn now(&self) -> Timestamp {
        let reload = read(SYST_RVR) & 0x00FF_FFFF;
        let tsc = systick_now(
            &self.ticks,
            reload,
            || read(SYST_CVR) & 0x00FF_FFFF,
            || read(ICSR) & ICSR_PENDSTSET != 0,
        );
        Timestamp { tsc, cpu: 0 }
    }
}

impl Clock for &SysTickClock {
    #[inline]
    fn now(&mut self) -> Timestamp {
        SysTickClock::now(self)
    }

    #[inline]
    fn ticks_per_second(&self) -> NonZeroU64 {
        self.ticks_per_second
    }
}
