//! The sample files of `testdata/xray/` (checked against `llvm-xray` 14): each is
//! accepted or rejected as its name says, rejected ones fail for the reason and at the
//! offset `llvm-xray` reports, and the crafted scenario decodes record for record.

use std::path::PathBuf;

use flightrec_core::fdr::decoder::{
    verify, BlockState, DecodeError, DecodeErrorKind, Decoder, EventKind, RecordType, Verifier,
    VerifyError,
};
use flightrec_core::fdr::header::HeaderError;
use flightrec_core::fdr::records::{CustomEventTime, MetadataKind, Record};
use flightrec_core::fdr::{FunctionAction, FunctionId, Version};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/xray")
}

/// Every `.xray` file of the data directory, sorted by name.
fn vectors() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(data_dir())
        .expect("testdata/xray exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xray"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(name)).unwrap()
}

/// The verdict a file's name announces: `bad-*` is rejected, except `bad-account-*`,
/// which only `llvm-xray account` rejects.
fn expected_ok(name: &str) -> bool {
    !name.starts_with("bad-") || name.starts_with("bad-account-")
}

fn transition(from: BlockState, to: BlockState) -> DecodeErrorKind {
    DecodeErrorKind::Grammar(VerifyError::InvalidTransition { from, to })
}

/// The verify iterator yields, on every vector, the decoder's records up to the
/// verdict's error (none after it), the decoder's offsets, and counts that are
/// `verify`'s summary.
#[test]
fn the_verifier_yields_the_decoder_s_records_up_to_the_verdict() {
    for (name, bytes) in vectors() {
        let verdict = verify(&bytes);
        let Ok(mut verifier) = Verifier::new(&bytes) else {
            assert!(verdict.is_err(), "{name}");
            continue;
        };
        let mut decoder = Decoder::new(&bytes).unwrap();
        let mut error = None;
        while let Some(item) = verifier.next() {
            match item {
                Ok(decoded) => {
                    assert_eq!(Some(Ok(decoded)), decoder.next(), "{name}");
                    assert_eq!(verifier.offset(), decoder.offset(), "{name}");
                }
                Err(e) => error = Some(e),
            }
        }
        assert_eq!(verifier.next(), None, "{name}: nothing after the end");
        match (error, verifier.finish()) {
            (Some(e), _) => assert_eq!(verdict, Err(e), "{name}"),
            (None, Ok((summary, None))) => assert_eq!(verdict, Ok(summary), "{name}"),
            (None, Ok((_, Some(cut)))) | (None, Err(cut)) => {
                assert_eq!(verdict, Err(cut), "{name}")
            }
        }
    }
}

