//! The compact form of an FDR buffer on the wire ([`FrameKind::FdrCompact`]): the
//! same buffer in about half the bytes, rebuilt by the receiver byte for byte.
//!
//! A function record is 8 bytes in the buffer but little information: an id and an
//! action that are mostly small numbers, and a TSC delta that is mostly under a
//! few thousand ticks. The compact form writes it as two LEB128 varints (its first
//! word, then its delta): 3 to 4 bytes for the usual record. Metadata records (and
//! the payloads of custom and typed events) are copied as they are:
//!
//! ```text
//! payload  := token*
//! token    := metadata | function | rest
//! metadata := the 16-byte record (byte 0 has bit 0 set and is not 0xFF),
//!             then its payload for a custom or typed event marker (size at bytes 1..5)
//! function := varint(first word, u32 LE)  varint(delta, u32 LE)
//!             (the first word's bit 0 is 0, so the first varint byte's bit 0 is 0)
//! rest     := 0xFF, then the buffer's remaining bytes as they are
//! ```
//!
//! The packed form ([`FrameKind::FdrPacked`], [`pack`] and [`unpack`]) is the same
//! but for metadata records, which are mostly zero bytes: each goes as its first
//! byte, a mask of its non-zero bytes and those bytes (a buffer's first records,
//! 80 bytes, in about 25):
//!
//! ```text
//! metadata := byte 0, mask:u16 LE (bit i: byte 1 + i is not 0; bit 15 is 0),
//!             the record's non-zero bytes in order, then the event's payload
//! ```
//!
//! Whatever bytes are given, [`compact`] and [`expand`] round-trip them exactly: a
//! part that does not look like FDR records (a truncated record, an event whose
//! size runs past the end) goes out as `rest`. The compact form of a buffer of
//! function records is at most 5/4 of its size (ids above 2^24 and deltas above
//! 2^28 ticks take 5-byte varints) and usually under half; [`compact_len`] tells
//! a sender that wants to choose.
//!
//! [`FrameKind::FdrCompact`]: super::FrameKind::FdrCompact
//! [`FrameKind::FdrPacked`]: super::FrameKind::FdrPacked
//!
//! ```
//! use flightrec_core::clock::Timestamp;
//! use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
//! use flightrec_core::fdr::FunctionId;
//! use flightrec_core::link::compact::{compact, compact_len, expand, expanded_len};
//!
//! let mut buf = [0u8; 1024];
//! let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
//! let f = FunctionId::new(42).unwrap();
//! for t in 0..50u64 {
//!     w.enter(f, Timestamp { tsc: 1_000 + 300 * t, cpu: 0 }).unwrap();
//!     w.exit(f, Timestamp { tsc: 1_100 + 300 * t, cpu: 0 }).unwrap();
//! }
//! let fdr = w.finish();
//!
//! let mut wire = Vec::new();
//! compact(fdr, |part| wire.extend_from_slice(part));
//! assert_eq!(wire.len(), compact_len(fdr));
//! assert!(wire.len() * 2 < fdr.len()); // 100 records of 8 bytes: 3 bytes each here
//!
//! let mut back = vec![0u8; expanded_len(&wire).unwrap()];
//! assert_eq!(expand(&wire, &mut back), Ok(fdr.len()));
//! assert_eq!(back, fdr);
//! ```

use core::fmt;

/// Bytes of a metadata record.
pub(crate) const META: usize = 16;
/// Bytes of a function record.
const FUNC: usize = 8;
/// Metadata kinds whose record is followed by a payload of `size` bytes.
const CUSTOM_EVENT: u8 = 5;
const TYPED_EVENT: u8 = 8;
/// Starts the `rest` token.
const REST: u8 = 0xFF;

/// The most bytes a varint of a `u32` takes.
pub(crate) const VARINT_MAX: usize = 5;

