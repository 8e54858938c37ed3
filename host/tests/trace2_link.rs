//! The same Trace2 events two ways: sent compactly over the link
//! (`LinkWriter::send_trace2`, frames through `FrameDecoder` and `Collector`, as
//! `flightrec recv` does) and formatted by the core's own formatters the way a
//! program formats its lines (times in microseconds from the clock, a
//! `ThreadState` for nesting and `t_rel`). The lines must be equal byte for byte,
//! in git's event, perf and normal formats.

use std::collections::HashMap;

use flightrec_core::link::trace2::{
    DataInt, Exit, Printf, RegionEnter, RegionLeave, Session, Str, Trace2, Version,
};
use flightrec_core::link::{Event as LinkEvent, FrameDecoder, LinkWriter};
use flightrec_core::trace2::{Args, Event, Format, LineCtx, Msg, Target, ThreadName, ThreadState};
use flightrec_host::link::collect::Collector;
use flightrec_host::link::trace2::{Trace2Renderer, Trace2Strings};
use proptest::prelude::*;

/// The interned strings of the tests' "ELF": ids are offsets in this section,
/// which starts at address 0 behind a NUL (as LLD places it).
const SECTION: &[u8] =
    b"\0firmware\0workload\0iterations\0main\0sid-7/child\0\xff\xfe bytes \"quoted\"\0";

fn section_strings() -> HashMap<u32, Vec<u8>> {
    let mut m = HashMap::new();
    let mut at = 1;
    for s in SECTION[1..].split(|&b| b == 0).filter(|s| !s.is_empty()) {
        m.insert(at as u32, s.to_vec());
        at += s.len() + 1;
    }
    m
}

/// A generated string: an interned id (index into the section's strings) or
/// run-time bytes.
#[derive(Clone, Debug)]
enum G {
    Id(usize),
    Bytes(Vec<u8>),
}

fn g() -> impl Strategy<Value = G> {
    prop_oneof![
        (0usize..6).prop_map(G::Id),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(G::Bytes),
        "[a-z/_ .:%-]{0,20}".prop_map(|s| G::Bytes(s.into_bytes())),
    ]
}

#[derive(Clone, Debug)]
struct Step {
    code: u8,
    dt: u64,
    int: i64,
    strs: [Option<G>; 3],
    argv: Vec<G>,
}

fn step() -> impl Strategy<Value = Step> {
    (
        // Regions and data most often.
        prop_oneof![
            3 => Just(6u8), 3 => Just(7u8), 2 => Just(8u8), 2 => Just(9u8), 2 => 1u8..15,
        ],
        0u64..5_000_000,
        any::<i64>(),
        [
            proptest::option::weighted(0.8, g()),
            proptest::option::weighted(0.8, g()),
            proptest::option::weighted(0.5, g()),
        ],
        proptest::collection::vec(g(), 0..4),
    )
        .prop_map(|(code, dt, int, strs, argv)| Step {
            code,
            dt,
            int,
            strs,
            argv,
        })
}

/// The sequence: a session, then the steps, each at its clock reading.
#[derive(Clone, Debug)]
struct Run {
    hz: u64,
    sid: G,
    thread: G,
    steps: Vec<Step>,
}

fn run() -> impl Strategy<Value = Run> {
    (
        prop_oneof![
            Just(12_500_000u64),
            Just(1_000_000),
            Just(32_768),
            1u64..4_000_000_000
        ],
        g(),
        g(),
        proptest::collection::vec(step(), 0..40),
    )
        .prop_map(|(hz, sid, thread, steps)| Run {
            hz,
            sid,
            thread,
            steps,
        })
}

struct Ctx {
    ids: Vec<u32>,
    text: HashMap<u32, Vec<u8>>,
}

