//! Arbitrary writer operations into small rings: no panic, what comes out always
//! verifies, and it decodes back to the operations the recorder accepted.
//!
//! Every record is rebuilt from the decoded stream with its absolute TSC and CPU
//! (NewCPUId and TSCWrap set the base, deltas advance it). In streaming mode
//! without elision that is exactly the accepted operations, in order; with
//! short-call elision or a flight recorder that overwrites buffers it is a
//! subsequence of them. The ring's loss markers are taken out first, and the
//! records they announce lost never exceed the recorder's count of drops.
#![no_main]

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::{verify, Decoder};
use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot, LOSS_EVENT_TYPE};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
use libfuzzer_sys::fuzz_target;

/// The text of a loss marker's payload, before the count.
const LOSS_PREFIX: &[u8] = b"flightrec: lost ";

/// One record as the caller gave it: absolute time and CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    Function {
        action: FunctionAction,
        id: u32,
        tsc: u64,
        cpu: u16,
    },
    Argument(u64),
    Custom {
        tsc: u64,
        cpu: u16,
        payload: Vec<u8>,
    },
    Typed {
        tsc: u64,
        cpu: u16,
        event_type: u16,
        payload: Vec<u8>,
    },
}

/// Rebuilds the items of a verified file, and sums the counts of its loss markers.
fn decode_items(file: &[u8], version: Version) -> (Vec<Item>, u64) {
    let mut items = Vec::new();
    let mut lost = 0u64;
    let (mut base, mut cpu) = (0u64, 0u16);
    let decoder = Decoder::new(file).expect("verified file has a header");
    for decoded in decoder {
        let record = decoded.expect("verified file decodes").record;
        match record {
            Record::NewCpuId { cpu: c, tsc } => (base, cpu) = (tsc, c),
            Record::TscWrap { tsc } => base = tsc,
            Record::Function { action, id, delta } => {
                base = base.wrapping_add(u64::from(delta));
                items.push(Item::Function {
                    action,
                    id: id.get(),
                    tsc: base,
                    cpu,
                });
            }
            Record::CallArgument { value } => items.push(Item::Argument(value)),
            Record::CustomEvent { time, payload } => {
                let tsc = match time {
                    CustomEventTime::Delta(d) => {
                        assert!(d >= 0, "custom event delta {d} goes back");
                        base = base.wrapping_add(d as u64);
                        base
                    }
                    CustomEventTime::Absolute { tsc, cpu: c } => {
                        let want = if version == Version::V4 { cpu } else { 0 };
                        assert_eq!(c, want, "custom event CPU");
                        tsc
                    }
                };
                if version < Version::V5 {
                    if let Some(n) = loss_count(payload) {
                        lost += n;
                        continue;
                    }
                }
                items.push(Item::Custom {
                    tsc,
                    cpu,
                    payload: payload.to_vec(),
                });
            }
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                assert!(delta >= 0, "typed event delta {delta} goes back");
                base = base.wrapping_add(delta as u64);
                if event_type == LOSS_EVENT_TYPE {
                    lost += loss_count(payload).expect("a loss marker's text");
                    continue;
                }
                items.push(Item::Typed {
                    tsc: base,
                    cpu,
                    event_type,
                    payload: payload.to_vec(),
                });
            }
            _ => {}
        }
    }
    (items, lost)
}

/// `N` of a `flightrec: lost N records` payload.
fn loss_count(payload: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(payload.strip_prefix(LOSS_PREFIX)?).ok()?;
    text.strip_suffix(" records")?.parse().ok()
}

fn is_subsequence(short: &[Item], long: &[Item]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|s| rest.any(|l| l == s))
}

