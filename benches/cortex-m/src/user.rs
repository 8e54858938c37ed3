//! The user's path (feature `user-path`): firmware as docs/firmware-guide.md tells a
//! user to write it. Functions marked `#[flightrec::instrument]` called from a
//! loop, beside the same functions unmarked; the guide's clocks (on thumbv6m an
//! nRF51-style 16-bit timer read by a capture, a store to its capture task then a
//! load of its capture register, extended to 64 bits by `TimerClock`; on thumbv7em
//! the cycle counter through `DwtClock`); the guide's rings (4 × 512 B); the link
//! onto a transmit register (a store per byte) and onto a DMA channel.
//!
//! Its own build, because a firmware has one global recorder: the one here reads
//! the guide's clock, where `paths.rs`'s reads the bench's 32-bit counter.

use core::convert::Infallible;
use core::hint::black_box;
use core::ptr::write_volatile;

// Links the critical-section implementation.
use cortex_m as _;

use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Consumer, Policy, Recorder, RecorderConfig};
use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;
use flightrec_core::link::{LinkWriter, Source};

use crate::{mark, DMA_ADDR, DMA_LEN, UART_DATA};

/// The number of entries in [`ENTRIES`].
pub const COUNT: usize = 12;
/// Every user's-path entry.
pub const ENTRIES: [extern "C" fn(u32) -> u32; COUNT] = [
    bench_user_plain,
    bench_user_attribute,
    bench_user_plain_512,
    bench_user_attribute_512,
    bench_user_direct,
    bench_user_direct_512,
    bench_user_flush_one,
    bench_user_flush_one_dma,
    bench_user_fill_512,
    bench_user_other,
    bench_user_plain_1k,
    bench_user_attribute_1k,
];

#[cfg(not(target_has_atomic = "32"))]
/// The capture task of the 16-bit timer (nRF51's TIMERn TASKS_CAPTURE[0]):
/// writing 1 copies the counter into [`TIMER_CC`].
pub const TIMER_CAPTURE: usize = 0x4000_0018;
#[cfg(not(target_has_atomic = "32"))]
/// The capture register (CC[0]): the counter's value at the last capture.
pub const TIMER_CC: usize = 0x4000_001C;

/// The guide's M0 clock read: a capture, then the captured value (as
/// `examples/firmware-microbit`'s `board::clock_now`).
#[cfg(not(target_has_atomic = "32"))]
fn clock_now() -> u32 {
    // SAFETY: TIMER_CAPTURE and TIMER_CC are a writable and a readable 32-bit
    // register on the emulated machine.
    unsafe {
        write_volatile(TIMER_CAPTURE as *mut u32, 1);
        core::ptr::read_volatile(TIMER_CC as *const u32)
    }
}

/// The guide's clock on a Cortex-M0: a 16-bit timer at 1 MHz, extended to 64 bits.
#[cfg(not(target_has_atomic = "32"))]
static CLOCK: flightrec_core::clock::TimerClock =
    flightrec_core::clock::TimerClock::new(clock_now, 16, 1_000_000);

/// The guide's clock on a Cortex-M4: the cycle counter, extended to 64 bits.
#[cfg(target_has_atomic = "32")]
static CLOCK: flightrec_core::clock::DwtClock = flightrec_core::clock::DwtClock::new(64_000_000);

fn start_clock() {
    #[cfg(target_has_atomic = "32")]
    CLOCK.enable();
}

flightrec_core::static_clock!(
    /// `CLOCK` as a zero-sized handle, as the guide declares it.
    Time = CLOCK
);

/// The global recorder, as the guide declares it (room for thread mode and one
/// interrupt priority, as the microbit example).
static TRACE: ContextRecorders<2, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);
flightrec_core::global_recorder!(TRACE);

/// A ring that holds a whole run (2 × 16 KiB): the record without buffer switches.
static STEADY: StaticRing<2, { 16 * 1024 }, FlightRecorder> =
    StaticRing::new(Policy::FlightRecorder);
/// The guide's ring, 4 × 512 B, keeping the newest buffers (nothing drains it in
/// a run, so it switches buffers as it goes).
static GUIDE: StaticRing<4, 512, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
/// 4 × 1 KiB, keeping the newest buffers: the buffer size at which the switch
/// share is compared with 512 B.
static GUIDE_1K: StaticRing<4, 1024, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
/// The guide's ring as the example streams it, 4 × 512 B, for the link entries.
static STREAM: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);

