//! What decoding an FDR file yields: each record with its byte offset
//! ([`Decoded`]), or the first error with the offset `llvm-xray` names
//! ([`DecodeError`]). Below the decoder, the grammar check and the end block's
//! check, which all report through these types.

use super::grammar::VerifyError;
use super::header::{HeaderError, Version};
use super::records::{
    EventKind, MetadataKind, Record, RecordError, RecordType, METADATA_RECORD_SIZE,
};

/// What went wrong, without the position (see [`DecodeError`]).
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::FileHeader;
/// use flightrec_core::fdr::decoder::{DecodeErrorKind, Decoder, RecordType};
/// use flightrec_core::fdr::records::MetadataKind;
/// use flightrec_core::fdr::Version;
///
/// let mut file = [0u8; 32 + 10];
/// let header = FileHeader::new(NonZeroU64::MIN, 0).with_version(Version::V1);
/// file[..32].copy_from_slice(&header.to_bytes());
/// file[32] = 0x01; // the first byte of a NewBuffer record, then only 9 more bytes
/// let err = Decoder::new(&file).unwrap().next().unwrap().unwrap_err();
/// assert_eq!(err.offset, 32);
/// assert_eq!(
///     err.kind,
///     DecodeErrorKind::TruncatedRecord {
///         record: RecordType::Metadata(MetadataKind::NewBuffer),
///         needed: 16,
///         available: 10,
///     }
/// );
/// file[32] = 0x15; // metadata kind 10
/// let err = Decoder::new(&file).unwrap().next().unwrap().unwrap_err();
/// assert_eq!(err.kind, DecodeErrorKind::UnknownMetadataKind(10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DecodeErrorKind {
    /// The 32-byte file header is missing or invalid. Offset 0.
    Header(HeaderError),
    /// The file ends inside a record. Offset: the record's start.
    TruncatedRecord {
        /// The record's type.
        record: RecordType,
        /// Bytes the record needs (8 or 16).
        needed: usize,
        /// Bytes left in the file from the record's start.
        available: usize,
    },
    /// The file ends inside an event payload. Offset: the payload's start, as in
    /// `llvm-xray`'s "Cannot read 100 bytes of custom event data from offset 128".
    TruncatedPayload {
        /// Custom or typed event.
        event: EventKind,
        /// Payload size the marker declares.
        size: usize,
        /// Bytes left in the file from the payload's start.
        available: usize,
    },
    /// Metadata record kind 10 or higher. Offset: the record's start.
    UnknownMetadataKind(u8),
    /// Function record action 4 to 7. Offset: the record's start.
    UnknownFunctionAction(u8),
    /// EndOfBuffer record after version 1. Offset: the record's start.
    EndOfBufferNotSupported(Version),
    /// Event payload size zero or negative. Offset: the byte after the size field
    /// (record start + 5), as `llvm-xray` reports it.
    BadEventSize {
        /// Custom or typed event.
        event: EventKind,
        /// The declared size.
        size: i32,
    },
    /// Versions 3 to 5: a record crosses the end of its buffer as given by the
    /// buffer's BufferExtents. Offset: the end of the record, as `llvm-xray` reports
    /// it ("Buffer over-read at offset 96 (over-read by 8 bytes)").
    BufferOverRead {
        /// The record's type.
        record: RecordType,
        /// Bytes of the record past the buffer's end.
        by: usize,
    },
    /// Versions 3 to 5: bytes are left after a buffer but none of them starts a
    /// BufferExtents record (`0x0f`). Offset: the end of the file, as `llvm-xray`
    /// reports it ("Failed reading one byte from offset N").
    MissingBufferExtents,
    /// The block grammar is violated. Offset: the offending record's start; for
    /// [`VerifyError::InvalidTerminal`] the start of the block (its NewBuffer); for
    /// [`VerifyError::NoBuffers`] the end of the file.
    Grammar(VerifyError),
    /// The header has [`HeaderFlags::END_BLOCK`](super::HeaderFlags::END_BLOCK)
    /// but the file does not end with an [end block](super::end): it was cut short
    /// (a full disk, a crash), possibly exactly between two buffers. Offset: the
    /// end of the file.
    CutShort {
        /// Buffers (NewBuffer records) the file holds.
        buffers: usize,
    },
    /// An end block whose count is not the number of buffers before it. Offset:
    /// the end block's NewBuffer record.
    EndBlockCount {
        /// The count the end block states.
        stated: u64,
        /// Buffers before it in the file.
        found: usize,
    },
    /// A record after the end block of a file whose header promises one. Offset:
    /// that record's start.
    AfterEndBlock,
}

