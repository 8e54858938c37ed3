//! FDR records: 8-byte function records and 16-byte metadata records.
//!
//! Each record kind is one type that holds both directions of its layout, `parse`
//! beside `emit`, and both the [writer](super::writer) and the
//! [decoder](super::decoder) go through it:
//!
//! | record | type | parse / emit |
//! |---|---|---|
//! | function (Enter, Exit, TailExit, EnterArg) | [`FunctionRecord`] | inherent (`emit` stores [`FunctionRecord::to_u64`]) |
//! | NewBuffer | [`NewBuffer`] | [`MetadataRecord`] |
//! | EndOfBuffer | [`EndOfBuffer`] | [`MetadataRecord`] |
//! | NewCPUId | [`NewCpuId`] | [`MetadataRecord`] |
//! | TSCWrap | [`TscWrap`] | [`MetadataRecord`] |
//! | WalltimeMarker | [`WalltimeMarker`] | [`MetadataRecord`] |
//! | CustomEventMarker | [`CustomEventMarker`] | inherent, with the version |
//! | CallArgument | [`CallArgument`] | [`MetadataRecord`] |
//! | BufferExtents | [`BufferExtents`] | [`MetadataRecord`] |
//! | TypedEventMarker | [`TypedEventMarker`] | [`MetadataRecord`] |
//! | Pid | [`Pid`] | [`MetadataRecord`] |
//!
//! [`Record`] is the decoded, typed view of any one record with its event payload;
//! [`Record::parse`] and [`Record::encode`] dispatch to the kinds above and add what
//! is not layout: the order in which `llvm-xray` makes its checks, event payloads, and
//! room in the output.
//!
//! ```
//! use flightrec_core::fdr::records::{MetadataRecord, Record, TscWrap, METADATA_RECORD_SIZE};
//! use flightrec_core::fdr::Version;
//! let record = Record::TscWrap { tsc: 1 << 40 };
//! let mut bytes = [0u8; METADATA_RECORD_SIZE];
//! assert_eq!(record.encode(Version::V5, &mut bytes), Ok(16));
//! assert_eq!(Record::parse(Version::V5, &bytes), Ok((record, 16)));
//! assert_eq!(TscWrap::parse(&bytes), TscWrap { tsc: 1 << 40 });
//! ```

mod error;
mod function;
mod metadata;
mod record_type;

pub use error::{EncodeError, EventKind, RecordError};
pub use function::{
    FunctionAction, FunctionId, FunctionIdOutOfRange, FunctionRecord, FUNCTION_RECORD_SIZE,
};
pub use metadata::{
    BufferExtents, CallArgument, CustomEventMarker, CustomEventTime, EndOfBuffer, MetadataKind,
    MetadataRecord, NewBuffer, NewCpuId, Pid, TscWrap, TypedEventMarker, WalltimeMarker,
    METADATA_RECORD_SIZE,
};
pub use record_type::RecordType;

use super::header::Version;

/// One decoded record. Payloads borrow from the input.
///
/// [`Record::parse`] (which [`decode_record`](super::decoder::decode_record) is) and
/// the [`Decoder`](super::decoder::Decoder) produce it; [`Record::encode`] writes it,
/// which is how tests and tools build FDR bytes by hand (the
/// [`BufferWriter`](super::writer::BufferWriter) writes each record through its kind's
/// type, without building a `Record`).
///
/// ```
/// use flightrec_core::fdr::records::Record;
/// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
/// let r = Record::Function { action: FunctionAction::Enter, id: FunctionId::new(7).unwrap(), delta: 0 };
/// let mut buf = [0u8; 8];
/// assert_eq!(r.encode(Version::V5, &mut buf), Ok(8));
/// assert_eq!(buf, [0x70, 0, 0, 0, 0, 0, 0, 0]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Record<'a> {
    /// A function record.
    Function {
        /// What happened.
        action: FunctionAction,
        /// Which function.
        id: FunctionId,
        /// TSC delta from the base TSC.
        delta: u32,
    },
    /// NewBuffer.
    NewBuffer {
        /// Thread id.
        tid: i32,
    },
    /// EndOfBuffer (version 1).
    EndOfBuffer,
    /// NewCPUId.
    NewCpuId {
        /// CPU id.
        cpu: u16,
        /// Absolute TSC.
        tsc: u64,
    },
    /// TSCWrap.
    TscWrap {
        /// Absolute TSC.
        tsc: u64,
    },
    /// WalltimeMarker.
    Walltime {
        /// Seconds.
        seconds: i64,
        /// Microseconds.
        micros: u32,
    },
    /// CustomEventMarker and its payload.
    CustomEvent {
        /// When.
        time: CustomEventTime,
        /// The payload (at least one byte).
        payload: &'a [u8],
    },
    /// CallArgument.
    CallArgument {
        /// The argument.
        value: u64,
    },
    /// BufferExtents.
    BufferExtents {
        /// Bytes that follow in the buffer.
        size: u64,
    },
    /// TypedEventMarker and its payload.
    TypedEvent {
        /// TSC delta.
        delta: i32,
        /// Event type.
        event_type: u16,
        /// The payload (at least one byte).
        payload: &'a [u8],
    },
    /// Pid.
    Pid {
        /// Process id.
        pid: i32,
    },
}

