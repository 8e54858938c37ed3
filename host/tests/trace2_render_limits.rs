//! Hostile input to `trace2 render`: absurd region nesting renders to bounded
//! output with one warning, and diagnostics never carry the input's control
//! characters (see `docs/reliability.md`).

use std::path::Path;

use flightrec_host::core::trace2::Target;
use flightrec_host::out::trace2_render::{render, RenderOptions, RenderReport, MAX_PAD_NESTING};

fn run(input: &[u8], target: Target, brief: bool) -> (RenderReport, Vec<u8>, String) {
    let (mut out, mut diag) = (Vec::new(), Vec::new());
    let report = render(
        input,
        &mut out,
        &mut diag,
        &RenderOptions::new(target, brief),
    )
    .unwrap();
    (report, out, String::from_utf8(diag).unwrap())
}

fn dots(line: &[u8]) -> usize {
    // The payload column is the last ` | `-separated one; the dots start it.
    let text = String::from_utf8_lossy(line);
    let payload = text.rsplit(" | ").next().unwrap();
    payload.bytes().take_while(|&b| b == b'.').count()
}

const MAX_DOTS: usize = (MAX_PAD_NESTING as usize - 1) * 2;

#[test]
fn a_huge_nesting_field_pads_at_most_the_cap_and_warns_once() {
    // 145 bytes that used to render to 200 MB.
    let line = br#"{"event":"region_enter","sid":"S","thread":"main","nesting":100000000,"category":"c","label":"l"}"#;
    let mut input = Vec::new();
    for _ in 0..3 {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    for brief in [false, true] {
        let (report, out, diag) = run(&input, Target::Perf, brief);
        assert_eq!((report.events, report.nesting_capped), (3, 3));
        assert!(report.skipped.is_empty());
        assert_eq!(
            out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(),
            3
        );
        for l in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            assert_eq!(dots(l), MAX_DOTS, "{}", String::from_utf8_lossy(l));
        }
        assert!(out.len() < 3 * 400, "{} bytes", out.len());
        assert_eq!(
            diag,
            "line 1: warning: region nesting 100000000 is deeper than 100; \
             perf lines are padded for at most 100 levels from here on\n"
        );
    }
}

#[test]
fn nesting_at_the_integer_limits_is_bounded() {
    for n in [i32::MAX as u64, u32::MAX as u64] {
        let line = format!(
            r#"{{"event":"data","sid":"S","thread":"main","t_rel":0.000001,"nesting":{n},"category":"c","key":"k","value":"v"}}"#
        );
        let (report, out, diag) = run(line.as_bytes(), Target::Perf, false);
        assert_eq!((report.events, report.nesting_capped), (1, 1), "{diag}");
        assert_eq!(dots(&out), MAX_DOTS);
        assert!(out.len() < 400);
    }
}

#[test]
fn regions_opened_without_a_nesting_field_stop_adding_padding_at_the_cap() {
    // 100,000 region_enter lines without `nesting` (20 MB) used to render to
    // 10 GB: each one is tracked one level deeper than the last.
    let line = br#"{"event":"region_enter","sid":"S","thread":"main","category":"c","label":"l"}"#;
    let count = 100_000;
    let mut input = Vec::with_capacity(count * (line.len() + 1));
    for _ in 0..count {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    let (report, out, diag) = run(&input, Target::Perf, true);
    assert_eq!(report.events, count);
    // Tracked nesting starts at 1: lines 1..=100 are at nesting 1..=100.
    assert_eq!(report.nesting_capped, count - MAX_PAD_NESTING as usize);
    assert_eq!(diag.lines().count(), 1, "{diag}");
    assert!(diag.starts_with("line 101: warning: region nesting 101 is deeper than 100;"));
    let lines: Vec<&[u8]> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), count);
    for (i, l) in lines.iter().enumerate().take(MAX_PAD_NESTING as usize) {
        assert_eq!(dots(l), 2 * i);
    }
    assert!(lines[MAX_PAD_NESTING as usize..]
        .iter()
        .all(|l| dots(l) == MAX_DOTS));
    // Bounded by the input's size times a small factor, not quadratic.
    assert!(out.len() < 4 * input.len(), "{} bytes", out.len());
}

