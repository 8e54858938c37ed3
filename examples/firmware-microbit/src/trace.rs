//! The firmware's tracing code, all of it (with the attributes and the calls in
//! `main.rs`): the clock, a ring for thread mode and one for the timer
//! interrupt, the global recorder that writes into the ring of the running
//! context, and each ring's outlet on the link (`main.rs` flushes them in the
//! idle loop and at the end of the run). Instrumented functions call
//! nothing here: `#[flightrec::instrument]` calls the global recorder, and the
//! names stay in the ELF (`flightrec recv --elf`). No `unsafe`.

use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::{static_ring::StaticRing, writer::WriterConfig};
use flightrec_core::link::{Outlet, Source};

use crate::board::{clock_now, CLOCK_BITS, CLOCK_HZ};

static CLOCK: TimerClock = TimerClock::new(clock_now, CLOCK_BITS, CLOCK_HZ);
static MAIN: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
static TIMER: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
// `CLOCK` as a zero-sized clock: `TRACE` holds no pointer, so it is all zero bytes
// and goes in `.bss` (with `&CLOCK` it would be in `.data`).
flightrec_core::static_clock!(pub Time = CLOCK);
pub static TRACE: ContextRecorders<2, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);
flightrec_core::global_recorder!(TRACE);

/// TIMER0's context: its priority as the NVIC reads it back (the reset value).
const TIMER0: Context = Context::priority(0);

/// Gives thread mode (source 1) and the timer interrupt (source 2, at the reset
/// priority 0) their rings. Call once, in thread mode.
/// Each ring's outlet is its link source (the FDR thread id) and its consumer.
pub fn start() -> [Outlet<'static, 'static>; 2] {
    let rings = [(1, Context::THREAD_MODE, &MAIN), (2, TIMER0, &TIMER)];
    rings.map(|(id, context, ring)| {
        let cfg = RecorderConfig::new(WriterConfig::new(id), CLOCK_HZ);
        let (recorder, consumer) = ring.split(cfg).expect("split once");
        TRACE.install(context, recorder).expect("install");
        let header = cfg.file_header(ring.buffer_size());
        // The counters frames carry the records of contexts without a ring.
        let source = Source::new(id, header).with_no_ring(TRACE.no_ring());
        Outlet::new(source, consumer)
    })
}
