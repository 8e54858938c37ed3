//! Rings: a fixed set of FDR buffers for one recording context.
//!
//! A [`Ring`] splits caller memory into `N` buffers of equal size. Each recording
//! context (a thread, a core, an RTOS task, an interrupt priority level) owns one ring
//! and records into it through its [`Recorder`]. When a buffer fills, the recorder
//! finishes it and moves to the next one, according to the ring's [`Policy`]:
//!
//! * [`Policy::FlightRecorder`]: keep the newest `N` buffers; the oldest is
//!   overwritten. Nothing is ever dropped; what was overwritten is counted in
//!   [`RingStats::buffers_overwritten`]. Read the buffers with
//!   [`Recorder::for_each_buffer`] (at exit, on demand, from a fault handler).
//! * [`Policy::Streaming`]: finished buffers go to a [`Consumer`] (a flusher thread,
//!   the main loop or an idle task draining them to a file or a serial link). When
//!   every buffer is waiting for the consumer, new records are dropped and counted in
//!   [`RingStats::records_dropped`], never blocking and never touching a buffer the
//!   consumer may be reading. The next buffer the recorder gets starts with a
//!   typed event ([`LOSS_EVENT_TYPE`]; a custom event before version 5) whose payload
//!   says how many records were lost, so the loss is visible in the trace itself;
//!   [`Recorder::flush`] writes a pending one too, so the markers of a drained trace
//!   add up to [`Recorder::records_dropped`].
//!
//! A [`Ring`] works over caller memory; a
//! [`StaticRing`](super::static_ring::StaticRing) owns its memory and is declared
//! as a `static`. Both hand out the same [`Recorder`] and [`Consumer`].
//!
//! # Concurrency contract
//!
//! The ring uses only atomic loads and stores (no compare-and-swap, no
//! read-modify-write), so it works unchanged on `thumbv6m-none-eabi` and other targets
//! without CAS, with no critical sections.
//!
//! * **[`Recorder`]** (the producer): all its methods must be called from one
//!   execution context at a time: one thread, or one task, or one interrupt priority
//!   level. Two contexts that can preempt each other (a thread and an interrupt
//!   handler, two interrupt priorities) must each have their own ring. Calling it from
//!   an interrupt handler is fine when that priority level owns the ring. The borrow
//!   checker enforces this within safe code: [`Ring::split`] takes the ring by `&mut`,
//!   so a ring has one recorder, and every recording method takes `&mut self`, so one
//!   place at a time can record. The recorder is `Send` (hand it to the context that
//!   records) and also `Sync`, which is harmless: a shared `&Recorder` only reaches
//!   the `&self` methods ([`Recorder::stats`], [`Recorder::records_dropped`],
//!   [`Recorder::config`], [`Recorder::file_header`]), which read atomics and fields
//!   no one can change while that borrow lasts.
//! * **[`Consumer`]**: any one other context at a time, on any core, concurrently
//!   with the recorder (another thread, the main loop while interrupts record, a
//!   second core). [`Consumer::pop`] is wait-free.
//! * **[`Ring::stats`]**: any context, any core, any time.
//!
//! Memory ordering: a buffer's bytes are written by the recorder before it publishes
//! the buffer with a release store of the ring's head; the consumer reads the head
//! with acquire before reading the bytes, and gives the buffer back with a release
//! store of the tail, which the recorder reads with acquire before reusing it.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::num::NonZeroU64;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use super::header::{FileHeader, HeaderFlags};
use super::records::{FunctionAction, FunctionId, FunctionRecord};
use super::writer::{BufferTooSmall, BufferWriter, RecordError, Tried, Walltime, WriterConfig};
use crate::clock::Timestamp;
use crate::hint::cold_path;

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

/// What a ring does when its buffers are all in use.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
///
/// let f = FunctionId::new(1).unwrap();
/// for policy in [Policy::FlightRecorder, Policy::Streaming] {
///     let mut storage = [0u8; 2 * 128];
///     let slots = [Slot::NEW; 2];
///     let mut ring = Ring::new(&mut storage, &slots, policy).unwrap();
///     let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
///     for t in 0..100 {
///         let _ = rec.enter(f, Timestamp { tsc: t, cpu: 0 });
///     }
///     let stats = rec.stats();
///     match policy {
///         // The oldest buffers were overwritten; no record was refused.
///         Policy::FlightRecorder => assert!(stats.buffers_overwritten > 0 && stats.records_dropped == 0),
///         // Nobody consumed: both buffers wait, newer records were refused.
///         Policy::Streaming => assert!(stats.buffers_overwritten == 0 && stats.records_dropped > 0),
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Policy {
    /// Keep the newest buffers, overwrite the oldest.
    FlightRecorder,
    /// Hand finished buffers to a consumer; drop new records while it is behind.
    Streaming,
}

/// Bookkeeping for one buffer of a ring. Make an array of them with [`Slot::NEW`]; the
/// number of slots is the number of buffers [`Ring::new`] splits its storage into.
///
/// ```
/// use flightrec_core::fdr::ring::{Policy, Ring, Slot};
/// static SLOTS: [Slot; 4] = [Slot::NEW; 4];
/// let mut storage = [0u8; 4 * 512];
/// let ring = Ring::new(&mut storage, &SLOTS, Policy::FlightRecorder).unwrap();
/// assert_eq!(ring.buffer_count(), 4);
/// ```
#[derive(Debug)]
pub struct Slot {
    /// Bytes used in the buffer once it is finished.
    len: AtomicU32,
}

impl Slot {
    /// An unused slot; a constant so that `[Slot::NEW; N]` works in a `static`.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, Ring, Slot};
    /// let slots = [Slot::NEW; 3];
    /// let mut storage = [0u8; 3 * 128];
    /// let ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// assert_eq!((ring.buffer_count(), ring.buffer_size()), (3, 128));
    /// ```
    #[allow(clippy::declare_interior_mutable_const)] // the point: a fresh slot per use
    pub const NEW: Slot = Slot {
        len: AtomicU32::new(0),
    };
}

impl Default for Slot {
    fn default() -> Self {
        Slot::NEW
    }
}

/// Why a ring could not be made.
///
/// ```
/// use flightrec_core::fdr::ring::{Policy, Ring, RingError};
/// let mut storage = [0u8; 256];
/// let err = Ring::new(&mut storage, &[], Policy::Streaming).err();
/// assert_eq!(err, Some(RingError::NoSlots));
/// assert_eq!(RingError::NoSlots.to_string(), "a ring needs at least one buffer");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RingError {
    /// No slots were given.
    NoSlots,
    /// Each buffer (storage length / slot count) is smaller than a writer needs.
    ///
    /// [`Ring::new`] does not know the writer's configuration, so it does not return
    /// this: a ring whose buffers are too small for the configuration given to
    /// [`Ring::split`] refuses every record with [`Dropped::TooLarge`] instead.
    BufferTooSmall(BufferTooSmall),
    /// Each buffer would be larger than 4 GiB.
    BufferTooLarge,
    /// More than `u32::MAX` slots were given (buffer sequence numbers are 32-bit).
    TooManySlots,
}

impl core::fmt::Display for RingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RingError::NoSlots => f.write_str("a ring needs at least one buffer"),
            RingError::BufferTooSmall(e) => write!(f, "ring buffers too small: {e}"),
            RingError::BufferTooLarge => f.write_str("ring buffers must be under 4 GiB"),
            RingError::TooManySlots => f.write_str("a ring has at most u32::MAX buffers"),
        }
    }
}

/// Counters of a ring, readable from any context: [`Ring::stats`],
/// [`Recorder::stats`] and [`Consumer::stats`] all return them.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, RingStats, Slot};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
///
/// let mut storage = [0u8; 2 * 256];
/// let slots = [Slot::NEW; 2];
/// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
/// let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
/// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
/// rec.flush();
/// drop(consumer.pop());
/// assert_eq!(
///     consumer.stats(),
///     RingStats { buffers_finished: 1, buffers_consumed: 1, records_dropped: 0, buffers_overwritten: 0 }
/// );
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RingStats {
    /// Buffers finished (handed to the consumer, or completed in flight-recorder mode).
    pub buffers_finished: u32,
    /// Buffers the consumer has released.
    pub buffers_consumed: u32,
    /// Records dropped because the consumer was behind (streaming). Wraps at 2^32.
    pub records_dropped: u32,
    /// Buffers overwritten before anyone read them (flight recorder).
    pub buffers_overwritten: u32,
}

/// A fixed set of buffers in caller memory.
///
/// Make one per recording context over memory it alone uses (a `static` array on
/// firmware), then [`split`](Ring::split) it into its [`Recorder`] and its
/// [`Consumer`]. See the [module docs](self) for the policies and the concurrency
/// contract.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
///
/// let mut storage = [0u8; 4 * 256];
/// let slots = [Slot::NEW; 4];
/// let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000_000);
/// let (mut rec, _consumer) = ring.split(cfg);
/// let f = FunctionId::new(1).unwrap();
/// for t in 0..100u64 {
///     rec.enter(f, Timestamp { tsc: t * 10, cpu: 0 }).unwrap();
///     rec.exit(f, Timestamp { tsc: t * 10 + 5, cpu: 0 }).unwrap();
/// }
/// let mut buffers = 0;
/// rec.for_each_buffer(|bytes| buffers += usize::from(!bytes.is_empty()));
/// assert_eq!(buffers, 4);
/// assert!(rec.stats().buffers_overwritten > 0);
/// ```
pub struct Ring<'a> {
    storage: NonNull<u8>,
    buffer_size: usize,
    slots: &'a [Slot],
    policy: Policy,
    state: RingState,
    /// The buffers' bytes are shared between recorder and consumer through `storage`.
    _storage: PhantomData<&'a UnsafeCell<[u8]>>,
}

// SAFETY: the ring hands out each buffer to one side at a time (the recorder while it
// writes it, the consumer between publication and release), synchronised by the
// release/acquire protocol on `head` and `tail` described in the module docs; every
// other shared field is an atomic.
unsafe impl Sync for Ring<'_> {}
// SAFETY: the ring owns a unique borrow of its storage; moving it to another thread
// moves that borrow.
unsafe impl Send for Ring<'_> {}

