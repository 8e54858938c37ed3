//! [`BufferWriter`]: fills one caller buffer with a well-formed FDR buffer.
//!
//! A buffer is what one thread (core, task, interrupt level) writes between two buffer
//! switches. Its layout, for every version, is the grammar `llvm-xray` 14 enforces:
//!
//! ```text
//! v2..v5: BufferExtents NewBuffer WalltimeMarker [Pid] NewCPUId Body*
//! v1    :               NewBuffer WalltimeMarker [Pid] NewCPUId Body* EndOfBuffer
//! Body  := NewCPUId | TSCWrap | Function CallArgument* | CustomEvent | TypedEvent
//! ```
//!
//! The writer keeps the BufferExtents value exact after every record, so the buffer
//! is a valid FDR buffer at any instant: a debugger that halts the target and reads its
//! RAM, or a fault handler that dumps it, gets a trace `llvm-xray` reads.
//!
//! Time is written as deltas from a base TSC. The writer emits NewCPUId before the
//! first event and on a CPU change, and TSCWrap when a delta does not fit or the clock
//! went backwards; the record after either carries delta 0.
//!
//! Short calls can be elided like compiler-rt's `func_duration_threshold_us` (feature
//! `short-call-elision`): an entry and its exit closer than
//! [`WriterConfig::threshold`] ticks are erased by
//! moving the write position back. Only function records written since the last
//! metadata record (CPU change, wrap, call argument, event, buffer start) can be
//! erased, and an exit erases an entry only when the ids match, so arguments, events
//! and metadata in between keep everything they follow.
//!
//! A [`Recorder`](super::ring::Recorder) drives one writer per buffer of its ring; use a
//! writer directly to fill a single buffer, for example in a fault handler.
//!
//! ```
//! use flightrec_core::clock::Timestamp;
//! use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
//! use flightrec_core::fdr::FunctionId;
//!
//! // Calls shorter than 100 ticks are not kept.
//! let cfg = WriterConfig::new(1).with_threshold_ticks(100);
//! let mut buf = [0u8; 256];
//! let mut w = BufferWriter::new(&mut buf, &cfg, Walltime::default()).unwrap();
//! let (outer, inner) = (FunctionId::new(1).unwrap(), FunctionId::new(2).unwrap());
//! let at = |tsc| Timestamp { tsc, cpu: 0 };
//! w.enter(outer, at(0)).unwrap();
//! let before = w.len();
//! w.enter(inner, at(10)).unwrap();
//! w.exit(inner, at(20)).unwrap(); // 10 ticks: the pair is erased
//! assert_eq!(w.len(), before);
//! w.exit(outer, at(500)).unwrap(); // 500 ticks: kept
//! assert_eq!(w.len(), before + 8);
//! ```

use core::marker::PhantomData;
use core::num::NonZeroU64;
use core::ptr::NonNull;

use super::header::Version;
use super::records::{
    BufferExtents, CallArgument, CustomEventMarker, CustomEventTime, EndOfBuffer, FunctionAction,
    FunctionId, FunctionRecord, MetadataRecord, NewBuffer, NewCpuId, Pid, TscWrap,
    TypedEventMarker, WalltimeMarker, FUNCTION_RECORD_SIZE, METADATA_RECORD_SIZE,
};
use crate::clock::Timestamp;

mod fast_event;

const META: usize = METADATA_RECORD_SIZE;
const FUNC: usize = FUNCTION_RECORD_SIZE;
/// `latest_cpu` before the first event: no CPU id matches it, so the first event
/// writes NewCPUId.
const NO_CPU: u32 = u32::MAX;
/// [`BufferWriter`]'s `epoch` when the split record path may not be taken.
const NO_EPOCH: u32 = u32::MAX;

/// The split path's `epoch` for a last record at `tsc` on `cpu`: the time's
/// high word on CPU 0, else [`NO_EPOCH`] (see `BufferWriter::epoch`).
#[inline(always)]
fn epoch_of(cpu: u32, tsc: u64) -> u32 {
    if cpu == 0 {
        (tsc >> 32) as u32
    } else {
        NO_EPOCH
    }
}

/// Whether function records take the split path (the time's two 32-bit halves
/// apart, see [`BufferWriter::function_word`]): on 32-bit targets, where a 64-bit
/// subtraction, test and store are two of each, and in this module's tests, which
/// compare its bytes with the 64-bit path's.
const SPLIT: bool = cfg!(any(test, target_pointer_width = "32"));

/// The longest buffer a writer [`restarts_on`](BufferWriter::restarts_on):
/// its BufferExtents count is below 2^24, so the count's fourth byte stays the
/// zero the preamble wrote and `finish_restartable` stores one word. A longer
/// buffer switches the general way.
const MAX_RESTARTABLE: usize = 1 << 24;
const _: () = assert!(MAX_RESTARTABLE - META < 1 << 24);

/// Targets whose unaligned stores are split into byte stores (ARMv6-M, the ARM
/// cores without compare-and-swap; RISC-V without the unaligned-access extension):
/// there [`BufferWriter`] tests the record's alignment and writes aligned words when
/// it can (a [`StaticRing`](super::static_ring::StaticRing)'s buffers are 8-aligned).
/// Elsewhere an unaligned store is one instruction and the test would only cost.
const STRICT_ALIGNMENT: bool = cfg!(any(
    all(target_arch = "arm", not(target_has_atomic = "8")),
    target_arch = "riscv32"
));

/// Stores a function record's word at `base + pos` and, with `extents`, the
/// BufferExtents count (`end - META`, bytes 1..9 of the buffer), as two 4-byte
/// words and three stores (byte, half-word, byte) for the low 32 bits of the count:
/// the only ones that can change, since a 32-bit target's buffer is under 4 GiB and
/// the preamble wrote the high bytes as zero. For [`STRICT_ALIGNMENT`] targets,
/// where an unaligned 8-byte store is eight byte stores.
///
/// # Safety
/// `base + pos .. base + pos + 8` and, with `extents`, `base + 1 .. base + 9` are
/// inside one buffer the caller borrows exclusively; `base` and `pos` are multiples
/// of 4.
#[inline(always)]
unsafe fn store_aligned(base: *mut u8, pos: usize, word: u64, extents: bool) {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = word.to_le_bytes();
    // SAFETY: in bounds and exclusive (the caller's contract); `base + pos` and
    // `base + pos + 4` are 4-aligned, `base + 2` is 2-aligned.
    unsafe {
        let record = base.add(pos);
        record
            .cast::<u32>()
            .write(u32::from_ne_bytes([b0, b1, b2, b3]));
        record
            .add(4)
            .cast::<u32>()
            .write(u32::from_ne_bytes([b4, b5, b6, b7]));
        if extents {
            let [e0, e1, e2, e3] = ((pos + FUNC - META) as u32).to_le_bytes();
            base.add(1).write(e0);
            base.add(2)
                .cast::<u16>()
                .write(u16::from_ne_bytes([e1, e2]));
            base.add(4).write(e3);
        }
    }
}

/// A fast path's function record: `word` stored at `at`, as two aligned words
/// on `STRICT_ALIGNMENT` targets, else as 8 unaligned bytes.
///
/// # Safety
/// `at .. at + FUNC` is inside one buffer the caller borrows exclusively; on
/// `STRICT_ALIGNMENT` targets `at` is a multiple of 4.
#[inline(always)]
unsafe fn store_fast(at: *mut u8, word: u64) {
    // SAFETY: the caller's contract.
    unsafe {
        if STRICT_ALIGNMENT {
            store_aligned(at, 0, word, false);
        } else {
            at.cast::<[u8; FUNC]>().write_unaligned(word.to_le_bytes());
        }
    }
}

/// Stores a metadata record, given as its little-endian value
/// ([`MetadataRecord::to_le_u128`]), at `at`: as words, zeros included (two
/// 8-byte stores on 64-bit targets, four 4-byte ones on 32-bit targets), or on
/// [`STRICT_ALIGNMENT`] targets as 16 byte stores when `at` is not 4-aligned (only
/// after a payload whose length is not a multiple of 4; buffers start aligned).
///
/// # Safety
/// `at .. at + META` is inside one buffer the caller borrows exclusively.
#[inline(always)]
unsafe fn store_meta(at: *mut u8, value: u128) {
    // SAFETY: in bounds and exclusive (the caller's contract); the word stores
    // are unaligned, or aligned where `at` was just tested to be 4-aligned.
    unsafe {
        if cfg!(target_pointer_width = "64") {
            at.cast::<u64>().write_unaligned((value as u64).to_le());
            at.add(8)
                .cast::<u64>()
                .write_unaligned(((value >> 64) as u64).to_le());
            return;
        }
        let words = meta_words(value);
        if !STRICT_ALIGNMENT {
            at.cast::<[u32; 4]>().write_unaligned(words);
        } else if at.addr() & 3 == 0 {
            at.cast::<[u32; 4]>().write(words);
        } else {
            store_meta_bytes(at, value);
        }
    }
}

/// [`store_meta`] where `at` is known to be 4-aligned on [`STRICT_ALIGNMENT`]
/// targets: no test, no byte stores.
///
/// # Safety
/// As for [`store_meta`], and on `STRICT_ALIGNMENT` targets `at` is a multiple
/// of 4.
#[inline(always)]
unsafe fn store_meta_aligned(at: *mut u8, value: u128) {
    // SAFETY: the caller's contract.
    unsafe {
        if STRICT_ALIGNMENT {
            at.cast::<[u32; 4]>().write(meta_words(value));
        } else {
            store_meta(at, value);
        }
    }
}

/// One little-endian word of a record stored at `at`, known to be 4-aligned on
/// [`STRICT_ALIGNMENT`] targets.
///
/// # Safety
///
/// The 4 bytes at `at` are in bounds and exclusively borrowed, and `at` is
/// 4-aligned on [`STRICT_ALIGNMENT`] targets.
#[inline(always)]
unsafe fn store_word_aligned(at: *mut u8, word: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        if STRICT_ALIGNMENT {
            at.cast::<u32>().write(word);
        } else {
            at.cast::<u32>().write_unaligned(word);
        }
    }
}

/// A metadata record's value as its four little-endian words. Four constant
/// shifts, written out: a loop over them is not unrolled at opt-level "s" and
/// shifts the 128-bit value in memory.
#[inline(always)]
fn meta_words(value: u128) -> [u32; 4] {
    [
        (value as u32).to_le(),
        ((value >> 32) as u32).to_le(),
        ((value >> 64) as u32).to_le(),
        ((value >> 96) as u32).to_le(),
    ]
}

/// [`store_meta`]'s byte stores, out of line: rare (after a payload whose length
/// is not a multiple of 4), and long on a Cortex-M0.
///
/// # Safety
/// As for [`store_meta`].
#[cold]
#[inline(never)]
unsafe fn store_meta_bytes(at: *mut u8, value: u128) {
    // SAFETY: the caller's contract.
    unsafe { at.cast::<[u8; META]>().write_unaligned(value.to_le_bytes()) };
}

/// Stores a buffer's preamble at `base` (BufferExtents, its count the rest of
/// the preamble; NewBuffer; WalltimeMarker; Pid) as whole records; returns the
/// address after it.
///
/// # Safety
/// `base .. base + config.preamble_len()` is inside one buffer the caller
/// borrows exclusively.
#[inline(always)]
unsafe fn store_preamble(base: *mut u8, config: &WriterConfig, walltime: Walltime) -> *mut u8 {
    let mut at = base;
    let mut put = |record: u128| {
        // SAFETY: the preamble's records are inside the buffer (the caller's
        // contract).
        unsafe { store_meta(at, record) };
        at = at.wrapping_add(META);
    };
    if config.version().has_extents() {
        let size = (config.preamble_len() - META) as u64;
        put(BufferExtents { size }.to_le_u128());
    }
    // The wire field is `int32_t`; the same 4 bytes (see `WriterConfig::tid`).
    let tid = config.tid as i32;
    put(NewBuffer { tid }.to_le_u128());
    let walltime = WalltimeMarker {
        seconds: walltime.seconds,
        // A ring's recorder counts its buffers' micros below 10^6 already: the
        // division (a library call on a Cortex-M0) only for other callers.
        micros: if walltime.micros < 1_000_000 {
            walltime.micros
        } else {
            micros_in_second(walltime.micros)
        },
    };
    put(walltime.to_le_u128());
    if let Some(pid) = config.pid {
        let pid = pid as i32;
        put(Pid { pid }.to_le_u128());
    }
    at
}

/// A wall-clock time: seconds and microseconds (what WalltimeMarker records carry).
///
/// ```
/// use flightrec_core::fdr::writer::Walltime;
/// let w = Walltime { seconds: 1_700_000_000, micros: 123_456 };
/// assert_eq!(w.advanced_by_ticks(1_500_000, core::num::NonZeroU64::new(1_000_000).unwrap()),
///            Walltime { seconds: 1_700_000_001, micros: 623_456 });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Walltime {
    /// Whole seconds.
    pub seconds: i64,
    /// Microseconds, below 1,000,000.
    pub micros: u32,
}

impl Walltime {
    /// This time moved forward by `ticks` of a clock counting `ticks_per_second`.
    ///
    /// Firmware rarely has a wall clock, so a ring derives each buffer's wall time from
    /// one reference point and the TSC; all that readers use it for is ordering a
    /// thread's buffers. Seconds saturate at `i64::MAX` instead of overflowing.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::writer::Walltime;
    /// let start = Walltime { seconds: 10, micros: 900_000 };
    /// let khz = NonZeroU64::new(1_000).unwrap();
    /// assert_eq!(start.advanced_by_ticks(250, khz), Walltime { seconds: 11, micros: 150_000 });
    /// assert_eq!(start.advanced_by_ticks(u64::MAX, NonZeroU64::MIN).seconds, i64::MAX);
    /// ```
    pub fn advanced_by_ticks(self, ticks: u64, ticks_per_second: NonZeroU64) -> Self {
        // No `/` or `%` on 64 bits: on a 32-bit core each is a library call that
        // would be linked into every firmware that records (`divide`).
        let (secs, rem) = crate::divide::div_rem(ticks, ticks_per_second);
        // rem < tps, so rem * 1e6 / tps < 1e6, exact for any rate.
        let extra_micros = u64::from(crate::divide::micros_of(rem, ticks_per_second));
        let micros = u64::from(self.micros) + extra_micros;
        // `micros` is a public field, so a value past one second carries over; in
        // 128 bits neither sum can overflow (`secs` is u64::MAX at one tick a second),
        // and a sum below i64::MIN is impossible, so only the top saturates.
        // `micros` is below 2 * 10^6 here unless the field was set past a second:
        // subtract whole seconds rather than divide.
        let (carry, micros) = if micros < 1_000_000 {
            (0, micros)
        } else {
            crate::divide::div_rem(micros, crate::divide::MILLION)
        };
        let whole = u128::from(secs) + u128::from(carry);
        let seconds = i128::from(self.seconds) + whole as i128;
        Self {
            seconds: i64::try_from(seconds).unwrap_or(i64::MAX),
            micros: micros as u32,
        }
    }
}

