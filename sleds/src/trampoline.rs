//! The trampolines patched sleds call, and the handlers they call.
//!
//! A patched entry or tail-exit sled runs `mov r10d, <id>; call <trampoline>`, a
//! patched exit sled `mov r10d, <id>; jmp <trampoline>` in place of its `ret`. The
//! trampoline saves what the interrupted code may still need (the SysV argument
//! registers at an entry or tail call, the return registers at an exit: see the
//! frame notes below), aligns the stack, calls the Rust function of its kind
//! ([`on_entry`], [`on_exit`], ...) with the id, restores and returns (for an exit
//! sled: to the function's caller). One callee per kind, each with flightrec's
//! record path inlined, so a sled costs one call from the trampoline.
//!
//! Event sleds are different: the compiler puts a call of `__xray_CustomEvent` /
//! `__xray_TypedEvent` with the event's arguments in `rdi`, `rsi` (and `rdx`)
//! inside the sled, and patching only turns the sled's first `jmp` over that call
//! into a 2-byte `nop`. The compiler treats the sled as an instruction that
//! changes no register, in the middle of a function body, so those two
//! trampolines save every register the SysV ABI lets a callee change, and the
//! flags.
//!
//! Re-entry guard: when a whole program is instrumented (Rust's `RUSTFLAGS`
//! reach every crate, this runtime and flightrec included), the handler's own
//! functions have sleds too. A one-byte thread-local flag, set around the handler
//! call in the trampoline itself, makes every sled reached from inside the handler
//! return at once, so the handler never recurses whatever it calls.

use std::arch::global_asm;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use flightrec::core::fdr::FunctionId;

#[cfg(sleds_fast_path)]
use crate::layout;

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

/// A handler for the entries of functions that log their first argument
/// (`__xray_set_handler_arg1`): function id, kind (3, `LOG_ARGS_ENTRY`) and the
/// argument.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// static LAST: AtomicU64 = AtomicU64::new(0);
/// unsafe extern "C" fn keep(_id: i32, _kind: u32, arg: u64) {
///     LAST.store(arg, Ordering::Relaxed);
/// }
/// let handler: flightrec_sleds::ArgHandler = keep;
/// // What a patched entry sled of a `xray_log_args(1)` function called with 42 does:
/// unsafe { handler(5, 3, 42) };
/// assert_eq!(LAST.load(Ordering::Relaxed), 42);
/// ```
pub type ArgHandler = unsafe extern "C" fn(i32, u32, u64);

/// A handler for custom events (`__xray_set_customevent_handler`): the event's
/// bytes and their number.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// static BYTES: AtomicUsize = AtomicUsize::new(0);
/// unsafe extern "C" fn count(_data: *mut std::ffi::c_void, size: usize) {
///     BYTES.fetch_add(size, Ordering::Relaxed);
/// }
/// let handler: flightrec_sleds::CustomEventHandler = count;
/// let mut event = *b"cache miss";
/// unsafe { handler(event.as_mut_ptr().cast(), event.len()) };
/// assert_eq!(BYTES.load(Ordering::Relaxed), 10);
/// ```
pub type CustomEventHandler = unsafe extern "C" fn(*mut c_void, usize);

/// A handler for typed events (`__xray_set_typedevent_handler`): the event type,
/// the event's bytes and their number.
///
/// ```
/// use std::sync::atomic::{AtomicU16, Ordering};
/// static TYPE: AtomicU16 = AtomicU16::new(0);
/// unsafe extern "C" fn keep(event_type: u16, _data: *const std::ffi::c_void, _size: usize) {
///     TYPE.store(event_type, Ordering::Relaxed);
/// }
/// let handler: flightrec_sleds::TypedEventHandler = keep;
/// unsafe { handler(7, b"x".as_ptr().cast(), 1) };
/// assert_eq!(TYPE.load(Ordering::Relaxed), 7);
/// ```
pub type TypedEventHandler = unsafe extern "C" fn(u16, *const c_void, usize);

/// The installed handlers, each null for flightrec's recording.
static HANDLER: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
static ARG_HANDLER: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
static CUSTOM_EVENT_HANDLER: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
static TYPED_EVENT_HANDLER: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// Whether the trampolines' inline record path is closed: 0 when open, else
/// [`GATE_HANDLER`] (a [`Handler`] is installed: entries and exits go to it)
/// and/or [`GATE_OFF`] ([`set_inline_record`]). The one byte the inline path
/// tests for both.
static INLINE_GATE: AtomicU8 = AtomicU8::new(0);
const GATE_HANDLER: u8 = 1;
const GATE_OFF: u8 = 2;

/// Opens or closes the trampolines' inline record path (see
/// [`crate::set_inline_record_path`]).
pub(crate) fn set_inline_record(on: bool) {
    if on {
        INLINE_GATE.fetch_and(!GATE_OFF, Ordering::Relaxed);
    } else {
        INLINE_GATE.fetch_or(GATE_OFF, Ordering::Relaxed);
    }
}