impl<'a> Ring<'a> {
    /// A ring over `storage`, split into `slots.len()` buffers of equal size (rounded
    /// down to a multiple of 8 bytes).
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, Ring, RingError, Slot};
    /// let mut storage = [0u8; 1000];
    /// let slots = [Slot::NEW; 3];
    /// let ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// assert_eq!(ring.buffer_size(), 328); // 1000 / 3 = 333, rounded down to 8 bytes
    /// let mut storage = [0u8; 1000];
    /// assert_eq!(Ring::new(&mut storage, &[], Policy::Streaming).err(), Some(RingError::NoSlots));
    /// ```
    pub fn new(
        storage: &'a mut [u8],
        slots: &'a [Slot],
        policy: Policy,
    ) -> Result<Self, RingError> {
        if slots.is_empty() {
            return Err(RingError::NoSlots);
        }
        if u32::try_from(slots.len()).is_err() {
            return Err(RingError::TooManySlots);
        }
        let buffer_size = (storage.len() / slots.len()) & !7;
        if u32::try_from(buffer_size).is_err() {
            return Err(RingError::BufferTooLarge);
        }
        for s in slots {
            s.len.store(0, Ordering::Relaxed);
        }
        Ok(Self {
            storage: NonNull::from(storage).cast(),
            buffer_size,
            slots,
            policy,
            state: RingState::new(),
            _storage: PhantomData,
        })
    }

    /// Size of each buffer in bytes.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, Ring, Slot};
    /// let mut storage = [0u8; 4 * 1024];
    /// let slots = [Slot::NEW; 4];
    /// let ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    /// assert_eq!(ring.buffer_size(), 1024);
    /// ```
    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// Number of buffers: the number of slots.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, Ring, Slot};
    /// let mut storage = [0u8; 4 * 1024];
    /// let slots = [Slot::NEW; 4];
    /// let ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    /// assert_eq!(ring.buffer_count(), 4);
    /// ```
    pub fn buffer_count(&self) -> usize {
        self.slots.len()
    }

    /// The ring's policy.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, Ring, Slot};
    /// let mut storage = [0u8; 1024];
    /// let slots = [Slot::NEW; 1];
    /// let ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// assert_eq!(ring.policy(), Policy::Streaming);
    /// ```
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The counters. Safe from any context; while the ring is split, read them through
    /// [`Recorder::stats`] or [`Consumer::stats`].
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    /// let mut storage = [0u8; 2 * 256];
    /// let slots = [Slot::NEW; 2];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// {
    ///     let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    ///     rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    ///     rec.flush();
    /// }
    /// assert_eq!(ring.stats().buffers_finished, 1);
    /// assert_eq!(ring.stats().buffers_consumed, 0);
    /// ```
    pub fn stats(&self) -> RingStats {
        self.state.stats()
    }

    /// Splits the ring into its recorder and its consumer.
    ///
    /// When the buffers are too small for `config` (see
    /// [`WriterConfig::min_buffer_len`]), every record is refused with
    /// [`Dropped::TooLarge`] and counted.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::ring::{Dropped, Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    /// let mut storage = [0u8; 2 * 64]; // 64-byte buffers; this writer needs 72
    /// let slots = [Slot::NEW; 2];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let f = FunctionId::new(1).unwrap();
    /// assert_eq!(rec.enter(f, Timestamp::default()), Err(Dropped::TooLarge));
    /// assert_eq!(rec.records_dropped(), 1);
    /// ```
    pub fn split<'r>(&'r mut self, config: RecorderConfig) -> (Recorder<'r, 'a>, Consumer<'r, 'a>) {
        let ring: &'r Ring<'a> = self;
        let view = RingView {
            storage: ring.storage,
            buffer_size: ring.buffer_size,
            slots: ring.slots,
            policy: ring.policy,
            state: &ring.state,
        };
        (Recorder::new(view, config), Consumer::new(view))
    }
}

/// The state a ring shares between its recorder, its consumer and anyone reading
/// its counters: every field is an atomic, so it can live in a `static`.
#[derive(Debug)]
pub(crate) struct RingState {
    /// Buffers finished so far (wrapping). Written by the recorder only.
    head: AtomicU32,
    /// Buffers released by the consumer (wrapping). Written by the consumer only.
    tail: AtomicU32,
    /// Written by the recorder only.
    records_dropped: AtomicU32,
    /// Written by the recorder only.
    buffers_overwritten: AtomicU32,
    /// Streaming: the `fn()` the recorder calls after handing over a buffer, or
    /// null. Written by the consumer ([`Consumer::set_buffer_ready`]); kept here,
    /// behind the view's pointer, so that the recorder's own fields (which the
    /// record path reaches with short offsets on Thumb-1) do not move.
    buffer_ready: AtomicPtr<()>,
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
/// [`StaticRing`](super::static_ring::StaticRing) (its own memory) make one.
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
    fn next_slot(&self, index: usize) -> usize {
        let next = index + 1;
        if next == self.slots.len() {
            0
        } else {
            next
        }
    }

    /// The slot `back` buffers before `index` (`back <= N`).
    fn slot_before(&self, index: usize, back: usize) -> usize {
        if back <= index {
            index - back
        } else {
            index + (self.slots.len() - back)
        }
    }

    /// Slot `index`, without a bounds test: the buffer switch's, where `get`'s
    /// test and the length it compares with cost a few Cortex-M0 cycles.
    ///
    /// # Safety
    /// `index < N`: a recorder's or a consumer's `slot` (0 at first, then from
    /// `next_slot`).
    #[inline(always)]
    unsafe fn slot_at(&self, index: usize) -> &'r Slot {
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
    unsafe fn buffer_mut(&self, index: usize) -> &'r mut [u8] {
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
    unsafe fn buffer(&self, index: usize, len: usize) -> &'r [u8] {
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

/// How a [`Recorder`] writes its buffers: the [`WriterConfig`] of each buffer, the
/// clock rate, and the wall-clock time at some TSC.
///
/// ```
/// use flightrec_core::fdr::ring::RecorderConfig;
/// use flightrec_core::fdr::writer::{Walltime, WriterConfig};
/// let cfg = RecorderConfig::new(WriterConfig::new(7).with_pid(100), 48_000_000)
///     .with_epoch(Walltime { seconds: 1_700_000_000, micros: 0 }, 0);
/// assert_eq!(cfg.ticks_per_second.get(), 48_000_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RecorderConfig {
    /// Version, thread id, process id and elision threshold.
    pub writer: WriterConfig,
    /// The clock rate; written in the file header and used for wall times.
    pub ticks_per_second: NonZeroU64,
    /// Wall time at TSC `epoch_tsc`: the first buffer's WalltimeMarker seconds are
    /// derived from it (see [`Recorder`] for the later ones).
    pub epoch: Walltime,
    /// The TSC at `epoch`.
    pub epoch_tsc: u64,
}

impl RecorderConfig {
    /// A configuration with wall times counted from 0 at TSC 0 (firmware without a
    /// real-time clock). A rate of 0 is taken as 1.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::RecorderConfig;
    /// use flightrec_core::fdr::writer::{Walltime, WriterConfig};
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 0);
    /// assert_eq!(cfg.ticks_per_second.get(), 1);
    /// assert_eq!((cfg.epoch, cfg.epoch_tsc), (Walltime::default(), 0));
    /// ```
    pub const fn new(writer: WriterConfig, ticks_per_second: u64) -> Self {
        let ticks_per_second = match NonZeroU64::new(ticks_per_second) {
            Some(f) => f,
            None => NonZeroU64::MIN,
        };
        Self {
            writer,
            ticks_per_second,
            epoch: Walltime {
                seconds: 0,
                micros: 0,
            },
            epoch_tsc: 0,
        }
    }

    /// Sets the wall time at a given TSC, so that buffers carry real wall-clock
    /// seconds (the std shell reads the system clock and the TSC once at start).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::{Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionId, Version};
    ///
    /// // At TSC 1000 of a 1 kHz clock it was 1_700_000_000 s.
    /// let epoch = Walltime { seconds: 1_700_000_000, micros: 0 };
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000).with_epoch(epoch, 1_000);
    /// let mut storage = [0u8; 256];
    /// let slots = [Slot::NEW; 1];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let (mut rec, mut consumer) = ring.split(cfg);
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp { tsc: 6_000, cpu: 0 }).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// let (walltime, _) = decode_record(Version::V5, &buffer[32..]).unwrap();
    /// assert_eq!(walltime, Record::Walltime { seconds: 1_700_000_005, micros: 0 });
    /// ```
    pub const fn with_epoch(mut self, epoch: Walltime, epoch_tsc: u64) -> Self {
        self.epoch = epoch;
        self.epoch_tsc = epoch_tsc;
        self
    }

    /// The file header for traces of this configuration with buffers of `buffer_size`.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::RecorderConfig;
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// let cfg = RecorderConfig::new(WriterConfig::new(1).with_version(Version::V3), 48_000_000);
    /// let header = cfg.file_header(1024);
    /// assert_eq!(header.version, Version::V3);
    /// assert_eq!(header.cycle_frequency.get(), 48_000_000);
    /// assert_eq!(header.buffer_size, 1024);
    /// ```
    pub fn file_header(&self, buffer_size: usize) -> FileHeader {
        FileHeader {
            version: self.writer.version(),
            flags: HeaderFlags::CONSTANT_TSC | HeaderFlags::NONSTOP_TSC,
            cycle_frequency: self.ticks_per_second,
            buffer_size: buffer_size as u64,
            walltime_at_tsc0_ns: self.walltime_at_tsc0_ns(),
        }
    }

    /// The wall-clock time at TSC 0 from `epoch` and `epoch_tsc`, when `epoch` is
    /// a real wall-clock time (from 2001 on: a firmware without a wall clock keeps
    /// the default epoch, second 0).
    fn walltime_at_tsc0_ns(&self) -> Option<NonZeroU64> {
        const WALL_CLOCK_FROM_SECS: i64 = 1_000_000_000;
        if self.epoch.seconds < WALL_CLOCK_FROM_SECS {
            return None;
        }
        let epoch_ns = u128::try_from(self.epoch.seconds).ok()? * 1_000_000_000
            + u128::from(self.epoch.micros) * 1_000;
        let since_tsc0 =
            u128::from(self.epoch_tsc) * 1_000_000_000 / u128::from(self.ticks_per_second.get());
        let at = epoch_ns.checked_sub(since_tsc0)?;
        NonZeroU64::new(u64::try_from(at).ok()?)
    }

    fn walltime_at(&self, tsc: u64) -> Walltime {
        self.epoch
            .advanced_by_ticks(tsc.saturating_sub(self.epoch_tsc), self.ticks_per_second)
    }
}

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