/// How a [`BufferWriter`] writes: version, thread and process ids, and the short-call
/// threshold. A [`RecorderConfig`](super::ring::RecorderConfig) holds one for a ring.
///
/// ```
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::Version;
/// let cfg = WriterConfig::new(101).with_pid(4242).with_version(Version::V3);
/// assert_eq!(cfg.tid, 101);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WriterConfig {
    /// Format version; version 5 by default (feature `fdr-all-versions`;
    /// without it every buffer is version 5, and the code for the others is not
    /// linked).
    #[cfg(feature = "fdr-all-versions")]
    pub version: Version,
    /// The thread id written in NewBuffer (a task, core or interrupt-level id on bare
    /// metal). Readers group buffers by (pid, tid).
    ///
    /// Thread, process and link source ids are all `u32` in this crate: the record
    /// field is 4 bytes (`int32_t` in LLVM's FDR record types, which
    /// [`Record::NewBuffer`](super::records::Record::NewBuffer) mirrors), and
    /// `llvm-xray` hands them on as `uint32_t` (`XRayRecord::TId`, `PId`) and prints
    /// them unsigned, as the link's [`Source`](crate::link::Source) ids are. The
    /// bits are written as they are: ids above `i32::MAX` read back unchanged.
    pub tid: u32,
    /// The process id written in a Pid record, or `None` to write none (bare metal).
    /// Keep it the same for every buffer of a process.
    pub pid: Option<u32>,
    /// Entry/exit pairs shorter than this many ticks are erased; 0 keeps everything
    /// (feature `short-call-elision`; without it nothing is erased, and the code
    /// that erases is not linked).
    #[cfg(feature = "short-call-elision")]
    pub threshold_ticks: u64,
}

impl WriterConfig {
    /// Version 5, no Pid record, no elision.
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// let cfg = WriterConfig::new(3);
    /// assert_eq!((cfg.version(), cfg.tid, cfg.pid, cfg.threshold()), (Version::V5, 3, None, 0));
    /// ```
    pub const fn new(tid: u32) -> Self {
        Self {
            #[cfg(feature = "fdr-all-versions")]
            version: Version::V5,
            tid,
            pid: None,
            #[cfg(feature = "short-call-elision")]
            threshold_ticks: 0,
        }
    }

    /// The format version: version 5, or the one set with
    /// `with_version` (feature `fdr-all-versions`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(WriterConfig::new(1).version(), Version::V5);
    /// ```
    #[inline(always)]
    pub const fn version(&self) -> Version {
        #[cfg(feature = "fdr-all-versions")]
        return self.version;
        #[cfg(not(feature = "fdr-all-versions"))]
        return Version::V5;
    }

    /// The short-call threshold in ticks: 0 (keep every call), or the one set
    /// with `with_threshold_ticks` (feature `short-call-elision`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// assert_eq!(WriterConfig::new(1).threshold(), 0);
    /// ```
    #[inline(always)]
    pub const fn threshold(&self) -> u64 {
        #[cfg(feature = "short-call-elision")]
        return self.threshold_ticks;
        #[cfg(not(feature = "short-call-elision"))]
        return 0;
    }

    /// Sets the version, for readers older than LLVM's current one (feature
    /// `fdr-all-versions`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(WriterConfig::new(1).with_version(Version::V1).version, Version::V1);
    /// ```
    #[cfg(feature = "fdr-all-versions")]
    pub const fn with_version(mut self, version: Version) -> Self {
        self.version = version;
        self
    }

    /// Sets the process id: each buffer then carries a Pid record.
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// let cfg = WriterConfig::new(1).with_pid(4242);
    /// assert_eq!(cfg.pid, Some(4242));
    /// assert_eq!(cfg.preamble_len(), WriterConfig::new(1).preamble_len() + 16);
    /// ```
    pub const fn with_pid(mut self, pid: u32) -> Self {
        self.pid = Some(pid);
        self
    }

    /// Sets the short-call threshold in ticks (see the [module docs](self) for what is
    /// erased); 0 keeps every call (feature `short-call-elision`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// assert_eq!(WriterConfig::new(1).with_threshold_ticks(1_000).threshold_ticks, 1_000);
    /// ```
    #[cfg(feature = "short-call-elision")]
    pub const fn with_threshold_ticks(mut self, ticks: u64) -> Self {
        self.threshold_ticks = ticks;
        self
    }

    /// Bytes of the buffer preamble (BufferExtents, NewBuffer, WalltimeMarker, Pid).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(WriterConfig::new(1).preamble_len(), 48);
    /// assert_eq!(WriterConfig::new(1).with_pid(1).preamble_len(), 64);
    /// assert_eq!(WriterConfig::new(1).with_version(Version::V1).preamble_len(), 32);
    /// ```
    pub const fn preamble_len(&self) -> usize {
        let extents = if self.version().has_extents() {
            META
        } else {
            0
        };
        let pid = if self.pid.is_some() { META } else { 0 };
        extents + 2 * META + pid
    }

    /// Bytes kept free at the end of a version-1 buffer for its EndOfBuffer record.
    const fn tail_reserve(&self) -> usize {
        if self.version().has_extents() {
            0
        } else {
            META
        }
    }

    /// The smallest buffer a writer accepts: the preamble, a NewCPUId and one function
    /// record (and EndOfBuffer in version 1).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// let cfg = WriterConfig::new(1);
    /// assert_eq!(cfg.min_buffer_len(), 48 + 16 + 8);
    /// let mut buf = [0u8; 72];
    /// assert!(BufferWriter::new(&mut buf, &cfg, Walltime::default()).is_ok());
    /// assert!(BufferWriter::new(&mut buf[..71], &cfg, Walltime::default()).is_err());
    /// ```
    pub const fn min_buffer_len(&self) -> usize {
        self.preamble_len() + META + FUNC + self.tail_reserve()
    }
}

/// The record did not fit in the rest of the buffer. Nothing was written; switch to a
/// new buffer and write it again (a [`Recorder`](super::ring::Recorder) does that).
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::writer::{BufferWriter, Full, Walltime, WriterConfig};
/// use flightrec_core::fdr::FunctionId;
/// let mut buf = [0u8; 80]; // preamble, NewCPUId and two function records
/// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
/// let f = FunctionId::new(1).unwrap();
/// w.enter(f, Timestamp { tsc: 1, cpu: 0 }).unwrap();
/// w.exit(f, Timestamp { tsc: 2, cpu: 0 }).unwrap();
/// assert_eq!(w.enter(f, Timestamp { tsc: 3, cpu: 0 }), Err(Full));
/// assert_eq!(w.len(), 80);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Full;

impl core::fmt::Display for Full {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("buffer full")
    }
}

/// Why a record with a variable size (arguments, event payloads) was not written.
/// Nothing was written in each case.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::writer::{BufferWriter, RecordError, Walltime, WriterConfig};
/// let mut buf = [0u8; 128];
/// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
/// let t = Timestamp { tsc: 0, cpu: 0 };
/// assert_eq!(w.custom_event(t, b""), Err(RecordError::EmptyPayload));
/// // 80 bytes are free after the preamble; marker, NewCPUId and payload need 132.
/// assert_eq!(w.custom_event(t, &[0; 100]), Err(RecordError::TooLarge { needed: 132 }));
/// w.custom_event(t, &[0; 40]).unwrap();
/// assert_eq!(w.custom_event(t, &[0; 40]), Err(RecordError::Full));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RecordError {
    /// It does not fit in the rest of this buffer; it would fit in an empty one.
    Full,
    /// It would not fit even in an empty buffer of this size; it needs `needed` bytes.
    TooLarge {
        /// Bytes the record needs after the preamble.
        needed: usize,
    },
    /// An event payload was empty (readers reject size 0).
    EmptyPayload,
}

impl From<Full> for RecordError {
    fn from(_: Full) -> Self {
        RecordError::Full
    }
}

impl core::fmt::Display for RecordError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RecordError::Full => f.write_str("buffer full"),
            RecordError::TooLarge { needed } => {
                write!(f, "record of {needed} bytes is larger than a whole buffer")
            }
            RecordError::EmptyPayload => f.write_str("event payload is empty"),
        }
    }
}

/// The buffer cannot hold even the preamble, a NewCPUId and one record (see
/// [`WriterConfig::min_buffer_len`]).
///
/// ```
/// use flightrec_core::fdr::writer::{BufferTooSmall, BufferWriter, Walltime, WriterConfig};
/// let mut buf = [0u8; 64];
/// let err = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).err();
/// assert_eq!(err, Some(BufferTooSmall { len: 64, needed: 72 }));
/// assert_eq!(err.unwrap().to_string(), "buffer of 64 bytes is too small (at least 72 needed)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTooSmall {
    /// Bytes given.
    pub len: usize,
    /// Bytes needed at least.
    pub needed: usize,
}

impl core::fmt::Display for BufferTooSmall {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "buffer of {} bytes is too small (at least {} needed)",
            self.len, self.needed
        )
    }
}

/// Whether writing an event needs a NewCPUId or TSCWrap first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Preamble {
    /// Same CPU and the delta fits: write the record only.
    None,
    /// The CPU changed (or this is the first event): NewCPUId first.
    NewCpu,
    /// The delta does not fit or the clock went backwards: TSCWrap first.
    Wrap,
}

/// The first word of the BufferExtents record at `base` for a buffer of
/// `end` bytes: the record's tag and the count's three low bytes. The count's
/// fourth byte stays the zero the buffer's preamble wrote.
///
/// # Safety
///
/// As [`store_word_aligned`] at `base`, and `end` is at most
/// [`MAX_RESTARTABLE`].
#[inline(always)]
unsafe fn store_extents_count(base: *mut u8, end: usize) {
    debug_assert!(end <= MAX_RESTARTABLE);
    let [count, ..] = meta_words(
        BufferExtents {
            size: (end - META) as u64,
        }
        .to_le_u128(),
    );
    // SAFETY: the caller's contract.
    unsafe { store_word_aligned(base, count) };
}

/// What [`BufferWriter::try_function_word`] did with a function record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tried {
    /// Stored, with its one store.
    Stored,
    /// Nothing written: the buffer has no room for the record
    /// ([`BufferWriter::lacks_room_for_function`]).
    Full,
    /// Nothing written: the record needs more than its store (a NewCPUId or
    /// TSCWrap first, short-call elision, the general path).
    Declined,
}

/// Writes one FDR buffer into a caller-provided byte slice.
///
/// Never allocates and never panics: a record that does not fit returns [`Full`] (or
/// [`RecordError`]) and leaves the buffer as it was. [`BufferWriter::as_bytes`] is a
/// complete, valid FDR buffer at any time once an event was written. Put a
/// [`FileHeader`](super::FileHeader) before one or more such buffers to make a file.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
/// use flightrec_core::fdr::FunctionId;
///
/// let mut buf = [0u8; 256];
/// let cfg = WriterConfig::new(101).with_pid(4242);
/// let mut w = BufferWriter::new(&mut buf, &cfg, Walltime { seconds: 1, micros: 0 }).unwrap();
/// let f = FunctionId::new(1).unwrap();
/// w.enter(f, Timestamp { tsc: 1000, cpu: 0 }).unwrap();
/// w.exit(f, Timestamp { tsc: 1500, cpu: 0 }).unwrap();
/// // extents + NewBuffer + Walltime + Pid + NewCPUId + 2 function records
/// assert_eq!(w.as_bytes().len(), 5 * 16 + 2 * 8);
/// ```
pub struct BufferWriter<'b> {
    // Invariants, which the unchecked stores rely on:
    // `body_start <= undo_start <= pos() <= limit <= len`; `cur` is `base + pos()`;
    // `limit` is set once, in `new`; each fast end is 0 or `base + limit` (an
    // address); every write checks its room against `limit` (or a fast end) first
    // (only `finish`, which consumes the writer, writes past it); with extents,
    // `body_start >= 48`.
    /// The buffer's first byte: the `&'b mut [u8]` given to [`new`](Self::new),
    /// kept as a pointer and a length so that `cur` may point into it (a dangling
    /// pointer and 0 for the [`detached`](Self::detached) writer).
    base: *mut u8,
    /// The write position as a pointer, `base + pos()`: the record path stores
    /// through it and compares its address with a fast end, with no base to load
    /// and add.
    cur: *mut u8,
    /// Bytes of the buffer.
    len: usize,
    /// End of the space records may use (the buffer end, less the EndOfBuffer room
    /// kept in version 1).
    limit: usize,
    version: Version,
    /// Whether each function record also updates the BufferExtents count (see
    /// [`start`](Self::start)).
    extents_every_record: bool,
    /// Length of the preamble; records start here.
    body_start: usize,
    latest_cpu: u32,
    latest_tsc: u64,
    threshold: u64,
    /// Start of the run of function records that short-call elision may erase.
    undo_start: usize,
    /// What the fast path of a function record compares the address of its end
    /// with: `base + limit` when such a record needs nothing but its store (the
    /// extents are deferred and, on [`STRICT_ALIGNMENT`] targets, `cur` is
    /// 4-aligned), 0 otherwise, which sends every function record to the general
    /// path. Kept by [`refresh_fast_end`](Self::refresh_fast_end).
    fast_end: usize,
    /// The split path's fast end for a reading on a non-zero high word:
    /// `fast_end` when `epoch` is not [`NO_EPOCH`], else 0, so that the split
    /// path compares the high word with `epoch` and nothing else (a high word
    /// of `NO_EPOCH` matching it fails the room test).
    fast_end_epoch: usize,
    /// `fast_end_epoch` for an exit, tail exit or EnterArg (a record that may
    /// erase its entry or end an erasable run): `fast_end_epoch` without a
    /// short-call threshold, 0 with one, so that the split path's exits test
    /// their room and the threshold with one compare.
    fast_end_exit: usize,
    /// `fast_end_epoch` when `epoch` is 0, else 0: the split path's fast end for a
    /// reading whose high word is 0 (a 32-bit counter, or an extended clock
    /// before its first wrap), which then needs no separate test of `epoch`: a
    /// record that must not take the fast path (a buffer's first, one after
    /// another CPU or a wrap) fails its room test. Kept with `epoch`.
    fast_end_zero: usize,
    /// `fast_end_exit` when `epoch` is 0, else 0.
    fast_end_zero_exit: usize,
    /// The high word of `latest_tsc` when `latest_cpu` is 0, [`NO_EPOCH`]
    /// otherwise (or when that word is `NO_EPOCH` itself): what the split record
    /// path compares a reading's high word with (see
    /// [`function_word`](Self::function_word)). Kept by
    /// [`refresh_epoch`](Self::refresh_epoch) wherever `latest_tsc` or
    /// `latest_cpu` changes, except by the split path itself, which changes
    /// neither the high word nor the CPU; only where [`SPLIT`].
    epoch: u32,
    /// The buffer is borrowed exclusively for `'b`.
    _buf: PhantomData<&'b mut [u8]>,
}

