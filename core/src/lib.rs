//! # flightrec-core
//!
//! The allocation-free, `no_std` core of flightrec. It writes three kinds of data into
//! memory the caller owns, and never allocates, blocks or panics on any input:
//!
//! * [`fdr`]: LLVM XRay *Flight Data Recorder* traces (file header, 8-byte function
//!   records, 16-byte metadata records), per-thread rings of fixed buffers, and a
//!   streaming decoder and verifier that enforces the grammar `llvm-xray` 14 reads.
//! * [`trace2`]: git Trace2 lines in git's normal, perf and event (JSON) formats, byte
//!   for byte, into caller buffers.
//! * [`link`]: a framed stream over [`embedded_io::Write`], so firmware can flush its
//!   buffers over a serial link and a host can reassemble them.
//!
//! Time comes from a [`clock::Clock`]; the core never reads a clock of its own.
//!
//! The `defmt` feature derives `defmt::Format` for the public types.
#![no_std]
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod clock;
pub mod fdr;
pub mod link;
pub mod trace2;

/// The README's Rust example, compiled and run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
