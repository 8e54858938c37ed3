//! The flightrec side of the firmware: two streaming rings declared as `static`s (one
//! for thread mode, one for the SysTick handler, which preempts it), and the link
//! that flushes them over UART0 a buffer at a time from the main loop. No `unsafe`,
//! no `static mut`, no critical section: each ring hands out its recorder and its
//! consumer once, and both contexts read the one `clock::CLOCK`.

use core::sync::atomic::{AtomicBool, Ordering};

use flightrec_core::fdr::ring::{Consumer, Policy, Recorder, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;
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

/// Set by thread mode at the end: the handler flushes its recorder, then sets
/// `IRQ_FLUSHED`.
static IRQ_FLUSH: AtomicBool = AtomicBool::new(false);
static IRQ_FLUSHED: AtomicBool = AtomicBool::new(false);

/// A function id, checked at compile time where it is a constant.
pub const fn id(n: u32) -> FunctionId {
    match FunctionId::new(n) {
        Ok(f) => f,
        Err(_) => panic!("function ids have 28 bits"),
    }
}

fn config(source: u32) -> RecorderConfig {
    RecorderConfig::new(
        WriterConfig::new(source).with_pid(1),
        u64::from(clock::CLOCK_HZ),
    )
}

/// Thread mode's side: its recorder, both consumers, the link.
pub struct Tracer {
    rec: Recorder<'static, 'static>,
    main_consumer: Consumer<'static, 'static>,
    irq_consumer: Consumer<'static, 'static>,
    main_source: Source,
    irq_source: Source,
    link: LinkWriter<Sink>,
    #[cfg(feature = "trace2")]
    t2_buf: [u8; 256],
}

impl Tracer {
    /// Takes thread mode's recorder and both consumers. Call once.
    pub fn init(uart: Uart0) -> Self {
        let Ok((rec, main_consumer)) = MAIN_RING.split(config(MAIN_SOURCE)) else {
            panic!("Tracer::init runs once");
        };
        let Ok(irq_consumer) = IRQ_RING.take_consumer() else {
            panic!("Tracer::init runs once");
        };
        let main_header = config(MAIN_SOURCE).file_header(MAIN_RING.buffer_size());
        let irq_header = config(IRQ_SOURCE).file_header(IRQ_RING.buffer_size());
        Tracer {
            rec,
            main_consumer,
            irq_consumer,
            main_source: Source::new(MAIN_SOURCE, main_header),
            irq_source: Source::new(IRQ_SOURCE, irq_header),
            link: LinkWriter::new(sink(uart)),
            #[cfg(feature = "trace2")]
            t2_buf: [0; 256],
        }
    }

    /// Records a function entry.
    #[inline]
    pub fn enter(&mut self, f: FunctionId) {
        let _ = self.rec.enter(f, CLOCK.now());
    }

    /// Records a function exit.
    #[inline]
    pub fn exit(&mut self, f: FunctionId) {
        let _ = self.rec.exit(f, CLOCK.now());
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
    /// drains both rings and sends the final counters.
    pub fn finish(&mut self) {
        self.rec.flush();
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
    }
}

/// The SysTick handler's side: its recorder, taken on its first run and kept by
/// the handler.
pub struct IrqTracer {
    rec: Recorder<'static, 'static>,
}

impl IrqTracer {
    /// Takes the handler's recorder. Call once, from the handler.
    pub fn take() -> Self {
        let Ok(rec) = IRQ_RING.take_recorder(config(IRQ_SOURCE)) else {
            panic!("IrqTracer::take runs once");
        };
        IrqTracer { rec }
    }

    /// Records the handler's entry and exit around `body`, and flushes when thread
    /// mode asks for it at the end.
    pub fn systick(&mut self, body: impl FnOnce()) {
        const SYSTICK: FunctionId = id(6);
        let _ = self.rec.enter(SYSTICK, CLOCK.now());
        body();
        let _ = self.rec.exit(SYSTICK, CLOCK.now());
        if IRQ_FLUSH.load(Ordering::Acquire) && !IRQ_FLUSHED.load(Ordering::Relaxed) {
            self.rec.flush();
            IRQ_FLUSHED.store(true, Ordering::Release);
        }
    }
}
