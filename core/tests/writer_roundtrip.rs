//! Property tests: writer operations -> bytes -> decoder give back the same
//! operations, in every version, across buffer switches, TSC wraps, CPU changes and
//! clocks that go backwards; with short-call elision, what is missing is exactly
//! short, properly nested calls.

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::{verify, Decoder};
use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
use proptest::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Fn(FunctionAction, u32),
    EnterArgs(u32, Vec<u64>),
    Custom(Vec<u8>),
    Typed(u16, Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Event {
    op: Op,
    tsc: u64,
    cpu: u16,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let id = prop_oneof![0u32..8, Just(FunctionId::MAX)];
    prop_oneof![
        6 => (prop_oneof![Just(FunctionAction::Enter), Just(FunctionAction::Exit), Just(FunctionAction::TailExit)], id.clone())
            .prop_map(|(a, f)| Op::Fn(a, f)),
        1 => (id, prop::collection::vec(any::<u64>(), 0..4)).prop_map(|(f, a)| Op::EnterArgs(f, a)),
        1 => prop::collection::vec(any::<u8>(), 1..40).prop_map(Op::Custom),
        1 => (any::<u16>(), prop::collection::vec(any::<u8>(), 1..40)).prop_map(|(t, p)| Op::Typed(t, p)),
    ]
}

fn step_strategy() -> impl Strategy<Value = (u64, bool)> {
    // Mostly small steps; sometimes a step past 32 bits; sometimes backwards.
    (
        prop_oneof![
            8 => 0u64..3000,
            1 => (1u64 << 32)..(1u64 << 40),
            1 => Just(u64::MAX - 500), // wraps: the clock goes backwards
        ],
        prop::bool::weighted(0.05),
    )
}

fn events_strategy() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((op_strategy(), step_strategy(), 0u16..4), 1..300).prop_map(|v| {
        let mut tsc = 1_000u64;
        let mut cpu = 0u16;
        v.into_iter()
            .map(|(op, (step, migrate), new_cpu)| {
                tsc = tsc.wrapping_add(step);
                if migrate {
                    cpu = new_cpu;
                }
                Event { op, tsc, cpu }
            })
            .collect()
    })
}

fn version_strategy() -> impl Strategy<Value = Version> {
    prop_oneof![
        Just(Version::V1),
        Just(Version::V2),
        Just(Version::V3),
        Just(Version::V4),
        Just(Version::V5)
    ]
}

/// Writes the events through a streaming ring of `buffer_size` buffers, draining it
/// after every record, and returns the whole file.
fn write_file(events: &[Event], version: Version, buffer_size: usize, threshold: u64) -> Vec<u8> {
    let mut storage = vec![0u8; 3 * buffer_size];
    let slots = [Slot::NEW, Slot::NEW, Slot::NEW];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let cfg = RecorderConfig::new(
        WriterConfig::new(77)
            .with_pid(5)
            .with_version(version)
            .with_threshold_ticks(threshold),
        1_000_000,
    );
    let (mut rec, mut cons) = ring.split(cfg);
    let mut file = rec.file_header().to_bytes().to_vec();
    for e in events {
        let ts = Timestamp {
            tsc: e.tsc,
            cpu: e.cpu,
        };
        let r = match &e.op {
            Op::Fn(a, f) => rec.function(*a, FunctionId::new(*f).unwrap(), ts),
            Op::EnterArgs(f, args) => rec.enter_with_args(FunctionId::new(*f).unwrap(), ts, args),
            Op::Custom(p) => rec.custom_event(ts, p),
            Op::Typed(t, p) => rec.typed_event(ts, *t, p),
        };
        r.expect("every generated record fits a buffer");
        while let Some(b) = cons.pop() {
            file.extend_from_slice(&b);
        }
    }
    rec.flush();
    while let Some(b) = cons.pop() {
        file.extend_from_slice(&b);
    }
    assert_eq!(rec.records_dropped(), 0);
    file
}

