//! Writing the trace when the process dies of a fatal signal.
//!
//! Handled: `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE` and `SIGABRT` (a Rust panic with
//! `panic = "abort"` and `std::process::abort` end in `SIGABRT`). The handler runs
//! once per process, on the alternate signal stack when the thread has one (Rust
//! gives every thread it starts one, so a stack overflow is handled too):
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
//! lock of the standard library or touch stdio. What it cannot promise: the
//! buffers of a thread that was inside a record when the signal came (that ring
//! is left out after `grace_period_ms`), data of a thread whose ring was corrupted
//! by the fault itself, and anything after `SIGKILL` or an out-of-memory kill, which
//! cannot be caught.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};

const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The actions installed before ours, written once by `install` before any of our
/// handlers can run, then only read.
struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; 5]>);
// SAFETY: written only in `install` (serialised by `INSTALLED`) before the handlers
// that read it are installed.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous(UnsafeCell::new([const { MaybeUninit::uninit() }; 5]));
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the handler for the fatal signals (once per process).
pub(crate) fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: a zeroed `sigaction` is a valid starting value; we fill in the
        // handler, flags and an empty mask. `PREVIOUS` slot `i` is written by this
        // call before our handler for `sig` exists.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let prev = (*PREVIOUS.0.get())[i].as_mut_ptr();
            if libc::sigaction(sig, &action, prev) != 0 {
                // Keep a defined previous action: the default.
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                prev.write(dfl);
            }
        }
    }
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if let Some(rt) = super::runtime::runtime() {
        rt.fatal_dump();
    }
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
        return;
    };
    // SAFETY: `PREVIOUS[i]` was initialised by `install` before this handler was
    // installed; `sigaction` is async-signal-safe.
    unsafe {
        libc::sigaction(sig, (*PREVIOUS.0.get())[i].as_ptr(), std::ptr::null_mut());
    }
    // A signal sent by a process (`kill`, `raise`, `abort`) does not come back by
    // itself; send it again: it stays pending while this handler runs and then
    // reaches the previous action. A fault repeats when the instruction runs again.
    // SAFETY: `info` is the kernel's siginfo for this delivery (SA_SIGINFO).
    let sent = !info.is_null() && unsafe { (*info).si_code } <= 0;
    if sent {
        // SAFETY: `raise` is async-signal-safe.
        unsafe { libc::raise(sig) };
    }
}
