//! Scenarios in child processes: a process-wide runtime is set up once per
//! process, so each scenario runs in a fresh one, the test binary again, with
//! [`CHILD_VAR`] naming the scenario.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The environment variable that turns a test binary run into a scenario child.
pub const CHILD_VAR: &str = "XRAY_TEST_CHILD";

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
