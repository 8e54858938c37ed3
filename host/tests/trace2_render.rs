//! The converter over every captured scenario: rendering git's own event stream
//! must reproduce git's normal and perf output of the same run, apart from what
//! the event stream does not carry (see `docs/trace2-render.md`):
//!
//! * live captures only: the wall-clock time prefix (each git target reads the
//!   clock itself, so the three files differ by microseconds);
//! * perf `t_abs` of events whose event-target line has no `t_abs`;
//! * perf lines for regions/data the event target dropped by its nesting
//!   filter, and the dots of lines inside such dropped levels (the converter
//!   can only count the levels it saw).
//!
//! Everything else is compared byte for byte.

use std::path::{Path, PathBuf};

use flightrec_host::core::trace2::json::parse_event_nesting;
use flightrec_host::core::trace2::Target;
use flightrec_host::out::trace2_render::{render, RenderOptions};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/trace2")
}

fn scenarios(kind: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data_dir().join(kind))
        .expect("vector directory")
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert!(!v.is_empty());
    v
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

fn convert(input: &[u8], target: Target, brief: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut diag = Vec::new();
    let report = render(
        input,
        &mut out,
        &mut diag,
        &RenderOptions::new(target, brief),
    )
    .unwrap();
    assert!(
        report.skipped.is_empty(),
        "skipped lines: {}",
        String::from_utf8_lossy(&diag)
    );
    out
}

/// The `eventNesting` the capture ran with (from `cmd.txt`'s env line).
fn event_nesting(dir: &Path) -> u32 {
    let cmd = String::from_utf8(read(dir, "cmd.txt")).unwrap();
    for word in cmd
        .lines()
        .filter(|l| l.starts_with("env:"))
        .flat_map(|l| l.split_whitespace())
    {
        if let Some(v) = word.strip_prefix("GIT_TRACE2_EVENT_NESTING=") {
            return parse_event_nesting(v.as_bytes());
        }
    }
    parse_event_nesting(b"")
}

fn lines(b: &[u8]) -> Vec<&[u8]> {
    b.split_inclusive(|&c| c == b'\n').collect()
}

fn show(a: &[u8]) -> String {
    String::from_utf8_lossy(a).into_owned()
}

/// Compares line lists and reports the first difference readably.
fn assert_same_lines(what: &str, ours: &[Vec<u8>], git: &[Vec<u8>]) {
    for (i, (o, g)) in ours.iter().zip(git).enumerate() {
        assert_eq!(show(o), show(g), "{what}: line {} differs", i + 1);
    }
    assert_eq!(ours.len(), git.len(), "{what}: line count");
}

/// Events whose event-target record has no `t_abs`, though perf prints one.
const NO_T_ABS_IN_STREAM: &[&str] = &[
    "region_enter",
    "region_leave",
    "child_start",
    "child_exit",
    "child_ready",
    "thread_start",
    "thread_exit",
    "exec",
    "exec_result",
];

/// How far a reconstructed `t_abs` may be from git's in a live capture: the
/// event target reads the wall clock separately from the monotonic clock, a few
/// microseconds apart; a bound of 100 us leaves room for a descheduled writer.
const LIVE_T_ABS_TOLERANCE_US: u64 = 100;

/// `%9.6f` seconds (or blanks) as microseconds.
fn micros(col: &str) -> u64 {
    let t = col.trim();
    let (s, us) = t
        .split_once('.')
        .unwrap_or_else(|| panic!("not a time: {col:?}"));
    s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap()
}

/// A perf line split into its columns.
struct PerfLine {
    prefix: Option<String>, // time + file:line (non-brief)
    cols: Vec<String>,      // depth, thread, event, repo, t_abs, t_rel, category
    dots: usize,
    payload: String,
}

fn parse_perf(line: &[u8], brief: bool) -> PerfLine {
    let s = show(line);
    let n = if brief { 8 } else { 9 };
    let mut parts: Vec<String> = s.splitn(n, " | ").map(str::to_owned).collect();
    assert_eq!(parts.len(), n, "perf line has too few columns: {s:?}");
    let rest = parts.pop().unwrap();
    let prefix = if brief { None } else { Some(parts.remove(0)) };
    let dots = rest.bytes().take_while(|&b| b == b'.').count();
    PerfLine {
        prefix,
        cols: parts,
        dots,
        payload: rest[dots..].to_owned(),
    }
}

