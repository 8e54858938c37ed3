//! One timeline from a desktop program traced with Trace2 and XRay FDR at once.
//!
//! This test has its own `main` (no test harness): run with
//! `FLIGHTREC_TIMELINE_CHILD=1` it is the traced program (regions on its main
//! thread with instrumented functions called inside them, a worker thread with
//! its own region), run without it, it runs that program with `GIT_TRACE2_EVENT`
//! and `XRAY_OPTIONS` set, then `flightrec convert TRACE TRACE2 --format ...`
//! over both files and checks, with the real times of the run:
//!
//! * every FDR call has the same start and duration (to the nanosecond) on
//!   the merged timeline as in the trace converted alone;
//! * the main thread's Trace2 regions and its XRay calls are on one track (the
//!   process's main thread), each call inside the region it was made in and
//!   outside the other, and the regions in the order they ran;
//! * every worker thread's Trace2 regions are on its FDR thread's track, with
//!   its calls inside them, and that track has the Trace2 thread's name (the
//!   runtime says each worker's thread id in a `data` event `flightrec`/`tid`
//!   while XRay is on): three workers that call `thread_start` and run at
//!   once, and one that does not (a std-named thread);
//! * Trace2 counters, timers and a numeric `data` value are counter tracks
//!   (Chrome `C` events; Perfetto `CounterDescriptor` tracks, per-thread ones
//!   under their thread's track) with the values the program counted;
//! * the Perfetto output of the same inputs passes Perfetto's own schema
//!   (`tests/support/perfetto_check.py`, as in `tool_convert_scale.rs`), with
//!   the same tracks;
//! * YAML refuses several inputs with a clear message;
//! * a damaged FDR file and a damaged Trace2 line among the inputs are reported
//!   with their file and byte offset, and the rest is converted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

#[path = "support/perfetto.rs"]
mod perfetto;
use perfetto::perfetto_python;

const CHILD: &str = "FLIGHTREC_TIMELINE_CHILD";

/// Worker threads that call `thread_start` (`worker0`...), run at once.
const WORKERS: u64 = 3;

/// Items each worker counts: `k + 1` for worker `k`.
static ITEMS: flightrec::trace2::Counter = flightrec::trace2::Counter::new("app", "items", true);
/// Each worker's call of `save_step`, timed.
static STEP: flightrec::trace2::Timer = flightrec::trace2::Timer::new("app", "step", true);

#[inline(never)]
fn load_step(i: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    std::thread::sleep(Duration::from_millis(2));
    i.wrapping_mul(0x9e37_79b9)
}

#[inline(never)]
fn save_step(i: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    std::thread::sleep(Duration::from_millis(2));
    i.rotate_left(7)
}

