//! The one verify loop over a whole file: [`Verifier`], and [`verify`] with its
//! [`Summary`].

use super::{BlockVerifier, DecodeError, DecodeErrorKind, Decoded, Decoder, VerifyError};
use crate::fdr::end::EndCheck;
use crate::fdr::header::{FileHeader, HEADER_SIZE};
use crate::fdr::records::Record;

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
    /// The file ends with the [end block](crate::fdr::end) its header promises; it is
    /// not counted in `buffers` (its five metadata records and its extents are
    /// counted in `metadata_records` and `extents`).
    pub end_block: bool,
}

impl Summary {
    pub(super) fn new(header: FileHeader) -> Self {
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

    pub(super) fn count(&mut self, record: &Record<'_>) {
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

/// The one verify loop: a [`Decoder`] whose records are checked as they come
/// against the block grammar ([`BlockVerifier`]) and the end block the header
/// promises ([`EndCheck`]), and counted ([`Summary`]). [`verify`] runs it over a
/// whole file; a reader that does more with each record (the host's streaming
/// indexer) iterates it itself and gets the same verdict, error offsets
/// included.
///
/// It yields each record that passed, or the first error, after which it
/// yields nothing. [`finish`](Self::finish) then gives the file's verdict.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::decoder::Verifier;
/// use flightrec_core::fdr::header::HEADER_SIZE;
/// use flightrec_core::fdr::records::Record;
/// use flightrec_core::fdr::ring::RecorderConfig;
/// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
/// use flightrec_core::fdr::FunctionId;
///
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
/// let mut file = [0u8; HEADER_SIZE + 256];
/// file[..HEADER_SIZE].copy_from_slice(&cfg.file_header(256).to_bytes());
/// let mut w = BufferWriter::new(&mut file[HEADER_SIZE..], &cfg.writer, Walltime::default()).unwrap();
/// w.enter(FunctionId::new(7).unwrap(), Timestamp::default()).unwrap();
/// let len = HEADER_SIZE + w.len();
///
/// let mut verifier = Verifier::new(&file[..len]).unwrap();
/// let mut ids = 0;
/// for item in &mut verifier {
///     if let Record::Function { id, .. } = item.unwrap().record {
///         ids += id.get();
///     }
/// }
/// let (summary, cut_short) = verifier.finish().unwrap();
/// assert_eq!((ids, summary.function_records, cut_short), (7, 1, None));
/// ```
#[derive(Clone, Debug)]
pub struct Verifier<'a> {
    decoder: Decoder<'a>,
    grammar: BlockVerifier,
    end: EndCheck,
    summary: Summary,
    /// Where the current block's NewBuffer starts: where a block's grammar
    /// errors at its end are reported.
    block_start: usize,
    len: usize,
    /// An error was yielded: nothing more is.
    failed: bool,
}

impl<'a> Verifier<'a> {
    /// Reads the header of the file in `bytes` (an error if it is not an FDR
    /// file's).
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{DecodeErrorKind, Verifier};
    /// use flightrec_core::fdr::header::HEADER_SIZE;
    /// use flightrec_core::fdr::ring::RecorderConfig;
    /// use flightrec_core::fdr::writer::WriterConfig;
    ///
    /// let header = RecorderConfig::new(WriterConfig::new(1), 1_000).file_header(256).to_bytes();
    /// // A header alone is read (the verdict on its missing blocks is `finish`'s).
    /// assert!(Verifier::new(&header).is_ok());
    /// // A cut header, or bytes that are no FDR header, are refused at once.
    /// let err = Verifier::new(&header[..HEADER_SIZE - 1]).unwrap_err();
    /// assert!(matches!(err.kind, DecodeErrorKind::Header(_)));
    /// assert!(Verifier::new(&[0xAB; HEADER_SIZE]).is_err());
    /// ```
    pub fn new(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let decoder = Decoder::new(bytes)?;
        let header = *decoder.header();
        Ok(Self {
            decoder,
            grammar: BlockVerifier::new(),
            end: EndCheck::new(&header),
            summary: Summary::new(header),
            block_start: HEADER_SIZE,
            len: bytes.len(),
            failed: false,
        })
    }

    /// The file header.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::Verifier;
    /// use flightrec_core::fdr::ring::RecorderConfig;
    /// use flightrec_core::fdr::writer::WriterConfig;
    ///
    /// let header = RecorderConfig::new(WriterConfig::new(1), 48_000_000).file_header(1024);
    /// let bytes = header.to_bytes();
    /// let verifier = Verifier::new(&bytes).unwrap();
    /// assert_eq!(verifier.header(), &header);
    /// assert_eq!((verifier.header().cycle_frequency.get(), verifier.header().buffer_size), (48_000_000, 1024));
    /// ```
    pub const fn header(&self) -> &FileHeader {
        self.decoder.header()
    }

    /// The offset after the last record yielded (its length is this less its
    /// offset).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::Verifier;
    /// use flightrec_core::fdr::header::HEADER_SIZE;
    /// use flightrec_core::fdr::records::{Record, METADATA_RECORD_SIZE};
    /// use flightrec_core::fdr::ring::RecorderConfig;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    ///
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// let mut file = [0u8; HEADER_SIZE + 256];
    /// file[..HEADER_SIZE].copy_from_slice(&cfg.file_header(256).to_bytes());
    /// let mut w = BufferWriter::new(&mut file[HEADER_SIZE..], &cfg.writer, Walltime::default()).unwrap();
    /// w.enter(FunctionId::new(7).unwrap(), Timestamp::default()).unwrap();
    /// let len = HEADER_SIZE + w.len();
    ///
    /// let mut verifier = Verifier::new(&file[..len]).unwrap();
    /// // Nothing yielded yet: right after the header.
    /// assert_eq!(verifier.offset(), HEADER_SIZE);
    /// while let Some(item) = verifier.next() {
    ///     let decoded = item.unwrap();
    ///     let size = verifier.offset() - decoded.offset;
    ///     match decoded.record {
    ///         Record::Function { .. } => assert_eq!(size, 8),
    ///         _ => assert!(size >= METADATA_RECORD_SIZE),
    ///     }
    /// }
    /// // Every record yielded: the end of the file.
    /// assert_eq!(verifier.offset(), len);
    /// ```
    pub const fn offset(&self) -> usize {
        self.decoder.offset()
    }

    /// The counts of the records yielded so far.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::Verifier;
    /// use flightrec_core::fdr::header::HEADER_SIZE;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::ring::RecorderConfig;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    ///
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// let mut file = [0u8; HEADER_SIZE + 256];
    /// file[..HEADER_SIZE].copy_from_slice(&cfg.file_header(256).to_bytes());
    /// let mut w = BufferWriter::new(&mut file[HEADER_SIZE..], &cfg.writer, Walltime::default()).unwrap();
    /// let t = Timestamp::default();
    /// w.enter(FunctionId::new(1).unwrap(), t).unwrap();
    /// w.enter(FunctionId::new(2).unwrap(), t).unwrap();
    /// let len = HEADER_SIZE + w.len();
    ///
    /// let mut verifier = Verifier::new(&file[..len]).unwrap();
    /// assert_eq!(verifier.summary().function_records, 0);
    /// // Up to the first function record: it is counted, the second is not yet.
    /// while !matches!(verifier.next().unwrap().unwrap().record, Record::Function { .. }) {}
    /// assert_eq!((verifier.summary().buffers, verifier.summary().function_records), (1, 1));
    /// verifier.by_ref().for_each(|item| assert!(item.is_ok()));
    /// assert_eq!(verifier.summary().function_records, 2);
    /// let so_far = *verifier.summary();
    /// assert_eq!(verifier.finish().unwrap().0, so_far);
    /// ```
    pub const fn summary(&self) -> &Summary {
        &self.summary
    }

    /// The verdict once every record was yielded: the file's [`Summary`], and
    /// the [`CutShort`](DecodeErrorKind::CutShort) error of a file whose header
    /// promises an end block it does not end with (whole but for that: a
    /// crashed trace's reader may use its records). Any other error, as the
    /// iteration's, is the `Err`.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::{DecodeErrorKind, Verifier, VerifyError};
    /// use flightrec_core::fdr::end::{EndBlock, END_BLOCK_SIZE};
    /// use flightrec_core::fdr::header::{HeaderFlags, HEADER_SIZE};
    /// use flightrec_core::fdr::ring::RecorderConfig;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    ///
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// let header = cfg.file_header(256);
    /// let mut file = [0u8; HEADER_SIZE + 256 + END_BLOCK_SIZE];
    /// file[..HEADER_SIZE].copy_from_slice(&header.with_flags(HeaderFlags::END_BLOCK).to_bytes());
    /// let mut w = BufferWriter::new(&mut file[HEADER_SIZE..][..256], &cfg.writer, Walltime::default()).unwrap();
    /// w.enter(FunctionId::new(7).unwrap(), Timestamp::default()).unwrap();
    /// let len = HEADER_SIZE + w.len();
    ///
    /// // The header promises an end block the file lacks: its records are whole,
    /// // but it was cut short at its end.
    /// let mut verifier = Verifier::new(&file[..len]).unwrap();
    /// verifier.by_ref().for_each(|item| assert!(item.is_ok()));
    /// let (summary, cut_short) = verifier.finish().unwrap();
    /// let cut_short = cut_short.unwrap();
    /// assert_eq!((summary.function_records, summary.end_block), (1, false));
    /// assert_eq!((cut_short.offset, cut_short.kind), (len, DecodeErrorKind::CutShort { buffers: 1 }));
    ///
    /// // With its end block (one buffer before it), the file is whole.
    /// let end = EndBlock { buffers: 1, pid: 7, closed: Walltime::default() };
    /// let end_len = end.encode(header.version, &mut file[len..]).unwrap();
    /// let mut verifier = Verifier::new(&file[..len + end_len]).unwrap();
    /// verifier.by_ref().for_each(|item| assert!(item.is_ok()));
    /// let (summary, cut_short) = verifier.finish().unwrap();
    /// assert_eq!((summary.buffers, summary.end_block, cut_short), (1, true, None));
    ///
    /// // A header and no block at all: no buffers, an error.
    /// let bytes = header.to_bytes();
    /// let err = Verifier::new(&bytes).unwrap().finish().unwrap_err();
    /// assert_eq!(err.kind, DecodeErrorKind::Grammar(VerifyError::NoBuffers));
    /// ```
    pub fn finish(mut self) -> Result<(Summary, Option<DecodeError>), DecodeError> {
        let end = self.end;
        let len = self.len;
        let block_start = self.block_start;
        self.grammar.finish().map_err(|e| {
            let at = match e {
                // Only a header, where the header promises an end block: cut short.
                VerifyError::NoBuffers => match end.finish(len) {
                    Err(cut) => return cut,
                    Ok(_) => len,
                },
                _ => block_start,
            };
            DecodeError::new(at, DecodeErrorKind::Grammar(e))
        })?;
        self.summary.skipped_bytes = self.decoder.skipped_bytes();
        let (end_block, cut_short) = match end.finish(len) {
            Ok(at) => (at, None),
            Err(
                e @ DecodeError {
                    kind: DecodeErrorKind::CutShort { .. },
                    ..
                },
            ) => (None, Some(e)),
            Err(e) => return Err(e),
        };
        Ok((self.summary.with_end_block(end_block), cut_short))
    }

    /// One record, checked and counted.
    fn check(&mut self, decoded: Decoded<'a>) -> Result<Decoded<'a>, DecodeError> {
        self.end.feed(&decoded)?;
        let Decoded { offset, record } = decoded;
        let block_start = self.block_start;
        self.grammar.feed(&record).map_err(|e| {
            let at = match e {
                VerifyError::InvalidTerminal { .. } => block_start,
                _ => offset,
            };
            DecodeError::new(at, DecodeErrorKind::Grammar(e))
        })?;
        if let Record::NewBuffer { .. } = record {
            self.block_start = offset;
        }
        self.summary.count(&record);
        Ok(decoded)
    }
}

impl<'a> Iterator for Verifier<'a> {
    type Item = Result<Decoded<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.decoder.next()?.and_then(|decoded| self.check(decoded));
        self.failed = item.is_err();
        Some(item)
    }
}

impl core::iter::FusedIterator for Verifier<'_> {}

/// Decodes and verifies a whole FDR file, and counts its records.
///
/// Accepts exactly what `llvm-xray` 14 loads (both `fdr-dump --verify` and
/// `convert`), except a zero cycle frequency and a file whose header promises an
/// [end block](crate::fdr::end) it does not end with (cut short): header version 1 to 5 and type 1, the
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
    let mut verifier = Verifier::new(bytes)?;
    for item in &mut verifier {
        item?;
    }
    match verifier.finish()? {
        (summary, None) => Ok(summary),
        (_, Some(cut_short)) => Err(cut_short),
    }
}
