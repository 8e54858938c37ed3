//! Writes FDR buffers.
