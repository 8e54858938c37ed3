//! The real `llvm-xray` as the judge of trace files: finding it (under
//! `CI=true` its absence fails the test), running it, and its YAML output parsed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

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

/// Files in `dir` whose names start with `prefix` and are traces (not names files).
pub fn traces_in(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            // A crash while the runtime refreshes a stream's names file can
            // leave its `.names.tmp` beside the whole `.names`: neither is a trace.
            n.starts_with(prefix) && !n.ends_with(".names") && !n.ends_with(".names.tmp")
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

/// The header of `llvm-xray convert --output-format=yaml`.
#[derive(Debug, Deserialize)]
pub struct Header {
    pub version: u32,
    #[serde(rename = "cycle-frequency")]
    pub cycle_frequency: u64,
}

/// A whole `llvm-xray convert --output-format=yaml` document.
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
