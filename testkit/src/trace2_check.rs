//! What the Trace2 formatters promise for any input of
//! [`trace2_gen`](crate::trace2_gen), checked by [`check`] (which panics on a
//! broken promise, so a proptest case or a fuzz run fails):
//!
//! * no panic, and `Ok(n)` whenever the buffer can hold the line, the same line
//!   in a buffer of exactly `n` bytes;
//! * `Ok(0)` exactly for the events a target does not write (the normal
//!   target's thread/region/data events, `too_many_files` outside the event
//!   target, region/data events beyond the event target's nesting filter, and
//!   the normal target's empty brief `printf`);
//! * an event line is one line: JSON that parses, followed by one LF, with no
//!   other LF, and its strings round-trip (the context's strings exactly, in
//!   git's escaping: no raw control byte or quote, lowercase `\u00xx`);
//! * a normal or perf line ends with one LF, and every other LF in it is one
//!   the caller put in a string (the same input with LFs replaced by spaces
//!   gives the same line with spaces there): git writes payloads raw;
//! * every buffer shorter than the line gives `BufferTooSmall`.

use flightrec_core::trace2::{BufferTooSmall, Format, Target};
use serde_json::Value;

use crate::trace2_gen::{
    line_ctx, refs, with_event, EventInput, JsonInput, MapText, MsgInput, Trace2Input,
};

/// Sum of the lengths of every string the caller gives, plus one per string:
/// with the fixed parts and the perf dots, the base of an upper bound of the
/// line length.
fn text_len(input: &Trace2Input) -> usize {
    let total = std::cell::Cell::new(0usize);
    input
        .clone()
        .map_text(&|b: &mut Vec<u8>| total.set(total.get() + b.len() + 1));
    total.get()
}

/// Formats `ev` with `format` into a fresh buffer of `cap` bytes.
fn format_line(input: &Trace2Input, format: Format, cap: usize) -> Result<Vec<u8>, BufferTooSmall> {
    let ctx = line_ctx(&input.ctx);
    let mut buf = vec![0u8; cap];
    with_event(&input.event, |ev| format.write_line(&ctx, ev, &mut buf)).map(|n| {
        buf.truncate(n);
        buf
    })
}

