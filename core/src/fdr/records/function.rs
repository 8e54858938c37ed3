//! Function records: the 8-byte records that say a function was entered or left.

use super::error::RecordError;

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

/// A function id: an unsigned number that fits 28 bits (0 to 2^28 - 1).
///
/// Ids are never truncated: a larger id is an error. Every recording call
/// ([`BufferWriter::enter`](crate::fdr::writer::BufferWriter::enter),
/// [`Recorder::enter`](crate::fdr::ring::Recorder::enter)) takes one, so the range check
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

/// A function record (8 bytes): one little-endian u32 holding
/// `function_id << 4 | action << 1` (bit 0 clear: not metadata), then the u32 TSC
/// delta from the base TSC.
///
/// [`parse`](Self::parse) and [`emit`](Self::emit) are the one place this layout is
/// read and written: the [decoder](crate::fdr::decoder) parses with it, and the
/// [`BufferWriter`](crate::fdr::writer::BufferWriter) stores [`to_u64`](Self::to_u64)
/// (the same bytes as one 8-byte store).
///
/// ```
/// use flightrec_core::fdr::records::FunctionRecord;
/// use flightrec_core::fdr::{FunctionAction, FunctionId};
/// let exit = FunctionRecord { action: FunctionAction::Exit, id: FunctionId::new(4).unwrap(), delta: 300 };
/// let mut bytes = [0u8; 8];
/// exit.emit(&mut bytes);
/// assert_eq!(bytes, [0x42, 0, 0, 0, 0x2c, 0x01, 0, 0]);
/// assert_eq!(FunctionRecord::parse(&bytes), Ok(exit));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FunctionRecord {
    /// What happened.
    pub action: FunctionAction,
    /// Which function.
    pub id: FunctionId,
    /// TSC delta from the base TSC.
    pub delta: u32,
}

impl FunctionRecord {
    /// Reads a function record. Bit 0 of byte 0 is not looked at: it is what tells a
    /// function record from a metadata record, which the caller has already decided.
    /// Every id and delta is valid; only actions 4 to 7 are errors.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::RecordError;
    /// use flightrec_core::fdr::records::FunctionRecord;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// let enter = FunctionRecord::parse(&[0x70, 0, 0, 0, 5, 0, 0, 0]).unwrap();
    /// assert_eq!((enter.action, enter.id.get(), enter.delta), (FunctionAction::Enter, 7, 5));
    /// // Action 4 does not exist.
    /// assert_eq!(FunctionRecord::parse(&[0x08, 0, 0, 0, 0, 0, 0, 0]), Err(RecordError::UnknownFunctionAction(4)));
    /// ```
    #[inline]
    pub const fn parse(bytes: &[u8; FUNCTION_RECORD_SIZE]) -> Result<Self, RecordError> {
        let word = u64::from_le_bytes(*bytes);
        let low = word as u32;
        // Three bits, so the cast cannot truncate anything that matters.
        let bits = ((low >> 1) & 0b111) as u8;
        let Some(action) = FunctionAction::from_bits(bits) else {
            return Err(RecordError::UnknownFunctionAction(bits));
        };
        Ok(Self {
            action,
            // A u32 shifted right by 4 always fits 28 bits.
            id: FunctionId(low >> 4),
            delta: (word >> 32) as u32,
        })
    }

    /// The record as one little-endian u64, the form the writer stores (one 8-byte
    /// store on the hot path); its bytes are what [`emit`](Self::emit) writes.
    ///
    /// ```
    /// use flightrec_core::fdr::records::FunctionRecord;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// let tail = FunctionRecord { action: FunctionAction::TailExit, id: FunctionId::new(5).unwrap(), delta: 0x0102_0304 };
    /// assert_eq!(tail.to_u64().to_le_bytes(), [0x54, 0, 0, 0, 4, 3, 2, 1]);
    /// ```
    #[inline(always)]
    pub const fn to_u64(self) -> u64 {
        ((self.delta as u64) << 32) | Self::low_word(self.action, self.id) as u64
    }

    /// The record's first four bytes (as a little-endian u32): the action and the
    /// id, which a record path carries as one value until it has the delta.
    #[inline(always)]
    pub(crate) const fn low_word(action: FunctionAction, id: FunctionId) -> u32 {
        (id.0 << 4) | ((action as u32) << 1)
    }

    /// The action and id of a [`low_word`](Self::low_word).
    #[inline]
    pub(crate) const fn from_low_word(low: u32) -> (FunctionAction, FunctionId) {
        // `low_word` makes only the four defined actions: bit 3 is 0.
        let action = match (low >> 1) & 0b11 {
            0 => FunctionAction::Enter,
            1 => FunctionAction::Exit,
            2 => FunctionAction::TailExit,
            _ => FunctionAction::EnterArg,
        };
        // A u32 shifted right by 4 always fits 28 bits.
        (action, FunctionId(low >> 4))
    }

    /// Writes the record.
    ///
    /// ```
    /// use flightrec_core::fdr::records::FunctionRecord;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// let mut bytes = [0xAA; 8];
    /// FunctionRecord { action: FunctionAction::EnterArg, id: FunctionId::new(3).unwrap(), delta: 1 }.emit(&mut bytes);
    /// assert_eq!(bytes, [0x36, 0, 0, 0, 1, 0, 0, 0]);
    /// ```
    #[inline(always)]
    pub fn emit(&self, out: &mut [u8; FUNCTION_RECORD_SIZE]) {
        *out = self.to_u64().to_le_bytes();
    }
}
