//! Inputs are never mixed: two FDR files whose processes have the same
//! process and thread ids (two machines, two containers, an id used again)
//! are two processes, each call matched within its own file, and the report
//! says so.

use std::num::NonZeroU64;

use flightrec_host::convert::{convert_timeline, TimelineFormat};
use flightrec_host::core::clock::Timestamp;
use flightrec_host::core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_host::core::fdr::{FileHeader, FunctionAction, FunctionId};
use flightrec_host::names::Names;
use flightrec_host::timeline::{anchor_payload, TimelineInput};

const WALL0_NS: u64 = 1_767_225_603_000_000_000;

/// One call of `id` from `enter` to `exit` (ns after the anchor) by thread 1
/// of process 1.
fn one_call(id: u32, enter: u64, exit: u64) -> Vec<u8> {
    const BUFFER: usize = 4096;
    let header = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), BUFFER as u64);
    let mut file = header.to_bytes().to_vec();
    let mut buf = vec![0u8; BUFFER];
    let config = WriterConfig::new(1).with_pid(1);
    let when = Walltime {
        seconds: (WALL0_NS / 1_000_000_000) as i64,
        micros: 0,
    };
    let mut w = BufferWriter::new(&mut buf, &config, when).unwrap();
    let at = |tsc: u64| Timestamp { tsc, cpu: 0 };
    w.custom_event(at(0), &anchor_payload(WALL0_NS)).unwrap();
    let f = FunctionId::new(id).unwrap();
    w.function(FunctionAction::Enter, f, at(1_000 + enter))
        .unwrap();
    w.function(FunctionAction::Exit, f, at(1_000 + exit))
        .unwrap();
    file.extend_from_slice(w.finish());
    file
}

#[test]
fn two_files_with_the_same_pid_and_tid_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.xray"), dir.path().join("b.xray"));
    // f1 from 0 to 100 ns in one; f2 from 50 to 150 ns in the other. Mixed on
    // one track, f1's exit would end f2 after 50 ns.
    std::fs::write(&a, one_call(1, 0, 100)).unwrap();
    std::fs::write(&b, one_call(2, 50, 150)).unwrap();
    let names = Names::parse("1 f1\n2 f2\n").unwrap();
    let inputs: Vec<TimelineInput> = [&a, &b]
        .iter()
        .map(|p| TimelineInput {
            path: p.to_path_buf(),
            names: names.clone(),
        })
        .collect();
    for format in [TimelineFormat::Chrome, TimelineFormat::Perfetto] {
        let mut out = Vec::new();
        let report = convert_timeline(&inputs, format, &mut out).unwrap();
        assert_eq!(report.unmatched_ends, 0);
        assert_eq!(report.unfinished, 0);
        assert_eq!(report.tracks, 2);
        assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
        assert!(
            report.notes[0].starts_with("process 1 is in 2 FDR inputs: shown as 2 processes"),
            "{}",
            report.notes[0]
        );
    }
    let mut json = Vec::new();
    convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let call = |name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == "X" && e["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let (f1, f2) = (call("f1"), call("f2"));
    assert_eq!(f1["dur"].as_f64(), Some(0.1));
    assert_eq!(f2["dur"].as_f64(), Some(0.1));
    // Two processes: the first file's keeps its id, the other's has one of
    // its own and a name that says which file it is.
    assert_eq!(f1["pid"], 1);
    assert_ne!(f2["pid"], 1);
    let process_names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(process_names[0], "process 1");
    assert_eq!(process_names[1], format!("process 1 ({})", b.display()));
}

/// A time before 1970 cannot be written as nanoseconds since the epoch: it is
/// written at 0, counted, and named in the output's metadata (Chrome) or on
/// a track of its own (Perfetto).
#[test]
fn a_time_out_of_range_is_counted_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let t2 = dir.path().join("t2.json");
    std::fs::write(
        &t2,
        concat!(
            r#"{"event":"data","sid":"S-P1","thread":"main","time":"1969-12-31T23:59:59.000000Z","key":"k","value":"v"}"#,
            "\n",
            r#"{"event":"data","sid":"S-P1","thread":"main","time":"1970-01-01T00:00:01.000000Z","key":"k","value":"w"}"#,
            "\n",
        ),
    )
    .unwrap();
    let inputs = [TimelineInput {
        path: t2,
        names: Names::empty(),
    }];
    let mut json = Vec::new();
    let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
    assert_eq!(report.clamped_times, 1);
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let meta = &doc["metadata"]["flightrec"];
    assert_eq!(meta["times-out-of-range"], 1);
    assert_eq!(meta["input-problems"], 0);
    let mut pf = Vec::new();
    let report = convert_timeline(&inputs, TimelineFormat::Perfetto, &mut pf).unwrap();
    assert_eq!(report.clamped_times, 1);
    assert!(pf.windows(18).any(|w| w == b"times-out-of-range"));
    assert!(pf.windows(19).any(|w| w == b"left out or changed"));
}
