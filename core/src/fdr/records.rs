//! FDR records: 8-byte function records and 16-byte metadata records.
//!
//! The raw types here (`Raw*`) are the exact little-endian layouts, with every reserved
//! byte named so that it is written as zero (LLVM's own runtime leaves stack garbage
//! there; readers ignore it). [`Record`] is the decoded, typed view used by the writer's
//! tests and the [decoder](super::decoder).
//!
//! The raw types are [zerocopy](https://docs.rs/zerocopy) types: read them from bytes
//! with `zerocopy::FromBytes`, write them with `zerocopy::IntoBytes`.
//!
//! ```
//! use flightrec_core::fdr::decoder::decode_record;
//! use flightrec_core::fdr::records::{Record, METADATA_RECORD_SIZE};
//! use flightrec_core::fdr::Version;
//! let record = Record::TscWrap { tsc: 1 << 40 };
//! let mut bytes = [0u8; METADATA_RECORD_SIZE];
//! assert_eq!(record.encode(Version::V5, &mut bytes), Ok(16));
//! assert_eq!(decode_record(Version::V5, &bytes), Ok((record, 16)));
//! ```

use zerocopy::little_endian::{I32, I64, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::header::Version;

/// Size of a function record: function entries and exits take 8 bytes each.
///
/// ```
/// use flightrec_core::fdr::records::{Record, FUNCTION_RECORD_SIZE};
/// use flightrec_core::fdr::{FunctionAction, FunctionId};
/// let exit = Record::Function { action: FunctionAction::Exit, id: FunctionId::new(1).unwrap(), delta: 9 };
/// assert_eq!(exit.encoded_len(), FUNCTION_RECORD_SIZE);
/// assert_eq!(FUNCTION_RECORD_SIZE, 8);
/// ```
pub const FUNCTION_RECORD_SIZE: usize = 8;
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

/// A function id: an unsigned number that fits 28 bits (0 to 2^28 - 1).
///
/// Ids are never truncated: a larger id is an error. Every recording call
/// ([`BufferWriter::enter`](super::writer::BufferWriter::enter),
/// [`Recorder::enter`](super::ring::Recorder::enter)) takes one, so the range check
/// happens once, where the id is made, not on the hot path.
///
/// ```
/// use flightrec_core::fdr::FunctionId;
/// assert_eq!(FunctionId::new(7).unwrap().get(), 7);
/// assert!(FunctionId::new(FunctionId::MAX).is_ok());
/// assert!(FunctionId::new(FunctionId::MAX + 1).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FunctionId(u32);

/// A function id did not fit 28 bits; it holds the id that was given.
///
/// ```
/// use flightrec_core::fdr::records::{FunctionId, FunctionIdOutOfRange};
/// let err = FunctionId::new(1 << 28).unwrap_err();
/// assert_eq!(err, FunctionIdOutOfRange(1 << 28));
/// assert_eq!(err.to_string(), "function id 268435456 does not fit 28 bits (max 268435455)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FunctionIdOutOfRange(pub u32);

impl core::fmt::Display for FunctionIdOutOfRange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "function id {} does not fit 28 bits (max {})",
            self.0,
            FunctionId::MAX
        )
    }
}

impl FunctionId {
    /// The largest id, 2^28 - 1.
    ///
    /// ```
    /// use flightrec_core::fdr::FunctionId;
    /// assert_eq!(FunctionId::MAX, 268_435_455);
    /// assert_eq!(FunctionId::new(FunctionId::MAX).unwrap().get(), FunctionId::MAX);
    /// ```
    pub const MAX: u32 = (1 << 28) - 1;

    /// The id, if it fits 28 bits; a `const fn`, so ids can be checked at compile
    /// time.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{FunctionId, FunctionIdOutOfRange};
    /// const MAIN_LOOP: FunctionId = match FunctionId::new(42) {
    ///     Ok(id) => id,
    ///     Err(_) => panic!("id out of range"),
    /// };
    /// assert_eq!(MAIN_LOOP.get(), 42);
    /// assert_eq!(FunctionId::new(u32::MAX), Err(FunctionIdOutOfRange(u32::MAX)));
    /// assert_eq!(FunctionId::try_from(5u32), FunctionId::new(5));
    /// ```
    #[inline]
    pub const fn new(id: u32) -> Result<Self, FunctionIdOutOfRange> {
        if id <= Self::MAX {
            Ok(Self(id))
        } else {
            Err(FunctionIdOutOfRange(id))
        }
    }

