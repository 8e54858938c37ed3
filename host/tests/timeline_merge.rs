//! A merged timeline shows every FDR call exactly as the FDR file converted
//! alone does: the same start and duration to the nanosecond, for generated
//! traces that record each span both ways as the `tracing` layer does (an FDR
//! entry, then a Trace2 `region_enter` in whole microseconds; a
//! `region_leave`, then the FDR exit), with other Trace2 regions around
//! them. Each span appears once (the call, carrying its region's fields), and
//! no exit is left out.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::path::Path;

use flightrec_host::convert::{convert_timeline, TimelineFormat};
use flightrec_host::core::clock::Timestamp;
use flightrec_host::core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_host::core::fdr::{FileHeader, FunctionAction, FunctionId};
use flightrec_host::names::Names;
use flightrec_host::timeline::{anchor_payload, TimelineInput, TimelineReport};
use proptest::prelude::*;

/// 2026-01-01T00:00:00Z, in ns since the Unix epoch.
const EPOCH_2026_NS: u64 = 1_767_225_600_000_000_000;
/// The process (and its main thread): `S-P00000010`.
const PID: u32 = 16;
/// The FDR file's clock: 1 GHz, its TSC 0 at this wall time.
const WALL0_NS: u64 = EPOCH_2026_NS + 3_000_000_000;
const BUFFER: usize = 1 << 16;

/// One thing the traced program did, at a wall time in ns.
#[derive(Clone, Debug)]
enum Ev {
    Enter(u32),
    Exit(u32),
    RegionEnter {
        category: &'static str,
        label: String,
        fields: Option<String>,
    },
    RegionLeave {
        category: &'static str,
        label: String,
    },
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A span as the layer records it, with its children, from wall time `t`;
/// returns the time after it.
fn span(rng: &mut Rng, depth: u32, mut t: u64, out: &mut Vec<(u64, Ev)>) -> u64 {
    let k = rng.below(4) as u32;
    let label = format!("s{k}");
    out.push((t, Ev::Enter(k + 1)));
    t += 20 + rng.below(400);
    let fields = (rng.below(2) == 0).then(|| format!("n={}", rng.below(100)));
    out.push((
        t,
        Ev::RegionEnter {
            category: "app",
            label: label.clone(),
            fields,
        },
    ));
    t += rng.below(3_000);
    if depth < 4 {
        for _ in 0..rng.below(3) {
            t = span(rng, depth + 1, t, out) + rng.below(2_000);
        }
        if rng.below(3) == 0 {
            t = other_region(rng, depth + 1, t, out);
        }
    }
    t += rng.below(500);
    out.push((
        t,
        Ev::RegionLeave {
            category: "app",
            label,
        },
    ));
    t += 20 + rng.below(400);
    out.push((t, Ev::Exit(k + 1)));
    t
}

/// A Trace2 region of no span (a `git`-style region) around some spans.
fn other_region(rng: &mut Rng, depth: u32, mut t: u64, out: &mut Vec<(u64, Ev)>) -> u64 {
    out.push((
        t,
        Ev::RegionEnter {
            category: "cmd",
            label: "phase".into(),
            fields: None,
        },
    ));
    t += rng.below(700);
    for _ in 0..1 + rng.below(2) {
        t = span(rng, depth + 1, t, out) + rng.below(300);
    }
    out.push((
        t,
        Ev::RegionLeave {
            category: "cmd",
            label: "phase".into(),
        },
    ));
    t + 1
}

fn program(seed: u64) -> Vec<(u64, Ev)> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    let mut t = WALL0_NS + 1_000_000 + rng.below(1_000);
    for _ in 0..1 + rng.below(6) {
        t = if rng.below(4) == 0 {
            other_region(&mut rng, 1, t, &mut out)
        } else {
            span(&mut rng, 0, t, &mut out)
        };
        t += rng.below(5_000);
    }
    out
}

/// The FDR file: the calls, and a clock anchor at TSC 0 placing it on the
/// wall clock exactly.
fn fdr_file(events: &[(u64, Ev)]) -> Vec<u8> {
    let header = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), BUFFER as u64);
    let mut file = header.to_bytes().to_vec();
    let mut buf = vec![0u8; BUFFER];
    let config = WriterConfig::new(PID).with_pid(PID);
    let when = Walltime {
        seconds: (WALL0_NS / 1_000_000_000) as i64,
        micros: 0,
    };
    let mut w = BufferWriter::new(&mut buf, &config, when).unwrap();
    let at = |ns: u64| Timestamp {
        tsc: ns - WALL0_NS,
        cpu: 0,
    };
    w.custom_event(at(WALL0_NS), &anchor_payload(WALL0_NS))
        .unwrap();
    for (ns, e) in events {
        let (action, id) = match e {
            Ev::Enter(id) => (FunctionAction::Enter, *id),
            Ev::Exit(id) => (FunctionAction::Exit, *id),
            _ => continue,
        };
        w.function(action, FunctionId::new(id).unwrap(), at(*ns))
            .unwrap();
    }
    file.extend_from_slice(w.finish());
    file
}

