//! One timeline from a desktop program traced with Trace2 and XRay FDR at once.
//!
//! This test has its own `main` (no test harness): run with
//! `FLIGHTREC_TIMELINE_CHILD=1` it is the traced program (regions on its main
//! thread with instrumented functions called inside them, a worker thread with
//! its own region), run without it, it runs that program with `GIT_TRACE2_EVENT`
//! and `XRAY_OPTIONS` set, then `flightrec convert TRACE TRACE2 --format ...`
//! over both files and checks, with the real times of the run:
//!
//! * the main thread's Trace2 regions and its XRay calls are on one track (the
//!   process's main thread), each call inside the region it was made in and
//!   outside the other, and the regions in the order they ran; a worker that
//!   says its thread id (Trace2 `data` `flightrec`/`tid`) shares its track the
//!   same way;
//! * the Perfetto output of the same inputs passes Perfetto's own schema
//!   (`tests/support/perfetto_check.py`, as in `tool_convert_scale.rs`);
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
    std::thread::spawn(|| {
        let _th = flightrec::trace2::thread_start("helper");
        // Trace2 carries no thread id: say it, so that this thread's regions
        // join its FDR thread's track.
        flightrec::data!("flightrec", "tid", "{}", nix::unistd::gettid());
        let _r = flightrec::region!("helper", "work");
        std::thread::sleep(Duration::from_millis(1));
        let x = save_step(1);
        std::thread::sleep(Duration::from_millis(1));
        x
    })
    .join()
    .unwrap();
    flightrec::data!("app", "sum", "{sum}");
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

/// Runs the traced program; returns its pid, trace and Trace2 file.
fn run_child(dir: &Path) -> (u32, PathBuf, PathBuf) {
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
    (pid, trace, t2)
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

fn thread_name(doc: &Value, pid: u64, tid: u64) -> String {
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "thread_name" && e["pid"] == pid && e["tid"] == tid)
        .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn regions_and_calls_line_up(dir: &Path) {
    let (pid, trace, t2) = run_child(dir);
    let pid = u64::from(pid);
    let json = dir.join("timeline.json");
    let out = flightrec(&[
        "convert",
        s(&trace),
        s(&t2),
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
    // The helper thread said its thread id: its Trace2 region and its call
    // share its FDR thread's track, named after the Trace2 thread.
    let work = one("helper:work");
    assert_eq!(work.pid, pid);
    assert_ne!(work.tid, pid);
    assert_eq!(thread_name(&doc, pid, work.tid), "th01:helper");
    let helper_call = all
        .iter()
        .find(|s| s.name.ends_with("save_step") && s.tid != pid)
        .unwrap_or_else(|| panic!("no call on the helper thread: {all:#?}"));
    assert_eq!((helper_call.pid, helper_call.tid), (work.pid, work.tid));
    // A millisecond of sleep on each side of the call (the margin covers the
    // TSC frequency's error over the run).
    assert!(save.end < work.start, "{save:?} {work:?}");
    assert!(
        work.start + 500.0 < helper_call.start && helper_call.end + 500.0 < work.end,
        "{helper_call:?} not inside {work:?}"
    );

    perfetto_schema(dir, &[&trace, &t2]);
    yaml_refuses_several(&trace, &t2);
    bad_inputs_among_several(dir, &trace, &t2);
}

fn perfetto_schema(dir: &Path, inputs: &[&Path]) {
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
    for want in ["app:load", "app:save", "helper:work"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(names.iter().any(|n| n.ends_with("load_step")), "{names:?}");
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
