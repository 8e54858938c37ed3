//! A framed stream over [`embedded_io::Write`]: how firmware sends its FDR buffers and
//! Trace2 lines over a serial link, and how a host takes them back.
//!
//! * [`frame`]: what a frame carries, a [`FrameKind`] (file header, FDR buffer,
//!   Trace2 line, counters), the [`Source`](FrameHead::source) it comes from (thread,
//!   core, task, interrupt level) and a sequence number.
//! * [`encoder`]: COBS byte stuffing into caller memory, a chunk at a time; every
//!   frame ends with `0x00` and carries a CRC-32C ([`crc32`]).
//! * [`compact`]: the compact form of an FDR buffer (varint function records; its
//!   wire bytes a record are in `docs/performance.md`), and its packed form (metadata records packed too),
//!   which [`LinkWriter::flush_one`] sends unless told not to.
//! * [`trace2`]: compact Trace2 events (kind, clock reading, varints and interned
//!   string ids), which the receiver formats as git's lines;
//!   [`LinkWriter::send_trace2`] sends one.
//! * [`writer`]: [`LinkWriter`] sends frames to a sink and flushes a streaming ring
//!   one buffer per call ([`LinkWriter::flush_one`]), from a main loop or idle task.
//! * [`outlet`]: an [`Outlet`] per ring (its source and consumer), flushed by
//!   [`LinkWriter::flush_each`] in the idle loop and [`LinkWriter::finish`] at the end.
//! * [`decoder`]: [`FrameDecoder`], the receiver's state machine. A receiver that
//!   joins mid-stream, or meets corrupted or lost bytes, is back in step at the next
//!   delimiter and loses only the damaged frames.
//!
//! On the wire:
//!
//! ```text
//! COBS( tag:u8 source:u32le seq:u16le payload crc32c:u32le ) 0x00
//! tag = LINK_VERSION << 4 | kind        (LINK_VERSION = 1)
//! ```
//!
//! The full description is in `docs/firmware-guide.md`.

pub mod compact;
mod crc;
pub mod decoder;
pub mod encoder;
mod fast_compact;
mod fast_stuffer;
pub mod frame;
pub mod no_ring;
pub mod outlet;
#[cfg(feature = "rtt")]
pub mod rtt;
pub mod trace2;
pub mod writer;

pub use self::crc::crc32;
pub use decoder::{Damage, DamageKind, DecoderStats, Event, FrameDecoder};
pub use encoder::FrameEncoder;
pub use frame::{
    Frame, FrameHead, FrameKind, HeadError, LinkStats, CRC_LEN, HEAD_LEN, LINK_VERSION,
    MIN_FRAME_LEN,
};
pub use no_ring::{NoRing, NoRingCount, NO_RING_CONTEXTS};
pub use outlet::Outlet;
pub use writer::{LinkWriter, Source};