/// The Trace2 event stream: the regions, in whole microseconds (cut down).
fn trace2_file(events: &[(u64, Ev)]) -> String {
    let time = |ns: u64| {
        let us = (ns - EPOCH_2026_NS) / 1_000;
        let (s, us) = (us / 1_000_000, us % 1_000_000);
        format!("2026-01-01T00:00:{s:02}.{us:06}Z")
    };
    let line = |ns: u64, rest: String| {
        format!(
            "{{\"event\":{rest},\"sid\":\"S-P{PID:08x}\",\"thread\":\"main\",\"time\":\"{}\"}}\n",
            time(ns)
        )
    };
    let mut text = line(events[0].0 - 1_000, r#""cmd_name","name":"app""#.into());
    for (ns, e) in events {
        match e {
            Ev::RegionEnter {
                category,
                label,
                fields,
            } => {
                let msg = fields
                    .as_ref()
                    .map(|m| format!(",\"msg\":\"{m}\""))
                    .unwrap_or_default();
                text += &line(
                    *ns,
                    format!(r#""region_enter","category":"{category}","label":"{label}"{msg}"#),
                );
            }
            Ev::RegionLeave { category, label } => {
                text += &line(
                    *ns,
                    format!(r#""region_leave","category":"{category}","label":"{label}""#),
                );
            }
            _ => {}
        }
    }
    text
}

/// A converted timeline's slices: (name, start in ns since the epoch,
/// duration in ns, arguments).
type Slice = (String, u64, u64, serde_json::Value);

fn chrome(inputs: &[&Path], names: &Names) -> (TimelineReport, Vec<Slice>) {
    let inputs: Vec<TimelineInput> = inputs
        .iter()
        .map(|p| TimelineInput {
            path: p.to_path_buf(),
            names: names.clone(),
        })
        .collect();
    let mut json = Vec::new();
    let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let origin = doc["otherData"]["origin-ns"].as_u64().unwrap();
    let mut slices: Vec<Slice> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
            (
                e["name"].as_str().unwrap().to_string(),
                origin + ns(&e["ts"]),
                ns(&e["dur"]),
                e["args"].clone(),
            )
        })
        .collect();
    slices.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    (report, slices)
}

fn check(seed: u64) {
    let events = program(seed);
    let dir = tempfile::tempdir().unwrap();
    let fdr = dir.path().join("x-app");
    let t2 = dir.path().join("ev.json");
    std::fs::write(&fdr, fdr_file(&events)).unwrap();
    std::fs::write(&t2, trace2_file(&events)).unwrap();
    let names = Names::from_map((1..=4).map(|k| (k, format!("app::s{}", k - 1))).collect());

    let (alone_report, alone) = chrome(&[&fdr], &names);
    let (merged_report, merged) = chrome(&[&fdr, &t2], &names);
    assert!(
        alone_report.problems.is_empty(),
        "{:?}",
        alone_report.problems
    );
    assert!(
        merged_report.problems.is_empty(),
        "{:?}",
        merged_report.problems
    );

    // Every FDR call: the same start and duration, to the nanosecond.
    let calls = |s: &[Slice]| -> Vec<(String, u64, u64)> {
        s.iter()
            .filter(|c| c.0.starts_with("app::"))
            .map(|c| (c.0.clone(), c.1, c.2))
            .collect()
    };
    let spans = events
        .iter()
        .filter(|(_, e)| matches!(e, Ev::Enter(_)))
        .count();
    assert_eq!(calls(&alone).len(), spans);
    assert_eq!(calls(&merged), calls(&alone), "seed {seed}");
    // Each span once: no region slice of a span beside its call, and the
    // call carries the region (and its fields).
    assert!(
        !merged.iter().any(|s| s.0.starts_with("app:s")),
        "a span shown twice (seed {seed}): {merged:#?}"
    );
    assert_eq!(merged_report.merged_regions, spans as u64, "seed {seed}");
    let mut fields: HashMap<u64, String> = HashMap::new();
    let mut enters = events.iter().filter(|(_, e)| matches!(e, Ev::Enter(_)));
    for (_, e) in &events {
        if let Ev::RegionEnter {
            category: "app",
            fields: Some(f),
            ..
        } = e
        {
            let _ = &mut enters;
            let _ = f;
        }
    }
    for (i, (ns, e)) in events.iter().enumerate() {
        if let Ev::Enter(_) = e {
            if let Some((
                _,
                Ev::RegionEnter {
                    fields: Some(f), ..
                },
            )) = events.get(i + 1)
            {
                fields.insert(*ns, f.clone());
            }
        }
    }
    for c in merged.iter().filter(|c| c.0.starts_with("app::")) {
        let region = format!("app:{}", c.0.trim_start_matches("app::"));
        if c.3["region"] != region.as_str() {
            let near: Vec<_> = events
                .iter()
                .filter(|(ns, _)| ns.abs_diff(c.1) < 5_000)
                .collect();
            let got: Vec<_> = merged
                .iter()
                .filter(|m| m.1.abs_diff(c.1) < 5_000)
                .collect();
            panic!("seed {seed}: {c:?} has no region; around it {near:#?}; merged {got:#?}");
        }
        if let Some(f) = fields.get(&c.1) {
            assert_eq!(c.3["msg"], f.as_str(), "seed {seed}: {c:?}");
        }
    }
    // No exit left out, nothing left open.
    assert_eq!(merged_report.unmatched_ends, 0, "seed {seed}");
    assert_eq!(merged_report.unfinished, 0, "seed {seed}");
    // The other regions are there, once each.
    let phases = events
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                Ev::RegionEnter {
                    category: "cmd",
                    ..
                }
            )
        })
        .count();
    assert_eq!(
        merged.iter().filter(|s| s.0 == "cmd:phase").count(),
        phases,
        "seed {seed}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn merged_calls_are_the_calls_converted_alone(seed in any::<u64>()) {
        check(seed);
    }
}

