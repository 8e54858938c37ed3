//! The end block: how a file says it was written whole.
//!
//! An FDR file's header does not say how many buffers follow it, so a file cut
//! exactly between two buffers (a full disk, a crash) reads as a whole, shorter
//! trace. A writer that sets [`HeaderFlags::END_BLOCK`] in the header promises to
//! end a whole file with one last block, the end block, that counts the buffers
//! before it:
//!
//! ```text
//! BufferExtents { size: 64 }          (versions 2 to 5)
//! NewBuffer     { tid: 0 }
//! Walltime      { when the file was closed }
//! Pid           { the writing process }
//! NewCpuId      { cpu: 0xFFFF, tsc: number of buffers before this block }
//! ```
//!
//! It is a well-formed block with no event, so `llvm-xray` 14 (`fdr-dump
//! --verify`, `convert`, `account`, `stack`) reads it and finds nothing in it. The
//! [`verify`](super::decoder::verify)er checks the promise: with the flag, a file
//! whose last block is not an end block is
//! [cut short](super::decoder::DecodeErrorKind::CutShort) at its last byte, an end
//! block whose count differs from the buffers before it is
//! [wrong](super::decoder::DecodeErrorKind::EndBlockCount), and a record after it
//! is [out of place](super::decoder::DecodeErrorKind::AfterEndBlock). Without the
//! flag (compiler-rt's files) nothing changes.
//!
//! ```
//! use core::num::NonZeroU64;
//! use flightrec_core::fdr::decoder::{verify, DecodeErrorKind};
//! use flightrec_core::fdr::end::{EndBlock, END_BLOCK_SIZE};
//! use flightrec_core::fdr::writer::Walltime;
//! use flightrec_core::fdr::{FileHeader, HeaderFlags, Version};
//!
//! let header = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), 4096)
//!     .with_flags(HeaderFlags::END_BLOCK);
//! // A file that ends right after its header: cut short.
//! let mut file = [0u8; 32 + END_BLOCK_SIZE];
//! file[..32].copy_from_slice(&header.to_bytes());
//! let err = verify(&file[..32]).unwrap_err();
//! assert_eq!((err.offset, err.kind), (32, DecodeErrorKind::CutShort { buffers: 0 }));
//! // The same with its end block (no buffer before it) is whole.
//! let end = EndBlock { buffers: 0, pid: 7, closed: Walltime { seconds: 1, micros: 2 } };
//! let len = end.encode(Version::V5, &mut file[32..]).unwrap();
//! assert_eq!(len, END_BLOCK_SIZE);
//! let summary = verify(&file).unwrap();
//! assert_eq!((summary.buffers, summary.end_block), (0, true));
//! ```

use super::decoded::{DecodeError, DecodeErrorKind, Decoded};
use super::header::{FileHeader, HeaderFlags, Version};
use super::records::{Record, METADATA_RECORD_SIZE};
use super::writer::Walltime;

/// The CPU id of an end block's NewCpuId record (no CPU has it: compiler-rt and
/// this crate write CPU numbers, which stay far below it).
///
/// ```
/// assert_eq!(flightrec_core::fdr::end::END_CPU, u16::MAX);
/// ```
pub const END_CPU: u16 = u16::MAX;

/// Bytes of an end block in versions 2 to 5: five metadata records.
///
/// ```
/// assert_eq!(flightrec_core::fdr::end::END_BLOCK_SIZE, 80);
/// ```
pub const END_BLOCK_SIZE: usize = 5 * METADATA_RECORD_SIZE;

/// What an end block says. A fuller example is in the [module
/// documentation](self).
///
/// ```
/// use flightrec_core::fdr::end::EndBlock;
/// use flightrec_core::fdr::writer::Walltime;
/// let end = EndBlock { buffers: 3, pid: 42, closed: Walltime { seconds: 10, micros: 5 } };
/// assert_eq!(end.buffers, 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EndBlock {
    /// Buffers (NewBuffer records) written before the end block.
    pub buffers: u64,
    /// The writing process, for the Pid record.
    pub pid: i32,
    /// When the file was closed.
    pub closed: Walltime,
}

