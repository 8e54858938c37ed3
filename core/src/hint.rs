//! Which way a branch usually goes, for the record path's layout.
//!
//! On Cortex-M a taken branch costs a pipeline refill (2 cycles more than one
//! not taken, on the M0 and the M4 alike), so the record path wants its common
//! case to fall through. LLVM lays a branch out by its weights; rustc gives a
//! block that calls a `#[cold]` function the low one.

/// Marks the path that calls it as the rare one. A stand-in for
/// `core::hint::cold_path`, which is newer than the crate's minimum Rust.
#[cold]
#[inline]
pub(crate) fn cold_path() {}
