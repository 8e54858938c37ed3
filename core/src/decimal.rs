//! The core's one integer formatter: decimal digits into a caller's array, two
//! digits a lookup. Trace2 lines and names tables write their numbers with it.
//! (A loss marker's count is written apart, in `fdr::ring::loss`, by the
//! division-free `divide::div_rem`: the record path on 32-bit cores links no
//! 64-bit division.)

/// `"00" "01" ... "99"`: two decimal digits per lookup, half the divisions of
/// a digit-by-digit loop.
pub(crate) const DIGIT_PAIRS: &[u8; 200] = &{
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// The two ASCII digits of `v % 100`.
#[inline(always)]
pub(crate) fn pair(v: u32) -> [u8; 2] {
    let i = (v % 100) as usize * 2;
    match DIGIT_PAIRS.get(i..i + 2) {
        Some(&[a, b]) => [a, b],
        _ => *b"00",
    }
}

/// Fills `d` with the last `d.len()` decimal digits of `v`, zero-padded.
#[inline(always)]
pub(crate) fn fixed_digits(d: &mut [u8], v: u64) {
    // Up to 9 digits: 10^9 is a multiple of 10^len, so the low digits survive
    // the reduction to 32 bits, where division is cheaper.
    if d.len() <= 9 {
        let mut v = (v % 1_000_000_000) as u32;
        let mut chunks = d.rchunks_exact_mut(2);
        for slot in &mut chunks {
            slot.copy_from_slice(&pair(v));
            v /= 100;
        }
        if let [first] = chunks.into_remainder() {
            *first = b'0' + (v % 10) as u8;
        }
    } else {
        let mut v = v;
        for slot in d.iter_mut().rev() {
            *slot = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
}

/// Writes the decimal digits of `v` at the end of `tmp` and returns them.
#[inline]
pub(crate) fn dec_u64(v: u64, tmp: &mut [u8; 20]) -> &[u8] {
    let mut i = tmp.len();
    let mut v = v;
    // Above 32 bits: peel off 8 digits at a time with 64-bit divisions, the
    // rest uses 32-bit math.
    while v > u64::from(u32::MAX) {
        let low = (v % 100_000_000) as u32;
        v /= 100_000_000;
        if let Some(slot) = tmp.get_mut(i - 8..i) {
            fixed_digits(slot, u64::from(low));
        }
        i -= 8;
    }
    let mut w = v as u32;
    while w >= 100 {
        i -= 2;
        if let Some(slot) = tmp.get_mut(i..i + 2) {
            slot.copy_from_slice(&pair(w));
        }
        w /= 100;
    }
    if w >= 10 {
        i -= 2;
        if let Some(slot) = tmp.get_mut(i..i + 2) {
            slot.copy_from_slice(&pair(w));
        }
    } else {
        i -= 1;
        tmp[i] = b'0' + w as u8;
    }
    &tmp[i..]
}

#[cfg(test)]
mod tests {
    use super::dec_u64;

    #[test]
    fn decimal_digits() {
        let mut b = [0u8; 20];
        assert_eq!(dec_u64(0, &mut b), b"0");
        assert_eq!(dec_u64(7, &mut b), b"7");
        assert_eq!(dec_u64(1234, &mut b), b"1234");
        assert_eq!(dec_u64(u64::from(u32::MAX), &mut b), b"4294967295");
        assert_eq!(dec_u64(u64::MAX, &mut b), b"18446744073709551615");
    }
}
