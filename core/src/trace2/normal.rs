//! The normal target: human-readable lines (`HH:MM:SS.uuuuuu file:line  payload`).

use super::ctx::LineCtx;
use super::event::Event;
use super::line::{LineBuf, Result};
use super::text::{shown, write_msg_raw, write_sq_argv, write_sq_pretty};
use super::time::write_time_of_day;

/// Width of the prefix (time, space, `file:line`, space) the payload starts after.
const PREFIX_WIDTH: usize = 50;

/// Formats `ev` as one normal-target line into `out` and returns its length.
///
/// Returns `Ok(0)` when the normal target prints nothing for the event
/// (threads, regions, data, `too_many_files`) and for an empty brief `printf`.
/// On [`BufferTooSmall`](super::BufferTooSmall) the buffer content is unspecified.
///
/// ```
/// use flightrec_core::trace2::{normal, Event, LineCtx, WallTime};
/// let ctx = LineCtx {
///     time: WallTime::new(1_700_000_000, 123_456),
///     file: b"git.c",
///     line: 752,
///     t_abs: 45,
///     ..LineCtx::new(b"sid", b"main")
/// };
/// let mut buf = [0u8; 128];
/// let n = normal::write_line(false, &ctx, &Event::Exit { code: 0 }, &mut buf).unwrap();
/// assert_eq!(
///     &buf[..n],
///     &b"22:13:20.123456 git.c:752                         exit elapsed:0.000045 code:0\n"[..]
/// );
/// ```
pub fn write_line(brief: bool, ctx: &LineCtx<'_>, ev: &Event<'_>, out: &mut [u8]) -> Result<usize> {
    if matches!(
        ev,
        Event::TooManyFiles
            | Event::ThreadStart
            | Event::ThreadExit { .. }
            | Event::RegionEnter { .. }
            | Event::RegionLeave { .. }
            | Event::Data { .. }
            | Event::DataJson { .. }
    ) {
        return Ok(0);
    }
    let mut l = LineBuf::new(out);
    if !brief {
        write_time_of_day(&mut l, &ctx.time.time_of_day(ctx.utc_offset_secs))?;
        l.byte(b' ')?;
        if !ctx.file.is_empty() {
            l.put(ctx.file)?;
            l.byte(b':')?;
            l.u64(u64::from(ctx.line))?;
            l.byte(b' ')?;
        }
        l.pad_to(0, PREFIX_WIDTH)?;
    }
    payload(&mut l, ctx, ev)?;
    if l.last().is_some_and(|b| b != b'\n') {
        l.byte(b'\n')?;
    }
    Ok(l.len())
}

fn elapsed(l: &mut LineBuf<'_>, word: &[u8], t_abs: u64, code: i32) -> Result {
    l.put(word)?;
    l.put(b" elapsed:")?;
    l.micros_fixed6(t_abs)?;
    l.put(b" code:")?;
    l.i64(i64::from(code))
}