fn check_perf(dir: &Path, live: bool, brief: bool) {
    let (ev_file, perf_file) = if brief {
        ("event-brief.txt", "perf-brief.txt")
    } else {
        ("event.txt", "perf.txt")
    };
    let what = format!("{} {}", dir.display(), perf_file);
    let limit = event_nesting(dir) as usize;
    let ours = convert(&read(dir, ev_file), Target::Perf, brief);
    let git = read(dir, perf_file);
    let ours: Vec<PerfLine> = lines(&ours)
        .into_iter()
        .map(|l| parse_perf(l, brief))
        .collect();
    let git: Vec<PerfLine> = lines(&git)
        .into_iter()
        .map(|l| parse_perf(l, brief))
        .filter(|p| {
            // Lines the event target filtered out never reached the stream.
            let filtered = matches!(
                p.cols[2].trim_end(),
                "region_enter" | "region_leave" | "data" | "data_json"
            );
            !(filtered && p.dots / 2 + 1 > limit)
        })
        .collect();
    assert_eq!(ours.len(), git.len(), "{what}: line count");
    let mut compared_t_abs = 0;
    let mut max_estimate_error = 0;
    for (i, (o, g)) in ours.iter().zip(&git).enumerate() {
        let at = format!("{what}: line {} ({:?})", i + 1, g.payload);
        match (&o.prefix, &g.prefix) {
            (Some(op), Some(gp)) if live => assert_eq!(op[15..], gp[15..], "{at}: file:line"),
            (op, gp) => assert_eq!(op, gp, "{at}: time and file:line"),
        }
        let event = g.cols[2].trim_end();
        for c in 0..7 {
            if c == 4 && NO_T_ABS_IN_STREAM.contains(&event) {
                // Not in the stream: estimated from the last t_abs and the wall
                // clock. The det clock is frozen, so there it is the last t_abs.
                let (ours, theirs) = (micros(&o.cols[4]), micros(&g.cols[4]));
                if live && !brief {
                    let err = ours.abs_diff(theirs);
                    max_estimate_error = max_estimate_error.max(err);
                    assert!(
                        err <= LIVE_T_ABS_TOLERANCE_US,
                        "{at}: t_abs {ours} vs {theirs}"
                    );
                } else {
                    assert!(ours <= theirs, "{at}: t_abs {ours} vs {theirs}");
                }
                continue;
            }
            if c == 4 {
                compared_t_abs += 1;
            }
            assert_eq!(o.cols[c], g.cols[c], "{at}: column {c}");
        }
        // Levels deeper than the filter are invisible to the converter.
        assert_eq!(o.dots, g.dots.min(2 * limit), "{at}: dots");
        assert_eq!(o.payload, g.payload, "{at}: payload");
    }
    assert!(compared_t_abs > 0, "{what}: no t_abs compared");
    if max_estimate_error > 0 {
        eprintln!("{what}: largest t_abs estimate error {max_estimate_error} us");
    }
}

fn check_normal(dir: &Path, live: bool, brief: bool) {
    let (ev_file, normal_file) = if brief {
        ("event-brief.txt", "normal-brief.txt")
    } else {
        ("event.txt", "normal.txt")
    };
    let ours = convert(&read(dir, ev_file), Target::Normal, brief);
    let git = read(dir, normal_file);
    // Live captures: each target read the wall clock itself; drop `HH:MM:SS.uuuuuu`.
    let scrub = |b: &[u8]| -> Vec<Vec<u8>> {
        lines(b)
            .into_iter()
            .map(|l| {
                if live && !brief {
                    l[15..].to_vec()
                } else {
                    l.to_vec()
                }
            })
            .collect()
    };
    assert_same_lines(
        &format!("{} {normal_file}", dir.display()),
        &scrub(&ours),
        &scrub(&git),
    );
}

