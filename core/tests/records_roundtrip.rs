//! Every FDR record kind, both ways: `emit(parse(bytes)) == bytes` for every valid
//! encoding, and `parse(emit(record)) == record` for every record.
//!
//! Valid encodings are built here from the layouts in `docs/spec/xray-fdr.md` (section
//! 2), written out again below rather than taken from the code under test: the tag in
//! byte 0, any bytes in the fields, zero in every other byte. So these tests also check
//! that each kind's fields sit where the spec puts them.

use flightrec_core::fdr::decoder::RecordError;
use flightrec_core::fdr::records::{
    BufferExtents, CallArgument, CustomEventMarker, CustomEventTime, EndOfBuffer, FunctionRecord,
    MetadataKind, MetadataRecord, NewBuffer, NewCpuId, Pid, Record, TscWrap, TypedEventMarker,
    WalltimeMarker, FUNCTION_RECORD_SIZE, METADATA_RECORD_SIZE,
};
use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
use proptest::prelude::*;

const VERSIONS: [Version; 5] = [
    Version::V1,
    Version::V2,
    Version::V3,
    Version::V4,
    Version::V5,
];

/// Byte 0 and the field bytes (start, length) of each metadata kind, from the spec;
/// for the custom event marker, as `version` lays it out.
fn layout(kind: MetadataKind, version: Version) -> (u8, &'static [(usize, usize)]) {
    let fields: &'static [(usize, usize)] = match kind {
        MetadataKind::NewBuffer => &[(1, 4)],
        MetadataKind::EndOfBuffer => &[],
        MetadataKind::NewCpuId => &[(1, 2), (3, 8)],
        MetadataKind::TscWrap => &[(1, 8)],
        MetadataKind::WalltimeMarker => &[(1, 8), (9, 4)],
        MetadataKind::CustomEventMarker => match version {
            Version::V1 | Version::V2 | Version::V3 => &[(1, 4), (5, 8)],
            Version::V4 => &[(1, 4), (5, 8), (13, 2)],
            Version::V5 => &[(1, 4), (5, 4)],
        },
        MetadataKind::CallArgument => &[(1, 8)],
        MetadataKind::BufferExtents => &[(1, 8)],
        MetadataKind::TypedEventMarker => &[(1, 4), (5, 4), (9, 2)],
        MetadataKind::Pid => &[(1, 4)],
    };
    let tag = match kind {
        MetadataKind::NewBuffer => 0x01,
        MetadataKind::EndOfBuffer => 0x03,
        MetadataKind::NewCpuId => 0x05,
        MetadataKind::TscWrap => 0x07,
        MetadataKind::WalltimeMarker => 0x09,
        MetadataKind::CustomEventMarker => 0x0b,
        MetadataKind::CallArgument => 0x0d,
        MetadataKind::BufferExtents => 0x0f,
        MetadataKind::TypedEventMarker => 0x11,
        MetadataKind::Pid => 0x13,
    };
    (tag, fields)
}

/// A valid encoding of `kind`: the tag, `noise` in the fields, zero elsewhere.
fn valid_metadata(
    kind: MetadataKind,
    version: Version,
    noise: [u8; METADATA_RECORD_SIZE],
) -> [u8; METADATA_RECORD_SIZE] {
    let (tag, fields) = layout(kind, version);
    let mut bytes = [0u8; METADATA_RECORD_SIZE];
    bytes[0] = tag;
    for &(start, len) in fields {
        bytes[start..start + len].copy_from_slice(&noise[start..start + len]);
    }
    bytes
}

fn kinds() -> impl Strategy<Value = MetadataKind> {
    (0u8..10).prop_map(|n| MetadataKind::from_number(n).unwrap())
}

fn versions() -> impl Strategy<Value = Version> {
    prop::sample::select(&VERSIONS[..])
}

fn actions() -> impl Strategy<Value = FunctionAction> {
    (0u8..4).prop_map(|n| FunctionAction::from_bits(n).unwrap())
}

fn function_ids() -> impl Strategy<Value = FunctionId> {
    (0..=FunctionId::MAX).prop_map(|id| FunctionId::new(id).unwrap())
}

/// `emit(parse(bytes))` for a fixed-layout kind, checking on the way that `parse`
/// ignores byte 0 and `KIND` is the kind asked for.
fn reemit<T: MetadataRecord>(
    kind: MetadataKind,
    bytes: &[u8; METADATA_RECORD_SIZE],
) -> [u8; METADATA_RECORD_SIZE] {
    assert_eq!(T::KIND, kind);
    let mut out = [0xAA; METADATA_RECORD_SIZE];
    T::parse(bytes).emit(&mut out);
    out
}

