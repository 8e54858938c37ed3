//! The firmware's tracing code: the clock, two rings (thread mode and the timer
//! interrupt), the global recorder that picks the ring of the running context,
//! and the link that the idle loop flushes. Instrumented functions call nothing
//! here: `#[flightrec::instrument]` calls the global recorder, and the names
//! stay in the ELF (`flightrec recv --elf`). No `unsafe`.

use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Consumer, Policy, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::link::{LinkWriter, Source};

use crate::board::{clock_now, CLOCK_BITS, CLOCK_HZ};

static CLOCK: TimerClock = TimerClock::new(clock_now, CLOCK_BITS, CLOCK_HZ);
static MAIN: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
static TIMER: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
static TRACE: ContextRecorders<2, CortexMContexts, &TimerClock> =
    ContextRecorders::new(CortexMContexts::new(), &CLOCK);
flightrec_core::global_recorder!(TRACE);

/// The link, and each ring's consumer with its link source.
pub struct Link<W> {
    pub link: LinkWriter<W>,
    rings: [(Source, Consumer<'static, 'static>); 2],
}

impl<W: embedded_io::Write> Link<W> {
    /// Gives thread mode (source 1) and the timer interrupt (source 2, at the
    /// reset priority 0) their rings. Call once.
    pub fn start(sink: W) -> Self {
        let rings = [
            (1, Context::THREAD_MODE, &MAIN),
            (2, Context::priority(0), &TIMER),
        ];
        let rings = rings.map(|(id, context, ring)| {
            let cfg = RecorderConfig::new(WriterConfig::new(id), CLOCK_HZ);
            let (recorder, consumer) = ring.split(cfg).expect("split once");
            TRACE
                .install(context, recorder)
                .expect("one ring per context");
            (
                Source::new(id, cfg.file_header(ring.buffer_size())),
                consumer,
            )
        });
        Link {
            link: LinkWriter::new(sink),
            rings,
        }
    }

    /// The idle loop's flush: at most one buffer per ring; `true` if any went.
    pub fn flush(&mut self) -> bool {
        let mut sent = false;
        for (source, consumer) in &mut self.rings {
            sent |= matches!(self.link.flush_one(source, consumer), Ok(true));
        }
        sent
    }

    /// At the end (the interrupt stopped): the last records and the counters.
    pub fn finish(&mut self) {
        TRACE.flush_all();
        while self.flush() {}
        for (source, consumer) in &mut self.rings {
            let _ = self.link.send_source_status(source, consumer);
        }
    }
}