const ID: FunctionId = match FunctionId::new(5) {
    Ok(f) => f,
    Err(_) => panic!("function ids have 28 bits"),
};

fn config() -> RecorderConfig {
    RecorderConfig::new(WriterConfig::new(1).with_pid(1), 1_000_000)
}

/// A function of a firmware, unmarked. Out of line, as its marked twin; its
/// result goes through `black_box`, as a firmware's work has effects, so that the
/// marked twin's body stays between its enter and its exit.
#[inline(never)]
fn step(state: u32, x: u32) -> u32 {
    black_box(state.wrapping_mul(7).wrapping_add(x) >> 3)
}

/// The same function marked, as a user marks it.
#[flightrec::instrument]
#[inline(never)]
fn step_traced(state: u32, x: u32) -> u32 {
    black_box(state.wrapping_mul(7).wrapping_add(x) >> 3)
}

/// A second marked function, as a firmware has many: with one alone, LTO folds its
/// id into the attribute's shared entry points and the call site loads none.
#[flightrec::instrument]
#[inline(never)]
fn other_traced(x: u32) -> u32 {
    black_box(x ^ 0x5a)
}

/// Calls [`other_traced`] `n` times (not counted: it keeps a second id in the
/// attribute's entry points).
#[no_mangle]
pub extern "C" fn bench_user_other(n: u32) -> u32 {
    if !install(&STEADY) {
        return u32::MAX;
    }
    let mut x = 0;
    for _ in 0..n {
        x = other_traced(x);
    }
    x
}

/// Installs `ring`'s recorder for thread mode; false if that failed.
fn install<const N: usize, const B: usize>(
    ring: &'static StaticRing<N, B, FlightRecorder>,
) -> bool {
    start_clock();
    match ring.take_recorder(config()) {
        Ok(rec) => TRACE.install(Context::THREAD_MODE, rec).is_ok(),
        Err(_) => false,
    }
}

/// The records refused or not routed.
fn lost() -> u32 {
    let s = TRACE.stats();
    s.refused + s.unrouted
}

/// `n` calls of [`step`] from a loop, with `ring` installed (as the marked entry).
#[inline(always)]
fn plain_calls<const N: usize, const B: usize>(
    ring: &'static StaticRing<N, B, FlightRecorder>,
    n: u32,
) -> u32 {
    if !install(ring) {
        return u32::MAX;
    }
    let mut state = 1;
    for i in 0..n {
        state = step(state, black_box(i));
    }
    black_box(state);
    ring.stats().buffers_finished + lost()
}

/// `n` calls of [`step_traced`] from a loop: an enter and an exit record each.
#[inline(always)]
fn traced_calls<const N: usize, const B: usize>(
    ring: &'static StaticRing<N, B, FlightRecorder>,
    n: u32,
) -> u32 {
    if !install(ring) {
        return u32::MAX;
    }
    let mut state = 1;
    for i in 0..n {
        state = step_traced(state, black_box(i));
    }
    black_box(state);
    // Every record written: none refused or not routed.
    if lost() != 0 {
        return u32::MAX;
    }
    ring.stats().buffers_finished
}

/// `n` calls of the unmarked function (the steady ring installed). Returns the
/// buffers finished plus the records lost (0).
#[no_mangle]
pub extern "C" fn bench_user_plain(n: u32) -> u32 {
    plain_calls(&STEADY, n)
}

/// `n` calls of the marked function into the steady ring. Returns the buffers
/// finished (0: no switch).
#[no_mangle]
pub extern "C" fn bench_user_attribute(n: u32) -> u32 {
    traced_calls(&STEADY, n)
}

/// [`bench_user_plain`] with the guide's 4 × 512 B ring installed.
#[no_mangle]
pub extern "C" fn bench_user_plain_512(n: u32) -> u32 {
    plain_calls(&GUIDE, n)
}

/// `n` calls of the marked function into the guide's 4 × 512 B ring. Returns the
/// buffers finished.
#[no_mangle]
pub extern "C" fn bench_user_attribute_512(n: u32) -> u32 {
    traced_calls(&GUIDE, n)
}

/// [`bench_user_plain`] with a 4 × 1 KiB ring installed.
#[no_mangle]
pub extern "C" fn bench_user_plain_1k(n: u32) -> u32 {
    plain_calls(&GUIDE_1K, n)
}

