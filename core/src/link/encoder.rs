//! Byte stuffing of one frame, produced a chunk at a time into caller memory.
//!
//! COBS (Consistent Overhead Byte Stuffing) removes every zero byte from the frame at
//! a cost of one byte per 254, so a single `0x00` can end each frame: a receiver that
//! loses bytes or joins mid-stream is back in step at the next zero.
//!
//! The encoder reads the frame's three parts (head, payload, CRC) where they lie and
//! writes into whatever room the caller has, so a 4 KiB FDR buffer goes out without a
//! second 4 KiB of RAM. Its output is exactly what the `cobs` crate's `encode` makes
//! of the concatenated frame (the tests check this), followed by the `0x00`
//! delimiter; the receiving side decodes with the `cobs` crate.

use super::crc;
use super::frame::{FrameHead, CRC_LEN, HEAD_LEN};

/// Longest run of non-zero bytes one COBS block carries.
pub(crate) const MAX_RUN: usize = 254;

/// Where the encoder is in its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// A `0x00` before the frame, so it cannot be glued to damaged bytes before it.
    Lead,
    /// The next byte out is a block's code byte.
    Code,
    /// Copying the current block's data bytes.
    Data,
    /// The closing `0x00`.
    Trailer,
    Done,
}

/// Encodes one frame incrementally.
///
/// ```
/// use flightrec_core::link::{FrameEncoder, FrameHead, FrameKind};
/// let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq: 0 };
/// let mut enc = FrameEncoder::new(head, b"hello\n");
/// let mut wire = Vec::new();
/// let mut chunk = [0u8; 4]; // any size works, even 1
/// loop {
///     let n = enc.fill(&mut chunk);
///     if n == 0 { break; }
///     wire.extend_from_slice(&chunk[..n]);
/// }
/// assert!(enc.is_done());
/// assert_eq!(wire.last(), Some(&0));
/// assert_eq!(wire.iter().filter(|&&b| b == 0).count(), 1);
/// assert!(wire.len() <= FrameEncoder::max_encoded_len(6));
/// // Standard COBS: the `cobs` crate un-stuffs it to head, payload and CRC.
/// let frame = cobs::decode_vec(&wire[..wire.len() - 1]).unwrap();
/// assert_eq!(&frame[7..13], b"hello\n");
/// ```
#[derive(Clone, Debug)]
pub struct FrameEncoder<'p> {
    head: [u8; HEAD_LEN],
    payload: &'p [u8],
    crc: [u8; CRC_LEN],
    /// Next logical byte (head, then payload, then CRC) to emit or skip.
    pos: usize,
    /// Data bytes left in the current block.
    block_left: usize,
    /// What ends the current block: a zero byte of the frame (skipped), the end of
    /// the frame, or nothing (a full 254-byte block).
    block_end: BlockEnd,
    stage: Stage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockEnd {
    Zero,
    Frame,
    Full,
}

impl<'p> FrameEncoder<'p> {
    /// An encoder for the frame `head` + `payload` + CRC, without a leading `0x00`.
    /// Example on [`FrameEncoder`].
    pub fn new(head: FrameHead, payload: &'p [u8]) -> Self {
        let head = head.to_bytes();
        let mut crc = crc::Crc32c::new();
        crc.update(&head);
        crc.update(payload);
        Self {
            head,
            payload,
            crc: crc.finish().to_le_bytes(),
            pos: 0,
            block_left: 0,
            block_end: BlockEnd::Frame,
            stage: Stage::Code,
        }
    }

    /// Starts the output with a `0x00`, which ends whatever damaged bytes a
    /// receiver holds (after a failed write, or for the first frame of a link).
    /// Only takes effect before the first byte is produced.
    ///
    /// ```
    /// use flightrec_core::link::{FrameEncoder, FrameHead, FrameKind};
    /// let head = FrameHead { kind: FrameKind::Trace2Line, source: 1, seq: 0 };
    /// let mut plain = [0u8; 32];
    /// let n = FrameEncoder::new(head, b"x").fill(&mut plain);
    /// let mut led = [0u8; 32];
    /// let m = FrameEncoder::new(head, b"x").with_leading_delimiter(true).fill(&mut led);
    /// assert_eq!(m, n + 1);
    /// assert_eq!(led[0], 0);
    /// assert_eq!(led[1..m], plain[..n]);
    /// ```
    pub fn with_leading_delimiter(mut self, lead: bool) -> Self {
        if lead && self.stage == Stage::Code && self.pos == 0 {
            self.stage = Stage::Lead;
        }
        self
    }

    /// The most bytes a frame with `payload_len` payload bytes takes on the wire,
    /// leading and closing delimiters included: size the caller buffer of a
    /// [`FrameDecoder`](super::FrameDecoder) with it. Example on [`FrameEncoder`].
    pub const fn max_encoded_len(payload_len: usize) -> usize {
        // Saturates: no buffer holds a frame whose length does not fit `usize`.
        let frame = payload_len.saturating_add(HEAD_LEN + CRC_LEN);
        frame.saturating_add(frame / MAX_RUN).saturating_add(3)
    }

    /// Whether every byte has been produced. Example on [`FrameEncoder`].
    pub fn is_done(&self) -> bool {
        self.stage == Stage::Done
    }

    fn logical_len(&self) -> usize {
        HEAD_LEN + self.payload.len() + CRC_LEN
    }

    /// The frame's bytes from logical position `pos` to the end of the part that
    /// holds it.
    fn part_from(&self, pos: usize) -> &[u8] {
        let payload_end = HEAD_LEN + self.payload.len();
        if pos < HEAD_LEN {
            self.head.get(pos..).unwrap_or(&[])
        } else if pos < payload_end {
            self.payload.get(pos - HEAD_LEN..).unwrap_or(&[])
        } else {
            self.crc.get(pos - payload_end..).unwrap_or(&[])
        }
    }

