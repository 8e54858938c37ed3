//! Emitting an event: the line inputs ([`LineCtx`]) from the runtime and the
//! thread's context, one line per open output formatted into the thread's
//! buffer, and one `write()` per destination (or a push onto the background
//! writer's queue).
//!
//! Every event of the runtime goes through [`emit_at`]; the others are its
//! shorthands.

use flightrec_core::trace2::{Event, Format, LineCtx, Micros, Target, WallTime};

use super::clock;
use super::gap::Gaps;
use super::line::format_into;
use super::outputs::Output;
use super::runtime::{Loc, Runtime};
use super::target::Pushed;
use super::tls::{with_ctx, ThreadCtx};
use super::warning::warn;
use super::write_mark::while_writing;

/// Emits `ev` on this thread at the current nesting.
#[inline]
pub(crate) fn emit(rt: &Runtime, loc: Loc<'_>, ev: &Event<'_>) {
    with_ctx(rt, |c| emit_in(rt, c, loc, ev));
}

/// Emits `ev` from the thread context `c` at its current nesting, `t_abs` =
/// now.
#[inline]
pub(crate) fn emit_in(rt: &Runtime, c: &mut ThreadCtx, loc: Loc<'_>, ev: &Event<'_>) {
    let nesting = c.state.nesting();
    emit_at(rt, c, loc, nesting, None, rt.now(), ev);
}

/// Formats and writes `ev` from the thread context `c` at `nesting`, for
/// repository `repo`, at `t_abs`.
#[inline]
pub(crate) fn emit_at(
    rt: &Runtime,
    c: &mut ThreadCtx,
    loc: Loc<'_>,
    nesting: u32,
    repo: Option<i32>,
    t_abs: Micros,
    ev: &Event<'_>,
) {
    if c.tid_unsaid {
        say_thread_id(rt, c, loc);
    }
    // A region or data deeper than every target writes (the event target's
    // nesting limit; the normal target writes neither): no clock, no format.
    if rt
        .outputs
        .iter()
        .all(|o| writes_nothing(&o.format, nesting, ev))
    {
        return;
    }
    let ThreadCtx {
        state, buf, gaps, ..
    } = c;
    let ctx = line_ctx(
        rt,
        state.name.as_bytes(),
        loc,
        nesting,
        repo,
        t_abs,
        clock::wall_now(),
    );
    write_event(rt, buf, gaps, &ctx, ev);
}

/// [`emit_in`] to the outputs `pick` selects.
pub(crate) fn emit_where(
    rt: &Runtime,
    c: &mut ThreadCtx,
    loc: Loc<'_>,
    ev: &Event<'_>,
    pick: impl Fn(&Output) -> bool,
) {
    if c.tid_unsaid {
        say_thread_id(rt, c, loc);
    }
    let nesting = c.state.nesting();
    let ThreadCtx {
        state, buf, gaps, ..
    } = c;
    let ctx = line_ctx(
        rt,
        state.name.as_bytes(),
        loc,
        nesting,
        None,
        rt.now(),
        clock::wall_now(),
    );
    write_event_where(rt, buf, gaps, &ctx, ev, pick);
}

/// Whether some output may write a `data` event from thread context `c` at
/// its current nesting (`false`: every target skips it unformatted, see
/// [`writes_nothing`]), so that a caller can skip building its value.
#[inline]
pub(crate) fn data_written_in(rt: &Runtime, c: &ThreadCtx) -> bool {
    let nesting = c.state.nesting();
    let probe = Event::Data {
        t_rel: 0,
        category: b"",
        key: b"",
        value: b"",
    };
    !rt.outputs
        .iter()
        .all(|o| writes_nothing(&o.format, nesting, &probe))
}

/// Whether `f` surely writes nothing for `ev` at `nesting`, told without
/// formatting: a region or data event in the normal target, or deeper than
/// the event target's nesting limit (`false` when in doubt: the formatter
/// decides then).
#[inline]
fn writes_nothing(f: &Format, nesting: u32, ev: &Event<'_>) -> bool {
    ev.is_nesting_filtered()
        && match f.target {
            Target::Normal => true,
            Target::Event => nesting > f.event_nesting,
            Target::Perf => false,
        }
}

/// Category and key of the `data` event that says a worker thread's OS thread
/// id (decimal, what `gettid` gives): Trace2 names threads `thNN:name` only,
/// and the id joins them with the thread's XRay FDR records.
pub(crate) const THREAD_ID_CATEGORY: &str = "flightrec";
/// Key of the thread id event; see [`THREAD_ID_CATEGORY`].
pub(crate) const THREAD_ID_KEY: &str = "tid";

/// Says the OS thread id of the worker `c` once, in a `data` event
/// `flightrec`/`tid`, when the XRay runtime is on (its records carry that id).
/// Without XRay nothing is written, so that the lines stay git's.
#[cold]
pub(crate) fn say_thread_id(rt: &Runtime, c: &mut ThreadCtx, loc: Loc<'_>) {
    c.tid_unsaid = false;
    let Some(tid) = traced_thread_id() else {
        return;
    };
    // In decimal on the stack: this may run in a signal handler (`signal`
    // as a thread's first event), where allocating is not safe.
    let mut text = [0u8; 10];
    let digits = decimal(tid, &mut text);
    let now = rt.now();
    let t_rel = c.state.data_t_rel(now);
    let nesting = c.state.nesting();
    let ev = Event::Data {
        t_rel,
        category: THREAD_ID_CATEGORY.as_bytes(),
        key: THREAD_ID_KEY.as_bytes(),
        value: digits,
    };
    emit_at(rt, c, loc, nesting, None, now, &ev);
}

