//! git's `warning: <text>` lines on stderr, for the runtime's own trouble: a
//! destination that cannot be opened or written, a background queue that
//! dropped lines, a write mode that cannot start.

use std::io::Write as _;

/// Prints `warning: <text>` on stderr, ignoring a failing stderr.
pub(crate) fn warn(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "warning: {text}");
}
