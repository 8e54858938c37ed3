//! # flightrec
//!
//! The std shell of flightrec: what an operating system supplies around the
//! allocation-free [`flightrec_core`].
//!
//! * [`trace2`]: git Trace2 for Rust programs: settings, destinations, the
//!   process runtime (sessions, regions, data, threads, children, exit).
//! * [`trace2_render`]: renders git's event stream in the three formats.
#![warn(missing_docs)]
// The Trace2 examples show `fn main` on purpose: the session guard lives until it returns.
#![allow(clippy::needless_doctest_main)]

pub use flightrec_core as core;

pub mod trace2;
pub mod trace2_render;

/// Enters a Trace2 region; the returned guard leaves it when dropped.
///
/// `region!(category, label)`, optionally followed by a message format and
/// its arguments for `region_enter`. The caller's `file:line` is recorded.
///
/// ```
/// let _r = flightrec::region!("index", "refresh");
/// let _m = flightrec::region!("hook", "pre-commit", "max:{}", 1);
/// ```
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
/// let entries = 1024;
/// flightrec::data!("index", "entries", "{}", entries);
/// ```
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
/// flightrec::printf!("refreshed {} entries", 12);
/// ```
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
/// flightrec::error!("unknown option `{}'", "--bogus");
/// ```
#[macro_export]
macro_rules! error {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {
        if $crate::trace2::enabled() {
            $crate::trace2::error_fmt($fmt, ::core::format_args!($fmt $(, $arg)*));
        }
    };
}
pub mod tool;
#[cfg(unix)]
pub mod xray;

/// The README's Rust examples (the core's and the std shell's), compiled and run
/// as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
