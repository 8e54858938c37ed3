//! A real embassy executor (`platform-std`) with the backend on: its tasks'
//! own counts (polls, spawns, ends) must be what the trace says, through the
//! host's summary (`flightrec_host::timeline::tasks`); the stream verifies with the core's
//! verifier and with `llvm-xray fdr-dump --verify` and `account` (where
//! installed); an instrumented call inside a poll nests under the task's poll.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::{Context as TaskContext, Poll};

use embassy_executor::{raw, Executor, Spawner};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::channel::Channel;
use embassy_sync::signal::Signal;
use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextRecorders};
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId};
use flightrec_core::global::record_function;
use flightrec_core::tasks::key;

/// A clock that moves one tick per reading: every record has its own time.
static TICKS: AtomicU64 = AtomicU64::new(0);
fn ticks() -> u32 {
    TICKS.fetch_add(1, Ordering::Relaxed) as u32
}
static CLOCK: TimerClock = TimerClock::new(ticks, 32, 1_000_000);
fn thread() -> Context {
    Context::THREAD_MODE
}
static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ContextRecorders::new(thread, &CLOCK);
flightrec_core::global_recorder!(TRACE);
flightrec_embassy::embassy_trace!(TRACE);
static RING: StaticRing<64, 4096> = StaticRing::new(Policy::Streaming);

/// One task's own counts, and its id (from its waker).
#[derive(Default)]
struct Counts {
    id: AtomicU32,
    polls: AtomicU32,
    spawns: AtomicU32,
    ends: AtomicU32,
}

impl Counts {
    const fn new() -> Self {
        Counts {
            id: AtomicU32::new(0),
            polls: AtomicU32::new(0),
            spawns: AtomicU32::new(0),
            ends: AtomicU32::new(0),
        }
    }
}

struct Counted<F> {
    counts: &'static Counts,
    inner: Pin<Box<F>>,
}

impl<F: Future<Output = ()>> Future for Counted<F> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let id = raw::task_from_waker(cx.waker()).id();
        self.counts.id.store(id, Ordering::Relaxed);
        self.counts.polls.fetch_add(1, Ordering::Relaxed);
        let done = self.inner.as_mut().poll(cx);
        if done.is_ready() {
            self.counts.ends.fetch_add(1, Ordering::Relaxed);
        }
        done
    }
}

fn counted<F: Future<Output = ()>>(counts: &'static Counts, f: F) -> Counted<F> {
    Counted {
        counts,
        inner: Box::pin(f),
    }
}

static PRODUCER: Counts = Counts::new();
static CONSUMER: Counts = Counts::new();
static YIELDER: Counts = Counts::new();
static ONCE: Counts = Counts::new();
static SUPERVISOR: Counts = Counts::new();
static CHANNEL: Channel<CriticalSectionRawMutex, u32, 2> = Channel::new();
static ONCE_DONE: Signal<CriticalSectionRawMutex, ()> = Signal::new();
static DONE: AtomicU32 = AtomicU32::new(0);
const MESSAGES: u32 = 20;
const YIELDS: u32 = 7;
const RESPAWNS: u32 = 3;

/// Inside a poll, as `#[flightrec::instrument]` records it.
fn crunch() {
    let id = FunctionId::new(1).unwrap();
    record_function(FunctionAction::Enter, id);
    record_function(FunctionAction::Exit, id);
}

struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[embassy_executor::task]
async fn producer() {
    counted(&PRODUCER, async {
        for i in 0..MESSAGES {
            CHANNEL.send(i).await;
        }
        DONE.fetch_add(1, Ordering::Relaxed);
    })
    .await
}

#[embassy_executor::task]
async fn consumer() {
    counted(&CONSUMER, async {
        for _ in 0..MESSAGES {
            CHANNEL.receive().await;
            crunch();
        }
        DONE.fetch_add(1, Ordering::Relaxed);
    })
    .await
}

#[embassy_executor::task]
async fn yielder() {
    counted(&YIELDER, async {
        for _ in 0..YIELDS {
            YieldOnce(false).await;
        }
        DONE.fetch_add(1, Ordering::Relaxed);
    })
    .await
}

#[embassy_executor::task]
async fn once() {
    counted(&ONCE, async { ONCE_DONE.signal(()) }).await
}

#[embassy_executor::task]
async fn supervisor(spawner: Spawner) {
    counted(&SUPERVISOR, async move {
        for _ in 0..RESPAWNS {
            ONCE.spawns.fetch_add(1, Ordering::Relaxed);
            spawner.spawn(once().unwrap());
            ONCE_DONE.wait().await;
            // `once` ends in the poll that signalled: wait for its end.
            YieldOnce(false).await;
        }
        DONE.fetch_add(1, Ordering::Relaxed);
    })
    .await
}

