//! The compiler-rt row of the comparison is real: the C loop builds with
//! clang-14, runs in FDR mode, and writes a trace that llvm-xray accepts with
//! every enter and exit of every call in it.
//!
//! Needs clang-14, libclang-rt-14-dev and llvm-xray; without them the test is
//! skipped, except under `CI=true`, where it fails. It is not part of
//! `cargo test --workspace`; run it with
//! `cargo test -p flightrec-benches --test compiler_rt` (CI does, in
//! `.ci/steps/compare.sh`, after installing the tools).

use std::path::PathBuf;
use std::process::Command;

use flightrec_benches::compiler_rt::{Error, XrayLoop};

fn tools_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn work_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn build(name: &str) -> Option<XrayLoop> {
    match XrayLoop::build(&work_dir(name)) {
        Ok(p) => Some(p),
        Err(Error::NoCompiler(e)) if !tools_required() => {
            eprintln!("skipped: clang-14 not available ({e})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn fdr_run_writes_a_trace_llvm_xray_accepts_with_every_call() {
    let Some(prog) = build("compiler_rt_fdr") else {
        return;
    };
    let logs = work_dir("compiler_rt_fdr_logs");
    let run = prog.run_fdr(1000, 2, &logs).unwrap();
    assert_eq!(run.ns_per_call.len(), 2);
    assert!(run.ns_per_call.iter().all(|&ns| ns > 0.0));

    let dump = match Command::new("llvm-xray")
        .args(["fdr-dump", "--verify"])
        .arg(&run.trace)
        .output()
    {
        Ok(out) => out,
        Err(e) if !tools_required() => {
            eprintln!("skipped the trace check: llvm-xray not available ({e})");
            return;
        }
        Err(e) => panic!("llvm-xray: {e}"),
    };
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let text = String::from_utf8_lossy(&dump.stdout);
    // One warm-up batch plus two measured batches of 1000 calls, all in the
    // first of eight 64 KiB buffers, none erased (no duration threshold).
    let enters = text.matches("<Function Enter: #1 ").count();
    let exits = text.matches("<Function Exit: #1 ").count();
    assert_eq!((enters, exits), (3000, 3000), "{text:.2000}");
}

#[test]
fn baseline_run_reports_each_batch() {
    let Some(prog) = build("compiler_rt_off") else {
        return;
    };
    let ns = prog.run_baseline(1000, 3).unwrap();
    assert_eq!(ns.len(), 3);
    assert!(ns.iter().all(|&v| v > 0.0 && v < 1000.0), "{ns:?}");
}

#[test]
fn a_bad_argument_is_an_error_not_a_result() {
    let Some(prog) = build("compiler_rt_bad") else {
        return;
    };
    assert!(prog.run_baseline(0, 1).is_err());
}
