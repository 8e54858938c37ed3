//! Writing the trace when the process dies of a fatal signal.
//!
//! Handled: `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE` and `SIGABRT` (a Rust panic with
//! `panic = "abort"` and `std::process::abort` end in `SIGABRT`). The handler runs
//! once per process, on the alternate signal stack when the thread has one (Rust
//! gives every thread it starts one, so a stack overflow is handled too). That
//! stack may be nearly full before the handler starts: the kernel's signal frame
//! takes about 3.3 KiB of it with AVX-512, and a program may have installed a
//! small one of its own. So the handler's first act is to move to a stack of its
//! own ([`DUMP_STACK_SIZE`], mapped at installation with a guard page below it)
//! and do everything else there, in every build profile; a second thread that
//! faults while the first dumps waits for the dump (bounded) on its own stack,
//! where it calls nothing deep:
//!
//! 1. it stops recording for good and runs the pause protocol (an atomic swap, the
//!    `membarrier` system call, and a bounded spin on the other threads' `busy`
//!    flags);
//! 2. flight recorder: it creates the file whose name was chosen at initialisation
//!    (`open` with `O_EXCL`) and `write`s the header and every readable thread's
//!    buffers; streaming: it publishes the partial buffers and `write`s everything
//!    pending to the open trace;
//! 3. it writes the names file and one line on stderr with `write(2)`;
//! 4. it puts back the handler that was installed before (Rust's stack-overflow
//!    handler, or the default action) and returns, so the fault happens again or
//!    `abort` raises again, and the process dies as it would have.
//!
//! Everything it calls is async-signal-safe: atomics, `membarrier`, `nanosleep`,
//! `open`, `write`, `close`, `sigaction`, `clock_gettime` (through `Instant`) and
//! reads of memory that was allocated before. It does not allocate, format, take a
//! lock of the standard library or touch stdio. The thread the signal
//! stopped is not waited for: its buffers are written up to its last complete
//! record (the record in progress is left out). What it cannot promise: the
//! buffers of another thread that stays inside a record past `grace_period_ms`
//! (that ring is left out), data of a thread whose ring was corrupted by the
//! fault itself, and anything after `SIGKILL` or an out-of-memory kill, which
//! cannot be caught. When it writes nothing, one line on stderr says why.
//!
//! With `flightrec_dump_on_signal=true` the same handler also takes `SIGINT`
//! and `SIGTERM`, but only where the program left them at their default
//! action (a program that handles them keeps its own handler): it writes the
//! trace, puts the default action back and raises the signal again, so the
//! process ends as it would have.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

const SIGNALS: [libc::c_int; 7] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGINT,
    libc::SIGTERM,
];

/// The first five of [`SIGNALS`] are faults; the others end a process on
/// request.
const FAULTS: usize = 5;

/// Which signals [`install`] takes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handled {
    /// `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGABRT`.
    pub faults: bool,
    /// `SIGINT` and `SIGTERM`, where their action is the default.
    pub termination: bool,
}

/// What the handler runs first: the runtime's dump, registered by `install`.
static ON_FATAL: OnceLock<fn()> = OnceLock::new();
/// The actions installed before ours, read before ours are installed.
static PREVIOUS: OnceLock<[libc::sigaction; SIGNALS.len()]> = OnceLock::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The handler's own stack: room for the dump's deepest call chain in a debug
/// build, many times over. Mapped without reserving swap; pages the dump never
/// touches cost nothing.
pub(crate) const DUMP_STACK_SIZE: usize = 256 * 1024;
/// The top of the handler's own stack (0: none could be mapped, or this target
/// cannot switch stacks; the handler then runs where it is).
static DUMP_STACK_TOP: AtomicUsize = AtomicUsize::new(0);
/// Taken by the one thread running on the handler's own stack.
static DUMP_STACK_TAKEN: AtomicBool = AtomicBool::new(false);
/// Set when the thread on the handler's own stack has finished the dump.
static DUMP_DONE: AtomicBool = AtomicBool::new(false);
/// How long a thread that faults while another dumps waits for that dump
/// before it lets its own signal take its course.
const WAIT_FOR_DUMP_MS: u64 = 10_000;

/// A `sigaction` for the default action.
fn default_action() -> libc::sigaction {
    // SAFETY: `sigaction` is a plain C struct for which all zeroes is valid (no
    // handler, no flags, an empty mask); SIG_DFL is 0.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_DFL;
    action
}

