//! The 32-byte FDR file header.
//!
//! Every FDR file starts with it: format [`Version`], log type, [`HeaderFlags`], the
//! clock rate that turns TSC deltas into time, and the buffer size. A file is this
//! header followed by the buffers of every thread; a
//! [`Recorder`](super::ring::Recorder) gives the header for its ring with
//! [`file_header`](super::ring::Recorder::file_header).
//!
//! ```
//! use core::num::NonZeroU64;
//! use flightrec_core::fdr::header::{FileHeader, HEADER_SIZE};
//! let header = FileHeader::new(NonZeroU64::new(48_000_000).unwrap(), 1024);
//! let bytes: [u8; HEADER_SIZE] = header.to_bytes();
//! assert_eq!(FileHeader::parse(&bytes).unwrap().cycle_frequency.get(), 48_000_000);
//! ```

use core::num::NonZeroU64;

use super::le;

/// The value of the header's `type` field for FDR mode (0 is XRay's "basic" mode).
///
/// Bytes 2 and 3 of every header this crate writes; [`FileHeader::parse`] rejects any
/// other value with [`HeaderError::NotFdr`].
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::header::{FileHeader, FDR_LOG_TYPE};
/// let bytes = FileHeader::new(NonZeroU64::MIN, 0).to_bytes();
/// assert_eq!(u16::from_le_bytes([bytes[2], bytes[3]]), FDR_LOG_TYPE);
/// ```
pub const FDR_LOG_TYPE: u16 = 1;

/// Size of the file header in bytes: the first buffer of a file starts here.
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::header::{FileHeader, HEADER_SIZE};
/// assert_eq!(HEADER_SIZE, 32);
/// assert_eq!(FileHeader::new(NonZeroU64::MIN, 0).to_bytes().len(), HEADER_SIZE);
/// ```
pub const HEADER_SIZE: usize = 32;

/// An FDR format version this crate writes.
///
/// Version 5 is what LLVM's own runtime writes and the default; 1 and 3 are kept for
/// older readers. The [decoder](super::decoder) reads 1 to 5.
///
/// ```
/// use flightrec_core::fdr::Version;
/// assert_eq!(Version::default(), Version::V5);
/// assert_eq!(Version::V3.number(), 3);
/// assert_eq!(Version::from_number(5), Some(Version::V5));
/// assert_eq!(Version::from_number(6), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Version {
    /// Version 1: no BufferExtents; buffers may end with EndOfBuffer.
    V1,
    /// Version 2: BufferExtents present but not enforced by readers.
    V2,
    /// Version 3: BufferExtents enforced; custom events carry an absolute TSC.
    V3,
    /// Version 4: as 3, custom events also carry the CPU id.
    V4,
    /// Version 5: custom events carry a TSC delta (the current LLVM format).
    #[default]
    V5,
}

impl Version {
    /// The number written in the header (bytes 0 and 1).
    ///
    /// ```
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(Version::V1.number(), 1);
    /// assert_eq!(Version::V5.number(), 5);
    /// ```
    pub const fn number(self) -> u16 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
            Version::V4 => 4,
            Version::V5 => 5,
        }
    }

    /// The version with that number, if it is one of 1 to 5.
    ///
    /// ```
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(Version::from_number(4), Some(Version::V4));
    /// assert_eq!(Version::from_number(0), None);
    /// assert_eq!(Version::from_number(6), None);
    /// ```
    pub const fn from_number(n: u16) -> Option<Self> {
        match n {
            1 => Some(Version::V1),
            2 => Some(Version::V2),
            3 => Some(Version::V3),
            4 => Some(Version::V4),
            5 => Some(Version::V5),
            _ => None,
        }
    }

    /// Whether each buffer starts with a BufferExtents record (every version but 1,
    /// whose buffers end with an EndOfBuffer record instead).
    ///
    /// ```
    /// use flightrec_core::fdr::Version;
    /// assert!(!Version::V1.has_extents());
    /// assert!(Version::V2.has_extents());
    /// assert!(Version::V5.has_extents());
    /// ```
    pub const fn has_extents(self) -> bool {
        !matches!(self, Version::V1)
    }

    /// Whether custom and typed events carry a TSC delta that advances the base TSC
    /// (version 5), rather than an absolute TSC. It decides which
    /// [`CustomEventTime`](super::records::CustomEventTime) a custom event takes.
    ///
    /// ```
    /// use flightrec_core::fdr::Version;
    /// assert!(Version::V5.events_use_delta());
    /// assert!(!Version::V4.events_use_delta());
    /// ```
    pub const fn events_use_delta(self) -> bool {
        matches!(self, Version::V5)
    }
}

