//! Compact Trace2 events over the link (feature `trace2`), beside the FDR traces:
//! each event goes as its kind, the SysTick clock's reading and its fields
//! (constant strings as ids of the ELF's `.flightrec.trace2` section), and
//! `flightrec recv --elf` writes git's event lines. Nothing here formats text,
//! divides or uses floating point.

use flightrec_core::link::trace2::{Session, Trace2Event};
use flightrec_core::link::LinkWriter;
use flightrec_core::trace2_str;

use crate::clock;

/// The link's sink: UART0, or the RTT up-channel (feature `rtt`).
#[cfg(not(feature = "rtt"))]
type Sink = crate::uart::Uart0;
#[cfg(feature = "rtt")]
type Sink = crate::rtt::Sink;

/// Source id of the Trace2 events.
const TRACE2_SOURCE: u32 = 0;

/// Sends the session first: the clock's frequency, the session id and the thread.
pub fn start(link: &mut LinkWriter<Sink>) {
    send(
        link,
        &Session {
            hz: u64::from(clock::CLOCK_HZ),
            sid: trace2_str!("20250101T000000.000000Z-Hqemu-P00000001"),
            thread: trace2_str!("main"),
        },
    );
}

/// Sends one event, stamped with the clock.
pub fn send<E: Trace2Event>(link: &mut LinkWriter<Sink>, ev: &E) {
    // Over RTT, room for the whole frame first (a few events per run).
    #[cfg(feature = "rtt")]
    crate::rtt::drain(link);
    let _ = link.send_trace2(TRACE2_SOURCE, clock::now(), ev);
}
