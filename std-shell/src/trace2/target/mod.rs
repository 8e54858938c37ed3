//! Trace2 destinations: git's target grammar (`1`, fds `2`..`9`, files,
//! directories, `af_unix:` sockets), opened once and written one line per
//! `write()`, or in batches by a writer thread.
//!
//! * [`TargetValue`] and [`UnixSocketSpec`]: the grammar, without I/O.
//! * [`Destination::open`]: opens a target from a
//!   [`Trace2Config`](super::config::Trace2Config), with git's warning texts
//!   in [`OpenOutcome::Failed`]. It is defined with the runtime's outputs
//!   (`outputs.rs`): the settings read this module's grammar, so the
//!   destinations do not import the settings back.
//! * [`Destination::write_line`]: one `write()` per line; a failing
//!   destination disables itself and hands back at most one warning.
//! * [`WriteMode`]: how the runtime writes, directly (git's way, the default)
//!   or through bounded queues and a background writer thread that writes
//!   complete lines in as few `write()`s as keep them whole
//!   (`FLIGHTREC_TRACE2_WRITE=background`).
//!
//! Warnings are returned, not printed: the runtime prints each as
//! `warning: <text>` on stderr, in target order normal, perf, event.
//!
//! ```
//! use flightrec::core::trace2::Target;
//! use flightrec::trace2::config::Trace2Config;
//! use flightrec::trace2::target::{Destination, OpenOutcome};
//! use std::ffi::OsString;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let file = dir.path().join("trace.txt");
//! let env = |name: &str| match name {
//!     "GIT_TRACE2" => Some(OsString::from(&file)),
//!     "GIT_TRACE2_PERF" => Some(OsString::from("yes")),
//!     "GIT_CONFIG_NOSYSTEM" => Some(OsString::from("1")),
//!     _ => None,
//! };
//! let cfg = Trace2Config::load_from("GIT_TRACE2", env);
//! let sid = "20231114T221320.123456Z-H65cb7838-P00001234";
//!
//! let normal = Destination::open(Target::Normal, &cfg, sid).unwrap();
//! assert_eq!(normal.write_line(b"version 2.47.3\n"), None);
//! assert_eq!(std::fs::read(&file).unwrap(), b"version 2.47.3\n");
//!
//! // Unknown values always warn.
//! assert_eq!(
//!     Destination::open(Target::Perf, &cfg, sid).unwrap_err(),
//!     OpenOutcome::Failed {
//!         warning: Some("trace2: unknown value for 'GIT_TRACE2_PERF': 'yes'".into())
//!     }
//! );
//! assert_eq!(Destination::open(Target::Event, &cfg, sid).unwrap_err(), OpenOutcome::Off);
//! ```

mod background;
mod dir;
mod mode;
mod sink;
mod stall;
mod value;

use std::ffi::OsStr;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use flightrec_core::trace2::Target as Kind;

pub(crate) use background::{BackgroundWriter, Pushed};
pub use dir::{DISCARD_SENTINEL, MAX_ATTEMPTS};
pub use mode::{WriteMode, DEFAULT_QUEUE_BYTES, WRITE_MODE_VAR};
use sink::Sink;
pub use stall::{write_timeout, DEFAULT_TIMEOUT_MS, TIMEOUT_VAR};
pub use value::{SocketType, TargetValue, UnixSocketError, UnixSocketSpec, SUN_PATH_LEN};

/// An open Trace2 destination. Writing never fails the caller: a failing
/// destination disables itself.
///
/// ```
/// use flightrec::core::trace2::Target;
/// use flightrec::trace2::target::{Destination, OpenParams};
///
/// let dir = tempfile::tempdir().unwrap();
/// let file = dir.path().join("event.json");
/// let params = OpenParams {
///     kind: Target::Event,
///     var: "GIT_TRACE2_EVENT",
///     dst_debug: true,
///     max_files: 0,
///     sid: "20231114T221320.123456Z-H65cb7838-P00001234",
/// };
/// let dest = Destination::open_value(file.as_os_str(), params).unwrap();
/// assert_eq!(dest.kind(), Target::Event);
/// assert_eq!(dest.var(), "GIT_TRACE2_EVENT");
/// assert_eq!(dest.path(), Some(file.as_path()));
/// assert_eq!(dest.socket_type(), None);
/// assert!(!dest.too_many_files());
/// assert!(dest.raw_fd() > 2);
/// assert!(dest.is_enabled());
/// assert_eq!(dest.write_line(b"{}\n"), None);
/// assert_eq!(std::fs::read(&file).unwrap(), b"{}\n");
///
/// // Standard error: a borrowed descriptor, no path.
/// let stderr = Destination::open_value("1".as_ref(), params).unwrap();
/// assert_eq!((stderr.raw_fd(), stderr.path()), (2, None));
/// ```
#[derive(Debug)]
pub struct Destination {
    kind: Kind,
    var: String,
    sink: Sink,
    enabled: AtomicBool,
    dst_debug: bool,
    too_many_files: bool,
    path: Option<PathBuf>,
    socket: Option<SocketType>,
    /// Lines lost to a failed write, or not written because of one.
    lost: AtomicU64,
    /// A line went out cut short (a short write: a full disk, a timeout).
    cut: AtomicBool,
    /// Why the destination failed, for the report at exit.
    failure: OnceLock<String>,
}