// SAFETY: a `BufferWriter` is a `&'b mut [u8]` (`base`, `len`; `cur` points into
// the same buffer) and plain data; `&mut [u8]` is `Send` and `Sync`, and every
// access through the pointers takes `&mut self` (writes) or `&self` (reads).
unsafe impl Send for BufferWriter<'_> {}
// SAFETY: as for `Send`: shared access only reads the buffer.
unsafe impl Sync for BufferWriter<'_> {}

impl<'b> BufferWriter<'b> {
    /// Starts a buffer in `buf`: writes the preamble (BufferExtents, NewBuffer with
    /// the thread id, WalltimeMarker, Pid). A buffer shorter than
    /// [`WriterConfig::min_buffer_len`] is an error.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::Version;
    /// let mut buf = [0u8; 128];
    /// let when = Walltime { seconds: 1_700_000_000, micros: 0 };
    /// let w = BufferWriter::new(&mut buf, &WriterConfig::new(9).with_pid(100), when).unwrap();
    /// let b = w.as_bytes();
    /// assert_eq!(b.len(), 64);
    /// assert_eq!(decode_record(Version::V5, &b[16..]).unwrap().0, Record::NewBuffer { tid: 9 });
    /// assert_eq!(decode_record(Version::V5, &b[48..]).unwrap().0, Record::Pid { pid: 100 });
    /// ```
    pub fn new(
        buf: &'b mut [u8],
        config: &WriterConfig,
        walltime: Walltime,
    ) -> Result<Self, BufferTooSmall> {
        let mut w = Self::detached();
        w.start(buf, config, walltime, false)?;
        Ok(w)
    }

    /// [`new`](Self::new) in place: this writer (detached, or on a finished
    /// buffer) moves to `buf` and writes its preamble there.
    ///
    /// `deferred` stops updating the BufferExtents count with every function
    /// record: the [`Recorder`](super::ring::Recorder) does, since it alone hands
    /// buffers out and brings the count up to date first (on finishing a buffer,
    /// in `for_each_buffer`). It saves a store (on x86) or three (on Cortex-M0)
    /// per record. Until [`sync_extents`](Self::sync_extents),
    /// [`as_bytes`](Self::as_bytes) may end at an earlier record;
    /// [`finish`](Self::finish) is always exact.
    ///
    /// A recorder starts each buffer this way: building a new writer and moving
    /// it over the old one stored and copied every field twice (about 60 of the
    /// Cortex-M4's 460 cycles of a buffer switch). On error nothing changed.
    pub(crate) fn start(
        &mut self,
        buf: &'b mut [u8],
        config: &WriterConfig,
        walltime: Walltime,
        deferred: bool,
    ) -> Result<(), BufferTooSmall> {
        let needed = config.min_buffer_len();
        if buf.len() < needed {
            return Err(BufferTooSmall {
                len: buf.len(),
                needed,
            });
        }
        let len = buf.len();
        let base = buf.as_mut_ptr();
        let preamble = config.preamble_len();
        // SAFETY: the preamble fits in `buf` (`min_buffer_len` is more than
        // `preamble_len`), which this function holds exclusively.
        let at = unsafe { store_preamble(base, config, walltime) };
        self.base = base;
        self.cur = at;
        self.len = len;
        self.limit = len - config.tail_reserve();
        self.version = config.version();
        self.extents_every_record = config.version().has_extents() && !deferred;
        self.body_start = preamble;
        self.latest_cpu = NO_CPU;
        self.latest_tsc = 0;
        self.threshold = config.threshold();
        self.undo_start = preamble;
        // No event yet: the split path's high word matches nothing.
        self.epoch = NO_EPOCH;
        self.refresh_fast_end();
        Ok(())
    }

    /// Whether [`restart_with_function`](Self::restart_with_function) may move
    /// this writer, once its buffer [`has_events`](Self::has_events), to another
    /// buffer of `len` bytes: it is on a buffer of that length, its extents are
    /// deferred, and (on [`STRICT_ALIGNMENT`] targets) its buffer and `len` are
    /// multiples of 4, so that every buffer of the ring starts aligned. Only
    /// [`start`](Self::start) and [`detach`](Self::detach) change this, and a
    /// restart keeps it, so a recorder tests it once per buffer it starts
    /// rather than on every switch.
    #[inline(always)]
    pub(crate) fn restarts_on(&self, len: usize) -> bool {
        let aligned = !STRICT_ALIGNMENT || (self.base.addr() | len) & 3 == 0;
        self.len == len && !self.extents_every_record && aligned && len <= MAX_RESTARTABLE
    }

    /// A recorder's buffer switch for a function record: this writer moves to
    /// the buffer at `base`, whose preamble an earlier [`start`](Self::start)
    /// with the same configuration wrote (a ring's recorder uses its slots in
    /// turn, and nothing else writes them). It rewrites the two records of the
    /// preamble that change (the BufferExtents count and the WalltimeMarker),
    /// then a NewCPUId and the record, which leaves the bytes and state of
    /// `start` and then [`function_word_across`](Self::function_word_across); of
    /// the fields it sets only those that differ from buffer to buffer (the
    /// length, the limit, the version and the threshold stay).
    ///
    /// `on_epoch`: the caller knows that `ts` is on CPU 0 and on `epoch`, the
    /// last record's high word, which is not `NO_EPOCH` (a time that
    /// [`time_of_full`](Self::time_of_full) gave on a 32-bit target): the
    /// CPU, `epoch`, the time's high word and the fast ends' validity then
    /// stay as they are, three stores and a test fewer.
    ///
    /// # Safety
    /// [`restarts_on`](Self::restarts_on) with the length of the buffer at
    /// `base`, and [`has_events`](Self::has_events); that buffer is borrowed
    /// exclusively for `'b`, and holds the preamble of a `start` with the
    /// configuration this writer was started with. (`walltime.micros` is below
    /// 10^6, as a recorder counts them; `start` reduces others.)
    #[inline(always)]
    pub(crate) unsafe fn restart_with_function(
        &mut self,
        base: *mut u8,
        walltime: Walltime,
        low: u32,
        ts: Timestamp,
        on_epoch: bool,
    ) {
        let preamble = self.body_start;
        let extents = self.fdr_version().has_extents();
        let wall_at = if extents { 2 * META } else { META };
        let walltime = WalltimeMarker {
            seconds: walltime.seconds,
            micros: walltime.micros,
        };
        let new_cpu = NewCpuId {
            cpu: ts.cpu,
            tsc: ts.tsc,
        };
        let at = base.wrapping_add(preamble);
        // SAFETY: the buffer at `base` has this writer's length (the caller's
        // contract), which holds the preamble, a NewCPUId and a record
        // (`min_buffer_len`); on `STRICT_ALIGNMENT` targets `base`, and so every
        // record here (at multiples of 16 bytes from it, the record too), is
        // 4-aligned.
        unsafe {
            // Of the BufferExtents and the WalltimeMarker, only the words that
            // change: the rest of each holds the zeros its `start` wrote (a
            // restartable buffer's count is below 2^24, `MAX_RESTARTABLE`, and
            // a recorder's micros below 10^6, so their top bytes are 0).
            if extents {
                store_extents_count(base, preamble);
            }
            let [w0, w1, w2, _] = meta_words(walltime.to_le_u128());
            let wall = base.wrapping_add(wall_at);
            store_word_aligned(wall, w0);
            store_word_aligned(wall.wrapping_add(4), w1);
            store_word_aligned(wall.wrapping_add(8), w2);
            store_meta_aligned(at, new_cpu.to_le_u128());
            store_fast(at.wrapping_add(META), u64::from(low));
        }
        self.base = base;
        self.cur = at.wrapping_add(META + FUNC);
        let on_epoch = SPLIT && on_epoch;
        if on_epoch {
            debug_assert!(
                ts.cpu == 0
                    && self.latest_cpu == 0
                    && self.epoch != NO_EPOCH
                    && (ts.tsc >> 32) as u32 == self.epoch
            );
            self.set_latest_low(ts.tsc as u32);
        } else {
            self.latest_cpu = u32::from(ts.cpu);
            self.latest_tsc = ts.tsc;
        }
        // Nothing before the NewCPUId can be erased; nor can a kept exit or an
        // EnterArg become erasable (as in `function_after_metadata`).
        self.undo_start = if low & 0b1110 == 0 || low & 0b1110 == 0b0100 {
            preamble + META
        } else {
            preamble + META + FUNC
        };
        self.fast_end = self.limit_addr();
        // `refresh_epoch` in line: a call cost about 30 of the switch's cycles
        // on a Cortex-M4, and the new time and end are in registers here.
        if SPLIT && !on_epoch {
            self.epoch = epoch_of(u32::from(ts.cpu), ts.tsc);
        }
        self.refresh_fast_ends_valid(on_epoch);
    }

    /// Stores `raw` as the low word of `latest_tsc`, whose high word is
    /// already the time's: one store where a `u64` is two.
    #[inline(always)]
    fn set_latest_low(&mut self, raw: u32) {
        if cfg!(target_endian = "little") {
            let latest: *mut u64 = &mut self.latest_tsc;
            // SAFETY: on a little-endian target the low word of the `u64` is its
            // first four bytes, inside the field, which `&mut self` borrows
            // exclusively, and aligned (a `u64` is at least 4-aligned).
            unsafe { latest.cast::<u32>().write(raw) };
        } else {
            self.latest_tsc = (self.latest_tsc & !u64::from(u32::MAX)) | u64::from(raw);
        }
    }

    /// A writer without a buffer: the [`Recorder`](super::ring::Recorder)'s "no
    /// current buffer". It refuses every function record with [`Full`] (its room is
    /// zero and its CPU matches no event), so the recorder's hot path needs no
    /// separate test for a missing buffer. Other records get
    /// [`RecordError::TooLarge`]; the recorder does not offer it those.
    pub(crate) fn detached() -> Self {
        let base = NonNull::<u8>::dangling().as_ptr();
        Self {
            base,
            cur: base,
            len: 0,
            limit: 0,
            version: Version::V5,
            extents_every_record: false,
            body_start: 0,
            latest_cpu: NO_CPU,
            latest_tsc: 0,
            threshold: 0,
            undo_start: 0,
            fast_end: 0,
            fast_end_epoch: 0,
            fast_end_exit: 0,
            fast_end_zero: 0,
            fast_end_zero_exit: 0,
            epoch: NO_EPOCH,
            _buf: PhantomData,
        }
    }

    /// Sets `epoch` from `latest_tsc` and `latest_cpu` (see the field), and the
    /// fast ends that depend on it; nothing where the split path is not used.
    #[inline(always)]
    fn refresh_epoch(&mut self) {
        if SPLIT {
            self.refresh_epoch_split();
        }
    }

    /// [`refresh_epoch`](Self::refresh_epoch) where [`SPLIT`], out of line: every
    /// slow path that moves the time calls it (about 500 B of flash on thumbv6m
    /// inlined).
    #[inline(never)]
    fn refresh_epoch_split(&mut self) {
        self.epoch = epoch_of(self.latest_cpu, self.latest_tsc);
        self.refresh_fast_end_zero();
    }

    /// Sets the split path's fast ends ([`fast_end_epoch`](Self::fast_end_epoch),
    /// [`fast_end_zero`](Self::fast_end_zero) and their exit twins) from `epoch`,
    /// the threshold and `fast_end`.
    ///
    /// Without [`SPLIT`] only `fast_end_exit` is kept, as `fast_end` without a
    /// short-call threshold and 0 with one: the x86_64 sled trampolines of
    /// `flightrec-sleds` compare an exit's end with it (see [`layout`]), and
    /// with 0 there every exit would leave their path for the slower one.
    #[inline]
    fn refresh_fast_end_zero(&mut self) {
        self.refresh_fast_ends_valid(false);
    }

    /// [`refresh_fast_end_zero`](Self::refresh_fast_end_zero), where `valid`
    /// says that `epoch` is known not to be `NO_EPOCH` (no test of it).
    #[inline(always)]
    fn refresh_fast_ends_valid(&mut self, valid: bool) {
        let exit = if self.elision_threshold() != 0 {
            0
        } else {
            self.fast_end
        };
        if SPLIT {
            // Masks rather than selects: Thumb-1 made each select a branch.
            let valid = usize::from(valid || self.epoch != NO_EPOCH).wrapping_neg();
            let zero = usize::from(self.epoch == 0).wrapping_neg();
            self.fast_end_epoch = self.fast_end & valid;
            self.fast_end_exit = exit & valid;
            self.fast_end_zero = self.fast_end & zero;
            self.fast_end_zero_exit = exit & zero;
        } else {
            self.fast_end_exit = exit;
        }
    }

    /// Sets [`fast_end`](Self::fast_end) (and the fast ends derived from it) from
    /// the state it depends on: whether each record updates the extents, and on
    /// [`STRICT_ALIGNMENT`] targets whether the write position is 4-aligned (only
    /// a payload, whose length is arbitrary, moves it off a multiple of 4 in a
    /// buffer that starts on one; every record after it takes the general path,
    /// with byte stores, until the buffer ends or the position is aligned again).
    #[inline]
    fn refresh_fast_end(&mut self) {
        let aligned = !STRICT_ALIGNMENT || self.cur.addr() & 3 == 0;
        self.fast_end = if self.extents_every_record || !aligned {
            0
        } else {
            self.limit_addr()
        };
        self.refresh_fast_end_zero();
    }

    /// The version this writer writes: its configuration's, or version 5 when
    /// only that one is compiled in (without feature `fdr-all-versions`), so
    /// that the code of the others is not linked.
    #[inline(always)]
    fn fdr_version(&self) -> Version {
        if cfg!(feature = "fdr-all-versions") {
            self.version
        } else {
            Version::V5
        }
    }

