//! Trace2 event lines formatted on the firmware (feature `trace2-lines`, the way
//! before compact events): the workload's version, region and exit events, in
//! git's event format, each line a link frame. It links the core's formatters
//! (about 32 KB of flash), and is kept to measure that against `trace2.rs`.

use flightrec_core::link::LinkWriter;
use flightrec_core::trace2::{Event, Format, LineCtx, Target};

use crate::clock;

/// The link's sink: UART0, or the RTT up-channel (feature `rtt`).
#[cfg(not(feature = "rtt"))]
type Sink = crate::uart::Uart0;
#[cfg(feature = "rtt")]
type Sink = crate::rtt::Sink;

/// Source id of the Trace2 lines.
const TRACE2_SOURCE: u32 = 0;

/// Sends one Trace2 event line (event format).
pub fn send(link: &mut LinkWriter<Sink>, ev: &Event<'_>) {
    let mut buf = [0u8; 256];
    let t_abs = clock::now() / u64::from(clock::CLOCK_HZ / 1_000_000);
    let ctx = LineCtx {
        t_abs,
        ..LineCtx::new(b"20250101T000000.000000Z-Hqemu-P00000001", b"main")
    };
    let format = Format::new(Target::Event, false);
    if let Ok(n) = format.write_line(&ctx, ev, &mut buf) {
        // Over RTT, room for the whole line first (a few lines per run).
        #[cfg(feature = "rtt")]
        crate::rtt::drain(link);
        let _ = link.send_trace2_line(TRACE2_SOURCE, &buf[..n]);
    }
}
