//! The runtime's state machine and the pause protocol.
//!
//! # States
//!
//! `OFF` (not initialised) → `ARMED` (initialised, not recording) ⇄ `RECORDING`;
//! `PAUSED` while a dump or flush reads other threads' rings; `FINISHED` after
//! shutdown, a fatal signal or a broken output. Every record starts with one relaxed
//! load of the state and returns at once unless it is `RECORDING`.
//!
//! # Pause protocol
//!
//! A recording thread owns its ring's recorder and uses it without locks. To read
//! or flush another thread's recorder (dump, shutdown, fatal signal), the reader:
//!
//! 1. stores `PAUSED` (or `FINISHED`) in the state;
//! 2. runs a process-wide memory barrier (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`
//!    on Linux; where that is missing it sleeps 1 ms, which is what compiler-rt's
//!    grace period relies on);
//! 3. waits, at most `grace_period_ms`, for every live ring's `busy` flag to clear.
//!
//! A recording thread sets `busy`, then (after a compiler barrier) reads the state
//! again and records only if it is still `RECORDING`. With the barrier of step 2
//! this is Dekker's protocol: either the thread sees the pause, or the reader sees
//! `busy`. A ring still busy after the grace period is left unread.
//!
//! A fatal signal's reader runs on the thread the signal interrupted, which may
//! itself be inside a record: its own ring's `busy` never clears while it
//! waits. That ring is not waited for; it is read as the interrupted thread
//! left it, and its writer keeps only buffers that hold whole records
//! (`Paused::is_interrupted`).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use super::pool::{ThreadRing, FREE, LIVE, ORPHAN};

pub(crate) const OFF: u8 = 0;
pub(crate) const ARMED: u8 = 1;
/// [`STATE`] while the runtime records. Example on [`STATE`].
pub const RECORDING: u8 = 2;
pub(crate) const PAUSED: u8 = 3;
pub(crate) const FINISHED: u8 = 4;

/// The runtime's state; the one load every record starts with (public, hidden,
/// as `flightrec::xray::sled_abi::STATE`, for the XRay trampolines' record path
/// in assembly).
///
/// ```
/// use std::sync::atomic::Ordering;
/// use flightrec::xray::sled_abi::{RECORDING, STATE};
/// // Nothing started the runtime in this doctest.
/// assert_ne!(STATE.load(Ordering::Relaxed), RECORDING);
/// assert!(!flightrec::xray::is_recording());
/// ```
pub static STATE: AtomicU8 = AtomicU8::new(OFF);

/// Starts or stops recording (`ARMED` ⇄ `RECORDING`).
pub(crate) fn set_recording(on: bool) -> bool {
    let (from, to) = if on {
        (ARMED, RECORDING)
    } else {
        (RECORDING, ARMED)
    };
    match STATE.compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => true,
        Err(s) => s == to,
    }
}

#[cfg(target_os = "linux")]
fn register_membarrier() -> bool {
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;
    // SAFETY: `membarrier` takes two integer arguments and touches no memory.
    unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0) == 0 }
}
#[cfg(not(target_os = "linux"))]
fn register_membarrier() -> bool {
    false
}

/// Makes every thread's earlier stores visible to the caller's later loads
/// (step 2 of the pause protocol). Async-signal-safe.
fn heavy_barrier(membarrier: bool) {
    std::sync::atomic::fence(Ordering::SeqCst);
    #[cfg(target_os = "linux")]
    if membarrier {
        const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
        // SAFETY: as in `register_membarrier`.
        if unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0) } == 0 {
            return;
        }
    }
    let _ = membarrier;
    // No process-wide barrier: give store buffers far more time than they need.
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: `nanosleep` reads `ts`; a null remainder is allowed.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

/// The readers' side of the pause protocol: one reader at a time.
pub(crate) struct PauseProtocol {
    /// Held by the one reader running the pause protocol at a time.
    reader: AtomicBool,
    /// `membarrier` is registered and works.
    membarrier: bool,
}

