//! Property tests of the link: random frames, random damage on the wire.
//!
//! For every damaged stream, the decoder must (a) accept no frame that was not sent,
//! byte for byte, and (b) recover every frame whose wire bytes, delimiter included,
//! arrived untouched right after a delimiter (or at the start of the stream).
//! The encoder's output must also be exactly the `cobs` crate's encoding.

use flightrec_core::link::{
    Event, FrameDecoder, FrameEncoder, FrameHead, FrameKind, LinkWriter, HEAD_LEN,
};
use proptest::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Sent {
    kind: FrameKind,
    source: u32,
    seq: u16,
    payload: Vec<u8>,
}

fn kind() -> impl Strategy<Value = FrameKind> {
    prop_oneof![
        Just(FrameKind::FileHeader),
        Just(FrameKind::FdrBuffer),
        Just(FrameKind::Trace2Line),
        Just(FrameKind::Stats),
    ]
}

/// Payloads rich in zeros and long runs, the cases byte stuffing gets wrong.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..40),
        prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..600),
        (1usize..700, any::<u8>()).prop_map(|(n, b)| vec![b | 1; n]),
        (250usize..260).prop_map(|n| vec![0xAA; n]),
    ]
}

fn frames() -> impl Strategy<Value = Vec<(FrameKind, u32, Vec<u8>)>> {
    prop::collection::vec(
        (
            kind(),
            prop_oneof![Just(0u32), Just(1), any::<u32>()],
            payload(),
        ),
        1..12,
    )
}

/// One way to damage the wire: applied to original byte positions.
#[derive(Clone, Debug)]
enum Damage {
    Flip { at: usize, mask: u8 },
    Delete { at: usize, len: usize },
    Insert { at: usize, bytes: Vec<u8> },
}

fn damages() -> impl Strategy<Value = (usize, Vec<Damage>)> {
    let one = prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Damage::Delete { at, len }),
        (
            any::<usize>(),
            prop::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 1..30)
        )
            .prop_map(|(at, bytes)| Damage::Insert { at, bytes }),
    ];
    // A start offset (receiver joins mid-stream) and a few damages.
    (
        prop_oneof![Just(0usize), any::<usize>()],
        prop::collection::vec(one, 0..5),
    )
}

/// Encodes the frames with a `LinkWriter`; returns the wire and each frame's byte
/// span (first byte after the previous delimiter ..= its own delimiter).
fn encode(frames: &[(FrameKind, u32, Vec<u8>)]) -> (Vec<u8>, Vec<Sent>, Vec<(usize, usize)>) {
    let mut wire = Vec::new();
    let mut sent = Vec::new();
    let mut spans = Vec::new();
    let mut link = LinkWriter::new(&mut wire);
    let mut starts = Vec::new();
    for (i, (k, s, p)) in frames.iter().enumerate() {
        starts.push(link.sink_mut().len());
        link.send(*k, *s, p).unwrap();
        sent.push(Sent {
            kind: *k,
            source: *s,
            seq: i as u16,
            payload: p.clone(),
        });
    }
    let end = wire.len();
    for (i, &start) in starts.iter().enumerate() {
        // The first frame starts with a lead delimiter: its run begins after it.
        let start = if i == 0 { start + 1 } else { start };
        let stop = starts.get(i + 1).copied().unwrap_or(end) - 1;
        spans.push((start, stop));
    }
    (wire, sent, spans)
}

/// Applies the damages; returns the new stream and, per output byte, the original
/// position it came from unchanged (None for inserted or altered bytes).
fn apply(wire: &[u8], start: usize, damages: &[Damage]) -> (Vec<u8>, Vec<Option<usize>>) {
    let n = wire.len();
    let mut bytes: Vec<(u8, Option<usize>)> = wire
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, Some(i)))
        .collect();
    for d in damages {
        let len = bytes.len();
        if len == 0 {
            break;
        }
        match d {
            Damage::Flip { at, mask } => {
                let at = at % len;
                bytes[at] = (bytes[at].0 ^ mask, None);
            }
            Damage::Delete { at, len: l } => {
                let at = at % len;
                let end = (at + l).min(len);
                // Deleting marks the byte after the hole, so a frame that spans it
                // counts as damaged.
                if end < len {
                    bytes[end].1 = None;
                }
                bytes.drain(at..end);
            }
            Damage::Insert { at, bytes: junk } => {
                let at = at % (len + 1);
                if at < len {
                    bytes[at].1 = None;
                }
                for (k, &b) in junk.iter().enumerate() {
                    bytes.insert(at + k, (b, None));
                }
            }
        }
    }
    let start = if n == 0 { 0 } else { start % (bytes.len() + 1) };
    let bytes = &bytes[start..];
    (
        bytes.iter().map(|b| b.0).collect(),
        bytes.iter().map(|b| b.1).collect(),
    )
}

