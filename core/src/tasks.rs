//! Async tasks in an FDR stream: the one home of the records an executor's
//! trace hooks write (`flightrec-embassy` on the target, `flightrec tasks` and
//! the converters on the host). The design is in `docs/format.md`
//! ("Async tasks").
//!
//! * A task's **poll** is a function record pair, `Enter`/`Exit` of
//!   [`poll_id`]`(task)`: every tool shows it as a slice named by the task, and
//!   `#[flightrec::instrument]` calls made inside the poll nest under it.
//! * An executor's **pass** over its run queue is the pair of [`pass_id`]`(executor)`,
//!   from `poll_start` to `executor_idle`; the time between two passes is the
//!   executor's idle time. The polls of the pass nest inside it.
//! * **Spawn**, **ready** (wake-up) and **end** are typed events
//!   ([`TaskEvent`]) carrying the executor's and the task's full 32-bit ids, in
//!   the ring of whichever context made them (a wake-up from an interrupt
//!   handler goes into that handler's ring).
//!
//! Ids are addresses (a task's header, an executor), four-byte aligned. A
//! function id keeps bits 2 to 25 of the address ([`key`]) under a kind in its
//! top four bits (`0x8` poll, `0x9` pass): one to one for any RAM of up to 64 MiB,
//! and above the ids of `#[flightrec::instrument]` (which stay below
//! `0x0800_0000`). The host names a task by the ELF symbol that holds its
//! address (embassy's task pool, a `static` inside the task function).
//!
//! ```
//! use flightrec_core::tasks::{key, pass_id, poll_id, TaskEvent, TaskEventKind, TaskFunction};
//! let (executor, task) = (0x2000_0100, 0x2000_0a48);
//! assert_eq!(poll_id(task).get(), 0x0800_0000 | key(task));
//! assert_eq!(TaskFunction::of(poll_id(task)), Some(TaskFunction::Poll { key: key(task) }));
//! assert_eq!(TaskFunction::of(pass_id(executor)), Some(TaskFunction::Pass { key: key(executor) }));
//! let ready = TaskEvent { kind: TaskEventKind::Ready, executor, task };
//! let payload = ready.emit();
//! assert_eq!(TaskEvent::parse(TaskEventKind::Ready.event_type(), &payload), Some(ready));
//! assert_eq!(TaskEvent::parse(0x1234, &payload), None);
//! let [e, t] = ready.words();
//! assert_eq!([e.to_le_bytes(), t.to_le_bytes()].concat(), payload);
//! ```

use crate::fdr::records::FunctionRecord;
use crate::fdr::FunctionId;

/// The kind (top four of a function id's 28 bits) of a task's poll. Example
/// on [`poll_id`].
pub const POLL_KIND: u32 = 0x8;
/// The kind of an executor's pass over its run queue. Example on [`poll_id`].
pub const PASS_KIND: u32 = 0x9;
/// How many bits of an address a function id keeps. Example on [`poll_id`].
pub const KEY_BITS: u32 = 24;
const KEY_MASK: u32 = (1 << KEY_BITS) - 1;

/// Bits 2 to 25 of a four-byte aligned address: what a function id keeps of
/// it. Example on [`poll_id`].
#[inline(always)]
pub const fn key(address: u32) -> u32 {
    (address >> 2) & KEY_MASK
}

#[inline(always)]
const fn id(kind: u32, address: u32) -> FunctionId {
    // A record's low word holds the id in its top 28 bits: a kind below 16 and
    // 24 bits of key fill them exactly, with no range check on the hook path.
    FunctionRecord::from_low_word((kind << KEY_BITS | key(address)) << 4).1
}

/// The function id of `task`'s polls.
///
/// ```
/// use flightrec_core::tasks::{key, pass_id, poll_id, TaskFunction, KEY_BITS, PASS_KIND, POLL_KIND};
/// let (executor, task) = (0x2000_0100u32, 0x2000_0a48u32);
/// assert_eq!(key(task), (task >> 2) & 0xFF_FFFF);
/// assert_eq!(poll_id(task).get(), POLL_KIND << KEY_BITS | key(task));
/// assert_eq!(pass_id(executor).get(), PASS_KIND << KEY_BITS | key(executor));
/// assert_eq!(TaskFunction::of(poll_id(task)), Some(TaskFunction::Poll { key: key(task) }));
/// assert_eq!(TaskFunction::of(pass_id(executor)), Some(TaskFunction::Pass { key: 0x40 }));
/// // An id of `#[flightrec::instrument]` is none of them.
/// let f = flightrec_core::fdr::FunctionId::new(53).unwrap();
/// assert_eq!(TaskFunction::of(f), None);
/// ```
#[inline(always)]
pub const fn poll_id(task: u32) -> FunctionId {
    id(POLL_KIND, task)
}

