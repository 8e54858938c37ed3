//! One timeline from a firmware's `flightrec recv` directory: its sources share
//! one clock.
//!
//! Two recording contexts of one device (a main loop and an interrupt handler,
//! each with its own ring and source id) record on the device's one TSC
//! (12.5 MHz) with a wall clock set at boot, and send their buffers and a Trace2
//! line over the link, as the firmware example does. `flightrec recv` writes the
//! directory; `flightrec convert DIR` must place the interrupt inside the main
//! loop's call it interrupted, to the tick (80 ns), and the Trace2 line (placed by
//! its `t_abs`, the firmware having no wall time for Trace2) where it was sent.
//!
//! The wall-time markers flightrec's writer puts in each buffer carry whole
//! seconds only, and the two sources' first buffers fall in different seconds:
//! each file alone bounds its clock within a second, differently. Converted as
//! two separate files, the interrupt lands outside the call (checked, so the
//! test shows what sharing the clock does); converted as the directory, the
//! bounds are combined and both files get the same offset.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use flightrec_host::core::clock::Timestamp;
use flightrec_host::core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_host::core::fdr::writer::{Walltime, WriterConfig};
use flightrec_host::core::fdr::FunctionId;
use flightrec_host::core::link::{LinkWriter, Source};
use serde_json::Value;

const HZ: u64 = 12_500_000;

struct Wire(Vec<u8>);

impl embedded_io::ErrorType for Wire {
    type Error = std::convert::Infallible;
}

