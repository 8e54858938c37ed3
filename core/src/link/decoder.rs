//! The receiving side: a state machine that turns wire bytes back into frames.
//!
//! Bytes are collected up to each `0x00` delimiter into a buffer the caller owns,
//! then un-stuffed in place (with the `cobs` crate), checked against their CRC and
//! parsed. Whatever fails is reported as [`Damage`] and its bytes are counted as
//! skipped; the next delimiter starts afresh. So a receiver that joins mid-stream
//! loses only the frame it joined in, and corrupted or lost bytes cost only the
//! frames they touch. Wire input never makes it panic.

use super::crc;
use super::frame::{Frame, FrameHead, HeadError, CRC_LEN, HEAD_LEN, MIN_FRAME_LEN};

/// Why a run of bytes between two delimiters was not accepted as a frame.
///
/// ```
/// use flightrec_core::link::{crc32, DamageKind, Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind, HeadError};
///
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq: 0 };
/// let mut flipped = [0u8; 32];
/// let n = FrameEncoder::new(head, b"line\n").fill(&mut flipped);
/// let l = flipped.iter().position(|&b| b == b'l').unwrap();
/// flipped[l] = b'L'; // one payload byte changed on the way
///
/// let mut long = [0u8; 64];
/// let m = FrameEncoder::new(head, &[7; 40]).fill(&mut long);
///
/// // A correct CRC, but link version 2 in the tag.
/// let mut v2 = vec![0x23, 1, 0, 0, 0, 0, 0];
/// v2.extend_from_slice(&crc32(&v2).to_le_bytes());
/// let mut v2_wire = cobs::encode_vec(&v2);
/// v2_wire.push(0);
///
/// let runs: [(&[u8], DamageKind); 5] = [
///     (&[0x05, 0x01, 0x00], DamageKind::Stuffing), // the code byte promises 4 bytes
///     (&[0x02, 0x05, 0x00], DamageKind::TooShort), // one byte, no head or CRC
///     (&flipped[..n], DamageKind::Crc),
///     (&long[..m], DamageKind::TooLong), // more than the decoder's 32 bytes
///     (&v2_wire, DamageKind::Head(HeadError::Version(2))),
/// ];
/// let mut buf = [0u8; 32];
/// let mut dec = FrameDecoder::new(&mut buf);
/// for (run, kind) in runs {
///     let (used, event) = dec.feed(run);
///     assert_eq!(used, run.len());
///     assert!(matches!(event, Some(Event::Damaged(d)) if d.kind == kind), "{event:?}");
/// }
/// assert_eq!((dec.stats().crc_failures, dec.stats().malformed), (1, 4));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DamageKind {
    /// The bytes are not valid COBS.
    Stuffing,
    /// Shorter than a frame's head and CRC.
    TooShort,
    /// The CRC does not match.
    Crc,
    /// A frame longer than the decoder's buffer.
    TooLong,
    /// A correct CRC but a head this version does not read (another link version
    /// or an unknown kind).
    Head(HeadError),
}

/// A rejected run of bytes: why, and how many wire bytes it cost (its delimiter
/// included).
///
/// ```
/// use flightrec_core::link::{Damage, DamageKind, Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind};
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq: 0 };
/// let mut wire = [0u8; 32];
/// let n = FrameEncoder::new(head, b"abc").fill(&mut wire);
/// let a = wire.iter().position(|&b| b == b'a').unwrap();
/// wire[a] = b'x';
/// let mut buf = [0u8; 32];
/// let mut dec = FrameDecoder::new(&mut buf);
/// let (_, event) = dec.feed(&wire[..n]);
/// assert_eq!(event, Some(Event::Damaged(Damage { kind: DamageKind::Crc, bytes: n })));
/// assert_eq!(dec.stats().bytes_skipped, n as u64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Damage {
    /// Why it was rejected.
    pub kind: DamageKind,
    /// Wire bytes skipped.
    pub bytes: usize,
}

/// What [`FrameDecoder::feed`] found.
///
/// ```
/// use flightrec_core::link::{Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind};
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq: 5 };
/// let mut input = vec![0x42, 0x17, 0x00]; // the tail of a frame heard halfway
/// let mut wire = [0u8; 32];
/// let n = FrameEncoder::new(head, b"x").fill(&mut wire);
/// input.extend_from_slice(&wire[..n]);
///
/// let mut buf = [0u8; 32];
/// let mut dec = FrameDecoder::new(&mut buf);
/// let mut rest = &input[..];
/// let mut log = Vec::new();
/// while !rest.is_empty() {
///     let (used, event) = dec.feed(rest);
///     rest = &rest[used..];
///     match event {
///         Some(Event::Frame(f)) => log.push(format!("frame {}", f.head.seq)),
///         Some(Event::Damaged(d)) => log.push(format!("damaged: {:?}, {} bytes", d.kind, d.bytes)),
///         None => {}
///     }
/// }
/// assert_eq!(log, ["damaged: Stuffing, 3 bytes", "frame 5"]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event<'f> {
    /// A frame whose CRC matched.
    Frame(Frame<'f>),
    /// Bytes that were not a frame.
    Damaged(Damage),
}

