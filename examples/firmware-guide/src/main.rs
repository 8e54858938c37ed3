//! docs/firmware-guide.md's "Five minutes" as a firmware: the statics in
//! `trace.rs`, the attributes and the idle loop's calls here, the board's
//! registers in `board.rs` (a HAL's job in a real firmware). Built with the
//! `trace` feature (the default) and without it, the same workload: the
//! baseline a tracing cost is measured against. It prints the calls it made on
//! the semihosting stderr, for `.ci/steps/firmware-guide.sh` to hold against
//! the trace, and ends QEMU through semihosting.
#![no_std]
#![no_main]

#[cfg_attr(not(feature = "trace"), allow(dead_code))]
mod board;
#[cfg(feature = "trace")]
mod trace;

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m_rt::entry;
use cortex_m_semihosting::debug::{exit, EXIT_FAILURE, EXIT_SUCCESS};
use cortex_m_semihosting::heprintln;
#[cfg(feature = "trace")]
use flightrec_core::link::LinkWriter;

/// Main-loop iterations of the workload.
const ITERATIONS: u32 = 1000;

/// Calls made, counted by the firmware itself: `fib`, `filter`. One writer
/// each, so a load and a store count (thumbv6m has no read-modify-write atomics).
static CALLS: [AtomicU32; 2] = [const { AtomicU32::new(0) }; 2];

fn count(i: usize) {
    CALLS[i].store(CALLS[i].load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

#[cfg_attr(feature = "trace", flightrec::instrument)]
fn fib(n: u32) -> u32 {
    count(0);
    if n < 2 {
        return n;
    }
    fib(n - 1).wrapping_add(fib(n - 2))
}

#[cfg_attr(feature = "trace", flightrec::instrument)]
fn filter(state: &mut u32, x: u32) -> u32 {
    count(1);
    *state = (*state * 7 + x) / 8;
    *state
}

#[entry]
fn main() -> ! {
    board::start_clock();
    #[cfg(feature = "trace")]
    let mut outlets = trace::start(); // one outlet per ring: its link source and its consumer
    #[cfg(feature = "trace")]
    let mut link = LinkWriter::new(board::Uart::take()); // any embedded_io::Write: UART, USB CDC, RTT

    let mut state = 0;
    for i in 0..ITERATIONS {
        // ... the main loop's work, instrumented functions recording ...
        black_box(filter(&mut state, fib(3 + i % 6)));
        #[cfg(feature = "trace")]
        link.flush_each(&mut outlets); // at most one buffer per ring
    }

    // The end of a run, if it has one: every record, then the final counters.
    #[cfg(feature = "trace")]
    let _ = link.finish(&mut outlets, || trace::TRACE.flush_all());

    let n = |i: usize| CALLS[i].load(Ordering::Relaxed);
    heprintln!("calls: fib {} filter {}", n(0), n(1));
    exit(EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