    /// The id as a number.
    ///
    /// ```
    /// use flightrec_core::fdr::FunctionId;
    /// assert_eq!(FunctionId::new(1234).unwrap().get(), 1234);
    /// ```
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl TryFrom<u32> for FunctionId {
    type Error = FunctionIdOutOfRange;
    fn try_from(id: u32) -> Result<Self, Self::Error> {
        Self::new(id)
    }
}

/// What a function record says happened (bits 1 to 3 of its first byte).
///
/// ```
/// use flightrec_core::fdr::FunctionAction;
/// assert_eq!(FunctionAction::from_bits(3), Some(FunctionAction::EnterArg));
/// assert_eq!(FunctionAction::from_bits(5), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum FunctionAction {
    /// Function entry.
    Enter = 0,
    /// Function exit.
    Exit = 1,
    /// Exit through a tail call.
    TailExit = 2,
    /// Function entry whose arguments follow as CallArgument records.
    EnterArg = 3,
}

impl FunctionAction {
    /// The action with that 3-bit code (4 to 7 are not defined).
    ///
    /// ```
    /// use flightrec_core::fdr::FunctionAction;
    /// assert_eq!(FunctionAction::from_bits(0), Some(FunctionAction::Enter));
    /// assert_eq!(FunctionAction::from_bits(2), Some(FunctionAction::TailExit));
    /// assert_eq!(FunctionAction::from_bits(7), None);
    /// ```
    pub const fn from_bits(bits: u8) -> Option<Self> {
        match bits {
            0 => Some(Self::Enter),
            1 => Some(Self::Exit),
            2 => Some(Self::TailExit),
            3 => Some(Self::EnterArg),
            _ => None,
        }
    }

    /// Whether this action enters a function.
    ///
    /// ```
    /// use flightrec_core::fdr::FunctionAction;
    /// assert!(FunctionAction::Enter.is_enter());
    /// assert!(FunctionAction::EnterArg.is_enter());
    /// assert!(!FunctionAction::TailExit.is_enter());
    /// ```
    pub const fn is_enter(self) -> bool {
        matches!(self, Self::Enter | Self::EnterArg)
    }
}

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

/// A function record as it lies in the file.
///
/// ```
/// use flightrec_core::fdr::records::RawFunctionRecord;
/// use flightrec_core::fdr::{FunctionAction, FunctionId};
/// use zerocopy::IntoBytes;
/// let raw = RawFunctionRecord::new(FunctionAction::Exit, FunctionId::new(4).unwrap(), 300);
/// assert_eq!(raw.word.get(), 0x42);
/// assert_eq!(raw.as_bytes(), &[0x42, 0, 0, 0, 0x2c, 0x01, 0, 0]);
/// ```
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct RawFunctionRecord {
    /// `function_id << 4 | action << 1` (bit 0 is 0).
    pub word: U32,
    /// TSC delta from the previous record.
    pub delta: U32,
}

impl RawFunctionRecord {
    /// Encodes a function record.
    ///
    /// ```
    /// use flightrec_core::fdr::records::RawFunctionRecord;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// let raw = RawFunctionRecord::new(FunctionAction::Enter, FunctionId::new(7).unwrap(), 5);
    /// assert_eq!((raw.word.get(), raw.delta.get()), (0x70, 5));
    /// ```
    #[inline(always)]
    pub const fn new(action: FunctionAction, id: FunctionId, delta: u32) -> Self {
        Self {
            word: U32::new((id.0 << 4) | ((action as u32) << 1)),
            delta: U32::new(delta),
        }
    }

