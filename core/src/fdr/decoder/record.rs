//! Decoding one record from the start of a byte slice.

use super::super::header::Version;
use super::super::records::{Record, RecordError};

/// Decodes the record at the start of `bytes`, laid out as `version` lays it out, and
/// returns it with its length in bytes (payload included): [`Record::parse`], which
/// reads each kind through its type in [`records`](super::super::records).
///
/// This never panics and never reads past `bytes`; a record cut short by the end of
/// the slice is [`RecordError::Incomplete`], so a stream can be decoded as it arrives.
/// Checks come in the order `llvm-xray` 14 makes them: an unknown metadata kind or an
/// EndOfBuffer after version 1 is reported from byte 0 alone; a function record must be
/// complete before its action is checked; a metadata record must be complete (16
/// bytes) before an event size is checked; then the event payload must be present.
///
/// Custom event markers depend on the version: versions 1 to 4 carry a size, an
/// absolute TSC and (at byte 13) a CPU id, which is decoded for versions 1 to 3 too,
/// since `llvm-xray` 14 reads it there; version 5 carries a size and a TSC delta.
///
/// Buffer delimiting (extents, junk between buffers) is a file-level matter handled
/// by [`Decoder`](super::Decoder); here a BufferExtents record is just a record.
///
/// ```
/// use flightrec_core::fdr::decoder::{decode_record, RecordError};
/// use flightrec_core::fdr::records::{CustomEventTime, Record};
/// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
///
/// // Enter #7, delta 5.
/// let bytes = [0x70, 0, 0, 0, 5, 0, 0, 0];
/// let (rec, len) = decode_record(Version::V5, &bytes).unwrap();
/// assert_eq!(len, 8);
/// assert_eq!(
///     rec,
///     Record::Function { action: FunctionAction::Enter, id: FunctionId::new(7).unwrap(), delta: 5 }
/// );
///
/// // A version-5 custom event: size 2, delta 100, then its payload.
/// let mut ev = [0u8; 18];
/// ev[0] = 0x0b;
/// ev[1] = 2;
/// ev[5] = 100;
/// ev[16..].copy_from_slice(b"hi");
/// // Fed in pieces: first the marker's first byte, then the marker, then everything.
/// assert_eq!(decode_record(Version::V5, &ev[..1]), Err(RecordError::Incomplete { needed: 16 }));
/// assert_eq!(decode_record(Version::V5, &ev[..16]), Err(RecordError::Incomplete { needed: 18 }));
/// let (rec, len) = decode_record(Version::V5, &ev).unwrap();
/// assert_eq!(len, 18);
/// assert_eq!(rec, Record::CustomEvent { time: CustomEventTime::Delta(100), payload: b"hi" });
///
/// // Metadata kind 10 does not exist.
/// assert_eq!(decode_record(Version::V5, &[0x15]), Err(RecordError::UnknownMetadataKind(10)));
/// ```
#[inline]
pub fn decode_record(version: Version, bytes: &[u8]) -> Result<(Record<'_>, usize), RecordError> {
    Record::parse(version, bytes)
}
