//! Marks Trace2's own destination writes on the writing thread, so that the
//! `SIGPIPE` handler ([`signal`](super::signal)) can tell a broken trace
//! destination (the write fails with `EPIPE` and the destination disables
//! itself) from a broken pipe of the program (the process dies of it).
//!
//! A `SIGPIPE` raised by `write()` is delivered synchronously to the writing
//! thread, so a thread-local flag set around the write is enough; it is only
//! set once the handler is installed ([`arm`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the `SIGPIPE` handler is installed: before that no write is
/// marked (nothing would read the mark).
static ARMED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static WRITING: Cell<bool> = const { Cell::new(false) };
}

/// Runs a destination write, marking it as Trace2's own for the handler.
#[inline]
pub(crate) fn while_writing<R>(f: impl FnOnce() -> R) -> R {
    if !ARMED.load(Ordering::Relaxed) {
        return f();
    }
    WRITING.with(|w| w.set(true));
    let r = f();
    WRITING.with(|w| w.set(false));
    r
}

/// Whether this thread is inside a write of Trace2's own.
pub(crate) fn writing() -> bool {
    WRITING.with(Cell::get)
}

/// Starts marking writes (the handler is installed).
pub(crate) fn arm() {
    ARMED.store(true, Ordering::Relaxed);
}
