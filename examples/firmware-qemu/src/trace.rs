//! The flightrec side of the firmware: two streaming rings declared as `static`s
//! (one for thread mode, one for the SysTick handler, which preempts it), the
//! program's global recorder, which writes each record into the ring of the
//! context that runs (thread mode or SysTick, read from the SCB), and the link
//! that flushes the rings over UART0 a buffer at a time from the main loop.
//!
//! Instrumented functions carry `#[flightrec::instrument]` and call nothing of
//! this module: the attribute calls the global recorder, and the function ids
//! are the addresses of their names in the ELF's `.flightrec` section, which
//! `flightrec recv --elf` reads on the host.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::peripheral::scb::{Exception, VectActive};
use cortex_m::peripheral::SCB;
use flightrec_core::fdr::ring::{Consumer, Policy, Recorder, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId};
use flightrec_core::global::GlobalRecorder;
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

/// Set by thread mode at the end: the handler flushes its recorder after its
/// next exit record, then sets `IRQ_FLUSHED`.
static IRQ_FLUSH: AtomicBool = AtomicBool::new(false);
static IRQ_FLUSHED: AtomicBool = AtomicBool::new(false);

/// A recorder used by one execution context only.
struct Slot {
    /// Set (release) once `rec` holds the recorder; from then on only the
    /// owning context touches `rec`.
    ready: AtomicBool,
    rec: UnsafeCell<Option<Recorder<'static, 'static>>>,
}

// SAFETY: `rec` is written once, by thread mode, before `ready` is set and
// before SysTick is enabled (`Tracer::init`); after that only the slot's own
// context reaches it (`Contexts::slot` routes by the active exception, and a
// handler never preempts itself), so no two accesses to `rec` overlap.
unsafe impl Sync for Slot {}

impl Slot {
    const fn new() -> Self {
        Slot {
            ready: AtomicBool::new(false),
            rec: UnsafeCell::new(None),
        }
    }

    /// Runs `f` on the recorder, if installed. Called only from the slot's
    /// own context (see the `Sync` impl).
    fn with(&self, f: impl FnOnce(&mut Recorder<'static, 'static>)) -> bool {
        if !self.ready.load(Ordering::Acquire) {
            return false;
        }
        // SAFETY: `ready` is set, so `rec` is no longer written by `install`,
        // and only this slot's context calls `with` (see the `Sync` impl): this
        // is the only reference to the recorder while `f` runs.
        if let Some(rec) = unsafe { &mut *self.rec.get() } {
            f(rec);
        }
        true
    }
}

/// The global recorder: one recorder per context.
struct Contexts {
    main: Slot,
    irq: Slot,
    /// Records with no ring to go to (another handler, or before `init`).
    lost: AtomicU32,
}

static TRACE: Contexts = Contexts {
    main: Slot::new(),
    irq: Slot::new(),
    lost: AtomicU32::new(0),
};
flightrec_core::global_recorder!(TRACE);

impl GlobalRecorder for Contexts {
    fn record_function(&'static self, action: FunctionAction, id: FunctionId) {
        let (slot, irq) = match SCB::vect_active() {
            VectActive::ThreadMode => (&self.main, false),
            VectActive::Exception(Exception::SysTick) => (&self.irq, true),
            _ => {
                self.lost.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let recorded = slot.with(|rec| {
            let _ = rec.function(action, id, CLOCK.now());
            // The handler's only instrumented function (`on_tick`) has just returned: hand
            // over its buffer when thread mode asks, at the end.
            if irq
                && action == FunctionAction::Exit
                && IRQ_FLUSH.load(Ordering::Acquire)
                && !IRQ_FLUSHED.load(Ordering::Relaxed)
            {
                rec.flush();
                IRQ_FLUSHED.store(true, Ordering::Release);
            }
        });
        if !recorded {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
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
        for (slot, rec) in [(&TRACE.main, main_rec), (&TRACE.irq, irq_rec)] {
            if slot.ready.load(Ordering::Relaxed) {
                panic!("Tracer::init runs once");
            }
            // SAFETY: `ready` is not set, so no context reads `rec` yet, and
            // this is thread mode before SysTick starts: the only access.
            unsafe { *slot.rec.get() = Some(rec) };
            slot.ready.store(true, Ordering::Release);
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
        TRACE.main.with(|rec| rec.flush());
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
        TRACE.lost.load(Ordering::Relaxed)
    }
}
