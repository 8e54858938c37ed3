//! Shared helpers for the benchmarks.

pub mod callgrind;
pub mod compiler_rt;
pub mod ring_setup;
pub mod side_by_side;
