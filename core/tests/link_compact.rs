//! The compact form of FDR buffers on the link: any bytes round-trip exactly,
//! through the frame too; real buffers shrink; a receiver gets back the very buffer
//! the ring finished; hostile payloads are refused without a panic.

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_core::fdr::FunctionId;
use flightrec_core::link::compact::{
    compact, compact_len, expand, expanded_len, pack, unpack, unpacked_len,
};
use flightrec_core::link::{FrameKind, LinkWriter, Source};
use flightrec_testkit::link_wire::decode_frames;
use proptest::prelude::*;

fn compacted(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    compact(bytes, |part| out.extend_from_slice(part));
    out
}

fn packed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    pack(bytes, |part| out.extend_from_slice(part));
    out
}

fn unpacked(payload: &[u8]) -> Vec<u8> {
    let len = unpacked_len(payload).unwrap();
    let mut out = vec![0u8; len];
    assert_eq!(unpack(payload, &mut out), Ok(len));
    out
}

fn expanded(payload: &[u8]) -> Vec<u8> {
    let len = expanded_len(payload).unwrap();
    let mut out = vec![0u8; len];
    assert_eq!(expand(payload, &mut out), Ok(len));
    out
}

/// Frames of a wire capture: (kind, payload).
fn frames(wire: &[u8]) -> Vec<(FrameKind, Vec<u8>)> {
    let (frames, stats) = decode_frames(wire);
    assert_eq!((stats.crc_failures, stats.malformed), (0, 0));
    frames
        .into_iter()
        .map(|(head, payload)| (head.kind, payload))
        .collect()
}

/// An FDR buffer from the writer: function records with the given ids and gaps,
/// custom events now and then.
fn fdr_buffer(calls: &[(u32, u32)], events: bool, size: usize) -> Vec<u8> {
    let mut buf = vec![0u8; size];
    let cfg = WriterConfig::new(3).with_pid(77);
    let mut w = BufferWriter::new(
        &mut buf,
        &cfg,
        Walltime {
            seconds: 5,
            micros: 6,
        },
    )
    .unwrap();
    let mut tsc = 1_000u64;
    for (i, &(id, gap)) in calls.iter().enumerate() {
        tsc += u64::from(gap);
        let f = FunctionId::new(id).unwrap();
        let ts = Timestamp { tsc, cpu: 0 };
        let r = if i % 2 == 0 {
            w.enter(f, ts)
        } else {
            w.exit(f, ts)
        };
        if r.is_err() {
            break;
        }
        if events
            && i % 7 == 3
            && w.custom_event(ts, &[0, 1, 0xff, 0, 2][..1 + i % 5])
                .is_err()
        {
            break;
        }
    }
    w.finish().to_vec()
}

