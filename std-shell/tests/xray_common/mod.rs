//! Helpers of the desktop XRay tests: the real `llvm-xray`, its YAML output, and
//! child processes (the runtime is process-wide, so each scenario runs in a fresh
//! process: this test binary again, with `XRAY_TEST_CHILD` naming the scenario).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::Deserialize;

/// The environment variable that turns a test binary run into a scenario child.
pub const CHILD_VAR: &str = "XRAY_TEST_CHILD";

/// The `llvm-xray` binary, if installed. Under `CI=true` its absence fails the test.
pub fn llvm_xray() -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("LLVM_XRAY") {
        Some(p) => vec![PathBuf::from(p)],
        None => ["llvm-xray", "llvm-xray-14", "/usr/bin/llvm-xray"]
            .map(PathBuf::from)
            .to_vec(),
    };
    for c in candidates {
        if Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(c);
        }
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("llvm-xray is not installed (Debian package `llvm`, or set LLVM_XRAY); CI must run these checks");
    }
    eprintln!("llvm-xray not found: skipping the llvm-xray checks");
    None
}

/// Runs `llvm-xray`; returns (success, stdout, stderr).
pub fn xray(tool: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(tool)
        .args(args)
        .output()
        .expect("run llvm-xray");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `llvm-xray` and fails the test unless it succeeds; returns stdout.
pub fn xray_ok(tool: &Path, args: &[&str]) -> String {
    let (ok, out, err) = xray(tool, args);
    assert!(ok, "llvm-xray {args:?} failed:\n{err}\n{out}");
    out
}

/// A fresh scratch directory.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flightrec-xray-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs scenario `name` of the current test binary in a child process, via the
/// ignored test named `child_test` (which runs the scenario `CHILD_VAR` names).
pub fn run_child(child_test: &str, name: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        child_test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_VAR, name)
    .env_remove("XRAY_OPTIONS")
    .env_remove("XRAY_FDR_OPTIONS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run child")
}

/// Files in `dir` whose names start with `prefix` and are traces (not names files).
pub fn traces_in(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with(prefix) && !n.ends_with(".names")
        })
        .collect();
    v.sort();
    v
}

/// The names file of a trace.
pub fn names_of(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".names");
    PathBuf::from(s)
}

/// One record of `llvm-xray convert --output-format=yaml`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Record {
    #[serde(rename = "type")]
    pub event_type: u32,
    #[serde(rename = "func-id")]
    pub func_id: u32,
    pub function: String,
    #[serde(default)]
    pub args: Vec<u64>,
    pub cpu: u32,
    pub thread: u32,
    pub process: Option<u32>,
    pub kind: String,
    pub tsc: u64,
    pub data: String,
}

#[derive(Debug, Deserialize)]
pub struct Header {
    pub version: u32,
    #[serde(rename = "cycle-frequency")]
    pub cycle_frequency: u64,
}

#[derive(Debug, Deserialize)]
pub struct Trace {
    pub header: Header,
    pub records: Vec<Record>,
}

/// `llvm-xray convert --output-format=yaml` of `trace`, parsed.
pub fn convert_yaml(tool: &Path, trace: &Path) -> Trace {
    let text = xray_ok(
        tool,
        &["convert", "--output-format=yaml", trace.to_str().unwrap()],
    );
    serde_yaml::from_str(&text).expect("llvm-xray YAML")
}

/// Records grouped by thread, each thread's in TSC order.
pub fn by_thread(records: &[Record]) -> BTreeMap<u32, Vec<Record>> {
    let mut m: BTreeMap<u32, Vec<Record>> = BTreeMap::new();
    for r in records {
        m.entry(r.thread).or_default().push(r.clone());
    }
    for v in m.values_mut() {
        v.sort_by_key(|r| r.tsc);
    }
    m
}