bitflags::bitflags! {
    /// The header's TSC property bits.
    ///
    /// ```
    /// use flightrec_core::fdr::HeaderFlags;
    /// let f = HeaderFlags::CONSTANT_TSC | HeaderFlags::NONSTOP_TSC;
    /// assert_eq!(f.bits(), 3);
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct HeaderFlags: u32 {
        /// The TSC ticks at a constant rate regardless of CPU frequency scaling.
        const CONSTANT_TSC = 1 << 0;
        /// The TSC keeps ticking in deep sleep states.
        const NONSTOP_TSC = 1 << 1;
        /// The writer ends a whole file with an [end block](super::end): a file
        /// with this flag that does not end with one was cut short. Not one bit
        /// but a pattern (`0x6672_0004`), read only when the bits above the two
        /// TSC bits are exactly it: a header with junk there (llvm-xray reads bits
        /// 0 and 1 only and ignores the rest) promises nothing. compiler-rt writes
        /// those bits as zero.
        ///
        /// ```
        /// use core::num::NonZeroU64;
        /// use flightrec_core::fdr::{FileHeader, HeaderFlags};
        /// let mut bytes = FileHeader::new(NonZeroU64::MIN, 0).with_flags(HeaderFlags::END_BLOCK).to_bytes();
        /// assert_eq!(&bytes[4..8], &[0x07, 0x00, 0x72, 0x66]);
        /// assert!(FileHeader::parse(&bytes).unwrap().flags.contains(HeaderFlags::END_BLOCK));
        /// bytes[4..8].fill(0xff); // junk
        /// assert!(!FileHeader::parse(&bytes).unwrap().flags.contains(HeaderFlags::END_BLOCK));
        /// ```
        const END_BLOCK = 0x6672_0004;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for HeaderFlags {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "HeaderFlags({=u32:#x})", self.bits())
    }
}

/// The header's fields exactly as they lie in the file, unvalidated: bytes 0-1
/// version, 2-3 log type, 4-7 flags, 8-15 cycle frequency, 16-23 buffer size, 24-31
/// reserved (all little-endian).
///
/// Most code wants the validated [`FileHeader`] instead.
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::header::{FileHeader, RawFileHeader, HEADER_SIZE};
/// let header = FileHeader::new(NonZeroU64::new(1_000).unwrap(), 4096);
/// let raw: RawFileHeader = header.to_raw();
/// assert_eq!(raw.version, 5);
/// assert_eq!(raw.log_type, 1);
/// assert_eq!(raw.buffer_size, 4096);
/// assert_eq!(raw.reserved, [0; 8]);
/// assert_eq!(RawFileHeader::from_bytes(&raw.to_bytes()), raw);
/// assert_eq!(raw.to_bytes().len(), HEADER_SIZE);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFileHeader {
    /// Format version, 1 to 5.
    pub version: u16,
    /// Log type: 1 for FDR.
    pub log_type: u16,
    /// [`HeaderFlags`] bits; other bits are ignored by readers.
    pub flags: u32,
    /// TSC ticks per second.
    pub cycle_frequency: u64,
    /// The per-thread buffer size (compiler-rt writes it here; readers ignore it).
    pub buffer_size: u64,
    /// Eight bytes that compiler-rt writes as zero and llvm-xray ignores; this crate
    /// keeps there the wall-clock time at TSC 0 when it knows it
    /// ([`FileHeader::walltime_at_tsc0_ns`]), else zero.
    pub reserved: [u8; 8],
}

