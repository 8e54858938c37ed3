//! The streaming ring's hand-off between a recorder thread and a consumer thread:
//! every record arrives intact and in order, or is counted as dropped. Runs under
//! Miri too (`cargo +nightly miri test -p flightrec-core --test ring_threads`), which
//! checks the unsafe buffer sharing for data races.

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::{verify, Decoder};
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot, LOSS_EVENT_TYPE};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;

// Fewer than 2^28, so the record number fits a function id.
const RECORDS: u64 = if cfg!(miri) { 300 } else { 200_000 };

#[test]
fn records_cross_threads_intact_or_counted() {
    let mut storage = vec![0u8; 4 * 256];
    let slots = [Slot::NEW, Slot::NEW, Slot::NEW, Slot::NEW];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let cfg = RecorderConfig::new(WriterConfig::new(3).with_pid(1), 1_000_000);
    let header = cfg.file_header(256).to_bytes();
    let (mut rec, mut cons) = ring.split(cfg);
    let done = std::sync::atomic::AtomicBool::new(false);

    let (file, dropped) = std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            let mut file = header.to_vec();
            loop {
                let finished = done.load(std::sync::atomic::Ordering::Acquire);
                while let Some(b) = cons.pop() {
                    file.extend_from_slice(&b);
                }
                if finished {
                    break;
                }
                std::thread::yield_now();
            }
            file
        });
        for i in 0..RECORDS {
            // The function id carries the record number, so loss and order show.
            let id = FunctionId::new(i as u32).unwrap();
            let _ = rec.enter(
                id,
                Timestamp {
                    tsc: 10 + i,
                    cpu: 0,
                },
            );
        }
        rec.flush();
        done.store(true, std::sync::atomic::Ordering::Release);
        let file = consumer.join().unwrap();
        (file, rec.records_dropped())
    });

    assert!(verify(&file).is_ok(), "{:?}", verify(&file).err());
    let mut seen = 0u64;
    let mut last: Option<u64> = None;
    let mut loss_markers = 0;
    for d in Decoder::new(&file).unwrap() {
        match d.unwrap().record {
            Record::Function { id, .. } => {
                let n = u64::from(id.get());
                if let Some(l) = last {
                    assert!(n > l, "records out of order: {l} then {n}");
                }
                last = Some(n);
                seen += 1;
            }
            Record::TypedEvent { event_type, .. } if event_type == LOSS_EVENT_TYPE => {
                loss_markers += 1
            }
            _ => {}
        }
    }
    assert_eq!(
        seen + dropped,
        RECORDS,
        "every record arrives or is counted as dropped"
    );
    if dropped > 0 {
        assert!(loss_markers > 0, "a loss must be visible in the trace");
    }
}