impl PauseProtocol {
    /// Registers `membarrier` where there is one.
    pub(crate) fn new() -> Self {
        Self {
            reader: AtomicBool::new(false),
            membarrier: register_membarrier(),
        }
    }

    /// In a forked child: the parent thread that was reading, if any, does not
    /// exist there.
    pub(crate) fn reset_after_fork(&self) {
        self.reader.store(false, Ordering::Release);
        let _ = STATE.compare_exchange(PAUSED, RECORDING, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Runs the pause protocol over `rings`, waiting at most `grace` for other
    /// readers and for busy owners. `finish` ends recording for good. `None` when
    /// another reader did not finish within the grace period. Async-signal-safe.
    /// `interrupted` is the calling thread's id when the caller is a signal
    /// handler: that thread's ring, if it is inside a record, is not waited for.
    pub(crate) fn pause<'a>(
        &'a self,
        rings: &'a [ThreadRing],
        grace: Duration,
        finish: bool,
        interrupted: Option<i32>,
    ) -> Option<Paused<'a>> {
        let deadline = Instant::now() + grace;
        while self
            .reader
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::yield_now();
        }
        let target = if finish { FINISHED } else { PAUSED };
        let prev = STATE.swap(target, Ordering::SeqCst);
        let restore = if finish || prev == FINISHED {
            FINISHED
        } else {
            prev
        };
        heavy_barrier(self.membarrier);
        let deadline = Instant::now() + grace;
        let mut cut = None;
        let mut left_out = 0;
        for (i, r) in rings.iter().enumerate() {
            let mut busy = r.busy.load(Ordering::Acquire);
            if busy
                && interrupted.is_some_and(|tid| tid == r.tid.load(Ordering::Relaxed))
                && r.state.load(Ordering::Acquire) == LIVE
            {
                // The caller's own ring, stopped inside a record: it stays
                // as it is while the caller reads it.
                cut = Some(i);
                r.unreadable.store(false, Ordering::Relaxed);
                continue;
            }
            while busy && Instant::now() < deadline {
                std::hint::spin_loop();
                busy = r.busy.load(Ordering::Acquire);
            }
            r.unreadable.store(busy, Ordering::Relaxed);
            left_out += usize::from(busy);
        }
        Some(Paused {
            protocol: self,
            rings,
            grace,
            restore,
            cut,
            left_out,
        })
    }
}

/// The reader lock plus the paused state; restores the previous state on drop
/// (`FINISHED` stays).
pub(crate) struct Paused<'a> {
    protocol: &'a PauseProtocol,
    rings: &'a [ThreadRing],
    grace: Duration,
    restore: u8,
    /// The index of the interrupted caller's own ring, stopped inside a record.
    cut: Option<usize>,
    /// Rings left unread: their owners stayed inside a record past the grace
    /// period.
    left_out: usize,
}

impl Paused<'_> {
    /// Whether `ring` is the interrupted caller's own, stopped inside a record:
    /// its last buffer may end in a record cut short.
    pub(crate) fn is_interrupted(&self, ring: &ThreadRing) -> bool {
        self.cut
            .and_then(|i| self.rings.get(i))
            .is_some_and(|r| std::ptr::eq(r, ring))
    }

    /// Rings left unread because their owners stayed inside a record.
    pub(crate) fn left_out(&self) -> usize {
        self.left_out
    }

    /// Calls `f` with each readable ring that has an owner or an exited owner, under
    /// its lock.
    pub(crate) fn for_each_used_ring(&self, mut f: impl FnMut(&ThreadRing)) {
        let deadline = Instant::now() + self.grace;
        for r in self.rings {
            if r.state.load(Ordering::Acquire) == FREE || r.unreadable.load(Ordering::Relaxed) {
                continue;
            }
            if !r.lock_until(deadline) {
                continue;
            }
            let s = r.state.load(Ordering::Acquire);
            if s == LIVE || s == ORPHAN {
                f(r);
            }
            r.unlock();
        }
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        let _ = STATE.compare_exchange(PAUSED, self.restore, Ordering::SeqCst, Ordering::SeqCst);
        self.protocol.reader.store(false, Ordering::Release);
    }
}
