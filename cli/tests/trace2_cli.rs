//! The `flightrec trace2 render` command line: arguments, file and stdin input,
//! errors on stderr with line numbers, exit status.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
}

fn det(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/trace2/det/status")
        .join(name)
}

#[test]
fn renders_a_file_in_each_format() {
    for (format, want) in [("normal", "normal.txt"), ("event", "event.txt")] {
        let out = exe()
            .args(["trace2", "render", "--format", format])
            .arg(det("event.txt"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&std::fs::read(det(want)).unwrap())
        );
        assert!(out.stderr.is_empty());
    }
    let out = exe()
        .args(["trace2", "render", "--format", "normal", "--brief"])
        .arg(det("event-brief.txt"))
        .output()
        .unwrap();
    assert_eq!(out.stdout, std::fs::read(det("normal-brief.txt")).unwrap());
}

#[test]
fn reads_stdin_reports_bad_lines_and_keeps_going() {
    let mut child = exe()
        .args([
            "trace2",
            "render",
            "--format",
            "perf",
            "--brief",
            "--utc-offset",
            "-3600",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"event\":\"cmd_mode\",\"sid\":\"a/b\",\"thread\":\"main\",\"name\":\"write\"}\n{oops\n{\"event\":\"exit\",\"sid\":\"a/b\",\"thread\":\"main\",\"t_abs\":0.5,\"code\":3}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "some lines were skipped");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "d1 | main                     | cmd_mode     |     |           |           |              | write\n\
         d1 | main                     | exit         |     |  0.500000 |           |              | code:3\n"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("line 2: not JSON"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn local_time_offset_applies_to_normal_prefixes() {
    let out = exe()
        .args([
            "trace2",
            "render",
            "--format",
            "normal",
            "--utc-offset",
            "3600",
        ])
        .arg(det("event.txt"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().all(|l| l.starts_with("23:13:20.123456 ")),
        "{text}"
    );
}

#[test]
fn bad_arguments_and_missing_files_fail() {
    let out = exe()
        .args(["trace2", "render", "--format", "xml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = exe()
        .args([
            "trace2",
            "render",
            "--format",
            "perf",
            "/nonexistent/trace.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("trace.json"));
}

#[test]
fn help_starts_with_the_about_text_and_shows_no_code() {
    for args in [&["--help"][..], &["help"], &["-h"]] {
        let out = exe().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.starts_with("flightrec: receive, check and convert"),
            "{args:?}: {help}"
        );
        for leak in ["```", "use clap", "assert", "tempfile"] {
            assert!(!help.contains(leak), "{args:?} shows {leak:?}: {help}");
        }
        for command in ["recv", "verify", "dump", "convert", "trace2"] {
            assert!(help.contains(&format!("  {command} ")), "{args:?}: {help}");
        }
        assert!(help.contains("Exit status:"), "{args:?}: {help}");
    }
}
