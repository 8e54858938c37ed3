//! LLVM XRay Flight Data Recorder (FDR) traces.
//!
//! * [`header`]: the 32-byte file header and the format [`Version`].
//! * [`records`]: the 8-byte function records and 16-byte metadata records, as
//!   zerocopy types with their reserved bytes zeroed.
//! * [`writer`]: [`writer::BufferWriter`] fills one caller buffer with a well-formed
//!   FDR buffer (extents, preamble, deltas, TSC wraps, CPU changes, short-call elision).
//! * [`ring`]: a fixed set of buffers per thread (core, task, interrupt level) in
//!   flight-recorder or streaming mode.
//! * [`decoder`]: a streaming decoder and verifier that enforces the grammar
//!   `llvm-xray` 14 reads, and reports the first error with its byte offset.
//!
//! The byte format is described in `docs/format.md`.

pub mod decoder;
pub mod header;
pub mod records;
pub mod ring;
pub mod writer;

pub use header::{FileHeader, HeaderFlags, Version};
pub use records::{FunctionAction, FunctionId};
