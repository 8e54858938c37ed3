//! Streaming FDR decoder and verifier.
//!
//! Three layers, each usable on its own, none of which allocates or panics:
//!
//! * [`decode_record`] decodes one record from the start of a slice and says how many
//!   more bytes it needs when the slice is cut short, for data that arrives in pieces.
//! * [`Decoder`] walks a whole file and delimits buffers exactly as `llvm-xray` 14
//!   does for each version (see its documentation), yielding every record with its
//!   byte offset.
//! * [`BlockVerifier`] checks the block grammar LLVM's loader enforces, and [`verify`]
//!   runs the decoder and the verifier over a file and counts what it saw.
//!
//! A file is accepted here exactly when `llvm-xray fdr-dump --verify` and
//! `llvm-xray convert` both accept it, with two deliberate exceptions: a header whose
//! cycle frequency is 0 is rejected (see [`FileHeader::parse`]), because no time in
//! such a trace means anything; and a file whose header has
//! [`HeaderFlags::END_BLOCK`](super::HeaderFlags::END_BLOCK) must end with the
//! [end block](super::end) (else it was cut short, which llvm-xray cannot tell). Errors carry the byte offset `llvm-xray` names in
//! its message where it names one.
//!
//! ```
//! use flightrec_core::clock::Timestamp;
//! use flightrec_core::fdr::decoder::{verify, DecodeErrorKind};
//! use flightrec_core::fdr::header::{HeaderError, HEADER_SIZE};
//! use flightrec_core::fdr::ring::RecorderConfig;
//! use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
//! use flightrec_core::fdr::FunctionId;
//!
//! let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
//! let mut file = [0u8; HEADER_SIZE + 128];
//! file[..HEADER_SIZE].copy_from_slice(&cfg.file_header(128).to_bytes());
//! let mut w = BufferWriter::new(&mut file[HEADER_SIZE..], &cfg.writer, Walltime::default()).unwrap();
//! w.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
//! let len = HEADER_SIZE + w.len();
//! assert_eq!(verify(&file[..len]).unwrap().function_records, 1);
//! // Damage the header's log type.
//! file[2] = 0;
//! let err = verify(&file[..len]).unwrap_err();
//! assert_eq!((err.offset, err.kind), (0, DecodeErrorKind::Header(HeaderError::NotFdr(0))));
//! ```

mod record;
mod verifier;

pub use super::records::{EventKind, RecordError};
pub use record::{decode_record, RecordType};
pub use verifier::{BlockState, BlockVerifier, VerifyError};

