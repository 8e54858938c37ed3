//! The flightrec side of the firmware: two streaming rings in static memory (one for
//! thread mode, one for the SysTick handler, which preempts it), and the link that
//! flushes them over UART0 a buffer at a time from the main loop.

use core::cell::RefCell;

use critical_section::Mutex;
use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::ring::{Consumer, Policy, Recorder, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;
use flightrec_core::link::{LinkWriter, Source};
#[cfg(feature = "trace2")]
use flightrec_core::trace2::{Event, Format, LineCtx, Target};

use crate::clock;
use crate::uart::Uart0;

/// Source (and FDR thread) id of thread mode.
pub const MAIN_SOURCE: u32 = 1;
/// Source (and FDR thread) id of the SysTick handler.
pub const IRQ_SOURCE: u32 = 2;
/// Source id of the Trace2 lines.
#[cfg(feature = "trace2")]
const TRACE2_SOURCE: u32 = 0;

const MAIN_BUFFERS: usize = 4;
const MAIN_BUFFER_SIZE: usize = 1024;
const IRQ_BUFFERS: usize = 4;
const IRQ_BUFFER_SIZE: usize = 512;

static mut MAIN_STORAGE: [u8; MAIN_BUFFERS * MAIN_BUFFER_SIZE] =
    [0; MAIN_BUFFERS * MAIN_BUFFER_SIZE];
static MAIN_SLOTS: [Slot; MAIN_BUFFERS] = [Slot::NEW; MAIN_BUFFERS];
static mut IRQ_STORAGE: [u8; IRQ_BUFFERS * IRQ_BUFFER_SIZE] = [0; IRQ_BUFFERS * IRQ_BUFFER_SIZE];
static IRQ_SLOTS: [Slot; IRQ_BUFFERS] = [Slot::NEW; IRQ_BUFFERS];

/// The SysTick handler's recorder. Only the handler uses it after `init`.
static IRQ_RECORDER: Mutex<RefCell<Option<Recorder<'static, 'static>>>> =
    Mutex::new(RefCell::new(None));

/// A function id, checked at compile time where it is a constant.
pub const fn id(n: u32) -> FunctionId {
    match FunctionId::new(n) {
        Ok(f) => f,
        Err(_) => panic!("function ids have 28 bits"),
    }
}

fn ts(tsc: u64) -> Timestamp {
    Timestamp { tsc, cpu: 0 }
}

/// Everything thread mode needs: its recorder, both consumers, the link.
pub struct Tracer {
    rec: Recorder<'static, 'static>,
    main_consumer: Consumer<'static, 'static>,
    irq_consumer: Consumer<'static, 'static>,
    main_source: Source,
    irq_source: Source,
    link: LinkWriter<Uart0>,
    #[cfg(feature = "trace2")]
    t2_buf: [u8; 256],
}

impl Tracer {
    /// Sets up both rings. Call once, before SysTick starts.
    pub fn init(uart: Uart0) -> Self {
        let config = |tid| {
            RecorderConfig::new(
                WriterConfig::new(tid).with_pid(1),
                u64::from(clock::CLOCK_HZ),
            )
        };
        // SAFETY: `init` runs once (it is called from `main` only), so these are
        // the only references ever made to the two storage arrays.
        let (main_storage, irq_storage) = unsafe {
            (
                &mut *core::ptr::addr_of_mut!(MAIN_STORAGE),
                &mut *core::ptr::addr_of_mut!(IRQ_STORAGE),
            )
        };
        let main_ring = cortex_m::singleton!(: Ring<'static> =
            Ring::new(main_storage, &MAIN_SLOTS, Policy::Streaming).unwrap_or_else(|_| panic!()))
        .unwrap_or_else(|| panic!());
        let irq_ring = cortex_m::singleton!(: Ring<'static> =
            Ring::new(irq_storage, &IRQ_SLOTS, Policy::Streaming).unwrap_or_else(|_| panic!()))
        .unwrap_or_else(|| panic!());
        let main_cfg = config(MAIN_SOURCE as i32);
        let irq_cfg = config(IRQ_SOURCE as i32);
        let main_source = Source::new(MAIN_SOURCE, main_cfg.file_header(main_ring.buffer_size()));
        let irq_source = Source::new(IRQ_SOURCE, irq_cfg.file_header(irq_ring.buffer_size()));
        let (rec, main_consumer) = main_ring.split(main_cfg);
        let (irq_rec, irq_consumer) = irq_ring.split(irq_cfg);
        critical_section::with(|cs| IRQ_RECORDER.borrow_ref_mut(cs).replace(irq_rec));
        Tracer {
            rec,
            main_consumer,
            irq_consumer,
            main_source,
            irq_source,
            link: LinkWriter::new(uart),
            #[cfg(feature = "trace2")]
            t2_buf: [0; 256],
        }
    }

    /// Records a function entry.
    #[inline]
    pub fn enter(&mut self, f: FunctionId) {
        let _ = self.rec.enter(f, ts(clock::now()));
    }

    /// Records a function exit.
    #[inline]
    pub fn exit(&mut self, f: FunctionId) {
        let _ = self.rec.exit(f, ts(clock::now()));
    }

    /// Sends at most one buffer of each ring: the main loop's flush step.
    pub fn flush_step(&mut self) {
        let _ = self
            .link
            .flush_one(&mut self.main_source, &mut self.main_consumer);
        let _ = self
            .link
            .flush_one(&mut self.irq_source, &mut self.irq_consumer);
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
            let _ = self.link.send_trace2_line(TRACE2_SOURCE, &self.t2_buf[..n]);
        }
    }

    /// At the end: hands over the current buffers, drains both rings and sends the
    /// final counters.
    pub fn finish(&mut self) {
        self.rec.flush();
        critical_section::with(|cs| {
            if let Some(r) = IRQ_RECORDER.borrow_ref_mut(cs).as_mut() {
                r.flush();
            }
        });
        while matches!(
            self.link
                .flush_one(&mut self.main_source, &mut self.main_consumer),
            Ok(true)
        ) {}
        while matches!(
            self.link
                .flush_one(&mut self.irq_source, &mut self.irq_consumer),
            Ok(true)
        ) {}
        let _ = self
            .link
            .send_source_status(&mut self.main_source, &self.main_consumer);
        let _ = self
            .link
            .send_source_status(&mut self.irq_source, &self.irq_consumer);
    }
}

/// Called by the SysTick handler: its entry and exit go to the handler's own ring.
pub fn systick(body: impl FnOnce()) {
    const SYSTICK: FunctionId = id(6);
    critical_section::with(|cs| {
        if let Some(r) = IRQ_RECORDER.borrow_ref_mut(cs).as_mut() {
            let _ = r.enter(SYSTICK, ts(clock::now_in_systick()));
            body();
            let _ = r.exit(SYSTICK, ts(clock::now_in_systick()));
        } else {
            body();
        }
    });
}