fuzz_target!(|data: &[u8]| {
    let Some((&setup, ops)) = data.split_first() else {
        return;
    };
    let version = Version::from_number(u16::from(setup % 5) + 1).unwrap();
    let buffer_size = 64 + usize::from(setup / 5) * 8;
    let threshold = u64::from(setup & 3) * 7;
    let mut storage = vec![0u8; 2 * buffer_size];
    let slots = [Slot::NEW, Slot::NEW];
    let policy = if setup & 0x80 != 0 {
        Policy::Streaming
    } else {
        Policy::FlightRecorder
    };
    let Ok(mut ring) = Ring::new(&mut storage, &slots, policy) else {
        return;
    };
    let cfg = RecorderConfig::new(
        WriterConfig::new(1)
            .with_pid(2)
            .with_version(version)
            .with_threshold_ticks(threshold),
        1000,
    );
    let (mut rec, mut cons) = ring.split(cfg);
    let mut file = rec.file_header().to_bytes().to_vec();
    let mut accepted = Vec::new();
    let mut tsc = 0u64;
    for chunk in ops.chunks(4) {
        let [op, a, b, c] = match *chunk {
            [op, a, b, c] => [op, a, b, c],
            _ => break,
        };
        tsc = match op >> 5 {
            0 => tsc.wrapping_sub(u64::from(a)),
            1 => tsc.wrapping_add(u64::from(a) << 30),
            _ => tsc.wrapping_add(u64::from(a)),
        };
        let cpu = u16::from(b & 3);
        let ts = Timestamp { tsc, cpu };
        let id = FunctionId::new(u32::from(c)).unwrap();
        let payload = &ops[..usize::from(b) % (ops.len() + 1)];
        if version < Version::V5 && payload.starts_with(LOSS_PREFIX) {
            // Would read as one of the ring's loss markers.
            continue;
        }
        let args = [u64::from(a); 3];
        let args = &args[..usize::from(b % 4)];
        let function = |action| Item::Function {
            action,
            id: id.get(),
            tsc,
            cpu,
        };
        let (result, items) = match op & 7 {
            0 => (
                rec.function(FunctionAction::Enter, id, ts),
                vec![function(FunctionAction::Enter)],
            ),
            1 => (
                rec.function(FunctionAction::Exit, id, ts),
                vec![function(FunctionAction::Exit)],
            ),
            2 => (
                rec.function(FunctionAction::TailExit, id, ts),
                vec![function(FunctionAction::TailExit)],
            ),
            3 => (
                rec.function(FunctionAction::EnterArg, id, ts),
                vec![function(FunctionAction::EnterArg)],
            ),
            4 => (
                rec.enter_with_args(id, ts, args),
                std::iter::once(function(FunctionAction::EnterArg))
                    .chain(args.iter().map(|&v| Item::Argument(v)))
                    .collect(),
            ),
            5 => (
                rec.custom_event(ts, payload),
                vec![Item::Custom {
                    tsc,
                    cpu,
                    payload: payload.to_vec(),
                }],
            ),
            6 => (
                rec.typed_event(ts, u16::from(a), payload),
                vec![Item::Typed {
                    tsc,
                    cpu,
                    event_type: u16::from(a),
                    payload: payload.to_vec(),
                }],
            ),
            _ => {
                rec.flush();
                (Ok(()), vec![])
            }
        };
        if result.is_ok() {
            accepted.extend(items);
        }
        while let Some(buf) = cons.pop() {
            file.extend_from_slice(&buf);
        }
    }
    rec.for_each_buffer(|b| file.extend_from_slice(b));
    let dropped = rec.records_dropped();
    if file.len() <= 32 {
        assert!(accepted.is_empty(), "accepted records but wrote no buffer");
        return;
    }
    if let Err(e) = verify(&file) {
        panic!("writer output does not verify: {e}");
    }
    let (decoded, lost) = decode_items(&file, version);
    assert!(
        lost <= dropped,
        "markers announce {lost} lost records, {dropped} were dropped"
    );
    if policy == Policy::Streaming && threshold == 0 {
        assert_eq!(decoded, accepted, "the file is not the accepted records");
    } else {
        assert!(
            is_subsequence(&decoded, &accepted),
            "the file has records that were not accepted, or out of order:\n{decoded:?}\n{accepted:?}"
        );
    }
});
