//! Arbitrary Trace2 events with arbitrary field values through all three
//! formatters, full and brief. Asserts what the Trace2 spec promises:
//!
//! * no panic, and `Ok(n)` whenever the buffer can hold the line;
//! * `Ok(0)` exactly for the events a target does not write (the normal
//!   target's thread/region/data events, `too_many_files` outside the event
//!   target, region/data events beyond the event target's nesting filter, and
//!   the normal target's empty brief `printf`);
//! * an event line is one line: JSON that parses, followed by one LF, with no
//!   other LF, and its strings round-trip;
//! * a normal or perf line ends with one LF, and every other LF in it is one
//!   the caller put in a string (the same input with LFs replaced by spaces
//!   gives the same line with spaces there): git writes payloads raw;
//! * every buffer shorter than the line gives `BufferTooSmall`.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use flightrec_core::trace2::{Args, BufferTooSmall, Event, Format, LineCtx, Msg, Target, WallTime};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// A message as the caller can give it.
#[derive(Arbitrary, Clone, Debug)]
enum FMsg {
    None,
    Bytes(Vec<u8>),
    /// Formatted while the line is written (`format_args!("{}", s)`).
    Fmt(String),
    /// `format_args!("")`: an empty format, which git does not show.
    EmptyFmt,
}

impl FMsg {
    /// The text the message renders to, `None` when it is not shown.
    fn shown(&self) -> Option<Vec<u8>> {
        match self {
            FMsg::None | FMsg::EmptyFmt => None,
            FMsg::Bytes(b) => Some(b.clone()),
            FMsg::Fmt(s) => Some(s.as_bytes().to_vec()),
        }
    }
}

/// A small JSON value for `data_json`, or raw bytes the caller claims are JSON.
#[derive(Arbitrary, Clone, Debug)]
enum FJson {
    /// Built by serde_json, compact or "pretty" (git removes the line breaks
    /// and the indentation after them).
    Built {
        value: Tree,
        pretty: bool,
    },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Clone, Debug)]
enum Tree {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<Tree>),
    Object(Vec<(String, Tree)>),
}

impl Tree {
    /// The value, with everything nested deeper than serde_json parses back
    /// (its recursion limit is 128) cut to `null`.
    fn to_value(&self) -> Value {
        self.to_value_at(0)
    }

    fn to_value_at(&self, depth: usize) -> Value {
        if depth >= 100 {
            return Value::Null;
        }
        match self {
            Tree::Null => Value::Null,
            Tree::Bool(b) => Value::Bool(*b),
            Tree::Int(i) => Value::from(*i),
            Tree::Str(s) => Value::String(s.clone()),
            Tree::List(v) => Value::Array(v.iter().map(|t| t.to_value_at(depth + 1)).collect()),
            Tree::Object(v) => Value::Object(
                v.iter()
                    .map(|(k, t)| (k.clone(), t.to_value_at(depth + 1)))
                    .collect(),
            ),
        }
    }
}

impl FJson {
    fn text(&self) -> Vec<u8> {
        match self {
            FJson::Built {
                value,
                pretty: true,
            } => serde_json::to_vec_pretty(&value.to_value()).unwrap(),
            FJson::Built { value, .. } => serde_json::to_vec(&value.to_value()).unwrap(),
            FJson::Raw(b) => b.clone(),
        }
    }
}