fn payload(l: &mut LineBuf<'_>, ctx: &LineCtx<'_>, ev: &Event<'_>) -> Result {
    match *ev {
        Event::Version { exe } => {
            l.put(b"version ")?;
            l.put(exe)
        }
        Event::Start { argv } => {
            l.put(b"start ")?;
            write_sq_argv(l, argv)
        }
        Event::Exit { code } => elapsed(l, b"exit", ctx.t_abs, code),
        Event::Signal { signo } => elapsed(l, b"signal", ctx.t_abs, signo),
        Event::Atexit { code } => elapsed(l, b"atexit", ctx.t_abs, code),
        Event::Error { msg, fmt } => {
            l.put(b"error")?;
            if !fmt.is_empty() || !msg.is_empty() {
                l.byte(b' ')?;
                write_msg_raw(l, &msg)?;
            }
            Ok(())
        }
        Event::CmdPath { path } => {
            l.put(b"cmd_path ")?;
            l.put(path)
        }
        Event::CmdAncestry { ancestry } => {
            l.put(b"cmd_ancestry ")?;
            for (i, a) in ancestry.iter().enumerate() {
                if i > 0 {
                    l.put(b" <- ")?;
                }
                l.put(a)?;
            }
            Ok(())
        }
        Event::CmdName { name, hierarchy } => {
            l.put(b"cmd_name ")?;
            l.put(name)?;
            if !hierarchy.is_empty() {
                l.put(b" (")?;
                l.put(hierarchy)?;
                l.byte(b')')?;
            }
            Ok(())
        }
        Event::CmdMode { mode } => {
            l.put(b"cmd_mode ")?;
            l.put(mode)
        }
        Event::Alias { alias, argv } => {
            l.put(b"alias ")?;
            l.put(alias)?;
            l.put(b" -> ")?;
            write_sq_argv(l, argv)
        }
        Event::ChildStart {
            child_id,
            cd,
            is_git,
            argv,
            ..
        } => {
            l.put(b"child_start[")?;
            l.i64(child_id)?;
            l.byte(b']')?;
            if let Some(dir) = cd {
                l.put(b" cd ")?;
                write_sq_pretty(l, dir)?;
                l.byte(b';')?;
            }
            l.byte(b' ')?;
            if is_git {
                l.put(b"git ")?;
            }
            write_sq_argv(l, argv)
        }
        Event::ChildExit {
            child_id,
            pid,
            code,
            t_rel,
        } => {
            l.put(b"child_exit[")?;
            l.i64(child_id)?;
            l.put(b"] pid:")?;
            l.i64(pid)?;
            l.put(b" code:")?;
            l.i64(i64::from(code))?;
            l.put(b" elapsed:")?;
            l.micros_fixed6(t_rel)
        }
        Event::ChildReady {
            child_id,
            pid,
            ready,
            t_rel,
        } => {
            l.put(b"child_ready[")?;
            l.i64(child_id)?;
            l.put(b"] pid:")?;
            l.i64(pid)?;
            l.put(b" ready:")?;
            l.put(ready)?;
            l.put(b" elapsed:")?;
            l.micros_fixed6(t_rel)
        }
        Event::Exec { exec_id, exe, argv } => {
            l.put(b"exec[")?;
            l.i64(exec_id)?;
            l.put(b"] ")?;
            if let Some(exe) = exe {
                l.put(exe)?;
                l.byte(b' ')?;
            }
            write_sq_argv(l, argv)
        }
        Event::ExecResult { exec_id, code, err } => {
            l.put(b"exec_result[")?;
            l.i64(exec_id)?;
            l.put(b"] code:")?;
            l.i64(i64::from(code))?;
            if code > 0 {
                l.put(b" err:")?;
                l.put(err)?;
            }
            Ok(())
        }
        Event::DefParam {
            scope,
            param,
            value,
        } => {
            l.put(b"def_param scope:")?;
            l.put(scope)?;
            l.byte(b' ')?;
            l.put(param)?;
            if let Some(v) = value {
                l.byte(b'=')?;
                l.put(v)?;
            }
            Ok(())
        }
        Event::DefRepo { worktree } => {
            l.put(b"worktree ")?;
            write_sq_pretty(l, worktree)
        }
        Event::Printf { msg } => match shown(&msg) {
            Some(m) => write_msg_raw(l, m),
            None => Ok(()),
        },
        Event::Timer {
            per_thread,
            category,
            name,
            intervals,
            total_ns,
            min_ns,
            max_ns,
        } => {
            l.put(if per_thread { b"th_timer " } else { b"timer " })?;
            l.put(category)?;
            l.byte(b'/')?;
            l.put(name)?;
            super::perf::timer_stats(l, intervals, total_ns, min_ns, max_ns)
        }
        Event::Counter {
            per_thread,
            category,
            name,
            value,
        } => {
            l.put(if per_thread {
                b"th_counter "
            } else {
                b"counter "
            })?;
            l.put(category)?;
            l.byte(b'/')?;
            l.put(name)?;
            l.put(b" value:")?;
            l.u64(value)
        }
        Event::TooManyFiles
        | Event::ThreadStart
        | Event::ThreadExit { .. }
        | Event::RegionEnter { .. }
        | Event::RegionLeave { .. }
        | Event::Data { .. }
        | Event::DataJson { .. } => Ok(()),
    }
}
