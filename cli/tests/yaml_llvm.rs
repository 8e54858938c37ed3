//! `convert --format yaml` against `llvm-xray convert --output-format=yaml` 14, byte
//! for byte, on FDR files written here with the core's writer: custom-event
//! payloads of every kind (NUL, control characters, non-UTF-8, quotes,
//! backslashes, line feeds, Unicode escapes), and the func-id llvm-xray gives a
//! custom event once a thread's buffers are put in wall-time order.
//!
//! Without `llvm-xray` the comparisons are skipped with a message, except under
//! `CI=true`, where they fail.

use std::path::Path;
use std::process::Command;

use flightrec_host::core::clock::Timestamp;
use flightrec_host::core::fdr::ring::RecorderConfig;
use flightrec_host::core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_host::core::fdr::FunctionId;
use flightrec_testkit::xray_tool::llvm_xray;

/// One buffer of thread `tid` (pid 9) with wall time `seconds.micros`, filled by
/// `fill`.
fn buffer(
    tid: u32,
    seconds: i64,
    micros: u32,
    fill: impl FnOnce(&mut BufferWriter<'_>),
) -> Vec<u8> {
    let mut buf = vec![0u8; 64 * 1024];
    let when = Walltime { seconds, micros };
    let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(tid).with_pid(9), when).unwrap();
    fill(&mut w);
    w.finish().to_vec()
}

fn file(buffers: &[Vec<u8>]) -> Vec<u8> {
    let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000_000);
    let mut out = cfg.file_header(64 * 1024).to_bytes().to_vec();
    for b in buffers {
        out.extend_from_slice(b);
    }
    out
}

fn at(tsc: u64) -> Timestamp {
    Timestamp { tsc, cpu: 0 }
}

