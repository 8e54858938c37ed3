//! Fast twin of [`compact`](super::compact): an FDR buffer's compact and packed
//! forms stuffed straight into a [`Stuffer`]'s frame, which must make byte for byte
//! the frame that [`compact::compact`](super::compact::compact) and
//! [`compact::pack`](super::compact::pack) make through the
//! [`FrameEncoder`](super::FrameEncoder). The record loops here are what almost
//! every byte of a compact frame goes through. Its tests, and the fuzz target
//! `link_writer` (compact and packed frames), compare the two.

use embedded_io::Write;

use super::compact::{one_function, put_varint, Tokens, META, VARINT_MAX};
use super::crc;
use super::encoder::MAX_RUN;
use super::fast_stuffer::{Stuffer, BY_WORDS, WINDOW};

impl<W: Write> Tokens for Stuffer<'_, W> {
    /// A function record's varints, byte-wise: on ARMv6-M, the step of
    /// [`functions_one_by_one`](Self::functions_one_by_one).
    #[inline(always)]
    fn function(&mut self, word: u32, delta: u32) {
        let mut bytes = [0u8; 2 * VARINT_MAX];
        let n = put_varint(word, &mut bytes, 0);
        let n = put_varint(delta, &mut bytes, n);
        self.push(bytes.get(..n).unwrap_or(&[]));
    }

    /// The run of function records at the start of `records`, in one loop with
    /// the block's end and the check in registers: what almost every byte of a
    /// buffer is. It stops at a record whose varints could hold a zero byte (a
    /// word or delta of 0) or might not fit the current block;
    /// [`functions_one_by_one`](Self::functions_one_by_one) takes that one.
    #[inline(never)]
    fn functions(&mut self, records: &[u8]) -> usize {
        self.aligned_functions(records)
    }

    #[inline(always)]
    fn bytes(&mut self, bytes: &[u8]) {
        self.push(bytes);
    }

    /// The records the loops do not take: a record with a varint of 0 (the
    /// first of a buffer, whose delta from the preamble's clock is 0), or the
    /// records from where the loops stop near a block's end (the room for two
    /// longest varints) up to the one that ends the block or runs past it.
    /// Record by record, back through
    /// [`compact_to`](super::compact::compact_to) each time, a block's end would
    /// take several rounds of the frame's token loop. Thumb-2 and wider cores
    /// stuff the varints with the block's end and the check in registers.
    /// ARMv6-M takes one record, `push`ed, as the trait's default does: a loop
    /// of `push`ed records, or the varints stuffed in line, cost it more flash
    /// than they save time.
    #[inline(never)]
    fn functions_one_by_one(&mut self, records: &[u8]) -> usize {
        if !BY_WORDS {
            return one_function(self, records);
        }
        self.records_one_by_one(records)
    }

    /// Packs the record straight into the frame: its first byte and its mask
    /// through the stuffing loop (either byte of the mask may be 0), then its
    /// non-zero bytes, which need no stuffing, each checked and stored as it is
    /// found, the block's end in a register. No copy of the packed record. In
    /// line at its one call, in the frame's token loop: out of line it would
    /// save and restore a frame of registers per metadata record.
    #[inline(always)]
    fn packed_metadata(&mut self, record: &[u8; META]) {
        let mask = packed_mask(record, BY_WORDS);
        let [lo, hi, ..] = mask.to_le_bytes();
        if BY_WORDS {
            // In line, rather than through `push`'s loop and tests.
            let (mut w, mut crc) = (self.w, self.crc);
            // The first byte has bit 0 set: not 0. Either byte of the mask may
            // be (written out: a loop over an array of the two is not
            // unrolled and keeps them in memory).
            crc.byte(record[0]);
            w = self.put_nonzero(w, record[0]);
            crc.byte(lo);
            w = if lo == 0 {
                self.end_at(w, false)
            } else {
                self.put_nonzero(w, lo)
            };
            crc.byte(hi);
            w = if hi == 0 {
                self.end_at(w, false)
            } else {
                self.put_nonzero(w, hi)
            };
            // The non-zero bytes, found from the mask's set bits: a metadata
            // record has few, so this skips its zeros at no cost each (a word
            // at a time, each word's bytes up to its last that is not 0, was
            // slower on the bench's link rows).
            let mut bits = mask;
            while bits != 0 {
                // Bit i is byte 1 + i, i < 15.
                let b = record[(bits.trailing_zeros() as usize + 1) % META];
                crc.byte(b);
                w = self.put_nonzero(w, b);
                bits &= bits - 1;
            }
            self.w = w;
            self.crc = crc;
        } else {
            self.push(&[record[0], lo, hi]);
            let (mut w, mut crc) = (self.w, self.crc);
            packed_bytes(record, BY_WORDS, |b| {
                crc.byte(b);
                w = self.put_nonzero(w, b);
            });
            self.w = w;
            self.crc = crc;
        }
    }
}

