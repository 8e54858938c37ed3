//! Per-context recorders: each record reaches the ring of the context that made it,
//! a context preempted while recording is never written into by the one that
//! preempts it, and every record that reaches no ring is counted and then marked
//! in a trace. Threads stand in for contexts; the busy flag's compare-and-swap
//! makes sharing one context between threads safe (and Miri checks it).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextError, ContextRecorders, ContextSource, Lost};
use flightrec_core::fdr::decoder::{verify, Decoder};
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::ring::{Consumer, Policy, RecorderConfig, LOSS_EVENT_TYPE};
use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId};
use flightrec_core::global::GlobalRecorder;

const TICKS: u64 = 1_000_000;

thread_local! {
    /// The context this thread stands for.
    static RUNNING: Cell<u16> = const { Cell::new(0) };
}

fn running() -> Context {
    Context::new(RUNNING.with(Cell::get))
}

fn set_running(c: Context) {
    RUNNING.with(|r| r.set(c.get()));
}

/// A clock that moves one tick per reading, shared by every context.
static TIME: AtomicU64 = AtomicU64::new(1);
fn read_time() -> u32 {
    TIME.fetch_add(1, Ordering::Relaxed) as u32
}
static CLOCK: TimerClock = TimerClock::new(read_time, 32, TICKS);

type Recorders<const N: usize> = ContextRecorders<N, fn() -> Context, &'static TimerClock>;

fn cfg(tid: u32) -> RecorderConfig {
    RecorderConfig::new(WriterConfig::new(tid), TICKS)
}

fn f(id: u32) -> FunctionId {
    FunctionId::new(id).unwrap()
}

/// The FDR file a consumer's buffers make, checked, and its function records
/// (thread id, action, function id) and the sum of its loss markers.
fn drain(
    tid: u32,
    consumer: &mut Consumer<'static, 'static>,
    size: usize,
) -> (Vec<(FunctionAction, u32)>, u64) {
    let mut file = cfg(tid).file_header(size).to_bytes().to_vec();
    while let Some(b) = consumer.pop() {
        file.extend_from_slice(&b);
    }
    verify(&file).unwrap_or_else(|e| panic!("{e:?}"));
    let mut calls = Vec::new();
    let mut lost = 0;
    for d in Decoder::new(&file).unwrap() {
        match d.unwrap().record {
            Record::Function { action, id, .. } => calls.push((action, id.get())),
            Record::TypedEvent {
                event_type,
                payload,
                ..
            } if event_type == LOSS_EVENT_TYPE => {
                let text = std::str::from_utf8(payload).unwrap();
                lost += text
                    .trim_start_matches("flightrec: lost ")
                    .trim_end_matches(" records")
                    .parse::<u64>()
                    .unwrap();
            }
            _ => {}
        }
    }
    (calls, lost)
}

#[test]
fn each_record_reaches_the_ring_of_its_context() {
    static TRACE: Recorders<3> = ContextRecorders::new(running, &CLOCK);
    static MAIN: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
    static TIMER: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
    static UART: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
    let (main, timer, uart) = (
        Context::THREAD_MODE,
        Context::priority(0x40),
        Context::priority(0x80),
    );
    TRACE
        .install(main, MAIN.take_recorder(cfg(0)).unwrap())
        .unwrap();
    TRACE
        .install(timer, TIMER.take_recorder(cfg(1)).unwrap())
        .unwrap();
    TRACE
        .install(uart, UART.take_recorder(cfg(2)).unwrap())
        .unwrap();

    // Thread mode calls 1, the timer (preempting it) calls 2, the UART handler
    // (preempting the timer) calls 3; each unwinds in turn.
    set_running(main);
    TRACE.record_function(FunctionAction::Enter, f(1));
    set_running(timer);
    TRACE.record_function(FunctionAction::Enter, f(2));
    set_running(uart);
    TRACE.record_function(FunctionAction::Enter, f(3));
    TRACE.record_function(FunctionAction::Exit, f(3));
    set_running(timer);
    TRACE.record_function(FunctionAction::Exit, f(2));
    set_running(main);
    TRACE.record_function(FunctionAction::Exit, f(1));
    TRACE.flush_all();
    assert_eq!(TRACE.stats().unrouted + TRACE.stats().refused, 0);

    for (tid, ring, id) in [(0, &MAIN, 1), (1, &TIMER, 2), (2, &UART, 3)] {
        let (calls, lost) = drain(tid, &mut ring.take_consumer().unwrap(), 512);
        assert_eq!(
            calls,
            [(FunctionAction::Enter, id), (FunctionAction::Exit, id)]
        );
        assert_eq!(lost, 0);
    }
}

