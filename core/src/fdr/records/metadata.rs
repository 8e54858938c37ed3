//! Metadata records: the 16-byte records that delimit buffers, set the base TSC and
//! carry arguments and events.
//!
//! Each kind is one type with the fields the record carries, and its
//! [`MetadataRecord::parse`] and [`MetadataRecord::emit`] side by side: the one place
//! its layout is read and written. Each type's fields are named by offset and width
//! (`field::<AT, N>`), which the compiler checks lie inside the 16 bytes; `emit` starts
//! from zeros, so every byte no field names is written as zero (LLVM's own runtime
//! leaves stack garbage there; readers ignore it).
//!
//! The custom event marker is the one kind whose layout depends on the version, so
//! [`CustomEventMarker`] has `parse` and `emit` of its own that take one.

use super::super::header::Version;
use super::super::le;

/// Bytes `AT..AT + N` of a metadata record.
#[inline(always)]
fn field<const AT: usize, const N: usize>(record: &[u8; METADATA_RECORD_SIZE]) -> [u8; N] {
    le::read::<AT, N, METADATA_RECORD_SIZE>(record)
}

/// A record's tag as the low byte of its [`MetadataRecord::to_le_u128`] value.
#[inline(always)]
const fn tag(kind: MetadataKind) -> u128 {
    kind.tag() as u128
}

/// A metadata record of kind `tag` with every other byte zero, for `emit` to fill.
#[inline(always)]
const fn zeroed(tag: u8) -> [u8; METADATA_RECORD_SIZE] {
    let mut record = [0; METADATA_RECORD_SIZE];
    record[0] = tag;
    record
}

/// Writes `bytes` at bytes `AT..AT + N` of a metadata record.
#[inline(always)]
fn set<const AT: usize, const N: usize>(record: &mut [u8; METADATA_RECORD_SIZE], bytes: [u8; N]) {
    le::write::<AT, N, METADATA_RECORD_SIZE>(record, bytes)
}

/// Size of a metadata record (custom and typed event payloads follow it).
///
/// ```
/// use flightrec_core::fdr::records::{CustomEventTime, Record, METADATA_RECORD_SIZE};
/// assert_eq!(METADATA_RECORD_SIZE, 16);
/// assert_eq!(Record::Pid { pid: 1 }.encoded_len(), METADATA_RECORD_SIZE);
/// let event = Record::CustomEvent { time: CustomEventTime::Delta(0), payload: b"abc" };
/// assert_eq!(event.encoded_len(), METADATA_RECORD_SIZE + 3);
/// ```
pub const METADATA_RECORD_SIZE: usize = 16;

/// The kind of a metadata record (byte 0 is `kind << 1 | 1`).
///
/// ```
/// use flightrec_core::fdr::records::MetadataKind;
/// let first_byte = 0x0f;
/// assert_eq!(MetadataKind::from_number(first_byte >> 1), Some(MetadataKind::BufferExtents));
/// assert_eq!(MetadataKind::BufferExtents.tag(), first_byte);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum MetadataKind {
    /// Starts a buffer; carries the thread id.
    NewBuffer = 0,
    /// Ends a buffer (version 1 only).
    EndOfBuffer = 1,
    /// CPU change; sets the base TSC.
    NewCpuId = 2,
    /// Sets the base TSC when a delta would not fit.
    TscWrap = 3,
    /// Wall-clock time when the buffer was started.
    WalltimeMarker = 4,
    /// A custom event; its payload follows.
    CustomEventMarker = 5,
    /// An argument of the preceding function record.
    CallArgument = 6,
    /// Number of bytes that follow in this buffer (versions 2 and later).
    BufferExtents = 7,
    /// A typed event; its payload follows.
    TypedEventMarker = 8,
    /// Process id (versions 3 and later).
    Pid = 9,
}

impl MetadataKind {
    /// The kind with that 7-bit number (byte 0 of the record shifted right by one);
    /// 10 and above are not defined.
    ///
    /// ```
    /// use flightrec_core::fdr::records::MetadataKind;
    /// assert_eq!(MetadataKind::from_number(0), Some(MetadataKind::NewBuffer));
    /// assert_eq!(MetadataKind::from_number(9), Some(MetadataKind::Pid));
    /// assert_eq!(MetadataKind::from_number(10), None);
    /// ```
    pub const fn from_number(n: u8) -> Option<Self> {
        Some(match n {
            0 => Self::NewBuffer,
            1 => Self::EndOfBuffer,
            2 => Self::NewCpuId,
            3 => Self::TscWrap,
            4 => Self::WalltimeMarker,
            5 => Self::CustomEventMarker,
            6 => Self::CallArgument,
            7 => Self::BufferExtents,
            8 => Self::TypedEventMarker,
            9 => Self::Pid,
            _ => return None,
        })
    }

