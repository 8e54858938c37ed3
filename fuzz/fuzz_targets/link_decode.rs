//! Any bytes through the link's frame decoder, fed in pieces of every size the
//! input picks and with a buffer size it picks: no panic, every accepted frame has a
//! valid head and a CRC that re-encoding reproduces, and the counters add up.
//!
//! Then the round trip: the same bytes, cut into frames at each 0xA5 byte and
//! encoded with output chunks of a size the input picks, decode back to exactly
//! those frames, with nothing skipped, damaged or lost, and each frame within
//! `FrameEncoder::max_encoded_len`.
#![no_main]

use flightrec_core::link::{
    crc32, Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind, CRC_LEN,
};
use libfuzzer_sys::fuzz_target;

const KINDS: [FrameKind; 4] = [
    FrameKind::FileHeader,
    FrameKind::FdrBuffer,
    FrameKind::Trace2Line,
    FrameKind::Stats,
];

/// Feeds `wire` to `dec` in pieces of `piece` bytes and calls `on_event` for each
/// event; checks that every call consumes something.
fn feed_all(
    dec: &mut FrameDecoder<'_>,
    wire: &[u8],
    piece: usize,
    mut on_event: impl FnMut(Event<'_>),
) {
    for chunk in wire.chunks(piece) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (used, ev) = dec.feed(rest);
            assert!(used > 0 && used <= rest.len());
            rest = &rest[used..];
            if let Some(ev) = ev {
                on_event(ev);
            }
        }
    }
}

fn damaged_bytes(data: &[u8], shape: u8) {
    let buf_len = usize::from(shape) * 16;
    let piece = usize::from(shape % 13) + 1;
    let mut buf = vec![0u8; buf_len];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut skipped = 0u64;
    let mut frames = 0u64;
    feed_all(&mut dec, data, piece, |ev| match ev {
        Event::Frame(f) => {
            frames += 1;
            // Re-encoding the frame gives a valid frame with the same CRC.
            let mut out = vec![0u8; FrameEncoder::max_encoded_len(f.payload.len())];
            let n = FrameEncoder::new(f.head, f.payload).fill(&mut out);
            let mut round = out[..n - 1].to_vec();
            let len = cobs::decode_in_place(&mut round).unwrap();
            let (body, crc) = round[..len].split_at(len - CRC_LEN);
            assert_eq!(crc32(body).to_le_bytes(), crc);
        }
        Event::Damaged(d) => skipped += d.bytes as u64,
    });
    skipped += dec.finish() as u64;
    let stats = dec.stats();
    assert_eq!(stats.frames, frames);
    assert_eq!(stats.bytes_skipped, skipped);
}

fn round_trip(data: &[u8], shape: u8) {
    let sent: Vec<(FrameHead, &[u8])> = data
        .split(|&b| b == 0xA5)
        .enumerate()
        .map(|(i, payload)| {
            let head = FrameHead {
                kind: KINDS[payload.len() % KINDS.len()],
                source: (i as u32).wrapping_mul(0x9E37_79B9),
                seq: i as u16,
            };
            (head, payload)
        })
        .collect();
    let out_chunk = usize::from(shape % 13) + 1 + usize::from(shape >> 4) * 37;
    let mut wire = Vec::new();
    let mut chunk = vec![0u8; out_chunk];
    for (i, &(head, payload)) in sent.iter().enumerate() {
        let lead = i == 0 || shape & 0x40 != 0;
        let mut enc = FrameEncoder::new(head, payload).with_leading_delimiter(lead);
        let start = wire.len();
        loop {
            let n = enc.fill(&mut chunk);
            if n == 0 {
                break;
            }
            wire.extend_from_slice(&chunk[..n]);
        }
        assert!(enc.is_done());
        assert_eq!(enc.fill(&mut chunk), 0, "bytes after the end");
        let len = wire.len() - start;
        assert!(
            len <= FrameEncoder::max_encoded_len(payload.len()),
            "{len}-byte frame"
        );
        assert_eq!(wire.last(), Some(&0), "a frame ends with its delimiter");
    }

    let longest = sent.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
    let mut buf = vec![0u8; FrameEncoder::max_encoded_len(longest)];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut got: Vec<(FrameHead, Vec<u8>)> = Vec::new();
    let piece = usize::from(shape % 7) * 61 + 1;
    feed_all(&mut dec, &wire, piece, |ev| match ev {
        Event::Frame(f) => got.push((f.head, f.payload.to_vec())),
        Event::Damaged(d) => panic!("damage in an undamaged stream: {d:?}"),
    });
    assert_eq!(dec.finish(), 0, "bytes left after the last delimiter");
    let want: Vec<(FrameHead, Vec<u8>)> = sent.iter().map(|&(h, p)| (h, p.to_vec())).collect();
    assert_eq!(got, want);
    let stats = dec.stats();
    assert_eq!(stats.frames, sent.len() as u64);
    assert_eq!(
        (
            stats.bytes_skipped,
            stats.crc_failures,
            stats.malformed,
            stats.frames_lost
        ),
        (0, 0, 0, 0)
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, wire)) = data.split_first() else {
        return;
    };
    damaged_bytes(wire, shape);
    round_trip(wire, shape);
});
