//! What one frame carries: its kind, its source, its sequence number and its payload.
//!
//! Before byte stuffing a frame is
//!
//! ```text
//! tag:u8  source:u32le  seq:u16le  payload:[u8]  crc:u32le
//! ```
//!
//! where `tag = LINK_VERSION << 4 | kind` and `crc` is [`crc32`](super::crc32) over
//! everything before it.

use crate::fdr::ring::RingStats;

/// The wire format version in the high nibble of every frame's tag byte.
///
/// ```
/// use flightrec_core::link::{FrameHead, FrameKind, LINK_VERSION};
/// let head = FrameHead { kind: FrameKind::Stats, source: 0, seq: 0 };
/// assert_eq!(head.to_bytes()[0], LINK_VERSION << 4 | FrameKind::Stats.number());
/// assert_eq!(head.to_bytes()[0], 0x14);
/// ```
pub const LINK_VERSION: u8 = 1;

/// Bytes before the payload: tag, source, sequence number.
///
/// ```
/// use flightrec_core::link::{FrameHead, FrameKind, HEAD_LEN};
/// let head = FrameHead { kind: FrameKind::FdrBuffer, source: 0x0403_0201, seq: 0x0605 };
/// assert_eq!(head.to_bytes().len(), HEAD_LEN);
/// assert_eq!(head.to_bytes(), [0x12, 1, 2, 3, 4, 5, 6]);
/// ```
pub const HEAD_LEN: usize = 7;

/// Bytes after the payload: the CRC.
///
/// ```
/// use flightrec_core::link::{crc32, FrameEncoder, FrameHead, FrameKind, CRC_LEN, HEAD_LEN};
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq: 0 };
/// let mut wire = [0u8; 32];
/// let n = FrameEncoder::new(head, b"hi").fill(&mut wire);
/// // Un-stuffed (without the closing 0x00): head, payload, then the CRC of both.
/// let frame = cobs::decode_vec(&wire[..n - 1]).unwrap();
/// assert_eq!(frame.len(), HEAD_LEN + 2 + CRC_LEN);
/// let (body, crc) = frame.split_at(frame.len() - CRC_LEN);
/// assert_eq!(&body[HEAD_LEN..], b"hi");
/// assert_eq!(crc, crc32(body).to_le_bytes());
/// ```
pub const CRC_LEN: usize = 4;

/// Smallest decoded frame: an empty payload.
///
/// ```
/// use flightrec_core::link::{FrameEncoder, FrameHead, FrameKind, MIN_FRAME_LEN};
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq: 0 };
/// let mut wire = [0u8; 32];
/// let n = FrameEncoder::new(head, b"").fill(&mut wire);
/// assert_eq!(cobs::decode_vec(&wire[..n - 1]).unwrap().len(), MIN_FRAME_LEN);
/// assert_eq!(MIN_FRAME_LEN, 11);
/// ```
pub const MIN_FRAME_LEN: usize = HEAD_LEN + CRC_LEN;

/// What a frame's payload is.
///
/// ```
/// use flightrec_core::link::FrameKind;
/// assert_eq!(FrameKind::from_number(2), Some(FrameKind::FdrBuffer));
/// assert_eq!(FrameKind::FdrBuffer.number(), 2);
/// assert_eq!(FrameKind::from_number(7), Some(FrameKind::FdrPacked));
/// assert_eq!(FrameKind::from_number(9), None);
/// assert_eq!(FrameKind::Trace2Line.name(), "trace2-line");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameKind {
    /// The 32-byte FDR file header of the source's trace. Sent before the source's
    /// first buffer and again from time to time, so a receiver that joins late can
    /// start its file.
    FileHeader,
    /// One finished FDR buffer of the source (a complete, valid FDR buffer).
    FdrBuffer,
    /// One git Trace2 line (with or without its trailing LF).
    Trace2Line,
    /// The source's counters: a [`LinkStats`] payload.
    Stats,
    /// One finished FDR buffer of the source in its compact form (see
    /// [`compact`](super::compact)), which the receiver expands back to the buffer.
    FdrCompact,
    /// One Trace2 event in its compact form (see [`trace2`](super::trace2)), which
    /// the receiver formats as git's line.
    Trace2Compact,
    /// One finished FDR buffer of the source in its packed form: the compact form
    /// with metadata records packed (see [`compact`](super::compact)), which the
    /// receiver unpacks back to the buffer.
    FdrPacked,
}

