//! The desktop XRay tests' workload and its judgement: a deterministic
//! multi-threaded workload, what `llvm-xray` must show of it, and the shared
//! helpers (the real `llvm-xray`, its YAML, child-process scenarios) from
//! `flightrec-testkit`. The runtime is process-wide, so each scenario runs in a
//! fresh child process.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

pub use flightrec_testkit::child::{
    assert_child_ok, child_values, run_child, scratch_dir, CHILD_VAR,
};
pub use flightrec_testkit::xray_tool::{by_thread, judge, traces_in};
use flightrec_testkit::xray_tool::{llvm_xray, names_of, xray_ok, Record};

/// The ids the workload uses for its explicitly numbered functions.
pub const OUTER_ID: u32 = 1000;
pub const ARG_ID: u32 = 1001;
/// The typed event type of the workload.
pub const EVENT_TYPE: u16 = 7;

/// A traced leaf function (its id and name come from `xray_fn!`).
#[inline(never)]
pub fn leaf(x: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    std::hint::black_box(x.wrapping_mul(31))
}

/// One thread's deterministic workload: `rounds` rounds of an outer function, a
/// function with an argument around the leaf, a custom and a typed event.
pub fn workload(thread: u64, rounds: u64) {
    use flightrec::core::fdr::FunctionId;
    let outer = FunctionId::new(OUTER_ID).unwrap();
    let arg = FunctionId::new(ARG_ID).unwrap();
    flightrec::xray::set_function_name(outer, "outer");
    flightrec::xray::set_function_name(arg, "with_arg");
    for r in 0..rounds {
        let _o = flightrec::xray::enter(outer);
        {
            let _a = flightrec::xray::enter_with_arg(arg, thread * 1000 + r);
            leaf(r);
        }
        flightrec::xray::custom_event(format!("t{thread} r{r}").as_bytes());
        flightrec::xray::typed_event(EVENT_TYPE, b"typed");
    }
}

/// What `workload(thread, rounds)` must look like in llvm-xray's YAML:
/// (kind, func-id or None for events, args, data).
pub fn expected_workload(
    thread: u64,
    rounds: u64,
    leaf_id: u32,
) -> Vec<(String, Option<u32>, Vec<u64>, String)> {
    let mut v = Vec::new();
    let f = |k: &str, id: u32| (k.to_owned(), Some(id), vec![], String::new());
    for r in 0..rounds {
        v.push(f("function-enter", OUTER_ID));
        v.push((
            "function-enter-arg".into(),
            Some(ARG_ID),
            vec![thread * 1000 + r],
            String::new(),
        ));
        v.push(f("function-enter", leaf_id));
        v.push(f("function-exit", leaf_id));
        v.push(f("function-exit", ARG_ID));
        v.push((
            "custom-event".into(),
            None,
            vec![],
            format!("t{thread} r{r}"),
        ));
        v.push(("typed-event".into(), None, vec![], "typed".into()));
        v.push(f("function-exit", OUTER_ID));
    }
    v
}

/// A YAML record in the shape of `expected_workload` (events carry the previous
/// record's func-id in llvm-xray's output, so it is dropped).
pub fn shape(r: &Record) -> (String, Option<u32>, Vec<u64>, String) {
    let event = r.kind.ends_with("-event");
    (
        r.kind.clone(),
        (!event).then_some(r.func_id),
        r.args.clone(),
        r.data.clone(),
    )
}

/// Whether a YAML record is a function record.
pub fn is_function(r: &Record) -> bool {
    r.kind.starts_with("function-")
}

/// The id the names table gave the workload's leaf (printed by children).
pub fn leaf_id_in_this_process() -> u32 {
    (1..=flightrec::xray::names::max_named_id())
        .find(|&id| {
            flightrec::xray::names::function_name(id)
                .is_some_and(|n| n.ends_with("xray_common::leaf"))
        })
        .unwrap_or(0)
}