/// Why a destination did not open, with git's warning text when git prints one.
///
/// ```
/// use flightrec::core::trace2::Target;
/// use flightrec::trace2::target::{Destination, OpenOutcome, OpenParams};
///
/// let params = |dst_debug| OpenParams {
///     kind: Target::Normal,
///     var: "GIT_TRACE2",
///     dst_debug,
///     max_files: 0,
///     sid: "sid",
/// };
/// let open = |value: &str, debug| Destination::open_value(value.as_ref(), params(debug));
/// assert_eq!(open("false", false).unwrap_err(), OpenOutcome::Off);
/// // A file that cannot be created warns only with DST_DEBUG.
/// let missing = "/nonexistent/dir/trace";
/// assert_eq!(open(missing, false).unwrap_err(), OpenOutcome::Failed { warning: None });
/// assert_eq!(
///     open(missing, true).unwrap_err(),
///     OpenOutcome::Failed {
///         warning: Some(
///             "trace2: could not open '/nonexistent/dir/trace' for 'GIT_TRACE2' tracing: \
///              No such file or directory"
///                 .into()
///         )
///     }
/// );
/// ```
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

/// How [`Destination::open_value`] opens a value: the names and settings
/// that come from the configuration.
///
/// ```
/// use flightrec::core::trace2::Target;
/// use flightrec::trace2::target::{Destination, OpenParams};
///
/// // A directory target names the file after the session id's last component.
/// let dir = tempfile::tempdir().unwrap();
/// let params = OpenParams {
///     kind: Target::Perf,
///     var: "GIT_TRACE2_PERF",
///     dst_debug: false,
///     max_files: 0,
///     sid: "parent-sid/20231114T221320.123456Z-H65cb7838-P00001234",
/// };
/// let dest = Destination::open_value(dir.path().as_os_str(), params).unwrap();
/// assert_eq!(
///     dest.path().unwrap(),
///     dir.path().join("20231114T221320.123456Z-H65cb7838-P00001234")
/// );
/// ```
#[derive(Clone, Copy, Debug)]
pub struct OpenParams<'a> {
    /// Which target this is.
    pub kind: Kind,
    /// The environment variable named in warnings (`GIT_TRACE2_EVENT`), also
    /// when the value came from a config file.
    pub var: &'a str,
    /// `DST_DEBUG`: report open and write failures.
    pub dst_debug: bool,
    /// `MAX_FILES` for directory targets (0: no limit).
    pub max_files: u32,
    /// This process's session id; directory targets use its last component.
    pub sid: &'a str,
}

