//! Loss accounting: what a refused record reports ([`Dropped`]), the counts a
//! recorder keeps of lost records, and the typed event ([`LOSS_EVENT_TYPE`]) that
//! marks them in the trace.

use super::*;

/// The event type of the typed event that marks lost records in a streaming ring.
/// Its payload is ASCII text: `flightrec: lost N records`.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::decoder::decode_record;
/// use flightrec_core::fdr::records::Record;
/// use flightrec_core::fdr::ring::{Dropped, Policy, RecorderConfig, Ring, Slot, LOSS_EVENT_TYPE};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::{FunctionId, Version};
///
/// let mut storage = [0u8; 128]; // one buffer: preamble, NewCPUId, 8 function records
/// let slots = [Slot::NEW; 1];
/// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
/// let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
/// let f = FunctionId::new(1).unwrap();
/// for t in 0..10 {
///     let kept = rec.enter(f, Timestamp { tsc: t, cpu: 0 });
///     assert_eq!(kept.is_err(), t >= 8);
/// }
/// drop(consumer.pop()); // the consumer takes the full buffer and gives it back
/// rec.enter(f, Timestamp { tsc: 10, cpu: 0 }).unwrap();
/// rec.flush();
/// let buffer = consumer.pop().unwrap();
/// let (marker, _) = decode_record(Version::V5, &buffer[64..]).unwrap();
/// assert_eq!(
///     marker,
///     Record::TypedEvent { delta: 0, event_type: LOSS_EVENT_TYPE, payload: b"flightrec: lost 2 records" }
/// );
/// ```
pub const LOSS_EVENT_TYPE: u16 = 0xF17C;

/// Why a record was not kept by a [`Recorder`]. Tracing goes on either way, so the
/// caller may ignore it: every dropped record but an empty event is also counted in
/// [`RingStats`] and marked in the next buffer the recorder starts (see
/// [`LOSS_EVENT_TYPE`]).
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::ring::{Dropped, Policy, RecorderConfig, Ring, Slot};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
///
/// let mut storage = [0u8; 128];
/// let slots = [Slot::NEW; 1];
/// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
/// let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
/// let t = Timestamp::default();
/// assert_eq!(rec.custom_event(t, b""), Err(Dropped::EmptyPayload));
/// rec.flush(); // hands over nothing: the buffer has no events
/// assert_eq!(rec.custom_event(t, &[0; 100]), Err(Dropped::TooLarge));
/// rec.enter(FunctionId::new(1).unwrap(), t).unwrap();
/// rec.flush(); // the entry and the loss marker; the only buffer waits for the consumer
/// assert_eq!(rec.enter(FunctionId::new(1).unwrap(), t), Err(Dropped::ConsumerBehind));
/// assert_eq!(rec.records_dropped(), 2); // the empty payload is not counted
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Dropped {
    /// Streaming: every buffer waits for the consumer. The record was counted.
    ConsumerBehind,
    /// The record can never fit a buffer of this ring (or the ring's buffers are too
    /// small for its configuration). It was counted as dropped.
    TooLarge,
    /// An event with an empty payload (readers reject those); nothing was counted.
    EmptyPayload,
}

impl core::fmt::Display for Dropped {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Dropped::ConsumerBehind => "record dropped: the consumer is behind",
            Dropped::TooLarge => "record dropped: larger than a buffer",
            Dropped::EmptyPayload => "event dropped: empty payload",
        })
    }
}

impl Recorder<'_, '_> {
    /// All records dropped by this recorder, as a 64-bit count ([`RingStats`] keeps
    /// the low 32 bits, since a 64-bit atomic store is not available everywhere).
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
    /// let t = Timestamp::default();
    /// assert!(rec.custom_event(t, &[0; 300]).is_err()); // larger than a buffer
    /// assert_eq!(rec.records_dropped(), 1);
    /// assert_eq!(rec.stats().records_dropped, 1);
    /// ```
    pub fn records_dropped(&self) -> u64 {
        self.records_dropped
    }

    /// Counts `n` records lost outside this recorder (for example by a context
    /// that has no ring of its own, see [`crate::context`]) as its own drops: they
    /// join [`records_dropped`](Self::records_dropped) and the next loss marker,
    /// which [`flush`](Self::flush) writes. `ts` is when they were lost.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::verify;
    /// # flightrec_core::__ring_example!(rec, consumer);
    /// rec.count_lost(3, Timestamp::default());
    /// assert_eq!(rec.records_dropped(), 3);
    /// rec.flush(); // writes a buffer with the loss marker
    /// assert_eq!(consumer.pending(), 1);
    /// ```
    pub fn count_lost(&mut self, n: u64, ts: Timestamp) {
        if n == 0 {
            return;
        }
        self.records_dropped = self.records_dropped.saturating_add(n);
        self.unmarked_loss = self.unmarked_loss.saturating_add(n);
        self.straight_switch = false;
        self.last_loss = ts;
        self.ring
            .state
            .records_dropped
            .store(self.records_dropped as u32, Ordering::Relaxed);
    }

