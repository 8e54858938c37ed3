//! SEGGER RTT as a link transport: the control block a debug probe reads, and an
//! [`embedded_io::Write`] sink that [`LinkWriter`] flushes frames into.
//!
//! RTT ("real-time transfer") is a ring buffer in the target's RAM that a debugger
//! reads through the debug port while the program runs: J-Link, probe-rs, OpenOCD
//! and pyOCD find it through a control block whose first bytes are the id
//! `"SEGGER RTT"`, and `flightrec recv --gdb HOST:PORT --elf fw.elf` finds it through
//! the ELF symbol `_SEGGER_RTT`. This module defines that symbol (so a firmware links
//! one RTT implementation: not `defmt-rtt` or `rtt-target` as well) with one
//! up-channel, `"flightrec"`, and no down-channel.
//!
//! ```text
//! _SEGGER_RTT:  id[16] "SEGGER RTT\0..."   (written at run time, last)
//!               max_up_channels: u32 = 1
//!               max_down_channels: u32 = 0
//!               up[0]: name*, buffer*, size: u32, write: u32, read: u32, flags: u32
//!               (the buffer itself, [`BUFFER_SIZE`] bytes)
//! ```
//!
//! The id is written by [`take`] at run time, after every other field and from a
//! reversed copy, so a host that scans memory never finds a stale or half-made
//! block (a copy of the id in flash, or the block before `take` ran).
//!
//! # Modes
//!
//! The channel's `flags` hold the mode, as in SEGGER's implementation (a host may
//! change it while the target runs):
//!
//! * [`Mode::NonBlocking`] (the default): a write that does not fit whole is
//!   refused and counted ([`RttWriter::bytes_dropped`]). With [`flush_one`] a
//!   ring's buffer is only taken when its frames fit, so a slow or absent host makes
//!   the ring fill up and the recorder drop records, which it counts and the trace
//!   carries as a loss marker, like any other drop.
//! * [`Mode::Trim`]: writes what fits, refuses the rest.
//! * [`Mode::Blocking`]: waits for the host to make room. Without a host attached
//!   this waits forever; use it when no record may be lost (tests, measurements).
//!
//! # The single-writer rule
//!
//! RTT's up-channel has one writer (the target) and one reader (the host); the
//! write offset is the writer's and the read offset the host's. Nothing on the write
//! path locks: [`take`] hands out the one [`RttWriter`] once (like a
//! [`StaticRing`](crate::fdr::static_ring::StaticRing)'s halves), and its methods
//! take `&mut self`, so two contexts cannot write into the channel at once. Give the
//! writer to the context that flushes (the main loop or an idle task); interrupt
//! handlers record into their own rings and never touch it. Taking the writer
//! uses a compare-exchange, or on targets without one (`thumbv6m`) a critical
//! section, once at start-up.
//!
//! # Buffer size
//!
//! [`BUFFER_SIZE`] is 1024 bytes unless the environment variable
//! `FLIGHTREC_RTT_BUFFER_SIZE` says otherwise when the core is built (as
//! `DEFMT_RTT_BUFFER_SIZE` does for defmt-rtt). For [`flush_one`] to send anything,
//! it must hold a ring buffer's frames: the ring's buffer size plus
//! [`FRAME_OVERHEAD`] bytes.
//!
//! # Example
//!
//! A control block of its own (firmware uses the one behind [`take`]), a ring
//! flushed into it, and the bytes read back the way a host does:
//!
//! ```
//! use flightrec_core::clock::Timestamp;
//! use flightrec_core::fdr::ring::{Policy, RecorderConfig};
//! use flightrec_core::fdr::static_ring::StaticRing;
//! use flightrec_core::fdr::writer::WriterConfig;
//! use flightrec_core::fdr::FunctionId;
//! use flightrec_core::link::rtt::{self, ControlBlock, Mode};
//! use flightrec_core::link::{Event, FrameDecoder, LinkWriter, Source};
//!
//! static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
//! static RTT: ControlBlock<1024> = ControlBlock::new();
//!
//! let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
//! let (mut rec, mut consumer) = RING.split(cfg).unwrap();
//! let mut source = Source::new(1, cfg.file_header(RING.buffer_size()));
//! let mut link = LinkWriter::new(RTT.take_writer(Mode::NonBlocking).unwrap());
//! rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
//! rec.flush();
//! assert_eq!(rtt::flush_one(&mut link, &mut source, &mut consumer), Ok(true));
//!
//! let mut wire = [0u8; 1024];
//! let n = RTT.host_read(&mut wire); // what a debug probe does
//! let mut buf = [0u8; 512];
//! let mut dec = FrameDecoder::new(&mut buf);
//! let mut rest = &wire[..n];
//! let mut frames = 0;
//! while !rest.is_empty() {
//!     let (used, ev) = dec.feed(rest);
//!     rest = &rest[used..];
//!     frames += usize::from(matches!(ev, Some(Event::Frame(_))));
//! }
//! assert_eq!(frames, 3); // file header, counters, the buffer
//! ```

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, Ordering};

