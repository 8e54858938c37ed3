//! Everything the record path written in assembly inside the trampolines
//! (`trampoline.rs`) reads of flightrec's runtime, in one place: the offsets
//! come from `offset_of!` in the crates that own the structs
//! (`flightrec::xray::sled_abi`, `flightrec_core::fdr::writer::layout`), so a
//! change of a struct moves them with it, and the assertions below break the
//! build when an assumption of the assembly stops holding.

use flightrec::core::fdr::ring::RECORDER_WRITER_OFFSET;
use flightrec::core::fdr::writer::layout as w;
use flightrec::core::fdr::Version;
use flightrec::xray::sled_abi;

/// The runtime's state value while it records.
pub(crate) const RECORDING: u8 = sled_abi::RECORDING;
/// The ring's `busy` byte.
pub(crate) const RING_BUSY: usize = sled_abi::RING_BUSY;
/// The ring's recorder pointer.
pub(crate) const RING_RECORDER: usize = sled_abi::RING_RECORDER_PTR;
/// The writer's fields, from the recorder.
pub(crate) const BASE: usize = RECORDER_WRITER_OFFSET + w::BASE;
pub(crate) const CUR: usize = RECORDER_WRITER_OFFSET + w::CUR;
pub(crate) const FAST_END: usize = RECORDER_WRITER_OFFSET + w::FAST_END;
pub(crate) const FAST_END_EXIT: usize = RECORDER_WRITER_OFFSET + w::FAST_END_EXIT;
pub(crate) const LATEST_CPU: usize = RECORDER_WRITER_OFFSET + w::LATEST_CPU;
pub(crate) const LATEST_TSC: usize = RECORDER_WRITER_OFFSET + w::LATEST_TSC;
pub(crate) const THRESHOLD: usize = RECORDER_WRITER_OFFSET + w::THRESHOLD;
pub(crate) const UNDO_START: usize = RECORDER_WRITER_OFFSET + w::UNDO_START;
pub(crate) const VERSION: usize = RECORDER_WRITER_OFFSET + w::VERSION;

/// The byte that holds [`Version::V1`] in the writer's `version` (the one
/// version without BufferExtents, whose count an elision does not update). The
/// transmute does not build if a `Version` stops being one byte.
// SAFETY: `Version` is a fieldless enum of one byte (the transmute checks the
// size); any of its values is a valid `u8`.
pub(crate) const VERSION_V1: u8 = unsafe { std::mem::transmute::<Version, u8>(Version::V1) };

/// The thread's ring slot; the assembly names it with a literal (`concat!`
/// needs one), checked against the runtime's below.
macro_rules! current_slot {
    () => {
        concat!(
            "__flightrec_xray_current_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        )
    };
}
pub(crate) use current_slot;

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

// The slot is flightrec's (this crate and flightrec share the workspace's
// version; a flightrec of another minor version would name another slot).
const _: () = assert!(same(current_slot!(), sled_abi::CURRENT_SLOT_SYMBOL));

// Every displacement fits the assembly's 32-bit signed displacements.
const _: () = assert!(
    RING_BUSY < 1 << 20
        && RING_RECORDER < 1 << 20
        && BASE < 1 << 20
        && CUR < 1 << 20
        && FAST_END < 1 << 20
        && FAST_END_EXIT < 1 << 20
        && LATEST_CPU < 1 << 20
        && LATEST_TSC < 1 << 20
        && THRESHOLD < 1 << 20
        && UNDO_START < 1 << 20
        && VERSION < 1 << 20
);

// The assembly loads and stores `base`, `cur`, the fast ends and `undo_start`
// as 8-byte words (`movq`); `_types` in the writer's `layout` says which fields
// are pointers and which `usize`.
const _: () = assert!(std::mem::size_of::<*mut u8>() == 8 && std::mem::size_of::<usize>() == 8);