    pub(super) fn reject(&mut self, e: WriteError, ts: Timestamp) -> Dropped {
        match e {
            WriteError::EmptyPayload => Dropped::EmptyPayload,
            WriteError::Full | WriteError::TooLarge { .. } => {
                self.count_drop(ts);
                Dropped::TooLarge
            }
        }
    }

    pub(super) fn count_drop(&mut self, ts: Timestamp) {
        self.records_dropped += 1;
        self.unmarked_loss += 1;
        self.straight_switch = false;
        self.last_loss = ts;
        // Only this recorder writes the counter, so a load and a store suffice (no
        // read-modify-write, which thumbv6m lacks).
        self.ring
            .state
            .records_dropped
            .store(self.records_dropped as u32, Ordering::Relaxed);
    }

    /// Writes the loss marker (see [`LOSS_EVENT_TYPE`]) for the records lost since
    /// the last one into the current buffer; returns whether it fit. Out of line,
    /// so that its frame is not `acquire`'s (see there).
    #[inline(never)]
    pub(super) fn mark_loss(&mut self, ts: Timestamp) -> bool {
        // The text is written straight into the buffer: no buffer of its own to
        // clear and copy (a `memclr` call and a copy loop on thumbv6m).
        let n = self.unmarked_loss;
        let len = loss_text_len(n);
        let fill = |out: &mut [u8]| loss_text(n, out);
        let marked = if self.config.writer.version().events_use_delta() {
            self.writer.typed_event_with(ts, LOSS_EVENT_TYPE, len, fill)
        } else {
            self.writer.custom_event_with(ts, len, fill)
        };
        if marked.is_ok() {
            self.unmarked_loss = 0;
        }
        marked.is_ok()
    }

    /// `flush` with records lost since the last marker: writes the marker into the
    /// current buffer, or into a new one when there is none or it is full, so that
    /// the markers of the handed-over buffers add up to the dropped count. In
    /// streaming mode, with every buffer still waiting for the consumer, the marker
    /// stays pending for the next buffer.
    #[cold]
    pub(super) fn flush_loss(&mut self) {
        if self.broken {
            return;
        }
        // The marker's time: the last record's in the current buffer (so the delta
        // is 0), else the time of the last lost record.
        let ts = self.writer.latest_timestamp().unwrap_or(self.last_loss);
        if !self.writer.is_detached() {
            if self.mark_loss(ts) {
                return;
            }
            self.finish_current();
        }
        // A new buffer starts with the marker.
        self.acquire(ts);
    }
}

/// The loss marker's text before and after the count.
pub(super) const LOSS_PREFIX: &[u8] = b"flightrec: lost ";

pub(super) const LOSS_SUFFIX: &[u8] = b" records";

/// The length of [`loss_text`]'s `flightrec: lost N records`.
pub(super) fn loss_text_len(n: u64) -> usize {
    LOSS_PREFIX.len() + decimal_digits(n) + LOSS_SUFFIX.len()
}

/// The count of decimal digits of `n`, by the division that writes them
/// (`crate::divide`, linked for it anyway): a loss marker is rare, and a
/// comparison with powers of ten needs a 64-bit product, a library call on
/// thumbv6m.
pub(super) fn decimal_digits(n: u64) -> usize {
    let mut digits = 1;
    let mut v = n;
    while v >= 10 {
        v = crate::divide::div_rem(v, crate::divide::TEN).0;
        digits += 1;
    }
    digits
}

/// Writes `flightrec: lost N records` into `out`, which has
/// [`loss_text_len`]`(n)` bytes (a shorter `out` gets part of the text, never
/// a panic).
pub(super) fn loss_text(n: u64, out: &mut [u8]) {
    let end = out.len().saturating_sub(LOSS_SUFFIX.len());
    let (head, suffix) = out.split_at_mut(end);
    crate::fdr::writer::copy_bytes(head, LOSS_PREFIX);
    crate::fdr::writer::copy_bytes(suffix, LOSS_SUFFIX);
    let digits = head.get_mut(LOSS_PREFIX.len()..).unwrap_or(&mut []);
    // The digits from the last: one division by ten each (`crate::divide`: no
    // 64-bit `/`, a library call on 32-bit cores).
    let mut v = n;
    for d in digits.iter_mut().rev() {
        let (q, r) = crate::divide::div_rem(v, crate::divide::TEN);
        crate::fdr::writer::put_byte(d, b'0' + r as u8);
        v = q;
    }
}