impl Destination {
    /// Opens one target value with explicit parameters (what [`Self::open`]
    /// does after looking the value up). Example on [`Destination`].
    pub fn open_value(value: &OsStr, p: OpenParams<'_>) -> Result<Self, OpenOutcome> {
        let debug_warning = |text: String| OpenOutcome::Failed {
            warning: p.dst_debug.then_some(text),
        };
        let mut path = None;
        let mut socket = None;
        let mut too_many_files = false;
        let timeout = stall::timeout_from_env();
        let sink = match TargetValue::parse(value) {
            TargetValue::Off => return Err(OpenOutcome::Off),
            // No bound on stderr: the warning would wait on it all the same.
            TargetValue::Stderr => Sink::borrowed(2, None),
            TargetValue::Fd(fd) => Sink::borrowed(RawFd::from(fd), timeout),
            TargetValue::Absolute(target) if target.is_dir() => {
                match dir::open_in(target, p.sid, p.max_files) {
                    Ok(f) => {
                        too_many_files = f.discard;
                        path = Some(f.path);
                        Sink::owned(OwnedFd::from(f.file), timeout)
                    }
                    Err(dir::DirError::TooManyFiles) => {
                        return Err(debug_warning(format!(
                            "trace2: not opening {} trace file due to too many files in target directory {}",
                            p.var,
                            show(value)
                        )))
                    }
                    Err(dir::DirError::Open { base, error }) => {
                        return Err(debug_warning(could_not_open(&base, p.var, &error)))
                    }
                }
            }
            TargetValue::Absolute(target) => match open_append(target) {
                Ok(f) => {
                    path = Some(target.to_path_buf());
                    Sink::owned(OwnedFd::from(f), timeout)
                }
                Err(error) => return Err(debug_warning(could_not_open(target, p.var, &error))),
            },
            TargetValue::UnixSocket(v) => match UnixSocketSpec::parse(v) {
                Err(UnixSocketError::EmptyPath) => {
                    return Err(debug_warning(format!(
                        "trace2: invalid AF_UNIX value '{}' for '{}' tracing",
                        show(value),
                        p.var
                    )))
                }
                Err(UnixSocketError::InvalidPath(sp)) => {
                    return Err(debug_warning(format!(
                        "trace2: invalid AF_UNIX path '{}' for '{}' tracing",
                        show(sp),
                        p.var
                    )))
                }
                Ok(spec) => match connect(&spec) {
                    Ok((fd, ty)) => {
                        path = Some(spec.path.to_path_buf());
                        socket = Some(ty);
                        Sink::owned(fd, timeout)
                    }
                    Err(e) => {
                        return Err(debug_warning(format!(
                            "trace2: could not connect to socket '{}' for '{}' tracing: {}",
                            spec.path.display(),
                            p.var,
                            strerror(&e)
                        )))
                    }
                },
            },
            TargetValue::Unknown => {
                return Err(OpenOutcome::Failed {
                    warning: Some(format!(
                        "trace2: unknown value for '{}': '{}'",
                        p.var,
                        show(value)
                    )),
                })
            }
        };
        Ok(Destination {
            kind: p.kind,
            var: p.var.to_string(),
            sink,
            enabled: AtomicBool::new(true),
            dst_debug: p.dst_debug,
            too_many_files,
            path,
            socket,
            lost: AtomicU64::new(0),
            cut: AtomicBool::new(false),
            failure: OnceLock::new(),
        })
    }

    /// Which target this is. Example on [`Destination`].
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The environment variable this target is named by in warnings.
    /// Example on [`Destination`].
    pub fn var(&self) -> &str {
        &self.var
    }