impl RawFileHeader {
    /// Reads the fields of a header's 32 bytes.
    ///
    /// ```
    /// use flightrec_core::fdr::header::RawFileHeader;
    /// let mut bytes = [0u8; 32];
    /// bytes[..4].copy_from_slice(&[5, 0, 1, 0]);
    /// bytes[8] = 100;
    /// let raw = RawFileHeader::from_bytes(&bytes);
    /// assert_eq!((raw.version, raw.log_type, raw.cycle_frequency), (5, 1, 100));
    /// ```
    pub fn from_bytes(bytes: &[u8; HEADER_SIZE]) -> Self {
        Self {
            version: u16::from_le_bytes(le::read::<0, 2, HEADER_SIZE>(bytes)),
            log_type: u16::from_le_bytes(le::read::<2, 2, HEADER_SIZE>(bytes)),
            flags: u32::from_le_bytes(le::read::<4, 4, HEADER_SIZE>(bytes)),
            cycle_frequency: u64::from_le_bytes(le::read::<8, 8, HEADER_SIZE>(bytes)),
            buffer_size: u64::from_le_bytes(le::read::<16, 8, HEADER_SIZE>(bytes)),
            reserved: le::read::<24, 8, HEADER_SIZE>(bytes),
        }
    }

    /// The 32 bytes that hold these fields.
    ///
    /// ```
    /// use flightrec_core::fdr::header::RawFileHeader;
    /// let raw = RawFileHeader {
    ///     version: 3, log_type: 1, flags: 0, cycle_frequency: 1, buffer_size: 0, reserved: [0; 8],
    /// };
    /// assert_eq!(&raw.to_bytes()[..4], &[3, 0, 1, 0]);
    /// ```
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        le::write::<0, 2, HEADER_SIZE>(&mut out, self.version.to_le_bytes());
        le::write::<2, 2, HEADER_SIZE>(&mut out, self.log_type.to_le_bytes());
        le::write::<4, 4, HEADER_SIZE>(&mut out, self.flags.to_le_bytes());
        le::write::<8, 8, HEADER_SIZE>(&mut out, self.cycle_frequency.to_le_bytes());
        le::write::<16, 8, HEADER_SIZE>(&mut out, self.buffer_size.to_le_bytes());
        le::write::<24, 8, HEADER_SIZE>(&mut out, self.reserved);
        out
    }
}

/// The file header: what an FDR file says about itself.
///
/// Write [`to_bytes`](Self::to_bytes) at the start of a file, then the buffers; read a
/// file's header back with [`parse`](Self::parse) (the
/// [`Decoder`](super::decoder::Decoder) does). A ring's recorder builds the right one
/// with [`Recorder::file_header`](super::ring::Recorder::file_header).
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::{FileHeader, HeaderFlags, Version};
/// let h = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), 16384);
/// let bytes = h.to_bytes();
/// assert_eq!(&bytes[..8], &[5, 0, 1, 0, 3, 0, 0, 0]);
/// assert_eq!(FileHeader::parse(&bytes), Ok(h));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FileHeader {
    /// Format version.
    pub version: Version,
    /// TSC property bits.
    pub flags: HeaderFlags,
    /// Ticks per second of the clock that made the TSC values. Never zero.
    pub cycle_frequency: NonZeroU64,
    /// Size of each thread buffer in bytes (informational).
    pub buffer_size: u64,
    /// Wall-clock time at TSC 0, in ns since the Unix epoch, when the writer knew
    /// it (the desktop runtime does: it reads the wall clock and the TSC together at
    /// start-up); `None` for compiler-rt's files and a firmware without a wall
    /// clock. It places every record on the wall clock exactly, where the buffers'
    /// WalltimeMarkers give only whole seconds; `flightrec convert` uses it to line
    /// files up with each other and with Trace2. Kept in the header's last 8 bytes,
    /// which compiler-rt writes as zero and llvm-xray ignores.
    pub walltime_at_tsc0_ns: Option<NonZeroU64>,
}

/// Why a header could not be read.
///
/// ```
/// use flightrec_core::fdr::header::{FileHeader, HeaderError};
/// assert_eq!(FileHeader::parse(&[5, 0, 1, 0]), Err(HeaderError::Truncated { len: 4 }));
/// let mut basic = [0u8; 32];
/// basic[0] = 5; // version 5, log type 0 ("basic" mode)
/// assert_eq!(FileHeader::parse(&basic), Err(HeaderError::NotFdr(0)));
/// assert_eq!(HeaderError::NotFdr(0).to_string(), "log type 0 is not FDR (1)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderError {
    /// Fewer than 32 bytes.
    Truncated {
        /// Bytes available.
        len: usize,
    },
    /// The version is not 1 to 5.
    UnsupportedVersion(u16),
    /// The log type is not 1 (FDR).
    NotFdr(u16),
    /// The cycle frequency is 0, so no time can be computed.
    ZeroFrequency,
}

