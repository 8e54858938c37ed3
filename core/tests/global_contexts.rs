//! Per-context recorders as the program's global recorder: what
//! `global::record_function` passes through the link-time symbol (the action and
//! the id as the record's low word) reaches the context's ring as the same action
//! and id, for every action, the largest id, with and without a short-call
//! threshold, across buffer switches; a context without a ring is counted.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextRecorders};
use flightrec_core::fdr::decoder::{verify, Decoder};
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId};
use flightrec_core::global::record_function;

const TICKS: u64 = 1_000_000;

thread_local! {
    static RUNNING: Cell<u16> = const { Cell::new(0) };
}

fn running() -> Context {
    Context::new(RUNNING.with(Cell::get))
}

/// Ten ticks per reading, so a threshold of 5 erases nothing.
static TIME: AtomicU64 = AtomicU64::new(1);
fn read_time() -> u32 {
    TIME.fetch_add(10, Ordering::Relaxed) as u32
}
static CLOCK: TimerClock = TimerClock::new(read_time, 32, TICKS);

static TRACE: ContextRecorders<2, fn() -> Context, &'static TimerClock> =
    ContextRecorders::new(running, &CLOCK);
flightrec_core::global_recorder!(TRACE);

static PLAIN: StaticRing<4, 256> = StaticRing::new(Policy::Streaming);
static ELIDING: StaticRing<4, 256> = StaticRing::new(Policy::Streaming);

const ACTIONS: [FunctionAction; 4] = [
    FunctionAction::Enter,
    FunctionAction::Exit,
    FunctionAction::TailExit,
    FunctionAction::EnterArg,
];

#[test]
fn the_low_word_through_the_symbol_keeps_every_action_and_id() {
    let plain = Context::new(0);
    let eliding = Context::new(1);
    let cfg = |tid, threshold| {
        RecorderConfig::new(
            WriterConfig::new(tid).with_threshold_ticks(threshold),
            TICKS,
        )
    };
    TRACE
        .install(plain, PLAIN.take_recorder(cfg(1, 0)).unwrap())
        .unwrap();
    TRACE
        .install(eliding, ELIDING.take_recorder(cfg(2, 5)).unwrap())
        .unwrap();

    let ids = [1, 2, 0xabc_def, FunctionId::MAX];
    let mut expected = Vec::new();
    // 80 records of 8 bytes: more than one 256-byte buffer each.
    for round in 0..20 {
        for (i, action) in ACTIONS.into_iter().enumerate() {
            let id = ids[(round + i) % ids.len()];
            expected.push((action, id));
            for context in [plain, eliding] {
                RUNNING.with(|r| r.set(context.get()));
                record_function(action, FunctionId::new(id).unwrap());
            }
        }
    }
    RUNNING.with(|r| r.set(7));
    record_function(FunctionAction::Enter, FunctionId::new(1).unwrap());
    assert_eq!(TRACE.stats().unrouted, 1);
    assert_eq!(TRACE.stats().refused, 0);
    RUNNING.with(|r| r.set(0));
    TRACE.flush_all();

    for (tid, ring, threshold) in [(1, &PLAIN, 0), (2, &ELIDING, 5)] {
        let mut consumer = ring.take_consumer().unwrap();
        let mut file = cfg(tid, threshold).file_header(256).to_bytes().to_vec();
        while let Some(b) = consumer.pop() {
            file.extend_from_slice(&b);
        }
        verify(&file).unwrap_or_else(|e| panic!("{e:?}"));
        let calls: Vec<_> = Decoder::new(&file)
            .unwrap()
            .filter_map(|d| match d.unwrap().record {
                Record::Function { action, id, .. } => Some((action, id.get())),
                _ => None,
            })
            .collect();
        assert_eq!(calls, expected, "thread {tid}");
    }
}
