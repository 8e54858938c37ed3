//! Fast twin of [`encoder`](super::encoder): a frame stuffed (COBS) in place as its
//! bytes come, which must write byte for byte what [`FrameEncoder`](super::FrameEncoder)
//! writes of the same frame (a leading delimiter, the stuffed head, payload and
//! check, the closing delimiter). [`LinkWriter`](super::LinkWriter) sends every frame
//! through it. Its tests, and the fuzz target
//! `link_writer` (plain frames), compare the two.

use embedded_io::Write;

use super::crc;
use super::frame::FrameHead;
use super::trace2::Put;

/// Whether a packed metadata record is made from the record's words (loaded in
/// one instruction each where the core loads unaligned words) or its bytes (on
/// cores without, where assembling the words from bytes takes more flash than
/// the byte loops). ARMv6-M is told apart by what
/// stable `cfg` shows of it: no 32-bit compare-and-swap (it has neither that
/// nor unaligned loads; ARMv7-M has both). Both ways make the same bytes
/// (`tests::packed_by_words_and_by_bytes_agree`). `--cfg flightrec_thumbv6m_paths`
/// takes the ARMv6-M way on any target, so that the tests (and Miri) run it on
/// the host.
pub(super) const BY_WORDS: bool = !cfg!(any(
    all(target_arch = "arm", not(target_has_atomic = "32")),
    flightrec_thumbv6m_paths
));

/// Bytes of a [`Stuffer`]'s output: room for a whole block (code, 254 data bytes
/// and the delimiter; and a [`WINDOW`] after the code) after at most [`GATHER`]
/// bytes of finished blocks, so that the current block never has to move.
pub(super) const OUT: usize = GATHER + 1 + WINDOW;

/// What the record loop sees of the current block: 256 bytes from its first data
/// byte, so that an index masked to a byte is within it.
pub(super) const WINDOW: usize = 256;

/// Finished blocks a [`Stuffer`] gathers before writing them to the sink: few
/// calls per frame.
pub(super) const GATHER: usize = 128;

/// A frame stuffed (COBS) as its bytes come, for payloads made on the fly, in
/// place: the current block's code byte is reserved at `code_at` in `out` and
/// written when the block ends (at a zero, or full at 254 bytes); its bytes follow
/// it. Once more than [`GATHER`] bytes of finished blocks are in `out`, they go to
/// the sink and the next block starts at the front. The CRC follows the bytes. The
/// first sink error ends the frame (nothing more is written). Nothing is copied
/// or moved within `out`, which would link a `memmove` into the firmware.
pub(super) struct Stuffer<'w, W: Write> {
    pub(super) sink: &'w mut W,
    /// Finished blocks, then the current block: its code byte at `code_at`, its
    /// bytes at `code_at + 1..w`. Always `code_at <= GATHER` (so
    /// `code_at + 256 <= OUT`) and `code_at < w <= code_at + 255`. The caller's,
    /// so that making a `Stuffer` copies none of it.
    pub(super) out: &'w mut [u8; OUT],
    pub(super) code_at: usize,
    pub(super) w: usize,
    /// The last block ended full and nothing came after it.
    pub(super) after_full: bool,
    pub(super) crc: crc::Crc32c,
    pub(super) result: Result<(), W::Error>,
}

impl<'w, W: Write> Stuffer<'w, W> {
    /// A frame into `out`, with a leading delimiter if `lead`.
    pub(super) fn new(sink: &'w mut W, out: &'w mut [u8; OUT], lead: bool) -> Self {
        // With `lead`, `out[0]` is the leading 0x00.
        out[0] = 0;
        let code_at = usize::from(lead);
        Self {
            sink,
            out,
            code_at,
            w: code_at + 1,
            after_full: false,
            crc: crc::Crc32c::new(),
            result: Ok(()),
        }
    }

    /// A frame into `out` that starts with `head` (after a leading delimiter if
    /// `lead`): its seven bytes stuffed from the empty frame, where no block can
    /// fill up and none is gathered yet, so without `push`'s tests.
    #[inline(always)]
    pub(super) fn with_head(
        sink: &'w mut W,
        out: &'w mut [u8; OUT],
        lead: bool,
        head: &FrameHead,
    ) -> Self {
        let mut frame = Self::new(sink, out, lead);
        if !BY_WORDS {
            // ARMv6-M: through `push`, whose one copy costs less flash than
            // a second loop (and a little time a frame).
            frame.push(&head.to_bytes());
            return frame;
        }
        let (mut w, mut code_at, mut crc) = (frame.w, frame.code_at, frame.crc);
        for b in head.to_bytes() {
            crc.byte(b);
            if b != 0 {
                if let Some(slot) = frame.out.get_mut(w) {
                    *slot = b;
                }
            } else {
                // The block ends at the zero, whose place is the next one's
                // code (1..=8: fits a byte).
                if let Some(code) = frame.out.get_mut(code_at) {
                    *code = (w - code_at) as u8;
                }
                code_at = w;
            }
            w += 1;
        }
        (frame.w, frame.code_at, frame.crc) = (w, code_at, crc);
        frame
    }

