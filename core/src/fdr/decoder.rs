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

pub use super::decoded::{DecodeError, DecodeErrorKind, Decoded};
pub use super::grammar::{BlockState, BlockVerifier, VerifyError};
pub use super::records::{EventKind, RecordError, RecordType};
pub use record::decode_record;
pub use verifier::{verify, Summary, Verifier};

use super::header::{FileHeader, Version, HEADER_SIZE};
use super::records::{BufferExtents, MetadataKind, Record};

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
