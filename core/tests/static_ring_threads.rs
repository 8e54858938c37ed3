//! Static rings shared between threads: the halves are taken once each however
//! many threads race for them, and a recorder thread and a consumer thread share a
//! ring without losing a record uncounted. Integration tests, since they need
//! std's threads (the core is `no_std`); CI runs them under Miri too.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::header::HEADER_SIZE;
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;

fn cfg() -> RecorderConfig {
    RecorderConfig::new(WriterConfig::new(1), 1_000)
}

/// Many threads race to take the halves; exactly one wins each.
#[test]
fn racing_takers_get_one_half_each() {
    static RING: StaticRing<2, 128> = StaticRing::new(Policy::Streaming);
    static RECORDERS: AtomicUsize = AtomicUsize::new(0);
    static CONSUMERS: AtomicUsize = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                if RING.take_recorder(cfg()).is_ok() {
                    RECORDERS.fetch_add(1, Ordering::Relaxed);
                }
                if RING.take_consumer().is_ok() {
                    CONSUMERS.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(RECORDERS.load(Ordering::Relaxed), 1);
    assert_eq!(CONSUMERS.load(Ordering::Relaxed), 1);
}

/// A recorder thread and a consumer thread share a static ring; every record is
/// either in a buffer the consumer read or counted as dropped.
#[test]
fn streams_between_threads() {
    static RING: StaticRing<3, 128> = StaticRing::new(Policy::Streaming);
    static DONE: AtomicBool = AtomicBool::new(false);
    const CALLS: u64 = if cfg!(miri) { 60 } else { 5_000 };
    let (mut rec, mut consumer) = RING.split(cfg()).unwrap();
    let header = rec.file_header();
    std::thread::scope(|s| {
        let recording = s.spawn(move || {
            let f = FunctionId::new(1).unwrap();
            for t in 0..CALLS {
                let _ = rec.enter(f, Timestamp { tsc: t, cpu: 0 });
            }
            rec.flush();
            DONE.store(true, Ordering::Release);
            rec.records_dropped()
        });
        let mut kept = 0;
        loop {
            let finished = DONE.load(Ordering::Acquire);
            while let Some(buffer) = consumer.pop() {
                let mut file = [0u8; HEADER_SIZE + 128];
                file[..HEADER_SIZE].copy_from_slice(&header.to_bytes());
                file[HEADER_SIZE..HEADER_SIZE + buffer.len()].copy_from_slice(&buffer);
                let summary = verify(&file[..HEADER_SIZE + buffer.len()]).unwrap();
                kept += summary.function_records as u64;
            }
            if finished {
                break;
            }
            std::thread::yield_now();
        }
        let dropped = recording.join().unwrap();
        assert_eq!(kept + dropped, CALLS);
    });
}