    /// Whether the destination still accepts lines (false after a failed
    /// write).
    ///
    /// ```
    /// use flightrec::core::trace2::Target;
    /// use flightrec::trace2::target::{Destination, OpenParams};
    ///
    /// // Descriptor 9 is not open here: the first write fails with EBADF.
    /// let params = OpenParams {
    ///     kind: Target::Normal,
    ///     var: "GIT_TRACE2",
    ///     dst_debug: true,
    ///     max_files: 0,
    ///     sid: "sid",
    /// };
    /// let dest = Destination::open_value("9".as_ref(), params).unwrap();
    /// assert!(dest.is_enabled());
    /// assert_eq!(
    ///     dest.write_line(b"version 2.47.3\n").as_deref(),
    ///     Some("unable to write trace to 'GIT_TRACE2': Bad file descriptor")
    /// );
    /// assert!(!dest.is_enabled());
    /// assert_eq!(dest.write_line(b"start\n"), None); // one warning only
    /// ```
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// True when this destination is a directory's discard sentinel
    /// (`git-trace2-discard`, see `maxFiles`): the event target must then
    /// write a `too_many_files` event right after `version`.
    ///
    /// ```
    /// use flightrec::core::trace2::Target;
    /// use flightrec::trace2::target::{Destination, OpenParams, DISCARD_SENTINEL};
    ///
    /// // A limit of 3 entries counts `.` and `..`: one file fills the directory.
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("other"), "").unwrap();
    /// let params = OpenParams {
    ///     kind: Target::Event,
    ///     var: "GIT_TRACE2_EVENT",
    ///     dst_debug: false,
    ///     max_files: 3,
    ///     sid: "sid",
    /// };
    /// let dest = Destination::open_value(dir.path().as_os_str(), params).unwrap();
    /// assert!(dest.too_many_files());
    /// assert_eq!(dest.path().unwrap(), dir.path().join(DISCARD_SENTINEL));
    /// ```
    pub fn too_many_files(&self) -> bool {
        self.too_many_files
    }

    /// The file or socket path written to; `None` for stderr and fds.
    /// Example on [`Destination`].
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The socket type connected, for `af_unix:` targets (`None` for the
    /// others).
    ///
    /// ```
    /// use flightrec::core::trace2::Target;
    /// use flightrec::trace2::target::{Destination, OpenParams, SocketType};
    /// use std::os::unix::net::UnixDatagram;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let sock = dir.path().join("t2.sock");
    /// let _server = UnixDatagram::bind(&sock).unwrap();
    /// let params = OpenParams {
    ///     kind: Target::Event,
    ///     var: "GIT_TRACE2_EVENT",
    ///     dst_debug: false,
    ///     max_files: 0,
    ///     sid: "sid",
    /// };
    /// let value = format!("af_unix:dgram:{}", sock.display());
    /// let socket = Destination::open_value(value.as_ref(), params).unwrap();
    /// assert_eq!(socket.socket_type(), Some(SocketType::Dgram));
    /// let file = Destination::open_value(dir.path().join("f").as_os_str(), params).unwrap();
    /// assert_eq!(file.socket_type(), None);
    /// ```
    pub fn socket_type(&self) -> Option<SocketType> {
        self.socket
    }

    /// The descriptor written to (2 for stderr). Example on [`Destination`].
    pub fn raw_fd(&self) -> RawFd {
        self.sink.raw_fd()
    }

    /// Writes one complete line (its trailing LF included) with one
    /// `write()`. On failure the destination disables itself and returns the
    /// warning git would print (only with `DST_DEBUG`); when several threads
    /// fail at once only one of them gets the warning. Example on
    /// [`Destination`] and [`Destination::is_enabled`].
    ///
    /// A line that cannot be written (the write failed, or the destination
    /// failed before) or that went out cut short (a short write) is counted
    /// for [`Self::take_loss_report`].
    pub fn write_line(&self, line: &[u8]) -> Option<String> {
        if line.is_empty() {
            return None;
        }
        if !self.is_enabled() {
            self.count_lost(1);
            return None;
        }
        match self.sink.write_once(line) {
            Ok(n) if n < line.len() => {
                self.cut.store(true, Ordering::Relaxed);
                self.count_lost(1);
                None
            }
            Ok(_) => None,
            Err(e) => {
                self.count_lost(1);
                self.fail(&e)
            }
        }
    }

    /// Counts `n` lines that this destination did not write (it had failed
    /// before they came).
    pub(crate) fn count_lost(&self, n: u64) {
        self.lost.fetch_add(n, Ordering::Relaxed);
    }

    /// The lines lost so far, as the warning printed at exit (the text after
    /// `warning: `), or `None` when none was lost; the count starts again
    /// from zero, so each loss is reported once.
    ///
    /// ```
    /// use flightrec::core::trace2::Target;
    /// use flightrec::trace2::target::{Destination, OpenParams};
    ///
    /// // Descriptor 9 is not open here: every line is lost, and said so.
    /// let params = OpenParams {
    ///     kind: Target::Normal,
    ///     var: "GIT_TRACE2",
    ///     dst_debug: false,
    ///     max_files: 0,
    ///     sid: "sid",
    /// };
    /// let dest = Destination::open_value("9".as_ref(), params).unwrap();
    /// assert_eq!(dest.take_loss_report(), None);
    /// assert_eq!(dest.write_line(b"version 2.47.3\n"), None); // no DST_DEBUG
    /// assert_eq!(dest.write_line(b"start\n"), None);
    /// assert_eq!(
    ///     dest.take_loss_report().as_deref(),
    ///     Some("trace2: lost 2 lines for 'GIT_TRACE2': Bad file descriptor")
    /// );
    /// assert_eq!(dest.take_loss_report(), None);
    /// ```
    pub fn take_loss_report(&self) -> Option<String> {
        let n = self.lost.swap(0, Ordering::Relaxed);
        if n == 0 {
            return None;
        }
        let mut text = format!(
            "trace2: lost {n} line{} for '{}'",
            if n == 1 { "" } else { "s" },
            self.var
        );
        if let Some(why) = self.failure.get() {
            text.push_str(": ");
            text.push_str(why);
        }
        if self.cut.swap(false, Ordering::Relaxed) {
            text.push_str(" (a line was written cut short)");
        }
        Some(text)
    }

    /// Writes a batch of complete lines (`bytes`, where each line ends at
    /// the offsets in `ends`) with as few `write()`s as keep every line
    /// whole: one for an `O_APPEND` file or a stream, chunks of at most
    /// `PIPE_BUF` bytes for a pipe, one datagram per line for a `SOCK_DGRAM`
    /// socket. Fails as [`Self::write_line`] does. The lines whose indices
    /// are in `markers` (ascending) are the runtime's own (the marks of
    /// lines the background queue dropped): not counted when lost, so that
    /// the count is of the program's lines.
    pub(crate) fn write_lines(
        &self,
        bytes: &[u8],
        ends: &[usize],
        markers: &[usize],
    ) -> Option<String> {
        let program_lines_from = |first: usize| {
            let own = markers.len() - markers.partition_point(|&m| m < first);
            (ends.len().saturating_sub(first)).saturating_sub(own) as u64
        };
        if !self.is_enabled() {
            self.count_lost(program_lines_from(0));
            return None;
        }
        let limit = self.sink.batch_limit();
        let mut start = 0;
        let mut i = 0;
        while i < ends.len() {
            // The first line always goes, alone if it is over the limit.
            let mut end = ends[i];
            i += 1;
            while i < ends.len() && ends[i] - start <= limit {
                end = ends[i];
                i += 1;
            }
            let chunk = bytes.get(start..end)?;
            if let Err((written, e)) = self.sink.write_all(chunk) {
                // Lines that ended before the failure are out; the one it
                // cut, and every one after, are lost.
                let pos = start + written;
                let whole = ends.partition_point(|&e| e <= pos);
                let last_end = whole.checked_sub(1).and_then(|i| ends.get(i));
                if written > 0 && last_end != Some(&pos) {
                    self.cut.store(true, Ordering::Relaxed);
                }
                self.count_lost(program_lines_from(whole));
                return self.fail(&e);
            }
            start = end;
        }
        None
    }

    /// Disables the destination after a failed write; the warning goes to
    /// the first failing caller only, and only with `DST_DEBUG`.
    ///
    /// A reader that stalled past the timeout ([`TIMEOUT_VAR`]) always
    /// warns: git would still be waiting, so there is no git behaviour to
    /// keep, and a trace that stops for that reason must not stop in silence.
    fn fail(&self, e: &std::io::Error) -> Option<String> {
        let first = self.enabled.swap(false, Ordering::Relaxed);
        if first {
            let _ = self.failure.set(strerror(e));
        }
        let stalled = e.kind() == std::io::ErrorKind::TimedOut;
        (first && (self.dst_debug || stalled))
            .then(|| format!("unable to write trace to '{}': {}", self.var, strerror(e)))
    }
}