/// One test at a time uses the global recorder.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn counts_in_the_trace_are_the_tasks_own() {
    let _guard = SERIAL.lock().unwrap();
    let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
    let (recorder, mut consumer_half) = RING.split(cfg).unwrap();
    TRACE.install(Context::THREAD_MODE, recorder).unwrap();

    let executor: &'static mut Executor = Box::leak(Box::new(Executor::new()));
    executor.run_until(
        |spawner| {
            for c in [&PRODUCER, &CONSUMER, &YIELDER] {
                c.spawns.fetch_add(1, Ordering::Relaxed);
            }
            spawner.spawn(producer().unwrap());
            spawner.spawn(consumer().unwrap());
            spawner.spawn(yielder().unwrap());
            SUPERVISOR.spawns.fetch_add(1, Ordering::Relaxed);
            spawner.spawn(supervisor(spawner).unwrap());
        },
        || DONE.load(Ordering::Relaxed) == 4,
    );
    TRACE.flush_all();
    assert_eq!(TRACE.stats().unrouted + TRACE.stats().refused, 0);

    let mut file = cfg.file_header(RING.buffer_size()).to_bytes().to_vec();
    while let Some(b) = consumer_half.pop() {
        file.extend_from_slice(b.bytes());
    }
    let summary = flightrec_core::fdr::decoder::verify(&file).unwrap();
    assert!(summary.typed_events > 0);

    let s = flightrec_host::timeline::tasks::summarize_bytes(&[&file]).unwrap();
    assert_eq!((s.lost, s.unmatched), (0, 0));
    let mut seen = BTreeMap::new();
    for (name, c) in [
        ("producer", &PRODUCER),
        ("consumer", &CONSUMER),
        ("yielder", &YIELDER),
        ("once", &ONCE),
        ("supervisor", &SUPERVISOR),
    ] {
        let id = c.id.load(Ordering::Relaxed);
        let t = &s.tasks[&key(id)];
        let own = (
            c.spawns.load(Ordering::Relaxed),
            c.ends.load(Ordering::Relaxed),
            c.polls.load(Ordering::Relaxed),
        );
        assert_eq!(
            (t.spawns as u32, t.ends as u32, t.polls as u32),
            own,
            "{name}"
        );
        // Every poll was preceded by exactly one wake-up (the spawn's first).
        assert_eq!(t.wakes, t.polls, "{name}");
        assert_eq!(t.latency.count(), t.polls, "{name}");
        assert_eq!(t.id, Some(id));
        seen.insert(name, own);
    }
    assert_eq!(seen["once"], (RESPAWNS, RESPAWNS, RESPAWNS));
    assert_eq!(seen["yielder"].2, YIELDS + 1);
    // One executor, every pass closed, busy less than its span.
    assert_eq!(s.executors.len(), 1);
    let e = s.executors.values().next().unwrap();
    assert!(e.passes > 0 && e.idle_share() > 0.0 && e.idle_share() < 1.0);

    // The instrumented call nests in the consumer's polls: each of its
    // entries comes after a consumer poll's entry and before its exit.
    let trace = flightrec_host::read::trace::load(&file).unwrap();
    let consumer_poll = flightrec_core::tasks::poll_id(CONSUMER.id.load(Ordering::Relaxed)).get();
    let mut depth_in_consumer = 0i32;
    let mut nested = 0;
    for e in &trace.events {
        match (e.func_id, e.kind.is_enter(), e.kind.is_exit()) {
            (id, true, _) if id == consumer_poll => depth_in_consumer += 1,
            (id, _, true) if id == consumer_poll => depth_in_consumer -= 1,
            (1, true, _) => {
                assert_eq!(depth_in_consumer, 1, "crunch outside the consumer's poll");
                nested += 1;
            }
            _ => {}
        }
    }
    assert_eq!(nested, MESSAGES);

    // The real judge.
    if let Some(tool) = flightrec_testkit::xray_tool::llvm_xray() {
        let dir = std::env::temp_dir().join(format!("flightrec-embassy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tasks.xray");
        std::fs::write(&path, &file).unwrap();
        let p = path.to_str().unwrap();
        flightrec_testkit::xray_tool::xray_ok(&tool, &["fdr-dump", "--verify", p]);
        let account = flightrec_testkit::xray_tool::xray_ok(&tool, &["account", "-format=csv", p]);
        let polls = format!(
            "{consumer_poll},{},",
            CONSUMER.polls.load(Ordering::Relaxed)
        );
        assert!(account.lines().any(|l| l.starts_with(&polls)), "{account}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
