//! Test helpers shared by flightrec's crates and its fuzz targets (dev-only,
//! never published).
//!
//! * [`trace2_gen`]: one generator of arbitrary Trace2 events, for libFuzzer
//!   (raw bytes) and for proptest (a strategy over the same bytes);
//! * [`trace2_check`]: what the Trace2 formatters promise for any of those
//!   inputs, checked the same way by the property tests and the fuzz target;
//! * [`trace2_link`]: the compact Trace2 event a property test's numbers
//!   describe, for the core's and the host's tests of the link's events;
//! * [`link_wire`]: the frames a receiver decodes from a link's bytes, the FDR
//!   buffer a frame carries, and a sink that fails as a serial line or a full
//!   buffer does;
//! * [`xray_tool`]: finding and running the real `llvm-xray`, its YAML parsed;
//! * [`child`]: scenarios run in a fresh child process of the test binary;
//! * [`examples`]: building a crate's example from an integration test;
//! * [`gdb_stub`]: a small GDB server over a memory image, as QEMU's stub
//!   behaves, for tests of `recv --gdb`;
//! * [`target_image`]: an ELF with one symbol and an RTT control block's
//!   memory, built byte by byte.
//!
//! The fuzz crate builds it with `default-features = false`: only these first four.

pub mod link_wire;
pub mod trace2_check;
pub mod trace2_gen;
pub mod trace2_link;

#[cfg(feature = "integration")]
pub mod child;
#[cfg(feature = "integration")]
pub mod examples;
#[cfg(feature = "integration")]
pub mod gdb_stub;
#[cfg(feature = "integration")]
pub mod target_image;
#[cfg(feature = "integration")]
pub mod xray_tool;
