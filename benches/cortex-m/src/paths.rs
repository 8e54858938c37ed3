//! The flightrec entries: each builds its ring over static storage, then runs `n`
//! operations. Ring setup is a fixed cost the runner removes (it runs `n` and `2n`
//! and takes the difference) or leaves outside the marks.

use core::convert::Infallible;
use core::sync::atomic::{AtomicU32, Ordering};

// Links the critical-section implementation.
use core::ptr::{addr_of_mut, write_volatile};
use cortex_m as _;

use flightrec_core::clock::{TimerClock, Timestamp};
use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionAction;
use flightrec_core::fdr::FunctionId;
use flightrec_core::global::record_function;
use flightrec_core::link::{LinkWriter, Source};

use crate::{mark, now, COUNTER_SET, DMA_ADDR, DMA_LEN, UART_DATA};

/// The number of entries in [`ENTRIES`].
pub const COUNT: usize = 14;
/// Every flightrec entry.
pub const ENTRIES: [extern "C" fn(u32) -> u32; COUNT] = [
    bench_enter,
    bench_pair,
    bench_switch,
    bench_flush_one,
    bench_flush_one_dma,
    bench_flush_one_dma_wide,
    bench_fill_1k,
    bench_context_pair,
    bench_pair_wrapped,
    bench_pair_extended,
    bench_context_switch,
    bench_context_pair_handler,
    bench_pair_extended_wrapped,
    bench_flush_one_dma_example,
];

/// Storage of every ring (one entry runs at a time): 64 KiB, 8-aligned as a
/// `StaticRing`'s (thumbv6m stores records and a buffer's first records as
/// words only where the buffers are 4-aligned).
#[repr(C, align(8))]
struct Storage([u8; 64 * 1024]);
static mut STORAGE: Storage = Storage([0; 64 * 1024]);
/// Slots of the steady ring (2 × 32 KiB: no buffer switch in a run).
static BIG_SLOTS: [Slot; 2] = [Slot::NEW; 2];
/// Slots of the small ring (4 × 1 KiB, the firmware example's geometry).
static SMALL_SLOTS: [Slot; 4] = [Slot::NEW; 4];

const ID: FunctionId = match FunctionId::new(5) {
    Ok(f) => f,
    Err(_) => panic!("function ids have 28 bits"),
};

fn ts() -> Timestamp {
    Timestamp { tsc: now(), cpu: 0 }
}

fn config() -> RecorderConfig {
    RecorderConfig::new(WriterConfig::new(1).with_pid(1), 48_000_000)
}

/// A ring over [`STORAGE`]: `big` gives 2 × 32 KiB, otherwise 4 × 1 KiB.
fn ring(big: bool, policy: Policy) -> Ring<'static> {
    // SAFETY: entries run one at a time and each makes one ring, so this is the only
    // reference to STORAGE while it lives.
    let storage = unsafe { &mut (*addr_of_mut!(STORAGE)).0 };
    let (storage, slots): (&mut [u8], &'static [Slot]) = if big {
        (&mut storage[..], &BIG_SLOTS)
    } else {
        (&mut storage[..4 * 1024], &SMALL_SLOTS)
    };
    Ring::new(storage, slots, policy).unwrap_or_else(|_| panic!())
}

/// `n` function entries, steady state (the run fits in one buffer). Returns the
/// buffers finished, which the runner checks is 0.
#[no_mangle]
pub extern "C" fn bench_enter(n: u32) -> u32 {
    let mut ring = ring(true, Policy::FlightRecorder);
    let (mut rec, _consumer) = ring.split(config());
    for _ in 0..n {
        let _ = rec.enter(ID, ts());
    }
    rec.stats().buffers_finished
}

/// `n` enter + exit pairs, steady state. Returns the buffers finished (0).
#[no_mangle]
pub extern "C" fn bench_pair(n: u32) -> u32 {
    steady_pairs(n, ts)
}

/// `n` enter + exit pairs into the steady ring (2 × 32 KiB, no buffer switch),
/// each record's time from `now`, in line. Returns the buffers finished.
#[inline(always)]
fn steady_pairs(n: u32, now: impl Fn() -> Timestamp) -> u32 {
    let mut ring = ring(true, Policy::FlightRecorder);
    let (mut rec, _consumer) = ring.split(config());
    for _ in 0..n {
        let _ = rec.enter(ID, now());
        let _ = rec.exit(ID, now());
    }
    rec.stats().buffers_finished
}

/// The clock's high word, as a software extension of a 32-bit counter keeps it:
/// 1 here, the counter past its first wrap. Read from memory at each reading, so
/// the compiler cannot fold it.
static HIGH_WORD: AtomicU32 = AtomicU32::new(1);

