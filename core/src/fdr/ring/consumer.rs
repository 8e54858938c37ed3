//! The consuming side of a ring: [`Consumer`] takes finished buffers in order
//! and lends each out as a [`FinishedBuffer`], which gives it back when dropped.

use super::*;

/// The consuming side of a streaming ring: takes finished buffers from the
/// [`Recorder`] as [`FinishedBuffer`]s, oldest first, and gives them back when done.
///
/// It may run in another thread, or on another core, while the recorder records. A
/// host example (it uses `std::thread`):
///
/// ```
/// use core::sync::atomic::{AtomicBool, Ordering};
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::decoder::decode_record;
/// use flightrec_core::fdr::records::Record;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::{FunctionId, Version};
///
/// let mut storage = [0u8; 4 * 512];
/// let slots = [Slot::NEW; 4];
/// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
/// let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
/// let done = AtomicBool::new(false);
/// const CALLS: u64 = 10_000;
///
/// std::thread::scope(|s| {
///     let recording = s.spawn(|| {
///         let f = FunctionId::new(1).unwrap();
///         for t in 0..CALLS {
///             // A record the consumer had no room for is counted, not waited for.
///             let _ = rec.enter(f, Timestamp { tsc: 2 * t, cpu: 0 });
///             let _ = rec.exit(f, Timestamp { tsc: 2 * t + 1, cpu: 0 });
///         }
///         rec.flush();
///         done.store(true, Ordering::Release);
///         rec.records_dropped()
///     });
///     let mut kept = 0u64;
///     loop {
///         let finished = done.load(Ordering::Acquire);
///         while let Some(buffer) = consumer.pop() {
///             let mut at = 0;
///             while at < buffer.len() {
///                 let (record, len) = decode_record(Version::V5, &buffer[at..]).unwrap();
///                 kept += u64::from(matches!(record, Record::Function { .. }));
///                 at += len;
///             }
///         }
///         if finished {
///             break;
///         }
///         std::thread::yield_now();
///     }
///     let dropped = recording.join().unwrap();
///     // Every record was either handed over or counted as dropped.
///     assert_eq!(kept + dropped, 2 * CALLS);
///     assert!(kept > 0);
/// });
/// ```
pub struct Consumer<'r, 'a> {
    pub(super) ring: RingView<'r>,
    /// Next buffer to read; mirrors the ring's tail, which only the consumer writes.
    pub(super) tail: u32,
    /// The slot of buffer `tail` (see `RingView::next_slot`).
    pub(super) slot: usize,
    pub(super) _ring: PhantomData<&'r Ring<'a>>,
}

impl<'r, 'a> Consumer<'r, 'a> {
    pub(crate) fn new(ring: RingView<'r>) -> Self {
        Consumer {
            ring,
            tail: 0,
            slot: 0,
            _ring: PhantomData,
        }
    }

