//! The RTT variant's link sink (feature `rtt`): the frames go into the SEGGER RTT
//! up-channel of flightrec-core's `_SEGGER_RTT` control block instead of UART0, and
//! a debugger reads them (`flightrec recv --gdb localhost:PORT --elf <this ELF>`
//! against QEMU's `-gdb tcp::PORT`). The channel blocks while it is full, so no
//! record is lost to a slow reader; at the end `Tracer::finish` waits until the host
//! has read everything before QEMU exits.

use flightrec_core::link::rtt::{self, Mode, RttWriter};

use crate::uart::Uart0;

/// The link's sink in this variant.
pub type Sink = RttWriter<'static>;

/// Takes the RTT writer (UART0 stays unused). Call once.
pub fn sink(uart: Uart0) -> Sink {
    let _ = uart;
    match rtt::take(Mode::Blocking) {
        Ok(w) => w,
        Err(_) => panic!("the RTT writer is taken once"),
    }
}
