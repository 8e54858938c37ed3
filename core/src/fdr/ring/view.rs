//! The ring as both sides see it: its storage, slots and policy, and the
//! atomic head, tail and counters ([`RingState`]) whose release/acquire protocol
//! hands each buffer to one side at a time (module docs of [`crate::fdr::ring`]).

use super::*;

/// The state a ring shares between its recorder, its consumer and anyone reading
/// its counters: every field is an atomic, so it can live in a `static`.
#[derive(Debug)]
pub(crate) struct RingState {
    /// Buffers finished so far (wrapping). Written by the recorder only.
    pub(super) head: AtomicU32,
    /// Buffers released by the consumer (wrapping). Written by the consumer only.
    pub(super) tail: AtomicU32,
    /// Written by the recorder only.
    pub(super) records_dropped: AtomicU32,
    /// Written by the recorder only.
    pub(super) buffers_overwritten: AtomicU32,
    /// Streaming: the `fn()` the recorder calls after handing over a buffer, or
    /// null. Written by the consumer ([`Consumer::set_buffer_ready`]); kept here,
    /// behind the view's pointer, so that the recorder's own fields (which the
    /// record path reaches with short offsets on Thumb-1) do not move.
    pub(super) buffer_ready: AtomicPtr<()>,
}

impl RingState {
    pub(crate) const fn new() -> Self {
        Self {
            head: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            records_dropped: AtomicU32::new(0),
            buffers_overwritten: AtomicU32::new(0),
            buffer_ready: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    pub(crate) fn stats(&self) -> RingStats {
        RingStats {
            buffers_finished: self.head.load(Ordering::Relaxed),
            buffers_consumed: self.tail.load(Ordering::Relaxed),
            records_dropped: self.records_dropped.load(Ordering::Relaxed),
            buffers_overwritten: self.buffers_overwritten.load(Ordering::Relaxed),
        }
    }
}

/// What a recorder and a consumer know of their ring: where its buffers are and its
/// shared state. Both [`Ring`] (caller memory) and
/// [`StaticRing`](crate::fdr::static_ring::StaticRing) (its own memory) make one.
#[derive(Clone, Copy)]
pub(crate) struct RingView<'r> {
    /// Start of `slots.len()` buffers of `buffer_size` bytes, valid for `'r`.
    pub(crate) storage: NonNull<u8>,
    pub(crate) buffer_size: usize,
    pub(crate) slots: &'r [Slot],
    pub(crate) policy: Policy,
    pub(crate) state: &'r RingState,
}

// SAFETY: as for `Ring`: the storage behind the pointer is handed to one side at a
// time under the release/acquire protocol on `head` and `tail` (module docs), and
// every other shared field is an atomic or immutable.
unsafe impl Send for RingView<'_> {}
// SAFETY: as above; a shared `RingView` only reads the immutable fields.
unsafe impl Sync for RingView<'_> {}

impl<'r> RingView<'r> {
    /// The slot after `index`, wrapping at N.
    ///
    /// Both sides keep their slot index beside their 32-bit sequence number and
    /// advance the two together. `seq % N` would not do: unless N divides 2^32, it
    /// jumps when the sequence number wraps, and two buffers in flight would share
    /// a slot.
    pub(super) fn next_slot(&self, index: usize) -> usize {
        let next = index + 1;
        if next == self.slots.len() {
            0
        } else {
            next
        }
    }

    /// The slot `back` buffers before `index` (`back <= N`).
    pub(super) fn slot_before(&self, index: usize, back: usize) -> usize {
        if back <= index {
            index - back
        } else {
            index + (self.slots.len() - back)
        }
    }

    /// Slot `index`, without a bounds test: the buffer switch's, where `get`'s
    /// test and the length it compares with would cost on every switch.
    ///
    /// # Safety
    /// `index < N`: a recorder's or a consumer's `slot` (0 at first, then from
    /// `next_slot`).
    #[inline(always)]
    pub(super) unsafe fn slot_at(&self, index: usize) -> &'r Slot {
        debug_assert!(index < self.slots.len());
        // SAFETY: in bounds, the caller's promise.
        unsafe { self.slots.get_unchecked(index) }
    }

    /// The bytes of the buffer in slot `index` (`index < N`).
    ///
    /// # Safety
    /// The caller must hold the buffer under the ring protocol (the recorder for its
    /// current buffer, the consumer between acquiring and releasing it) so that no
    /// other live reference covers the same bytes.
    pub(super) unsafe fn buffer_mut(&self, index: usize) -> &'r mut [u8] {
        debug_assert!(index < self.slots.len());
        // SAFETY: `index < N` (slot indexes only come from `next_slot` and
        // `slot_before`), so `index * buffer_size + buffer_size <= storage.len()` by
        // construction of `buffer_size`; the storage outlives `'r`; exclusivity is
        // the caller's.
        unsafe {
            core::slice::from_raw_parts_mut(
                self.storage.as_ptr().add(index * self.buffer_size),
                self.buffer_size,
            )
        }
    }

    /// # Safety
    /// As [`buffer_mut`](Self::buffer_mut), for shared access to a finished buffer.
    pub(super) unsafe fn buffer(&self, index: usize, len: usize) -> &'r [u8] {
        debug_assert!(index < self.slots.len());
        let len = len.min(self.buffer_size);
        // SAFETY: in bounds as above; the recorder does not write this buffer until the
        // consumer releases it (streaming) or while `&mut Recorder` is borrowed for the
        // read (flight recorder).
        unsafe {
            core::slice::from_raw_parts(self.storage.as_ptr().add(index * self.buffer_size), len)
        }
    }
}
