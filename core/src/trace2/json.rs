//! The event target: one compact JSON object per line, keys in git's order.

use super::ctx::LineCtx;
use super::event::{Args, Event, Msg};
use super::line::{LineBuf, Result};
use super::text::{shown, write_json_escaped, write_json_string, write_msg_json};
use super::time::write_iso8601;

/// The bytes `,"name":` as one literal, so each key is a single copy.
macro_rules! k {
    ($name:literal) => {
        concat!(",\"", $name, "\":").as_bytes()
    };
}

/// The bytes `,"name":"` (a key and the opening quote of its string value).
macro_rules! ks {
    ($name:literal) => {
        concat!(",\"", $name, "\":\"").as_bytes()
    };
}

/// Git's default `eventNesting`: top-level regions and their direct children.
///
/// ```
/// use flightrec_core::trace2::json::{parse_event_nesting, write_line, DEFAULT_EVENT_NESTING};
/// use flightrec_core::trace2::{Event, LineCtx};
/// assert_eq!(parse_event_nesting(b""), DEFAULT_EVENT_NESTING);
/// let ev = Event::RegionEnter { category: Some(b"diff"), label: Some(b"setup"), msg: None };
/// let mut buf = [0u8; 256];
/// let at = |nesting| LineCtx { nesting, ..LineCtx::new(b"sid", b"main") };
/// assert!(write_line(true, DEFAULT_EVENT_NESTING, &at(2), &ev, &mut buf).unwrap() > 0);
/// assert_eq!(write_line(true, DEFAULT_EVENT_NESTING, &at(3), &ev, &mut buf), Ok(0));
/// ```
pub const DEFAULT_EVENT_NESTING: u32 = 2;

/// Parses an `eventNesting` setting like git: `atoi()`, used only when `> 0`,
/// otherwise the default 2.
///
/// ```
/// use flightrec_core::trace2::json::parse_event_nesting;
/// assert_eq!(parse_event_nesting(b"10"), 10);
/// assert_eq!(parse_event_nesting(b"0"), 2);
/// assert_eq!(parse_event_nesting(b" 3x"), 3);
/// assert_eq!(parse_event_nesting(b"junk"), 2);
/// ```
pub fn parse_event_nesting(s: &[u8]) -> u32 {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let negative = i < s.len() && s[i] == b'-';
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        i += 1;
    }
    let mut v: u32 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add(u32::from(s[i] - b'0'));
        i += 1;
    }
    if negative || v == 0 {
        DEFAULT_EVENT_NESTING
    } else {
        v
    }
}

/// Formats `ev` as one event-target (JSON) line into `out` and returns its length.
///
/// `event_nesting` is the target's filter: `region_*`, `data` and `data_json`
/// events with `ctx.nesting > event_nesting` are not written (`Ok(0)`).
/// In brief mode `file`/`line` are omitted and `time` is kept only on `version`
/// and `atexit`. On [`BufferTooSmall`](super::BufferTooSmall) the buffer content
/// is unspecified.
///
/// ```
/// use flightrec_core::trace2::{json, Event, LineCtx};
/// let ctx = LineCtx { t_abs: 45, ..LineCtx::new(b"S", b"main") };
/// let mut buf = [0u8; 128];
/// let n = json::write_line(true, 2, &ctx, &Event::Exit { code: 0 }, &mut buf).unwrap();
/// assert_eq!(&buf[..n], &b"{\"event\":\"exit\",\"sid\":\"S\",\"thread\":\"main\",\"t_abs\":0.000045,\"code\":0}\n"[..]);
/// ```
pub fn write_line(
    brief: bool,
    event_nesting: u32,
    ctx: &LineCtx<'_>,
    ev: &Event<'_>,
    out: &mut [u8],
) -> Result<usize> {
    if ev.is_nesting_filtered() && ctx.nesting > event_nesting {
        return Ok(0);
    }
    let mut l = LineBuf::new(out);
    l.put(head(ev))?;
    write_json_escaped(&mut l, ctx.sid)?;
    l.put(b"\",\"thread\":\"")?;
    write_json_escaped(&mut l, ctx.thread)?;
    if !brief || matches!(ev, Event::Version { .. } | Event::Atexit { .. }) {
        l.put(b"\",\"time\":\"")?;
        write_iso8601(&mut l, ctx.time)?;
    }
    if !brief && !ctx.file.is_empty() {
        l.put(b"\",\"file\":\"")?;
        write_json_escaped(&mut l, ctx.file)?;
        l.put(b"\",\"line\":")?;
        l.u64(u64::from(ctx.line))?;
    } else {
        l.byte(b'"')?;
    }
    if let (true, Some(repo)) = (carries_repo(ev), ctx.repo) {
        l.put(b",\"repo\":")?;
        l.i64(i64::from(repo))?;
    }
    match *ev {
        // The events a traced program writes most often are formatted right
        // here, with their field writers inlined: the write position then
        // stays in a register instead of going through memory at every call.
        Event::RegionEnter {
            category,
            label,
            msg,
        } => region_fields(&mut l, ctx.nesting, category, label, &msg)?,
        Event::RegionLeave {
            t_rel,
            category,
            label,
            msg,
        } => {
            time_field(&mut l, k!("t_rel"), t_rel)?;
            region_fields(&mut l, ctx.nesting, category, label, &msg)?
        }
        Event::Data {
            t_rel,
            category,
            key,
            value,
        } => {
            data_fields(&mut l, ctx, t_rel, category, key)?;
            l.put(b"\"")?;
            write_json_escaped(&mut l, value)?;
            l.byte(b'"')?
        }
        _ => body(&mut l, ctx, ev)?,
    }
    l.put(b"}\n")?;
    Ok(l.len())
}

