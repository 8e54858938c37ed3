//! Buffers through the link's writer (`LinkWriter`, its in-place stuffer and the
//! record loops of the compact form) in the three FDR frame forms, plain,
//! compact and packed:
//!
//! - onto a sink that takes everything, the wire is byte for byte what the
//!   independent `FrameEncoder` makes of each frame's head and payload (a
//!   leading delimiter before the first), and each frame is exactly the `cobs`
//!   crate's stuffing; the payloads are `compact`'s and `pack`'s bytes, which
//!   give back the very buffer;
//! - onto a sink that takes a few bytes a call and fills up, a frame either goes
//!   out whole or is counted as failed: every send is one or the other, and the
//!   receiver decodes exactly the frames that went out whole, with their heads
//!   and payloads, and nothing else.
//!
//! The buffers are the input's bytes as they are, or an FDR buffer that the
//! core's writer fills with function records whose ids and gaps the input gives
//! (varints of one to five bytes, gaps of 0, runs across COBS blocks, custom
//! events between them), sent from any alignment.
#![no_main]

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_core::fdr::FunctionId;
use flightrec_core::link::compact::{compact, pack};
use flightrec_core::link::{FrameEncoder, FrameHead, FrameKind, LinkWriter};
use flightrec_testkit::link_wire::{buffer_of, decode_frames, SinkFailed, TestSink};
use libfuzzer_sys::fuzz_target;

/// An FDR buffer of `size` bytes from the writer, with function records whose ids
/// and gaps come from `script`, and a custom event where the script says.
fn writer_buffer(script: &[u8], size: usize) -> Vec<u8> {
    let mut buf = vec![0u8; size];
    let cfg = WriterConfig::new(3).with_pid(77);
    let walltime = Walltime {
        seconds: 5,
        micros: 6,
    };
    let Ok(mut w) = BufferWriter::new(&mut buf, &cfg, walltime) else {
        return Vec::new();
    };
    let mut tsc = 1_000u64;
    let mut rest = script;
    let mut i = 0u32;
    while let [a, b, c, tail @ ..] = rest {
        rest = tail;
        // Ids and gaps of every varint width, the common small ones most often.
        let id = match a >> 6 {
            0 => u32::from(a & 0x3f) + 1,
            1 => u32::from(*a & 0x3f) << 8 | u32::from(*b),
            2 => (u32::from(*a & 0x3f) << 16 | u32::from(*b) << 8 | u32::from(*c)) + 1,
            _ => (u32::from(*b) << 20 | u32::from(*c) << 12 | 0xfff).min((1 << 28) - 1),
        };
        let gap = match c >> 6 {
            0 => u64::from(c & 0x3f),
            1 => u64::from(*c & 0x3f) << 8 | u64::from(*b),
            2 => u64::from(*b) << 14 | u64::from(*c),
            _ => u64::from(*b) << 24 | u64::from(*c) << 16,
        };
        tsc += gap;
        let Ok(f) = FunctionId::new(id.max(1)) else {
            continue;
        };
        let ts = Timestamp { tsc, cpu: 0 };
        let r = if i.is_multiple_of(2) {
            w.enter(f, ts)
        } else {
            w.exit(f, ts)
        };
        if r.is_err() {
            break;
        }
        if b & 0x1f == 0x1f
            && w.custom_event(ts, &[0, c | 1, 0][..1 + (*a as usize % 3)])
                .is_err()
        {
            break;
        }
        i += 1;
    }
    w.finish().to_vec()
}

/// The frames a receiver decodes from `wire`: (head, payload).
fn decode(wire: &[u8]) -> Vec<(FrameHead, Vec<u8>)> {
    decode_frames(wire).0
}

#[derive(Clone, Copy, Debug)]
enum Form {
    Plain,
    Compact,
    Packed,
}