impl Ctx {
    fn new() -> Self {
        let text = section_strings();
        let mut ids: Vec<u32> = text.keys().copied().collect();
        ids.sort_unstable();
        Ctx { ids, text }
    }
    fn wire<'a>(&self, g: &'a G) -> Str<'a> {
        match g {
            G::Id(i) => Str::Id(self.ids[*i % self.ids.len()]),
            G::Bytes(b) => Str::Bytes(b),
        }
    }
    fn text<'a>(&'a self, g: &'a G) -> &'a [u8] {
        match g {
            G::Id(i) => &self.text[&self.ids[*i % self.ids.len()]],
            G::Bytes(b) => b,
        }
    }
}

/// Sends the run over a link; returns the wire bytes.
fn send(c: &Ctx, r: &Run) -> Vec<u8> {
    let mut link = LinkWriter::new(Vec::new());
    let session = Session {
        hz: r.hz,
        sid: c.wire(&r.sid),
        thread: c.wire(&r.thread),
    };
    link.send_trace2(0, 0, &session).unwrap();
    let mut ticks = 0u64;
    for s in &r.steps {
        ticks += s.dt;
        let o = |i: usize| s.strs[i].as_ref().map(|g| c.wire(g));
        let argv: Vec<Str<'_>> = s.argv.iter().map(|g| c.wire(g)).collect();
        flightrec_testkit::trace2_link::with_event(s.code, s.int, o, &argv, |ev| {
            // The one-event-type calls a firmware makes.
            match ev {
                Trace2::Version(e) => link.send_trace2(0, ticks, &e),
                Trace2::Start(e) => link.send_trace2(0, ticks, &e),
                Trace2::Exit(e) => link.send_trace2(0, ticks, &e),
                Trace2::Atexit(e) => link.send_trace2(0, ticks, &e),
                Trace2::Error(e) => link.send_trace2(0, ticks, &e),
                Trace2::RegionEnter(e) => link.send_trace2(0, ticks, &e),
                Trace2::RegionLeave(e) => link.send_trace2(0, ticks, &e),
                Trace2::Data(e) => link.send_trace2(0, ticks, &e),
                Trace2::DataInt(e) => link.send_trace2(0, ticks, &e),
                Trace2::Printf(e) => link.send_trace2(0, ticks, &e),
                Trace2::DataJson(e) => link.send_trace2(0, ticks, &e),
                Trace2::DefParam(e) => link.send_trace2(0, ticks, &e),
                Trace2::Timer(e) => link.send_trace2(0, ticks, &e),
                Trace2::Counter(e) => link.send_trace2(0, ticks, &e),
                Trace2::Session(e) => link.send_trace2(0, ticks, &e),
            }
            .unwrap();
        });
    }
    link.into_inner()
}