/// `open(O_WRONLY|O_APPEND|O_CREAT, 0666)`.
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o666)
        .open(path)
}

fn connect(spec: &UnixSocketSpec<'_>) -> std::io::Result<(OwnedFd, SocketType)> {
    let stream = || UnixStream::connect(spec.path).map(OwnedFd::from);
    let dgram = || {
        let s = UnixDatagram::unbound()?;
        s.connect(spec.path)?;
        Ok::<_, std::io::Error>(OwnedFd::from(s))
    };
    match spec.socket_type {
        SocketType::Stream => stream().map(|fd| (fd, SocketType::Stream)),
        SocketType::Dgram => dgram().map(|fd| (fd, SocketType::Dgram)),
        SocketType::Auto => match stream() {
            Ok(fd) => Ok((fd, SocketType::Stream)),
            Err(e) if e.raw_os_error() == Some(libc::EPROTOTYPE) => {
                dgram().map(|fd| (fd, SocketType::Dgram))
            }
            Err(e) => Err(e),
        },
    }
}

fn could_not_open(path: &Path, var: &str, e: &std::io::Error) -> String {
    format!(
        "trace2: could not open '{}' for '{}' tracing: {}",
        path.display(),
        var,
        strerror(e)
    )
}

fn show(v: &OsStr) -> String {
    v.to_string_lossy().into_owned()
}

/// The C library's text for an I/O error, without Rust's " (os error N)".
///
/// ```
/// let e = std::io::Error::from_raw_os_error(2);
/// assert_eq!(flightrec::trace2::target::strerror(&e), "No such file or directory");
/// ```
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