fn send(
    link: &mut LinkWriter<TestSink>,
    form: Form,
    source: u32,
    buffer: &[u8],
) -> Result<(), SinkFailed> {
    match form {
        Form::Plain => link.send_buffer(source, buffer),
        Form::Compact => link.send_buffer_compact(source, buffer),
        Form::Packed => link.send_buffer_packed(source, buffer),
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, per_call, cap_lo, cap_hi, offset, rest @ ..] = data else {
        return;
    };
    let buffer = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        writer_buffer(rest, 256 + 256 * usize::from(mode >> 5))
    };
    // The buffer at each alignment: the stuffer loads words where it can.
    let offset = usize::from(offset % 4);
    let mut shifted = vec![0xAAu8; offset];
    shifted.extend_from_slice(&buffer);
    let buffer = &shifted[offset..];
    let forms: Vec<Form> = (0..3)
        .map(|i| match (mode >> (1 + 2 * i)) % 4 {
            0 => Form::Plain,
            1 | 3 => Form::Compact,
            _ => Form::Packed,
        })
        .collect();

    // Each frame's head and payload as the receiver must see them.
    let expected: Vec<(FrameHead, Vec<u8>)> = forms
        .iter()
        .enumerate()
        .map(|(i, &form)| {
            let mut payload = Vec::new();
            let kind = match form {
                Form::Plain => {
                    payload.extend_from_slice(buffer);
                    FrameKind::FdrBuffer
                }
                Form::Compact => {
                    compact(buffer, |part| payload.extend_from_slice(part));
                    FrameKind::FdrCompact
                }
                Form::Packed => {
                    pack(buffer, |part| payload.extend_from_slice(part));
                    FrameKind::FdrPacked
                }
            };
            let back = buffer_of(kind, &payload);
            assert!(
                back.as_deref() == Some(buffer),
                "{kind:?} gives the buffer back"
            );
            let head = FrameHead {
                kind,
                source: 1 + i as u32,
                seq: i as u16,
            };
            (head, payload)
        })
        .collect();

    // A sink that takes everything: the reference encoder's bytes exactly.
    let mut link = LinkWriter::new(TestSink::new());
    for (i, &form) in forms.iter().enumerate() {
        send(&mut link, form, 1 + i as u32, buffer).expect("the sink takes every byte");
    }
    let wire = link.into_inner().out;
    let mut reference = vec![0u8];
    for (i, (head, payload)) in expected.iter().enumerate() {
        let mut out = vec![0u8; FrameEncoder::max_encoded_len(payload.len())];
        let n = FrameEncoder::new(*head, payload).fill(&mut out);
        let stuffed = &out[..n - 1];
        let frame = cobs::decode_vec(stuffed).expect("the reference decodes");
        assert_eq!(
            cobs::encode_vec(&frame),
            stuffed,
            "frame {i}: standard COBS"
        );
        reference.extend_from_slice(&out[..n]);
    }
    assert!(
        wire == reference,
        "the stuffer's frames differ from the reference encoder's"
    );
    assert_eq!(decode(&wire), expected);

    // A sink that takes a few bytes a call and fills up.
    let per_call = usize::from(*per_call % 64) + 1;
    let cap = usize::from(u16::from_le_bytes([*cap_lo, *cap_hi])) % (wire.len() + 1);
    let mut link = LinkWriter::new(TestSink::limited(per_call, cap));
    let mut whole = Vec::new();
    for (i, &form) in forms.iter().enumerate() {
        if send(&mut link, form, 1 + i as u32, buffer).is_ok() {
            whole.push(expected[i].clone());
        }
    }
    assert_eq!(link.frames_sent() as usize, whole.len());
    assert_eq!(
        (link.frames_sent() + link.frames_failed()) as usize,
        forms.len()
    );
    let sink = link.into_inner();
    assert!(sink.out.len() <= cap);
    assert_eq!(
        decode(&sink.out),
        whole,
        "the frames sent whole, and only those"
    );
});