impl FrameKind {
    /// The number in the low nibble of the tag byte. Example on [`FrameKind`].
    pub const fn number(self) -> u8 {
        match self {
            FrameKind::FileHeader => 1,
            FrameKind::FdrBuffer => 2,
            FrameKind::Trace2Line => 3,
            FrameKind::Stats => 4,
            FrameKind::FdrCompact => 5,
            FrameKind::Trace2Compact => 6,
            FrameKind::FdrPacked => 7,
        }
    }

    /// The kind with that number. Example on [`FrameKind`].
    pub const fn from_number(n: u8) -> Option<Self> {
        match n {
            1 => Some(FrameKind::FileHeader),
            2 => Some(FrameKind::FdrBuffer),
            3 => Some(FrameKind::Trace2Line),
            4 => Some(FrameKind::Stats),
            5 => Some(FrameKind::FdrCompact),
            6 => Some(FrameKind::Trace2Compact),
            7 => Some(FrameKind::FdrPacked),
            _ => None,
        }
    }

    /// A lower-case name for messages. Example on [`FrameKind`].
    pub const fn name(self) -> &'static str {
        match self {
            FrameKind::FileHeader => "file-header",
            FrameKind::FdrBuffer => "fdr-buffer",
            FrameKind::Trace2Line => "trace2-line",
            FrameKind::Stats => "stats",
            FrameKind::FdrCompact => "fdr-compact",
            FrameKind::Trace2Compact => "trace2-compact",
            FrameKind::FdrPacked => "fdr-packed",
        }
    }
}

/// The fields before a frame's payload.
///
/// `source` names the recording context (a thread id, a core, an RTOS task, an
/// interrupt level); `seq` counts the frames of one [`LinkWriter`](super::LinkWriter)
/// (wrapping), so a receiver sees how many frames it lost.
///
/// ```
/// use flightrec_core::link::{FrameHead, FrameKind};
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 7, seq: 300 };
/// let bytes = head.to_bytes();
/// assert_eq!(bytes, [0x13, 7, 0, 0, 0, 0x2c, 0x01]);
/// assert_eq!(FrameHead::parse(&bytes), Ok(head));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameHead {
    /// What the payload is.
    pub kind: FrameKind,
    /// Which recording context it comes from.
    pub source: u32,
    /// The writer's frame counter.
    pub seq: u16,
}

/// Why a decoded frame's head is not one this crate reads.
///
/// ```
/// use flightrec_core::link::{FrameHead, HeadError};
/// assert_eq!(FrameHead::parse(&[0x13, 1, 0]), Err(HeadError::Truncated));
/// // Tag 0x23: link version 2.
/// assert_eq!(FrameHead::parse(&[0x23, 1, 0, 0, 0, 0, 0]), Err(HeadError::Version(2)));
/// // Tag 0x1f: kind 15.
/// assert_eq!(FrameHead::parse(&[0x1f, 1, 0, 0, 0, 0, 0]), Err(HeadError::Kind(15)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeadError {
    /// Fewer than 7 bytes.
    Truncated,
    /// The tag's high nibble is not [`LINK_VERSION`].
    Version(u8),
    /// The tag's low nibble names no [`FrameKind`].
    Kind(u8),
}

impl FrameHead {
    /// The 7 head bytes. Example on [`FrameHead`].
    pub const fn to_bytes(&self) -> [u8; HEAD_LEN] {
        let s = self.source.to_le_bytes();
        let q = self.seq.to_le_bytes();
        [
            LINK_VERSION << 4 | self.kind.number(),
            s[0],
            s[1],
            s[2],
            s[3],
            q[0],
            q[1],
        ]
    }

    /// Reads the head from the start of a decoded frame (bytes after the head are
    /// ignored). Example on [`FrameHead`]; the errors are shown on [`HeadError`].
    pub fn parse(bytes: &[u8]) -> Result<Self, HeadError> {
        let Some(&[tag, s0, s1, s2, s3, q0, q1]) = bytes.first_chunk::<HEAD_LEN>() else {
            return Err(HeadError::Truncated);
        };
        if tag >> 4 != LINK_VERSION {
            return Err(HeadError::Version(tag >> 4));
        }
        let kind = FrameKind::from_number(tag & 0x0f).ok_or(HeadError::Kind(tag & 0x0f))?;
        Ok(Self {
            kind,
            source: u32::from_le_bytes([s0, s1, s2, s3]),
            seq: u16::from_le_bytes([q0, q1]),
        })
    }
}