/// The first `N` bytes of `bytes`, or how many the record needs.
#[inline]
fn head<const N: usize>(bytes: &[u8]) -> Result<&[u8; N], RecordError> {
    bytes
        .first_chunk::<N>()
        .ok_or(RecordError::Incomplete { needed: N })
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

/// An event payload's size as its marker writes it.
fn payload_size(payload: &[u8]) -> Result<i32, EncodeError> {
    match i32::try_from(payload.len()) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(EncodeError::BadPayloadSize(payload.len())),
    }
}

impl<'a> Record<'a> {
    /// Decodes the record at the start of `bytes`, laid out as `version` lays it out,
    /// and returns it with its length in bytes (payload included).
    ///
    /// This never panics and never reads past `bytes`; a record cut short by the end
    /// of the slice is [`RecordError::Incomplete`], so a stream can be decoded as it
    /// arrives. Checks come in the order `llvm-xray` 14 makes them: an unknown
    /// metadata kind or an EndOfBuffer after version 1 is reported from byte 0 alone;
    /// a function record must be complete before its action is checked; a metadata
    /// record must be complete (16 bytes) before an event size is checked; then the
    /// event payload must be present.
    ///
    /// [`decode_record`](crate::fdr::decoder::decode_record) is this function, where
    /// the decoder's other layers are.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{Record, RecordError};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    /// let bytes = [0x70, 0, 0, 0, 5, 0, 0, 0];
    /// let enter = Record::Function { action: FunctionAction::Enter, id: FunctionId::new(7).unwrap(), delta: 5 };
    /// assert_eq!(Record::parse(Version::V5, &bytes), Ok((enter, 8)));
    /// assert_eq!(Record::parse(Version::V5, &bytes[..3]), Err(RecordError::Incomplete { needed: 8 }));
    /// ```
    pub fn parse(version: Version, bytes: &'a [u8]) -> Result<(Self, usize), RecordError> {
        let Some(&first) = bytes.first() else {
            return Err(RecordError::Incomplete { needed: 1 });
        };
        if first & 1 == 0 {
            let FunctionRecord { action, id, delta } =
                FunctionRecord::parse(head::<FUNCTION_RECORD_SIZE>(bytes)?)?;
            return Ok((Record::Function { action, id, delta }, FUNCTION_RECORD_SIZE));
        }

        // Metadata: the kind is judged before the length, as llvm-xray does.
        let number = first >> 1;
        let kind =
            MetadataKind::from_number(number).ok_or(RecordError::UnknownMetadataKind(number))?;
        if kind == MetadataKind::EndOfBuffer && version != Version::V1 {
            return Err(RecordError::EndOfBufferNotSupported(version));
        }
        let marker = head::<METADATA_RECORD_SIZE>(bytes)?;
        let record = match kind {
            MetadataKind::NewBuffer => Record::NewBuffer {
                tid: NewBuffer::parse(marker).tid,
            },
            MetadataKind::EndOfBuffer => {
                let EndOfBuffer = EndOfBuffer::parse(marker);
                Record::EndOfBuffer
            }
            MetadataKind::NewCpuId => {
                let NewCpuId { cpu, tsc } = NewCpuId::parse(marker);
                Record::NewCpuId { cpu, tsc }
            }
            MetadataKind::TscWrap => Record::TscWrap {
                tsc: TscWrap::parse(marker).tsc,
            },
            MetadataKind::WalltimeMarker => {
                let WalltimeMarker { seconds, micros } = WalltimeMarker::parse(marker);
                Record::Walltime { seconds, micros }
            }
            MetadataKind::CallArgument => Record::CallArgument {
                value: CallArgument::parse(marker).value,
            },
            MetadataKind::BufferExtents => Record::BufferExtents {
                size: BufferExtents::parse(marker).size,
            },
            MetadataKind::Pid => Record::Pid {
                pid: Pid::parse(marker).pid,
            },
            MetadataKind::CustomEventMarker => {
                let CustomEventMarker { size, time } = CustomEventMarker::parse(version, marker);
                let (payload, len) = payload(bytes, EventKind::Custom, size)?;
                return Ok((Record::CustomEvent { time, payload }, len));
            }
            MetadataKind::TypedEventMarker => {
                let TypedEventMarker {
                    size,
                    delta,
                    event_type,
                } = TypedEventMarker::parse(marker);
                let (payload, len) = payload(bytes, EventKind::Typed, size)?;
                let record = Record::TypedEvent {
                    delta,
                    event_type,
                    payload,
                };
                return Ok((record, len));
            }
        };
        Ok((record, METADATA_RECORD_SIZE))
    }
}