/// Bit i: byte 1 + i of `record` is not 0 (the mask of its packed form).
#[inline(always)]
pub(super) fn packed_mask(record: &[u8; META], by_words: bool) -> u32 {
    if by_words {
        let [w0, w1, w2, w3] = le_words(record);
        // The first byte is not in the mask. Most records have all their
        // non-zero bytes in their first word (a buffer's preamble: 4 of 5).
        let mut mask = nonzero_bytes(w0 & !0xFF);
        if w1 | w2 | w3 != 0 {
            mask |= nonzero_bytes(w1) << 4 | nonzero_bytes(w2) << 8 | nonzero_bytes(w3) << 12;
        }
        mask >> 1
    } else {
        let mut mask = 0;
        // An index over the array (its bound a constant): see `pack_metadata`.
        #[allow(clippy::needless_range_loop)]
        for i in 1..META {
            mask |= u32::from(record[i] != 0) << (i - 1);
        }
        mask
    }
}

/// Calls `f` with each byte of `record` after the first that is not 0, in order
/// (the data of its packed form): a word at a time, a word of zeros skipped, or a
/// byte at a time.
#[inline(always)]
pub(super) fn packed_bytes(record: &[u8; META], by_words: bool, mut f: impl FnMut(u8)) {
    if by_words {
        let [w0, w1, w2, w3] = le_words(record);
        for mut x in [w0 & !0xFF, w1, w2, w3] {
            // Up to the word's last byte that is not 0.
            while x != 0 {
                if x as u8 != 0 {
                    f(x as u8);
                }
                x >>= 8;
            }
        }
    } else {
        for &b in &record[1..] {
            if b != 0 {
                f(b);
            }
        }
    }
}

/// The record's four words, little-endian.
#[inline(always)]
pub(super) fn le_words(record: &[u8; META]) -> [u32; 4] {
    let word =
        |i: usize| u32::from_le_bytes([record[i], record[i + 1], record[i + 2], record[i + 3]]);
    [word(0), word(4), word(8), word(12)]
}

/// Bit i: byte i of `x` (little-endian) is not 0. Without a branch: bit 7 of
/// each byte of `t` is set when the byte is not 0 (its low seven bits plus 0x7F
/// carry into bit 7 when they are not 0, and no byte carries into the next),
/// and the multiplication gathers those four bits, each to a place of its own
/// (bits 21 to 24; no two partial products overlap, so nothing carries).
#[inline(always)]
pub(super) fn nonzero_bytes(x: u32) -> u32 {
    let t = (((x & 0x7F7F_7F7F) + 0x7F7F_7F7F) | x) & 0x8080_8080;
    ((t >> 7).wrapping_mul(0x0020_4081) >> 21) & 0xF
}

/// Bytes of a function record.
pub(super) const FUNC: usize = 8;

