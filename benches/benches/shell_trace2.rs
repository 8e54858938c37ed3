//! Cost of a Trace2 region (enter + leave, two lines) through the std shell's
//! runtime: with nothing enabled, with a perf target and with an event target
//! writing to a file, in the default direct mode (one `write()` per line) and
//! in the background mode (a queue and a writer thread), beside `tracing` +
//! `tracing-subscriber`'s fmt layer writing a span's new and close lines to a
//! file, directly and through `tracing-appender`'s non-blocking writer, in
//! the same run.
//!
//! The runtime is process-wide and configured once, so each Trace2
//! configuration runs in its own child process of this benchmark (same
//! command-line arguments); their results print in order with the others.
//! Files are truncated before each timed batch, outside the measurement, so
//! they stay small.
//!
//! The background rows measure what the traced thread pays while nothing is
//! dropped: the timer stops every 16384 pairs while the queue is flushed, so
//! the queue (64 MiB) always has room for the lines of the next stretch even
//! if the writer thread gets no CPU. A child that dropped a line reports it on
//! stderr when it exits, and the benchmark fails. tracing-appender's worker
//! gets comparable terms: room for 1M lines (more than its largest batch,
//! criterion's last warm-up batch, holds), and backpressure (`lossy(false)`)
//! instead of dropping.
//!
//! Run: `cargo bench -p flightrec-benches --bench shell_trace2 -- --warm-up-time 1 --measurement-time 3`

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use flightrec::trace2::config::Trace2Config;
use flightrec::trace2::target::WriteMode;

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

/// Pairs timed between two flushes of the background rows: 16384 event
/// pairs are about 8 MiB of lines, well within their queue.
const STRETCH: u64 = 16384;

/// [`timed_batch`] for the background rows: the timer runs in stretches of
/// [`STRETCH`] calls, and the queue is flushed (not timed) after each.
fn timed_in_stretches(file: &Path, iters: u64, mut f: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(STRETCH);
        total += timed_batch(file, n, &mut f);
        flightrec::trace2::flush();
        left -= n;
    }
    total
}

fn region_pair() {
    let _r = flightrec::region!(black_box("index"), black_box("refresh"));
}

/// The Trace2 configurations measured in child processes: target and
/// write mode.
const CHILD_CONFIGS: [&str; 4] = ["perf", "event", "perf-background", "event-background"];

/// The background rows' queue: more than the lines of one timed batch.
const BACKGROUND_QUEUE: usize = 64 << 20;

/// In a child process: Trace2 with one target (`perf` or `event`) to a file,
/// written directly or (`-background`) through the background writer.
fn bench_trace2_target(c: &mut Criterion, config: &str) {
    let (which, mode) = match config.strip_suffix("-background") {
        Some(which) => (
            which,
            WriteMode::Background {
                queue_bytes: BACKGROUND_QUEUE,
            },
        ),
        None => (config, WriteMode::Direct),
    };
    let dir = scratch_dir();
    let file = dir.join(format!("trace2.{config}"));
    let var = match which {
        "perf" => "GIT_TRACE2_PERF",
        _ => "GIT_TRACE2_EVENT",
    };
    let value = OsString::from(file.as_os_str());
    let cfg = Trace2Config::load_from("GIT_TRACE2", |name| (name == var).then(|| value.clone()));
    let t2 = flightrec::trace2::Builder::new()
        .config(cfg)
        .write_mode(mode)
        .init();
    assert!(t2.is_active(), "the {which} target did not open");
    let name = match mode {
        WriteMode::Direct => format!("shell_trace2/region_pair/{which}_file"),
        WriteMode::Background { .. } => format!("shell_trace2/region_pair/{which}_file_background"),
    };
    c.bench_function(&name, |b| {
        b.iter_custom(|iters| match mode {
            WriteMode::Direct => timed_batch(&file, iters, region_pair),
            WriteMode::Background { .. } => timed_in_stretches(&file, iters, region_pair),
        })
    });
    drop(t2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tracing`'s fmt layer with the settings of the file rows (thread names,
/// file:line, span new and close lines), writing through `writer`.
fn fmt_subscriber<W>(writer: W) -> impl tracing::Subscriber
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_thread_names(true)
        .with_file(true)
        .with_line_number(true)
        .with_span_events(
            tracing_subscriber::fmt::format::FmtSpan::NEW
                | tracing_subscriber::fmt::format::FmtSpan::CLOSE,
        )
        .finish()
}

fn tracing_span_pair() {
    let _s = tracing::info_span!("refresh", category = black_box("index")).entered();
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
    tracing::subscriber::with_default(fmt_subscriber(file), || {
        c.bench_function("shell_trace2/tracing_span_pair/fmt_file", |b| {
            b.iter_custom(|iters| timed_batch(&path, iters, tracing_span_pair))
        });
    });

    // The like-for-like baseline of the background mode: the same lines
    // through tracing-appender's worker thread, on the background rows'
    // terms (room for a batch, nothing dropped).
    let nb_path = dir.join("tracing-nonblocking.log");
    let nb_file = File::options()
        .create(true)
        .append(true)
        .open(&nb_path)
        .unwrap();
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(1 << 20)
        .finish(nb_file);
    tracing::subscriber::with_default(fmt_subscriber(writer), || {
        c.bench_function(
            "shell_trace2/tracing_span_pair/fmt_file_non_blocking",
            |b| b.iter_custom(|iters| timed_batch(&nb_path, iters, tracing_span_pair)),
        );
    });
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    match std::env::var(CONFIG_VAR).ok().as_deref() {
        Some(config) if CHILD_CONFIGS.contains(&config) => bench_trace2_target(&mut c, config),
        _ => {
            bench_here(&mut c);
            for which in CHILD_CONFIGS {
                let out = Command::new(std::env::current_exe().unwrap())
                    .args(std::env::args_os().skip(1))
                    .env(CONFIG_VAR, which)
                    .env_remove("GIT_TRACE2")
                    .env_remove("GIT_TRACE2_PERF")
                    .env_remove("GIT_TRACE2_EVENT")
                    .env_remove(flightrec::trace2::target::WRITE_MODE_VAR)
                    .stdout(Stdio::inherit())
                    .output()
                    .expect("the benchmark runs itself");
                let stderr = String::from_utf8_lossy(&out.stderr);
                eprint!("{stderr}");
                assert!(out.status.success(), "{which} benchmark failed");
                assert!(
                    !stderr.contains("dropped"),
                    "{which}: lines were dropped, the row would measure drops"
                );
            }
        }
    }
    c.final_summary();
}
