//! An LLVM XRay sled runtime for bare-metal AArch64 (`aarch64-unknown-none`):
//! no `std`, no allocation, no panics.
//!
//! Code built with `-Zinstrument-xray=always` (or `clang -fxray-instrument`)
//! starts every function with a 32-byte sled, `b #32` over seven `nop`s, and has
//! one before every return and tail call; the `xray_instr_map` section lists them.
//! [`SledMap`] (the core's reader, `flightrec_core::sled_map`, re-exported)
//! reads that list and gives each function the id `llvm-xray` gives it
//! (so `llvm-xray account -m firmware.elf` names the functions of a trace);
//! [`patch`] rewrites the sleds to call this crate's trampolines, which call the
//! [`Handler`] installed with [`set_handler`] with the function id and the kind.
//!
//! The firmware's linker script keeps `xray_instr_map` and bounds it with
//! `__start_xray_instr_map` and `__stop_xray_instr_map` ([`map_from_linker`]).
//! Single core: the trampolines' re-entry guard is one byte, not one per core.
//! See `examples/aarch64-sleds` and `docs/firmware-guide.md`.
//!
//! ```
//! use flightrec_sleds_aarch64::{encode, SledKind, SledMap, ENTRY_SIZE};
//! // One version-1 (absolute) entry sled at 0x4008_0000, function id 1.
//! let mut entry = [0u8; ENTRY_SIZE];
//! entry[0..8].copy_from_slice(&0x4008_0000u64.to_le_bytes());
//! entry[8..16].copy_from_slice(&0x4008_0000u64.to_le_bytes());
//! entry[18] = 1;
//! let map = SledMap::parse(&entry, 0)?;
//! let sled = map.iter().next().unwrap();
//! assert_eq!((sled.kind, sled.function_id), (SledKind::Entry, 1));
//! // Patched, it calls a trampoline 4 KiB further on with the id in w17.
//! let words = encode::patched(sled.function_id, sled.address, sled.address + 0x1000)?;
//! assert_eq!(words[0], encode::STP_X0_X30_PRE);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![no_std]

pub mod encode;

#[cfg(all(target_arch = "aarch64", target_os = "none"))]
mod runtime;

pub use encode::PatchError;
pub use flightrec_core::sled_map::{MapError, Sled, SledKind, SledMap, ENTRY_SIZE};
#[cfg(all(target_arch = "aarch64", target_os = "none"))]
pub use runtime::{map_from_linker, patch, set_handler, unpatch};

/// What patched sleds call: the function id (from 1) and the kind
/// (compiler-rt's `XRayEntryType`: 0 entry, 1 exit, 2 tail exit).
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// static ENTRIES: AtomicU32 = AtomicU32::new(0);
/// extern "C" fn count(_id: u32, kind: u32) {
///     if kind == 0 {
///         ENTRIES.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// let handler: flightrec_sleds_aarch64::Handler = count;
/// handler(4, 0); // what a patched entry sled of function 4 does
/// assert_eq!(ENTRIES.load(Ordering::Relaxed), 1);
/// ```
pub type Handler = extern "C" fn(u32, u32);
