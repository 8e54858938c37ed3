//! Property tests of the Trace2 formatters over arbitrary inputs: every line is
//! exactly one line, event lines are valid JSON that round-trips the strings
//! (including control characters, quotes and non-UTF-8 bytes), short buffers
//! give an error and never a partial line, nothing panics.

use flightrec_core::trace2::{
    Args, BufferTooSmall, Event, Format, LineCtx, Msg, RegionError, RegionStack, Target, WallTime,
};
use proptest::prelude::*;

/// Owned inputs an event borrows from.
#[derive(Debug, Clone)]
struct Fields {
    kind: u8,
    s: [Vec<u8>; 4],
    argv: Vec<Vec<u8>>,
    n: i64,
    code: i32,
    t: u64,
    flag: bool,
    opt: bool,
}

const KINDS: u8 = 30;

fn fields() -> impl Strategy<Value = Fields> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..24);
    (
        0..KINDS,
        [bytes(), bytes(), bytes(), bytes()],
        proptest::collection::vec(bytes(), 0..4),
        any::<i64>(),
        any::<i32>(),
        any::<u64>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(kind, s, argv, n, code, t, flag, opt)| Fields {
            kind,
            s,
            argv,
            n,
            code,
            t,
            flag,
            opt,
        })
}

fn event<'a>(f: &'a Fields, argv: &'a [&'a [u8]]) -> Event<'a> {
    // f.s[3] is the context's file name (see `ctx`).
    let [a, b, c, _] = &f.s;
    let (a, b, c) = (&a[..], &b[..], &c[..]);
    let o = |x: &'a [u8]| f.opt.then_some(x);
    let args = Args::Bytes(argv);
    let msg = o(c).map(Msg::Bytes);
    match f.kind {
        0 => Event::Version { exe: a },
        1 => Event::TooManyFiles,
        2 => Event::Start { argv: args },
        3 => Event::Exit { code: f.code },
        4 => Event::Atexit { code: f.code },
        5 => Event::Signal { signo: f.code },
        6 => Event::Error {
            msg: Msg::Bytes(a),
            fmt: b,
        },
        7 => Event::CmdPath { path: a },
        8 => Event::CmdAncestry { ancestry: args },
        9 => Event::CmdName {
            name: a,
            hierarchy: b,
        },
        10 => Event::CmdMode { mode: a },
        11 => Event::Alias {
            alias: a,
            argv: args,
        },
        12 => Event::ChildStart {
            child_id: f.n,
            child_class: o(a),
            hook_name: if f.flag { Some(b) } else { None },
            cd: o(c),
            use_shell: f.flag,
            is_git: f.opt,
            argv: args,
        },
        13 => Event::ChildExit {
            child_id: f.n,
            pid: f.n,
            code: f.code,
            t_rel: f.t,
        },
        14 => Event::ChildReady {
            child_id: f.n,
            pid: f.n,
            ready: a,
            t_rel: f.t,
        },
        15 => Event::Exec {
            exec_id: f.n,
            exe: o(a),
            argv: args,
        },
        16 => Event::ExecResult {
            exec_id: f.n,
            code: f.code,
            err: a,
        },
        17 => Event::ThreadStart,
        18 => Event::ThreadExit { t_rel: f.t },
        19 => Event::DefParam {
            scope: a,
            param: b,
            value: o(c),
        },
        20 => Event::DefRepo { worktree: a },
        21 => Event::RegionEnter {
            category: o(a),
            label: o(b),
            msg,
        },
        22 => Event::RegionLeave {
            t_rel: f.t,
            category: o(a),
            label: o(b),
            msg,
        },
        23 => Event::Data {
            t_rel: f.t,
            category: a,
            key: b,
            value: c,
        },
        // data_json takes pre-built JSON: give it a valid JSON string value.
        24 => Event::DataJson {
            t_rel: f.t,
            category: a,
            key: b,
            value: b"{\"k\":[1,2.5,null]}",
        },
        25 => Event::Printf { msg },
        26 | 27 => Event::Timer {
            per_thread: f.kind == 26,
            category: a,
            name: b,
            intervals: f.t,
            total_ns: f.t,
            min_ns: f.t / 3,
            max_ns: f.t / 2,
        },
        _ => Event::Counter {
            per_thread: f.kind == 28,
            category: a,
            name: b,
            value: f.t,
        },
    }
}