    /// The short-call threshold: its configuration's, or 0 without feature
    /// `short-call-elision`, so that the code that erases is not linked.
    #[inline(always)]
    fn elision_threshold(&self) -> u64 {
        if cfg!(feature = "short-call-elision") {
            self.threshold
        } else {
            0
        }
    }

    /// Whether short-call elision may change how a function record of low word
    /// `low` is written: a threshold is set and the record is not an entry (an
    /// exit may erase its entry; an exit or an EnterArg ends the run that may be
    /// erased).
    #[inline(always)]
    fn elision_applies(&self, low: u32) -> bool {
        low & 0b1110 != 0 && self.elision_threshold() != 0
    }

    /// Whether the buffer cannot take a function record of low word `low` in any
    /// form: no room for its 8 bytes (nor, then, for a NewCPUId or TSCWrap
    /// before it), and not a record that short-call elision could write by
    /// erasing its entry. The detached writer has no room.
    #[inline(always)]
    pub(crate) fn lacks_room_for_function(&self, low: u32) -> bool {
        self.cur.addr() + FUNC > self.limit_addr() && !self.elision_applies(low)
    }

    /// The address of `limit`: a fast end when a record needs only its store.
    #[inline(always)]
    fn limit_addr(&self) -> usize {
        self.base.addr() + self.limit
    }

    /// Bytes written so far: the offset of `cur` in the buffer.
    #[inline(always)]
    fn pos(&self) -> usize {
        self.cur.addr() - self.base.addr()
    }

    /// Moves the write position to `pos` (at most `len`).
    #[inline(always)]
    fn set_pos(&mut self, pos: usize) {
        self.cur = self.base.wrapping_add(pos);
    }

    /// The whole buffer.
    #[inline(always)]
    fn buf(&self) -> &[u8] {
        // SAFETY: `base` and `len` are those of the `&'b mut [u8]` given to `new`,
        // which this writer holds exclusively for `'b` (or a dangling pointer and
        // 0 for the detached writer, a valid empty slice).
        unsafe { core::slice::from_raw_parts(self.base, self.len) }
    }

