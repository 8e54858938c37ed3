//! The instructions of a sled, unpatched and patched.
//!
//! Unpatched (as the compiler emits it), a sled is `b #32` over seven `nop`s.
//! Patched, its first five words are:
//!
//! ```text
//! stp  x0, x30, [sp, #-16]!   ; keep the link register (and the stack aligned)
//! movz w17, #(id & 0xffff)
//! movk w17, #(id >> 16), lsl #16
//! bl   <trampoline>           ; entry, exit or tail-exit trampoline
//! ldp  x0, x30, [sp], #16
//! ```
//!
//! and the last three stay `nop`s. Only `x17` is left changed, which the
//! AArch64 procedure call standard lets any call (and compiler-rt's sleds)
//! clobber. compiler-rt loads the id and the trampoline's address from literal
//! words inside the sled instead; one of those is an 8-byte load from a 4-byte
//! aligned address, which faults on bare metal with the MMU off, where all data
//! accesses are Device accesses and must be aligned. A `bl` reaches ±128 MiB,
//! plenty for firmware.
//!
//! Writing order (see [`crate::patch`]): words 1 to 4 first, which the `b #32`
//! still skips; then word 0 in one aligned 4-byte store. Unpatching stores
//! `b #32` back into word 0.

use core::fmt;

/// Words in a sled (32 bytes). Example on [`is_unpatched`].
pub const SLED_WORDS: usize = 8;
/// `b #32`: the first word of an unpatched sled. Example on [`is_unpatched`].
pub const B_OVER_SLED: u32 = 0x1400_0008;
/// `nop`. Example on [`is_unpatched`].
pub const NOP: u32 = 0xd503_201f;
/// `stp x0, x30, [sp, #-16]!`: the first word of a patched sled. Example on
/// [`patched`].
pub const STP_X0_X30_PRE: u32 = 0xa9bf_7be0;
/// `ldp x0, x30, [sp], #16`. Example on [`patched`].
pub const LDP_X0_X30_POST: u32 = 0xa8c1_7be0;
const MOVZ_W17: u32 = 0x5280_0011;
const MOVK_W17_LSL16: u32 = 0x72a0_0011;
const BL: u32 = 0x9400_0000;
/// Offset of the `bl` in a patched sled.
const BL_OFFSET: usize = 12;

/// Why a sled cannot be patched.
///
/// ```
/// use flightrec_sleds_aarch64::{encode, PatchError};
/// let err = encode::patched(1, 0x4000_0000, 0x5000_0000).unwrap_err();
/// assert_eq!(err, PatchError::OutOfRange { sled: 0x4000_0000, trampoline: 0x5000_0000 });
/// assert!(err.to_string().contains("too far"));
/// let err = PatchError::NotASled { sled: 0x4020_0000, word: 0xd65f_03c0 };
/// assert_eq!(err.to_string(), "no XRay sled at 0x40200000 (its first word is 0xd65f03c0)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchError {
    /// The trampoline is beyond a `bl`'s ±128 MiB from the sled.
    OutOfRange {
        /// The sled's address.
        sled: usize,
        /// The trampoline's address.
        trampoline: usize,
    },
    /// The map names an address that holds neither an unpatched nor a patched
    /// sled (a map that is not this program's): nothing was written there.
    NotASled {
        /// The address.
        sled: usize,
        /// Its first word.
        word: u32,
    },
    /// The sled or the trampoline is not 4-byte aligned.
    Misaligned {
        /// The sled's address.
        sled: usize,
        /// The trampoline's address.
        trampoline: usize,
    },
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::OutOfRange { sled, trampoline } => write!(
                f,
                "trampoline {trampoline:#x} is too far from the sled at {sled:#x} for a bl"
            ),
            PatchError::NotASled { sled, word } => write!(
                f,
                "no XRay sled at {sled:#x} (its first word is {word:#010x})"
            ),
            PatchError::Misaligned { sled, trampoline } => write!(
                f,
                "sled {sled:#x} or trampoline {trampoline:#x} is not 4-byte aligned"
            ),
        }
    }
}