/// Counters of a [`FrameDecoder`]. They saturate instead of wrapping.
///
/// ```
/// use flightrec_core::link::{DecoderStats, FrameDecoder, FrameEncoder, FrameHead, FrameKind};
/// let frame = |seq: u16| {
///     let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq };
///     let mut wire = [0u8; 32];
///     let n = FrameEncoder::new(head, b"x").fill(&mut wire);
///     wire[..n].to_vec()
/// };
/// let mut input = vec![0x42, 0x17, 0x00]; // junk: 3 bytes skipped, malformed
/// input.extend(frame(0));
/// let mut bad = frame(1);
/// let x = bad.iter().position(|&b| b == b'x').unwrap();
/// bad[x] = b'y'; // CRC failure: its bytes are skipped
/// input.extend(&bad);
/// input.extend(frame(3)); // seq 2 never arrived
///
/// let mut buf = [0u8; 32];
/// let mut dec = FrameDecoder::new(&mut buf);
/// let mut rest = &input[..];
/// while !rest.is_empty() {
///     let (used, _) = dec.feed(rest);
///     rest = &rest[used..];
/// }
/// let expected = DecoderStats {
///     frames: 2,
///     crc_failures: 1,
///     malformed: 1,
///     bytes_skipped: 3 + bad.len() as u64,
///     frames_lost: 2, // seq 1 (damaged) and seq 2 (missing)
/// };
/// assert_eq!(dec.stats(), expected);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DecoderStats {
    /// Frames accepted.
    pub frames: u64,
    /// Runs rejected for a CRC mismatch.
    pub crc_failures: u64,
    /// Runs rejected for any other reason (stuffing, length, head).
    pub malformed: u64,
    /// Wire bytes that belonged to no accepted frame (rejected runs, their
    /// delimiters, and what came before the first delimiter when damaged).
    pub bytes_skipped: u64,
    /// Frames missing by the writer's sequence numbers between accepted frames.
    pub frames_lost: u64,
}

/// Decodes frames from a byte stream into a caller buffer.
///
/// The buffer bounds the longest frame (its stuffed form, without delimiter): size it
/// as [`FrameEncoder::max_encoded_len`](super::FrameEncoder::max_encoded_len) of the
/// largest payload.
///
/// ```
/// use flightrec_core::link::{Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind};
///
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 3, seq: 0 };
/// let mut wire = [0u8; 64];
/// let n = FrameEncoder::new(head, b"line\n").fill(&mut wire);
///
/// // Junk first (a receiver that joined mid-stream), then the frame.
/// let mut input = vec![0x42, 0x17, 0x00];
/// input.extend_from_slice(&wire[..n]);
///
/// let mut buf = [0u8; 256];
/// let mut dec = FrameDecoder::new(&mut buf);
/// let mut rest = &input[..];
/// let mut lines = Vec::new();
/// while !rest.is_empty() {
///     let (used, event) = dec.feed(rest);
///     rest = &rest[used..];
///     if let Some(Event::Frame(f)) = event {
///         lines.push((f.head.source, f.payload.to_vec()));
///     }
/// }
/// assert_eq!(lines, vec![(3, b"line\n".to_vec())]);
/// assert_eq!(dec.stats().bytes_skipped, 3);
/// ```
#[derive(Debug)]
pub struct FrameDecoder<'b> {
    buf: &'b mut [u8],
    /// Bytes of the current run held in `buf`.
    len: usize,
    /// Bytes of the current run (held or not).
    run: usize,
    /// The current run did not fit `buf`.
    overflow: bool,
    last_seq: Option<u16>,
    stats: DecoderStats,
}

impl<'b> FrameDecoder<'b> {
    /// A decoder collecting runs into `buf`. Example on [`FrameDecoder`].
    pub fn new(buf: &'b mut [u8]) -> Self {
        Self {
            buf,
            len: 0,
            run: 0,
            overflow: false,
            last_seq: None,
            stats: DecoderStats::default(),
        }
    }

    /// The counters so far. Example on [`FrameDecoder`]; each counter is shown on
    /// [`DecoderStats`].
    pub fn stats(&self) -> DecoderStats {
        self.stats
    }

