//! Decoding one record from the start of a byte slice.

use zerocopy::FromBytes;

use super::super::header::Version;
use super::super::records::{
    CustomEventTime, FunctionAction, FunctionId, MetadataKind, RawBufferExtents, RawCallArgument,
    RawCustomEventV4, RawCustomEventV5, RawFunctionRecord, RawNewBuffer, RawNewCpuId, RawPid,
    RawTscWrap, RawTypedEvent, RawWalltimeMarker, Record, FUNCTION_RECORD_SIZE,
    METADATA_RECORD_SIZE,
};

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

/// The type of a record, as far as its first byte tells.
///
/// Its [`Display`](core::fmt::Display) uses the names `llvm-xray` prints in its
/// "Record Type = ..." messages (`Function`, `Metadata:PIDEntry`, ...).
///
/// ```
/// use flightrec_core::fdr::decoder::RecordType;
/// use flightrec_core::fdr::records::MetadataKind;
/// assert_eq!(RecordType::from_first_byte(0x13), Some(RecordType::Metadata(MetadataKind::Pid)));
/// assert_eq!(RecordType::Metadata(MetadataKind::Pid).to_string(), "Metadata:PIDEntry");
/// assert_eq!(RecordType::Function.to_string(), "Function");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RecordType {
    /// An 8-byte function record (bit 0 of byte 0 is clear).
    Function,
    /// A 16-byte metadata record of a known kind.
    Metadata(MetadataKind),
}

impl RecordType {
    /// The type of a decoded record.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::RecordType;
    /// use flightrec_core::fdr::records::{MetadataKind, Record};
    /// assert_eq!(RecordType::of(&Record::TscWrap { tsc: 0 }), RecordType::Metadata(MetadataKind::TscWrap));
    /// ```
    pub const fn of(record: &Record<'_>) -> Self {
        RecordType::Metadata(match record {
            Record::Function { .. } => return RecordType::Function,
            Record::NewBuffer { .. } => MetadataKind::NewBuffer,
            Record::EndOfBuffer => MetadataKind::EndOfBuffer,
            Record::NewCpuId { .. } => MetadataKind::NewCpuId,
            Record::TscWrap { .. } => MetadataKind::TscWrap,
            Record::Walltime { .. } => MetadataKind::WalltimeMarker,
            Record::CustomEvent { .. } => MetadataKind::CustomEventMarker,
            Record::CallArgument { .. } => MetadataKind::CallArgument,
            Record::BufferExtents { .. } => MetadataKind::BufferExtents,
            Record::TypedEvent { .. } => MetadataKind::TypedEventMarker,
            Record::Pid { .. } => MetadataKind::Pid,
        })
    }

    /// The type announced by a record's first byte, if its metadata kind is known.
    /// Bit 0 clear means a function record, whatever the other bits say.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::RecordType;
    /// use flightrec_core::fdr::records::MetadataKind;
    /// assert_eq!(RecordType::from_first_byte(0x70), Some(RecordType::Function));
    /// assert_eq!(RecordType::from_first_byte(0x0f), Some(RecordType::Metadata(MetadataKind::BufferExtents)));
    /// assert_eq!(RecordType::from_first_byte(0x15), None); // kind 10
    /// ```
    pub const fn from_first_byte(byte: u8) -> Option<Self> {
        if byte & 1 == 0 {
            return Some(RecordType::Function);
        }
        match MetadataKind::from_number(byte >> 1) {
            Some(kind) => Some(RecordType::Metadata(kind)),
            None => None,
        }
    }

    /// The name `llvm-xray` uses for this record type.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::RecordType;
    /// use flightrec_core::fdr::records::MetadataKind;
    /// assert_eq!(RecordType::Metadata(MetadataKind::WalltimeMarker).llvm_name(), "Metadata:WallClockTime");
    /// assert_eq!(RecordType::Metadata(MetadataKind::CallArgument).llvm_name(), "Metadata:CallArg");
    /// ```
    pub const fn llvm_name(self) -> &'static str {
        match self {
            RecordType::Function => "Function",
            RecordType::Metadata(kind) => match kind {
                MetadataKind::NewBuffer => "Metadata:NewBuffer",
                MetadataKind::EndOfBuffer => "Metadata:EndOfBuffer",
                MetadataKind::NewCpuId => "Metadata:NewCPUId",
                MetadataKind::TscWrap => "Metadata:TSCWrap",
                MetadataKind::WalltimeMarker => "Metadata:WallClockTime",
                MetadataKind::CustomEventMarker => "Metadata:CustomEvent",
                MetadataKind::CallArgument => "Metadata:CallArg",
                MetadataKind::BufferExtents => "Metadata:BufferExtents",
                MetadataKind::TypedEventMarker => "Metadata:TypedEvent",
                MetadataKind::Pid => "Metadata:PIDEntry",
            },
        }
    }
}

impl core::fmt::Display for RecordType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.llvm_name())
    }
}

/// Why [`decode_record`] could not decode a record.
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

/// Reads a zerocopy layout from the start of `bytes`, or reports how much is missing.
#[inline]
fn read<T: FromBytes>(bytes: &[u8], needed: usize) -> Result<T, RecordError> {
    T::read_from_prefix(bytes)
        .map(|(raw, _)| raw)
        .map_err(|_| RecordError::Incomplete { needed })
}