use super::end::EndCheck;
use super::header::{FileHeader, HeaderError, Version, HEADER_SIZE};
use super::records::{BufferExtents, MetadataKind, Record, METADATA_RECORD_SIZE};

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
    fn from_record(offset: usize, first: u8, available: usize, e: RecordError) -> Self {
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

/// A record and where it starts in the file, as the [`Decoder`] yields it.
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

/// Iterates over the records of a whole FDR file, delimiting buffers exactly as
/// `llvm-xray` 14 does for the file's version:
///
/// * **Version 1**: records are read back to back until the end of the file. What
///   follows an EndOfBuffer is still parsed (the verifier ignores it), so zero padding
///   reads as "Enter #0" records and must be a multiple of 8 bytes long.
/// * **Version 2**: BufferExtents records are read but their value is ignored; records
///   are read back to back; EndOfBuffer is an error.
/// * **Versions 3 to 5**: each buffer starts with a BufferExtents record whose value
///   (kept, as LLVM keeps it, in 32 bits) is the number of bytes of the buffer that
///   follow it. A record crossing that end is an error
///   ([`BufferOverRead`](DecodeErrorKind::BufferOverRead)). Once a buffer is used up,
///   bytes are skipped one by one up to the next `0x0f` byte, which must start a
///   BufferExtents record; if none is left the file is in error
///   ([`MissingBufferExtents`](DecodeErrorKind::MissingBufferExtents)). Extents larger
///   than the rest of the file are fine.
///
/// In every version a BufferExtents record cut short by the end of the file is
/// accepted once its 8-byte size field is complete, as `llvm-xray` accepts it.
///
/// The iterator yields every record, BufferExtents included, with its offset; the
/// bytes skipped between buffers are counted by [`skipped_bytes`](Self::skipped_bytes).
/// After the first error it yields that error once, then `None`. It does not check the
/// block grammar; [`verify`] does that too.
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::decoder::{DecodeErrorKind, Decoder};
/// use flightrec_core::fdr::records::Record;
/// use flightrec_core::fdr::{FileHeader, FunctionAction, FunctionId, Version};
///
/// let records = [
///     Record::BufferExtents { size: 16 * 3 + 8 },
///     Record::NewBuffer { tid: 1 },
///     Record::Walltime { seconds: 1, micros: 2 },
///     Record::NewCpuId { cpu: 0, tsc: 1000 },
///     Record::Function { action: FunctionAction::Enter, id: FunctionId::new(1).unwrap(), delta: 0 },
/// ];
/// let mut file = [0u8; 32 + 4 * 16 + 8 + 2];
/// file[..32].copy_from_slice(&FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), 0).to_bytes());
/// let mut len = 32;
/// for r in &records {
///     len += r.encode(Version::V5, &mut file[len..]).unwrap();
/// }
///
/// let mut decoder = Decoder::new(&file[..len]).unwrap();
/// assert_eq!(decoder.header().version, Version::V5);
/// for (i, record) in records.iter().enumerate() {
///     let decoded = decoder.next().unwrap().unwrap();
///     assert_eq!(decoded.offset, 32 + 16 * i);
///     assert_eq!(decoded.record, *record);
/// }
/// assert_eq!(decoder.next(), None);
///
/// // Two zero bytes after the buffer: no BufferExtents follows them.
/// let last = Decoder::new(&file).unwrap().last().unwrap().unwrap_err();
/// assert_eq!((last.offset, last.kind), (file.len(), DecodeErrorKind::MissingBufferExtents));
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Decoder<'a> {
    bytes: &'a [u8],
    header: FileHeader,
    /// Where the next record (or the scan for the next BufferExtents) starts.
    offset: usize,
    /// Versions 3 to 5: bytes left in the current buffer. LLVM 14 keeps this count in
    /// a `uint32_t`, so an extents value is taken modulo 2^32, and so is it here.
    remaining: u32,
    skipped: usize,
    done: bool,
}

impl<'a> Decoder<'a> {
    /// Reads the file header (offset 0) and positions the decoder after it.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{DecodeErrorKind, Decoder};
    /// use flightrec_core::fdr::header::HeaderError;
    /// let err = Decoder::new(&[5, 0, 1]).unwrap_err();
    /// assert_eq!(err.offset, 0);
    /// assert_eq!(err.kind, DecodeErrorKind::Header(HeaderError::Truncated { len: 3 }));
    /// ```
    pub fn new(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let header = FileHeader::parse(bytes)?;
        Ok(Self {
            bytes,
            header,
            offset: HEADER_SIZE,
            remaining: 0,
            skipped: 0,
            done: false,
        })
    }

    /// The file header.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// use flightrec_core::fdr::decoder::Decoder;
    /// let bytes = FileHeader::new(NonZeroU64::new(48_000_000).unwrap(), 512).to_bytes();
    /// let decoder = Decoder::new(&bytes).unwrap();
    /// assert_eq!(decoder.header().cycle_frequency.get(), 48_000_000);
    /// assert_eq!(decoder.header().buffer_size, 512);
    /// ```
    pub const fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The file's format version, which decides how records and buffers are read.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// use flightrec_core::fdr::decoder::Decoder;
    /// use flightrec_core::fdr::Version;
    /// let bytes = FileHeader::new(NonZeroU64::MIN, 0).with_version(Version::V3).to_bytes();
    /// assert_eq!(Decoder::new(&bytes).unwrap().version(), Version::V3);
    /// ```
    pub const fn version(&self) -> Version {
        self.header.version
    }

