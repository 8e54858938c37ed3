//! Any bytes through the link's frame decoder, fed in pieces of every size the
//! input picks and with a buffer size it picks: no panic, every accepted frame has a
//! valid head and a CRC that re-encoding reproduces, and the counters add up.
#![no_main]

use flightrec_core::link::{crc32, Event, FrameDecoder, FrameEncoder, CRC_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&shape, wire)) = data.split_first() else {
        return;
    };
    let buf_len = usize::from(shape) * 16;
    let piece = usize::from(shape % 13) + 1;
    let mut buf = vec![0u8; buf_len];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut skipped = 0u64;
    let mut frames = 0u64;
    for chunk in wire.chunks(piece) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (used, ev) = dec.feed(rest);
            assert!(used > 0 && used <= rest.len());
            rest = &rest[used..];
            match ev {
                Some(Event::Frame(f)) => {
                    frames += 1;
                    // Re-encoding the frame gives a valid frame with the same CRC.
                    let mut out = vec![0u8; FrameEncoder::max_encoded_len(f.payload.len())];
                    let n = FrameEncoder::new(f.head, f.payload).fill(&mut out);
                    let mut round = out[..n - 1].to_vec();
                    let len = cobs::decode_in_place(&mut round).unwrap();
                    let (body, crc) = round[..len].split_at(len - CRC_LEN);
                    assert_eq!(crc32(body).to_le_bytes(), crc);
                }
                Some(Event::Damaged(d)) => skipped += d.bytes as u64,
                None => {}
            }
        }
    }
    skipped += dec.finish() as u64;
    let stats = dec.stats();
    assert_eq!(stats.frames, frames);
    assert_eq!(stats.bytes_skipped, skipped);
});
