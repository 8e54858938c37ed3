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
//!   says how many records were lost, so the loss is visible in the trace itself.
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
//!   checker enforces this within safe code: the recorder is `Send` but not `Sync`.
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
use core::sync::atomic::{AtomicU32, Ordering};

use super::header::{FileHeader, HeaderFlags};
use super::records::{FunctionAction, FunctionId};
use super::writer::{BufferTooSmall, BufferWriter, RecordError, Walltime, WriterConfig};
use crate::clock::Timestamp;

/// The event type of the typed event that marks lost records in a streaming ring.
/// Its payload is ASCII text: `flightrec: lost N records`.
pub const LOSS_EVENT_TYPE: u16 = 0xF17C;

/// What a ring does when its buffers are all in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Policy {
    /// Keep the newest buffers, overwrite the oldest.
    FlightRecorder,
    /// Hand finished buffers to a consumer; drop new records while it is behind.
    Streaming,
}

/// Bookkeeping for one buffer of a ring. Make an array of them with [`Slot::NEW`].
///
/// ```
/// use flightrec_core::fdr::ring::Slot;
/// static SLOTS: [Slot; 4] = [Slot::NEW; 4];
/// ```
#[derive(Debug)]
pub struct Slot {
    /// Bytes used in the buffer once it is finished.
    len: AtomicU32,
}

impl Slot {
    /// An unused slot.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RingError {
    /// No slots were given.
    NoSlots,
    /// Each buffer (storage length / slot count) is smaller than a writer needs.
    BufferTooSmall(BufferTooSmall),
    /// Each buffer would be larger than 4 GiB.
    BufferTooLarge,
}

impl core::fmt::Display for RingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RingError::NoSlots => f.write_str("a ring needs at least one buffer"),
            RingError::BufferTooSmall(e) => write!(f, "ring buffers too small: {e}"),
            RingError::BufferTooLarge => f.write_str("ring buffers must be under 4 GiB"),
        }
    }
}

/// Counters of a ring, readable from any context.
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
    /// Buffers finished so far (wrapping). Written by the recorder only.
    head: AtomicU32,
    /// Buffers released by the consumer (wrapping). Written by the consumer only.
    tail: AtomicU32,
    /// Written by the recorder only.
    records_dropped: AtomicU32,
    /// Written by the recorder only.
    buffers_overwritten: AtomicU32,
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
    pub fn new(
        storage: &'a mut [u8],
        slots: &'a [Slot],
        policy: Policy,
    ) -> Result<Self, RingError> {
        if slots.is_empty() {
            return Err(RingError::NoSlots);
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
            head: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            records_dropped: AtomicU32::new(0),
            buffers_overwritten: AtomicU32::new(0),
            _storage: PhantomData,
        })
    }

    /// Size of each buffer in bytes.
    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// Number of buffers.
    pub fn buffer_count(&self) -> usize {
        self.slots.len()
    }

    /// The ring's policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The counters. Safe from any context.
    pub fn stats(&self) -> RingStats {
        RingStats {
            buffers_finished: self.head.load(Ordering::Relaxed),
            buffers_consumed: self.tail.load(Ordering::Relaxed),
            records_dropped: self.records_dropped.load(Ordering::Relaxed),
            buffers_overwritten: self.buffers_overwritten.load(Ordering::Relaxed),
        }
    }

    /// Splits the ring into its recorder and its consumer.
    ///
    /// When the buffers are too small for `config` (see
    /// [`WriterConfig::min_buffer_len`]), every record is refused with
    /// [`Dropped::TooLarge`] and counted.
    pub fn split<'r>(&'r mut self, config: RecorderConfig) -> (Recorder<'r, 'a>, Consumer<'r, 'a>) {
        let ring: &'r Ring<'a> = self;
        let too_small = ring.buffer_size < config.writer.min_buffer_len();
        (
            Recorder {
                ring,
                config,
                writer: None,
                seq: 0,
                seq_wrapped: false,
                first_second: None,
                buffers_started: 0,
                unmarked_loss: 0,
                records_dropped: 0,
                broken: too_small,
            },
            Consumer { ring, tail: 0 },
        )
    }

    /// The bytes of buffer `seq % N`.
    ///
    /// # Safety
    /// The caller must hold the buffer under the ring protocol (the recorder for its
    /// current buffer, the consumer between acquiring and releasing it) so that no
    /// other live reference covers the same bytes.
    unsafe fn buffer_mut(&self, seq: u32) -> &'a mut [u8] {
        let index = seq as usize % self.slots.len();
        // SAFETY: `index * buffer_size + buffer_size <= storage.len()` by construction
        // of `buffer_size`; the storage outlives `'a`; exclusivity is the caller's.
        unsafe {
            core::slice::from_raw_parts_mut(
                self.storage.as_ptr().add(index * self.buffer_size),
                self.buffer_size,
            )
        }
    }

    /// # Safety
    /// As [`Ring::buffer_mut`], for shared access to a finished buffer.
    unsafe fn buffer(&self, seq: u32, len: usize) -> &[u8] {
        let index = seq as usize % self.slots.len();
        let len = len.min(self.buffer_size);
        // SAFETY: in bounds as above; the recorder does not write this buffer until the
        // consumer releases it (streaming) or while `&mut Recorder` is borrowed for the
        // read (flight recorder).
        unsafe {
            core::slice::from_raw_parts(self.storage.as_ptr().add(index * self.buffer_size), len)
        }
    }
}

