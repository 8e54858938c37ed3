//! Little-endian fields at fixed byte offsets of fixed-size records (the file
//! header, metadata records): the one way their layouts are read and written.
//!
//! A field is named by its offset and width as const parameters, so a field that
//! does not lie inside its record, or a value of the wrong width, is a compile
//! error, and the copy needs no run-time bounds check. Reserved bytes are the
//! ones no field names: writers start from a zeroed record, so they are zero.

/// Bytes `AT..AT + N` of `record`.
#[inline(always)]
pub(crate) fn read<const AT: usize, const N: usize, const LEN: usize>(
    record: &[u8; LEN],
) -> [u8; N] {
    const { assert!(AT + N <= LEN, "field past the end of its record") };
    let mut field = [0; N];
    field.copy_from_slice(&record[AT..AT + N]);
    field
}

/// Writes `field` at bytes `AT..AT + N` of `record`.
#[inline(always)]
pub(crate) fn write<const AT: usize, const N: usize, const LEN: usize>(
    record: &mut [u8; LEN],
    field: [u8; N],
) {
    const { assert!(AT + N <= LEN, "field past the end of its record") };
    record[AT..AT + N].copy_from_slice(&field);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_their_offsets() {
        let mut record = [0u8; 16];
        write::<1, 4, 16>(&mut record, 0x0403_0201u32.to_le_bytes());
        write::<8, 8, 16>(&mut record, u64::MAX.to_le_bytes());
        assert_eq!(
            record,
            [0, 1, 2, 3, 4, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255]
        );
        assert_eq!(u32::from_le_bytes(read::<1, 4, 16>(&record)), 0x0403_0201);
        assert_eq!(u16::from_le_bytes(read::<14, 2, 16>(&record)), u16::MAX);
    }
}