impl core::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HeaderError::Truncated { len } => {
                write!(f, "file header truncated: {len} of 32 bytes")
            }
            HeaderError::UnsupportedVersion(v) => {
                write!(f, "unsupported FDR version {v} (1 to 5 are supported)")
            }
            HeaderError::NotFdr(t) => write!(f, "log type {t} is not FDR (1)"),
            HeaderError::ZeroFrequency => write!(f, "cycle frequency is 0"),
        }
    }
}

impl FileHeader {
    /// A version-5 header with constant and non-stop TSC flags set, as compiler-rt
    /// writes it.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::{FileHeader, HeaderFlags, Version};
    /// let h = FileHeader::new(NonZeroU64::new(3_000_000_000).unwrap(), 16384);
    /// assert_eq!(h.version, Version::V5);
    /// assert_eq!(h.flags, HeaderFlags::CONSTANT_TSC | HeaderFlags::NONSTOP_TSC);
    /// assert_eq!(h.buffer_size, 16384);
    /// ```
    pub const fn new(cycle_frequency: NonZeroU64, buffer_size: u64) -> Self {
        Self {
            version: Version::V5,
            flags: HeaderFlags::CONSTANT_TSC.union(HeaderFlags::NONSTOP_TSC),
            cycle_frequency,
            buffer_size,
            walltime_at_tsc0_ns: None,
        }
    }

    /// The same header with the wall-clock time at TSC 0 (see
    /// [`walltime_at_tsc0_ns`](Self::walltime_at_tsc0_ns)).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// let at = NonZeroU64::new(1_700_000_000_000_000_000).unwrap();
    /// let h = FileHeader::new(NonZeroU64::MIN, 0).with_walltime_at_tsc0_ns(Some(at));
    /// assert_eq!(&h.to_bytes()[24..], &at.get().to_le_bytes());
    /// assert_eq!(FileHeader::parse(&h.to_bytes()).unwrap().walltime_at_tsc0_ns, Some(at));
    /// ```
    pub const fn with_walltime_at_tsc0_ns(mut self, ns: Option<NonZeroU64>) -> Self {
        self.walltime_at_tsc0_ns = ns;
        self
    }

    /// The same header with these flags added, for instance
    /// [`HeaderFlags::END_BLOCK`] from a writer that ends its files with an
    /// [end block](super::end).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::{FileHeader, HeaderFlags};
    /// let h = FileHeader::new(NonZeroU64::MIN, 0).with_flags(HeaderFlags::END_BLOCK);
    /// assert_eq!(h.to_bytes()[4], 0b111);
    /// assert!(h.flags.contains(HeaderFlags::END_BLOCK));
    /// assert_eq!(FileHeader::parse(&h.to_bytes()).unwrap().flags, h.flags);
    /// ```
    pub const fn with_flags(mut self, flags: HeaderFlags) -> Self {
        self.flags = self.flags.union(flags);
        self
    }

    /// The same header with another version, for a file whose buffers were written
    /// in that version.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::{FileHeader, Version};
    /// let h = FileHeader::new(NonZeroU64::MIN, 0).with_version(Version::V3);
    /// assert_eq!(h.version, Version::V3);
    /// assert_eq!(h.to_bytes()[0], 3);
    /// ```
    pub const fn with_version(mut self, version: Version) -> Self {
        self.version = version;
        self
    }

    /// The header as it lies in a file.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// let raw = FileHeader::new(NonZeroU64::new(1_000).unwrap(), 0).to_raw();
    /// assert_eq!(raw.cycle_frequency, 1_000);
    /// assert_eq!(raw.flags, 3);
    /// ```
    pub fn to_raw(&self) -> RawFileHeader {
        RawFileHeader {
            version: self.version.number(),
            log_type: FDR_LOG_TYPE,
            flags: self.flags.bits(),
            cycle_frequency: self.cycle_frequency.get(),
            buffer_size: self.buffer_size,
            reserved: match self.walltime_at_tsc0_ns {
                Some(ns) => ns.get().to_le_bytes(),
                None => [0; 8],
            },
        }
    }

