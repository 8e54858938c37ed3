//! flightrec on a Cortex-M0 under QEMU (machine `microbit`, nRF51822).
//!
//! A main loop calls a few functions marked `#[flightrec::instrument]` (one of
//! them recursive) while TIMER0's interrupt, instrumented too, fires every
//! millisecond. The clock is TIMER1, a 16-bit hardware timer at 1 MHz, through
//! flightrec's `TimerClock`. Thread mode and the interrupt each record into their
//! own ring (`trace.rs`); after every iteration the main loop sends at most one
//! buffer per ring over UART0, or over SEGGER RTT with the `rtt` feature. At the
//! end it sends the rest and the counters, prints the calls it made and the
//! interrupts it took on the semihosting stderr (for `.ci/steps/firmware-microbit.sh`
//! to hold against the trace) and ends QEMU through semihosting.
#![no_std]
#![no_main]

mod board;
mod trace;

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use board::interrupt;
use cortex_m_rt::entry;
use cortex_m_semihosting::debug::{exit, EXIT_FAILURE, EXIT_SUCCESS};
use cortex_m_semihosting::heprintln;

/// Main-loop iterations of the workload.
const ITERATIONS: u32 = 2000;

static SAMPLE: AtomicU32 = AtomicU32::new(1);

/// Calls the firmware made, counted by itself: `sensor_read`, `filter`,
/// `checksum`, `fib` (thread mode), and TIMER0 interrupts. Each counter has one
/// writer, so a load and a store count (thumbv6m has no read-modify-write
/// atomics).
static CALLS: [AtomicU32; 5] = [const { AtomicU32::new(0) }; 5];
const TIMER0_CALLS: usize = 4;

fn count(i: usize) {
    CALLS[i].store(CALLS[i].load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

#[flightrec::instrument]
fn sensor_read() -> u32 {
    count(0);
    let s = SAMPLE.load(Ordering::Relaxed);
    s.wrapping_mul(1_103_515_245).wrapping_add(12_345) >> 8
}

#[flightrec::instrument]
fn filter(state: &mut u32, x: u32) -> u32 {
    count(1);
    *state = (*state * 7 + x) / 8;
    *state
}

#[flightrec::instrument]
fn checksum(data: &[u32]) -> u32 {
    count(2);
    data.iter()
        .fold(0x811c_9dc5u32, |h, &v| (h ^ v).wrapping_mul(0x0100_0193))
}

#[flightrec::instrument]
fn fib(n: u32) -> u32 {
    count(3);
    if n < 2 {
        return n;
    }
    fib(n - 1).wrapping_add(fib(n - 2))
}

/// One iteration of the main loop.
fn step(i: u32, state: &mut u32, window: &mut [u32; 8]) -> u32 {
    let x = sensor_read();
    SAMPLE.store(x | 1, Ordering::Relaxed);
    window[(i % 8) as usize] = filter(state, x);
    let c = checksum(window);
    c ^ fib(3 + i % 5)
}

/// TIMER0's interrupt handler: a real NVIC interrupt (IRQ 8), instrumented. Its
/// records go to the ring of its priority.
#[flightrec::instrument]
#[interrupt]
fn TIMER0() {
    board::ack_tick();
    count(TIMER0_CALLS);
    black_box(SAMPLE.load(Ordering::Relaxed));
}

#[entry]
fn main() -> ! {
    board::start_clock();
    #[cfg(not(feature = "rtt"))]
    let sink = board::Uart::take();
    #[cfg(feature = "rtt")]
    let sink = flightrec_core::link::rtt::take(flightrec_core::link::rtt::Mode::Blocking)
        .expect("the RTT writer is taken once");
    let mut link = flightrec_core::link::LinkWriter::new(sink);
    let mut rings = trace::start();
    board::start_ticks();

    let mut state = 0;
    let mut window = [0u32; 8];
    let mut acc = 0u32;
    for i in 0..ITERATIONS {
        acc = acc.wrapping_add(step(i, &mut state, &mut window));
        link.flush_each(&mut rings); // at most one buffer per ring
    }
    black_box(acc);

    board::stop_ticks();
    // Every record (the recorders flushed twice, for a loss marker that found every
    // buffer waiting), then each ring's final counters.
    let _ = link.finish(&mut rings, || trace::TRACE.flush_all());
    // Over RTT, until the host has read everything.
    #[cfg(feature = "rtt")]
    while link.sink_mut().pending() > 0 {}

    let n = |i: usize| CALLS[i].load(Ordering::Relaxed);
    heprintln!(
        "calls: sensor_read {} filter {} checksum {} fib {} TIMER0 {}",
        n(0),
        n(1),
        n(2),
        n(3),
        n(TIMER0_CALLS)
    );
    exit(EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