#[test]
fn every_vector_gets_the_verdict_its_name_says() {
    let all = vectors();
    assert!(all.len() >= 45, "only {} vectors found", all.len());
    let mut failures = Vec::new();
    for (name, bytes) in &all {
        let got = verify(bytes);
        if got.is_ok() != expected_ok(name) {
            failures.push(format!("{name}: {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "wrong verdicts:\n{}",
        failures.join("\n")
    );
}

/// The reason and offset of each rejection; offsets are those in `llvm-xray`'s
/// messages where it gives one (spec §5.3).
#[test]
fn rejected_vectors_fail_for_the_right_reason_at_the_right_offset() {
    use BlockState as S;
    let len = |name: &str| read(name).len();
    let cases: Vec<(&str, usize, DecodeErrorKind)> = vec![
        // "Invalid metadata record type: 10 ... at offset 112."
        (
            "bad-metadata-kind10.xray",
            112,
            DecodeErrorKind::UnknownMetadataKind(10),
        ),
        // "Unknown function record type '5' at offset 112."
        (
            "bad-fn-action5.xray",
            112,
            DecodeErrorKind::UnknownFunctionAction(5),
        ),
        // "Invalid size for custom event (size = 0) at offset 117."
        (
            "bad-custom-size0.xray",
            117,
            DecodeErrorKind::BadEventSize {
                event: EventKind::Custom,
                size: 0,
            },
        ),
        // "Cannot read 100 bytes of custom event data from offset 128."
        (
            "bad-custom-truncated.xray",
            128,
            DecodeErrorKind::TruncatedPayload {
                event: EventKind::Custom,
                size: 100,
                available: 3,
            },
        ),
        // "Buffer over-read at offset 96 (over-read by 8 bytes); Record Type = Metadata:PIDEntry."
        (
            "bad-extents-too-small.xray",
            96,
            DecodeErrorKind::BufferOverRead {
                record: RecordType::Metadata(MetadataKind::Pid),
                by: 8,
            },
        ),
        // "End of buffer records are no longer supported ... at offset 277."
        (
            "bad-eob-in-v5.xray",
            277,
            DecodeErrorKind::EndOfBufferNotSupported(Version::V5),
        ),
        // "Failed reading one byte from offset <file length>."
        (
            "bad-no-extents-v5.xray",
            261,
            DecodeErrorKind::MissingBufferExtents,
        ),
        (
            "bad-trailing-zeros-v5.xray",
            len("bad-trailing-zeros-v5.xray"),
            DecodeErrorKind::MissingBufferExtents,
        ),
        // "Invalid offset for a function record (104)." / "(4125)."
        (
            "bad-v1-no-padding-partial.xray",
            104,
            DecodeErrorKind::TruncatedRecord {
                record: RecordType::Function,
                needed: 8,
                available: 5,
            },
        ),
        (
            "bad-v1-padding-not-multiple-of-8.xray",
            4125,
            DecodeErrorKind::TruncatedRecord {
                record: RecordType::Function,
                needed: 8,
                available: 3,
            },
        ),
        // BlockVerifier transitions (llvm-xray gives no offset; ours is the record's).
        (
            "bad-no-walltime.xray",
            64,
            transition(S::NewBuffer, S::PidEntry),
        ),
        (
            "bad-pid-in-v2-order.xray",
            64,
            transition(S::NewBuffer, S::PidEntry),
        ),
        (
            "bad-fn-before-cpu.xray",
            96,
            transition(S::PidEntry, S::Function),
        ),
        (
            "bad-custom-before-cpu.xray",
            96,
            transition(S::PidEntry, S::CustomEvent),
        ),
        (
            "bad-tscwrap-before-cpu.xray",
            96,
            transition(S::PidEntry, S::TscWrap),
        ),
        (
            "bad-pid-after-cpu.xray",
            96,
            transition(S::NewCpuId, S::PidEntry),
        ),
        // Only `convert` rejects these (no message of its own; offset: the block's start).
        (
            "bad-ends-in-preamble.xray",
            48,
            DecodeErrorKind::Grammar(VerifyError::InvalidTerminal { state: S::PidEntry }),
        ),
        (
            "bad-header-only.xray",
            32,
            DecodeErrorKind::Grammar(VerifyError::NoBuffers),
        ),
        (
            "bad-truncated-header.xray",
            0,
            DecodeErrorKind::Header(HeaderError::Truncated { len: 20 }),
        ),
        (
            "bad-version6.xray",
            0,
            DecodeErrorKind::Header(HeaderError::UnsupportedVersion(6)),
        ),
    ];
    let mut failures = Vec::new();
    for (name, offset, kind) in &cases {
        let got = verify(&read(name));
        let want = Err(DecodeError {
            offset: *offset,
            kind: *kind,
        });
        if got != want {
            failures.push(format!("{name}:\n   got {got:?}\n  want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Every rejected vector on disk is in the table, so a new one gets a reason too.
    for (name, _) in vectors() {
        if !expected_ok(&name) {
            assert!(
                cases.iter().any(|(n, _, _)| *n == name),
                "{name} has no expected error in this test"
            );
        }
    }
}

#[test]
fn error_messages_name_offset_and_reason() {
    let msg = |name: &str| verify(&read(name)).unwrap_err().to_string();
    assert_eq!(
        msg("bad-metadata-kind10.xray"),
        "at byte 112: unknown metadata record kind 10"
    );
    assert_eq!(
        msg("bad-fn-action5.xray"),
        "at byte 112: unknown function record action 5"
    );
    assert_eq!(
        msg("bad-custom-size0.xray"),
        "at byte 117: invalid custom event size 0 (must be > 0)"
    );
    assert_eq!(
        msg("bad-extents-too-small.xray"),
        "at byte 96: Metadata:PIDEntry record ends 8 bytes past the end of its buffer (BufferExtents too small)"
    );
    assert_eq!(
        msg("bad-fn-before-cpu.xray"),
        "at byte 96: invalid transition from PIDEntry to Function"
    );
    assert_eq!(
        msg("bad-version6.xray"),
        "at byte 0: unsupported FDR version 6 (1 to 5 are supported)"
    );
    // core::error::Error is implemented.
    let e: Box<dyn std::error::Error> =
        Box::new(verify(&read("bad-header-only.xray")).unwrap_err());
    assert_eq!(e.to_string(), "at byte 32: no buffer in the log");
}

fn enter(id: u32, delta: u32) -> Record<'static> {
    func(FunctionAction::Enter, id, delta)
}
fn exit(id: u32, delta: u32) -> Record<'static> {
    func(FunctionAction::Exit, id, delta)
}
fn func(action: FunctionAction, id: u32, delta: u32) -> Record<'static> {
    Record::Function {
        action,
        id: FunctionId::new(id).unwrap(),
        delta,
    }
}

/// The scenario all `crafted-v*.xray` share, after the preamble (spec §5.1), with the
/// custom event's time as the version writes it. Before version 5 a custom event
/// carries an absolute TSC and does not move the base TSC, so the next delta is
/// 100 ticks larger.
fn crafted_body(custom: CustomEventTime) -> Vec<Record<'static>> {
    let after_custom = match custom {
        CustomEventTime::Delta(_) => 400,
        CustomEventTime::Absolute { .. } => 500,
    };
    vec![
        Record::NewCpuId {
            cpu: 0,
            tsc: 1_000_000,
        },
        enter(1, 0),
        enter(2, 1000),
        func(FunctionAction::EnterArg, 3, 500),
        Record::CallArgument { value: 42 },
        Record::CallArgument { value: 0xdead_beef },
        exit(3, 1000),
        Record::CustomEvent {
            time: custom,
            payload: b"hello",
        },
        enter(3, after_custom),
        Record::TscWrap { tsc: 5_001_003_000 },
        exit(3, 0),
        func(FunctionAction::TailExit, 2, 100),
        enter(4, 50),
        Record::NewCpuId {
            cpu: 3,
            tsc: 5_001_003_400,
        },
        exit(4, 0),
        exit(1, 500),
    ]
}

#[test]
fn crafted_v5_decodes_to_the_fdr_dump_listing() {
    let bytes = read("crafted-v5.xray");
    let decoder = Decoder::new(&bytes).unwrap();
    assert_eq!(decoder.header().version, Version::V5);
    assert_eq!(decoder.header().cycle_frequency.get(), 1_000_000_000);
    let decoded: Vec<_> = decoder.collect::<Result<_, _>>().unwrap();

    // `llvm-xray fdr-dump crafted-v5.xray`, line for line.
    let mut want = vec![
        Record::BufferExtents { size: 229 },
        Record::NewBuffer { tid: 101 },
        Record::Walltime {
            seconds: 1_700_000_000,
            micros: 123_456,
        },
        Record::Pid { pid: 4242 },
    ];
    want.extend(crafted_body(CustomEventTime::Delta(100)));
    let got: Vec<_> = decoded.iter().map(|d| d.record).collect();
    assert_eq!(got, want);

    // Offsets: back to back after the header, each record its own length.
    let mut at = 32;
    for d in &decoded {
        assert_eq!(d.offset, at);
        at += d.record.encoded_len();
    }
    assert_eq!(at, bytes.len());
    // The buffer holds exactly what its extents say.
    assert_eq!(bytes.len() - 32 - 16, 229);

    let s = verify(&bytes).unwrap();
    assert_eq!(s.header.version, Version::V5);
    assert_eq!(
        (s.buffers, s.extents, s.function_records, s.metadata_records),
        (1, 1, 10, 10)
    );
    assert_eq!(
        (
            s.custom_events,
            s.typed_events,
            s.call_arguments,
            s.skipped_bytes
        ),
        (1, 0, 2, 0)
    );
}

#[test]
fn crafted_v1_to_v4_decode_to_the_same_scenario() {
    for v in 1..=4u16 {
        let bytes = read(&format!("crafted-v{v}.xray"));
        let got: Vec<_> = Decoder::new(&bytes)
            .unwrap()
            .map(|d| d.unwrap().record)
            .filter(|r| !matches!(r, Record::BufferExtents { .. }))
            .collect();
        let version = Version::from_number(v).unwrap();
        let mut want = vec![
            Record::NewBuffer { tid: 101 },
            Record::Walltime {
                seconds: 1_700_000_000,
                micros: 123_456,
            },
        ];
        if v >= 3 {
            want.push(Record::Pid { pid: 4242 });
        }
        // fdr-dump: "<Custom Event: tsc = 1002600, cpu = 0, size = 5, data = 'hello'>"
        want.extend(crafted_body(CustomEventTime::Absolute {
            tsc: 1_002_600,
            cpu: 0,
        }));
        if version == Version::V1 {
            want.push(Record::EndOfBuffer);
        }
        assert_eq!(got, want, "crafted-v{v}.xray");
        assert!(verify(&bytes).is_ok());
    }
}

#[test]
fn summaries_of_other_valid_vectors() {
    let s = verify(&read("crafted-v5-2threads.xray")).unwrap();
    assert_eq!((s.buffers, s.extents), (3, 3));
    let s = verify(&read("crafted-v5-typed.xray")).unwrap();
    assert_eq!((s.typed_events, s.custom_events), (1, 1));
    let s = verify(&read("ok-extents-zero-buffer.xray")).unwrap();
    assert_eq!(s.extents, s.buffers + 1, "one extents record with no block");
    let s = verify(&read("crafted-v1-padded8.xray")).unwrap();
    // 64 bytes of zero padding after EndOfBuffer read as 8 "Enter #0" records.
    let plain = verify(&read("crafted-v1.xray")).unwrap();
    assert_eq!(s.function_records, plain.function_records + 8);
    for name in [
        "real-v5-default.xray",
        "real-v5-smallbuffers.xray",
        "real-v5-threshold0.xray",
        "real-v5-typed.xray",
    ] {
        let s = verify(&read(name)).unwrap();
        assert_eq!(s.header.version, Version::V5, "{name}");
        assert!(s.buffers >= 1 && s.function_records >= 1, "{name}: {s:?}");
    }
}
