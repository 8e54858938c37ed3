//! Trace2 on desktop hosts: settings, destinations and the process runtime.

pub mod config;
pub mod target;