impl<W: Write> Stuffer<'_, W> {
    /// [`Tokens::functions`], one copy of the record loop: word loads of a run
    /// that starts 4-byte aligned (buffers do; only an event payload whose
    /// length is not a multiple of 4 shifts what follows), one instruction a
    /// word on a core without unaligned access too; 0 for an unaligned run, which
    /// then goes a record at a time the byte-wise way: a second copy of the loop
    /// for unaligned runs would cost flash for a rare case.
    #[inline(always)]
    pub(super) fn aligned_functions(&mut self, records: &[u8]) -> usize {
        // SAFETY: every bit pattern is a `u32`, so viewing the aligned middle of
        // `records` as words is sound; `align_to` gives the prefix before it.
        let (before, words, _) = unsafe { records.align_to::<u32>() };
        if !before.is_empty() {
            return 0;
        }
        self.function_run::<BY_SHAPE>(words.chunks_exact(2).map(|record| match *record {
            [word, delta] => (u32::from_le(word), u32::from_le(delta)),
            _ => (1, 0),
        }))
    }

    /// The loop of [`Tokens::functions`] over the records' words, in order: (1, 0),
    /// which is no function record, ends the run. `BY_SHAPE` chooses the loops
    /// ([`BY_SHAPE`]; the tests run both).
    #[inline(always)]
    pub(super) fn function_run<const BY_SHAPE: bool>(
        &mut self,
        mut records: impl ExactSizeIterator<Item = (u32, u32)>,
    ) -> usize {
        // A 256-byte window from the current block's first data byte: an index
        // masked to a byte needs no check (the block's 254 bytes are within it).
        let start = self.code_at + 1;
        let Some(block) = self
            .out
            .get_mut(start..start + WINDOW)
            .and_then(|b| <&mut [u8; WINDOW]>::try_from(b).ok())
        else {
            return 0;
        };
        // Bytes of the block used so far.
        let mut at = self.w - start;
        let mut crc = self.crc;
        let total = records.len();
        let mut stopped = false;
        if BY_SHAPE {
            (at, crc, stopped) = run_by_shape(block, at, crc, &mut records);
        } else {
            loop {
                // The common record in a loop of its own (a record with one-byte
                // varints, none of them 0, with room in the block), so that its
                // way is the straight one; any other leaves it.
                let mut other = None;
                for (word, delta) in records.by_ref() {
                    // A word that is even and 2..=126 and a delta of 1..=127
                    // (`word_of_one_byte`, `delta_of_one_byte`, written out: the
                    // negated calls make slower Cortex-M0 code).
                    if at > LAST_RECORD_AT
                        || word.wrapping_sub(2).rotate_right(1) > 62
                        || delta.wrapping_sub(1) >= 0x7F
                    {
                        other = Some((word, delta));
                        break;
                    }
                    block[at % WINDOW] = word as u8;
                    block[(at + 1) % WINDOW] = delta as u8;
                    crc.byte(word as u8);
                    crc.byte(delta as u8);
                    at += 2;
                }
                let Some((word, delta)) = other else {
                    break;
                };
                if at > LAST_RECORD_AT || word & 1 != 0 || word == 0 || delta == 0 {
                    stopped = true;
                    break;
                }
                at = put_varint_checked(block, at, word, &mut crc);
                at = put_varint_checked(block, at, delta, &mut crc);
            }
        }
        self.w = start + at;
        self.crc = crc;
        if at == MAX_RUN {
            // A full block (ends no zero).
            self.end_block(true);
        }
        (total - records.len() - usize::from(stopped)) * FUNC
    }
}

/// Whether [`Stuffer::function_run`] takes each common shape of function record
/// in a loop of its own ([`run_by_shape`]) or only records of one-byte varints.
/// ARMv6-M takes the second (told apart as for [`BY_WORDS`]): its eight low
/// registers hold no more loops than one: the shape loops are slower there on
/// most of the bench's link rows, and larger.
pub(super) const BY_SHAPE: bool = BY_WORDS;

/// The last place in a block where a function record's two varints (of up to
/// [`VARINT_MAX`] bytes each) may start.
pub(super) const LAST_RECORD_AT: usize = MAX_RUN - 2 * VARINT_MAX;

