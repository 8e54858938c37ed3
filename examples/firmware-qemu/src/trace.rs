//! The firmware's tracing code, all of it over the UART (with the attributes and
//! the calls in `main.rs`, and the clock in `clock.rs`): two rings (thread mode and
//! the SysTick handler, which preempts it), the global recorder that writes into
//! the ring of the running context, and the idle loop's flush over the link.
//! Instrumented functions call nothing here: `#[flightrec::instrument]` calls the
//! global recorder, and the names stay in the ELF (`flightrec recv --elf`). No
//! `unsafe`. The RTT variants flush through `rtt.rs` instead.

use embedded_io::Write;
use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::{static_ring::StaticRing, writer::WriterConfig};
use flightrec_core::link::{LinkWriter, Outlet, Source};

use crate::clock::{CLOCK, CLOCK_HZ};

static MAIN: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
static IRQ: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
// `CLOCK` as a zero-sized clock: `TRACE` holds no pointer, so it is all zero bytes
// and goes in `.bss` (with `&CLOCK` it would be in `.data`).
flightrec_core::static_clock!(pub Time = CLOCK);
pub static TRACE: ContextRecorders<2, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);
flightrec_core::global_recorder!(TRACE);

/// SysTick's context: its priority as the hardware reads it back (the reset value).
#[cfg(not(feature = "wrong-priority"))]
const SYSTICK: Context = Context::priority(0);
/// The mistake the `wrong-priority` build makes on purpose: SysTick's ring
/// installed for a priority SysTick does not run at, so its records find no ring
/// (counted for priority 0, which the host names).
#[cfg(feature = "wrong-priority")]
const SYSTICK: Context = Context::priority(0x40);

/// Gives thread mode (source 1) and SysTick (source 2) their rings. Call once, in
/// thread mode.
/// Each ring's outlet is its link source (the FDR thread id) and its consumer.
pub fn start() -> [Outlet<'static, 'static>; 2] {
    [
        start_one(1, Context::THREAD_MODE, &MAIN),
        start_one(2, SYSTICK, &IRQ),
    ]
}

/// One ring's start: one copy in flash for both rings.
#[inline(never)]
fn start_one(
    id: u32,
    context: Context,
    ring: &'static StaticRing<4, 1024>,
) -> Outlet<'static, 'static> {
    let cfg = RecorderConfig::new(WriterConfig::new(id), u64::from(CLOCK_HZ));
    let (recorder, consumer) = ring.split(cfg).expect("split once");
    TRACE.install(context, recorder).expect("install");
    let header = cfg.file_header(ring.buffer_size());
    // The counters frames carry the records of contexts without a ring
    // (`install_ring` does this itself).
    let source = Source::new(id, header).with_no_ring(TRACE.no_ring());
    Outlet::new(source, consumer)
}

/// The idle loop's flush: at most one buffer per ring.
#[cfg_attr(feature = "rtt", allow(dead_code))]
pub fn flush(link: &mut LinkWriter<impl Write>, rings: &mut [Outlet]) {
    link.flush_each(rings);
}

/// The end of the run (a firmware whose idle loop never ends has none), with
/// SysTick's interrupt stopped: every record, then each ring's final counters.
#[cfg_attr(feature = "rtt", allow(dead_code))]
pub fn finish(link: &mut LinkWriter<impl Write>, rings: &mut [Outlet]) {
    // The recorders are flushed twice, for a loss marker that found every buffer
    // waiting the first time.
    let _ = link.finish(rings, || TRACE.flush_all());
}