/// Whether the inline record path is open (no handler, not switched off).
pub(crate) fn inline_record() -> bool {
    INLINE_GATE.load(Ordering::Relaxed) == 0
}

/// Installs `handler` (`None`: record into flightrec's rings again).
pub(crate) fn set_handler(handler: Option<Handler>) {
    let p = handler.map_or(std::ptr::null_mut(), |h| h as *mut ());
    HANDLER.store(p, Ordering::Release);
    // Closed after the handler is in place, opened after it is gone: a sled that
    // still takes the inline path meanwhile records, as one that ran just before.
    if handler.is_some() {
        INLINE_GATE.fetch_or(GATE_HANDLER, Ordering::Release);
    } else {
        INLINE_GATE.fetch_and(!GATE_HANDLER, Ordering::Release);
    }
}

/// Installs the argument-logging entries' `handler` (`None`: as compiler-rt, the
/// [`Handler`] if one is installed, else record into flightrec's rings).
pub(crate) fn set_arg_handler(handler: Option<ArgHandler>) {
    let p = handler.map_or(std::ptr::null_mut(), |h| h as *mut ());
    ARG_HANDLER.store(p, Ordering::Release);
}

/// Installs the custom events' `handler` (`None`: record them again).
pub(crate) fn set_custom_event_handler(handler: Option<CustomEventHandler>) {
    let p = handler.map_or(std::ptr::null_mut(), |h| h as *mut ());
    CUSTOM_EVENT_HANDLER.store(p, Ordering::Release);
}

/// Installs the typed events' `handler` (`None`: record them again).
pub(crate) fn set_typed_event_handler(handler: Option<TypedEventHandler>) {
    let p = handler.map_or(std::ptr::null_mut(), |h| h as *mut ());
    TYPED_EVENT_HANDLER.store(p, Ordering::Release);
}

/// The installed [`Handler`], if any.
#[inline(always)]
fn handler() -> Option<Handler> {
    let p = HANDLER.load(Ordering::Acquire);
    // SAFETY: only `set_handler` stores here, a `Handler` or null.
    (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut (), Handler>(p) })
}

/// The fast path of entry, exit and tail-exit sleds (in optimised builds), tried first: records with
/// no call out of line, and so, as the sleds test checks in the linked program,
/// without touching a vector register. `false`: nothing was recorded; the
/// trampoline saves the vector registers and calls the full handler.
///
/// Nothing on it is locked or serialising (the sleds test checks that too):
/// the handler test and the runtime's state and `busy` flag are `Relaxed`
/// loads and stores (`Release` to clear `busy`), plain `mov`s on x86_64. The
/// pause protocol needs no fence on this side: a compiler fence keeps the
/// `busy` store before the second state load, and the pausing thread makes it
/// visible with a process-wide barrier (`flightrec::xray`'s `state` module).
#[cfg(sleds_fast_path)]
#[inline(always)]
fn record_fast(action: flightrec::core::fdr::FunctionAction, id: u32) -> bool {
    // Only the recording handler has a fast path.
    if !HANDLER.load(Ordering::Relaxed).is_null() {
        return false;
    }
    match FunctionId::new(id) {
        Ok(f) => flightrec::xray::try_record(action, f),
        Err(_) => false,
    }
}

/// Entry sleds' fast path ([`record_fast`]).
#[cfg(sleds_fast_path)]
#[no_mangle]
extern "C" fn __flightrec_sleds_entry_fast(id: u32) -> bool {
    record_fast(flightrec::core::fdr::FunctionAction::Enter, id)
}

/// Exit sleds' fast path ([`record_fast`]).
#[cfg(sleds_fast_path)]
#[no_mangle]
extern "C" fn __flightrec_sleds_exit_fast(id: u32) -> bool {
    record_fast(flightrec::core::fdr::FunctionAction::Exit, id)
}

/// Tail-exit sleds' fast path ([`record_fast`]).
#[cfg(sleds_fast_path)]
#[no_mangle]
extern "C" fn __flightrec_sleds_tail_exit_fast(id: u32) -> bool {
    record_fast(flightrec::core::fdr::FunctionAction::TailExit, id)
}

/// Entry sleds. Called by the trampoline, never re-entered on one thread.
extern "C" fn on_entry(id: u32) {
    if let Some(h) = handler() {
        // SAFETY: the program installed this handler for exactly these calls.
        unsafe { h(id as i32, 0) };
    } else if let Ok(f) = FunctionId::new(id) {
        flightrec::xray::record_enter(f);
    }
}

/// Exit sleds, as [`on_entry`].
extern "C" fn on_exit(id: u32) {
    if let Some(h) = handler() {
        // SAFETY: as in `on_entry`.
        unsafe { h(id as i32, 1) };
    } else if let Ok(f) = FunctionId::new(id) {
        flightrec::xray::record_exit(f);
    }
}