    /// The whole buffer, to write.
    #[inline(always)]
    fn buf_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `buf`; `&mut self` makes this the only access.
        unsafe { core::slice::from_raw_parts_mut(self.base, self.len) }
    }

    /// The time of the last event (the base of the next delta), or `None` before
    /// the first.
    pub(crate) fn latest_timestamp(&self) -> Option<Timestamp> {
        let cpu = u16::try_from(self.latest_cpu).ok()?;
        Some(Timestamp {
            tsc: self.latest_tsc,
            cpu,
        })
    }

    /// Whether this is the [`detached`](Self::detached) writer: a real buffer is
    /// never empty, since it holds at least [`WriterConfig::min_buffer_len`] bytes.
    #[inline]
    pub(crate) fn is_detached(&self) -> bool {
        self.len == 0
    }

    /// The buffer so far: a complete FDR buffer once [`has_events`](Self::has_events).
    /// (In version 1 it lacks the optional EndOfBuffer that [`finish`](Self::finish)
    /// adds.) Its BufferExtents record always counts exactly the bytes after it.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// w.enter(FunctionId::new(1).unwrap(), Timestamp { tsc: 5, cpu: 0 }).unwrap();
    /// let b = w.as_bytes();
    /// let extents = u64::from_le_bytes(b[1..9].try_into().unwrap());
    /// assert_eq!(extents as usize, b.len() - 16);
    /// ```
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.buf().get(..self.pos()).unwrap_or(&[])
    }

    /// Bytes written so far, preamble included.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// assert_eq!(w.len(), 48);
    /// let f = FunctionId::new(1).unwrap();
    /// w.enter(f, Timestamp { tsc: 5, cpu: 0 }).unwrap(); // NewCPUId and the entry
    /// assert_eq!(w.len(), 48 + 16 + 8);
    /// w.exit(f, Timestamp { tsc: 9, cpu: 0 }).unwrap();
    /// assert_eq!(w.len(), 48 + 16 + 8 + 8);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.pos()
    }

    /// Whether nothing but the preamble was written. (A buffer is never empty in the
    /// byte sense: it always holds its preamble.)
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// assert!(w.is_empty() && w.len() > 0);
    /// w.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// assert!(!w.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        !self.has_events()
    }

    /// Whether anything was written after the preamble. A buffer that ends in its
    /// preamble is rejected by readers, so such a buffer should not be kept.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// assert!(!w.has_events());
    /// w.typed_event(Timestamp::default(), 1, b"boot").unwrap();
    /// assert!(w.has_events());
    /// ```
    #[inline]
    pub fn has_events(&self) -> bool {
        self.pos() > self.body_start
    }

    /// Bytes left for records (in version 1, without the room kept for EndOfBuffer).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionId, Version};
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// assert_eq!(w.remaining(), 256 - 48);
    /// w.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// assert_eq!(w.remaining(), 256 - 48 - 24);
    /// let v1 = WriterConfig::new(1).with_version(Version::V1);
    /// let mut buf = [0u8; 256];
    /// assert_eq!(BufferWriter::new(&mut buf, &v1, Walltime::default()).unwrap().remaining(), 256 - 32 - 16);
    /// ```
    #[inline]
    pub fn remaining(&self) -> usize {
        self.limit - self.pos()
    }

    /// The format version being written.
    ///
    /// ```
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::Version;
    /// let mut buf = [0u8; 256];
    /// let cfg = WriterConfig::new(1).with_version(Version::V3);
    /// let w = BufferWriter::new(&mut buf, &cfg, Walltime::default()).unwrap();
    /// assert_eq!(w.version(), Version::V3);
    /// ```
    pub fn version(&self) -> Version {
        self.fdr_version()
    }

    /// Ends the buffer and returns its bytes. Version 1 gets its EndOfBuffer record
    /// (room for it is always kept). A buffer without events gets a NewCPUId so it
    /// stays valid.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionId, Version};
    ///
    /// let v1 = WriterConfig::new(1).with_version(Version::V1);
    /// let mut buf = [0u8; 128];
    /// let mut w = BufferWriter::new(&mut buf, &v1, Walltime::default()).unwrap();
    /// w.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// let bytes = w.finish();
    /// let last = &bytes[bytes.len() - 16..];
    /// assert_eq!(decode_record(Version::V1, last), Ok((Record::EndOfBuffer, 16)));
    ///
    /// // Without events, a NewCPUId keeps the buffer valid.
    /// let mut buf = [0u8; 128];
    /// let w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// let bytes = w.finish();
    /// assert_eq!(decode_record(Version::V5, &bytes[48..]).unwrap().0, Record::NewCpuId { cpu: 0, tsc: 0 });
    /// ```
    pub fn finish(mut self) -> &'b [u8] {
        let pos = self.finish_in_place();
        // SAFETY: `base` and `len` are those of the `&'b mut [u8]` given to `new`
        // (or an empty slice), which `self`, consumed here, no longer uses.
        let buf: &'b [u8] = unsafe { core::slice::from_raw_parts(self.base, self.len) };
        // `pos <= len` always; `get` only spares a panic path.
        buf.get(..pos).unwrap_or(buf)
    }

    /// What [`finish`](Self::finish) writes, in place; returns the buffer's
    /// length.
    #[inline(always)]
    fn finish_in_place(&mut self) -> usize {
        if !self.has_events() {
            // Room is guaranteed by `min_buffer_len`.
            self.write_new_cpu(0, 0);
        }
        self.finish_with_events()
    }

    /// [`finish_with_events`](Self::finish_with_events) for a writer that
    /// [`restarts_on`](Self::restarts_on) its buffer's length: its buffer
    /// starts aligned on [`STRICT_ALIGNMENT`] targets and is at most
    /// [`MAX_RESTARTABLE`] bytes long, so the BufferExtents count goes in as
    /// one word, its record's tag and the count's three low bytes (before, a
    /// bounds test and four byte stores at an odd address on thumbv6m). The
    /// count's other bytes stay the zeros the preamble wrote, as in
    /// [`restart_with_function`](Self::restart_with_function).
    ///
    /// # Safety
    /// `restarts_on` holds for this writer's length.
    #[inline(always)]
    pub(crate) unsafe fn finish_restartable(&mut self) -> usize {
        if !self.fdr_version().has_extents() {
            return self.finish_with_events();
        }
        let pos = self.pos();
        // SAFETY: the writer's buffer has `len >= min_buffer_len` bytes (it
        // was started on it), four of which are written here, and `&mut self`
        // holds it exclusively; `restarts_on` (the caller's contract) makes
        // `base` 4-aligned on `STRICT_ALIGNMENT` targets and `pos` at most
        // `MAX_RESTARTABLE`.
        unsafe { store_extents_count(self.base, pos) };
        pos
    }

    /// [`finish`](Self::finish) for a recorder, in place, of a buffer that has
    /// events (the recorder publishes no other): ends the buffer and returns its
    /// length. The writer must not record again: the recorder
    /// [`detach`](Self::detach)es or replaces it.
    #[inline(always)]
    pub(crate) fn finish_with_events(&mut self) -> usize {
        if !self.fdr_version().has_extents() {
            self.put_meta(&EndOfBuffer);
        }
        self.sync_extents();
        self.pos()
    }

    /// Makes this writer [`detached`](Self::detached) (no buffer, every record
    /// refused) by setting only the fields that make it so, rather than storing
    /// a whole new writer: a buffer switch does it once per buffer.
    #[inline]
    pub(crate) fn detach(&mut self) {
        self.len = 0;
        self.limit = 0;
        self.cur = self.base;
        self.body_start = 0;
        self.undo_start = 0;
        self.extents_every_record = false;
        self.latest_cpu = NO_CPU;
        self.epoch = NO_EPOCH;
        self.fast_end = 0;
        self.fast_end_epoch = 0;
        self.fast_end_exit = 0;
        self.fast_end_zero = 0;
        self.fast_end_zero_exit = 0;
    }

    /// Stops updating the BufferExtents count with every function record, as
    /// [`start`](Self::start) with `deferred` does: for tests of writers made by
    /// [`new`](Self::new).
    #[cfg(test)]
    pub(crate) fn defer_extents(&mut self) {
        self.extents_every_record = false;
        self.refresh_fast_end();
    }

    /// Keeps the BufferExtents value equal to the bytes that follow it.
    #[inline(always)]
    pub(crate) fn sync_extents(&mut self) {
        if self.fdr_version().has_extents() {
            let n = (self.pos() - META) as u64;
            // The first record is the BufferExtents; only its count changes. On
            // a 32-bit target a buffer is shorter than 2^32 bytes, so the count's
            // high half stays the zeros the preamble wrote: only the low half is
            // stored (on thumbv6m four byte stores fewer at every finish).
            let field = if cfg!(target_pointer_width = "32") {
                BufferExtents::SIZE_FIELD.start..BufferExtents::SIZE_FIELD.start + 4
            } else {
                BufferExtents::SIZE_FIELD
            };
            let count = n.to_le_bytes();
            if let (Some(dst), Some(src)) = (
                self.buf_mut().get_mut(field.clone()),
                count.get(..field.len()),
            ) {
                dst.copy_from_slice(src);
            }
        }
    }

    #[inline(always)]
    fn preamble_for(&self, ts: Timestamp, max_delta: u64) -> Preamble {
        if u32::from(ts.cpu) != self.latest_cpu {
            Preamble::NewCpu
        } else if ts.tsc.wrapping_sub(self.latest_tsc) > max_delta {
            // Covers both a delta too large and a clock that went backwards (the
            // wrapping difference is then huge).
            Preamble::Wrap
        } else {
            Preamble::None
        }
    }

    /// Writes NewCPUId or TSCWrap; the caller has checked the room.
    fn write_preamble(&mut self, p: Preamble, ts: Timestamp) {
        match p {
            Preamble::None => return,
            Preamble::NewCpu => self.write_new_cpu(ts.cpu, ts.tsc),
            Preamble::Wrap => {
                self.put_meta(&TscWrap { tsc: ts.tsc });
                self.latest_tsc = ts.tsc;
                self.refresh_epoch();
            }
        }
        // Metadata cannot be erased, nor can anything before it.
        self.undo_start = self.pos();
    }

    fn write_new_cpu(&mut self, cpu: u16, tsc: u64) {
        self.put_meta(&NewCpuId { cpu, tsc });
        self.latest_cpu = u32::from(cpu);
        self.latest_tsc = tsc;
        self.refresh_epoch();
        self.undo_start = self.pos();
    }

    /// Stores one function record at the write position; the caller has checked room.
    #[inline(always)]
    fn put_function(&mut self, action: FunctionAction, id: FunctionId, tsc: u64) {
        let delta = tsc.wrapping_sub(self.latest_tsc) as u32;
        let word = FunctionRecord { action, id, delta }.to_u64();
        if self.pos() + FUNC <= self.len {
            // SAFETY: the 8 bytes at `cur` are inside the buffer (just tested),
            // which `&mut self` borrows exclusively.
            unsafe {
                self.cur
                    .cast::<[u8; FUNC]>()
                    .write_unaligned(word.to_le_bytes())
            };
            self.cur = self.cur.wrapping_add(FUNC);
            self.latest_tsc = tsc;
            self.refresh_epoch();
        }
    }

    /// Records a function entry.
    ///
    /// The first event of a buffer, and each event on another CPU, is preceded by a
    /// NewCPUId that sets the base TSC; the entry then carries the delta from it.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// let id = FunctionId::new(7).unwrap();
    /// w.enter(id, Timestamp { tsc: 1_000, cpu: 2 }).unwrap();
    /// w.enter(id, Timestamp { tsc: 1_250, cpu: 2 }).unwrap();
    /// let b = w.as_bytes();
    /// assert_eq!(decode_record(Version::V5, &b[48..]).unwrap().0, Record::NewCpuId { cpu: 2, tsc: 1_000 });
    /// let enter = |delta| Record::Function { action: FunctionAction::Enter, id, delta };
    /// assert_eq!(decode_record(Version::V5, &b[64..]).unwrap().0, enter(0));
    /// assert_eq!(decode_record(Version::V5, &b[72..]).unwrap().0, enter(250));
    /// ```
    #[inline]
    pub fn enter(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Full> {
        self.function(FunctionAction::Enter, id, ts)
    }

    /// Records a function exit (it may erase a short call, see the
    /// [module docs](self)).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// let id = FunctionId::new(3).unwrap();
    /// w.enter(id, Timestamp { tsc: 100, cpu: 0 }).unwrap();
    /// w.exit(id, Timestamp { tsc: 140, cpu: 0 }).unwrap();
    /// let b = w.as_bytes();
    /// assert_eq!(
    ///     decode_record(Version::V5, &b[b.len() - 8..]).unwrap().0,
    ///     Record::Function { action: FunctionAction::Exit, id, delta: 40 }
    /// );
    /// ```
    #[inline]
    pub fn exit(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Full> {
        self.function(FunctionAction::Exit, id, ts)
    }

    /// Records an exit through a tail call: the function left by jumping to another
    /// one, whose own exit follows later.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// let id = FunctionId::new(3).unwrap();
    /// w.enter(id, Timestamp { tsc: 100, cpu: 0 }).unwrap();
    /// w.tail_exit(id, Timestamp { tsc: 110, cpu: 0 }).unwrap();
    /// let b = w.as_bytes();
    /// assert_eq!(
    ///     decode_record(Version::V5, &b[b.len() - 8..]).unwrap().0,
    ///     Record::Function { action: FunctionAction::TailExit, id, delta: 10 }
    /// );
    /// ```
    #[inline]
    pub fn tail_exit(&mut self, id: FunctionId, ts: Timestamp) -> Result<(), Full> {
        self.function(FunctionAction::TailExit, id, ts)
    }

    /// Records a function record of any action. `EnterArg` without arguments is
    /// written as such (readers accept it); use
    /// [`enter_with_args`](Self::enter_with_args) to attach arguments.
    ///
    /// A delta that does not fit 32 bits, or a clock that went backwards, gets a
    /// TSCWrap record first.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// let id = FunctionId::new(3).unwrap();
    /// w.function(FunctionAction::Enter, id, Timestamp { tsc: 0, cpu: 0 }).unwrap();
    /// let late = 1u64 << 40;
    /// w.function(FunctionAction::Exit, id, Timestamp { tsc: late, cpu: 0 }).unwrap();
    /// let b = w.as_bytes();
    /// let n = b.len();
    /// assert_eq!(decode_record(Version::V5, &b[n - 24..]).unwrap().0, Record::TscWrap { tsc: late });
    /// assert_eq!(
    ///     decode_record(Version::V5, &b[n - 8..]).unwrap().0,
    ///     Record::Function { action: FunctionAction::Exit, id, delta: 0 }
    /// );
    /// ```
    #[inline(always)]
    pub fn function(
        &mut self,
        action: FunctionAction,
        id: FunctionId,
        ts: Timestamp,
    ) -> Result<(), Full> {
        self.function_word(FunctionRecord::low_word(action, id), ts)
    }

    /// [`function`](Self::function) with the action and id as the record's low
    /// word ([`FunctionRecord::low_word`]): one value instead of two on the record
    /// path, where registers are few (eight low ones on a Cortex-M0).
    ///
    /// On 32-bit targets it takes the split path: the time's high word compared
    /// with `epoch` (the last record's high word, on CPU 0) and the delta taken
    /// from the low words, a 32-bit subtraction whose borrow says the clock went
    /// backwards; only the low word of the time is stored. No 64-bit arithmetic,
    /// and the bytes are those of the 64-bit path: a record whose high word
    /// differs from the last one's (once per 2^32 ticks, and at a buffer's
    /// first record) takes the 64-bit path, out of line, which writes a TSCWrap
    /// when the gap does not fit 32 bits, as before.
    #[inline(always)]
    pub(crate) fn function_word(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        if cfg!(target_pointer_width = "32") {
            self.function_word_split(low, ts)
        } else {
            self.function_word_wide(low, ts)
        }
    }

    /// [`function_word`](Self::function_word) with the time's halves apart: the
    /// fast path of 32-bit targets (see there).
    #[inline(always)]
    fn function_word_split(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        self.split_store_or(
            low,
            ts,
            true,
            Ok(()),
            |w| w.function_word_across(low, ts),
            |w, fast_end| {
                // A fast end that is not 0 is the buffer's limit with nothing
                // else to do first (no new high word, no elision, which make it
                // 0): the record that finds its buffer full, the common way
                // here. Said here, without the call and frame of the slow path
                // that would find it out (about 40 Cortex-M4 cycles of the
                // recorder's switch).
                if fast_end != 0 {
                    return Err(Full);
                }
                w.function_split_slow(low, ts, fast_end)
            },
        )
    }

    /// Stores a function record only when that needs no call: what
    /// [`function_word`](Self::function_word) stores on its straight path, with
    /// the same bytes and state. Otherwise nothing was written, and it says
    /// whether the buffer [`lacks_room_for_function`](Self::lacks_room_for_function)
    /// ([`Tried::Full`]: the record needs the next buffer) or the record needs
    /// more than its store ([`Tried::Declined`]); record it with
    /// `function_word`. For callers that want no call between their own steps,
    /// such as a context's recorder, whose slot is claimed around the record.
    #[inline(always)]
    pub(crate) fn try_function_word(&mut self, low: u32, ts: Timestamp) -> Tried {
        if cfg!(target_pointer_width = "32") {
            self.try_split_store(low, ts)
        } else {
            let (action, id) = FunctionRecord::from_low_word(low);
            if self.function_without_calls(action, id, ts) {
                return Tried::Stored;
            }
            // Full as the split path says it: a reading after the last
            // record's on its CPU, less than 2^32 ticks on (`time_of_full`
            // gives it back from its low word).
            let delta = ts.tsc.wrapping_sub(self.latest_tsc);
            let on_time = delta >> 32 == 0 && u32::from(ts.cpu) == self.latest_cpu;
            if on_time && self.lacks_room_for_function(low) {
                Tried::Full
            } else {
                Tried::Declined
            }
        }
    }

    /// The time of a record that [`try_function_word`](Self::try_function_word)
    /// found [`Tried::Full`], from its low word: the record path then passes
    /// the switch one word, not the time's two and its CPU (on Thumb, two more
    /// registers held through the record path: 7 Cortex-M4 cycles a record).
    /// `Full` says that the reading was on the last record's CPU, and less than
    /// 2^32 ticks after its time: on 32-bit targets on `epoch`, the last
    /// record's high word, on CPU 0.
    #[inline(always)]
    pub(crate) fn time_of_full(&self, raw: u32) -> Timestamp {
        if cfg!(target_pointer_width = "32") {
            debug_assert!(self.epoch != NO_EPOCH && self.latest_cpu == 0);
            Timestamp {
                tsc: (u64::from(self.epoch) << 32) | u64::from(raw),
                cpu: 0,
            }
        } else {
            let delta = raw.wrapping_sub(self.latest_tsc as u32);
            Timestamp {
                tsc: self.latest_tsc.wrapping_add(u64::from(delta)),
                cpu: self.latest_cpu as u16,
            }
        }
    }

    /// [`try_function_word`](Self::try_function_word) on the split path, with
    /// no high-word-0 shortcut (its callers read extended clocks). A fast end
    /// that is not 0 is the buffer's limit with nothing else to do first (as in
    /// `function_word_split`): past it, the buffer is full.
    #[inline(always)]
    fn try_split_store(&mut self, low: u32, ts: Timestamp) -> Tried {
        self.split_store_or(
            low,
            ts,
            false,
            Tried::Stored,
            |_| Tried::Declined,
            |_, fast_end| {
                if fast_end != 0 {
                    Tried::Full
                } else {
                    Tried::Declined
                }
            },
        )
    }

    /// The split path: stores the record and gives `stored`, or gives what
    /// `across` (a record on another high word, another CPU, or backwards in
    /// time) or `slow` (the record's end past `fast_end`, the fast end it
    /// compared with) give, having written nothing.
    ///
    /// `zero_shortcut`: a high word of 0 takes `fast_end_zero*` and no test of
    /// `epoch`. It pays where the high word is known to be 0 when compiled (a
    /// 32-bit counter read directly: the test and the other case fold away);
    /// where it is not known (an extended clock), testing it is a branch and
    /// two more registers on the record path, so those callers pass `false`
    /// and compare every high word with `epoch`.
    #[inline(always)]
    fn split_store_or<R>(
        &mut self,
        low: u32,
        ts: Timestamp,
        zero_shortcut: bool,
        stored: R,
        across: impl FnOnce(&mut Self) -> R,
        slow: impl FnOnce(&mut Self, usize) -> R,
    ) -> R {
        let high = (ts.tsc >> 32) as u32;
        let raw = ts.tsc as u32;
        let (delta, backwards) = raw.overflowing_sub(self.latest_tsc as u32);
        // The fast ends for a reading on the last record's high word: a high word
        // of 0 compares with `fast_end_zero`, which is 0 unless `epoch` is 0, so
        // that `epoch` is not loaded (a 32-bit counter's high word is always 0);
        // another compares with `epoch` (NO_EPOCH after a buffer's start or on
        // another CPU, which no high word matches here; `fast_end_epoch` is 0
        // then, so a high word of NO_EPOCH fails the room test).
        let (end, end_exit) = if zero_shortcut && high == 0 {
            (self.fast_end_zero, self.fast_end_zero_exit)
        } else {
            if high != self.epoch {
                return across(self);
            }
            (self.fast_end_epoch, self.fast_end_exit)
        };
        // On CPU 0, and a clock that did not go backwards: the delta is exact and
        // fits.
        if ts.cpu != 0 || backwards {
            return across(self);
        }
        // Only an entry (action bits 0) is a plain store with a short-call
        // threshold; every other action compares with the exit's fast end, which
        // is 0 then. Without elision compiled in, an exit's fast ends are the
        // entry's (`refresh_fast_end_zero`; `split_and_wide_paths_write_the_same_bytes`
        // checks it after every record with a threshold of 0): no choice to make.
        let fast_end = if cfg!(feature = "short-call-elision") && low & 0b1110 != 0 {
            end_exit
        } else {
            end
        };
        let word = (u64::from(delta) << 32) | u64::from(low);
        let cur = self.cur;
        if cur.addr() + FUNC > fast_end {
            return slow(self, fast_end);
        }
        // SAFETY: as in `function_word_wide`: `cur + FUNC <= fast_end`, a non-zero
        // fast end is `base + limit`, `limit <= len`, and on `STRICT_ALIGNMENT`
        // targets a non-zero fast end means `cur` is 4-aligned.
        unsafe { store_fast(cur, word) };
        self.cur = cur.wrapping_add(FUNC);
        // The high word is `high` already: only the low word changes, one store.
        if cfg!(target_endian = "little") {
            self.set_latest_low(raw);
        } else {
            self.latest_tsc = (u64::from(high) << 32) | u64::from(raw);
        }
        stored
    }

    /// The split path's record that is not its store alone (`fast_end`, the
    /// fast end it compared with, was too low): a record on a high word other
    /// than `epoch` (the high-word-0 fast end is 0 then), an exit with a
    /// short-call threshold, a full buffer, or a record the general path writes.
    /// Out of line, so that the store is the straight path for exits too.
    #[cold]
    #[inline(never)]
    fn function_split_slow(
        &mut self,
        low: u32,
        ts: Timestamp,
        fast_end: usize,
    ) -> Result<(), Full> {
        let high = (ts.tsc >> 32) as u32;
        if high != self.epoch || high == NO_EPOCH {
            return self.function_word_across(low, ts);
        }
        if self.elision_applies(low) {
            return self.function_elidable(low, ts);
        }
        // A full buffer (or the detached writer) needs no general path.
        if fast_end == self.limit_addr() {
            return Err(Full);
        }
        let delta = (ts.tsc as u32).wrapping_sub(self.latest_tsc as u32);
        self.function_general((u64::from(delta) << 32) | u64::from(low), ts.tsc)
    }

    /// The split path's way out: a record on another high word, another CPU or
    /// backwards in time goes through the 64-bit path, which leaves `epoch` up
    /// to date for the next.
    #[cold]
    #[inline(never)]
    pub(crate) fn function_word_across(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let result = self.function_word_wide(low, ts);
        self.refresh_epoch();
        result
    }

    /// [`function_word`](Self::function_word) on a 64-bit time: the fast path of
    /// 64-bit targets.
    #[inline(always)]
    fn function_word_wide(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let delta = ts.tsc.wrapping_sub(self.latest_tsc);
        // One test for the common case, same CPU and a delta that fits 32 bits: a
        // clock that went backwards makes the wrapping delta huge, so it fails too.
        let other_cpu = u32::from(ts.cpu) ^ self.latest_cpu;
        // The slow paths take `low` as it is (decoding it here would keep the
        // action and the id alive beside it).
        if (delta >> 32) | u64::from(other_cpu) != 0 {
            return self.function_after_metadata(low, ts);
        }
        // With a short-call threshold an exit may erase its entry, and an exit or
        // an EnterArg ends the run that may be erased: only an entry (action bits
        // 0) is a plain store.
        if self.elision_applies(low) {
            return self.function_elidable(low, ts);
        }
        let word = (u64::from(delta as u32) << 32) | u64::from(low);
        let cur = self.cur;
        if cur.addr() + FUNC > self.fast_end {
            // A full buffer (or the detached writer) needs no general path.
            if self.fast_end == self.limit_addr() {
                return Err(Full);
            }
            return self.function_general(word, ts.tsc);
        }
        // SAFETY: `cur + FUNC <= fast_end`, and a non-zero `fast_end` is `base +
        // limit`, with `limit <= len` (the struct's invariants), so the 8 bytes at
        // `cur` are inside the buffer, which `&mut self` borrows exclusively; the
        // sum cannot overflow (`cur <= base + len`, an allocation's end). On
        // `STRICT_ALIGNMENT` targets a non-zero `fast_end` means `cur` is a
        // multiple of 4.
        unsafe { store_fast(cur, word) };
        self.cur = cur.wrapping_add(FUNC);
        self.latest_tsc = ts.tsc;
        Ok(())
    }

    /// A function record's word that [`function`](Self::function) cannot store
    /// alone: the extents updated with each record, an unaligned position on a
    /// [`STRICT_ALIGNMENT`] target, or a full buffer.
    #[cold]
    #[inline(never)]
    fn function_general(&mut self, word: u64, tsc: u64) -> Result<(), Full> {
        self.put_word(word, tsc)
    }

    /// [`function`](Self::function) for an exit, tail exit or EnterArg with a
    /// short-call threshold: an exit may erase its entry, and a kept exit or
    /// EnterArg ends the erasable run.
    #[inline(never)]
    fn function_elidable(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let (action, id) = FunctionRecord::from_low_word(low);
        let is_exit = matches!(action, FunctionAction::Exit | FunctionAction::TailExit);
        if is_exit && self.try_elide(id, ts.tsc) {
            self.sync_extents();
            return Ok(());
        }
        let record = FunctionRecord {
            action,
            id,
            delta: ts.tsc.wrapping_sub(self.latest_tsc) as u32,
        };
        self.put_word(record.to_u64(), ts.tsc)?;
        // A kept exit ends every undoable run before it; an EnterArg is never erased.
        if matches!(action, FunctionAction::Exit | FunctionAction::EnterArg) {
            self.undo_start = self.pos();
        }
        Ok(())
    }

    /// [`function`](Self::function) when it needs nothing out of line: no
    /// NewCPUId or TSCWrap due and room in the buffer; `false` (nothing written)
    /// otherwise. Everything it does is inlined, the short-call elision included,
    /// so it calls nothing: a sled trampoline's fast path relies on that (it runs
    /// with the vector registers unsaved). Writes the same bytes as `function`
    /// (`function_without_calls_writes_what_function_writes` below).
    #[inline(always)]
    pub(crate) fn function_without_calls(
        &mut self,
        action: FunctionAction,
        id: FunctionId,
        ts: Timestamp,
    ) -> bool {
        let delta = ts.tsc.wrapping_sub(self.latest_tsc);
        let other_cpu = u32::from(ts.cpu) ^ self.latest_cpu;
        if (delta >> 32) | u64::from(other_cpu) != 0 {
            return false;
        }
        let is_exit = matches!(action, FunctionAction::Exit | FunctionAction::TailExit);
        if self.elision_threshold() != 0 && is_exit && self.elide(id, ts.tsc) {
            self.sync_extents();
            return true;
        }
        let record = FunctionRecord {
            action,
            id,
            delta: delta as u32,
        };
        if self.put_word(record.to_u64(), ts.tsc).is_err() {
            return false;
        }
        if matches!(action, FunctionAction::Exit | FunctionAction::EnterArg) {
            self.undo_start = self.pos();
        }
        true
    }

    /// [`function`](Self::function) when a NewCPUId or TSCWrap must come first: the
    /// first record of a buffer, a CPU change, a long gap. Out of line so that the
    /// common path stays short.
    #[cold]
    #[inline(never)]
    fn function_after_metadata(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let (action, id) = FunctionRecord::from_low_word(low);
        if self.pos() + META + FUNC > self.limit {
            return Err(Full);
        }
        let p = self.preamble_for(ts, u64::from(u32::MAX));
        self.write_preamble(p, ts);
        self.put_function(action, id, ts.tsc);
        // Metadata was just written, so nothing before this record is erasable; a
        // kept exit or an EnterArg must not become erasable either.
        if matches!(action, FunctionAction::Exit | FunctionAction::EnterArg) {
            self.undo_start = self.pos();
        }
        self.sync_extents();
        Ok(())
    }

    /// Stores a function record's word at the write position, moves the base TSC to
    /// `tsc` and updates the BufferExtents value; [`Full`] (nothing written) when
    /// the record does not fit.
    ///
    /// The hot path of every record, so it writes through a raw pointer after its
    /// one room test: the slice bounds checks this replaces (the record's and the
    /// extents') cost 8 to 9 of the about 40 instructions of a record (callgrind,
    /// `fdr_pair` in the instructions bench: 79 instructions per pair before, 62
    /// after).
    #[inline(always)]
    fn put_word(&mut self, word: u64, tsc: u64) -> Result<(), Full> {
        let pos = self.pos();
        let end = pos + FUNC;
        if end > self.limit {
            return Err(Full);
        }
        debug_assert!(self.limit <= self.len && pos >= self.body_start);
        let base = self.base;
        if STRICT_ALIGNMENT && (base as usize | pos) & 3 == 0 {
            // SAFETY: as below, and `base` and `pos` are multiples of 4 (just tested).
            unsafe { store_aligned(base, pos, word, self.extents_every_record) };
            self.set_pos(end);
            self.latest_tsc = tsc;
            self.refresh_epoch();
            return Ok(());
        }
        // SAFETY: `end <= limit <= len` (the struct's invariants), so the 8
        // bytes at `pos` are inside the buffer, which `&mut self` borrows exclusively.
        // `pos + FUNC` cannot overflow: `pos <= limit <= len <= isize::MAX`.
        unsafe {
            base.add(pos)
                .cast::<[u8; FUNC]>()
                .write_unaligned(word.to_le_bytes())
        };
        if self.extents_every_record {
            let extents = (end - META) as u64;
            // SAFETY: with extents the preamble is at least 3 metadata records, so
            // `9 <= body_start <= pos < end <= len`: bytes 1..9 (the extents'
            // value, as in `sync_extents`) are inside the buffer.
            unsafe {
                base.add(1)
                    .cast::<[u8; 8]>()
                    .write_unaligned(extents.to_le_bytes())
            };
        }
        self.set_pos(end);
        self.latest_tsc = tsc;
        self.refresh_epoch();
        Ok(())
    }

    /// Reads the function record at `at` (which the caller knows holds one).
    #[inline(always)]
    fn function_at(&self, at: usize) -> Option<(FunctionAction, u32, u32)> {
        let bytes = self.buf().get(at..at + FUNC)?;
        let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let delta = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let action = FunctionAction::from_bits(((word >> 1) & 7) as u8)?;
        Some((action, word >> 4, delta))
    }

    /// Short-call elision: erases the entry that `id`'s exit at `tsc` closes when the
    /// call was shorter than the threshold, and returns whether the exit was absorbed.
    ///
    /// Only the record right before the write position can be that entry, because a
    /// shorter nested call was erased when it returned and any longer one was kept
    /// (and a kept exit ends the undoable run). A tail exit is treated like an exit, so
    /// a short frame that tail-calls another vanishes at once; compiler-rt's extra
    /// pass over earlier `Enter TailExit` pairs can never erase anything under this
    /// rule, so there is none.
    fn try_elide(&mut self, id: FunctionId, tsc: u64) -> bool {
        self.elide(id, tsc)
    }

    /// [`try_elide`](Self::try_elide), inlined where it is called.
    #[inline(always)]
    fn elide(&mut self, id: FunctionId, tsc: u64) -> bool {
        if self.pos() < self.undo_start + FUNC {
            return false;
        }
        let Some((action, fid, delta)) = self.function_at(self.pos() - FUNC) else {
            return false;
        };
        // `latest_tsc` is the entry's own time: it is the last record written.
        if action != FunctionAction::Enter
            || fid != id.get()
            || tsc.wrapping_sub(self.latest_tsc) >= self.elision_threshold()
        {
            return false;
        }
        self.set_pos(self.pos() - FUNC);
        self.latest_tsc = self.latest_tsc.wrapping_sub(u64::from(delta));
        self.refresh_epoch();
        true
    }

    /// Records a function entry with its arguments: an EnterArg record followed by one
    /// CallArgument per argument. All of it is written, or nothing.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, RecordError, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// let id = FunctionId::new(3).unwrap();
    /// w.enter_with_args(id, Timestamp::default(), &[10, 20]).unwrap();
    /// let b = w.as_bytes();
    /// let n = b.len();
    /// assert_eq!(
    ///     decode_record(Version::V5, &b[n - 40..]).unwrap().0,
    ///     Record::Function { action: FunctionAction::EnterArg, id, delta: 0 }
    /// );
    /// assert_eq!(decode_record(Version::V5, &b[n - 32..]).unwrap().0, Record::CallArgument { value: 10 });
    /// assert_eq!(decode_record(Version::V5, &b[n - 16..]).unwrap().0, Record::CallArgument { value: 20 });
    /// // More arguments than a whole buffer holds.
    /// assert!(matches!(
    ///     w.enter_with_args(id, Timestamp::default(), &[0; 64]),
    ///     Err(RecordError::TooLarge { .. })
    /// ));
    /// ```
    pub fn enter_with_args(
        &mut self,
        id: FunctionId,
        ts: Timestamp,
        args: &[u64],
    ) -> Result<(), RecordError> {
        let body = args.len().saturating_mul(META).saturating_add(META + FUNC);
        if body > self.limit - self.body_start {
            return Err(RecordError::TooLarge { needed: body });
        }
        if self.pos() + body > self.limit {
            return Err(RecordError::Full);
        }
        let p = self.preamble_for(ts, u64::from(u32::MAX));
        self.write_preamble(p, ts);
        self.put_function(FunctionAction::EnterArg, id, ts.tsc);
        let at = self.cur;
        for (i, &value) in args.iter().enumerate() {
            // SAFETY: `pos + body <= limit <= len` (tested above, before the
            // NewCPUId or TSCWrap and the EnterArg, which `body` counts), so
            // every argument's 16 bytes are inside the buffer, which `&mut self`
            // borrows exclusively.
            unsafe {
                store_meta(
                    at.wrapping_add(i * META),
                    CallArgument { value }.to_le_u128(),
                )
            };
        }
        self.cur = at.wrapping_add(args.len() * META);
        self.undo_start = self.pos();
        self.sync_extents();
        Ok(())
    }

    /// Checks an event payload and the room for marker, payload and a possible
    /// NewCPUId/TSCWrap.
    fn check_event(&self, len: usize) -> Result<(), RecordError> {
        if len == 0 {
            return Err(RecordError::EmptyPayload);
        }
        let body = len.saturating_add(2 * META);
        if body > self.limit - self.body_start || i32::try_from(len).is_err() {
            return Err(RecordError::TooLarge { needed: body });
        }
        if self.pos() + body > self.limit {
            return Err(RecordError::Full);
        }
        Ok(())
    }

    /// Records a custom event with a payload (1 byte at least).
    ///
    /// Version 5 writes a TSC delta; versions 1 to 4 write the absolute TSC (and, in
    /// version 4, the CPU).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::{CustomEventTime, Record};
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::Version;
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// w.custom_event(Timestamp { tsc: 70, cpu: 0 }, b"reset").unwrap();
    /// let b = w.as_bytes();
    /// let (record, len) = decode_record(Version::V5, &b[64..]).unwrap();
    /// assert_eq!(record, Record::CustomEvent { time: CustomEventTime::Delta(0), payload: b"reset" });
    /// assert_eq!(64 + len, b.len());
    ///
    /// let v4 = WriterConfig::new(1).with_version(Version::V4);
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &v4, Walltime::default()).unwrap();
    /// w.custom_event(Timestamp { tsc: 70, cpu: 1 }, b"reset").unwrap();
    /// let (record, _) = decode_record(Version::V4, &w.as_bytes()[64..]).unwrap();
    /// let time = CustomEventTime::Absolute { tsc: 70, cpu: 1 };
    /// assert_eq!(record, Record::CustomEvent { time, payload: b"reset" });
    /// ```
    pub fn custom_event(&mut self, ts: Timestamp, payload: &[u8]) -> Result<(), RecordError> {
        self.custom_event_with(ts, payload.len(), |out| copy_bytes(out, payload))
    }

    /// [`custom_event`](Self::custom_event) with a payload of `len` bytes that
    /// `fill` writes in place (given exactly `len` bytes; called only when the
    /// event is written): a loss marker's text needs no buffer of its own.
    #[inline(always)]
    pub(crate) fn custom_event_with(
        &mut self,
        ts: Timestamp,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), RecordError> {
        self.check_event(len)?;
        let time = if self.fdr_version().events_use_delta() {
            let p = self.preamble_for(ts, i32::MAX as u64);
            self.write_preamble(p, ts);
            let delta = ts.tsc.wrapping_sub(self.latest_tsc) as i32;
            self.latest_tsc = ts.tsc;
            self.refresh_epoch();
            CustomEventTime::Delta(delta)
        } else {
            // The absolute form does not move the base TSC, so only a CPU change (or
            // the first event) needs a record first.
            if u32::from(ts.cpu) != self.latest_cpu {
                self.write_new_cpu(ts.cpu, ts.tsc);
            }
            CustomEventTime::Absolute {
                tsc: ts.tsc,
                cpu: ts.cpu,
            }
        };
        // `check_event` has made sure the size fits an i32.
        let marker = CustomEventMarker {
            size: len as i32,
            time,
        };
        let version = self.fdr_version();
        let pos = self.pos();
        let pos = put_marker(self.buf_mut(), pos, |out| marker.emit(version, out));
        self.set_pos(pos);
        self.put_payload_with(len, fill);
        Ok(())
    }

    /// Records a typed event: an event type and a payload (1 byte at least). Typed
    /// events carry a TSC delta in every version.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::Version;
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// w.typed_event(Timestamp { tsc: 10, cpu: 0 }, 1, b"a").unwrap();
    /// w.typed_event(Timestamp { tsc: 35, cpu: 0 }, 2, b"bc").unwrap();
    /// let b = w.as_bytes();
    /// let (record, _) = decode_record(Version::V5, &b[b.len() - 18..]).unwrap();
    /// assert_eq!(record, Record::TypedEvent { delta: 25, event_type: 2, payload: b"bc" });
    /// ```
    pub fn typed_event(
        &mut self,
        ts: Timestamp,
        event_type: u16,
        payload: &[u8],
    ) -> Result<(), RecordError> {
        self.typed_event_with(ts, event_type, payload.len(), |out| {
            copy_bytes(out, payload)
        })
    }

    /// [`typed_event`](Self::typed_event) with a payload of `len` bytes that
    /// `fill` writes in place, as in [`custom_event_with`](Self::custom_event_with).
    #[inline(always)]
    pub(crate) fn typed_event_with(
        &mut self,
        ts: Timestamp,
        event_type: u16,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), RecordError> {
        self.check_event(len)?;
        let p = self.preamble_for(ts, i32::MAX as u64);
        self.write_preamble(p, ts);
        let delta = ts.tsc.wrapping_sub(self.latest_tsc) as i32;
        let marker = TypedEventMarker {
            // `check_event` has made sure the size fits an i32.
            size: len as i32,
            delta,
            event_type,
        };
        self.put_meta(&marker);
        self.latest_tsc = ts.tsc;
        self.refresh_epoch();
        self.put_payload_with(len, fill);
        Ok(())
    }

    /// Writes a metadata record at the write position and moves past it; the
    /// caller has checked the room (without it nothing is written).
    #[inline(always)]
    fn put_meta(&mut self, record: &impl MetadataRecord) {
        if self.pos() + META > self.len {
            return;
        }
        // SAFETY: the 16 bytes at `cur` are inside the buffer (just tested), which
        // `&mut self` borrows exclusively.
        unsafe { store_meta(self.cur, record.to_le_u128()) };
        self.cur = self.cur.wrapping_add(META);
    }

    /// Writes an event's payload of `len` bytes with `fill` at the write
    /// position and moves past it; the caller has checked the room.
    #[inline(always)]
    fn put_payload_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) {
        let pos = self.pos();
        let end = pos + len;
        if let Some(dst) = self.buf_mut().get_mut(pos..end) {
            fill(dst);
            self.set_pos(end);
        }
        self.undo_start = self.pos();
        self.sync_extents();
        self.refresh_fast_end();
    }
}

