//! The RTT variant's link (feature `rtt`): the frames go into the SEGGER RTT
//! up-channel of flightrec-core's `_SEGGER_RTT` control block instead of UART0, and
//! a debugger reads them (`flightrec recv --gdb localhost:PORT --elf <this ELF>`
//! against QEMU's `-gdb tcp::PORT`).
//!
//! With `rtt`, the channel blocks while it is full, so no record is lost to a slow
//! reader. With `rtt-nonblocking`, nothing waits: a buffer stays in its ring until
//! its frames fit in the channel, and while the ring is full the recorders drop
//! records, counted and marked in the trace. Either way the example waits for the
//! channel to empty before each of its few Trace2 lines (a firmware that must never
//! wait sends them with `rtt::send`, which refuses and counts a line that does not
//! fit), and at the end until the host has read everything, before QEMU exits.

use flightrec_core::fdr::ring::Consumer;
use flightrec_core::link::rtt::{self, Mode, RttWriter};
use flightrec_core::link::{LinkWriter, Outlet, Source};

use crate::trace::TRACE;
use crate::uart::Uart0;

/// The link's sink in this variant.
pub type Sink = RttWriter<'static>;

#[cfg(not(feature = "rtt-nonblocking"))]
const MODE: Mode = Mode::Blocking;
#[cfg(feature = "rtt-nonblocking")]
const MODE: Mode = Mode::NonBlocking;

// Non-blocking, a buffer goes out only when all its frames fit in the channel: the
// rings' 1 KiB buffers need a bigger channel than the default 1 KiB.
#[cfg(feature = "rtt-nonblocking")]
const _: () = assert!(
    rtt::BUFFER_SIZE > 1024 + rtt::FRAME_OVERHEAD,
    "build with FLIGHTREC_RTT_BUFFER_SIZE=4096 (the channel must hold a 1 KiB ring buffer's frames)"
);

/// Takes the RTT writer (UART0 stays unused). Call once.
pub fn sink(uart: Uart0) -> Sink {
    let _ = uart;
    match rtt::take(MODE) {
        Ok(w) => w,
        Err(_) => panic!("the RTT writer is taken once"),
    }
}

/// Sends at most one buffer of the ring, whole or not at all; `true` while
/// buffers are still waiting (a draining loop calls it until `false`).
fn flush_one(
    link: &mut LinkWriter<Sink>,
    source: &mut Source,
    consumer: &mut Consumer<'static, 'static>,
) -> bool {
    match rtt::flush_one(link, source, consumer) {
        Ok(true) => true,
        // No room yet: the host makes some.
        Ok(false) => consumer.pending() > 0,
        Err(_) => false,
    }
}

/// The idle loop's flush: at most one buffer per ring.
pub fn flush(link: &mut LinkWriter<Sink>, rings: &mut [Outlet<'static, 'static>]) {
    for o in rings {
        flush_one(link, &mut o.source, &mut o.consumer);
    }
}

/// The end of the run, with SysTick's interrupt stopped: every record, each
/// ring's final counters, and until the host has read everything.
pub fn finish(link: &mut LinkWriter<Sink>, rings: &mut [Outlet<'static, 'static>]) {
    // Twice: a loss marker that found every buffer waiting goes out the second time.
    for _ in 0..2 {
        TRACE.flush_all();
        for o in rings.iter_mut() {
            while flush_one(link, &mut o.source, &mut o.consumer) {}
        }
    }
    drain(link);
    for o in rings {
        let _ = link.send_source_status(&mut o.source, &o.consumer);
    }
    drain(link);
}

/// Waits until the host has read everything in the channel.
pub fn drain(link: &mut LinkWriter<Sink>) {
    while link.sink_mut().pending() > 0 {
        core::hint::spin_loop();
    }
}