/// Tail-exit sleds, as [`on_entry`].
extern "C" fn on_tail_exit(id: u32) {
    if let Some(h) = handler() {
        // SAFETY: as in `on_entry`.
        unsafe { h(id as i32, 2) };
    } else if let Ok(f) = FunctionId::new(id) {
        flightrec::xray::record_tail_exit(f);
    }
}

/// Entry sleds of functions that log their first argument, `arg`: the argument
/// handler if installed, else (as compiler-rt's trampoline) the [`Handler`]
/// with kind 3, else an enter-with-argument record.
extern "C" fn on_log_args_entry(id: u32, arg: u64) {
    let p = ARG_HANDLER.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: only `set_arg_handler` stores here, an `ArgHandler` or null.
        let h = unsafe { std::mem::transmute::<*mut (), ArgHandler>(p) };
        // SAFETY: the program installed this handler for exactly these calls.
        unsafe { h(id as i32, 3, arg) };
    } else if let Some(h) = handler() {
        // SAFETY: as in `on_entry`.
        unsafe { h(id as i32, 3) };
    } else if let Ok(f) = FunctionId::new(id) {
        flightrec::xray::record_enter_with_arg(f, arg);
    }
}

/// The event's bytes, if the program passed any. The compiler passes the size
/// as a 32-bit value (`llvm.xray.customevent`'s `i32`): the upper half of the
/// register is not part of it.
///
/// # Safety
/// `data` points to at least `size as u32` readable bytes or is null.
unsafe fn payload<'a>(data: *const c_void, size: u64) -> Option<&'a [u8]> {
    let len = size as u32 as usize;
    if data.is_null() || len == 0 {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })
}

/// `__xray_customevent(data, size)` at a patched sled.
///
/// # Safety
/// As [`payload`]: `__xray_customevent`'s contract.
unsafe extern "C" fn on_custom_event(data: *mut c_void, size: u64) {
    let p = CUSTOM_EVENT_HANDLER.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: only `set_custom_event_handler` stores here.
        let h = unsafe { std::mem::transmute::<*mut (), CustomEventHandler>(p) };
        // SAFETY: the program installed this handler for exactly these calls.
        unsafe { h(data, size as u32 as usize) };
    // SAFETY: the caller's contract.
    } else if let Some(bytes) = unsafe { payload(data, size) } {
        flightrec::xray::custom_event(bytes);
    }
}

/// `__xray_typedevent(type, data, size)` at a patched sled (the type in the low
/// 16 bits of its register).
///
/// # Safety
/// As [`payload`]: `__xray_typedevent`'s contract.
unsafe extern "C" fn on_typed_event(event_type: u64, data: *const c_void, size: u64) {
    let event_type = event_type as u16;
    let p = TYPED_EVENT_HANDLER.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: only `set_typed_event_handler` stores here.
        let h = unsafe { std::mem::transmute::<*mut (), TypedEventHandler>(p) };
        // SAFETY: the program installed this handler for exactly these calls.
        unsafe { h(event_type, data, size as u32 as usize) };
    // SAFETY: the caller's contract.
    } else if let Some(bytes) = unsafe { payload(data, size) } {
        flightrec::xray::typed_event(event_type, bytes);
    }
}

extern "C" {
    fn __flightrec_sleds_entry();
    fn __flightrec_sleds_log_args_entry();
    fn __flightrec_sleds_exit();
    fn __flightrec_sleds_tail_exit();
}

/// Address of the trampoline entry sleds call.
pub(crate) fn entry_trampoline() -> usize {
    __flightrec_sleds_entry as *const () as usize
}

/// Address of the trampoline the entry sleds of argument-logging functions call.
pub(crate) fn log_args_entry_trampoline() -> usize {
    __flightrec_sleds_log_args_entry as *const () as usize
}

/// Address of the trampoline exit sleds jump to.
pub(crate) fn exit_trampoline() -> usize {
    __flightrec_sleds_exit as *const () as usize
}

/// Address of the trampoline tail-exit sleds call.
pub(crate) fn tail_exit_trampoline() -> usize {
    __flightrec_sleds_tail_exit as *const () as usize
}

