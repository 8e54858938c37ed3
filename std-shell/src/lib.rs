//! # flightrec
//!
//! The std shell of flightrec: what an operating system supplies around the
//! allocation-free [`flightrec_core`].
//!
//! * [`trace2`]: git Trace2 for Rust programs: settings, destinations, the
//!   process runtime (sessions, regions, data, threads, children, exit).
//! * [`xray`]: LLVM XRay FDR for desktop programs, configured like compiler-rt.
//! * [`instrument`]: `#[flightrec::instrument]`, function enter/exit records for
//!   std programs and for `#![no_std]` firmware (see below), and [`scope!`] for
//!   a block.
//!
//! ## Firmware (`#![no_std]`)
//!
//! Without its default `std` feature the crate is `#![no_std]` and holds only
//! the core ([`core`], i.e. `flightrec_core`), the attribute and [`scope!`]:
//!
//! ```toml
//! flightrec = { version = "0.1", default-features = false, features = ["macros"] }
//! ```
//!
//! There an instrumented function gets a name static in the non-loaded
//! `.flightrec` ELF section (its id is the static's address, so the firmware
//! carries no names in flash) and calls the program's global recorder
//! ([`core::global`]). The build script ships the linker fragment
//! `flightrec.x` that gathers the statics: the firmware links with
//! `-Tflightrec.x`, from its build script when tracing is on, so that a build
//! without flightrec links as well (`examples/firmware-guide/build.rs`).
//! `flightrec recv|dump|convert --elf fw.elf` reads the names back.
//! docs/firmware-guide.md walks through it.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]
// The Trace2 examples show `fn main` on purpose: the session guard lives until it returns.
#![allow(clippy::needless_doctest_main)]

pub use flightrec_core as core;

/// `#[flightrec::instrument]`: records a function's entry and exit.
///
/// On std programs the records go to the XRay FDR runtime, the function named by
/// its path; an `async fn` is entered and exited around each poll; `region =
/// "category"` also opens a Trace2 region labelled with the function's name. On
/// `#![no_std]` firmware (no `std` feature) the function's name goes to the ELF's
/// `.flightrec` section and the records to the global recorder
/// (docs/firmware-guide.md).
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::FunctionAction::{Enter, Exit};
/// use flightrec::xray::names::function_name;
/// use flightrec::xray::Config;
///
/// #[flightrec::instrument]
/// fn parse(s: &str) -> Result<u32, std::num::ParseIntError> {
///     let n: u32 = s.parse()?; // an early exit is recorded too
///     Ok(n * 2)
/// }
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// assert_eq!(parse("21"), Ok(42));
/// assert!(parse("x").is_err());
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let calls: Vec<_> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// let id = calls[0].1;
/// assert_eq!(calls, [(Enter, id), (Exit, id), (Enter, id), (Exit, id)]);
/// assert!(function_name(id).unwrap().ends_with("::parse"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// What it refuses, with a compile error:
///
/// ```compile_fail
/// #[flightrec::instrument] // a `const fn` cannot record at run time
/// const fn answer() -> u32 { 42 }
/// ```
///
/// ```compile_fail
/// #[flightrec::instrument] // not a function
/// struct Config;
/// ```
///
/// ```compile_fail
/// trait Parse {
///     #[flightrec::instrument] // no body: instrument the implementations
///     fn parse(&self) -> u32;
/// }
/// ```
///
/// ```compile_fail
/// #[flightrec::instrument(level = "info")] // the only option is `region = "..."`
/// fn parse() {}
/// ```
#[cfg(feature = "macros")]
pub use flightrec_macros::instrument;

#[doc(hidden)]
pub mod __private;

/// The Rust blocks of `docs/firmware-guide.md`, compiled and run as doc tests here
/// too, where `#[flightrec::instrument]` is available (flightrec-core runs them
/// as well, without the attribute's block).
#[cfg(doctest)]
#[doc = include_str!("../../docs/firmware-guide.md")]
pub struct FirmwareGuide;

