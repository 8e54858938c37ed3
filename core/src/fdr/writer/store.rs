//! The unchecked stores every record path ends in: a record's bytes as words, and
//! the aligned forms that strict-alignment targets (ARMv6-M, RISC-V without
//! unaligned access) take when a record's address allows them.

use super::*;

/// Targets whose unaligned stores are split into byte stores (ARMv6-M, the ARM
/// cores without compare-and-swap; RISC-V without the unaligned-access extension):
/// there [`BufferWriter`] tests the record's alignment and writes aligned words when
/// it can (a [`StaticRing`](crate::fdr::static_ring::StaticRing)'s buffers are 8-aligned).
/// Elsewhere an unaligned store is one instruction and the test would only cost.
/// `--cfg flightrec_thumbv6m_paths` takes these paths on any target, so that the
/// tests (and Miri) run them on the host.
pub(super) const STRICT_ALIGNMENT: bool = cfg!(any(
    all(target_arch = "arm", not(target_has_atomic = "8")),
    target_arch = "riscv32",
    flightrec_thumbv6m_paths
));

/// Stores a function record's word at `base + pos` and, with `extents`, the
/// BufferExtents count (`end - META`, bytes 1..9 of the buffer), as two 4-byte
/// words and three stores (byte, half-word, byte) for the low 32 bits of the count:
/// the only ones that can change, since a 32-bit target's buffer is under 4 GiB and
/// the preamble wrote the high bytes as zero. For [`STRICT_ALIGNMENT`] targets,
/// where an unaligned 8-byte store is eight byte stores.
///
/// # Safety
/// `base + pos .. base + pos + 8` and, with `extents`, `base + 1 .. base + 9` are
/// inside one buffer the caller borrows exclusively; `base` and `pos` are multiples
/// of 4.
#[inline(always)]
pub(super) unsafe fn store_aligned(base: *mut u8, pos: usize, word: u64, extents: bool) {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = word.to_le_bytes();
    // SAFETY: in bounds and exclusive (the caller's contract); `base + pos` and
    // `base + pos + 4` are 4-aligned, `base + 2` is 2-aligned.
    unsafe {
        let record = base.add(pos);
        record
            .cast::<u32>()
            .write(u32::from_ne_bytes([b0, b1, b2, b3]));
        record
            .add(4)
            .cast::<u32>()
            .write(u32::from_ne_bytes([b4, b5, b6, b7]));
        if extents {
            let [e0, e1, e2, e3] = ((pos + FUNC - META) as u32).to_le_bytes();
            base.add(1).write(e0);
            base.add(2)
                .cast::<u16>()
                .write(u16::from_ne_bytes([e1, e2]));
            base.add(4).write(e3);
        }
    }
}

/// A fast path's function record: `word` stored at `at`, as two aligned words
/// on `STRICT_ALIGNMENT` targets, else as 8 unaligned bytes.
///
/// # Safety
/// `at .. at + FUNC` is inside one buffer the caller borrows exclusively; on
/// `STRICT_ALIGNMENT` targets `at` is a multiple of 4.
#[inline(always)]
pub(super) unsafe fn store_fast(at: *mut u8, word: u64) {
    // SAFETY: the caller's contract.
    unsafe {
        if STRICT_ALIGNMENT {
            store_aligned(at, 0, word, false);
        } else {
            at.cast::<[u8; FUNC]>().write_unaligned(word.to_le_bytes());
        }
    }
}

/// Stores a metadata record, given as its little-endian value
/// ([`MetadataRecord::to_le_u128`]), at `at`: as words, zeros included (two
/// 8-byte stores on 64-bit targets, four 4-byte ones on 32-bit targets), or on
/// [`STRICT_ALIGNMENT`] targets as 16 byte stores when `at` is not 4-aligned (only
/// after a payload whose length is not a multiple of 4; buffers start aligned).
///
/// # Safety
/// `at .. at + META` is inside one buffer the caller borrows exclusively.
#[inline(always)]
pub(super) unsafe fn store_meta(at: *mut u8, value: u128) {
    // SAFETY: in bounds and exclusive (the caller's contract); the word stores
    // are unaligned, or aligned where `at` was just tested to be 4-aligned.
    unsafe {
        if cfg!(target_pointer_width = "64") {
            at.cast::<u64>().write_unaligned((value as u64).to_le());
            at.add(8)
                .cast::<u64>()
                .write_unaligned(((value >> 64) as u64).to_le());
            return;
        }
        let words = meta_words(value);
        if !STRICT_ALIGNMENT {
            at.cast::<[u32; 4]>().write_unaligned(words);
        } else if at.addr() & 3 == 0 {
            at.cast::<[u32; 4]>().write(words);
        } else {
            store_meta_bytes(at, value);
        }
    }
}

