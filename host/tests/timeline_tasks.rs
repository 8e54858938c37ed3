//! An async executor's records ([`flightrec_core::tasks`]) on the timeline:
//! one track per task with its polls (named by the task, carrying the time
//! from the wake-up, with what the poll calls nested inside), one per
//! executor with its passes and a load counter, the wake-up made in an
//! interrupt handler's file on the task's track.

use std::num::NonZeroU64;

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_core::fdr::FileHeader;
use flightrec_core::tasks::{pass_id, poll_id, TaskEvent, TaskEventKind};
use flightrec_host::convert::{convert_timeline, TimelineFormat};
use flightrec_host::names::Names;
use flightrec_host::timeline::TimelineInput;
use serde_json::Value;

const EXEC: u32 = 0x2000_0100;
const TASK: u32 = 0x2000_0a48;

fn at(tsc: u64) -> Timestamp {
    Timestamp { tsc, cpu: 0 }
}

/// An FDR file of one context at 1 MHz (a tick is 1 µs).
fn file(id: u32, fill: &dyn Fn(&mut BufferWriter)) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(id), Walltime::default()).unwrap();
    fill(&mut w);
    let len = w.as_bytes().len();
    let mut out = FileHeader::new(NonZeroU64::new(1_000_000).unwrap(), 4096)
        .to_bytes()
        .to_vec();
    out.extend_from_slice(&buf[..len]);
    out
}

fn event(w: &mut BufferWriter, tsc: u64, kind: TaskEventKind) {
    let e = TaskEvent {
        kind,
        executor: EXEC,
        task: TASK,
    };
    w.typed_event(at(tsc), kind.event_type(), &e.emit())
        .unwrap();
}

#[test]
fn tasks_and_executors_have_tracks_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    // The executor's context: a spawn, then passes of 1 ms, each polling the
    // task (which calls function 5 inside its poll) 40 µs after its wake-up.
    let main = file(1, &|w| {
        event(w, 100, TaskEventKind::Spawn);
        for pass in 0..3u64 {
            let t = 1_000 + pass * 2_000;
            w.enter(pass_id(EXEC), at(t)).unwrap();
            w.enter(poll_id(TASK), at(t + 50)).unwrap();
            let f = flightrec_core::fdr::FunctionId::new(5).unwrap();
            w.enter(f, at(t + 60)).unwrap();
            w.exit(f, at(t + 70)).unwrap();
            w.exit(poll_id(TASK), at(t + 1_000)).unwrap();
            w.exit(pass_id(EXEC), at(t + 1_010)).unwrap();
        }
        event(w, 9_000, TaskEventKind::End);
    });
    // The interrupt handler's context: the wake-ups, 40 µs before each poll.
    let irq = file(2, &|w| {
        for pass in 0..3u64 {
            event(w, 1_010 + pass * 2_000, TaskEventKind::Ready);
        }
    });
    std::fs::write(dir.path().join("source-1.xray"), main).unwrap();
    std::fs::write(dir.path().join("source-2.xray"), irq).unwrap();
    let names = Names::parse(&format!(
        "5 app::crunch\n{} app::ticker\n{} app::EXECUTOR\n",
        poll_id(TASK).get(),
        pass_id(EXEC).get()
    ))
    .unwrap();
    let inputs = [TimelineInput {
        path: dir.path().to_path_buf(),
        names,
    }];
    let mut json = Vec::new();
    let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let doc: Value = serde_json::from_slice(&json).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let tid_of = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["args"]["name"] == name)
            .unwrap_or_else(|| panic!("no track {name}: {events:#?}"))["tid"]
            .clone()
    };
    let (task, exec) = (tid_of("task app::ticker"), tid_of("executor app::EXECUTOR"));
    let on = |tid: &Value, name: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["tid"] == *tid && e["name"] == name)
            .collect()
    };
    // Three polls on the task's track, each 40 µs after its wake-up.
    let polls = on(&task, "app::ticker");
    assert_eq!(polls.len(), 3);
    for p in &polls {
        assert_eq!(p["ph"], "X");
        assert_eq!(p["dur"], 950.0);
        assert_eq!(p["args"]["wake_to_poll_ns"], 40_000, "{p}");
    }
    // What the poll calls, inside it on the same track.
    let crunch = on(&task, "app::crunch");
    assert_eq!(crunch.len(), 3);
    // The wake-ups (from the other file), the spawn and the end, there too.
    assert_eq!(on(&task, "ready").len(), 3);
    assert_eq!((on(&task, "spawn").len(), on(&task, "end").len()), (1, 1));
    // The passes on the executor's track, and its load: the first window
    // from the first pass's start is all pass; then 1,010 µs in passes over
    // the 2,000 µs between two pass ends.
    assert_eq!(on(&exec, "app::EXECUTOR").len(), 3);
    let load: Vec<f64> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "load % (executor app::EXECUTOR)")
        .map(|e| e["args"]["value"].as_f64().unwrap())
        .collect();
    assert_eq!(load.len(), 3, "{load:?}");
    assert_eq!(load[0], 100.0);
    assert!(
        load[1..].iter().all(|v| (v - 50.5).abs() < 1e-9),
        "{load:?}"
    );
    assert_eq!(report.unmatched_ends + report.unfinished, 0);
}
