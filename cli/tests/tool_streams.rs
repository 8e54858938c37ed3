//! How `flightrec` treats its output streams.
//!
//! * Standard output closed early (`flightrec dump T | head`): every command that
//!   writes to stdout stops quietly with status 0, as command-line tools do, instead
//!   of printing `Broken pipe` and failing (or panicking, as `println!` does).
//! * The progress bar of `verify` and `convert` is drawn on stderr only when stderr
//!   is a terminal (a pseudo-terminal here) and the file is long, never with
//!   `--quiet`; otherwise stderr stays empty.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_flightrec");

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(path)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flightrec-streams-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A valid FDR file of about `copies` × 245 bytes: `crafted-v5.xray`'s header, then
/// its buffers again and again (each buffer stands on its own).
fn long_trace(dir: &Path, copies: usize) -> PathBuf {
    let small = std::fs::read(data("xray/crafted-v5.xray")).unwrap();
    let mut big = small[..32].to_vec();
    for _ in 0..copies {
        big.extend_from_slice(&small[32..]);
    }
    let path = dir.join(format!("long-{copies}.xray"));
    std::fs::write(&path, big).unwrap();
    path
}

/// Runs `flightrec args`, reads the first bytes of its stdout, then closes the pipe
/// the way `head` does, and waits for it. The output of every caller is far larger
/// than a pipe and the writer's buffer together, so the command is still writing.
fn closed_early(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run flightrec");
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    child.wait_with_output().unwrap()
}

fn assert_quiet_success(out: &Output, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{what}");
}

#[test]
fn trace2_render_stops_quietly_when_stdout_closes() {
    let dir = scratch("render");
    // git's own event stream, 300 times: megabytes of perf and event output.
    let one = std::fs::read(data("trace2/det/status/event.txt")).unwrap();
    let input = dir.join("events.txt");
    std::fs::write(&input, one.repeat(300)).unwrap();
    for format in ["perf", "event"] {
        let out = closed_early(&["trace2", "render", "--format", format, s(&input)]);
        assert_quiet_success(&out, format);
    }
    // The input is fine: read to the end, the run succeeds too.
    let full = Command::new(BIN)
        .args(["trace2", "render", "--format", "perf", s(&input)])
        .output()
        .unwrap();
    assert_eq!(full.status.code(), Some(0));
    assert!(full.stdout.len() > 1 << 20);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dump_and_convert_stop_quietly_when_stdout_closes() {
    let dir = scratch("dump");
    let long = long_trace(&dir, 4000);
    let out = closed_early(&["dump", s(&long)]);
    assert_quiet_success(&out, "dump");
    for format in ["yaml", "chrome"] {
        let out = closed_early(&["convert", "--format", format, s(&long)]);
        assert_quiet_success(&out, format);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_stops_quietly_when_stdout_closes() {
    let good = data("xray/crafted-v5.xray");
    // One line per file: 3000 lines are far more than a pipe holds.
    let args: Vec<&str> = std::iter::once("verify")
        .chain(std::iter::repeat_n(s(&good), 3000))
        .collect();
    assert_quiet_success(&closed_early(&args), "verify");
    // A bad file before the reader leaves is still reported by the status.
    let bad = data("xray/bad-fn-action5.xray");
    let args: Vec<&str> = ["verify", s(&bad)]
        .into_iter()
        .chain(std::iter::repeat_n(s(&good), 3000))
        .collect();
    let out = closed_early(&args);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// Runs `flightrec args` with stderr on a pseudo-terminal; returns what it drew
/// there.
fn on_terminal(args: &[&str]) -> (Output, String) {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let child = Command::new(BIN)
        .args(args)
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(pty.slave))
        .spawn()
        .expect("run flightrec");
    // Read while it runs: a full terminal buffer would block it.
    let mut master = File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut drawn = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child, the only holder of the slave, exits.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            drawn.extend_from_slice(&buf[..n]);
        }
        drawn
    });
    let out = child.wait_with_output().unwrap();
    let drawn = reader.join().unwrap();
    (out, String::from_utf8_lossy(&drawn).into_owned())
}

#[test]
fn progress_bar_only_on_a_terminal_for_long_files() {
    let dir = scratch("progress");
    // About 5 MB: long enough for a bar (over 1 MiB).
    let long = long_trace(&dir, 20_000);
    let size = std::fs::metadata(&long).unwrap().len();
    assert!(size > 4 << 20, "{size}");

    let (out, drawn) = on_terminal(&["verify", s(&long)]);
    assert_eq!(out.status.code(), Some(0), "{drawn}");
    assert!(drawn.contains("MiB"), "no bar drawn: {drawn:?}");
    assert!(
        drawn.contains("reading") || drawn.contains("verifying"),
        "{drawn:?}"
    );

    let json = dir.join("out.json");
    let (out, drawn) = on_terminal(&["convert", "--format", "yaml", s(&long), "-o", s(&json)]);
    assert_eq!(out.status.code(), Some(0), "{drawn}");
    assert!(drawn.contains("MiB"), "no bar drawn: {drawn:?}");

    // --quiet, a short file, or stderr not a terminal: nothing on stderr.
    let (out, drawn) = on_terminal(&["verify", "--quiet", s(&long)]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(drawn, "");
    let short = data("xray/crafted-v5.xray");
    let (out, drawn) = on_terminal(&["verify", s(&short)]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(drawn, "");
    let out = Command::new(BIN)
        .args(["verify", s(&long)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let _ = std::fs::remove_dir_all(&dir);
}
