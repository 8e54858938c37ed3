//! # flightrec-host
//!
//! The host side of flightrec: everything that reads what a traced program or a
//! firmware wrote. The `flightrec` command (crate `flightrec-cli`) is a thin
//! command line over this library; programs that want the same work without the
//! command line (a test harness, a collector service) use it directly.
//!
//! The modules are the stages of one pipeline, each importing only from those
//! above it in this list:
//!
//! * [`progress`]: a progress bar for long inputs when stderr is a terminal.
//! * [`read`]: FDR files read with bounded memory: verified, indexed per
//!   thread and expanded into timed events in llvm-xray's order.
//! * [`names`]: function names for a trace (the desktop runtime's names files,
//!   a firmware's `.flightrec` section, llvm-xray's YAML instrumentation maps).
//! * [`link`]: the framed link (`recv`): serial, file, stdin or RTT through a
//!   GDB server, collected into one FDR file per source and Trace2 text.
//! * [`model`]: the timeline model (tracks, slices, instants, counters) and
//!   the [`model::TimelineSink`] every timeline writer implements.
//! * [`timeline`]: several inputs (FDR files, `recv` directories, Trace2
//!   streams) merged into one timeline on one clock.
//! * [`out`]: the writers (llvm-xray's YAML, the dump listing, Chrome JSON,
//!   Perfetto protobuf, git's Trace2 text formats).
//! * [`verify`] and [`convert`]: the commands, from inputs to one output.
#![warn(missing_docs)]

pub use flightrec_core as core;

pub mod progress;

pub mod read;

pub mod names;

pub mod link;

pub mod model;

pub mod timeline;

pub mod out;

pub mod convert;
pub mod verify;
