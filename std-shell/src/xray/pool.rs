//! The process-wide buffer pool and the thread rings cut from it.
//!
//! At initialisation the runtime reserves the rings' buffers of `buffer_size`
//! bytes in one zeroed block (see `Config::rings` for how many) and cuts it into
//! rings (each a core [`Ring`]). A thread takes a ring on its first record and
//! keeps it until it exits. Nothing is allocated afterwards; the block's pages
//! are committed by the system as threads first write into them, so a ring
//! costs what its thread filled.
//!
//! A ring is in one of three states:
//!
//! * **free**: never used, or recycled;
//! * **live**: owned by a running thread, which records into it without locks;
//! * **orphan**: its thread has exited; it still holds that thread's newest buffers.
//!
//! Streaming mode recycles an orphan ring once the writer has written everything in
//! it. Flight-recorder mode keeps orphan rings, so the trace shows exited threads,
//! until a new thread finds no free ring: then it takes the ring of the thread that
//! exited first (that thread's data is lost, counted in `rings_recycled`). When every
//! ring is live, a new thread records nothing for its whole life; its records are
//! counted (`records_without_ring`), and it never blocks.
//!
//! Who may touch a ring's recorder: its live owner, without a lock, while the
//! runtime is recording; anyone else only under the ring's `lock`, and for a live
//! ring only while recording is paused and the owner is not inside a record (see
//! `runtime`'s pause protocol). The consumer (streaming) is only used under `lock`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};

use flightrec_core::fdr::ring::{Consumer, Policy, Recorder, RecorderConfig, Ring, Slot};

/// Ring states.
pub(crate) const FREE: u8 = 0;
pub(crate) const LIVE: u8 = 1;
pub(crate) const ORPHAN: u8 = 2;

/// One thread's ring and its bookkeeping. Lives in leaked memory for the life of the
/// process.
pub(crate) struct ThreadRing {
    storage: *mut u8,
    storage_len: usize,
    slots: &'static [Slot],
    ring: UnsafeCell<Option<Ring<'static>>>,
    recorder: UnsafeCell<Option<Recorder<'static, 'static>>>,
    /// The recorder inside `recorder`, null while there is none: what the record
    /// path written in assembly (`sled_abi`) reads, since the layout of an
    /// `Option` is not known to it. Changed only with `recorder`.
    pub(crate) recorder_ptr: UnsafeCell<*mut Recorder<'static, 'static>>,
    consumer: UnsafeCell<Option<Consumer<'static, 'static>>>,
    /// `FREE`, `LIVE` or `ORPHAN`; changed only under `lock`.
    pub(crate) state: AtomicU8,
    /// Held by whoever other than the owner touches the recorder or the consumer,
    /// and by whoever changes `state`.
    lock: AtomicBool,
    /// The owner is inside a record.
    pub(crate) busy: AtomicBool,
    /// The pause protocol gave up waiting for the owner: do not read this ring.
    pub(crate) unreadable: AtomicBool,
    /// Thread id of the (last) owner.
    pub(crate) tid: AtomicI32,
    /// Order in which owners exited (flight recorder recycles the lowest).
    pub(crate) orphaned_at: AtomicU64,
}

// SAFETY: the cells are accessed under the protocol in the module docs: the owner
// alone while live and recording; everyone else under `lock` (and the pause protocol
// for live rings). Everything else is atomic.
unsafe impl Sync for ThreadRing {}
// SAFETY: as above; the raw storage pointer is only turned into a slice under that
// protocol.
unsafe impl Send for ThreadRing {}

impl ThreadRing {
    /// A free ring over `storage` (leaked, exclusively this ring's) and `slots`.
    pub(crate) fn new(storage: &'static mut [u8], slots: &'static [Slot]) -> Self {
        Self {
            storage_len: storage.len(),
            storage: storage.as_mut_ptr(),
            slots,
            ring: UnsafeCell::new(None),
            recorder: UnsafeCell::new(None),
            recorder_ptr: UnsafeCell::new(std::ptr::null_mut()),
            consumer: UnsafeCell::new(None),
            state: AtomicU8::new(FREE),
            lock: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            unreadable: AtomicBool::new(false),
            tid: AtomicI32::new(0),
            orphaned_at: AtomicU64::new(0),
        }
    }