/// `n` calls of the marked function into a 4 × 1 KiB ring. Returns the buffers
/// finished.
#[no_mangle]
pub extern "C" fn bench_user_attribute_1k(n: u32) -> u32 {
    traced_calls(&GUIDE_1K, n)
}

/// `n` enter + exit pairs through a recorder called directly, each record's time
/// from the guide's clock.
#[inline(always)]
fn direct_pairs<const N: usize, const B: usize>(
    ring: &'static StaticRing<N, B, FlightRecorder>,
    n: u32,
) -> u32 {
    start_clock();
    let Ok(mut rec) = ring.take_recorder(config()) else {
        return u32::MAX;
    };
    for _ in 0..n {
        let _ = rec.enter(ID, CLOCK.now());
        let _ = rec.exit(ID, CLOCK.now());
    }
    rec.stats().buffers_finished
}

/// Direct pairs into the steady ring. Returns the buffers finished (0).
#[no_mangle]
pub extern "C" fn bench_user_direct(n: u32) -> u32 {
    direct_pairs(&STEADY, n)
}

/// Direct pairs into the guide's 4 × 512 B ring. Returns the buffers finished.
#[no_mangle]
pub extern "C" fn bench_user_direct_512(n: u32) -> u32 {
    direct_pairs(&GUIDE, n)
}

/// The transmit register, one store per byte, no wait.
struct Uart;

impl embedded_io::ErrorType for Uart {
    type Error = Infallible;
}

impl embedded_io::Write for Uart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        for &b in buf {
            // SAFETY: UART_DATA is a writable register on the emulated machine.
            unsafe { write_volatile(UART_DATA as *mut u32, u32::from(b)) }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// A transmit DMA channel: each write hands the block over (two stores).
struct Dma;

impl embedded_io::ErrorType for Dma {
    type Error = Infallible;
}

impl embedded_io::Write for Dma {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        // SAFETY: DMA_ADDR and DMA_LEN are writable registers on the emulated
        // machine, which copies the block when the length is written.
        unsafe {
            write_volatile(DMA_ADDR as *mut u32, buf.as_ptr() as u32);
            write_volatile(DMA_LEN as *mut u32, buf.len() as u32);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// Records enter + exit pairs at the guide's clock until the ring has a finished
/// buffer; returns the records made (the last went into the next buffer).
#[inline(never)]
fn fill_buffer(rec: &mut Recorder<'_, '_>, consumer: &Consumer<'_, '_>) -> u32 {
    let mut records = 0;
    while consumer.pending() == 0 {
        let _ = rec.enter(ID, CLOCK.now());
        records += 1;
        if consumer.pending() == 0 {
            let _ = rec.exit(ID, CLOCK.now());
            records += 1;
        }
    }
    records
}

/// The guide's streaming 4 × 512 B ring and its link onto `sink`: `n` times,
/// fills a buffer, then sends it with `LinkWriter::flush_one` between marks.
/// Returns the function records in the sent buffers.
#[inline(always)]
fn flush_one_onto<W: embedded_io::Write>(n: u32, sink: W) -> u32 {
    start_clock();
    let cfg = config();
    let mut source = Source::new(1, cfg.file_header(512));
    let Ok((mut rec, mut consumer)) = STREAM.split(cfg) else {
        return 0;
    };
    let mut link = LinkWriter::new(sink);
    let mut records = 0u32;
    let mut sent = 0u32;
    for _ in 0..n {
        records += fill_buffer(&mut rec, &consumer);
        sent = records - 1;
        mark(true);
        let _ = link.flush_one(&mut source, &mut consumer);
        mark(false);
    }
    sent
}

/// The link onto the transmit register, a store per byte.
#[no_mangle]
pub extern "C" fn bench_user_flush_one(n: u32) -> u32 {
    flush_one_onto(n, Uart)
}

/// The link onto the DMA channel, two stores per block.
#[no_mangle]
pub extern "C" fn bench_user_flush_one_dma(n: u32) -> u32 {
    flush_one_onto(n, Dma)
}

/// Fills one 512 B buffer of the guide's streaming ring and returns the function
/// records it holds.
#[no_mangle]
pub extern "C" fn bench_user_fill_512(_n: u32) -> u32 {
    start_clock();
    let Ok((mut rec, consumer)) = STREAM.split(config()) else {
        return 0;
    };
    let mut records = 0u32;
    while consumer.pending() == 0 {
        let _ = rec.enter(ID, CLOCK.now());
        records += 1;
    }
    records - 1
}
