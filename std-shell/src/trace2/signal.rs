//! `SIGPIPE` like git (spec §14): when the program lets `SIGPIPE` kill it
//! (the default disposition), Trace2 emits a `signal` event first, then
//! restores the default and re-raises, so the process still dies of it
//! (no `exit`/`atexit`). Rust programs ignore `SIGPIPE` unless told
//! otherwise; then nothing is installed and broken pipes are plain `EPIPE`
//! errors.
//!
//! Git ignores `SIGPIPE` around each trace `write()` so that a broken trace
//! destination disables itself instead of killing the process. Changing the
//! disposition twice per line costs two system calls, so the handler instead
//! recognises a `SIGPIPE` raised by Trace2's own write on the same thread
//! (it is delivered synchronously to the writing thread; see `write_mark.rs`)
//! and returns, leaving the write to fail with `EPIPE`.
//!
//! Other signals (`SIGTERM`, `SIGINT`, ...) get no event, as in git; an
//! `abort()` or a crash ends the trace at the last written line.

use flightrec_core::trace2::Event;

use super::emit::emit;
use super::runtime::{runtime, Loc, Runtime};
use super::write_mark;

/// Installs the handler when `SIGPIPE` has its default disposition.
pub(crate) fn install_sigpipe_handler() {
    // SAFETY: sigaction with a null new action only reads the current one into
    // `old`, a zeroed plain-data struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) } != 0 {
        return;
    }
    if old.sa_sigaction != libc::SIG_DFL {
        return;
    }
    // SAFETY: `handler` is an `extern "C" fn(c_int)` valid for the program's
    // life; the action struct is fully initialised (zeroed, empty mask).
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    unsafe {
        libc::sigemptyset(&mut new.sa_mask);
        if libc::sigaction(libc::SIGPIPE, &new, std::ptr::null_mut()) == 0 {
            write_mark::arm();
        }
    }
}

extern "C" fn handler(signo: libc::c_int) {
    if write_mark::writing() {
        return;
    }
    if let Some(rt) = runtime() {
        emit_signal(rt, signo);
        Runtime::disable();
    }
    // SAFETY: restoring the default action and raising the signal again are
    // async-signal-safe calls with valid arguments.
    unsafe {
        libc::signal(signo, libc::SIG_DFL);
        libc::raise(signo);
    }
}

fn emit_signal(rt: &Runtime, signo: i32) {
    emit(rt, Loc::caller(), &Event::Signal { signo });
}