    /// Bytes of an unfinished run (waiting for its delimiter). At the end of a
    /// stream they are lost; count them with [`finish`](Self::finish). Example on
    /// [`FrameDecoder::finish`].
    pub fn pending(&self) -> usize {
        self.run
    }

    /// Ends the stream: an unfinished run counts as skipped bytes. Returns how many
    /// bytes that was.
    ///
    /// ```
    /// use flightrec_core::link::FrameDecoder;
    /// let mut buf = [0u8; 16];
    /// let mut dec = FrameDecoder::new(&mut buf);
    /// assert_eq!(dec.feed(&[1, 2, 3]), (3, None)); // no delimiter yet
    /// assert_eq!(dec.pending(), 3);
    /// assert_eq!(dec.finish(), 3);
    /// assert_eq!((dec.pending(), dec.stats().bytes_skipped), (0, 3));
    /// ```
    pub fn finish(&mut self) -> usize {
        let lost = self.run;
        self.stats.bytes_skipped = self.stats.bytes_skipped.saturating_add(lost as u64);
        self.len = 0;
        self.run = 0;
        self.overflow = false;
        lost
    }

    /// Consumes bytes from `input` up to and including the next delimiter, and
    /// returns how many it consumed and what the run before that delimiter was.
    /// Without a delimiter in `input`, all of it is consumed and kept for later.
    /// Empty runs (consecutive delimiters) are not events. Example on
    /// [`FrameDecoder`].
    pub fn feed(&mut self, input: &[u8]) -> (usize, Option<Event<'_>>) {
        let (chunk, used, ended) = match input.iter().position(|&b| b == 0) {
            Some(z) => (input.get(..z).unwrap_or(&[]), z + 1, true),
            None => (input, input.len(), false),
        };
        self.collect(chunk);
        if !ended {
            return (used, None);
        }
        (used, self.end_run())
    }

    fn collect(&mut self, chunk: &[u8]) {
        self.run = self.run.saturating_add(chunk.len());
        if self.overflow {
            return;
        }
        match self.buf.get_mut(self.len..self.len + chunk.len()) {
            Some(dst) => {
                dst.copy_from_slice(chunk);
                self.len += chunk.len();
            }
            None => self.overflow = true,
        }
    }

    fn damaged(&mut self, kind: DamageKind, bytes: usize) -> Option<Event<'_>> {
        let counter = match kind {
            DamageKind::Crc => &mut self.stats.crc_failures,
            _ => &mut self.stats.malformed,
        };
        *counter = counter.saturating_add(1);
        self.stats.bytes_skipped = self.stats.bytes_skipped.saturating_add(bytes as u64);
        Some(Event::Damaged(Damage { kind, bytes }))
    }

    /// Judges the run that a delimiter just closed.
    fn end_run(&mut self) -> Option<Event<'_>> {
        let (len, run, overflow) = (self.len, self.run, self.overflow);
        self.len = 0;
        self.run = 0;
        self.overflow = false;
        if run == 0 {
            return None;
        }
        let wire = run + 1;
        if overflow {
            return self.damaged(DamageKind::TooLong, wire);
        }
        let Some(held) = self.buf.get_mut(..len) else {
            return self.damaged(DamageKind::TooLong, wire);
        };
        let Some(decoded) = cobs_decode_in_place(held) else {
            return self.damaged(DamageKind::Stuffing, wire);
        };
        if decoded < MIN_FRAME_LEN {
            return self.damaged(DamageKind::TooShort, wire);
        }
        let body_len = decoded - CRC_LEN;
        let (body, crc_bytes) = self.buf.split_at(body_len);
        let Some(&crc_le) = crc_bytes.first_chunk::<CRC_LEN>() else {
            return self.damaged(DamageKind::TooShort, wire);
        };
        if crc::crc32(body) != u32::from_le_bytes(crc_le) {
            return self.damaged(DamageKind::Crc, wire);
        }
        let head = match FrameHead::parse(body) {
            Ok(h) => h,
            Err(e) => return self.damaged(DamageKind::Head(e), wire),
        };
        if let Some(last) = self.last_seq {
            let gap = head.seq.wrapping_sub(last).wrapping_sub(1);
            // A large gap is a writer that restarted, not 60 000 lost frames.
            if gap < 0x8000 {
                self.stats.frames_lost = self.stats.frames_lost.saturating_add(u64::from(gap));
            }
        }
        self.last_seq = Some(head.seq);
        self.stats.frames = self.stats.frames.saturating_add(1);
        let payload = self.buf.get(HEAD_LEN..body_len).unwrap_or(&[]);
        Some(Event::Frame(Frame { head, payload }))
    }
}