impl core::fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DecodeErrorKind::Header(e) => write!(f, "{e}"),
            DecodeErrorKind::TruncatedRecord {
                record,
                needed,
                available,
            } => write!(
                f,
                "{record} record truncated: it needs {needed} bytes, the file has {available} left"
            ),
            DecodeErrorKind::TruncatedPayload {
                event,
                size,
                available,
            } => write!(
                f,
                "{} event payload truncated: {size} bytes declared, the file has {available} left",
                event.name()
            ),
            DecodeErrorKind::UnknownMetadataKind(k) => {
                write!(f, "unknown metadata record kind {k}")
            }
            DecodeErrorKind::UnknownFunctionAction(a) => {
                write!(f, "unknown function record action {a}")
            }
            DecodeErrorKind::EndOfBufferNotSupported(v) => write!(
                f,
                "EndOfBuffer record in a version {} log (only version 1 allows it)",
                v.number()
            ),
            DecodeErrorKind::BadEventSize { event, size } => {
                write!(f, "invalid {} event size {size} (must be > 0)", event.name())
            }
            DecodeErrorKind::BufferOverRead { record, by } => write!(
                f,
                "{record} record ends {by} bytes past the end of its buffer (BufferExtents too small)"
            ),
            DecodeErrorKind::MissingBufferExtents => write!(
                f,
                "bytes left after the last buffer, but no BufferExtents record among them"
            ),
            DecodeErrorKind::Grammar(e) => write!(f, "{e}"),
            DecodeErrorKind::CutShort { buffers } => write!(
                f,
                "incomplete: the file ends after {buffers} buffers without the end block its header promises (cut short)"
            ),
            DecodeErrorKind::EndBlockCount { stated, found } => write!(
                f,
                "the end block counts {stated} buffers, the file has {found} before it"
            ),
            DecodeErrorKind::AfterEndBlock => write!(f, "record after the end block"),
        }
    }
}

/// Why a file could not be decoded or verified, and where.
///
/// `offset` is a byte offset from the start of the file; what it points at depends on
/// the [kind](DecodeErrorKind) and matches `llvm-xray` 14's messages where those
/// name an offset.
///
/// ```
/// use flightrec_core::fdr::decoder::{verify, DecodeErrorKind};
/// // A version-5 header and nothing else.
/// let mut file = [0u8; 32];
/// file[..12].copy_from_slice(&[5, 0, 1, 0, 3, 0, 0, 0, 0, 0xca, 0x9a, 0x3b]);
/// let err = verify(&file).unwrap_err();
/// assert_eq!(err.offset, 32);
/// assert_eq!(err.to_string(), "at byte 32: no buffer in the log");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DecodeError {
    /// Byte offset in the file.
    pub offset: usize,
    /// What went wrong.
    pub kind: DecodeErrorKind,
}

impl DecodeError {
    /// An error at `offset`, for code that checks more than this module does and
    /// reports in the same form.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{DecodeError, DecodeErrorKind};
    /// let err = DecodeError::new(40, DecodeErrorKind::MissingBufferExtents);
    /// assert_eq!(err.offset, 40);
    /// assert_eq!(
    ///     err.to_string(),
    ///     "at byte 40: bytes left after the last buffer, but no BufferExtents record among them"
    /// );
    /// ```
    pub const fn new(offset: usize, kind: DecodeErrorKind) -> Self {
        Self { offset, kind }
    }

    /// Maps a [`RecordError`] for the record at `offset`, with `available` bytes left
    /// in the file from there, to the offset `llvm-xray` reports.
    pub(super) fn from_record(offset: usize, first: u8, available: usize, e: RecordError) -> Self {
        let at = offset.saturating_add(e.llvm_offset_in_record());
        let kind = match e {
            RecordError::Incomplete { needed } => {
                // Past 16 bytes, only an event payload can be missing.
                if needed > METADATA_RECORD_SIZE && first & 1 == 1 {
                    let event = if first >> 1 == MetadataKind::TypedEventMarker as u8 {
                        EventKind::Typed
                    } else {
                        EventKind::Custom
                    };
                    return Self::new(
                        offset.saturating_add(METADATA_RECORD_SIZE),
                        DecodeErrorKind::TruncatedPayload {
                            event,
                            size: needed - METADATA_RECORD_SIZE,
                            available: available.saturating_sub(METADATA_RECORD_SIZE),
                        },
                    );
                }
                DecodeErrorKind::TruncatedRecord {
                    // Incomplete is only reported once the first byte named a known type.
                    record: RecordType::from_first_byte(first).unwrap_or(RecordType::Function),
                    needed,
                    available,
                }
            }
            RecordError::UnknownMetadataKind(k) => DecodeErrorKind::UnknownMetadataKind(k),
            RecordError::UnknownFunctionAction(a) => DecodeErrorKind::UnknownFunctionAction(a),
            RecordError::EndOfBufferNotSupported(v) => DecodeErrorKind::EndOfBufferNotSupported(v),
            RecordError::BadEventSize { event, size } => {
                DecodeErrorKind::BadEventSize { event, size }
            }
        };
        Self::new(at, kind)
    }
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.kind)
    }
}

impl core::error::Error for DecodeError {}

impl From<HeaderError> for DecodeError {
    fn from(e: HeaderError) -> Self {
        Self::new(0, DecodeErrorKind::Header(e))
    }
}

/// A record and where it starts in the file, as the [`Decoder`](super::decoder::Decoder) yields it.
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::FileHeader;
/// use flightrec_core::fdr::decoder::{Decoded, Decoder};
/// use flightrec_core::fdr::records::Record;
/// use flightrec_core::fdr::Version;
///
/// let mut file = [0u8; 48];
/// file[..32].copy_from_slice(&FileHeader::new(NonZeroU64::MIN, 0).to_bytes());
/// Record::BufferExtents { size: 0 }.encode(Version::V5, &mut file[32..]).unwrap();
/// let first = Decoder::new(&file).unwrap().next().unwrap();
/// assert_eq!(first, Ok(Decoded { offset: 32, record: Record::BufferExtents { size: 0 } }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Decoded<'a> {
    /// Byte offset of the record's first byte in the file.
    pub offset: usize,
    /// The record; event payloads borrow from the file.
    pub record: Record<'a>,
}