/// The traced program.
fn child() {
    let session = flightrec::trace2::init();
    flightrec::xray::init_from_env().expect("XRay from the environment");
    // No clock anchor of its own: the runtime writes the wall-clock time at TSC 0
    // in the file header, which places the calls on the wall clock.
    flightrec::trace2::cmd_name("timeline");
    let mut sum = 0u64;
    {
        let _load = flightrec::region!("app", "load");
        std::thread::sleep(Duration::from_millis(3));
        for i in 0..3 {
            sum = sum.wrapping_add(load_step(i));
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    std::thread::sleep(Duration::from_millis(3));
    {
        let _save = flightrec::region!("app", "save");
        std::thread::sleep(Duration::from_millis(3));
        sum = sum.wrapping_add(save_step(sum));
        std::thread::sleep(Duration::from_millis(3));
    }
    std::thread::sleep(Duration::from_millis(2));
    // Workers at once; the runtime says each one's thread id after its
    // `thread_start`, which joins its regions with its FDR records.
    let workers: Vec<_> = (0..WORKERS)
        .map(|k| {
            std::thread::spawn(move || {
                let _th = flightrec::trace2::thread_start(&format!("worker{k}"));
                let label = format!("work{k}");
                let _r = flightrec::region!("worker", &label);
                std::thread::sleep(Duration::from_millis(1));
                let x = {
                    let _t = STEP.scope();
                    save_step(k)
                };
                ITEMS.add(k + 1);
                std::thread::sleep(Duration::from_millis(1));
                x
            })
        })
        .collect();
    for w in workers {
        sum = sum.wrapping_add(w.join().unwrap());
    }
    // A thread without `thread_start`: its context is made at its first event
    // (named after the std thread), and its id said before that event.
    std::thread::Builder::new()
        .name("lazy".into())
        .spawn(|| {
            let _r = flightrec::region!("lazy", "work");
            std::thread::sleep(Duration::from_millis(1));
            let x = save_step(9);
            std::thread::sleep(Duration::from_millis(1));
            x
        })
        .unwrap()
        .join()
        .unwrap();
    flightrec::data!("app", "sum", "{}", sum % 1_000_000);
    // A negative integer and a fraction: both counter values too.
    flightrec::trace2::data("app", "delta", "-3");
    flightrec::trace2::data("app", "ratio", "-0.5");
    println!("sum: {}", sum % 1_000_000);
    let report = flightrec::xray::shutdown().expect("XRay shutdown");
    drop(session);
    println!("trace: {}", report.path.expect("a trace").display());
}

fn flightrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .expect("run flightrec")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The traced program's run: its pid, trace, Trace2 file and the sum it
/// wrote as `data app/sum`.
struct Run {
    pid: u32,
    trace: PathBuf,
    t2: PathBuf,
    sum: i64,
}

/// Runs the traced program.
fn run_child(dir: &Path) -> Run {
    let t2 = dir.join("trace2.json");
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(CHILD, "1")
        .env("GIT_TRACE2_EVENT", &t2)
        .env(
            "XRAY_OPTIONS",
            format!(
                "xray_mode=xray-fdr patch_premain=true xray_logfile_base={}/xray-",
                dir.display()
            ),
        )
        .env("XRAY_FDR_OPTIONS", "func_duration_threshold_us=0")
        .env_remove("GIT_TRACE2")
        .env_remove("GIT_TRACE2_PERF");
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the traced program");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let trace = stdout
        .lines()
        .find_map(|l| l.strip_prefix("trace: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no trace line in {stdout}"));
    let sum = stdout
        .lines()
        .find_map(|l| l.strip_prefix("sum: "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sum line in {stdout}"));
    Run {
        pid,
        trace,
        t2,
        sum,
    }
}

/// A slice of the Chrome output: name, track and time span (µs).
#[derive(Debug, Clone)]
struct Slice {
    name: String,
    pid: u64,
    tid: u64,
    start: f64,
    end: f64,
}

fn slices(doc: &Value) -> Vec<Slice> {
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let start = e["ts"].as_f64().unwrap();
            Slice {
                name: e["name"].as_str().unwrap().to_owned(),
                pid: e["pid"].as_u64().unwrap(),
                tid: e["tid"].as_u64().unwrap(),
                start,
                end: start + e["dur"].as_f64().unwrap(),
            }
        })
        .collect()
}

/// The FDR calls (slices with a `func_id`) of a Chrome output: name, thread,
/// start in ns since the epoch, duration in ns.
fn fdr_calls(doc: &Value) -> Vec<(String, u64, u64, u64)> {
    let origin = doc["otherData"]["origin-ns"].as_u64().unwrap();
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["func_id"].is_u64())
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["tid"].as_u64().unwrap(),
                origin + ns(&e["ts"]),
                ns(&e["dur"]),
            )
        })
        .collect()
}

fn thread_name(doc: &Value, pid: u64, tid: u64) -> String {
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "thread_name" && e["pid"] == pid && e["tid"] == tid)
        .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// The counter (`C`) events of the Chrome output: name, value name, value.
fn chrome_counters(doc: &Value) -> Vec<(String, String, f64)> {
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            let args = e["args"].as_object().unwrap();
            assert_eq!(args.len(), 1, "{e}");
            let (k, v) = args.iter().next().unwrap();
            (
                e["name"].as_str().unwrap().to_owned(),
                k.clone(),
                v.as_f64().unwrap(),
            )
        })
        .collect()
}