impl Record<'_> {
    /// Number of bytes the record takes (payload included): the room
    /// [`encode`](Self::encode) needs.
    ///
    /// ```
    /// use flightrec_core::fdr::records::Record;
    /// assert_eq!(Record::NewBuffer { tid: 1 }.encoded_len(), 16);
    /// let event = Record::TypedEvent { delta: 0, event_type: 1, payload: &[0; 40] };
    /// assert_eq!(event.encoded_len(), 56);
    /// ```
    pub const fn encoded_len(&self) -> usize {
        match self {
            Record::Function { .. } => FUNCTION_RECORD_SIZE,
            Record::CustomEvent { payload, .. } | Record::TypedEvent { payload, .. } => {
                METADATA_RECORD_SIZE + payload.len()
            }
            _ => METADATA_RECORD_SIZE,
        }
    }

    /// Whether this is a metadata record (everything but function records).
    ///
    /// ```
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// assert!(Record::EndOfBuffer.is_metadata());
    /// let enter = Record::Function { action: FunctionAction::Enter, id: FunctionId::new(1).unwrap(), delta: 0 };
    /// assert!(!enter.is_metadata());
    /// ```
    pub const fn is_metadata(&self) -> bool {
        !matches!(self, Record::Function { .. })
    }

    /// Encodes the record at the start of `out` as `version` lays it out, and returns
    /// the number of bytes written. Reserved bytes are zeroed; bytes of `out` past the
    /// record are left alone.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{EncodeError, Record};
    /// use flightrec_core::fdr::Version;
    /// let mut out = [0xAAu8; 20];
    /// assert_eq!(Record::NewCpuId { cpu: 1, tsc: 0x0102 }.encode(Version::V5, &mut out), Ok(16));
    /// assert_eq!(&out[..4], &[0x05, 1, 0, 0x02]);
    /// assert_eq!(&out[11..17], &[0, 0, 0, 0, 0, 0xAA]);
    /// assert_eq!(Record::parse(Version::V5, &out), Ok((Record::NewCpuId { cpu: 1, tsc: 0x0102 }, 16)));
    /// let empty = Record::TypedEvent { delta: 0, event_type: 1, payload: b"" };
    /// assert_eq!(empty.encode(Version::V5, &mut out), Err(EncodeError::BadPayloadSize(0)));
    /// ```
    pub fn encode(&self, version: Version, out: &mut [u8]) -> Result<usize, EncodeError> {
        let needed = self.encoded_len();
        if out.len() < needed {
            return Err(EncodeError::BufferTooSmall { needed });
        }
        match *self {
            Record::Function { action, id, delta } => {
                let out = out
                    .first_chunk_mut()
                    .ok_or(EncodeError::BufferTooSmall { needed })?;
                FunctionRecord { action, id, delta }.emit(out);
                Ok(needed)
            }
            Record::NewBuffer { tid } => put(out, &NewBuffer { tid }),
            Record::EndOfBuffer => put(out, &EndOfBuffer),
            Record::NewCpuId { cpu, tsc } => put(out, &NewCpuId { cpu, tsc }),
            Record::TscWrap { tsc } => put(out, &TscWrap { tsc }),
            Record::Walltime { seconds, micros } => put(out, &WalltimeMarker { seconds, micros }),
            Record::CustomEvent { time, payload } => {
                let size = payload_size(payload)?;
                if matches!(time, CustomEventTime::Delta(_)) != version.events_use_delta() {
                    return Err(EncodeError::WrongTimeForm);
                }
                let marker = CustomEventMarker { size, time };
                put_event(out, payload, |out| marker.emit(version, out))
            }
            Record::CallArgument { value } => put(out, &CallArgument { value }),
            Record::BufferExtents { size } => put(out, &BufferExtents { size }),
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                let marker = TypedEventMarker {
                    size: payload_size(payload)?,
                    delta,
                    event_type,
                };
                put_event(out, payload, |out| marker.emit(out))
            }
            Record::Pid { pid } => put(out, &Pid { pid }),
        }
    }
}

