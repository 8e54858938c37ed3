//! Trace2 names threads `thNN:name` and carries no OS thread id; while the XRay
//! runtime is on, the Trace2 runtime says each worker thread's id (what
//! `gettid` gives, which its FDR records carry) in a `data` event of category
//! `flightrec` and key `tid`: right after `thread_start`, or before the first
//! event of a thread that did not call it. Without XRay nothing is added, so
//! the lines stay git's. Each case runs this test binary again as the traced
//! program (the runtimes are process-wide).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const CHILD: &str = "FLIGHTREC_THREAD_IDS_CHILD";

/// The traced program (only when run with `CHILD` set): two workers that call
/// `thread_start` and one that does not, each printing its name and `gettid`.
#[test]
fn traced_program() {
    let Some(mode) = std::env::var_os(CHILD) else {
        return;
    };
    let session = flightrec::trace2::init();
    if mode == "xray" {
        let config = flightrec::xray::Config::builder()
            .no_file_flush(true)
            .build()
            .unwrap();
        flightrec::xray::init(config).unwrap();
    }
    for k in 0..2 {
        std::thread::spawn(move || {
            let _th = flightrec::trace2::thread_start(&format!("worker{k}"));
            let _r = flightrec::region!("work", "step");
            println!("\nthread: worker{k} {}", nix::unistd::gettid());
        })
        .join()
        .unwrap();
    }
    std::thread::Builder::new()
        .name("lazy".into())
        .spawn(|| {
            flightrec::data!("work", "items", "{}", 3);
            println!("\nthread: lazy {}", nix::unistd::gettid());
        })
        .unwrap()
        .join()
        .unwrap();
    drop(session);
}

/// Runs the traced program; returns its Trace2 events and what it printed
/// (`thread: name tid` lines).
fn run(dir: &Path, mode: &str) -> (Vec<Value>, Vec<(String, u32)>) {
    let trace = dir.join(format!("{mode}.json"));
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "traced_program",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, mode)
        .env("GIT_TRACE2_EVENT", &trace)
        .env_remove("GIT_TRACE2")
        .env_remove("GIT_TRACE2_PERF")
        .env_remove("XRAY_OPTIONS")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = stdout
        .lines()
        .filter_map(|l| {
            let (name, tid) = l.strip_prefix("thread: ")?.split_once(' ')?;
            Some((name.to_string(), tid.parse().ok()?))
        })
        .collect();
    let events = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (events, printed)
}

/// The events of the thread whose Trace2 name ends with `:base`, in order.
fn of_thread<'e>(events: &'e [Value], base: &str) -> Vec<&'e Value> {
    let suffix = format!(":{base}");
    events
        .iter()
        .filter(|e| e["thread"].as_str().unwrap().ends_with(&suffix))
        .collect()
}

fn is_tid(e: &Value) -> bool {
    e["event"] == "data" && e["category"] == "flightrec" && e["key"] == "tid"
}

#[test]
fn workers_say_their_thread_id_while_xray_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let (events, printed) = run(dir.path(), "xray");
    assert_eq!(printed.len(), 3, "{printed:?}");
    for (name, tid) in &printed {
        let mine = of_thread(&events, name);
        let kinds: Vec<&str> = mine.iter().map(|e| e["event"].as_str().unwrap()).collect();
        let said = if name == "lazy" {
            // No thread_start: the id comes before the thread's first event.
            assert_eq!(kinds[..2], ["data", "data"], "{name}: {kinds:?}");
            assert_eq!(mine[1]["key"], "items");
            mine[0]
        } else {
            assert_eq!(
                kinds[..3],
                ["thread_start", "data", "region_enter"],
                "{name}: {kinds:?}"
            );
            mine[1]
        };
        assert!(is_tid(said), "{said}");
        assert_eq!(said["value"], tid.to_string(), "{name}");
        // Said once per thread.
        assert_eq!(mine.iter().filter(|e| is_tid(e)).count(), 1, "{name}");
    }
    // The main thread's id is the process's: not said.
    assert!(!events.iter().any(|e| e["thread"] == "main" && is_tid(e)));
}

#[test]
fn without_xray_the_lines_stay_gits() {
    let dir = tempfile::tempdir().unwrap();
    let (events, printed) = run(dir.path(), "trace2");
    assert_eq!(printed.len(), 3, "{printed:?}");
    assert!(!events.iter().any(is_tid), "{events:#?}");
    let worker: Vec<&str> = of_thread(&events, "worker0")
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        worker,
        [
            "thread_start",
            "region_enter",
            "region_leave",
            "thread_exit"
        ]
    );
}