/// `{"event":"<name>","sid":"` as one literal per event.
fn head(ev: &Event<'_>) -> &'static [u8] {
    macro_rules! head {
        ($name:literal) => {
            concat!("{\"event\":\"", $name, "\",\"sid\":\"").as_bytes()
        };
    }
    match ev {
        Event::Version { .. } => head!("version"),
        Event::TooManyFiles => head!("too_many_files"),
        Event::Start { .. } => head!("start"),
        Event::Exit { .. } => head!("exit"),
        Event::Atexit { .. } => head!("atexit"),
        Event::Signal { .. } => head!("signal"),
        Event::Error { .. } => head!("error"),
        Event::CmdPath { .. } => head!("cmd_path"),
        Event::CmdAncestry { .. } => head!("cmd_ancestry"),
        Event::CmdName { .. } => head!("cmd_name"),
        Event::CmdMode { .. } => head!("cmd_mode"),
        Event::Alias { .. } => head!("alias"),
        Event::ChildStart { .. } => head!("child_start"),
        Event::ChildExit { .. } => head!("child_exit"),
        Event::ChildReady { .. } => head!("child_ready"),
        Event::Exec { .. } => head!("exec"),
        Event::ExecResult { .. } => head!("exec_result"),
        Event::ThreadStart => head!("thread_start"),
        Event::ThreadExit { .. } => head!("thread_exit"),
        Event::DefParam { .. } => head!("def_param"),
        Event::DefRepo { .. } => head!("def_repo"),
        Event::RegionEnter { .. } => head!("region_enter"),
        Event::RegionLeave { .. } => head!("region_leave"),
        Event::Data { .. } => head!("data"),
        Event::DataJson { .. } => head!("data_json"),
        Event::Printf { .. } => head!("printf"),
        Event::Timer {
            per_thread: true, ..
        } => head!("th_timer"),
        Event::Timer { .. } => head!("timer"),
        Event::Counter {
            per_thread: true, ..
        } => head!("th_counter"),
        Event::Counter { .. } => head!("counter"),
    }
}

fn carries_repo(ev: &Event<'_>) -> bool {
    matches!(
        ev,
        Event::DefRepo { .. }
            | Event::RegionEnter { .. }
            | Event::RegionLeave { .. }
            | Event::Data { .. }
            | Event::DataJson { .. }
    )
}

/// Writes a key made by [`k!`].
#[inline(always)]
fn key(l: &mut LineBuf<'_>, k: &[u8]) -> Result {
    l.put(k)
}

/// A string field; `k` comes from [`ks!`]. Inlined: for the hot events.
#[inline(always)]
fn str_field(l: &mut LineBuf<'_>, k: &[u8], v: &[u8]) -> Result {
    key(l, k)?;
    write_json_escaped(l, v)?;
    l.byte(b'"')
}

/// [`str_field`] as a call, for the other events (keeps the code small).
#[inline(never)]
fn str_field_outlined(l: &mut LineBuf<'_>, k: &[u8], v: &[u8]) -> Result {
    str_field(l, k, v)
}

#[inline(always)]
fn int_field(l: &mut LineBuf<'_>, k: &[u8], v: i64) -> Result {
    key(l, k)?;
    l.i64(v)
}

/// A `%.6f` seconds field. Inlined: for the hot events.
#[inline(always)]
fn time_field(l: &mut LineBuf<'_>, k: &[u8], us: u64) -> Result {
    key(l, k)?;
    l.micros_fixed6(us)
}

/// [`time_field`] as a call, for the other events.
#[inline(never)]
fn time_field_outlined(l: &mut LineBuf<'_>, k: &[u8], us: u64) -> Result {
    time_field(l, k, us)
}

/// The fields of `data` and `data_json` before `"value":`, which the caller
/// writes (a string or verbatim JSON).
#[inline(always)]
fn data_fields(
    l: &mut LineBuf<'_>,
    ctx: &LineCtx<'_>,
    t_rel: u64,
    category: &[u8],
    key: &[u8],
) -> Result {
    time_field(l, k!("t_abs"), ctx.t_abs)?;
    time_field(l, k!("t_rel"), t_rel)?;
    int_field(l, k!("nesting"), i64::from(ctx.nesting))?;
    str_field(l, ks!("category"), category)?;
    str_field(l, ks!("key"), key)?;
    l.put(k!("value"))
}

fn msg_field(l: &mut LineBuf<'_>, msg: &Msg<'_>) -> Result {
    key(l, k!("msg"))?;
    l.byte(b'"')?;
    write_msg_json(l, msg)?;
    l.byte(b'"')
}

fn argv_field(l: &mut LineBuf<'_>, k: &[u8], first: Option<&[u8]>, argv: Args<'_>) -> Result {
    key(l, k)?;
    l.byte(b'[')?;
    let mut sep = false;
    for a in first.into_iter().chain(argv.iter()) {
        if sep {
            l.byte(b',')?;
        }
        write_json_string(l, a)?;
        sep = true;
    }
    l.byte(b']')
}

/// Copies pre-built JSON, dropping line breaks and the indentation after them
/// (git does this for values built "pretty").
fn raw_json(l: &mut LineBuf<'_>, json: &[u8]) -> Result {
    if !json.contains(&b'\n') {
        return l.put(json);
    }
    let mut skipping = false;
    for &b in json {
        if b == b'\n' {
            skipping = true;
        } else if !(skipping && b == b' ') {
            skipping = false;
            l.byte(b)?;
        }
    }
    Ok(())
}

#[inline(always)]
fn region_fields(
    l: &mut LineBuf<'_>,
    nesting: u32,
    category: Option<&[u8]>,
    label: Option<&[u8]>,
    msg: &Option<Msg<'_>>,
) -> Result {
    int_field(l, k!("nesting"), i64::from(nesting))?;
    if let Some(c) = category {
        str_field(l, ks!("category"), c)?;
    }
    if let Some(lab) = label {
        str_field(l, ks!("label"), lab)?;
    }
    if let Some(m) = shown(msg) {
        msg_field(l, m)?;
    }
    Ok(())
}

/// The fields of the events [`write_line`] does not format inline.
#[inline(never)]
fn body(l: &mut LineBuf<'_>, ctx: &LineCtx<'_>, ev: &Event<'_>) -> Result {
    match *ev {
        Event::Version { exe } => {
            l.put(b",\"evt\":\"4\"")?;
            str_field_outlined(l, ks!("exe"), exe)
        }
        Event::TooManyFiles | Event::ThreadStart => Ok(()),
        Event::Start { argv } => {
            time_field_outlined(l, k!("t_abs"), ctx.t_abs)?;
            argv_field(l, k!("argv"), None, argv)
        }
        Event::Exit { code } | Event::Atexit { code } => {
            time_field_outlined(l, k!("t_abs"), ctx.t_abs)?;
            int_field(l, k!("code"), i64::from(code))
        }
        Event::Signal { signo } => {
            time_field_outlined(l, k!("t_abs"), ctx.t_abs)?;
            int_field(l, k!("signo"), i64::from(signo))
        }
        Event::Error { msg, fmt } => {
            if !fmt.is_empty() || !msg.is_empty() {
                msg_field(l, &msg)?;
                str_field_outlined(l, ks!("fmt"), fmt)?;
            }
            Ok(())
        }
        Event::CmdPath { path } => str_field_outlined(l, ks!("path"), path),
        Event::CmdAncestry { ancestry } => argv_field(l, k!("ancestry"), None, ancestry),
        Event::CmdName { name, hierarchy } => {
            str_field_outlined(l, ks!("name"), name)?;
            if !hierarchy.is_empty() {
                str_field_outlined(l, ks!("hierarchy"), hierarchy)?;
            }
            Ok(())
        }
        Event::CmdMode { mode } => str_field_outlined(l, ks!("name"), mode),
        Event::Alias { alias, argv } => {
            str_field_outlined(l, ks!("alias"), alias)?;
            argv_field(l, k!("argv"), None, argv)
        }
        Event::ChildStart {
            child_id,
            child_class,
            hook_name,
            cd,
            use_shell,
            is_git,
            argv,
        } => {
            int_field(l, k!("child_id"), child_id)?;
            match hook_name {
                Some(hook) => {
                    str_field_outlined(l, ks!("child_class"), b"hook")?;
                    str_field_outlined(l, ks!("hook_name"), hook)?;
                }
                None => str_field_outlined(l, ks!("child_class"), child_class.unwrap_or(b"?"))?,
            }
            if let Some(dir) = cd {
                str_field_outlined(l, ks!("cd"), dir)?;
            }
            key(l, k!("use_shell"))?;
            l.put(if use_shell { b"true" } else { b"false" })?;
            argv_field(l, k!("argv"), is_git.then_some(&b"git"[..]), argv)
        }
        Event::ChildExit {
            child_id,
            pid,
            code,
            t_rel,
        } => {
            int_field(l, k!("child_id"), child_id)?;
            int_field(l, k!("pid"), pid)?;
            int_field(l, k!("code"), i64::from(code))?;
            time_field_outlined(l, k!("t_rel"), t_rel)
        }
        Event::ChildReady {
            child_id,
            pid,
            ready,
            t_rel,
        } => {
            int_field(l, k!("child_id"), child_id)?;
            int_field(l, k!("pid"), pid)?;
            str_field_outlined(l, ks!("ready"), ready)?;
            time_field_outlined(l, k!("t_rel"), t_rel)
        }
        Event::Exec { exec_id, exe, argv } => {
            int_field(l, k!("exec_id"), exec_id)?;
            if let Some(exe) = exe {
                str_field_outlined(l, ks!("exe"), exe)?;
            }
            argv_field(l, k!("argv"), None, argv)
        }
        Event::ExecResult { exec_id, code, .. } => {
            int_field(l, k!("exec_id"), exec_id)?;
            int_field(l, k!("code"), i64::from(code))
        }
        Event::ThreadExit { t_rel } => time_field_outlined(l, k!("t_rel"), t_rel),
        Event::DefParam {
            scope,
            param,
            value,
        } => {
            str_field_outlined(l, ks!("scope"), scope)?;
            str_field_outlined(l, ks!("param"), param)?;
            match value {
                Some(v) => str_field_outlined(l, ks!("value"), v),
                None => Ok(()),
            }
        }
        Event::DefRepo { worktree } => str_field_outlined(l, ks!("worktree"), worktree),
        // Formatted inline by `write_line`.
        Event::RegionEnter { .. } | Event::RegionLeave { .. } | Event::Data { .. } => Ok(()),
        Event::DataJson {
            t_rel,
            category,
            key,
            value,
        } => {
            data_fields(l, ctx, t_rel, category, key)?;
            raw_json(l, value)
        }
        Event::Printf { msg } => {
            time_field_outlined(l, k!("t_abs"), ctx.t_abs)?;
            if let Some(m) = shown(&msg) {
                msg_field(l, m)?;
            }
            Ok(())
        }
        Event::Timer {
            category,
            name,
            intervals,
            total_ns,
            min_ns,
            max_ns,
            ..
        } => {
            str_field_outlined(l, ks!("category"), category)?;
            str_field_outlined(l, ks!("name"), name)?;
            key(l, k!("intervals"))?;
            l.u64(intervals)?;
            time_field_outlined(l, k!("t_total"), super::line::ns_to_printf_micros(total_ns))?;
            time_field_outlined(l, k!("t_min"), super::line::ns_to_printf_micros(min_ns))?;
            time_field_outlined(l, k!("t_max"), super::line::ns_to_printf_micros(max_ns))
        }
        Event::Counter {
            category,
            name,
            value,
            ..
        } => {
            str_field_outlined(l, ks!("category"), category)?;
            str_field_outlined(l, ks!("name"), name)?;
            key(l, k!("count"))?;
            l.u64(value)
        }
    }
}
