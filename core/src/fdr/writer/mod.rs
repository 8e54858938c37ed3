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

mod config;
mod events;
mod fast;
mod fast_event;
mod general;
mod store;
mod switch;

pub use config::{BufferTooSmall, Full, Walltime, WriteError, WriterConfig};
use store::*;

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
/// [`WriteError`]) and leaves the buffer as it was. [`BufferWriter::as_bytes`] is a
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

    /// A writer without a buffer: the [`Recorder`](super::ring::Recorder)'s "no
    /// current buffer". It refuses every function record with [`Full`] (its room is
    /// zero and its CPU matches no event), so the recorder's hot path needs no
    /// separate test for a missing buffer. Other records get
    /// [`WriteError::TooLarge`]; the recorder does not offer it those.
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

    /// Stops updating the BufferExtents count with every function record, as
    /// [`start`](Self::start) with `deferred` does: for tests of writers made by
    /// [`new`](Self::new).
    #[cfg(test)]
    pub(crate) fn defer_extents(&mut self) {
        self.extents_every_record = false;
        self.refresh_fast_end();
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
}

/// Stores `b` in `d`; on bare metal (`target_os = "none"`) as a volatile store,
/// which keeps LLVM from making a loop of them a `memcpy` call: that would link
/// compiler-builtins' `memcpy` into firmware that has no
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
mod tests;