impl EndBlock {
    /// Writes the end block for a file of `version` into `out`; returns its length
    /// ([`END_BLOCK_SIZE`]), or `None` when `out` is shorter or the version is 1
    /// (whose buffers have no extents: its files do not take the flag).
    ///
    /// ```
    /// use flightrec_core::fdr::end::{EndBlock, END_BLOCK_SIZE, END_CPU};
    /// use flightrec_core::fdr::writer::Walltime;
    /// use flightrec_core::fdr::Version;
    /// let end = EndBlock { buffers: 3, pid: 42, closed: Walltime { seconds: 10, micros: 5 } };
    /// let mut out = [0u8; END_BLOCK_SIZE];
    /// assert_eq!(end.encode(Version::V5, &mut out), Some(END_BLOCK_SIZE));
    /// // The last record: NewCpuId with the CPU no one has and the buffer count.
    /// assert_eq!(u16::from_le_bytes([out[65], out[66]]), END_CPU);
    /// assert_eq!(u64::from_le_bytes(out[67..75].try_into().unwrap()), 3);
    /// assert_eq!(end.encode(Version::V1, &mut out), None); // no extents in version 1
    /// assert_eq!(end.encode(Version::V5, &mut out[..79]), None); // too short
    /// ```
    pub fn encode(&self, version: Version, out: &mut [u8]) -> Option<usize> {
        if !version.has_extents() || out.len() < END_BLOCK_SIZE {
            return None;
        }
        let records = [
            Record::BufferExtents {
                size: (END_BLOCK_SIZE - METADATA_RECORD_SIZE) as u64,
            },
            Record::NewBuffer { tid: 0 },
            Record::Walltime {
                seconds: self.closed.seconds,
                micros: self.closed.micros,
            },
            Record::Pid { pid: self.pid },
            Record::NewCpuId {
                cpu: END_CPU,
                tsc: self.buffers,
            },
        ];
        let mut at = 0;
        for record in records {
            at += record.encode(version, out.get_mut(at..)?).ok()?;
        }
        Some(at)
    }

    /// The end block as bytes, for a writer that has no buffer of its own at hand
    /// (`None` for version 1).
    ///
    /// ```
    /// use flightrec_core::fdr::end::{EndBlock, END_BLOCK_SIZE};
    /// use flightrec_core::fdr::writer::Walltime;
    /// use flightrec_core::fdr::Version;
    /// let end = EndBlock { buffers: 3, pid: 1, closed: Walltime::default() };
    /// let bytes = end.to_bytes(Version::V5).unwrap();
    /// assert_eq!(bytes.len(), END_BLOCK_SIZE);
    /// assert_eq!(end.to_bytes(Version::V1), None);
    /// ```
    pub fn to_bytes(&self, version: Version) -> Option<[u8; END_BLOCK_SIZE]> {
        let mut out = [0u8; END_BLOCK_SIZE];
        self.encode(version, &mut out).map(|_| out)
    }
}

/// Where the reading of the last block stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Not in a block that can still be an end block.
    Other,
    /// An end block's NewBuffer (at `at`, after `before` buffers) and its next
    /// `seen` records.
    Opening { at: usize, before: usize, seen: u8 },
    /// A whole end block, its NewBuffer at `at`.
    Whole { at: usize },
}