use embedded_io::{ErrorKind, ErrorType, Write};

use super::encoder::FrameEncoder;
use super::frame::{FrameKind, LinkStats};
use super::writer::{LinkWriter, Source};
use crate::fdr::header::HEADER_SIZE;
use crate::fdr::ring::Consumer;
use crate::fdr::static_ring::AlreadyTaken;

/// The id a host looks for at the start of the control block.
///
/// ```
/// use flightrec_core::link::rtt::ID;
/// assert!(ID.starts_with(b"SEGGER RTT\0"));
/// ```
pub const ID: &[u8; 16] = b"SEGGER RTT\0\0\0\0\0\0";

/// The id reversed: what the firmware image holds, so that the id itself appears
/// in memory only once the control block is complete.
const ID_REVERSED: [u8; 16] = {
    let mut out = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        out[i] = ID[15 - i];
        i += 1;
    }
    out
};

/// Name of the up-channel, as hosts list it.
const CHANNEL_NAME: &[u8] = b"flightrec\0";

/// Size of the up-channel buffer of [`_SEGGER_RTT`]: `FLIGHTREC_RTT_BUFFER_SIZE` at
/// build time, 1024 bytes without it (or when it is not a number from 16 to 2^30).
///
/// ```
/// # use flightrec_core::link::rtt::BUFFER_SIZE;
/// assert!(BUFFER_SIZE >= 16);
/// ```
pub const BUFFER_SIZE: usize = parse_size(option_env!("FLIGHTREC_RTT_BUFFER_SIZE"), 1024);

const fn parse_size(text: Option<&str>, default: usize) -> usize {
    let Some(text) = text else {
        return default;
    };
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > 10 {
        return default;
    }
    let mut n: usize = 0;
    let mut i = 0;
    while i < bytes.len() {
        let d = bytes[i];
        if !d.is_ascii_digit() {
            return default;
        }
        n = n * 10 + (d - b'0') as usize;
        i += 1;
    }
    if n < 16 || n > 1 << 30 {
        default
    } else {
        n
    }
}

/// The most bytes one ring buffer's frames take in the channel beyond the buffer
/// itself: a file header frame, a counters frame and the buffer's frame, each with
/// COBS overhead for a buffer of up to 4 KiB, and the delimiters.
///
/// ```
/// # use flightrec_core::link::rtt::FRAME_OVERHEAD;
/// assert!(FRAME_OVERHEAD < 128);
/// ```
pub const FRAME_OVERHEAD: usize = FrameEncoder::max_encoded_len(HEADER_SIZE)
    + FrameEncoder::max_encoded_len(LinkStats::LEN)
    + FrameEncoder::max_encoded_len(4096)
    - 4096
    + 3;

/// What the channel does with a write that does not fit. Its number is the value
/// of the channel's `flags` field (SEGGER's `SEGGER_RTT_MODE_*`).
///
/// ```
/// use flightrec_core::link::rtt::Mode;
/// assert_eq!(Mode::default(), Mode::NonBlocking);
/// assert_eq!(Mode::Blocking as u32, 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u32)]
pub enum Mode {
    /// A write that does not fit whole is refused and counted
    /// (`NO_BLOCK_SKIP`).
    #[default]
    NonBlocking = 0,
    /// What fits is written, the rest refused and counted (`NO_BLOCK_TRIM`).
    Trim = 1,
    /// Waits until the host has made room (`BLOCK_IF_FIFO_FULL`).
    Blocking = 2,
}

