//! Rings of FDR buffers.