/// A reading past the clock's first wrap: the high word from memory, the
/// counter's low word.
fn ts_wrapped() -> Timestamp {
    Timestamp {
        tsc: u64::from(HIGH_WORD.load(Ordering::Relaxed)) << 32 | now(),
        cpu: 0,
    }
}

/// `n` enter + exit pairs with readings past the clock's first wrap (a high
/// word of 1), steady state: what a firmware pays once its extended clock has
/// wrapped, where [`bench_pair`]'s readings have a high word of 0. Returns the
/// buffers finished (0).
#[no_mangle]
pub extern "C" fn bench_pair_wrapped(n: u32) -> u32 {
    steady_pairs(n, ts_wrapped)
}

/// `n` enter + exit pairs read from [`SHARED_CLOCK`], the counter extended to
/// 64 bits by the count of half periods every context shares (what
/// `TimerClock`, `DwtClock` give a recorder called directly), steady state:
/// [`bench_pair`] with a clock that keeps its time past the counter's wraps.
/// Returns the buffers finished (0).
#[no_mangle]
pub extern "C" fn bench_pair_extended(n: u32) -> u32 {
    steady_pairs(n, || SHARED_CLOCK.now())
}

/// [`bench_pair_extended`] past the counter's first wrap, where a firmware's
/// extended clock spends all but its first 2^32 ticks: the setup sets the counter
/// to the start of its second half, then to its wrap, reading the clock after
/// each, so the extension counts a period and the readings' high word is 1.
/// Returns the buffers finished (0), or 1 if the high word is not 1.
#[no_mangle]
pub extern "C" fn bench_pair_extended_wrapped(n: u32) -> u32 {
    // The emulator's next reading is the value set plus its step (3).
    for counter in [0x8000_0000u32, 0] {
        // SAFETY: COUNTER_SET is a writable 32-bit register on the emulated machine.
        unsafe { write_volatile(COUNTER_SET as *mut u32, counter.wrapping_sub(3)) };
        let _ = SHARED_CLOCK.now();
    }
    if SHARED_CLOCK.now().tsc >> 32 != 1 {
        return 1;
    }
    steady_pairs(n, || SHARED_CLOCK.now())
}

/// `n` enter + exit pairs into 1 KiB buffers (flight recorder, 4 buffers), so the
/// recorder switches buffers as it goes. Returns the buffers finished.
#[no_mangle]
pub extern "C" fn bench_switch(n: u32) -> u32 {
    let mut ring = ring(false, Policy::FlightRecorder);
    let (mut rec, _consumer) = ring.split(config());
    for _ in 0..n {
        let _ = rec.enter(ID, ts());
        let _ = rec.exit(ID, ts());
    }
    rec.stats().buffers_finished
}

/// The transmit register as an `embedded_io` sink: one store per byte, no wait.
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

/// A transmit DMA channel as an `embedded_io` sink: each write hands the whole
/// block over (its address and length, two stores) and the channel has sent it by
/// the next write, as with a DMA that the driver waits for between blocks.
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

/// A function id whose record's first word takes two varint bytes (ids 8 to
/// 1023), as most of a firmware's instrumented functions have.
const WIDE_ID: FunctionId = match FunctionId::new(300) {
    Ok(f) => f,
    Err(_) => panic!("function ids have 28 bits"),
};

/// A streaming 4 × 1 KiB ring and its link onto `sink`: `n` times, records function
/// records until a buffer is finished, then sends it with `LinkWriter::flush_one`
/// between marks (only the send is counted; the header and counters frames every
/// 16 buffers included). Returns the function records in the sent buffers.
#[inline(always)]
fn flush_one_onto<W: embedded_io::Write>(n: u32, sink: W) -> u32 {
    flush_one_of(n, sink, ID, 0)
}

/// [`flush_one_onto`] with records of function `id` at times from a clock
/// `1 << shift` times as fast as the counter.
#[inline(always)]
fn flush_one_of<W: embedded_io::Write>(n: u32, sink: W, id: FunctionId, shift: u32) -> u32 {
    flush_one_filled(n, sink, |rec, consumer| {
        fill_buffer(rec, consumer, id, shift)
    })
}

/// [`flush_one_onto`] with each buffer's records made by `fill`, which returns
/// how many it made (the last of them went into the next buffer).
#[inline(always)]
fn flush_one_filled<W: embedded_io::Write>(
    n: u32,
    sink: W,
    mut fill: impl FnMut(
        &mut flightrec_core::fdr::ring::Recorder<'_, '_>,
        &flightrec_core::fdr::ring::Consumer<'_, '_>,
    ) -> u32,
) -> u32 {
    let mut ring = ring(false, Policy::Streaming);
    let cfg = config();
    let mut source = Source::new(1, cfg.file_header(ring.buffer_size()));
    let (mut rec, mut consumer) = ring.split(cfg);
    let mut link = LinkWriter::new(sink);
    let mut records = 0u32;
    let mut sent = 0u32;
    for _ in 0..n {
        records += fill(&mut rec, &consumer);
        sent = records - 1;
        mark(true);
        let _ = link.flush_one(&mut source, &mut consumer);
        mark(false);
    }
    sent
}

