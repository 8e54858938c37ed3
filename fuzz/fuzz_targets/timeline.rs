//! `convert` with several inputs: an FDR file and a Trace2 stream, both any
//! bytes (the input split at its first 0xFF byte), merged into one timeline in
//! both formats. No panic and no I/O error; a bad input is reported, not fatal;
//! the Chrome output is valid JSON whose slices never end before they start;
//! both formats write the same tracks, slices and counter values;
//! the Perfetto output is a run of length-delimited packets that ends exactly
//! at the end of the file.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use flightrec_host::convert::{convert_timeline, TimelineFormat};
use flightrec_host::names::Names;
use flightrec_host::timeline::TimelineInput;
use libfuzzer_sys::fuzz_target;

static RUN: AtomicU64 = AtomicU64::new(0);

/// Reads a protobuf varint at `at`.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let (fdr, t2) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let dir = std::env::temp_dir().join(format!(
        "flightrec-fuzz-timeline-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let fdr_path = dir.join("t.xray");
    let t2_path = dir.join("t2.json");
    std::fs::write(&fdr_path, fdr).unwrap();
    // A Trace2 stream is told by its first byte.
    let mut stream = b"{".to_vec();
    stream.extend_from_slice(t2);
    std::fs::write(&t2_path, &stream).unwrap();
    let inputs = [
        TimelineInput {
            path: fdr_path,
            names: Names::empty(),
        },
        TimelineInput {
            path: t2_path,
            names: Names::empty(),
        },
    ];

    let mut json = Vec::new();
    let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut json)
        .expect("writing to memory cannot fail");
    assert!(report.sources >= 1, "the Trace2 stream is always read");
    let doc: serde_json::Value = serde_json::from_slice(&json).expect("valid JSON");
    for e in doc["traceEvents"].as_array().expect("an event array") {
        if e["ph"] == "X" {
            assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
        }
    }

    let mut pf = Vec::new();
    let again = convert_timeline(&inputs, TimelineFormat::Perfetto, &mut pf)
        .expect("writing to memory cannot fail");
    assert_eq!(
        (again.events, again.slices, again.tracks),
        (report.events, report.slices, report.tracks)
    );
    assert_eq!(
        (again.counter_tracks, again.counter_values),
        (report.counter_tracks, report.counter_values)
    );
    let mut at = 0;
    while at < pf.len() {
        assert_eq!(varint(&pf, &mut at), Some(0x0a), "a Trace.packet field");
        let len = varint(&pf, &mut at).expect("a packet length") as usize;
        at += len;
    }
    assert_eq!(at, pf.len());
    std::fs::remove_dir_all(&dir).expect("removing the scratch directory");
});
