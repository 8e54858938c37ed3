//! The frame check: CRC-32C (Castagnoli), one table lookup per byte.
//!
//! CRC-32C detects every burst error up to 32 bits and every odd number of bit
//! errors in frames of the sizes sent here. The 256-entry table (1 KiB of flash,
//! built at compile time) was chosen by measurement over the bitwise form and the
//! 16-table one (16 KiB, too large for small firmware); see `docs/performance.md`.
//! It is written here rather than taken from the `crc` crate (which computes the
//! same table and is the judge in this module's tests) so that the link's hot
//! path can update the check a byte or two at a time inline: through the crate's
//! slice call a two-byte update cost 30 instructions on a Cortex-M4.

/// The reflected CRC-32C polynomial.
const POLY: u32 = 0x82F6_3B78;

/// `TABLE[i]`: the CRC register after shifting the byte `i` through it.
static TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
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
        // The index is below 256: no bounds check.
        self.0 = TABLE[((self.0 ^ u32::from(b)) & 0xff) as usize] ^ (self.0 >> 8);
    }

    /// Adds `bytes`.
    #[inline]
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
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