/// The case of the report: a region's leave, in whole microseconds, came
/// before its call's exit and closed the call early.
#[test]
fn a_regions_leave_does_not_end_its_call_early() {
    for seed in [1, 2, 3, 0xdead_beef] {
        check(seed);
    }
}

/// A worker whose FDR calls come before its Trace2 thread says which thread
/// it is: its track still takes the Trace2 thread's name (the last
/// `thread_name` event names a Chrome thread).
#[test]
fn a_track_takes_its_trace2_threads_name() {
    const TID: u32 = 77;
    let header = FileHeader::new(NonZeroU64::new(1_000_000_000).unwrap(), BUFFER as u64);
    let mut fdr = header.to_bytes().to_vec();
    let mut buf = vec![0u8; BUFFER];
    let config = WriterConfig::new(TID).with_pid(PID);
    let when = Walltime {
        seconds: (WALL0_NS / 1_000_000_000) as i64,
        micros: 0,
    };
    let mut w = BufferWriter::new(&mut buf, &config, when).unwrap();
    let at = |us: u64| Timestamp {
        tsc: us * 1_000,
        cpu: 0,
    };
    w.custom_event(at(0), &anchor_payload(WALL0_NS)).unwrap();
    let id = FunctionId::new(1).unwrap();
    w.function(FunctionAction::Enter, id, at(10)).unwrap();
    w.function(FunctionAction::Exit, id, at(20)).unwrap();
    fdr.extend_from_slice(w.finish());

    let line = |us: u64, thread: &str, rest: &str| {
        let us = (WALL0_NS - EPOCH_2026_NS) / 1_000 + us;
        format!(
            "{{\"event\":{rest},\"sid\":\"S-P{PID:08x}\",\"thread\":\"{thread}\",\"time\":\"2026-01-01T00:00:{:02}.{:06}Z\"}}\n",
            us / 1_000_000,
            us % 1_000_000
        )
    };
    let t2 = [
        line(30, "th01:worker", r#""thread_start""#),
        line(
            31,
            "th01:worker",
            r#""data","category":"flightrec","key":"tid","value":"77""#,
        ),
        line(40, "th01:worker", r#""thread_exit""#),
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let (fdr_path, t2_path) = (dir.path().join("x-app"), dir.path().join("ev.json"));
    std::fs::write(&fdr_path, fdr).unwrap();
    std::fs::write(&t2_path, t2).unwrap();
    let inputs: Vec<TimelineInput> = [&fdr_path, &t2_path]
        .iter()
        .map(|p| TimelineInput {
            path: p.to_path_buf(),
            names: Names::empty(),
        })
        .collect();
    let mut json = Vec::new();
    convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["tid"] == TID)
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.last(), Some(&"th01:worker"), "{names:?}");
    // Perfetto: the track's descriptor again, with the name.
    let mut pf = Vec::new();
    convert_timeline(&inputs, TimelineFormat::Perfetto, &mut pf).unwrap();
    assert!(pf.windows(11).any(|w| w == b"th01:worker"));
}