/// A context without a ring (a ring installed for the wrong priority): its
/// records are counted by context, not charged to thread mode's trace, and the
/// ordinary drain (`flush_one`, no `flush_all`) brings the counts to the
/// receiver in the counters frame, which names the context.
#[test]
fn a_context_without_a_ring_is_counted_per_context_and_drained_to_the_host() {
    use flightrec_core::link::{FrameKind, LinkStats, LinkWriter, NoRingCount};
    use flightrec_testkit::link_wire::decode_frames;

    static TRACE: Recorders<2> = ContextRecorders::new(running, &CLOCK);
    static MAIN: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);

    // Before any ring is installed: nothing to write into, counted.
    set_running(Context::THREAD_MODE);
    assert_eq!(
        TRACE.record_in(Context::THREAD_MODE, FunctionAction::Enter, f(1)),
        Err(Lost::Unrouted)
    );
    TRACE.flush_all(); // no recorder: the count stays
    assert_eq!(TRACE.stats().unrouted, 1);

    let mut outlet = TRACE.install_ring(Context::THREAD_MODE, 1, &MAIN).unwrap();
    set_running(Context::priority(0xe0)); // a handler nobody gave a ring
    for _ in 0..540 {
        TRACE.record_function(FunctionAction::Enter, f(2));
    }
    assert_eq!(TRACE.stats().unrouted, 541);
    set_running(Context::THREAD_MODE);
    TRACE.record_function(FunctionAction::Enter, f(1));
    // The idle loop's drain, after the recorder handed its buffer over (a
    // `flush_all` only for the buffer: the counts do not need it).
    TRACE
        .with_recorder(Context::THREAD_MODE, |r| r.flush())
        .unwrap();
    let mut link = LinkWriter::new(Vec::new());
    assert_eq!(
        link.flush_one(&mut outlet.source, &mut outlet.consumer),
        Ok(true)
    );

    // Not charged to thread mode.
    assert_eq!(
        TRACE.with_recorder(Context::THREAD_MODE, |r| r.records_dropped()),
        Ok(0)
    );
    let stats: Vec<_> = decode_frames(&link.into_inner())
        .0
        .into_iter()
        .filter(|(head, _)| head.kind == FrameKind::Stats)
        .map(|(_, payload)| payload)
        .collect();
    assert_eq!(stats.len(), 1);
    let counters = LinkStats::parse(&stats[0]).unwrap();
    assert_eq!(counters.ring.records_dropped, 0);
    let counts: Vec<_> = NoRingCount::parse_all(&stats[0][LinkStats::LEN..])
        .unwrap()
        .map(|c| (c.context.map(|c| c.to_string()), c.records))
        .collect();
    assert_eq!(
        counts,
        [
            (Some("thread mode".to_string()), 1),
            (Some("interrupt priority 0xe0".to_string()), 540),
        ]
    );
}

#[test]
fn a_context_never_writes_into_a_recorder_that_is_in_use() {
    static TRACE: Recorders<2> = ContextRecorders::new(running, &CLOCK);
    static LOW: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
    static HIGH: StaticRing<4, 512> = StaticRing::new(Policy::Streaming);
    let (low, high) = (Context::priority(0xc0), Context::priority(0x40));
    TRACE
        .install(low, LOW.take_recorder(cfg(1)).unwrap())
        .unwrap();
    TRACE
        .install(high, HIGH.take_recorder(cfg(2)).unwrap())
        .unwrap();

    // While `low`'s recorder is in use (the idle loop flushing it, or a handler
    // mid-record), a record in `low` arrives (a source that maps two preempting
    // handlers to one context): refused and counted. `high` records as usual.
    let inner = TRACE.with_recorder(low, |r| {
        r.flush();
        (
            TRACE.record_in(low, FunctionAction::Enter, f(7)),
            TRACE.record_in(high, FunctionAction::Enter, f(8)),
        )
    });
    assert_eq!(inner, Ok((Err(Lost::Refused), Ok(()))));
    assert_eq!(
        TRACE.with_recorder(low, |_| TRACE.with_recorder(low, |_| ())),
        Ok(Err(ContextError::InUse))
    );
    assert_eq!(TRACE.stats().refused, 1);

    TRACE.flush_all();
    let (low_calls, low_lost) = drain(1, &mut LOW.take_consumer().unwrap(), 512);
    let (high_calls, high_lost) = drain(2, &mut HIGH.take_consumer().unwrap(), 512);
    assert!(low_calls.is_empty());
    assert_eq!(high_calls, [(FunctionAction::Enter, 8)]);
    assert_eq!(low_lost + high_lost, 1, "the refused record is marked once");
}

#[test]
fn installs_are_checked() {
    static TRACE: Recorders<1> = ContextRecorders::new(running, &CLOCK);
    static A: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    static B: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    static C: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    TRACE
        .install(Context::THREAD_MODE, A.take_recorder(cfg(0)).unwrap())
        .unwrap();
    assert_eq!(
        TRACE.install(Context::THREAD_MODE, B.take_recorder(cfg(0)).unwrap()),
        Err(ContextError::AlreadyInstalled)
    );
    assert_eq!(
        TRACE.install(Context::NMI, C.take_recorder(cfg(0)).unwrap()),
        Err(ContextError::Full)
    );
}