    /// The oldest finished buffer, if any. The buffer goes back to the recorder when
    /// the returned guard is dropped. Always `None` in flight-recorder mode.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
    /// let f = FunctionId::new(1).unwrap();
    /// rec.enter(f, Timestamp::default()).unwrap();
    /// rec.flush();
    /// rec.exit(f, Timestamp::default()).unwrap();
    /// rec.flush();
    /// let first = consumer.pop().unwrap();
    /// assert_eq!(first.len(), 48 + 16 + 8); // preamble, NewCPUId, the entry
    /// drop(first); // gives the buffer back to the recorder
    /// assert_eq!(consumer.pop().unwrap().len(), 48 + 16 + 8); // then the exit's buffer
    /// assert!(consumer.pop().is_none());
    /// ```
    pub fn pop(&mut self) -> Option<FinishedBuffer<'_, 'r, 'a>> {
        if self.ring.policy != Policy::Streaming {
            return None;
        }
        let head = self.ring.state.head.load(Ordering::Acquire);
        if head == self.tail {
            return None;
        }
        let len = self.ring.slots.get(self.slot)?.len.load(Ordering::Relaxed);
        // SAFETY: buffer `tail` was published by the recorder's release store of
        // `head`, read above with acquire; the recorder does not reuse it until the
        // guard's drop stores the new tail.
        let bytes = unsafe { self.ring.buffer(self.slot, len as usize) };
        Some(FinishedBuffer {
            consumer: self,
            bytes,
        })
    }

    /// Asks the recorder to call `ready` right after it hands a finished buffer to
    /// this consumer, from the context that recorded it (`None` stops it). A
    /// consumer that drains on a timer falls behind a burst that fills the ring
    /// between two ticks; with this it is woken the moment there is work (unpark
    /// the writer thread, pend the interrupt that sends over the link). It runs
    /// once per buffer, never per record, and must not record into the same
    /// recorder. A flight recorder, which has no consumer, never calls it.
    ///
    /// ```
    /// use core::sync::atomic::{AtomicU32, Ordering};
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    ///
    /// static READY: AtomicU32 = AtomicU32::new(0);
    /// fn wake_consumer() {
    ///     READY.fetch_add(1, Ordering::Relaxed); // e.g. pend the flush interrupt
    /// }
    /// let mut storage = [0u8; 4 * 128];
    /// let slots = [Slot::NEW; 4];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let (mut rec, consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// consumer.set_buffer_ready(Some(wake_consumer));
    /// let f = FunctionId::new(1).unwrap();
    /// for t in 0..20 {
    ///     rec.enter(f, Timestamp { tsc: t, cpu: 0 }).unwrap();
    /// }
    /// // 20 records overflow 128-byte buffers: one call per buffer handed over.
    /// let full = consumer.pending();
    /// assert!(full > 0);
    /// assert_eq!(READY.load(Ordering::Relaxed), full);
    /// rec.flush(); // hands over the open buffer too
    /// assert_eq!(READY.load(Ordering::Relaxed), full + 1);
    /// assert_eq!(consumer.pending(), full + 1);
    /// ```
    pub fn set_buffer_ready(&self, ready: Option<fn()>) {
        let ptr = ready.map_or(core::ptr::null_mut(), |f| f as *mut ());
        self.ring.state.buffer_ready.store(ptr, Ordering::Relaxed);
    }

    /// Number of finished buffers waiting.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
    /// assert_eq!(consumer.pending(), 0);
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// rec.flush();
    /// assert_eq!(consumer.pending(), 1);
    /// drop(consumer.pop());
    /// assert_eq!(consumer.pending(), 0);
    /// ```
    pub fn pending(&self) -> u32 {
        self.ring
            .state
            .head
            .load(Ordering::Acquire)
            .wrapping_sub(self.tail)
    }

    /// The ring's counters.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// drop(buffer);
    /// assert_eq!(consumer.stats().buffers_consumed, 1);
    /// ```
    pub fn stats(&self) -> RingStats {
        self.ring.state.stats()
    }
}

/// A finished buffer lent to the consumer; dropping it gives the buffer back.
///
/// It dereferences to the buffer's bytes: a complete FDR buffer, to be written after a
/// [`FileHeader`] (see [`Recorder::file_header`]).
///
/// ```
/// # use flightrec_core::fdr::decoder::decode_record;
/// # use flightrec_core::fdr::records::Record;
/// # use flightrec_core::fdr::Version;
/// # use flightrec_core::clock::Timestamp;
/// # use flightrec_core::fdr::FunctionId;
/// # flightrec_core::__ring_example!(rec, consumer, 7);
/// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
/// rec.flush();
/// let buffer = consumer.pop().unwrap();
/// let (first, _) = decode_record(Version::V5, &buffer).unwrap();
/// assert_eq!(first, Record::BufferExtents { size: buffer.len() as u64 - 16 });
/// assert_eq!(decode_record(Version::V5, &buffer[16..]).unwrap().0, Record::NewBuffer { tid: 7 });
/// assert_eq!(rec.stats().buffers_consumed, 0);
/// drop(buffer); // the recorder may write it again
/// assert_eq!(rec.stats().buffers_consumed, 1);
/// ```
pub struct FinishedBuffer<'c, 'r, 'a> {
    pub(super) consumer: &'c mut Consumer<'r, 'a>,
    pub(super) bytes: &'c [u8],
}

impl FinishedBuffer<'_, '_, '_> {
    /// The buffer: a complete FDR buffer (the same slice the guard dereferences to).
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// assert_eq!(buffer.bytes().len(), 72);
    /// assert_eq!(buffer.bytes()[0], 0x0f); // BufferExtents
    /// assert_eq!(buffer.bytes(), &buffer[..]);
    /// ```
    pub fn bytes(&self) -> &[u8] {
        self.bytes
    }
}

impl core::ops::Deref for FinishedBuffer<'_, '_, '_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

impl Drop for FinishedBuffer<'_, '_, '_> {
    fn drop(&mut self) {
        self.consumer.tail = self.consumer.tail.wrapping_add(1);
        self.consumer.slot = self.consumer.ring.next_slot(self.consumer.slot);
        self.consumer
            .ring
            .state
            .tail
            .store(self.consumer.tail, Ordering::Release);
    }
}
