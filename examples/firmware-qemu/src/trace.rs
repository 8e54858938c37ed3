//! The flightrec side of the firmware: two streaming rings declared as `static`s
//! (one for thread mode, one for the SysTick handler, which preempts it), the
//! program's global recorder (`ContextRecorders`, which writes each record into
//! the ring of the context that runs: thread mode or SysTick's priority), and the
//! link that flushes the rings over UART0 a buffer at a time from the main loop.
//!
//! Instrumented functions carry `#[flightrec::instrument]` and call nothing of
//! this module: the attribute calls the global recorder, and the function ids
//! are the addresses of their names in the ELF's `.flightrec` section, which
//! `flightrec recv --elf` reads on the host.

use core::sync::atomic::{AtomicBool, Ordering};

use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Consumer, Policy, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::link::{LinkWriter, Source};
#[cfg(feature = "trace2")]
use flightrec_core::trace2::{Event, Format, LineCtx, Target};

use crate::clock::{self, CLOCK};
#[cfg(feature = "rtt")]
use crate::rtt::{drain, flush_one, sink, Sink};
use crate::uart::Uart0;

/// The link's sink: UART0, or the RTT up-channel (feature `rtt`).
#[cfg(not(feature = "rtt"))]
type Sink = Uart0;
#[cfg(not(feature = "rtt"))]
fn sink(uart: Uart0) -> Sink {
    uart
}
/// Sends at most one buffer; `true` while buffers are still waiting.
#[cfg(not(feature = "rtt"))]
fn flush_one(
    link: &mut LinkWriter<Sink>,
    source: &mut Source,
    consumer: &mut Consumer<'static, 'static>,
) -> bool {
    matches!(link.flush_one(source, consumer), Ok(true))
}
/// The UART sends as it goes: nothing to wait for.
#[cfg(not(feature = "rtt"))]
fn drain(_: &mut LinkWriter<Sink>) {}

/// Source (and FDR thread) id of thread mode.
const MAIN_SOURCE: u32 = 1;
/// Source (and FDR thread) id of the SysTick handler.
const IRQ_SOURCE: u32 = 2;
/// Source id of the Trace2 lines.
#[cfg(feature = "trace2")]
const TRACE2_SOURCE: u32 = 0;

static MAIN_RING: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
static IRQ_RING: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);

flightrec_core::static_clock!(
    /// `CLOCK` as a zero-sized clock: `TRACE` then holds no pointer, so it is all
    /// zero bytes and goes in `.bss` (with `&CLOCK` it would be in `.data`).
    Time = CLOCK
);

/// The program's global recorder: the ring of the running context, picked on each
/// record from IPSR and the exception's priority. SysTick keeps its reset
/// priority (0), so its context is `Context::priority(0)`.
static TRACE: ContextRecorders<2, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);
flightrec_core::global_recorder!(TRACE);
const SYSTICK: Context = Context::priority(0);

/// Set by thread mode at the end: the handler flushes its recorder (from its own
/// context, so no record of it is refused), then sets `IRQ_FLUSHED`.
static IRQ_FLUSH: AtomicBool = AtomicBool::new(false);
static IRQ_FLUSHED: AtomicBool = AtomicBool::new(false);

/// Called by the SysTick handler after its work: hands over its ring's current
/// buffer when thread mode asks for it, at the end.
pub fn after_tick() {
    if IRQ_FLUSH.load(Ordering::Acquire) && !IRQ_FLUSHED.load(Ordering::Relaxed) {
        let _ = TRACE.with_recorder(SYSTICK, |rec| rec.flush());
        IRQ_FLUSHED.store(true, Ordering::Release);
    }
}

fn config(source: u32) -> RecorderConfig {
    RecorderConfig::new(
        WriterConfig::new(source).with_pid(1),
        u64::from(clock::CLOCK_HZ),
    )
}

/// Thread mode's side: both consumers and the link.
pub struct Tracer {
    main_consumer: Consumer<'static, 'static>,
    irq_consumer: Consumer<'static, 'static>,
    main_source: Source,
    irq_source: Source,
    link: LinkWriter<Sink>,
    #[cfg(feature = "trace2")]
    t2_buf: [u8; 256],
}

impl Tracer {
    /// Installs both recorders and takes both consumers. Call once, in thread
    /// mode, before SysTick starts.
    pub fn init(uart: Uart0) -> Self {
        let Ok((main_rec, main_consumer)) = MAIN_RING.split(config(MAIN_SOURCE)) else {
            panic!("Tracer::init runs once");
        };
        let Ok((irq_rec, irq_consumer)) = IRQ_RING.split(config(IRQ_SOURCE)) else {
            panic!("Tracer::init runs once");
        };
        if TRACE.install(Context::THREAD_MODE, main_rec).is_err()
            || TRACE.install(SYSTICK, irq_rec).is_err()
        {
            panic!("Tracer::init runs once");
        }
        let main_header = config(MAIN_SOURCE).file_header(MAIN_RING.buffer_size());
        let irq_header = config(IRQ_SOURCE).file_header(IRQ_RING.buffer_size());
        Tracer {
            main_consumer,
            irq_consumer,
            main_source: Source::new(MAIN_SOURCE, main_header),
            irq_source: Source::new(IRQ_SOURCE, irq_header),
            link: LinkWriter::new(sink(uart)),
            #[cfg(feature = "trace2")]
            t2_buf: [0; 256],
        }
    }

    /// Sends at most one buffer of each ring: the main loop's flush step.
    pub fn flush_step(&mut self) {
        flush_one(
            &mut self.link,
            &mut self.main_source,
            &mut self.main_consumer,
        );
        flush_one(&mut self.link, &mut self.irq_source, &mut self.irq_consumer);
    }

    /// Sends one Trace2 event line (event format).
    #[cfg(feature = "trace2")]
    pub fn trace2(&mut self, ev: &Event<'_>) {
        let t_abs = clock::now() / u64::from(clock::CLOCK_HZ / 1_000_000);
        let ctx = LineCtx {
            t_abs,
            ..LineCtx::new(b"20250101T000000.000000Z-Hqemu-P00000001", b"main")
        };
        let format = Format::new(Target::Event, false);
        if let Ok(n) = format.write_line(&ctx, ev, &mut self.t2_buf) {
            // Over RTT, room for the whole line first (a few lines per run).
            drain(&mut self.link);
            let _ = self.link.send_trace2_line(TRACE2_SOURCE, &self.t2_buf[..n]);
        }
    }

    /// At the end: hands over the current buffers (the handler flushes its own),
    /// drains both rings and sends the final counters. Returns the records that
    /// had no ring to go to.
    pub fn finish(&mut self) -> u32 {
        let _ = TRACE.with_recorder(Context::THREAD_MODE, |rec| rec.flush());
        IRQ_FLUSH.store(true, Ordering::Release);
        while !IRQ_FLUSHED.load(Ordering::Acquire) {
            cortex_m::asm::wfi();
        }
        while flush_one(
            &mut self.link,
            &mut self.main_source,
            &mut self.main_consumer,
        ) {}
        while flush_one(&mut self.link, &mut self.irq_source, &mut self.irq_consumer) {}
        drain(&mut self.link);
        let _ = self
            .link
            .send_source_status(&mut self.main_source, &self.main_consumer);
        let _ = self
            .link
            .send_source_status(&mut self.irq_source, &self.irq_consumer);
        // Until the host has read it all (RTT); at once for the UART.
        drain(&mut self.link);
        let lost = TRACE.stats();
        lost.unrouted + lost.refused
    }
}
