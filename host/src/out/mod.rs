//! The last stage: one writer per output format. [`yaml`] writes
//! `llvm-xray convert`'s YAML byte for byte from one FDR file's events,
//! [`dump`] one line per record as `llvm-xray fdr-dump` does, [`chrome`] and
//! [`perfetto`] the timeline of [`crate::model`] (of one input or of many),
//! [`trace2_render`] git's three Trace2 text formats.
//!
//! Writers read [`crate::read`]'s events or [`crate::model`]'s timeline and
//! [`crate::names`]; nothing here opens a file.

pub mod chrome;
pub mod dump;
pub mod perfetto;
mod proto;
pub mod tasks;
pub mod trace2_render;
pub mod yaml;
mod yaml_unicode;
