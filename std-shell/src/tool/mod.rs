//! The host tool's commands, behind `flightrec recv | verify | dump | convert`.
//!
//! * [`recv`] reads a framed link (serial device, file, stdin) and writes one FDR
//!   file per source and the Trace2 lines with a [`collect::Collector`].
//! * [`verify`] runs the core's decoder and verifier over files.
//! * [`dump`] prints one line per record, like `llvm-xray fdr-dump`.
//! * [`yaml`] and [`chrome`] convert a trace, expanded by [`expand`], into
//!   `llvm-xray convert`'s YAML or Chrome trace-event JSON; [`names`] reads function
//!   names for both (the desktop runtime's ELF names files through [`names_elf`]).
//! * [`output`] writes to stdout and stops quietly when the reader goes away.

pub mod chrome;
pub mod cli;
pub mod collect;
pub mod dump;
pub mod expand;
pub mod names;
pub mod names_elf;
pub mod output;
pub mod progress;
pub mod recv;
pub mod verify;
pub mod yaml;