/// Stuffs function records from `records` into `block` at `at`, adding their
/// bytes to the check `crc`, while the block has room for one, with a loop for
/// each common shape of record (its varints of one or two bytes, none of them
/// 0), so that a run of one shape goes straight and a record of another shape
/// moves to that shape's loop; any other record goes alone. Returns the
/// block's new end and the check, and whether it stopped at a record it did
/// not take (no room, or a record the caller takes: a zero varint or no
/// function record), which `records` has already given.
///
/// Two-byte words are the common case (a function id of 8 to 1 023, most of a
/// firmware's), one- and two-byte deltas both (gaps below and above 128
/// ticks): a run of those goes straight rather than through the general
/// record (the bench's link rows measure it, `docs/performance.md`).
#[inline(always)]
pub(super) fn run_by_shape(
    block: &mut [u8; WINDOW],
    mut at: usize,
    mut crc: crc::Crc32c,
    records: &mut impl Iterator<Item = (u32, u32)>,
) -> (usize, crc::Crc32c, bool) {
    // The block's place and the check as locals, returned at the end: through
    // references they would be loaded and stored on every record.
    let stopped = 'run: {
        let Some((mut word, mut delta)) = records.next() else {
            break 'run false;
        };
        loop {
            if at > LAST_RECORD_AT {
                break 'run true;
            }
            // Each shape's loop stores the record it starts with, then takes the
            // next while it has the same shape and room. Their bytes are written
            // out: through a helper that loops over a shape's bytes, which
            // opt-level "s" does not unroll, the link rows are much slower.
            if word_of_one_byte(word) && delta_of_one_byte(delta) {
                loop {
                    block[at % WINDOW] = word as u8;
                    block[(at + 1) % WINDOW] = delta as u8;
                    crc.byte(word as u8);
                    crc.byte(delta as u8);
                    at += 2;
                    let Some(next) = records.next() else {
                        break 'run false;
                    };
                    (word, delta) = next;
                    if at > LAST_RECORD_AT || !word_of_one_byte(word) || !delta_of_one_byte(delta) {
                        break;
                    }
                }
            } else if word_of_two_bytes(word) && delta_of_one_byte(delta) {
                loop {
                    let (low, high) = two_varint_bytes(word);
                    block[at % WINDOW] = low;
                    block[(at + 1) % WINDOW] = high;
                    block[(at + 2) % WINDOW] = delta as u8;
                    crc.byte(low);
                    crc.byte(high);
                    crc.byte(delta as u8);
                    at += 3;
                    let Some(next) = records.next() else {
                        break 'run false;
                    };
                    (word, delta) = next;
                    if at > LAST_RECORD_AT || !word_of_two_bytes(word) || !delta_of_one_byte(delta)
                    {
                        break;
                    }
                }
            } else if word_of_two_bytes(word) && delta_of_two_bytes(delta) {
                loop {
                    let (low, high) = two_varint_bytes(word);
                    let (delta_low, delta_high) = two_varint_bytes(delta);
                    block[at % WINDOW] = low;
                    block[(at + 1) % WINDOW] = high;
                    block[(at + 2) % WINDOW] = delta_low;
                    block[(at + 3) % WINDOW] = delta_high;
                    crc.byte(low);
                    crc.byte(high);
                    crc.byte(delta_low);
                    crc.byte(delta_high);
                    at += 4;
                    let Some(next) = records.next() else {
                        break 'run false;
                    };
                    (word, delta) = next;
                    if at > LAST_RECORD_AT || !word_of_two_bytes(word) || !delta_of_two_bytes(delta)
                    {
                        break;
                    }
                }
            } else {
                if word & 1 != 0 || word == 0 || delta == 0 {
                    break 'run true;
                }
                at = put_varint_checked(block, at, word, &mut crc);
                at = put_varint_checked(block, at, delta, &mut crc);
                let Some(next) = records.next() else {
                    break 'run false;
                };
                (word, delta) = next;
            }
        }
    };
    (at, crc, stopped)
}