    /// Byte 0 of a record of this kind.
    ///
    /// ```
    /// use flightrec_core::fdr::records::MetadataKind;
    /// assert_eq!(MetadataKind::NewBuffer.tag(), 0x01);
    /// assert_eq!(MetadataKind::NewCpuId.tag(), 0x05);
    /// assert_eq!(MetadataKind::Pid.tag(), 0x13);
    /// ```
    pub const fn tag(self) -> u8 {
        ((self as u8) << 1) | 1
    }
}

/// A metadata record kind with a fixed layout: its fields, and the one place they are
/// read from and written to the record's 16 bytes.
///
/// Byte 0 is the tag, `KIND.tag()`: [`emit`](Self::emit) writes it and
/// [`parse`](Self::parse) leaves it to the caller, who dispatched on it. Reserved bytes
/// are written as zero and ignored when read, so `emit(parse(bytes)) == bytes` for
/// every record whose tag is right and whose reserved bytes are zero, and
/// `parse(emit(record)) == record` always.
///
/// ```
/// use flightrec_core::fdr::records::{MetadataKind, MetadataRecord, NewCpuId};
/// let mut bytes = [0xAAu8; 16];
/// NewCpuId { cpu: 3, tsc: 0x0102 }.emit(&mut bytes);
/// assert_eq!(bytes, [0x05, 3, 0, 0x02, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
/// assert_eq!(NewCpuId::parse(&bytes), NewCpuId { cpu: 3, tsc: 0x0102 });
/// assert_eq!(NewCpuId::KIND, MetadataKind::NewCpuId);
/// ```
pub trait MetadataRecord: Sized {
    /// The kind; byte 0 of the record is `KIND.tag()`.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, MetadataRecord, Pid};
    /// assert_eq!(Pid::KIND, MetadataKind::Pid);
    /// assert_eq!(Pid::KIND.tag(), 0x13);
    /// ```
    const KIND: MetadataKind;

    /// Reads the fields; byte 0 and the reserved bytes are not looked at. Every bit
    /// pattern of the fields is a valid value, so this cannot fail.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataRecord, NewBuffer};
    /// let mut bytes = [0u8; 16];
    /// bytes[..5].copy_from_slice(&[0x01, 7, 0, 0, 0]);
    /// assert_eq!(NewBuffer::parse(&bytes), NewBuffer { tid: 7 });
    /// ```
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self;

    /// Writes all 16 bytes: the tag, the fields, and zero in every reserved byte.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataRecord, TscWrap};
    /// let mut bytes = [0xAAu8; 16];
    /// TscWrap { tsc: 1 << 40 }.emit(&mut bytes);
    /// assert_eq!(bytes, [0x07, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    /// ```
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]);

    /// The 16 bytes [`emit`](Self::emit) writes, as one little-endian value: a
    /// writer stores it as whole words (no byte stores and no zeroing of the
    /// reserved bytes, which a destination of unknown alignment costs).
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataRecord, NewCpuId};
    /// let record = NewCpuId { cpu: 3, tsc: 0x0102 };
    /// let mut bytes = [0u8; 16];
    /// record.emit(&mut bytes);
    /// assert_eq!(record.to_le_u128(), u128::from_le_bytes(bytes));
    /// ```
    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        let mut out = [0; METADATA_RECORD_SIZE];
        self.emit(&mut out);
        u128::from_le_bytes(out)
    }
}

/// NewBuffer (kind 0, tag `0x01`): starts a buffer. Bytes 1 to 4: i32 thread id.
///
/// ```
/// use flightrec_core::fdr::records::{MetadataRecord, NewBuffer};
/// let mut bytes = [0u8; 16];
/// NewBuffer { tid: 7 }.emit(&mut bytes);
/// assert_eq!(&bytes[..6], &[0x01, 7, 0, 0, 0, 0]);
/// assert_eq!(NewBuffer::parse(&bytes).tid, 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NewBuffer {
    /// Thread id.
    pub tid: i32,
}

