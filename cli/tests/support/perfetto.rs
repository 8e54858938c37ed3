//! The Python that judges Perfetto output with Perfetto's own schema, shared by
//! the tests that convert to Perfetto.

use std::path::PathBuf;
use std::process::Command;

/// The Python with Perfetto's package: `FLIGHTREC_PERFETTO_PYTHON`, or the venv
/// `.ci/steps/perfetto.sh` makes under `target/perfetto-venv`. `None` (the test
/// skips) outside CI; under `CI=true` a missing venv fails the test.
pub fn perfetto_python() -> Option<PathBuf> {
    let python = std::env::var_os("FLIGHTREC_PERFETTO_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/perfetto-venv/bin/python")
        });
    let works = Command::new(&python)
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if works {
        return Some(python);
    }
    let msg = format!(
        "no Python with the perfetto package at {} (run .ci/steps/perfetto.sh)",
        python.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("skipped: {msg}");
    None
}
