//! The recording side of a ring: [`RecorderConfig`] and [`Recorder`], which writes
//! each record into the current buffer (the buffer switch is in `switch.rs`, the
//! loss accounting in `loss.rs`).

use super::*;

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
    pub(super) writer: BufferWriter<'r>,
    pub(super) ring: RingView<'r>,
    pub(super) config: RecorderConfig,
    /// Sequence number of the current (or next) buffer.
    pub(super) seq: u32,
    /// The slot of buffer `seq` (see `RingView::next_slot`).
    pub(super) slot: usize,
    /// The WalltimeMarker of the current (the last started) buffer (see
    /// `next_walltime`); before the first, micros [`WALLTIME_NOT_STARTED`]
    /// (a sentinel rather than an `Option`: the straight switch then loads it
    /// without a test, and the recorder keeps its layout).
    pub(super) walltime: Walltime,
    /// Records lost since the last loss marker was written.
    pub(super) unmarked_loss: u64,
    /// When the last record was lost: the time of a loss marker that `flush`
    /// writes without a current buffer.
    pub(super) last_loss: Timestamp,
    /// All records dropped (the ring's counter is its low 32 bits).
    pub(super) records_dropped: u64,
    /// The buffers cannot hold even one record with this configuration.
    pub(super) broken: bool,
    /// Slots `0 .. prepared` hold a preamble this recorder wrote (it takes the
    /// slots in turn from 0): [`switch_for_function`](Self::switch_for_function)
    /// rewrites only its changing records there.
    pub(super) prepared: usize,
    /// The next buffer switch may be [`switch_for_function`](Self::switch_for_function)'s
    /// as far as the recorder goes ([`straight_switch_now`](Self::straight_switch_now)):
    /// the writer is on one of the ring's buffers (`BufferWriter::restarts_on`),
    /// the wall time has started, no loss waits for its marker, every slot holds
    /// a preamble and the ring is not broken. One test on the switch where these
    /// were five. `acquire` sets it after the
    /// writer's `start`; whatever can make a part false clears it (a drop, a
    /// loss counted from outside, a detach). A false one only sends the switch
    /// the slow way, which the loss marker's buffer takes anyway.
    pub(super) straight_switch: bool,
    /// The ring's storage lives for `'a`, which outlives `'r`.
    pub(super) _ring: PhantomData<&'r Ring<'a>>,
}

// `Recorder` is `Send` and `Sync` without an impl of its own: it holds a `RingView`
// (`Send` and `Sync` as `Ring` is), a `BufferWriter` over a buffer it alone holds, and
// plain data. Recording
// takes `&mut self`, so being `Sync` lets other contexts only read (see the module
// docs); `tests::recorder_is_send_and_sync` pins both.

/// `Recorder::walltime`'s micros before the first buffer: no wall-clock
/// second yet (a started one's micros are below 10^6).
pub(super) const WALLTIME_NOT_STARTED: u32 = u32::MAX;

/// Whether a wall time's `seconds` and the next buffer's (one up) are a
/// `u32`, as the straight buffer switch wants them
/// (`Recorder::switch_for_function`): from 1970 to 2106 on a Unix epoch.
#[inline(always)]
pub(super) fn seconds_fit_a_word(seconds: i64) -> bool {
    (0..i64::from(u32::MAX)).contains(&seconds)
}

/// The WalltimeMarker of the buffer after one with `w` (see
/// `Recorder::next_walltime`): both fields one up, the micros below 10^6.
/// The seconds wrap rather than saturate: a recorder never starts 2^63
/// buffers, and the saturating add's test would be paid on every switch.
#[inline(always)]
pub(super) fn walltime_after(w: Walltime) -> Walltime {
    Walltime {
        seconds: w.seconds.wrapping_add(1),
        micros: micros_after(w.micros),
    }
}

/// [`walltime_after`]'s micros: one up, below 10^6.
#[inline(always)]
pub(super) fn micros_after(micros: u32) -> u32 {
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
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// assert_eq!(rec.stats().buffers_finished, 0); // still being written
    /// rec.flush();
    /// assert_eq!(rec.stats().buffers_finished, 1);
    /// ```
    pub fn stats(&self) -> RingStats {
        self.ring.state.stats()
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
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
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
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
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

    /// Records a function record only when that needs nothing out of line: the
    /// current buffer has room and no NewCPUId or TSCWrap must come first (the
    /// common case). `false`: nothing was written or counted; record it with
    /// [`function`](Self::function). For callers that must not call anything on
    /// their fast path, such as the sled trampolines of `flightrec-sleds`, which
    /// then need not save the vector registers.
    ///
    /// ```
    /// # use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// # flightrec_core::__ring_example!(rec, _consumer);
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
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
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
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
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
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
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

    pub(super) fn record(
        &mut self,
        ts: Timestamp,
        mut op: impl FnMut(&mut BufferWriter<'r>) -> Result<(), WriteError>,
    ) -> Result<(), Dropped> {
        if !self.writer.is_detached() {
            match op(&mut self.writer) {
                Ok(()) => return Ok(()),
                Err(WriteError::Full) => {}
                Err(e) => return Err(self.reject(e, ts)),
            }
        }
        self.slow_path(ts, op)
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
    /// nothing (a 64-bit division is a library call on a Cortex-M0).
    pub(super) fn next_walltime(&mut self, tsc: u64) -> Walltime {
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
    /// # use flightrec_core::fdr::FunctionId;
    /// # flightrec_core::__ring_example!(rec, consumer);
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
                // switch, would weigh on the straight switch.)
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