impl Mode {
    fn from_flags(flags: u32) -> Self {
        match flags & 3 {
            1 => Mode::Trim,
            2 => Mode::Blocking,
            _ => Mode::NonBlocking,
        }
    }
}

/// Why a write into the channel failed.
///
/// ```
/// use embedded_io::Error as _;
/// use flightrec_core::link::rtt::RttError;
/// assert_eq!(RttError::Full.kind(), embedded_io::ErrorKind::OutOfMemory);
/// assert_eq!(RttError::Full.to_string(), "the RTT buffer is full");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RttError {
    /// Not enough room (non-blocking modes): the host is slow or absent.
    Full,
    /// The channel's offsets are out of range: something other than the host wrote
    /// them. The writer sets them back to empty and goes on.
    Damaged,
    /// A frame can never fit: the channel buffer is smaller than the frame.
    TooSmall,
}

impl core::fmt::Display for RttError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            RttError::Full => "the RTT buffer is full",
            RttError::Damaged => "the RTT channel's offsets were damaged",
            RttError::TooSmall => "the RTT buffer is smaller than one frame",
        })
    }
}

impl core::error::Error for RttError {}

impl embedded_io::Error for RttError {
    fn kind(&self) -> ErrorKind {
        match self {
            RttError::Full => ErrorKind::OutOfMemory,
            RttError::Damaged => ErrorKind::InvalidData,
            RttError::TooSmall => ErrorKind::InvalidInput,
        }
    }
}

/// One RTT channel descriptor, laid out as SEGGER's `SEGGER_RTT_BUFFER_UP`.
#[repr(C)]
struct Channel {
    name: AtomicPtr<u8>,
    buffer: AtomicPtr<u8>,
    size: AtomicU32,
    /// Written by the target only.
    write: AtomicU32,
    /// Written by the host only.
    read: AtomicU32,
    flags: AtomicU32,
}

/// An RTT control block with one up-channel of `N` bytes, laid out as SEGGER's
/// `SEGGER_RTT_CB` (the buffer follows the descriptors). Firmware uses the one
/// behind [`take`], the symbol `_SEGGER_RTT`; a block of its own is for tests and
/// simulations. Example on [`take_writer`](Self::take_writer).
///
/// All zero until [`take_writer`](Self::take_writer) fills it in, so it lives in
/// `.bss` and costs no flash.
#[repr(C)]
pub struct ControlBlock<const N: usize> {
    id: [AtomicU8; 16],
    max_up: AtomicU32,
    max_down: AtomicU32,
    up: Channel,
    taken: Taken,
    buffer: UnsafeCell<[u8; N]>,
}

// SAFETY: the descriptor fields are atomics; the buffer bytes are written only by
// the one `RttWriter` (taken once, `&mut self` methods) between the write offset
// and the read offset, and read (by `host_read` or a debugger) only between the read
// offset and the write offset, each side publishing its offset with a release store
// after touching the bytes.
unsafe impl<const N: usize> Sync for ControlBlock<N> {}

impl<const N: usize> Default for ControlBlock<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ControlBlock<N> {
    /// An empty (all zero) control block. Example on
    /// [`take_writer`](Self::take_writer).
    #[allow(clippy::declare_interior_mutable_const)]
    pub const fn new() -> Self {
        const ZERO: AtomicU8 = AtomicU8::new(0);
        ControlBlock {
            id: [ZERO; 16],
            max_up: AtomicU32::new(0),
            max_down: AtomicU32::new(0),
            up: Channel {
                name: AtomicPtr::new(core::ptr::null_mut()),
                buffer: AtomicPtr::new(core::ptr::null_mut()),
                size: AtomicU32::new(0),
                write: AtomicU32::new(0),
                read: AtomicU32::new(0),
                flags: AtomicU32::new(0),
            },
            taken: Taken::new(),
            buffer: UnsafeCell::new([0; N]),
        }
    }