/// Writes a fixed-size metadata record at the start of `out`.
fn put(out: &mut [u8], record: &impl MetadataRecord) -> Result<usize, EncodeError> {
    put_event(out, &[], |out| record.emit(out))
}

/// Writes a 16-byte marker with `emit` at the start of `out`, and `payload` after it;
/// nothing when `out` is too small for both.
fn put_event(
    out: &mut [u8],
    payload: &[u8],
    emit: impl FnOnce(&mut [u8; METADATA_RECORD_SIZE]),
) -> Result<usize, EncodeError> {
    let needed = METADATA_RECORD_SIZE.saturating_add(payload.len());
    let too_small = EncodeError::BufferTooSmall { needed };
    let (marker, rest) = out.split_first_chunk_mut().ok_or(too_small)?;
    let rest = rest.get_mut(..payload.len()).ok_or(too_small)?;
    emit(marker);
    rest.copy_from_slice(payload);
    Ok(needed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: Record<'_>, v: Version) -> ([u8; 64], usize) {
        let mut b = [0xAAu8; 64];
        let n = r.encode(v, &mut b).unwrap();
        (b, n)
    }

    #[test]
    fn function_record_first_bytes_match_spec() {
        let id = |n| FunctionId::new(n).unwrap();
        let cases = [
            (FunctionAction::Enter, 7, 0x70),
            (FunctionAction::EnterArg, 3, 0x36),
            (FunctionAction::Exit, 4, 0x42),
            (FunctionAction::TailExit, 5, 0x54),
        ];
        for (action, fid, first) in cases {
            let (b, n) = enc(
                Record::Function {
                    action,
                    id: id(fid),
                    delta: 0x01020304,
                },
                Version::V5,
            );
            assert_eq!(n, 8);
            assert_eq!(&b[..8], &[first, 0, 0, 0, 4, 3, 2, 1]);
            assert_eq!(
                FunctionRecord {
                    action,
                    id: id(fid),
                    delta: 0x01020304
                }
                .to_u64()
                .to_le_bytes(),
                b[..8]
            );
        }
        let (b, _) = enc(
            Record::Function {
                action: FunctionAction::Exit,
                id: id(FunctionId::MAX),
                delta: 0,
            },
            Version::V5,
        );
        assert_eq!(&b[..4], &[0xf2, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn metadata_tags_and_zeroed_reserved_bytes() {
        let (b, n) = enc(
            Record::NewCpuId {
                cpu: 3,
                tsc: 0x1122334455667788,
            },
            Version::V5,
        );
        assert_eq!(n, 16);
        assert_eq!(
            &b[..16],
            &[0x05, 3, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0, 0]
        );
        let (b, _) = enc(Record::Pid { pid: 4242 }, Version::V5);
        assert_eq!(
            &b[..16],
            &[0x13, 0x92, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        let (b, _) = enc(Record::BufferExtents { size: 229 }, Version::V5);
        assert_eq!(b[0], 0x0f);
        assert_eq!(b[1], 229);
        assert!(b[2..16].iter().all(|&x| x == 0));
        assert_eq!(b[16], 0xAA, "nothing written past the record");
    }

    #[test]
    fn custom_event_forms() {
        let (b, n) = enc(
            Record::CustomEvent {
                time: CustomEventTime::Delta(100),
                payload: b"hello",
            },
            Version::V5,
        );
        assert_eq!(n, 21);
        assert_eq!(
            &b[..21],
            b"\x0b\x05\x00\x00\x00\x64\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00hello"
        );
        let (b, _) = enc(
            Record::CustomEvent {
                time: CustomEventTime::Absolute { tsc: 9, cpu: 2 },
                payload: b"x",
            },
            Version::V4,
        );
        assert_eq!(&b[13..15], &[2, 0]);
        let (b, _) = enc(
            Record::CustomEvent {
                time: CustomEventTime::Absolute { tsc: 9, cpu: 2 },
                payload: b"x",
            },
            Version::V3,
        );
        assert_eq!(&b[13..15], &[0, 0]);
        let mut out = [0u8; 64];
        assert_eq!(
            Record::CustomEvent {
                time: CustomEventTime::Delta(0),
                payload: b"x"
            }
            .encode(Version::V3, &mut out),
            Err(EncodeError::WrongTimeForm)
        );
        assert_eq!(
            Record::TypedEvent {
                delta: 0,
                event_type: 1,
                payload: b""
            }
            .encode(Version::V5, &mut out),
            Err(EncodeError::BadPayloadSize(0))
        );
        assert_eq!(
            Record::Pid { pid: 1 }.encode(Version::V5, &mut out[..15]),
            Err(EncodeError::BufferTooSmall { needed: 16 })
        );
    }
}
