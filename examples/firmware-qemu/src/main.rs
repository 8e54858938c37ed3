//! flightrec on a Cortex-M3 under QEMU (machine `lm3s6965evb`).
//!
//! A main loop calls a few functions marked `#[flightrec::instrument]` (one of them
//! recursive) while the SysTick interrupt, instrumented too, fires every
//! millisecond. Thread mode and the handler each record into their own streaming
//! ring in static memory (the global recorder in `trace.rs` picks the ring of the
//! running context); after every iteration the main loop flushes at most one
//! buffer per ring over UART0 (or RTT, `rtt.rs`) as link frames, with a few compact
//! Trace2 events (`trace2.rs`: version, a region, data, printf, exit) from which
//! `flightrec recv` writes git's event lines. At the end it stops SysTick's interrupt, drains the
//! rings, sends the final counters and ends QEMU through semihosting. The function names are in the ELF only (`.flightrec`):
//! `flightrec recv --elf` writes them beside each trace for `llvm-xray -m`.
//!
//! Built without the `trace` feature, the same workload runs uninstrumented: the
//! baseline for the flash and RAM that flightrec adds (`docs/firmware-guide.md`);
//! without `trace2`, it records FDR traces but sends no Trace2 events. Feature
//! `trace2-lines` (instead of `trace2`) formats the lines on the firmware
//! (`trace2_lines.rs`), to measure what that costs.
#![no_std]
#![no_main]

mod clock;
#[cfg(feature = "rtt")]
mod rtt;
#[cfg(feature = "trace")]
mod trace;
#[cfg(feature = "trace2")]
mod trace2;
#[cfg(feature = "trace2-lines")]
mod trace2_lines;
mod uart;

#[cfg(all(feature = "trace", not(feature = "rtt")))]
use trace::{finish, flush};
#[cfg(feature = "rtt")]
use {rtt::finish, rtt::flush};

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::Peripherals;
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::debug::{exit, EXIT_FAILURE, EXIT_SUCCESS};

/// Main-loop iterations of the workload.
const ITERATIONS: u32 = 3000;

static SAMPLE: AtomicU32 = AtomicU32::new(1);

#[cfg_attr(feature = "trace", flightrec::instrument)]
fn sensor_read() -> u32 {
    let s = SAMPLE.load(Ordering::Relaxed);
    s.wrapping_mul(1_103_515_245).wrapping_add(12_345) >> 8
}

#[cfg_attr(feature = "trace", flightrec::instrument)]
fn filter(state: &mut u32, x: u32) -> u32 {
    *state = (*state * 7 + x) / 8;
    *state
}

#[cfg_attr(feature = "trace", flightrec::instrument)]
fn checksum(data: &[u32]) -> u32 {
    data.iter()
        .fold(0x811c_9dc5u32, |h, &v| (h ^ v).wrapping_mul(0x0100_0193))
}

#[cfg_attr(feature = "trace", flightrec::instrument)]
fn fib(n: u32) -> u32 {
    if n < 2 {
        return n;
    }
    fib(n - 1).wrapping_add(fib(n - 2))
}

/// One iteration of the main loop.
fn step(i: u32, state: &mut u32, window: &mut [u32; 8]) -> u32 {
    #[cfg(feature = "trace")]
    let _s = flightrec::scope!("main_loop");
    let x = sensor_read();
    SAMPLE.store(x | 1, Ordering::Relaxed);
    window[(i % 8) as usize] = filter(state, x);
    let c = checksum(window);
    c ^ fib(3 + i % 5)
}

#[entry]
fn main() -> ! {
    let Some(mut p) = Peripherals::take() else {
        exit(EXIT_FAILURE);
        loop {
            cortex_m::asm::wfi();
        }
    };
    let uart = uart::Uart0::take();
    #[cfg(feature = "rtt")]
    let uart = rtt::sink(uart);
    #[cfg(feature = "trace")]
    let mut link = flightrec_core::link::LinkWriter::new(uart);
    #[cfg(feature = "trace")]
    let mut rings = trace::start();
    #[cfg(not(feature = "trace"))]
    let _ = uart;
    #[cfg(feature = "trace2")]
    {
        use flightrec_core::link::trace2::{RegionEnter, Version};
        use flightrec_core::trace2_str;
        trace2::start(&mut link);
        trace2::send(
            &mut link,
            &Version {
                exe: trace2_str!("0.1.0"),
            },
        );
        let ev = RegionEnter {
            category: Some(trace2_str!("firmware")),
            label: Some(trace2_str!("workload")),
            msg: None,
        };
        trace2::send(&mut link, &ev);
    }
    #[cfg(feature = "trace2-lines")]
    {
        use flightrec_core::trace2::Event;
        trace2_lines::send(&mut link, &Event::Version { exe: b"0.1.0" });
        let (category, label) = (Some(&b"firmware"[..]), Some(&b"workload"[..]));
        let msg = None;
        trace2_lines::send(
            &mut link,
            &Event::RegionEnter {
                category,
                label,
                msg,
            },
        );
    }
    clock::start(&mut p.SYST);
    #[cfg(feature = "trace2-lines")]
    let start = clock::now();

    let mut state = 0;
    let mut window = [0u32; 8];
    let mut acc = 0u32;
    for i in 0..ITERATIONS {
        acc = acc.wrapping_add(step(i, &mut state, &mut window));
        #[cfg(feature = "trace")]
        flush(&mut link, &mut rings);
    }
    black_box(acc);

    #[cfg(feature = "trace2")]
    {
        use flightrec_core::link::trace2::{Data, DataInt, Exit, Printf, RegionLeave};
        use flightrec_core::trace2_str;
        let (category, key) = (trace2_str!("firmware"), trace2_str!("iterations"));
        let value = i64::from(ITERATIONS);
        trace2::send(
            &mut link,
            &DataInt {
                category,
                key,
                value,
            },
        );
        let (key, value) = (trace2_str!("clock"), trace2_str!("systick"));
        trace2::send(
            &mut link,
            &Data {
                category,
                key,
                value,
            },
        );
        let msg = Some(trace2_str!("workload done"));
        trace2::send(&mut link, &Printf { msg });
        let ev = RegionLeave {
            category: Some(category),
            label: Some(trace2_str!("workload")),
            msg: None,
        };
        trace2::send(&mut link, &ev);
        trace2::send(&mut link, &Exit { code: 0 });
    }
    #[cfg(feature = "trace2-lines")]
    {
        use flightrec_core::trace2::Event;
        let t_rel = (clock::now() - start) / u64::from(clock::CLOCK_HZ / 1_000_000);
        let (category, label) = (Some(&b"firmware"[..]), Some(&b"workload"[..]));
        let msg = None;
        trace2_lines::send(
            &mut link,
            &Event::RegionLeave {
                t_rel,
                category,
                label,
                msg,
            },
        );
        trace2_lines::send(&mut link, &Event::Exit { code: 0 });
    }
    #[cfg(feature = "trace")]
    p.SYST.disable_interrupt();
    #[cfg(feature = "trace")]
    finish(&mut link, &mut rings);
    exit(EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

/// The SysTick handler. It counts the clock's period first: `SysTickClock` reads
/// a time that is a period short inside its own handler until `tick` has run, so
/// the instrumented work is a function the handler calls (a handler that keeps
/// no clock can carry `#[flightrec::instrument]` itself, above `#[exception]`).
/// Its records go to the handler's own ring.
#[exception]
fn SysTick() {
    clock::tick();
    on_tick();
}

#[cfg_attr(feature = "trace", flightrec::instrument)]
fn on_tick() {
    black_box(SAMPLE.load(Ordering::Relaxed));
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
