//! The application's tracing code: three rings (thread mode, where the main
//! executor runs; the interrupt executor's priority; SysTick, which wakes the
//! timers), the global recorder, the embassy backend (one line), and the
//! flushes over the UART.

use embedded_io::Write;
use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::Policy;
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::link::{LinkWriter, Outlet};

use crate::driver::CLOCK;

static MAIN: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
static FAST: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
static TICK: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
flightrec_core::static_clock!(pub Time = CLOCK);
pub static TRACE: ContextRecorders<3, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);
flightrec_core::global_recorder!(TRACE);
// embassy-executor's trace hooks, into the same rings.
#[cfg(feature = "trace")]
flightrec_embassy::embassy_trace!(TRACE);

/// SysTick's priority as the hardware reads it back (the reset value).
const SYSTICK: Context = Context::priority(0);

/// Thread mode (source 1), the interrupt executor at `fast` (source 2), SysTick
/// (source 3). Call once, in thread mode, before the executors start.
pub fn start(fast: u8) -> [Outlet<'static, 'static>; 3] {
    [
        start_one(1, Context::THREAD_MODE, &MAIN),
        start_one(2, Context::priority(fast), &FAST),
        start_one(3, SYSTICK, &TICK),
    ]
}

#[inline(never)]
fn start_one(
    id: u32,
    context: Context,
    ring: &'static StaticRing<4, 1024>,
) -> Outlet<'static, 'static> {
    // The outlet's counters frames also carry the records of contexts without
    // a ring.
    TRACE.install_ring(context, id, ring).expect("install once")
}

/// The main loop's flush between the executor's passes: at most one buffer per ring.
pub fn flush(link: &mut LinkWriter<impl Write>, rings: &mut [Outlet]) {
    link.flush_each(rings);
}

/// The end of the run: every record, then each ring's final counters.
pub fn finish(link: &mut LinkWriter<impl Write>, rings: &mut [Outlet]) {
    let _ = link.finish(rings, || TRACE.flush_all());
}
