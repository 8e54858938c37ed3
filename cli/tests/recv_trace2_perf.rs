//! `flightrec recv --trace2-format perf` of compact Trace2 events stays linear
//! in its input: regions entered and never left pad each line for at most
//! `MAX_PAD_NESTING` levels (as `trace2 render` pads them), and the report says
//! how many lines were padded so. Time-limited: a regression fails, not hangs.

use std::process::Command;
use std::time::{Duration, Instant};

use flightrec_host::core::link::trace2::{RegionEnter, Session, Str};
use flightrec_host::core::link::LinkWriter;
use flightrec_host::core::trace2::perf::MAX_PAD_NESTING;

/// A captured link: a session and `n` `region_enter` events never left.
fn capture(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; 64 + n * 32];
    let mut link = LinkWriter::new(&mut buf[..]);
    let session = Session {
        hz: 1_000_000,
        sid: Str::Bytes(b"S"),
        thread: Str::Bytes(b"main"),
    };
    link.send_trace2(0, 0, &session).unwrap();
    let enter = RegionEnter {
        category: None,
        label: Some(Str::Bytes(b"deep")),
        msg: None,
    };
    for i in 0..n {
        link.send_trace2(0, i as u64, &enter).unwrap();
    }
    let unused = link.into_inner().len();
    let len = buf.len() - unused;
    buf.truncate(len);
    buf
}

/// Runs `recv --trace2-format perf` on `n` events; returns the Trace2 file's
/// size and recv's stderr.
fn recv(n: usize) -> (u64, String) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("capture.bin");
    std::fs::write(&input, capture(n)).unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(["recv", "-q", "--trace2-format", "perf", "-o"])
        .arg(dir.path())
        .arg(&input)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let size = std::fs::metadata(dir.path().join("trace2.txt"))
        .unwrap()
        .len();
    (size, stderr)
}

#[test]
fn unclosed_regions_give_linear_output() {
    let (small, _) = recv(500);
    let (large, stderr) = recv(5_000);
    eprintln!("500 events: {small} bytes; 5000 events: {large} bytes");
    // Ten times the events, about ten times the bytes (padding that grew with
    // every line would make it a hundred).
    assert!(large <= small * 11, "{small} -> {large}");
    let capped = 5_000 - MAX_PAD_NESTING as usize;
    assert!(
        stderr.contains(&format!(
            "; {capped} perf lines nested deeper than {MAX_PAD_NESTING} regions, padded for {MAX_PAD_NESTING}"
        )),
        "{stderr}"
    );
}