/// Records enter + exit pairs of `id` until the ring has a finished buffer;
/// returns the records made (the last of which went into the next buffer). One
/// copy for the three link entries, out of line, so that they leave the record
/// path's code in the other entries as it was with one.
#[inline(never)]
fn fill_buffer(
    rec: &mut flightrec_core::fdr::ring::Recorder<'_, '_>,
    consumer: &flightrec_core::fdr::ring::Consumer<'_, '_>,
    id: FunctionId,
    shift: u32,
) -> u32 {
    let mut records = 0;
    while consumer.pending() == 0 {
        let _ = rec.enter(
            id,
            Timestamp {
                tsc: now() << shift,
                cpu: 0,
            },
        );
        records += 1;
        if consumer.pending() == 0 {
            let _ = rec.exit(
                id,
                Timestamp {
                    tsc: now() << shift,
                    cpu: 0,
                },
            );
            records += 1;
        }
    }
    records
}

/// The link onto the transmit register, one store per byte (see
/// [`flush_one_onto`]).
#[no_mangle]
pub extern "C" fn bench_flush_one(n: u32) -> u32 {
    flush_one_onto(n, Uart)
}

/// The link onto the DMA channel, one pair of stores per block: framing and the
/// check without the per-byte transmit (see [`flush_one_onto`]).
#[no_mangle]
pub extern "C" fn bench_flush_one_dma(n: u32) -> u32 {
    flush_one_onto(n, Dma)
}

/// The link onto the DMA channel with two-byte varints: function id 300 and a
/// clock 64 times as fast as the counter, deltas of 192 ticks (128 to 16 383
/// ticks: a few µs to a few hundred µs at tens of MHz) (see [`flush_one_onto`]).
#[no_mangle]
pub extern "C" fn bench_flush_one_dma_wide(n: u32) -> u32 {
    flush_one_of(n, Dma, WIDE_ID, 6)
}

/// One pass of the QEMU example's main loop as its trace shows it (`flightrec
/// dump` of what `bash .ci/steps/link.sh` receives): function id, entry or exit,
/// and the gap from the record before in ticks of its 12.5 MHz clock. The ids
/// are the example's (the low bits of each function's name static): all but
/// one take a two-byte varint, the gaps one byte.
const EXAMPLE_PASS: [(u32, bool, u64); 18] = [
    (97, true, 37),
    (1, true, 26),
    (1, false, 26),
    (147, true, 26),
    (147, false, 26),
    (243, true, 27),
    (243, false, 35),
    (53, true, 28),
    (53, true, 27),
    (53, true, 27),
    (53, false, 26),
    (53, true, 28),
    (53, false, 25),
    (53, false, 27),
    (53, true, 27),
    (53, false, 26),
    (53, false, 26),
    (97, false, 26),
];

/// The link onto the DMA channel with the QEMU example's records
/// ([`EXAMPLE_PASS`] over and over), the mix that `link.sh`'s wire bytes per
/// record measure (see [`flush_one_onto`]).
#[no_mangle]
pub extern "C" fn bench_flush_one_dma_example(n: u32) -> u32 {
    let (mut at, mut tsc) = (0usize, 0u64);
    flush_one_filled(n, Dma, |rec, consumer| {
        fill_example(rec, consumer, &mut at, &mut tsc)
    })
}

/// Records [`EXAMPLE_PASS`] from its record `at` on, at times after `tsc`,
/// until the ring has a finished buffer; returns the records made.
#[inline(never)]
fn fill_example(
    rec: &mut flightrec_core::fdr::ring::Recorder<'_, '_>,
    consumer: &flightrec_core::fdr::ring::Consumer<'_, '_>,
    at: &mut usize,
    tsc: &mut u64,
) -> u32 {
    let mut records = 0;
    while consumer.pending() == 0 {
        let (id, enter, gap) = EXAMPLE_PASS[*at % EXAMPLE_PASS.len()];
        *at += 1;
        *tsc += gap;
        let id = FunctionId::new(id).unwrap_or(ID);
        let ts = Timestamp { tsc: *tsc, cpu: 0 };
        let _ = if enter {
            rec.enter(id, ts)
        } else {
            rec.exit(id, ts)
        };
        records += 1;
    }
    records
}

/// Fills one 1 KiB buffer of a streaming ring with enter + exit pairs and returns the
/// function records it holds (the size of a buffer in records, for the report).
#[no_mangle]
pub extern "C" fn bench_fill_1k(_n: u32) -> u32 {
    let mut ring = ring(false, Policy::Streaming);
    let (mut rec, consumer) = ring.split(config());
    let mut records = 0u32;
    while consumer.pending() == 0 {
        let _ = rec.enter(ID, ts());
        records += 1;
    }
    records - 1
}

