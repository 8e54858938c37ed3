//! Cross-checks the decoder against the real judge, `llvm-xray` 14: for every sample
//! file, for every prefix of a few valid files and for many single-byte corruptions of
//! `crafted-v5.xray`, `verify` must accept exactly when `llvm-xray fdr-dump --verify`
//! and `llvm-xray convert --output-format=yaml` both succeed.
//!
//! Without `llvm-xray` (looked up as `$LLVM_XRAY`, else `/usr/bin/llvm-xray`) the tests
//! print a message and pass, unless `CI=true`, where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use flightrec_core::fdr::decoder::verify;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/xray")
}

/// The `llvm-xray` binary, or `None` (after saying so) when it is missing outside CI.
fn llvm_xray() -> Option<PathBuf> {
    let path = std::env::var_os("LLVM_XRAY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/llvm-xray"));
    let runs = Command::new(&path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if runs {
        return Some(path);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{} not found or not runnable, and CI=true", path.display());
    }
    eprintln!(
        "skipping: {} not found (install LLVM 14's llvm-xray or set LLVM_XRAY)",
        path.display()
    );
    None
}

/// Whether `llvm-xray` loads the file: both the record dump with block verification
/// and the full loader must succeed (each checks things the other does not).
fn llvm_accepts(tool: &Path, file: &Path) -> bool {
    let run = |args: &[&str]| {
        Command::new(tool)
            .args(args)
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("llvm-xray runs")
            .success()
    };
    run(&["fdr-dump", "--verify"]) && run(&["convert", "--output-format=yaml"])
}

/// A scratch directory for this test process.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flightrec-llvm-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Judges every (label, bytes) case with `llvm-xray` on a few threads, and returns
/// the cases where our verdict differs.
fn disagreements(tool: &Path, test: &str, cases: Vec<(String, Vec<u8>)>) -> Vec<String> {
    let dir = scratch(test);
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    let chunk = cases.len().div_ceil(threads).max(1);
    let out: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(chunk)
            .enumerate()
            .map(|(t, part)| {
                let dir = &dir;
                s.spawn(move || {
                    let file = dir.join(format!("case-{t}.xray"));
                    let mut bad = Vec::new();
                    for (label, bytes) in part {
                        std::fs::write(&file, bytes).unwrap();
                        let theirs = llvm_accepts(tool, &file);
                        let ours = verify(bytes);
                        if ours.is_ok() != theirs {
                            bad.push(format!(
                                "{label}: llvm-xray accepts={theirs}, ours={ours:?}"
                            ));
                        }
                    }
                    bad
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn vector_files() -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xray"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_vector_matches_llvm_xray() {
    let Some(tool) = llvm_xray() else { return };
    let files = vector_files();
    assert!(!files.is_empty());
    let mut bad = Vec::new();
    for file in &files {
        let theirs = llvm_accepts(&tool, file);
        let ours = verify(&std::fs::read(file).unwrap());
        if ours.is_ok() != theirs {
            bad.push(format!(
                "{}: llvm-xray accepts={theirs}, ours={ours:?}",
                file.display()
            ));
        }
    }
    assert!(bad.is_empty(), "verdicts differ:\n{}", bad.join("\n"));
}

#[test]
fn every_prefix_of_valid_files_matches_llvm_xray() {
    let Some(tool) = llvm_xray() else { return };
    let mut cases = Vec::new();
    for name in [
        "crafted-v1-padded8.xray",
        "crafted-v2.xray",
        "crafted-v5.xray",
        "crafted-v5-typed.xray",
    ] {
        let bytes = std::fs::read(data_dir().join(name)).unwrap();
        for len in 0..=bytes.len() {
            cases.push((format!("{name}[..{len}]"), bytes[..len].to_vec()));
        }
    }
    let n = cases.len();
    let bad = disagreements(&tool, "prefix", cases);
    assert!(
        bad.is_empty(),
        "{} of {n} prefixes differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn single_byte_corruptions_of_crafted_v5_match_llvm_xray() {
    let Some(tool) = llvm_xray() else { return };
    let bytes = std::fs::read(data_dir().join("crafted-v5.xray")).unwrap();
    let mut cases = Vec::new();
    for i in 0..bytes.len() {
        let b = bytes[i];
        // Values that change a record's type or size the most: zero, all ones, the
        // BufferExtents introducer, and a flipped low (metadata) and high bit.
        let mut values = vec![0x00, 0xff, 0x0f, b ^ 0x01, b ^ 0x80, b ^ 0x10];
        values.sort_unstable();
        values.dedup();
        for v in values.into_iter().filter(|&v| v != b) {
            let mut c = bytes.clone();
            c[i] = v;
            cases.push((format!("byte {i} = {v:#04x}"), c));
        }
    }
    let n = cases.len();
    let bad = disagreements(&tool, "corrupt", cases);
    assert!(
        bad.is_empty(),
        "{} of {n} corruptions differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
