//! One generator of arbitrary Trace2 events for the property tests and the fuzz
//! target: owned copies of every event of the model with arbitrary field values
//! (byte strings with control characters, quotes and non-UTF-8 bytes, messages
//! given as bytes or as `format_args!`, JSON values built or raw, argv lists,
//! thread names, the per-line context), built from raw bytes with
//! [`arbitrary::Unstructured`] so libFuzzer drives it directly, and wrapped as a
//! proptest strategy ([`trace2_inputs`]) over the same bytes.
//!
//! The types derive [`Arbitrary`]; the order of their variants and fields is the
//! order the bytes are read in, so reordering them changes what a fuzz corpus
//! file means (the corpus still replays, as other inputs).

use arbitrary::{Arbitrary, Unstructured};
use flightrec_core::trace2::{Args, Event, LineCtx, Msg, WallTime};
use serde_json::Value;

/// Builds an input from raw bytes, as the fuzz target does; `None` when the
/// bytes cannot make one.
///
/// ```
/// let input = flightrec_testkit::trace2_gen::from_bytes(b"some fuzz input");
/// assert!(input.is_some());
/// ```
pub fn from_bytes(data: &[u8]) -> Option<Trace2Input> {
    Trace2Input::arbitrary(&mut Unstructured::new(data)).ok()
}

/// The generator as a proptest strategy: arbitrary bytes (up to 1 KiB) through
/// [`from_bytes`]. Shrinking shortens and lowers the bytes, which gives smaller
/// events and shorter strings.
#[cfg(feature = "proptest")]
pub fn trace2_inputs() -> impl proptest::strategy::Strategy<Value = Trace2Input> {
    use proptest::prelude::*;
    proptest::collection::vec(any::<u8>(), 0..1024)
        .prop_filter_map("bytes that make no input", |bytes| from_bytes(&bytes))
}

/// A message as the caller can give it.
#[derive(Arbitrary, Clone, Debug)]
pub enum MsgInput {
    None,
    Bytes(Vec<u8>),
    /// Formatted while the line is written (`format_args!("{}", s)`).
    Fmt(String),
    /// `format_args!("")`: an empty format, which git does not show.
    EmptyFmt,
}

impl MsgInput {
    /// The text the message renders to, `None` when it is not shown.
    pub fn shown(&self) -> Option<Vec<u8>> {
        match self {
            MsgInput::None | MsgInput::EmptyFmt => None,
            MsgInput::Bytes(b) => Some(b.clone()),
            MsgInput::Fmt(s) => Some(s.as_bytes().to_vec()),
        }
    }
}

/// A small JSON value for `data_json`, or raw bytes the caller claims are JSON.
#[derive(Arbitrary, Clone, Debug)]
pub enum JsonInput {
    /// Built by serde_json, compact or "pretty" (git removes the line breaks
    /// and the indentation after them).
    Built {
        value: JsonTree,
        pretty: bool,
    },
    Raw(Vec<u8>),
}

/// A JSON value as a tree the generator can build.
#[derive(Arbitrary, Clone, Debug)]
pub enum JsonTree {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<JsonTree>),
    Object(Vec<(String, JsonTree)>),
}

impl JsonTree {
    /// The value, with everything nested deeper than serde_json parses back
    /// (its recursion limit is 128) cut to `null`.
    pub fn to_value(&self) -> Value {
        self.to_value_at(0)
    }

    fn to_value_at(&self, depth: usize) -> Value {
        if depth >= 100 {
            return Value::Null;
        }
        match self {
            JsonTree::Null => Value::Null,
            JsonTree::Bool(b) => Value::Bool(*b),
            JsonTree::Int(i) => Value::from(*i),
            JsonTree::Str(s) => Value::String(s.clone()),
            JsonTree::List(v) => Value::Array(v.iter().map(|t| t.to_value_at(depth + 1)).collect()),
            JsonTree::Object(v) => Value::Object(
                v.iter()
                    .map(|(k, t)| (k.clone(), t.to_value_at(depth + 1)))
                    .collect(),
            ),
        }
    }
}

impl JsonInput {
    /// The bytes given to `data_json`.
    pub fn text(&self) -> Vec<u8> {
        match self {
            JsonInput::Built {
                value,
                pretty: true,
            } => serde_json::to_vec_pretty(&value.to_value()).unwrap(),
            JsonInput::Built { value, .. } => serde_json::to_vec(&value.to_value()).unwrap(),
            JsonInput::Raw(b) => b.clone(),
        }
    }
}

