//! Building a workspace crate's examples from an integration test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds example `name` of workspace package `package` with the profile and
/// target directory of the running test, and returns the path of its binary.
/// Cargo does not build examples for integration tests, so each test that runs
/// one builds it here.
pub fn build_example(package: &str, name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let workspace_manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "-q", "-p", package, "--example", name])
        .arg("--manifest-path")
        .arg(workspace_manifest)
        .arg("--target-dir")
        .arg(target_dir);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building the {name} example failed");
    let example = profile_dir.join("examples").join(name);
    assert!(example.is_file(), "{}", example.display());
    example
}