/// The lines the core's formatters make for the run, as a program that formats
/// its own lines would.
fn formatted(c: &Ctx, r: &Run, format: Format) -> Vec<u8> {
    let mut out = Vec::new();
    let mut thread = ThreadState::<64>::new(ThreadName::main(), 0);
    let mut ticks = 0u64;
    let (sid, name) = (c.text(&r.sid), c.text(&r.thread));
    let mut buf = vec![0u8; 1 << 16];
    for s in &r.steps {
        ticks += s.dt;
        let now = u64::try_from(u128::from(ticks) * 1_000_000 / u128::from(r.hz)).unwrap();
        let o = |i: usize| s.strs[i].as_ref().map(|g| c.text(g));
        let q = |i: usize| o(i).unwrap_or(b"");
        let argv: Vec<&[u8]> = s.argv.iter().map(|g| c.text(g)).collect();
        let int = s.int.to_string();
        let code = s.int as i32;
        let mut nesting = thread.nesting();
        let ev = match s.code {
            1 => Event::Version { exe: q(0) },
            2 => Event::Start {
                argv: Args::Bytes(&argv),
            },
            3 => Event::Exit { code },
            4 => Event::Atexit { code },
            5 => Event::Error {
                msg: Msg::Bytes(q(0)),
                fmt: q(1),
            },
            6 => {
                nesting = thread.region_enter(now);
                Event::RegionEnter {
                    category: o(0),
                    label: o(1),
                    msg: o(2).map(Msg::Bytes),
                }
            }
            7 => {
                let Ok((t_rel, n)) = thread.region_leave(now) else {
                    continue;
                };
                nesting = n;
                Event::RegionLeave {
                    t_rel,
                    category: o(0),
                    label: o(1),
                    msg: o(2).map(Msg::Bytes),
                }
            }
            8 => Event::Data {
                t_rel: thread.data_t_rel(now),
                category: q(0),
                key: q(1),
                value: q(2),
            },
            9 => Event::Data {
                t_rel: thread.data_t_rel(now),
                category: q(0),
                key: q(1),
                value: int.as_bytes(),
            },
            11 => Event::DataJson {
                t_rel: thread.data_t_rel(now),
                category: q(0),
                key: q(1),
                value: q(2),
            },
            12 => Event::DefParam {
                scope: q(0),
                param: q(1),
                value: o(2),
            },
            13 => {
                let (intervals, total, min, max) = flightrec_testkit::trace2_link::timer_of(s.int);
                // A firmware that formats its own lines converts ticks the same way.
                let ns = |t: u64| {
                    u64::try_from(u128::from(t) * 1_000_000_000 / u128::from(r.hz))
                        .unwrap_or(u64::MAX)
                };
                Event::Timer {
                    per_thread: s.int & 1 == 1,
                    category: q(0),
                    name: q(1),
                    intervals,
                    total_ns: ns(total),
                    min_ns: ns(min),
                    max_ns: ns(max),
                }
            }
            14 => Event::Counter {
                per_thread: s.int & 1 == 1,
                category: q(0),
                name: q(1),
                value: s.int as u64,
            },
            _ => Event::Printf {
                msg: o(0).map(Msg::Bytes),
            },
        };
        let ctx = LineCtx {
            nesting,
            t_abs: now,
            ..LineCtx::new(sid, name)
        };
        let n = format.write_line(&ctx, &ev, &mut buf).unwrap();
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// The wire through the frame decoder into `recv`'s collector; the file it writes.
fn received(wire: &[u8]) -> (Vec<u8>, bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace2.txt");
    let mut c = Collector::new(dir.path(), path.clone()).unwrap();
    c.set_trace2_strings(Trace2Strings::from_section(0, SECTION));
    let mut buf = vec![0u8; 1 << 16];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut rest = wire;
    while !rest.is_empty() {
        let (n, ev) = dec.feed(rest);
        rest = &rest[n..];
        if let Some(LinkEvent::Frame(f)) = ev {
            c.frame(&f).unwrap();
        }
    }
    c.finish().unwrap();
    (std::fs::read(&path).unwrap_or_default(), c.had_problems())
}

/// The wire's payloads through a renderer of `format`.
fn rendered(wire: &[u8], format: Format) -> Vec<u8> {
    let mut r = Trace2Renderer::new(Trace2Strings::from_section(0, SECTION), format);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut rest = wire;
    while !rest.is_empty() {
        let (n, ev) = dec.feed(rest);
        rest = &rest[n..];
        if let Some(LinkEvent::Frame(f)) = ev {
            r.event(f.head.source, f.payload, &mut out);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn recv_writes_the_lines_the_core_formats(r in run()) {
        let c = Ctx::new();
        let wire = send(&c, &r);
        // `recv`: git's event format, not brief (as the firmware example wrote it).
        let (file, _) = received(&wire);
        let expected = formatted(&c, &r, Format::new(Target::Event, false));
        prop_assert_eq!(String::from_utf8_lossy(&file), String::from_utf8_lossy(&expected));
        prop_assert_eq!(&file, &expected);
        for format in [
            Format::new(Target::Event, true),
            Format::new(Target::Perf, false),
            Format::new(Target::Perf, true),
            Format::new(Target::Normal, false),
            Format::new(Target::Normal, true),
        ] {
            prop_assert_eq!(rendered(&wire, format), formatted(&c, &r, format));
        }
    }
}

/// The QEMU example's events, as its old firmware-formatted lines had them.
#[test]
fn the_example_s_events_are_git_s_lines() {
    let mut link = LinkWriter::new(Vec::new());
    let hz = 12_500_000;
    let sid = Str::Bytes(b"20250101T000000.000000Z-Hqemu-P00000001");
    link.send_trace2(
        0,
        0,
        &Session {
            hz,
            sid,
            thread: Str::Bytes(b"main"),
        },
    )
    .unwrap();
    link.send_trace2(
        0,
        0,
        &Version {
            exe: Str::Bytes(b"0.1.0"),
        },
    )
    .unwrap();
    let (category, label) = (Some(Str::Id(1)), Some(Str::Id(10)));
    link.send_trace2(
        0,
        10,
        &RegionEnter {
            category,
            label,
            msg: None,
        },
    )
    .unwrap();
    let (cat, key) = (Str::Id(1), Str::Id(19));
    link.send_trace2(
        0,
        9_500_000,
        &DataInt {
            category: cat,
            key,
            value: 3000,
        },
    )
    .unwrap();
    link.send_trace2(
        0,
        9_600_010,
        &RegionLeave {
            category,
            label,
            msg: None,
        },
    )
    .unwrap();
    link.send_trace2(0, 9_600_013, &Exit { code: 0 }).unwrap();
    let (file, problems) = received(&link.into_inner());
    assert!(!problems);
    let head = r#"{"event":"#;
    let ctx = r#""sid":"20250101T000000.000000Z-Hqemu-P00000001","thread":"main","time":"1970-01-01T00:00:00.000000Z""#;
    let expected = [
        format!(r#"{head}"version",{ctx},"evt":"4","exe":"0.1.0"}}"#),
        format!(
            r#"{head}"region_enter",{ctx},"nesting":1,"category":"firmware","label":"workload"}}"#
        ),
        format!(
            r#"{head}"data",{ctx},"t_abs":0.760000,"t_rel":0.760000,"nesting":2,"category":"firmware","key":"iterations","value":"3000"}}"#
        ),
        format!(
            r#"{head}"region_leave",{ctx},"t_rel":0.768000,"nesting":1,"category":"firmware","label":"workload"}}"#
        ),
        format!(r#"{head}"exit",{ctx},"t_abs":0.768001,"code":0}}"#),
    ];
    assert_eq!(String::from_utf8(file).unwrap(), expected.join("\n") + "\n");
}

/// Without the ELF, interned strings are written as `#<id>` and counted; events
/// before the session and a payload that is not an event are left out and counted.
#[test]
fn what_cannot_be_rendered_is_counted() {
    let mut link = LinkWriter::new(Vec::new());
    link.send_trace2(
        3,
        5,
        &Printf {
            msg: Some(Str::Id(1)),
        },
    )
    .unwrap();
    link.send_trace2(
        3,
        0,
        &Session {
            hz: 1000,
            sid: Str::Bytes(b"s"),
            thread: Str::Bytes(b"main"),
        },
    )
    .unwrap();
    link.send_trace2(
        3,
        5,
        &Printf {
            msg: Some(Str::Id(1)),
        },
    )
    .unwrap();
    link.send(flightrec_core::link::FrameKind::Trace2Compact, 3, &[0x63])
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace2.txt");
    let mut c = Collector::new(dir.path(), path.clone()).unwrap();
    let wire = link.into_inner();
    let mut buf = vec![0u8; 4096];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut rest = &wire[..];
    while !rest.is_empty() {
        let (n, ev) = dec.feed(rest);
        rest = &rest[n..];
        if let Some(LinkEvent::Frame(f)) = ev {
            c.frame(&f).unwrap();
        }
    }
    c.finish().unwrap();
    let s = c.trace2_events();
    assert_eq!(
        (
            s.events,
            s.lines,
            s.without_session,
            s.unknown_strings,
            s.malformed
        ),
        (4, 1, 1, 1, 1)
    );
    assert!(c.had_problems());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"event\":\"printf\",\"sid\":\"s\",\"thread\":\"main\",\"time\":\"1970-01-01T00:00:00.000000Z\",\"t_abs\":0.005000,\"msg\":\"#1\"}\n"
    );
}
