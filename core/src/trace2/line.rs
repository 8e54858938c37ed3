//! A cursor that writes one line into a caller's byte buffer, with the number
//! formats Trace2 needs (`%d`, `%.6f` of microseconds, `%9.6f`, ...).
//!
//! Every write is bounds-checked and reports [`BufferTooSmall`] instead of
//! panicking; the formatters propagate it with `?`. Numbers are written by hand
//! because `core::fmt` costs tens of nanoseconds per call on the hot path.

pub(crate) use crate::decimal::{dec_u64, fixed_digits, pair};

/// The caller's buffer cannot hold the whole line.
///
/// When a formatter returns this error the buffer content is unspecified (it may
/// hold a prefix of the line); no line length is reported, so nothing partial is
/// ever handed on as a line.
///
/// ```
/// use flightrec_core::trace2::BufferTooSmall;
/// let e = BufferTooSmall;
/// assert_eq!(format!("{e}"), "buffer too small for the Trace2 line");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTooSmall;

impl core::fmt::Display for BufferTooSmall {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("buffer too small for the Trace2 line")
    }
}

impl core::error::Error for BufferTooSmall {}

/// Result of a write into a [`LineBuf`].
///
/// ```
/// use flightrec_core::trace2::line::Result;
/// use flightrec_core::trace2::{BufferTooSmall, LineBuf};
/// fn key_value(l: &mut LineBuf<'_>, key: &[u8], v: u64) -> Result {
///     l.put(key)?;
///     l.byte(b':')?;
///     l.u64(v)
/// }
/// let mut storage = [0u8; 10];
/// let mut l = LineBuf::new(&mut storage);
/// assert_eq!(key_value(&mut l, b"code", 0), Ok(()));
/// assert_eq!(key_value(&mut l, b"pid", 1234), Err(BufferTooSmall));
/// ```
pub type Result<T = ()> = core::result::Result<T, BufferTooSmall>;