    /// Takes the lock if it is free.
    pub(crate) fn try_lock(&self) -> bool {
        self.lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the lock, spinning until `deadline` passes (`false` then).
    pub(crate) fn lock_until(&self, deadline: std::time::Instant) -> bool {
        loop {
            if self.try_lock() {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::hint::spin_loop();
            std::thread::yield_now();
        }
    }

    pub(crate) fn unlock(&self) {
        self.lock.store(false, Ordering::Release);
    }

    /// Sets the ring up for a new owner: a fresh core ring split with `config`,
    /// whose recorder calls `buffer_ready` after handing a buffer over (streaming).
    /// Returns the records the previous owner dropped.
    ///
    /// # Safety
    /// The caller holds `lock`, and the ring is not live (no owner uses the
    /// recorder).
    pub(crate) unsafe fn assign(
        &self,
        policy: Policy,
        config: RecorderConfig,
        buffer_ready: Option<fn()>,
    ) -> u64 {
        // SAFETY: exclusive access by the caller's contract; the old recorder and
        // consumer, which borrow the old ring, are dropped before the ring.
        unsafe {
            *self.recorder_ptr.get() = std::ptr::null_mut();
            let old_dropped = (*self.recorder.get())
                .take()
                .map_or(0, |r| r.records_dropped());
            *self.consumer.get() = None;
            *self.ring.get() = None;
            let storage: &'static mut [u8] =
                std::slice::from_raw_parts_mut(self.storage, self.storage_len);
            // The pool validated the sizes; a ring that cannot be made stays empty
            // and its owner's records are dropped by the `None` recorder.
            if let Ok(ring) = Ring::new(storage, self.slots, policy) {
                let ring: &'static mut Ring<'static> = (*self.ring.get()).insert(ring);
                let (rec, cons) = ring.split(config);
                cons.set_buffer_ready(buffer_ready);
                let rec: *mut Recorder<'static, 'static> = (*self.recorder.get()).insert(rec);
                *self.recorder_ptr.get() = rec;
                *self.consumer.get() = Some(cons);
            }
            self.tid.store(config.writer.tid as i32, Ordering::Relaxed);
            self.unreadable.store(false, Ordering::Relaxed);
            old_dropped
        }
    }

    /// The recorder.
    ///
    /// # Safety
    /// The caller is the live owner while recording, or holds `lock` and (for a
    /// live ring) has paused recording and seen the owner not busy. No other
    /// reference to the recorder is alive.
    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    pub(crate) unsafe fn recorder(&self) -> Option<&mut Recorder<'static, 'static>> {
        // SAFETY: exclusivity is the caller's contract.
        unsafe { (*self.recorder.get()).as_mut() }
    }

    /// The consumer.
    ///
    /// # Safety
    /// The caller holds `lock`.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn consumer(&self) -> Option<&mut Consumer<'static, 'static>> {
        // SAFETY: `lock` gives exclusive access to the consumer.
        unsafe { (*self.consumer.get()).as_mut() }
    }
}

/// All rings, cut from one allocation.
pub(crate) struct Pool {
    pub(crate) rings: Box<[ThreadRing]>,
    /// Buffers of each ring.
    pub(crate) per_ring: usize,
    /// Rings never handed out start at this index.
    next_fresh: std::sync::atomic::AtomicUsize,
}

impl Pool {
    /// Allocates `rings * per_ring` buffers of `buffer_size` bytes (leaked: the pool
    /// lives as long as the process).
    pub(crate) fn new(rings: usize, per_ring: usize, buffer_size: usize) -> Result<Self, ()> {
        let bytes = rings
            .checked_mul(per_ring)
            .and_then(|b| b.checked_mul(buffer_size))
            .ok_or(())?;
        let storage = zeroed_block(bytes)?;
        let slots: &'static [Slot] = Box::leak(
            (0..rings * per_ring)
                .map(|_| Slot::NEW)
                .collect::<Box<[Slot]>>(),
        );
        let ring_bytes = per_ring * buffer_size;
        let rings: Box<[ThreadRing]> = storage
            .chunks_exact_mut(ring_bytes.max(1))
            .zip(slots.chunks_exact(per_ring.max(1)))
            .take(rings)
            .map(|(s, sl)| ThreadRing::new(s, sl))
            .collect();
        Ok(Self {
            rings,
            per_ring,
            next_fresh: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// A ring for a new thread, locked, not live yet: a never-used one, else a
    /// recycled free one, else (when `reuse_orphans`) the oldest orphan. Never
    /// blocks.
    pub(crate) fn take(&self, reuse_orphans: bool) -> Option<(&ThreadRing, bool)> {
        loop {
            let i = self.next_fresh.load(Ordering::Relaxed);
            if i >= self.rings.len() {
                break;
            }
            if self
                .next_fresh
                .compare_exchange(i, i + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                // A scan for recycled rings (below) may have taken this one first.
                let r = &self.rings[i];
                if r.try_lock() {
                    if r.state.load(Ordering::Relaxed) == FREE {
                        return Some((r, false));
                    }
                    r.unlock();
                }
            }
        }
        for r in self.rings.iter() {
            if r.state.load(Ordering::Relaxed) == FREE && r.try_lock() {
                if r.state.load(Ordering::Relaxed) == FREE {
                    return Some((r, false));
                }
                r.unlock();
            }
        }
        if reuse_orphans {
            let oldest = self
                .rings
                .iter()
                .filter(|r| r.state.load(Ordering::Relaxed) == ORPHAN)
                .min_by_key(|r| r.orphaned_at.load(Ordering::Relaxed))?;
            if oldest.try_lock() {
                if oldest.state.load(Ordering::Relaxed) == ORPHAN {
                    return Some((oldest, true));
                }
                oldest.unlock();
            }
        }
        None
    }
}

/// A leaked zeroed block of `bytes` bytes, aligned to 8. The allocator takes
/// a block this large straight from the system, whose pages read as zero and
/// are only committed when first written: a pool sized for the worst case
/// costs what the threads record.
fn zeroed_block(bytes: usize) -> Result<&'static mut [u8], ()> {
    if bytes == 0 {
        return Ok(&mut []);
    }
    let layout = std::alloc::Layout::from_size_align(bytes, 8).map_err(|_| ())?;
    // SAFETY: `layout` has a non-zero size; a null result is handled.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(());
    }
    // SAFETY: `p` points to `bytes` zeroed bytes owned by nobody else, never
    // freed (the pool lives as long as the process).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take_live(pool: &Pool, reuse: bool) -> Option<(usize, bool)> {
        let (r, recycled) = pool.take(reuse)?;
        r.state.store(LIVE, Ordering::Relaxed);
        r.unlock();
        let index = pool.rings.iter().position(|x| std::ptr::eq(x, r)).unwrap();
        Some((index, recycled))
    }