#[test]
fn det_normal_is_reproduced_byte_for_byte() {
    for dir in scenarios("det") {
        check_normal(&dir, false, false);
        check_normal(&dir, false, true);
    }
}

#[test]
fn live_normal_is_reproduced_apart_from_clock_reads() {
    for dir in scenarios("live") {
        check_normal(&dir, true, false);
        check_normal(&dir, true, true);
    }
}

#[test]
fn det_perf_is_reproduced_apart_from_what_the_stream_lacks() {
    for dir in scenarios("det") {
        check_perf(&dir, false, false);
        check_perf(&dir, false, true);
    }
}

#[test]
fn live_perf_is_reproduced_apart_from_what_the_stream_lacks() {
    for dir in scenarios("live") {
        check_perf(&dir, true, false);
        check_perf(&dir, true, true);
    }
}

#[test]
fn det_perf_without_regions_or_children_is_byte_exact() {
    // These runs have no event whose t_abs the stream lacks and no filtered level.
    for name in [
        "config-params",
        "die",
        "parent-sid",
        "unknown-option",
        "version",
    ] {
        let dir = data_dir().join("det").join(name);
        for (ev, perf, brief) in [
            ("event.txt", "perf.txt", false),
            ("event-brief.txt", "perf-brief.txt", true),
        ] {
            let ours = convert(&read(&dir, ev), Target::Perf, brief);
            assert_eq!(show(&ours), show(&read(&dir, perf)), "{name} {perf}");
        }
    }
}

#[test]
fn event_stream_round_trips() {
    for kind in ["det", "live"] {
        for dir in scenarios(kind) {
            for (file, brief) in [("event.txt", false), ("event-brief.txt", true)] {
                let input = read(&dir, file);
                let ours = convert(&input, Target::Event, brief);
                assert_same_lines(
                    &format!("{} {file}", dir.display()),
                    &lines(&ours)
                        .into_iter()
                        .map(<[u8]>::to_vec)
                        .collect::<Vec<_>>(),
                    &lines(&input)
                        .into_iter()
                        .map(<[u8]>::to_vec)
                        .collect::<Vec<_>>(),
                );
            }
        }
    }
}

#[test]
fn bad_lines_are_reported_and_skipped() {
    let good = br#"{"event":"cmd_mode","sid":"S","thread":"main","name":"write"}"#;
    let mut input = Vec::new();
    input.extend_from_slice(good);
    input
        .extend_from_slice(b"\nnot json\n{\"event\":\"nope\",\"sid\":\"S\",\"thread\":\"main\"}\n");
    input.extend_from_slice(b"{\"event\":\"exit\",\"sid\":\"S\",\"thread\":\"main\"}\n[1]\n\n");
    input.extend_from_slice(good);
    input.push(b'\n');
    let mut out = Vec::new();
    let mut diag = Vec::new();
    let report = render(
        &input[..],
        &mut out,
        &mut diag,
        &RenderOptions::new(Target::Normal, true),
    )
    .unwrap();
    assert_eq!(report.skipped, vec![2, 3, 4, 5]);
    assert_eq!(report.events, 2);
    assert_eq!(show(&out), "cmd_mode write\ncmd_mode write\n");
    let diag = show(&diag);
    assert!(diag.contains("line 2: not JSON"), "{diag}");
    assert!(
        diag.contains("line 3: unknown Trace2 event \"nope\""),
        "{diag}"
    );
    assert!(
        diag.contains("line 4: missing integer field \"code\""),
        "{diag}"
    );
    assert!(diag.contains("line 5: not a JSON object"), "{diag}");
}

#[test]
fn non_utf8_bytes_pass_through_unchanged() {
    let input = b"{\"event\":\"cmd_path\",\"sid\":\"S\",\"thread\":\"main\",\"path\":\"/tmp/\xff\xfe\\u0001x\"}\n";
    let ours = convert(input, Target::Normal, true);
    assert_eq!(ours, b"cmd_path /tmp/\xff\xfe\x01x\n");
    let ours = convert(input, Target::Event, true);
    assert_eq!(&ours[..], &input[..]);
}
