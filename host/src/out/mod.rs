//! The last stage: the writers. [`yaml`] writes `llvm-xray convert`'s YAML
//! byte for byte, [`dump`] one line per record as `llvm-xray fdr-dump` does,
//! [`trace2_render`] git's three Trace2 text formats; [`chrome`] and
//! [`perfetto`] write a single FDR file's events, [`timeline_sinks`] the
//! merged [`crate::model`] timeline as Chrome JSON and Perfetto protobuf.
//!
//! Writers read [`crate::read`]'s events or [`crate::model`]'s timeline and
//! [`crate::names`]; nothing here reads a file.

pub mod chrome;
pub mod dump;
pub mod perfetto;
pub mod timeline_sinks;
pub mod trace2_render;
pub mod yaml;
mod yaml_unicode;
