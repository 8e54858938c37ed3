//! The decoder on damaged input: every prefix of valid files, every single-byte
//! corruption of `crafted-v5.xray`, and random bytes. Nothing may panic, the iterator
//! contract must hold, and damage that must be an error is one, of the right kind.

use std::path::PathBuf;

use flightrec_core::fdr::decoder::{
    decode_record, verify, BlockVerifier, DecodeError, DecodeErrorKind, Decoded, Decoder,
    EventKind, RecordError, RecordType,
};
use flightrec_core::fdr::header::HeaderError;
use flightrec_core::fdr::records::{CustomEventTime, Record, METADATA_RECORD_SIZE};
use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
use proptest::prelude::*;

fn read(name: &str) -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/xray")
            .join(name),
    )
    .unwrap()
}

/// Runs the decoder to the end and checks the iterator contract: offsets increase and
/// lie in the file, at most one error comes and it is last, and nothing follows.
fn decode_all(bytes: &[u8]) -> Result<Vec<Decoded<'_>>, DecodeError> {
    let mut decoder = match Decoder::new(bytes) {
        Ok(d) => d,
        Err(e) => {
            assert_eq!(e.offset, 0, "header errors are at byte 0");
            return Err(e);
        }
    };
    let mut out = Vec::new();
    let mut last = None;
    for item in &mut decoder {
        match item {
            Ok(d) => {
                assert!(d.offset >= 32 && d.offset < bytes.len());
                assert!(last.is_none_or(|l| d.offset > l), "offsets increase");
                last = Some(d.offset);
                out.push(d);
            }
            Err(e) => {
                assert!(e.offset <= bytes.len(), "{e}");
                assert!(decoder.next().is_none() && decoder.next().is_none());
                return Err(e);
            }
        }
    }
    Ok(out)
}

const VALID: [&str; 10] = [
    "crafted-v1.xray",
    "crafted-v1-padded8.xray",
    "crafted-v2.xray",
    "crafted-v3.xray",
    "crafted-v4.xray",
    "crafted-v5.xray",
    "crafted-v5-2threads.xray",
    "crafted-v5-typed.xray",
    "ok-extents-zero-buffer.xray",
    "real-v5-smallbuffers.xray",
];

/// Every prefix of a valid file is judged as a model of LLVM's reader predicts: cut
/// at a record boundary it is valid iff its last block got past its preamble; cut
/// inside a record it is a truncation error at that record (or at its payload), except
/// inside the reserved bytes of a BufferExtents, which LLVM does not need.
#[test]
fn every_prefix_of_valid_files() {
    for name in VALID {
        let bytes = read(name);
        let full = decode_all(&bytes).unwrap();
        for len in 0..=bytes.len() {
            let prefix = &bytes[..len];
            let got = verify(prefix);
            let _ = decode_all(prefix);
            if len < 32 {
                let want = DecodeErrorKind::Header(HeaderError::Truncated { len });
                assert_eq!(
                    got,
                    Err(DecodeError {
                        offset: 0,
                        kind: want
                    }),
                    "{name}[..{len}]"
                );
                continue;
            }
            // The record the cut falls in, if any.
            let cut = full.iter().find(|d| {
                let end = d.offset + d.record.encoded_len();
                d.offset < len && len < end
            });
            let extents_tail = matches!(
                cut,
                Some(Decoded { offset, record: Record::BufferExtents { .. } }) if len >= offset + 9
            );
            match cut {
                Some(d) if !extents_tail => {
                    let err = got.expect_err(&format!("{name}[..{len}] cuts a record"));
                    let payload_start = d.offset + METADATA_RECORD_SIZE;
                    match err.kind {
                        DecodeErrorKind::TruncatedRecord {
                            record, available, ..
                        } => {
                            assert_eq!(err.offset, d.offset, "{name}[..{len}]");
                            assert_eq!(record, RecordType::of(&d.record));
                            assert_eq!(available, len - d.offset);
                        }
                        DecodeErrorKind::TruncatedPayload {
                            size, available, ..
                        } => {
                            assert!(len >= payload_start);
                            assert_eq!(err.offset, payload_start, "{name}[..{len}]");
                            assert_eq!(size, d.record.encoded_len() - METADATA_RECORD_SIZE);
                            assert_eq!(available, len - payload_start);
                        }
                        other => panic!("{name}[..{len}]: unexpected {other:?}"),
                    }
                }
                _ => {
                    let mut v = BlockVerifier::new();
                    for d in full.iter().filter(|d| d.offset < len) {
                        v.feed(&d.record).unwrap();
                    }
                    assert_eq!(got.is_ok(), v.finish().is_ok(), "{name}[..{len}]: {got:?}");
                }
            }
        }
    }
}