/// Stores `b` in `d`; on bare metal (`target_os = "none"`) as a volatile store,
/// which keeps LLVM from making a loop of them a `memcpy` call: that would link
/// compiler-builtins' `memcpy` (594 B on thumbv6m) into firmware that has no
/// other use for it, for the copies of a payload or of a loss marker's text,
/// which are short and rare. Elsewhere the C library's `memcpy` is there anyway.
#[inline(always)]
pub(crate) fn put_byte(d: &mut u8, b: u8) {
    if cfg!(target_os = "none") {
        put_byte_volatile(d, b);
    } else {
        *d = b;
    }
}

/// [`put_byte`]'s bare-metal store.
#[inline(always)]
fn put_byte_volatile(d: &mut u8, b: u8) {
    // SAFETY: `d` is a valid, aligned, exclusive reference to one byte.
    unsafe { core::ptr::write_volatile(d, b) };
}

/// Copies `src` into the first bytes of `dst` with [`put_byte`] (no `memcpy`
/// call on bare metal).
#[inline(always)]
pub(crate) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    for (d, &b) in dst.iter_mut().zip(src) {
        put_byte(d, b);
    }
}

/// `micros mod 10^6`, out of line: inlined, the compiler computes it whether or
/// not it is needed (a select instead of a branch).
#[cold]
#[inline(never)]
fn micros_in_second(micros: u32) -> u32 {
    // Not `%`: a library division on thumbv6m, linked for this alone.
    crate::divide::div_rem(u64::from(micros), crate::divide::MILLION).1 as u32
}