/// The recording side of a ring: writes records into the current buffer and moves
/// to the next when it fills.
///
/// Every method returns at once; none blocks, allocates or panics. A record that is
/// not kept is reported as [`Dropped`] and counted in [`RingStats`]. In streaming mode
/// each finished buffer goes to the [`Consumer`], which lends it out as a
/// [`FinishedBuffer`]; in flight-recorder mode read the buffers with
/// [`for_each_buffer`](Recorder::for_each_buffer).
///
/// ```
/// use flightrec_core::clock::{Clock, ManualClock};
/// use flightrec_core::fdr::decoder::verify;
/// use flightrec_core::fdr::header::HEADER_SIZE;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
///
/// let mut storage = [0u8; 4 * 256];
/// let slots = [Slot::NEW; 4];
/// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
/// let mut clock = ManualClock::new(1_000_000);
/// let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000_000));
///
/// // The file the consumer writes: the header, then each buffer it gets.
/// let mut file = [0u8; HEADER_SIZE + 16 * 256];
/// file[..HEADER_SIZE].copy_from_slice(&rec.file_header().to_bytes());
/// let mut len = HEADER_SIZE;
///
/// let (outer, inner) = (FunctionId::new(1).unwrap(), FunctionId::new(2).unwrap());
/// for _ in 0..50 {
///     rec.enter(outer, clock.now()).unwrap();
///     clock.advance(10);
///     rec.enter(inner, clock.now()).unwrap();
///     clock.advance(10);
///     rec.exit(inner, clock.now()).unwrap();
///     rec.exit(outer, clock.now()).unwrap();
///     // The main loop drains finished buffers as they come.
///     while let Some(buffer) = consumer.pop() {
///         file[len..len + buffer.len()].copy_from_slice(&buffer);
///         len += buffer.len();
///     }
/// }
/// rec.flush();
/// while let Some(buffer) = consumer.pop() {
///     file[len..len + buffer.len()].copy_from_slice(&buffer);
///     len += buffer.len();
/// }
///
/// let summary = verify(&file[..len]).unwrap();
/// assert_eq!(summary.function_records, 200);
/// assert_eq!(summary.buffers as u32, rec.stats().buffers_finished);
/// assert_eq!(rec.records_dropped(), 0);
/// ```
// `repr(C)`, the writer first: the record path reads the writer's fields, and
// Thumb-1 loads reach only 124 bytes (words) or 31 bytes (bytes) past a base
// register; left to the compiler, a new field elsewhere could move them past that
// and cost the Cortex-M0 record path an instruction per access.
#[repr(C)]
pub struct Recorder<'r, 'a> {
    /// The buffer being written, or the detached writer when there is none (it
    /// refuses every record, which sends the record to the slow path).
    writer: BufferWriter<'r>,
    ring: RingView<'r>,
    config: RecorderConfig,
    /// Sequence number of the current (or next) buffer.
    seq: u32,
    /// The slot of buffer `seq` (see `RingView::next_slot`).
    slot: usize,
    /// The WalltimeMarker of the current (the last started) buffer (see
    /// `next_walltime`); before the first, micros [`WALLTIME_NOT_STARTED`]
    /// (a sentinel rather than an `Option`: the straight switch then loads it
    /// without a test, and the recorder keeps its layout).
    walltime: Walltime,
    /// Records lost since the last loss marker was written.
    unmarked_loss: u64,
    /// When the last record was lost: the time of a loss marker that `flush`
    /// writes without a current buffer.
    last_loss: Timestamp,
    /// All records dropped (the ring's counter is its low 32 bits).
    records_dropped: u64,
    /// The buffers cannot hold even one record with this configuration.
    broken: bool,
    /// Slots `0 .. prepared` hold a preamble this recorder wrote (it takes the
    /// slots in turn from 0): [`switch_for_function`](Self::switch_for_function)
    /// rewrites only its changing records there.
    prepared: usize,
    /// The next buffer switch may be [`switch_for_function`](Self::switch_for_function)'s
    /// as far as the recorder goes ([`straight_switch_now`](Self::straight_switch_now)):
    /// the writer is on one of the ring's buffers (`BufferWriter::restarts_on`),
    /// the wall time has started, no loss waits for its marker, every slot holds
    /// a preamble and the ring is not broken. One test on the switch where these
    /// were five (about 25 Cortex-M4 cycles). `acquire` sets it after the
    /// writer's `start`; whatever can make a part false clears it (a drop, a
    /// loss counted from outside, a detach). A false one only sends the switch
    /// the slow way, which the loss marker's buffer takes anyway.
    straight_switch: bool,
    /// The ring's storage lives for `'a`, which outlives `'r`.
    _ring: PhantomData<&'r Ring<'a>>,
}

// `Recorder` is `Send` and `Sync` without an impl of its own: it holds a `RingView`
// (`Send` and `Sync` as `Ring` is), a `BufferWriter` over a buffer it alone holds, and
// plain data. Recording
// takes `&mut self`, so being `Sync` lets other contexts only read (see the module
// docs); `tests::recorder_is_send_and_sync` pins both.

/// `Recorder::walltime`'s micros before the first buffer: no wall-clock
/// second yet (a started one's micros are below 10^6).
const WALLTIME_NOT_STARTED: u32 = u32::MAX;

/// Whether a wall time's `seconds` and the next buffer's (one up) are a
/// `u32`, as the straight buffer switch wants them
/// (`Recorder::switch_for_function`): from 1970 to 2106 on a Unix epoch.
#[inline(always)]
fn seconds_fit_a_word(seconds: i64) -> bool {
    (0..i64::from(u32::MAX)).contains(&seconds)
}

/// The WalltimeMarker of the buffer after one with `w` (see
/// `Recorder::next_walltime`): both fields one up, the micros below 10^6.
/// The seconds wrap rather than saturate: a recorder never starts 2^63
/// buffers, and the saturating add's test cost 3 Cortex-M4 cycles a switch.
#[inline(always)]
fn walltime_after(w: Walltime) -> Walltime {
    Walltime {
        seconds: w.seconds.wrapping_add(1),
        micros: micros_after(w.micros),
    }
}

/// [`walltime_after`]'s micros: one up, below 10^6.
#[inline(always)]
fn micros_after(micros: u32) -> u32 {
    if micros >= 999_999 {
        0
    } else {
        micros + 1
    }
}

impl<'r, 'a> Recorder<'r, 'a> {
    pub(crate) fn new(ring: RingView<'r>, config: RecorderConfig) -> Self {
        let too_small = ring.buffer_size < config.writer.min_buffer_len();
        // No slot holds a finished buffer of this recorder yet: a ring split
        // again after an earlier recorder forgets that one's buffers, so that
        // `for_each_buffer` shows this recorder's only.
        for slot in ring.slots {
            slot.len.store(0, Ordering::Relaxed);
        }
        Recorder {
            ring,
            config,
            writer: BufferWriter::detached(),
            seq: 0,
            slot: 0,
            walltime: Walltime {
                seconds: 0,
                micros: WALLTIME_NOT_STARTED,
            },
            unmarked_loss: 0,
            last_loss: Timestamp { tsc: 0, cpu: 0 },
            records_dropped: 0,
            broken: too_small,
            prepared: 0,
            straight_switch: false,
            _ring: PhantomData,
        }
    }

    /// The ring's counters.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// assert_eq!(rec.stats().buffers_finished, 0); // still being written
    /// rec.flush();
    /// assert_eq!(rec.stats().buffers_finished, 1);
    /// ```
    pub fn stats(&self) -> RingStats {
        self.ring.state.stats()
    }

    /// All records dropped by this recorder, as a 64-bit count ([`RingStats`] keeps
    /// the low 32 bits, since a 64-bit atomic store is not available everywhere).
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
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
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::decoder::verify;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
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

    /// The configuration given to [`Ring::split`].
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// let mut storage = [0u8; 256];
    /// let slots = [Slot::NEW; 1];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let (rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(12), 1_000));
    /// assert_eq!(rec.config().writer.tid, 12);
    /// assert_eq!(rec.config().ticks_per_second.get(), 1_000);
    /// ```
    pub fn config(&self) -> &RecorderConfig {
        &self.config
    }

    /// The header of a file holding this ring's buffers: write it first, then the
    /// buffers (from [`Consumer::pop`] or [`Recorder::for_each_buffer`]).
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// let mut storage = [0u8; 2 * 512];
    /// let slots = [Slot::NEW; 2];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let (rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 64_000_000));
    /// let header = rec.file_header();
    /// assert_eq!(header.version, Version::V5);
    /// assert_eq!(header.cycle_frequency.get(), 64_000_000);
    /// assert_eq!(header.buffer_size, 512);
    /// ```
    pub fn file_header(&self) -> FileHeader {
        self.config.file_header(self.ring.buffer_size)
    }

