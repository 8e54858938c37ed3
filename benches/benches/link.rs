//! Cost of the serial link's frame path on the host: the CRC choice (the `crc`
//! crate's 256-entry table, its bitwise `NoTable` and its 16-table variants), and
//! encoding and decoding a 1 KiB FDR buffer as a frame, beside the `cobs` crate
//! encoding the same bytes into a buffer (the baseline) in the same run.
//!
//! ```text
//! cargo bench -p flightrec-benches --bench link -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use crc::{Crc, NoTable, Table, CRC_32_ISCSI};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flightrec_core::link::{Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind};

const LEN: usize = 1024;

/// FDR-like content: 8-byte records with small deltas, so zeros are common.
fn payload() -> Vec<u8> {
    (0..LEN)
        .map(|i| match i % 8 {
            0 => (i / 8 % 7) as u8 * 16,
            4 => (i % 97) as u8,
            _ => 0,
        })
        .collect()
}

fn crc_variants(c: &mut Criterion) {
    let data = payload();
    let mut g = c.benchmark_group("link crc32c, 1 KiB");
    g.throughput(Throughput::Bytes(LEN as u64));
    let bitwise = Crc::<u32, NoTable>::new(&CRC_32_ISCSI);
    let table = Crc::<u32, Table<1>>::new(&CRC_32_ISCSI);
    let table16 = Crc::<u32, Table<16>>::new(&CRC_32_ISCSI);
    g.bench_function("NoTable (bitwise, no flash)", |b| {
        b.iter(|| bitwise.checksum(black_box(&data)))
    });
    g.bench_function("Table<1> (1 KiB table, chosen)", |b| {
        b.iter(|| table.checksum(black_box(&data)))
    });
    g.bench_function("Table<16> (16 KiB tables)", |b| {
        b.iter(|| table16.checksum(black_box(&data)))
    });
    g.finish();
}

fn frames(c: &mut Criterion) {
    let data = payload();
    let head = FrameHead {
        kind: FrameKind::FdrBuffer,
        source: 1,
        seq: 0,
    };
    let mut g = c.benchmark_group("link frame, 1 KiB payload");
    g.throughput(Throughput::Bytes(LEN as u64));
    let mut out = vec![0u8; FrameEncoder::max_encoded_len(LEN)];
    g.bench_function("baseline: cobs::encode into a buffer", |b| {
        b.iter(|| cobs::encode(black_box(&data), &mut out))
    });
    let mut chunk = [0u8; 64];
    g.bench_function("FrameEncoder (CRC + COBS), 64-byte chunks", |b| {
        b.iter(|| {
            let mut enc = FrameEncoder::new(head, black_box(&data));
            let mut n = 0;
            loop {
                let k = enc.fill(&mut chunk);
                if k == 0 {
                    break;
                }
                n += k;
                black_box(&chunk);
            }
            n
        })
    });
    let mut wire = vec![0u8; FrameEncoder::max_encoded_len(LEN)];
    let n = FrameEncoder::new(head, &data).fill(&mut wire);
    let wire = &wire[..n];
    let mut buf = vec![0u8; FrameEncoder::max_encoded_len(LEN)];
    g.bench_function("FrameDecoder (COBS + CRC check)", |b| {
        b.iter(|| {
            let mut dec = FrameDecoder::new(&mut buf);
            match dec.feed(black_box(wire)) {
                (_, Some(Event::Frame(f))) => f.payload.len(),
                _ => 0,
            }
        })
    });
    g.finish();
}

criterion_group!(benches, crc_variants, frames);
criterion_main!(benches);