/// One step of the walk over a buffer.
enum Piece<'b> {
    /// Copied as it is (a metadata record and its payload).
    Verbatim(&'b [u8]),
    /// A function record's two words.
    Function(u32, u32),
    /// The rest of the buffer, copied after [`REST`].
    Rest(&'b [u8]),
}

/// The length of the metadata record (and payload) at the start of `bytes`, if it is
/// one that fits.
#[inline]
fn metadata_len(bytes: &[u8]) -> Option<usize> {
    let record = bytes.get(..META)?;
    let kind = record[0] >> 1;
    if kind != CUSTOM_EVENT && kind != TYPED_EVENT {
        return Some(META);
    }
    let size = i32::from_le_bytes([record[1], record[2], record[3], record[4]]);
    let size = usize::try_from(size).ok().filter(|&n| n > 0)?;
    let len = META.checked_add(size)?;
    (len <= bytes.len()).then_some(len)
}

/// Walks `buffer`, calling `f` with each piece in order.
#[inline(always)]
fn walk<'b>(buffer: &'b [u8], mut f: impl FnMut(Piece<'b>)) {
    let mut rest = buffer;
    while let Some(&first) = rest.first() {
        if first & 1 == 0 {
            if let Some(record) = rest.get(..FUNC) {
                let word = u32::from_le_bytes([record[0], record[1], record[2], record[3]]);
                let delta = u32::from_le_bytes([record[4], record[5], record[6], record[7]]);
                f(Piece::Function(word, delta));
                rest = &rest[FUNC..];
                continue;
            }
        } else if first != REST {
            if let Some((record, after)) =
                metadata_len(rest).and_then(|len| rest.split_at_checked(len))
            {
                f(Piece::Verbatim(record));
                rest = after;
                continue;
            }
        }
        f(Piece::Rest(rest));
        return;
    }
}

/// Writes `v` as a LEB128 varint into `out`; returns the bytes used.
#[inline(always)]
pub(crate) fn put_varint(mut v: u32, out: &mut [u8], mut at: usize) -> usize {
    while v >= 0x80 {
        if let Some(b) = out.get_mut(at) {
            *b = v as u8 | 0x80;
        }
        v >>= 7;
        at += 1;
    }
    if let Some(b) = out.get_mut(at) {
        *b = v as u8;
    }
    at + 1
}

#[inline(always)]
const fn varint_len(v: u32) -> usize {
    // 1 + (bits above the first 7) / 7, without a division.
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// The compact form's length for `buffer`. A sender compares it with the buffer's
/// own length to choose the smaller frame.
///
/// ```
/// use flightrec_core::link::compact::compact_len;
/// // Not FDR records at all: 0xFF and the bytes as they are.
/// assert_eq!(compact_len(&[0xAB; 5]), 6);
/// // One function record (id 1, entry, delta 7): two one-byte varints.
/// assert_eq!(compact_len(&[0x10, 0, 0, 0, 7, 0, 0, 0]), 2);
/// ```
pub fn compact_len(buffer: &[u8]) -> usize {
    let mut len = 0usize;
    walk(buffer, |piece| {
        len += match piece {
            Piece::Verbatim(b) => b.len(),
            Piece::Function(word, delta) => varint_len(word) + varint_len(delta),
            Piece::Rest(b) => 1 + b.len(),
        }
    });
    len
}

/// Bytes of function tokens [`compact`] gathers before handing them on: one call
/// per few dozen records instead of one per record.
const GATHER: usize = 64;

/// Where [`compact_to`] puts the compact form: each function record as its two
/// words (for a sender to write as varints where they go), everything else as
/// bytes.
pub(crate) trait Tokens {
    /// A function record: `varint(word) varint(delta)`.
    fn function(&mut self, word: u32, delta: u32);
    /// As many of the function records at the start of `records` as it takes in
    /// one go (it may stop at any record, the first included); returns the bytes
    /// of the records it took, a multiple of 8. `records` holds whole records, the
    /// first of which is a function record; a record whose byte 0 has bit 0 set is
    /// metadata and ends the run.
    fn functions(&mut self, records: &[u8]) -> usize;
    /// Bytes as they are.
    fn bytes(&mut self, bytes: &[u8]);
    /// The function record at the start of `records`, which
    /// [`functions`](Self::functions) did not take, and as many after it as the
    /// sender takes the same way; returns the bytes of the records taken, a
    /// multiple of 8 and at least 8. `records` holds whole records, the first
    /// of which is a function record.
    #[inline(always)]
    fn functions_one_by_one(&mut self, records: &[u8]) -> usize {
        one_function(self, records)
    }
    /// A metadata record (without its event payload) in its packed form: what
    /// [`pack_metadata`] makes of it, as bytes. A sender may write it straight
    /// where it goes instead.
    #[inline(always)]
    fn packed_metadata(&mut self, record: &[u8; META]) {
        let mut bytes = [0u8; PACKED_MAX];
        let n = pack_metadata(record, &mut bytes);
        self.bytes(bytes.get(..n).unwrap_or(&[]));
    }
}

/// [`Tokens::functions_one_by_one`]'s default: the first record of `records`
/// through [`Tokens::function`]; returns its 8 bytes.
#[inline(always)]
pub(crate) fn one_function<T: Tokens + ?Sized>(out: &mut T, records: &[u8]) -> usize {
    if let Some(record) = records.first_chunk::<FUNC>() {
        let word = u32::from_le_bytes([record[0], record[1], record[2], record[3]]);
        let delta = u32::from_le_bytes([record[4], record[5], record[6], record[7]]);
        out.function(word, delta);
    }
    FUNC
}

/// Room for a packed metadata record (its first byte, the mask and at most 15
/// non-zero bytes: 18), a power of two so that an index is masked, not checked.
pub(crate) const PACKED_MAX: usize = 32;

/// The packed form of a metadata record (the first 16 bytes of `record`) into
/// `out`; returns its length. Out of line: a few calls a buffer.
#[inline(never)]
pub(crate) fn pack_metadata(record: &[u8; META], out: &mut [u8; PACKED_MAX]) -> usize {
    let mut mask = 0u32;
    let mut n = 3;
    // Without branches: every byte is stored, and kept if it is not 0.
    // An index over the array (its bound a constant): the iterator form is
    // slower on the Cortex-M4 bench's link rows.
    #[allow(clippy::needless_range_loop)]
    for i in 1..META {
        let b = record[i];
        let keep = usize::from(b != 0);
        // n <= 2 + i < PACKED_MAX.
        out[n % PACKED_MAX] = b;
        mask |= (keep as u32) << (i - 1);
        n += keep;
    }
    let [lo, hi, ..] = mask.to_le_bytes();
    out[0] = record[0];
    out[1] = lo;
    out[2] = hi;
    n
}

/// The compact form of `buffer` into `out`, in order: the same tokens as
/// [`walk`] gives, with runs of function records handed over whole; with
/// `packed`, metadata records packed.
#[inline(always)]
pub(crate) fn compact_to(buffer: &[u8], packed: bool, out: &mut impl Tokens) {
    let mut rest = buffer;
    while let Some(&first) = rest.first() {
        if first & 1 == 0 {
            if rest.len() >= FUNC {
                // Whole records only: the walk sees a truncated one as `rest`.
                let whole = rest.len() - rest.len() % FUNC;
                // A delta of 0 (a buffer's first record, at the preamble's
                // time) is one the loops do not take.
                if rest.get(4..FUNC) != Some(&[0; 4]) {
                    let taken = out.functions(rest.get(..whole).unwrap_or(&[]));
                    rest = rest.get(taken..).unwrap_or(&[]);
                }
                // Where `functions` stopped at a function record, it is one
                // that its loops do not take: straight to the byte-wise way
                // (not a second call that takes nothing).
                if rest.len() >= FUNC && rest.first().is_some_and(|b| b & 1 == 0) {
                    let whole = rest.len() - rest.len() % FUNC;
                    let taken = out.functions_one_by_one(rest.get(..whole).unwrap_or(&[]));
                    rest = rest.get(taken..).unwrap_or(&[]);
                }
                continue;
            }
        } else if first != REST {
            if let Some((record, after)) =
                metadata_len(rest).and_then(|len| rest.split_at_checked(len))
            {
                if let (true, Some((head, payload))) = (packed, record.split_first_chunk::<META>())
                {
                    out.packed_metadata(head);
                    if !payload.is_empty() {
                        out.bytes(payload);
                    }
                } else {
                    out.bytes(record);
                }
                rest = after;
                continue;
            }
        }
        out.bytes(&[REST]);
        out.bytes(rest);
        return;
    }
}

/// Produces the compact form of `buffer`, a part at a time, in order (a sender
/// streams the parts into its frame).
///
/// ```
/// use flightrec_core::link::compact::compact;
/// // A function record (id 1, entry, delta 300), then bytes that are no record.
/// let buffer = [0x10, 0, 0, 0, 0x2c, 0x01, 0, 0, 0xAB];
/// let mut out = Vec::new();
/// compact(&buffer, |part| out.extend_from_slice(part));
/// assert_eq!(out, [0x10, 0xac, 0x02, 0xFF, 0xAB]);
/// ```
#[inline]
pub fn compact(buffer: &[u8], mut out: impl FnMut(&[u8])) {
    let mut tokens = [0u8; GATHER];
    let mut n = 0;
    walk(buffer, |piece| match piece {
        Piece::Function(word, delta) => {
            if n + 2 * VARINT_MAX > GATHER {
                out(tokens.get(..n).unwrap_or(&[]));
                n = 0;
            }
            n = put_varint(word, &mut tokens, n);
            n = put_varint(delta, &mut tokens, n);
        }
        Piece::Verbatim(b) => {
            if n > 0 {
                out(tokens.get(..n).unwrap_or(&[]));
                n = 0;
            }
            out(b);
        }
        Piece::Rest(b) => {
            if n > 0 {
                out(tokens.get(..n).unwrap_or(&[]));
                n = 0;
            }
            out(&[REST]);
            out(b);
        }
    });
    if n > 0 {
        out(tokens.get(..n).unwrap_or(&[]));
    }
}

/// Produces the packed form of `buffer` ([`FrameKind::FdrPacked`](super::FrameKind::FdrPacked)),
/// a part at a time, in order: the compact form with each metadata record packed.
///
/// ```
/// use flightrec_core::link::compact::{pack, unpack, unpacked_len};
/// // A metadata record (new buffer, thread 7), then a function record.
/// let mut buffer = [0u8; 24];
/// buffer[0] = 0x01;
/// buffer[1] = 7;
/// buffer[16..24].copy_from_slice(&[0x10, 0, 0, 0, 7, 0, 0, 0]);
/// let mut out = Vec::new();
/// pack(&buffer, |part| out.extend_from_slice(part));
/// assert_eq!(out, [0x01, 0x01, 0x00, 7, 0x10, 7]);
/// let mut back = vec![0u8; unpacked_len(&out).unwrap()];
/// assert_eq!(unpack(&out, &mut back), Ok(24));
/// assert_eq!(back, buffer);
/// ```
pub fn pack(buffer: &[u8], mut out: impl FnMut(&[u8])) {
    struct Parts<F>(F);
    impl<F: FnMut(&[u8])> Tokens for Parts<F> {
        fn function(&mut self, word: u32, delta: u32) {
            let mut bytes = [0u8; 2 * VARINT_MAX];
            let n = put_varint(word, &mut bytes, 0);
            let n = put_varint(delta, &mut bytes, n);
            (self.0)(bytes.get(..n).unwrap_or(&[]));
        }
        fn functions(&mut self, _records: &[u8]) -> usize {
            0
        }
        fn bytes(&mut self, bytes: &[u8]) {
            (self.0)(bytes);
        }
    }
    compact_to(buffer, true, &mut Parts(&mut out));
}

/// Why a compact payload could not be expanded.
///
/// ```
/// use flightrec_core::link::compact::{expanded_len, ExpandError};
/// let err = expanded_len(&[0x80]).unwrap_err();
/// assert_eq!(err, ExpandError { offset: 0, kind: "a varint runs past the end" });
/// assert_eq!(err.to_string(), "compact FDR payload, byte 0: a varint runs past the end");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ExpandError {
    /// Where in the payload the bad token starts.
    pub offset: usize,
    /// What is wrong with it.
    pub kind: &'static str,
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "compact FDR payload, byte {}: {}",
            self.offset, self.kind
        )
    }
}