impl MetadataRecord for NewBuffer {
    const KIND: MetadataKind = MetadataKind::NewBuffer;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            tid: i32::from_le_bytes(field::<1, 4>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 4>(&mut record, self.tid.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND) | (u128::from(self.tid as u32) << 8)
    }
}

/// EndOfBuffer (kind 1, tag `0x03`): ends a buffer in version 1. No fields.
///
/// ```
/// use flightrec_core::fdr::records::{EndOfBuffer, MetadataRecord};
/// let mut bytes = [0xAAu8; 16];
/// EndOfBuffer.emit(&mut bytes);
/// assert_eq!(bytes, [0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
/// assert_eq!(EndOfBuffer::parse(&bytes), EndOfBuffer);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EndOfBuffer;

impl MetadataRecord for EndOfBuffer {
    const KIND: MetadataKind = MetadataKind::EndOfBuffer;

    #[inline(always)]
    fn parse(_record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        *out = [0; METADATA_RECORD_SIZE];
        out[0] = Self::KIND.tag();
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND)
    }
}

/// NewCPUId (kind 2, tag `0x05`): a CPU change; sets the base TSC. Bytes 1 and 2: u16
/// CPU id; bytes 3 to 10: u64 absolute TSC.
///
/// ```
/// use flightrec_core::fdr::records::{MetadataRecord, NewCpuId};
/// let mut bytes = [0u8; 16];
/// NewCpuId { cpu: 3, tsc: 1_000 }.emit(&mut bytes);
/// assert_eq!(&bytes[..5], &[0x05, 3, 0, 0xe8, 0x03]);
/// assert_eq!(NewCpuId::parse(&bytes), NewCpuId { cpu: 3, tsc: 1_000 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NewCpuId {
    /// CPU id.
    pub cpu: u16,
    /// Absolute TSC.
    pub tsc: u64,
}

impl MetadataRecord for NewCpuId {
    const KIND: MetadataKind = MetadataKind::NewCpuId;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            cpu: u16::from_le_bytes(field::<1, 2>(record)),
            tsc: u64::from_le_bytes(field::<3, 8>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 2>(&mut record, self.cpu.to_le_bytes());
        set::<3, 8>(&mut record, self.tsc.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND) | (u128::from(self.cpu) << 8) | (u128::from(self.tsc) << 24)
    }
}

/// TSCWrap (kind 3, tag `0x07`): sets the base TSC when a delta would not fit. Bytes 1
/// to 8: u64 absolute TSC.
///
/// ```
/// use flightrec_core::fdr::records::{MetadataRecord, TscWrap};
/// let mut bytes = [0u8; 16];
/// TscWrap { tsc: 1 << 33 }.emit(&mut bytes);
/// assert_eq!(&bytes[..6], &[0x07, 0, 0, 0, 0, 2]);
/// assert_eq!(TscWrap::parse(&bytes).tsc, 1 << 33);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TscWrap {
    /// Absolute TSC.
    pub tsc: u64,
}

impl MetadataRecord for TscWrap {
    const KIND: MetadataKind = MetadataKind::TscWrap;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            tsc: u64::from_le_bytes(field::<1, 8>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 8>(&mut record, self.tsc.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND) | (u128::from(self.tsc) << 8)
    }
}

/// WalltimeMarker (kind 4, tag `0x09`): the wall-clock time when the buffer was
/// started. Bytes 1 to 8: i64 seconds; bytes 9 to 12: u32 microseconds.
///
/// ```
/// use flightrec_core::fdr::records::{MetadataRecord, WalltimeMarker};
/// let mut bytes = [0u8; 16];
/// let marker = WalltimeMarker { seconds: 1_700_000_000, micros: 5 };
/// marker.emit(&mut bytes);
/// assert_eq!(&bytes[9..13], &[5, 0, 0, 0]);
/// assert_eq!(WalltimeMarker::parse(&bytes), marker);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WalltimeMarker {
    /// Seconds.
    pub seconds: i64,
    /// Microseconds.
    pub micros: u32,
}