/// Every event of the model with owned fields.
#[derive(Arbitrary, Clone, Debug)]
pub enum EventInput {
    Version {
        exe: Vec<u8>,
    },
    TooManyFiles,
    Start {
        argv: Vec<Vec<u8>>,
    },
    Exit {
        code: i32,
    },
    Atexit {
        code: i32,
    },
    Signal {
        signo: i32,
    },
    Error {
        msg: MsgInput,
        fmt: Vec<u8>,
    },
    CmdPath {
        path: Vec<u8>,
    },
    CmdAncestry {
        ancestry: Vec<Vec<u8>>,
    },
    CmdName {
        name: Vec<u8>,
        hierarchy: Vec<u8>,
    },
    CmdMode {
        mode: Vec<u8>,
    },
    Alias {
        alias: Vec<u8>,
        argv: Vec<Vec<u8>>,
    },
    ChildStart {
        child_id: i64,
        child_class: Option<Vec<u8>>,
        hook_name: Option<Vec<u8>>,
        cd: Option<Vec<u8>>,
        use_shell: bool,
        is_git: bool,
        argv: Vec<Vec<u8>>,
    },
    ChildExit {
        child_id: i64,
        pid: i64,
        code: i32,
        t_rel: u64,
    },
    ChildReady {
        child_id: i64,
        pid: i64,
        ready: Vec<u8>,
        t_rel: u64,
    },
    Exec {
        exec_id: i64,
        exe: Option<Vec<u8>>,
        argv: Vec<Vec<u8>>,
    },
    ExecResult {
        exec_id: i64,
        code: i32,
        err: Vec<u8>,
    },
    ThreadStart,
    ThreadExit {
        t_rel: u64,
    },
    DefParam {
        scope: Vec<u8>,
        param: Vec<u8>,
        value: Option<Vec<u8>>,
    },
    DefRepo {
        worktree: Vec<u8>,
    },
    RegionEnter {
        category: Option<Vec<u8>>,
        label: Option<Vec<u8>>,
        msg: MsgInput,
    },
    RegionLeave {
        t_rel: u64,
        category: Option<Vec<u8>>,
        label: Option<Vec<u8>>,
        msg: MsgInput,
    },
    Data {
        t_rel: u64,
        category: Vec<u8>,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    DataJson {
        t_rel: u64,
        category: Vec<u8>,
        key: Vec<u8>,
        value: JsonInput,
    },
    Printf {
        msg: MsgInput,
    },
    Timer {
        per_thread: bool,
        category: Vec<u8>,
        name: Vec<u8>,
        intervals: u64,
        total_ns: u64,
        min_ns: u64,
        max_ns: u64,
    },
    Counter {
        per_thread: bool,
        category: Vec<u8>,
        name: Vec<u8>,
        value: u64,
    },
}

/// The per-line inputs (the model's `LineCtx`, owned).
#[derive(Arbitrary, Clone, Debug)]
pub struct CtxInput {
    pub secs: i64,
    pub micros: u32,
    pub utc_offset_secs: i32,
    pub file: Vec<u8>,
    pub line: u32,
    pub thread: Vec<u8>,
    pub sid: Vec<u8>,
    pub sid_depth: u32,
    pub nesting: u32,
    pub repo: Option<i32>,
    pub t_abs: u64,
}

/// One case: an event, the line it is written on, and the event target's
/// nesting filter.
#[derive(Arbitrary, Clone, Debug)]
pub struct Trace2Input {
    pub ctx: CtxInput,
    pub event: EventInput,
    pub event_nesting: u32,
}

/// Applies `f` to every byte string and text the caller gives (context and
/// event), for the LF-free twin of an input.
pub trait MapText {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>));
}

impl MapText for Vec<u8> {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        f(self)
    }
}

impl MapText for String {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        let mut b = std::mem::take(self).into_bytes();
        f(&mut b);
        *self = String::from_utf8(b).expect("the mapping keeps UTF-8 valid");
    }
}

impl<T: MapText> MapText for Option<T> {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        if let Some(t) = self {
            t.map_text(f)
        }
    }
}

impl<T: MapText> MapText for Vec<T> {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        for t in self {
            t.map_text(f)
        }
    }
}

impl MapText for MsgInput {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        match self {
            MsgInput::Bytes(b) => b.map_text(f),
            MsgInput::Fmt(s) => s.map_text(f),
            MsgInput::None | MsgInput::EmptyFmt => {}
        }
    }
}

