//! The trampolines patched sleds call, and the handler they call.
//!
//! A patched entry or tail-exit sled runs `mov r10d, <id>; call <trampoline>`, a
//! patched exit sled `mov r10d, <id>; jmp <trampoline>` in place of its `ret`. The
//! trampoline saves what the interrupted code may still need (the SysV argument
//! and return registers, `r10`, `r11`, `xmm0`-`xmm7` and the flags, as compiler-rt's
//! trampolines do), aligns the stack, calls [`on_sled`] with the id and the kind,
//! restores everything and returns (for an exit sled: to the function's caller).
//!
//! Re-entry guard: when a whole program is instrumented (Rust's `RUSTFLAGS`
//! reach every crate, this runtime and flightrec included), the handler's own
//! functions have sleds too. A one-byte thread-local flag, set around the handler
//! call in the trampoline itself, makes every sled reached from inside the handler
//! return at once, so the handler never recurses whatever it calls.

use std::arch::global_asm;
use std::sync::atomic::{AtomicPtr, Ordering};

use flightrec::core::fdr::FunctionId;

/// A handler installed in place of the recording one (`__xray_set_handler`):
/// function id and kind (compiler-rt's `XRayEntryType` numbering).
pub type Handler = unsafe extern "C" fn(i32, u32);

/// The installed handler, or null for flightrec's recording.
static CUSTOM: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// Installs `handler` (`None`: record into flightrec's rings again).
pub(crate) fn set_handler(handler: Option<Handler>) {
    let p = handler.map_or(std::ptr::null_mut(), |h| h as *mut ());
    CUSTOM.store(p, Ordering::Release);
}

/// Called by the trampolines, never re-entered on one thread.
extern "C" fn on_sled(id: i32, kind: u32) {
    let custom = CUSTOM.load(Ordering::Acquire);
    if !custom.is_null() {
        // SAFETY: only `set_handler` stores here, always a `Handler`.
        let h: Handler = unsafe { std::mem::transmute::<*mut (), Handler>(custom) };
        // SAFETY: the program installed this handler for exactly these calls.
        unsafe { h(id, kind) };
        return;
    }
    let Ok(f) = FunctionId::new(id as u32) else {
        return;
    };
    match kind {
        0 | 3 => flightrec::xray::record_enter(f),
        1 => flightrec::xray::record_exit(f),
        2 => flightrec::xray::record_tail_exit(f),
        _ => {}
    }
}

extern "C" {
    fn __flightrec_sleds_entry();
    fn __flightrec_sleds_exit();
    fn __flightrec_sleds_tail_exit();
}

/// Address of the trampoline entry sleds call.
pub(crate) fn entry_trampoline() -> usize {
    __flightrec_sleds_entry as *const () as usize
}

/// Address of the trampoline exit sleds jump to.
pub(crate) fn exit_trampoline() -> usize {
    __flightrec_sleds_exit as *const () as usize
}

/// Address of the trampoline tail-exit sleds call.
pub(crate) fn tail_exit_trampoline() -> usize {
    __flightrec_sleds_tail_exit as *const () as usize
}

// Frame: flags, the caller's rbp, then (16-byte aligned) 9 general registers at
// 0..72 and xmm0-xmm7 at 80..208. rbp keeps the frame so unwinders and
// debuggers see through the trampoline.
macro_rules! trampoline {
    ($name:literal, $kind:literal) => {
        global_asm!(
            ".pushsection .text.flightrec_sleds_trampolines,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", $name),
            concat!(".hidden ", $name),
            concat!(".type ", $name, ",@function"),
            concat!($name, ":"),
            ".cfi_startproc",
            "pushfq",
            ".cfi_adjust_cfa_offset 8",
            "pushq %rbp",
            ".cfi_adjust_cfa_offset 8",
            ".cfi_rel_offset %rbp, 0",
            "movq %rsp, %rbp",
            ".cfi_def_cfa_register %rbp",
            "subq $208, %rsp",
            "andq $-16, %rsp",
            "movq %rdi, 0(%rsp)",
            "movq %rsi, 8(%rsp)",
            "movq %rdx, 16(%rsp)",
            "movq %rcx, 24(%rsp)",
            "movq %r8, 32(%rsp)",
            "movq %r9, 40(%rsp)",
            "movq %rax, 48(%rsp)",
            "movq %r10, 56(%rsp)",
            "movq %r11, 64(%rsp)",
            "movaps %xmm0, 80(%rsp)",
            "movaps %xmm1, 96(%rsp)",
            "movaps %xmm2, 112(%rsp)",
            "movaps %xmm3, 128(%rsp)",
            "movaps %xmm4, 144(%rsp)",
            "movaps %xmm5, 160(%rsp)",
            "movaps %xmm6, 176(%rsp)",
            "movaps %xmm7, 192(%rsp)",
            // The re-entry guard (module docs).
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11",
            "cmpb $0, %fs:(%r11)",
            "jne 2f",
            "movb $1, %fs:(%r11)",
            "cld",
            "movl %r10d, %edi",
            concat!("movl $", $kind, ", %esi"),
            "call {handler}@PLT",
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11",
            "movb $0, %fs:(%r11)",
            "2:",
            "movq 0(%rsp), %rdi",
            "movq 8(%rsp), %rsi",
            "movq 16(%rsp), %rdx",
            "movq 24(%rsp), %rcx",
            "movq 32(%rsp), %r8",
            "movq 40(%rsp), %r9",
            "movq 48(%rsp), %rax",
            "movq 56(%rsp), %r10",
            "movq 64(%rsp), %r11",
            "movaps 80(%rsp), %xmm0",
            "movaps 96(%rsp), %xmm1",
            "movaps 112(%rsp), %xmm2",
            "movaps 128(%rsp), %xmm3",
            "movaps 144(%rsp), %xmm4",
            "movaps 160(%rsp), %xmm5",
            "movaps 176(%rsp), %xmm6",
            "movaps 192(%rsp), %xmm7",
            "movq %rbp, %rsp",
            ".cfi_def_cfa_register %rsp",
            "popq %rbp",
            ".cfi_adjust_cfa_offset -8",
            ".cfi_restore %rbp",
            "popfq",
            ".cfi_adjust_cfa_offset -8",
            "retq",
            ".cfi_endproc",
            concat!(".size ", $name, ", . - ", $name),
            ".popsection",
            handler = sym on_sled,
            options(att_syntax)
        );
    };
}

global_asm!(
    ".pushsection .tbss.flightrec_sleds_busy,\"awT\",@nobits",
    ".globl __flightrec_sleds_busy",
    ".hidden __flightrec_sleds_busy",
    ".type __flightrec_sleds_busy,@object",
    ".size __flightrec_sleds_busy, 1",
    "__flightrec_sleds_busy:",
    ".zero 1",
    ".popsection",
);

trampoline!("__flightrec_sleds_entry", "0");
trampoline!("__flightrec_sleds_exit", "1");
trampoline!("__flightrec_sleds_tail_exit", "2");