fn regions_and_calls_line_up(dir: &Path) {
    let run = run_child(dir);
    let (trace, t2) = (&run.trace, &run.t2);
    let pid = u64::from(run.pid);
    let json = dir.join("timeline.json");
    let out = flightrec(&[
        "convert",
        s(trace),
        s(t2),
        "--format",
        "chrome",
        "-o",
        s(&json),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("converted 2 inputs"), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let all = slices(&doc);

    // Every FDR call exactly as the trace converted alone shows it: the same
    // start and duration to the nanosecond.
    let alone_json = dir.join("alone.json");
    let out = flightrec(&[
        "convert",
        s(trace),
        "--format",
        "chrome",
        "-o",
        s(&alone_json),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let alone: Value = serde_json::from_slice(&std::fs::read(&alone_json).unwrap()).unwrap();
    let mut merged_calls = fdr_calls(&doc);
    let mut alone_calls = fdr_calls(&alone);
    merged_calls.sort();
    alone_calls.sort();
    assert!(alone_calls.len() >= 8, "{alone_calls:?}");
    assert_eq!(merged_calls, alone_calls);

    let one = |name: &str| -> Slice {
        let found: Vec<&Slice> = all.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "{name}: {all:#?}");
        found[0].clone()
    };
    let load = one("app:load");
    let save = one("app:save");
    // The regions of the main thread are on the process's main thread track.
    assert_eq!((load.pid, load.tid), (pid, pid));
    assert_eq!((save.pid, save.tid), (pid, pid));
    assert_eq!(thread_name(&doc, pid, pid), "main");
    assert!(load.end <= save.start, "{load:?} {save:?}");

    let calls = |suffix: &str| -> Vec<Slice> {
        all.iter()
            .filter(|s| s.name.ends_with(suffix) && s.tid == pid)
            .cloned()
            .collect()
    };
    let loads = calls("load_step");
    let saves = calls("save_step");
    assert_eq!(loads.len(), 3, "{all:#?}");
    assert_eq!(saves.len(), 1, "{all:#?}");
    // Each call inside its region, with the 3 ms of sleep around them as margin
    // (the Trace2 times are microseconds, the FDR times come through the
    // wall-time markers and the TSC frequency).
    for c in &loads {
        assert_eq!(c.pid, pid);
        assert!(
            load.start + 2000.0 < c.start && c.end + 2000.0 < load.end,
            "{c:?} not inside {load:?}"
        );
        assert!(c.end - c.start >= 1900.0, "a 2 ms call: {c:?}");
    }
    for c in &saves {
        assert!(
            save.start + 2000.0 < c.start && c.end + 2000.0 < save.end,
            "{c:?} not inside {save:?}"
        );
    }
    // The calls in order, one after the other.
    for w in loads.windows(2) {
        assert!(w[0].end <= w[1].start, "{w:?}");
    }
    // Every worker's region and the call it made inside it on one track: its
    // FDR thread's, named after the Trace2 thread, and no other track named so.
    let mut worker_tids = Vec::new();
    let workers: Vec<String> = (0..WORKERS)
        .map(|k| format!("worker:work{k}"))
        .chain(["lazy:work".to_string()])
        .collect();
    for label in &workers {
        let work = one(label);
        assert_eq!(work.pid, pid);
        assert_ne!(work.tid, pid, "{label}");
        let name = thread_name(&doc, pid, work.tid);
        let base = label.split(':').next().unwrap();
        assert!(
            name.starts_with("th") && name.contains(&format!(":{base}")),
            "{label}: track {name:?}"
        );
        let named_so = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name" && e["args"]["name"] == name.as_str())
            .count();
        assert_eq!(named_so, 1, "{name}: one track");
        let on_track: Vec<&Slice> = all
            .iter()
            .filter(|c| c.name.ends_with("save_step") && (c.pid, c.tid) == (work.pid, work.tid))
            .collect();
        assert_eq!(on_track.len(), 1, "{label}: {all:#?}");
        let call = on_track[0];
        assert!(save.end < work.start, "{save:?} {work:?}");
        // A millisecond of sleep on each side of the call (the margin covers
        // the TSC frequency's error over the run).
        assert!(
            work.start + 500.0 < call.start && call.end + 500.0 < work.end,
            "{call:?} not inside {work:?}"
        );
        worker_tids.push(work.tid);
    }
    worker_tids.sort_unstable();
    worker_tids.dedup();
    assert_eq!(worker_tids.len(), workers.len(), "{worker_tids:?}");
    // Main's call of save_step and one per worker, nothing else.
    let save_calls = all.iter().filter(|c| c.name.ends_with("save_step")).count();
    assert_eq!(save_calls, 1 + workers.len(), "{all:#?}");

    // Counters and timers: per worker (named after it) and the process totals.
    let counters = chrome_counters(&doc);
    let value = |name: &str| -> (String, f64) {
        let found: Vec<_> = counters.iter().filter(|c| c.0 == name).collect();
        assert_eq!(found.len(), 1, "{name}: {counters:?}");
        (found[0].1.clone(), found[0].2)
    };
    for k in 0..WORKERS {
        let thread = thread_name(
            &doc,
            pid,
            worker_tids_by_label(&all, &format!("worker:work{k}")),
        );
        assert_eq!(
            value(&format!("th_counter app/items ({thread})")),
            ("count".into(), (k + 1) as f64)
        );
        let (unit, ns) = value(&format!("th_timer app/step ({thread})"));
        assert_eq!(unit, "ns");
        assert!((2e6..1e9).contains(&ns), "a 2 ms call: {ns}");
    }
    let total: u64 = (1..=WORKERS).sum();
    assert_eq!(value("counter app/items"), ("count".into(), total as f64));
    let (_, step_total) = value("timer app/step");
    assert!(step_total >= 2e6 * WORKERS as f64, "{step_total}");
    assert_eq!(value("data app/sum"), ("value".into(), run.sum as f64));
    assert_eq!(value("data app/delta"), ("value".into(), -3.0));
    assert_eq!(value("data app/ratio"), ("value".into(), -0.5));
    // The thread ids are not values to plot.
    assert!(
        !counters.iter().any(|c| c.0.contains("tid")),
        "{counters:?}"
    );

    perfetto_schema(dir, &[trace, t2], pid, run.sum);
    yaml_refuses_several(trace, t2);
    bad_inputs_among_several(dir, trace, t2);
}

/// The tid of the track of the one slice named `label`.
fn worker_tids_by_label(all: &[Slice], label: &str) -> u64 {
    all.iter().find(|s| s.name == label).unwrap().tid
}

fn perfetto_schema(dir: &Path, inputs: &[&Path], pid: u64, sum: i64) {
    let pf = dir.join("timeline.pftrace");
    let mut args = vec!["convert", "--format", "perfetto", "-q", "-o", s(&pf)];
    args.extend(inputs.iter().map(|p| s(p)));
    let out = flightrec(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let Some(python) = perfetto_python() else {
        return;
    };
    let checker = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/perfetto_check.py");
    let checked = Command::new(python).arg(checker).arg(&pf).output().unwrap();
    assert!(checked.status.success(), "{}", text(&checked.stderr));
    let seen: Value = serde_json::from_slice(&checked.stdout).unwrap();
    let names: Vec<&str> = seen["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for want in ["app:load", "app:save", "worker:work0", "lazy:work"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(names.iter().any(|n| n.ends_with("load_step")), "{names:?}");

    let tracks = seen["tracks"].as_array().unwrap();
    let slices_on = |t: &Value| -> Vec<String> {
        t["slices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_owned())
            .collect()
    };
    // Each worker's region and its call on one thread track of the process,
    // not the main thread's, named after the Trace2 thread.
    let labels: Vec<String> = (0..WORKERS)
        .map(|k| format!("worker:work{k}"))
        .chain(["lazy:work".to_string()])
        .collect();
    let mut thread_tracks = Vec::new();
    for label in &labels {
        let with: Vec<&Value> = tracks
            .iter()
            .filter(|t| slices_on(t).contains(label))
            .collect();
        assert_eq!(with.len(), 1, "{label}: {tracks:#?}");
        let t = with[0];
        assert_eq!(t["pid"].as_u64(), Some(pid));
        assert_ne!(t["tid"].as_u64(), Some(pid), "{label}");
        assert!(t["name"].as_str().unwrap().starts_with("th"), "{t}");
        assert!(
            slices_on(t).iter().any(|n| n.ends_with("save_step")),
            "{label}: its call on its track: {t}"
        );
        thread_tracks.push(t["uuid"].as_u64().unwrap());
    }
    // Counter tracks: a worker's under its thread track, the totals and the
    // numeric data under the process.
    let counter = |name: &str, parent: Option<u64>| -> (String, Vec<f64>, Vec<String>) {
        let found: Vec<&Value> = tracks
            .iter()
            .filter(|t| t["name"] == name && (parent.is_none() || t["parent"].as_u64() == parent))
            .collect();
        assert_eq!(found.len(), 1, "{name} under {parent:?}: {tracks:#?}");
        let values = found[0]["values"].as_array().unwrap();
        (
            found[0]["unit"].as_str().unwrap_or("").to_owned(),
            values.iter().map(|v| v[1].as_f64().unwrap()).collect(),
            values
                .iter()
                .map(|v| v[2].as_str().unwrap().to_owned())
                .collect(),
        )
    };
    for (k, track) in thread_tracks.iter().take(WORKERS as usize).enumerate() {
        let (unit, values, _) = counter("th_counter app/items", Some(*track));
        assert_eq!(
            (unit.as_str(), values),
            ("UNIT_COUNT", vec![(k + 1) as f64])
        );
        let (unit, values, _) = counter("th_timer app/step", Some(*track));
        assert_eq!(unit, "UNIT_TIME_NS");
        assert!(values.len() == 1 && values[0] >= 2e6, "{values:?}");
    }
    let process = tracks
        .iter()
        .find(|t| t["pid"].as_u64() == Some(pid) && t["tid"].is_null() && t["parent"].is_null())
        .unwrap()["uuid"]
        .as_u64();
    let total: u64 = (1..=WORKERS).sum();
    let (unit, values, _) = counter("counter app/items", process);
    assert_eq!((unit.as_str(), values), ("UNIT_COUNT", vec![total as f64]));
    assert_eq!(counter("timer app/step", process).0, "UNIT_TIME_NS");
    assert_eq!(counter("data app/sum", process).1, vec![sum as f64]);
    // int64 and double values, negative ones included, as Perfetto reads them.
    let (_, delta, kind) = counter("data app/delta", process);
    assert_eq!((delta, kind), (vec![-3.0], vec!["int".to_string()]));
    let (_, ratio, kind) = counter("data app/ratio", process);
    assert_eq!((ratio, kind), (vec![-0.5], vec!["double".to_string()]));
    assert_eq!(seen["counters"].as_u64(), Some(2 * WORKERS + 5));
}

fn yaml_refuses_several(trace: &Path, t2: &Path) {
    let out = flightrec(&["convert", s(trace), s(t2), "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("YAML output takes one FDR file"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

fn bad_inputs_among_several(dir: &Path, trace: &Path, t2: &Path) {
    // The trace cut in its first buffer's records, and a Trace2 stream with a
    // damaged line in the middle.
    let bytes = std::fs::read(trace).unwrap();
    let cut = dir.join("cut.xray");
    std::fs::write(&cut, &bytes[..100]).unwrap();
    let lines = std::fs::read_to_string(t2).unwrap();
    let mut damaged = String::new();
    let mut bad_at = 0;
    for (i, l) in lines.lines().enumerate() {
        if i == 3 {
            bad_at = damaged.len();
            damaged.push_str("{\"event\":\"region_enter\",\u{1b}[31m\n");
        }
        damaged.push_str(l);
        damaged.push('\n');
    }
    let damaged_path = dir.join("damaged.json");
    std::fs::write(&damaged_path, damaged).unwrap();
    let json = dir.join("partial.json");
    let out = flightrec(&[
        "convert",
        s(trace),
        s(&cut),
        s(&damaged_path),
        "--format",
        "chrome",
        "-q",
        "-o",
        s(&json),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The same offset and reason as `flightrec verify` gives.
    let verdict = text(&flightrec(&["verify", s(&cut)]).stdout);
    let reason = verdict.trim_end().split_once(": invalid: ").unwrap().1;
    assert!(reason.starts_with("at byte "), "{verdict}");
    assert!(
        err.contains(&format!("{}: {reason}; left out", cut.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: at byte {bad_at}: line 4: not JSON",
            damaged_path.display()
        )),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "control characters escaped: {err:?}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let names: Vec<String> = slices(&doc).into_iter().map(|s| s.name).collect();
    assert!(names.iter().any(|n| n == "app:load"), "{names:?}");
    assert_eq!(names.iter().filter(|n| n.ends_with("load_step")).count(), 3);
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    regions_and_calls_line_up(dir.path());
    println!("timeline_desktop: regions_and_calls_line_up ... ok");
}