/// Writes the metadata record that `emit` writes at `pos` and returns the position
/// after it (a custom event's marker, whose layout depends on the version). The
/// caller has checked the room; without it nothing is written.
#[inline(always)]
fn put_marker(buf: &mut [u8], pos: usize, emit: impl FnOnce(&mut [u8; META])) -> usize {
    match buf.get_mut(pos..).and_then(|rest| rest.first_chunk_mut()) {
        Some(out) => {
            emit(out);
            pos + META
        }
        None => pos,
    }
}

/// Where a [`BufferWriter`]'s fields sit in this build, for a record path written
/// in assembly (the x86_64 XRay sled trampolines of `flightrec-sleds` record the
/// steady-state function record without calling Rust, as
/// `function_without_calls` and the 64-bit path of `function_word` do: the
/// room test against a fast end, the store through `cur`). Computed with
/// `offset_of!`, so they follow any change of the struct's layout; `_types`
/// breaks the build when a field the assembly reads changes its type. Not a
/// stable interface: only for code built together with this crate.
///
/// ```
/// use flightrec_core::fdr::writer::layout;
/// assert_ne!(layout::CUR, layout::FAST_END);
/// ```
#[doc(hidden)]
pub mod layout {
    use super::BufferWriter;
    use core::mem::offset_of;

