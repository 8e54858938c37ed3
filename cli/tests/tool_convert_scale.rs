//! `convert` and `verify` on what a big or hostile input looks like: Perfetto
//! output checked with Perfetto's own schema (Python `perfetto` package), and bad
//! inputs (truncated, corrupt, hostile sizes, a 4 GiB sparse file, a FIFO, a
//! directory) reported with their offset and reason, quickly and without hanging.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "support/perfetto.rs"]
mod perfetto;
use perfetto::perfetto_python;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/xray")
        .join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs flightrec, killed after `limit` (a hang is a failure, not a stuck test).
fn flightrec_within(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run flightrec");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("flightrec {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn flightrec(args: &[&str]) -> Output {
    flightrec_within(args, Duration::from_secs(60))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn valid_vectors() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "xray")
                && !p.file_name().unwrap().to_str().unwrap().starts_with("bad-")
        })
        .collect();
    v.sort();
    assert!(v.len() > 20);
    v
}

#[test]
fn perfetto_output_passes_perfettos_own_schema() {
    let Some(python) = perfetto_python() else {
        return;
    };
    let checker = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/perfetto_check.py");
    let dir = tempfile::tempdir().unwrap();
    for f in valid_vectors() {
        let pf = dir.path().join("t.pftrace");
        let json = dir.path().join("t.json");
        let out = flightrec(&[
            "convert",
            "-q",
            "--no-names",
            "--format",
            "perfetto",
            "-o",
            s(&pf),
            s(&f),
        ]);
        assert!(out.status.success(), "{}: {}", f.display(), stderr(&out));
        let out = flightrec(&[
            "convert",
            "-q",
            "--no-names",
            "--format",
            "chrome",
            "-o",
            s(&json),
            s(&f),
        ]);
        assert!(out.status.success(), "{}: {}", f.display(), stderr(&out));

        let checked = Command::new(&python)
            .arg(&checker)
            .arg(&pf)
            .output()
            .unwrap();
        assert!(
            checked.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&checked.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
        // The same calls, instants and threads as the Chrome JSON.
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        let count = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count() as u64;
        assert_eq!(
            report["slices"].as_u64(),
            Some(count("X")),
            "{}",
            f.display()
        );
        assert_eq!(
            report["instants"].as_u64(),
            Some(count("i")),
            "{}",
            f.display()
        );
        let threads = events.iter().filter(|e| e["name"] == "thread_name").count();
        assert_eq!(
            report["threads"].as_array().unwrap().len(),
            threads,
            "{}",
            f.display()
        );
        let chrome_names: std::collections::BTreeSet<&str> = events
            .iter()
            .filter(|e| e["ph"] != "M")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        let names: std::collections::BTreeSet<&str> = report["names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert_eq!(names, chrome_names, "{}", f.display());
    }
}

/// Every way of running over `file`: it must fail with status 1 (invalid) or 2
/// (unreadable), name the reason, and finish quickly.
fn rejected(file: &Path, status: i32, reason: &str) {
    for args in [
        vec!["verify", "-q", s(file)],
        vec!["convert", "-q", "--no-names", "--format", "yaml", s(file)],
        vec!["convert", "-q", "--no-names", "--format", "chrome", s(file)],
        vec![
            "convert",
            "-q",
            "--no-names",
            "--format",
            "perfetto",
            s(file),
        ],
    ] {
        let out = flightrec_within(&args, Duration::from_secs(30));
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(out.status.code(), Some(status), "{args:?}: {text}");
        assert!(text.contains(reason), "{args:?}: {text}");
        if args[0] == "convert" {
            assert!(
                out.stdout.is_empty(),
                "{args:?}: nothing written for a bad file"
            );
        }
    }
}

#[test]
fn truncated_corrupt_and_hostile_files_are_reported_with_offset_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(data("crafted-v5.xray")).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };

    // Cut in the middle of a record.
    let cut = write("cut.xray", &good[..good.len() - 3]);
    rejected(&cut, 1, "at byte ");
    // A header only, then nothing: no buffers.
    rejected(&write("header.xray", &good[..32]), 1, "at byte 32");
    // Garbage where the first record should be.
    let mut corrupt = good.clone();
    corrupt[32..48].fill(0xff);
    rejected(&write("corrupt.xray", &corrupt), 1, "at byte ");
    // A BufferExtents claiming almost 2^64 bytes: stops at the end of the file.
    let mut huge = good.clone();
    assert_eq!(huge[32], 0x0f, "the first record is a BufferExtents");
    huge[33..41].copy_from_slice(&(u64::MAX - 7).to_le_bytes());
    let out = flightrec(&["verify", s(&write("huge-extents.xray", &huge))]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    // A custom event declaring a 2 GiB payload in a small file.
    let mut payload = good.clone();
    let at = (32..payload.len() - 16)
        .step_by(8)
        .find(|&i| payload[i] == (5 << 1 | 1))
        .expect("a custom event record");
    payload[at + 1..at + 5].copy_from_slice(&0x7fff_fff0i32.to_le_bytes());
    rejected(&write("huge-payload.xray", &payload), 1, "truncated");
}

#[test]
fn a_4_gib_sparse_file_is_rejected_at_once_without_reading_it_into_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = dir.path().join("sparse.xray");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(4 << 30).unwrap(); // holes only: no disk used
    drop(f);
    // A header of zeros: not an FDR file, reported at byte 0.
    rejected(&sparse, 1, "at byte 0");

    // A valid header and first buffer, then 256 MiB of zeros: the zeros are
    // walked through in place (no copy of the file), and the file is judged.
    let good = std::fs::read(data("crafted-v5.xray")).unwrap();
    std::fs::write(&sparse, &good).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&sparse)
        .unwrap();
    f.set_len(256 << 20).unwrap();
    drop(f);
    let out = flightrec_within(&["verify", s(&sparse)], Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("invalid: at byte "), "{text}");
}

#[test]
fn fifos_and_directories_are_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.xray");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Nobody ever writes to the FIFO: opening it would wait forever.
    rejected(&fifo, 2, "not a regular file");
    rejected(dir.path(), 2, "is a directory");
}

/// The highest `VmHWM` (peak resident memory, KiB) seen while `flightrec
/// args` runs (sampled every few milliseconds until it exits), and its
/// status.
fn peak_while_running(args: &[&str]) -> (u64, Option<i32>) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut peak = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
            if let Some(kib) = status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            {
                peak = peak.max(kib);
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (peak, status.code());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "flightrec {args:?} still runs"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A short trace followed by 512 MiB of zeros (a sparse tail): every
/// command's peak resident memory stays under 128 MiB, whatever the tail's
/// size (it grew with it: about 1 GB for a 1 GiB tail).
#[test]
fn a_long_tail_of_zeros_is_read_in_bounded_memory() {
    if !Path::new("/proc/self/status").exists() {
        eprintln!("skipped: no /proc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tail.xray");
    std::fs::write(&file, std::fs::read(data("crafted-v5.xray")).unwrap()).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(f.metadata().unwrap().len() + (512 << 20))
        .unwrap();
    drop(f);
    let path = s(&file);
    for args in [
        &["verify", "-q", path][..],
        &["dump", "--no-names", path],
        &["convert", "-q", "--format", "yaml", path],
        &["convert", "-q", "--format", "chrome", path],
        &["convert", "-q", "--format", "perfetto", path],
    ] {
        let (peak, status) = peak_while_running(args);
        // Judged, not crashed (the zeros are not a buffer).
        assert_eq!(status, Some(1), "{args:?}");
        assert!(peak > 0 && peak < 128 * 1024, "{args:?}: peak {peak} KiB");
    }
}