/// The function id of `executor`'s passes over its run queue. Example on
/// [`poll_id`].
#[inline(always)]
pub const fn pass_id(executor: u32) -> FunctionId {
    id(PASS_KIND, executor)
}

/// What a function id says of tasks, if it is one of theirs. Example on
/// [`poll_id`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskFunction {
    /// A poll of the task whose address has this [`key`].
    Poll {
        /// The task's [`key`].
        key: u32,
    },
    /// A pass of the executor whose address has this [`key`].
    Pass {
        /// The executor's [`key`].
        key: u32,
    },
}

impl TaskFunction {
    /// Reads a function id. Example on [`poll_id`].
    pub const fn of(id: FunctionId) -> Option<TaskFunction> {
        let key = id.get() & KEY_MASK;
        match id.get() >> KEY_BITS {
            POLL_KIND => Some(TaskFunction::Poll { key }),
            PASS_KIND => Some(TaskFunction::Pass { key }),
            _ => None,
        }
    }
}

/// A task's event that is not a poll. Example on [`TaskEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskEventKind {
    /// The task was spawned on the executor (embassy's `task_new`).
    Spawn,
    /// The task was woken: put on its executor's run queue (`task_ready_begin`).
    Ready,
    /// The task's future finished, in its last poll (`task_end`).
    End,
}

impl TaskEventKind {
    /// The typed event type it is written with. Example on [`TaskEvent`].
    pub const fn event_type(self) -> u16 {
        match self {
            TaskEventKind::Spawn => 0xE5A0,
            TaskEventKind::Ready => 0xE5A1,
            TaskEventKind::End => 0xE5A2,
        }
    }

    /// The kind written with `event_type`, if any. Example on [`TaskEvent`].
    pub const fn from_event_type(event_type: u16) -> Option<TaskEventKind> {
        match event_type {
            0xE5A0 => Some(TaskEventKind::Spawn),
            0xE5A1 => Some(TaskEventKind::Ready),
            0xE5A2 => Some(TaskEventKind::End),
            _ => None,
        }
    }
}

/// The bytes of a [`TaskEvent`]'s payload. Example on [`TaskEvent`].
pub const TASK_EVENT_SIZE: usize = 8;

/// A typed event of a task: its kind (the event type), then the executor's
/// and the task's ids as the payload, each 32 bits little-endian.
///
/// ```
/// use flightrec_core::tasks::{TaskEvent, TaskEventKind, TASK_EVENT_SIZE};
/// let end = TaskEvent { kind: TaskEventKind::End, executor: 0x2000_0100, task: 0x2000_0a48 };
/// assert_eq!(TaskEventKind::End.event_type(), 0xE5A2);
/// assert_eq!(TaskEventKind::from_event_type(0xE5A0), Some(TaskEventKind::Spawn));
/// assert_eq!(TaskEventKind::from_event_type(0xF17C), None);
/// let payload = end.emit();
/// assert_eq!(payload.len(), TASK_EVENT_SIZE);
/// assert_eq!(payload, [0x00, 0x01, 0x00, 0x20, 0x48, 0x0a, 0x00, 0x20]);
/// assert_eq!(end.words(), [0x2000_0100, 0x2000_0a48]);
/// assert_eq!(TaskEvent::parse(0xE5A2, &payload), Some(end));
/// assert_eq!(TaskEvent::parse(0xE5A2, &payload[..7]), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskEvent {
    /// What happened.
    pub kind: TaskEventKind,
    /// The executor's id (its address).
    pub executor: u32,
    /// The task's id (its header's address).
    pub task: u32,
}

impl TaskEvent {
    /// The payload. Example on [`TaskEvent`].
    #[inline(always)]
    pub const fn emit(&self) -> [u8; TASK_EVENT_SIZE] {
        let e = self.executor.to_le_bytes();
        let t = self.task.to_le_bytes();
        [e[0], e[1], e[2], e[3], t[0], t[1], t[2], t[3]]
    }

    /// The payload as two little-endian words (what
    /// [`ContextRecorders::typed_event8`](crate::context::ContextRecorders::typed_event8)
    /// takes): the executor's id, then the task's. Example on [`TaskEvent`].
    #[inline(always)]
    pub const fn words(&self) -> [u32; 2] {
        [self.executor, self.task]
    }

    /// Reads a typed event; `None` for another type or a payload of another
    /// size. Example on [`TaskEvent`].
    pub fn parse(event_type: u16, payload: &[u8]) -> Option<TaskEvent> {
        let kind = TaskEventKind::from_event_type(event_type)?;
        let bytes: &[u8; TASK_EVENT_SIZE] = payload.try_into().ok()?;
        let [e0, e1, e2, e3, t0, t1, t2, t3] = *bytes;
        Some(TaskEvent {
            kind,
            executor: u32::from_le_bytes([e0, e1, e2, e3]),
            task: u32::from_le_bytes([t0, t1, t2, t3]),
        })
    }
}