/// Reads the events back the way a reader does: NewCPUId and TSCWrap set the base,
/// function records and (v5, or typed) events add their delta, arguments attach to
/// the preceding EnterArg.
fn read_events(file: &[u8]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    let mut base = 0u64;
    let mut cpu = 0u16;
    for d in Decoder::new(file).unwrap() {
        match d.unwrap().record {
            Record::NewCpuId { cpu: c, tsc } => {
                cpu = c;
                base = tsc;
            }
            Record::TscWrap { tsc } => base = tsc,
            Record::Function { action, id, delta } => {
                base = base.wrapping_add(u64::from(delta));
                let op = match action {
                    FunctionAction::EnterArg => Op::EnterArgs(id.get(), Vec::new()),
                    a => Op::Fn(a, id.get()),
                };
                out.push(Event { op, tsc: base, cpu });
            }
            Record::CallArgument { value } => match out.last_mut() {
                Some(Event {
                    op: Op::EnterArgs(_, args),
                    ..
                }) => args.push(value),
                other => panic!("argument after {other:?}"),
            },
            Record::CustomEvent { time, payload } => {
                let tsc = match time {
                    CustomEventTime::Delta(d) => {
                        base = base.wrapping_add(d as i64 as u64);
                        base
                    }
                    CustomEventTime::Absolute { tsc, .. } => tsc,
                };
                out.push(Event {
                    op: Op::Custom(payload.to_vec()),
                    tsc,
                    cpu,
                });
            }
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                base = base.wrapping_add(delta as i64 as u64);
                out.push(Event {
                    op: Op::Typed(event_type, payload.to_vec()),
                    tsc: base,
                    cpu,
                });
            }
            Record::NewBuffer { .. }
            | Record::Walltime { .. }
            | Record::Pid { .. }
            | Record::BufferExtents { .. }
            | Record::EndOfBuffer => {}
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn operations_round_trip(events in events_strategy(), version in version_strategy(),
                             buffer_size in prop_oneof![Just(256usize), Just(512), Just(4096)]) {
        let file = write_file(&events, version, buffer_size, 0);
        let summary = verify(&file);
        prop_assert!(summary.is_ok(), "{:?}", summary.err());
        prop_assert_eq!(read_events(&file), events);
    }

    #[test]
    fn elision_removes_only_short_nested_calls(events in events_strategy(),
                                               version in version_strategy(),
                                               threshold in 1u64..5000) {
        let file = write_file(&events, version, 512, threshold);
        let summary = verify(&file);
        prop_assert!(summary.is_ok(), "{:?}", summary.err());
        let kept = read_events(&file);
        prop_assert!(
            explained_by_elision(&events, &kept, threshold),
            "the output is not the input with whole short calls removed"
        );
    }
}

#[test]
fn elision_does_happen() {
    let mut events = Vec::new();
    let mut tsc = 100;
    for _ in 0..50 {
        for (a, f) in [
            (FunctionAction::Enter, 1),
            (FunctionAction::Enter, 2),
            (FunctionAction::Exit, 2),
            (FunctionAction::Exit, 1),
        ] {
            tsc += 10;
            events.push(Event {
                op: Op::Fn(a, f),
                tsc,
                cpu: 0,
            });
        }
    }
    let kept = read_events(&write_file(&events, Version::V5, 512, 25));
    // Every `2` call (10 ticks) goes; the `1` calls (30 ticks) stay.
    assert_eq!(kept.len(), 100);
    assert!(kept.iter().all(|e| matches!(e.op, Op::Fn(_, 1))));
}

/// Whether `kept` is `events` with some runs removed, each run a whole nest of
/// calls (an Enter, then its Exit or TailExit of the same function on the same
/// CPU less than `threshold` ticks later, with only such calls between). Which
/// of several equal records was kept cannot be told apart (an Enter, its Exit
/// and another Enter of the same function at the same time keep one Enter), so
/// every way of lining the two up is tried: `reach[i][k]` says that the first
/// `i` events can leave the first `k` kept records.
fn explained_by_elision(events: &[Event], kept: &[Event], threshold: u64) -> bool {
    let (n, m) = (events.len(), kept.len());
    let mut reach = vec![vec![false; m + 1]; n + 1];
    reach[0][0] = true;
    for i in 0..n {
        for k in 0..=m {
            if !reach[i][k] {
                continue;
            }
            if k < m && events[i] == kept[k] {
                reach[i + 1][k + 1] = true;
            }
            // A removed run from `i`: it may end wherever its calls are all closed.
            let mut open: Vec<usize> = Vec::new();
            for j in i..n {
                match events[j].op {
                    Op::Fn(FunctionAction::Enter, _) => open.push(j),
                    Op::Fn(FunctionAction::Exit | FunctionAction::TailExit, f) => {
                        let Some(e) = open.pop() else { break };
                        let closes = events[e].op == Op::Fn(FunctionAction::Enter, f)
                            && events[j].tsc.wrapping_sub(events[e].tsc) < threshold
                            && events[j].cpu == events[e].cpu;
                        if !closes {
                            break;
                        }
                    }
                    _ => break,
                }
                if open.is_empty() {
                    reach[j + 1][k] = true;
                }
            }
        }
    }
    reach[n][m]
}

#[test]
fn equal_records_are_lined_up_either_way() {
    let ev = |a, tsc| Event {
        op: Op::Fn(a, 7),
        tsc,
        cpu: 0,
    };
    let (enter, exit) = (FunctionAction::Enter, FunctionAction::Exit);
    // Enter, Exit, Enter at one time: the first call erased, the last Enter kept.
    let events = [ev(enter, 1000), ev(exit, 1000), ev(enter, 1000)];
    assert!(explained_by_elision(&events, &[ev(enter, 1000)], 1));
    // Enter, Enter, Exit: the inner call erased, the outer Enter kept.
    let events = [ev(enter, 1000), ev(enter, 1000), ev(exit, 1000)];
    assert!(explained_by_elision(&events, &[ev(enter, 1000)], 1));
    // What elision cannot do: drop an Enter or an Exit alone, or a call as long as
    // the threshold.
    assert!(!explained_by_elision(&events[..2], &[ev(enter, 1000)], 1));
    let long = [ev(enter, 1000), ev(exit, 1001), ev(enter, 1002)];
    assert!(!explained_by_elision(&long, &[ev(enter, 1002)], 1));
    assert!(explained_by_elision(&long, &[ev(enter, 1002)], 2));
    assert!(!explained_by_elision(&long, &[ev(exit, 1001)], 100));
}
