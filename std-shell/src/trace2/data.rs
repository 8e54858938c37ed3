//! Data events: `data` (a key and a string value in a category, plain or
//! formatted) and `data_json` (a JSON value), each with the time since the
//! innermost open region.

use std::fmt;
use std::io::Write as _;

use flightrec_core::trace2::Event;

use super::emit::emit_at;
use super::repo::Repo;
use super::runtime::{runtime, Loc, Runtime};
use super::tls::{with_ctx, ThreadCtx};

/// `data`: a key and a string value in a category.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::data("index", "entries", "1024");
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let data = events.iter().find(|e| e["event"] == "data").unwrap();
/// assert!(data["category"] == "index" && data["key"] == "entries" && data["value"] == "1024");
/// assert!(data.get("repo").is_none()); // see `data_in`
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
#[inline]
pub fn data(category: &str, key: &str, value: &str) {
    let Some(rt) = runtime() else { return };
    data_raw(rt, Loc::caller(), None, category, key, value.as_bytes());
}

/// [`data`] for repository `repo`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let repo = flightrec::trace2::def_repo(std::path::Path::new("/src/app"));
/// flightrec::trace2::data_in(repo, "index", "version", "2");
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let data = events.iter().find(|e| e["event"] == "data").unwrap();
/// assert!(data["repo"] == 1 && data["key"] == "version" && data["value"] == "2");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn data_in(repo: Repo, category: &str, key: &str, value: &str) {
    let Some(rt) = runtime() else { return };
    data_raw(
        rt,
        Loc::caller(),
        Some(repo.id()),
        category,
        key,
        value.as_bytes(),
    );
}

/// [`data`] with a formatted value (what [`data!`](crate::data) calls).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::data_fmt("index", "entries", format_args!("{}", 1024));
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// assert!(events.iter().any(|e| e["event"] == "data" && e["key"] == "entries" && e["value"] == "1024"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn data_fmt(category: &str, key: &str, value: fmt::Arguments<'_>) {
    let Some(rt) = runtime() else { return };
    let loc = Loc::caller();
    with_ctx(rt, |c| {
        let mut scratch = std::mem::take(&mut c.scratch);
        scratch.clear();
        let _ = scratch.write_fmt(value);
        data_event(rt, c, loc, None, category, key, &scratch);
        c.scratch = scratch;
    });
}

fn data_raw(
    rt: &Runtime,
    loc: Loc<'_>,
    repo: Option<i32>,
    category: &str,
    key: &str,
    value: &[u8],
) {
    with_ctx(rt, |c| data_event(rt, c, loc, repo, category, key, value));
}

fn data_event(
    rt: &Runtime,
    c: &mut ThreadCtx,
    loc: Loc<'_>,
    repo: Option<i32>,
    category: &str,
    key: &str,
    value: &[u8],
) {
    data_like_event(rt, c, loc, repo, |t_rel| Event::Data {
        t_rel,
        category: category.as_bytes(),
        key: key.as_bytes(),
        value,
    });
}

/// Emits a `data` or `data_json` event: both carry `t_rel` since the innermost
/// open region and are written at the thread's current nesting.
fn data_like_event<'e>(
    rt: &Runtime,
    c: &mut ThreadCtx,
    loc: Loc<'_>,
    repo: Option<i32>,
    event: impl FnOnce(u64) -> Event<'e>,
) {
    let now = rt.now();
    let t_rel = c.state.data_t_rel(now);
    let n = c.state.nesting();
    emit_at(rt, c, loc, n, repo, now, &event(t_rel));
}

/// `data_json`: a key with a JSON value, given as compact JSON text and
/// written verbatim.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::data_json("traverse_trees", "statistics", r#"{"depth_max":1}"#);
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let data = events.iter().find(|e| e["event"] == "data_json").unwrap();
/// assert_eq!(data["value"], serde_json::json!({ "depth_max": 1 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn data_json(category: &str, key: &str, json: &str) {
    let Some(rt) = runtime() else { return };
    let loc = Loc::caller();
    with_ctx(rt, |c| {
        data_like_event(rt, c, loc, None, |t_rel| Event::DataJson {
            t_rel,
            category: category.as_bytes(),
            key: key.as_bytes(),
            value: json.as_bytes(),
        })
    });
}