// Every trampoline keeps a frame in rbp (so unwinders and debuggers see through
// it), aligns the stack to 16 bytes, saves, runs the guarded handler call and
// restores.
//
// Entry: at a function's first instruction the arguments are live (rdi, rsi,
// rdx, rcx, r8, r9, al for variadic calls, xmm0-xmm7); r11 is not (a scratch
// register at a call) and r10 is the sled's own. 7 general registers at 0..56,
// xmm0-xmm7 at 64..192.
//
// Tail exit: the same, and r11 may hold an indirect tail call's target (at 56).
//
// Exit: at a `ret` only the return registers are live (rax, rdx, xmm0, xmm1):
// compiler-rt's exit trampoline saves the same.
//
// The flags are not saved at these: the SysV ABI does not preserve them across
// calls, and every such sled sits at a call boundary (function entry, `ret`, or
// just before a tail call's unconditional `jmp`; a conditional tail call jumps
// around its sled). compiler-rt saves them anyway; `popfq` alone costs about 5 ns
// per sled here.
//
// Events: everything a callee may change (rax, rcx, rdx, rsi, rdi, r8-r11,
// xmm0-xmm15 and the flags); the upper halves of ymm/zmm registers are not saved
// (compiler-rt does not save them either: code built for AVX that keeps a ymm
// value live across an event sled could see it change if the handler uses AVX).
macro_rules! guarded_call {
    ($setup:expr) => {
        concat!(
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11\n",
            "cmpb $0, %fs:(%r11)\n",
            "jne 2f\n",
            "movb $1, %fs:(%r11)\n",
            $setup,
            "call {handler}@PLT\n",
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11\n",
            "movb $0, %fs:(%r11)\n",
            "2:\n",
        )
    };
}

macro_rules! trampoline {
    ($name:literal, $hidden:literal, $frame:literal, $handler:path,
     $pre:expr, $save:expr, $setup:expr, $restore:expr, $post:expr) => {
        global_asm!(
            ".pushsection .text.flightrec_sleds_trampolines,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", $name),
            concat!(".", $hidden, " ", $name),
            concat!(".type ", $name, ",@function"),
            concat!($name, ":"),
            ".cfi_startproc",
            $pre,
            "pushq %rbp",
            ".cfi_adjust_cfa_offset 8",
            ".cfi_rel_offset %rbp, 0",
            "movq %rsp, %rbp",
            ".cfi_def_cfa_register %rbp",
            concat!("subq $", $frame, ", %rsp"),
            "andq $-16, %rsp",
            $save,
            guarded_call!($setup),
            $restore,
            "movq %rbp, %rsp",
            ".cfi_def_cfa_register %rsp",
            "popq %rbp",
            ".cfi_adjust_cfa_offset -8",
            ".cfi_restore %rbp",
            $post,
            "retq",
            ".cfi_endproc",
            concat!(".size ", $name, ", . - ", $name),
            ".popsection",
            handler = sym $handler,
            options(att_syntax)
        );
    };
}

// Entry, exit and tail exit: the general registers first, then the fast path
// (`$fast(id) -> bool`, which calls nothing and touches no vector register);
// only when it returns false are the vector registers saved around the full
// handler `$slow(id)`, in a block after the `ret`, so that a recorded sled runs
// straight through with no taken branch but the calls and returns. The id is kept at `$id` in the frame across the first call.
// Built without optimisation (see build.rs), the same trampolines save every
// register first and call only the full handler.
#[cfg(not(sleds_fast_path))]
macro_rules! fast_trampoline {
    ($name:literal, $frame:literal, $id:literal, $fast:path, $slow:path,
     $save:expr, $save_vectors:expr, $restore_vectors:expr, $restore:expr,
     $inline:expr) => {
        trampoline!(
            $name,
            "hidden",
            $frame,
            $slow,
            // Empty here: no inline record path without optimisation.
            $inline,
            concat!($save, $save_vectors),
            "movl %r10d, %edi\n",
            concat!($restore_vectors, $restore),
            ""
        );
    };
}

