//! The FDR record path never allocates: checked with a counting global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use flightrec_core::clock::{Clock, ManualClock};
use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;

struct Counting;

thread_local! {
    // Per thread, so tests running in parallel (and the harness) do not count.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

fn count() {
    // `try_with`: the thread-local may already be gone while a thread exits.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn recording_and_draining_allocate_nothing() {
    // Everything the record path needs is set up first.
    let mut storage = vec![0u8; 4 * 512];
    let slots = [Slot::NEW, Slot::NEW, Slot::NEW, Slot::NEW];
    let mut out = vec![0u8; 1 << 20];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let cfg = RecorderConfig::new(
        WriterConfig::new(1).with_pid(2).with_threshold_ticks(3),
        1000,
    );
    let (mut rec, mut cons) = ring.split(cfg);
    let mut clock = ManualClock::new(1000);
    let f = FunctionId::new(9).unwrap();
    let mut len = 0;
    let header = rec.file_header().to_bytes();
    out[..32].copy_from_slice(&header);
    len += 32;

    let before = allocations();
    for i in 0..10_000u64 {
        clock.advance(1 + i % 7);
        rec.enter(f, clock.now()).unwrap();
        if i % 10 == 0 {
            rec.enter_with_args(f, clock.now(), &[i, i * 2]).unwrap();
            rec.exit(f, clock.now()).unwrap();
            rec.custom_event(clock.now(), b"payload").unwrap();
            rec.typed_event(clock.now(), 3, b"typed").unwrap();
        }
        if i % 100 == 0 {
            clock.set_cpu((i / 100 % 3) as u16);
        }
        clock.advance(2);
        rec.exit(f, clock.now()).unwrap();
        while let Some(b) = cons.pop() {
            out[len..len + b.len()].copy_from_slice(&b);
            len += b.len();
        }
    }
    rec.flush();
    while let Some(b) = cons.pop() {
        out[len..len + b.len()].copy_from_slice(&b);
        len += b.len();
    }
    let after = allocations();
    assert_eq!(after - before, 0, "the record path allocated");
    assert!(verify(&out[..len]).is_ok());
}

#[test]
fn flight_recorder_wrap_and_dump_allocate_nothing() {
    let mut storage = vec![0u8; 3 * 256];
    let slots = [Slot::NEW, Slot::NEW, Slot::NEW];
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    let (mut rec, _) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
    let mut clock = ManualClock::new(1000);
    let f = FunctionId::new(1).unwrap();
    let before = allocations();
    for _ in 0..5_000 {
        clock.advance(5);
        rec.enter(f, clock.now()).unwrap();
        clock.advance(5);
        rec.exit(f, clock.now()).unwrap();
    }
    let mut total = 0;
    rec.for_each_buffer(|b| total += b.len());
    assert_eq!(allocations() - before, 0);
    assert!(total > 0);
    assert!(rec.stats().buffers_overwritten > 0);
}
