//! The frame check: CRC-32C (Castagnoli), from the `crc` crate.
//!
//! CRC-32C detects every burst error up to 32 bits and every odd number of bit
//! errors in frames of the sizes sent here. The 256-entry table variant (1 KiB of
//! flash) was chosen by measurement over the bitwise one (`NoTable`) and the 16-table
//! one (16 KiB, too large for small firmware); see `docs/performance.md`.

use crc::{Crc, Digest, Table, CRC_32_ISCSI};

/// The CRC engine every frame uses.
pub(crate) static CRC32C: Crc<u32, Table<1>> = Crc::<u32, Table<1>>::new(&CRC_32_ISCSI);

/// A running CRC over pieces of a frame.
pub(crate) fn digest() -> Digest<'static, u32, Table<1>> {
    CRC32C.digest()
}

/// CRC-32C of `bytes`, as frames carry it.
///
/// ```
/// // The check value of CRC-32C.
/// assert_eq!(flightrec_core::link::crc32(b"123456789"), 0xe306_9283);
/// ```
pub fn crc32(bytes: &[u8]) -> u32 {
    CRC32C.checksum(bytes)
}
