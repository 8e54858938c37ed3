//! embassy-time's driver over SysTick: a 1 kHz tick counted in the SysTick
//! handler, which also wakes the timers that are due. With tracing the handler
//! first moves flightrec's `SysTickClock` on, so that every context reads the
//! same cycle time.

use core::cell::RefCell;
use core::sync::atomic::{AtomicU32, Ordering};
use core::task::Waker;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_time_driver::Driver;
use embassy_time_queue_utils::Queue;

/// The processor clock of QEMU's lm3s6965evb, which SysTick counts (see
/// examples/firmware-qemu/src/clock.rs).
pub const CLOCK_HZ: u32 = 12_500_000;
/// Cycles per SysTick period: one embassy tick (`tick-hz-1_000`).
const TICK_CYCLES: u32 = CLOCK_HZ / 1000;

/// The clock every context's records read.
#[cfg(feature = "link")]
pub static CLOCK: flightrec_core::clock::SysTickClock =
    flightrec_core::clock::SysTickClock::new(CLOCK_HZ as u64);

struct SysTickDriver {
    /// Written by the SysTick handler only: a load and a store.
    ticks: AtomicU32,
    queue: Mutex<RefCell<Queue>>,
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    ticks: AtomicU32::new(0),
    queue: Mutex::new(RefCell::new(Queue::new())),
});

impl Driver for SysTickDriver {
    fn now(&self) -> u64 {
        u64::from(self.ticks.load(Ordering::Relaxed))
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            // Due timers are woken on the next tick.
            let _ = self.queue.borrow_ref_mut(cs).schedule_wake(at, waker);
        });
    }
}

/// Starts SysTick: an interrupt every millisecond.
pub fn start(syst: &mut SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(TICK_CYCLES - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// Ticks since `start`.
pub fn now() -> u32 {
    DRIVER.ticks.load(Ordering::Relaxed)
}

#[exception]
fn SysTick() {
    #[cfg(feature = "link")]
    CLOCK.tick();
    let now = DRIVER.ticks.load(Ordering::Relaxed).wrapping_add(1);
    DRIVER.ticks.store(now, Ordering::Relaxed);
    critical_section::with(|cs| {
        let _ = DRIVER
            .queue
            .borrow_ref_mut(cs)
            .next_expiration(u64::from(now));
    });
}