    /// Offset of the next byte to read.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// use flightrec_core::fdr::decoder::Decoder;
    /// let mut file = [0u8; 48];
    /// file[..32].copy_from_slice(&FileHeader::new(NonZeroU64::MIN, 0).to_bytes());
    /// file[32] = 0x0f; // BufferExtents of size 0
    /// let mut decoder = Decoder::new(&file).unwrap();
    /// assert_eq!(decoder.offset(), 32);
    /// decoder.next().unwrap().unwrap();
    /// assert_eq!(decoder.offset(), 48);
    /// ```
    pub const fn offset(&self) -> usize {
        self.offset
    }

    /// Versions 3 to 5: bytes skipped so far while looking for the next BufferExtents
    /// record (junk between buffers). Always 0 for versions 1 and 2.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// use flightrec_core::fdr::decoder::Decoder;
    /// use flightrec_core::fdr::records::Record;
    /// let mut file = [0u8; 32 + 16 + 3 + 16];
    /// file[..32].copy_from_slice(&FileHeader::new(NonZeroU64::MIN, 0).to_bytes());
    /// file[32] = 0x0f; // an empty buffer (extents 0), then 3 bytes of junk
    /// file[48..51].copy_from_slice(&[0xAA, 0xBB, 0xCC]);
    /// file[51] = 0x0f; // the next buffer
    /// let mut decoder = Decoder::new(&file).unwrap();
    /// decoder.next().unwrap().unwrap();
    /// let next = decoder.next().unwrap().unwrap();
    /// assert_eq!((next.offset, next.record), (51, Record::BufferExtents { size: 0 }));
    /// assert_eq!(decoder.skipped_bytes(), 3);
    /// ```
    pub const fn skipped_bytes(&self) -> usize {
        self.skipped
    }

    fn fail(&mut self, e: DecodeError) -> Option<Result<Decoded<'a>, DecodeError>> {
        self.done = true;
        Some(Err(e))
    }

    /// Decodes the record at `self.offset`, accepting a BufferExtents record whose
    /// reserved bytes are cut off by the end of the file (LLVM only requires its size
    /// field). Returns the record and how far to advance.
    fn decode_at(&self, at: usize) -> Result<(Record<'a>, usize), DecodeError> {
        let rest = self.bytes.get(at..).unwrap_or(&[]);
        let first = rest.first().copied().unwrap_or(0);
        match decode_record(self.header.version, rest) {
            Ok(ok) => Ok(ok),
            // The tag byte and the 8-byte size field are there.
            Err(RecordError::Incomplete { .. })
                if first == MetadataKind::BufferExtents.tag()
                    && rest.len() >= BufferExtents::SIZE_FIELD.end =>
            {
                let size = rest
                    .get(BufferExtents::SIZE_FIELD)
                    .and_then(|field| <[u8; 8]>::try_from(field).ok())
                    .map_or(0, u64::from_le_bytes);
                Ok((Record::BufferExtents { size }, rest.len()))
            }
            Err(e) => Err(DecodeError::from_record(at, first, rest.len(), e)),
        }
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<Decoded<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.offset >= self.bytes.len() {
            self.done = true;
            return None;
        }
        let extents_enforced = self.header.version >= Version::V3;

        if extents_enforced && self.remaining == 0 {
            // Between buffers: skip to the next byte that introduces a BufferExtents.
            let rest = self.bytes.get(self.offset..).unwrap_or(&[]);
            let tag = MetadataKind::BufferExtents.tag();
            let Some(skip) = rest.iter().position(|&b| b == tag) else {
                return self.fail(DecodeError::new(
                    self.bytes.len(),
                    DecodeErrorKind::MissingBufferExtents,
                ));
            };
            self.skipped = self.skipped.saturating_add(skip);
            let at = self.offset + skip;
            return match self.decode_at(at) {
                Ok((record, len)) => {
                    if let Record::BufferExtents { size } = record {
                        self.remaining = size as u32;
                    }
                    self.offset = at.saturating_add(len);
                    Some(Ok(Decoded { offset: at, record }))
                }
                Err(e) => self.fail(e),
            };
        }

        let at = self.offset;
        let (record, len) = match self.decode_at(at) {
            Ok(ok) => ok,
            Err(e) => return self.fail(e),
        };
        if let Record::BufferExtents { size } = record {
            // Any version, anywhere: LLVM restarts the buffer count without checking
            // the current one.
            self.remaining = size as u32;
        } else if extents_enforced {
            let remaining = self.remaining as usize;
            if len > remaining {
                return self.fail(DecodeError::new(
                    at.saturating_add(len),
                    DecodeErrorKind::BufferOverRead {
                        record: RecordType::of(&record),
                        by: len - remaining,
                    },
                ));
            }
            // len <= remaining <= u32::MAX, so this neither wraps nor truncates.
            self.remaining -= len as u32;
        }
        self.offset = at.saturating_add(len);
        Some(Ok(Decoded { offset: at, record }))
    }
}