impl core::error::Error for PatchError {}

/// The first five words of the sled at `sled`, patched to call `trampoline` with
/// `id` in `w17` (the other three stay `nop`s).
///
/// ```
/// use flightrec_sleds_aarch64::encode;
/// let w = encode::patched(0x1_2345, 0x4008_0000, 0x4008_1000)?;
/// assert_eq!(w[0], encode::STP_X0_X30_PRE);
/// assert_eq!(w[1], 0x5284_68b1); // movz w17, #0x2345
/// assert_eq!(w[2], 0x72a0_0031); // movk w17, #0x1, lsl #16
/// assert_eq!(w[3], 0x9400_03fd); // bl .+0xff4 (from the sled's fourth word)
/// assert_eq!(w[4], encode::LDP_X0_X30_POST);
/// # Ok::<(), flightrec_sleds_aarch64::PatchError>(())
/// ```
pub fn patched(id: u32, sled: usize, trampoline: usize) -> Result<[u32; 5], PatchError> {
    if !sled.is_multiple_of(4) || !trampoline.is_multiple_of(4) {
        return Err(PatchError::Misaligned { sled, trampoline });
    }
    let from = sled.wrapping_add(BL_OFFSET) as i64;
    let words = (trampoline as i64).wrapping_sub(from) / 4;
    if !(-(1 << 25)..(1 << 25)).contains(&words) {
        return Err(PatchError::OutOfRange { sled, trampoline });
    }
    Ok([
        STP_X0_X30_PRE,
        MOVZ_W17 | ((id & 0xffff) << 5),
        MOVK_W17_LSL16 | ((id >> 16) << 5),
        BL | (words as u32 & 0x03ff_ffff),
        LDP_X0_X30_POST,
    ])
}

/// Whether `words` is a sled as the compiler emits it. The patcher checks only
/// the first word (a patched sled starts with [`STP_X0_X30_PRE`]).
///
/// ```
/// use flightrec_sleds_aarch64::encode::{is_unpatched, B_OVER_SLED, NOP, SLED_WORDS};
/// let mut sled = [NOP; SLED_WORDS];
/// assert_eq!(core::mem::size_of_val(&sled), 32);
/// sled[0] = B_OVER_SLED;
/// assert!(is_unpatched(&sled));
/// sled[3] = 0;
/// assert!(!is_unpatched(&sled));
/// ```
pub fn is_unpatched(words: &[u32; SLED_WORDS]) -> bool {
    words[0] == B_OVER_SLED && words[1..].iter().all(|&w| w == NOP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bl_reaches_backwards_and_to_the_limits() {
        let sled = 0x4800_0000usize;
        let back = patched(7, sled, sled - 0x100).unwrap();
        // bl .-0x10c: imm26 = -0x43
        assert_eq!(back[3], BL | (((-0x43i32) as u32) & 0x03ff_ffff));
        let far = sled + BL_OFFSET + ((1 << 27) - 4);
        assert!(patched(7, sled, far).is_ok());
        assert_eq!(
            patched(7, sled, far + 4),
            Err(PatchError::OutOfRange {
                sled,
                trampoline: far + 4
            })
        );
        let near = sled + BL_OFFSET - (1 << 27);
        assert!(patched(7, sled, near).is_ok());
        assert!(patched(7, sled, near - 4).is_err());
        assert!(matches!(
            patched(7, sled + 2, sled),
            Err(PatchError::Misaligned { .. })
        ));
    }

    #[test]
    fn ids_use_all_32_bits() {
        let w = patched(u32::MAX, 0, 0x100).unwrap();
        assert_eq!(w[1], MOVZ_W17 | (0xffff << 5));
        assert_eq!(w[2], MOVK_W17_LSL16 | (0xffff << 5));
        let w = patched(1, 0, 0x100).unwrap();
        assert_eq!((w[1], w[2]), (MOVZ_W17 | (1 << 5), MOVK_W17_LSL16));
    }
}