fn ctx<'a>(f: &'a Fields, thread: &'a [u8], sid: &'a [u8]) -> LineCtx<'a> {
    LineCtx {
        time: WallTime::new(f.n >> 20, (f.t % 1_000_000) as u32),
        utc_offset_secs: f.code % 86_400,
        file: &f.s[3],
        line: f.t as u32,
        thread,
        sid,
        sid_depth: (f.t % 5) as u32,
        nesting: (f.t % 4) as u32,
        repo: f.opt.then_some(f.code),
        t_abs: f.t,
    }
}

const FORMATS: [Format; 6] = [
    Format::new(Target::Normal, false),
    Format::new(Target::Normal, true),
    Format::new(Target::Perf, false),
    Format::new(Target::Perf, true),
    Format {
        target: Target::Event,
        brief: false,
        event_nesting: u32::MAX,
    },
    Format {
        target: Target::Event,
        brief: true,
        event_nesting: u32::MAX,
    },
];

/// Decodes a JSON string body written with git's escaping back to raw bytes.
fn unescape_git_json(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            assert_ne!(s[i], b'"', "unescaped quote");
            assert!(s[i] >= 0x20, "raw control byte {:#x}", s[i]);
            out.push(s[i]);
            i += 1;
            continue;
        }
        let e = s[i + 1];
        i += 2;
        out.push(match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'f' => 0x0c,
            b'b' => 0x08,
            b'u' => {
                let hex = std::str::from_utf8(&s[i..i + 4]).unwrap();
                assert_eq!(hex, hex.to_lowercase(), "git writes lowercase hex");
                i += 4;
                u8::try_from(u16::from_str_radix(hex, 16).unwrap()).unwrap()
            }
            other => panic!("unknown escape {other}"),
        });
    }
    out
}