#[cfg(sleds_fast_path)]
macro_rules! fast_trampoline {
    ($name:literal, $frame:literal, $id:literal, $fast:path, $slow:path,
     $save:expr, $save_vectors:expr, $restore_vectors:expr, $restore:expr,
     $inline:expr) => {
        global_asm!(
            ".pushsection .text.flightrec_sleds_trampolines,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", $name),
            concat!(".hidden ", $name),
            concat!(".type ", $name, ",@function"),
            concat!($name, ":"),
            ".cfi_startproc",
            $inline,
            "pushq %rbp",
            ".cfi_adjust_cfa_offset 8",
            ".cfi_rel_offset %rbp, 0",
            "movq %rsp, %rbp",
            ".cfi_def_cfa_register %rbp",
            concat!("subq $", $frame, ", %rsp"),
            "andq $-16, %rsp",
            $save,
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11",
            "cmpb $0, %fs:(%r11)",
            "jne 2f",
            "movb $1, %fs:(%r11)",
            concat!("movl %r10d, ", $id, "(%rsp)"),
            "movl %r10d, %edi",
            "call {fast}@PLT",
            "testb %al, %al",
            "jz 3f",
            "1:",
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %r11",
            "movb $0, %fs:(%r11)",
            "2:",
            $restore,
            "movq %rbp, %rsp",
            ".cfi_remember_state",
            ".cfi_def_cfa_register %rsp",
            "popq %rbp",
            ".cfi_adjust_cfa_offset -8",
            ".cfi_restore %rbp",
            "retq",
            // The declined fast path, out of the recorded path's straight line.
            ".cfi_restore_state",
            "3:",
            $save_vectors,
            concat!("movl ", $id, "(%rsp), %edi"),
            "call {slow}@PLT",
            $restore_vectors,
            "jmp 1b",
            ".cfi_endproc",
            concat!(".size ", $name, ", . - ", $name),
            ".popsection",
            fast = sym $fast,
            slow = sym $slow,
            gate = sym INLINE_GATE,
            rdtscp = sym flightrec::xray::sled_abi::USE_RDTSCP,
            state = sym flightrec::xray::sled_abi::STATE,
            recording = const layout::RECORDING,
            ring_busy = const layout::RING_BUSY,
            ring_recorder = const layout::RING_RECORDER,
            w_base = const layout::BASE,
            w_cur = const layout::CUR,
            w_fast_end = const layout::FAST_END,
            w_fast_end_exit = const layout::FAST_END_EXIT,
            w_latest_cpu = const layout::LATEST_CPU,
            w_latest_tsc = const layout::LATEST_TSC,
            w_threshold = const layout::THRESHOLD,
            w_undo_start = const layout::UNDO_START,
            w_version = const layout::VERSION,
            v1 = const layout::VERSION_V1,
            options(att_syntax)
        );
    };
}