/// A frame that passed its CRC check: the head and the payload.
///
/// ```
/// use flightrec_core::link::{Event, Frame, FrameDecoder, FrameEncoder, FrameHead, FrameKind};
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 2, seq: 41 };
/// let mut wire = [0u8; 32];
/// let n = FrameEncoder::new(head, b"line\n").fill(&mut wire);
/// let mut buf = [0u8; 32];
/// let mut dec = FrameDecoder::new(&mut buf);
/// let (_, event) = dec.feed(&wire[..n]);
/// assert_eq!(event, Some(Event::Frame(Frame { head, payload: b"line\n" })));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Frame<'a> {
    /// Kind, source and sequence number.
    pub head: FrameHead,
    /// The payload (what the kind says it is).
    pub payload: &'a [u8],
}

/// The counters a [`FrameKind::Stats`] frame carries: the source ring's
/// [`RingStats`] and the frames its link writer could not send.
///
/// ```
/// use flightrec_core::fdr::ring::RingStats;
/// use flightrec_core::link::LinkStats;
/// let s = LinkStats {
///     ring: RingStats { buffers_finished: 9, buffers_consumed: 8, records_dropped: 120, buffers_overwritten: 0 },
///     frames_failed: 1,
/// };
/// let bytes = s.to_bytes();
/// assert_eq!(bytes.len(), LinkStats::LEN);
/// assert_eq!(bytes[..4], 9u32.to_le_bytes()); // buffers_finished first
/// assert_eq!(bytes[16..], 1u32.to_le_bytes()); // frames_failed last
/// assert_eq!(LinkStats::parse(&bytes), Some(s));
/// assert_eq!(LinkStats::parse(&bytes[..19]), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkStats {
    /// The ring's counters (records dropped, buffers overwritten, ...).
    pub ring: RingStats,
    /// Frames the writer gave up on because the sink failed.
    pub frames_failed: u32,
}

impl LinkStats {
    /// Payload length of a stats frame. Example on [`LinkStats`].
    pub const LEN: usize = 20;

    /// The payload bytes: five little-endian `u32`s, in field order (the ring's
    /// four counters, then `frames_failed`). Example on [`LinkStats`].
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let fields = [
            self.ring.buffers_finished,
            self.ring.buffers_consumed,
            self.ring.records_dropped,
            self.ring.buffers_overwritten,
            self.frames_failed,
        ];
        let mut out = [0u8; Self::LEN];
        for (chunk, v) in out.chunks_exact_mut(4).zip(fields) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Reads a stats payload: [`LinkStats::LEN`] bytes, then the counts of
    /// records made in contexts without a ring
    /// ([`NoRingCount::parse_all`](super::NoRingCount::parse_all) reads them from
    /// `payload[LinkStats::LEN..]`; a writer older than them sends none). `None`
    /// when either part is malformed. Example on [`LinkStats`].
    pub fn parse(payload: &[u8]) -> Option<Self> {
        let (bytes, rest) = payload.split_first_chunk::<{ Self::LEN }>()?;
        super::NoRingCount::parse_all(rest).map(drop)?;
        let mut v = [0u32; 5];
        for (slot, chunk) in v.iter_mut().zip(bytes.chunks_exact(4)) {
            let mut word = [0u8; 4];
            word.copy_from_slice(chunk);
            *slot = u32::from_le_bytes(word);
        }
        Some(Self {
            ring: RingStats {
                buffers_finished: v[0],
                buffers_consumed: v[1],
                records_dropped: v[2],
                buffers_overwritten: v[3],
            },
            frames_failed: v[4],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_rejects_other_versions_and_kinds() {
        assert_eq!(
            FrameHead::parse(&[0x12, 0, 0, 0]),
            Err(HeadError::Truncated)
        );
        assert_eq!(
            FrameHead::parse(&[0x22, 0, 0, 0, 0, 0, 0]),
            Err(HeadError::Version(2))
        );
        assert_eq!(
            FrameHead::parse(&[0x18, 0, 0, 0, 0, 0, 0]),
            Err(HeadError::Kind(8))
        );
        for n in 0..16 {
            if let Some(k) = FrameKind::from_number(n) {
                assert_eq!(k.number(), n);
            }
        }
    }

    #[test]
    fn stats_payload_must_be_exact() {
        assert_eq!(LinkStats::parse(&[0; 19]), None);
        assert_eq!(LinkStats::parse(&[0; 21]), None);
        assert_eq!(LinkStats::parse(&[0; 20]), Some(LinkStats::default()));
    }
}
