//! The framed link from a target: [`recv`] reads it (a serial device, a
//! file, stdin, or a target's RTT channel through a GDB server: [`rtt`] over
//! [`gdb`]) and hands each frame to a [`collect::Collector`], which writes
//! one FDR file per source and renders the compact Trace2 events of
//! [`trace2`] as git's text.
//!
//! Depends on [`crate::names`] (a firmware's Trace2 strings are read from its
//! ELF) and nothing after it.

pub mod collect;
pub mod gdb;
pub mod recv;
pub mod rtt;
pub mod trace2;
