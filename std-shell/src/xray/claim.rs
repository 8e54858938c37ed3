//! Each thread's ring: claimed from the pool on the thread's first record, given
//! back (orphaned) when the thread exits.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::writer::WriterConfig;

use super::flush::wake_writer;
use super::pool::{ThreadRing, LIVE, ORPHAN};
use super::runtime::runtime;
use super::state::{ARMED, RECORDING, STATE};

/// This thread's ring, once it has one: read by every record.
///
/// On x86_64 Linux an 8-byte slot of initial-exec TLS read with one `mov` from
/// `%fs` (its offset from the thread pointer in the GOT, which the linker turns
/// into a constant in an executable), not a `thread_local!`: Rust compiles
/// those as general-dynamic in a library, which costs a load of the thread
/// pointer and, worse, looks like a call to the compiler, so a record's fast
/// path saved and restored registers around it (XRay sleds: about 2 to 3 ns of
/// a 27 to 43 ns entry and exit pair; see docs/performance.md). A shared
/// object that holds flightrec and is loaded with `dlopen` takes the 8 bytes
/// from glibc's static TLS reserve (musl may refuse such a load, so musl
/// targets keep the `thread_local!`, as do other targets). The slot's symbol
/// is named by the crate's semver-compatible version, so that two versions of
/// flightrec linked into one program keep one slot each.
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod current_slot {
    use super::ThreadRing;

    /// The slot's symbol: `__flightrec_xray_current_<major>_<minor>`.
    macro_rules! slot {
        () => {
            concat!(
                "__flightrec_xray_current_",
                env!("CARGO_PKG_VERSION_MAJOR"),
                "_",
                env!("CARGO_PKG_VERSION_MINOR")
            )
        };
    }

    /// The slot's symbol name, for code written in assembly (`sled_abi`).
    pub(crate) const SYMBOL: &str = slot!();

    std::arch::global_asm!(
        ".pushsection .tbss.flightrec_xray_current,\"awT\",@nobits",
        ".p2align 3",
        concat!(".globl ", slot!()),
        concat!(".hidden ", slot!()),
        concat!(".type ", slot!(), ",@object"),
        concat!(".size ", slot!(), ", 8"),
        concat!(slot!(), ":"),
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub(crate) fn get() -> Option<&'static ThreadRing> {
        let p: *const ThreadRing;
        // SAFETY: reads this thread's slot, which only `set` writes: null or a
        // `&'static ThreadRing`. TLS is never freed while its thread runs code.
        unsafe {
            std::arch::asm!(
                concat!("movq ", slot!(), "@GOTTPOFF(%rip), {p}"),
                "movq %fs:({p}), {p}",
                p = out(reg) p,
                options(att_syntax, nostack, preserves_flags, readonly),
            );
            p.as_ref()
        }
    }

    #[inline]
    pub(crate) fn set(ring: Option<&'static ThreadRing>) {
        let p = ring.map_or(std::ptr::null(), |r| r as *const ThreadRing);
        // SAFETY: writes this thread's 8-byte slot (see `get`).
        unsafe {
            std::arch::asm!(
                concat!("movq ", slot!(), "@GOTTPOFF(%rip), {t}"),
                "movq {p}, %fs:({t})",
                t = out(reg) _,
                p = in(reg) p,
                options(att_syntax, nostack, preserves_flags),
            );
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
mod current_slot {
    use super::ThreadRing;
    use std::cell::Cell;

    thread_local! {
        static CURRENT: Cell<Option<&'static ThreadRing>> = const { Cell::new(None) };
    }

    #[inline(always)]
    pub(crate) fn get() -> Option<&'static ThreadRing> {
        CURRENT.with(Cell::get)
    }

    #[inline]
    pub(crate) fn set(ring: Option<&'static ThreadRing>) {
        CURRENT.with(|c| c.set(ring));
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
pub(crate) use current_slot::SYMBOL as CURRENT_SLOT_SYMBOL;

/// This thread's ring, if it has one (see `current_slot`).
#[inline(always)]
pub(crate) fn current() -> Option<&'static ThreadRing> {
    current_slot::get()
}

thread_local! {
    /// The thread has no ring and must not try again (the pool was empty, or the
    /// thread is exiting).
    static NO_RING: Cell<bool> = const { Cell::new(false) };
    static EXIT: ThreadExit = const { ThreadExit };
}

/// A thread-exit guard: releases the thread's ring when the thread's TLS is
/// destroyed.
struct ThreadExit;

impl Drop for ThreadExit {
    fn drop(&mut self) {
        let _ = NO_RING.try_with(|n| n.set(true));
        let Some(ring) = current() else {
            return;
        };
        current_slot::set(None);
        let Some(rt) = runtime() else { return };
        // Streaming: publish the partial buffer so the writer takes it. Under the
        // pause protocol, like a record.
        ring.busy.store(true, Ordering::Relaxed);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        let s = STATE.load(Ordering::Relaxed);
        if rt.policy == Policy::Streaming && (s == RECORDING || s == ARMED) {
            // SAFETY: owner, not paused (checked after setting busy).
            if let Some(rec) = unsafe { ring.recorder() } {
                rec.flush();
            }
        }
        ring.busy.store(false, Ordering::Release);
        // A reader may hold the lock briefly; exiting threads may wait for it.
        if ring.lock_until(Instant::now() + Duration::from_secs(1)) {
            ring.orphaned_at.store(
                rt.orphan_seq.fetch_add(1, Ordering::Relaxed),
                Ordering::Relaxed,
            );
            ring.state.store(ORPHAN, Ordering::Release);
            ring.unlock();
        } else {
            ring.state.store(ORPHAN, Ordering::Release);
        }
    }
}

#[cfg(target_os = "linux")]
pub(super) fn current_tid() -> i32 {
    // SAFETY: `gettid` has no preconditions.
    unsafe { libc::gettid() }
}
#[cfg(not(target_os = "linux"))]
pub(super) fn current_tid() -> i32 {
    numbered_tid()
}

/// Where the kernel gives no thread id: a number per thread, 1, 2, 3... in
/// the order threads first ask, the same on every call of a thread (so that
/// `flush`'s "am I the writer thread?" can match).
#[cfg_attr(target_os = "linux", allow(dead_code))]
fn numbered_tid() -> i32 {
    static NEXT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
    thread_local! {
        static TID: Cell<i32> = const { Cell::new(0) };
    }
    TID.try_with(|t| {
        if t.get() == 0 {
            t.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
    // During TLS teardown: a number no thread has.
    .unwrap_or(0)
}

/// The calling thread's id as its FDR records carry it, while the runtime is
/// initialised and not shut down (so that a thread's records can be matched
/// with what else it traces, such as its Trace2 events); `None` otherwise, and
/// where thread ids are not the kernel's (not Linux). Only Trace2 asks.
#[cfg(all(unix, feature = "trace2"))]
pub(crate) fn traced_thread_id() -> Option<u32> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    use super::state::PAUSED;
    let s = STATE.load(Ordering::Relaxed);
    (s == ARMED || s == RECORDING || s == PAUSED).then(|| current_tid() as u32)
}

/// First record of a thread: take a ring. `None` when the pool has none.
#[cold]
#[inline(never)]
pub(crate) fn claim_ring() -> Option<&'static ThreadRing> {
    let rt = runtime()?;
    if NO_RING.with(Cell::get) {
        rt.records_without_ring.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    // Register the exit guard first; during TLS teardown this fails and the thread
    // must not take a ring it could never give back.
    if EXIT.try_with(|_| ()).is_err() {
        let _ = NO_RING.try_with(|n| n.set(true));
        rt.records_without_ring.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let Some((ring, recycled)) = rt.pool.take(rt.policy == Policy::FlightRecorder) else {
        NO_RING.with(|n| n.set(true));
        rt.threads_without_ring.fetch_add(1, Ordering::Relaxed);
        rt.records_without_ring.fetch_add(1, Ordering::Relaxed);
        if rt.threads_without_ring.load(Ordering::Relaxed) == 1 && rt.config.verbosity >= 1 {
            eprintln!(
                "XRay: flightrec: all {} thread rings are in use; new threads are not traced",
                rt.pool.rings.len()
            );
        }
        return None;
    };
    // `gettid` and `getpid` ids are positive, so they read back the same as `u32`.
    let writer = WriterConfig::new(current_tid() as u32)
        .with_pid(rt.pid.load(Ordering::Relaxed) as u32)
        .with_threshold_ticks(rt.threshold_ticks);
    let cfg = RecorderConfig::new(writer, rt.frequency.hz.get()).with_epoch(rt.epoch, rt.epoch_tsc);
    if recycled {
        rt.rings_recycled.fetch_add(1, Ordering::Relaxed);
        // SAFETY: orphan ring under its lock: no owner.
        if let Some(rec) = unsafe { ring.recorder() } {
            rt.retired_overwritten.fetch_add(
                u64::from(rec.stats().buffers_overwritten)
                    + u64::from(rec.stats().buffers_finished.min(rt.pool.per_ring as u32)),
                Ordering::Relaxed,
            );
        }
    }
    // Streaming: a full buffer wakes the writer thread.
    let ready = (rt.policy == Policy::Streaming).then_some(wake_writer as fn());
    // SAFETY: we hold the ring's lock and it is free or orphaned (no owner).
    let dropped = unsafe { ring.assign(rt.policy, cfg, ready) };
    rt.retired_dropped.fetch_add(dropped, Ordering::Relaxed);
    ring.state.store(LIVE, Ordering::Release);
    ring.unlock();
    rt.threads.fetch_add(1, Ordering::Relaxed);
    current_slot::set(Some(ring));
    Some(ring)
}

/// In a forked child, on the one thread it has: forgets the ring this thread
/// had in the parent, so that its next record claims one of its own.
pub(super) fn forget_ring_after_fork() {
    current_slot::set(None);
    let _ = NO_RING.try_with(|n| n.set(false));
}

/// Counts a record lost to a pause or a re-entered record.
#[cold]
#[inline(never)]
pub(crate) fn note_paused_drop() {
    if let Some(rt) = runtime() {
        rt.records_paused.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::pool::Pool;
    use super::*;

    #[test]
    fn numbered_thread_ids_are_one_per_thread() {
        let mine = numbered_tid();
        assert_eq!(numbered_tid(), mine, "the same on every call");
        let other = std::thread::spawn(|| (numbered_tid(), numbered_tid()))
            .join()
            .unwrap();
        assert_eq!(other.0, other.1);
        assert_ne!(other.0, mine);
        assert!(mine > 0 && other.0 > 0);
    }

    #[test]
    fn each_thread_sees_only_its_own_ring() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(2, 1, 256).unwrap()));
        std::thread::scope(|s| {
            for ring in pool.rings.iter() {
                s.spawn(move || {
                    assert!(current().is_none(), "a new thread has no ring");
                    current_slot::set(Some(ring));
                    for _ in 0..100 {
                        assert!(std::ptr::eq(current().unwrap(), ring));
                        std::thread::yield_now();
                    }
                    current_slot::set(None);
                    assert!(current().is_none());
                });
            }
        });
    }
}