/// Every event of the model with owned fields.
#[derive(Arbitrary, Clone, Debug)]
enum FEvent {
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
        msg: FMsg,
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
        msg: FMsg,
    },
    RegionLeave {
        t_rel: u64,
        category: Option<Vec<u8>>,
        label: Option<Vec<u8>>,
        msg: FMsg,
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
        value: FJson,
    },
    Printf {
        msg: FMsg,
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

/// The per-line inputs.
#[derive(Arbitrary, Clone, Debug)]
struct FCtx {
    secs: i64,
    micros: u32,
    utc_offset_secs: i32,
    file: Vec<u8>,
    line: u32,
    thread: Vec<u8>,
    sid: Vec<u8>,
    sid_depth: u32,
    nesting: u32,
    repo: Option<i32>,
    t_abs: u64,
}

#[derive(Arbitrary, Clone, Debug)]
struct Input {
    ctx: FCtx,
    event: FEvent,
    event_nesting: u32,
}

/// Applies `f` to every byte string and text the caller gives (context and
/// event), for the LF-free twin of an input.
trait MapText {
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

impl MapText for FMsg {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        match self {
            FMsg::Bytes(b) => b.map_text(f),
            FMsg::Fmt(s) => s.map_text(f),
            FMsg::None | FMsg::EmptyFmt => {}
        }
    }
}

impl MapText for FEvent {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        match self {
            FEvent::Version { exe } => exe.map_text(f),
            FEvent::Start { argv } => argv.map_text(f),
            FEvent::Error { msg, fmt } => {
                msg.map_text(f);
                fmt.map_text(f)
            }
            FEvent::CmdPath { path } => path.map_text(f),
            FEvent::CmdAncestry { ancestry } => ancestry.map_text(f),
            FEvent::CmdName { name, hierarchy } => {
                name.map_text(f);
                hierarchy.map_text(f)
            }
            FEvent::CmdMode { mode } => mode.map_text(f),
            FEvent::Alias { alias, argv } => {
                alias.map_text(f);
                argv.map_text(f)
            }
            FEvent::ChildStart {
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
            FEvent::ChildReady { ready, .. } => ready.map_text(f),
            FEvent::Exec { exe, argv, .. } => {
                exe.map_text(f);
                argv.map_text(f)
            }
            FEvent::ExecResult { err, .. } => err.map_text(f),
            FEvent::DefParam {
                scope,
                param,
                value,
            } => {
                scope.map_text(f);
                param.map_text(f);
                value.map_text(f)
            }
            FEvent::DefRepo { worktree } => worktree.map_text(f),
            FEvent::RegionEnter {
                category,
                label,
                msg,
            }
            | FEvent::RegionLeave {
                category,
                label,
                msg,
                ..
            } => {
                category.map_text(f);
                label.map_text(f);
                msg.map_text(f)
            }
            FEvent::Data {
                category,
                key,
                value,
                ..
            } => {
                category.map_text(f);
                key.map_text(f);
                value.map_text(f)
            }
            FEvent::DataJson {
                category,
                key,
                value,
                ..
            } => {
                category.map_text(f);
                key.map_text(f);
                let mut text = value.text();
                f(&mut text);
                *value = FJson::Raw(text);
            }
            FEvent::Printf { msg } => msg.map_text(f),
            FEvent::Timer { category, name, .. } | FEvent::Counter { category, name, .. } => {
                category.map_text(f);
                name.map_text(f)
            }
            FEvent::TooManyFiles
            | FEvent::Exit { .. }
            | FEvent::Atexit { .. }
            | FEvent::Signal { .. }
            | FEvent::ChildExit { .. }
            | FEvent::ThreadStart
            | FEvent::ThreadExit { .. } => {}
        }
    }
}

impl MapText for Input {
    fn map_text(&mut self, f: &impl Fn(&mut Vec<u8>)) {
        self.ctx.file.map_text(f);
        self.ctx.thread.map_text(f);
        self.ctx.sid.map_text(f);
        self.event.map_text(f);
    }
}

/// Borrows a list of byte strings as the model's argument list.
fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

/// Calls `f` with the model's message for `m` (`format_args!` cannot outlive
/// the expression it is made in).
fn with_msg<R>(m: &FMsg, f: impl FnOnce(Option<Msg<'_>>) -> R) -> R {
    match m {
        FMsg::None => f(None),
        FMsg::Bytes(b) => f(Some(Msg::Bytes(b))),
        FMsg::Fmt(s) => f(Some(Msg::Fmt(format_args!("{s}")))),
        FMsg::EmptyFmt => f(Some(Msg::Fmt(format_args!("")))),
    }
}

fn opt(o: &Option<Vec<u8>>) -> Option<&[u8]> {
    o.as_deref()
}

/// Calls `f` with the model's event for `ev`.
fn with_event<R>(ev: &FEvent, f: impl FnOnce(&Event<'_>) -> R) -> R {
    match ev {
        FEvent::Version { exe } => f(&Event::Version { exe }),
        FEvent::TooManyFiles => f(&Event::TooManyFiles),
        FEvent::Start { argv } => f(&Event::Start {
            argv: Args::Bytes(&refs(argv)),
        }),
        FEvent::Exit { code } => f(&Event::Exit { code: *code }),
        FEvent::Atexit { code } => f(&Event::Atexit { code: *code }),
        FEvent::Signal { signo } => f(&Event::Signal { signo: *signo }),
        FEvent::Error { msg, fmt } => with_msg(msg, |m| {
            // An error always carries a message; "none" becomes an empty one.
            let msg = m.unwrap_or(Msg::Bytes(b""));
            f(&Event::Error { msg, fmt })
        }),
        FEvent::CmdPath { path } => f(&Event::CmdPath { path }),
        FEvent::CmdAncestry { ancestry } => f(&Event::CmdAncestry {
            ancestry: Args::Bytes(&refs(ancestry)),
        }),
        FEvent::CmdName { name, hierarchy } => f(&Event::CmdName { name, hierarchy }),
        FEvent::CmdMode { mode } => f(&Event::CmdMode { mode }),
        FEvent::Alias { alias, argv } => f(&Event::Alias {
            alias,
            argv: Args::Bytes(&refs(argv)),
        }),
        FEvent::ChildStart {
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
        FEvent::ChildExit {
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
        FEvent::ChildReady {
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
        FEvent::Exec { exec_id, exe, argv } => f(&Event::Exec {
            exec_id: *exec_id,
            exe: opt(exe),
            argv: Args::Bytes(&refs(argv)),
        }),
        FEvent::ExecResult { exec_id, code, err } => f(&Event::ExecResult {
            exec_id: *exec_id,
            code: *code,
            err,
        }),
        FEvent::ThreadStart => f(&Event::ThreadStart),
        FEvent::ThreadExit { t_rel } => f(&Event::ThreadExit { t_rel: *t_rel }),
        FEvent::DefParam {
            scope,
            param,
            value,
        } => f(&Event::DefParam {
            scope,
            param,
            value: opt(value),
        }),
        FEvent::DefRepo { worktree } => f(&Event::DefRepo { worktree }),
        FEvent::RegionEnter {
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
        FEvent::RegionLeave {
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
        FEvent::Data {
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
        FEvent::DataJson {
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
        FEvent::Printf { msg } => with_msg(msg, |msg| f(&Event::Printf { msg })),
        FEvent::Timer {
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
        FEvent::Counter {
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

fn line_ctx(c: &FCtx) -> LineCtx<'_> {
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

/// Sum of the lengths of every string the caller gives, plus one per string:
/// with the fixed parts and the perf dots, the base of an upper bound of the
/// line length.
fn text_len(input: &Input) -> usize {
    let total = std::cell::Cell::new(0usize);
    input
        .clone()
        .map_text(&|b: &mut Vec<u8>| total.set(total.get() + b.len() + 1));
    total.get()
}

/// Formats `ev` with `format` into a fresh buffer of `cap` bytes.
fn format_line(input: &Input, format: Format, cap: usize) -> Result<Vec<u8>, BufferTooSmall> {
    let ctx = line_ctx(&input.ctx);
    let mut buf = vec![0u8; cap];
    with_event(&input.event, |ev| format.write_line(&ctx, ev, &mut buf)).map(|n| {
        buf.truncate(n);
        buf
    })
}

/// True when `format` writes nothing for this input.
fn writes_nothing(input: &Input, format: Format) -> bool {
    let ev = &input.event;
    let nesting_filtered = matches!(
        ev,
        FEvent::RegionEnter { .. }
            | FEvent::RegionLeave { .. }
            | FEvent::Data { .. }
            | FEvent::DataJson { .. }
    );
    match format.target {
        Target::Normal => {
            nesting_filtered
                || matches!(
                    ev,
                    FEvent::TooManyFiles | FEvent::ThreadStart | FEvent::ThreadExit { .. }
                )
                || (format.brief
                    && matches!(ev, FEvent::Printf { msg } if msg.shown().is_none_or(|m| m.is_empty())))
        }
        Target::Perf => matches!(ev, FEvent::TooManyFiles),
        Target::Event => nesting_filtered && input.ctx.nesting > format.event_nesting,
    }
}

/// Replaces bytes >= 0x80 by `x`: the event target copies them raw (valid
/// UTF-8 or not), so the line parses as JSON after this, with the same
/// replacement in the strings.
fn ascii(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&c| if c >= 0x80 { b'x' } else { c })
        .collect()
}

fn ascii_string(b: &[u8]) -> Value {
    Value::String(String::from_utf8(ascii(b)).unwrap())
}

fn ascii_list(v: &[&[u8]]) -> Value {
    Value::Array(v.iter().map(|b| ascii_string(b)).collect())
}

/// Checks the parsed event line against the input: every string field comes
/// back as given, numbers and presence follow git's rules.
fn check_json(input: &Input, format: Format, obj: &serde_json::Map<String, Value>) {
    let c = &input.ctx;
    let get = |k: &str| obj.get(k).cloned();
    let name = with_event(&input.event, |ev| ev.name());
    assert_eq!(get("event"), Some(Value::from(name)));
    assert_eq!(get("sid"), Some(ascii_string(&c.sid)));
    assert_eq!(get("thread"), Some(ascii_string(&c.thread)));
    let timed =
        !format.brief || matches!(input.event, FEvent::Version { .. } | FEvent::Atexit { .. });
    assert_eq!(obj.contains_key("time"), timed);
    let located = !format.brief && !c.file.is_empty();
    assert_eq!(get("file"), located.then(|| ascii_string(&c.file)));
    assert_eq!(get("line"), located.then(|| Value::from(c.line)));
    let carries_repo = matches!(
        input.event,
        FEvent::DefRepo { .. }
            | FEvent::RegionEnter { .. }
            | FEvent::RegionLeave { .. }
            | FEvent::Data { .. }
            | FEvent::DataJson { .. }
    );
    assert_eq!(
        get("repo"),
        c.repo.filter(|_| carries_repo).map(Value::from)
    );
    let s = |b: &[u8]| Some(ascii_string(b));
    let os = |b: &Option<Vec<u8>>| b.as_deref().map(ascii_string);
    let msg = |m: &FMsg| m.shown().map(|t| ascii_string(&t));
    match &input.event {
        FEvent::Version { exe } => {
            assert_eq!(get("evt"), Some(Value::from("4")));
            assert_eq!(get("exe"), s(exe));
        }
        FEvent::Start { argv } => assert_eq!(get("argv"), Some(ascii_list(&refs(argv)))),
        FEvent::Exit { code } | FEvent::Atexit { code } => {
            assert_eq!(get("code"), Some(Value::from(*code)))
        }
        FEvent::Signal { signo } => assert_eq!(get("signo"), Some(Value::from(*signo))),
        FEvent::Error { msg: m, fmt } => {
            let text = m.shown().unwrap_or_default();
            // Shown when the format or the formatted text is non-empty; a
            // `format_args!` with arguments counts as non-empty.
            let shown = !fmt.is_empty() || !text.is_empty() || matches!(m, FMsg::Fmt(_));
            assert_eq!(get("msg"), shown.then(|| ascii_string(&text)));
            assert_eq!(get("fmt"), shown.then(|| ascii_string(fmt)));
        }
        FEvent::CmdPath { path } => assert_eq!(get("path"), s(path)),
        FEvent::CmdAncestry { ancestry } => {
            assert_eq!(get("ancestry"), Some(ascii_list(&refs(ancestry))))
        }
        FEvent::CmdName { name, hierarchy } => {
            assert_eq!(get("name"), s(name));
            assert_eq!(
                get("hierarchy"),
                (!hierarchy.is_empty()).then(|| ascii_string(hierarchy))
            );
        }
        FEvent::CmdMode { mode } => assert_eq!(get("name"), s(mode)),
        FEvent::Alias { alias, argv } => {
            assert_eq!(get("alias"), s(alias));
            assert_eq!(get("argv"), Some(ascii_list(&refs(argv))));
        }
        FEvent::ChildStart {
            child_id,
            child_class,
            hook_name,
            cd,
            use_shell,
            is_git,
            argv,
        } => {
            assert_eq!(get("child_id"), Some(Value::from(*child_id)));
            let class = match hook_name {
                Some(_) => Some(ascii_string(b"hook")),
                None => Some(ascii_string(child_class.as_deref().unwrap_or(b"?"))),
            };
            assert_eq!(get("child_class"), class);
            assert_eq!(get("hook_name"), os(hook_name));
            assert_eq!(get("cd"), os(cd));
            assert_eq!(get("use_shell"), Some(Value::Bool(*use_shell)));
            let mut all: Vec<&[u8]> = if *is_git { vec![b"git"] } else { vec![] };
            all.extend(refs(argv));
            assert_eq!(get("argv"), Some(ascii_list(&all)));
        }
        FEvent::ChildExit {
            child_id,
            pid,
            code,
            ..
        } => {
            assert_eq!(get("child_id"), Some(Value::from(*child_id)));
            assert_eq!(get("pid"), Some(Value::from(*pid)));
            assert_eq!(get("code"), Some(Value::from(*code)));
        }
        FEvent::ChildReady {
            child_id,
            pid,
            ready,
            ..
        } => {
            assert_eq!(get("child_id"), Some(Value::from(*child_id)));
            assert_eq!(get("pid"), Some(Value::from(*pid)));
            assert_eq!(get("ready"), s(ready));
        }
        FEvent::Exec { exec_id, exe, argv } => {
            assert_eq!(get("exec_id"), Some(Value::from(*exec_id)));
            assert_eq!(get("exe"), os(exe));
            assert_eq!(get("argv"), Some(ascii_list(&refs(argv))));
        }
        FEvent::ExecResult { exec_id, code, .. } => {
            assert_eq!(get("exec_id"), Some(Value::from(*exec_id)));
            assert_eq!(get("code"), Some(Value::from(*code)));
        }
        FEvent::DefParam {
            scope,
            param,
            value,
        } => {
            assert_eq!(get("scope"), s(scope));
            assert_eq!(get("param"), s(param));
            assert_eq!(get("value"), os(value));
        }
        FEvent::DefRepo { worktree } => assert_eq!(get("worktree"), s(worktree)),
        FEvent::RegionEnter {
            category,
            label,
            msg: m,
        }
        | FEvent::RegionLeave {
            category,
            label,
            msg: m,
            ..
        } => {
            assert_eq!(get("nesting"), Some(Value::from(c.nesting)));
            assert_eq!(get("category"), os(category));
            assert_eq!(get("label"), os(label));
            assert_eq!(get("msg"), msg(m));
        }
        FEvent::Data {
            category,
            key,
            value,
            ..
        } => {
            assert_eq!(get("nesting"), Some(Value::from(c.nesting)));
            assert_eq!(get("category"), s(category));
            assert_eq!(get("key"), s(key));
            assert_eq!(get("value"), s(value));
        }
        FEvent::DataJson {
            category,
            key,
            value,
            ..
        } => {
            assert_eq!(get("category"), s(category));
            assert_eq!(get("key"), s(key));
            if let FJson::Built { value, .. } = value {
                // Strings inside went through the same >= 0x80 replacement.
                let text = ascii(&serde_json::to_vec(&value.to_value()).unwrap());
                let want: Value = serde_json::from_slice(&text).unwrap();
                assert_eq!(get("value"), Some(want));
            }
        }
        FEvent::Printf { msg: m } => assert_eq!(get("msg"), msg(m)),
        FEvent::Timer {
            category,
            name,
            intervals,
            ..
        } => {
            assert_eq!(get("category"), s(category));
            assert_eq!(get("name"), s(name));
            assert_eq!(get("intervals"), Some(Value::from(*intervals)));
        }
        FEvent::Counter {
            category,
            name,
            value,
            ..
        } => {
            assert_eq!(get("category"), s(category));
            assert_eq!(get("name"), s(name));
            assert_eq!(get("count"), Some(Value::from(*value)));
        }
        FEvent::TooManyFiles | FEvent::ThreadStart | FEvent::ThreadExit { .. } => {}
    }
}

/// Lines longer than this get their too-small buffers sampled instead of all
/// tried, to keep the fuzzer fast.
const ALL_PREFIXES_UP_TO: usize = 2048;

fn check(input: &Input) {
    // Generous: every string escaped 6x (`\u00xx`), the fixed parts, the
    // perf dots.
    let dots = usize::try_from(input.ctx.nesting)
        .unwrap_or(usize::MAX)
        .saturating_mul(2);
    let bound = text_len(input)
        .saturating_mul(6)
        .saturating_add(4096)
        .saturating_add(dots);
    let fits = bound <= 1 << 20;
    let mut twin = input.clone();
    twin.map_text(&|b: &mut Vec<u8>| {
        for c in b.iter_mut() {
            if *c == b'\n' {
                *c = b' ';
            }
        }
    });
    for target in [Target::Normal, Target::Perf, Target::Event] {
        for brief in [false, true] {
            let format = Format {
                target,
                brief,
                event_nesting: input.event_nesting,
            };
            let cap = if fits { bound } else { 1 << 20 };
            let line = match format_line(input, format, cap) {
                Ok(line) => line,
                Err(BufferTooSmall) if !fits => continue,
                Err(BufferTooSmall) => panic!("{format:?}: {bound}-byte buffer too small"),
            };
            assert_eq!(
                line.is_empty(),
                writes_nothing(input, format),
                "{format:?}: {line:?}"
            );
            if line.is_empty() {
                continue;
            }
            assert_eq!(line.last(), Some(&b'\n'), "{format:?}: no final LF");
            if target == Target::Event {
                let body = &line[..line.len() - 1];
                assert!(
                    !body.contains(&b'\n'),
                    "event line with an inner LF: {line:?}"
                );
                // Raw data_json text is inserted verbatim, as git does: such a
                // line is JSON only if the text was.
                let raw_json = matches!(
                    input.event,
                    FEvent::DataJson {
                        value: FJson::Raw(_),
                        ..
                    }
                );
                match serde_json::from_slice::<Value>(&ascii(body)) {
                    Ok(parsed) => {
                        let obj = parsed.as_object().expect("event line is an object");
                        check_json(input, format, obj);
                    }
                    Err(_) if raw_json => {}
                    Err(e) => panic!("event line is not JSON ({e}): {line:?}"),
                }
            } else {
                let twin_line = format_line(&twin, format, cap).expect("twin fits");
                let mapped: Vec<u8> = line
                    .iter()
                    .map(|&c| if c == b'\n' { b' ' } else { c })
                    .collect();
                let (n, m) = (line.len(), twin_line.len());
                assert_eq!(twin_line.last(), Some(&b'\n'), "{format:?}");
                assert_eq!(
                    twin_line.iter().filter(|&&c| c == b'\n').count(),
                    1,
                    "{format:?}: LF-free input, one LF: {twin_line:?}"
                );
                // Either both end with the LF the formatter added, or the
                // payload already ended with LF and got no second one.
                let same_lines = (n == m && mapped[..n - 1] == twin_line[..m - 1])
                    || (m == n + 1 && mapped[..] == twin_line[..n]);
                assert!(
                    same_lines,
                    "{format:?}: LFs not from the caller: {line:?} vs {twin_line:?}"
                );
            }
            // Every shorter buffer fails (sampled for long lines).
            let n = line.len();
            let short: Box<dyn Iterator<Item = usize>> = if n <= ALL_PREFIXES_UP_TO {
                Box::new(0..n)
            } else {
                Box::new(
                    (0..64)
                        .chain((64..n - 64).step_by(n / 512 + 1))
                        .chain(n - 64..n),
                )
            };
            for cap in short {
                assert_eq!(
                    format_line(input, format, cap),
                    Err(BufferTooSmall),
                    "{format:?}: {cap}-byte buffer for a {n}-byte line"
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    if let Ok(input) = Input::arbitrary(&mut u) {
        check(&input);
    }
});