    /// The record as one little-endian u64, the form the writer stores (one 8-byte
    /// store on the hot path).
    ///
    /// ```
    /// use flightrec_core::fdr::records::RawFunctionRecord;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// use zerocopy::IntoBytes;
    /// let (action, id) = (FunctionAction::TailExit, FunctionId::new(5).unwrap());
    /// let word = RawFunctionRecord::to_u64(action, id, 0x0102_0304);
    /// assert_eq!(word.to_le_bytes(), [0x54, 0, 0, 0, 4, 3, 2, 1]);
    /// assert_eq!(&word.to_le_bytes(), RawFunctionRecord::new(action, id, 0x0102_0304).as_bytes());
    /// ```
    #[inline(always)]
    pub const fn to_u64(action: FunctionAction, id: FunctionId, delta: u32) -> u64 {
        ((delta as u64) << 32) | ((id.0 << 4) | ((action as u32) << 1)) as u64
    }
}

macro_rules! metadata_record {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident : $ty:ty),* $(,)? } reserved $n:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
        #[repr(C)]
        pub struct $name {
            /// `kind << 1 | 1`.
            pub tag: u8,
            $($(#[$fdoc])* pub $field: $ty,)*
            /// Reserved bytes, written as zero.
            pub reserved: [u8; $n],
        }
        const _: () = assert!(core::mem::size_of::<$name>() == METADATA_RECORD_SIZE);
    };
}

