//! A flightrec backend for [embassy-executor]'s `trace` feature: every task's
//! polls, wake-ups, spawns and end, and each executor's busy and idle time, as
//! LLVM XRay FDR records in the ring of the context that runs them.
//!
//! One line turns it on, beside the program's global recorder:
//!
//! ```
//! # use flightrec_core::clock::TimerClock;
//! # use flightrec_core::context::{Context, ContextRecorders};
//! # fn thread_mode() -> Context { Context::THREAD_MODE }
//! # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000_000);
//! # static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
//! #     ContextRecorders::new(thread_mode, &CLOCK);
//! flightrec_core::global_recorder!(TRACE);
//! flightrec_embassy::embassy_trace!(TRACE);
//! ```
//!
//! with `embassy-executor`'s feature `trace`. [`embassy_trace!`] defines the
//! seven hooks the executor calls (`_embassy_trace_task_new`,
//! `_embassy_trace_task_ready_begin`, `_embassy_trace_poll_start`,
//! `_embassy_trace_task_exec_begin`, `_embassy_trace_task_exec_end`,
//! `_embassy_trace_executor_idle`, `_embassy_trace_task_end`); each writes one
//! record into the running context's ring through the program's
//! [`ContextRecorders`], with no allocation, no lock and no critical section
//! (a context without a ring, or whose ring is in use, has the record counted
//! as lost, as every other record).
//!
//! The records ([`flightrec_core::tasks`], `docs/format.md`):
//!
//! | hook | record |
//! |---|---|
//! | `poll_start(executor)` | function `Enter` of [`pass_id`]`(executor)` |
//! | `task_exec_begin(executor, task)` | function `Enter` of [`poll_id`]`(task)` |
//! | `task_exec_end(executor, task)` | function `Exit` of [`poll_id`]`(task)` |
//! | `executor_idle(executor)` | function `Exit` of [`pass_id`]`(executor)` |
//! | `task_new(executor, task)` | typed event `Spawn`, both ids |
//! | `task_ready_begin(executor, task)` | typed event `Ready`, both ids |
//! | `task_end(executor, task)` | typed event `End`, both ids |
//!
//! A poll is a slice that every FDR reader shows (`llvm-xray account`, `stack`,
//! `flightrec convert`), and `#[flightrec::instrument]` calls made inside it nest
//! under it. No names are in flash: the host names a task by the ELF symbol of
//! the task pool that holds it (the task function's `POOL`), an executor by the
//! `static` that holds it (`flightrec tasks --elf`).
//!
//! [embassy-executor]: https://crates.io/crates/embassy-executor
#![no_std]
#![forbid(unsafe_code)]

pub use flightrec_core;
use flightrec_core::clock::Clock;
use flightrec_core::context::{ContextRecorders, ContextSource};
use flightrec_core::fdr::FunctionAction;
use flightrec_core::global::GlobalRecorder;
pub use flightrec_core::tasks::{pass_id, poll_id};
use flightrec_core::tasks::{TaskEvent, TaskEventKind};

/// Where the hooks write: the program's per-context recorders (or anything else
/// that records function records and typed events in the running context).
pub trait TaskRecorder: GlobalRecorder {
    /// Records a typed event in the running context, its 8-byte payload given
    /// as two little-endian words.
    fn typed_event8(&'static self, event_type: u16, words: [u32; 2]);
}

impl<const N: usize, S, C> TaskRecorder for ContextRecorders<N, S, C>
where
    S: ContextSource,
    C: Clock + Copy + Sync,
{
    #[inline(always)]
    fn typed_event8(&'static self, event_type: u16, words: [u32; 2]) {
        // A lost event is counted by the recorders and marked in the trace.
        let _ = ContextRecorders::typed_event8(self, event_type, words);
    }
}

/// The hooks' bodies, which [`embassy_trace!`] calls with the program's
/// recorder. Public for the macro and for programs that define the hooks
/// themselves (to filter executors, for example).
pub mod hooks {
    use super::*;

    /// The three typed events' one copy of the record path (its arguments in
    /// registers): a few cycles of a call, against about 300 bytes of flash
    /// for each hook that would inline it.
    #[inline(never)]
    fn event<R: TaskRecorder>(r: &'static R, event_type: u16, executor: u32, task: u32) {
        r.typed_event8(event_type, [executor, task]);
    }

    #[inline(always)]
    fn task_event<R: TaskRecorder>(r: &'static R, kind: TaskEventKind, executor: u32, task: u32) {
        // The payload's layout is `TaskEvent`'s.
        let [executor, task] = TaskEvent {
            kind,
            executor,
            task,
        }
        .words();
        event(r, kind.event_type(), executor, task);
    }