/// The Rust blocks of `docs/desktop-guide.md`, compiled and run as doc tests
/// (its `tracing` snippet checks that a span reached Trace2 and XRay FDR).
#[cfg(all(doctest, unix, feature = "tracing"))]
#[doc = include_str!("../../docs/desktop-guide.md")]
pub struct DesktopGuide;

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

/// Records a scope (a block) as a function named `module::path::name`: returns a
/// guard whose drop records the exit. The statement form of
/// `#[flightrec::instrument]`, on std programs (XRay FDR) and on firmware (a
/// name static in the `.flightrec` section, the global recorder).
///
/// `name` is a string literal. Each use is its own function in the trace.
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::FunctionAction;
/// use flightrec::xray::names::function_name;
/// use flightrec::xray::Config;
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// let total: u32 = {
///     let _s = flightrec::scope!("sum");
///     (1..=10).sum()
/// };
/// assert_eq!(total, 55);
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let ids: Vec<(FunctionAction, u32)> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// let id = ids[0].1;
/// assert_eq!(ids, [(FunctionAction::Enter, id), (FunctionAction::Exit, id)]);
/// // This doctest's module path, then the scope's name.
/// assert!(function_name(id).unwrap().ends_with("::sum"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! scope {
    ($name:literal) => {
        $crate::__instrument_site!($name, ".flightrec.fn.scope")
    };
}

/// The guard of `#[flightrec::instrument]` (std with XRay: a lazily numbered
/// call site named by the function's path).
#[doc(hidden)]
#[cfg(all(feature = "std", unix, feature = "xray"))]
#[macro_export]
macro_rules! __instrument_fn {
    ($name:literal, $section:literal) => {{
        static SITE: $crate::xray::CallSite = $crate::xray::CallSite::new();
        fn __flightrec_here() {}
        SITE.enter(|| {
            $crate::__private::function_name(::core::any::type_name_of_val(&__flightrec_here))
        })
    }};
}

/// A call site named `$path` (std with XRay).
#[doc(hidden)]
#[cfg(all(feature = "std", unix, feature = "xray"))]
#[macro_export]
macro_rules! __instrument_site {
    ($name:literal, $section:literal) => {{
        static SITE: $crate::xray::CallSite = $crate::xray::CallSite::new();
        SITE.enter(|| ::core::concat!(::core::module_path!(), "::", $name))
    }};
}

/// Without XRay on std, the attribute records no function records.
#[doc(hidden)]
#[cfg(all(feature = "std", not(all(unix, feature = "xray"))))]
#[macro_export]
macro_rules! __instrument_fn {
    ($name:literal, $section:literal) => {
        ()
    };
}

#[doc(hidden)]
#[cfg(all(feature = "std", not(all(unix, feature = "xray"))))]
#[macro_export]
macro_rules! __instrument_site {
    ($name:literal, $section:literal) => {
        ()
    };
}

/// On firmware: the function's name static in `.flightrec` (docs/FORMAT in the
/// firmware guide) and a guard that records through the global recorder.
#[doc(hidden)]
#[cfg(not(feature = "std"))]
#[macro_export]
macro_rules! __instrument_fn {
    ($name:literal, $section:literal) => {
        $crate::__instrument_site!($name, $section)
    };
}

#[doc(hidden)]
#[cfg(not(feature = "std"))]
#[macro_export]
macro_rules! __instrument_site {
    ($name:literal, $section:literal) => {{
        const __FLIGHTREC_NAME: &str = ::core::concat!(
            ::core::module_path!(),
            "::",
            $name,
            "\t",
            ::core::file!(),
            ":",
            ::core::line!(),
            "\0"
        );
        #[link_section = $section]
        #[used]
        static __FLIGHTREC_FN: [u8; __FLIGHTREC_NAME.len()] =
            $crate::__private::name_bytes(__FLIGHTREC_NAME);
        $crate::__site_id_static!(__FLIGHTREC_FN, __FLIGHTREC_ID);
        // The exit's guard is a type of this site: its drop names the static
        // itself, so the guard holds nothing and the compiler either keeps the
        // id in a register through the body or makes it again, whichever is
        // smaller.
        #[must_use = "the exit is recorded when the guard is dropped"]
        struct __FlightrecExit;
        impl ::core::ops::Drop for __FlightrecExit {
            #[inline(always)]
            fn drop(&mut self) {
                $crate::__private::exit_id($crate::__site_id!(__FLIGHTREC_FN, __FLIGHTREC_ID));
            }
        }
        $crate::__private::enter_id($crate::__site_id!(__FLIGHTREC_FN, __FLIGHTREC_ID));
        __FlightrecExit
    }};
}