impl MetadataRecord for WalltimeMarker {
    const KIND: MetadataKind = MetadataKind::WalltimeMarker;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            seconds: i64::from_le_bytes(field::<1, 8>(record)),
            micros: u32::from_le_bytes(field::<9, 4>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 8>(&mut record, self.seconds.to_le_bytes());
        set::<9, 4>(&mut record, self.micros.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND) | (u128::from(self.seconds as u64) << 8) | (u128::from(self.micros) << 72)
    }
}

/// The time stamp of a custom event, which depends on the version (see
/// [`Version::events_use_delta`]).
///
/// ```
/// use flightrec_core::fdr::records::{CustomEventTime, EncodeError, Record};
/// use flightrec_core::fdr::Version;
/// let mut out = [0u8; 17];
/// let v5 = Record::CustomEvent { time: CustomEventTime::Delta(1), payload: b"x" };
/// assert_eq!(v5.encode(Version::V5, &mut out), Ok(17));
/// // Version 3 wants the absolute form.
/// assert_eq!(v5.encode(Version::V3, &mut out), Err(EncodeError::WrongTimeForm));
/// let v3 = Record::CustomEvent { time: CustomEventTime::Absolute { tsc: 5, cpu: 0 }, payload: b"x" };
/// assert_eq!(v3.encode(Version::V3, &mut out), Ok(17));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CustomEventTime {
    /// Versions 1 to 4: an absolute TSC, and (version 4) the CPU; it does not move the
    /// base TSC.
    Absolute {
        /// Absolute TSC.
        tsc: u64,
        /// CPU id (zero before version 4).
        cpu: u16,
    },
    /// Version 5: a delta from the base TSC, which it advances.
    Delta(i32),
}

/// CustomEventMarker (kind 5, tag `0x0b`): a custom event; `size` payload bytes follow
/// the 16-byte marker. Bytes 1 to 4 are the i32 size; what follows depends on the
/// version:
///
/// * versions 1 to 4: bytes 5 to 12, u64 absolute TSC; bytes 13 and 14, u16 CPU id,
///   defined from version 4 (`llvm-xray` 14 reads it in versions 1 to 3 too, so
///   [`parse`](Self::parse) does, and [`emit`](Self::emit) keeps it zero there);
/// * version 5: bytes 5 to 8, i32 TSC delta.
///
/// ```
/// use flightrec_core::fdr::records::{CustomEventMarker, CustomEventTime};
/// use flightrec_core::fdr::Version;
/// let marker = CustomEventMarker { size: 2, time: CustomEventTime::Absolute { tsc: 900, cpu: 2 } };
/// let mut bytes = [0u8; 16];
/// marker.emit(Version::V4, &mut bytes);
/// assert_eq!(&bytes[..7], &[0x0b, 2, 0, 0, 0, 0x84, 0x03]);
/// assert_eq!(&bytes[13..15], &[2, 0]);
/// assert_eq!(CustomEventMarker::parse(Version::V4, &bytes), marker);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CustomEventMarker {
    /// Payload size in bytes, as written (readers reject 0 and below).
    pub size: i32,
    /// When: absolute in versions 1 to 4, a delta in version 5.
    pub time: CustomEventTime,
}

impl CustomEventMarker {
    /// The kind; byte 0 of the marker is `KIND.tag()`.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{CustomEventMarker, MetadataKind};
    /// assert_eq!(CustomEventMarker::KIND.tag(), 0x0b);
    /// ```
    pub const KIND: MetadataKind = MetadataKind::CustomEventMarker;

    /// Reads the marker as `version` lays it out: a [`CustomEventTime::Delta`] in
    /// version 5, a [`CustomEventTime::Absolute`] before. Byte 0, the reserved bytes
    /// and the payload are not looked at, nor is the size checked.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{CustomEventMarker, CustomEventTime};
    /// use flightrec_core::fdr::Version;
    /// let mut bytes = [0u8; 16];
    /// bytes[..6].copy_from_slice(&[0x0b, 5, 0, 0, 0, 100]);
    /// let v5 = CustomEventMarker::parse(Version::V5, &bytes);
    /// assert_eq!(v5, CustomEventMarker { size: 5, time: CustomEventTime::Delta(100) });
    /// let v3 = CustomEventMarker::parse(Version::V3, &bytes);
    /// assert_eq!(v3.time, CustomEventTime::Absolute { tsc: 100, cpu: 0 });
    /// ```
    #[inline]
    pub fn parse(version: Version, record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        let size = i32::from_le_bytes(field::<1, 4>(record));
        let time = if version.events_use_delta() {
            CustomEventTime::Delta(i32::from_le_bytes(field::<5, 4>(record)))
        } else {
            CustomEventTime::Absolute {
                tsc: u64::from_le_bytes(field::<5, 8>(record)),
                cpu: u16::from_le_bytes(field::<13, 2>(record)),
            }
        };
        Self { size, time }
    }

