//! The bound on how long a write may wait for a reader: a listener that
//! stops reading an `af_unix:` socket, or a FIFO nobody drains, must not hang
//! the traced program. git waits forever there; flightrec waits at most
//! [`TIMEOUT_VAR`] milliseconds (default [`DEFAULT_TIMEOUT_MS`]) per write,
//! then the destination fails like any other failing write, with a warning.
//!
//! * Sockets Trace2 connected itself get `SO_SNDTIMEO`: a `send()` that
//!   makes no progress for that long returns `EAGAIN`, and costs nothing
//!   more per line.
//! * Pipes, FIFOs and sockets the host passed as a descriptor (`2`..`9`) are
//!   polled for room before each write; their settings belong to the host
//!   and are left alone. `poll` promises room for `PIPE_BUF` bytes on a pipe,
//!   so a longer line can still wait for the reader there.
//! * Files and terminals are written as before: a disk does not stall the
//!   way a reader does.

use std::ffi::OsStr;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// The environment variable that bounds a write's wait for its reader, in
/// milliseconds; `0` waits forever, as git does. flightrec's own setting,
/// read whatever the program's Trace2 prefix is, when a target opens.
///
/// ```
/// assert_eq!(flightrec::trace2::target::TIMEOUT_VAR, "FLIGHTREC_TRACE2_TIMEOUT_MS");
/// ```
pub const TIMEOUT_VAR: &str = "FLIGHTREC_TRACE2_TIMEOUT_MS";

/// The bound when [`TIMEOUT_VAR`] is unset or not a number: two seconds,
/// long enough for a busy listener, short enough that a dead one costs a
/// program one short pause.
///
/// ```
/// assert_eq!(flightrec::trace2::target::DEFAULT_TIMEOUT_MS, 2000);
/// ```
pub const DEFAULT_TIMEOUT_MS: u64 = 2000;

/// The bound a value of [`TIMEOUT_VAR`] gives: `None` (wait forever) for
/// `0`, the default for anything that is not a decimal number.
///
/// ```
/// use flightrec::trace2::target::write_timeout;
/// use std::time::Duration;
///
/// assert_eq!(write_timeout(None), Some(Duration::from_millis(2000)));
/// assert_eq!(write_timeout(Some("250".as_ref())), Some(Duration::from_millis(250)));
/// assert_eq!(write_timeout(Some("0".as_ref())), None);
/// assert_eq!(write_timeout(Some("soon".as_ref())), Some(Duration::from_millis(2000)));
/// ```
pub fn write_timeout(value: Option<&OsStr>) -> Option<Duration> {
    let ms = value
        .and_then(OsStr::to_str)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_TIMEOUT_MS);
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// The bound from the environment.
pub(crate) fn timeout_from_env() -> Option<Duration> {
    write_timeout(std::env::var_os(TIMEOUT_VAR).as_deref())
}

/// The error of a write that waited `timeout` for its reader.
pub(crate) fn stalled(timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "the reader took no data for {} ms ({TIMEOUT_VAR})",
            timeout.as_millis()
        ),
    )
}

/// Sets `SO_SNDTIMEO` on a socket Trace2 owns; false when the socket refuses.
pub(crate) fn set_send_timeout(fd: RawFd, timeout: Duration) -> bool {
    let tv = libc::timeval {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        // Under a million: fits every platform's suseconds_t.
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: `tv` is a valid timeval for the duration of the call and the
    // length passed is its size, as setsockopt(SO_SNDTIMEO) requires.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    r == 0
}

/// Waits until `fd` has room for a write, at most `timeout`; a descriptor
/// that reports an error or hang-up returns at once (the write then fails
/// with the real error).
pub(crate) fn wait_writable(fd: RawFd, timeout: Duration) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        match r {
            0 if Instant::now() >= deadline => return Err(stalled(timeout)),
            0 => continue,
            n if n > 0 => return Ok(()),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    // poll itself failing (EBADF is reported as POLLNVAL,
                    // not here): let the write report what is wrong.
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_full_socket_times_out_and_an_empty_one_does_not() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = Duration::from_millis(50);
        wait_writable(a.as_raw_fd(), t).unwrap();
        a.set_nonblocking(true).unwrap();
        while std::io::Write::write(&mut &a, &[0u8; 4096]).is_ok() {}
        let start = Instant::now();
        let e = wait_writable(a.as_raw_fd(), t).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(start.elapsed() >= t);
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