impl core::iter::FusedIterator for Decoder<'_> {}

/// What [`verify`] saw in a valid file: its header and record counts, for a quick
/// check that a trace holds what was recorded.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::decoder::verify;
/// use flightrec_core::fdr::header::HEADER_SIZE;
/// use flightrec_core::fdr::ring::RecorderConfig;
/// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
/// use flightrec_core::fdr::FunctionId;
///
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
/// let mut file = [0u8; HEADER_SIZE + 256];
/// file[..HEADER_SIZE].copy_from_slice(&cfg.file_header(256).to_bytes());
/// let mut w = BufferWriter::new(&mut file[HEADER_SIZE..], &cfg.writer, Walltime::default()).unwrap();
/// let t = Timestamp::default();
/// w.enter_with_args(FunctionId::new(1).unwrap(), t, &[42]).unwrap();
/// w.custom_event(t, b"x").unwrap();
/// let len = HEADER_SIZE + w.len();
///
/// let summary = verify(&file[..len]).unwrap();
/// assert_eq!(summary.header.cycle_frequency.get(), 1_000);
/// assert_eq!((summary.buffers, summary.extents), (1, 1));
/// assert_eq!((summary.function_records, summary.call_arguments, summary.custom_events), (1, 1, 1));
/// // Extents, NewBuffer, Walltime, NewCPUId, the argument and the event marker.
/// assert_eq!(summary.metadata_records, 6);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Summary {
    /// The file header.
    pub header: FileHeader,
    /// Blocks, that is NewBuffer records (one per thread buffer written).
    pub buffers: usize,
    /// BufferExtents records (versions 2 to 5; an extents of 0 has no block).
    pub extents: usize,
    /// Function records (8 bytes each).
    pub function_records: usize,
    /// Metadata records of every kind, event markers and BufferExtents included.
    pub metadata_records: usize,
    /// CustomEventMarker records.
    pub custom_events: usize,
    /// TypedEventMarker records.
    pub typed_events: usize,
    /// CallArgument records.
    pub call_arguments: usize,
    /// Bytes skipped between buffers (versions 3 to 5).
    pub skipped_bytes: usize,
    /// The file ends with the [end block](super::end) its header promises; it is
    /// not counted in `buffers` (its five metadata records and its extents are
    /// counted in `metadata_records` and `extents`).
    pub end_block: bool,
}

impl Summary {
    fn new(header: FileHeader) -> Self {
        Self {
            header,
            buffers: 0,
            extents: 0,
            function_records: 0,
            metadata_records: 0,
            custom_events: 0,
            typed_events: 0,
            call_arguments: 0,
            skipped_bytes: 0,
            end_block: false,
        }
    }

    /// The summary of a file whose records were counted: marks the end block
    /// found by an [`EndCheck`] and takes it out of `buffers`. For verifiers that
    /// count the records themselves (the host's indexer).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::decoder::verify;
    /// use flightrec_core::fdr::end::EndBlock;
    /// use flightrec_core::fdr::writer::Walltime;
    /// use flightrec_core::fdr::{FileHeader, HeaderFlags, Version};
    /// let header = FileHeader::new(NonZeroU64::MIN, 0).with_flags(HeaderFlags::END_BLOCK);
    /// let mut file = [0u8; 112];
    /// file[..32].copy_from_slice(&header.to_bytes());
    /// EndBlock { buffers: 0, pid: 1, closed: Walltime::default() }.encode(Version::V5, &mut file[32..]);
    /// let s = verify(&file).unwrap();
    /// assert_eq!((s.buffers, s.extents, s.metadata_records, s.end_block), (0, 1, 5, true));
    /// ```
    pub fn with_end_block(mut self, end_block: Option<usize>) -> Self {
        if end_block.is_some() {
            self.end_block = true;
            self.buffers = self.buffers.saturating_sub(1);
        }
        self
    }