impl MapText for EventInput {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        match self {
            EventInput::Version { exe } => exe.map_text(f),
            EventInput::Start { argv } => argv.map_text(f),
            EventInput::Error { msg, fmt } => {
                msg.map_text(f);
                fmt.map_text(f)
            }
            EventInput::CmdPath { path } => path.map_text(f),
            EventInput::CmdAncestry { ancestry } => ancestry.map_text(f),
            EventInput::CmdName { name, hierarchy } => {
                name.map_text(f);
                hierarchy.map_text(f)
            }
            EventInput::CmdMode { mode } => mode.map_text(f),
            EventInput::Alias { alias, argv } => {
                alias.map_text(f);
                argv.map_text(f)
            }
            EventInput::ChildStart {
                child_class,
                hook_name,
                cd,
                argv,
                ..
            } => {
                child_class.map_text(f);
                hook_name.map_text(f);
                cd.map_text(f);
                argv.map_text(f)
            }
            EventInput::ChildReady { ready, .. } => ready.map_text(f),
            EventInput::Exec { exe, argv, .. } => {
                exe.map_text(f);
                argv.map_text(f)
            }
            EventInput::ExecResult { err, .. } => err.map_text(f),
            EventInput::DefParam {
                scope,
                param,
                value,
            } => {
                scope.map_text(f);
                param.map_text(f);
                value.map_text(f)
            }
            EventInput::DefRepo { worktree } => worktree.map_text(f),
            EventInput::RegionEnter {
                category,
                label,
                msg,
            }
            | EventInput::RegionLeave {
                category,
                label,
                msg,
                ..
            } => {
                category.map_text(f);
                label.map_text(f);
                msg.map_text(f)
            }
            EventInput::Data {
                category,
                key,
                value,
                ..
            } => {
                category.map_text(f);
                key.map_text(f);
                value.map_text(f)
            }
            EventInput::DataJson {
                category,
                key,
                value,
                ..
            } => {
                category.map_text(f);
                key.map_text(f);
                let mut text = value.text();
                f(&mut text);
                *value = JsonInput::Raw(text);
            }
            EventInput::Printf { msg } => msg.map_text(f),
            EventInput::Timer { category, name, .. }
            | EventInput::Counter { category, name, .. } => {
                category.map_text(f);
                name.map_text(f)
            }
            EventInput::TooManyFiles
            | EventInput::Exit { .. }
            | EventInput::Atexit { .. }
            | EventInput::Signal { .. }
            | EventInput::ChildExit { .. }
            | EventInput::ThreadStart
            | EventInput::ThreadExit { .. } => {}
        }
    }
}

impl MapText for Trace2Input {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        self.ctx.file.map_text(f);
        self.ctx.thread.map_text(f);
        self.ctx.sid.map_text(f);
        self.event.map_text(f);
    }
}

/// Borrows a list of byte strings as the model's argument list.
pub fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