/// How a [`Recorder`] writes its buffers.
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

    /// Sets the wall time at a given TSC.
    pub const fn with_epoch(mut self, epoch: Walltime, epoch_tsc: u64) -> Self {
        self.epoch = epoch;
        self.epoch_tsc = epoch_tsc;
        self
    }

    /// The file header for traces of this configuration with buffers of `buffer_size`.
    pub fn file_header(&self, buffer_size: usize) -> FileHeader {
        FileHeader {
            version: self.writer.version,
            flags: HeaderFlags::CONSTANT_TSC | HeaderFlags::NONSTOP_TSC,
            cycle_frequency: self.ticks_per_second,
            buffer_size: buffer_size as u64,
        }
    }

    fn walltime_at(&self, tsc: u64) -> Walltime {
        self.epoch
            .advanced_by_ticks(tsc.saturating_sub(self.epoch_tsc), self.ticks_per_second)
    }
}

/// Why a record was not kept.
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
/// Every method returns at once; none blocks, allocates or panics.
pub struct Recorder<'r, 'a> {
    ring: &'r Ring<'a>,
    config: RecorderConfig,
    /// The buffer being written, if any.
    writer: Option<BufferWriter<'a>>,
    /// Sequence number of the current (or next) buffer: its slot is `seq % N`.
    seq: u32,
    /// `seq` has wrapped past `u32::MAX` at least once.
    seq_wrapped: bool,
    /// Wall-clock second of the first buffer (see `next_walltime`).
    first_second: Option<i64>,
    /// Buffers started so far.
    buffers_started: u64,
    /// Records lost since the last loss marker was written.
    unmarked_loss: u64,
    /// All records dropped (the ring's counter is its low 32 bits).
    records_dropped: u64,
    /// The buffers cannot hold even one record with this configuration.
    broken: bool,
}

// `Recorder` is `Send` (it holds `&Ring`, which is `Sync`, and a `BufferWriter` over a
// buffer it alone holds) but not `Sync`: it is driven from one context at a time.

impl<'r, 'a> Recorder<'r, 'a> {
    /// The ring's counters.
    pub fn stats(&self) -> RingStats {
        self.ring.stats()
    }

    /// All records dropped by this recorder, as a 64-bit count.
    pub fn records_dropped(&self) -> u64 {
        self.records_dropped
    }

    /// The configuration.
    pub fn config(&self) -> &RecorderConfig {
        &self.config
    }

