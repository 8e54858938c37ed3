//! The statics: a clock, a ring, the global recorder (the guide's step 2).

use flightrec_core::clock::TimerClock;
use flightrec_core::context::CortexMContexts;
use flightrec_core::context::{Context, ContextRecorders};
use flightrec_core::fdr::{ring::Policy, static_ring::StaticRing};
use flightrec_core::link::Outlet;

use crate::board;

static CLOCK: TimerClock = TimerClock::new(board::clock_now, 16, 1_000_000);
static MAIN: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
flightrec_core::static_clock!(pub Time = CLOCK); // a zero-sized handle of `CLOCK`
pub static TRACE: ContextRecorders<1, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);
flightrec_core::global_recorder!(TRACE);

/// Call once, at start-up, in thread mode.
pub fn start() -> [Outlet<'static, 'static>; 1] {
    // At start-up, in thread mode: the ring's recorder goes to the global recorder,
    // its outlet (link source 1, the consumer) to the idle loop.
    let outlet = TRACE
        .install_ring(Context::THREAD_MODE, 1, &MAIN)
        .expect("install once");
    [outlet]
}