// The inline record path at the top of the entry, exit and tail-exit
// trampolines: the steady state of `flightrec::xray::try_record` (the runtime
// recording, the thread's ring taken and not busy, the recorder's writer with
// room, the same CPU and a delta that fits 32 bits) in assembly, with no call
// and no frame. It uses `rax` and `rdx` (`rdtsc`), `rcx`, `rsi` and `r11`
// (`r10` is the sled's own) and saves of them only what is live at its sled:
// all but `r11` at an entry, all at a tail exit, `rax` and `rdx` at an exit
// (as the Rust path's exit trampoline). It writes exactly the record the Rust
// path writes, as the writer's 64-bit record path does it
// (`BufferWriter::function_word`, `function_without_calls`; the offsets come
// from `layout`): the record's end compared with the writer's fast end (the
// address `base + limit` when a record needs nothing but its store, else 0), the
// record stored through the write pointer `cur`, `cur` and the base time
// advanced. It declines, having changed nothing, for everything else: the
// re-entry flag set, a handler installed or the path switched off, no ring or
// recorder, a busy ring (a signal handler inside a record), a paused runtime, a
// full buffer or one whose records need more than their store (a fast end of
// 0), a new CPU or a delta of 2^32 ticks or more (a metadata record first).
// Short-call elision (an exit with a threshold, whose fast end for exits is 0)
// is done here too, as the Rust path does it. Declining pops what it pushed and
// goes on into the trampoline's Rust fast path, then its full path, as before.
//
// `$action2`: the action's code shifted left by one (its bits in the record's
// first byte); `$room`: the room test (an entry's against `fast_end`, going to
// the decline; an exit's against `fast_end_exit`, going to the elision);
// `$elide`: only an exit or tail exit (the elision, out of line);
// `$push_scratch` / `$pop_scratch`: what else the kind must keep of `rcx`,
// `rsi` and `r11` (at an entry `rcx` and `rsi` carry arguments; at a tail exit
// also `r11`, an indirect tail call's target; at a `ret` none of them is live).
//
// The pause protocol's order is `try_record`'s: `busy` stored before the second
// load of the state (program order here; the pausing thread's process-wide
// barrier makes the store visible), `busy` cleared last by a plain store
// (a release store on x86_64).
#[cfg(sleds_fast_path)]
macro_rules! inline_record {
    ($action2:literal, $room:expr, $elide:expr, $push_scratch:expr, $pop_scratch:expr) => {
        concat!(
            // (Every kind gets every operand; an entry uses none of these.)
            "# fast_end_exit {w_fast_end_exit}, threshold {w_threshold}, ",
            "undo_start {w_undo_start}, base {w_base}, version {w_version} {v1}\n",
            "pushq %rax\n.cfi_adjust_cfa_offset 8\n",
            "pushq %rdx\n.cfi_adjust_cfa_offset 8\n",
            $push_scratch,
            // A handler installed or the path switched off.
            "movq {gate}@GOTPCREL(%rip), %rax\n",
            "cmpb $0, (%rax)\n",
            "jne 28f\n",
            // An id of more than 28 bits (`FunctionId::new`).
            "cmpl $0x0fffffff, %r10d\n",
            "ja 28f\n",
            // The trampolines' re-entry flag.
            "movq __flightrec_sleds_busy@GOTTPOFF(%rip), %rax\n",
            "cmpb $0, %fs:(%rax)\n",
            "jne 28f\n",
            // Recording; the thread's ring; not busy; busy; still recording.
            "movq {state}@GOTPCREL(%rip), %rcx\n",
            "cmpb ${recording}, (%rcx)\n",
            "jne 28f\n",
            "movq ",
            layout::current_slot!(),
            "@GOTTPOFF(%rip), %rsi\n",
            "movq %fs:(%rsi), %rsi\n",
            "testq %rsi, %rsi\n",
            "jz 28f\n",
            "cmpb $0, {ring_busy}(%rsi)\n",
            "jne 28f\n",
            "movb $1, {ring_busy}(%rsi)\n",
            "cmpb ${recording}, (%rcx)\n",
            "jne 27f\n",
            // The recorder (its writer's fields are at `w_*`).
            "movq {ring_recorder}(%rsi), %rcx\n",
            "testq %rcx, %rcx\n",
            "jz 27f\n",
            // The clock: `rdtsc` (CPU 0) unless `rdtscp` was selected (`30`);
            // the same CPU as the latest record; a delta that fits 32 bits.
            "movq {rdtscp}@GOTPCREL(%rip), %rax\n",
            "cmpb $0, (%rax)\n",
            "jne 30f\n",
            "rdtsc\n",
            "cmpl $0, {w_latest_cpu}(%rcx)\n",
            "jne 27f\n",
            "31:\n",
            "shlq $32, %rdx\n",
            "orq %rdx, %rax\n",
            "movq %rax, %r11\n",
            "subq {w_latest_tsc}(%rcx), %rax\n",
            "movq %rax, %rdx\n",
            "shrq $32, %rdx\n",
            "jnz 27f\n",
            "shll $4, %r10d\n",
            // Room: cur + 8 <= the fast end (`rdx`: the record's end).
            "movq {w_cur}(%rcx), %rdx\n",
            "addq $8, %rdx\n",
            $room,
            // The record, delta << 32 | id << 4 | action << 1, at cur; cur and
            // the base time advanced.
            "shlq $32, %rax\n",
            "orl $",
            $action2,
            ", %r10d\n",
            "orq %r10, %rax\n",
            "movq %rax, -8(%rdx)\n",
            "movq %rdx, {w_cur}(%rcx)\n",
            "movq %r11, {w_latest_tsc}(%rcx)\n",
            "23:\n",
            "movb $0, {ring_busy}(%rsi)\n",
            ".cfi_remember_state\n",
            $pop_scratch,
            "popq %rdx\n.cfi_adjust_cfa_offset -8\n",
            "popq %rax\n.cfi_adjust_cfa_offset -8\n",
            "retq\n",
            ".cfi_restore_state\n",
            $elide,
            // `rdtscp`: the CPU in the low 12 bits of `IA32_TSC_AUX` (`TscP`).
            "30:\n",
            "movq %rcx, %r11\n",
            "rdtscp\n",
            "andl $0xfff, %ecx\n",
            "cmpl %ecx, {w_latest_cpu}(%r11)\n",
            "movq %r11, %rcx\n",
            "jne 27f\n",
            "jmp 31b\n",
            // Declined with the id shifted (no room); after setting busy;
            // declined.
            "29:\n",
            "shrl $4, %r10d\n",
            "27:\n",
            "movb $0, {ring_busy}(%rsi)\n",
            "28:\n",
            $pop_scratch,
            "popq %rdx\n.cfi_adjust_cfa_offset -8\n",
            "popq %rax\n.cfi_adjust_cfa_offset -8\n",
        )
    };
}

/// An entry's room test: against `fast_end`; without room, declined.
#[cfg(sleds_fast_path)]
macro_rules! entry_room {
    () => {
        "cmpq {w_fast_end}(%rcx), %rdx\nja 29f\n"
    };
}

/// An exit's or tail exit's room test: against `fast_end_exit` (0 with a
/// short-call threshold); failing it, the elision below decides.
#[cfg(sleds_fast_path)]
macro_rules! exit_room {
    () => {
        "cmpq {w_fast_end_exit}(%rcx), %rdx\nja 24f\n"
    };
}