    /// Writes all 16 bytes of the marker (not the payload). The layout follows the
    /// time's form; the CPU id is written in version 4 only, and is zero in versions 1
    /// to 3, which do not define it. Matching the form to the version is the caller's
    /// part ([`Record::encode`](super::Record::encode) checks it).
    ///
    /// ```
    /// use flightrec_core::fdr::records::{CustomEventMarker, CustomEventTime};
    /// use flightrec_core::fdr::Version;
    /// let mut bytes = [0xAAu8; 16];
    /// CustomEventMarker { size: 2, time: CustomEventTime::Delta(-3) }.emit(Version::V5, &mut bytes);
    /// assert_eq!(bytes, [0x0b, 2, 0, 0, 0, 0xfd, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0]);
    /// let absolute = CustomEventMarker { size: 1, time: CustomEventTime::Absolute { tsc: 9, cpu: 2 } };
    /// absolute.emit(Version::V3, &mut bytes);
    /// assert_eq!(&bytes[13..15], &[0, 0]);
    /// ```
    #[inline]
    pub fn emit(&self, version: Version, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 4>(&mut record, self.size.to_le_bytes());
        match self.time {
            CustomEventTime::Delta(delta) => set::<5, 4>(&mut record, delta.to_le_bytes()),
            CustomEventTime::Absolute { tsc, cpu } => {
                set::<5, 8>(&mut record, tsc.to_le_bytes());
                if version == Version::V4 {
                    set::<13, 2>(&mut record, cpu.to_le_bytes());
                }
            }
        }
        *out = record;
    }
}

/// CallArgument (kind 6, tag `0x0d`): one argument of the preceding function record.
/// Bytes 1 to 8: u64 value.
///
/// ```
/// use flightrec_core::fdr::records::{CallArgument, MetadataRecord};
/// let mut bytes = [0u8; 16];
/// CallArgument { value: u64::MAX }.emit(&mut bytes);
/// assert_eq!(&bytes[..10], &[0x0d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0]);
/// assert_eq!(CallArgument::parse(&bytes).value, u64::MAX);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CallArgument {
    /// The argument.
    pub value: u64,
}

impl MetadataRecord for CallArgument {
    const KIND: MetadataKind = MetadataKind::CallArgument;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            value: u64::from_le_bytes(field::<1, 8>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 8>(&mut record, self.value.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND) | (u128::from(self.value) << 8)
    }
}

/// BufferExtents (kind 7, tag `0x0f`): the number of bytes that follow in this buffer
/// (versions 2 and later). Bytes 1 to 8: u64 byte count.
///
/// ```
/// use flightrec_core::fdr::records::{BufferExtents, MetadataRecord};
/// let mut bytes = [0u8; 16];
/// BufferExtents { size: 4080 }.emit(&mut bytes);
/// assert_eq!(&bytes[..4], &[0x0f, 0xf0, 0x0f, 0]);
/// assert_eq!(BufferExtents::parse(&bytes).size, 4080);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferExtents {
    /// Bytes that follow in the buffer.
    pub size: u64,
}

impl BufferExtents {
    /// Where the u64 byte count lies in the record. The writer rewrites it in place
    /// after every record, and `llvm-xray` accepts a file whose last BufferExtents is
    /// cut off after it, so both reach it directly.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{BufferExtents, MetadataRecord};
    /// let mut bytes = [0u8; 16];
    /// BufferExtents { size: 0x0102 }.emit(&mut bytes);
    /// assert_eq!(&bytes[BufferExtents::SIZE_FIELD], &0x0102u64.to_le_bytes());
    /// ```
    pub const SIZE_FIELD: core::ops::Range<usize> = 1..9;
}

// The field range above is the one `parse` and `emit` use, checked once here.
const _: () = {
    assert!(BufferExtents::SIZE_FIELD.start == 1);
    assert!(BufferExtents::SIZE_FIELD.end - BufferExtents::SIZE_FIELD.start == 8);
};

