//! Any bytes as a Trace2 event stream (JSON lines) through `trace2 render`, in
//! each of the three output formats, brief or not (the first byte picks): no
//! panic, no I/O error, every line counted, every diagnostic one line of the form
//! `line N: ...` with no control character of the input in it, and an output
//! whose size is bounded by the input's (the perf padding is capped at
//! `MAX_PAD_NESTING` levels, so no line can explode).
#![no_main]

use flightrec_core::trace2::Target;
use flightrec_host::out::trace2_render::{render, RenderOptions, MAX_PAD_NESTING};
use libfuzzer_sys::fuzz_target;

/// Output bytes allowed per input line beyond eight times the input: the
/// widest fixed columns of a perf line plus the capped padding, with room for
/// the lines one event can print (`start` prints argv, `exit` two lines).
const PER_LINE: usize = 1024 + 2 * MAX_PAD_NESTING as usize;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, stream)) = data.split_first() else {
        return;
    };
    let target = [Target::Normal, Target::Perf, Target::Event][usize::from(pick % 3)];
    let mut opts = RenderOptions::new(target, pick & 4 != 0);
    opts.utc_offset_secs = i32::from(pick >> 3) * 900 - 12 * 3600;
    let (mut out, mut diag) = (Vec::new(), Vec::new());
    let report = render(stream, &mut out, &mut diag, &opts).expect("writing to memory cannot fail");

    let lines = stream.split_inclusive(|&b| b == b'\n').count();
    assert_eq!(report.lines, lines);
    assert!(report.events + report.skipped.len() <= lines);
    assert!(report.skipped.windows(2).all(|w| w[0] < w[1]));
    assert!(
        out.len() <= 8 * stream.len() + PER_LINE * (lines + 1),
        "{} bytes of output for {} bytes in {lines} lines",
        out.len(),
        stream.len()
    );

    let diag = String::from_utf8(diag).expect("diagnostics are UTF-8");
    let mut reported = 0;
    for line in diag.lines() {
        assert!(line.starts_with("line "), "{line:?}");
        assert!(!line.chars().any(char::is_control), "{line:?}");
        if !line.contains(": warning: ") {
            reported += 1;
        }
    }
    assert_eq!(reported, report.skipped.len());
    assert!(diag.is_empty() || diag.ends_with('\n'));
});