/// A function record's word (even: bit 0 set is a metadata record) of 2..=126,
/// one varint byte. Rotated right by one after the subtraction, a word outside
/// the range, or an odd one, is above the bound.
#[inline(always)]
pub(super) fn word_of_one_byte(word: u32) -> bool {
    word.wrapping_sub(2).rotate_right(1) <= 62
}

/// A function record's word of 128..=16 382 (even), two varint bytes.
#[inline(always)]
pub(super) fn word_of_two_bytes(word: u32) -> bool {
    word.wrapping_sub(0x80).rotate_right(1) <= 8127
}

/// A delta of 1..=127, one varint byte.
#[inline(always)]
pub(super) fn delta_of_one_byte(delta: u32) -> bool {
    delta.wrapping_sub(1) < 0x7F
}

/// A delta of 128..=16 383, two varint bytes.
#[inline(always)]
pub(super) fn delta_of_two_bytes(delta: u32) -> bool {
    delta.wrapping_sub(0x80) < 0x3F80
}

/// The varint bytes of `v`, 128..=16 383 (neither of them 0).
#[inline(always)]
pub(super) fn two_varint_bytes(v: u32) -> (u8, u8) {
    (v as u8 | 0x80, (v >> 7) as u8)
}

/// Writes `v` as a varint at `at` (at most 249) in a block window, adding its
/// bytes to `crc` as they are made; returns the position after it.
#[inline(always)]
pub(super) fn put_varint_checked(
    block: &mut [u8; WINDOW],
    mut at: usize,
    mut v: u32,
    crc: &mut crc::Crc32c,
) -> usize {
    while v >= 0x80 {
        let b = v as u8 | 0x80;
        block[at % WINDOW] = b;
        crc.byte(b);
        v >>= 7;
        at += 1;
    }
    let b = v as u8;
    block[at % WINDOW] = b;
    crc.byte(b);
    at + 1
}

impl<W: Write> Stuffer<'_, W> {
    /// [`Tokens::functions_one_by_one`] on Thumb-2 and wider cores
    /// ([`BY_WORDS`]): the records' varints stuffed in line, up to the one
    /// after which the block has room for the loops again.
    #[inline(always)]
    pub(super) fn records_one_by_one(&mut self, records: &[u8]) -> usize {
        let (mut w, mut crc) = (self.w, self.crc);
        let mut rest = records;
        while let Some((record, after)) = rest.split_first_chunk::<FUNC>() {
            let [w0, w1, w2, w3, d0, d1, d2, d3] = *record;
            let word = u32::from_le_bytes([w0, w1, w2, w3]);
            let delta = u32::from_le_bytes([d0, d1, d2, d3]);
            if word & 1 != 0 {
                break;
            }
            w = self.put_varint_stuffed(w, &mut crc, word);
            w = self.put_varint_stuffed(w, &mut crc, delta);
            rest = after;
            // Until the block has room for the loops again (it has ended,
            // or the record had a zero).
            if w - self.code_at <= LAST_RECORD_AT + 1 {
                break;
            }
        }
        let taken = records.len() - rest.len();
        self.w = w;
        self.crc = crc;
        taken
    }

    /// Stuffs `v` as a varint at `w`, the current block's end, adding its bytes
    /// to `crc`; returns the new end. Only its last byte may be 0 (for a `v`
    /// of 0), which ends the block.
    #[inline(always)]
    pub(super) fn put_varint_stuffed(
        &mut self,
        mut w: usize,
        crc: &mut crc::Crc32c,
        mut v: u32,
    ) -> usize {
        while v >= 0x80 {
            let b = v as u8 | 0x80;
            crc.byte(b);
            w = self.put_nonzero(w, b);
            v >>= 7;
        }
        let b = v as u8;
        crc.byte(b);
        if b == 0 {
            self.end_at(w, false)
        } else {
            self.put_nonzero(w, b)
        }
    }
}

#[cfg(test)]
mod tests;
