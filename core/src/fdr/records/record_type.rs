//! Record types named as `llvm-xray` names them in its messages.

use super::{MetadataKind, Record};

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