    /// The 32 header bytes, ready to be written at the start of a file.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// let bytes = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), 16384).to_bytes();
    /// assert_eq!(&bytes[..4], &[5, 0, 1, 0]); // version 5, FDR
    /// assert_eq!(&bytes[8..12], &1_000_000_000u32.to_le_bytes());
    /// assert_eq!(&bytes[24..], &[0; 8]);
    /// ```
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        self.to_raw().to_bytes()
    }

    /// Reads a header from the first 32 bytes of `bytes`.
    ///
    /// Unknown flag bits are dropped (readers ignore them), and
    /// [`HeaderFlags::END_BLOCK`] is read only when it is exactly what lies above
    /// the TSC bits; a zero frequency is an
    /// error, since it makes every duration meaningless. Bytes after the first 32 are
    /// not looked at, so a whole file can be passed.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::header::{FileHeader, HeaderError, HeaderFlags};
    /// let mut bytes = FileHeader::new(NonZeroU64::new(1_000).unwrap(), 0).to_bytes();
    /// bytes[4] = 0xff; // unknown flag bits
    /// assert_eq!(
    ///     FileHeader::parse(&bytes).unwrap().flags,
    ///     HeaderFlags::CONSTANT_TSC | HeaderFlags::NONSTOP_TSC
    /// );
    /// bytes[8..16].copy_from_slice(&[0; 8]);
    /// assert_eq!(FileHeader::parse(&bytes), Err(HeaderError::ZeroFrequency));
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<Self, HeaderError> {
        let Some(header) = bytes.first_chunk::<HEADER_SIZE>() else {
            return Err(HeaderError::Truncated { len: bytes.len() });
        };
        Self::from_raw(&RawFileHeader::from_bytes(header))
    }

    /// Validates a raw header: the checks of [`parse`](Self::parse) without the
    /// length check.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::header::{FileHeader, HeaderError};
    /// let header = FileHeader::new(NonZeroU64::new(1_000).unwrap(), 0);
    /// let mut raw = header.to_raw();
    /// assert_eq!(FileHeader::from_raw(&raw), Ok(header));
    /// raw.version = 7;
    /// assert_eq!(FileHeader::from_raw(&raw), Err(HeaderError::UnsupportedVersion(7)));
    /// ```
    pub fn from_raw(raw: &RawFileHeader) -> Result<Self, HeaderError> {
        let version = Version::from_number(raw.version)
            .ok_or(HeaderError::UnsupportedVersion(raw.version))?;
        if raw.log_type != FDR_LOG_TYPE {
            return Err(HeaderError::NotFdr(raw.log_type));
        }
        let cycle_frequency =
            NonZeroU64::new(raw.cycle_frequency).ok_or(HeaderError::ZeroFrequency)?;
        Ok(Self {
            version,
            flags: {
                let tsc = HeaderFlags::CONSTANT_TSC.union(HeaderFlags::NONSTOP_TSC);
                let mut flags = HeaderFlags::from_bits_truncate(raw.flags).intersection(tsc);
                if raw.flags & !tsc.bits() == HeaderFlags::END_BLOCK.bits() {
                    flags = flags.union(HeaderFlags::END_BLOCK);
                }
                flags
            },
            cycle_frequency,
            buffer_size: raw.buffer_size,
            walltime_at_tsc0_ns: NonZeroU64::new(u64::from_le_bytes(raw.reserved)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_matches_compiler_rt() {
        // Header of a trace written by compiler-rt 14 (spec §1).
        let real: [u8; 32] = [
            0x05, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0xca, 0x9a, 0x3b, 0, 0, 0, 0,
            0x00, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let h = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), 16384);
        assert_eq!(h.to_bytes(), real);
        assert_eq!(RawFileHeader::from_bytes(&real), h.to_raw());
    }

    #[test]
    fn header_errors() {
        let h = FileHeader::new(NonZeroU64::new(1).unwrap(), 0).to_bytes();
        assert_eq!(
            FileHeader::parse(&h[..31]),
            Err(HeaderError::Truncated { len: 31 })
        );
        let mut v6 = h;
        v6[0] = 6;
        assert_eq!(
            FileHeader::parse(&v6),
            Err(HeaderError::UnsupportedVersion(6))
        );
        let mut basic = h;
        basic[2] = 0;
        assert_eq!(FileHeader::parse(&basic), Err(HeaderError::NotFdr(0)));
        let mut zero = h;
        zero[8] = 0;
        assert_eq!(FileHeader::parse(&zero), Err(HeaderError::ZeroFrequency));
    }
}