/// Checks a trace with every judge: `fdr-dump --verify`, `convert` (returned),
/// `stack` with the names file. Skips (returns `None`) without llvm-xray.
pub fn judge(trace: &Path) -> Option<Trace> {
    let tool = llvm_xray()?;
    let t = trace.to_str().unwrap();
    xray_ok(&tool, &["fdr-dump", "--verify", t]);
    let parsed = convert_yaml(&tool, trace);
    let names = names_of(trace);
    assert!(names.exists(), "no names file beside {t}");
    xray_ok(&tool, &["stack", "-k", "-m", names.to_str().unwrap(), t]);
    Some(parsed)
}

/// `KEY=VALUE` lines a child printed on stdout.
pub fn child_values(out: &Output) -> BTreeMap<String, String> {
    // libtest prints `test NAME ... ` before the child's first line.
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Fails with the child's output unless it exited successfully.
pub fn assert_child_ok(out: &Output) {
    assert!(
        out.status.success(),
        "child failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The ids the workload uses for its explicitly numbered functions.
pub const OUTER_ID: u32 = 1000;
pub const ARG_ID: u32 = 1001;
/// The typed event type of the workload.
pub const EVENT_TYPE: u16 = 7;

/// A traced leaf function (its id and name come from `xray_fn!`).
#[inline(never)]
pub fn leaf(x: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    std::hint::black_box(x.wrapping_mul(31))
}

/// One thread's deterministic workload: `rounds` rounds of an outer function, a
/// function with an argument around the leaf, a custom and a typed event.
pub fn workload(thread: u64, rounds: u64) {
    use flightrec::core::fdr::FunctionId;
    let outer = FunctionId::new(OUTER_ID).unwrap();
    let arg = FunctionId::new(ARG_ID).unwrap();
    flightrec::xray::set_function_name(outer, "outer");
    flightrec::xray::set_function_name(arg, "with_arg");
    for r in 0..rounds {
        let _o = flightrec::xray::enter(outer);
        {
            let _a = flightrec::xray::enter_with_arg(arg, thread * 1000 + r);
            leaf(r);
        }
        flightrec::xray::custom_event(format!("t{thread} r{r}").as_bytes());
        flightrec::xray::typed_event(EVENT_TYPE, b"typed");
    }
}

/// What `workload(thread, rounds)` must look like in llvm-xray's YAML:
/// (kind, func-id or None for events, args, data).
pub fn expected_workload(
    thread: u64,
    rounds: u64,
    leaf_id: u32,
) -> Vec<(String, Option<u32>, Vec<u64>, String)> {
    let mut v = Vec::new();
    let f = |k: &str, id: u32| (k.to_owned(), Some(id), vec![], String::new());
    for r in 0..rounds {
        v.push(f("function-enter", OUTER_ID));
        v.push((
            "function-enter-arg".into(),
            Some(ARG_ID),
            vec![thread * 1000 + r],
            String::new(),
        ));
        v.push(f("function-enter", leaf_id));
        v.push(f("function-exit", leaf_id));
        v.push(f("function-exit", ARG_ID));
        v.push((
            "custom-event".into(),
            None,
            vec![],
            format!("t{thread} r{r}"),
        ));
        v.push(("typed-event".into(), None, vec![], "typed".into()));
        v.push(f("function-exit", OUTER_ID));
    }
    v
}

/// A YAML record in the shape of `expected_workload` (events carry the previous
/// record's func-id in llvm-xray's output, so it is dropped).
pub fn shape(r: &Record) -> (String, Option<u32>, Vec<u64>, String) {
    let event = r.kind.ends_with("-event");
    (
        r.kind.clone(),
        (!event).then_some(r.func_id),
        r.args.clone(),
        r.data.clone(),
    )
}

/// Whether a YAML record is a function record.
pub fn is_function(r: &Record) -> bool {
    r.kind.starts_with("function-")
}

/// Compares two sequences and reports the first difference briefly.
pub fn assert_same_seq<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: first difference at {i}: got {:?}, want {:?}",
            &got[i..(i + 3).min(got.len())],
            &want[i..(i + 3).min(want.len())]
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
}

/// The id the names table gave the workload's leaf (printed by children).
pub fn leaf_id_in_this_process() -> u32 {
    (1..=flightrec::xray::names::max_named_id())
        .find(|&id| {
            flightrec::xray::names::function_name(id)
                .is_some_and(|n| n.ends_with("xray_common::leaf"))
        })
        .unwrap_or(0)
}

/// Judges a trace of `threads` workers running `workload(t, rounds)` and a main
/// thread with one scope, written by the child whose output is `out`: llvm-xray's
/// verify, convert (compared record by record with what was recorded), account and
/// stack with the names file.
pub fn check_workload(out: &Output, trace: &Path, workers: u64, rounds: u64) {
    let values = child_values(out);
    let Some(parsed) = judge(trace) else { return };
    assert_eq!(parsed.header.version, 5);
    assert_eq!(parsed.header.cycle_frequency.to_string(), values["FREQ"]);
    let pid: u32 = values["PID"].parse().unwrap();
    assert!(parsed.records.iter().all(|r| r.process == Some(pid)));

    let threads = by_thread(&parsed.records);
    assert_eq!(threads.len() as u64, workers + 1, "workers and main");
    let leaf_id: u32 = values["LEAF"].parse().unwrap();
    let mut seen = Vec::new();
    for recs in threads.values() {
        if recs.len() == 2 {
            // main: its scope around the workers
            assert_eq!(recs[0].kind, "function-enter");
            assert_eq!(recs[1].kind, "function-exit");
            continue;
        }
        let t = recs.iter().find(|r| !r.args.is_empty()).unwrap().args[0] / 1000;
        let got: Vec<_> = recs.iter().map(shape).collect();
        assert_same_seq(&got, &expected_workload(t, rounds, leaf_id), "workload");
        seen.push(t);
    }
    seen.sort();
    assert_eq!(seen, (0..workers).collect::<Vec<_>>());

    // Names: the names file symbolizes both kinds of id for account and stack.
    let tool = llvm_xray().unwrap();
    let names = names_of(trace);
    let instr_map = format!("--instr_map={}", names.display());
    let account = xray_ok(
        &tool,
        &["account", "-k", &instr_map, trace.to_str().unwrap()],
    );
    // `account` does not sort records across threads and skips (with -k) those
    // older than the first one it read, so its counts depend on thread order in
    // the file (a known llvm-xray 14 limitation): check the names it shows.
    for name in ["xray_common::leaf", "outer", "with_arg"] {
        assert!(
            account.lines().any(|l| l.ends_with(name)),
            "no {name} in\n{account}"
        );
    }
    // `stack` follows each thread: exact counts per call stack.
    let stack = xray_ok(
        &tool,
        &[
            "stack",
            "--aggregate-threads",
            &instr_map,
            trace.to_str().unwrap(),
        ],
    );
    let count_of = |name: &str| -> u64 {
        let line = stack
            .lines()
            .find(|l| l.starts_with('#') && l.contains(name))
            .unwrap_or_else(|| panic!("no {name} in\n{stack}"));
        line.split_whitespace()
            .rev()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap()
    };
    for name in ["xray_common::leaf", "outer", "with_arg"] {
        assert_eq!(count_of(name), workers * rounds, "{name} in\n{stack}");
    }
    assert_eq!(count_of("main scope"), 1, "{stack}");
    let flame = xray_ok(
        &tool,
        &[
            "stack",
            "-all-stacks",
            "-stack-format=flame",
            "-m",
            names.to_str().unwrap(),
            trace.to_str().unwrap(),
        ],
    );
    assert!(
        flame
            .lines()
            .any(|l| l.contains(";outer;with_arg;") && l.contains("xray_common::leaf")),
        "{flame}"
    );
}