/// Judges a trace of `threads` workers running `workload(t, rounds)` and a main
/// thread with one scope, written by the child whose output is `out`: llvm-xray's
/// verify, convert (compared record by record with what was recorded), account and
/// stack with the names file.
pub fn check_workload(out: &Output, trace: &Path, workers: u64, rounds: u64) {
    check_end_block(trace);
    let values = child_values(out);
    let Some(parsed) = judge(trace) else { return };
    assert_eq!(parsed.header.version, 5);
    assert_eq!(parsed.header.cycle_frequency.to_string(), values["FREQ"]);
    let pid: u32 = values["PID"].parse().unwrap();
    assert!(parsed.records.iter().all(|r| r.process == Some(pid)));

    let threads = by_thread(&parsed.records);
    assert_eq!(threads.len() as u64, workers + 1, "workers and main");
    let leaf_id: u32 = values["LEAF"].parse().unwrap();
    let mut seen = Vec::new();
    for recs in threads.values() {
        if recs.len() == 2 {
            // main: its scope around the workers
            assert_eq!(recs[0].kind, "function-enter");
            assert_eq!(recs[1].kind, "function-exit");
            continue;
        }
        let t = recs.iter().find(|r| !r.args.is_empty()).unwrap().args[0] / 1000;
        let got: Vec<_> = recs.iter().map(shape).collect();
        assert_same_seq(&got, &expected_workload(t, rounds, leaf_id), "workload");
        seen.push(t);
    }
    seen.sort();
    assert_eq!(seen, (0..workers).collect::<Vec<_>>());

    // Names: the names file symbolizes both kinds of id for account and stack.
    let tool = llvm_xray().unwrap();
    let names = names_of(trace);
    let instr_map = format!("--instr_map={}", names.display());
    let account = xray_ok(
        &tool,
        &["account", "-k", &instr_map, trace.to_str().unwrap()],
    );
    // `account` does not sort records across threads and skips (with -k) those
    // older than the first one it read, so its counts depend on thread order in
    // the file (a known llvm-xray 14 limitation): check the names it shows.
    for name in ["xray_common::leaf", "outer", "with_arg"] {
        assert!(
            account.lines().any(|l| l.ends_with(name)),
            "no {name} in\n{account}"
        );
    }
    // `stack` follows each thread: exact counts per call stack.
    let stack = xray_ok(
        &tool,
        &[
            "stack",
            "--aggregate-threads",
            &instr_map,
            trace.to_str().unwrap(),
        ],
    );
    let count_of = |name: &str| -> u64 {
        let line = stack
            .lines()
            .find(|l| l.starts_with('#') && l.contains(name))
            .unwrap_or_else(|| panic!("no {name} in\n{stack}"));
        line.split_whitespace()
            .rev()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap()
    };
    for name in ["xray_common::leaf", "outer", "with_arg"] {
        assert_eq!(count_of(name), workers * rounds, "{name} in\n{stack}");
    }
    assert_eq!(count_of("main scope"), 1, "{stack}");
    let flame = xray_ok(
        &tool,
        &[
            "stack",
            "-all-stacks",
            "-stack-format=flame",
            "-m",
            names.to_str().unwrap(),
            trace.to_str().unwrap(),
        ],
    );
    assert!(
        flame
            .lines()
            .any(|l| l.contains(";outer;with_arg;") && l.contains("xray_common::leaf")),
        "{flame}"
    );
}
/// Compares two sequences and reports the first difference briefly.
pub fn assert_same_seq<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: first difference at {i}: got {:?}, want {:?}",
            &got[i..(i + 3).min(got.len())],
            &want[i..(i + 3).min(want.len())]
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
}

/// A whole trace of the runtime ends with its end block, which `llvm-xray` reads
/// as a block with no event: `convert` gives the same records with or without
/// it, and `fdr-dump --verify` accepts both. Cut at any buffer boundary (before
/// each BufferExtents record, the end block's included), the trace verifies with
/// llvm-xray but the core's verifier reports it cut short at the cut, with the
/// buffers before it. Returns the buffers of the whole trace.
pub fn check_end_block(trace: &Path) -> usize {
    use flightrec::core::fdr::decoder::{verify, DecodeErrorKind, Decoded, Decoder};
    use flightrec::core::fdr::records::Record as FdrRecord;

    let bytes = std::fs::read(trace).unwrap();
    let summary = verify(&bytes).unwrap_or_else(|e| panic!("{}: {e}", trace.display()));
    assert!(summary.end_block, "{}: no end block", trace.display());
    let starts: Vec<usize> = Decoder::new(&bytes)
        .unwrap()
        .filter_map(|d| match d.unwrap() {
            Decoded {
                offset,
                record: FdrRecord::BufferExtents { .. },
            } => Some(offset),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts.len(),
        summary.buffers + 1,
        "buffers and the end block"
    );
    for (k, &at) in starts.iter().enumerate() {
        let err = verify(&bytes[..at]).unwrap_err();
        assert_eq!(
            (err.offset, err.kind),
            (at, DecodeErrorKind::CutShort { buffers: k }),
            "{} cut at byte {at}: {err}",
            trace.display()
        );
    }
    if let Some(tool) = llvm_xray() {
        let cut = trace.with_extension("without-end-block");
        std::fs::write(&cut, &bytes[..*starts.last().unwrap()]).unwrap();
        let yaml = |f: &Path| {
            let f = f.to_str().unwrap();
            xray_ok(&tool, &["fdr-dump", "--verify", f]);
            xray_ok(&tool, &["convert", "--output-format=yaml", f])
        };
        assert_eq!(yaml(trace), yaml(&cut), "the end block adds no record");
        std::fs::remove_file(&cut).unwrap();
    }
    summary.buffers
}
