//! Regions: `region_enter` now, `region_leave` when the guard is dropped.

use std::fmt;
use std::panic::Location;

use flightrec_core::trace2::{Event, Msg};

use super::runtime::{runtime, Loc, Runtime};
use super::tls::with_ctx;
use super::Repo;

/// An open region; dropping it leaves the region (`region_leave`, with the
/// time spent in it). Made by [`region`], [`region_in`] or
/// [`region!`](crate::region).
///
/// ```
/// fn refresh_index() {
///     let _r = flightrec::region!("index", "refresh");
///     // ... work measured by the region ...
/// } // region_leave here
/// # refresh_index();
/// ```
#[must_use = "the region is left when this guard is dropped"]
#[derive(Debug)]
pub struct Region<'a> {
    active: bool,
    category: &'a str,
    label: &'a str,
    repo: Option<i32>,
    loc: &'static Location<'static>,
}

/// Enters region `label` of `category` on this thread (git's
/// `trace2_region_enter`); the guard leaves it when dropped.
#[track_caller]
#[inline]
pub fn region<'a>(category: &'a str, label: &'a str) -> Region<'a> {
    region_with(None, category, label, None)
}

/// [`region`] for repository `repo` (the perf `r<id>` column and the event
/// `repo` key).
#[track_caller]
#[inline]
pub fn region_in<'a>(repo: Repo, category: &'a str, label: &'a str) -> Region<'a> {
    region_with(Some(repo.id()), category, label, None)
}

/// [`region`] with a message on its `region_enter` (git's
/// `trace2_region_enter_printf`).
///
/// ```
/// let _r = flightrec::trace2::region_msg("hook", "pre-commit", format_args!("max:{}", 1));
/// ```
#[track_caller]
#[inline]
pub fn region_msg<'a>(category: &'a str, label: &'a str, msg: fmt::Arguments<'_>) -> Region<'a> {
    region_with(None, category, label, Some(msg))
}

#[track_caller]
#[inline(always)]
fn region_with<'a>(
    repo: Option<i32>,
    category: &'a str,
    label: &'a str,
    msg: Option<fmt::Arguments<'_>>,
) -> Region<'a> {
    let loc = Location::caller();
    let active = match runtime() {
        None => false,
        Some(rt) => {
            enter_raw(
                rt,
                Loc::from(loc),
                Some(category.as_bytes()),
                Some(label.as_bytes()),
                msg.map(Msg::Fmt),
                repo,
            );
            true
        }
    };
    Region {
        active,
        category,
        label,
        repo,
        loc,
    }
}

impl Drop for Region<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        if let Some(rt) = runtime() {
            leave_raw(
                rt,
                Loc::from(self.loc),
                Some(self.category.as_bytes()),
                Some(self.label.as_bytes()),
                None,
                self.repo,
            );
        }
    }
}

/// Pushes a region level and emits `region_enter` at the outer level.
#[inline(never)]
pub(crate) fn enter_raw(
    rt: &Runtime,
    loc: Loc<'_>,
    category: Option<&[u8]>,
    label: Option<&[u8]>,
    msg: Option<Msg<'_>>,
    repo: Option<i32>,
) {
    with_ctx(rt, |c| {
        let now = rt.now();
        let nesting = c.state.region_enter(now);
        c.emit_at(
            rt,
            loc,
            nesting,
            repo,
            now,
            &Event::RegionEnter {
                category,
                label,
                msg,
            },
        );
    });
}

/// Pops a region level and emits `region_leave` at the (now outer) level. A
/// leave with nothing open is dropped (git calls `BUG()` there).
#[inline(never)]
pub(crate) fn leave_raw(
    rt: &Runtime,
    loc: Loc<'_>,
    category: Option<&[u8]>,
    label: Option<&[u8]>,
    msg: Option<Msg<'_>>,
    repo: Option<i32>,
) {
    with_ctx(rt, |c| {
        let now = rt.now();
        if let Ok((t_rel, nesting)) = c.state.region_leave(now) {
            c.emit_at(
                rt,
                loc,
                nesting,
                repo,
                now,
                &Event::RegionLeave {
                    t_rel,
                    category,
                    label,
                    msg,
                },
            );
        }
    });
}
