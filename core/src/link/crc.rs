//! The frame check: CRC-32C (Castagnoli), one table lookup per byte.
//!
//! CRC-32C detects every burst error up to 32 bits and every odd number of bit
//! errors in frames of the sizes sent here. The 256-entry table (1 KiB of flash,
//! built at compile time) was chosen by measurement over the bitwise form and the
//! 16-table one (16 KiB, too large for small firmware); see `docs/performance.md`.
//! With the feature `crc-nibble` the table has 16 entries (64 bytes) and a byte
//! takes two lookups: less flash, more cycles per record on the link (both
//! measured in `docs/performance.md`).
//! It is written here rather than taken from the `crc` crate (which computes the
//! same table and is the judge in this module's tests) so that the link's hot
//! path can update the check a byte or two at a time inline: through the crate's
//! slice call a two-byte update is a call and a loop on a Cortex-M4.

/// The reflected CRC-32C polynomial.
const POLY: u32 = 0x82F6_3B78;

/// Bits a table lookup shifts through the register.
const BITS: u32 = if cfg!(feature = "crc-nibble") { 4 } else { 8 };

/// Entries of [`TABLE`].
const ENTRIES: usize = 1 << BITS;

/// `TABLE[i]`: the CRC register after shifting the `BITS` bits of `i` through it.
static TABLE: [u32; ENTRIES] = table();

const fn table() -> [u32; ENTRIES] {
    let mut t = [0u32; ENTRIES];
    let mut i = 0;
    while i < ENTRIES {
        let mut c = i as u32;
        let mut k = 0;
        while k < BITS {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// A running CRC-32C over pieces of a frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crc32c(u32);

impl Crc32c {
    /// The check of no bytes yet.
    pub(crate) const fn new() -> Self {
        Self(!0)
    }

    /// Adds one byte.
    #[inline(always)]
    pub(crate) fn byte(&mut self, b: u8) {
        // The indices are below `ENTRIES`: no bounds check.
        let mask = ENTRIES as u32 - 1;
        let mut c = self.0 ^ u32::from(b);
        c = TABLE[(c & mask) as usize] ^ (c >> BITS);
        if BITS == 4 {
            c = TABLE[(c & mask) as usize] ^ (c >> BITS);
        }
        self.0 = c;
    }

    /// Adds `bytes`.
    #[inline]
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// A check whose [`finish`](Self::finish) gives `check`: the tests' way to
    /// a frame with a chosen check.
    #[cfg(test)]
    pub(crate) const fn finishing_as(check: u32) -> Self {
        Self(!check)
    }

    /// The check of everything added.
    pub(crate) const fn finish(self) -> u32 {
        !self.0
    }
}

/// CRC-32C of `bytes`, as frames carry it.
///
/// ```
/// // The check value of CRC-32C.
/// assert_eq!(flightrec_core::link::crc32(b"123456789"), 0xe306_9283);
/// ```
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = Crc32c::new();
    c.update(bytes);
    c.finish()
}