    #[test]
    fn fresh_then_free_then_oldest_orphan() {
        let pool = Pool::new(2, 1, 256).unwrap();
        assert_eq!(take_live(&pool, true), Some((0, false)));
        assert_eq!(take_live(&pool, true), Some((1, false)));
        assert_eq!(take_live(&pool, true), None, "every ring is live");
        pool.rings[0].state.store(ORPHAN, Ordering::Relaxed);
        pool.rings[0].orphaned_at.store(5, Ordering::Relaxed);
        pool.rings[1].state.store(ORPHAN, Ordering::Relaxed);
        pool.rings[1].orphaned_at.store(3, Ordering::Relaxed);
        assert_eq!(take_live(&pool, false), None, "streaming keeps orphans");
        assert_eq!(take_live(&pool, true), Some((1, true)), "oldest orphan");
        pool.rings[1].state.store(FREE, Ordering::Relaxed);
        assert_eq!(
            take_live(&pool, false),
            Some((1, false)),
            "recycled free ring"
        );
    }

    #[test]
    fn a_locked_ring_is_skipped_not_waited_for() {
        let pool = Pool::new(1, 1, 256).unwrap();
        assert!(pool.rings[0].try_lock());
        assert!(pool.take(true).is_none());
        pool.rings[0].unlock();
        assert!(pool.take(true).is_some(), "free and unlocked again");
    }
}