/// A write cursor over a caller-owned buffer.
///
/// The text writes; the number formats are shown on [`LineBuf::u64`].
///
/// ```
/// use flightrec_core::trace2::{BufferTooSmall, LineBuf};
/// let mut storage = [0u8; 40];
/// let mut l = LineBuf::new(&mut storage);
/// assert!(l.is_empty());
/// l.put(b"d0 |").unwrap();
/// l.byte(b' ').unwrap();
/// let start = l.len();
/// l.put(b"main").unwrap();
/// l.pad_to(start, 8).unwrap(); // the column from `start` is 8 wide
/// l.put(b" | ").unwrap();
/// l.field(b"region_leave", 6).unwrap(); // %-6.6s: cut to 6
/// l.put(b" | ").unwrap();
/// l.fill(b'.', 2).unwrap();
/// l.put(b"label:x").unwrap();
/// assert_eq!(l.as_bytes(), b"d0 | main     | region | ..label:x");
/// assert_eq!((l.len(), l.last()), (34, Some(b'x')));
///
/// // What does not fit is refused whole; the line stays as it was.
/// assert_eq!(l.put(b" too long"), Err(BufferTooSmall));
/// assert_eq!(l.len(), 34);
/// ```
#[derive(Debug)]
pub struct LineBuf<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> LineBuf<'a> {
    /// Starts an empty line at the beginning of `buf`. Example on [`LineBuf`].
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        LineBuf { buf, pos: 0 }
    }

    /// Bytes written so far. Example on [`LineBuf`].
    #[inline]
    pub fn len(&self) -> usize {
        self.pos
    }

    /// True when nothing has been written. Example on [`LineBuf`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// The bytes written so far. Example on [`LineBuf`].
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.pos]
    }

    /// The last byte written, if any. Example on [`LineBuf`].
    #[inline]
    pub fn last(&self) -> Option<u8> {
        self.pos.checked_sub(1).map(|i| self.buf[i])
    }

    /// The unwritten rest of the buffer, for writers that fill it directly and
    /// then [`advance`](Self::advance).
    #[inline(always)]
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        self.buf.get_mut(self.pos..).unwrap_or_default()
    }

    /// Counts `n` bytes written into [`spare`](Self::spare) as part of the line.
    #[inline(always)]
    pub(crate) fn advance(&mut self, n: usize) -> Result {
        let end = self.pos.saturating_add(n);
        if end > self.buf.len() {
            return Err(BufferTooSmall);
        }
        self.pos = end;
        Ok(())
    }

    /// Appends bytes; when they do not all fit, appends nothing. Example on
    /// [`LineBuf`].
    // Always inlined: most calls copy a literal, whose length then folds the
    // size dispatch of the copy away.
    #[inline(always)]
    pub fn put(&mut self, bytes: &[u8]) -> Result {
        let end = self.pos + bytes.len();
        match self.buf.get_mut(self.pos..end) {
            Some(dst) => {
                copy_short(dst, bytes);
                self.pos = end;
                Ok(())
            }
            None => Err(BufferTooSmall),
        }
    }

    /// Appends one byte. Example on [`LineBuf`].
    #[inline(always)]
    pub fn byte(&mut self, b: u8) -> Result {
        match self.buf.get_mut(self.pos) {
            Some(slot) => {
                *slot = b;
                self.pos += 1;
                Ok(())
            }
            None => Err(BufferTooSmall),
        }
    }

    /// Appends `n` copies of `b`. Example on [`LineBuf`].
    #[inline(always)]
    pub fn fill(&mut self, b: u8, n: usize) -> Result {
        let end = self.pos.saturating_add(n);
        match self.buf.get_mut(self.pos..end) {
            Some(dst) => {
                // Padding is short: copy from a constant run instead of calling memset.
                const RUN: usize = 32;
                match b {
                    b' ' if n <= RUN => copy_short(dst, &[b' '; RUN][..n]),
                    b'.' if n <= RUN => copy_short(dst, &[b'.'; RUN][..n]),
                    _ => dst.fill(b),
                }
                self.pos = end;
                Ok(())
            }
            None => Err(BufferTooSmall),
        }
    }

    /// Appends spaces until the line from byte `start` on is `width` bytes long;
    /// nothing if it already is. A `start` past the end counts as an empty field.
    /// Example on [`LineBuf`].
    #[inline]
    pub fn pad_to(&mut self, start: usize, width: usize) -> Result {
        // A `start` past the end (a caller's mistake) counts as nothing written yet.
        let used = self.pos.saturating_sub(start);
        if used < width {
            self.fill(b' ', width - used)
        } else {
            Ok(())
        }
    }

    /// `%-W.Ws`-style field: at most `width` bytes of `s`, space-padded to `width`.
    /// Example on [`LineBuf`].
    #[inline]
    pub fn field(&mut self, s: &[u8], width: usize) -> Result {
        let s = &s[..s.len().min(width)];
        self.put(s)?;
        self.fill(b' ', width - s.len())
    }

    /// `%PRIu64`.
    ///
    /// The number formats, with the printf conversion each one matches:
    ///
    /// ```
    /// use flightrec_core::trace2::LineBuf;
    /// let mut storage = [0u8; 64];
    /// let mut l = LineBuf::new(&mut storage);
    /// l.u64(18_446_744_073_709_551_615).unwrap(); // %PRIu64
    /// l.byte(b'|').unwrap();
    /// l.i64(-42).unwrap(); // %d
    /// l.byte(b'|').unwrap();
    /// l.digits::<6>(1_234_567).unwrap(); // %06d of v % 10^6
    /// l.byte(b'|').unwrap();
    /// l.u64_zero_padded(7, 2).unwrap(); // %02d
    /// l.byte(b'|').unwrap();
    /// l.i64_right(-1, 4).unwrap(); // %4d
    /// l.byte(b'|').unwrap();
    /// l.micros_fixed6(1_500_000).unwrap(); // %.6f of the seconds
    /// l.byte(b'|').unwrap();
    /// l.micros_fixed6_w9(45).unwrap(); // %9.6f of the seconds
    /// assert_eq!(l.as_bytes(), b"18446744073709551615|-42|234567|07|  -1|1.500000| 0.000045");
    /// ```
    #[inline(always)]
    pub fn u64(&mut self, v: u64) -> Result {
        if v < 10 {
            // Nesting levels, repo ids, exit codes: one digit, no buffer.
            return self.byte(b'0' + v as u8);
        }
        self.u64_multi_digit(v)
    }

    /// [`u64`](Self::u64) of values from 10 on.
    #[inline(never)]
    fn u64_multi_digit(&mut self, v: u64) -> Result {
        if v < 10_000 {
            // Line numbers: four digits from two pair lookups in a register,
            // shifted to drop the leading zeros and stored as one word (the
            // bytes after the number are overwritten by what follows or lie
            // past the line).
            let v = v as u32;
            let [a, b] = pair(v / 100);
            let [c, d] = pair(v);
            let len = if v < 100 {
                2
            } else {
                3 + usize::from(v >= 1000)
            };
            let word = u32::from_le_bytes([a, b, c, d]) >> (8 * (4 - len));
            if let Some(dst) = self.spare().first_chunk_mut::<4>() {
                *dst = word.to_le_bytes();
                return self.advance(len);
            }
            return self.put(&word.to_le_bytes()[..len]);
        }
        let mut tmp = [0u8; 20];
        let digits = dec_u64(v, &mut tmp);
        self.put(digits)
    }

    /// `%d` / `%PRIdMAX`. Example on [`LineBuf::u64`].
    #[inline(always)]
    pub fn i64(&mut self, v: i64) -> Result {
        if v < 0 {
            self.byte(b'-')?;
        }
        self.u64(v.unsigned_abs())
    }

    /// Exactly `N` decimal digits of `v % 10^N`, zero-padded (`%06d` of the
    /// microseconds, `%02d` of clock fields): no loop, no padding pass. Example on
    /// [`LineBuf::u64`].
    #[inline]
    pub fn digits<const N: usize>(&mut self, v: u64) -> Result {
        let mut d = [b'0'; N];
        fixed_digits(&mut d, v);
        self.put(&d)
    }

    /// `%0Nd` for a non-negative value (more digits if it needs them). Example on
    /// [`LineBuf::u64`].
    #[inline]
    pub fn u64_zero_padded(&mut self, v: u64, width: usize) -> Result {
        let mut tmp = [0u8; 20];
        let digits = dec_u64(v, &mut tmp);
        if digits.len() < width {
            self.fill(b'0', width - digits.len())?;
        }
        self.put(digits)
    }

    /// `%Nd` (space-padded on the left) for a signed value. Example on
    /// [`LineBuf::u64`].
    pub fn i64_right(&mut self, v: i64, width: usize) -> Result {
        let mut tmp = [0u8; 20];
        let digits = dec_u64(v.unsigned_abs(), &mut tmp);
        let len = digits.len() + usize::from(v < 0);
        if len < width {
            self.fill(b' ', width - len)?;
        }
        if v < 0 {
            self.byte(b'-')?;
        }
        self.put(digits)
    }

    /// `%.6f` of `us` microseconds shown as seconds (exact: no rounding happens).
    /// Example on [`LineBuf::u64`].
    #[inline(always)]
    pub fn micros_fixed6(&mut self, us: u64) -> Result {
        if us < 10_000_000 {
            // Under ten seconds (most t_abs/t_rel values): `S.uuuuuu` in one copy.
            let mut d = [b'0', b'.', b'0', b'0', b'0', b'0', b'0', b'0'];
            d[0] = b'0' + (us / 1_000_000) as u8;
            if let Some(frac) = d.last_chunk_mut::<6>() {
                fixed_digits(frac, us % 1_000_000);
            }
            return self.put(&d);
        }
        self.u64(us / 1_000_000)?;
        self.byte(b'.')?;
        self.digits::<6>(us % 1_000_000)
    }

    /// `%9.6f` of `us` microseconds shown as seconds: right-aligned in 9 columns,
    /// wider values overflow the column like printf does. Example on
    /// [`LineBuf::u64`].
    #[inline]
    pub fn micros_fixed6_w9(&mut self, us: u64) -> Result {
        let secs = us / 1_000_000;
        let width = digit_count(secs) + 7;
        if width < 9 {
            self.fill(b' ', 9 - width)?;
        }
        self.micros_fixed6(us)
    }
}