/// `parse(emit(record))`, checking on the way that `emit` writes the kind's tag and
/// zero outside its fields (whatever was in `out` before).
fn reparse<T: MetadataRecord + Copy + PartialEq + core::fmt::Debug>(record: T) {
    let mut out = [0xAA; METADATA_RECORD_SIZE];
    record.emit(&mut out);
    assert_eq!(valid_metadata(T::KIND, Version::V5, out), out);
    assert_eq!(T::parse(&out), record);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn function_record_bytes_survive_parse_and_emit(
        action in actions(),
        id in 0..=FunctionId::MAX,
        delta: u32,
    ) {
        // Spec 2.1: bit 0 clear, action in bits 1 to 3, id in bits 4 to 31, delta.
        let word = (id << 4) | ((action as u32) << 1);
        let mut bytes = [0u8; FUNCTION_RECORD_SIZE];
        bytes[..4].copy_from_slice(&word.to_le_bytes());
        bytes[4..].copy_from_slice(&delta.to_le_bytes());
        let record = FunctionRecord::parse(&bytes).unwrap();
        prop_assert_eq!((record.action, record.id.get(), record.delta), (action, id, delta));
        let mut out = [0xAA; FUNCTION_RECORD_SIZE];
        record.emit(&mut out);
        prop_assert_eq!(out, bytes);
        prop_assert_eq!(record.to_u64().to_le_bytes(), bytes);
    }

    #[test]
    fn function_records_survive_emit_and_parse(
        action in actions(),
        id in function_ids(),
        delta: u32,
    ) {
        let record = FunctionRecord { action, id, delta };
        let mut out = [0u8; FUNCTION_RECORD_SIZE];
        record.emit(&mut out);
        prop_assert_eq!(out[0] & 1, 0, "bit 0 marks a function record");
        prop_assert_eq!(FunctionRecord::parse(&out), Ok(record));
    }

    #[test]
    fn function_records_with_undefined_actions_are_errors(bits in 4u8..8, rest: [u8; 7]) {
        let mut bytes = [0u8; FUNCTION_RECORD_SIZE];
        bytes[0] = bits << 1;
        bytes[1..].copy_from_slice(&rest);
        prop_assert_eq!(
            FunctionRecord::parse(&bytes),
            Err(RecordError::UnknownFunctionAction(bits))
        );
    }

    #[test]
    fn metadata_bytes_survive_parse_and_emit(
        kind in kinds(),
        version in versions(),
        noise: [u8; METADATA_RECORD_SIZE],
    ) {
        let bytes = valid_metadata(kind, version, noise);
        let again = match kind {
            MetadataKind::NewBuffer => reemit::<NewBuffer>(kind, &bytes),
            MetadataKind::EndOfBuffer => reemit::<EndOfBuffer>(kind, &bytes),
            MetadataKind::NewCpuId => reemit::<NewCpuId>(kind, &bytes),
            MetadataKind::TscWrap => reemit::<TscWrap>(kind, &bytes),
            MetadataKind::WalltimeMarker => reemit::<WalltimeMarker>(kind, &bytes),
            MetadataKind::CallArgument => reemit::<CallArgument>(kind, &bytes),
            MetadataKind::BufferExtents => reemit::<BufferExtents>(kind, &bytes),
            MetadataKind::TypedEventMarker => reemit::<TypedEventMarker>(kind, &bytes),
            MetadataKind::Pid => reemit::<Pid>(kind, &bytes),
            MetadataKind::CustomEventMarker => {
                prop_assert_eq!(CustomEventMarker::KIND, kind);
                let mut out = [0xAA; METADATA_RECORD_SIZE];
                CustomEventMarker::parse(version, &bytes).emit(version, &mut out);
                out
            }
        };
        prop_assert_eq!(again, bytes);
    }

    #[test]
    fn metadata_records_survive_emit_and_parse(
        (tid, cpu, tsc, seconds, micros) in any::<(i32, u16, u64, i64, u32)>(),
        (value, size, delta, event_type, pid) in any::<(u64, i32, i32, u16, i32)>(),
    ) {
        reparse(NewBuffer { tid });
        reparse(EndOfBuffer);
        reparse(NewCpuId { cpu, tsc });
        reparse(TscWrap { tsc });
        reparse(WalltimeMarker { seconds, micros });
        reparse(CallArgument { value });
        reparse(BufferExtents { size: value });
        reparse(TypedEventMarker { size, delta, event_type });
        reparse(Pid { pid });
    }

    #[test]
    fn custom_event_markers_survive_emit_and_parse(
        version in versions(),
        (size, tsc, cpu, delta) in any::<(i32, u64, u16, i32)>(),
    ) {
        // The form the version has; versions 1 to 3 have no CPU id, which stays 0.
        let time = match version {
            Version::V5 => CustomEventTime::Delta(delta),
            Version::V4 => CustomEventTime::Absolute { tsc, cpu },
            _ => CustomEventTime::Absolute { tsc, cpu: 0 },
        };
        let marker = CustomEventMarker { size, time };
        let mut out = [0xAA; METADATA_RECORD_SIZE];
        marker.emit(version, &mut out);
        prop_assert_eq!(valid_metadata(MetadataKind::CustomEventMarker, version, out), out);
        prop_assert_eq!(CustomEventMarker::parse(version, &out), marker);

        // A CPU id given for versions 1 to 3 is not written: it reads back as 0.
        if version < Version::V4 {
            CustomEventMarker { size, time: CustomEventTime::Absolute { tsc, cpu } }
                .emit(version, &mut out);
            prop_assert_eq!(CustomEventMarker::parse(version, &out), marker);
        }
    }

    /// The same both ways through `Record`, which adds event payloads and the
    /// version's rules (no EndOfBuffer after version 1, positive event sizes).
    #[test]
    fn records_with_payloads_survive_parse_and_encode(
        kind in kinds(),
        version in versions(),
        noise: [u8; METADATA_RECORD_SIZE],
        payload in prop::collection::vec(any::<u8>(), 1..40),
    ) {
        prop_assume!(kind != MetadataKind::EndOfBuffer || version == Version::V1);
        let mut bytes = valid_metadata(kind, version, noise).to_vec();
        if matches!(kind, MetadataKind::CustomEventMarker | MetadataKind::TypedEventMarker) {
            bytes[1..5].copy_from_slice(&(payload.len() as i32).to_le_bytes());
            bytes.extend_from_slice(&payload);
        }
        let (record, len) = Record::parse(version, &bytes).unwrap();
        prop_assert_eq!(len, bytes.len());
        let mut out = vec![0xAA; bytes.len()];
        prop_assert_eq!(record.encode(version, &mut out), Ok(bytes.len()));
        prop_assert_eq!(&out, &bytes);
        prop_assert_eq!(Record::parse(version, &out), Ok((record, len)));
    }
}
