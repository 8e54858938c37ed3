//! The first stage: reading an FDR file. [`file`](mod@file) maps it with bounded
//! memory, [`index`] verifies it and indexes its blocks per thread, and its
//! cursors expand them into [`events`] in the [`order`]s llvm-xray walks
//! them; [`trace`] holds a small file's events whole.
//!
//! Nothing here knows names or outputs.

pub mod events;
pub mod file;
pub mod index;
pub mod order;
pub mod trace;