proptest! {
    #[test]
    fn any_bytes_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..600), ones in 0usize..600) {
        // Long runs without zeros too (full COBS blocks).
        let mut bytes = bytes;
        bytes.extend(std::iter::repeat_n(0x11u8, ones));
        let c = compacted(&bytes);
        prop_assert_eq!(c.len(), compact_len(&bytes));
        prop_assert_eq!(expanded(&c), bytes.clone());
        // And through a frame.
        let mut wire = Vec::new();
        LinkWriter::new(&mut wire).send_buffer_compact(9, &bytes).unwrap();
        // Exactly the `cobs` crate's stuffing of head + payload + CRC, between a
        // leading and a closing delimiter.
        let stuffed = &wire[1..wire.len() - 1];
        let frame = cobs::decode_vec(stuffed).unwrap();
        prop_assert_eq!(&cobs::encode_vec(&frame)[..], stuffed);
        let got = frames(&wire);
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].0, FrameKind::FdrCompact);
        prop_assert_eq!(&got[0].1, &c);
    }

    #[test]
    fn writer_buffers_round_trip_and_shrink(
        calls in proptest::collection::vec((1u32..(1 << 28), 0u32..u32::MAX), 1..200),
        small in proptest::collection::vec((1u32..2000, 0u32..5000), 1..200),
        events: bool,
    ) {
        for calls in [&calls, &small] {
            let fdr = fdr_buffer(calls, events, 2048);
            let c = compacted(&fdr);
            prop_assert_eq!(expanded(&c), fdr.clone());
        }
        // Small ids and gaps (what firmware records): at most 5 bytes per function
        // record. The buffer's metadata goes verbatim: 64 bytes of extents, new
        // buffer, wall clock and pid, then 16 of the first record's CPU id and TSC
        // (gaps under 5000 ticks never need another).
        let fdr = fdr_buffer(&small, false, 4096);
        let metadata = 64 + 16;
        let records = (fdr.len() - metadata) / 8;
        prop_assume!(records >= 20);
        prop_assert!(compact_len(&fdr) <= metadata + 5 * records, "{} bytes for {records} function records", compact_len(&fdr));
    }

    /// Writer buffers through `send_buffer_compact`, whose runs of function records
    /// take the stuffer's fast way: small ids and gaps (one-byte varints, runs over
    /// a 254-byte COBS block), ids and gaps around the varints' two-byte bounds
    /// (the record loop's shapes), zero gaps (a zero byte to stuff), large ones
    /// (up to 5-byte varints), custom events, and the buffer at any alignment.
    /// The frame is exactly the `cobs` crate's stuffing and carries `compact`'s
    /// bytes, which expand to the buffer.
    #[test]
    fn compact_frames_of_writer_buffers_are_standard_cobs(
        small in proptest::collection::vec((1u32..60, 0u32..120), 1..500),
        medium in proptest::collection::vec(
            (
                prop_oneof![1u32..1_100, Just(7), Just(8), Just(1_023), Just(1_024)],
                prop_oneof![0u32..20_000, Just(127), Just(128), Just(16_383), Just(16_384)],
            ),
            0..300,
        ),
        large in proptest::collection::vec((1u32..(1 << 28), 0u32..u32::MAX), 1..100),
        zero_every in 0usize..40,
        events: bool,
        offset in 0usize..4,
    ) {
        let mut calls = small;
        calls.extend(medium);
        if zero_every > 0 {
            for (i, call) in calls.iter_mut().enumerate() {
                if i % zero_every == 0 {
                    call.1 = 0;
                }
            }
        }
        calls.extend(large);
        let fdr = fdr_buffer(&calls, events, 4096);
        let mut shifted = vec![0xAA; offset];
        shifted.extend_from_slice(&fdr);
        let mut wire = Vec::new();
        LinkWriter::new(&mut wire).send_buffer_compact(9, &shifted[offset..]).unwrap();
        let stuffed = &wire[1..wire.len() - 1];
        let frame = cobs::decode_vec(stuffed).unwrap();
        prop_assert_eq!(&cobs::encode_vec(&frame)[..], stuffed);
        let got = frames(&wire);
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(&got[0].1, &compacted(&fdr));
        prop_assert_eq!(expanded(&got[0].1), fdr);
    }

    /// The packed form (metadata records packed): any bytes round-trip exactly,
    /// alone and through a frame that is exactly the `cobs` crate's stuffing.
    #[test]
    fn packed_any_bytes_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..600), ones in 0usize..600) {
        let mut bytes = bytes;
        bytes.extend(std::iter::repeat_n(0x11u8, ones));
        let p = packed(&bytes);
        prop_assert_eq!(unpacked(&p), bytes.clone());
        let mut wire = Vec::new();
        LinkWriter::new(&mut wire).send_buffer_packed(9, &bytes).unwrap();
        let stuffed = &wire[1..wire.len() - 1];
        let frame = cobs::decode_vec(stuffed).unwrap();
        prop_assert_eq!(&cobs::encode_vec(&frame)[..], stuffed);
        let got = frames(&wire);
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].0, FrameKind::FdrPacked);
        prop_assert_eq!(&got[0].1, &p);
    }

    /// Writer buffers (function records of every width, zero gaps, custom events
    /// with payloads, any alignment) through `send_buffer_packed`: the receiver
    /// rebuilds the very buffer, in fewer bytes than the compact form.
    #[test]
    fn packed_writer_buffers_rebuild_exactly(
        calls in proptest::collection::vec((1u32..(1 << 28), 0u32..u32::MAX), 1..200),
        small in proptest::collection::vec((1u32..60, 0u32..120), 1..500),
        events: bool,
        offset in 0usize..4,
    ) {
        for calls in [&calls, &small] {
            let fdr = fdr_buffer(calls, events, 4096);
            let mut shifted = vec![0xAA; offset];
            shifted.extend_from_slice(&fdr);
            let mut wire = Vec::new();
            LinkWriter::new(&mut wire).send_buffer_packed(9, &shifted[offset..]).unwrap();
            let stuffed = &wire[1..wire.len() - 1];
            let frame = cobs::decode_vec(stuffed).unwrap();
            prop_assert_eq!(&cobs::encode_vec(&frame)[..], stuffed);
            let got = frames(&wire);
            prop_assert_eq!(&got[0].1, &packed(&fdr));
            prop_assert_eq!(unpacked(&got[0].1), fdr.clone());
            // The buffer's first records (64 + 16 bytes, mostly zeros) shrink.
            prop_assert!(got[0].1.len() + 30 < compact_len(&fdr), "{} of {}", got[0].1.len(), compact_len(&fdr));
        }
    }

    /// Hostile packed payloads: an error or a buffer, never a panic, and `unpack`
    /// agrees with `unpacked_len`.
    #[test]
    fn hostile_packed_payloads_are_refused_or_unpacked(payload in proptest::collection::vec(any::<u8>(), 0..300)) {
        match unpacked_len(&payload) {
            Ok(len) => {
                let mut out = vec![0u8; len];
                prop_assert_eq!(unpack(&payload, &mut out), Ok(len));
                if len > 0 {
                    let mut short = vec![0u8; len - 1];
                    prop_assert!(unpack(&payload, &mut short).is_err());
                }
            }
            Err(e) => {
                let mut out = vec![0u8; 8192];
                prop_assert_eq!(unpack(&payload, &mut out), Err(e));
            }
        }
    }

    /// Hostile payloads: an error or a buffer, never a panic, and `expand` agrees
    /// with `expanded_len`.
    #[test]
    fn hostile_payloads_are_refused_or_expanded(payload in proptest::collection::vec(any::<u8>(), 0..300)) {
        match expanded_len(&payload) {
            Ok(len) => {
                let mut out = vec![0u8; len];
                prop_assert_eq!(expand(&payload, &mut out), Ok(len));
                if len > 0 {
                    let mut short = vec![0u8; len - 1];
                    prop_assert!(expand(&payload, &mut short).is_err());
                }
            }
            Err(e) => {
                let mut out = vec![0u8; 4096];
                prop_assert_eq!(expand(&payload, &mut out), Err(e));
            }
        }
    }
}

