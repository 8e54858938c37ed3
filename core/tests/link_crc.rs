//! The link's CRC-32C against the `crc` crate's (CRC_32_ISCSI), on any bytes.

use flightrec_core::link::crc32;
use proptest::prelude::*;

const JUDGE: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

#[test]
fn check_value_and_edges() {
    assert_eq!(crc32(b"123456789"), 0xe306_9283);
    assert_eq!(crc32(b""), JUDGE.checksum(b""));
    for b in 0..=255u8 {
        assert_eq!(crc32(&[b]), JUDGE.checksum(&[b]), "byte {b:#04x}");
    }
}

proptest! {
    #[test]
    fn equals_the_crc_crate(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        prop_assert_eq!(crc32(&bytes), JUDGE.checksum(&bytes));
    }
}
