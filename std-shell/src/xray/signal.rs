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
//!
//! With `flightrec_dump_on_signal=true` the same handler also takes `SIGINT`
//! and `SIGTERM`, but only where the program left them at their default
//! action (a program that handles them keeps its own handler): it writes the
//! trace, puts the default action back and raises the signal again, so the
//! process ends as it would have.

use std::sync::atomic::{AtomicBool, Ordering};
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

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if let Some(on_fatal) = ON_FATAL.get() {
        on_fatal();
    }
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