/// [`store_meta`] where `at` is known to be 4-aligned on [`STRICT_ALIGNMENT`]
/// targets: no test, no byte stores.
///
/// # Safety
/// As for [`store_meta`], and on `STRICT_ALIGNMENT` targets `at` is a multiple
/// of 4.
#[inline(always)]
pub(super) unsafe fn store_meta_aligned(at: *mut u8, value: u128) {
    // SAFETY: the caller's contract.
    unsafe {
        if STRICT_ALIGNMENT {
            at.cast::<[u32; 4]>().write(meta_words(value));
        } else {
            store_meta(at, value);
        }
    }
}

/// One little-endian word of a record stored at `at`, known to be 4-aligned on
/// [`STRICT_ALIGNMENT`] targets.
///
/// # Safety
///
/// The 4 bytes at `at` are in bounds and exclusively borrowed, and `at` is
/// 4-aligned on [`STRICT_ALIGNMENT`] targets.
#[inline(always)]
pub(super) unsafe fn store_word_aligned(at: *mut u8, word: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        if STRICT_ALIGNMENT {
            at.cast::<u32>().write(word);
        } else {
            at.cast::<u32>().write_unaligned(word);
        }
    }
}

/// A metadata record's value as its four little-endian words. Four constant
/// shifts, written out: a loop over them is not unrolled at opt-level "s" and
/// shifts the 128-bit value in memory.
#[inline(always)]
pub(super) fn meta_words(value: u128) -> [u32; 4] {
    [
        (value as u32).to_le(),
        ((value >> 32) as u32).to_le(),
        ((value >> 64) as u32).to_le(),
        ((value >> 96) as u32).to_le(),
    ]
}

/// [`store_meta`]'s byte stores, out of line: rare (after a payload whose length
/// is not a multiple of 4), and long on a Cortex-M0.
///
/// # Safety
/// As for [`store_meta`].
#[cold]
#[inline(never)]
pub(super) unsafe fn store_meta_bytes(at: *mut u8, value: u128) {
    // SAFETY: the caller's contract.
    unsafe { at.cast::<[u8; META]>().write_unaligned(value.to_le_bytes()) };
}

/// Stores a buffer's preamble at `base` (BufferExtents, its count the rest of
/// the preamble; NewBuffer; WalltimeMarker; Pid) as whole records; returns the
/// address after it.
///
/// # Safety
/// `base .. base + config.preamble_len()` is inside one buffer the caller
/// borrows exclusively.
#[inline(always)]
pub(super) unsafe fn store_preamble(
    base: *mut u8,
    config: &WriterConfig,
    walltime: Walltime,
) -> *mut u8 {
    let mut at = base;
    let mut put = |record: u128| {
        // SAFETY: the preamble's records are inside the buffer (the caller's
        // contract).
        unsafe { store_meta(at, record) };
        at = at.wrapping_add(META);
    };
    if config.version().has_extents() {
        let size = (config.preamble_len() - META) as u64;
        put(BufferExtents { size }.to_le_u128());
    }
    // The wire field is `int32_t`; the same 4 bytes (see `WriterConfig::tid`).
    let tid = config.tid as i32;
    put(NewBuffer { tid }.to_le_u128());
    let walltime = WalltimeMarker {
        seconds: walltime.seconds,
        // A ring's recorder counts its buffers' micros below 10^6 already: the
        // division (a library call on a Cortex-M0) only for other callers.
        micros: if walltime.micros < 1_000_000 {
            walltime.micros
        } else {
            micros_in_second(walltime.micros)
        },
    };
    put(walltime.to_le_u128());
    if let Some(pid) = config.pid {
        let pid = pid as i32;
        put(Pid { pid }.to_le_u128());
    }
    at
}

/// The first word of the BufferExtents record at `base` for a buffer of
/// `end` bytes: the record's tag and the count's three low bytes. The count's
/// fourth byte stays the zero the buffer's preamble wrote.
///
/// # Safety
///
/// As [`store_word_aligned`] at `base`, and `end` is at most
/// [`MAX_RESTARTABLE`].
#[inline(always)]
pub(super) unsafe fn store_extents_count(base: *mut u8, end: usize) {
    debug_assert!(end <= MAX_RESTARTABLE);
    let [count, ..] = meta_words(
        BufferExtents {
            size: (end - META) as u64,
        }
        .to_le_u128(),
    );
    // SAFETY: the caller's contract.
    unsafe { store_word_aligned(base, count) };
}
