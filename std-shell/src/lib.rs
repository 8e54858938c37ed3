//! # flightrec
//!
//! The std shell of flightrec: what an operating system supplies around the
//! allocation-free [`flightrec_core`].
#![warn(missing_docs)]

pub use flightrec_core as core;

pub mod trace2;
pub mod trace2_render;

pub mod tool;