    /// Fills in the control block (the id last) and hands out its writer, once.
    ///
    /// ```
    /// use flightrec_core::link::rtt::{ControlBlock, Mode, ID};
    /// use flightrec_core::fdr::static_ring::AlreadyTaken;
    /// static RTT: ControlBlock<64> = ControlBlock::new();
    /// assert!(!RTT.is_ready());
    /// let w = RTT.take_writer(Mode::Blocking).unwrap();
    /// assert!(RTT.is_ready());
    /// assert_eq!((w.capacity(), w.mode()), (63, Mode::Blocking));
    /// assert_eq!(RTT.take_writer(Mode::Blocking).err(), Some(AlreadyTaken));
    /// ```
    pub fn take_writer(&self, mode: Mode) -> Result<RttWriter<'_, N>, AlreadyTaken> {
        self.taken.take()?;
        let size = u32::try_from(N).unwrap_or(u32::MAX);
        self.max_up.store(1, Ordering::Relaxed);
        self.max_down.store(0, Ordering::Relaxed);
        // Hosts only read through the name pointer.
        self.up
            .name
            .store(CHANNEL_NAME.as_ptr().cast_mut(), Ordering::Relaxed);
        self.up
            .buffer
            .store(self.buffer.get().cast::<u8>(), Ordering::Relaxed);
        self.up.size.store(size, Ordering::Relaxed);
        self.up.write.store(0, Ordering::Relaxed);
        self.up.read.store(0, Ordering::Relaxed);
        self.up.flags.store(mode as u32, Ordering::Relaxed);
        // Everything above is in memory before the first byte of the id; the id is
        // written from its last byte to its first.
        core::sync::atomic::fence(Ordering::SeqCst);
        for (i, &b) in ID_REVERSED.iter().enumerate() {
            if let Some(cell) = self.id.get(15 - i) {
                cell.store(b, Ordering::Relaxed);
            }
        }
        core::sync::atomic::fence(Ordering::SeqCst);
        Ok(RttWriter {
            block: BlockRef { block: self },
            bytes_dropped: 0,
            refuse: false,
        })
    }

    /// Whether the control block was filled in (its id is complete). Example on
    /// [`take_writer`](Self::take_writer).
    pub fn is_ready(&self) -> bool {
        self.id
            .iter()
            .zip(ID.iter())
            .all(|(a, &b)| a.load(Ordering::Relaxed) == b)
    }

    /// Reads what the target wrote, as a host does through the debug port, and
    /// moves the read offset on. For tests and simulations: with a debugger
    /// attached, it is the only reader.
    ///
    /// ```
    /// use embedded_io::Write;
    /// use flightrec_core::link::rtt::{ControlBlock, Mode};
    /// static RTT: ControlBlock<16> = ControlBlock::new();
    /// let mut w = RTT.take_writer(Mode::NonBlocking).unwrap();
    /// w.write_all(b"0123456789").unwrap();
    /// let mut out = [0u8; 4];
    /// assert_eq!(RTT.host_read(&mut out), 4);
    /// assert_eq!(&out, b"0123");
    /// w.write_all(b"abcdefgh").unwrap(); // wraps around
    /// let mut rest = [0u8; 32];
    /// let n = RTT.host_read(&mut rest);
    /// assert_eq!(&rest[..n], b"456789abcdefgh");
    /// ```
    pub fn host_read(&self, out: &mut [u8]) -> usize {
        let size = self.up.size.load(Ordering::Relaxed) as usize;
        let write = self.up.write.load(Ordering::Acquire) as usize;
        let mut read = self.up.read.load(Ordering::Relaxed) as usize;
        if size == 0 || size > N || write >= size || read >= size {
            return 0;
        }
        let mut done = 0;
        while done < out.len() && read != write {
            let end = if write > read { write } else { size };
            let n = (end - read).min(out.len() - done);
            // SAFETY: bytes `read..end` lie inside the buffer (`end <= size <= N`)
            // and between the read and write offsets: the writer published them
            // with its release store of `write` (acquired above) and does not touch
            // them until the read offset moves past them.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.buffer.get().cast::<u8>().add(read),
                    out.as_mut_ptr().add(done),
                    n,
                );
            }
            done += n;
            read += n;
            if read == size {
                read = 0;
            }
        }
        self.up.read.store(read as u32, Ordering::Release);
        done
    }
}

/// The control block a writer writes into. Through the (`Sync`) block, the writer
/// may move to the context that flushes (it is `Send`).
#[derive(Clone, Copy)]
struct BlockRef<'a, const N: usize> {
    block: &'a ControlBlock<N>,
}

impl<'a, const N: usize> BlockRef<'a, N> {
    fn channel(&self) -> &'a Channel {
        &self.block.up
    }

    fn buffer(&self) -> &'a UnsafeCell<[u8; N]> {
        &self.block.buffer
    }
}

