//! The writer's fields that the x86_64 sled trampolines of `flightrec-sleds` read
//! through `fdr::writer::layout` hold what that module says, on a 64-bit target
//! and built as a dependency is built (the crate's own unit tests take the
//! 32-bit record path everywhere). A wrong value there does not change a trace
//! (the trampolines then leave their path for the Rust one, which writes the
//! same bytes), only its cost: the byte-for-byte tests cannot see it.

#![cfg(target_pointer_width = "64")]

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot, RECORDER_WRITER_OFFSET};
use flightrec_core::fdr::writer::{layout, WriterConfig};
use flightrec_core::fdr::FunctionId;

/// The recorder's writer field at `offset` (a `usize`).
fn field<T>(recorder: &T, offset: usize) -> usize {
    let at = (recorder as *const T).cast::<u8>();
    // SAFETY: `offset` is a `usize` field of the writer inside `recorder`
    // (`offset_of!` in the crate: `RECORDER_WRITER_OFFSET` plus a `layout`
    // offset), so the read is in bounds and aligned, and the value initialised.
    unsafe {
        at.add(RECORDER_WRITER_OFFSET + offset)
            .cast::<usize>()
            .read()
    }
}

#[test]
fn fast_end_exit_is_the_fast_end_without_a_threshold_and_0_with_one() {
    let id = FunctionId::new(3).unwrap();
    let at = |tsc| Timestamp { tsc, cpu: 0 };
    for threshold in [0, 1_000] {
        let mut storage = vec![0u8; 2 * 4096];
        let slots = [Slot::NEW; 2];
        let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
        let writer = WriterConfig::new(1).with_threshold_ticks(threshold);
        let (mut rec, _consumer) = ring.split(RecorderConfig::new(writer, 1_000_000));
        // The first record takes a buffer; the next ones are steady records.
        rec.enter(id, at(10)).unwrap();
        rec.exit(id, at(5_000)).unwrap();
        rec.enter(id, at(6_000)).unwrap();
        let fast_end = field(&rec, layout::FAST_END);
        assert_ne!(
            fast_end, 0,
            "a steady record's fast end (threshold {threshold})"
        );
        let expected = if threshold == 0 { fast_end } else { 0 };
        assert_eq!(
            field(&rec, layout::FAST_END_EXIT),
            expected,
            "fast_end_exit with threshold {threshold}"
        );
    }
}
