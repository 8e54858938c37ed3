//! Git Trace2 lines in git's normal, perf and event formats.
//!
//! Not yet implemented.