/// The one writer of an RTT up-channel: an [`embedded_io::Write`] sink for a
/// [`LinkWriter`]. Taken with [`take`] (or [`ControlBlock::take_writer`]); see the
/// [module docs](self) for the modes and the single-writer rule.
///
/// ```
/// use embedded_io::Write;
/// use flightrec_core::link::rtt::{ControlBlock, Mode, RttWriter};
/// static RTT: ControlBlock<32> = ControlBlock::new();
/// let mut w: RttWriter<'static, 32> = RTT.take_writer(Mode::NonBlocking).unwrap();
/// w.write_all(b"frame bytes").unwrap();
/// assert_eq!(w.pending(), 11);
/// ```
pub struct RttWriter<'a, const N: usize = BUFFER_SIZE> {
    block: BlockRef<'a, N>,
    bytes_dropped: u32,
    /// Set by [`send`] around a frame that does not fit: every write fails.
    refuse: bool,
}

impl<const N: usize> core::fmt::Debug for RttWriter<'_, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RttWriter")
            .field("capacity", &self.capacity())
            .field("mode", &self.mode())
            .field("bytes_dropped", &self.bytes_dropped)
            .finish()
    }
}

impl<const N: usize> RttWriter<'_, N> {
    /// The channel's mode, as its flags say now (a host may change them).
    /// Example on [`ControlBlock::take_writer`].
    pub fn mode(&self) -> Mode {
        Mode::from_flags(self.block.channel().flags.load(Ordering::Relaxed))
    }

    /// Changes the channel's mode.
    ///
    /// ```
    /// use flightrec_core::link::rtt::{ControlBlock, Mode};
    /// static RTT: ControlBlock<64> = ControlBlock::new();
    /// let mut w = RTT.take_writer(Mode::NonBlocking).unwrap();
    /// w.set_mode(Mode::Trim);
    /// assert_eq!(w.mode(), Mode::Trim);
    /// ```
    pub fn set_mode(&mut self, mode: Mode) {
        let flags = self.block.channel().flags.load(Ordering::Relaxed);
        self.block
            .channel()
            .flags
            .store((flags & !3) | mode as u32, Ordering::Relaxed);
    }

    /// The most bytes the channel holds at once (its size less one). Example on
    /// [`ControlBlock::take_writer`].
    pub fn capacity(&self) -> usize {
        N.saturating_sub(1)
    }

    /// Bytes `write` refused because the channel was full (non-blocking modes),
    /// wrapping at 2^32. A frame that [`send`] holds back is counted by the link as
    /// a failed frame instead, and a buffer that [`flush_one`] leaves in the ring
    /// by the ring as dropped records.
    ///
    /// ```
    /// use embedded_io::Write;
    /// use flightrec_core::link::rtt::{ControlBlock, Mode, RttError};
    /// static RTT: ControlBlock<16> = ControlBlock::new();
    /// let mut w = RTT.take_writer(Mode::NonBlocking).unwrap();
    /// assert_eq!(w.write(&[1; 10]), Ok(10));
    /// assert_eq!(w.write(&[2; 10]), Err(RttError::Full)); // 5 bytes free: all or nothing
    /// w.set_mode(Mode::Trim);
    /// assert_eq!(w.write(&[3; 10]), Ok(5));
    /// assert_eq!(w.bytes_dropped(), 15);
    /// assert_eq!((w.free(), w.pending()), (0, 15));
    /// ```
    pub fn bytes_dropped(&self) -> u32 {
        self.bytes_dropped
    }

    /// Offsets `(write, read)`, or `None` after setting them back to empty when the
    /// read offset is out of range (the write offset is only ever written here).
    fn offsets(&mut self) -> Option<(usize, usize)> {
        let ch = self.block.channel();
        let write = ch.write.load(Ordering::Relaxed) as usize;
        let read = ch.read.load(Ordering::Acquire) as usize;
        if N < 2 || write >= N || read >= N {
            ch.read.store(0, Ordering::Relaxed);
            ch.write.store(0, Ordering::Release);
            return None;
        }
        Some((write, read))
    }

    /// Bytes that fit now. Example on [`bytes_dropped`](Self::bytes_dropped).
    pub fn free(&mut self) -> usize {
        self.room().unwrap_or(0)
    }

    fn room(&mut self) -> Result<usize, RttError> {
        match self.offsets() {
            Some((write, read)) if read > write => Ok(read - write - 1),
            Some((write, read)) => Ok(N - 1 - (write - read)),
            None => Err(RttError::Damaged),
        }
    }

    /// Bytes written that the host has not read yet. Example on
    /// [`bytes_dropped`](Self::bytes_dropped).
    pub fn pending(&mut self) -> usize {
        match self.offsets() {
            Some((write, read)) if write >= read => write - read,
            Some((write, read)) => N - read + write,
            None => 0,
        }
    }

    /// Copies as much of `bytes` as fits now and publishes it; returns how much.
    fn push(&mut self, bytes: &[u8]) -> Result<usize, RttError> {
        let Some((mut write, read)) = self.offsets() else {
            return Err(RttError::Damaged);
        };
        let free = if read > write {
            read - write - 1
        } else {
            N - 1 - (write - read)
        };
        let total = bytes.len().min(free);
        let mut done = 0;
        while done < total {
            // Contiguous room: to the end of the buffer, or to just before `read`.
            let end = if read > write { read - 1 } else { N };
            let end = if read == 0 && end == N { N - 1 } else { end };
            let n = (end - write).min(total - done);
            if n == 0 {
                break;
            }
            let src = bytes.get(done..done + n).unwrap_or(&[]);
            // SAFETY: `write..write + n` lies inside the buffer (`write + n <= end <=
            // N`) and in the free part of the ring, which the host does not read
            // until the release store of the write offset below; this writer is the
            // only one (taken once, `&mut self`).
            unsafe {
                core::ptr::copy_nonoverlapping(
                    src.as_ptr(),
                    self.block.buffer().get().cast::<u8>().add(write),
                    src.len(),
                );
            }
            done += src.len();
            write += src.len();
            if write == N {
                write = 0;
            }
        }
        self.block
            .channel()
            .write
            .store(write as u32, Ordering::Release);
        Ok(done)
    }

    fn count_dropped(&mut self, n: usize) {
        self.bytes_dropped = self.bytes_dropped.wrapping_add(n as u32);
    }
}

