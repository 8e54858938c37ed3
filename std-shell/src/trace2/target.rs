//! Trace2 destinations: the target grammar of git (`1`, fds `2`..`9`, files,
//! directories, `af_unix:` sockets), opened once and written one line per
//! `write()`.
//!
//! Interface shared with the runtime ([`super`]); this first version opens
//! stderr, fds and absolute files.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use flightrec_core::trace2::Target as Kind;

use super::config::Trace2Config;

/// An open Trace2 destination. Writing never fails the caller: a failing
/// destination disables itself.
#[derive(Debug)]
pub struct Destination {
    kind: Kind,
    var: String,
    sink: Sink,
    enabled: AtomicBool,
    dst_debug: bool,
}

#[derive(Debug)]
enum Sink {
    /// A descriptor Trace2 does not own (stderr, fds 2..9): never closed.
    Borrowed(std::mem::ManuallyDrop<File>),
    /// A file Trace2 opened.
    Owned(File),
}

impl Sink {
    fn file(&self) -> &File {
        match self {
            Sink::Borrowed(f) => f,
            Sink::Owned(f) => f,
        }
    }
}

/// Why a destination did not open, with git's warning text when git prints one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenOutcome {
    /// The value turns the target off (unset, empty, `0`, `false`).
    Off,
    /// The destination could not be used; `warning` is the text after
    /// `warning: ` that git prints (always for unknown values, otherwise only
    /// with `DST_DEBUG`).
    Failed {
        /// The warning to print, if any.
        warning: Option<String>,
    },
}

impl Destination {
    /// Opens the destination of target `kind` from `cfg`. `own_sid` is the last
    /// component of this process's session id (directory targets name their
    /// file after it).
    pub fn open(kind: Kind, cfg: &Trace2Config, own_sid: &str) -> Result<Self, OpenOutcome> {
        let _ = own_sid;
        let (suffix, setting) = match kind {
            Kind::Normal => ("", &cfg.normal),
            Kind::Perf => ("_PERF", &cfg.perf),
            Kind::Event => ("_EVENT", &cfg.event),
        };
        let var = format!("{}{}", cfg.prefix, suffix);
        let Some(value) = setting.value.as_deref() else {
            return Err(OpenOutcome::Off);
        };
        let v = value.as_bytes();
        let lower = v.to_ascii_lowercase();
        if v.is_empty() || lower == b"0" || lower == b"false" {
            return Err(OpenOutcome::Off);
        }
        let borrowed = |fd: RawFd| {
            // SAFETY: fds 2..9 are the caller's; ManuallyDrop keeps them open.
            Sink::Borrowed(std::mem::ManuallyDrop::new(unsafe {
                File::from_raw_fd(fd)
            }))
        };
        let sink = if lower == b"1" || lower == b"true" {
            borrowed(2)
        } else if v.len() == 1 && (b'2'..=b'9').contains(&v[0]) {
            borrowed(RawFd::from(v[0] - b'0'))
        } else if v.first() == Some(&b'/') {
            match OpenOptions::new().append(true).create(true).open(value) {
                Ok(f) => Sink::Owned(f),
                Err(e) => {
                    return Err(OpenOutcome::Failed {
                        warning: cfg.dst_debug.then(|| {
                            format!(
                                "trace2: could not open '{}' for '{}' tracing: {}",
                                show(value),
                                var,
                                strerror(&e)
                            )
                        }),
                    })
                }
            }
        } else {
            return Err(OpenOutcome::Failed {
                warning: Some(format!(
                    "trace2: unknown value for '{}': '{}'",
                    var,
                    show(value)
                )),
            });
        };
        Ok(Destination {
            kind,
            var,
            sink,
            enabled: AtomicBool::new(true),
            dst_debug: cfg.dst_debug,
        })
    }

    /// Which target this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether the destination still accepts lines.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Writes one complete line with one `write()`. On failure the destination
    /// disables itself and returns the warning git would print (if any).
    pub fn write_line(&self, line: &[u8]) -> Option<String> {
        if !self.is_enabled() || line.is_empty() {
            return None;
        }
        // One write(), never retried: git counts a short write as success,
        // since O_APPEND makes each line one append beside other writers.
        #[allow(clippy::unused_io_amount)]
        match self.sink.file().write(line) {
            Ok(_) => None,
            Err(e) => {
                self.enabled.store(false, Ordering::Relaxed);
                self.dst_debug
                    .then(|| format!("unable to write trace to '{}': {}", self.var, strerror(&e)))
            }
        }
    }
}

fn show(v: &OsStr) -> String {
    v.to_string_lossy().into_owned()
}

/// The C library's text for an I/O error, without Rust's " (os error N)".
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