impl MetadataRecord for BufferExtents {
    const KIND: MetadataKind = MetadataKind::BufferExtents;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            size: u64::from_le_bytes(field::<1, 8>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 8>(&mut record, self.size.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND) | (u128::from(self.size) << 8)
    }
}

/// TypedEventMarker (kind 8, tag `0x11`): a typed event; `size` payload bytes follow
/// the 16-byte marker. Bytes 1 to 4: i32 size; 5 to 8: i32 TSC delta; 9 and 10: u16
/// event type. Typed events carry a delta in every version.
///
/// ```
/// use flightrec_core::fdr::records::{MetadataRecord, TypedEventMarker};
/// let marker = TypedEventMarker { size: 1, delta: 10, event_type: 0xF17C };
/// let mut bytes = [0u8; 16];
/// marker.emit(&mut bytes);
/// assert_eq!(&bytes[..11], &[0x11, 1, 0, 0, 0, 10, 0, 0, 0, 0x7c, 0xf1]);
/// assert_eq!(TypedEventMarker::parse(&bytes), marker);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TypedEventMarker {
    /// Payload size in bytes, as written (readers reject 0 and below).
    pub size: i32,
    /// TSC delta from the base TSC.
    pub delta: i32,
    /// Event type.
    pub event_type: u16,
}

impl MetadataRecord for TypedEventMarker {
    const KIND: MetadataKind = MetadataKind::TypedEventMarker;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            size: i32::from_le_bytes(field::<1, 4>(record)),
            delta: i32::from_le_bytes(field::<5, 4>(record)),
            event_type: u16::from_le_bytes(field::<9, 2>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 4>(&mut record, self.size.to_le_bytes());
        set::<5, 4>(&mut record, self.delta.to_le_bytes());
        set::<9, 2>(&mut record, self.event_type.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND)
            | (u128::from(self.size as u32) << 8)
            | (u128::from(self.delta as u32) << 40)
            | (u128::from(self.event_type) << 72)
    }
}

/// Pid (kind 9, tag `0x13`): the process id (versions 3 and later). Bytes 1 to 4: i32
/// process id.
///
/// ```
/// use flightrec_core::fdr::records::{MetadataRecord, Pid};
/// let mut bytes = [0u8; 16];
/// Pid { pid: 4242 }.emit(&mut bytes);
/// assert_eq!(&bytes[..4], &[0x13, 0x92, 0x10, 0]);
/// assert_eq!(Pid::parse(&bytes).pid, 4242);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Pid {
    /// Process id.
    pub pid: i32,
}

impl MetadataRecord for Pid {
    const KIND: MetadataKind = MetadataKind::Pid;

    #[inline(always)]
    fn parse(record: &[u8; METADATA_RECORD_SIZE]) -> Self {
        Self {
            pid: i32::from_le_bytes(field::<1, 4>(record)),
        }
    }

    #[inline(always)]
    fn emit(&self, out: &mut [u8; METADATA_RECORD_SIZE]) {
        let mut record = zeroed(Self::KIND.tag());
        set::<1, 4>(&mut record, self.pid.to_le_bytes());
        *out = record;
    }

    #[inline(always)]
    fn to_le_u128(&self) -> u128 {
        tag(Self::KIND) | (u128::from(self.pid as u32) << 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same<R: MetadataRecord>(record: R) {
        let mut bytes = [0xAA; METADATA_RECORD_SIZE];
        record.emit(&mut bytes);
        assert_eq!(record.to_le_u128(), u128::from_le_bytes(bytes));
    }

    proptest::proptest! {
        /// Each record's `to_le_u128` is the value of the bytes `emit` writes.
        #[test]
        fn to_le_u128_is_what_emit_writes(a: u64, b: u64, c: u32, d: u16) {
            same(NewBuffer { tid: c as i32 });
            same(EndOfBuffer);
            same(NewCpuId { cpu: d, tsc: a });
            same(TscWrap { tsc: a });
            same(WalltimeMarker { seconds: a as i64, micros: c });
            same(CallArgument { value: b });
            same(BufferExtents { size: b });
            same(TypedEventMarker { size: c as i32, delta: (a >> 7) as i32, event_type: d });
            same(Pid { pid: (b >> 3) as i32 });
        }
    }
}
