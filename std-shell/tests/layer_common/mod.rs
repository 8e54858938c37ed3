//! What the tests of the `tracing` layer and of async code share: a scenario
//! child process with Trace2 (event format) and XRay FDR on, the Trace2 events
//! parsed, each thread's regions checked for balance, and the FDR trace judged
//! by the real `llvm-xray`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use flightrec_testkit::child::{assert_child_ok, run_child, scratch_dir, CHILD_VAR};
use flightrec_testkit::xray_tool::{llvm_xray, names_of, xray_ok};
use serde_json::Value;

/// The prefix of the Trace2 variables the scenarios read.
pub const PREFIX: &str = "LAYERTEST_TRACE2";

/// Starts Trace2 (event target `<dir>/events`) and XRay FDR (flight recorder,
/// every call kept, trace `<dir>/fdr-*`) in a scenario child.
pub fn start_tracing(dir: &Path) -> flightrec::trace2::Session {
    let t2 = flightrec::trace2::Builder::new().prefix(PREFIX).init();
    let base = format!("{}/fdr-", dir.display());
    let config = flightrec::xray::Config::builder()
        .logfile_base(base)
        .func_duration_threshold_us(0)
        // 1 MiB a thread: no scenario wraps its ring around.
        .buffer_size(256 * 1024)
        .buffer_max(64)
        .thread_buffers(4)
        .build()
        .unwrap();
    flightrec::xray::init(config).unwrap();
    t2
}

/// Ends a scenario child: writes the FDR trace and checks that no record was
/// lost or overwritten (a wrapped ring would cut calls in two).
pub fn finish_tracing(t2: flightrec::trace2::Session) {
    let report = flightrec::xray::shutdown().unwrap();
    let s = report.stats;
    assert_eq!(
        (
            s.records_dropped,
            s.buffers_overwritten,
            s.records_without_ring
        ),
        (0, 0, 0),
        "{s:?}"
    );
    drop(t2);
}

/// Runs scenario `name` in a child; returns its scratch directory.
pub fn run_scenario(child_test: &str, name: &str) -> PathBuf {
    let dir = scratch_dir(name);
    let events = dir.join("events");
    let out = run_child(
        child_test,
        name,
        &[
            (&format!("{PREFIX}_EVENT"), events.to_str().unwrap()),
            // Every region (git's event target writes 2 levels by default).
            (&format!("{PREFIX}_EVENT_NESTING"), "100"),
            ("SCENARIO_DIR", dir.to_str().unwrap()),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("HOME", dir.to_str().unwrap()),
        ],
    );
    assert_child_ok(&out);
    dir
}

/// The scenario directory a child writes to.
pub fn child_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("SCENARIO_DIR").expect("SCENARIO_DIR"))
}

/// Every line of the event target, parsed.
pub fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The events named `event`.
pub fn named<'a>(events: &'a [Value], event: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == event).collect()
}

/// Checks that every thread's regions nest: each `region_enter` one level
/// deeper than the thread's open regions, each `region_leave` the innermost
/// open region's (same category and label) at its level, and nothing left
/// open. Returns each thread's deepest nesting and its number of regions.
pub fn balanced_regions(events: &[Value]) -> BTreeMap<String, (usize, usize)> {
    let mut open: BTreeMap<String, Vec<(Value, Value)>> = BTreeMap::new();
    let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for e in events {
        let thread = e["thread"].as_str().unwrap_or_default().to_owned();
        let stack = open.entry(thread.clone()).or_default();
        let stats = seen.entry(thread.clone()).or_default();
        match e["event"].as_str() {
            Some("region_enter") => {
                stack.push((e["category"].clone(), e["label"].clone()));
                assert_eq!(e["nesting"], stack.len(), "{thread}: {e}");
                stats.0 = stats.0.max(stack.len());
                stats.1 += 1;
            }
            Some("region_leave") => {
                assert_eq!(e["nesting"], stack.len(), "{thread}: {e}");
                let top = stack
                    .pop()
                    .unwrap_or_else(|| panic!("{thread}: leave with nothing open: {e}"));
                assert_eq!(
                    top,
                    (e["category"].clone(), e["label"].clone()),
                    "{thread}: {e}"
                );
            }
            _ => {}
        }
    }
    for (thread, stack) in &open {
        assert!(stack.is_empty(), "{thread} left regions open: {stack:?}");
    }
    seen
}

/// The only FDR trace of a scenario directory.
pub fn fdr_trace(dir: &Path) -> PathBuf {
    let traces = flightrec_testkit::xray_tool::traces_in(dir, "fdr-");
    assert_eq!(traces.len(), 1, "{traces:?}");
    traces.into_iter().next().unwrap()
}

/// Judges an FDR trace with `llvm-xray`: `fdr-dump --verify`, `stack` with
/// the names file, and `account` with the names file and without `-k` (an
/// unbalanced call stack on any thread fails it). `account` reads records in
/// file order and rejects one older than any before it, and an FDR file holds
/// each thread's buffers one after the other; so it reads the same records as
/// `llvm-xray convert` gives them, sorted by time (a YAML trace, which
/// `llvm-xray` reads like an FDR file). Returns `account`'s output (`None`
/// without llvm-xray).
pub fn judge_fdr(trace: &Path) -> Option<String> {
    let tool = llvm_xray()?;
    let t = trace.to_str().unwrap();
    let names = names_of(trace);
    let m = names.to_str().unwrap();
    xray_ok(&tool, &["fdr-dump", "--verify", t]);
    xray_ok(&tool, &["stack", "-m", m, t]);
    let yaml = xray_ok(&tool, &["convert", "--output-format=yaml", t]);
    // One record a line (`  - { type: 0, ..., tsc: N, data: '' }`) after the
    // header: only the order of those lines changes.
    let (header, body) = yaml.split_once("\nrecords:\n").expect("llvm-xray YAML");
    let mut records: Vec<&str> = body.lines().filter(|l| l.starts_with("  - {")).collect();
    assert_eq!(
        records.len(),
        body.lines().filter(|l| l.trim() != "...").count(),
        "one record a line"
    );
    let tsc = |r: &str| -> u64 {
        let at = r.find(" tsc: ").expect("tsc") + " tsc: ".len();
        r[at..]
            .split(',')
            .next()
            .unwrap()
            .trim()
            .parse()
            .expect("tsc value")
    };
    records.sort_by_key(|r| tsc(r));
    // llvm-xray 14 reads YAML traces of version 1 only; the records are the
    // same (the FDR file's version 5 is its binary layout, not the YAML's).
    let header = header.replacen("version:         5", "version:         1", 1);
    assert!(header.contains("version:         1"), "{header}");
    let out = format!("{header}\nrecords:\n{}\n...\n", records.join("\n"));
    let sorted = PathBuf::from(format!("{t}.sorted.yaml"));
    std::fs::write(&sorted, out).unwrap();
    Some(xray_ok(
        &tool,
        &["account", "-m", m, sorted.to_str().unwrap()],
    ))
}

/// The function names of an FDR trace's names file.
pub fn fdr_names(trace: &Path) -> Vec<String> {
    use flightrec::core::names::{elf, table, SECTION};
    let file = std::fs::read(names_of(trace)).unwrap();
    let section = elf::find_section(&file, SECTION).unwrap().unwrap();
    table::entries(section)
        .map(|e| e.unwrap().name.to_owned())
        .collect()
}