impl<const N: usize> ErrorType for RttWriter<'_, N> {
    type Error = RttError;
}

impl<const N: usize> Write for RttWriter<'_, N> {
    /// Writes by the channel's [`Mode`]. Example on
    /// [`bytes_dropped`](Self::bytes_dropped).
    fn write(&mut self, bytes: &[u8]) -> Result<usize, RttError> {
        if bytes.is_empty() {
            return Ok(0);
        }
        if self.refuse {
            return Err(RttError::Full);
        }
        match self.mode() {
            Mode::NonBlocking => {
                if self.room()? < bytes.len() {
                    self.count_dropped(bytes.len());
                    return Err(RttError::Full);
                }
                self.push(bytes)
            }
            Mode::Trim => {
                let n = self.push(bytes)?;
                self.count_dropped(bytes.len() - n);
                if n == 0 {
                    Err(RttError::Full)
                } else {
                    Ok(n)
                }
            }
            Mode::Blocking => loop {
                let n = self.push(bytes)?;
                if n > 0 {
                    return Ok(n);
                }
                core::hint::spin_loop();
            },
        }
    }

    /// In blocking mode, waits until the host has read everything; otherwise
    /// returns at once.
    ///
    /// ```
    /// use embedded_io::Write;
    /// use flightrec_core::link::rtt::{ControlBlock, Mode};
    /// static RTT: ControlBlock<64> = ControlBlock::new();
    /// let mut w = RTT.take_writer(Mode::NonBlocking).unwrap();
    /// w.write_all(b"abc").unwrap();
    /// w.flush().unwrap(); // does not wait in this mode
    /// assert_eq!(w.pending(), 3);
    /// ```
    fn flush(&mut self) -> Result<(), RttError> {
        if self.mode() == Mode::Blocking {
            while self.pending() > 0 {
                core::hint::spin_loop();
            }
        }
        Ok(())
    }
}

/// Whether the one-time take happened.
struct Taken(TakenCell);

#[cfg(target_has_atomic = "8")]
type TakenCell = core::sync::atomic::AtomicBool;
#[cfg(not(target_has_atomic = "8"))]
type TakenCell = critical_section::Mutex<core::cell::Cell<bool>>;