    /// The buffer's first byte (`*mut u8`).
    pub const BASE: usize = offset_of!(BufferWriter<'static>, base);
    /// The write position, `base + pos` (`*mut u8`).
    pub const CUR: usize = offset_of!(BufferWriter<'static>, cur);
    /// The address a function record's end is compared with: `base + limit`
    /// when the record needs nothing but its store, else 0 (`usize`).
    pub const FAST_END: usize = offset_of!(BufferWriter<'static>, fast_end);
    /// The same for an exit or tail exit: 0 with a short-call threshold (`usize`;
    /// on 64-bit targets; `core/tests/writer_layout.rs` checks it).
    pub const FAST_END_EXIT: usize = offset_of!(BufferWriter<'static>, fast_end_exit);
    /// The CPU of the latest record (`u32`).
    pub const LATEST_CPU: usize = offset_of!(BufferWriter<'static>, latest_cpu);
    /// The TSC of the latest record (`u64`).
    pub const LATEST_TSC: usize = offset_of!(BufferWriter<'static>, latest_tsc);
    /// The short-call elision threshold in ticks (`u64`).
    pub const THRESHOLD: usize = offset_of!(BufferWriter<'static>, threshold);
    /// Start of the erasable run of function records, from `base` (`usize`).
    pub const UNDO_START: usize = offset_of!(BufferWriter<'static>, undo_start);
    /// The format version ([`Version`](super::Version)).
    pub const VERSION: usize = offset_of!(BufferWriter<'static>, version);

    /// The types the offsets above are documented with.
    #[allow(dead_code)]
    fn _types(w: &BufferWriter<'_>) {
        let _: (&*mut u8, &*mut u8, &usize, &usize) =
            (&w.base, &w.cur, &w.fast_end, &w.fast_end_exit);
        let _: (&u32, &u64, &u64, &usize, &super::Version) = (
            &w.latest_cpu,
            &w.latest_tsc,
            &w.threshold,
            &w.undo_start,
            &w.version,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// `function_without_calls` either writes exactly what `function` writes
        /// or declines and leaves the writer as it was, so the sleds' fast path
        /// followed by the full path on a decline writes the same trace as the
        /// full path alone. Steps: an action, an id, a time step (sometimes past
        /// 32 bits, sometimes backwards) and the CPU.
        #[test]
        fn function_without_calls_writes_what_function_writes(
            threshold in proptest::prop_oneof![proptest::strategy::Just(0u64), 1u64..400],
            extents in proptest::bool::ANY,
            steps in proptest::collection::vec(
                (0u8..4, 1u32..6, proptest::prop_oneof![
                    8 => 0u64..300,
                    1 => (1u64 << 32)..(1u64 << 33),
                    1 => proptest::strategy::Just(u64::MAX - 5),
                ], proptest::prop_oneof![9 => proptest::strategy::Just(0u16), 1 => 0u16..3]),
                1..120,
            ),
        ) {
            let cfg = WriterConfig::new(1).with_threshold_ticks(threshold);
            let (mut a, mut b) = ([0u8; 512], [0u8; 512]);
            let mut full = BufferWriter::new(&mut a, &cfg, Walltime::default()).unwrap();
            let mut fast = BufferWriter::new(&mut b, &cfg, Walltime::default()).unwrap();
            if !extents {
                full.defer_extents();
                fast.defer_extents();
            }
            let mut tsc = 0u64;
            for (action, id, step, cpu) in steps {
                let action = [
                    FunctionAction::Enter,
                    FunctionAction::Exit,
                    FunctionAction::TailExit,
                    FunctionAction::EnterArg,
                ][usize::from(action)];
                tsc = tsc.wrapping_add(step);
                let t = Timestamp { tsc, cpu };
                let id = FunctionId::new(id).unwrap();
                let expected = full.function(action, id, t);
                let before = (fast.as_bytes().to_vec(), fast.pos(), fast.latest_tsc, fast.undo_start);
                let got = if fast.function_without_calls(action, id, t) {
                    Ok(())
                } else {
                    let after = (fast.as_bytes().to_vec(), fast.pos(), fast.latest_tsc, fast.undo_start);
                    proptest::prop_assert_eq!(&before, &after, "a decline changed the writer");
                    fast.function(action, id, t)
                };
                proptest::prop_assert_eq!(got, expected);
                proptest::prop_assert_eq!(fast.as_bytes(), full.as_bytes());
            }
        }
    }

    /// The word stores of strict-alignment targets write the same bytes as the
    /// unaligned stores (run here on the host, where `put_word` uses the latter).
    #[test]
    fn aligned_stores_match_unaligned_ones() {
        #[repr(align(8))]
        struct Aligned([u8; 64]);
        let word = 0x0123_4567_89ab_cdef_u64;
        for extents in [false, true] {
            for pos in [16, 24, 48, 56] {
                let mut a = Aligned([0x55; 64]);
                // The preamble leaves the extents' high bytes zero.
                a.0[5..9].fill(0);
                let mut expected = a.0;
                expected[pos..pos + 8].copy_from_slice(&word.to_le_bytes());
                if extents {
                    expected[1..9].copy_from_slice(&((pos + 8 - 16) as u64).to_le_bytes());
                }
                // SAFETY: `pos + 8 <= 64`, bytes 1..9 are inside the array, which is
                // 8-aligned and borrowed exclusively here; `pos` is a multiple of 4.
                unsafe { store_aligned(a.0.as_mut_ptr(), pos, word, extents) };
                assert_eq!(a.0, expected, "pos {pos}, extents {extents}");
            }
        }
    }

    const W0: Walltime = Walltime {
        seconds: 0,
        micros: 0,
    };

    fn ts(tsc: u64) -> Timestamp {
        Timestamp { tsc, cpu: 0 }
    }

    fn fid(n: u32) -> FunctionId {
        FunctionId::new(n).unwrap()
    }

    /// The fast path of a function record (extents deferred) and the general one
    /// (extents with every record) write the same bytes, whatever comes between the
    /// records: payloads of every length mod 4 (which move the position off a
    /// word), CPU changes, long gaps, threshold elision, a full buffer.
    #[test]
    fn fast_and_general_paths_write_the_same_bytes() {
        #[repr(align(8))]
        struct Aligned([u8; 512]);
        for threshold in [0, 5] {
            for payload_len in 1..=8 {
                let cfg = WriterConfig::new(1)
                    .with_pid(2)
                    .with_threshold_ticks(threshold);
                let mut fast_buf = Aligned([0; 512]);
                let mut general_buf = Aligned([0; 512]);
                let mut fast = BufferWriter::new(&mut fast_buf.0, &cfg, W0).unwrap();
                fast.defer_extents();
                let mut general = BufferWriter::new(&mut general_buf.0, &cfg, W0).unwrap();
                let payload = [0x5a; 8];
                let mut tsc = 100u64;
                for i in 0..64u32 {
                    let t = Timestamp {
                        tsc,
                        cpu: if i % 23 == 22 { 1 } else { 0 },
                    };
                    let action = FunctionAction::from_bits((i % 4) as u8).unwrap();
                    let a = fast.function(action, fid(i % 3 + 1), t);
                    let b = general.function(action, fid(i % 3 + 1), t);
                    assert_eq!(a, b, "record {i}");
                    if i % 9 == 4 {
                        let a = fast.custom_event(t, &payload[..payload_len]);
                        let b = general.custom_event(t, &payload[..payload_len]);
                        assert_eq!(a, b);
                    }
                    tsc += if i % 17 == 16 {
                        1 << 33
                    } else {
                        u64::from(i % 7)
                    };
                }
                fast.sync_extents();
                assert_eq!(
                    fast.as_bytes(),
                    general.as_bytes(),
                    "payloads of {payload_len}"
                );
            }
        }
    }

    /// The split path of 32-bit targets writes the bytes of the 64-bit path, and
    /// leaves the writer in the same state, for times that cross high words with
    /// small steps, jump far, go backwards, start near `u64::MAX` (high word
    /// `NO_EPOCH`), change CPU, interleave events and fill the buffer.
    #[test]
    fn split_and_wide_paths_write_the_same_bytes() {
        #[repr(align(8))]
        struct Aligned([u8; 640]);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut fulls = 0;
        for round in 0..400u32 {
            let threshold = [0, 5, 40][(round % 3) as usize];
            let cfg = WriterConfig::new(1)
                .with_pid(2)
                .with_threshold_ticks(threshold);
            let mut split_buf = Aligned([0; 640]);
            let mut wide_buf = Aligned([0; 640]);
            let mut tried_buf = Aligned([0; 640]);
            let mut split = BufferWriter::new(&mut split_buf.0, &cfg, W0).unwrap();
            let mut wide = BufferWriter::new(&mut wide_buf.0, &cfg, W0).unwrap();
            // The call-free split store first, `function_word_split` when it declines.
            let mut tried = BufferWriter::new(&mut tried_buf.0, &cfg, W0).unwrap();
            if round % 2 == 0 {
                split.defer_extents();
                wide.defer_extents();
                tried.defer_extents();
            }
            let start = [0, (1 << 32) - 300, u64::MAX - 2_000, next()][(round % 4) as usize];
            let mut tsc = start;
            for i in 0..90u32 {
                let r = next();
                let cpu = if r % 29 == 0 { (r >> 8) as u16 % 3 } else { 0 };
                let t = Timestamp { tsc, cpu };
                let action = FunctionAction::from_bits(((r >> 16) % 4) as u8).unwrap();
                let id = fid(((r >> 20) % 3) as u32 + 1);
                let low = FunctionRecord::low_word(action, id);
                let a = split.function_word_split(low, t);
                let b = wide.function_word_wide(low, t);
                assert_eq!(a, b, "round {round}, record {i}");
                let state = |w: &BufferWriter| (w.pos(), w.latest_tsc, w.latest_cpu, w.undo_start);
                let before = state(&tried);
                let c = match tried.try_split_store(low, t) {
                    Tried::Stored => Ok(()),
                    declined => {
                        assert_eq!(state(&tried), before, "a decline changed the writer");
                        if declined == Tried::Full {
                            // No room, and the time comes back from its low
                            // word, on either target's way.
                            assert!(tried.lacks_room_for_function(low));
                            assert_eq!(tried.time_of_full(t.tsc as u32), t);
                            let on_epoch = (u64::from(tried.epoch) << 32) | (t.tsc & 0xFFFF_FFFF);
                            assert_eq!((on_epoch, t.cpu), (t.tsc, 0));
                            fulls += 1;
                        }
                        tried.function_word_split(low, t)
                    }
                };
                assert_eq!(c, a, "round {round}, record {i}");
                assert_eq!(state(&tried), state(&split), "round {round}, record {i}");
                if r % 31 == 1 {
                    let len = ((r >> 24) % 9) as usize;
                    let payload = [0x5a; 8];
                    let a = split.custom_event(t, &payload[..len]);
                    let b = wide.custom_event(t, &payload[..len]);
                    let c = tried.custom_event(t, &payload[..len]);
                    assert_eq!(a, b);
                    assert_eq!(a, c);
                }
                assert_eq!(
                    (
                        split.pos(),
                        split.latest_tsc,
                        split.latest_cpu,
                        split.undo_start
                    ),
                    (
                        wide.pos(),
                        wide.latest_tsc,
                        wide.latest_cpu,
                        wide.undo_start
                    ),
                    "round {round}, record {i}"
                );
                // The split path's fast ends follow `epoch`.
                let exit = if threshold != 0 { 0 } else { split.fast_end };
                let (valid, zero) = (split.epoch != NO_EPOCH, split.epoch == 0);
                let ends = |on: bool| if on { (split.fast_end, exit) } else { (0, 0) };
                assert_eq!(
                    (
                        (split.fast_end_epoch, split.fast_end_exit),
                        (split.fast_end_zero, split.fast_end_zero_exit)
                    ),
                    (ends(valid), ends(zero)),
                    "round {round}, record {i}"
                );
                tsc = match (r >> 32) % 16 {
                    0 => tsc.wrapping_add(1 << 32),
                    1 => tsc.wrapping_add(u64::from(u32::MAX)),
                    2 => tsc.wrapping_sub((r >> 40) % 100),
                    3 => tsc.wrapping_add((r >> 36) % (1 << 28)),
                    _ => tsc.wrapping_add((r >> 40) % 60),
                };
            }
            split.sync_extents();
            wide.sync_extents();
            tried.sync_extents();
            assert_eq!(split.as_bytes(), wide.as_bytes(), "round {round}");
            assert_eq!(tried.as_bytes(), split.as_bytes(), "round {round}");
        }
        assert!(fulls > 100, "{fulls} full buffers");
    }

    /// A recorder's straight buffer switch, `restart_with_function` from a full
    /// buffer, leaves the next buffer's bytes and the writer's whole state as
    /// `start` and the general path (`function_word_across`) do, for every
    /// version, with and without a Pid and a threshold, on every action and on
    /// times across the high word.
    #[test]
    fn restart_writes_what_start_and_the_first_record_write() {
        #[repr(align(8))]
        struct Aligned([u8; 400]);
        let versions = [
            Version::V1,
            Version::V2,
            Version::V3,
            Version::V4,
            Version::V5,
        ];
        let times = [0, 7, (1 << 32) - 1, 1 << 32, u64::MAX - 3, u64::MAX];
        let walltime = Walltime {
            seconds: 1_700_000_123,
            micros: 999_999,
        };
        let early_at = |tsc| Timestamp { tsc, cpu: 1 };
        let mut on_epochs = 0;
        for (round, (((&version, pid), action), &tsc)) in versions
            .iter()
            .flat_map(|v| [(v, None), (v, Some(9))])
            .flat_map(|x| (0..4u8).map(move |a| (x, a)))
            .flat_map(|x| times.iter().map(move |t| (x, t)))
            .enumerate()
        {
            let cpu = [0, 0, 3][round % 3];
            let mut cfg = WriterConfig::new(7)
                .with_version(version)
                .with_threshold_ticks([0, 5][round % 2]);
            if let Some(pid) = pid {
                cfg = cfg.with_pid(pid);
            }
            let action = FunctionAction::from_bits(action).unwrap();
            let low = FunctionRecord::low_word(action, fid(round as u32 % 5 + 1));
            let t = Timestamp { tsc, cpu };
            let mut a_buf = Aligned([0xEE; 400]);
            let mut b_buf = Aligned([0x11; 400]);
            let (a_old, a_next) = a_buf.0.split_at_mut(200);
            let (_, b_next) = b_buf.0.split_at_mut(200);
            // `a` fills a buffer, then restarts on the next.
            let mut a = BufferWriter::detached();
            // The next buffer had its preamble written by an earlier start
            // (with another wall time) and then records.
            let next = a_next.as_mut_ptr();
            // SAFETY: `next` is `a_next`'s 200 bytes, used only through `a`.
            a.start(
                unsafe { core::slice::from_raw_parts_mut(next, 200) },
                &cfg,
                W0,
                true,
            )
            .unwrap();
            while a
                .function(FunctionAction::Enter, fid(3), early_at(9))
                .is_ok()
            {}
            a.finish_with_events();
            a.start(a_old, &cfg, W0, true).unwrap();
            // Every other round on CPU 0, the last records on `t`'s high word
            // (not `NO_EPOCH`): the restart `on_epoch`, as a context's recorder
            // makes it with the time of a record that found its buffer full.
            let on_epoch = cpu == 0 && (tsc >> 32) as u32 != NO_EPOCH && round % 4 < 2;
            let early = if on_epoch {
                Timestamp {
                    tsc: tsc & !u64::from(u32::MAX),
                    cpu: 0,
                }
            } else {
                Timestamp { tsc: 3, cpu: 1 }
            };
            a.function(FunctionAction::Enter, fid(2), early).unwrap();
            while a.function(FunctionAction::Exit, fid(2), early).is_ok() {}
            assert!(a.restarts_on(200) && a.has_events(), "round {round}");
            if on_epoch {
                assert_eq!(a.epoch, (tsc >> 32) as u32, "round {round}");
            }
            on_epochs += usize::from(on_epoch);
            // SAFETY: `a_next` is 200 bytes, as `a`'s buffer, is not used while
            // `a` lives, and holds the preamble of `a`'s start with `cfg`.
            unsafe { a.restart_with_function(next, walltime, low, t, on_epoch) };
            // `b` starts there and writes the record.
            let mut b = BufferWriter::detached();
            b.start(b_next, &cfg, walltime, true).unwrap();
            b.function_word_across(low, t).unwrap();
            let state = |w: &BufferWriter| {
                (
                    (w.pos(), w.len, w.limit, w.body_start, w.undo_start),
                    (w.version, w.extents_every_record, w.threshold),
                    (w.latest_tsc, w.latest_cpu, w.epoch),
                    (
                        w.fast_end.saturating_sub(w.base.addr()),
                        w.fast_end_epoch.saturating_sub(w.base.addr()),
                        w.fast_end_exit.saturating_sub(w.base.addr()),
                        w.fast_end_zero.saturating_sub(w.base.addr()),
                        w.fast_end_zero_exit.saturating_sub(w.base.addr()),
                    ),
                )
            };
            assert_eq!(state(&a), state(&b), "round {round}");
            // The extents are deferred: the count is exact once synced (the
            // general path writes it with the NewCPUId, the restart at the end).
            a.sync_extents();
            b.sync_extents();
            assert_eq!(a.as_bytes(), b.as_bytes(), "round {round}");
            // And both go on alike.
            let later = Timestamp {
                tsc: tsc.wrapping_add(9),
                cpu,
            };
            assert_eq!(
                a.exit(fid(4), later),
                b.exit(fid(4), later),
                "round {round}"
            );
            a.sync_extents();
            b.sync_extents();
            assert_eq!(a.as_bytes(), b.as_bytes(), "round {round}");
        }
        assert!(on_epochs > 20, "{on_epochs} restarts on the epoch");
    }

    /// The byte stores that keep bare-metal payload copies off `memcpy`
    /// store what a plain copy does (run under Miri too).
    #[test]
    fn byte_stores_copy_what_a_copy_copies() {
        let src: [u8; 7] = [1, 2, 3, 0xFF, 0, 9, 8];
        let mut a = [0xEEu8; 9];
        let mut b = [0xEEu8; 9];
        copy_bytes(&mut a[1..], &src);
        b[1..8].copy_from_slice(&src);
        assert_eq!(a, b);
        let mut c = [0xEEu8; 9];
        for (d, &v) in c[1..].iter_mut().zip(&src) {
            put_byte_volatile(d, v);
        }
        assert_eq!(c, b);
    }

    #[test]
    fn preamble_layout_v5() {
        let mut buf = [0xAAu8; 128];
        let cfg = WriterConfig::new(101).with_pid(4242);
        let w = BufferWriter::new(
            &mut buf,
            &cfg,
            Walltime {
                seconds: 7,
                micros: 8,
            },
        )
        .unwrap();
        assert_eq!(w.len(), 64);
        let b = w.as_bytes();
        assert_eq!(b[0], 0x0f);
        assert_eq!(u64::from_le_bytes(b[1..9].try_into().unwrap()), 48);
        assert_eq!(b[16], 0x01);
        assert_eq!(&b[17..21], &101i32.to_le_bytes());
        assert_eq!(b[32], 0x09);
        assert_eq!(b[48], 0x13);
    }

    #[test]
    fn too_small_buffer_is_an_error() {
        let cfg = WriterConfig::new(1).with_pid(1);
        let mut buf = [0u8; 87];
        assert_eq!(
            BufferWriter::new(&mut buf, &cfg, W0).err(),
            Some(BufferTooSmall {
                len: 87,
                needed: 88
            })
        );
        let mut buf = [0u8; 88];
        assert!(BufferWriter::new(&mut buf, &cfg, W0).is_ok());
    }

    #[test]
    fn first_event_writes_new_cpu_and_delta_zero() {
        let mut buf = [0u8; 256];
        let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), W0).unwrap();
        w.enter(fid(1), ts(1000)).unwrap();
        let b = w.as_bytes();
        assert_eq!(b[48], 0x05); // NewCPUId after the 48-byte preamble (no pid)
        assert_eq!(u64::from_le_bytes(b[51..59].try_into().unwrap()), 1000);
        assert_eq!(&b[64..72], &[0x10, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn full_leaves_buffer_unchanged() {
        let cfg = WriterConfig::new(1);
        let mut buf = [0u8; 100];
        let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
        let mut t = 0;
        while w.enter(fid(1), ts(t)).is_ok() {
            t += 1;
        }
        let mut before = [0u8; 100];
        let n = w.len();
        before[..n].copy_from_slice(w.as_bytes());
        assert_eq!(w.exit(fid(1), ts(t)), Err(Full));
        assert_eq!(w.custom_event(ts(t), b"x"), Err(RecordError::Full));
        assert_eq!(
            w.enter_with_args(fid(1), ts(t), &[1]),
            Err(RecordError::Full)
        );
        assert_eq!(w.as_bytes(), &before[..n]);
    }

    /// `put_word` stores without bounds checks: for every version, with and without
    /// elision, buffer sizes around the minimum and every way to fill them, nothing
    /// is written outside the buffer and each filled buffer reads back whole. (Miri
    /// runs this too: `cargo +nightly miri test -p flightrec-core --lib fdr::writer`.)
    #[test]
    fn unchecked_stores_stay_inside_the_buffer() {
        use crate::fdr::decoder::decode_record;
        const GUARD: u8 = 0xA5;
        for version in [
            Version::V1,
            Version::V2,
            Version::V3,
            Version::V4,
            Version::V5,
        ] {
            for threshold in [0, 3] {
                let cfg = WriterConfig::new(1)
                    .with_version(version)
                    .with_threshold_ticks(threshold);
                let min = cfg.min_buffer_len();
                for len in min..min + 3 * FUNC + 1 {
                    let mut area = [GUARD; 256];
                    let mut records = 0;
                    {
                        let mut w = BufferWriter::new(&mut area[8..8 + len], &cfg, W0).unwrap();
                        let mut t = 0;
                        loop {
                            t += 2;
                            let kept = if records % 2 == 0 {
                                w.enter(fid(1), ts(t))
                            } else {
                                w.exit(fid(1), ts(t + 5 * (records % 3)))
                            };
                            if kept.is_err() {
                                break;
                            }
                            records += 1;
                        }
                        let n = w.len();
                        let bytes = w.finish();
                        assert!(bytes.len() <= len && n <= len, "{version:?} len {len}");
                        // The buffer reads back record by record to its end.
                        let mut at = 0;
                        while at < bytes.len() {
                            let (_, size) = decode_record(version, &bytes[at..]).unwrap();
                            at += size;
                        }
                        assert_eq!(at, bytes.len());
                    }
                    assert!(records > 0);
                    assert!(
                        area[..8].iter().all(|&b| b == GUARD),
                        "{version:?} len {len}"
                    );
                    assert!(
                        area[8 + len..].iter().all(|&b| b == GUARD),
                        "{version:?} len {len}: wrote past the buffer"
                    );
                }
            }
        }
    }

    #[test]
    fn oversized_records_are_errors() {
        let mut buf = [0u8; 256];
        let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), W0).unwrap();
        assert_eq!(
            w.custom_event(ts(0), &[0u8; 200]),
            Err(RecordError::TooLarge { needed: 232 })
        );
        assert_eq!(w.custom_event(ts(0), &[]), Err(RecordError::EmptyPayload));
        assert!(matches!(
            w.enter_with_args(fid(1), ts(0), &[0; 20]),
            Err(RecordError::TooLarge { .. })
        ));
        assert!(!w.has_events());
    }

    #[test]
    fn elides_short_calls_only() {
        let mut buf = [0u8; 512];
        let cfg = WriterConfig::new(1).with_threshold_ticks(100);
        let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
        w.enter(fid(1), ts(1000)).unwrap(); // NewCPUId + enter
        let after_outer = w.len();
        w.enter(fid(2), ts(1010)).unwrap();
        w.enter(fid(3), ts(1020)).unwrap();
        w.exit(fid(3), ts(1030)).unwrap(); // erases enter 3
        w.exit(fid(2), ts(1040)).unwrap(); // erases enter 2
        assert_eq!(w.len(), after_outer);
        // The NewCPUId before enter 1 stays; the entry itself is erasable.
        w.exit(fid(1), ts(1099)).unwrap();
        assert_eq!(w.len(), after_outer - 8);
        w.enter(fid(4), ts(2000)).unwrap();
        w.exit(fid(4), ts(2500)).unwrap(); // long: kept
        assert_eq!(w.len(), after_outer + 8);
        // An argument entry is never erased, nor is what precedes it.
        w.enter(fid(5), ts(2600)).unwrap();
        w.enter_with_args(fid(6), ts(2601), &[7]).unwrap();
        let n = w.len();
        w.exit(fid(6), ts(2602)).unwrap();
        w.exit(fid(5), ts(2603)).unwrap();
        assert_eq!(w.len(), n + 16);
    }

    #[test]
    fn exit_of_other_function_does_not_elide() {
        let mut buf = [0u8; 512];
        let cfg = WriterConfig::new(1).with_threshold_ticks(100);
        let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
        w.enter(fid(9), ts(0)).unwrap();
        w.enter(fid(1), ts(10)).unwrap();
        let n = w.len();
        w.exit(fid(2), ts(20)).unwrap();
        assert_eq!(w.len(), n + 8);
    }

    #[test]
    fn tail_called_short_frames_are_erased_together() {
        let mut buf = [0u8; 512];
        let cfg = WriterConfig::new(1).with_threshold_ticks(100);
        let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
        w.enter(fid(9), ts(0)).unwrap();
        let base = w.len();
        w.enter(fid(1), ts(10)).unwrap();
        w.tail_exit(fid(1), ts(20)).unwrap(); // erases enter 1 at once (short)
        assert_eq!(w.len(), base);
        // A long first frame keeps its pair, the short tail-called one is erased.
        w.enter(fid(2), ts(100)).unwrap();
        w.enter(fid(5), ts(110)).unwrap();
        w.exit(fid(5), ts(300)).unwrap(); // long: kept, ends the undoable run
        w.tail_exit(fid(2), ts(310)).unwrap();
        w.enter(fid(3), ts(320)).unwrap();
        w.exit(fid(3), ts(330)).unwrap();
        assert_eq!(w.len(), base + 4 * 8);
    }
}
