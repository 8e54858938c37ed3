//! `flightrec verify`, `dump` and `convert`, judged by `llvm-xray` 14 on the same
//! files: `dump` must print what `llvm-xray fdr-dump` prints, `convert --format yaml`
//! what `llvm-xray convert --output-format=yaml` prints, and `verify` must accept
//! exactly the files `llvm-xray` loads. Chrome JSON is checked for its structure,
//! its durations (from the header's frequency) and its names.
//!
//! Without `llvm-xray` the comparisons are skipped with a message, except under
//! `CI=true`, where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use flightrec_testkit::xray_tool::llvm_xray;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(name)
}

fn vectors() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(data("xray"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xray"))
        .collect();
    v.sort();
    assert!(v.len() > 40);
    v
}

fn flightrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .expect("run flightrec")
}

fn llvm(tool: &Path, args: &[&str], file: &Path) -> Output {
    Command::new(tool)
        .args(args)
        .arg(file)
        .output()
        .expect("run llvm-xray")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn verify_accepts_exactly_what_llvm_xray_loads() {
    let Some(tool) = llvm_xray() else { return };
    for f in vectors() {
        let theirs = llvm(&tool, &["fdr-dump", "--verify"], &f).status.success()
            && llvm(&tool, &["convert", "--output-format=yaml"], &f)
                .status
                .success();
        let out = flightrec(&["verify", s(&f)]);
        let text = String::from_utf8_lossy(&out.stdout);
        if theirs {
            assert_eq!(out.status.code(), Some(0), "{}: {text}", f.display());
            assert!(text.contains(": ok: "), "{text}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{}: {text}", f.display());
            assert!(text.contains(": invalid: at byte "), "{text}");
        }
    }
}

#[test]
fn verify_reports_offset_and_reason() {
    let f = data("xray/bad-fn-action5.xray");
    let out = flightrec(&["verify", s(&f)]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.ends_with("invalid: at byte 112: unknown function record action 5\n"),
        "{text}"
    );
    // Several files: the status is 1 when any is invalid, every file is reported.
    let good = data("xray/crafted-v5.xray");
    let out = flightrec(&["verify", s(&good), s(&f)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    // A missing file is an I/O failure.
    let out = flightrec(&["verify", "/nonexistent/file.xray"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn dump_and_yaml_match_llvm_xray() {
    let Some(tool) = llvm_xray() else { return };
    let mut compared = 0;
    for f in vectors() {
        let dumped = llvm(&tool, &["fdr-dump"], &f);
        let yaml = llvm(&tool, &["convert", "--output-format=yaml"], &f);
        if !(dumped.status.success() && yaml.status.success()) {
            continue;
        }
        let ours = flightrec(&["dump", s(&f)]);
        assert!(ours.status.success(), "{}", f.display());
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&dumped.stdout),
            "dump of {}",
            f.display()
        );
        let ours = flightrec(&["convert", "--format", "yaml", s(&f)]);
        assert!(ours.status.success(), "{}", f.display());
        assert_yaml_equal(&ours.stdout, &yaml.stdout, &f);
        compared += 1;
    }
    assert!(compared >= 25, "only {compared} files compared");
}

/// The same text, byte for byte: threads in llvm-xray's order too.
fn assert_yaml_equal(ours: &[u8], theirs: &[u8], f: &Path) {
    assert_eq!(
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs),
        "yaml of {}",
        f.display()
    );
}

/// A version 5 file with one buffer for each (pid, tid) in `threads`, in that
/// order. llvm-xray sorts records by TSC, keeping the order of its thread index for
/// equal TSCs, so most threads record the same TSCs. Every buffer ends with a typed
/// event, whose type llvm-xray carries into the records after it in the same thread
/// only.
fn many_threads_file(threads: &[(i32, i32)]) -> Vec<u8> {
    use flightrec_host::core::clock::Timestamp;
    use flightrec_host::core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    use flightrec_host::core::fdr::{FileHeader, FunctionAction, FunctionId};

    const BUFFER: usize = 256;
    let header = FileHeader::new(
        std::num::NonZeroU64::new(1_000_000_000).unwrap(),
        BUFFER as u64,
    );
    let mut file = header.to_bytes().to_vec();
    for (n, &(pid, tid)) in threads.iter().enumerate() {
        let mut buf = [0u8; BUFFER];
        let config = WriterConfig::new(tid as u32).with_pid(pid as u32);
        let when = Walltime {
            seconds: 1_700_000_000 + n as i64,
            micros: n as u32,
        };
        let mut w = BufferWriter::new(&mut buf, &config, when).unwrap();
        let tsc = 1_000 * (n as u64 % 3);
        let id = FunctionId::new(1 + n as u32 % 5).unwrap();
        let at = |t: u64| Timestamp {
            tsc: tsc + t,
            cpu: (n % 3) as u16,
        };
        w.function(FunctionAction::Enter, id, at(0)).unwrap();
        w.function(FunctionAction::Exit, id, at(7)).unwrap();
        w.typed_event(at(9), 100 + n as u16, b"end").unwrap();
        file.extend_from_slice(w.finish());
    }
    file
}

#[test]
fn yaml_lists_threads_in_llvm_xrays_order() {
    let Some(tool) = llvm_xray() else { return };
    let dir = std::env::temp_dir().join(format!("flightrec-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Enough threads to make LLVM's hash table grow twice (64 -> 128 -> 256
    // buckets), from two processes, with thread ids as the kernel hands them out
    // and some that collide in the table; then a second buffer for some threads.
    let mut threads: Vec<(i32, i32)> = (0..150)
        .map(|i| (if i % 4 == 0 { 77 } else { 4242 }, 1000 + i * 37 % 211))
        .collect();
    threads.sort();
    threads.dedup();
    threads.reverse();
    let again: Vec<(i32, i32)> = threads.iter().step_by(7).copied().collect();
    threads.extend(again);
    let f = dir.join("threads.xray");
    std::fs::write(&f, many_threads_file(&threads)).unwrap();
    let yaml = llvm(&tool, &["convert", "--output-format=yaml"], &f);
    assert!(
        yaml.status.success(),
        "{}",
        String::from_utf8_lossy(&yaml.stderr)
    );
    let ours = flightrec(&["convert", "--format", "yaml", s(&f)]);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_yaml_equal(&ours.stdout, &yaml.stdout, &f);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dump_and_convert_use_names() {
    let f = data("xray/crafted-v5.xray");
    let map = data("xray/crafted.instrmap.yaml");
    let out = flightrec(&["dump", s(&f), "--names", s(&map)]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("<Function Enter: #1 (main) delta = +0>"),
        "{text}"
    );
    assert!(
        text.contains("<Function Tail Exit: #2 (work) delta = +100>"),
        "{text}"
    );

    let dir = std::env::temp_dir().join(format!("flightrec-tool-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let names = dir.join("names.txt");
    std::fs::write(&names, "# id name\n1 main loop\n3 leaf\n").unwrap();
    let out = flightrec(&["convert", "--format", "yaml", s(&f), "--names", s(&names)]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("func-id: 1, function: main loop,"), "{text}");
    // Id 2 is not in the file: `#2`, as `llvm-xray convert --symbolize` prints it.
    assert!(text.contains("func-id: 2, function: '#2',"), "{text}");

    // A names file that is neither format is a usage failure.
    std::fs::write(&names, "main\n").unwrap();
    let out = flightrec(&["dump", s(&f), "--names", s(&names)]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

fn chrome(f: &Path, names: Option<&Path>) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!(
        "flightrec-tool-chrome-{}-{}",
        std::process::id(),
        f.file_stem().unwrap().to_str().unwrap()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let out_path = dir.join("out.json");
    let mut args = vec!["convert", s(f), "--format", "chrome", "-o", s(&out_path)];
    if let Some(n) = names {
        args.extend(["--names", s(n)]);
    }
    let out = flightrec(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    v
}

#[test]
fn chrome_json_has_calls_with_durations_names_and_instants() {
    // crafted-v5: 1 GHz; main (#1) runs from TSC 1 000 000 to 5 001 003 900.
    let f = data("xray/crafted-v5.xray");
    let v = chrome(&f, Some(&data("xray/crafted.instrmap.yaml")));
    let events = v["traceEvents"].as_array().unwrap();
    let find = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == name && e["ph"] == "X")
            .unwrap_or_else(|| panic!("no call {name}"))
    };
    let main = find("main");
    assert_eq!(main["ts"].as_f64().unwrap(), 0.0);
    let dur = main["dur"].as_f64().unwrap();
    assert!((dur - 5_000_003.9).abs() < 1e-6, "{dur}");
    assert_eq!(main["tid"], 101);
    assert_eq!(main["pid"], 4242);
    // #3 entered with two arguments lasts 1000 ticks = 1 us.
    // Its arguments are named `arg0`, `arg1`, ... as on a merged timeline.
    let leaf = events
        .iter()
        .find(|e| e["name"] == "leaf" && e["args"]["arg0"].is_u64())
        .unwrap();
    assert_eq!(leaf["dur"].as_f64().unwrap(), 1.0);
    assert_eq!(
        leaf["args"],
        serde_json::json!({ "func_id": 3, "arg0": 42u64, "arg1": 3735928559u64 })
    );
    // The custom event is an instant event at 2.6 us with its payload.
    let custom = events.iter().find(|e| e["ph"] == "i").unwrap();
    assert_eq!(custom["s"], "t");
    assert_eq!(custom["args"]["data"], "hello");
    assert!((custom["ts"].as_f64().unwrap() - 2.6).abs() < 1e-9);
    // Every call has a matching, non-negative duration; 5 calls, all closed.
    let calls: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(calls.len(), 5);
    assert!(calls.iter().all(|c| c["dur"].as_f64().unwrap() >= 0.0));
    // The thread has a name track.
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 101));
}

#[test]
fn chrome_json_has_one_track_per_thread_and_typed_events() {
    let v = chrome(&data("xray/crafted-v5-2threads.xray"), None);
    let events = v["traceEvents"].as_array().unwrap();
    let mut tids: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids.len(), 2, "{tids:?}");
    for t in &tids {
        assert!(events.iter().any(|e| e["ph"] == "X" && e["tid"] == *t));
    }

    let v = chrome(&data("xray/crafted-v5-typed.xray"), None);
    let events = v["traceEvents"].as_array().unwrap();
    let typed = events
        .iter()
        .find(|e| e["ph"] == "i" && e["args"]["type"] == 7)
        .expect("typed event");
    assert_eq!(typed["args"]["data"], "typed!");
    assert_eq!(typed["name"], "typed event 7");
}

#[test]
fn convert_and_dump_reject_invalid_files() {
    let f = data("xray/bad-custom-truncated.xray");
    let out = flightrec(&["convert", s(&f), "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at byte 128"));
    let out = flightrec(&["dump", s(&f)]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn every_subcommand_has_help() {
    for cmd in ["recv", "verify", "dump", "convert"] {
        let out = flightrec(&[cmd, "--help"]);
        assert!(out.status.success(), "{cmd}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Exit status:"), "{cmd}: {text}");
    }
}

/// Three buffers of two threads written by the core's writer behind a header
/// with `HeaderFlags::END_BLOCK`, then the end block: the file and the offsets
/// where each block starts (its BufferExtents record), the end block's last.
fn file_with_end_block() -> (Vec<u8>, Vec<usize>) {
    use flightrec_host::core::clock::Timestamp;
    use flightrec_host::core::fdr::end::EndBlock;
    use flightrec_host::core::fdr::ring::RecorderConfig;
    use flightrec_host::core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    use flightrec_host::core::fdr::{FunctionId, HeaderFlags, Version};

    let when = Walltime {
        seconds: 1_700_000_000,
        micros: 5,
    };
    let cfg = RecorderConfig::new(WriterConfig::new(1).with_pid(77), 1_000_000_000);
    let header = cfg.file_header(256).with_flags(HeaderFlags::END_BLOCK);
    let mut file = header.to_bytes().to_vec();
    let mut starts = Vec::new();
    for (b, tid) in [(0u64, 1u32), (1, 2), (2, 1)] {
        let mut buf = [0u8; 256];
        let mut w =
            BufferWriter::new(&mut buf, &WriterConfig::new(tid).with_pid(77), when).unwrap();
        for k in 0..4u64 {
            let at = |t: u64| Timestamp {
                tsc: 1_000_000 + b * 10_000 + k * 100 + t,
                cpu: 0,
            };
            let f = FunctionId::new(1 + k as u32).unwrap();
            w.enter(f, at(0)).unwrap();
            w.exit(f, at(50)).unwrap();
        }
        starts.push(file.len());
        file.extend_from_slice(w.finish());
    }
    starts.push(file.len());
    let end = EndBlock {
        buffers: 3,
        pid: 77,
        closed: when,
    };
    file.extend_from_slice(&end.to_bytes(Version::V5).unwrap());
    (file, starts)
}

#[test]
fn verify_reports_a_file_cut_between_buffers_as_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = file_with_end_block();
    let whole = dir.path().join("whole.xray");
    std::fs::write(&whole, &bytes).unwrap();
    let out = flightrec(&["verify", s(&whole)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.ends_with(
            ": ok: version 5, 1000000000 Hz, 3 buffers, 24 function records, \
             0 custom and 0 typed events, whole (end block)\n"
        ),
        "{text}"
    );
    let tool = llvm_xray();
    if let Some(tool) = &tool {
        // llvm-xray reads the end block as a block with no event: the same dump
        // and records as `flightrec dump` and `convert` give.
        let dumped = llvm(tool, &["fdr-dump", "--verify"], &whole);
        assert!(dumped.status.success());
        let ours = flightrec(&["dump", s(&whole)]);
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&llvm(tool, &["fdr-dump"], &whole).stdout)
        );
        let theirs = llvm(tool, &["convert", "--output-format=yaml"], &whole);
        assert!(theirs.status.success());
        let ours = flightrec(&["convert", "--format", "yaml", s(&whole)]);
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout)
        );
    }
    // Cut at every buffer boundary (the header alone included): incomplete, at
    // the cut, though llvm-xray accepts every cut but the header alone.
    for (k, at) in std::iter::once(32)
        .chain(starts[1..].iter().copied())
        .enumerate()
    {
        let cut = dir.path().join(format!("cut-{at}.xray"));
        std::fs::write(&cut, &bytes[..at]).unwrap();
        let out = flightrec(&["verify", s(&cut)]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            text.ends_with(&format!(
                ": invalid: at byte {at}: incomplete: the file ends after {k} buffers \
                 without the end block its header promises (cut short)\n"
            )),
            "{text}"
        );
        if let (Some(tool), true) = (&tool, k > 0) {
            assert!(llvm(tool, &["fdr-dump", "--verify"], &cut).status.success());
            let theirs = llvm(tool, &["convert", "--output-format=yaml"], &cut);
            assert!(theirs.status.success());
            // `convert` converts the buffers it holds, says it is incomplete,
            // and exits with status 1.
            let ours = flightrec(&["convert", "--format", "yaml", "-q", s(&cut)]);
            assert_eq!(ours.status.code(), Some(1));
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&theirs.stdout)
            );
            let err = String::from_utf8_lossy(&ours.stderr);
            assert!(
                err.contains(&format!(
                    "at byte {at}: incomplete: the file ends after {k} buffers without the \
                     end block its header promises (cut short); converted the buffers it holds"
                )),
                "{err}"
            );
        }
    }
    // A wrong count and a block after the end block are errors too.
    let mut wrong = bytes.clone();
    let count_at = bytes.len() - 16 + 3; // the end block's NewCpuId "TSC"
    wrong[count_at] = 2;
    let f = dir.path().join("wrong-count.xray");
    std::fs::write(&f, &wrong).unwrap();
    let text = String::from_utf8_lossy(&flightrec(&["verify", s(&f)]).stdout).into_owned();
    assert!(
        text.ends_with(&format!(
            "invalid: at byte {}: the end block counts 2 buffers, the file has 3 before it\n",
            starts[3] + 16
        )),
        "{text}"
    );
    let mut after = bytes.clone();
    after.extend_from_slice(&bytes[starts[0]..starts[1]]);
    let f = dir.path().join("after-end.xray");
    std::fs::write(&f, &after).unwrap();
    let text = String::from_utf8_lossy(&flightrec(&["verify", s(&f)]).stdout).into_owned();
    assert!(
        text.ends_with(&format!(
            "invalid: at byte {}: record after the end block\n",
            bytes.len()
        )),
        "{text}"
    );
}
