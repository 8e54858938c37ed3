//! The target side: the trampolines patched sleds call, the handler they call,
//! and the patcher with the cache maintenance AArch64 requires after writing code.
//!
//! Each trampoline saves what the interrupted code may still need: at an entry or
//! a tail call the arguments (`x0`-`x8`, `q0`-`q7`) and possibly an indirect tail
//! call's target (any of `x9`-`x16`), at an exit the results (`x0`-`x7`,
//! `q0`-`q3`): `x0`-`x16`, `x18` and `q0`-`q7` in all three. Callee-saved
//! registers are the handler's to keep. A byte set around the handler call makes
//! every sled reached from inside the handler (the firmware's own instrumented
//! functions) return at once; an interrupt arriving while the handler runs goes
//! untraced the same way.

use core::arch::{asm, global_asm};
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use crate::encode::{self, PatchError, B_OVER_SLED, SLED_WORDS};
use crate::Handler;
use crate::{Sled, SledKind, SledMap};

/// This program's instrumentation map: the `xray_instr_map` section between
/// the linker's `__start_xray_instr_map` and `__stop_xray_instr_map`.
///
/// # Safety
/// The firmware's linker script must define both symbols around the
/// `xray_instr_map` section, which nothing writes.
pub unsafe fn map_from_linker() -> Result<SledMap<'static>, crate::MapError> {
    extern "C" {
        static __start_xray_instr_map: u8;
        static __stop_xray_instr_map: u8;
    }
    let start = core::ptr::addr_of!(__start_xray_instr_map);
    let stop = core::ptr::addr_of!(__stop_xray_instr_map);
    // SAFETY: the caller's promise: the linker bounds the section with these
    // symbols and it stays in place, unwritten, for the program's life.
    unsafe { SledMap::from_section(start, stop) }
}

/// The installed handler, or null.
static HANDLER: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Installs the handler patched sleds call (`None`: sleds do nothing but return).
///
/// ```no_run
/// extern "C" fn record(id: u32, kind: u32) { /* into a flightrec ring */ }
/// flightrec_sleds_aarch64::set_handler(Some(record));
/// ```
pub fn set_handler(handler: Option<Handler>) {
    let p = handler.map_or(core::ptr::null_mut(), |h| h as *mut ());
    HANDLER.store(p, Ordering::Release);
}

/// Called by the trampolines, never re-entered.
extern "C" fn on_sled(id: u32, kind: u32) {
    let h = HANDLER.load(Ordering::Acquire);
    if !h.is_null() {
        // SAFETY: only `set_handler` stores here, always a `Handler`.
        let h: Handler = unsafe { core::mem::transmute::<*mut (), Handler>(h) };
        h(id, kind);
    }
}

extern "C" {
    fn __flightrec_sleds_entry();
    fn __flightrec_sleds_exit();
    fn __flightrec_sleds_tail_exit();
}

macro_rules! trampoline {
    ($name:literal, $kind:literal) => {
        global_asm!(
            concat!(".pushsection .text.", $name, ",\"ax\",%progbits"),
            ".p2align 2",
            concat!(".globl ", $name),
            concat!(".type ", $name, ",%function"),
            concat!($name, ":"),
            "stp x29, x30, [sp, #-16]!",
            "mov x29, sp",
            "sub sp, sp, #288",
            "stp x0, x1, [sp, #0]",
            "stp x2, x3, [sp, #16]",
            "stp x4, x5, [sp, #32]",
            "stp x6, x7, [sp, #48]",
            "stp x8, x9, [sp, #64]",
            "stp x10, x11, [sp, #80]",
            "stp x12, x13, [sp, #96]",
            "stp x14, x15, [sp, #112]",
            "stp x16, x18, [sp, #128]",
            "stp q0, q1, [sp, #144]",
            "stp q2, q3, [sp, #176]",
            "stp q4, q5, [sp, #208]",
            "stp q6, q7, [sp, #240]",
            "adrp x9, __flightrec_sleds_busy",
            "ldrb w10, [x9, :lo12:__flightrec_sleds_busy]",
            "cbnz w10, 1f",
            "mov w10, #1",
            "strb w10, [x9, :lo12:__flightrec_sleds_busy]",
            "mov w0, w17",
            concat!("mov w1, #", $kind),
            "bl {handler}",
            "adrp x9, __flightrec_sleds_busy",
            "strb wzr, [x9, :lo12:__flightrec_sleds_busy]",
            "1:",
            "ldp x0, x1, [sp, #0]",
            "ldp x2, x3, [sp, #16]",
            "ldp x4, x5, [sp, #32]",
            "ldp x6, x7, [sp, #48]",
            "ldp x8, x9, [sp, #64]",
            "ldp x10, x11, [sp, #80]",
            "ldp x12, x13, [sp, #96]",
            "ldp x14, x15, [sp, #112]",
            "ldp x16, x18, [sp, #128]",
            "ldp q0, q1, [sp, #144]",
            "ldp q2, q3, [sp, #176]",
            "ldp q4, q5, [sp, #208]",
            "ldp q6, q7, [sp, #240]",
            "mov sp, x29",
            "ldp x29, x30, [sp], #16",
            "ret",
            concat!(".size ", $name, ", . - ", $name),
            ".popsection",
            handler = sym on_sled,
        );
    };
}

