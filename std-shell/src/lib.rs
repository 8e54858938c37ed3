//! # flightrec
//!
//! The std shell of flightrec: what an operating system supplies around the
//! allocation-free [`flightrec_core`].
//!
//! * [`trace2`]: git Trace2 for Rust programs: settings, destinations, the
//!   process runtime (sessions, regions, data, threads, children, exit).
#![warn(missing_docs)]
// The Trace2 examples show `fn main` on purpose: the session guard lives until it returns.
#![allow(clippy::needless_doctest_main)]

pub use flightrec_core as core;

#[cfg(feature = "trace2")]
pub mod trace2;

/// Enters a Trace2 region; the returned guard leaves it when dropped.
///
/// `region!(category, label)`, optionally followed by a message format and
/// its arguments for `region_enter`. The caller's `file:line` is recorded.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// {
///     let _r = flightrec::region!("index", "refresh");
///     let _m = flightrec::region!("hook", "pre-commit", "max:{}", 1);
/// }
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let enters: Vec<_> = events.iter().filter(|e| e["event"] == "region_enter").collect();
/// assert!(enters[0]["label"] == "refresh" && enters[0].get("msg").is_none());
/// assert!(enters[1]["label"] == "pre-commit" && enters[1]["msg"] == "max:1");
/// assert_eq!(events.iter().filter(|e| e["event"] == "region_leave").count(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "trace2")]
#[macro_export]
macro_rules! region {
    ($category:expr, $label:expr $(,)?) => {
        $crate::trace2::region($category, $label)
    };
    ($category:expr, $label:expr, $($fmt:tt)+) => {
        $crate::trace2::region_msg($category, $label, ::core::format_args!($($fmt)+))
    };
}

/// A Trace2 `data` event with a formatted value; the arguments are evaluated
/// only when Trace2 is on.
///
/// ```
/// use std::cell::Cell;
/// let formatted = Cell::new(0);
/// let entries = || {
///     formatted.set(formatted.get() + 1);
///     1024
/// };
/// flightrec::data!("index", "entries", "{}", entries()); // Trace2 is off: not evaluated
/// assert_eq!(formatted.get(), 0);
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::data!("index", "entries", "{}", entries());
/// assert_eq!(formatted.get(), 1);
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// assert!(events.iter().any(|e| e["event"] == "data" && e["key"] == "entries" && e["value"] == "1024"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "trace2")]
#[macro_export]
macro_rules! data {
    ($category:expr, $key:expr, $($fmt:tt)+) => {
        if $crate::trace2::enabled() {
            $crate::trace2::data_fmt($category, $key, ::core::format_args!($($fmt)+));
        }
    };
}

/// A Trace2 `printf` event; the arguments are evaluated only when Trace2 is on.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::printf!("refreshed {} entries", 12);
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\nrefreshed 12 entries\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg(feature = "trace2")]
#[macro_export]
macro_rules! printf {
    ($($fmt:tt)+) => {
        if $crate::trace2::enabled() {
            $crate::trace2::printf(::core::format_args!($($fmt)+));
        }
    };
}

/// A Trace2 `error` event; the format string literal is the event's `fmt`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::error!("unknown option `{}'", "--bogus");
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let error = events.iter().find(|e| e["event"] == "error").unwrap();
/// assert_eq!(error["msg"], "unknown option `--bogus'");
/// assert_eq!(error["fmt"], "unknown option `{}'"); // the literal, as git's event target shows
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "trace2")]
#[macro_export]
macro_rules! error {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {
        if $crate::trace2::enabled() {
            $crate::trace2::error_fmt($fmt, ::core::format_args!($fmt $(, $arg)*));
        }
    };
}
#[cfg(all(unix, feature = "xray"))]
pub mod xray;

#[cfg(any(feature = "trace2", all(unix, feature = "xray")))]
pub mod future;
#[cfg(all(unix, feature = "tracing"))]
pub mod layer;

/// The README's Rust examples (the core's and the std shell's), compiled and run
/// as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
