//! Cost of an FDR enter+exit pair through the desktop runtime (`flightrec::xray`:
//! state check, thread-local ring lookup, busy flag, clock, core recorder), beside
//! the core's own `Recorder` pair with the same clock and the floor (two clock
//! reads and two 8-byte stores), all in the same run. The clock is what the
//! runtime picks (`rdtsc`, or `rdtscp` where it is cheap), printed on stderr.
//!
//! ```text
//! cargo bench -p flightrec-benches --bench host_fdr -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flightrec::xray::{self, Config, Mode};
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;

const BUFFER: usize = 64 * 1024;
const BUFFERS: usize = 8;

fn pairs(c: &mut Criterion) {
    let f = FunctionId::new(42).unwrap();
    let mut group = c.benchmark_group("host fdr pair");
    group.throughput(Throughput::Elements(1));

    // Before `init`: what instrumentation costs while XRay is off.
    group.bench_function(
        "xray off: enter guard + drop (one relaxed load each)",
        |b| {
            b.iter(|| {
                let _g = xray::enter(black_box(f));
            })
        },
    );

    // The runtime's clock choice (`flightrec_cpu_ids=auto`), made before the
    // floor and the core pair so that all three read the clock the same way.
    let rdtscp = xray::clock::select_cpu_ids(xray::CpuIds::Auto);
    eprintln!("clock: {}", if rdtscp { "rdtscp" } else { "rdtsc" });
    let mut sink = vec![0u64; BUFFER / 8];
    let mut i = 0usize;
    group.bench_function("floor: 2 x (clock + 8-byte store)", |b| {
        b.iter(|| {
            sink[i & (BUFFER / 8 - 1)] = xray::clock::now().tsc;
            i = i.wrapping_add(1);
            sink[i & (BUFFER / 8 - 1)] = xray::clock::now().tsc;
            i = i.wrapping_add(1);
        })
    });
    black_box(&sink);

    let mut storage = vec![0u8; BUFFERS * BUFFER];
    let slots: Vec<Slot> = (0..BUFFERS).map(|_| Slot::NEW).collect();
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    let (mut rec, _) = ring.split(RecorderConfig::new(
        WriterConfig::new(1).with_pid(1),
        1_000_000_000,
    ));
    group.bench_function("core Recorder enter+exit pair", |b| {
        b.iter(|| {
            let _ = rec.enter(black_box(f), xray::clock::now());
            let _ = rec.exit(black_box(f), xray::clock::now());
        })
    });

    let cfg = Config::builder()
        .mode(Mode::FlightRecorder)
        .buffer_size(BUFFER)
        .buffer_max(BUFFERS)
        .thread_buffers(BUFFERS)
        .func_duration_threshold_us(0)
        .no_file_flush(true)
        .fatal_signals(false)
        .build()
        .unwrap();
    xray::init(cfg).unwrap();
    group.bench_function("host record_enter + record_exit", |b| {
        b.iter(|| {
            xray::record_enter(black_box(f));
            xray::record_exit(black_box(f));
        })
    });
    group.bench_function("host enter guard + drop", |b| {
        b.iter(|| {
            let _g = xray::enter(black_box(f));
        })
    });
    group.bench_function("host xray_fn! guard + drop", |b| {
        b.iter(|| {
            let _g = flightrec::xray_fn!();
        })
    });
    group.bench_function("host fn with xray_fn!, called", |b| b.iter(with_xray_fn));
    group.bench_function("host #[flightrec::instrument] fn, called", |b| {
        b.iter(instrumented)
    });
    group.finish();
    let _ = xray::shutdown();
}

/// `xray_fn!` in a function of its own, for the comparison with the attribute.
#[inline(never)]
fn with_xray_fn() {
    let _g = flightrec::xray_fn!();
}

/// The same function with the attribute.
#[flightrec::instrument]
#[inline(never)]
fn instrumented() {}

criterion_group!(host_fdr, pairs);
criterion_main!(host_fdr);