/// Threads that all claim to be one context (what a wrong source on a multi-core
/// part does): records are written or refused, never both at once; every attempt
/// is accounted for and the trace verifies.
#[test]
#[cfg_attr(
    feature = "unsafe-assume-single-core",
    ignore = "the feature promises one core, which threads break"
)]
fn threads_sharing_a_context_lose_nothing_uncounted() {
    static TRACE: Recorders<1> = ContextRecorders::new(running, &CLOCK);
    static SHARED: StaticRing<8, 4096, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
    static WRITTEN: AtomicU32 = AtomicU32::new(0);
    TRACE
        .install(Context::THREAD_MODE, SHARED.take_recorder(cfg(0)).unwrap())
        .unwrap();
    let per_thread = if cfg!(miri) { 50 } else { 20_000 };
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                set_running(Context::THREAD_MODE);
                for i in 0..per_thread {
                    let action = if i % 2 == 0 {
                        FunctionAction::Enter
                    } else {
                        FunctionAction::Exit
                    };
                    if TRACE.record_in(Context::THREAD_MODE, action, f(1)).is_ok() {
                        WRITTEN.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let written = u64::from(WRITTEN.load(Ordering::Relaxed));
    let refused = u64::from(TRACE.stats().refused);
    assert_eq!(written + refused, 4 * per_thread);
    let dropped = TRACE
        .with_recorder(Context::THREAD_MODE, |r| r.records_dropped())
        .unwrap();
    assert_eq!(dropped, 0, "a flight recorder overwrites, it does not drop");
    // The ring's buffers form a valid trace.
    let mut file = cfg(0).file_header(4096).to_bytes().to_vec();
    TRACE
        .with_recorder(Context::THREAD_MODE, |r| {
            r.for_each_buffer(|b| file.extend_from_slice(b))
        })
        .unwrap();
    verify(&file).unwrap_or_else(|e| panic!("{e:?}"));
}

/// A `ContextSource` can be any type; the recorders take it by reference too.
#[test]
fn a_source_by_reference() {
    struct Fixed(Context);
    impl ContextSource for Fixed {
        fn current(&self) -> Context {
            self.0
        }
    }
    static SOURCE: Fixed = Fixed(Context::new(9));
    static TRACE: ContextRecorders<1, &Fixed, &TimerClock> = ContextRecorders::new(&SOURCE, &CLOCK);
    static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    TRACE
        .install(Context::new(9), RING.take_recorder(cfg(9)).unwrap())
        .unwrap();
    TRACE.record_function(FunctionAction::Enter, f(4));
    TRACE.flush_all();
    let (calls, _) = drain(9, &mut RING.take_consumer().unwrap(), 256);
    assert_eq!(calls, [(FunctionAction::Enter, 4)]);
}

/// Records through the per-context path on a 16-bit timer whose readings cross
/// half periods of the counter (the shared clock stores its count then), into
/// buffers that fill (the recorder switches): every function record's time, as
/// the trace gives it back, is the extended timer's. Both are the record path's
/// out-of-line cases, which read the clock again.
#[test]
fn context_records_keep_their_time_across_half_periods_and_buffers() {
    static TIMER: AtomicU32 = AtomicU32::new(0);
    fn read_timer() -> u32 {
        TIMER.load(Ordering::Relaxed)
    }
    static CLOCK16: TimerClock = TimerClock::new(read_timer, 16, TICKS);
    fn thread_mode() -> Context {
        Context::THREAD_MODE
    }
    static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
        ContextRecorders::new(thread_mode, &CLOCK16);
    static RING: StaticRing<4, 256> = StaticRing::new(Policy::Streaming);
    TRACE
        .install(Context::THREAD_MODE, RING.take_recorder(cfg(7)).unwrap())
        .unwrap();
    let mut consumer = RING.take_consumer().unwrap();
    let mut file = cfg(7).file_header(256).to_bytes().to_vec();
    let mut expected = Vec::new();
    let mut now = 0u64;
    let n = if cfg!(miri) { 300 } else { 3_000u64 };
    for i in 0..n {
        // Steps from 1 tick to just under half the counter's period.
        now += 1 + (i * 7_919) % 30_000;
        TIMER.store(now as u32 & 0xFFFF, Ordering::Relaxed);
        let action = if i % 2 == 0 {
            FunctionAction::Enter
        } else {
            FunctionAction::Exit
        };
        TRACE.record_in(Context::THREAD_MODE, action, f(3)).unwrap();
        expected.push(now);
        while let Some(b) = consumer.pop() {
            file.extend_from_slice(&b);
        }
    }
    TRACE.flush_all();
    while let Some(b) = consumer.pop() {
        file.extend_from_slice(&b);
    }
    verify(&file).unwrap_or_else(|e| panic!("{e:?}"));
    let mut at = 0u64;
    let mut times = Vec::new();
    for d in Decoder::new(&file).unwrap() {
        match d.unwrap().record {
            Record::NewCpuId { tsc, .. } | Record::TscWrap { tsc } => at = tsc,
            Record::Function { delta, .. } => {
                at += u64::from(delta);
                times.push(at);
            }
            _ => {}
        }
    }
    assert_eq!(times.len(), expected.len());
    assert_eq!(times, expected);
    assert!(
        RING.stats().buffers_finished > 10,
        "the run switched buffers"
    );
}