/// Installs the handler for the fatal signals (once per process); it calls
/// `on_fatal` and then lets the signal take its previous course.
pub(crate) fn install(on_fatal: fn(), handled: Handled) {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let _ = ON_FATAL.set(on_fatal);
    // Read every previous action first, so the handler always finds them.
    let previous = SIGNALS.map(|sig| {
        let mut prev = default_action();
        // SAFETY: a null new action only reads the current one into `prev`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut prev) } != 0 {
            // Keep a defined previous action: the default.
            prev = default_action();
        }
        prev
    });
    let _ = PREVIOUS.set(previous);
    if let Some(top) = map_dump_stack() {
        DUMP_STACK_TOP.store(top, Ordering::Release);
    }
    for (i, sig) in SIGNALS.into_iter().enumerate() {
        let wanted = if i < FAULTS {
            handled.faults
        } else {
            // Only where nobody handles or ignores it.
            handled.termination && previous[i].sa_sigaction == libc::SIG_DFL
        };
        if !wanted {
            continue;
        }
        let mut action = default_action();
        action.sa_sigaction = handler as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `action` is a valid `sigaction` (zeroed, then the handler, the
        // flags and an empty mask filled in); `handler` has the SA_SIGINFO signature.
        unsafe {
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Maps the handler's own stack, with an inaccessible guard page below it;
/// returns its top (page-aligned). `None` where the handler cannot switch
/// stacks or the mapping fails.
fn map_dump_stack() -> Option<usize> {
    if !CAN_SWITCH_STACKS {
        return None;
    }
    // SAFETY: sysconf reads a constant.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096);
    let len = DUMP_STACK_SIZE + page;
    // SAFETY: a fresh anonymous private mapping that nothing else refers to.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: the first page of the mapping just made; the stack grows down
    // towards it, so an overflow faults there instead of writing elsewhere.
    if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
        // SAFETY: the mapping just made, not used.
        unsafe { libc::munmap(base, len) };
        return None;
    }
    Some(base as usize + len)
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // Nothing deep before the switch: this frame is on whatever stack the
    // signal came on.
    let top = DUMP_STACK_TOP.load(Ordering::Acquire);
    if top != 0 && !DUMP_STACK_TAKEN.swap(true, Ordering::AcqRel) {
        // SAFETY: `top` is the top of the mapping `map_dump_stack` made for this
        // purpose, which only the thread that took `DUMP_STACK_TAKEN` uses.
        unsafe { call_on_stack(top, sig, info) };
        DUMP_DONE.store(true, Ordering::Release);
        DUMP_STACK_TAKEN.store(false, Ordering::Release);
        return;
    }
    if top != 0 {
        // Another thread is dumping on the handler's stack: let it finish
        // before this signal ends the process. Only system calls here.
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        for _ in 0..WAIT_FOR_DUMP_MS {
            if DUMP_DONE.load(Ordering::Acquire) {
                break;
            }
            // SAFETY: `nanosleep` reads `nap`; a null remainder is allowed.
            unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
        }
        restore_and_resend(sig, info);
        return;
    }
    handle(sig, info);
}

/// The handler's work, on its own stack (or, where there is none, on the
/// signal's): the dump, then the signal's previous course.
extern "C" fn handle(sig: libc::c_int, info: *mut libc::siginfo_t) {
    if let Some(on_fatal) = ON_FATAL.get() {
        on_fatal();
    }
    restore_and_resend(sig, info);
}

/// Puts back the action installed before ours for `sig` and, for a signal that
/// does not come back by itself, sends it again.
fn restore_and_resend(sig: libc::c_int, info: *mut libc::siginfo_t) {
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
        return;
    };
    let fallback;
    let previous = match PREVIOUS.get().and_then(|p| p.get(i)) {
        Some(p) => p,
        None => {
            fallback = default_action();
            &fallback
        }
    };
    // SAFETY: `previous` is a valid `sigaction` read by `sigaction` itself (or the
    // default); `sigaction` is async-signal-safe.
    unsafe {
        libc::sigaction(sig, previous, std::ptr::null_mut());
    }
    // A signal sent by a process (`kill`, `raise`, `abort`) does not come back by
    // itself; send it again: it stays pending while this handler runs and then
    // reaches the previous action. A fault repeats when the instruction runs again.
    // SAFETY: `info` is the kernel's siginfo for this delivery (SA_SIGINFO).
    // SIGINT and SIGTERM never come back by themselves (a terminal's SIGINT
    // has a positive si_code too).
    let sent = i >= FAULTS || (!info.is_null() && unsafe { (*info).si_code } <= 0);
    if sent {
        // SAFETY: `raise` is async-signal-safe.
        unsafe { libc::raise(sig) };
    }
}

/// Whether [`call_on_stack`] switches stacks on this target.
const CAN_SWITCH_STACKS: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Calls [`handle`]`(sig, info)` with the stack pointer at `top`, and comes back
/// to the caller's stack.
///
/// # Safety
/// `top` is the 16-byte aligned top of a writable stack that nothing else uses
/// meanwhile and that is large enough for `handle`.
#[cfg(target_arch = "x86_64")]
unsafe fn call_on_stack(top: usize, sig: libc::c_int, info: *mut libc::siginfo_t) {
    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t) = handle;
    // SAFETY: the caller's contract for `top`. `r12` is callee-saved, so `handle`
    // gives back the old stack pointer kept there; `call` leaves the new stack
    // aligned as the C ABI wants at a function's entry (`top` 16-byte aligned,
    // minus the return address); the arguments go in `rdi` and `rsi`.
    unsafe {
        std::arch::asm!(
            "mov r12, rsp",
            "mov rsp, {top}",
            "call {f}",
            "mov rsp, r12",
            top = in(reg) top,
            f = in(reg) f,
            in("rdi") i64::from(sig),
            in("rsi") info,
            out("r12") _,
            clobber_abi("C"),
        );
    }
}

/// See the x86-64 version.
///
/// # Safety
/// As there.
#[cfg(target_arch = "aarch64")]
unsafe fn call_on_stack(top: usize, sig: libc::c_int, info: *mut libc::siginfo_t) {
    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t) = handle;
    // SAFETY: the caller's contract for `top`; `x20` is callee-saved, so `handle`
    // gives back the old stack pointer kept there; `blr` clobbers `x30`, which
    // `clobber_abi("C")` declares; the arguments go in `x0` and `x1`.
    unsafe {
        std::arch::asm!(
            "mov x20, sp",
            "mov sp, {top}",
            "blr {f}",
            "mov sp, x20",
            top = in(reg) top,
            f = in(reg) f,
            in("x0") i64::from(sig),
            in("x1") info,
            out("x20") _,
            clobber_abi("C"),
        );
    }
}

/// No stack switch on this target ([`CAN_SWITCH_STACKS`] is false, so this is
/// never called).
///
/// # Safety
/// None needed.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
unsafe fn call_on_stack(_top: usize, sig: libc::c_int, info: *mut libc::siginfo_t) {
    handle(sig, info);
}
