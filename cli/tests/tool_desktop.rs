//! The host tool on the desktop runtime's files: a trace and its `<trace>.names`
//! ELF file.
//!
//! End to end, the example program `xray-host` is traced through `XRAY_OPTIONS` in
//! both modes, then `flightrec verify`, `dump` and `convert` read the trace and find
//! the names file beside it. `llvm-xray` 14 judges: `dump --no-names` must print what
//! `llvm-xray fdr-dump` prints, and `convert --format yaml` (with names) what
//! `llvm-xray convert --output-format=yaml --symbolize --instr_map T.names` prints.
//! Without `llvm-xray` those comparisons are skipped with a message, except under
//! `CI=true`, where they fail.
//!
//! Names files written by the runtime's own writer also check the errors: damaged,
//! foreign and misplaced files give a clear message and never a panic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use flightrec_host::core::fdr::FunctionId;
use flightrec_testkit::xray_tool::{llvm_xray, xray_ok};

/// The function names the example registers.
const EXAMPLE_NAMES: [&str; 4] = [
    "worker",
    "handle_batch",
    "xray_host::parse",
    "xray_host::checksum",
];

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

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flightrec-tool-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `xray-host` example, built once with the profile of this test.
fn xray_host() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| flightrec_testkit::examples::build_example("flightrec", "xray-host"))
}

/// Runs the example with `XRAY_OPTIONS`; returns the trace and its names file.
fn trace_example(dir: &Path, mode: &str) -> (PathBuf, PathBuf) {
    let base = dir.join(format!("{mode}-"));
    let out = Command::new(xray_host())
        .env(
            "XRAY_OPTIONS",
            format!(
                "xray_mode=xray-fdr patch_premain=true xray_logfile_base={}",
                base.display()
            ),
        )
        .env(
            "XRAY_FDR_OPTIONS",
            format!("func_duration_threshold_us=0 flightrec_mode={mode}"),
        )
        .output()
        .expect("run xray-host");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let field = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no `{key}` line in:\n{stdout}"))
    };
    let (trace, names) = (field("trace: "), field("names: "));
    assert!(
        trace.starts_with(dir) && trace.is_file(),
        "{}",
        trace.display()
    );
    // The tool looks exactly where the runtime writes.
    assert_eq!(names, flightrec_host::names::names_beside(&trace));
    assert!(names.is_file());
    (trace, names)
}

/// `flightrec convert --format yaml` equals llvm-xray's symbolized YAML byte for
/// byte; on a difference, the first differing line is shown.
fn assert_same_yaml(ours: &str, theirs: &str, what: &str) {
    if let Some((i, (a, b))) = ours
        .lines()
        .zip(theirs.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!("{what}: line {}: ours\n{a}\nllvm-xray's\n{b}", i + 1);
    }
    assert_eq!(ours, theirs, "{what}");
}

