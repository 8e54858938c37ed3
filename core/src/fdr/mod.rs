//! LLVM XRay Flight Data Recorder (FDR) traces.
//!
//! * [`header`]: the 32-byte file header and the format [`Version`].
//! * [`records`]: the 8-byte function records and 16-byte metadata records, one type
//!   per kind with `parse` beside `emit` (reserved bytes written as zero), used by both
//!   the writer and the decoder.
//! * [`writer`]: [`writer::BufferWriter`] fills one caller buffer with a well-formed
//!   FDR buffer (extents, preamble, deltas, TSC wraps, CPU changes, short-call elision).
//! * [`ring`]: a fixed set of buffers per thread (core, task, interrupt level) in
//!   flight-recorder or streaming mode, over caller memory.
//! * [`static_ring`]: a ring that owns its memory, declared as a `static`, whose
//!   recorder and consumer are taken once each without `unsafe`.
//! * [`decoder`]: a streaming decoder and verifier that enforces the grammar
//!   `llvm-xray` 14 reads, and reports the first error with its byte offset.
//! * [`end`]: the end block a writer ends a whole file with, so that a file cut
//!   between two buffers is known to be cut short.
//!
//! The byte format is described in `docs/format.md`.
//!
//! A round trip through the writer and the decoder:
//!
//! ```
//! use flightrec_core::clock::Timestamp;
//! use flightrec_core::fdr::decoder::Decoder;
//! use flightrec_core::fdr::header::HEADER_SIZE;
//! use flightrec_core::fdr::records::Record;
//! use flightrec_core::fdr::ring::RecorderConfig;
//! use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
//! use flightrec_core::fdr::{FunctionAction, FunctionId};
//!
//! let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
//! let mut file = [0u8; HEADER_SIZE + 256];
//! file[..HEADER_SIZE].copy_from_slice(&cfg.file_header(256).to_bytes());
//! let mut w = BufferWriter::new(&mut file[HEADER_SIZE..], &cfg.writer, Walltime::default()).unwrap();
//! let (a, b) = (FunctionId::new(1).unwrap(), FunctionId::new(2).unwrap());
//! let at = |tsc| Timestamp { tsc, cpu: 0 };
//! w.enter(a, at(0)).unwrap();
//! w.enter(b, at(10)).unwrap();
//! w.exit(b, at(20)).unwrap();
//! w.exit(a, at(30)).unwrap();
//! let len = HEADER_SIZE + w.len();
//!
//! let mut calls = [(FunctionAction::Enter, 0); 4];
//! let mut n = 0;
//! for decoded in Decoder::new(&file[..len]).unwrap() {
//!     if let Record::Function { action, id, .. } = decoded.unwrap().record {
//!         calls[n] = (action, id.get());
//!         n += 1;
//!     }
//! }
//! use FunctionAction::{Enter, Exit};
//! assert_eq!(calls, [(Enter, 1), (Enter, 2), (Exit, 2), (Exit, 1)]);
//! ```

mod decoded;
pub mod decoder;
pub mod end;
mod grammar;
pub mod header;
mod le;
pub mod records;
pub mod ring;
pub mod static_ring;
pub mod writer;

pub use header::{FileHeader, HeaderFlags, Version};
pub use records::{FunctionAction, FunctionId};