impl Taken {
    const fn new() -> Self {
        #[cfg(target_has_atomic = "8")]
        {
            Taken(core::sync::atomic::AtomicBool::new(false))
        }
        #[cfg(not(target_has_atomic = "8"))]
        {
            Taken(critical_section::Mutex::new(core::cell::Cell::new(false)))
        }
    }

    fn take(&self) -> Result<(), AlreadyTaken> {
        #[cfg(target_has_atomic = "8")]
        {
            if self.0.swap(true, Ordering::AcqRel) {
                Err(AlreadyTaken)
            } else {
                Ok(())
            }
        }
        #[cfg(not(target_has_atomic = "8"))]
        {
            critical_section::with(|cs| {
                if self.0.borrow(cs).replace(true) {
                    Err(AlreadyTaken)
                } else {
                    Ok(())
                }
            })
        }
    }
}

/// The firmware's RTT control block, found by hosts through this symbol (or by
/// its id). Take its writer with [`take`]. Example on [`take`].
#[no_mangle]
pub static _SEGGER_RTT: ControlBlock<BUFFER_SIZE> = ControlBlock::new();

/// Fills in [`_SEGGER_RTT`] and returns its writer, once; `AlreadyTaken` after.
///
/// ```
/// use flightrec_core::link::rtt::{self, Mode};
/// use flightrec_core::link::LinkWriter;
/// let mut link = LinkWriter::new(rtt::take(Mode::NonBlocking).unwrap());
/// link.send_trace2_line(0, b"version 0.1.0\n").unwrap();
/// assert!(rtt::take(Mode::NonBlocking).is_err());
/// assert!(rtt::_SEGGER_RTT.is_ready());
/// ```
pub fn take(mode: Mode) -> Result<RttWriter<'static>, AlreadyTaken> {
    _SEGGER_RTT.take_writer(mode)
}

/// Bytes one frame with a `payload_len`-byte payload may take in the channel,
/// with a leading delimiter.
const fn frame_room(payload_len: usize) -> usize {
    FrameEncoder::max_encoded_len(payload_len).saturating_add(1)
}

/// [`LinkWriter::flush_one`] for an RTT channel: in the non-blocking modes a
/// buffer is taken from the ring only when its frames (and the header and counters
/// when due) fit, so it is never cut short. Otherwise it stays in the ring and
/// `Ok(false)` says nothing was sent; as the ring fills, the recorder drops and
/// counts records. `Err(RttError::TooSmall)` when the channel can never hold them.
/// In blocking mode it is `LinkWriter::flush_one`.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
/// use flightrec_core::fdr::static_ring::StaticRing;
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
/// use flightrec_core::link::rtt::{self, ControlBlock, Mode};
/// use flightrec_core::link::{LinkWriter, Source};
///
/// static RING: StaticRing<2, 128> = StaticRing::new(Policy::Streaming);
/// static RTT: ControlBlock<320> = ControlBlock::new();
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
/// let (mut rec, mut consumer) = RING.split(cfg).unwrap();
/// let mut source = Source::new(1, cfg.file_header(RING.buffer_size()));
/// let mut link = LinkWriter::new(RTT.take_writer(Mode::NonBlocking).unwrap());
/// let f = FunctionId::new(1).unwrap();
/// for t in 0..40 {
///     let _ = rec.enter(f, Timestamp { tsc: t, cpu: 0 });
///     // Nobody reads the channel: the first buffer goes, then it is full.
///     let _ = rtt::flush_one(&mut link, &mut source, &mut consumer);
/// }
/// assert_eq!(link.frames_sent(), 3);
/// assert_eq!(link.frames_failed(), 0); // nothing cut short
/// assert!(RING.stats().records_dropped > 0); // counted by the ring
/// ```
pub fn flush_one<const N: usize>(
    link: &mut LinkWriter<RttWriter<'_, N>>,
    source: &mut Source,
    consumer: &mut Consumer<'_, '_>,
) -> Result<bool, RttError> {
    if consumer.pending() == 0 {
        return Ok(false);
    }
    if link.sink_mut().mode() != Mode::Blocking {
        let buffer = usize::try_from(source.header().buffer_size).unwrap_or(usize::MAX);
        let need = frame_room(HEADER_SIZE)
            .saturating_add(frame_room(LinkStats::LEN + super::NoRing::WIRE_MAX))
            .saturating_add(frame_room(buffer));
        if need > link.sink_mut().capacity() {
            return Err(RttError::TooSmall);
        }
        if link.sink_mut().free() < need {
            return Ok(false);
        }
    }
    link.flush_one(source, consumer)
}

