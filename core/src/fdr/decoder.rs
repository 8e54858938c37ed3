//! Streaming FDR decoder and verifier.
