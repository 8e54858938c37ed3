//! `verify`: the core's decoder and verifier over whole files.

use std::path::Path;

use flightrec_core::fdr::decoder::{verify, DecodeError, Summary};

use super::progress::Progress;

/// The verdict on one file.
#[derive(Debug)]
pub enum Verdict {
    /// The file is a valid FDR trace.
    Valid(Summary),
    /// The file is not valid: the first error, with its byte offset.
    Invalid(DecodeError),
    /// The file could not be read.
    Unreadable(std::io::Error),
}

/// Reads and verifies one file, showing the reading on `progress`.
pub fn verify_file(path: &Path, progress: &Progress) -> Verdict {
    let bytes = match progress.read_file(path) {
        Ok(b) => b,
        Err(e) => return Verdict::Unreadable(e),
    };
    progress.stage("verifying");
    match verify(&bytes) {
        Ok(s) => Verdict::Valid(s),
        Err(e) => Verdict::Invalid(e),
    }
}

/// One line for a valid file: what it holds.
pub fn describe(s: &Summary) -> String {
    format!(
        "version {}, {} Hz, {} buffers, {} function records, {} custom and {} typed events",
        s.header.version.number(),
        s.header.cycle_frequency.get(),
        s.buffers,
        s.function_records,
        s.custom_events,
        s.typed_events
    )
}
