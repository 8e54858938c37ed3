//! Scenarios of the process-wide Trace2 runtime: each runs in a fresh copy of
//! the test binary, selected by an environment variable, in a scratch
//! directory the parent test reads afterwards.
#![allow(dead_code)] // each test crate uses part of it

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// Names the scenario a child process runs.
pub const SCENARIO: &str = "FLIGHTREC_T2_SCENARIO";
/// The write-mode variable, never inherited from the test's environment.
pub const WRITE: &str = "FLIGHTREC_TRACE2_WRITE";

/// Runs `f` when this process is the scenario `name`; otherwise returns
/// `false` so the test body goes on as the parent.
pub fn in_child(name: &str, f: impl FnOnce()) -> bool {
    if std::env::var(SCENARIO).as_deref() == Ok(name) {
        f();
        true
    } else {
        false
    }
}

/// Test `test` of this binary as scenario `scenario`, inheriting this
/// process's environment (a scenario that starts a traced child of its own).
pub fn self_test(test: &str, scenario: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([test, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env(SCENARIO, scenario);
    c
}

/// A scratch directory for one scenario, removed on drop.
pub struct Scenario {
    pub dir: PathBuf,
}

impl Scenario {
    pub fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "flightrec-t2-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scenario { dir }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Test `test` of this binary in a child running scenario `scenario`,
    /// with `envs` and no inherited `GIT_*` or write-mode variables.
    pub fn command(&self, test: &str, scenario: &str, envs: &[(&str, &str)]) -> Command {
        let mut c = self_test(test, scenario);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("GIT_") {
                c.env_remove(k);
            }
        }
        c.env_remove(WRITE)
            .envs(envs.iter().copied())
            .current_dir(&self.dir);
        c
    }

    /// Runs test `name` of this binary as scenario `name`.
    pub fn run(&self, name: &str, envs: &[(&str, &str)]) -> Output {
        self.command(name, name, envs).output().unwrap()
    }

    /// A file of the scenario's directory ("" when missing).
    pub fn read(&self, name: &str) -> String {
        String::from_utf8(std::fs::read(self.file(name)).unwrap_or_default()).unwrap()
    }

    pub fn path(&self, name: &str) -> String {
        self.file(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The JSON events of an event-target text, one per line.
pub fn events(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

/// Writes to a pipe whose read end is closed, the way a host program meets
/// SIGPIPE. Call it after restoring the default disposition: it does not return.
pub fn write_to_a_closed_pipe() {
    let mut fds = [0; 2];
    // SAFETY: a fresh pipe; closing the read end makes the write raise SIGPIPE.
    unsafe {
        libc::pipe(fds.as_mut_ptr());
        libc::close(fds[0]);
        libc::write(fds[1], b"x".as_ptr().cast(), 1);
    }
}
