//! `recv`'s stream handling: the link decoder feeding a `Collector` that writes
//! one FDR file per source and the Trace2 lines, as `flightrec recv` does.
//!
//! The first byte picks the mode. Even: the rest is the raw link stream (any
//! bytes, damage of every kind). Odd: the rest is a list of frames
//! (`kind:u8 source:u8 len:u16le payload`), encoded with the core's encoder,
//! with one byte of the wire flipped when the first byte says so; headers and
//! buffers taken from real FDR files in the seed corpus reach the collector's
//! file handling this way.
//!
//! Checked: no panic and no I/O error; the collector's bounds hold (buffers held
//! for a header, open files); every file written is a valid FDR file for the
//! core's verifier; every undamaged frame is decoded and every Trace2 line
//! written. Files go to a directory made and removed for each input.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use flightrec_core::fdr::decoder::verify;
use flightrec_core::link::{Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind};
use flightrec_host::link::collect::{Collector, MAX_OPEN_FILES, MAX_WAITING_BYTES};
use libfuzzer_sys::fuzz_target;

/// Largest payload the decoder accepts (recv's default is larger; a small one
/// makes oversized frames reachable).
const MAX_PAYLOAD: usize = 4096;

const KINDS: [FrameKind; 4] = [
    FrameKind::FileHeader,
    FrameKind::FdrBuffer,
    FrameKind::Trace2Line,
    FrameKind::Stats,
];

static RUN: AtomicU64 = AtomicU64::new(0);

/// Splits the structured input into frames.
fn frames(mut data: &[u8]) -> Vec<(FrameHead, &[u8])> {
    let mut out = Vec::new();
    let mut seq = 0u16;
    while data.len() >= 4 {
        let kind = KINDS[usize::from(data[0] % 4)];
        let source = u32::from(data[1]);
        let len = usize::from(u16::from_le_bytes([data[2], data[3]])).min(data.len() - 4);
        out.push((FrameHead { kind, source, seq }, &data[4..4 + len]));
        seq = seq.wrapping_add(1);
        data = &data[4 + len..];
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (wire, sent) = if mode & 1 == 0 {
        (rest.to_vec(), None)
    } else {
        let list = frames(rest);
        let mut wire = Vec::new();
        for (head, payload) in &list {
            let mut enc = vec![0u8; FrameEncoder::max_encoded_len(payload.len())];
            let n = FrameEncoder::new(*head, payload).fill(&mut enc);
            wire.extend_from_slice(&enc[..n]);
        }
        let damaged = mode & 2 != 0 && !wire.is_empty();
        if damaged {
            let at = usize::from(mode >> 2) * 97 % wire.len();
            wire[at] ^= 0x5a;
        }
        (wire, (!damaged).then_some(list))
    };

    let dir = std::env::temp_dir().join(format!(
        "flightrec-fuzz-recv-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let mut collector = Collector::new(&dir, dir.join("trace2.txt")).expect("scratch directory");
    let mut buf = vec![0u8; FrameEncoder::max_encoded_len(MAX_PAYLOAD)];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut decoded = 0usize;
    let mut trace2_frames = 0u64;
    // Chunks of a size the input picks, as the reader thread hands them over.
    for chunk in wire.chunks(usize::from(mode) % 61 + 1) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let (used, ev) = dec.feed(rest);
            assert!(used > 0 && used <= rest.len());
            rest = &rest[used..];
            if let Some(Event::Frame(f)) = ev {
                decoded += 1;
                if f.head.kind == FrameKind::Trace2Line {
                    trace2_frames += 1;
                }
                collector
                    .frame(&f)
                    .expect("writing to the scratch directory");
                assert!(collector.waiting_bytes() <= MAX_WAITING_BYTES);
                assert!(collector.open_files() <= MAX_OPEN_FILES);
            }
        }
    }
    dec.finish();
    collector.finish().expect("syncing the scratch directory");
    assert_eq!(collector.open_files(), 0);
    assert_eq!(collector.trace2().0, trace2_frames);
    if let Some(list) = sent {
        let fitting = list.iter().filter(|(_, p)| p.len() <= MAX_PAYLOAD).count();
        assert_eq!(decoded, fitting, "undamaged frames lost");
    }
    for (_, report) in collector.sources() {
        if let Some(path) = &report.path {
            let bytes = std::fs::read(path).expect("a file the collector wrote");
            assert!(report.buffers > 0, "a file without a buffer");
            if let Err(e) = verify(&bytes) {
                panic!("{} does not verify: {e:?}", path.display());
            }
        }
    }
    drop(collector);
    std::fs::remove_dir_all(&dir).expect("removing the scratch directory");
});
