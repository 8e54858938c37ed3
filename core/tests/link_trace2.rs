//! Compact Trace2 events: every event round-trips through `emit` and `parse`, a
//! frame sent by `LinkWriter::send_trace2` carries the same bytes, and `parse`
//! never panics on any payload.

use flightrec_core::link::trace2::{
    emit_to_slice, parse, DataInt, ParseError, Put, Session, Str, Trace2,
};
use flightrec_core::link::{Event, FrameDecoder, FrameKind, LinkWriter};
use proptest::prelude::*;

/// Owned strings of one generated event (the events borrow them).
#[derive(Clone, Debug)]
enum S {
    Id(u32),
    Bytes(Vec<u8>),
}

impl S {
    fn str(&self) -> Str<'_> {
        match self {
            S::Id(id) => Str::Id(*id),
            S::Bytes(b) => Str::Bytes(b),
        }
    }
}

fn s() -> impl Strategy<Value = S> {
    prop_oneof![
        any::<u32>().prop_map(S::Id),
        proptest::collection::vec(any::<u8>(), 0..300).prop_map(S::Bytes),
    ]
}

#[derive(Clone, Debug)]
struct Gen {
    code: u8,
    ticks: u64,
    int: i64,
    strs: Vec<Option<S>>,
}

fn gen() -> impl Strategy<Value = Gen> {
    (
        0u8..15,
        any::<u64>(),
        any::<i64>(),
        proptest::collection::vec(proptest::option::of(s()), 3..8),
    )
        .prop_map(|(code, ticks, int, strs)| Gen {
            code,
            ticks,
            int,
            strs,
        })
}

/// The event `g` describes, over its strings (a required string that came out
/// `None` is the empty one).
fn with_event<R>(g: &Gen, f: impl FnOnce(Trace2<'_>) -> R) -> R {
    let argv: Vec<Str<'_>> = g.strs.iter().flatten().map(S::str).collect();
    let opt = |i: usize| g.strs[i].as_ref().map(S::str);
    flightrec_testkit::trace2_link::with_event(g.code, g.int, opt, &argv, f)
}

struct V(Vec<u8>);
impl Put for V {
    fn put(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
}

proptest! {
    #[test]
    fn every_event_round_trips(g in gen()) {
        with_event(&g, |ev| {
            let mut v = V(Vec::new());
            ev.emit(g.ticks, &mut v);
            let rec = parse(&v.0).unwrap();
            prop_assert_eq!(rec.ticks, g.ticks);
            prop_assert_eq!(rec.event, ev);
            // A slice just big enough takes it; one byte less does not.
            let mut buf = vec![0u8; v.0.len()];
            if let Trace2::Exit(e) = ev {
                prop_assert_eq!(emit_to_slice(&e, g.ticks, &mut buf), Ok(v.0.len()));
                prop_assert!(emit_to_slice(&e, g.ticks, &mut buf[..v.0.len() - 1]).is_err());
            }
            // Cut anywhere, the payload is rejected (never misread, never a panic).
            for cut in 0..v.0.len() {
                prop_assert!(parse(&v.0[..cut]).is_err());
            }
            Ok(())
        })?;
    }

    #[test]
    fn a_link_frame_carries_the_event(g in gen(), source in any::<u32>()) {
        let Gen { ticks, .. } = g;
        let ev = DataInt { category: Str::Id(3), key: Str::Bytes(b"k"), value: g.int };
        let mut wire = Vec::new();
        let mut link = LinkWriter::new(&mut wire);
        link.send_trace2(source, ticks, &ev).unwrap();
        with_event(&g, |other| {
            // Any other event too, through the same writer.
            if let Trace2::RegionEnter(e) = other { link.send_trace2(source, ticks, &e).unwrap(); }
        });
        let mut buf = vec![0u8; 4096];
        let mut dec = FrameDecoder::new(&mut buf);
        let mut rest = &wire[..];
        let mut seen = 0;
        while !rest.is_empty() {
            let (n, got) = dec.feed(rest);
            rest = &rest[n..];
            if let Some(Event::Frame(f)) = got {
                prop_assert_eq!(f.head.kind, FrameKind::Trace2Compact);
                prop_assert_eq!(f.head.source, source);
                let rec = parse(f.payload).unwrap();
                prop_assert_eq!(rec.ticks, ticks);
                if seen == 0 {
                    prop_assert_eq!(rec.event, Trace2::DataInt(ev));
                }
                seen += 1;
            }
        }
        prop_assert!(seen >= 1);
    }

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse(&bytes);
    }
}

#[test]
fn known_bytes() {
    let mut buf = [0u8; 64];
    let ev = Session {
        hz: 12_500_000,
        sid: Str::Id(0x57),
        thread: Str::Bytes(b"main"),
    };
    let n = emit_to_slice(&ev, 0, &mut buf).unwrap();
    assert_eq!(
        &buf[..n],
        [0, 0, 0xa0, 0xf8, 0xfa, 0x05, 0xaf, 0x01, 10, b'm', b'a', b'i', b'n']
    );
    assert_eq!(parse(&[0, 0, 1, 0, 2]), Err(ParseError::MissingString));
    assert_eq!(parse(&[0x6c]), Err(ParseError::Truncated));
}