/// Reads a varint at `at`; returns it and the position after it.
fn get_varint(bytes: &[u8], at: usize) -> Result<(u32, usize), ExpandError> {
    let mut v = 0u64;
    for i in 0..VARINT_MAX {
        let Some(&b) = bytes.get(at + i) else {
            return Err(ExpandError {
                offset: at,
                kind: "a varint runs past the end",
            });
        };
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return u32::try_from(v)
                .map(|v| (v, at + i + 1))
                .map_err(|_| ExpandError {
                    offset: at,
                    kind: "a varint over 32 bits",
                });
        }
    }
    Err(ExpandError {
        offset: at,
        kind: "a varint over 5 bytes",
    })
}

/// Reads the tokens of `payload`, calling `f` with each piece of the expanded
/// buffer: `Ok` when the whole payload was read.
fn read_tokens(payload: &[u8], packed: bool, mut f: impl FnMut(&[u8])) -> Result<(), ExpandError> {
    let mut at = 0;
    while let Some(&first) = payload.get(at) {
        if first == REST {
            f(&payload[at + 1..]);
            return Ok(());
        }
        if first & 1 == 1 && packed {
            at = read_packed_metadata(payload, at, &mut f)?;
            continue;
        }
        if first & 1 == 1 {
            let len = metadata_len(&payload[at..]).ok_or(ExpandError {
                offset: at,
                kind: "a metadata record (or its event payload) runs past the end",
            })?;
            f(&payload[at..at + len]);
            at += len;
            continue;
        }
        let (word, next) = get_varint(payload, at)?;
        let (delta, next) = get_varint(payload, next)?;
        let mut record = [0u8; FUNC];
        record[..4].copy_from_slice(&word.to_le_bytes());
        record[4..].copy_from_slice(&delta.to_le_bytes());
        f(&record);
        at = next;
    }
    Ok(())
}

