//! The perf target: fixed-width columns separated by ` | `, region depth shown
//! as dots before every payload.

use super::ctx::LineCtx;
use super::event::{Event, Micros};
use super::line::{dec_u64, LineBuf, Result};
use super::text::{shown, write_msg_raw, write_sq_argv, write_sq_pretty};
use super::time::write_time_of_day;

/// Width of the `file:line` column; longer locations keep their last 25 bytes
/// behind `...`.
const FILE_LINE_WIDTH: usize = 28;
/// Width of the thread-name column (names are at most this long).
const THREAD_WIDTH: usize = 24;
/// Width of the event-name column.
const EVENT_WIDTH: usize = 12;
/// Width of the category column; longer categories are cut.
const CATEGORY_WIDTH: usize = 12;
/// Width of the repo column (`r1 `).
const REPO_WIDTH: usize = 3;
/// Separator between columns.
const SEP: &[u8] = b" | ";

/// Deepest region nesting a perf line is padded for: `(MAX_PAD_NESTING - 1) * 2`
/// = 198 dots at most, whatever the nesting (its other columns unchanged).
///
/// Git has no limit of its own (its `nr_open_regions` is a C `int`), but git's
/// code nests a few levels; without a cap, N regions left open make every later
/// line N * 2 bytes longer: O(N²) output for N events. Every path that writes
/// perf lines (`trace2 render`, `recv`'s compact events, the firmware) pads
/// through [`write_line`], so the cap is this one.
///
/// ```
/// use flightrec_core::trace2::{perf, Event, LineCtx};
/// let ev = Event::Printf { msg: None };
/// let mut buf = [0u8; 512];
/// let deep = LineCtx { nesting: u32::MAX, ..LineCtx::new(b"sid", b"main") };
/// let n = perf::write_line(true, &deep, &ev, &mut buf).unwrap();
/// let dots = buf[..n].iter().filter(|&&b| b == b'.').count();
/// assert_eq!(dots, (perf::MAX_PAD_NESTING as usize - 1) * 2 + 1); // and t_abs's point
/// assert!(perf::is_pad_capped(u32::MAX) && !perf::is_pad_capped(perf::MAX_PAD_NESTING));
/// ```
pub const MAX_PAD_NESTING: u32 = 100;

/// Whether a line at `nesting` is padded for fewer levels than it has (see
/// [`MAX_PAD_NESTING`]). Example on [`MAX_PAD_NESTING`].
pub const fn is_pad_capped(nesting: u32) -> bool {
    nesting > MAX_PAD_NESTING
}

/// Formats `ev` as one perf-target line into `out` and returns its length.
///
/// Returns `Ok(0)` for `too_many_files`, which only the event target writes.
/// On [`BufferTooSmall`](super::BufferTooSmall) the buffer content is unspecified.
///
/// ```
/// use flightrec_core::trace2::{perf, Event, LineCtx};
/// let ctx = LineCtx { nesting: 2, t_abs: 3, repo: Some(1), ..LineCtx::new(b"sid", b"main") };
/// let ev = Event::RegionEnter { category: Some(b"cache_tree"), label: Some(b"read"), msg: None };
/// let mut buf = [0u8; 256];
/// let n = perf::write_line(true, &ctx, &ev, &mut buf).unwrap();
/// assert_eq!(
///     &buf[..n],
///     &b"d0 | main                     | region_enter | r1  |  0.000003 |           | cache_tree   | ..label:read\n"[..]
/// );
/// ```
pub fn write_line(brief: bool, ctx: &LineCtx<'_>, ev: &Event<'_>, out: &mut [u8]) -> Result<usize> {
    if matches!(ev, Event::TooManyFiles) {
        return Ok(0);
    }
    let mut l = LineBuf::new(out);
    if !brief {
        write_time_of_day(&mut l, &ctx.time.time_of_day(ctx.utc_offset_secs))?;
        l.byte(b' ')?;
        file_line(&mut l, ctx.file, ctx.line)?;
        l.put(SEP)?;
    }
    l.byte(b'd')?;
    l.u64(u64::from(ctx.sid_depth))?;
    l.put(SEP)?;
    l.put(ctx.thread)?;
    l.fill(b' ', THREAD_WIDTH.saturating_sub(ctx.thread.len()))?;
    l.put(SEP)?;
    l.field(ev.name().as_bytes(), EVENT_WIDTH)?;
    l.put(SEP)?;

    let (repo, t_abs, t_rel) = columns(ev);
    let start = l.len();
    if let (true, Some(id)) = (repo, ctx.repo) {
        l.byte(b'r')?;
        l.i64(i64::from(id))?;
        l.byte(b' ')?;
    }
    l.pad_to(start, REPO_WIDTH)?;
    l.put(SEP)?;
    match t_abs {
        true => l.micros_fixed6_w9(ctx.t_abs)?,
        false => l.fill(b' ', 9)?,
    }
    l.put(SEP)?;
    match t_rel {
        Some(t) => l.micros_fixed6_w9(t)?,
        None => l.fill(b' ', 9)?,
    }
    l.put(SEP)?;
    category(&mut l, ev)?;
    l.put(SEP)?;
    let levels = if is_pad_capped(ctx.nesting) {
        MAX_PAD_NESTING
    } else {
        ctx.nesting
    };
    let dots = (levels.saturating_sub(1) as usize) * 2;
    l.fill(b'.', dots)?;
    payload(&mut l, ev)?;
    if l.last() != Some(b'\n') {
        l.byte(b'\n')?;
    }
    Ok(l.len())
}

