//! The converter never panics: damaged Trace2 lines (cut, bytes changed,
//! fields of the wrong type) are either converted or reported and skipped,
//! one report per skipped line.

use std::path::Path;

use flightrec_host::core::trace2::Target;
use flightrec_host::out::trace2_render::{render, RenderOptions};
use proptest::prelude::*;

fn sample_lines() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/trace2/det");
    let mut lines = Vec::new();
    for name in ["status", "git-alias", "config-params", "die"] {
        let text = std::fs::read(dir.join(name).join("event.txt")).unwrap();
        lines.extend(
            text.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec),
        );
    }
    lines
}

/// 500 cases, or `PROPTEST_CASES` when set (for longer runs).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn damaged_lines_are_converted_or_reported(
        picks in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..400, any::<u8>(), 0u8..4), 1..12),
        target in 0u8..3,
        brief in any::<bool>(),
    ) {
        let lines = sample_lines();
        let mut input = Vec::new();
        for (idx, at, byte, how) in &picks {
            let mut l = idx.get(&lines).clone();
            let at = at % (l.len() + 1);
            match how {
                0 => l.truncate(at),
                1 if at < l.len() => l[at] = *byte,
                2 => l.insert(at, *byte),
                _ => {} // unchanged
            }
            l.retain(|&b| b != b'\n');
            input.extend_from_slice(&l);
            input.push(b'\n');
        }
        let target = [Target::Normal, Target::Perf, Target::Event][target as usize];
        let mut out = Vec::new();
        let mut diag = Vec::new();
        let report = render(&input[..], &mut out, &mut diag, &RenderOptions::new(target, brief)).unwrap();
        prop_assert_eq!(report.lines, picks.len());
        let diag = String::from_utf8_lossy(&diag);
        prop_assert_eq!(diag.lines().count(), report.skipped.len());
        for (line, n) in diag.lines().zip(&report.skipped) {
            let prefix = format!("line {n}: ");
            prop_assert!(line.starts_with(&prefix), "{}", line);
        }
    }
}