/// True when `format` writes nothing for this input.
fn writes_nothing(input: &Trace2Input, format: Format) -> bool {
    let ev = &input.event;
    let nesting_filtered = matches!(
        ev,
        EventInput::RegionEnter { .. }
            | EventInput::RegionLeave { .. }
            | EventInput::Data { .. }
            | EventInput::DataJson { .. }
    );
    match format.target {
        Target::Normal => {
            nesting_filtered
                || matches!(
                    ev,
                    EventInput::TooManyFiles
                        | EventInput::ThreadStart
                        | EventInput::ThreadExit { .. }
                )
                || (format.brief
                    && matches!(ev, EventInput::Printf { msg } if msg.shown().is_none_or(|m| m.is_empty())))
        }
        Target::Perf => matches!(ev, EventInput::TooManyFiles),
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
fn check_json(input: &Trace2Input, format: Format, obj: &serde_json::Map<String, Value>) {
    let c = &input.ctx;
    let get = |k: &str| obj.get(k).cloned();
    let name = with_event(&input.event, |ev| ev.name());
    assert_eq!(get("event"), Some(Value::from(name)));
    assert_eq!(get("sid"), Some(ascii_string(&c.sid)));
    assert_eq!(get("thread"), Some(ascii_string(&c.thread)));
    let timed = !format.brief
        || matches!(
            input.event,
            EventInput::Version { .. } | EventInput::Atexit { .. }
        );
    assert_eq!(obj.contains_key("time"), timed);
    let located = !format.brief && !c.file.is_empty();
    assert_eq!(get("file"), located.then(|| ascii_string(&c.file)));
    assert_eq!(get("line"), located.then(|| Value::from(c.line)));
    let carries_repo = matches!(
        input.event,
        EventInput::DefRepo { .. }
            | EventInput::RegionEnter { .. }
            | EventInput::RegionLeave { .. }
            | EventInput::Data { .. }
            | EventInput::DataJson { .. }
    );
    assert_eq!(
        get("repo"),
        c.repo.filter(|_| carries_repo).map(Value::from)
    );
    let s = |b: &[u8]| Some(ascii_string(b));
    let os = |b: &Option<Vec<u8>>| b.as_deref().map(ascii_string);
    let msg = |m: &MsgInput| m.shown().map(|t| ascii_string(&t));
    match &input.event {
        EventInput::Version { exe } => {
            assert_eq!(get("evt"), Some(Value::from("4")));
            assert_eq!(get("exe"), s(exe));
        }
        EventInput::Start { argv } => assert_eq!(get("argv"), Some(ascii_list(&refs(argv)))),
        EventInput::Exit { code } | EventInput::Atexit { code } => {
            assert_eq!(get("code"), Some(Value::from(*code)))
        }
        EventInput::Signal { signo } => assert_eq!(get("signo"), Some(Value::from(*signo))),
        EventInput::Error { msg: m, fmt } => {
            let text = m.shown().unwrap_or_default();
            // Shown when the format or the formatted text is non-empty; a
            // `format_args!` with arguments counts as non-empty.
            let shown = !fmt.is_empty() || !text.is_empty() || matches!(m, MsgInput::Fmt(_));
            assert_eq!(get("msg"), shown.then(|| ascii_string(&text)));
            assert_eq!(get("fmt"), shown.then(|| ascii_string(fmt)));
        }
        EventInput::CmdPath { path } => assert_eq!(get("path"), s(path)),
        EventInput::CmdAncestry { ancestry } => {
            assert_eq!(get("ancestry"), Some(ascii_list(&refs(ancestry))))
        }
        EventInput::CmdName { name, hierarchy } => {
            assert_eq!(get("name"), s(name));
            assert_eq!(
                get("hierarchy"),
                (!hierarchy.is_empty()).then(|| ascii_string(hierarchy))
            );
        }
        EventInput::CmdMode { mode } => assert_eq!(get("name"), s(mode)),
        EventInput::Alias { alias, argv } => {
            assert_eq!(get("alias"), s(alias));
            assert_eq!(get("argv"), Some(ascii_list(&refs(argv))));
        }
        EventInput::ChildStart {
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
        EventInput::ChildExit {
            child_id,
            pid,
            code,
            ..
        } => {
            assert_eq!(get("child_id"), Some(Value::from(*child_id)));
            assert_eq!(get("pid"), Some(Value::from(*pid)));
            assert_eq!(get("code"), Some(Value::from(*code)));
        }
        EventInput::ChildReady {
            child_id,
            pid,
            ready,
            ..
        } => {
            assert_eq!(get("child_id"), Some(Value::from(*child_id)));
            assert_eq!(get("pid"), Some(Value::from(*pid)));
            assert_eq!(get("ready"), s(ready));
        }
        EventInput::Exec { exec_id, exe, argv } => {
            assert_eq!(get("exec_id"), Some(Value::from(*exec_id)));
            assert_eq!(get("exe"), os(exe));
            assert_eq!(get("argv"), Some(ascii_list(&refs(argv))));
        }
        EventInput::ExecResult { exec_id, code, .. } => {
            assert_eq!(get("exec_id"), Some(Value::from(*exec_id)));
            assert_eq!(get("code"), Some(Value::from(*code)));
        }
        EventInput::DefParam {
            scope,
            param,
            value,
        } => {
            assert_eq!(get("scope"), s(scope));
            assert_eq!(get("param"), s(param));
            assert_eq!(get("value"), os(value));
        }
        EventInput::DefRepo { worktree } => assert_eq!(get("worktree"), s(worktree)),
        EventInput::RegionEnter {
            category,
            label,
            msg: m,
        }
        | EventInput::RegionLeave {
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
        EventInput::Data {
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
        EventInput::DataJson {
            category,
            key,
            value,
            ..
        } => {
            assert_eq!(get("category"), s(category));
            assert_eq!(get("key"), s(key));
            if let JsonInput::Built { value, .. } = value {
                // Strings inside went through the same >= 0x80 replacement.
                let text = ascii(&serde_json::to_vec(&value.to_value()).unwrap());
                let want: Value = serde_json::from_slice(&text).unwrap();
                assert_eq!(get("value"), Some(want));
            }
        }
        EventInput::Printf { msg: m } => assert_eq!(get("msg"), msg(m)),
        EventInput::Timer {
            category,
            name,
            intervals,
            ..
        } => {
            assert_eq!(get("category"), s(category));
            assert_eq!(get("name"), s(name));
            assert_eq!(get("intervals"), Some(Value::from(*intervals)));
        }
        EventInput::Counter {
            category,
            name,
            value,
            ..
        } => {
            assert_eq!(get("category"), s(category));
            assert_eq!(get("name"), s(name));
            assert_eq!(get("count"), Some(Value::from(*value)));
        }
        EventInput::TooManyFiles | EventInput::ThreadStart | EventInput::ThreadExit { .. } => {}
    }
}

/// Lines longer than this get their too-small buffers sampled instead of all
/// tried, to keep the fuzzer fast.
const ALL_PREFIXES_UP_TO: usize = 2048;

/// Writes `input` with every target, full and brief, and checks every promise
/// listed in the module documentation; panics on the first one broken.
///
/// ```
/// use flightrec_testkit::{trace2_check, trace2_gen};
///
/// let input = trace2_gen::from_bytes(b"\x03\x0a\"quoted\" bytes\xff").unwrap();
/// trace2_check::check(&input);
/// ```
pub fn check(input: &Trace2Input) {
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
                // The context's strings come before any raw data_json text:
                // each is the caller's bytes exactly, in git's escaping.
                let c = &input.ctx;
                let field = |key: &str| unescape_git_json(raw_string_field(body, key));
                assert_eq!(field("sid"), c.sid, "{format:?}: sid in {line:?}");
                assert_eq!(field("thread"), c.thread, "{format:?}: thread in {line:?}");
                if !brief && !c.file.is_empty() {
                    assert_eq!(field("file"), c.file, "{format:?}: file in {line:?}");
                }
                // Raw data_json text is inserted verbatim, as git does: such a
                // line is JSON only if the text was.
                let raw_json = matches!(
                    input.event,
                    EventInput::DataJson {
                        value: JsonInput::Raw(_),
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
            // A buffer of exactly the line's length holds it.
            let n = line.len();
            assert_eq!(
                format_line(input, format, n).as_ref(),
                Ok(&line),
                "{format:?}: {n}-byte buffer for a {n}-byte line"
            );
            // Every shorter buffer fails (sampled for long lines).
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

/// Decodes a JSON string body written with git's escaping back to raw bytes.
pub fn unescape_git_json(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            assert_ne!(s[i], b'"', "unescaped quote");
            assert!(s[i] >= 0x20, "raw control byte {:#x}", s[i]);
            out.push(s[i]);
            i += 1;
            continue;
        }
        let e = s[i + 1];
        i += 2;
        out.push(match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'f' => 0x0c,
            b'b' => 0x08,
            b'u' => {
                let hex = std::str::from_utf8(&s[i..i + 4]).unwrap();
                assert_eq!(hex, hex.to_lowercase(), "git writes lowercase hex");
                i += 4;
                u8::try_from(u16::from_str_radix(hex, 16).unwrap()).unwrap()
            }
            other => panic!("unknown escape {other}"),
        });
    }
    out
}

/// Splits `"key":"<body>"` out of a line: returns the raw body bytes.
pub fn raw_string_field<'l>(line: &'l [u8], key: &str) -> &'l [u8] {
    let pat = format!("\"{key}\":\"");
    let start = line
        .windows(pat.len())
        .position(|w| w == pat.as_bytes())
        .expect("key present")
        + pat.len();
    let mut i = start;
    while line[i] != b'"' {
        i += if line[i] == b'\\' { 2 } else { 1 };
    }
    &line[start..i]
}
