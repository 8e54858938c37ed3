//! # flightrec-host
//!
//! The host side of flightrec: everything that reads what a traced program or a
//! firmware wrote. The `flightrec` command (crate `flightrec-cli`) is a thin
//! command line over this library; programs that want the same work without the
//! command line (a test harness, a collector service) use it directly.
//!
//! * [`verify`] runs the core's decoder and verifier over FDR files.
//! * [`dump`] prints one line per record, like `llvm-xray fdr-dump`.
//! * [`expand`] turns an FDR file into per-thread events with absolute times;
//!   [`yaml`] and [`chrome`] write them as `llvm-xray convert`'s YAML or Chrome
//!   trace-event JSON.
//! * [`names`] finds function names for a trace (the desktop runtime's ELF names
//!   files through [`names_elf`], llvm-xray's YAML instrumentation maps).
//! * [`recv`] reads a framed link (serial device, file, stdin, or a target's RTT
//!   channel through a GDB server: [`rtt`], [`gdb`]) and hands each frame to a
//!   [`collect::Collector`], which writes one FDR file per source and the Trace2
//!   lines.
//! * [`trace2_render`] renders git's Trace2 event stream in the three formats.
//! * [`timeline`] merges several inputs (FDR files, `recv` directories, Trace2
//!   streams) into one timeline on one clock, written by [`timeline_out`].
//! * [`progress`] draws a progress bar for long inputs when stderr is a terminal.
#![warn(missing_docs)]

pub use flightrec_core as core;

pub mod chrome;
pub mod collect;
pub mod convert;
pub mod dump;
pub mod expand;
pub mod gdb;
pub mod gdb_stub;
pub mod input;
pub mod names;
pub mod names_elf;
pub mod names_firmware;
pub mod perfetto;
pub mod progress;
pub mod recv;
pub mod rtt;
pub mod stream;
pub mod tasks;
pub mod timeline;
pub mod timeline_out;
pub mod trace2_link;
pub mod trace2_render;
pub mod verify;
pub mod yaml;
mod yaml_unicode;