    /// Records a function entry: call it at the top of an instrumented function with
    /// a [`Timestamp`] from the context's [`Clock`](crate::clock::Clock).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut storage = [0u8; 2 * 256];
    /// let slots = [Slot::NEW; 2];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let id = FunctionId::new(9).unwrap();
    /// rec.enter(id, Timestamp { tsc: 500, cpu: 0 }).unwrap();
    /// rec.enter(id, Timestamp { tsc: 530, cpu: 0 }).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// let (second, _) = decode_record(Version::V5, &buffer[buffer.len() - 8..]).unwrap();
    /// assert_eq!(second, Record::Function { action: FunctionAction::Enter, id, delta: 30 });
    /// ```
    #[inline]
    pub fn enter(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Dropped> {
        self.function(FunctionAction::Enter, id, ts)
    }

    /// Records a function exit. With a short-call threshold
    /// (`WriterConfig::with_threshold_ticks`, feature `short-call-elision`) it may
    /// erase a short call instead.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut storage = [0u8; 2 * 256];
    /// let slots = [Slot::NEW; 2];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let id = FunctionId::new(9).unwrap();
    /// rec.enter(id, Timestamp { tsc: 500, cpu: 0 }).unwrap();
    /// rec.exit(id, Timestamp { tsc: 620, cpu: 0 }).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// let (exit, _) = decode_record(Version::V5, &buffer[buffer.len() - 8..]).unwrap();
    /// assert_eq!(exit, Record::Function { action: FunctionAction::Exit, id, delta: 120 });
    /// ```
    #[inline]
    pub fn exit(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Dropped> {
        self.function(FunctionAction::Exit, id, ts)
    }

    /// Records an exit through a tail call.
    ///
    /// ```
    /// # use flightrec_core::fdr::decoder::decode_record;
    /// # use flightrec_core::fdr::records::Record;
    /// # use flightrec_core::fdr::{FunctionAction, Version};
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let id = FunctionId::new(4).unwrap();
    /// rec.enter(id, Timestamp { tsc: 1, cpu: 0 }).unwrap();
    /// rec.tail_exit(id, Timestamp { tsc: 3, cpu: 0 }).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// let (last, _) = decode_record(Version::V5, &buffer[buffer.len() - 8..]).unwrap();
    /// assert_eq!(last, Record::Function { action: FunctionAction::TailExit, id, delta: 2 });
    /// ```
    #[inline]
    pub fn tail_exit(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Dropped> {
        self.function(FunctionAction::TailExit, id, ts)
    }

    /// Records a function record of any action, for instrumentation that passes the
    /// action as a value (as XRay's handler does).
    ///
    /// ```
    /// # use flightrec_core::fdr::decoder::decode_record;
    /// # use flightrec_core::fdr::records::Record;
    /// # use flightrec_core::fdr::Version;
    /// use flightrec_core::fdr::FunctionAction;
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let id = FunctionId::new(4).unwrap();
    /// rec.function(FunctionAction::EnterArg, id, Timestamp { tsc: 1, cpu: 0 }).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// let (last, _) = decode_record(Version::V5, &buffer[buffer.len() - 8..]).unwrap();
    /// assert_eq!(last, Record::Function { action: FunctionAction::EnterArg, id, delta: 0 });
    /// ```
    #[inline(always)]
    pub fn function(
        &mut self,
        action: FunctionAction,
        id: FunctionId,
        ts: Timestamp,
    ) -> Result<(), Dropped> {
        self.function_word(FunctionRecord::low_word(action, id), ts)
    }

    /// [`function`](Self::function) with the action and id as the record's low
    /// word (see [`BufferWriter::function_word`]).
    #[inline(always)]
    pub(crate) fn function_word(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        if self.writer.function_word(low, ts).is_ok() {
            return Ok(());
        }
        self.function_slow(low, ts)
    }

    /// Stores a function record (its low word, [`FunctionRecord::low_word`]) only
    /// when that needs no call: the current buffer has room and nothing must come
    /// first. Otherwise nothing was written or counted: record it with
    /// [`function_word_full`](Self::function_word_full) when the buffer is
    /// full ([`Tried::Full`]), else with
    /// [`function_word_general`](Self::function_word_general).
    #[inline(always)]
    pub(crate) fn try_function_word(&mut self, low: u32, ts: Timestamp) -> Tried {
        self.writer.try_function_word(low, ts)
    }

    /// Stores a typed event with an 8-byte payload only when that needs no
    /// call (see `BufferWriter::try_typed_event8`); otherwise nothing was
    /// written or counted: record it with [`typed_event`](Self::typed_event).
    #[inline(always)]
    pub(crate) fn try_typed_event8(
        &mut self,
        ts: Timestamp,
        event_type: u16,
        words: [u32; 2],
    ) -> bool {
        self.writer.try_typed_event8(ts, event_type, words)
    }

    /// [`function_word`](Self::function_word) for a record that
    /// [`try_function_word`](Self::try_function_word) found
    /// [`Tried::Full`], at the time whose low word is `raw`: the straight
    /// switch, else the slow path's.
    #[inline(always)]
    pub(crate) fn function_word_full(&mut self, low: u32, raw: u32) -> Result<(), Dropped> {
        debug_assert!(self.writer.lacks_room_for_function(low));
        let ts = self.writer.time_of_full(raw);
        // On a 32-bit target that time is on CPU 0 and `epoch`.
        if self.switch_for_function(low, ts, cfg!(target_pointer_width = "32")) {
            return Ok(());
        }
        self.function_switch_slow(low, ts)
    }

    /// [`function_word`](Self::function_word) the way a context's recorder
    /// does it: [`try_function_word`](Self::try_function_word), then for a
    /// full buffer [`function_word_full`](Self::function_word_full) with the
    /// time's low word, for another decline
    /// [`function_word_general`](Self::function_word_general) (which the
    /// context calls with a second reading of its clock). The tests' way to run
    /// that path against the direct one.
    #[cfg(test)]
    pub(crate) fn function_word_tried(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        match self.try_function_word(low, ts) {
            Tried::Stored => Ok(()),
            Tried::Full => self.function_word_full(low, ts.tsc as u32),
            Tried::Declined => self.function_word_general(low, ts),
        }
    }

    /// The record that a context's recorder's straight store declined for
    /// another reason than a full buffer ([`Tried::Declined`]), which the
    /// buffer may have room for: the writer's general path, then, if the
    /// buffer is full after all (a NewCPUId or TSCWrap must come first and does
    /// not fit), the slow path's switch rather than the straight one, which
    /// would be a third copy of it for a rare case.
    #[cold]
    #[inline(never)]
    pub(crate) fn function_word_general(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        if self.writer.function_word_across(low, ts).is_ok() {
            return Ok(());
        }
        self.function_switch_slow(low, ts)
    }

    /// The buffer switch (or the drop) of a function record, out of line: only the
    /// low word and the time go in, so the record path keeps few registers.
    #[cold]
    #[inline(never)]
    fn function_slow(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        self.switch_or_slow(low, ts)
    }

    /// The straight switch, else the slow path's: the body of
    /// [`function_slow`](Self::function_slow), and in line in
    /// [`function_word_full`](Self::function_word_full).
    #[inline(always)]
    fn switch_or_slow(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        if self.switch_for_function(low, ts, false) {
            return Ok(());
        }
        self.function_switch_slow(low, ts)
    }

    /// The buffer switch that [`switch_for_function`](Self::switch_for_function)
    /// leaves (the first buffer, one after a loss marker or a flush, no free
    /// buffer), or the drop: the writer's general path after the slow path's
    /// switch, out of line.
    #[cold]
    #[inline(never)]
    fn function_switch_slow(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        self.slow_path(ts, move |w| {
            w.function_word_across(low, ts).map_err(RecordError::from)
        })
    }

    /// Records a function record only when that needs nothing out of line: the
    /// current buffer has room and no NewCPUId or TSCWrap must come first (the
    /// common case). `false`: nothing was written or counted; record it with
    /// [`function`](Self::function). For callers that must not call anything on
    /// their fast path, such as the sled trampolines of `flightrec-sleds`, which
    /// then need not save the vector registers.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let id = FunctionId::new(4).unwrap();
    /// let at = |tsc| Timestamp { tsc, cpu: 0 };
    /// // The first record needs a buffer and a NewCPUId: not on the fast path.
    /// assert!(!rec.try_function(FunctionAction::Enter, id, at(1)));
    /// rec.function(FunctionAction::Enter, id, at(1)).unwrap();
    /// assert!(rec.try_function(FunctionAction::Exit, id, at(2)));
    /// // Another CPU needs a NewCPUId first.
    /// assert!(!rec.try_function(FunctionAction::Enter, id, Timestamp { tsc: 3, cpu: 1 }));
    /// assert_eq!(rec.stats().records_dropped, 0);
    /// ```
    #[inline(always)]
    pub fn try_function(&mut self, action: FunctionAction, id: FunctionId, ts: Timestamp) -> bool {
        self.writer.function_without_calls(action, id, ts)
    }

    /// Records a function entry with its arguments (an EnterArg record and one
    /// CallArgument record per argument, all in the same buffer).
    ///
    /// ```
    /// # use flightrec_core::fdr::decoder::decode_record;
    /// # use flightrec_core::fdr::records::Record;
    /// # use flightrec_core::fdr::Version;
    /// # use flightrec_core::fdr::ring::Dropped;
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let id = FunctionId::new(4).unwrap();
    /// rec.enter_with_args(id, Timestamp::default(), &[0xdead, 0xbeef]).unwrap();
    /// // 20 arguments (336 bytes) never fit a 256-byte buffer.
    /// assert_eq!(rec.enter_with_args(id, Timestamp::default(), &[0; 20]), Err(Dropped::TooLarge));
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// // Preamble (48), NewCPUId (16), EnterArg (8), two CallArguments (16 each); then
    /// // the flush's marker for the dropped record.
    /// let (second, _) = decode_record(Version::V5, &buffer[88..]).unwrap();
    /// assert_eq!(second, Record::CallArgument { value: 0xbeef });
    /// assert_eq!(decode_record(Version::V5, &buffer[104..]).unwrap().1, 16 + 25);
    /// ```
    pub fn enter_with_args(
        &mut self,
        id: FunctionId,
        ts: Timestamp,
        args: &[u64],
    ) -> Result<(), Dropped> {
        self.record(ts, |w| w.enter_with_args(id, ts, args))
    }

    /// Records a custom event: a payload of 1 byte or more, for example a log line or
    /// a state change. See [`BufferWriter::custom_event`] for its time stamp.
    ///
    /// ```
    /// # use flightrec_core::fdr::decoder::decode_record;
    /// # use flightrec_core::fdr::records::{CustomEventTime, Record};
    /// # use flightrec_core::fdr::Version;
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// rec.custom_event(Timestamp { tsc: 7, cpu: 0 }, b"low battery").unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// let (event, _) = decode_record(Version::V5, &buffer[64..]).unwrap();
    /// assert_eq!(event, Record::CustomEvent { time: CustomEventTime::Delta(0), payload: b"low battery" });
    /// ```
    pub fn custom_event(&mut self, ts: Timestamp, payload: &[u8]) -> Result<(), Dropped> {
        self.record(ts, |w| w.custom_event(ts, payload))
    }

    /// Records a typed event: an event type of the caller's choosing and a payload
    /// of 1 byte or more.
    ///
    /// ```
    /// # use flightrec_core::fdr::decoder::decode_record;
    /// # use flightrec_core::fdr::records::Record;
    /// # use flightrec_core::fdr::Version;
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// rec.typed_event(Timestamp { tsc: 7, cpu: 0 }, 3, &[1, 2, 3]).unwrap();
    /// rec.flush();
    /// let buffer = consumer.pop().unwrap();
    /// let (event, _) = decode_record(Version::V5, &buffer[64..]).unwrap();
    /// assert_eq!(event, Record::TypedEvent { delta: 0, event_type: 3, payload: &[1, 2, 3] });
    /// ```
    pub fn typed_event(
        &mut self,
        ts: Timestamp,
        event_type: u16,
        payload: &[u8],
    ) -> Result<(), Dropped> {
        self.record(ts, |w| w.typed_event(ts, event_type, payload))
    }

    fn record(
        &mut self,
        ts: Timestamp,
        mut op: impl FnMut(&mut BufferWriter<'r>) -> Result<(), RecordError>,
    ) -> Result<(), Dropped> {
        if !self.writer.is_detached() {
            match op(&mut self.writer) {
                Ok(()) => return Ok(()),
                Err(RecordError::Full) => {}
                Err(e) => return Err(self.reject(e, ts)),
            }
        }
        self.slow_path(ts, op)
    }

    fn reject(&mut self, e: RecordError, ts: Timestamp) -> Dropped {
        match e {
            RecordError::EmptyPayload => Dropped::EmptyPayload,
            RecordError::Full | RecordError::TooLarge { .. } => {
                self.count_drop(ts);
                Dropped::TooLarge
            }
        }
    }

    /// No current buffer, or it is full: finish it, get the next, write there.
    #[cold]
    fn slow_path(
        &mut self,
        ts: Timestamp,
        mut op: impl FnMut(&mut BufferWriter<'r>) -> Result<(), RecordError>,
    ) -> Result<(), Dropped> {
        if self.broken {
            self.count_drop(ts);
            return Err(Dropped::TooLarge);
        }
        // The finished writer stays on its buffer until `acquire` replaces it
        // with the next buffer's (no detaching in between), or fails and it is
        // detached: nothing records in between.
        self.publish_current();
        if !self.acquire(ts) {
            self.writer.detach();
            self.count_drop(ts);
            return Err(Dropped::ConsumerBehind);
        }
        if self.writer.is_detached() {
            self.count_drop(ts);
            return Err(Dropped::ConsumerBehind);
        }
        match op(&mut self.writer) {
            Ok(()) => Ok(()),
            // An empty buffer could not take it: it never fits.
            Err(e) => Err(self.reject(e, ts)),
        }
    }

    fn count_drop(&mut self, ts: Timestamp) {
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

    /// The WalltimeMarker of the next buffer.
    ///
    /// `llvm-xray` 14 sorts a thread's buffers with `a.seconds < b.seconds &&
    /// a.micros < b.micros`, which is not a strict weak order: with equal or
    /// merely increasing real times, more than 16 buffers get shuffled and the call
    /// stacks no longer match. So buffer `k` of a recorder gets `seconds = S + k` and
    /// `micros = k mod 10^6`, where `S` is the real wall-clock second of the first
    /// buffer. Both fields then increase together and every reader keeps the order.
    /// Counted up from the previous buffer's, so that a buffer switch divides
    /// nothing (a 64-bit division is a library call of about 60 instructions on a
    /// Cortex-M0).
    fn next_walltime(&mut self, tsc: u64) -> Walltime {
        self.walltime = if self.walltime.micros == WALLTIME_NOT_STARTED {
            Walltime {
                seconds: self.config.walltime_at(tsc).seconds,
                micros: 0,
            }
        } else {
            walltime_after(self.walltime)
        };
        self.walltime
    }

    /// What [`straight_switch`](Self::straight_switch) sums up, from the state.
    fn straight_switch_now(&self) -> bool {
        self.walltime.micros != WALLTIME_NOT_STARTED
            && self.unmarked_loss == 0
            && self.writer.restarts_on(self.ring.buffer_size)
            && self.prepared == self.ring.slots.len()
            && !self.broken
            && seconds_fit_a_word(self.walltime.seconds)
    }

    /// Whether the policy lets the recorder take buffer `seq` (in streaming
    /// mode: the consumer has released the buffer `n` before it).
    #[inline(always)]
    fn may_take(&self, seq: u32, policy: Policy) -> bool {
        match policy {
            Policy::Streaming => {
                let tail = self.ring.state.tail.load(Ordering::Acquire);
                seq.wrapping_sub(tail) < self.ring.slots.len() as u32
            }
            Policy::FlightRecorder => true,
        }
    }

    /// Flight recorder: the current slot's buffer from `n` buffers ago, if it
    /// was finished, is overwritten now: counted, and its length cleared.
    #[inline(always)]
    fn overwrite_slot(&mut self, policy: Policy) {
        if policy != Policy::FlightRecorder {
            return;
        }
        // Slot indexes are below N (`next_slot`): `get` only spares a panic path.
        let slot = self.ring.slots.get(self.slot);
        if let Some(slot) = slot.filter(|s| s.len.load(Ordering::Relaxed) > 0) {
            self.count_overwritten(slot);
        }
    }

    /// Counts the finished buffer in `slot` as overwritten and clears its
    /// length: the slot is being taken. Only the recorder writes the counter,
    /// so a load and a store suffice (thumbv6m has no read-modify-write).
    #[inline(always)]
    fn count_overwritten(&self, slot: &Slot) {
        let lost = self.ring.state.buffers_overwritten.load(Ordering::Relaxed);
        self.ring
            .state
            .buffers_overwritten
            .store(lost.wrapping_add(1), Ordering::Relaxed);
        slot.len.store(0, Ordering::Relaxed);
    }

    /// [`overwrite_slot`](Self::overwrite_slot) on the straight switch, where
    /// a flight recorder's next slot always holds a finished buffer, so it is
    /// counted without a test of its length (the test, a load and a branch, and
    /// the registers around it cost about 15 Cortex-M0 cycles a switch). Why it
    /// always does: the straight switch needs `prepared == N`, so this recorder
    /// has taken every slot once, in turn, and buffer `seq + 1 - N` in the next
    /// slot was published since (`seq` only moves on with a publish, which stores a
    /// length above 0: a published buffer has events). Nothing has cleared that
    /// length since: `overwrite_slot` clears a slot when it is taken, and a
    /// flight recorder's consumer takes no buffers ([`Consumer::pop`]).
    #[inline(always)]
    fn overwrite_taken_slot(&mut self, policy: Policy) {
        if policy != Policy::FlightRecorder {
            return;
        }
        // SAFETY: the recorder's `slot` (`slot_at`).
        let slot = unsafe { self.ring.slot_at(self.slot) };
        debug_assert!(slot.len.load(Ordering::Relaxed) > 0);
        self.count_overwritten(slot);
    }

    /// The common buffer switch, straight: a function record found its buffer
    /// full, nothing was lost, every slot holds a preamble
    /// ([`straight_switch`](Self::straight_switch)), and the policy lets the
    /// recorder take the next buffer. Finishes the buffer, and starts the next
    /// with the record as its first event
    /// ([`BufferWriter::restart_with_function`]), with none of
    /// [`slow_path`](Self::slow_path)'s tests for the first buffer, a lost
    /// record, a loss marker or a broken ring. `false`: nothing changed, the
    /// slow path does it.
    #[inline(always)]
    fn switch_for_function(&mut self, low: u32, ts: Timestamp, on_epoch: bool) -> bool {
        // The policy loaded once: three tests of it below.
        let policy = self.ring.policy;
        if !self.straight_switch || !self.may_take(self.seq.wrapping_add(1), policy) {
            return false;
        }
        // A record comes here when its buffer has no room for it; a buffer
        // without events has room for its first NewCPUId and record
        // (`min_buffer_len`), so this one has events. (Tested here, it cost
        // 12 Cortex-M0 cycles a switch.)
        debug_assert!(self.writer.has_events());
        // The buffer has events: published, and `seq` and `slot` advance.
        // SAFETY: `straight_switch` includes `restarts_on` with the ring's
        // buffer length (see below).
        let len = unsafe { self.writer.finish_restartable() };
        self.publish_finished(len, policy);
        self.overwrite_taken_slot(policy);
        // The wall time stepped just before the new buffer's preamble takes
        // it, so that it is not held in registers (or on the stack, on
        // thumbv6m) across the publishing. Its seconds and the next buffer's
        // fit a word (`straight_switch`), so they are stepped in their low
        // word and the WalltimeMarker's words are built from it alone (on
        // thumbv6m a 64-bit step and the high word's shifts held five more
        // values across the restart, about 25 cycles a switch). When the next
        // but one's would not fit, that one switches the slow way (in the year
        // 2106 of a Unix epoch): tested here, where the seconds are loaded
        // anyway, rather than with the flag.
        let seconds = (self.walltime.seconds as u32).wrapping_add(1);
        if seconds == u32::MAX {
            cold_path();
            self.straight_switch = false;
        }
        let walltime = Walltime {
            seconds: i64::from(seconds),
            micros: micros_after(self.walltime.micros),
        };
        self.walltime = walltime;
        // SAFETY: buffer `seq` is free (`may_take`, as in `acquire`); its slot's
        // buffer has the current one's length (every buffer of a ring does).
        // The writer's `restart_with_function` contract holds: `has_events` (see
        // above), and `restarts_on` with that length is part of
        // `straight_switch`, set after the `start` in `acquire` (the only
        // `start` of this writer), cleared with every `detach`, and kept by a
        // restart. The buffer holds a preamble this recorder's `start` wrote
        // with its one configuration (`straight_switch`: every slot is
        // `prepared`; only this recorder writes the ring's buffers).
        unsafe {
            let buf = self.ring.buffer_mut(self.slot);
            self.writer
                .restart_with_function(buf.as_mut_ptr(), walltime, low, ts, on_epoch);
        }
        true
    }

    /// Takes the next buffer if the policy allows and writes its preamble, then
    /// the loss marker of records lost since the last one.
    ///
    /// The marker is written from this small frame, not from
    /// [`take_buffer`](Self::take_buffer)'s: the preamble's 64-bit work (the
    /// first buffer's wall-clock second) takes 128 bytes of stack on thumbv6m,
    /// and the marker with its decimal count 144; one on top of the other, they
    /// were the deepest way of a record (`benches/cortex-m/stack.py`: 488 bytes
    /// on the QEMU example's thumbv6m build, 424 now).
    #[inline(never)]
    fn acquire(&mut self, ts: Timestamp) -> bool {
        if !self.take_buffer(ts) {
            return false;
        }
        if self.unmarked_loss > 0 {
            self.mark_loss(ts);
        }
        self.straight_switch = self.straight_switch_now();
        true
    }

    /// [`acquire`](Self::acquire)'s buffer and preamble.
    #[inline(never)]
    fn take_buffer(&mut self, ts: Timestamp) -> bool {
        if !self.may_take(self.seq, self.ring.policy) {
            return false;
        }
        self.overwrite_slot(self.ring.policy);
        // SAFETY: buffer `seq` is free: in streaming mode the consumer has released it
        // (checked above with acquire ordering against its release store of `tail`); in
        // flight-recorder mode no consumer reads buffers, and `for_each_buffer` needs
        // `&mut self`, so no shared borrow of this buffer is alive.
        let buf = unsafe { self.ring.buffer_mut(self.slot) };
        let walltime = self.next_walltime(ts.tsc);
        // The count is brought up to date when the buffer is handed out
        // (deferred extents).
        if self
            .writer
            .start(buf, &self.config.writer, walltime, true)
            .is_err()
        {
            self.broken = true;
            return false;
        }
        self.prepared = self.prepared.max(self.slot + 1);
        true
    }

    /// Writes the loss marker (see [`LOSS_EVENT_TYPE`]) for the records lost since
    /// the last one into the current buffer; returns whether it fit. Out of line,
    /// so that its frame is not `acquire`'s (see there).
    #[inline(never)]
    fn mark_loss(&mut self, ts: Timestamp) -> bool {
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
    fn flush_loss(&mut self) {
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

    /// Finishes the current buffer and publishes it; the recorder then has no
    /// current buffer.
    fn finish_current(&mut self) {
        self.publish_current();
        self.writer.detach();
        self.straight_switch = false;
    }

    /// [`finish_current`](Self::finish_current) without detaching the writer,
    /// which stays on the finished buffer: the caller detaches it or replaces
    /// it before anything records.
    fn publish_current(&mut self) {
        // Without events the buffer is kept for the next acquire (an empty
        // buffer is invalid).
        if self.writer.is_detached() || !self.writer.has_events() {
            return;
        }
        let len = self.writer.finish_with_events();
        self.publish_finished(len, self.ring.policy);
    }

    /// Hands the current buffer, finished with `len` bytes, to the consumer:
    /// its slot's length, `seq` and `slot` on, `head` released. In line: the
    /// straight switch's call (with the writer's finish, a call of its own)
    /// cost about 30 of its 345 Cortex-M4 cycles.
    #[inline(always)]
    fn publish_finished(&mut self, len: usize, policy: Policy) {
        // SAFETY: the recorder's `slot` (`slot_at`).
        let slot = unsafe { self.ring.slot_at(self.slot) };
        slot.len.store(len as u32, Ordering::Relaxed);
        self.seq = self.seq.wrapping_add(1);
        self.slot = self.ring.next_slot(self.slot);
        // Publishes the bytes and the length to the consumer.
        self.ring.state.head.store(self.seq, Ordering::Release);
        // Only a streaming ring has a consumer to tell (the policy first: a
        // flight recorder's switch then loads no callback).
        if policy != Policy::Streaming {
            return;
        }
        let ready = self.ring.state.buffer_ready.load(Ordering::Relaxed);
        if !ready.is_null() {
            // SAFETY: `set_buffer_ready` stores nothing but `fn()` pointers (cast to
            // `*mut ()`), so a non-null value is one, with its provenance.
            let ready = unsafe { core::mem::transmute::<*mut (), fn()>(ready) };
            ready();
        }
    }

    /// Streaming: hands the current buffer to the consumer now, even if it is not
    /// full (at shutdown, on a timer, before the device sleeps). The next record
    /// starts a new buffer. A buffer without events is kept for later, since readers
    /// reject it.
    ///
    /// Records lost since the last loss marker get their marker first (in the
    /// current buffer, or in a new one), so that once the consumer has taken every
    /// buffer the markers in the trace add up to
    /// [`records_dropped`](Self::records_dropped). Only when every buffer still waits
    /// for the consumer does the marker wait for a later flush or record.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let f = FunctionId::new(1).unwrap();
    /// rec.enter(f, Timestamp::default()).unwrap();
    /// assert!(consumer.pop().is_none()); // the buffer is still being written
    /// rec.flush();
    /// assert_eq!(consumer.pending(), 1);
    /// rec.flush(); // nothing new: nothing handed over
    /// assert_eq!(consumer.pending(), 1);
    /// rec.exit(f, Timestamp::default()).unwrap();
    /// rec.flush();
    /// assert_eq!(consumer.pending(), 2);
    /// ```
    pub fn flush(&mut self) {
        if self.unmarked_loss > 0 {
            self.flush_loss();
        }
        self.finish_current();
    }

    /// Calls `f` with each buffer that holds records, oldest first, the current one
    /// last (also when it is not full). Flight-recorder mode: this is how the ring is
    /// read. Streaming mode: only the current buffer and buffers the consumer has not
    /// taken yet are still there; prefer [`Consumer::pop`].
    ///
    /// Each slice is a complete FDR buffer; write a [`FileHeader`]
    /// ([`Recorder::file_header`]) and then the buffers to make a file.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::verify;
    /// use flightrec_core::fdr::header::HEADER_SIZE;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    ///
    /// let mut storage = [0u8; 3 * 128];
    /// let slots = [Slot::NEW; 3];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    /// let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    /// let f = FunctionId::new(1).unwrap();
    /// for t in 0..1_000 {
    ///     rec.enter(f, Timestamp { tsc: 2 * t, cpu: 0 }).unwrap();
    ///     rec.exit(f, Timestamp { tsc: 2 * t + 1, cpu: 0 }).unwrap();
    /// }
    /// // A crash dump: the header, then the newest buffers, oldest first.
    /// let mut file = [0u8; HEADER_SIZE + 3 * 128];
    /// file[..HEADER_SIZE].copy_from_slice(&rec.file_header().to_bytes());
    /// let mut len = HEADER_SIZE;
    /// rec.for_each_buffer(|buffer| {
    ///     file[len..len + buffer.len()].copy_from_slice(buffer);
    ///     len += buffer.len();
    /// });
    /// let summary = verify(&file[..len]).unwrap();
    /// assert_eq!(summary.buffers, 3);
    /// // 8 records fit each buffer: the last 24 of the 2000 are kept.
    /// assert_eq!(summary.function_records, 24);
    /// ```
    pub fn for_each_buffer(&mut self, mut f: impl FnMut(&[u8])) {
        let n = self.ring.slots.len() as u32;
        let first = match self.ring.policy {
            Policy::FlightRecorder => {
                // Without a current buffer, the current slot still holds the
                // oldest one. Before the ring's first lap, the slots after the
                // current one hold no finished buffer: their length is 0
                // (`Recorder::new`), and the loop below skips them. (A flag for
                // "the sequence number has wrapped", set on every buffer
                // switch, cost 17 of the straight switch's Cortex-M0 cycles.)
                let kept = if self.writer.is_detached() { n } else { n - 1 };
                self.seq.wrapping_sub(kept)
            }
            Policy::Streaming => self.ring.state.tail.load(Ordering::Acquire),
        };
        // At most N: `first` is at most N - 1 (or N) back, and in streaming mode the
        // recorder never runs more than N ahead of the consumer.
        let count = self.seq.wrapping_sub(first).min(n) as usize;
        let mut slot = self.ring.slot_before(self.slot, count);
        for _ in 0..count {
            let len = self.ring.slots[slot].len.load(Ordering::Relaxed);
            if len > 0 {
                // SAFETY: finished buffer under `&mut self`: the recorder does not
                // write it while `f` runs. In streaming mode the consumer may read
                // it concurrently, which is a shared read as well.
                f(unsafe { self.ring.buffer(slot, len as usize) });
            }
            slot = self.ring.next_slot(slot);
        }
        if self.writer.has_events() {
            self.writer.sync_extents();
            f(self.writer.as_bytes());
        }
    }
}

/// The loss marker's text before and after the count.
const LOSS_PREFIX: &[u8] = b"flightrec: lost ";
const LOSS_SUFFIX: &[u8] = b" records";

/// The length of [`loss_text`]'s `flightrec: lost N records`.
fn loss_text_len(n: u64) -> usize {
    LOSS_PREFIX.len() + decimal_digits(n) + LOSS_SUFFIX.len()
}

/// The count of decimal digits of `n`, by the division that writes them
/// (`crate::divide`, linked for it anyway): a loss marker is rare, and a
/// comparison with powers of ten needs a 64-bit product, a library call on
/// thumbv6m.
fn decimal_digits(n: u64) -> usize {
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
fn loss_text(n: u64, out: &mut [u8]) {
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
    ring: RingView<'r>,
    /// Next buffer to read; mirrors the ring's tail, which only the consumer writes.
    tail: u32,
    /// The slot of buffer `tail` (see `RingView::next_slot`).
    slot: usize,
    _ring: PhantomData<&'r Ring<'a>>,
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
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
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
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
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
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
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
/// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
/// # use flightrec_core::fdr::writer::WriterConfig;
/// # use flightrec_core::fdr::FunctionId;
/// # let mut storage = [0u8; 2 * 256];
/// # let slots = [Slot::NEW; 2];
/// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
/// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(7), 1_000));
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
    consumer: &'c mut Consumer<'r, 'a>,
    bytes: &'c [u8],
}

impl FinishedBuffer<'_, '_, '_> {
    /// The buffer: a complete FDR buffer (the same slice the guard dereferences to).
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # use flightrec_core::fdr::FunctionId;
    /// # let mut storage = [0u8; 2 * 256];
    /// # let slots = [Slot::NEW; 2];
    /// # let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// # let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
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

/// Where a [`Recorder`]'s writer sits (`repr(C)`, first: 0), for the record path
/// written in assembly of `flightrec-sleds` (see [`writer::layout`](super::writer::layout)).
///
/// ```
/// assert_eq!(flightrec_core::fdr::ring::RECORDER_WRITER_OFFSET, 0);
/// ```
#[doc(hidden)]
pub const RECORDER_WRITER_OFFSET: usize = core::mem::offset_of!(Recorder<'static, 'static>, writer);

#[cfg(test)]
mod tests {
    use super::*;

    /// Compile-time checks of what the module docs promise: a recorder can be moved to
    /// the context that records (`Send`) and shared for reading (`Sync`); this test
    /// stops compiling if either goes away.
    #[test]
    fn recorder_is_send_and_sync() {
        fn assert_send<T: Send>() {}
        fn assert_sync<T: Sync>() {}
        assert_send::<Recorder<'static, 'static>>();
        assert_sync::<Recorder<'static, 'static>>();
    }

    fn ts(tsc: u64) -> Timestamp {
        Timestamp { tsc, cpu: 0 }
    }
    fn fid(n: u32) -> FunctionId {
        FunctionId::new(n).unwrap()
    }

    /// Streaming: one call per buffer handed over, none after the consumer says
    /// `None` (the stored `fn()` comes back through `*mut ()`: Miri runs this).
    #[test]
    fn streaming_calls_buffer_ready_once_per_buffer() {
        use core::sync::atomic::AtomicU32;
        static CALLS: AtomicU32 = AtomicU32::new(0);
        fn ready() {
            CALLS.fetch_add(1, Ordering::Relaxed);
        }
        let mut storage = [0u8; 4 * 128];
        let slots = [Slot::NEW; 4];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
        consumer.set_buffer_ready(Some(ready));
        let mut t = 0;
        while consumer.pending() < 2 {
            rec.enter(fid(1), ts(t)).unwrap();
            t += 1;
        }
        assert_eq!(CALLS.load(Ordering::Relaxed), 2);
        consumer.set_buffer_ready(None);
        while consumer.pop().is_some() {}
        while consumer.pending() < 2 {
            rec.enter(fid(1), ts(t)).unwrap();
            t += 1;
        }
        assert_eq!(CALLS.load(Ordering::Relaxed), 2);
    }

    /// A flight recorder has no consumer to wake: filling and overwriting its
    /// buffers never calls `buffer_ready`.
    #[test]
    fn flight_recorder_never_calls_buffer_ready() {
        use core::sync::atomic::AtomicU32;
        static CALLS: AtomicU32 = AtomicU32::new(0);
        fn ready() {
            CALLS.fetch_add(1, Ordering::Relaxed);
        }
        let mut storage = [0u8; 2 * 128];
        let slots = [Slot::NEW; 2];
        let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
        let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
        let (mut rec, consumer) = ring.split(cfg);
        consumer.set_buffer_ready(Some(ready));
        for t in 0..200 {
            rec.enter(fid(1), ts(t)).unwrap();
        }
        rec.flush();
        assert!(rec.stats().buffers_overwritten > 0);
        assert_eq!(CALLS.load(Ordering::Relaxed), 0);
    }

    fn format_loss(n: u32) -> ([u8; 48], usize) {
        let mut out = [0u8; 48];
        let len = loss_text_len(u64::from(n));
        loss_text(u64::from(n), &mut out[..len]);
        (out, len)
    }

    /// `loss_text` of `n` beside the same text made by `core::fmt`.
    fn loss_texts(n: u64) -> (([u8; 48], usize), ([u8; 48], usize)) {
        struct Text([u8; 48], usize);
        impl core::fmt::Write for Text {
            fn write_str(&mut self, s: &str) -> core::fmt::Result {
                let end = self.1 + s.len();
                self.0
                    .get_mut(self.1..end)
                    .ok_or(core::fmt::Error)?
                    .copy_from_slice(s.as_bytes());
                self.1 = end;
                Ok(())
            }
        }
        let mut expected = Text([0; 48], 0);
        core::fmt::Write::write_fmt(&mut expected, format_args!("flightrec: lost {n} records"))
            .unwrap();
        let mut out = [0u8; 48];
        let len = loss_text_len(n);
        loss_text(n, &mut out[..len]);
        ((out, len), (expected.0, expected.1))
    }

    #[test]
    fn loss_text_formats() {
        let ((out, len), _) = loss_texts(0);
        assert_eq!(&out[..len], b"flightrec: lost 0 records");
        let ((out, len), _) = loss_texts(u64::MAX);
        assert_eq!(&out[..len], b"flightrec: lost 18446744073709551615 records");
        // Every length of count, and both sides of each power of ten.
        let mut p = 1u64;
        for _ in 0..20 {
            for n in [p - 1, p, p + 1, p.saturating_mul(10) - 1] {
                let ((out, len), (expected, expected_len)) = loss_texts(n);
                assert_eq!(&out[..len], &expected[..expected_len], "{n}");
            }
            p = p.saturating_mul(10);
        }
        // An output of any shorter length gets part of the text, never a panic.
        for len in 0..loss_text_len(12345) {
            let mut short = [0u8; 48];
            loss_text(12345, &mut short[..len]);
            assert!(short[len..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn ring_rejects_bad_shapes() {
        let mut storage = [0u8; 64];
        assert_eq!(
            Ring::new(&mut storage, &[], Policy::Streaming).err(),
            Some(RingError::NoSlots)
        );
        let slots = [Slot::NEW; 2];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let (mut rec, _) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1));
        assert_eq!(rec.enter(fid(1), ts(1)), Err(Dropped::TooLarge));
        assert_eq!(rec.records_dropped(), 1);
    }

    /// The id of the first function record in an FDR buffer.
    fn first_function_id(buffer: &[u8]) -> Option<u32> {
        let mut pos = 0;
        while pos < buffer.len() {
            let (record, len) =
                crate::fdr::decoder::decode_record(crate::fdr::Version::V5, &buffer[pos..]).ok()?;
            if let crate::fdr::records::Record::Function { id, .. } = record {
                return Some(id.get());
            }
            pos += len;
        }
        None
    }

    /// Moves a freshly split ring's sequence numbers to `start`, as if `start`
    /// buffers had gone through it (the slots stay at 0, like a ring that has seen a
    /// multiple of N buffers).
    fn start_sequence_at(rec: &mut Recorder<'_, '_>, cons: &mut Consumer<'_, '_>, start: u32) {
        rec.seq = start;
        cons.tail = start;
        rec.ring.state.head.store(start, Ordering::Relaxed);
        rec.ring.state.tail.store(start, Ordering::Relaxed);
    }

    #[test]
    fn streaming_keeps_buffers_apart_when_the_sequence_number_wraps() {
        // N = 3 does not divide 2^32: with `seq % N` the buffers numbered u32::MAX and
        // 0 both landed in slot 0, so the recorder overwrote a buffer the consumer had
        // not read yet.
        let mut storage = [0u8; 3 * 128];
        let slots = [Slot::NEW; 3];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let (mut rec, mut cons) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
        start_sequence_at(&mut rec, &mut cons, u32::MAX - 4);
        let mut next_read = 1;
        for buffer in 1..=12u32 {
            // One buffer per function id; the consumer stays two buffers behind.
            rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
            rec.flush();
            while cons.pending() > 2 {
                let b = cons.pop().unwrap();
                assert_eq!(first_function_id(&b), Some(next_read));
                next_read += 1;
            }
        }
        while let Some(b) = cons.pop() {
            assert_eq!(first_function_id(&b), Some(next_read));
            next_read += 1;
        }
        assert_eq!(next_read, 13);
        assert_eq!(rec.records_dropped(), 0);
    }

    /// Checks buffer `k` of the recorder in `buffers_keep_their_preambles_across_laps`:
    /// its preamble, a NewCPUId at `t0` (any, with `None`) and function records 10
    /// ticks apart; returns the time after its last record.
    fn check_lap_buffer(b: &[u8], seconds: i64, k: i64, t0: Option<u64>) -> u64 {
        use crate::fdr::decoder::decode_record;
        use crate::fdr::records::Record;
        use crate::fdr::Version;
        let mut at = 0;
        let mut next = || {
            let (r, n) = decode_record(Version::V5, &b[at..]).unwrap();
            at += n;
            (r, at == b.len())
        };
        assert_eq!(
            next().0,
            Record::BufferExtents {
                size: b.len() as u64 - 16
            }
        );
        assert_eq!(next().0, Record::NewBuffer { tid: 7 });
        let walltime = Record::Walltime {
            seconds: seconds + k,
            micros: k as u32,
        };
        assert_eq!(next().0, walltime, "buffer {k}");
        assert_eq!(next().0, Record::Pid { pid: 42 });
        let (Record::NewCpuId { cpu: 0, tsc }, _) = next() else {
            panic!("no NewCPUId in buffer {k}");
        };
        assert_eq!(t0.unwrap_or(tsc), tsc, "buffer {k}");
        let (mut now, mut expected) = (tsc, tsc);
        loop {
            let (Record::Function { delta, .. }, last) = next() else {
                panic!("not a function record in buffer {k}");
            };
            // Each delta counts from the record before.
            now += u64::from(delta);
            assert_eq!(now, expected, "buffer {k}");
            expected += 10;
            if last {
                return expected;
            }
        }
    }

    /// `straight_switch` stays what it sums up through every path that changes
    /// one of its parts: the first buffers, switches, drops with the consumer
    /// behind, losses counted from outside, loss markers, flushes, a record
    /// too large, and a ring too small for any record.
    #[test]
    fn straight_switch_follows_its_conditions() {
        #[repr(align(8))]
        struct Storage([u8; 3 * 160]);
        let enter = FunctionRecord::low_word(FunctionAction::Enter, fid(2));
        let exit = FunctionRecord::low_word(FunctionAction::Exit, fid(2));
        for policy in [Policy::Streaming, Policy::FlightRecorder] {
            let mut storage = Storage([0; 3 * 160]);
            let slots = [Slot::NEW; 3];
            let mut ring = Ring::new(&mut storage.0, &slots, policy).unwrap();
            let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
            let (mut rec, mut consumer) = ring.split(cfg);
            let mut straight = 0;
            let mut check = |rec: &Recorder, step: &str| {
                assert_eq!(
                    rec.straight_switch,
                    rec.straight_switch_now(),
                    "{policy:?}: {step}"
                );
                straight += u32::from(rec.straight_switch);
            };
            check(&rec, "new");
            for i in 0..400u64 {
                let low = if i % 2 == 0 { enter } else { exit };
                // Both ways to the switch: the direct path for every third
                // record, the declined path (the attribute's) for the others.
                let t = ts(10 * i);
                let _ = if i % 3 == 0 {
                    rec.function_word(low, t)
                } else {
                    rec.function_word_tried(low, t)
                };
                check(&rec, "record");
                match i % 100 {
                    30 => {
                        rec.count_lost(2, t);
                        check(&rec, "count_lost");
                    }
                    50 => {
                        rec.flush();
                        check(&rec, "flush");
                    }
                    70 => {
                        assert!(rec.custom_event(t, &[0; 200]).is_err());
                        check(&rec, "too large");
                    }
                    _ => {}
                }
                // Streaming: the consumer takes buffers only in the second half,
                // so the first half drops records (the consumer is behind).
                if policy == Policy::Streaming && i >= 200 {
                    while consumer.pop().is_some() {}
                }
            }
            rec.flush();
            check(&rec, "last flush");
            assert!(
                straight > 100,
                "{policy:?}: the straight switch was ready {straight} times"
            );
            assert!(rec.records_dropped() > 0, "{policy:?}");
        }
        // Buffers too small for one record: broken from the start.
        let mut storage = Storage([0; 3 * 160]);
        let slots = [Slot::NEW; 3];
        let mut ring = Ring::new(&mut storage.0[..3 * 40], &slots, Policy::FlightRecorder).unwrap();
        let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
        assert_eq!(
            rec.function_word_tried(enter, ts(1)),
            Err(Dropped::TooLarge)
        );
        assert!(!rec.straight_switch && !rec.straight_switch_now());
    }

    /// Records `low` every `step` ticks from 0 the direct way into `direct` and
    /// the context's way into `tried`, each with `Ok`, until `direct`'s buffer
    /// has no room for another (a recorder has no buffer, so no room, before
    /// its first record); returns the time after the last record.
    fn fill_both(direct: &mut Recorder, tried: &mut Recorder, low: u32, step: u64) -> u64 {
        let mut tsc = 0;
        loop {
            assert_eq!(direct.function_word(low, ts(tsc)), Ok(()));
            assert_eq!(tried.function_word_tried(low, ts(tsc)), Ok(()));
            tsc += step;
            if direct.writer.lacks_room_for_function(low) {
                return tsc;
            }
        }
    }

    /// A record that the context's straight store declines for another reason
    /// than a full buffer (another CPU, a new high word of the time) and that
    /// then finds the buffer full switches the slow path's way
    /// (`function_word_general`), and writes what the direct path writes.
    #[test]
    fn declined_records_on_a_full_buffer_write_what_the_direct_path_writes() {
        #[repr(align(8))]
        struct Storage([u8; 3 * 160]);
        let enter = FunctionRecord::low_word(FunctionAction::Enter, fid(5));
        let others = [
            Timestamp { tsc: 1_000, cpu: 1 },
            ts(1_000 + (1 << 32)),
            Timestamp {
                tsc: 5 << 32,
                cpu: 2,
            },
        ];
        for policy in [Policy::Streaming, Policy::FlightRecorder] {
            for other in others {
                let mut a = Storage([0; 3 * 160]);
                let mut b = Storage([0; 3 * 160]);
                let (slots_a, slots_b) = ([Slot::NEW; 3], [Slot::NEW; 3]);
                let mut ring_a = Ring::new(&mut a.0, &slots_a, policy).unwrap();
                let mut ring_b = Ring::new(&mut b.0, &slots_b, policy).unwrap();
                let cfg = RecorderConfig::new(WriterConfig::new(3), 1_000);
                let (mut direct, mut cons_a) = ring_a.split(cfg);
                let (mut tried, mut cons_b) = ring_b.split(cfg);
                fill_both(&mut direct, &mut tried, enter, 10);
                assert!(tried.writer.lacks_room_for_function(enter));
                // Declined: the call-free store does not say `Full` for it.
                assert_eq!(tried.try_function_word(enter, other), Tried::Declined);
                assert_eq!(direct.function_word(enter, other), Ok(()));
                assert_eq!(tried.function_word_tried(enter, other), Ok(()));
                assert_eq!(direct.stats(), tried.stats(), "{policy:?} {other:?}");
                assert_eq!(direct.stats().buffers_finished, 1, "{policy:?} {other:?}");
                direct.flush();
                tried.flush();
                if policy == Policy::Streaming {
                    while let Some(x) = cons_a.pop() {
                        assert_eq!(&*x, &*cons_b.pop().unwrap(), "{other:?}");
                    }
                    assert!(cons_b.pop().is_none());
                } else {
                    let (mut p, mut q) = (0, 0);
                    direct.for_each_buffer(|_| p += 1);
                    tried.for_each_buffer(|_| q += 1);
                    assert_eq!((p, q), (2, 2), "{other:?}");
                }
                assert!(a.0 == b.0, "{policy:?} {other:?}: storage");
            }
        }
    }

    /// The context path's way for a record (`function_word_tried`: the
    /// straight store, a buffer with no room straight to the switch at the
    /// time given by its low word, the rest the general way) writes the bytes
    /// and keeps the counts that the direct path writes: on both policies,
    /// with and without a short-call threshold (an exit that elision erases
    /// needs no room), across buffer switches, flushes, the clock's high word
    /// and a second CPU.
    #[test]
    fn declined_records_write_what_the_direct_path_writes() {
        #[repr(align(8))]
        struct Storage([u8; 3 * 160]);
        let actions = [
            FunctionAction::Enter,
            FunctionAction::Exit,
            FunctionAction::Enter,
            FunctionAction::TailExit,
            FunctionAction::Enter,
            FunctionAction::Exit,
        ];
        for policy in [Policy::Streaming, Policy::FlightRecorder] {
            for threshold in [0, 5] {
                let mut a = Storage([0; 3 * 160]);
                let mut b = Storage([0; 3 * 160]);
                let (slots_a, slots_b) = ([Slot::NEW; 3], [Slot::NEW; 3]);
                {
                    let mut ring_a = Ring::new(&mut a.0, &slots_a, policy).unwrap();
                    let mut ring_b = Ring::new(&mut b.0, &slots_b, policy).unwrap();
                    let writer = WriterConfig::new(3).with_threshold_ticks(threshold);
                    let cfg = RecorderConfig::new(writer, 1_000);
                    let (mut direct, mut cons_a) = ring_a.split(cfg);
                    let (mut declined, mut cons_b) = ring_b.split(cfg);
                    // First a buffer filled to its last byte by entries, then a
                    // short call's exit: a threshold erases the entry, which needs
                    // no room.
                    let enter = FunctionRecord::low_word(FunctionAction::Enter, fid(9));
                    let exit = FunctionRecord::low_word(FunctionAction::Exit, fid(9));
                    // Before its first record a recorder has no buffer: no room.
                    assert!(direct.writer.lacks_room_for_function(enter));
                    let tsc = fill_both(&mut direct, &mut declined, enter, 20);
                    let exit_at = ts(tsc - 20 + 3);
                    assert_eq!(direct.function_word(exit, exit_at), Ok(()));
                    assert_eq!(declined.function_word_tried(exit, exit_at), Ok(()));
                    let switched = u32::from(threshold == 0);
                    assert_eq!(direct.stats().buffers_finished, switched);
                    assert_eq!(declined.stats(), direct.stats());
                    let mut buffers = 0;
                    for i in 0..600u64 {
                        let action = actions[(i % 6) as usize];
                        let low = FunctionRecord::low_word(action, fid(1 + (i % 3) as u32));
                        // Short calls (3 ticks, under the threshold) and long ones;
                        // the high word changes at i = 300; CPU 1 for a stretch.
                        let call = if (i / 2) % 3 == 0 { 3 } else { 11 };
                        let high = if i < 300 { 0 } else { 1 << 32 };
                        let tsc = 10_000 + (i / 2) * 20 + (i % 2) * call + high;
                        let t = Timestamp {
                            tsc,
                            cpu: u16::from((400..420).contains(&i)),
                        };
                        let (x, y) = (
                            direct.function_word(low, t),
                            declined.function_word_tried(low, t),
                        );
                        assert_eq!(x, y, "{policy:?} {threshold}: record {i}");
                        if i % 97 == 96 {
                            direct.flush();
                            declined.flush();
                        }
                        if policy == Policy::Streaming && cons_a.pending() > 1 {
                            let (p, q) = (cons_a.pop().unwrap(), cons_b.pop().unwrap());
                            assert_eq!(&*p, &*q, "{policy:?} {threshold}: buffer {buffers}");
                            buffers += 1;
                        }
                    }
                    direct.flush();
                    declined.flush();
                    assert_eq!(direct.stats(), declined.stats());
                    assert_eq!(direct.records_dropped(), declined.records_dropped());
                    assert!(
                        direct.stats().buffers_finished > 12,
                        "{policy:?} {threshold}: switches"
                    );
                    if policy == Policy::Streaming {
                        while let Some(p) = cons_a.pop() {
                            assert_eq!(&*p, &*cons_b.pop().unwrap());
                            buffers += 1;
                        }
                        assert!(cons_b.pop().is_none());
                        assert!(buffers > 12);
                    } else {
                        let (mut p, mut q) = (0, 0);
                        direct.for_each_buffer(|_| p += 1);
                        declined.for_each_buffer(|_| q += 1);
                        assert_eq!(p, q);
                    }
                }
                // Every byte of both rings, the flight recorder's kept buffers too.
                assert!(a.0 == b.0, "{policy:?} {threshold}: storage");
            }
        }
    }

    /// Past the first lap the recorder rewrites only the changing records of a
    /// slot's preamble (`switch_for_function`): every buffer still decodes to its
    /// own extents, thread, wall time, process, NewCPUId and records, across
    /// laps, after flushes (which start the next buffer the slow way) and on
    /// both policies; with wall-clock seconds in a word (the straight switch's
    /// own step), crossing 2^32 (where the switch goes the slow way), and
    /// outside a word.
    #[test]
    fn buffers_keep_their_preambles_across_laps() {
        #[repr(align(8))]
        struct Storage([u8; 3 * 160]);
        let epochs = [1_700_000_000, i64::from(u32::MAX) - 6, 1 << 40, -100];
        for (policy, seconds) in [Policy::Streaming, Policy::FlightRecorder]
            .into_iter()
            .flat_map(|p| epochs.map(|s| (p, s)))
        {
            let mut storage = Storage([0; 3 * 160]);
            let slots = [Slot::NEW; 3];
            let mut ring = Ring::new(&mut storage.0, &slots, policy).unwrap();
            let epoch = Walltime { seconds, micros: 0 };
            let cfg =
                RecorderConfig::new(WriterConfig::new(7).with_pid(42), 1_000).with_epoch(epoch, 0);
            let (mut rec, mut cons) = ring.split(cfg);
            let mut t = 0;
            let mut k = 0;
            for round in 0..200u64 {
                // Entries only: no delta 0 pair that a threshold could touch.
                rec.enter(fid(1), ts(round * 10)).unwrap();
                if round % 37 == 36 {
                    rec.flush();
                }
                while policy == Policy::Streaming && cons.pending() > 1 {
                    t = check_lap_buffer(&cons.pop().unwrap(), seconds, k, Some(t));
                    k += 1;
                }
            }
            rec.flush();
            assert_eq!(rec.records_dropped(), 0);
            let finished = i64::from(rec.stats().buffers_finished);
            assert!(finished > 9, "{policy:?}: several laps");
            if policy == Policy::Streaming {
                while let Some(b) = cons.pop() {
                    t = check_lap_buffer(&b, seconds, k, Some(t));
                    k += 1;
                }
                assert_eq!((t, k), (2_000, finished));
            } else {
                // The newest buffers, in order.
                let mut kept = 0;
                rec.for_each_buffer(|_| kept += 1);
                // Every buffer finished is kept or counted as overwritten
                // once, whether the straight switch or a flush took its slot.
                let overwritten = i64::from(rec.stats().buffers_overwritten);
                assert_eq!(overwritten, finished - kept);
                let mut k = finished - kept;
                let mut t = None;
                rec.for_each_buffer(|b| {
                    t = Some(check_lap_buffer(b, seconds, k, t));
                    k += 1;
                });
                assert_eq!((t, k), (Some(2_000), finished));
            }
        }
    }

    /// The first function ids of the buffers `for_each_buffer` gives, in order.
    fn buffer_ids(rec: &mut Recorder<'_, '_>) -> ([u32; 8], usize) {
        let mut seen = [0u32; 8];
        let mut count = 0;
        rec.for_each_buffer(|b| {
            seen[count] = first_function_id(b).unwrap();
            count += 1;
        });
        (seen, count)
    }

    #[test]
    fn flight_recorder_gives_only_its_own_buffers_before_its_first_lap() {
        let mut storage = [0u8; 4 * 128];
        let slots = [Slot::NEW; 4];
        let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
        {
            let (mut rec, _) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
            assert_eq!(buffer_ids(&mut rec).1, 0);
            for buffer in 1..=2u32 {
                rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
                rec.flush();
            }
            // Two finished, detached: the two, oldest first.
            let (seen, count) = buffer_ids(&mut rec);
            assert_eq!(&seen[..count], [1, 2]);
            // And the current buffer last.
            rec.enter(fid(3), ts(3)).unwrap();
            let (seen, count) = buffer_ids(&mut rec);
            assert_eq!(&seen[..count], [1, 2, 3]);
            for buffer in 4..=6u32 {
                rec.flush();
                rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
            }
            let (seen, count) = buffer_ids(&mut rec);
            assert_eq!(&seen[..count], [3, 4, 5, 6]);
        }
        // A new recorder of the same ring: none of the old one's buffers.
        let (mut rec, _) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
        assert_eq!(buffer_ids(&mut rec).1, 0);
        rec.enter(fid(7), ts(7)).unwrap();
        rec.flush();
        let (seen, count) = buffer_ids(&mut rec);
        assert_eq!(&seen[..count], [7]);
        // The ring's counters run on (the first recorder overwrote two
        // buffers); the old buffers the new one wrote over are not counted.
        assert_eq!(rec.stats().buffers_overwritten, 2);
    }

    #[test]
    fn flight_recorder_keeps_the_newest_buffers_across_the_wrap() {
        let mut storage = [0u8; 3 * 128];
        let slots = [Slot::NEW; 3];
        let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
        let (mut rec, mut cons) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
        start_sequence_at(&mut rec, &mut cons, u32::MAX - 4);
        for buffer in 1..=7u32 {
            rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
            rec.flush();
        }
        let mut seen = [0u32; 4];
        let mut count = 0;
        rec.for_each_buffer(|b| {
            seen[count] = first_function_id(b).unwrap();
            count += 1;
        });
        assert_eq!(&seen[..count], [5, 6, 7]);
        assert_eq!(rec.stats().buffers_overwritten, 4);
    }

    #[test]
    fn streaming_drops_when_consumer_is_behind_and_marks_the_loss() {
        let mut storage = [0u8; 2 * 128];
        let slots = [Slot::NEW; 2];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let (mut rec, mut cons) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
        let mut t = 0;
        let mut dropped = 0;
        for _ in 0..40 {
            t += 1;
            if rec.enter(fid(1), ts(t)).is_err() {
                dropped += 1;
            }
        }
        assert!(dropped > 0);
        assert_eq!(rec.stats().records_dropped, dropped);
        assert_eq!(cons.pending(), 2);
        // Free one buffer: the next record lands in a buffer that starts with the loss.
        drop(cons.pop().unwrap());
        rec.enter(fid(1), ts(t + 1)).unwrap();
        rec.flush();
        let older = cons.pop().unwrap();
        assert!(!older.windows(16).any(|w| w == b"flightrec: lost "));
        drop(older);
        let b = cons.pop().unwrap();
        let text = format_loss(dropped);
        assert!(b.windows(text.1).any(|w| w == &text.0[..text.1]));
        drop(b);
        assert!(cons.pop().is_none());
    }
}