/// Short-call elision (`BufferWriter::elide`), out of the straight line: with
/// `rax` the delta, `r10d` the id << 4 and `r11` the time. Without a threshold
/// the exit's room test failed for want of room (or a fast end of 0): declined.
/// When the record just before the write position (inside the erasable run) is
/// this function's entry and the call lasted less than the threshold, the entry
/// is erased (`cur` back 8 bytes, base time back by its delta, the
/// BufferExtents count brought up to date except in version 1) and nothing is
/// written; else the exit is recorded (`20`) with an entry's room test
/// (`fast_end`) and, for an exit (`$undo`), the erasable run ends after it
/// (`undo_start`, from `base`).
#[cfg(sleds_fast_path)]
macro_rules! elide {
    ($action2:literal, $undo:expr) => {
        concat!(
            "24:\n",
            "cmpq $0, {w_threshold}(%rcx)\n",
            "je 29f\n",
            "cmpq {w_threshold}(%rcx), %rax\n",
            "jae 20f\n",
            // pos >= undo_start + 8: base + undo_start + 8 <= cur.
            "movq {w_undo_start}(%rcx), %rdx\n",
            "addq {w_base}(%rcx), %rdx\n",
            "addq $8, %rdx\n",
            "cmpq {w_cur}(%rcx), %rdx\n",
            "ja 20f\n",
            "movq {w_cur}(%rcx), %rdx\n",
            // An entry (action bits 0) of this id; bit 0 is the record type.
            "movl -8(%rdx), %eax\n",
            "andl $-2, %eax\n",
            "cmpl %r10d, %eax\n",
            "jne 26f\n",
            "movl -4(%rdx), %eax\n",
            "subq %rax, {w_latest_tsc}(%rcx)\n",
            "subq $8, %rdx\n",
            "movq %rdx, {w_cur}(%rcx)\n",
            "cmpb ${v1}, {w_version}(%rcx)\n",
            "je 23b\n",
            // The BufferExtents count (bytes 1..9): pos - 16.
            "subq {w_base}(%rcx), %rdx\n",
            "subq $16, %rdx\n",
            "movq {w_base}(%rcx), %rax\n",
            "movq %rdx, 1(%rax)\n",
            "jmp 23b\n",
            // Not elided: the delta again, then the record.
            "26:\n",
            "movq %r11, %rax\n",
            "subq {w_latest_tsc}(%rcx), %rax\n",
            "20:\n",
            "movq {w_cur}(%rcx), %rdx\n",
            "addq $8, %rdx\n",
            "cmpq {w_fast_end}(%rcx), %rdx\n",
            "ja 29f\n",
            "shlq $32, %rax\n",
            "orl $",
            $action2,
            ", %r10d\n",
            "orq %r10, %rax\n",
            "movq %rax, -8(%rdx)\n",
            "movq %rdx, {w_cur}(%rcx)\n",
            "movq %r11, {w_latest_tsc}(%rcx)\n",
            $undo,
            "jmp 23b\n",
        )
    };
}

#[cfg(not(sleds_fast_path))]
macro_rules! inline_record {
    ($($t:tt)*) => {
        ""
    };
}

/// The argument registers of an entry or a tail call: 7 general registers at
/// 0..56 (`$r11`: the tail call's target at 56).
macro_rules! save_argument_gprs {
    ($r11:literal) => {
        concat!(
            "movq %rdi, 0(%rsp)\n",
            "movq %rsi, 8(%rsp)\n",
            "movq %rdx, 16(%rsp)\n",
            "movq %rcx, 24(%rsp)\n",
            "movq %r8, 32(%rsp)\n",
            "movq %r9, 40(%rsp)\n",
            "movq %rax, 48(%rsp)\n",
            $r11,
        )
    };
}

macro_rules! restore_argument_gprs {
    ($r11:literal) => {
        concat!(
            "movq 0(%rsp), %rdi\n",
            "movq 8(%rsp), %rsi\n",
            "movq 16(%rsp), %rdx\n",
            "movq 24(%rsp), %rcx\n",
            "movq 32(%rsp), %r8\n",
            "movq 40(%rsp), %r9\n",
            "movq 48(%rsp), %rax\n",
            $r11,
        )
    };
}

