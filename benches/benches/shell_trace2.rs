//! Cost of a Trace2 region (enter + leave, two lines) through the std shell's
//! runtime: with nothing enabled, with a perf target and with an event target
//! writing to a file, beside `tracing` + `tracing-subscriber`'s fmt layer
//! writing a span's new and close lines to a file, in the same run.
//!
//! The runtime is process-wide and configured once, so each Trace2
//! configuration runs in its own child process of this benchmark (same
//! command-line arguments); their results print in order with the others.
//! Files are truncated before each timed batch, outside the measurement, so
//! they stay small; every line is still one `write()` to a regular file.
//!
//! Run: `cargo bench -p flightrec-benches --bench shell_trace2 -- --warm-up-time 1 --measurement-time 3`

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use flightrec::trace2::config::Trace2Config;

const CONFIG_VAR: &str = "FLIGHTREC_BENCH_TRACE2";

fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "flightrec-bench-shell-trace2-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Times `iters` calls of `f`, truncating `file` first (not timed).
fn timed_batch(file: &Path, iters: u64, mut f: impl FnMut()) -> Duration {
    if let Ok(fh) = OpenOptions::new().write(true).open(file) {
        let _ = fh.set_len(0);
    }
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed()
}

fn region_pair() {
    let _r = flightrec::region!(black_box("index"), black_box("refresh"));
}

/// In a child process: Trace2 with one target (`perf` or `event`) to a file.
fn bench_trace2_target(c: &mut Criterion, which: &str) {
    let dir = scratch_dir();
    let file = dir.join(format!("trace2.{which}"));
    let var = match which {
        "perf" => "GIT_TRACE2_PERF",
        _ => "GIT_TRACE2_EVENT",
    };
    let value = OsString::from(file.as_os_str());
    let cfg = Trace2Config::load_from("GIT_TRACE2", |name| (name == var).then(|| value.clone()));
    let t2 = flightrec::trace2::Builder::new().config(cfg).init();
    assert!(t2.is_active(), "the {which} target did not open");
    c.bench_function(&format!("shell_trace2/region_pair/{which}_file"), |b| {
        b.iter_custom(|iters| timed_batch(&file, iters, region_pair))
    });
    drop(t2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// In this process: Trace2 off, and `tracing` with and without a subscriber.
fn bench_here(c: &mut Criterion) {
    assert!(!flightrec::trace2::enabled());
    c.bench_function("shell_trace2/floor/enabled_check", |b| {
        b.iter(|| black_box(flightrec::trace2::enabled()))
    });
    c.bench_function("shell_trace2/region_pair/off", |b| b.iter(region_pair));

    c.bench_function("shell_trace2/tracing_span_pair/no_subscriber", |b| {
        b.iter(|| {
            let _s = tracing::info_span!("refresh", category = "index").entered();
        })
    });

    let dir = scratch_dir();
    // The floor every file target pays: one write() of a perf-sized line.
    let floor = dir.join("floor.log");
    let fh = File::options()
        .create(true)
        .append(true)
        .open(&floor)
        .unwrap();
    let line = [b'x'; 150];
    c.bench_function("shell_trace2/floor/two_150_byte_writes", |b| {
        b.iter_custom(|iters| {
            timed_batch(&floor, iters, || {
                let _ = (&fh).write(black_box(&line));
                let _ = (&fh).write(black_box(&line));
            })
        })
    });

    let path = dir.join("tracing.log");
    let file = Arc::new(
        File::options()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap(),
    );
    let subscriber = tracing_subscriber::fmt()
        .with_writer(file)
        .with_ansi(false)
        .with_thread_names(true)
        .with_file(true)
        .with_line_number(true)
        .with_span_events(
            tracing_subscriber::fmt::format::FmtSpan::NEW
                | tracing_subscriber::fmt::format::FmtSpan::CLOSE,
        )
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        c.bench_function("shell_trace2/tracing_span_pair/fmt_file", |b| {
            b.iter_custom(|iters| {
                timed_batch(&path, iters, || {
                    let _s =
                        tracing::info_span!("refresh", category = black_box("index")).entered();
                })
            })
        });
    });
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    match std::env::var(CONFIG_VAR).ok().as_deref() {
        Some(which @ ("perf" | "event")) => bench_trace2_target(&mut c, which),
        _ => {
            bench_here(&mut c);
            for which in ["perf", "event"] {
                let status = Command::new(std::env::current_exe().unwrap())
                    .args(std::env::args_os().skip(1))
                    .env(CONFIG_VAR, which)
                    .env_remove("GIT_TRACE2")
                    .env_remove("GIT_TRACE2_PERF")
                    .env_remove("GIT_TRACE2_EVENT")
                    .status()
                    .expect("the benchmark runs itself");
                assert!(status.success(), "{which} benchmark failed");
            }
        }
    }
    c.final_summary();
}
