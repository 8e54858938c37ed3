//! 64-bit division by shifts and subtractions, for the few divisions the record
//! side makes (a new buffer's first wall-clock second, a loss marker's decimal
//! count).
//!
//! 32-bit cores have no 64-bit divide instruction: `u64 / u64` calls the compiler's
//! library routine, large and slow, linked into every firmware that records. These loops are a few dozen
//! bytes and run once per recorder or per loss marker, never per record.

use core::num::NonZeroU64;

/// 10, for decimal digits.
pub(crate) const TEN: NonZeroU64 = NonZeroU64::new(10).unwrap();
/// Microseconds in a second.
pub(crate) const MILLION: NonZeroU64 = NonZeroU64::new(1_000_000).unwrap();

/// `(n / d, n % d)` by binary long division: one shift, compare and subtract per
/// quotient bit.
pub(crate) fn div_rem(n: u64, d: NonZeroU64) -> (u64, u64) {
    let d = d.get();
    if n < d {
        return (0, n);
    }
    // The divisor shifted up to the highest place where it still fits `n`, a
    // bit at a time: a 64-bit shift by a run-time count and `leading_zeros` are
    // each a library routine on thumbv6m (`__aeabi_llsl`, `__clzsi2`).
    let mut divisor = d;
    let mut shift = 0u32;
    while divisor >> 63 == 0 && divisor << 1 <= n {
        divisor <<= 1;
        shift += 1;
    }
    let mut rem = n;
    let mut quotient = 0u64;
    for _ in 0..=shift {
        quotient <<= 1;
        if rem >= divisor {
            rem -= divisor;
            quotient |= 1;
        }
        divisor >>= 1;
    }
    (quotient, rem)
}

/// `floor(rem * 10^6 / d)` for `rem < d`: the microseconds in `rem` ticks of a
/// `d`-tick second, one decimal digit at a time. Each digit adds `r` ten times
/// modulo `d`, counting the wraps: 64-bit additions and compares only (no
/// 128-bit product, which is a library multiply on 32-bit cores).
pub(crate) fn micros_of(rem: u64, d: NonZeroU64) -> u32 {
    let d = d.get();
    // Outside the contract, a remainder from a second that is not full.
    let mut r = if rem < d { rem } else { d - 1 };
    let mut micros = 0u32;
    for _ in 0..6 {
        // `acc < d` throughout; `acc + r >= d` exactly when `acc >= d - r`.
        let mut acc = 0u64;
        let mut digit = 0u32;
        for _ in 0..10 {
            if acc >= d - r {
                acc -= d - r;
                digit += 1;
            } else {
                acc += r;
            }
        }
        r = acc;
        micros = micros * 10 + digit;
    }
    micros
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nz(d: u64) -> NonZeroU64 {
        NonZeroU64::new(d).unwrap()
    }

    #[test]
    fn div_rem_matches_the_operators() {
        let values = [
            0,
            1,
            2,
            3,
            7,
            9,
            10,
            999_999,
            1_000_000,
            48_000_000,
            u32::MAX as u64,
            1 << 32,
            (1 << 63) + 12345,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &n in &values {
            for &d in values.iter().filter(|&&d| d != 0) {
                assert_eq!(div_rem(n, nz(d)), (n / d, n % d), "{n} / {d}");
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = x;
            let d = (x.rotate_left(29) >> (x % 64)).max(1);
            assert_eq!(div_rem(n, nz(d)), (n / d, n % d), "{n} / {d}");
        }
    }

    #[test]
    fn micros_match_the_wide_product() {
        let rates = [
            1,
            3,
            7,
            1_000,
            32_768,
            1_000_000,
            48_000_000,
            2_445_405_762,
            u64::MAX,
        ];
        for &d in &rates {
            for rem in [0, 1, d / 3, d / 2, d.saturating_sub(1)] {
                if rem >= d {
                    continue;
                }
                let expected = (u128::from(rem) * 1_000_000 / u128::from(d)) as u32;
                assert_eq!(micros_of(rem, nz(d)), expected, "{rem} of {d}");
            }
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = (x >> (x % 64)).max(1);
            let rem = x.rotate_left(17) % d;
            let expected = (u128::from(rem) * 1_000_000 / u128::from(d)) as u32;
            assert_eq!(micros_of(rem, nz(d)), expected, "{rem} of {d}");
        }
    }
}