/// Reads the packed metadata record at `at` (and its event's payload), giving
/// `f` the record rebuilt and the payload; returns the position after them.
fn read_packed_metadata(
    payload: &[u8],
    at: usize,
    f: &mut impl FnMut(&[u8]),
) -> Result<usize, ExpandError> {
    let short = ExpandError {
        offset: at,
        kind: "a packed metadata record (or its event payload) runs past the end",
    };
    let (Some(&first), Some(&lo), Some(&hi)) =
        (payload.get(at), payload.get(at + 1), payload.get(at + 2))
    else {
        return Err(short);
    };
    let mask = u16::from_le_bytes([lo, hi]);
    if mask & 0x8000 != 0 {
        return Err(ExpandError {
            offset: at,
            kind: "a packed metadata record's mask has bit 15 set",
        });
    }
    let mut record = [0u8; META];
    record[0] = first;
    let mut next = at + 3;
    for (i, slot) in record.iter_mut().enumerate().skip(1) {
        if mask & (1 << (i - 1)) != 0 {
            *slot = *payload.get(next).ok_or(short)?;
            next += 1;
        }
    }
    // The event's payload follows as it is.
    let extra = match metadata_len(&record) {
        Some(META) => 0,
        _ => {
            let size = i32::from_le_bytes([record[1], record[2], record[3], record[4]]);
            usize::try_from(size)
                .ok()
                .filter(|&n| n > 0)
                .ok_or(ExpandError {
                    offset: at,
                    kind: "a packed event record with no payload size",
                })?
        }
    };
    let event = payload.get(next..next.saturating_add(extra)).ok_or(short)?;
    f(&record);
    f(event);
    Ok(next + extra)
}