/// COBS-decodes `buf` in place and returns the decoded length; `None` for an
/// empty frame or a block whose length code runs past the end. `buf` holds the
/// bytes between two delimiters, so it has no zero byte; one would be refused.
/// Byte for byte what the `cobs` crate's `decode_in_place` gives for such input
/// (a test below checks it), without its dependencies (`thiserror`
/// and a second `syn`) in every firmware and program that links the core.
fn cobs_decode_in_place(buf: &mut [u8]) -> Option<usize> {
    if buf.is_empty() {
        return None;
    }
    let (mut read, mut write) = (0usize, 0usize);
    while let Some(&code) = buf.get(read) {
        let code = usize::from(code);
        let end = read.checked_add(code)?;
        if code == 0 || end > buf.len() {
            return None;
        }
        // `write <= read`: the data moves down by one byte per block so far.
        buf.get_mut(write..)?.get(..code - 1)?;
        buf.copy_within(read + 1..end, write);
        write += code - 1;
        read = end;
        if code != 0xFF && read < buf.len() {
            *buf.get_mut(write)? = 0;
            write += 1;
        }
    }
    Some(write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{FrameEncoder, FrameKind};
    use proptest::prelude::*;

    proptest! {
        /// The hand-written decoder gives what the `cobs` crate gives for every
        /// run of non-zero bytes (what the frame decoder holds), valid or not.
        #[test]
        fn cobs_decoding_equals_the_cobs_crate(
            bytes in proptest::collection::vec(1u8..=255, 0..700),
            valid in any::<bool>(),
        ) {
            // Half the cases are real encodings (long zero-free runs included).
            let input = if valid { cobs::encode_vec(&bytes) } else { bytes };
            let (mut ours, mut theirs) = (input.clone(), input);
            let got = cobs_decode_in_place(&mut ours);
            let want = cobs::decode_in_place(&mut theirs).ok();
            prop_assert_eq!(got, want);
            if let Some(n) = got {
                prop_assert_eq!(&ours[..n], &theirs[..n]);
            }
        }
    }

    fn wire(seq: u16, payload: &[u8], out: &mut [u8]) -> usize {
        let head = FrameHead {
            kind: FrameKind::FdrBuffer,
            source: 9,
            seq,
        };
        FrameEncoder::new(head, payload).fill(out)
    }

    #[test]
    fn a_run_longer_than_the_buffer_is_skipped_and_the_next_frame_kept() {
        let mut w = [0u8; 400];
        let a = wire(0, &[7u8; 100], &mut w);
        let b = wire(1, b"ok", &mut w[a..]);
        let mut buf = [0u8; 64];
        let mut dec = FrameDecoder::new(&mut buf);
        let (used, ev) = dec.feed(&w[..a + b]);
        assert_eq!(used, a);
        assert_eq!(
            ev,
            Some(Event::Damaged(Damage {
                kind: DamageKind::TooLong,
                bytes: a
            }))
        );
        let (used2, ev) = dec.feed(&w[a..a + b]);
        assert_eq!(used2, b);
        match ev {
            Some(Event::Frame(f)) => assert_eq!(f.payload, b"ok"),
            other => panic!("{other:?}"),
        }
        assert_eq!(dec.stats().frames, 1);
        assert_eq!(dec.stats().malformed, 1);
        assert_eq!(dec.stats().bytes_skipped, a as u64);
    }

    #[test]
    fn sequence_gaps_count_lost_frames() {
        let mut w = [0u8; 200];
        let mut n = 0;
        for seq in [65534u16, 0, 3] {
            n += wire(seq, b"x", &mut w[n..]);
        }
        let mut buf = [0u8; 64];
        let mut dec = FrameDecoder::new(&mut buf);
        let mut rest = &w[..n];
        while !rest.is_empty() {
            let (used, _) = dec.feed(rest);
            rest = &rest[used..];
        }
        assert_eq!(dec.stats().frames, 3);
        assert_eq!(dec.stats().frames_lost, 1 + 2);
    }

    #[test]
    fn unfinished_run_counts_at_finish() {
        let mut buf = [0u8; 16];
        let mut dec = FrameDecoder::new(&mut buf);
        assert_eq!(dec.feed(&[1, 2, 3]), (3, None));
        assert_eq!(dec.pending(), 3);
        assert_eq!(dec.finish(), 3);
        assert_eq!(dec.stats().bytes_skipped, 3);
        // Consecutive delimiters are no event at all.
        assert_eq!(dec.feed(&[0, 0]), (1, None));
    }
}