impl embedded_io::Write for Wire {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

fn tick(seconds: f64) -> u64 {
    (seconds * HZ as f64).round() as u64
}

/// The link stream of the device: main loop (source 1) calls `poll` (#1) from
/// 0.1 s to 0.9 s and inside it `step` (#2) one tick after the interrupt
/// (source 2, `isr` #9) entered at 0.8 s; the interrupt lasts two ticks. A
/// Trace2 `data` line is sent at 0.85 s.
fn device_stream() -> Vec<u8> {
    let mut storage = [vec![0u8; 4096], vec![0u8; 4096]];
    let slots = [[Slot::NEW; 4], [Slot::NEW; 4]];
    let [sa, sb] = &mut storage;
    let mut ring_a = Ring::new(sa, &slots[0], Policy::Streaming).unwrap();
    let mut ring_b = Ring::new(sb, &slots[1], Policy::Streaming).unwrap();
    // The wall clock at boot (TSC 0): 1,700,000,000.25 s.
    let boot = Walltime {
        seconds: 1_700_000_000,
        micros: 250_000,
    };
    let cfg_a = RecorderConfig::new(WriterConfig::new(1), HZ).with_epoch(boot, 0);
    let cfg_b = RecorderConfig::new(WriterConfig::new(2), HZ).with_epoch(boot, 0);
    let mut src_a = Source::new(1, cfg_a.file_header(ring_a.buffer_size()));
    let mut src_b = Source::new(2, cfg_b.file_header(ring_b.buffer_size()));
    let (mut rec_a, mut con_a) = ring_a.split(cfg_a);
    let (mut rec_b, mut con_b) = ring_b.split(cfg_b);
    let mut link = LinkWriter::new(Wire(Vec::new()));
    let ts = |tsc| Timestamp { tsc, cpu: 0 };
    let id = |n| FunctionId::new(n).unwrap();

    rec_a.enter(id(1), ts(tick(0.1))).unwrap();
    rec_b.enter(id(9), ts(tick(0.8))).unwrap();
    rec_a.enter(id(2), ts(tick(0.8) + 1)).unwrap();
    rec_b.exit(id(9), ts(tick(0.8) + 2)).unwrap();
    rec_a.exit(id(2), ts(tick(0.8) + 3)).unwrap();
    let line = br#"{"event":"data","sid":"20250101T000000.000000Z-Hqemu-P00000001","thread":"main","time":"1970-01-01T00:00:00.000000Z","t_abs":0.850000,"t_rel":0.850000,"nesting":1,"category":"link","key":"sent","value":"1"}"#;
    link.send_trace2_line(1, line).unwrap();
    rec_a.exit(id(1), ts(tick(0.9))).unwrap();
    rec_a.flush();
    rec_b.flush();
    while link.flush_one(&mut src_a, &mut con_a).unwrap() {}
    while link.flush_one(&mut src_b, &mut con_b).unwrap() {}
    link.into_inner().0
}

fn flightrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .expect("run flightrec")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The Chrome JSON of `inputs`, after checking the conversion succeeded.
fn convert(dir: &Path, inputs: &[&Path]) -> (Value, String) {
    let out_path = dir.join("out.json");
    let mut args = vec![
        "convert",
        "--format",
        "chrome",
        "--no-names",
        "-o",
        s(&out_path),
    ];
    args.extend(inputs.iter().map(|p| s(p)));
    let out = flightrec(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    (doc, text(&out.stderr))
}

/// (start, end) in µs of the call named `name`, and its thread's name.
fn span(doc: &Value, name: &str) -> (f64, f64, String) {
    let events = doc["traceEvents"].as_array().unwrap();
    let e = events
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"));
    let track = events
        .iter()
        .find(|m| m["name"] == "thread_name" && m["pid"] == e["pid"] && m["tid"] == e["tid"])
        .map(|m| m["args"]["name"].as_str().unwrap().to_owned())
        .unwrap_or_default();
    let start = e["ts"].as_f64().unwrap();
    (start, start + e["dur"].as_f64().unwrap(), track)
}

fn recv_dir(dir: &Path) -> PathBuf {
    let capture = dir.join("capture.bin");
    std::fs::write(&capture, device_stream()).unwrap();
    let traces = dir.join("board");
    let out = flightrec(&["recv", s(&capture), "-o", s(&traces), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(traces.join("source-1.xray").is_file() && traces.join("source-2.xray").is_file());
    traces
}

/// Zeroes the wall-clock time at TSC 0 in the headers of the directory's FDR
/// files, as a writer that does not know it (or compiler-rt) leaves them: only
/// the buffers' whole-second markers are left to place them.
fn strip_header_walltime(traces: &Path) {
    for source in ["source-1.xray", "source-2.xray"] {
        let path = traces.join(source);
        let mut bytes = std::fs::read(&path).unwrap();
        assert_ne!(bytes[24..32], [0; 8], "the writer knew the wall clock");
        bytes[24..32].fill(0);
        std::fs::write(&path, bytes).unwrap();
    }
}

/// With the wall-clock time at TSC 0 in each file's header (the device knew its
/// wall clock at boot), every source is placed exactly, together or apart.
#[test]
fn the_header_s_wall_clock_places_each_source_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let traces = recv_dir(dir.path());
    for inputs in [
        vec![traces.clone()],
        vec![traces.join("source-1.xray"), traces.join("source-2.xray")],
    ] {
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let (doc, err) = convert(dir.path(), &inputs);
        assert!(!err.contains("warning"), "{err}");
        let (poll_start, poll_end, _) = span(&doc, "1");
        let (isr_start, isr_end, _) = span(&doc, "9");
        assert!(poll_start < isr_start && isr_end < poll_end);
        let (step_start, _, _) = span(&doc, "2");
        // The interrupt entered one tick (0.08 µs) before `step`, to the tick.
        assert!(
            (step_start - isr_start - 0.08).abs() < 0.001,
            "{inputs:?}: {step_start} {isr_start}"
        );
    }
}

#[test]
fn two_sources_of_one_recv_directory_share_one_clock() {
    let dir = tempfile::tempdir().unwrap();
    let traces = recv_dir(dir.path());
    strip_header_walltime(&traces);

    let (doc, err) = convert(dir.path(), &[&traces]);
    assert!(err.contains("converted 3 inputs"), "{err}");
    // The clock is known within a second, and said so.
    assert!(
        err.contains("warning: ") && err.contains("within 0.350 s"),
        "{err}"
    );
    let (poll_start, poll_end, main_track) = span(&doc, "1");
    let (step_start, _, _) = span(&doc, "2");
    let (isr_start, isr_end, isr_track) = span(&doc, "9");
    assert_eq!(main_track, "source 1");
    assert_eq!(isr_track, "source 2");
    // The interrupt inside poll, entered one tick (0.08 µs) before step.
    assert!(poll_start < isr_start && isr_end < poll_end);
    assert!(
        (step_start - isr_start - 0.08).abs() < 0.001,
        "{step_start} {isr_start}"
    );
    assert!(isr_start < step_start && step_start < isr_end);
    assert!((poll_end - poll_start - 800_000.0).abs() < 0.001);
    // One process, named after the directory.
    let events = doc["traceEvents"].as_array().unwrap();
    let procs: Vec<&Value> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .collect();
    assert_eq!(procs.len(), 1, "{procs:?}");
    assert_eq!(procs[0]["args"]["name"], "board");
    // The Trace2 line at its t_abs: 0.05 s after the interrupt.
    let data = events
        .iter()
        .find(|e| e["name"] == "data link/sent")
        .expect("the Trace2 line");
    let at = data["ts"].as_f64().unwrap();
    assert!((at - isr_start - 50_000.0).abs() < 1.0, "{at} {isr_start}");

    // The same files as separate inputs: each on its own clock bound, the
    // interrupt is no longer inside the call it interrupted.
    let (apart, _) = convert(
        dir.path(),
        &[&traces.join("source-1.xray"), &traces.join("source-2.xray")],
    );
    let (poll_start, poll_end, _) = span(&apart, "1");
    let (isr_start, isr_end, _) = span(&apart, "9");
    assert!(!(poll_start < isr_start && isr_end < poll_end));
}

#[test]
fn a_recv_directory_converts_to_perfetto_and_refuses_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let traces = recv_dir(dir.path());
    let pf = dir.path().join("t.pftrace");
    let out = flightrec(&[
        "convert",
        "--format",
        "perfetto",
        "-q",
        "-o",
        s(&pf),
        s(&traces),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/perfetto-venv/bin/python");
    let python = std::env::var_os("FLIGHTREC_PERFETTO_PYTHON").map_or(python, PathBuf::from);
    if python.is_file() {
        let checker =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/perfetto_check.py");
        let checked = Command::new(python).arg(checker).arg(&pf).output().unwrap();
        assert!(checked.status.success(), "{}", text(&checked.stderr));
        let seen: Value = serde_json::from_slice(&checked.stdout).unwrap();
        assert_eq!(seen["slices"], 3, "{seen}");
        assert_eq!(seen["instants"], 1, "{seen}");
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no Python with the perfetto package (run .ci/steps/perfetto.sh)"
        );
    }
    let out = flightrec(&["convert", "--format", "yaml", s(&traces)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("YAML output takes one FDR file"));
}

#[test]
fn a_fifo_and_a_missing_file_among_the_inputs_are_named_and_the_rest_converted() {
    let dir = tempfile::tempdir().unwrap();
    let traces = recv_dir(dir.path());
    let fifo = dir.path().join("pipe.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let missing = dir.path().join("missing.xray");
    let out_path = dir.path().join("out.json");
    // Nobody writes to the FIFO: opening it would wait forever.
    let mut child = Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(["convert", "--format", "chrome", "-q", "-o", s(&out_path)])
        .args([&traces, &fifo, &missing])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("convert waits on the FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: not a regular file", fifo.display())),
        "{err}"
    );
    assert!(err.contains(&format!("{}: ", missing.display())), "{err}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    let (start, end, _) = span(&doc, "1");
    assert!((end - start - 800_000.0).abs() < 0.001);
}
