//! The Rust recipe: `RUSTFLAGS="-Zinstrument-xray=always" cargo +nightly build`
//! of the `xray_sleds` example (every crate instrumented, this runtime and
//! flightrec included), run with `XRAY_OPTIONS`, records every function of the
//! program, and `llvm-xray account -m <binary>` names them.
//!
//! Needs a nightly toolchain and llvm-xray; without nightly the test is skipped
//! with a message (as CI's other nightly steps), without llvm-xray it fails under
//! `CI=true`. It builds the dependency tree once with nightly, in its own target
//! directory (`target/xray-nightly`).

use std::path::{Path, PathBuf};
use std::process::Command;

use flightrec_testkit::xray_tool::{llvm_xray, traces_in, xray_ok};

fn nightly_present() -> bool {
    Command::new("cargo")
        .args(["+nightly", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn build_example() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let exe = std::env::current_exe().unwrap();
    let target_root = exe.ancestors().nth(3).unwrap(); // <target>/<profile>/deps/<exe>
    let target_dir = target_root.join("xray-nightly");
    let status = Command::new("cargo")
        .args([
            "+nightly",
            "build",
            "-q",
            "--example",
            "xray_sleds",
            "--manifest-path",
        ])
        .arg(manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .env("RUSTFLAGS", "-Zinstrument-xray=always")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO")
        .status()
        .expect("cargo runs");
    assert!(status.success(), "nightly build of the example failed");
    target_dir.join("debug/examples/xray_sleds")
}

#[test]
fn nightly_instrumented_program_records_every_function_llvm_xray_names() {
    if !nightly_present() {
        eprintln!("skipped: no nightly toolchain (rustup toolchain install nightly)");
        return;
    }
    let Some(xray) = llvm_xray() else { return };
    let prog = build_example();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sleds-rust");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(&prog)
        .env(
            "XRAY_OPTIONS",
            format!(
                "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
                dir.display()
            ),
        )
        .env("XRAY_FDR_OPTIONS", "func_duration_threshold_us=0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("fib(12)=144 mean=2.5 tail=5"),
        "{stderr}"
    );
    let traces = traces_in(&dir, "x-");
    assert_eq!(traces.len(), 1, "{traces:?} {stderr}");
    let (t, p) = (traces[0].to_str().unwrap(), prog.to_str().unwrap());
    xray_ok(&xray, &["fdr-dump", "--verify", t]);
    // -k: the runtime's own functions that ran while recording started (after
    // patching, before returning) have exits without entries.
    let account = xray_ok(&xray, &["account", "-k", "-m", p, t]);
    let calls_of = |name: &str| -> u64 {
        let row = account
            .lines()
            .find(|l| l.ends_with(name))
            .unwrap_or_else(|| panic!("{name} not named:\n{account}"));
        row.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    // fib(12) makes 465 calls; tail(5) 15 more.
    assert_eq!(calls_of("xray_sleds::fib"), 465 + 15, "{account}");
    assert_eq!(calls_of("xray_sleds::mean"), 1);
    assert_eq!(calls_of("xray_sleds::tail"), 1);
    assert!(account.contains("xray_sleds::main"), "{account}");
    xray_ok(
        &xray,
        &["convert", "-m", p, "--symbolize", "--output-format=yaml", t],
    );
    xray_ok(&xray, &["stack", "-k", "-m", p, t]);
}