/// Calls `f` with the model's message for `m` (`format_args!` cannot outlive
/// the expression it is made in).
fn with_msg<R>(m: &MsgInput, f: impl FnOnce(Option<Msg<'_>>) -> R) -> R {
    match m {
        MsgInput::None => f(None),
        MsgInput::Bytes(b) => f(Some(Msg::Bytes(b))),
        MsgInput::Fmt(s) => f(Some(Msg::Fmt(format_args!("{s}")))),
        MsgInput::EmptyFmt => f(Some(Msg::Fmt(format_args!("")))),
    }
}

fn opt(o: &Option<Vec<u8>>) -> Option<&[u8]> {
    o.as_deref()
}

/// Calls `f` with the model's event for `ev`.
pub fn with_event<R>(ev: &EventInput, f: impl FnOnce(&Event<'_>) -> R) -> R {
    match ev {
        EventInput::Version { exe } => f(&Event::Version { exe }),
        EventInput::TooManyFiles => f(&Event::TooManyFiles),
        EventInput::Start { argv } => f(&Event::Start {
            argv: Args::Bytes(&refs(argv)),
        }),
        EventInput::Exit { code } => f(&Event::Exit { code: *code }),
        EventInput::Atexit { code } => f(&Event::Atexit { code: *code }),
        EventInput::Signal { signo } => f(&Event::Signal { signo: *signo }),
        EventInput::Error { msg, fmt } => with_msg(msg, |m| {
            // An error always carries a message; "none" becomes an empty one.
            let msg = m.unwrap_or(Msg::Bytes(b""));
            f(&Event::Error { msg, fmt })
        }),
        EventInput::CmdPath { path } => f(&Event::CmdPath { path }),
        EventInput::CmdAncestry { ancestry } => f(&Event::CmdAncestry {
            ancestry: Args::Bytes(&refs(ancestry)),
        }),
        EventInput::CmdName { name, hierarchy } => f(&Event::CmdName { name, hierarchy }),
        EventInput::CmdMode { mode } => f(&Event::CmdMode { mode }),
        EventInput::Alias { alias, argv } => f(&Event::Alias {
            alias,
            argv: Args::Bytes(&refs(argv)),
        }),
        EventInput::ChildStart {
            child_id,
            child_class,
            hook_name,
            cd,
            use_shell,
            is_git,
            argv,
        } => f(&Event::ChildStart {
            child_id: *child_id,
            child_class: opt(child_class),
            hook_name: opt(hook_name),
            cd: opt(cd),
            use_shell: *use_shell,
            is_git: *is_git,
            argv: Args::Bytes(&refs(argv)),
        }),
        EventInput::ChildExit {
            child_id,
            pid,
            code,
            t_rel,
        } => f(&Event::ChildExit {
            child_id: *child_id,
            pid: *pid,
            code: *code,
            t_rel: *t_rel,
        }),
        EventInput::ChildReady {
            child_id,
            pid,
            ready,
            t_rel,
        } => f(&Event::ChildReady {
            child_id: *child_id,
            pid: *pid,
            ready,
            t_rel: *t_rel,
        }),
        EventInput::Exec { exec_id, exe, argv } => f(&Event::Exec {
            exec_id: *exec_id,
            exe: opt(exe),
            argv: Args::Bytes(&refs(argv)),
        }),
        EventInput::ExecResult { exec_id, code, err } => f(&Event::ExecResult {
            exec_id: *exec_id,
            code: *code,
            err,
        }),
        EventInput::ThreadStart => f(&Event::ThreadStart),
        EventInput::ThreadExit { t_rel } => f(&Event::ThreadExit { t_rel: *t_rel }),
        EventInput::DefParam {
            scope,
            param,
            value,
        } => f(&Event::DefParam {
            scope,
            param,
            value: opt(value),
        }),
        EventInput::DefRepo { worktree } => f(&Event::DefRepo { worktree }),
        EventInput::RegionEnter {
            category,
            label,
            msg,
        } => with_msg(msg, |msg| {
            f(&Event::RegionEnter {
                category: opt(category),
                label: opt(label),
                msg,
            })
        }),
        EventInput::RegionLeave {
            t_rel,
            category,
            label,
            msg,
        } => with_msg(msg, |msg| {
            f(&Event::RegionLeave {
                t_rel: *t_rel,
                category: opt(category),
                label: opt(label),
                msg,
            })
        }),
        EventInput::Data {
            t_rel,
            category,
            key,
            value,
        } => f(&Event::Data {
            t_rel: *t_rel,
            category,
            key,
            value,
        }),
        EventInput::DataJson {
            t_rel,
            category,
            key,
            value,
        } => {
            let value = value.text();
            f(&Event::DataJson {
                t_rel: *t_rel,
                category,
                key,
                value: &value,
            })
        }
        EventInput::Printf { msg } => with_msg(msg, |msg| f(&Event::Printf { msg })),
        EventInput::Timer {
            per_thread,
            category,
            name,
            intervals,
            total_ns,
            min_ns,
            max_ns,
        } => f(&Event::Timer {
            per_thread: *per_thread,
            category,
            name,
            intervals: *intervals,
            total_ns: *total_ns,
            min_ns: *min_ns,
            max_ns: *max_ns,
        }),
        EventInput::Counter {
            per_thread,
            category,
            name,
            value,
        } => f(&Event::Counter {
            per_thread: *per_thread,
            category,
            name,
            value: *value,
        }),
    }
}

/// The model's line context for `c`.
pub fn line_ctx(c: &CtxInput) -> LineCtx<'_> {
    LineCtx {
        time: WallTime::new(c.secs, c.micros),
        utc_offset_secs: c.utc_offset_secs,
        file: &c.file,
        line: c.line,
        thread: &c.thread,
        sid: &c.sid,
        sid_depth: c.sid_depth,
        nesting: c.nesting,
        repo: c.repo,
        t_abs: c.t_abs,
    }
}