    /// Number of non-zero bytes from `self.pos`, at most [`MAX_RUN`].
    fn run_len(&self) -> usize {
        let mut run = 0;
        let mut at = self.pos;
        let len = self.logical_len();
        while run < MAX_RUN && at < len {
            let part = self.part_from(at);
            let part = part.get(..(MAX_RUN - run).min(part.len())).unwrap_or(&[]);
            if part.is_empty() {
                break;
            }
            match part.iter().position(|&b| b == 0) {
                Some(z) => return run + z,
                None => {
                    run += part.len();
                    at += part.len();
                }
            }
        }
        run
    }

    /// Encodes complete zero-terminated blocks of `part` into `out` from `*n` on;
    /// advances `*n` past them and returns how many bytes of `part` they used.
    fn blocks_within(part: &[u8], out: &mut [u8], n: &mut usize) -> usize {
        let mut used = 0;
        let mut code_at = *n;
        let mut w = code_at + 1;
        let mut run = 0;
        for (k, &b) in part.iter().enumerate() {
            if b == 0 {
                let Some(code) = out.get_mut(code_at) else {
                    break;
                };
                // run < MAX_RUN here, so run + 1 fits a byte.
                *code = (run + 1) as u8;
                used = k + 1;
                *n = w;
                code_at = w;
                w += 1;
                run = 0;
            } else {
                if run + 1 >= MAX_RUN {
                    break;
                }
                let Some(slot) = out.get_mut(w) else {
                    break;
                };
                *slot = b;
                w += 1;
                run += 1;
            }
        }
        used
    }

    /// Writes the next encoded bytes into `out` and returns how many; 0 once
    /// [`is_done`](Self::is_done) (or when `out` is empty). The output does not
    /// depend on how it is cut into calls. Example on [`FrameEncoder`].
    pub fn fill(&mut self, out: &mut [u8]) -> usize {
        let mut n = 0;
        while n < out.len() {
            match self.stage {
                Stage::Done => break,
                Stage::Lead => {
                    out[n] = 0;
                    n += 1;
                    self.stage = Stage::Code;
                }
                Stage::Code => {
                    // Fast path: encode whole blocks that end with a zero inside the
                    // current part, copying and scanning in one pass and writing each
                    // code byte once the block is complete. What does not fit (a block
                    // crossing a part, a full 254-byte block, the end of `out`) is left
                    // to the general path below.
                    let used = Self::blocks_within(self.part_from(self.pos), out, &mut n);
                    if used > 0 {
                        self.pos += used;
                        continue;
                    }
                    let run = self.run_len();
                    let end = self.pos + run;
                    // A full block that ends the frame needs no empty block after
                    // it (the `cobs` crate's choice, and one byte shorter).
                    self.block_end = if end >= self.logical_len() {
                        BlockEnd::Frame
                    } else if run == MAX_RUN {
                        BlockEnd::Full
                    } else {
                        BlockEnd::Zero
                    };
                    // run <= 254, so run + 1 fits a byte; a full block's code is 0xFF.
                    out[n] = (run + 1) as u8;
                    n += 1;
                    self.block_left = run;
                    self.stage = Stage::Data;
                }
                Stage::Data => {
                    if self.block_left > 0 {
                        let part = self.part_from(self.pos);
                        let take = self.block_left.min(part.len()).min(out.len() - n);
                        let (Some(dst), Some(src)) = (out.get_mut(n..n + take), part.get(..take))
                        else {
                            break;
                        };
                        dst.copy_from_slice(src);
                        n += take;
                        self.pos += take;
                        self.block_left -= take;
                    }
                    if self.block_left == 0 {
                        self.stage = match self.block_end {
                            BlockEnd::Zero => {
                                self.pos += 1;
                                Stage::Code
                            }
                            BlockEnd::Full => Stage::Code,
                            BlockEnd::Frame => Stage::Trailer,
                        };
                    }
                }
                Stage::Trailer => {
                    out[n] = 0;
                    n += 1;
                    self.stage = Stage::Done;
                }
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::FrameKind;

    fn encode_all(enc: &mut FrameEncoder<'_>, chunk: usize) -> ([u8; 1200], usize) {
        let mut out = [0u8; 1200];
        let mut len = 0;
        let mut buf = [0u8; 300];
        loop {
            let n = enc.fill(&mut buf[..chunk]);
            if n == 0 {
                break;
            }
            out[len..len + n].copy_from_slice(&buf[..n]);
            len += n;
        }
        (out, len)
    }

    #[test]
    fn chunk_size_does_not_change_the_output() {
        let head = FrameHead {
            kind: FrameKind::FdrBuffer,
            source: 0,
            seq: 0,
        };
        let mut payload = [0u8; 700];
        for (i, b) in payload.iter_mut().enumerate() {
            *b = if i % 300 < 260 {
                1 + (i % 200) as u8
            } else {
                0
            };
        }
        let (reference, len) = encode_all(&mut FrameEncoder::new(head, &payload), 300);
        for chunk in [1, 2, 7, 64, 255, 256] {
            let (out, n) = encode_all(&mut FrameEncoder::new(head, &payload), chunk);
            assert_eq!(&out[..n], &reference[..len], "chunk {chunk}");
        }
        assert!(len <= FrameEncoder::max_encoded_len(payload.len()));
        assert_eq!(reference[..len - 1].iter().filter(|&&b| b == 0).count(), 0);
    }
}