#[test]
fn the_other_targets_keep_the_nesting_as_it_is_and_do_not_warn() {
    let line =
        br#"{"event":"region_enter","sid":"S","thread":"main","nesting":100000000,"label":"l"}"#;
    let (report, out, diag) = run(line, Target::Event, true);
    assert_eq!((report.nesting_capped, diag.as_str()), (0, ""));
    assert!(String::from_utf8(out)
        .unwrap()
        .contains(r#""nesting":100000000"#));
    let (report, _, diag) = run(line, Target::Normal, false);
    assert_eq!((report.nesting_capped, diag.as_str()), (0, ""));
}

#[test]
fn padding_below_the_cap_is_unchanged() {
    let line = format!(
        r#"{{"event":"region_enter","sid":"S","thread":"main","nesting":{MAX_PAD_NESTING},"label":"l"}}"#
    );
    let (report, out, diag) = run(line.as_bytes(), Target::Perf, true);
    assert_eq!((report.nesting_capped, diag.as_str()), (0, ""));
    assert_eq!(dots(&out), MAX_DOTS);
}

#[test]
fn diagnostics_escape_control_characters_of_the_input() {
    let input = concat!(
        r#"{"event":"\u001b[2J\u001b[31mred","sid":"S","thread":"main"}"#,
        "\n",
        r#"{"event":"x\nline 99: forged","sid":"S","thread":"main"}"#,
        "\n",
        r#"{"event":"tab\there\rcr\u007fdel\u0085nel","sid":"S","thread":"main"}"#,
        "\n",
        r#"{"event":"q\"b\\","sid":"S","thread":"main"}"#,
        "\n",
    );
    let mut input = input.as_bytes().to_vec();
    // A raw byte that is not UTF-8 inside the event name.
    input.extend_from_slice(b"{\"event\":\"raw\xff\",\"sid\":\"S\",\"thread\":\"main\"}\n");
    let (report, _, diag) = run(&input, Target::Perf, false);
    assert_eq!(report.skipped, [1, 2, 3, 4, 5]);
    assert_eq!(
        diag,
        concat!(
            "line 1: unknown Trace2 event \"\\x1b[2J\\x1b[31mred\"\n",
            "line 2: unknown Trace2 event \"x\\nline 99: forged\"\n",
            "line 3: unknown Trace2 event \"tab\\there\\rcr\\x7fdel\\u{85}nel\"\n",
            "line 4: unknown Trace2 event \"q\\\"b\\\\\"\n",
            "line 5: unknown Trace2 event \"raw\\xff\"\n",
        )
    );
    assert!(!diag.contains('\u{1b}'));
}

/// The case `trace2_render_fuzz` shrank to: byte 14 of a `region_leave` line
/// set to `\` turns `"region_leave"` into `"regi\n_leave"`, a JSON escape for a
/// line feed, whose diagnostic used to span two lines.
#[test]
fn a_backslash_that_makes_a_newline_escape_gives_one_diagnostic_line() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/trace2/det/status");
    let text = std::fs::read(dir.join("event.txt")).unwrap();
    let mut line = text
        .split(|&b| b == b'\n')
        .find(|l| l.starts_with(br#"{"event":"region_leave""#))
        .unwrap()
        .to_vec();
    line[14] = b'\\';
    assert!(line.starts_with(br#"{"event":"regi\n_leave""#));
    let (report, _, diag) = run(&line, Target::Normal, true);
    assert_eq!(report.skipped, [1]);
    assert_eq!(diag, "line 1: unknown Trace2 event \"regi\\n_leave\"\n");
}
