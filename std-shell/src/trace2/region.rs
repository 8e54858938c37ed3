//! Regions: `region_enter` now, `region_leave` when the guard is dropped.

use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;

use flightrec_core::trace2::{Event, Msg};

use super::emit::emit_at;
use super::repo::Repo;
use super::runtime::{enabled, runtime, Loc, Runtime};
use super::tls::with_ctx;

/// An open region; dropping it leaves the region (`region_leave`, with the
/// time spent in it). Made by [`region`], [`region_in`] or
/// [`region!`](crate::region).
///
/// ```
/// fn refresh_index() {
///     let _r = flightrec::region!("index", "refresh");
///     flightrec::trace2::data("index", "entries", "12"); // inside: nesting 2
/// } // region_leave here
///
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// refresh_index();
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let names: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
/// assert_eq!(names[names.len() - 5..], ["region_enter", "data", "region_leave", "exit", "atexit"]);
/// let n = events.len();
/// let (enter, data, leave) = (&events[n - 5], &events[n - 4], &events[n - 3]);
/// assert!(enter["category"] == "index" && enter["label"] == "refresh" && enter["nesting"] == 1);
/// assert_eq!(data["nesting"], 2);
/// assert!(leave["label"] == "refresh" && leave["nesting"] == 1);
/// // The time spent in the region, in seconds.
/// assert!(leave["t_rel"].as_f64().unwrap() >= data["t_rel"].as_f64().unwrap());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the region is left when this guard is dropped"]
#[derive(Debug)]
pub struct Region<'a> {
    active: bool,
    category: &'a str,
    label: &'a str,
    repo: Option<i32>,
    loc: &'static Location<'static>,
    /// Regions nest per thread: the guard stays on the thread that entered
    /// (held across an `.await` it would make a future `!Send`).
    _not_send: PhantomData<*const ()>,
}

/// Enters region `label` of `category` on this thread (git's
/// `trace2_region_enter`); the guard leaves it when dropped.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// {
///     let _outer = flightrec::trace2::region("checkout", "update");
///     let _inner = flightrec::trace2::region("index", "write");
/// } // both left here, innermost first
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let regions: Vec<String> = events
///     .iter()
///     .filter(|e| e["event"].as_str().unwrap().starts_with("region_"))
///     .map(|e| format!("{} {} {}", e["event"], e["label"], e["nesting"]))
///     .collect();
/// assert_eq!(
///     regions,
///     [
///         r#""region_enter" "update" 1"#,
///         r#""region_enter" "write" 2"#,
///         r#""region_leave" "write" 2"#,
///         r#""region_leave" "update" 1"#,
///     ]
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
#[inline]
pub fn region<'a>(category: &'a str, label: &'a str) -> Region<'a> {
    region_with(None, category, label, None)
}

/// [`region`] for repository `repo` (the perf `r<id>` column and the event
/// `repo` key).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let repo = flightrec::trace2::def_repo(std::path::Path::new("/src/app"));
/// drop(flightrec::trace2::region_in(repo, "index", "do_read_index"));
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let enter = events.iter().find(|e| e["event"] == "region_enter").unwrap();
/// assert!(enter["repo"] == 1 && enter["label"] == "do_read_index");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
#[inline]
pub fn region_in<'a>(repo: Repo, category: &'a str, label: &'a str) -> Region<'a> {
    region_with(Some(repo.id()), category, label, None)
}

/// [`region`] with a message on its `region_enter` (git's
/// `trace2_region_enter_printf`).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// {
///     let _r = flightrec::trace2::region_msg("hook", "pre-commit", format_args!("max:{}", 1));
/// }
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let enter = events.iter().find(|e| e["event"] == "region_enter").unwrap();
/// assert!(enter["label"] == "pre-commit" && enter["msg"] == "max:1");
/// let leave = events.iter().find(|e| e["event"] == "region_leave").unwrap();
/// assert!(leave.get("msg").is_none()); // the message is on the enter only
/// # Ok::<(), Box<dyn std::error::Error>>(())
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
    if enabled() {
        return enter_guard(loc, repo, category, label, msg);
    }
    Region {
        active: false,
        category,
        label,
        repo,
        loc,
        _not_send: PhantomData,
    }
}

/// The enabled path, kept out of line so that the disabled one stays a load,
/// a test and a branch in the caller.
#[cold]
#[inline(never)]
fn enter_guard<'a>(
    loc: &'static Location<'static>,
    repo: Option<i32>,
    category: &'a str,
    label: &'a str,
    msg: Option<fmt::Arguments<'_>>,
) -> Region<'a> {
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
        _not_send: PhantomData,
    }
}

impl Drop for Region<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.active {
            self.leave();
        }
    }
}

impl Region<'_> {
    #[cold]
    #[inline(never)]
    fn leave(&mut self) {
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
        emit_at(
            rt,
            c,
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
            emit_at(
                rt,
                c,
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