    /// The header of a file holding this ring's buffers.
    pub fn file_header(&self) -> FileHeader {
        self.config.file_header(self.ring.buffer_size)
    }

    /// Records a function entry.
    #[inline]
    pub fn enter(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Dropped> {
        self.function(FunctionAction::Enter, id, ts)
    }

    /// Records a function exit.
    #[inline]
    pub fn exit(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Dropped> {
        self.function(FunctionAction::Exit, id, ts)
    }

    /// Records an exit through a tail call.
    #[inline]
    pub fn tail_exit(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Dropped> {
        self.function(FunctionAction::TailExit, id, ts)
    }

    /// Records a function record of any action.
    #[inline(always)]
    pub fn function(
        &mut self,
        action: FunctionAction,
        id: FunctionId,
        ts: Timestamp,
    ) -> Result<(), Dropped> {
        if let Some(w) = &mut self.writer {
            if w.function(action, id, ts).is_ok() {
                return Ok(());
            }
        }
        self.slow_path(ts, |w| {
            w.function(action, id, ts).map_err(RecordError::from)
        })
    }

    /// Records a function entry with its arguments.
    pub fn enter_with_args(
        &mut self,
        id: FunctionId,
        ts: Timestamp,
        args: &[u64],
    ) -> Result<(), Dropped> {
        self.record(ts, |w| w.enter_with_args(id, ts, args))
    }

    /// Records a custom event.
    pub fn custom_event(&mut self, ts: Timestamp, payload: &[u8]) -> Result<(), Dropped> {
        self.record(ts, |w| w.custom_event(ts, payload))
    }

    /// Records a typed event.
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
        mut op: impl FnMut(&mut BufferWriter<'a>) -> Result<(), RecordError>,
    ) -> Result<(), Dropped> {
        if let Some(w) = &mut self.writer {
            match op(w) {
                Ok(()) => return Ok(()),
                Err(RecordError::Full) => {}
                Err(e) => return Err(self.reject(e)),
            }
        }
        self.slow_path(ts, op)
    }

    fn reject(&mut self, e: RecordError) -> Dropped {
        match e {
            RecordError::EmptyPayload => Dropped::EmptyPayload,
            RecordError::Full | RecordError::TooLarge { .. } => {
                self.count_drop();
                Dropped::TooLarge
            }
        }
    }

    /// No current buffer, or it is full: finish it, get the next, write there.
    #[cold]
    fn slow_path(
        &mut self,
        ts: Timestamp,
        mut op: impl FnMut(&mut BufferWriter<'a>) -> Result<(), RecordError>,
    ) -> Result<(), Dropped> {
        if self.broken {
            self.count_drop();
            return Err(Dropped::TooLarge);
        }
        if self.writer.is_some() {
            self.finish_current();
        }
        if !self.acquire(ts) {
            self.count_drop();
            return Err(Dropped::ConsumerBehind);
        }
        let Some(w) = &mut self.writer else {
            self.count_drop();
            return Err(Dropped::ConsumerBehind);
        };
        match op(w) {
            Ok(()) => Ok(()),
            // An empty buffer could not take it: it never fits.
            Err(e) => Err(self.reject(e)),
        }
    }

    fn count_drop(&mut self) {
        self.records_dropped += 1;
        self.unmarked_loss += 1;
        // Only this recorder writes the counter, so a load and a store suffice (no
        // read-modify-write, which thumbv6m lacks).
        self.ring
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
    fn next_walltime(&mut self, tsc: u64) -> Walltime {
        let base = *self
            .first_second
            .get_or_insert_with(|| self.config.walltime_at(tsc).seconds);
        let k = self.buffers_started;
        self.buffers_started += 1;
        Walltime {
            seconds: base.saturating_add(i64::try_from(k).unwrap_or(i64::MAX)),
            micros: (k % 1_000_000) as u32,
        }
    }

    /// Takes the next buffer if the policy allows and writes its preamble.
    fn acquire(&mut self, ts: Timestamp) -> bool {
        let n = self.ring.slots.len() as u32;
        match self.ring.policy {
            Policy::Streaming => {
                let tail = self.ring.tail.load(Ordering::Acquire);
                if self.seq.wrapping_sub(tail) >= n {
                    return false;
                }
            }
            Policy::FlightRecorder => {
                let slot = &self.ring.slots[self.seq as usize % n as usize];
                if slot.len.load(Ordering::Relaxed) > 0 {
                    // The slot still holds the buffer from `n` buffers ago: it is lost.
                    let lost = self.ring.buffers_overwritten.load(Ordering::Relaxed);
                    self.ring
                        .buffers_overwritten
                        .store(lost.wrapping_add(1), Ordering::Relaxed);
                    slot.len.store(0, Ordering::Relaxed);
                }
            }
        }
        // SAFETY: buffer `seq` is free: in streaming mode the consumer has released it
        // (checked above with acquire ordering against its release store of `tail`); in
        // flight-recorder mode no consumer reads buffers, and `for_each_buffer` needs
        // `&mut self`, so no shared borrow of this buffer is alive.
        let buf = unsafe { self.ring.buffer_mut(self.seq) };
        let walltime = self.next_walltime(ts.tsc);
        let Ok(mut w) = BufferWriter::new(buf, &self.config.writer, walltime) else {
            self.broken = true;
            return false;
        };
        if self.unmarked_loss > 0 {
            let mut text = [0u8; 48];
            let len = loss_text(self.unmarked_loss, &mut text);
            let marked = if self.config.writer.version.events_use_delta() {
                w.typed_event(ts, LOSS_EVENT_TYPE, &text[..len])
            } else {
                w.custom_event(ts, &text[..len])
            };
            if marked.is_ok() {
                self.unmarked_loss = 0;
            }
        }
        self.writer = Some(w);
        true
    }

    /// Finishes the current buffer and publishes it.
    fn finish_current(&mut self) {
        let Some(w) = self.writer.take() else { return };
        if !w.has_events() {
            // Keep the buffer for the next acquire; an empty buffer is invalid.
            return;
        }
        let len = w.finish().len();
        let slot = &self.ring.slots[self.seq as usize % self.ring.slots.len()];
        slot.len.store(len as u32, Ordering::Relaxed);
        self.seq = self.seq.wrapping_add(1);
        self.seq_wrapped |= self.seq == 0;
        // Publishes the bytes and the length to the consumer.
        self.ring.head.store(self.seq, Ordering::Release);
    }

    /// Streaming: hands the current buffer to the consumer now, even if it is not
    /// full (at shutdown, on a timer, before the device sleeps). The next record
    /// starts a new buffer.
    pub fn flush(&mut self) {
        self.finish_current();
    }

    /// How many buffers back from `seq` can exist: all of them once the sequence
    /// number has wrapped, else `seq`.
    fn seq_wrapped_min(&self) -> u32 {
        if self.seq_wrapped {
            u32::MAX
        } else {
            self.seq
        }
    }

    /// Calls `f` with each buffer that holds records, oldest first, the current one
    /// last (also when it is not full). Flight-recorder mode: this is how the ring is
    /// read. Streaming mode: only the current buffer and buffers the consumer has not
    /// taken yet are still there; prefer [`Consumer::pop`].
    ///
    /// Each slice is a complete FDR buffer; write a [`FileHeader`]
    /// ([`Recorder::file_header`]) and then the buffers to make a file.
    pub fn for_each_buffer(&mut self, mut f: impl FnMut(&[u8])) {
        let n = self.ring.slots.len() as u32;
        let first = match self.ring.policy {
            Policy::FlightRecorder => {
                // Without a current buffer, the current slot still holds the oldest one.
                let kept = if self.writer.is_some() { n - 1 } else { n };
                self.seq.wrapping_sub(kept.min(self.seq_wrapped_min()))
            }
            Policy::Streaming => self.ring.tail.load(Ordering::Acquire),
        };
        let mut seq = first;
        while seq != self.seq {
            let len = self.ring.slots[seq as usize % n as usize]
                .len
                .load(Ordering::Relaxed);
            if len > 0 {
                // SAFETY: finished buffer under `&mut self`: the recorder does not
                // write it while `f` runs. In streaming mode the consumer may read
                // it concurrently, which is a shared read as well.
                f(unsafe { self.ring.buffer(seq, len as usize) });
            }
            seq = seq.wrapping_add(1);
        }
        if let Some(w) = &self.writer {
            if w.has_events() {
                f(w.as_bytes());
            }
        }
    }
}

/// Formats `flightrec: lost N records` into `out`; returns the length.
fn loss_text(n: u64, out: &mut [u8; 48]) -> usize {
    const PREFIX: &[u8] = b"flightrec: lost ";
    const SUFFIX: &[u8] = b" records";
    out[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut pos = PREFIX.len();
    let d = &digits[i..];
    out[pos..pos + d.len()].copy_from_slice(d);
    pos += d.len();
    out[pos..pos + SUFFIX.len()].copy_from_slice(SUFFIX);
    pos + SUFFIX.len()
}

/// The consuming side of a streaming ring.
pub struct Consumer<'r, 'a> {
    ring: &'r Ring<'a>,
    /// Next buffer to read; mirrors the ring's tail, which only the consumer writes.
    tail: u32,
}

impl<'r, 'a> Consumer<'r, 'a> {
    /// The oldest finished buffer, if any. The buffer goes back to the recorder when
    /// the returned guard is dropped. Always `None` in flight-recorder mode.
    pub fn pop(&mut self) -> Option<FinishedBuffer<'_, 'r, 'a>> {
        if self.ring.policy != Policy::Streaming {
            return None;
        }
        let head = self.ring.head.load(Ordering::Acquire);
        if head == self.tail {
            return None;
        }
        let len = self.ring.slots[self.tail as usize % self.ring.slots.len()]
            .len
            .load(Ordering::Relaxed);
        // SAFETY: buffer `tail` was published by the recorder's release store of
        // `head`, read above with acquire; the recorder does not reuse it until the
        // guard's drop stores the new tail.
        let bytes = unsafe { self.ring.buffer(self.tail, len as usize) };
        Some(FinishedBuffer {
            consumer: self,
            bytes,
        })
    }

    /// Number of finished buffers waiting.
    pub fn pending(&self) -> u32 {
        self.ring
            .head
            .load(Ordering::Acquire)
            .wrapping_sub(self.tail)
    }

    /// The ring's counters.
    pub fn stats(&self) -> RingStats {
        self.ring.stats()
    }
}

/// A finished buffer lent to the consumer; dropping it gives the buffer back.
pub struct FinishedBuffer<'c, 'r, 'a> {
    consumer: &'c mut Consumer<'r, 'a>,
    bytes: &'c [u8],
}

impl FinishedBuffer<'_, '_, '_> {
    /// The buffer: a complete FDR buffer.
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
        self.consumer
            .ring
            .tail
            .store(self.consumer.tail, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(tsc: u64) -> Timestamp {
        Timestamp { tsc, cpu: 0 }
    }
    fn fid(n: u32) -> FunctionId {
        FunctionId::new(n).unwrap()
    }

    fn format_loss(n: u32) -> ([u8; 48], usize) {
        let mut out = [0u8; 48];
        let len = loss_text(u64::from(n), &mut out);
        (out, len)
    }

    #[test]
    fn loss_text_formats() {
        let mut out = [0u8; 48];
        let n = loss_text(0, &mut out);
        assert_eq!(&out[..n], b"flightrec: lost 0 records");
        let n = loss_text(u64::MAX, &mut out);
        assert_eq!(&out[..n], b"flightrec: lost 18446744073709551615 records");
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