    fn count(&mut self, record: &Record<'_>) {
        let bump = |n: &mut usize| *n = n.saturating_add(1);
        if record.is_metadata() {
            bump(&mut self.metadata_records);
        }
        match record {
            Record::Function { .. } => bump(&mut self.function_records),
            Record::NewBuffer { .. } => bump(&mut self.buffers),
            Record::BufferExtents { .. } => bump(&mut self.extents),
            Record::CustomEvent { .. } => bump(&mut self.custom_events),
            Record::TypedEvent { .. } => bump(&mut self.typed_events),
            Record::CallArgument { .. } => bump(&mut self.call_arguments),
            _ => {}
        }
    }
}

/// Decodes and verifies a whole FDR file, and counts its records.
///
/// Accepts exactly what `llvm-xray` 14 loads (both `fdr-dump --verify` and
/// `convert`), except a zero cycle frequency and a file whose header promises an
/// [end block](super::end) it does not end with (cut short): header version 1 to 5 and type 1, the
/// per-version buffer delimiting of [`Decoder`], every record decodable, the block
/// grammar of [`BlockVerifier`], no block ending in its preamble, and at least one
/// block. The first error in file order is returned (LLVM reports all decoding errors
/// before any grammar error, so when a file has both, the message may differ, never
/// the verdict).
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::decoder::{verify, BlockState, DecodeErrorKind, VerifyError};
/// use flightrec_core::fdr::records::Record;
/// use flightrec_core::fdr::{FileHeader, FunctionAction, FunctionId, Version};
///
/// let mut file = [0u8; 32 + 16 + 16 + 8];
/// let header = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), 0).with_version(Version::V1);
/// file[..32].copy_from_slice(&header.to_bytes());
/// let enter = Record::Function { action: FunctionAction::Enter, id: FunctionId::new(1).unwrap(), delta: 0 };
/// let mut len = 32;
/// for record in [
///     Record::NewBuffer { tid: 1 },
///     Record::Walltime { seconds: 1, micros: 0 },
///     enter, // no NewCPUId before the first event
/// ] {
///     len += record.encode(Version::V1, &mut file[len..]).unwrap();
/// }
///
/// let err = verify(&file[..len]).unwrap_err();
/// assert_eq!(err.offset, 64);
/// assert_eq!(
///     err.kind,
///     DecodeErrorKind::Grammar(VerifyError::InvalidTransition {
///         from: BlockState::WallClockTime,
///         to: BlockState::Function,
///     })
/// );
/// assert_eq!(err.to_string(), "at byte 64: invalid transition from WallClockTime to Function");
/// ```
pub fn verify(bytes: &[u8]) -> Result<Summary, DecodeError> {
    let mut decoder = Decoder::new(bytes)?;
    let mut summary = Summary::new(*decoder.header());
    let mut verifier = BlockVerifier::new();
    let mut end = EndCheck::new(decoder.header());
    let mut block_start = HEADER_SIZE;
    for item in &mut decoder {
        let decoded = item?;
        end.feed(&decoded)?;
        let Decoded { offset, record } = decoded;
        verifier.feed(&record).map_err(|e| {
            let at = match e {
                VerifyError::InvalidTerminal { .. } => block_start,
                _ => offset,
            };
            DecodeError::new(at, DecodeErrorKind::Grammar(e))
        })?;
        if let Record::NewBuffer { .. } = record {
            block_start = offset;
        }
        summary.count(&record);
    }
    verifier.finish().map_err(|e| {
        let at = match e {
            // Only a header, where the header promises an end block: cut short.
            VerifyError::NoBuffers => match end.finish(bytes.len()) {
                Err(cut) => return cut,
                Ok(_) => bytes.len(),
            },
            _ => block_start,
        };
        DecodeError::new(at, DecodeErrorKind::Grammar(e))
    })?;
    summary.skipped_bytes = decoder.skipped_bytes();
    Ok(summary.with_end_block(end.finish(bytes.len())?))
}
