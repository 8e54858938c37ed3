//! Cross-checks the decoder against the real judge, `llvm-xray` 14: for every sample
//! file, for every prefix of a few valid files and for many single-byte corruptions of
//! `crafted-v5.xray`, `verify` must accept exactly when `llvm-xray fdr-dump --verify`
//! and `llvm-xray convert --output-format=yaml` both succeed.
//!
//! Without `llvm-xray` (looked up as `$LLVM_XRAY`, else `/usr/bin/llvm-xray`) the tests
//! print a message and pass, unless `CI=true`, where they fail.
//!
//! They spawn about 2 500 `llvm-xray` processes (1.5 minutes on two cores).
//! `FDR_LLVM_FULL=1` widens the corruption sweep, `FDR_FUZZ_CASES` / `FDR_FUZZ_SEED`
//! tune the random-file test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::llvm_xray;
use flightrec_core::fdr::decoder::verify;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/xray")
}

/// Whether `llvm-xray` loads the file: both the record dump with block verification
/// and the full loader must succeed (each checks things the other does not).
fn llvm_accepts(tool: &Path, file: &Path) -> bool {
    let run = |args: &[&str]| {
        Command::new(tool)
            .args(args)
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("llvm-xray runs")
            .success()
    };
    run(&["fdr-dump", "--verify"]) && run(&["convert", "--output-format=yaml"])
}

