//! Trace2 on desktop hosts: settings, destinations and the process runtime.
//!
//! A program calls [`init`] first thing in `main` and keeps the returned
//! [`Session`]; from then on the functions of this module write git Trace2
//! events to the targets configured by `GIT_TRACE2`, `GIT_TRACE2_PERF` and
//! `GIT_TRACE2_EVENT` (or a prefix of the program's own, see [`Builder`]),
//! byte for byte in git's formats. With no target configured every call is a
//! no-op that costs one relaxed atomic load.
//!
//! ```
//! fn main() {
//!     # let dir = tempfile::tempdir().unwrap();
//!     # std::env::set_var("HOME", dir.path()); // no global git config
//!     # std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
//!     # let perf = dir.path().join("perf");
//!     # std::env::set_var("GIT_TRACE2_PERF", &perf);
//!     # std::env::set_var("GIT_TRACE2_PERF_BRIEF", "1");
//!     # {
//!     // With GIT_TRACE2_PERF=<file> and GIT_TRACE2_PERF_BRIEF=1:
//!     let _t2 = flightrec::trace2::init(); // version, start, cmd_ancestry
//!     flightrec::trace2::cmd_name("refresh");
//!     {
//!         let _r = flightrec::region!("index", "refresh");
//!         flightrec::data!("index", "entries", "{}", 1024);
//!     }
//!     flightrec::printf!("done after {} passes", 2);
//!     # }
//!     # let text = std::fs::read_to_string(&perf).unwrap();
//!     # let details: Vec<&str> = text.lines().map(|l| l.rsplit(" | ").next().unwrap()).collect();
//!     # assert_eq!(details[details.len() - 7..], [
//!     #     "refresh (refresh)", "label:refresh", "..entries:1024", "label:refresh",
//!     #     "done after 2 passes", "code:0", "code:0",
//!     # ]);
//! } // exit and atexit
//! ```
//!
//! * Lifecycle ([`init`], [`Session`], [`exit`]): `exit` + `atexit` when
//!   `main` returns, when [`exit`] or `std::process::exit` is called (a C
//!   library exit handler), with code 101 when a panic unwinds out of `main`
//!   (a panic hook adds an `error` event for every panic). `abort()`,
//!   crashes and signals other than `SIGPIPE` end the trace at the last line
//!   written, as in git (see [`signal`] for `SIGPIPE`).
//! * Commands: [`cmd_name`], [`cmd_mode`], [`cmd_path`], [`alias`],
//!   [`def_param`], [`def_repo`].
//! * Regions and data: [`region()`], [`region_in`], [`region_msg`] (RAII),
//!   [`data()`], [`data_in`], [`data_fmt`], [`data_json`], [`printf`],
//!   [`error`], [`error_fmt`], and the macros [`region!`](crate::region),
//!   [`data!`](crate::data), [`printf!`](crate::printf),
//!   [`error!`](crate::error).
//! * Threads: [`thread_start`] returns a guard that emits `thread_exit`.
//! * Timers and counters: [`Timer`], [`Counter`] statics.
//! * Children: [`child()`] (around a `std::process::Command`), [`exec`].
//!
//! Every line is formatted by the core's formatters into the thread's own
//! buffer and written with one `write()` per destination, in the order
//! normal, perf, event; or, in the opt-in background mode
//! ([`target::WriteMode`], [`flush`]), queued for a writer thread.
//!
//! # Layers
//!
//! The runtime's modules import in one direction only: a module uses the
//! modules of the layers listed before its own, and those listed before it on
//! its own line; never one after it. `.ci/steps/module-layers.sh` reads this
//! list and checks every `super::` and `crate::trace2::` path against it.
//!
//! 1. Leaves: `clock`, [`sid`], `ancestry`, `warning`, `write_mark`,
//!    [`target`], [`config`], `stat_defs`, `config_param`, `line`.
//! 2. Runtime state (settings, outputs, session id, the on/off flag):
//!    `outputs`, `runtime`.
//! 3. Thread context: `gap` (what a full background queue dropped), `tls`.
//! 4. Emit (line inputs, formatting, writing to the outputs): `emit`,
//!    `redact`.
//! 5. Public API: `repo`, `region`, `data`, `message`, `params`, `command`,
//!    `stats`, `thread`, `child`, `at`.
//! 6. Lifecycle (start, exit, `atexit`, panics, signals): [`signal`],
//!    `lifecycle`.

mod ancestry;
pub(crate) mod at;
mod child;
mod clock;
mod command;
pub mod config;
mod config_param;
mod data;
mod emit;
mod gap;
mod lifecycle;
mod line;
mod message;
mod outputs;
mod params;
mod redact;
mod region;
mod repo;
mod runtime;
pub mod sid;
pub mod signal;
mod stat_defs;
mod stats;
pub mod target;
mod thread;
mod tls;
mod warning;
mod write_mark;

pub use ancestry::ancestry;
pub use child::{child, exec, exec_event, exec_result, ChildRecord, ChildSpec, TracedChild};
pub use command::{alias, cmd_mode, cmd_name, cmd_path, cmd_start};
pub use config_param::{config_params_from_files, ConfigParam, ConfigParamsFn};
pub use data::{data, data_fmt, data_in, data_json};
pub use lifecycle::{exit, init, Builder, Session};
pub use message::{error, error_fmt, printf};
pub use params::{def_param, def_param_scoped};
pub use region::{region, region_in, region_msg, Region};
pub use repo::{def_repo, Repo};
pub use runtime::{enabled, flush, source_path};
pub use stat_defs::{MAX_COUNTERS, MAX_TIMERS};
pub use stats::{Counter, Timer, TimerScope};
pub use thread::{thread_start, ThreadGuard};