/// Decodes the record at the start of `bytes`, laid out as `version` lays it out, and
/// returns it with its length in bytes (payload included).
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
pub fn decode_record(version: Version, bytes: &[u8]) -> Result<(Record<'_>, usize), RecordError> {
    let Some(&first) = bytes.first() else {
        return Err(RecordError::Incomplete { needed: 1 });
    };
    if first & 1 == 0 {
        return decode_function(bytes);
    }

    // Metadata: the kind is judged before the length, as llvm-xray does.
    let number = first >> 1;
    let kind = MetadataKind::from_number(number).ok_or(RecordError::UnknownMetadataKind(number))?;
    if kind == MetadataKind::EndOfBuffer && version != Version::V1 {
        return Err(RecordError::EndOfBufferNotSupported(version));
    }
    if bytes.len() < METADATA_RECORD_SIZE {
        return Err(RecordError::Incomplete {
            needed: METADATA_RECORD_SIZE,
        });
    }
    const M: usize = METADATA_RECORD_SIZE;
    let record = match kind {
        MetadataKind::NewBuffer => Record::NewBuffer {
            tid: read::<RawNewBuffer>(bytes, M)?.tid.get(),
        },
        MetadataKind::EndOfBuffer => Record::EndOfBuffer,
        MetadataKind::NewCpuId => {
            let raw: RawNewCpuId = read(bytes, M)?;
            Record::NewCpuId {
                cpu: raw.cpu.get(),
                tsc: raw.tsc.get(),
            }
        }
        MetadataKind::TscWrap => Record::TscWrap {
            tsc: read::<RawTscWrap>(bytes, M)?.tsc.get(),
        },
        MetadataKind::WalltimeMarker => {
            let raw: RawWalltimeMarker = read(bytes, M)?;
            Record::Walltime {
                seconds: raw.seconds.get(),
                micros: raw.micros.get(),
            }
        }
        MetadataKind::CallArgument => Record::CallArgument {
            value: read::<RawCallArgument>(bytes, M)?.value.get(),
        },
        MetadataKind::BufferExtents => Record::BufferExtents {
            size: read::<RawBufferExtents>(bytes, M)?.size.get(),
        },
        MetadataKind::Pid => Record::Pid {
            pid: read::<RawPid>(bytes, M)?.pid.get(),
        },
        MetadataKind::CustomEventMarker => {
            let (time, size) = if version.events_use_delta() {
                let raw: RawCustomEventV5 = read(bytes, M)?;
                (CustomEventTime::Delta(raw.delta.get()), raw.size.get())
            } else {
                let raw: RawCustomEventV4 = read(bytes, M)?;
                let time = CustomEventTime::Absolute {
                    tsc: raw.tsc.get(),
                    cpu: raw.cpu.get(),
                };
                (time, raw.size.get())
            };
            let (payload, len) = payload(bytes, EventKind::Custom, size)?;
            return Ok((Record::CustomEvent { time, payload }, len));
        }
        MetadataKind::TypedEventMarker => {
            let raw: RawTypedEvent = read(bytes, M)?;
            let (payload, len) = payload(bytes, EventKind::Typed, raw.size.get())?;
            return Ok((
                Record::TypedEvent {
                    delta: raw.delta.get(),
                    event_type: raw.event_type.get(),
                    payload,
                },
                len,
            ));
        }
    };
    Ok((record, METADATA_RECORD_SIZE))
}

/// Decodes a function record; `bytes` is not empty and byte 0 has bit 0 clear.
fn decode_function(bytes: &[u8]) -> Result<(Record<'_>, usize), RecordError> {
    let raw: RawFunctionRecord = read(bytes, FUNCTION_RECORD_SIZE)?;
    let word = raw.word.get();
    // Three bits, so the cast cannot truncate anything that matters.
    let bits = ((word >> 1) & 0b111) as u8;
    let action = FunctionAction::from_bits(bits).ok_or(RecordError::UnknownFunctionAction(bits))?;
    // A u32 shifted right by 4 always fits 28 bits, so this never fails; it is
    // written without `unwrap` so that no panic path exists at all.
    let Ok(id) = FunctionId::new(word >> 4) else {
        return Err(RecordError::UnknownFunctionAction(bits));
    };
    Ok((
        Record::Function {
            action,
            id,
            delta: raw.delta.get(),
        },
        FUNCTION_RECORD_SIZE,
    ))
}

/// Checks an event marker's size and slices its payload, which follows the
/// 16-byte marker.
fn payload(bytes: &[u8], event: EventKind, size: i32) -> Result<(&[u8], usize), RecordError> {
    if size <= 0 {
        return Err(RecordError::BadEventSize { event, size });
    }
    // Only a 16-bit target cannot hold an i32 size; such a payload cannot be there.
    let len = usize::try_from(size).unwrap_or(usize::MAX);
    let end = METADATA_RECORD_SIZE.saturating_add(len);
    match bytes.get(METADATA_RECORD_SIZE..end) {
        Some(payload) => Ok((payload, end)),
        None => Err(RecordError::Incomplete { needed: end }),
    }
}