/// Splits `"key":"<body>"` out of a line: returns the raw body bytes.
fn raw_string_field<'l>(line: &'l [u8], key: &str) -> &'l [u8] {
    let pat = format!("\"{key}\":\"");
    let start = line
        .windows(pat.len())
        .position(|w| w == pat.as_bytes())
        .expect("key present")
        + pat.len();
    let mut i = start;
    while line[i] != b'"' {
        i += if line[i] == b'\\' { 2 } else { 1 };
    }
    &line[start..i]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_format_writes_one_line_or_an_error(f in fields(), thread in proptest::collection::vec(any::<u8>(), 0..30), cut in 0usize..400) {
        let argv: Vec<&[u8]> = f.argv.iter().map(Vec::as_slice).collect();
        let ev = event(&f, &argv);
        let c = ctx(&f, &thread, b"sid/child");
        for fmt in FORMATS {
            let mut big = [0u8; 4096];
            let n = fmt.write_line(&c, &ev, &mut big).unwrap();
            let line = &big[..n];
            if n > 0 {
                prop_assert_eq!(line.last(), Some(&b'\n'));
            }
            if fmt.target == Target::Event && n > 0 {
                // JSON escapes every LF: exactly one line.
                prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
            }
            // A shorter buffer: an error, never a shorter "line".
            let mut small = vec![0u8; cut.min(n)];
            match fmt.write_line(&c, &ev, &mut small) {
                Ok(m) => { prop_assert_eq!(m, n); prop_assert_eq!(&small[..m], line); }
                Err(BufferTooSmall) => prop_assert!(cut < n),
            }
        }
    }

    #[test]
    fn json_lines_parse_and_round_trip_strings(
        key in proptest::collection::vec(any::<u8>(), 0..40),
        value in proptest::collection::vec(any::<u8>(), 0..40),
        thread in proptest::collection::vec(any::<u8>(), 0..30),
        t in any::<u64>(),
    ) {
        let ev = Event::Data { t_rel: t, category: b"cat\"\\\x01", key: &key, value: &value };
        let c = LineCtx { t_abs: t, file: b"f\n.c", line: 7, ..LineCtx::new(b"s\x7f\xff", &thread) };
        let mut buf = [0u8; 2048];
        let n = Format::new(Target::Event, false).write_line(&c, &ev, &mut buf).unwrap();
        let line = &buf[..n];
        prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let body = &line[..n - 1];

        // Exact, structural: git's escaping reversed gives the bytes back.
        prop_assert_eq!(unescape_git_json(raw_string_field(body, "key")), key.clone());
        prop_assert_eq!(unescape_git_json(raw_string_field(body, "value")), value.clone());
        prop_assert_eq!(unescape_git_json(raw_string_field(body, "thread")), thread.clone());

        // Valid JSON: bytes >= 0x80 are copied raw, so a non-UTF-8 input is
        // compared after the same lossy mapping of line and input (escapes only
        // touch ASCII, which ends any broken UTF-8 sequence in both alike).
        let text = String::from_utf8_lossy(body);
        let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        prop_assert_eq!(v["key"].as_str().unwrap(), lossy(&key));
        prop_assert_eq!(v["value"].as_str().unwrap(), lossy(&value));
        prop_assert_eq!(v["thread"].as_str().unwrap(), lossy(&thread));
        prop_assert_eq!(v["sid"].as_str().unwrap(), lossy(b"s\x7f\xff"));
        prop_assert_eq!(v["file"].as_str().unwrap(), "f\n.c");
        prop_assert_eq!(v["category"].as_str().unwrap(), "cat\"\\\x01");
        // %.6f of integer microseconds, as a JSON number.
        let want = format!("\"t_rel\":{}.{:06},", t / 1_000_000, t % 1_000_000);
        prop_assert!(body.windows(want.len()).any(|w| w == want.as_bytes()), "{}", want);
        prop_assert!(v["t_rel"].is_number());
    }

    #[test]
    fn json_messages_from_format_args_escape_like_bytes(s in ".*") {
        let c = LineCtx::new(b"s", b"main");
        let fmt = Format::new(Target::Event, true);
        let (mut a, mut b) = ([0u8; 1024], [0u8; 1024]);
        let na = fmt.write_line(&c, &Event::Printf { msg: Some(Msg::Fmt(format_args!("<{s}>"))) }, &mut a).unwrap();
        let owned = format!("<{s}>");
        let nb = fmt.write_line(&c, &Event::Printf { msg: Some(Msg::Bytes(owned.as_bytes())) }, &mut b).unwrap();
        prop_assert_eq!(&a[..na], &b[..nb]);
        let v: serde_json::Value = serde_json::from_slice(&a[..na]).unwrap();
        prop_assert_eq!(v["msg"].as_str().unwrap(), owned);
    }

    #[test]
    fn region_stack_matches_a_counter_model(ops in proptest::collection::vec(any::<bool>(), 0..64), now in 0u64..1_000_000) {
        let mut s = RegionStack::<4>::new(0);
        let mut model: u32 = 1;
        for (i, enter) in ops.into_iter().enumerate() {
            let t = now + i as u64;
            if enter {
                s.enter(t);
                model += 1;
            } else if model == 0 {
                prop_assert_eq!(s.leave(t), Err(RegionError::NoOpenRegion));
            } else {
                let rel = s.leave(t).unwrap();
                prop_assert!(rel <= t);
                model -= 1;
            }
            prop_assert_eq!(s.nesting(), model);
            prop_assert_eq!(s.is_overflowed(), model > 4);
        }
    }
}
