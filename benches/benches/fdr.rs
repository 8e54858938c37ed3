//! Cost of recording FDR function records, beside the floor (`rdtsc` plus an 8-byte
//! store) measured in the same run.
//!
//! ```text
//! cargo bench -p flightrec-benches --bench fdr
//! ```

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flightrec_core::clock::{Clock, Timestamp, Tsc};
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;

const BUFFER: usize = 64 * 1024;

fn floor_rdtsc_store(c: &mut Criterion, group_name: &str) {
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(1));
    let mut buf = vec![0u64; BUFFER / 8];
    let mut i = 0usize;
    let mut clock = Tsc::new(1);
    group.bench_function("floor: rdtsc + 8-byte store", |b| {
        b.iter(|| {
            let t = clock.now().tsc;
            // Masking keeps the index in bounds without a branch.
            buf[i & (BUFFER / 8 - 1)] = t;
            i = i.wrapping_add(1);
        })
    });
    black_box(&buf);

    let cfg = WriterConfig::new(1).with_pid(1);
    let f = FunctionId::new(42).unwrap();
    let mut storage = vec![0u8; 8 * BUFFER];
    let slots: Vec<Slot> = (0..8).map(|_| Slot::NEW).collect();
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    let (mut rec, _) = ring.split(RecorderConfig::new(cfg, 1));
    group.bench_function("Recorder::enter, flight recorder (rdtsc included)", |b| {
        b.iter(|| {
            let _ = rec.enter(black_box(f), clock.now());
        })
    });
    group.finish();

    let mut group = c.benchmark_group(format!("{group_name} pair"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("floor: 2 x (rdtsc + 8-byte store)", |b| {
        b.iter(|| {
            let t = clock.now().tsc;
            buf[i & (BUFFER / 8 - 1)] = t;
            i = i.wrapping_add(1);
            let t = clock.now().tsc;
            buf[i & (BUFFER / 8 - 1)] = t;
            i = i.wrapping_add(1);
        })
    });
    group.bench_function("Recorder enter+exit pair, flight recorder", |b| {
        b.iter(|| {
            let _ = rec.enter(black_box(f), clock.now());
            let _ = rec.exit(black_box(f), clock.now());
        })
    });
    let mut ts = Timestamp { tsc: 0, cpu: 0 };
    group.bench_function(
        "Recorder enter+exit pair, fixed clock (writer cost only)",
        |b| {
            b.iter(|| {
                ts.tsc += 3;
                let _ = rec.enter(black_box(f), ts);
                ts.tsc += 3;
                let _ = rec.exit(black_box(f), ts);
            })
        },
    );
    group.finish();
}

fn benches(c: &mut Criterion) {
    floor_rdtsc_store(c, "fdr record");
}

criterion_group!(fdr, benches);
criterion_main!(fdr);
