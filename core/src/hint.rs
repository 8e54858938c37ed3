//! Hints to the compiler about which way a branch goes.

/// Marks the path that calls it as the rare one: rustc gives a block that calls
/// a `#[cold]` function the low branch weight, and LLVM lays the other way out
/// to fall through (a taken branch costs Cortex-M cores a pipeline refill). A
/// stand-in for `core::hint::cold_path`, which is newer than the crate's
/// minimum Rust.
#[cold]
#[inline]
pub(crate) fn cold_path() {}
