//! What the background write mode drops when a queue is full, and the marker
//! that says where: whole regions, never half of one, so that every thread's
//! `region_enter`s and `region_leave`s stay balanced in the trace.
//!
//! Per thread and destination:
//!
//! * A `region_enter` that does not fit is dropped, and so is every line of
//!   that thread inside the region, down to its `region_leave`.
//! * A `region_leave` whose enter is queued is always queued (past the
//!   capacity if need be; see the background writer for the bound).
//! * Other lines that do not fit are dropped alone; lines outside the region
//!   structure (`error`, `exit`, `atexit`, `thread_exit`, timers, counters,
//!   ...) are never dropped because a region is.
//!
//! A run of dropped lines (a gap) ends at the thread's next queued line,
//! which is preceded by a marker: a region of category `flightrec` and label
//! `dropped` from the first dropped line's time to now, at the nesting where
//! the lines went missing, whose `region_enter` says `<n> lines dropped: the
//! background queue was full` (a `printf` `flightrec: <n> lines dropped: ...`
//! in the normal target, which has no regions). Renderers and converters see an ordinary
//! balanced region.

use flightrec_core::trace2::{Event, LineCtx, Micros, Msg, WallTime};

use super::line::format_into;
use super::outputs::Output;
use super::target::{BackgroundWriter, Pushed};

/// Category of the marker region.
pub(crate) const MARKER_CATEGORY: &str = "flightrec";
/// Label of the marker region.
pub(crate) const MARKER_LABEL: &str = "dropped";

/// The most destinations a runtime has (normal, perf, event).
const SLOTS: usize = 3;

/// One thread's gap in one destination.
#[derive(Debug, Default)]
struct SlotGap {
    /// The nesting of a dropped `region_enter` whose region is still open:
    /// every line of the thread is dropped until its leave.
    skip_from: Option<u32>,
    /// Lines dropped since the thread's last queued line (0: no gap).
    lines: u64,
    /// When the first of them was traced.
    since: (WallTime, Micros),
}

/// One thread's gaps, and the buffers their markers are formatted in.
#[derive(Debug, Default)]
pub(crate) struct Gaps {
    slots: [SlotGap; SLOTS],
    enter: Vec<u8>,
    leave: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Enter,
    Leave,
    /// A line that belongs to the region it is traced in.
    Inside,
    /// A line outside the region structure.
    Outside,
}

fn kind(ev: &Event<'_>) -> Kind {
    match ev {
        Event::RegionEnter { .. } => Kind::Enter,
        Event::RegionLeave { .. } => Kind::Leave,
        Event::Data { .. }
        | Event::DataJson { .. }
        | Event::Printf { .. }
        | Event::ChildStart { .. }
        | Event::ChildExit { .. }
        | Event::ChildReady { .. }
        | Event::Exec { .. }
        | Event::ExecResult { .. } => Kind::Inside,
        _ => Kind::Outside,
    }
}

impl Gaps {
    /// Queues `line`, the line of `ev` formatted by `out` (destination
    /// `slot`) in `ctx`, on `q`, or drops it as the module docs say.
    /// [`Pushed::Closed`] when the caller must write the line itself.
    pub(crate) fn queue(
        &mut self,
        q: &BackgroundWriter,
        slot: usize,
        out: &Output,
        ctx: &LineCtx<'_>,
        ev: &Event<'_>,
        line: &[u8],
    ) -> Pushed {
        let Some(g) = self.slots.get_mut(slot) else {
            return q.push(slot, &[line], 0, false);
        };
        let kind = kind(ev);
        if let Some(from) = g.skip_from {
            if kind != Kind::Outside {
                if kind == Kind::Leave && ctx.nesting <= from {
                    g.skip_from = None;
                }
                g.lines += 1;
                q.count_dropped(slot, 1);
                return Pushed::Dropped;
            }
        }
        // Not inside a dropped region: a leave closes a queued enter.
        let must = kind == Kind::Leave;
        let pushed = if g.lines == 0 || g.skip_from.is_some() {
            q.push(slot, &[line], 0, must)
        } else {
            // The marker goes inside the region a leave closes.
            let nesting = ctx.nesting + u32::from(kind == Kind::Leave);
            let (enter, leave) = marker(out, ctx, nesting, g, &mut self.enter, &mut self.leave);
            let pushed = q.push(slot, &[enter, leave, line], 2, must);
            if pushed == Pushed::Queued {
                g.lines = 0;
                q.gap(slot, false);
            }
            pushed
        };
        if pushed == Pushed::Dropped {
            if g.lines == 0 {
                g.since = (ctx.time, ctx.t_abs);
                q.gap(slot, true);
            }
            g.lines += 1;
            q.count_dropped(slot, 1);
            if kind == Kind::Enter {
                g.skip_from = Some(ctx.nesting);
            }
        }
        pushed
    }
}

/// Formats the marker of gap `g` ending at `ctx`, at `nesting`: its
/// `region_enter` into `enter` and its `region_leave` into `leave` (in the
/// normal target, which writes no regions, a `printf` and nothing).
fn marker<'b>(
    out: &Output,
    ctx: &LineCtx<'_>,
    nesting: u32,
    g: &SlotGap,
    enter: &'b mut Vec<u8>,
    leave: &'b mut Vec<u8>,
) -> (&'b [u8], &'b [u8]) {
    let n = g.lines;
    let s = if n == 1 { "" } else { "s" };
    let (time, t_abs) = g.since;
    let at_start = LineCtx {
        time,
        t_abs,
        nesting,
        ..*ctx
    };
    let at_end = LineCtx { nesting, ..*ctx };
    let cat = Some(MARKER_CATEGORY.as_bytes());
    let label = Some(MARKER_LABEL.as_bytes());
    let e = format_into(
        &out.format,
        &at_start,
        &Event::RegionEnter {
            category: cat,
            label,
            // Inline: a `format_args!` with arguments lives only for its
            // statement before Rust 1.89 (the crates' rust-version is older).
            msg: Some(Msg::Fmt(format_args!(
                "{n} line{s} dropped: the background queue was full"
            ))),
        },
        enter,
    );
    if e == 0 {
        let p = format_into(
            &out.format,
            &at_start,
            &Event::Printf {
                msg: Some(Msg::Fmt(format_args!(
                    "{MARKER_CATEGORY}: {n} line{s} dropped: the background queue was full"
                ))),
            },
            enter,
        );
        return (&enter[..p], &[]);
    }
    let l = format_into(
        &out.format,
        &at_end,
        &Event::RegionLeave {
            t_rel: ctx.t_abs.saturating_sub(t_abs),
            category: cat,
            label,
            msg: None,
        },
        leave,
    );
    (&enter[..e], &leave[..l])
}