/// The clock the context entry shares between contexts: the counter through a
/// `TimerClock` (as firmware reads a hardware timer), extended to 64 bits.
static SHARED_CLOCK: TimerClock = TimerClock::new(read_counter, 32, 48_000_000);

fn read_counter() -> u32 {
    now() as u32
}

flightrec_core::static_clock!(
    /// `SHARED_CLOCK` as a zero-sized clock, so that `CONTEXTS` is in `.bss`.
    Time = SHARED_CLOCK
);

/// The recorders by Cortex-M context (thread mode here), as firmware declares them.
static CONTEXTS: ContextRecorders<2, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);

/// A ring of its own for the context entry: 2 × 16 KiB, flight recorder (in steady
/// state the policy changes nothing; `zero_init.py` checks that this ring, like a
/// streaming one, is in `.bss`).
static CONTEXT_RING: StaticRing<2, { 16 * 1024 }, FlightRecorder> =
    StaticRing::new(Policy::FlightRecorder);

flightrec_core::global_recorder!(CONTEXTS);

/// The ring of the context entry's buffer switch: 4 × 1 KiB, flight recorder,
/// as `bench_switch`'s.
static CONTEXT_SWITCH_RING: StaticRing<4, 1024, FlightRecorder> =
    StaticRing::new(Policy::FlightRecorder);

/// `n` enter + exit pairs through the global recorder into `ring`, installed for
/// thread mode: the buffers finished and the records refused or not routed.
#[inline(always)]
fn context_pairs<const N: usize, const B: usize>(
    ring: &'static StaticRing<N, B, FlightRecorder>,
    n: u32,
) -> (u32, u32) {
    if let Ok(rec) = ring.take_recorder(config()) {
        let _ = CONTEXTS.install(Context::THREAD_MODE, rec);
    }
    for _ in 0..n {
        record_function(FunctionAction::Enter, ID);
        record_function(FunctionAction::Exit, ID);
    }
    let lost = CONTEXTS.stats();
    (ring.stats().buffers_finished, lost.refused + lost.unrouted)
}

/// `n` enter + exit pairs through the global recorder (as `bench_context_pair`)
/// into 1 KiB buffers, so that they switch buffers: the buffer switch that
/// instrumented functions pay (the record that finds its buffer full leaves the
/// context path's straight store for its one call at the end). Returns the
/// buffers finished; records refused or not routed would make it 0.
#[no_mangle]
pub extern "C" fn bench_context_switch(n: u32) -> u32 {
    match context_pairs(&CONTEXT_SWITCH_RING, n) {
        (finished, 0) => finished,
        _ => 0,
    }
}

/// `n` enter + exit pairs through the global recorder, as an instrumented function
/// makes them: the call to the registered recorder, the context source (IPSR), the
/// shared clock, the slot's claim and release, the record. Steady state (the run
/// fits in one buffer). Returns the buffers finished plus the records refused or
/// not routed (0: every record was written, none switched buffers).
#[no_mangle]
pub extern "C" fn bench_context_pair(n: u32) -> u32 {
    let (finished, lost) = context_pairs(&CONTEXT_RING, n);
    finished + lost
}

/// The priority the runner gives SysTick (exception 15) in SHPR3, and so the
/// context of [`bench_context_pair_handler`]'s records.
const HANDLER_PRIORITY: u8 = 0x80;

/// `n` enter + exit pairs through the global recorder from an exception handler:
/// the runner sets IPSR to 15 (SysTick) and SHPR3's byte for it to
/// [`HANDLER_PRIORITY`]. Thread mode's recorder is installed first (as firmware
/// does), so the handler's is the second slot: what an instrumented interrupt
/// handler pays, the context source's priority read and the scan past thread
/// mode's slot included. Steady state. Returns the buffers finished plus the
/// records refused or not routed (0).
#[no_mangle]
pub extern "C" fn bench_context_pair_handler(n: u32) -> u32 {
    if let Ok(rec) = CONTEXT_SWITCH_RING.take_recorder(config()) {
        let _ = CONTEXTS.install(Context::THREAD_MODE, rec);
    }
    if let Ok(rec) = CONTEXT_RING.take_recorder(config()) {
        let _ = CONTEXTS.install(Context::priority(HANDLER_PRIORITY), rec);
    }
    for _ in 0..n {
        record_function(FunctionAction::Enter, ID);
        record_function(FunctionAction::Exit, ID);
    }
    let lost = CONTEXTS.stats();
    let handler = CONTEXT_RING.stats().buffers_finished;
    let thread = CONTEXT_SWITCH_RING.stats().buffers_finished;
    handler + thread + lost.refused + lost.unrouted
}