metadata_record!(
    /// NewBuffer: starts a buffer.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawNewBuffer, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::NewBuffer { tid: 7 }.encode(Version::V5, &mut bytes).unwrap();
    /// let raw = RawNewBuffer::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::NewBuffer.tag());
    /// assert_eq!(raw.tid.get(), 7);
    /// ```
    RawNewBuffer { /** Thread id. */ tid: I32 } reserved 11
);
metadata_record!(
    /// EndOfBuffer (version 1 only).
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawEndOfBuffer, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::EndOfBuffer.encode(Version::V1, &mut bytes).unwrap();
    /// let raw = RawEndOfBuffer::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::EndOfBuffer.tag());
    /// assert_eq!(raw.reserved, [0; 15]);
    /// ```
    RawEndOfBuffer {} reserved 15
);
metadata_record!(
    /// NewCPUId: CPU change, sets the base TSC.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawNewCpuId, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::NewCpuId { cpu: 3, tsc: 1_000 }.encode(Version::V5, &mut bytes).unwrap();
    /// let raw = RawNewCpuId::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::NewCpuId.tag());
    /// assert_eq!((raw.cpu.get(), raw.tsc.get()), (3, 1_000));
    /// ```
    RawNewCpuId { /** CPU id. */ cpu: U16, /** Absolute TSC. */ tsc: U64 } reserved 5
);
metadata_record!(
    /// TSCWrap: sets the base TSC.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawTscWrap, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::TscWrap { tsc: 1 << 33 }.encode(Version::V5, &mut bytes).unwrap();
    /// let raw = RawTscWrap::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::TscWrap.tag());
    /// assert_eq!(raw.tsc.get(), 1 << 33);
    /// ```
    RawTscWrap { /** Absolute TSC. */ tsc: U64 } reserved 7
);
metadata_record!(
    /// WalltimeMarker: wall-clock time at the start of the buffer.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawWalltimeMarker, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::Walltime { seconds: 1_700_000_000, micros: 5 }.encode(Version::V5, &mut bytes).unwrap();
    /// let raw = RawWalltimeMarker::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::WalltimeMarker.tag());
    /// assert_eq!((raw.seconds.get(), raw.micros.get()), (1_700_000_000, 5));
    /// ```
    RawWalltimeMarker { /** Seconds. */ seconds: I64, /** Microseconds. */ micros: U32 } reserved 3
);
metadata_record!(
    /// CustomEventMarker as versions 1 to 4 write it (absolute TSC; CPU in version 4).
    ///
    /// ```
    /// use flightrec_core::fdr::records::{CustomEventTime, RawCustomEventV4, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 18];
    /// let time = CustomEventTime::Absolute { tsc: 900, cpu: 2 };
    /// Record::CustomEvent { time, payload: b"hi" }.encode(Version::V4, &mut bytes).unwrap();
    /// let (raw, payload) = RawCustomEventV4::read_from_prefix(&bytes).unwrap();
    /// assert_eq!((raw.size.get(), raw.tsc.get(), raw.cpu.get()), (2, 900, 2));
    /// assert_eq!(payload, b"hi");
    /// ```
    RawCustomEventV4 {
        /** Payload size. */ size: I32,
        /** Absolute TSC. */ tsc: U64,
        /** CPU id (version 4; zero before). */ cpu: U16,
    } reserved 1
);
metadata_record!(
    /// CustomEventMarker as version 5 writes it (TSC delta).
    ///
    /// ```
    /// use flightrec_core::fdr::records::{CustomEventTime, RawCustomEventV5, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 18];
    /// let time = CustomEventTime::Delta(-3);
    /// Record::CustomEvent { time, payload: b"hi" }.encode(Version::V5, &mut bytes).unwrap();
    /// let (raw, payload) = RawCustomEventV5::read_from_prefix(&bytes).unwrap();
    /// assert_eq!((raw.size.get(), raw.delta.get()), (2, -3));
    /// assert_eq!(payload, b"hi");
    /// ```
    RawCustomEventV5 { /** Payload size. */ size: I32, /** TSC delta. */ delta: I32 } reserved 7
);
metadata_record!(
    /// CallArgument: one argument of the preceding function record.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawCallArgument, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::CallArgument { value: u64::MAX }.encode(Version::V5, &mut bytes).unwrap();
    /// let raw = RawCallArgument::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::CallArgument.tag());
    /// assert_eq!(raw.value.get(), u64::MAX);
    /// ```
    RawCallArgument { /** The argument. */ value: U64 } reserved 7
);
metadata_record!(
    /// BufferExtents: bytes that follow in this buffer.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawBufferExtents, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::BufferExtents { size: 4080 }.encode(Version::V5, &mut bytes).unwrap();
    /// let raw = RawBufferExtents::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::BufferExtents.tag());
    /// assert_eq!(raw.size.get(), 4080);
    /// ```
    RawBufferExtents { /** Byte count. */ size: U64 } reserved 7
);
metadata_record!(
    /// TypedEventMarker: an event type and a TSC delta; its payload follows.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{RawTypedEvent, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 17];
    /// let event = Record::TypedEvent { delta: 10, event_type: 0xF17C, payload: b"!" };
    /// event.encode(Version::V5, &mut bytes).unwrap();
    /// let (raw, payload) = RawTypedEvent::read_from_prefix(&bytes).unwrap();
    /// assert_eq!((raw.size.get(), raw.delta.get(), raw.event_type.get()), (1, 10, 0xF17C));
    /// assert_eq!(payload, b"!");
    /// ```
    RawTypedEvent {
        /** Payload size. */ size: I32,
        /** TSC delta. */ delta: I32,
        /** Event type. */ event_type: U16,
    } reserved 5
);
metadata_record!(
    /// Pid: process id.
    ///
    /// ```
    /// use flightrec_core::fdr::records::{MetadataKind, RawPid, Record};
    /// use flightrec_core::fdr::Version;
    /// use zerocopy::FromBytes;
    /// let mut bytes = [0u8; 16];
    /// Record::Pid { pid: 4242 }.encode(Version::V5, &mut bytes).unwrap();
    /// let raw = RawPid::read_from_bytes(&bytes).unwrap();
    /// assert_eq!(raw.tag, MetadataKind::Pid.tag());
    /// assert_eq!(raw.pid.get(), 4242);
    /// ```
    RawPid { /** Process id. */ pid: I32 } reserved 11
);

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

/// One decoded record. Payloads borrow from the input.
///
/// [`decode_record`](super::decoder::decode_record) and the
/// [`Decoder`](super::decoder::Decoder) produce it; [`Record::encode`] writes it,
/// which is how tests and tools build FDR bytes by hand (the
/// [`BufferWriter`](super::writer::BufferWriter) writes the hot-path records itself).
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

/// A record could not be encoded by [`Record::encode`]; nothing was written.
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