fn check_desktop_trace(mode: &str) {
    let dir = scratch(&format!("desktop-{mode}"));
    let (trace, names) = trace_example(&dir, mode);

    // verify
    let out = flightrec(&["verify", s(&trace)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains(": ok: version 5, "));

    // dump: finds the names beside the trace, says nothing about it...
    let dumped = flightrec(&["dump", s(&trace)]);
    assert_eq!(dumped.status.code(), Some(0), "{}", text(&dumped.stderr));
    assert_eq!(text(&dumped.stderr), "", "quiet without -v");
    let lines = text(&dumped.stdout);
    let mut seen = BTreeSet::new();
    for l in lines.lines().filter(|l| l.starts_with("<Function ")) {
        let name = l
            .split_once(" (")
            .and_then(|(_, rest)| rest.split_once(") delta"))
            .map(|(n, _)| n)
            .unwrap_or_else(|| panic!("function record without a name: {l}"));
        assert!(EXAMPLE_NAMES.contains(&name), "{l}");
        seen.insert(name.to_owned());
    }
    for name in ["handle_batch", "xray_host::parse", "xray_host::checksum"] {
        assert!(seen.contains(name), "{mode}: no {name} in the dump");
    }
    // ... says so with -v, and reads the same names when they are given.
    let verbose = flightrec(&["dump", "-v", s(&trace)]);
    assert_eq!(verbose.stdout, dumped.stdout);
    assert_eq!(
        text(&verbose.stderr),
        format!(
            "flightrec: 4 names from {} (beside the trace)\n",
            names.display()
        )
    );
    let given = flightrec(&["dump", s(&trace), "--names", s(&names)]);
    assert_eq!(given.stdout, dumped.stdout);

    // convert --format chrome: calls named after the functions.
    let json_path = dir.join("trace.json");
    let out = flightrec(&[
        "convert",
        s(&trace),
        "--format",
        "chrome",
        "-o",
        s(&json_path),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let mut calls: BTreeMap<String, usize> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" {
            *calls
                .entry(e["name"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    for name in calls.keys() {
        assert!(EXAMPLE_NAMES.contains(&name.as_str()), "call named {name}");
    }
    for name in ["handle_batch", "xray_host::parse", "xray_host::checksum"] {
        assert!(calls.get(name).is_some_and(|&n| n > 0), "{mode}: {calls:?}");
    }
    if mode == "streaming" {
        // Nothing is overwritten: every worker thread's scope is there.
        assert_eq!(calls.get("worker"), Some(&4), "{calls:?}");
    }

    // convert --format yaml, judged by llvm-xray with the same names file.
    let ours = flightrec(&["convert", s(&trace), "--format", "yaml"]);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let ours = text(&ours.stdout);
    assert!(ours.contains("function: 'xray_host::parse',"), "{mode}");
    let Some(tool) = llvm_xray() else { return };
    let theirs = xray_ok(
        &tool,
        &[
            "convert",
            "--output-format=yaml",
            "--symbolize",
            "--instr_map",
            s(&names),
            s(&trace),
        ],
    );
    assert!(theirs.contains("function: 'xray_host::parse',"), "{mode}");
    assert_same_yaml(&ours, &theirs, mode);
    // Without names, dump is llvm-xray's fdr-dump byte for byte.
    let plain = flightrec(&["dump", "--no-names", s(&trace)]);
    assert_eq!(
        text(&plain.stdout),
        xray_ok(&tool, &["fdr-dump", s(&trace)]),
        "{mode}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flight_recorder_trace_end_to_end() {
    check_desktop_trace("flight-recorder");
}

#[test]
fn streaming_trace_end_to_end() {
    check_desktop_trace("streaming");
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(name)
}

/// The runtime's names file for `crafted-v5.xray`'s functions 1 to 3, with id 2
/// left without a name, written by the runtime's own writer.
fn crafted_names_elf() -> Vec<u8> {
    static ELF: OnceLock<Vec<u8>> = OnceLock::new();
    ELF.get_or_init(|| {
        use flightrec::xray::names::{set_function_name, write_names_elf};
        assert!(set_function_name(FunctionId::new(1).unwrap(), "main"));
        assert!(set_function_name(
            FunctionId::new(3).unwrap(),
            "uart::flush \"now\""
        ));
        let mut elf = Vec::new();
        assert!(write_names_elf(&mut elf, 3));
        elf
    })
    .clone()
}

#[test]
fn names_file_beside_a_trace_is_used_with_llvm_xrays_symbols() {
    let dir = scratch("beside");
    let trace = dir.join("crafted");
    std::fs::copy(data("xray/crafted-v5.xray"), &trace).unwrap();
    let names = dir.join("crafted.names");
    std::fs::write(&names, crafted_names_elf()).unwrap();

    let out = flightrec(&["dump", s(&trace)]);
    assert_eq!(out.status.code(), Some(0));
    let dumped = text(&out.stdout);
    assert!(
        dumped.contains("<Function Enter: #1 (main) delta = +0>"),
        "{dumped}"
    );
    assert!(dumped.contains("#3 (uart::flush 'now')"), "{dumped}");
    // Id 2 has no name: printed bare, as without names.
    assert!(dumped.contains("<Function Tail Exit: #2 delta = +100>"));

    let out = flightrec(&["convert", "--format", "yaml", s(&trace)]);
    assert_eq!(out.status.code(), Some(0));
    let ours = text(&out.stdout);
    assert!(ours.contains("func-id: 2, function: '#2',"), "{ours}");
    assert!(ours.contains("function: 'uart::flush ''now''',"), "{ours}");
    if let Some(tool) = llvm_xray() {
        let theirs = xray_ok(
            &tool,
            &[
                "convert",
                "--output-format=yaml",
                "--symbolize",
                "--instr_map",
                s(&names),
                s(&trace),
            ],
        );
        assert_same_yaml(&ours, &theirs, "crafted-v5 with names");
    }

    // --no-names ignores the file; -v says when there is none.
    let out = flightrec(&["convert", "--format", "yaml", "--no-names", s(&trace)]);
    assert!(text(&out.stdout).contains("func-id: 1, function: '1',"));
    let lonely = dir.join("lonely");
    std::fs::copy(&trace, &lonely).unwrap();
    let out = flightrec(&["dump", "-v", s(&lonely)]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stderr),
        format!("flightrec: no names file {}.names\n", lonely.display())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_names_files_give_clear_errors() {
    let dir = scratch("badnames");
    let trace = data("xray/crafted-v5.xray");
    let elf = crafted_names_elf();
    let run = |file: &Path| {
        let out = flightrec(&["dump", s(&trace), "--names", s(file)]);
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.starts_with(&format!("flightrec: {}: ", file.display())),
            "{err}"
        );
        err
    };

    let cut = dir.join("cut.names");
    std::fs::write(&cut, &elf[..elf.len() - 10]).unwrap();
    assert!(run(&cut).contains(": damaged ELF file: "));

    // An ELF file without the section but with an instrumented program's
    // map and symbols (as llvm-xray -m reads them): the same names.
    let renamed = dir.join("renamed.names");
    let at = elf
        .windows(16)
        .position(|w| w == b"flightrec_names\0")
        .unwrap();
    let mut other = elf.clone();
    other[at + 14] = b'z';
    std::fs::write(&renamed, &other).unwrap();
    let good = dir.join("good.names");
    std::fs::write(&good, &elf).unwrap();
    let dump_with = |names: &Path| {
        let out = flightrec(&["dump", s(&trace), "--names", s(names)]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let (from_map, from_table) = (dump_with(&renamed), dump_with(&good));
    for named in ["#1 (main)", "#3 (uart::flush 'now')"] {
        assert!(from_map.contains(named) && from_table.contains(named));
    }
    let program = PathBuf::from(env!("CARGO_BIN_EXE_flightrec"));
    assert!(
        run(&program).ends_with("without a flightrec_names section: not a flightrec names file\n")
    );

    // The trace itself given by mistake.
    assert!(run(&trace).contains(": not a names file: neither an ELF names file nor text"));

    // A damaged file beside the trace: a warning, and the dump goes on unnamed.
    let copy = dir.join("t");
    std::fs::copy(&trace, &copy).unwrap();
    std::fs::write(dir.join("t.names"), &elf[..64]).unwrap();
    let out = flightrec(&["dump", s(&copy)]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.starts_with("flightrec: warning: "), "{err}");
    assert!(err.ends_with("; going on without names\n"), "{err}");
    assert!(text(&out.stdout).contains("<Function Enter: #1 delta = +0>"));
    let _ = std::fs::remove_dir_all(&dir);
}
