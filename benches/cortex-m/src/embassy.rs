//! The embassy backend's hooks (`flightrec-embassy`), called as embassy-executor
//! calls them (its `extern "Rust"` declarations), into thread mode's ring of
//! per-context recorders of their own: what each hook costs beside a record
//! through the global recorder (`bench_context_pair`).

use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextRecorders, CortexMContexts};
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
use flightrec_core::fdr::writer::WriterConfig;

use crate::now;

fn read_counter() -> u32 {
    now() as u32
}

/// The same shared clock as the context entries' (`paths::SHARED_CLOCK`).
static CLOCK: TimerClock = TimerClock::new(read_counter, 32, 48_000_000);
flightrec_core::static_clock!(
    /// `CLOCK` as a zero-sized clock.
    Time = CLOCK
);
static TASKS: ContextRecorders<1, CortexMContexts, Time> =
    ContextRecorders::new(CortexMContexts::new(), Time);
flightrec_embassy::embassy_trace!(TASKS);

/// 2 × 8 KiB: the runner's longest run (2 × 128 typed events of 24 bytes)
/// stays in one buffer.
static RING: StaticRing<2, { 8 * 1024 }, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);

extern "Rust" {
    fn _embassy_trace_poll_start(executor_id: u32);
    fn _embassy_trace_task_new(executor_id: u32, task_id: u32);
    fn _embassy_trace_task_end(executor_id: u32, task_id: u32);
    fn _embassy_trace_task_exec_begin(executor_id: u32, task_id: u32);
    fn _embassy_trace_task_exec_end(executor_id: u32, task_id: u32);
    fn _embassy_trace_task_ready_begin(executor_id: u32, task_id: u32);
    fn _embassy_trace_executor_idle(executor_id: u32);
}

/// An executor's and a task's ids as embassy passes them: RAM addresses.
const EXECUTOR: u32 = 0x2000_0100;
const TASK: u32 = 0x2000_0a48;

/// Installs thread mode's ring, runs `f` `n` times, and returns the buffers
/// finished plus the records lost (0 in steady state).
#[inline(always)]
fn run(n: u32, f: impl Fn()) -> u32 {
    if let Ok(rec) = RING.take_recorder(RecorderConfig::new(WriterConfig::new(1), 48_000_000)) {
        let _ = TASKS.install(Context::THREAD_MODE, rec);
    }
    for _ in 0..n {
        f();
    }
    let lost = TASKS.stats();
    RING.stats().buffers_finished + lost.refused + lost.unrouted
}

/// `n` polls: `task_exec_begin` + `task_exec_end` (a function record each).
#[no_mangle]
pub extern "C" fn bench_embassy_poll(n: u32) -> u32 {
    // SAFETY: the hooks are safe functions defined by `embassy_trace!` above.
    run(n, || unsafe {
        _embassy_trace_task_exec_begin(EXECUTOR, TASK);
        _embassy_trace_task_exec_end(EXECUTOR, TASK);
    })
}

/// `n` passes: `poll_start` + `executor_idle` (a function record each).
#[no_mangle]
pub extern "C" fn bench_embassy_pass(n: u32) -> u32 {
    // SAFETY: as above.
    run(n, || unsafe {
        _embassy_trace_poll_start(EXECUTOR);
        _embassy_trace_executor_idle(EXECUTOR);
    })
}

/// `n` wake-ups: `task_ready_begin` (a typed event of 8 bytes).
#[no_mangle]
pub extern "C" fn bench_embassy_ready(n: u32) -> u32 {
    // SAFETY: as above.
    run(n, || unsafe {
        _embassy_trace_task_ready_begin(EXECUTOR, TASK)
    })
}

/// `n` spawns and ends: `task_new` + `task_end` (a typed event each).
#[no_mangle]
pub extern "C" fn bench_embassy_spawn_end(n: u32) -> u32 {
    // SAFETY: as above.
    run(n, || unsafe {
        _embassy_trace_task_new(EXECUTOR, TASK);
        _embassy_trace_task_end(EXECUTOR, TASK);
    })
}

/// The entries, kept by the linker script even though nothing calls them.
#[used]
#[link_section = ".bench_entries"]
static ENTRIES: [extern "C" fn(u32) -> u32; 4] = [
    bench_embassy_poll,
    bench_embassy_pass,
    bench_embassy_ready,
    bench_embassy_spawn_end,
];