    /// `_embassy_trace_task_new`: the task was spawned (typed event `Spawn`).
    #[inline(always)]
    pub fn task_new<R: TaskRecorder>(r: &'static R, executor: u32, task: u32) {
        task_event(r, TaskEventKind::Spawn, executor, task);
    }

    /// `_embassy_trace_task_ready_begin`: the task was woken (typed event `Ready`).
    #[inline(always)]
    pub fn task_ready_begin<R: TaskRecorder>(r: &'static R, executor: u32, task: u32) {
        task_event(r, TaskEventKind::Ready, executor, task);
    }

    /// `_embassy_trace_task_end`: the task's future finished (typed event `End`).
    #[inline(always)]
    pub fn task_end<R: TaskRecorder>(r: &'static R, executor: u32, task: u32) {
        task_event(r, TaskEventKind::End, executor, task);
    }

    /// `_embassy_trace_poll_start`: the executor's pass begins (`Enter` of its pass id).
    #[inline(always)]
    pub fn poll_start<R: TaskRecorder>(r: &'static R, executor: u32) {
        r.record_function(FunctionAction::Enter, pass_id(executor));
    }

    /// `_embassy_trace_executor_idle`: the pass ends, the executor goes idle
    /// (`Exit` of its pass id).
    #[inline(always)]
    pub fn executor_idle<R: TaskRecorder>(r: &'static R, executor: u32) {
        r.record_function(FunctionAction::Exit, pass_id(executor));
    }

    /// `_embassy_trace_task_exec_begin`: a poll begins (`Enter` of the task's poll id).
    #[inline(always)]
    pub fn task_exec_begin<R: TaskRecorder>(r: &'static R, _executor: u32, task: u32) {
        r.record_function(FunctionAction::Enter, poll_id(task));
    }

    /// `_embassy_trace_task_exec_end`: the poll returned (`Exit` of the task's poll id).
    #[inline(always)]
    pub fn task_exec_end<R: TaskRecorder>(r: &'static R, _executor: u32, task: u32) {
        r.record_function(FunctionAction::Exit, poll_id(task));
    }
}

/// Defines embassy-executor's seven `trace` hooks over `$recorder`, a `static`
/// implementing [`TaskRecorder`] (the program's [`ContextRecorders`]). Use it
/// once per program, as defmt's `#[global_logger]`.
///
/// ```
/// use flightrec_core::context::{Context, ContextRecorders};
/// # #[cfg(any())]
/// use flightrec_core::{clock::SysTickClock, context::CortexMContexts};
/// # use flightrec_core::clock::TimerClock as SysTickClock;
/// # #[derive(Clone, Copy)]
/// # struct CortexMContexts;
/// # impl CortexMContexts { const fn new() -> Self { CortexMContexts } }
/// # impl flightrec_core::context::ContextSource for CortexMContexts {
/// #     fn current(&self) -> Context { Context::THREAD_MODE }
/// # }
///
/// # #[cfg(any())]
/// static CLOCK: SysTickClock = SysTickClock::new(12_500_000);
/// # static CLOCK: SysTickClock = SysTickClock::new(|| 0, 32, 12_500_000);
/// flightrec_core::static_clock!(Time = CLOCK);
/// static TRACE: ContextRecorders<3, CortexMContexts, Time> =
///     ContextRecorders::new(CortexMContexts::new(), Time);
/// flightrec_core::global_recorder!(TRACE);
/// flightrec_embassy::embassy_trace!(TRACE);
/// ```
#[macro_export]
macro_rules! embassy_trace {
    ($recorder:path) => {
        const _: () = {
            #[no_mangle]
            fn _embassy_trace_task_new(executor_id: u32, task_id: u32) {
                $crate::hooks::task_new(&$recorder, executor_id, task_id)
            }
            #[no_mangle]
            fn _embassy_trace_task_ready_begin(executor_id: u32, task_id: u32) {
                $crate::hooks::task_ready_begin(&$recorder, executor_id, task_id)
            }
            #[no_mangle]
            fn _embassy_trace_task_end(executor_id: u32, task_id: u32) {
                $crate::hooks::task_end(&$recorder, executor_id, task_id)
            }
            #[no_mangle]
            fn _embassy_trace_poll_start(executor_id: u32) {
                $crate::hooks::poll_start(&$recorder, executor_id)
            }
            #[no_mangle]
            fn _embassy_trace_executor_idle(executor_id: u32) {
                $crate::hooks::executor_idle(&$recorder, executor_id)
            }
            #[no_mangle]
            fn _embassy_trace_task_exec_begin(executor_id: u32, task_id: u32) {
                $crate::hooks::task_exec_begin(&$recorder, executor_id, task_id)
            }
            #[no_mangle]
            fn _embassy_trace_task_exec_end(executor_id: u32, task_id: u32) {
                $crate::hooks::task_exec_end(&$recorder, executor_id, task_id)
            }
        };
    };
}