/// [`LinkWriter::send`] for an RTT channel: in the non-blocking modes the frame
/// is sent only when it fits whole, else refused with `RttError::Full` before any
/// byte of it is written: the link counts it as a failed frame (in the counters it
/// sends) and the receiver sees the gap in the sequence numbers.
///
/// ```
/// use flightrec_core::link::rtt::{self, ControlBlock, Mode, RttError};
/// use flightrec_core::link::{FrameKind, LinkWriter};
/// static RTT: ControlBlock<64> = ControlBlock::new();
/// let mut link = LinkWriter::new(RTT.take_writer(Mode::NonBlocking).unwrap());
/// assert_eq!(rtt::send(&mut link, FrameKind::Trace2Line, 0, b"version 1\n"), Ok(()));
/// assert_eq!(rtt::send(&mut link, FrameKind::Trace2Line, 0, &[b'x'; 40]), Err(RttError::Full));
/// assert_eq!((link.frames_sent(), link.frames_failed()), (1, 1));
/// ```
pub fn send<const N: usize>(
    link: &mut LinkWriter<RttWriter<'_, N>>,
    kind: FrameKind,
    source: u32,
    payload: &[u8],
) -> Result<(), RttError> {
    if link.sink_mut().mode() != Mode::Blocking
        && link.sink_mut().free() < frame_room(payload.len())
    {
        // The link numbers and counts the frame; no byte of it goes out.
        link.sink_mut().refuse = true;
        let sent = link.send(kind, source, payload);
        link.sink_mut().refuse = false;
        return sent.and(Err(RttError::Full));
    }
    link.send(kind, source, payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_from_the_environment_is_parsed_or_ignored() {
        assert_eq!(parse_size(None, 1024), 1024);
        assert_eq!(parse_size(Some("4096"), 1024), 4096);
        for bad in ["", "4k", "8", "99999999999", "-1"] {
            assert_eq!(parse_size(Some(bad), 1024), 1024, "{bad}");
        }
    }

    #[test]
    fn layout_is_segger_s() {
        let ptr = core::mem::size_of::<usize>();
        assert_eq!(core::mem::offset_of!(ControlBlock<8>, max_up), 16);
        assert_eq!(core::mem::offset_of!(ControlBlock<8>, up), 24);
        assert_eq!(core::mem::size_of::<Channel>(), 2 * ptr + 16);
        assert_eq!(core::mem::offset_of!(Channel, write), 2 * ptr + 4);
    }

    #[test]
    fn id_only_after_take_and_block_filled_in() {
        let cb: ControlBlock<32> = ControlBlock::new();
        assert!(!cb.is_ready());
        assert_eq!(cb.up.size.load(Ordering::Relaxed), 0);
        let _w = cb.take_writer(Mode::Trim).unwrap();
        assert!(cb.is_ready());
        assert_eq!(cb.max_up.load(Ordering::Relaxed), 1);
        assert_eq!(cb.up.size.load(Ordering::Relaxed), 32);
        assert_eq!(cb.up.flags.load(Ordering::Relaxed), 1);
        assert_eq!(
            cb.up.buffer.load(Ordering::Relaxed),
            cb.buffer.get().cast::<u8>()
        );
        // The image never holds the id in order.
        assert_ne!(&ID_REVERSED, ID);
    }

    #[test]
    fn damaged_offsets_are_reset_not_followed() {
        let cb: ControlBlock<16> = ControlBlock::new();
        let mut w = cb.take_writer(Mode::NonBlocking).unwrap();
        w.write_all(b"abc").unwrap();
        cb.up.read.store(9999, Ordering::Relaxed); // a confused host
        assert_eq!(w.write(b"x"), Err(RttError::Damaged));
        assert_eq!((w.pending(), w.free()), (0, 15));
        w.write_all(b"de").unwrap();
        let mut out = [0u8; 8];
        assert_eq!(cb.host_read(&mut out), 2);
        assert_eq!(&out[..2], b"de");
    }
}
