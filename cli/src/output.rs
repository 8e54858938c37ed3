//! Standard output the way command-line tools treat it: when the reader goes away
//! (`flightrec dump T | head`), stop quietly.
//!
//! Rust programs ignore `SIGPIPE`, so a write to a pipe whose reader has exited fails
//! with `EPIPE` (`io::ErrorKind::BrokenPipe`) instead of ending the process. Nobody
//! is left to read the rest, so the commands stop writing and exit with status 0
//! (`verify` with the status of the files it checked so far), without a message;
//! any other write error is still reported.

use std::io;

/// Whether a write failed because the reader of the output went away.
///
/// ```
/// use std::io;
/// use flightrec_cli::output::reader_gone;
/// assert!(reader_gone(&io::Error::from(io::ErrorKind::BrokenPipe)));
/// assert!(!reader_gone(&io::Error::from(io::ErrorKind::StorageFull)));
/// ```
pub fn reader_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}