/// The vector argument registers, xmm0-xmm7 at 64..192.
macro_rules! save_argument_vectors {
    () => {
        concat!(
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

macro_rules! restore_argument_vectors {
    () => {
        concat!(
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

/// Every caller-saved register: 9 general registers at 0..72, xmm0-xmm15 at
/// 80..336 (event trampolines).
macro_rules! save_all {
    () => {
        concat!(
            save_argument_gprs!("movq %r10, 56(%rsp)\nmovq %r11, 64(%rsp)\n"),
            "movaps %xmm0, 80(%rsp)\n",
            "movaps %xmm1, 96(%rsp)\n",
            "movaps %xmm2, 112(%rsp)\n",
            "movaps %xmm3, 128(%rsp)\n",
            "movaps %xmm4, 144(%rsp)\n",
            "movaps %xmm5, 160(%rsp)\n",
            "movaps %xmm6, 176(%rsp)\n",
            "movaps %xmm7, 192(%rsp)\n",
            "movaps %xmm8, 208(%rsp)\n",
            "movaps %xmm9, 224(%rsp)\n",
            "movaps %xmm10, 240(%rsp)\n",
            "movaps %xmm11, 256(%rsp)\n",
            "movaps %xmm12, 272(%rsp)\n",
            "movaps %xmm13, 288(%rsp)\n",
            "movaps %xmm14, 304(%rsp)\n",
            "movaps %xmm15, 320(%rsp)\n",
        )
    };
}

macro_rules! restore_all {
    () => {
        concat!(
            restore_argument_gprs!("movq 56(%rsp), %r10\nmovq 64(%rsp), %r11\n"),
            "movaps 80(%rsp), %xmm0\n",
            "movaps 96(%rsp), %xmm1\n",
            "movaps 112(%rsp), %xmm2\n",
            "movaps 128(%rsp), %xmm3\n",
            "movaps 144(%rsp), %xmm4\n",
            "movaps 160(%rsp), %xmm5\n",
            "movaps 176(%rsp), %xmm6\n",
            "movaps 192(%rsp), %xmm7\n",
            "movaps 208(%rsp), %xmm8\n",
            "movaps 224(%rsp), %xmm9\n",
            "movaps 240(%rsp), %xmm10\n",
            "movaps 256(%rsp), %xmm11\n",
            "movaps 272(%rsp), %xmm12\n",
            "movaps 288(%rsp), %xmm13\n",
            "movaps 304(%rsp), %xmm14\n",
            "movaps 320(%rsp), %xmm15\n",
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

fast_trampoline!(
    "__flightrec_sleds_entry",
    "208",
    "192",
    __flightrec_sleds_entry_fast,
    on_entry,
    save_argument_gprs!(""),
    save_argument_vectors!(),
    restore_argument_vectors!(),
    restore_argument_gprs!(""),
    inline_record!(
        "0",
        entry_room!(),
        "",
        "pushq %rcx\n.cfi_adjust_cfa_offset 8\npushq %rsi\n.cfi_adjust_cfa_offset 8\n",
        "popq %rsi\n.cfi_adjust_cfa_offset -8\npopq %rcx\n.cfi_adjust_cfa_offset -8\n"
    )
);
trampoline!(
    "__flightrec_sleds_log_args_entry",
    "hidden",
    "192",
    on_log_args_entry,
    "",
    concat!(save_argument_gprs!(""), save_argument_vectors!()),
    "movq %rdi, %rsi\nmovl %r10d, %edi\n",
    concat!(restore_argument_vectors!(), restore_argument_gprs!("")),
    ""
);
fast_trampoline!(
    "__flightrec_sleds_tail_exit",
    "208",
    "192",
    __flightrec_sleds_tail_exit_fast,
    on_tail_exit,
    save_argument_gprs!("movq %r11, 56(%rsp)\n"),
    save_argument_vectors!(),
    restore_argument_vectors!(),
    restore_argument_gprs!("movq 56(%rsp), %r11\n"),
    inline_record!(
        "4",
        exit_room!(),
        elide!("4", ""),
        concat!(
            "pushq %rcx\n.cfi_adjust_cfa_offset 8\npushq %rsi\n.cfi_adjust_cfa_offset 8\n",
            "pushq %r11\n.cfi_adjust_cfa_offset 8\n"
        ),
        concat!(
            "popq %r11\n.cfi_adjust_cfa_offset -8\n",
            "popq %rsi\n.cfi_adjust_cfa_offset -8\npopq %rcx\n.cfi_adjust_cfa_offset -8\n"
        )
    )
);
// At a `ret`: rax and rdx at 0 and 8, xmm0 and xmm1 at 16 and 32, the id at 48.
fast_trampoline!(
    "__flightrec_sleds_exit",
    "64",
    "48",
    __flightrec_sleds_exit_fast,
    on_exit,
    "movq %rax, 0(%rsp)\nmovq %rdx, 8(%rsp)\n",
    "movaps %xmm0, 16(%rsp)\nmovaps %xmm1, 32(%rsp)\n",
    "movaps 16(%rsp), %xmm0\nmovaps 32(%rsp), %xmm1\n",
    "movq 0(%rsp), %rax\nmovq 8(%rsp), %rdx\n",
    inline_record!(
        "2",
        exit_room!(),
        elide!(
            "2",
            "subq {w_base}(%rcx), %rdx\nmovq %rdx, {w_undo_start}(%rcx)\n"
        ),
        "",
        ""
    )
);
// The names compiler-rt gives them: clang's event sleds call these symbols. The
// arguments are already in place (rdi, rsi and, for typed events, rdx).
trampoline!(
    "__xray_CustomEvent",
    "hidden",
    "336",
    on_custom_event,
    "pushfq\n.cfi_adjust_cfa_offset 8\n",
    save_all!(),
    "",
    restore_all!(),
    "popfq\n.cfi_adjust_cfa_offset -8\n"
);
trampoline!(
    "__xray_TypedEvent",
    "hidden",
    "336",
    on_typed_event,
    "pushfq\n.cfi_adjust_cfa_offset 8\n",
    save_all!(),
    "",
    restore_all!(),
    "popfq\n.cfi_adjust_cfa_offset -8\n"
);
