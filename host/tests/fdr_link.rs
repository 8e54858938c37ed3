//! FDR buffers over the link in each of their three forms (`fdr-buffer`,
//! `fdr-compact`, `fdr-packed`), through `FrameDecoder` and `Collector` as
//! `flightrec recv` takes them: the file each writes is the file header and the
//! very buffers the writer finished, byte for byte, and it verifies.

use std::num::NonZeroU64;

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_core::fdr::{FileHeader, FunctionId};
use flightrec_core::link::{Event, FrameDecoder, FrameKind, LinkWriter};
use flightrec_host::link::collect::Collector;
use proptest::prelude::*;

const BUFFER: usize = 2048;

/// FDR buffers from the writer: function records with the given ids and gaps
/// (zero gaps, large ones), custom events now and then when `events`.
fn buffers(calls: &[(u32, u32)], events: bool) -> Vec<Vec<u8>> {
    let cfg = WriterConfig::new(3).with_pid(77);
    let mut out = Vec::new();
    let mut tsc = 1_000u64;
    let mut calls = calls.iter().enumerate().peekable();
    while calls.peek().is_some() {
        let mut buf = vec![0u8; BUFFER];
        let mut w = BufferWriter::new(
            &mut buf,
            &cfg,
            Walltime {
                seconds: 5 + out.len() as i64,
                micros: 6,
            },
        )
        .unwrap();
        while let Some(&(i, &(id, gap))) = calls.peek() {
            let f = FunctionId::new(id).unwrap();
            let ts = Timestamp {
                tsc: tsc + u64::from(gap),
                cpu: 0,
            };
            let r = if i % 2 == 0 {
                w.enter(f, ts)
            } else {
                w.exit(f, ts)
            };
            if r.is_err() {
                break; // full: the next buffer takes it
            }
            tsc = ts.tsc;
            calls.next();
            if events && i % 7 == 3 && w.custom_event(ts, &[1, 0, 2, 0, 3][..1 + i % 5]).is_err() {
                break;
            }
        }
        out.push(w.finish().to_vec());
    }
    out
}

/// The file `Collector` writes for source 1 from `wire`.
fn received(wire: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut rest = wire;
    while !rest.is_empty() {
        let (n, ev) = dec.feed(rest);
        rest = &rest[n..];
        if let Some(Event::Frame(f)) = ev {
            c.frame(&f).unwrap();
        }
    }
    c.finish().unwrap();
    assert!(!c.had_problems());
    std::fs::read(dir.path().join("source-1.xray")).unwrap()
}

proptest! {
    #[test]
    fn each_form_rebuilds_the_very_file(
        small in proptest::collection::vec((1u32..60, 0u32..120), 1..900),
        large in proptest::collection::vec((1u32..(1 << 28), 0u32..u32::MAX), 0..200),
        events: bool,
    ) {
        let mut calls = small;
        calls.extend(large);
        let buffers = buffers(&calls, events);
        let header = FileHeader::new(NonZeroU64::new(48_000_000).unwrap(), BUFFER as u64);
        let mut want = header.to_bytes().to_vec();
        for b in &buffers {
            want.extend_from_slice(b);
        }
        verify(&want).unwrap();
        let mut wire_bytes = Vec::new();
        for kind in [FrameKind::FdrBuffer, FrameKind::FdrCompact, FrameKind::FdrPacked] {
            let mut link = LinkWriter::new(Vec::new());
            link.send_file_header(1, &header).unwrap();
            for b in &buffers {
                match kind {
                    FrameKind::FdrBuffer => link.send_buffer(1, b),
                    FrameKind::FdrCompact => link.send_buffer_compact(1, b),
                    _ => link.send_buffer_packed(1, b),
                }
                .unwrap();
            }
            let wire = link.into_inner();
            prop_assert_eq!(received(&wire), want.clone(), "{}", kind.name());
            wire_bytes.push(wire.len());
        }
        // Packed metadata: fewer bytes than the compact form, a buffer at a time.
        prop_assert!(wire_bytes[2] < wire_bytes[1], "{:?}", wire_bytes);
    }
}