/// `n` in decimal, at the end of `buf`.
fn decimal(mut n: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(all(unix, feature = "xray"))]
fn traced_thread_id() -> Option<u32> {
    crate::xray::traced_thread_id()
}

#[cfg(not(all(unix, feature = "xray")))]
fn traced_thread_id() -> Option<u32> {
    None
}

/// The common line inputs for an event formatted now.
#[inline]
fn line_ctx<'a>(
    rt: &'a Runtime,
    thread: &'a [u8],
    loc: Loc<'a>,
    nesting: u32,
    repo: Option<i32>,
    t_abs: Micros,
    time: WallTime,
) -> LineCtx<'a> {
    LineCtx {
        time,
        utc_offset_secs: clock::utc_offset_cached(time.secs),
        file: loc.file.as_bytes(),
        line: loc.line,
        thread,
        sid: rt.sid.full.as_bytes(),
        sid_depth: rt.depth,
        nesting,
        repo,
        t_abs,
    }
}

/// Formats `ev` for every open destination (normal, perf, event) into `buf`
/// and writes each line with one `write()`, or queues it for the background
/// writer (which drops whole regions when a queue is full: see
/// [`Gaps`]). A destination that fails disables itself and its warning (if
/// any) is printed once.
fn write_event(
    rt: &Runtime,
    buf: &mut Vec<u8>,
    gaps: &mut Gaps,
    ctx: &LineCtx<'_>,
    ev: &Event<'_>,
) {
    write_event_where(rt, buf, gaps, ctx, ev, |_| true);
}

/// [`write_event`] for the outputs `pick` selects.
fn write_event_where(
    rt: &Runtime,
    buf: &mut Vec<u8>,
    gaps: &mut Gaps,
    ctx: &LineCtx<'_>,
    ev: &Event<'_>,
    pick: impl Fn(&Output) -> bool,
) {
    // A signal handler must not take the queue's lock: `signal` is
    // written directly, as in the default mode.
    let queue = match &rt.background {
        Some(bg) if !matches!(ev, Event::Signal { .. }) => Some(bg),
        _ => None,
    };
    if let (Some(q), Event::Exit { .. }) = (queue, ev) {
        q.keep_all();
    }
    for (slot, out) in rt.outputs.iter().enumerate() {
        if !pick(out) {
            continue;
        }
        let n = format_into(&out.format, ctx, ev, buf);
        if n == 0 {
            continue;
        }
        if !out.dest.is_enabled() {
            // Failed before: the line is counted for the report at exit.
            out.dest.count_lost(1);
            continue;
        }
        let line = &buf[..n];
        if let Some(q) = queue {
            if gaps.queue(q, slot, out, ctx, ev, line) != Pushed::Closed {
                continue;
            }
        }
        let warning = while_writing(|| out.dest.write_line(line));
        if let Some(w) = warning {
            warn(&w);
        }
    }
    // What a child or the exec'd program writes must come after these.
    if let Some(q) = queue {
        if matches!(ev, Event::ChildStart { .. } | Event::Exec { .. }) {
            q.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{decimal, format_into, writes_nothing};
    use flightrec_core::trace2::{Event, Format, LineCtx, Msg, Target};

    #[test]
    fn what_is_skipped_unformatted_formats_to_nothing() {
        let events = [
            Event::RegionEnter {
                category: Some(b"c"),
                label: Some(b"l"),
                msg: Some(Msg::Bytes(b"m")),
            },
            Event::RegionLeave {
                t_rel: 5,
                category: Some(b"c"),
                label: Some(b"l"),
                msg: None,
            },
            Event::Data {
                t_rel: 1,
                category: b"c",
                key: b"k",
                value: b"v",
            },
            Event::DataJson {
                t_rel: 1,
                category: b"c",
                key: b"k",
                value: b"1",
            },
            Event::Printf {
                msg: Some(Msg::Bytes(b"p")),
            },
            Event::Exit { code: 0 },
        ];
        let mut skipped = 0;
        let mut buf = Vec::new();
        for target in [Target::Normal, Target::Perf, Target::Event] {
            for brief in [false, true] {
                let f = Format {
                    target,
                    brief,
                    event_nesting: 2,
                };
                for ev in &events {
                    for nesting in 1..6 {
                        let ctx = LineCtx {
                            nesting,
                            ..LineCtx::new(b"sid", b"main")
                        };
                        let n = format_into(&f, &ctx, ev, &mut buf);
                        if writes_nothing(&f, nesting, ev) {
                            assert_eq!(n, 0, "{target:?} {ev:?} at {nesting}");
                            skipped += 1;
                        }
                    }
                }
            }
        }
        assert!(skipped > 40, "{skipped}");
    }

    #[test]
    fn thread_ids_in_decimal() {
        let mut buf = [0u8; 10];
        for n in [0, 7, 10, 4_194_304, u32::MAX] {
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }
}
