//! Time from SysTick: a 1 kHz interrupt, in processor clock cycles. With tracing,
//! flightrec's `SysTickClock` counts the periods' cycles and gives every context,
//! thread mode and the handler alike, the same 64-bit time.

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;

/// The processor clock of QEMU's lm3s6965evb: its 200 MHz source divided by the
/// reset value of RCC.SYSDIV (16), which SysTick counts. Measured under
/// `-icount shift=4`: 20 million instructions (320 ms) took 3 988 668 SysTick cycles.
pub const CLOCK_HZ: u32 = 12_500_000;
/// Cycles per SysTick period (1 ms).
pub const TICK_CYCLES: u32 = CLOCK_HZ / 1000;

/// The clock every context reads.
#[cfg(feature = "trace")]
pub static CLOCK: flightrec_core::clock::SysTickClock =
    flightrec_core::clock::SysTickClock::new(CLOCK_HZ as u64);

/// The baseline build's tick count (the traced build's is in `CLOCK`).
#[cfg(not(feature = "trace"))]
static TICKS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Starts SysTick: an interrupt every millisecond.
pub fn start(syst: &mut SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(TICK_CYCLES - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// Called first by the SysTick handler.
pub fn tick() {
    #[cfg(feature = "trace")]
    CLOCK.tick();
    #[cfg(not(feature = "trace"))]
    {
        // Only this handler writes TICKS: a load and a store, which thumbv6m
        // (no read-modify-write atomics) has too.
        use core::sync::atomic::Ordering::Relaxed;
        TICKS.store(TICKS.load(Relaxed).wrapping_add(1), Relaxed);
    }
}

/// Cycles since `start`, from any context.
#[cfg(any(feature = "trace2", feature = "trace2-lines"))]
pub fn now() -> u64 {
    CLOCK.now().tsc
}
