//! Why a record could not be parsed or emitted.

use super::super::header::Version;

/// Which kind of event marker a [`RecordError::BadEventSize`] or a truncated payload
/// belongs to.
///
/// ```
/// use flightrec_core::fdr::decoder::{decode_record, EventKind, RecordError};
/// use flightrec_core::fdr::Version;
/// let mut marker = [0u8; 16];
/// marker[0] = 0x11; // TypedEventMarker with a payload size of 0
/// assert_eq!(
///     decode_record(Version::V5, &marker),
///     Err(RecordError::BadEventSize { event: EventKind::Typed, size: 0 })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EventKind {
    /// A CustomEventMarker (metadata kind 5).
    Custom,
    /// A TypedEventMarker (metadata kind 8).
    Typed,
}

impl EventKind {
    /// Lower-case name used in messages.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::EventKind;
    /// assert_eq!(EventKind::Custom.name(), "custom");
    /// assert_eq!(EventKind::Typed.name(), "typed");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            EventKind::Custom => "custom",
            EventKind::Typed => "typed",
        }
    }
}

/// Why [`Record::parse`](super::Record::parse) (and so
/// [`decode_record`](crate::fdr::decoder::decode_record)) could not decode a record.
///
/// ```
/// use flightrec_core::fdr::decoder::{decode_record, RecordError};
/// use flightrec_core::fdr::Version;
/// assert_eq!(decode_record(Version::V5, &[]), Err(RecordError::Incomplete { needed: 1 }));
/// assert_eq!(decode_record(Version::V5, &[0x70, 0, 0]), Err(RecordError::Incomplete { needed: 8 }));
/// // Action 4 does not exist.
/// assert_eq!(decode_record(Version::V5, &[0x08, 0, 0, 0, 0, 0, 0, 0]), Err(RecordError::UnknownFunctionAction(4)));
/// // EndOfBuffer is a version-1 record.
/// assert_eq!(decode_record(Version::V2, &[0x03]), Err(RecordError::EndOfBufferNotSupported(Version::V2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RecordError {
    /// The slice ends inside the record: at least `needed` bytes, counted from the
    /// record's start, are required. Feed more bytes and call again.
    ///
    /// `needed` is 1 for an empty slice, 8 for a function record, 16 for a metadata
    /// record, and `16 + size` once an event marker's size is known.
    Incomplete {
        /// Bytes required from the start of the record.
        needed: usize,
    },
    /// Metadata kind 10 or higher (byte 0 is `kind << 1 | 1`).
    UnknownMetadataKind(u8),
    /// Function record action 4 to 7 (bits 1 to 3 of byte 0).
    UnknownFunctionAction(u8),
    /// An EndOfBuffer record in a version-2-or-later log, where `llvm-xray` rejects it.
    EndOfBufferNotSupported(Version),
    /// A custom or typed event marker whose payload size is zero or negative.
    BadEventSize {
        /// Which marker.
        event: EventKind,
        /// The size it declares.
        size: i32,
    },
}

impl RecordError {
    /// Distance from the record's start to the byte `llvm-xray` names in its message
    /// for this error: 5 (just past the size field) for a bad event size, 0 otherwise.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{EventKind, RecordError};
    /// let bad_size = RecordError::BadEventSize { event: EventKind::Custom, size: -1 };
    /// assert_eq!(bad_size.llvm_offset_in_record(), 5);
    /// assert_eq!(RecordError::UnknownMetadataKind(12).llvm_offset_in_record(), 0);
    /// ```
    pub const fn llvm_offset_in_record(&self) -> usize {
        match self {
            RecordError::BadEventSize { .. } => 5,
            _ => 0,
        }
    }
}

impl core::fmt::Display for RecordError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RecordError::Incomplete { needed } => {
                write!(f, "incomplete record: {needed} bytes needed")
            }
            RecordError::UnknownMetadataKind(k) => {
                write!(f, "unknown metadata record kind {k}")
            }
            RecordError::UnknownFunctionAction(a) => {
                write!(f, "unknown function record action {a}")
            }
            RecordError::EndOfBufferNotSupported(v) => write!(
                f,
                "EndOfBuffer record in a version {} log (only version 1 allows it)",
                v.number()
            ),
            RecordError::BadEventSize { event, size } => {
                write!(
                    f,
                    "invalid {} event size {size} (must be > 0)",
                    event.name()
                )
            }
        }
    }
}

impl core::error::Error for RecordError {}

/// A record could not be encoded by [`Record::encode`](super::Record::encode); nothing
/// was written.
///
/// ```
/// use flightrec_core::fdr::records::{EncodeError, Record};
/// use flightrec_core::fdr::Version;
/// let mut small = [0u8; 8];
/// let err = Record::Pid { pid: 1 }.encode(Version::V5, &mut small).unwrap_err();
/// assert_eq!(err, EncodeError::BufferTooSmall { needed: 16 });
/// assert_eq!(err.to_string(), "output too small: the record needs 16 bytes");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EncodeError {
    /// The output slice is too small; `needed` bytes are required.
    BufferTooSmall {
        /// Bytes the record needs.
        needed: usize,
    },
    /// An event payload is empty or longer than `i32::MAX` bytes.
    BadPayloadSize(usize),
    /// The record's time form does not match the version (a delta custom event in
    /// versions 1 to 4, an absolute one in version 5).
    WrongTimeForm,
}

impl core::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EncodeError::BufferTooSmall { needed } => {
                write!(f, "output too small: the record needs {needed} bytes")
            }
            EncodeError::BadPayloadSize(n) => {
                write!(f, "event payload of {n} bytes (must be 1 to 2^31-1)")
            }
            EncodeError::WrongTimeForm => {
                write!(f, "custom event time form does not match the version")
            }
        }
    }
}
