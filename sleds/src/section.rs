//! Where the executable's `xray_instr_map` section is, through the linker's
//! `__start_`/`__stop_` symbols.
//!
//! The symbols are weak references: a program without sleds still links (they read
//! as 0) and gets one clear message instead of a link error. They are taken
//! through a table of absolute addresses that the loader relocates, since a
//! PC-relative reference to an undefined weak symbol is not valid in a
//! position-independent executable.

use std::arch::global_asm;

global_asm!(
    ".weak __start_xray_instr_map",
    ".weak __stop_xray_instr_map",
    ".pushsection .data.rel.ro.flightrec_sleds_bounds,\"aw\",@progbits",
    ".p2align 3",
    ".globl __flightrec_sleds_bounds",
    ".hidden __flightrec_sleds_bounds",
    "__flightrec_sleds_bounds:",
    ".quad __start_xray_instr_map",
    ".quad __stop_xray_instr_map",
    ".popsection",
);

extern "C" {
    /// Start and end of `xray_instr_map` (both 0 without the section).
    static __flightrec_sleds_bounds: [usize; 2];
}

/// The bytes of the instrumentation map and their address, or `None` if the
/// executable has no sleds.
pub(crate) fn instr_map() -> Option<(&'static [u8], usize)> {
    // SAFETY: a table the assembler above defines and the loader fills in; it is
    // never written afterwards.
    let [start, stop] = unsafe { __flightrec_sleds_bounds };
    if start == 0 || stop <= start {
        return None;
    }
    // SAFETY: the linker bounds the section with these two symbols; it is part of
    // the loaded image for the life of the process and nothing writes it.
    Some((
        unsafe { std::slice::from_raw_parts(start as *const u8, stop - start) },
        start,
    ))
}