/// The length of the buffer that `payload` expands to; checks the whole payload.
///
/// ```
/// use flightrec_core::link::compact::expanded_len;
/// assert_eq!(expanded_len(&[0x10, 7]), Ok(8)); // one function record
/// assert_eq!(expanded_len(&[0xFF, 1, 2, 3]), Ok(3)); // the rest, as it is
/// assert!(expanded_len(&[0x0f, 0, 0]).is_err()); // a metadata record cut short
/// ```
pub fn expanded_len(payload: &[u8]) -> Result<usize, ExpandError> {
    tokens_len(payload, false)
}

fn tokens_len(payload: &[u8], packed: bool) -> Result<usize, ExpandError> {
    let mut len = 0usize;
    read_tokens(payload, packed, |piece| len += piece.len())?;
    Ok(len)
}

/// The length of the buffer that a packed `payload` expands to; checks the whole
/// payload. Example on [`pack`].
pub fn unpacked_len(payload: &[u8]) -> Result<usize, ExpandError> {
    tokens_len(payload, true)
}

/// Rebuilds the FDR buffer of a packed `payload` into `out`; returns its length.
/// `out` must hold [`unpacked_len`] bytes; a shorter one is an error. Example on
/// [`pack`].
pub fn unpack(payload: &[u8], out: &mut [u8]) -> Result<usize, ExpandError> {
    rebuild(payload, true, out)
}

/// Rebuilds the FDR buffer of `payload` into `out`; returns its length. `out` must
/// hold [`expanded_len`] bytes; a shorter one is an error (nothing is cut).
///
/// ```
/// use flightrec_core::link::compact::expand;
/// let mut out = [0u8; 8];
/// assert_eq!(expand(&[0x10, 7], &mut out), Ok(8));
/// assert_eq!(out, [0x10, 0, 0, 0, 7, 0, 0, 0]);
/// assert!(expand(&[0x10, 7, 0x10, 7], &mut out).is_err()); // 16 bytes do not fit
/// ```
pub fn expand(payload: &[u8], out: &mut [u8]) -> Result<usize, ExpandError> {
    rebuild(payload, false, out)
}

fn rebuild(payload: &[u8], packed: bool, out: &mut [u8]) -> Result<usize, ExpandError> {
    let mut len = 0usize;
    let mut fits = true;
    read_tokens(payload, packed, |piece| {
        match out.get_mut(len..len + piece.len()) {
            Some(dst) if fits => dst.copy_from_slice(piece),
            _ => fits = false,
        }
        len += piece.len();
    })?;
    if !fits {
        return Err(ExpandError {
            offset: payload.len(),
            kind: "the buffer it expands to is larger than the room given",
        });
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths_match_what_is_written() {
        for v in [
            0,
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            0x1f_ffff,
            0x20_0000,
            0x0fff_ffff,
            0x1000_0000,
            u32::MAX,
        ] {
            let mut out = [0u8; 2 * VARINT_MAX];
            let n = put_varint(v, &mut out, 0);
            assert_eq!(n, varint_len(v), "{v:#x}");
            assert_eq!(get_varint(&out, 0), Ok((v, n)));
        }
    }
}