/// The 28-byte `file:line` column.
fn file_line(l: &mut LineBuf<'_>, file: &[u8], line: u32) -> Result {
    if file.is_empty() {
        return l.fill(b' ', FILE_LINE_WIDTH);
    }
    let mut tmp = [0u8; 20];
    let digits = dec_u64(u64::from(line), &mut tmp);
    let len = file.len() + 1 + digits.len();
    if len <= FILE_LINE_WIDTH {
        l.put(file)?;
        l.byte(b':')?;
        l.put(digits)?;
        return l.fill(b' ', FILE_LINE_WIDTH - len);
    }
    // `...` and the last 25 bytes of `file:line`.
    const TAIL: usize = FILE_LINE_WIDTH - 3;
    l.put(b"...")?;
    let suffix = digits.len() + 1;
    if suffix >= TAIL {
        // Never happens with a u32 line, kept for robustness.
        let from_digits = TAIL.min(digits.len());
        if from_digits < TAIL {
            l.byte(b':')?;
        }
        return l.put(&digits[digits.len() - from_digits..]);
    }
    l.put(&file[file.len() - (TAIL - suffix)..])?;
    l.byte(b':')?;
    l.put(digits)
}

/// Which optional columns an event fills: (repo, t_abs, t_rel).
fn columns(ev: &Event<'_>) -> (bool, bool, Option<Micros>) {
    match *ev {
        Event::Start { .. }
        | Event::Exit { .. }
        | Event::Signal { .. }
        | Event::Atexit { .. }
        | Event::ChildStart { .. }
        | Event::ThreadStart
        | Event::Exec { .. }
        | Event::ExecResult { .. }
        | Event::Printf { .. } => (false, true, None),
        Event::ChildExit { t_rel, .. }
        | Event::ChildReady { t_rel, .. }
        | Event::ThreadExit { t_rel } => (false, true, Some(t_rel)),
        Event::DefRepo { .. } => (true, false, None),
        Event::RegionEnter { .. } => (true, true, None),
        Event::RegionLeave { t_rel, .. }
        | Event::Data { t_rel, .. }
        | Event::DataJson { t_rel, .. } => (true, true, Some(t_rel)),
        _ => (false, false, None),
    }
}

/// The 12-byte category column.
fn category(l: &mut LineBuf<'_>, ev: &Event<'_>) -> Result {
    let cat: &[u8] = match *ev {
        Event::DefParam { scope, .. } => {
            const PREFIX: &[u8] = b"scope:";
            l.put(PREFIX)?;
            return l.field(scope, CATEGORY_WIDTH - PREFIX.len());
        }
        Event::RegionEnter { category, .. } | Event::RegionLeave { category, .. } => {
            category.unwrap_or(b"")
        }
        Event::Data { category, .. }
        | Event::DataJson { category, .. }
        | Event::Timer { category, .. }
        | Event::Counter { category, .. } => category,
        _ => b"",
    };
    l.field(cat, CATEGORY_WIDTH)
}

/// Timer statistics shared with the normal target:
/// ` intervals:%PRIu64 total:%8.6f min:%8.6f max:%8.6f`.
pub(crate) fn timer_stats(
    l: &mut LineBuf<'_>,
    intervals: u64,
    total: u64,
    min: u64,
    max: u64,
) -> Result {
    l.put(b" intervals:")?;
    l.u64(intervals)?;
    l.put(b" total:")?;
    l.micros_fixed6(super::line::ns_to_printf_micros(total))?;
    l.put(b" min:")?;
    l.micros_fixed6(super::line::ns_to_printf_micros(min))?;
    l.put(b" max:")?;
    l.micros_fixed6(super::line::ns_to_printf_micros(max))
}

