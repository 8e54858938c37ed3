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
use super::writer::{BufferTooSmall, BufferWriter, Tried, Walltime, WriteError, WriterConfig};
use crate::clock::Timestamp;
use crate::hint::cold_path;

mod consumer;
mod loss;
mod recorder;
mod switch;
mod view;

pub use consumer::{Consumer, FinishedBuffer};
pub use loss::{Dropped, LOSS_EVENT_TYPE};
pub use recorder::{Recorder, RecorderConfig};
pub(crate) use view::{RingState, RingView};

/// The setup the ring's examples share: a streaming [`Ring`] of two 256-byte
/// buffers, split with thread id 1 (or the third argument) and 1000 ticks a
/// second into a recorder and a consumer named by the first two arguments. Only
/// for this crate's examples: not a stable interface.
#[doc(hidden)]
#[macro_export]
macro_rules! __ring_example {
    ($rec:ident, $consumer:ident) => {
        $crate::__ring_example!($rec, $consumer, 1)
    };
    ($rec:ident, $consumer:ident, $tid:expr) => {
        let mut storage = [0u8; 2 * 256];
        let slots = [$crate::fdr::ring::Slot::NEW; 2];
        let Ok(mut ring) = $crate::fdr::ring::Ring::new(
            &mut storage,
            &slots,
            $crate::fdr::ring::Policy::Streaming,
        ) else {
            unreachable!("two 256-byte buffers make a ring")
        };
        #[allow(unused_mut, unused_variables)]
        let (mut $rec, mut $consumer) = ring.split($crate::fdr::ring::RecorderConfig::new(
            $crate::fdr::writer::WriterConfig::new($tid),
            1_000,
        ));
    };
}

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

/// Where a [`Recorder`]'s writer sits (`repr(C)`, first: 0), for the record path
/// written in assembly of `flightrec-sleds` (see [`writer::layout`](super::writer::layout)).
///
/// ```
/// assert_eq!(flightrec_core::fdr::ring::RECORDER_WRITER_OFFSET, 0);
/// ```
#[doc(hidden)]
pub const RECORDER_WRITER_OFFSET: usize = core::mem::offset_of!(Recorder<'static, 'static>, writer);

#[cfg(test)]
mod tests;
