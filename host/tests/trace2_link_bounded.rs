//! The compact Trace2 path's perf output stays linear in its input: N
//! `region_enter` events that are never left pad each line for at most
//! `MAX_PAD_NESTING` levels, exactly as `trace2 render` pads the same lines.
//! Each case runs under a time limit, so a regression fails instead of running
//! for minutes.

use std::sync::mpsc;
use std::time::Duration;

use flightrec_core::link::trace2::{emit_to_slice, RegionEnter, Session, Str};
use flightrec_core::trace2::perf::MAX_PAD_NESTING;
use flightrec_core::trace2::{Format, Target};
use flightrec_host::link::trace2::{Trace2Renderer, Trace2Strings};
use flightrec_host::out::trace2_render::{render, RenderOptions};

/// Runs `f` on a thread and fails when it takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the case ended without a result"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("took longer than {limit:?}"),
    }
}

/// The perf lines (brief) of `n` `region_enter` events never left.
fn unclosed_regions(n: usize) -> (Vec<u8>, u64) {
    let mut r = Trace2Renderer::new(Trace2Strings::empty(), Format::new(Target::Perf, true));
    let mut out = Vec::new();
    let mut p = [0u8; 64];
    let session = Session {
        hz: 1_000_000,
        sid: Str::Bytes(b"S"),
        thread: Str::Bytes(b"main"),
    };
    let len = emit_to_slice(&session, 0, &mut p).unwrap();
    r.event(0, &p[..len], &mut out);
    let enter = RegionEnter {
        category: None,
        label: Some(Str::Bytes(b"deep")),
        msg: None,
    };
    for i in 0..n {
        let len = emit_to_slice(&enter, i as u64, &mut p).unwrap();
        r.event(0, &p[..len], &mut out);
    }
    assert_eq!(r.stats().lines, n as u64);
    (out, r.stats().pad_capped)
}

#[test]
fn unclosed_regions_give_linear_output() {
    within(Duration::from_secs(20), || {
        let (small, capped_small) = unclosed_regions(1_000);
        let (large, capped_large) = unclosed_regions(20_000);
        assert_eq!(capped_small, 1_000 - u64::from(MAX_PAD_NESTING));
        assert_eq!(capped_large, 20_000 - u64::from(MAX_PAD_NESTING));
        // Twenty times the events, about twenty times the bytes (the small
        // run has proportionally more of the shorter first lines): not the
        // four hundred times of padding that grows with every line.
        assert!(
            large.len() <= small.len() * 21,
            "{} bytes for 1000 events, {} for 20000",
            small.len(),
            large.len()
        );
        // Every line is bounded: the 198 dots and a few columns.
        let longest = large.split(|&b| b == b'\n').map(<[u8]>::len).max();
        assert!(longest.unwrap() <= 320, "{longest:?}");
    });
}

#[test]
fn compact_padding_is_trace2_renders() {
    within(Duration::from_secs(20), || {
        let n = 150;
        let (compact, _) = unclosed_regions(n);
        let mut json = Vec::new();
        for i in 0..n {
            json.extend_from_slice(
                format!(
                    "{{\"event\":\"region_enter\",\"sid\":\"S\",\"thread\":\"main\",\"t_abs\":0.{i:06},\"label\":\"deep\"}}\n"
                )
                .as_bytes(),
            );
        }
        let (mut rendered, mut diag) = (Vec::new(), Vec::new());
        let report = render(
            &json[..],
            &mut rendered,
            &mut diag,
            &RenderOptions::new(Target::Perf, true),
        )
        .unwrap();
        assert_eq!(report.events, n);
        // The payload column (after the last ` | `) of each line: the same dots.
        let payloads = |text: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(text)
                .lines()
                .map(|l| l.rsplit(" | ").next().unwrap().to_string())
                .collect()
        };
        assert_eq!(payloads(&compact), payloads(&rendered));
        assert_eq!(
            payloads(&compact)[n - 1],
            format!(
                "{}label:deep",
                ".".repeat((MAX_PAD_NESTING as usize - 1) * 2)
            )
        );
    });
}
