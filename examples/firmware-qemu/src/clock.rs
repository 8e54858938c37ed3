//! Time from SysTick: a 1 kHz tick counted in an interrupt, plus the counter within
//! the tick, in processor clock cycles.

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;

/// The processor clock of QEMU's lm3s6965evb: its 200 MHz source divided by the
/// reset value of RCC.SYSDIV (16), which SysTick counts. Measured under
/// `-icount shift=4`: 20 million instructions (320 ms) took 3 988 668 SysTick cycles.
pub const CLOCK_HZ: u32 = 12_500_000;
/// Cycles per SysTick period (1 ms).
pub const TICK_CYCLES: u32 = CLOCK_HZ / 1000;

static TICKS: AtomicU32 = AtomicU32::new(0);

/// Starts SysTick: an interrupt every millisecond.
pub fn start(mut syst: SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(TICK_CYCLES - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// Called by the SysTick handler.
pub fn tick() {
    TICKS.fetch_add(1, Ordering::Relaxed);
}

#[cfg_attr(not(feature = "trace"), allow(dead_code))]
/// Cycles since `start`. Thread mode only: a handler that preempts SysTick's own
/// update could see the counter wrap before the tick count does.
pub fn now() -> u64 {
    loop {
        let before = TICKS.load(Ordering::Acquire);
        let within = TICK_CYCLES - 1 - SYST::get_current();
        if TICKS.load(Ordering::Acquire) == before {
            return u64::from(before) * u64::from(TICK_CYCLES) + u64::from(within);
        }
    }
}

#[cfg_attr(not(feature = "trace"), allow(dead_code))]
/// Cycles at the start of the SysTick handler (the counter has just wrapped).
pub fn now_in_systick() -> u64 {
    let ticks = TICKS.load(Ordering::Relaxed);
    let within = TICK_CYCLES - 1 - SYST::get_current();
    u64::from(ticks + 1) * u64::from(TICK_CYCLES) + u64::from(within)
}