fn payload(l: &mut LineBuf<'_>, ev: &Event<'_>) -> Result {
    match *ev {
        Event::Version { exe } => l.put(exe),
        Event::Start { argv } => write_sq_argv(l, argv),
        Event::Exit { code } | Event::Atexit { code } => {
            l.put(b"code:")?;
            l.i64(i64::from(code))
        }
        Event::Signal { signo } => {
            l.put(b"signo:")?;
            l.i64(i64::from(signo))
        }
        Event::Error { msg, .. } => write_msg_raw(l, &msg),
        Event::CmdPath { path } => l.put(path),
        Event::CmdAncestry { ancestry } => {
            l.put(b"ancestry:[")?;
            write_sq_argv(l, ancestry)?;
            l.byte(b']')
        }
        Event::CmdName { name, hierarchy } => {
            l.put(name)?;
            if !hierarchy.is_empty() {
                l.put(b" (")?;
                l.put(hierarchy)?;
                l.byte(b')')?;
            }
            Ok(())
        }
        Event::CmdMode { mode } => l.put(mode),
        Event::Alias { alias, argv } => {
            l.put(b"alias:")?;
            l.put(alias)?;
            l.put(b" argv:[")?;
            write_sq_argv(l, argv)?;
            l.byte(b']')
        }
        Event::ChildStart {
            child_id,
            child_class,
            hook_name,
            cd,
            is_git,
            argv,
            ..
        } => {
            l.put(b"[ch")?;
            l.i64(child_id)?;
            l.put(b"] class:")?;
            match hook_name {
                Some(hook) => {
                    l.put(b"hook hook:")?;
                    l.put(hook)?;
                }
                None => l.put(child_class.unwrap_or(b"?"))?,
            }
            if let Some(dir) = cd {
                l.put(b" cd:")?;
                write_sq_pretty(l, dir)?;
            }
            l.put(b" argv:[")?;
            if is_git {
                l.put(b"git")?;
                if !argv.is_empty() {
                    l.byte(b' ')?;
                }
            }
            write_sq_argv(l, argv)?;
            l.byte(b']')
        }
        Event::ChildExit {
            child_id,
            pid,
            code,
            ..
        } => {
            l.put(b"[ch")?;
            l.i64(child_id)?;
            l.put(b"] pid:")?;
            l.i64(pid)?;
            l.put(b" code:")?;
            l.i64(i64::from(code))
        }
        Event::ChildReady {
            child_id,
            pid,
            ready,
            ..
        } => {
            l.put(b"[ch")?;
            l.i64(child_id)?;
            l.put(b"] pid:")?;
            l.i64(pid)?;
            l.put(b" ready:")?;
            l.put(ready)
        }
        Event::Exec { exec_id, exe, argv } => {
            l.put(b"id:")?;
            l.i64(exec_id)?;
            l.put(b" argv:[")?;
            if let Some(exe) = exe {
                l.put(exe)?;
                if !argv.is_empty() {
                    l.byte(b' ')?;
                }
            }
            write_sq_argv(l, argv)?;
            l.byte(b']')
        }
        Event::ExecResult { exec_id, code, err } => {
            l.put(b"id:")?;
            l.i64(exec_id)?;
            l.put(b" code:")?;
            l.i64(i64::from(code))?;
            if code > 0 {
                l.put(b" err:")?;
                l.put(err)?;
            }
            Ok(())
        }
        Event::DefParam { param, value, .. } => {
            l.put(param)?;
            if let Some(v) = value {
                l.byte(b':')?;
                l.put(v)?;
            }
            Ok(())
        }
        Event::DefRepo { worktree } => {
            l.put(b"worktree:")?;
            write_sq_pretty(l, worktree)
        }
        Event::RegionEnter { label, msg, .. } | Event::RegionLeave { label, msg, .. } => {
            if let Some(label) = label {
                l.put(b"label:")?;
                l.put(label)?;
            }
            if let Some(m) = shown(&msg) {
                l.byte(b' ')?;
                write_msg_raw(l, m)?;
            }
            Ok(())
        }
        Event::Data { key, value, .. } | Event::DataJson { key, value, .. } => {
            l.put(key)?;
            l.byte(b':')?;
            l.put(value)
        }
        Event::Printf { msg } => match shown(&msg) {
            Some(m) => write_msg_raw(l, m),
            None => Ok(()),
        },
        Event::Timer {
            name,
            intervals,
            total_ns,
            min_ns,
            max_ns,
            ..
        } => {
            l.put(b"name:")?;
            l.put(name)?;
            timer_stats(l, intervals, total_ns, min_ns, max_ns)
        }
        Event::Counter { name, value, .. } => {
            l.put(b"name:")?;
            l.put(name)?;
            l.put(b" value:")?;
            l.u64(value)
        }
        Event::TooManyFiles | Event::ThreadStart | Event::ThreadExit { .. } => Ok(()),
    }
}
