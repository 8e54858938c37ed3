//! flightrec on a Cortex-M3 under QEMU (machine `lm3s6965evb`).
//!
//! A main loop calls a few instrumented functions (one of them recursive) while the
//! SysTick interrupt, instrumented too, fires every millisecond. Thread mode and the
//! handler each record into their own streaming ring in static memory; after every
//! iteration the main loop flushes at most one buffer per ring over UART0 as link
//! frames, with a few Trace2 event lines. At the end it drains the rings, sends the
//! final counters and ends QEMU through semihosting.
//!
//! Built without the `trace` feature, the same workload runs uninstrumented: the
//! baseline for the flash and RAM that flightrec adds (`docs/firmware-guide.md`);
//! without `trace2`, it records FDR traces but sends no Trace2 lines.
#![no_std]
#![no_main]

mod clock;
#[cfg(feature = "rtt")]
mod rtt;
#[cfg(feature = "trace")]
mod trace;
mod uart;

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::Peripherals;
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::debug::{exit, EXIT_FAILURE, EXIT_SUCCESS};

/// Main-loop iterations of the workload.
const ITERATIONS: u32 = 3000;

/// Function ids (see `names.txt`).
mod ids {
    pub const MAIN_LOOP: u32 = 1;
    pub const SENSOR_READ: u32 = 2;
    pub const FILTER: u32 = 3;
    pub const CHECKSUM: u32 = 4;
    pub const FIB: u32 = 5;
}

/// Records the entry and exit of `body` as function `ID`.
#[cfg(feature = "trace")]
macro_rules! traced {
    ($t:expr, $id:expr, $body:expr) => {{
        const F: flightrec_core::fdr::FunctionId = trace::id($id);
        $t.enter(F);
        let r = $body;
        $t.exit(F);
        r
    }};
}

#[cfg(not(feature = "trace"))]
macro_rules! traced {
    ($t:expr, $id:expr, $body:expr) => {{
        let _ = &$t;
        let _ = $id;
        $body
    }};
}

#[cfg(feature = "trace")]
type T = trace::Tracer;
/// The baseline build's stand-in for the tracer: nothing.
#[cfg(not(feature = "trace"))]
struct T;

static SAMPLE: AtomicU32 = AtomicU32::new(1);

fn sensor_read(t: &mut T) -> u32 {
    traced!(t, ids::SENSOR_READ, {
        let s = SAMPLE.load(Ordering::Relaxed);
        s.wrapping_mul(1_103_515_245).wrapping_add(12_345) >> 8
    })
}

fn filter(t: &mut T, state: &mut u32, x: u32) -> u32 {
    traced!(t, ids::FILTER, {
        *state = (*state * 7 + x) / 8;
        *state
    })
}

fn checksum(t: &mut T, data: &[u32]) -> u32 {
    traced!(t, ids::CHECKSUM, {
        data.iter()
            .fold(0x811c_9dc5u32, |h, &v| (h ^ v).wrapping_mul(0x0100_0193))
    })
}

fn fib(t: &mut T, n: u32) -> u32 {
    traced!(t, ids::FIB, {
        if n < 2 {
            n
        } else {
            fib(t, n - 1).wrapping_add(fib(t, n - 2))
        }
    })
}

#[entry]
fn main() -> ! {
    let Some(p) = Peripherals::take() else {
        exit(EXIT_FAILURE);
        loop {
            cortex_m::asm::wfi();
        }
    };
    let uart = uart::Uart0::take();
    #[cfg(feature = "trace")]
    let mut t: T = trace::Tracer::init(uart);
    #[cfg(not(feature = "trace"))]
    let mut t = {
        let _ = uart;
        T
    };
    #[cfg(feature = "trace2")]
    {
        use flightrec_core::trace2::Event;
        t.trace2(&Event::Version { exe: b"0.1.0" });
        t.trace2(&Event::RegionEnter {
            category: Some(b"firmware"),
            label: Some(b"workload"),
            msg: None,
        });
    }
    clock::start(p.SYST);
    #[cfg(feature = "trace2")]
    let start = clock::now();

    let mut state = 0;
    let mut window = [0u32; 8];
    let mut acc = 0u32;
    for i in 0..ITERATIONS {
        acc = acc.wrapping_add(traced!(t, ids::MAIN_LOOP, {
            let x = sensor_read(&mut t);
            SAMPLE.store(x | 1, Ordering::Relaxed);
            window[(i % 8) as usize] = filter(&mut t, &mut state, x);
            let c = checksum(&mut t, &window);
            c ^ fib(&mut t, 3 + i % 5)
        }));
        #[cfg(feature = "trace")]
        t.flush_step();
    }
    black_box(acc);

    #[cfg(feature = "trace2")]
    {
        use flightrec_core::trace2::Event;
        let t_rel = (clock::now() - start) / u64::from(clock::CLOCK_HZ / 1_000_000);
        t.trace2(&Event::RegionLeave {
            t_rel,
            category: Some(b"firmware"),
            label: Some(b"workload"),
            msg: None,
        });
        t.trace2(&Event::Exit { code: 0 });
    }
    #[cfg(feature = "trace")]
    t.finish();
    exit(EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

/// What the SysTick handler keeps between runs: its recorder.
#[cfg(feature = "trace")]
type IrqState = trace::IrqTracer;
#[cfg(not(feature = "trace"))]
type IrqState = ();

#[exception]
fn SysTick() {
    // cortex-m-rt hands the handler its own `&mut` to this (no `unsafe` here).
    static mut STATE: Option<IrqState> = None;
    clock::tick();
    let body = || {
        black_box(SAMPLE.load(Ordering::Relaxed));
    };
    #[cfg(feature = "trace")]
    STATE
        .get_or_insert_with(trace::IrqTracer::take)
        .systick(body);
    #[cfg(not(feature = "trace"))]
    {
        let _ = &STATE;
        body();
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