/// All 255 other values of every byte of crafted-v5.xray.
#[test]
fn every_single_byte_corruption_of_crafted_v5() {
    let bytes = read("crafted-v5.xray");
    let records = decode_all(&bytes).unwrap();
    let (mut accepted, mut rejected) = (0, 0);
    for i in 0..bytes.len() {
        // The record byte i belongs to, and where in it.
        let owner = records
            .iter()
            .find(|d| d.offset <= i && i < d.offset + d.record.encoded_len());
        for v in 0..=255u8 {
            if v == bytes[i] {
                continue;
            }
            let mut c = bytes.clone();
            c[i] = v;
            let got = verify(&c);
            let _ = decode_all(&c);
            let at = |what: &str| format!("byte {i} = {v:#04x} ({what}): {got:?}");
            match (i, owner) {
                (0 | 1, _) => {
                    let n = u16::from_le_bytes([c[0], c[1]]);
                    let want = match Version::from_number(n) {
                        Some(_) => None,
                        None => Some(DecodeErrorKind::Header(HeaderError::UnsupportedVersion(n))),
                    };
                    if let Some(kind) = want {
                        assert_eq!(
                            got,
                            Err(DecodeError { offset: 0, kind }),
                            "{}",
                            at("version")
                        );
                    }
                }
                (2 | 3, _) => assert_eq!(
                    got,
                    Err(DecodeError {
                        offset: 0,
                        kind: DecodeErrorKind::Header(HeaderError::NotFdr(u16::from_le_bytes([
                            c[2], c[3]
                        ])))
                    }),
                    "{}",
                    at("log type")
                ),
                // Flags, frequency (never all zero with one byte changed) and the
                // free-form bytes are not judged.
                (4..=31, _) => assert!(got.is_ok(), "{}", at("header")),
                (_, Some(d)) if i == d.offset => match d.record {
                    // A function record whose action becomes 4..7.
                    Record::Function { .. } if v & 1 == 0 && (v >> 1) & 7 >= 4 => assert_eq!(
                        got,
                        Err(DecodeError {
                            offset: i,
                            kind: DecodeErrorKind::UnknownFunctionAction((v >> 1) & 7)
                        }),
                        "{}",
                        at("function action")
                    ),
                    // Any record whose first byte becomes metadata kind >= 10, unless it is
                    // the buffer's BufferExtents, which is then skipped as junk.
                    Record::Function { .. } | Record::Pid { .. } | Record::TscWrap { .. }
                        if v & 1 == 1 && v >> 1 >= 10 =>
                    {
                        assert_eq!(
                            got,
                            Err(DecodeError {
                                offset: i,
                                kind: DecodeErrorKind::UnknownMetadataKind(v >> 1)
                            }),
                            "{}",
                            at("metadata kind")
                        )
                    }
                    Record::BufferExtents { .. } => {
                        assert_eq!(
                            got.map_err(|e| e.kind),
                            Err(DecodeErrorKind::MissingBufferExtents),
                            "{}",
                            at("extents tag")
                        );
                    }
                    _ => {}
                },
                (_, Some(d)) => {
                    let within = i - d.offset;
                    match d.record {
                        // TSC deltas, call arguments, TSCs and payload bytes are data.
                        Record::Function { .. } if within >= 4 => {
                            assert!(got.is_ok(), "{}", at("delta"))
                        }
                        Record::CallArgument { .. } | Record::TscWrap { .. } if within >= 1 => {
                            assert!(got.is_ok(), "{}", at("u64 field or reserved"))
                        }
                        Record::CustomEvent { .. } if within >= METADATA_RECORD_SIZE => {
                            assert!(got.is_ok(), "{}", at("payload"))
                        }
                        // The custom event's size: 0 or negative is an error at +5.
                        Record::CustomEvent { .. } if within == 4 && v >= 0x80 => assert_eq!(
                            got,
                            Err(DecodeError {
                                offset: d.offset + 5,
                                kind: DecodeErrorKind::BadEventSize {
                                    event: EventKind::Custom,
                                    size: i32::from_le_bytes([5, 0, 0, v])
                                }
                            }),
                            "{}",
                            at("size sign")
                        ),
                        // Growing the extents lets the buffer run past the end of the file,
                        // which is fine; shrinking it cuts the last record.
                        Record::BufferExtents { size } if within == 1 => {
                            assert_eq!(got.is_ok(), u64::from(v) >= size, "{}", at("extents"))
                        }
                        _ => {}
                    }
                }
                _ => unreachable!("every byte belongs to the header or a record"),
            }
            if got.is_ok() {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
    }
    // Both verdicts are common, so the test exercised both paths.
    assert!(
        accepted > 50_000 && rejected > 5_000,
        "{accepted} accepted, {rejected} rejected"
    );
}

fn any_version() -> impl Strategy<Value = Version> {
    (1u16..=5).prop_map(|n| Version::from_number(n).unwrap())
}

fn any_record(version: Version) -> impl Strategy<Value = Record<'static>> {
    // Payloads borrow; a leaked pool of byte strings keeps them 'static.
    static PAYLOADS: [&[u8]; 4] = [b"x", b"hello", b"\x0f\x0f\x0f", &[0u8; 40]];
    let payload = (0usize..4).prop_map(|i| PAYLOADS[i]);
    let id = (0u32..=FunctionId::MAX).prop_map(|n| FunctionId::new(n).unwrap());
    let action = (0u8..4).prop_map(|b| FunctionAction::from_bits(b).unwrap());
    let custom_time = if version.events_use_delta() {
        any::<i32>().prop_map(CustomEventTime::Delta).boxed()
    } else {
        // Versions 1 to 3 always write the CPU as 0.
        let max_cpu = if version == Version::V4 { u16::MAX } else { 0 };
        (any::<u64>(), 0..=max_cpu)
            .prop_map(|(tsc, cpu)| CustomEventTime::Absolute { tsc, cpu })
            .boxed()
    };
    prop_oneof![
        (action, id, any::<u32>()).prop_map(|(action, id, delta)| Record::Function {
            action,
            id,
            delta
        }),
        any::<i32>().prop_map(|tid| Record::NewBuffer { tid }),
        (any::<u16>(), any::<u64>()).prop_map(|(cpu, tsc)| Record::NewCpuId { cpu, tsc }),
        any::<u64>().prop_map(|tsc| Record::TscWrap { tsc }),
        (any::<i64>(), any::<u32>())
            .prop_map(|(seconds, micros)| Record::Walltime { seconds, micros }),
        (custom_time, payload.clone())
            .prop_map(|(time, payload)| Record::CustomEvent { time, payload }),
        any::<u64>().prop_map(|value| Record::CallArgument { value }),
        any::<u64>().prop_map(|size| Record::BufferExtents { size }),
        (any::<i32>(), any::<u16>(), payload).prop_map(|(delta, event_type, payload)| {
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            }
        }),
        any::<i32>().prop_map(|pid| Record::Pid { pid }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// decode_record never panics, never claims more bytes than it has, and asks for
    /// more than it has when it asks.
    #[test]
    fn decode_record_on_arbitrary_bytes(version in any_version(), bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        match decode_record(version, &bytes) {
            Ok((record, len)) => {
                prop_assert!(len <= bytes.len());
                prop_assert_eq!(len, record.encoded_len());
            }
            Err(RecordError::Incomplete { needed }) => prop_assert!(needed > bytes.len()),
            Err(_) => {}
        }
    }

    /// Every record the writer can encode decodes back to itself, and every proper
    /// prefix of it is Incomplete with a need between the prefix and the record length.
    #[test]
    fn encode_then_decode_round_trips(
        (version, record) in any_version().prop_flat_map(|v| (Just(v), any_record(v)))
    ) {
        prop_assume!(!(matches!(record, Record::EndOfBuffer) && version != Version::V1));
        let mut buf = [0u8; 64];
        let n = record.encode(version, &mut buf).unwrap();
        prop_assert_eq!(decode_record(version, &buf[..n]), Ok((record, n)));
        for cut in 0..n {
            match decode_record(version, &buf[..cut]) {
                Err(RecordError::Incomplete { needed }) => prop_assert!(cut < needed && needed <= n),
                other => prop_assert!(false, "prefix {} of {}: {:?}", cut, n, other),
            }
        }
    }

    /// Random bytes after a valid header, and random damage to valid files: no panic,
    /// and the iterator contract holds.
    #[test]
    fn random_bodies_and_damage(
        version in 1u8..=5,
        body in proptest::collection::vec(prop_oneof![Just(0x0fu8), Just(0u8), any::<u8>()], 0..300),
        file in 0usize..VALID.len(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = read("crafted-v5.xray")[..32].to_vec();
        bytes[0] = version;
        bytes.extend_from_slice(&body);
        let _ = verify(&bytes);
        let _ = decode_all(&bytes);

        let mut damaged = read(VALID[file]);
        for (at, v) in edits {
            let i = at.index(damaged.len());
            damaged[i] = v;
        }
        let _ = verify(&damaged);
        let _ = decode_all(&damaged);
    }
}
