//! The firmware's tracing code, all of it (with the attributes and the calls in
//! `main.rs`): the clock, a ring for thread mode and one for the timer
//! interrupt, the global recorder that writes into the ring of the running
//! context, and the idle loop's flush over the link. Instrumented functions call
//! nothing here: `#[flightrec::instrument]` calls the global recorder, and the
//! names stay in the ELF (`flightrec recv --elf`). No `unsafe`.

use embedded_io::Write;
use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Consumer, Policy, RecorderConfig};
use flightrec_core::fdr::{static_ring::StaticRing, writer::WriterConfig};
use flightrec_core::link::{LinkWriter, Source};

use crate::board::{clock_now, CLOCK_BITS, CLOCK_HZ};

static CLOCK: TimerClock = TimerClock::new(clock_now, CLOCK_BITS, CLOCK_HZ);
static MAIN: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
static TIMER: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
static TRACE: ContextRecorders<2, CortexMContexts, &TimerClock> =
    ContextRecorders::new(CortexMContexts::new(), &CLOCK);
flightrec_core::global_recorder!(TRACE);

/// TIMER0's context: its priority as the NVIC reads it back (the reset value).
const TIMER0: Context = Context::priority(0);

/// Each ring's link source (the FDR thread id) and consumer.
pub type Rings = [(Source, Consumer<'static, 'static>); 2];

/// Gives thread mode (source 1) and the timer interrupt (source 2, at the reset
/// priority 0) their rings. Call once, in thread mode.
pub fn start() -> Rings {
    let rings = [(1, Context::THREAD_MODE, &MAIN), (2, TIMER0, &TIMER)];
    rings.map(|(id, context, ring)| {
        let cfg = RecorderConfig::new(WriterConfig::new(id), CLOCK_HZ);
        let (recorder, consumer) = ring.split(cfg).expect("split once");
        TRACE.install(context, recorder).expect("install");
        let header = cfg.file_header(ring.buffer_size());
        (Source::new(id, header), consumer)
    })
}

/// The idle loop's flush: at most one buffer per ring.
pub fn flush(link: &mut LinkWriter<impl Write>, rings: &mut Rings) {
    for (source, consumer) in rings {
        let _ = link.flush_one(source, consumer);
    }
}

/// The end of the run (a firmware whose idle loop never ends has none), with the
/// interrupt stopped: every record, then each ring's final counters.
pub fn finish(link: &mut LinkWriter<impl Write>, rings: &mut Rings) {
    // Twice: a loss marker that found every buffer waiting goes out the second time.
    for _ in 0..2 {
        TRACE.flush_all();
        for (source, consumer) in rings.iter_mut() {
            while let Ok(true) = link.flush_one(source, consumer) {}
        }
    }
    for (source, consumer) in rings {
        let _ = link.send_source_status(source, consumer);
    }
}
