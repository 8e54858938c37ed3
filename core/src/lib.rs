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
//!   buffers over a serial link and a host can reassemble them, and send Trace2
//!   events compactly ([`link::trace2`]) for the host to format.
//!
//! Time comes from a [`clock::Clock`]; the core never reads a clock of its own.
//!
//! The `defmt` feature derives `defmt::Format` for the public types. The
//! `crc-nibble` feature gives the link's CRC-32C a 64-byte table instead of
//! 1 KiB (less flash, more cycles per byte sent).
//!
//! # Example
//!
//! One FDR buffer written into stack memory, put behind a file header and checked with
//! the same grammar `llvm-xray` applies (see [`fdr::ring`] for many buffers and
//! threads):
//!
//! ```
//! use flightrec_core::clock::{Clock, ManualClock};
//! use flightrec_core::fdr::decoder::verify;
//! use flightrec_core::fdr::header::HEADER_SIZE;
//! use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
//! use flightrec_core::fdr::{FileHeader, FunctionId};
//!
//! let mut clock = ManualClock::new(1_000_000_000);
//! let mut buf = [0u8; 256];
//! let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
//! let main = FunctionId::new(1).unwrap();
//! w.enter(main, clock.now()).unwrap();
//! clock.advance(1_500);
//! w.exit(main, clock.now()).unwrap();
//! let buffer = w.finish();
//!
//! let header = FileHeader::new(clock.ticks_per_second(), 256);
//! let mut file = [0u8; HEADER_SIZE + 256];
//! file[..HEADER_SIZE].copy_from_slice(&header.to_bytes());
//! file[HEADER_SIZE..HEADER_SIZE + buffer.len()].copy_from_slice(buffer);
//! let summary = verify(&file[..HEADER_SIZE + buffer.len()]).unwrap();
//! assert_eq!(summary.buffers, 1);
//! assert_eq!(summary.function_records, 2);
//! ```
#![no_std]
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

pub mod clock;
pub mod context;
mod divide;
pub mod fdr;
pub mod global;
mod hint;
pub mod link;
pub mod names;
mod one_core;
pub mod sled_map;
pub mod tasks;
pub mod trace2;
