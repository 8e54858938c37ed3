//! What a record path written in assembly reads of this runtime: the x86_64
//! trampolines of `flightrec-sleds` record the steady-state function record
//! themselves, with the semantics of [`try_record`](super::try_record), and
//! call it only when they decline. Not a stable interface: offsets and symbols
//! of this build, for code built together with this crate (the offsets come
//! from `offset_of!`, so they follow any change of the structs).
//!
//! The steps, in the order `try_record` takes them: [`STATE`] is
//! [`RECORDING`]; the thread's ring (the 8-byte initial-exec slot named
//! [`CURRENT_SLOT_SYMBOL`], null without a ring); the ring's `busy` byte
//! ([`RING_BUSY`]) is 0, then set to 1, then [`STATE`] read again; the
//! recorder ([`RING_RECORDER_PTR`], null without one); the clock is `rdtsc`
//! ([`USE_RDTSCP`] is false: CPU 0); then the writer's fast record (see
//! `flightrec_core::fdr::writer::layout`); `busy` cleared last.
//!
//! ```
//! use flightrec::xray::sled_abi;
//! assert!(sled_abi::CURRENT_SLOT_SYMBOL.starts_with("__flightrec_xray_current_"));
//! assert_ne!(sled_abi::RING_BUSY, sled_abi::RING_RECORDER_PTR);
//! ```

use std::mem::offset_of;

use super::pool::ThreadRing;

pub use super::clock::USE_RDTSCP;
pub use super::state::{RECORDING, STATE};

/// The symbol of the thread's ring slot (a `*const` ring, 8 bytes of
/// initial-exec TLS).
///
/// ```
/// let name = flightrec::xray::sled_abi::CURRENT_SLOT_SYMBOL;
/// assert_eq!(name, concat!("__flightrec_xray_current_", env!("CARGO_PKG_VERSION_MAJOR"),
///                          "_", env!("CARGO_PKG_VERSION_MINOR")));
/// ```
pub const CURRENT_SLOT_SYMBOL: &str = super::claim::CURRENT_SLOT_SYMBOL;

/// The ring's `busy` flag (an `AtomicBool`: one byte, 0 or 1).
///
/// ```
/// use flightrec::xray::sled_abi::{RING_BUSY, RING_RECORDER_PTR};
/// // Two fields of one struct: a byte and an aligned pointer.
/// assert!(RING_BUSY.abs_diff(RING_RECORDER_PTR) >= 1);
/// assert_eq!(RING_RECORDER_PTR % 8, 0);
/// ```
pub const RING_BUSY: usize = offset_of!(ThreadRing, busy);

/// The ring's recorder (`*mut Recorder`, null without one); the writer is at
/// `flightrec_core::fdr::ring::RECORDER_WRITER_OFFSET` in it. Example on
/// [`RING_BUSY`].
pub const RING_RECORDER_PTR: usize = offset_of!(ThreadRing, recorder_ptr);

/// The types the offsets above are documented with.
#[allow(dead_code)]
fn _types(r: &ThreadRing) {
    let _: &std::sync::atomic::AtomicBool = &r.busy;
    let _: &std::cell::UnsafeCell<*mut flightrec_core::fdr::ring::Recorder<'static, 'static>> =
        &r.recorder_ptr;
}
