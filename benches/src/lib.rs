//! Shared helpers for the benchmarks.

pub mod callgrind;
pub mod compiler_rt;
pub mod side_by_side;