    /// Adds `bytes` to the frame and to the check. One copy, called a few times
    /// a frame (a payload of bytes; on ARMv6-M also the head, metadata records'
    /// first bytes and the check), its loop with registers to itself.
    #[inline(never)]
    pub(super) fn push(&mut self, bytes: &[u8]) {
        // In one pass with the block in registers.
        let mut w = self.w;
        let mut code_at = self.code_at;
        let mut crc = self.crc;
        for &b in bytes {
            crc.byte(b);
            if b != 0 {
                if let Some(slot) = self.out.get_mut(w) {
                    *slot = b;
                }
                w += 1;
                if w - code_at < 255 {
                    continue;
                }
            }
            // The block ends: at a zero (dropped), or full (a code of 255).
            self.after_full = b != 0;
            if let Some(code) = self.out.get_mut(code_at) {
                // 1..=255: fits a byte.
                *code = (w - code_at) as u8;
            }
            code_at = w;
            if code_at > GATHER {
                self.write_finished(code_at);
                code_at = 0;
            }
            w = code_at + 1;
        }
        self.w = w;
        self.code_at = code_at;
        self.crc = crc;
    }

    /// Ends the current block: its code is its length with the code byte (255 for
    /// a `full` block, which implies no zero; below, the zero that ended it).
    #[inline(never)]
    pub(super) fn end_block(&mut self, full: bool) {
        self.w = self.end_at(self.w, full);
    }

    /// Writes the finished blocks, `out[..end]`, to the sink; the next block
    /// starts at the front.
    #[inline(never)]
    pub(super) fn write_finished(&mut self, end: usize) {
        if self.result.is_ok() {
            self.result = self.sink.write_all(self.out.get(..end).unwrap_or(&[]));
        }
    }

    /// Appends the CRC, ends the last block (its implied zero dropped), and writes
    /// what is gathered with the delimiter.
    pub(super) fn finish(mut self) -> Result<(), W::Error> {
        let crc = self.crc.finish().to_le_bytes();
        if BY_WORDS && self.w + crc.len() - self.code_at < 255 {
            // Room for the four: no block fills up, so only a zero of theirs
            // ends one (without `push`'s tests and check). ARMv6-M takes
            // `push`, for less flash at a little time a frame.
            let mut w = self.w;
            for b in crc {
                w = if b == 0 {
                    self.end_at(w, false)
                } else {
                    if let Some(slot) = self.out.get_mut(w) {
                        *slot = b;
                    }
                    w + 1
                };
            }
            self.w = w;
        } else {
            // Through `push` (its one copy of the stuffing loop): it also adds
            // these bytes to the check, which nothing reads any more.
            self.push(&crc);
        }
        // A frame that ends with a full block needs no empty last block (as the
        // `cobs` crate encodes it).
        let end = if self.after_full && self.w == self.code_at + 1 {
            self.code_at
        } else {
            // 1..=255: fits a byte.
            let n = self.w - self.code_at;
            if let Some(code) = self.out.get_mut(self.code_at) {
                *code = n as u8;
            }
            self.w
        };
        // The delimiter: `end <= code_at + 255 < OUT`.
        if let Some(d) = self.out.get_mut(end) {
            *d = 0;
        }
        // The one out-of-line copy of the sink's write.
        self.write_finished(end + 1);
        self.result
    }
}

impl<W: Write> Put for Stuffer<'_, W> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.push(bytes);
    }
}

impl<W: Write> Stuffer<'_, W> {
    /// Stuffs `b`, which is not 0, at `w`, the current block's end; returns the
    /// new end. `push`'s step for a byte that cannot end a block early.
    #[inline(always)]
    pub(super) fn put_nonzero(&mut self, mut w: usize, b: u8) -> usize {
        if let Some(slot) = self.out.get_mut(w) {
            *slot = b;
        }
        w += 1;
        if w - self.code_at < 255 {
            return w;
        }
        // The block is full (a code of 255).
        self.end_at(w, true)
    }

    /// Ends the current block at `w`, `full` or at a zero (which `w` is the place
    /// of): its code is its length with the code byte, 1..=255. Returns the next
    /// block's first byte's place. `end_block`'s body, in line for callers that
    /// keep the block's end in a register.
    #[inline(always)]
    pub(super) fn end_at(&mut self, w: usize, full: bool) -> usize {
        self.after_full = full;
        if let Some(code) = self.out.get_mut(self.code_at) {
            *code = (w - self.code_at) as u8;
        }
        self.code_at = w;
        if w > GATHER {
            self.write_finished(w);
            self.code_at = 0;
        }
        self.code_at + 1
    }
}

#[cfg(test)]
mod tests;