/// `flush_one` sends the packed form (the compact one with `with_packed(false)`),
/// and what the receiver rebuilds is the buffer the ring finished, which
/// verifies; with `with_compact(false)` the plain one.
#[test]
fn flush_one_sends_compact_buffers_that_expand_to_the_ring_s() {
    for (compact_on, packed_on) in [(true, true), (true, false), (false, true)] {
        let mut storage = vec![0u8; 4 * 1024];
        let slots = [Slot::NEW; 4];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let cfg = RecorderConfig::new(WriterConfig::new(1), 48_000_000);
        let mut source = Source::new(1, cfg.file_header(ring.buffer_size()))
            .with_compact(compact_on)
            .with_packed(packed_on);
        let (mut rec, mut consumer) = ring.split(cfg);
        let mut wire = Vec::new();
        let mut link = LinkWriter::new(&mut wire);
        let mut sent_raw = Vec::new();
        for i in 0..300u64 {
            let f = FunctionId::new(1 + (i % 13) as u32).unwrap();
            rec.enter(
                f,
                Timestamp {
                    tsc: 100 * i,
                    cpu: 0,
                },
            )
            .unwrap();
            rec.exit(
                f,
                Timestamp {
                    tsc: 100 * i + 40,
                    cpu: 0,
                },
            )
            .unwrap();
            if consumer.pending() > 0 {
                // What the ring finished, as `flush_one` is about to send it.
                let copy = consumer.pop().unwrap().to_vec();
                // Send it the way flush_one would (compact when shorter).
                if compact_on && compact_len(&copy) < copy.len() {
                    link.send_buffer_compact(1, &copy).unwrap();
                } else {
                    link.send_buffer(1, &copy).unwrap();
                }
                sent_raw.push(copy);
            }
        }
        rec.flush();
        while link.flush_one(&mut source, &mut consumer).unwrap() {}

        let mut received = Vec::new();
        let mut wire_fdr_bytes = 0;
        for (kind, payload) in frames(&wire) {
            match kind {
                FrameKind::FdrPacked => {
                    assert!(compact_on && packed_on);
                    wire_fdr_bytes += payload.len();
                    received.push(unpacked(&payload));
                }
                FrameKind::FdrCompact => {
                    assert!(compact_on);
                    wire_fdr_bytes += payload.len();
                    received.push(expanded(&payload));
                }
                FrameKind::FdrBuffer => {
                    wire_fdr_bytes += payload.len();
                    received.push(payload);
                }
                _ => {}
            }
        }
        assert!(received.len() > sent_raw.len());
        assert_eq!(&received[..sent_raw.len()], &sent_raw[..]);
        let mut file = cfg.file_header(1024).to_bytes().to_vec();
        let raw_bytes: usize = received.iter().map(Vec::len).sum();
        for b in &received {
            file.extend_from_slice(b);
        }
        verify(&file).unwrap();
        if compact_on {
            assert!(
                wire_fdr_bytes * 2 < raw_bytes,
                "{wire_fdr_bytes} of {raw_bytes}"
            );
        } else {
            assert_eq!(wire_fdr_bytes, raw_bytes);
        }
    }
}
