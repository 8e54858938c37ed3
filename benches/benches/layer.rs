//! Cost of a span's enter and exit (`span.enter()` and dropping its guard)
//! through `tracing` with flightrec's layer, beside the same span on a bare
//! `Registry`, on `Registry` + the fmt layer (writing to a sink; it prints
//! nothing on enter or exit by default) and on `Registry` + tracing-chrome
//! (threaded style: an event on every enter and exit, serialised by its writer
//! thread into a sink), all in one run. The flightrec rows: FDR recording (a
//! flight recorder, every call kept, Trace2 off), and both off. The cost of an
//! `xray_fn!` call with FDR on is the reference for one FDR enter+exit pair, and
//! a layer that only reads the clock on enter and on exit (the clock FDR reads)
//! and stores the reading is the floor of any layer that timestamps both.
//!
//! Run: `cargo bench -p flightrec-benches --bench layer -- --warm-up-time 1 --measurement-time 3`
//!
//! On a machine that other work loads, `-- --batches` times the bare
//! `Registry`, flightrec's layer with FDR on and the clock-only floor in
//! interleaved batches instead (2 000 rounds of 5 000 pairs each, the rows in
//! turn within a round so that they see the same load) and prints each row's
//! fastest batch and its 10th percentile: other processes only ever slow a
//! batch down, so the low end is the cost of the code.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{criterion_group, Criterion};
use flightrec::xray::{self, Config, Mode};
use tracing::span::Id;
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

/// The floor of a layer that timestamps a span's enter and exit: each reads the
/// clock FDR records with and stores the reading (8 bytes), nothing else.
struct ClockOnlyLayer;

static LAST_READING: AtomicU64 = AtomicU64::new(0);

impl<S: Subscriber> Layer<S> for ClockOnlyLayer {
    fn on_enter(&self, _: &Id, _: Context<'_, S>) {
        LAST_READING.store(xray::clock::now().tsc, Ordering::Relaxed);
    }

    fn on_exit(&self, _: &Id, _: Context<'_, S>) {
        LAST_READING.store(xray::clock::now().tsc, Ordering::Relaxed);
    }
}

/// Times `span.enter()` + drop on `subscriber`.
fn span_enter_exit<S>(c: &mut Criterion, name: &str, subscriber: S)
where
    S: Subscriber + Send + Sync + 'static,
{
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("work", id = 7);
        c.bench_function(name, |b| {
            b.iter(|| {
                let _e = black_box(&span).enter();
            })
        });
    });
}

fn fdr_config() -> Config {
    Config::builder()
        .mode(Mode::FlightRecorder)
        .buffer_size(1 << 16)
        .buffer_max(8)
        .thread_buffers(8)
        .func_duration_threshold_us(0)
        .no_file_flush(true)
        .fatal_signals(false)
        .build()
        .unwrap()
}

fn layer(c: &mut Criterion) {
    xray::init(fdr_config()).unwrap();

    span_enter_exit(
        c,
        "span enter+exit: bare Registry",
        tracing_subscriber::registry(),
    );
    assert!(xray::is_recording());
    span_enter_exit(
        c,
        "span enter+exit: Registry + flightrec layer, FDR on",
        tracing_subscriber::registry().with(flightrec::layer::layer()),
    );
    assert!(xray::stop());
    span_enter_exit(
        c,
        "span enter+exit: Registry + flightrec layer, FDR and Trace2 off",
        tracing_subscriber::registry().with(flightrec::layer::layer()),
    );
    assert!(xray::start());
    span_enter_exit(
        c,
        "span enter+exit: Registry + fmt layer",
        tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink)),
    );
    let (chrome, flush) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(std::io::sink())
        .build();
    span_enter_exit(
        c,
        "span enter+exit: Registry + tracing-chrome",
        tracing_subscriber::registry().with(chrome),
    );
    drop(flush);
    span_enter_exit(
        c,
        "span enter+exit: Registry + a layer that only reads the clock (floor)",
        tracing_subscriber::registry().with(ClockOnlyLayer),
    );
    assert_ne!(LAST_READING.load(Ordering::Relaxed), 0);
    c.bench_function("xray_fn! guard + drop, FDR on (one FDR pair)", |b| {
        b.iter(|| {
            let _g = flightrec::xray_fn!();
        })
    });
    let _ = xray::shutdown();
}

/// A span made on its own subscriber (a span is entered through the
/// subscriber it was made on, whatever the default is).
fn span_on<S>(subscriber: S) -> tracing::Span
where
    S: Subscriber + Send + Sync + 'static,
{
    let dispatch = tracing::Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || tracing::info_span!("work", id = 7))
}

/// Nanoseconds per enter+exit pair over one batch of `n`.
fn batch(span: &tracing::Span, n: u32) -> f64 {
    let start = std::time::Instant::now();
    for _ in 0..n {
        let _e = black_box(span).enter();
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

/// The `--batches` mode (see the module docs).
fn batches() {
    const ROUNDS: usize = 2_000;
    const PAIRS: u32 = 5_000;
    xray::init(fdr_config()).unwrap();
    let rows = [
        ("bare Registry", span_on(tracing_subscriber::registry())),
        (
            "Registry + flightrec layer, FDR on",
            span_on(tracing_subscriber::registry().with(flightrec::layer::layer())),
        ),
        (
            "Registry + a layer that only reads the clock (floor)",
            span_on(tracing_subscriber::registry().with(ClockOnlyLayer)),
        ),
    ];
    assert!(xray::is_recording());
    let mut samples = vec![Vec::with_capacity(ROUNDS); rows.len()];
    for round in 0..ROUNDS + 20 {
        for ((_, span), times) in rows.iter().zip(&mut samples) {
            let t = batch(span, PAIRS);
            // The first rounds warm up caches and the ring.
            if round >= 20 {
                times.push(t);
            }
        }
    }
    let _ = xray::shutdown();
    let low = |times: &mut Vec<f64>| {
        times.sort_by(f64::total_cmp);
        (times[0], times[times.len() / 10])
    };
    let lows: Vec<(f64, f64)> = samples.iter_mut().map(low).collect();
    let (bare_min, bare_p10) = lows[0];
    println!("| span enter+exit ({ROUNDS} batches of {PAIRS}) | fastest batch | 10th percentile | added to bare `Registry` (fastest / 10th) |");
    println!("|---|---:|---:|---:|");
    for ((name, _), (min, p10)) in rows.iter().zip(&lows) {
        println!(
            "| {name} | {min:.1} ns | {p10:.1} ns | {:+.1} / {:+.1} ns |",
            min - bare_min,
            p10 - bare_p10
        );
    }
}

criterion_group!(benches, layer);

fn main() {
    if std::env::args().any(|a| a == "--batches") {
        batches();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
