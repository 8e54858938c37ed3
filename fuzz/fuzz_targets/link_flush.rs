//! A streaming ring drained by `LinkWriter::flush_one`, as a firmware's idle loop
//! drains it, onto a sink that takes a few bytes a call and fills up, or breaks
//! now and then, with a record script and flush points that the input gives:
//!
//! - each `flush_one` that says a buffer went out (`Ok(true)`) sent the very
//!   buffer the ring finished there, in the frame form its source asks for
//!   (plain, compact or packed): a second ring fed the same script gives the
//!   buffers to compare with; the receiver decodes every one of those, in
//!   order, and no other buffer but one whose frame failed in its last write
//!   (below);
//! - a buffer is handed out once: one whose frame failed is not retried, and
//!   one that waits behind a failed header frame is sent later;
//! - the header frames carry the source's file header, the counters frames
//!   parse, and the file rebuilt from the header and the buffers received
//!   passes the core's verifier;
//! - at the end every buffer the ring finished was sent or failed.
//!
//! A frame whose write failed after the sink took all of it but its closing
//! delimiter is whole to the receiver: the next frame's leading delimiter ends
//! it. The writer cannot tell (a sink's error does not say how much it took),
//! so it counts that frame as failed, and the receiver has its buffer.
#![no_main]

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::ring::{Consumer, Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;
use flightrec_core::link::{FrameKind, LinkStats, LinkWriter, Source};
use flightrec_testkit::link_wire::{buffer_of, decode_frames, TestSink};
use libfuzzer_sys::fuzz_target;

const SLOTS: usize = 3;

/// One `flush_one`, checked: the buffer it took (one at most) is the shadow
/// ring's next, and goes to `handed` with whether its frame went out whole.
fn flush_one(
    link: &mut LinkWriter<TestSink>,
    source: &mut Source,
    consumer: &mut Consumer<'_, '_>,
    shadow_consumer: &mut Consumer<'_, '_>,
    handed: &mut Vec<(Vec<u8>, bool)>,
) {
    let before = consumer.stats().buffers_consumed;
    let result = link.flush_one(source, consumer);
    let taken = consumer.stats().buffers_consumed - before;
    assert!(taken <= 1, "one flush hands out one buffer at most");
    if taken == 1 {
        let buffer = shadow_consumer
            .pop()
            .expect("the shadow has the same buffers");
        assert!(
            !matches!(result, Ok(false)),
            "a buffer went and flush_one said none did"
        );
        handed.push((buffer.to_vec(), result.is_ok()));
    } else {
        assert!(
            !matches!(result, Ok(true)),
            "flush_one sent a buffer it did not take"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let [form, sink_kind, a, b, size, every, script @ ..] = data else {
        return;
    };
    let buffer_size = 128 + 64 * usize::from(size % 8);
    let cfg = RecorderConfig::new(WriterConfig::new(5).with_pid(9), 1_000_000);
    let header = cfg.file_header(buffer_size);
    let (compact, packed, form_kind) = match form % 3 {
        0 => (false, false, FrameKind::FdrBuffer),
        1 => (true, false, FrameKind::FdrCompact),
        _ => (true, true, FrameKind::FdrPacked),
    };
    let mut source = Source::new(5, header)
        .with_compact(compact)
        .with_packed(packed)
        .with_header_every(u32::from(every % 8) + 1);
    let sink = match sink_kind % 3 {
        0 => TestSink::new(),
        1 => TestSink::limited(usize::from(*a % 64) + 1, 64 * usize::from(*b)),
        _ => TestSink::flaky(usize::from(*a % 16)),
    };
    let mut link = LinkWriter::new(sink);

    // The ring the link drains, and its shadow, fed the same records.
    let mut storage = vec![0u8; SLOTS * buffer_size];
    let slots = [Slot::NEW; SLOTS];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let (mut rec, mut consumer) = ring.split(cfg);
    let mut shadow_storage = vec![0u8; SLOTS * buffer_size];
    let shadow_slots = [Slot::NEW; SLOTS];
    let mut shadow = Ring::new(&mut shadow_storage, &shadow_slots, Policy::Streaming).unwrap();
    let (mut shadow_rec, mut shadow_consumer) = shadow.split(cfg);

    let mut handed: Vec<(Vec<u8>, bool)> = Vec::new();
    let mut flush = |link: &mut LinkWriter<TestSink>,
                     source: &mut Source,
                     consumer: &mut Consumer<'_, '_>,
                     shadow_consumer: &mut Consumer<'_, '_>| {
        flush_one(link, source, consumer, shadow_consumer, &mut handed)
    };

    let mut tsc = 0u64;
    let mut depth = 0u32;
    for (i, &op) in script.iter().enumerate() {
        match op {
            0..=199 => {
                tsc += u64::from(op % 50) * u64::from(op / 50 + 1);
                let id = FunctionId::new(u32::from(op % 13) * 37 + 1).unwrap();
                let ts = Timestamp { tsc, cpu: 0 };
                // Enters and exits that nest, as a program's calls do.
                let enter = depth == 0 || (depth < 8 && i % 3 != 0);
                let (r, s) = if enter {
                    depth += 1;
                    (rec.enter(id, ts), shadow_rec.enter(id, ts))
                } else {
                    depth -= 1;
                    (rec.exit(id, ts), shadow_rec.exit(id, ts))
                };
                assert_eq!(r, s, "the shadow ring keeps step");
            }
            200..=239 => {
                flush(&mut link, &mut source, &mut consumer, &mut shadow_consumer);
            }
            _ => {
                rec.flush();
                shadow_rec.flush();
            }
        }
    }
    // The end of a run: the last buffer handed over, every buffer drained (a
    // sink that stays full fails each frame, once), then the final counters.
    rec.flush();
    shadow_rec.flush();
    let mut tries = 0;
    while consumer.pending() > 0 && tries < 4 * SLOTS + 4 {
        flush(&mut link, &mut source, &mut consumer, &mut shadow_consumer);
        tries += 1;
    }
    let _ = link.send_source_status(&mut source, &consumer);
    if consumer.pending() == 0 {
        let finished = rec.stats().buffers_finished as usize;
        assert_eq!(
            handed.len(),
            finished,
            "every finished buffer sent or failed"
        );
    }

    // What the receiver gets.
    let sink = link.into_inner();
    let (frames, _) = decode_frames(&sink.out);
    let mut received = Vec::new();
    for (head, payload) in &frames {
        assert_eq!(head.source, 5);
        match head.kind {
            FrameKind::FileHeader => assert_eq!(payload[..], header.to_bytes()[..]),
            FrameKind::Stats => {
                LinkStats::parse(payload).expect("a counters frame parses");
            }
            kind @ (FrameKind::FdrBuffer | FrameKind::FdrCompact | FrameKind::FdrPacked) => {
                assert_eq!(kind, form_kind, "the source's frame form");
                received.push(buffer_of(kind, payload).expect("a buffer frame"));
            }
            other => panic!("a frame of kind {other:?}"),
        }
    }
    // In order: every buffer sent whole, and maybe a failed one between them.
    let mut next = received.iter().peekable();
    for (buffer, whole) in &handed {
        if next.peek() == Some(&buffer) {
            next.next();
        } else {
            assert!(!whole, "a buffer sent whole did not arrive");
        }
    }
    assert!(
        next.next().is_none(),
        "a buffer arrived that was not handed out"
    );
    if !received.is_empty() {
        let mut file = header.to_bytes().to_vec();
        for buffer in &received {
            file.extend_from_slice(buffer);
        }
        verify(&file).expect("the rebuilt file verifies");
    }
});
