//! From FDR records to timed events, the way `llvm-xray` 14's loader does it.
//!
//! Blocks (a NewBuffer and what follows it) are grouped per thread, keyed by
//! (process, thread). Threads come in the order llvm-xray lists them, the iteration
//! order of its block index (an LLVM `DenseMap`, see [`llvm_thread_order`](super::order::llvm_thread_order)); a
//! thread's blocks come in file order. Each thread is expanded with a fresh state:
//! NewCPUId sets the CPU and the base TSC, TSCWrap the base TSC, every function
//! record and version-5 event adds its delta. CallArgument records attach to the
//! record before them and make it an `function-enter-arg`.
//!
//! Two cosmetic quirks of LLVM's expander are kept so that `convert --format yaml`
//! matches `llvm-xray convert` byte for byte: an event shows the function id of the
//! record before it in its thread, and a typed event's type stays in the `type`
//! field of the thread's records after it.

use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::{FunctionAction, Version};

/// What an expanded event is (LLVM's `RecordTypes`).
///
/// ```
/// use flightrec_host::read::events::Kind;
///
/// assert_eq!(Kind::EnterArg.yaml_name(), "function-enter-arg");
/// assert_eq!(Kind::TailExit.yaml_name(), "function-tail-exit");
/// assert!(Kind::Enter.is_enter() && Kind::EnterArg.is_enter());
/// assert!(Kind::Exit.is_exit() && Kind::TailExit.is_exit());
/// assert!(!Kind::CustomEvent.is_enter() && !Kind::TypedEvent.is_exit());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Function entry.
    Enter,
    /// Function exit.
    Exit,
    /// Exit through a tail call.
    TailExit,
    /// Function entry with arguments.
    EnterArg,
    /// Custom event.
    CustomEvent,
    /// Typed event.
    TypedEvent,
}

impl Kind {
    /// LLVM's YAML name for the kind. Example on [`Kind`].
    pub const fn yaml_name(self) -> &'static str {
        match self {
            Kind::Enter => "function-enter",
            Kind::Exit => "function-exit",
            Kind::TailExit => "function-tail-exit",
            Kind::EnterArg => "function-enter-arg",
            Kind::CustomEvent => "custom-event",
            Kind::TypedEvent => "typed-event",
        }
    }

    /// Whether it is an entry (with or without arguments). Example on [`Kind`].
    pub const fn is_enter(self) -> bool {
        matches!(self, Kind::Enter | Kind::EnterArg)
    }

    /// Whether it is an exit (plain or tail). Example on [`Kind`].
    pub const fn is_exit(self) -> bool {
        matches!(self, Kind::Exit | Kind::TailExit)
    }
}

/// One event of a trace, with absolute time.
///
/// ```
/// use flightrec_host::read::{events::{Kind, XEvent}, trace::load};
///
/// let trace = load(include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
/// // llvm-xray convert: { type: 0, func-id: 3, function: '3', args: [ 42, 3735928559 ],
/// //   cpu: 0, thread: 101, process: 4242, kind: function-enter-arg, tsc: 1001500, data: '' }
/// assert_eq!(
///     trace.events[2],
///     XEvent {
///         event_type: 0,
///         func_id: 3,
///         args: vec![42, 0xdead_beef],
///         cpu: 0,
///         thread: 101,
///         process: 4242,
///         kind: Kind::EnterArg,
///         tsc: 1_001_500,
///         data: Vec::new(),
///     }
/// );
/// // A custom event keeps the function id of the record before it, as in LLVM.
/// let custom = &trace.events[4];
/// assert_eq!((custom.kind, custom.func_id, custom.tsc), (Kind::CustomEvent, 3, 1_002_600));
/// assert_eq!(custom.data, b"hello");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XEvent {
    /// The typed-event type field (sticky, as in LLVM).
    pub event_type: u16,
    /// The function id.
    pub func_id: u32,
    /// Call arguments.
    pub args: Vec<u64>,
    /// CPU.
    pub cpu: u16,
    /// Thread id.
    pub thread: u32,
    /// Process id (0 when the trace has none).
    pub process: u32,
    /// What happened.
    pub kind: Kind,
    /// Absolute TSC.
    pub tsc: u64,
    /// Event payload.
    pub data: Vec<u8>,
}