/// Checks a file's end block while its records are decoded, for a verifier that
/// walks the records itself (the core's [`verify`](super::decoder::verify) and
/// the host's indexer use it alike).
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::decoder::Decoder;
/// use flightrec_core::fdr::end::{EndBlock, EndCheck};
/// use flightrec_core::fdr::writer::Walltime;
/// use flightrec_core::fdr::{FileHeader, HeaderFlags, Version};
///
/// let header = FileHeader::new(NonZeroU64::MIN, 0).with_flags(HeaderFlags::END_BLOCK);
/// let mut file = [0u8; 32 + 80];
/// file[..32].copy_from_slice(&header.to_bytes());
/// let end = EndBlock { buffers: 0, pid: 1, closed: Walltime::default() };
/// end.encode(Version::V5, &mut file[32..]).unwrap();
/// let mut check = EndCheck::new(&header);
/// for item in Decoder::new(&file).unwrap() {
///     check.feed(&item.unwrap()).unwrap();
/// }
/// // The end block's NewBuffer is at byte 48 (after its BufferExtents).
/// assert_eq!(check.finish(file.len()), Ok(Some(48)));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct EndCheck {
    expected: bool,
    shape: Shape,
    /// NewBuffer records seen so far.
    buffers: usize,
}

impl EndCheck {
    /// A check for a file with this header: it asks for an end block only when
    /// the header has [`HeaderFlags::END_BLOCK`]. Example on [`EndCheck`].
    pub fn new(header: &FileHeader) -> Self {
        Self {
            expected: header.flags.contains(HeaderFlags::END_BLOCK),
            shape: Shape::Other,
            buffers: 0,
        }
    }

    /// Takes the next record of the file. With the flag, an error for a record
    /// after a whole end block ([`DecodeErrorKind::AfterEndBlock`]) or an end
    /// block whose count is not the number of buffers before it
    /// ([`DecodeErrorKind::EndBlockCount`], at its NewBuffer). Example on
    /// [`EndCheck`].
    pub fn feed(&mut self, decoded: &Decoded<'_>) -> Result<(), DecodeError> {
        let Decoded { offset, record } = *decoded;
        if self.expected && matches!(self.shape, Shape::Whole { .. }) {
            return Err(DecodeError::new(offset, DecodeErrorKind::AfterEndBlock));
        }
        self.shape = match (self.shape, record) {
            (_, Record::NewBuffer { tid }) => {
                let before = self.buffers;
                self.buffers = self.buffers.saturating_add(1);
                if tid == 0 {
                    Shape::Opening {
                        at: offset,
                        before,
                        seen: 0,
                    }
                } else {
                    Shape::Other
                }
            }
            (
                Shape::Opening {
                    at,
                    before,
                    seen: 0,
                },
                Record::Walltime { .. },
            ) => Shape::Opening {
                at,
                before,
                seen: 1,
            },
            (
                Shape::Opening {
                    at,
                    before,
                    seen: 1,
                },
                Record::Pid { .. },
            ) => Shape::Opening {
                at,
                before,
                seen: 2,
            },
            (
                Shape::Opening {
                    at,
                    before,
                    seen: 2,
                },
                Record::NewCpuId {
                    cpu: END_CPU,
                    tsc: stated,
                },
            ) => {
                if self.expected && stated != before as u64 {
                    return Err(DecodeError::new(
                        at,
                        DecodeErrorKind::EndBlockCount {
                            stated,
                            found: before,
                        },
                    ));
                }
                Shape::Whole { at }
            }
            _ => Shape::Other,
        };
        Ok(())
    }

    /// Ends the check at the file's end (`len` bytes). With the flag: the offset
    /// of the end block (its NewBuffer record), or [`DecodeErrorKind::CutShort`]
    /// at `len` when the file does not end with one. Without the flag: `None`,
    /// whatever the file ends with. Example on [`EndCheck`].
    pub fn finish(&self, len: usize) -> Result<Option<usize>, DecodeError> {
        match (self.expected, self.shape) {
            (false, _) => Ok(None),
            (true, Shape::Whole { at }) => Ok(Some(at)),
            (true, _) => Err(DecodeError::new(
                len,
                DecodeErrorKind::CutShort {
                    buffers: self.buffers,
                },
            )),
        }
    }
}