/// Whether frame span `(s, e)` arrived intact right after a delimiter.
fn intact(stream: &[u8], origin: &[Option<usize>], (s, e): (usize, usize)) -> bool {
    let Some(pos) = origin.iter().position(|&o| o == Some(s)) else {
        return false;
    };
    let len = e - s + 1;
    if pos + len > origin.len() {
        return false;
    }
    let contiguous = (0..len).all(|k| origin[pos + k] == Some(s + k));
    let after_delimiter = pos == 0 || stream[pos - 1] == 0;
    contiguous && after_delimiter
}

fn decode_all(stream: &[u8]) -> Vec<Sent> {
    let mut buf = vec![0u8; 2048];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut out = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let (used, ev) = dec.feed(rest);
        assert!(used > 0 && used <= rest.len());
        rest = &rest[used..];
        if let Some(Event::Frame(f)) = ev {
            out.push(Sent {
                kind: f.head.kind,
                source: f.head.source,
                seq: f.head.seq,
                payload: f.payload.to_vec(),
            });
        }
    }
    let stats = dec.stats();
    assert_eq!(stats.frames, out.len() as u64);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn undamaged_frames_are_recovered_and_nothing_wrong_is_accepted(
        frames in frames(),
        (start, damages) in damages(),
    ) {
        let (wire, sent, spans) = encode(&frames);
        let (stream, origin) = apply(&wire, start, &damages);
        let got = decode_all(&stream);

        // (a) Every accepted frame is one that was sent, in the order sent.
        let mut next = 0;
        for g in &got {
            let i = sent[next..].iter().position(|s| s == g);
            prop_assert!(i.is_some(), "accepted a frame never sent: {:?}", g);
            next += i.unwrap() + 1;
        }
        // (b) Every frame that arrived intact is accepted.
        for (i, span) in spans.iter().enumerate() {
            if intact(&stream, &origin, *span) {
                prop_assert!(got.contains(&sent[i]), "lost intact frame {}", i);
            }
        }
        // Without damage, everything comes back.
        if damages.is_empty() && start == 0 {
            prop_assert_eq!(&got, &sent);
        }
    }

    #[test]
    fn encoder_matches_the_cobs_crate(k in kind(), source in any::<u32>(), seq in any::<u16>(), p in payload(), chunk in 1usize..300) {
        let head = FrameHead { kind: k, source, seq };
        let mut enc = FrameEncoder::new(head, &p);
        let mut ours = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = enc.fill(&mut buf);
            if n == 0 { break; }
            ours.extend_from_slice(&buf[..n]);
        }
        let mut frame = head.to_bytes().to_vec();
        frame.extend_from_slice(&p);
        let crc = flightrec_core::link::crc32(&frame);
        frame.extend_from_slice(&crc.to_le_bytes());
        let mut theirs = cobs::encode_vec(&frame);
        theirs.push(0);
        prop_assert_eq!(&ours, &theirs);
        prop_assert!(ours.len() <= FrameEncoder::max_encoded_len(p.len()));
        prop_assert_eq!(HEAD_LEN, 7);
    }

    /// Arbitrary bytes never panic the decoder, and what it accepts has a valid head.
    #[test]
    fn random_input_is_safe(bytes in prop::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 0..2000), bufsize in 0usize..300) {
        let mut buf = vec![0u8; bufsize];
        let mut dec = FrameDecoder::new(&mut buf);
        let mut rest = &bytes[..];
        let mut seen = 0u64;
        while !rest.is_empty() {
            let (used, ev) = dec.feed(rest);
            prop_assert!(used > 0);
            rest = &rest[used..];
            if let Some(Event::Damaged(d)) = ev {
                prop_assert!(d.bytes > 0);
                seen += d.bytes as u64;
            }
        }
        seen += dec.finish() as u64;
        prop_assert!(dec.stats().bytes_skipped == seen);
    }
}