/// The state of LLVM's `TraceExpander` for one thread.
#[derive(Clone)]
pub(crate) struct Expander {
    version: Version,
    current: XEvent,
    building: bool,
    ignoring: bool,
    base_tsc: u64,
    cpu: u16,
    tid: u32,
    pid: u32,
    pub(crate) out: Vec<XEvent>,
}

impl Expander {
    pub(crate) fn new(version: Version) -> Self {
        Self {
            version,
            current: XEvent {
                event_type: 0,
                func_id: 0,
                args: Vec::new(),
                cpu: 0,
                thread: 0,
                process: 0,
                kind: Kind::Enter,
                tsc: 0,
                data: Vec::new(),
            },
            building: false,
            ignoring: false,
            base_tsc: 0,
            cpu: 0,
            tid: 0,
            pid: 0,
            out: Vec::new(),
        }
    }

    pub(crate) fn reset_current(&mut self) {
        if self.building {
            self.out.push(self.current.clone());
        }
        self.building = false;
        self.current.args.clear();
        self.current.data.clear();
    }

    fn stamp(&mut self, tsc: u64, cpu: u16, kind: Kind) {
        self.current.tsc = tsc;
        self.current.cpu = cpu;
        self.current.process = self.pid;
        self.current.thread = self.tid;
        self.current.kind = kind;
        self.building = true;
    }

    pub(crate) fn visit(&mut self, record: &Record<'_>) {
        match *record {
            Record::NewBuffer { tid } => {
                self.ignoring = false;
                self.tid = tid as u32;
                if self.version == Version::V2 {
                    self.pid = tid as u32;
                }
            }
            Record::Pid { pid } => self.pid = pid as u32,
            Record::EndOfBuffer => self.ignoring = true,
            Record::NewCpuId { cpu, tsc } => {
                self.cpu = cpu;
                self.base_tsc = tsc;
            }
            Record::TscWrap { tsc } => self.base_tsc = tsc,
            Record::Walltime { .. } | Record::BufferExtents { .. } => {}
            Record::CallArgument { value } => {
                self.current.args.push(value);
                self.current.kind = Kind::EnterArg;
            }
            Record::Function { action, id, delta } => {
                self.reset_current();
                if !self.ignoring {
                    self.base_tsc = self.base_tsc.wrapping_add(u64::from(delta));
                    self.current.func_id = id.get();
                    let kind = match action {
                        FunctionAction::Enter => Kind::Enter,
                        FunctionAction::Exit => Kind::Exit,
                        FunctionAction::TailExit => Kind::TailExit,
                        FunctionAction::EnterArg => Kind::EnterArg,
                    };
                    self.stamp(self.base_tsc, self.cpu, kind);
                }
            }
            Record::CustomEvent { time, payload } => {
                self.reset_current();
                if !self.ignoring {
                    let (tsc, cpu) = match time {
                        CustomEventTime::Absolute { tsc, cpu } => (tsc, cpu),
                        CustomEventTime::Delta(d) => {
                            self.base_tsc = self.base_tsc.wrapping_add(d as i64 as u64);
                            (self.base_tsc, self.cpu)
                        }
                    };
                    self.stamp(tsc, cpu, Kind::CustomEvent);
                    self.current.data = payload.to_vec();
                }
            }
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                self.reset_current();
                if !self.ignoring {
                    self.base_tsc = self.base_tsc.wrapping_add(delta as i64 as u64);
                    self.current.event_type = event_type;
                    self.stamp(self.base_tsc, self.cpu, Kind::TypedEvent);
                    self.current.data = payload.to_vec();
                }
            }
        }
    }
}
