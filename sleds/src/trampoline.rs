//! The trampolines patched sleds call, and the handler they call.
//!
//! A patched entry or tail-exit sled runs `mov r10d, <id>; call <trampoline>`, a
//! patched exit sled `mov r10d, <id>; jmp <trampoline>` in place of its `ret`. The
//! trampoline saves what the interrupted code may still need (the SysV argument
//! registers at an entry or tail call, the return registers at an exit: see the
//! frame notes below), aligns the stack, calls [`on_sled`] with the id and the
//! kind, restores them and returns (for an exit sled: to the function's caller).
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
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// static EXITS: AtomicU32 = AtomicU32::new(0);
/// unsafe extern "C" fn count_exits(_id: i32, kind: u32) {
///     if kind == 1 {
///         EXITS.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// let handler: flightrec_sleds::Handler = count_exits;
/// // What a patched exit sled of function 3 does:
/// unsafe { handler(3, 1) };
/// assert_eq!(EXITS.load(Ordering::Relaxed), 1);
/// ```
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

// Both trampolines keep a frame in rbp (so unwinders and debuggers see through
// them), align the stack to 16 bytes, save, run the guarded handler call and
// restore.
//
// Entry and tail exit: the function's arguments are live (rdi, rsi, rdx, rcx, r8,
// r9, al for variadic calls, xmm0-xmm7), and r11 may hold an indirect tail call's
// target: 8 general registers at 0..64, xmm0-xmm7 at 64..192.
//
// Exit: at a `ret` only the return registers are live (rax, rdx, xmm0, xmm1):
// compiler-rt's exit trampoline saves the same.
//
// The flags are not saved: the SysV ABI does not preserve them across calls, and
// every sled sits at a call boundary (function entry, `ret`, or just before a
// tail call's unconditional `jmp`; a conditional tail call jumps around its sled).
// compiler-rt saves them anyway; `popfq` alone costs about 5 ns per sled here.
macro_rules! guarded_call {
    ($kind:literal) => {
        concat!(
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11\n",
            "cmpb $0, %fs:(%r11)\n",
            "jne 2f\n",
            "movb $1, %fs:(%r11)\n",
            "movl %r10d, %edi\n",
            "movl $",
            $kind,
            ", %esi\n",
            "call {handler}@PLT\n",
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11\n",
            "movb $0, %fs:(%r11)\n",
            "2:\n",
        )
    };
}

macro_rules! trampoline {
    ($name:literal, $frame:literal, $kind:literal, $save:expr, $restore:expr) => {
        global_asm!(
            ".pushsection .text.flightrec_sleds_trampolines,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", $name),
            concat!(".hidden ", $name),
            concat!(".type ", $name, ",@function"),
            concat!($name, ":"),
            ".cfi_startproc",
            "pushq %rbp",
            ".cfi_adjust_cfa_offset 8",
            ".cfi_rel_offset %rbp, 0",
            "movq %rsp, %rbp",
            ".cfi_def_cfa_register %rbp",
            concat!("subq $", $frame, ", %rsp"),
            "andq $-16, %rsp",
            $save,
            guarded_call!($kind),
            $restore,
            "movq %rbp, %rsp",
            ".cfi_def_cfa_register %rsp",
            "popq %rbp",
            ".cfi_adjust_cfa_offset -8",
            ".cfi_restore %rbp",
            "retq",
            ".cfi_endproc",
            concat!(".size ", $name, ", . - ", $name),
            ".popsection",
            handler = sym on_sled,
            options(att_syntax)
        );
    };
}

macro_rules! save_arguments {
    () => {
        concat!(
            "movq %rdi, 0(%rsp)\n",
            "movq %rsi, 8(%rsp)\n",
            "movq %rdx, 16(%rsp)\n",
            "movq %rcx, 24(%rsp)\n",
            "movq %r8, 32(%rsp)\n",
            "movq %r9, 40(%rsp)\n",
            "movq %rax, 48(%rsp)\n",
            "movq %r11, 56(%rsp)\n",
            "movaps %xmm0, 64(%rsp)\n",
            "movaps %xmm1, 80(%rsp)\n",
            "movaps %xmm2, 96(%rsp)\n",
            "movaps %xmm3, 112(%rsp)\n",
            "movaps %xmm4, 128(%rsp)\n",
            "movaps %xmm5, 144(%rsp)\n",
            "movaps %xmm6, 160(%rsp)\n",
            "movaps %xmm7, 176(%rsp)\n",
        )
    };
}

macro_rules! restore_arguments {
    () => {
        concat!(
            "movq 0(%rsp), %rdi\n",
            "movq 8(%rsp), %rsi\n",
            "movq 16(%rsp), %rdx\n",
            "movq 24(%rsp), %rcx\n",
            "movq 32(%rsp), %r8\n",
            "movq 40(%rsp), %r9\n",
            "movq 48(%rsp), %rax\n",
            "movq 56(%rsp), %r11\n",
            "movaps 64(%rsp), %xmm0\n",
            "movaps 80(%rsp), %xmm1\n",
            "movaps 96(%rsp), %xmm2\n",
            "movaps 112(%rsp), %xmm3\n",
            "movaps 128(%rsp), %xmm4\n",
            "movaps 144(%rsp), %xmm5\n",
            "movaps 160(%rsp), %xmm6\n",
            "movaps 176(%rsp), %xmm7\n",
        )
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

trampoline!(
    "__flightrec_sleds_entry",
    "192",
    "0",
    save_arguments!(),
    restore_arguments!()
);
trampoline!(
    "__flightrec_sleds_tail_exit",
    "192",
    "2",
    save_arguments!(),
    restore_arguments!()
);
trampoline!(
    "__flightrec_sleds_exit",
    "48",
    "1",
    concat!(
        "movq %rax, 0(%rsp)\n",
        "movq %rdx, 8(%rsp)\n",
        "movaps %xmm0, 16(%rsp)\n",
        "movaps %xmm1, 32(%rsp)\n",
    ),
    concat!(
        "movq 0(%rsp), %rax\n",
        "movq 8(%rsp), %rdx\n",
        "movaps 16(%rsp), %xmm0\n",
        "movaps 32(%rsp), %xmm1\n",
    )
);
