//! Framed stream over [`embedded_io::Write`] (firmware to host link).
//!
//! Not yet implemented: the framing arrives with the serial-link work.
