//! The loss markers in a trace add up to the recorder's dropped count once it is
//! flushed: `Recorder::flush` writes the pending marker, so a trace that ends
//! after a loss still says how many records went missing.

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::{verify, Decoder};
use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot, LOSS_EVENT_TYPE};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionId, Version};

/// The N of a `flightrec: lost N records` payload.
fn lost(payload: &[u8]) -> u64 {
    let text = std::str::from_utf8(payload).unwrap();
    let n = text
        .strip_prefix("flightrec: lost ")
        .and_then(|t| t.strip_suffix(" records"))
        .unwrap_or_else(|| panic!("not a loss marker: {text:?}"));
    n.parse().unwrap()
}

/// Sums the loss markers of an FDR file, and checks that it is well formed.
fn markers_in(file: &[u8]) -> u64 {
    verify(file).unwrap_or_else(|e| panic!("{e:?}"));
    let mut total = 0;
    for d in Decoder::new(file).unwrap() {
        match d.unwrap().record {
            Record::TypedEvent {
                event_type,
                payload,
                ..
            } if event_type == LOSS_EVENT_TYPE => total += lost(payload),
            // Before version 5 the marker is a custom event.
            Record::CustomEvent { payload, .. } if payload.starts_with(b"flightrec: lost") => {
                total += lost(payload)
            }
            _ => {}
        }
    }
    total
}

fn ts(tsc: u64) -> Timestamp {
    Timestamp { tsc, cpu: 0 }
}

/// Streaming: rounds of records with a consumer that drains only now and then, so
/// records are dropped, and every round ends in a flush right after a loss; the
/// trace's markers then equal the dropped count, for each round and in total.
#[test]
fn streaming_markers_add_up_to_the_dropped_count_after_flush() {
    for version in [Version::V5, Version::V3] {
        let mut storage = vec![0u8; 3 * 256];
        let slots = [Slot::NEW, Slot::NEW, Slot::NEW];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let cfg = RecorderConfig::new(WriterConfig::new(1).with_version(version), 1_000);
        let mut file = cfg.file_header(256).to_bytes().to_vec();
        let (mut rec, mut cons) = ring.split(cfg);
        let f = FunctionId::new(1).unwrap();
        let mut t = 0;
        // Each round decodes the whole file so far: fewer rounds under Miri,
        // which interprets every step (the same checks, on a shorter file).
        let rounds = if cfg!(miri) { 4 } else { 20 };
        for round in 0..rounds {
            // More records than the three buffers hold: the rest are dropped.
            for _ in 0..(80 + 7 * round) {
                t += 1;
                let _ = rec.enter(f, ts(t));
            }
            assert!(rec.records_dropped() > 0);
            // The consumer catches up, then the recorder flushes after the loss.
            while let Some(b) = cons.pop() {
                file.extend_from_slice(&b);
            }
            rec.flush();
            while let Some(b) = cons.pop() {
                file.extend_from_slice(&b);
            }
            assert_eq!(
                markers_in(&file),
                rec.records_dropped(),
                "{version:?}, round {round}"
            );
        }
        assert_eq!(
            u64::from(rec.stats().records_dropped),
            rec.records_dropped()
        );
    }
}

/// A flush whose current buffer has no room left for the marker hands that buffer
/// over and writes the marker in a new one.
#[test]
fn flush_starts_a_new_buffer_when_the_marker_does_not_fit() {
    let mut storage = vec![0u8; 2 * 128];
    let slots = [Slot::NEW, Slot::NEW];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    let mut file = cfg.file_header(128).to_bytes().to_vec();
    let (mut rec, mut cons) = ring.split(cfg);
    let f = FunctionId::new(1).unwrap();
    // An event too large for any buffer is dropped; then fill the buffer: 8 function
    // records fill a 128-byte buffer, leaving no room for a 41-byte marker.
    assert!(rec.custom_event(ts(0), &[0; 200]).is_err());
    for t in 1..=8 {
        rec.enter(f, ts(t)).unwrap();
    }
    rec.flush();
    assert_eq!(cons.pending(), 2);
    while let Some(b) = cons.pop() {
        file.extend_from_slice(&b);
    }
    assert_eq!(rec.records_dropped(), 1);
    assert_eq!(markers_in(&file), 1);
}

/// With every buffer waiting for the consumer, the marker cannot be written: it stays
/// pending and goes out with the next flush that has room.
#[test]
fn a_marker_without_room_waits_for_the_consumer() {
    let mut storage = vec![0u8; 128];
    let slots = [Slot::NEW];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    let mut file = cfg.file_header(128).to_bytes().to_vec();
    let (mut rec, mut cons) = ring.split(cfg);
    let f = FunctionId::new(1).unwrap();
    for t in 1..=12 {
        let _ = rec.enter(f, ts(t));
    }
    assert_eq!(rec.records_dropped(), 4);
    rec.flush(); // the only buffer waits for the consumer: nowhere to write
    file.extend_from_slice(&cons.pop().unwrap());
    assert_eq!(markers_in(&file), 0);
    rec.flush(); // now there is room
    file.extend_from_slice(&cons.pop().unwrap());
    assert_eq!(markers_in(&file), 4);
    // The marker-only buffer is timed at the last lost record.
    let last = Decoder::new(&file).unwrap().last().unwrap().unwrap().record;
    assert_eq!(
        last,
        Record::TypedEvent {
            delta: 0,
            event_type: LOSS_EVENT_TYPE,
            payload: b"flightrec: lost 4 records"
        }
    );
}

/// Flight recorder: records too large for a buffer are the only loss; after a
/// flush the buffers read back carry the marker.
#[test]
fn flight_recorder_marks_oversized_records_on_flush() {
    let mut storage = vec![0u8; 2 * 256];
    let slots = [Slot::NEW, Slot::NEW];
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    let cfg = RecorderConfig::new(WriterConfig::new(1).with_version(Version::V4), 1_000);
    let mut file = cfg.file_header(256).to_bytes().to_vec();
    let (mut rec, _cons) = ring.split(cfg);
    rec.enter(FunctionId::new(1).unwrap(), ts(5)).unwrap();
    assert!(rec.custom_event(ts(6), &[1; 300]).is_err());
    assert!(rec.custom_event(ts(7), &[1; 300]).is_err());
    rec.flush();
    rec.for_each_buffer(|b| file.extend_from_slice(b));
    assert_eq!(markers_in(&file), 2);
    let marker = Decoder::new(&file)
        .unwrap()
        .map(|d| d.unwrap().record)
        .find(|r| matches!(r, Record::CustomEvent { .. }))
        .unwrap();
    assert_eq!(
        marker,
        Record::CustomEvent {
            time: CustomEventTime::Absolute { tsc: 5, cpu: 0 },
            payload: b"flightrec: lost 2 records"
        }
    );
}