/// A scratch directory for this test process.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flightrec-llvm-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Judges every (label, bytes) case with `llvm-xray` on a few threads, and returns
/// the cases where our verdict differs.
fn disagreements(tool: &Path, test: &str, cases: Vec<(String, Vec<u8>)>) -> Vec<String> {
    let dir = scratch(test);
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    let chunk = cases.len().div_ceil(threads).max(1);
    let out: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(chunk)
            .enumerate()
            .map(|(t, part)| {
                let dir = &dir;
                s.spawn(move || {
                    let file = dir.join(format!("case-{t}.xray"));
                    let mut bad = Vec::new();
                    for (label, bytes) in part {
                        std::fs::write(&file, bytes).unwrap();
                        let theirs = llvm_accepts(tool, &file);
                        let ours = verify(bytes);
                        if ours.is_ok() != theirs {
                            bad.push(format!(
                                "{label}: llvm-xray accepts={theirs}, ours={ours:?}"
                            ));
                        }
                    }
                    bad
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn vector_files() -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xray"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_vector_matches_llvm_xray() {
    let Some(tool) = llvm_xray() else { return };
    let files = vector_files();
    assert!(!files.is_empty());
    let mut bad = Vec::new();
    for file in &files {
        let theirs = llvm_accepts(&tool, file);
        let ours = verify(&std::fs::read(file).unwrap());
        if ours.is_ok() != theirs {
            bad.push(format!(
                "{}: llvm-xray accepts={theirs}, ours={ours:?}",
                file.display()
            ));
        }
    }
    assert!(bad.is_empty(), "verdicts differ:\n{}", bad.join("\n"));
}

#[test]
fn every_prefix_of_valid_files_matches_llvm_xray() {
    let Some(tool) = llvm_xray() else { return };
    let mut cases = Vec::new();
    for name in [
        "crafted-v1-padded8.xray",
        "crafted-v2.xray",
        "crafted-v5.xray",
        "crafted-v5-typed.xray",
    ] {
        let bytes = std::fs::read(data_dir().join(name)).unwrap();
        for len in 0..=bytes.len() {
            cases.push((format!("{name}[..{len}]"), bytes[..len].to_vec()));
        }
    }
    let n = cases.len();
    let bad = disagreements(&tool, "prefix", cases);
    assert!(
        bad.is_empty(),
        "{} of {n} prefixes differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn single_byte_corruptions_of_crafted_v5_match_llvm_xray() {
    let Some(tool) = llvm_xray() else { return };
    let bytes = std::fs::read(data_dir().join("crafted-v5.xray")).unwrap();
    let mut cases = Vec::new();
    for i in 0..bytes.len() {
        let b = bytes[i];
        // Values that change a record's type or size the most: the BufferExtents
        // introducer and a flipped low (metadata) and high (sign) bit; with
        // FDR_LLVM_FULL=1 also zero, all ones and a flipped action bit (slower).
        let mut values = vec![0x0f, b ^ 0x01, b ^ 0x80];
        if std::env::var("FDR_LLVM_FULL").is_ok_and(|v| v == "1") {
            values.extend([0x00, 0xff, b ^ 0x10]);
        }
        values.sort_unstable();
        values.dedup();
        for v in values.into_iter().filter(|&v| v != b) {
            let mut c = bytes.clone();
            c[i] = v;
            cases.push((format!("byte {i} = {v:#04x}"), c));
        }
    }
    let n = cases.len();
    let bad = disagreements(&tool, "corrupt", cases);
    assert!(
        bad.is_empty(),
        "{} of {n} corruptions differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

mod quirks {
    //! Hand-made files for the corners of LLVM's reader. Our verdict and error are
    //! asserted here whether or not `llvm-xray` is installed; when it is, its verdict
    //! must agree (except for the one documented deviation, a zero cycle frequency).

    use super::*;
    use flightrec_core::fdr::decoder::{
        BlockState, DecodeError, DecodeErrorKind, EventKind, RecordType, VerifyError,
    };
    use flightrec_core::fdr::header::HeaderError;
    use flightrec_core::fdr::records::{CustomEventTime, MetadataKind, Record};
    use flightrec_core::fdr::{FunctionAction, FunctionId, Version};

    fn crafted(version: u16) -> Vec<u8> {
        std::fs::read(data_dir().join(format!("crafted-v{version}.xray"))).unwrap()
    }

    fn enc(version: u16, records: &[Record<'_>]) -> Vec<u8> {
        let v = Version::from_number(version).unwrap();
        let mut out = Vec::new();
        for r in records {
            let mut buf = [0u8; 64];
            let n = r.encode(v, &mut buf).unwrap();
            out.extend_from_slice(&buf[..n]);
        }
        out
    }

    fn extents(size: u64) -> Vec<u8> {
        enc(5, &[Record::BufferExtents { size }])
    }

    fn enter() -> Record<'static> {
        Record::Function {
            action: FunctionAction::Enter,
            id: FunctionId::new(1).unwrap(),
            delta: 0,
        }
    }

    type Want = Result<(), DecodeError>;

    fn err(offset: usize, kind: DecodeErrorKind) -> Want {
        Err(DecodeError { offset, kind })
    }

    /// (name, file, our expected result, whether llvm-xray agrees)
    fn cases() -> Vec<(&'static str, Vec<u8>, Want, bool)> {
        let v5 = crafted(5);
        let (hdr, ext, body) = (&v5[..32], &v5[32..48], &v5[48..]);
        let cat = |parts: &[&[u8]]| parts.concat();
        let preamble = enc(
            5,
            &[
                Record::NewBuffer { tid: 1 },
                Record::Walltime {
                    seconds: 1,
                    micros: 0,
                },
            ],
        );
        let mut zero_freq = v5.clone();
        zero_freq[8..16].fill(0);
        let mut v2_bad_extents = crafted(2);
        v2_bad_extents[33] = 5; // extents 5 instead of the real size: ignored in v2
        let mut v3_cpu = crafted(3);
        // Put a CPU into bytes 13..15 of the custom event marker (tag 0x0b, size 5),
        // which LLVM reads for versions 1 to 4.
        let custom_at = v3_cpu
            .windows(5)
            .position(|w| w == b"\x0b\x05\x00\x00\x00")
            .unwrap();
        v3_cpu[custom_at + 13] = 7;
        vec![
            // LLVM keeps the extents in a uint32_t: 2^32 + 229 reads as 229 ...
            (
                "extents mod 2^32",
                cat(&[hdr, &extents((1 << 32) + 229), body]),
                Ok(()),
                true,
            ),
            // ... and 2^32 as 0, so the buffer's records are scanned as junk for a 0x0f
            // byte (there is one at 101, in the WalltimeMarker), and the file fails.
            (
                "extents 2^32",
                cat(&[hdr, &extents(1 << 32), body]),
                err(277, DecodeErrorKind::MissingBufferExtents),
                true,
            ),
            (
                "junk between buffers",
                cat(&[hdr, ext, body, &[0, 0], ext, body]),
                Ok(()),
                true,
            ),
            (
                "junk before the first buffer",
                cat(&[hdr, &[0xff, 0xfe], ext, body]),
                Ok(()),
                true,
            ),
            // A BufferExtents inside a buffer restarts the count without checking it.
            (
                "extents inside a buffer",
                cat(&[
                    hdr,
                    &extents(48),
                    &body[..48],
                    &extents(body.len() as u64 - 48),
                    &body[48..],
                ]),
                Ok(()),
                true,
            ),
            // LLVM needs only the 8-byte size field of a BufferExtents.
            (
                "extents cut to 9 bytes",
                cat(&[&v5, &extents(0)[..9]]),
                Ok(()),
                true,
            ),
            (
                "extents cut to 8 bytes",
                cat(&[&v5, &extents(0)[..8]]),
                err(
                    277,
                    DecodeErrorKind::TruncatedRecord {
                        record: RecordType::Metadata(MetadataKind::BufferExtents),
                        needed: 16,
                        available: 8,
                    },
                ),
                true,
            ),
            (
                "only an empty extents",
                cat(&[hdr, &extents(0)]),
                err(48, DecodeErrorKind::Grammar(VerifyError::NoBuffers)),
                true,
            ),
            (
                "typed event size 0",
                cat(&[
                    hdr,
                    &extents(16 * 5),
                    &preamble,
                    &enc(5, &[Record::NewCpuId { cpu: 0, tsc: 1 }]),
                    &[0x11],
                    &[0; 15],
                    &[0; 16],
                ]),
                err(
                    32 + 16 * 4 + 5,
                    DecodeErrorKind::BadEventSize {
                        event: EventKind::Typed,
                        size: 0,
                    },
                ),
                true,
            ),
            (
                "block ending in its preamble, then a good block",
                cat(&[hdr, &extents(32), &preamble, ext, body]),
                err(
                    48,
                    DecodeErrorKind::Grammar(VerifyError::InvalidTerminal {
                        state: BlockState::WallClockTime,
                    }),
                ),
                true,
            ),
            // Version 1: after EndOfBuffer anything parseable is ignored until NewBuffer.
            (
                "v1 records after EndOfBuffer",
                cat(&[
                    &crafted(1),
                    &enc(
                        1,
                        &[Record::Pid { pid: 1 }, Record::CallArgument { value: 1 }],
                    ),
                ]),
                Ok(()),
                true,
            ),
            (
                "v1 record before any NewBuffer",
                cat(&[&crafted(1)[..32], &enc(1, &[enter()]), &crafted(1)[32..]]),
                err(
                    32,
                    DecodeErrorKind::Grammar(VerifyError::InvalidTransition {
                        from: BlockState::Unknown,
                        to: BlockState::Function,
                    }),
                ),
                true,
            ),
            ("v2 extents value ignored", v2_bad_extents, Ok(()), true),
            ("v3 custom event with a CPU", v3_cpu, Ok(()), true),
            (
                "v5 custom event with absolute-time layout is still read as delta",
                cat(&[
                    hdr,
                    &extents(16 * 4 + 1),
                    &preamble,
                    &enc(5, &[Record::NewCpuId { cpu: 0, tsc: 1 }]),
                    &enc(
                        4,
                        &[Record::CustomEvent {
                            time: CustomEventTime::Absolute { tsc: 9, cpu: 1 },
                            payload: b"x",
                        }],
                    ),
                ]),
                Ok(()),
                true,
            ),
            // The one deviation: llvm-xray loads a zero frequency; we refuse it.
            (
                "zero cycle frequency",
                zero_freq,
                err(0, DecodeErrorKind::Header(HeaderError::ZeroFrequency)),
                false,
            ),
        ]
    }

    #[test]
    fn our_verdicts() {
        for (name, bytes, want, _) in cases() {
            assert_eq!(verify(&bytes).map(|_| ()), want, "{name}");
        }
        // Junk is counted.
        let v5 = crafted(5);
        let junk = [&v5[..], &[0, 0], &v5[32..]].concat();
        assert_eq!(verify(&junk).unwrap().skipped_bytes, 2);
        assert_eq!(verify(&junk).unwrap().buffers, 2);
        // The CPU of a version-3 custom event is read from bytes 13..15, as LLVM does.
        let (_, v3_cpu, _, _) = cases()
            .into_iter()
            .find(|c| c.0.starts_with("v3 custom"))
            .unwrap();
        let cpus: Vec<_> = flightrec_core::fdr::decoder::Decoder::new(&v3_cpu)
            .unwrap()
            .filter_map(|d| match d.unwrap().record {
                Record::CustomEvent {
                    time: CustomEventTime::Absolute { cpu, .. },
                    ..
                } => Some(cpu),
                _ => None,
            })
            .collect();
        assert_eq!(cpus, [7]);
    }

    #[test]
    fn llvm_xray_agrees() {
        let Some(tool) = llvm_xray() else { return };
        let dir = scratch("quirks");
        let mut bad = Vec::new();
        for (i, (name, bytes, want, agrees)) in cases().into_iter().enumerate() {
            let file = dir.join(format!("quirk-{i}.xray"));
            std::fs::write(&file, &bytes).unwrap();
            let theirs = llvm_accepts(&tool, &file);
            if (theirs == want.is_ok()) != agrees {
                bad.push(format!("{name}: llvm-xray accepts={theirs}, ours={want:?}"));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

/// Random, mostly well-formed files: random versions, buffers whose preamble is
/// sometimes damaged, body records in random order (Pid, Walltime, EndOfBuffer and
/// CallArgument included), extents that are sometimes wrong, junk between buffers and
/// padding. A fixed seed keeps failures reproducible; `FDR_FUZZ_CASES` and
/// `FDR_FUZZ_SEED` set the count (default 200) and the seed.
#[test]
fn random_structured_files_match_llvm_xray() {
    use flightrec_core::fdr::records::{CustomEventTime, Record};
    use flightrec_core::fdr::{FunctionAction, FunctionId, Version};

    let Some(tool) = llvm_xray() else { return };
    let count: usize = std::env::var("FDR_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("FDR_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);

    // xorshift64*: no dependency, same sequence everywhere.
    let mut state = seed.max(1);
    let mut rnd = move |n: u64| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    };

    let mut cases = Vec::new();
    for case in 0..count {
        let vnum = 1 + rnd(5) as u16;
        let version = Version::from_number(vnum).unwrap();
        let mut file = std::fs::read(data_dir().join("crafted-v5.xray")).unwrap()[..32].to_vec();
        file[0] = vnum as u8;
        for _ in 0..rnd(4) {
            let mut records: Vec<Record<'static>> = Vec::new();
            // Preamble, damaged one time in eight.
            let mut pre = vec![
                Record::NewBuffer {
                    tid: 1 + rnd(3) as i32,
                },
                Record::Walltime {
                    seconds: 1,
                    micros: rnd(10) as u32,
                },
                Record::Pid { pid: 42 },
                Record::NewCpuId { cpu: 0, tsc: 1000 },
            ];
            if rnd(2) == 0 {
                pre.remove(2);
            }
            if rnd(8) == 0 {
                let i = rnd(pre.len() as u64) as usize;
                pre.remove(i);
            }
            records.extend(pre);
            for _ in 0..rnd(12) {
                let id = FunctionId::new(rnd(8) as u32).unwrap();
                let r = match rnd(40) {
                    0 => Record::Pid { pid: 42 },
                    1 => Record::Walltime {
                        seconds: 2,
                        micros: 0,
                    },
                    2 => Record::EndOfBuffer,
                    3 => Record::NewBuffer { tid: 9 },
                    4..=7 => Record::CallArgument { value: rnd(1000) },
                    8..=9 => Record::NewCpuId {
                        cpu: rnd(4) as u16,
                        tsc: 5000,
                    },
                    10..=11 => Record::TscWrap { tsc: 9000 },
                    12..=13 => Record::CustomEvent {
                        time: if version.events_use_delta() {
                            CustomEventTime::Delta(rnd(100) as i32)
                        } else {
                            CustomEventTime::Absolute { tsc: 7000, cpu: 0 }
                        },
                        payload: if rnd(2) == 0 { b"\x0f!" } else { b"hello" },
                    },
                    14 => Record::TypedEvent {
                        delta: 1,
                        event_type: 3,
                        payload: b"typed",
                    },
                    _ => Record::Function {
                        action: FunctionAction::from_bits(rnd(4) as u8).unwrap(),
                        id,
                        delta: rnd(3000) as u32,
                    },
                };
                // EndOfBuffer cannot be encoded wrongly, only placed wrongly.
                records.push(r);
            }
            let mut buf = Vec::new();
            for r in &records {
                let mut tmp = [0u8; 64];
                let n = r.encode(version, &mut tmp).unwrap();
                buf.extend_from_slice(&tmp[..n]);
            }
            if vnum == 1 && rnd(4) == 0 {
                buf.extend(std::iter::repeat_n(0, rnd(24) as usize));
            }
            if vnum >= 2 && rnd(6) != 0 {
                let exact = buf.len() as i64;
                let size = match rnd(8) {
                    0 => 0,
                    1 => exact - 8,
                    2 => exact + 16,
                    3 => exact - 1,
                    _ => exact,
                };
                let mut tmp = [0u8; 16];
                Record::BufferExtents {
                    size: size.max(0) as u64,
                }
                .encode(version, &mut tmp)
                .unwrap();
                file.extend_from_slice(&tmp);
            }
            file.extend_from_slice(&buf);
            if rnd(8) == 0 {
                file.extend(std::iter::repeat_n(
                    if rnd(2) == 0 { 0 } else { 0x42 },
                    1 + rnd(5) as usize,
                ));
            }
        }
        cases.push((format!("case {case} (v{vnum}, {} bytes)", file.len()), file));
    }
    let accepted = cases.iter().filter(|(_, b)| verify(b).is_ok()).count();
    let n = cases.len();
    let bad = disagreements(&tool, "random", cases);
    assert!(
        bad.is_empty(),
        "{} of {n} random files differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
    // The generator makes both kinds of file.
    assert!(
        accepted > n / 10 && accepted < n * 9 / 10,
        "{accepted} of {n} accepted"
    );
}