impl core::fmt::Write for LineBuf<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.put(s.as_bytes()).map_err(|_| core::fmt::Error)
    }
}

/// Copies `src` into `dst` (same length). Trace2 fields are mostly a few bytes
/// long, where a call to `memcpy` costs more than the copy: lengths up to 32
/// are done with (possibly overlapping) 8/4-byte moves, longer ones by `memcpy`.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n != dst.len() {
        return;
    }
    #[inline(always)]
    fn word<const W: usize>(s: &[u8], at: usize) -> [u8; W] {
        let mut w = [0u8; W];
        if let Some(part) = s.get(at..at + W) {
            w.copy_from_slice(part);
        }
        w
    }
    #[inline(always)]
    fn store<const W: usize>(d: &mut [u8], at: usize, w: [u8; W]) {
        if let Some(part) = d.get_mut(at..at + W) {
            part.copy_from_slice(&w);
        }
    }
    match n {
        0 => {}
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => {
            let (a, b) = (word::<4>(src, 0), word::<4>(src, n - 4));
            store(dst, 0, a);
            store(dst, n - 4, b);
        }
        8..=16 => {
            let (a, b) = (word::<8>(src, 0), word::<8>(src, n - 8));
            store(dst, 0, a);
            store(dst, n - 8, b);
        }
        17..=32 => {
            let (a, b) = (word::<16>(src, 0), word::<16>(src, n - 16));
            store(dst, 0, a);
            store(dst, n - 16, b);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// Number of decimal digits of `v` (1 for 0).
#[inline]
pub(crate) fn digit_count(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// Rounds `ns / 1e9`, computed as an IEEE double like git does, to six decimals
/// exactly as glibc's printf `%.6f` does (round-half-even on the exact binary
/// value), and returns the result in microseconds.
///
/// A double `d` is `m * 2^e`; `d * 10^6` is then the exact rational
/// `m * 10^6 / 2^-e`, which fits in `u128` for every `u64` nanosecond count, so
/// the rounding decision is made on exact integers. Integer-only rounding of
/// `ns` would differ from git where the double is just below or above a tie.
///
/// ```
/// use flightrec_core::trace2::ns_to_printf_micros;
/// assert_eq!(ns_to_printf_micros(7_812_500), 7_812); // exact tie -> even
/// assert_eq!(ns_to_printf_micros(23_437_500), 23_438); // exact tie -> even
/// assert_eq!(ns_to_printf_micros(1_500), 2); // double is above the tie
/// ```
pub fn ns_to_printf_micros(ns: u64) -> u64 {
    let d = ns as f64 / 1e9;
    let bits = d.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    let p = u128::from(m) * 1_000_000;
    if e >= 0 {
        // Only reachable for doubles >= 2^52, far beyond any u64 of ns / 1e9.
        return u64::try_from(p << e.min(40)).unwrap_or(u64::MAX);
    }
    let k = (-e) as u32;
    if k >= 128 {
        // p < 2^73, far below half of 2^k: rounds to zero.
        return 0;
    }
    let q = p >> k;
    let r = p & ((1u128 << k) - 1);
    let half = 1u128 << (k - 1);
    let q = if r > half || (r == half && q & 1 == 1) {
        q + 1
    } else {
        q
    };
    u64::try_from(q).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: impl FnOnce(&mut LineBuf<'_>) -> Result) -> ([u8; 64], usize) {
        let mut b = [0u8; 64];
        let mut l = LineBuf::new(&mut b);
        f(&mut l).unwrap();
        let n = l.len();
        (b, n)
    }

    #[test]
    fn numbers() {
        let (b, n) = run(|l| l.i64(i64::MIN));
        assert_eq!(&b[..n], b"-9223372036854775808");
        let (b, n) = run(|l| l.u64(u64::MAX));
        assert_eq!(&b[..n], b"18446744073709551615");
        for (us, want) in [
            (0u64, &b"0.000000"[..]),
            (9_999_999, b"9.999999"),
            (10_000_000, b"10.000000"),
            (1_500_000, b"1.500000"),
        ] {
            let (b, n) = run(|l| l.micros_fixed6(us));
            assert_eq!(&b[..n], want);
        }
        let (b, n) = run(|l| l.micros_fixed6_w9(45));
        assert_eq!(&b[..n], b" 0.000045");
        let (b, n) = run(|l| l.micros_fixed6_w9(1_234_000_000));
        assert_eq!(&b[..n], b"1234.000000");
        let (b, n) = run(|l| l.i64_right(-1, 4));
        assert_eq!(&b[..n], b"  -1");
        let (b, n) = run(|l| l.digits::<6>(42));
        assert_eq!(&b[..n], b"000042");
        let (b, n) = run(|l| l.digits::<2>(1234));
        assert_eq!(&b[..n], b"34");
        let (b, n) = run(|l| l.digits::<6>(u64::MAX));
        assert_eq!(&b[..n], b"551615");
        let (b, n) = run(|l| l.digits::<12>(u64::MAX));
        assert_eq!(&b[..n], b"073709551615");
    }

    #[test]
    fn decimal_digits_match_core_fmt() {
        /// `format_args!` output through `core::fmt`, the reference.
        fn reference(args: core::fmt::Arguments<'_>) -> ([u8; 64], usize) {
            run(|l| core::fmt::write(l, args).map_err(|_| BufferTooSmall))
        }
        let values = (0..20_000u64)
            .chain((0..64).map(|s| 1u64 << s))
            .chain((1..20).flat_map(|p| {
                let t = 10u64.pow(p);
                [t - 1, t, t + 1]
            }))
            .chain([
                u64::MAX,
                u64::MAX - 1,
                u64::from(u32::MAX),
                u64::from(u32::MAX) + 1,
            ]);
        for v in values {
            let (w, wn) = reference(format_args!("{v}"));
            let (b, n) = run(|l| l.u64(v));
            assert_eq!(&b[..n], &w[..wn]);
            let mut tmp = [0u8; 20];
            assert_eq!(dec_u64(v, &mut tmp), &w[..wn]);
            let (w, wn) = reference(format_args!("{:06}", v % 1_000_000));
            let (b, n) = run(|l| l.digits::<6>(v));
            assert_eq!(&b[..n], &w[..wn]);
            let (w, wn) = reference(format_args!("{}.{:06}", v / 1_000_000, v % 1_000_000));
            let (b, n) = run(|l| l.micros_fixed6(v));
            assert_eq!(&b[..n], &w[..wn]);
        }
    }

    #[test]
    fn printf_rounding_matches_git() {
        assert_eq!(ns_to_printf_micros(2_500), 3);
        assert_eq!(ns_to_printf_micros(0), 0);
        assert_eq!(ns_to_printf_micros(999), 1);
        assert_eq!(ns_to_printf_micros(499), 0);
        assert_eq!(ns_to_printf_micros(u64::MAX), 18_446_744_073_709_553);
    }

    #[test]
    fn short_copies_are_exact() {
        let src: [u8; 40] = core::array::from_fn(|i| i as u8 + 1);
        for n in 0..=40 {
            let mut dst = [0u8; 40];
            copy_short(&mut dst[..n], &src[..n]);
            assert_eq!(&dst[..n], &src[..n]);
            assert!(dst[n..].iter().all(|&b| b == 0));
            let mut b = [0u8; 48];
            let mut l = LineBuf::new(&mut b);
            l.fill(b' ', n).unwrap();
            l.fill(b'.', n.min(8)).unwrap();
            assert_eq!(l.len(), n + n.min(8));
            assert!(l.as_bytes()[..n].iter().all(|&c| c == b' '));
            assert!(l.as_bytes()[n..].iter().all(|&c| c == b'.'));
        }
    }

    #[test]
    fn pad_to_a_column_starting_past_the_end() {
        // A start beyond the written bytes used to underflow (a panic in debug).
        let mut b = [0u8; 8];
        let mut l = LineBuf::new(&mut b);
        l.put(b"ab").unwrap();
        // An empty field past the end is padded to its width.
        assert_eq!(l.pad_to(3, 2), Ok(()));
        assert_eq!(l.as_bytes(), b"ab  ");
        assert_eq!(l.pad_to(usize::MAX, 1), Ok(()));
        assert_eq!(l.as_bytes(), b"ab   ");
        l.pad_to(1, 6).unwrap();
        assert_eq!(l.as_bytes(), b"ab     ");
        l.pad_to(1, 2).unwrap(); // already longer: nothing
        assert_eq!(l.len(), 7);
    }

    #[test]
    fn overflow_is_an_error() {
        let mut b = [0u8; 3];
        let mut l = LineBuf::new(&mut b);
        assert_eq!(l.put(b"abcd"), Err(BufferTooSmall));
        assert!(l.put(b"abc").is_ok());
        assert_eq!(l.byte(b'x'), Err(BufferTooSmall));
        assert_eq!(l.fill(b' ', 1), Err(BufferTooSmall));
    }
}