/// Compares ours and llvm-xray's YAML of `bytes`, line by line first (for a
/// readable failure), then byte for byte.
fn same_yaml(bytes: &[u8], what: &str) {
    let Some(tool) = llvm_xray() else { return };
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join(format!("{what}.xray"));
    std::fs::write(&f, bytes).unwrap();
    let theirs = Command::new(&tool)
        .args(["convert", "--output-format=yaml"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        theirs.status.success(),
        "{}",
        String::from_utf8_lossy(&theirs.stderr)
    );
    let ours = Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(["convert", "--format", "yaml", "-q"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let lines = |b: &[u8]| -> Vec<String> {
        b.split(|&c| c == b'\n')
            .map(|l| format!("{}", l.escape_ascii()))
            .collect()
    };
    let (o, t) = (lines(&ours.stdout), lines(&theirs.stdout));
    for (k, (a, b)) in o.iter().zip(&t).enumerate() {
        assert_eq!(a, b, "{what}: line {} (ours, then llvm-xray's)", k + 1);
    }
    assert_eq!(o.len(), t.len(), "{what}: line count");
    assert!(ours.stdout == theirs.stdout, "{what}: bytes differ");
    let _ = Path::new(&f);
}

/// Payloads with every byte alone, then the cases LLVM's YAML writer treats
/// apart: its quoting rules and `yaml::escape` (short escapes, `\xNN`, `\N`,
/// `\_`, `\L`, `\P`, non-printable code points as `\u`/`\U`, and invalid UTF-8,
/// which ends the escaped text with U+FFFD).
fn payloads() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let texts: &[&[u8]] = &[
        b"a\0b",
        b"\0",
        b"quote\"d",
        b"\"",
        b"it's",
        b"'",
        b"back\\slash",
        b"\\",
        b"line\nfeed",
        b"\n",
        b"cr\rx",
        b"tab\tx",
        b"\t",
        b" lead",
        b"trail ",
        b"a\x07\x08\x0b\x0c\x1b\x1f\x7fz",
        b"\x1b[31mred\x1b[0m",
        "é".as_bytes(),
        "日本語".as_bytes(),
        "😀 emoji".as_bytes(),
        "\u{85}".as_bytes(),
        "\u{a0}".as_bytes(),
        "\u{2028}\u{2029}".as_bytes(),
        "\u{200b}".as_bytes(),
        "\u{ad}".as_bytes(),
        "\u{e000}".as_bytes(),
        "\u{fffd}".as_bytes(),
        "\u{feff}".as_bytes(),
        "\u{10ffff}".as_bytes(),
        "\u{1f}\u{9f}".as_bytes(),
        "a\u{301}".as_bytes(),
        b"x\xffy",
        b"x\x80",
        b"\xe6\x97",
        b"\xe6\x97\xa5\xe6",
        b"\xed\xa0\x80",
        b"\xc0\x80",
        b"\xc1\xbf",
        b"\xe0\x80\x80",
        b"\xf0\x80\x80\x80",
        b"\xf4\x90\x80\x80",
        b"\xf8\x88\x80\x80\x80",
        b"true",
        b"No",
        b"~",
        b"null",
        b"1.5",
        b"-3",
        b"0x1F",
        b".inf",
        b"-x",
        b":x",
        b"#x",
        b"a/b",
        b"a: b",
        b"a, b",
        b"{x}",
        b"flightrec: lost 3 records",
    ];
    v.extend(texts.iter().map(|t| t.to_vec()));
    v
}

#[test]
fn custom_event_payloads_are_escaped_as_llvm_xray_does() {
    let payloads = payloads();
    // One thread, one buffer per 64 payloads, in wall-time order.
    let buffers: Vec<Vec<u8>> = payloads
        .chunks(64)
        .enumerate()
        .map(|(k, chunk)| {
            buffer(1, 100 + k as i64, k as u32, |w| {
                for (i, p) in chunk.iter().enumerate() {
                    let tsc = 1_000_000 + (k * 1000 + i * 10) as u64;
                    w.custom_event(at(tsc), p).unwrap();
                }
            })
        })
        .collect();
    same_yaml(&file(&buffers), "payloads");
}

#[test]
fn custom_event_func_ids_follow_llvm_xray_after_wall_time_order() {
    let f = |id| FunctionId::new(id).unwrap();
    // Thread 1's second buffer in wall time is first in the file and starts
    // with a custom event: in llvm-xray's order it follows the buffer that
    // ends with function 4, and a custom event keeps the func-id of the
    // record before it. Thread 2 starts with a custom event and a typed
    // event, after thread 1's last record.
    let later = buffer(1, 101, 2, |w| {
        w.custom_event(at(2_000), b"after four").unwrap();
        w.enter(f(5), at(2_010)).unwrap();
        w.exit(f(5), at(2_020)).unwrap();
        w.custom_event(at(2_030), b"after five").unwrap();
    });
    let earlier = buffer(1, 100, 1, |w| {
        w.custom_event(at(1_000), b"first").unwrap();
        w.enter(f(3), at(1_010)).unwrap();
        w.enter(f(4), at(1_020)).unwrap();
        w.exit(f(4), at(1_030)).unwrap();
    });
    let other = buffer(2, 100, 5, |w| {
        w.custom_event(at(1_500), b"thread two").unwrap();
        w.typed_event(at(1_510), 7, b"typed").unwrap();
        w.enter(f(6), at(1_520)).unwrap();
        w.custom_event(at(1_530), b"in six").unwrap();
    });
    same_yaml(
        &file(&[later.clone(), earlier.clone(), other.clone()]),
        "reordered",
    );
    same_yaml(&file(&[other, later, earlier]), "reordered-other-first");
}

/// Every Unicode scalar value from U+0080 up, one custom event each: the
/// printable ones as they are, the others escaped as LLVM's `yaml::escape`
/// does, which depends on LLVM 14's own Unicode tables (the host's copy of
/// them is checked here).
#[test]
fn every_code_point_is_escaped_as_llvm_xray_does() {
    let chars: Vec<char> = (0x80..=0x10_FFFFu32).filter_map(char::from_u32).collect();
    let mut tsc = 1_000_000u64;
    let buffers: Vec<Vec<u8>> = chars
        .chunks(2000)
        .enumerate()
        .map(|(k, chunk)| {
            buffer(1, 100 + k as i64, k as u32, |w| {
                let mut utf8 = [0u8; 4];
                for c in chunk {
                    tsc += 1;
                    w.custom_event(at(tsc), c.encode_utf8(&mut utf8).as_bytes())
                        .unwrap();
                }
            })
        })
        .collect();
    same_yaml(&file(&buffers), "code-points");
}

/// Threads of 2 to 80 buffers whose wall times llvm-xray's comparator cannot all
/// order (few distinct seconds and microseconds): each buffer starts with a
/// custom event and then calls its own function, so every custom event's
/// func-id names the buffer llvm-xray expanded before it. The whole order of
/// libstdc++'s `std::sort` (insertion sort, introsort partitions past 16
/// buffers) is compared.
#[test]
fn buffer_order_follows_llvm_xray_for_any_wall_times() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..24 {
        let count = [2, 3, 16, 17, 33, 80][round % 6];
        let spread = 1 + next(6);
        let buffers: Vec<Vec<u8>> = (0..count)
            .map(|k| {
                let (s, us) = (100 + next(spread) as i64, next(spread) as u32);
                buffer(1, s, us, |w| {
                    let t = 10_000 * k as u64;
                    w.custom_event(at(t), b"which buffer came before?").unwrap();
                    let f = FunctionId::new(k as u32 + 1).unwrap();
                    w.enter(f, at(t + 10)).unwrap();
                    w.exit(f, at(t + 20)).unwrap();
                })
            })
            .collect();
        same_yaml(&file(&buffers), &format!("order-{round}-{count}"));
    }
}
