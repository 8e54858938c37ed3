//! A forked child's runtime.
//!
//! `fork` copies the parent's rings, full of the parent's records, and leaves
//! the child one thread. The child's trace must hold only the child's records,
//! labelled with its own process and thread ids (as compiler-rt's), and must
//! not touch the parent's files. So a handler `init` registers with
//! `pthread_atfork` runs in the child, before `fork` returns there:
//!
//! * flight recorder: every ring is made free again (the parent's records are
//!   the parent's trace's), the counters start from zero, the process id is
//!   the child's, and the one thread forgets its ring, so its next record
//!   claims one with its own thread id; the child writes its own trace at exit,
//!   on `dump` and on a fatal signal, under a new name;
//! * streaming: the open trace is the parent's and the writer thread stayed in
//!   the parent, so the child records nothing; at its exit it says so in one
//!   line.
//!
//! Everything here is async-signal-safe (atomics, `getpid`), as a handler run
//! in the child of a multi-threaded process must be.

use std::sync::atomic::Ordering;

use flightrec_core::fdr::ring::Policy;

use super::claim::forget_ring_after_fork;
use super::pool::FREE;
use super::runtime::{runtime, Runtime};
use super::state::{FINISHED, STATE};

/// Registers [`in_child`] (once per process: `init` runs once).
pub(super) fn register() {
    // SAFETY: registers a plain `extern "C" fn()` that never unwinds.
    unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
}

extern "C" fn in_child() {
    if let Some(rt) = runtime() {
        rt.after_fork();
    }
}

impl Runtime {
    /// See the module's documentation.
    fn after_fork(&self) {
        // SAFETY: getpid has no preconditions.
        self.pid.store(unsafe { libc::getpid() }, Ordering::Relaxed);
        forget_ring_after_fork();
        self.pause_protocol.reset_after_fork();
        if self.policy == Policy::Streaming {
            self.writer_active.store(false, Ordering::Release);
            self.forked_stream.store(true, Ordering::Relaxed);
            STATE.store(FINISHED, Ordering::SeqCst);
            return;
        }
        for r in self.pool.rings.iter() {
            // The parent's threads, which held these, do not exist here.
            r.busy.store(false, Ordering::Relaxed);
            r.unreadable.store(false, Ordering::Relaxed);
            r.tid.store(0, Ordering::Relaxed);
            r.orphaned_at.store(0, Ordering::Relaxed);
            r.state.store(FREE, Ordering::Release);
            r.unlock();
        }
        for counter in [
            &self.orphan_seq,
            &self.threads,
            &self.threads_without_ring,
            &self.records_without_ring,
            &self.records_paused,
            &self.records_unwritten,
            &self.retired_dropped,
            &self.buffers_written,
            &self.retired_overwritten,
            &self.rings_recycled,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// Streaming, in a forked child: the line said at exit.
    pub(super) fn forked_stream_note(&self) -> Option<String> {
        self.forked_stream.load(Ordering::Relaxed).then(|| {
            format!(
                "XRay: flightrec: process {} was forked from a process that streams its trace; its own records are not traced",
                self.pid.load(Ordering::Relaxed)
            )
        })
    }
}