/// Writes a metadata record with zeroed reserved bytes.
#[inline(always)]
pub(crate) fn put<T: IntoBytes + Immutable>(out: &mut [u8], rec: &T) {
    out[..core::mem::size_of::<T>()].copy_from_slice(rec.as_bytes());
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
    /// let empty = Record::TypedEvent { delta: 0, event_type: 1, payload: b"" };
    /// assert_eq!(empty.encode(Version::V5, &mut out), Err(EncodeError::BadPayloadSize(0)));
    /// ```
    pub fn encode(&self, version: Version, out: &mut [u8]) -> Result<usize, EncodeError> {
        let needed = self.encoded_len();
        if out.len() < needed {
            return Err(EncodeError::BufferTooSmall { needed });
        }
        let payload_size = |p: &[u8]| -> Result<I32, EncodeError> {
            match i32::try_from(p.len()) {
                Ok(n) if n > 0 => Ok(I32::new(n)),
                _ => Err(EncodeError::BadPayloadSize(p.len())),
            }
        };
        match *self {
            Record::Function { action, id, delta } => {
                put(out, &RawFunctionRecord::new(action, id, delta));
            }
            Record::NewBuffer { tid } => put(
                out,
                &RawNewBuffer {
                    tag: MetadataKind::NewBuffer.tag(),
                    tid: I32::new(tid),
                    reserved: [0; 11],
                },
            ),
            Record::EndOfBuffer => put(
                out,
                &RawEndOfBuffer {
                    tag: MetadataKind::EndOfBuffer.tag(),
                    reserved: [0; 15],
                },
            ),
            Record::NewCpuId { cpu, tsc } => put(
                out,
                &RawNewCpuId {
                    tag: MetadataKind::NewCpuId.tag(),
                    cpu: U16::new(cpu),
                    tsc: U64::new(tsc),
                    reserved: [0; 5],
                },
            ),
            Record::TscWrap { tsc } => put(
                out,
                &RawTscWrap {
                    tag: MetadataKind::TscWrap.tag(),
                    tsc: U64::new(tsc),
                    reserved: [0; 7],
                },
            ),
            Record::Walltime { seconds, micros } => put(
                out,
                &RawWalltimeMarker {
                    tag: MetadataKind::WalltimeMarker.tag(),
                    seconds: I64::new(seconds),
                    micros: U32::new(micros),
                    reserved: [0; 3],
                },
            ),
            Record::CustomEvent { time, payload } => {
                let size = payload_size(payload)?;
                match (time, version.events_use_delta()) {
                    (CustomEventTime::Delta(delta), true) => put(
                        out,
                        &RawCustomEventV5 {
                            tag: MetadataKind::CustomEventMarker.tag(),
                            size,
                            delta: I32::new(delta),
                            reserved: [0; 7],
                        },
                    ),
                    (CustomEventTime::Absolute { tsc, cpu }, false) => put(
                        out,
                        &RawCustomEventV4 {
                            tag: MetadataKind::CustomEventMarker.tag(),
                            size,
                            tsc: U64::new(tsc),
                            // Readers parse the CPU for versions 1 to 4 alike; it is only
                            // defined from version 4, so earlier versions keep it zero.
                            cpu: U16::new(if version == Version::V4 { cpu } else { 0 }),
                            reserved: [0; 1],
                        },
                    ),
                    _ => return Err(EncodeError::WrongTimeForm),
                }
                out[METADATA_RECORD_SIZE..needed].copy_from_slice(payload);
            }
            Record::CallArgument { value } => put(
                out,
                &RawCallArgument {
                    tag: MetadataKind::CallArgument.tag(),
                    value: U64::new(value),
                    reserved: [0; 7],
                },
            ),
            Record::BufferExtents { size } => put(
                out,
                &RawBufferExtents {
                    tag: MetadataKind::BufferExtents.tag(),
                    size: U64::new(size),
                    reserved: [0; 7],
                },
            ),
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                let size = payload_size(payload)?;
                put(
                    out,
                    &RawTypedEvent {
                        tag: MetadataKind::TypedEventMarker.tag(),
                        size,
                        delta: I32::new(delta),
                        event_type: U16::new(event_type),
                        reserved: [0; 5],
                    },
                );
                out[METADATA_RECORD_SIZE..needed].copy_from_slice(payload);
            }
            Record::Pid { pid } => put(
                out,
                &RawPid {
                    tag: MetadataKind::Pid.tag(),
                    pid: I32::new(pid),
                    reserved: [0; 11],
                },
            ),
        }
        Ok(needed)
    }
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
                RawFunctionRecord::to_u64(action, id(fid), 0x01020304).to_le_bytes(),
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