/// A site's id static, with feature `small-ids` on Thumb targets: one byte in
/// `.flightrec.id` (its address, below 256, is the id) and the pair of
/// addresses in `.flightrec.map` that names it. Otherwise nothing: the id is
/// the name static's address.
#[doc(hidden)]
#[cfg(all(not(feature = "std"), flightrec_small_ids))]
#[macro_export]
macro_rules! __site_id_static {
    ($name:ident, $id:ident) => {
        #[link_section = ".flightrec.id"]
        #[used]
        static $id: u8 = 0;
        #[link_section = ".flightrec.map"]
        #[used]
        static __FLIGHTREC_MAP: $crate::__private::IdName =
            $crate::__private::IdName(&$id, &$name as *const _ as *const u8);
    };
}

#[doc(hidden)]
#[cfg(all(not(feature = "std"), not(flightrec_small_ids)))]
#[macro_export]
macro_rules! __site_id_static {
    ($name:ident, $id:ident) => {};
}

/// The id of a site, with feature `small-ids` on Thumb targets: one `movs` of
/// its id static's address (below 256, `flightrec.x` checks), 2 bytes, straight
/// into r0, the entry points' argument. Not `pure`: the exit makes its id again
/// (2 bytes) instead of the compiler keeping it in a callee-saved register
/// through the body (measured smaller over sixteen functions: −40 B thumbv7em,
/// +4 B thumbv6m).
#[doc(hidden)]
#[cfg(all(not(feature = "std"), flightrec_small_ids))]
#[macro_export]
macro_rules! __site_id {
    ($name:ident, $id:ident) => {{
        let id: usize;
        // SAFETY: `movs` writes r0 and the flags and reads and writes nothing
        // else (no memory, no stack); `flightrec.x` places `$id` in
        // `.flightrec.id` below 256, so its low 8 bits are its address.
        unsafe {
            ::core::arch::asm!(
                "movs r0, #:lower0_7:{site}",
                site = sym $id,
                lateout("r0") id,
                options(nomem, nostack)
            );
        }
        id
    }};
}

/// The id of a site: the address of its name static. On Thumb-2 targets
/// (`flightrec.x` keeps `.flightrec` under 64 KiB there) one `movw` of its low
/// 16 bits, 4 bytes, where the full address takes a `movw` and a `movt`.
#[doc(hidden)]
#[cfg(all(not(feature = "std"), not(flightrec_small_ids), flightrec_movw))]
#[macro_export]
macro_rules! __site_id {
    ($name:ident, $id:ident) => {{
        let id: usize;
        // SAFETY: `movw` writes the output register and reads and writes nothing
        // else (no memory, no stack, no flags); `flightrec.x` places `$name` in
        // `.flightrec` below 0x10000, so its low 16 bits are its address.
        unsafe {
            ::core::arch::asm!(
                "movw {id}, #:lower16:{site}",
                id = out(reg) id,
                site = sym $name,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        id
    }};
}

#[doc(hidden)]
#[cfg(all(not(feature = "std"), not(flightrec_small_ids), not(flightrec_movw)))]
#[macro_export]
macro_rules! __site_id {
    ($name:ident, $id:ident) => {
        &$name as *const _ as usize
    };
}

/// The Trace2 region of `#[flightrec::instrument(region = "category")]`.
#[doc(hidden)]
#[cfg(feature = "trace2")]
#[macro_export]
macro_rules! __instrument_region {
    ($category:literal, $name:literal) => {
        $crate::trace2::region($category, $name)
    };
}

/// Without Trace2 (firmware, or std without the `trace2` feature) the region is
/// left out.
#[doc(hidden)]
#[cfg(not(feature = "trace2"))]
#[macro_export]
macro_rules! __instrument_region {
    ($category:literal, $name:literal) => {
        ()
    };
}