global_asm!(
    ".pushsection .bss.__flightrec_sleds_busy,\"aw\",%nobits",
    ".globl __flightrec_sleds_busy",
    "__flightrec_sleds_busy:",
    ".zero 1",
    ".popsection",
);

trampoline!("__flightrec_sleds_entry", "0");
trampoline!("__flightrec_sleds_exit", "1");
trampoline!("__flightrec_sleds_tail_exit", "2");

/// The trampoline of a sled kind; event sleds are left alone.
fn trampoline(kind: SledKind) -> Option<usize> {
    Some(match kind {
        SledKind::Entry | SledKind::LogArgsEntry => __flightrec_sleds_entry as *const () as usize,
        SledKind::Exit => __flightrec_sleds_exit as *const () as usize,
        SledKind::TailExit => __flightrec_sleds_tail_exit as *const () as usize,
        SledKind::CustomEvent | SledKind::TypedEvent => return None,
    })
}

/// Patches every entry, exit and tail-exit sled of `map` to call the trampolines.
/// Returns how many were written; stops at the first that cannot be, and writes
/// nothing where the first word is neither `b #32` nor a patched sled's.
///
/// # Safety
/// `map` must be this program's own map (from [`map_from_linker`]) and its
/// code writable (the MMU off, or the code mapped writable). Single core: no
/// other core may run the code meanwhile (this core may, between sleds).
pub unsafe fn patch(map: &SledMap<'_>) -> Result<usize, PatchError> {
    let mut n = 0;
    for sled in map.iter() {
        let Some(t) = trampoline(sled.kind) else {
            continue;
        };
        let words = encode::patched(sled.function_id, sled.address, t)?;
        // SAFETY: the caller's promise: a readable sled of this program.
        let first =
            unsafe { AtomicU32::from_ptr(sled.address as *mut u32) }.load(Ordering::Relaxed);
        if first != B_OVER_SLED && first != encode::STP_X0_X30_PRE {
            return Err(PatchError::NotASled {
                sled: sled.address,
                word: first,
            });
        }
        // SAFETY: the caller's promise: a writable sled of this program.
        unsafe { write(&sled, &words) };
        n += 1;
    }
    Ok(n)
}

/// Restores every sled [`patch`] writes to `b #32`. Returns how many.
///
/// # Safety
/// As for [`patch`].
pub unsafe fn unpatch(map: &SledMap<'_>) -> usize {
    let mut n = 0;
    for sled in map.iter().filter(|s| trampoline(s.kind).is_some()) {
        // SAFETY: the caller's promise; one aligned word store.
        unsafe { store_word(sled.address, B_OVER_SLED) };
        sync_code(sled.address, 4);
        n += 1;
    }
    n
}

/// Writes words 1 to 4, makes them visible to instruction fetch, then the first
/// word (see [`encode`]).
///
/// # Safety
/// `sled.address` is a writable sled of 8 words.
unsafe fn write(sled: &Sled, words: &[u32; 5]) {
    for (i, &w) in words.iter().enumerate().skip(1) {
        // SAFETY: within the sled (the caller's promise).
        unsafe { store_word(sled.address + 4 * i, w) };
    }
    sync_code(sled.address, 4 * SLED_WORDS);
    // SAFETY: as above.
    unsafe { store_word(sled.address, words[0]) };
    sync_code(sled.address, 4);
}

/// One aligned 4-byte store: instruction fetch sees the old word or the new one.
///
/// # Safety
/// `at` is a 4-byte aligned writable word.
unsafe fn store_word(at: usize, word: u32) {
    // SAFETY: the caller's promise.
    unsafe { AtomicU32::from_ptr(at as *mut u32) }.store(word, Ordering::Release);
}

/// Cleans the data cache and invalidates the instruction cache over
/// `[start, start + len)` to the point of unification, as the architecture
/// requires before executing written code: `dc cvau` per data line, `dsb ish`,
/// `ic ivau` per instruction line, `dsb ish`, `isb`.
fn sync_code(start: usize, len: usize) {
    let ctr: u64;
    // SAFETY: reading CTR_EL0 has no side effects (EL0 access aside, EL1 reads it).
    unsafe { asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack, preserves_flags)) };
    let dline = 4usize << ((ctr >> 16) & 0xf);
    let iline = 4usize << (ctr & 0xf);
    let end = start + len;
    let mut at = start & !(dline - 1);
    while at < end {
        // SAFETY: cache maintenance by address on code this program owns.
        unsafe { asm!("dc cvau, {}", in(reg) at, options(nostack, preserves_flags)) };
        at += dline;
    }
    // SAFETY: a barrier.
    unsafe { asm!("dsb ish", options(nostack, preserves_flags)) };
    let mut at = start & !(iline - 1);
    while at < end {
        // SAFETY: as above.
        unsafe { asm!("ic ivau, {}", in(reg) at, options(nostack, preserves_flags)) };
        at += iline;
    }
    // SAFETY: barriers.
    unsafe { asm!("dsb ish", "isb", options(nostack, preserves_flags)) };
}
