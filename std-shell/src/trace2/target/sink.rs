//! One descriptor and one `write()` per line, without ever letting `SIGPIPE`
//! kill the host program.
//!
//! git ignores `SIGPIPE` around each write (`sigchain_push(SIGPIPE, SIG_IGN)`),
//! which changes a process-wide disposition and races with other threads. A
//! library must not do that, so the way to write is chosen from the
//! descriptor's type when the target opens:
//!
//! * sockets: `send(..., MSG_NOSIGNAL)`: a closed peer gives `EPIPE` only;
//! * pipes and FIFOs: when `SIGPIPE` is not ignored already, block it in the
//!   writing thread only (`pthread_sigmask`), write, and if the write raised a
//!   `SIGPIPE` that was not pending before, take it off the queue with
//!   `sigtimedwait` before restoring the mask;
//! * everything else (files, terminals): a plain `write()`, which cannot
//!   raise `SIGPIPE`.
//!
//! `EINTR` is retried (no byte was written); a short write of a line is not
//! (see [`Sink::write_once`]), a short write of a batch is
//! ([`Sink::write_all`]). [`Sink::batch_limit`] says how many bytes of lines
//! one write of a batch may carry.
//!
//! A write waits for a stalled reader at most the sink's timeout (see
//! [`super::stall`]), then fails with `ErrorKind::TimedOut`.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::stall;

/// How lines go to the descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Syscall {
    /// `write()`: files, terminals, descriptors that are not open.
    Plain,
    /// `send(MSG_NOSIGNAL)`.
    Socket,
    /// `write()` with `SIGPIPE` blocked in this thread.
    Pipe,
}

/// A descriptor a destination writes to: borrowed (stderr, fds 2..9: never
/// closed) or owned (files, sockets: closed on drop).
#[derive(Debug)]
pub(crate) struct Sink {
    fd: RawFd,
    _owned: Option<OwnedFd>,
    mode: Syscall,
    /// A datagram socket: every `send()` is one message, so lines go one
    /// per call even when batched.
    datagram: bool,
    /// How long one write may wait for the reader (`None`: forever).
    timeout: Option<Duration>,
    /// Poll for room before each write (pipes, and sockets without
    /// `SO_SNDTIMEO`); else the socket's own timeout bounds the `send()`.
    poll_first: bool,
}

impl Sink {
    /// A descriptor the host owns. It need not be open: writing then fails
    /// with `EBADF`, as in git.
    /// Its settings are the host's: a bound is kept by polling.
    pub(crate) fn borrowed(fd: RawFd, timeout: Option<Duration>) -> Self {
        let mode = mode_of(fd);
        Sink {
            fd,
            _owned: None,
            mode,
            datagram: mode == Syscall::Socket && is_datagram(fd),
            timeout,
            poll_first: timeout.is_some() && mode != Syscall::Plain,
        }
    }

    /// A descriptor Trace2 opened and closes when the sink drops. A socket
    /// gets `SO_SNDTIMEO` for the bound.
    pub(crate) fn owned(fd: OwnedFd, timeout: Option<Duration>) -> Self {
        let raw = fd.as_raw_fd();
        let mode = mode_of(raw);
        let poll_first = match (mode, timeout) {
            (_, None) | (Syscall::Plain, _) => false,
            (Syscall::Socket, Some(t)) => !stall::set_send_timeout(raw, t),
            (Syscall::Pipe, Some(_)) => true,
        };
        Sink {
            fd: raw,
            mode,
            datagram: mode == Syscall::Socket && is_datagram(raw),
            _owned: Some(fd),
            timeout,
            poll_first,
        }
    }

    /// The descriptor number.
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd
    }

    /// How this sink writes.
    #[cfg(test)]
    pub(crate) fn mode(&self) -> Syscall {
        self.mode
    }

    /// The most bytes of complete lines one `write()` of a batch may carry
    /// so that it lands whole, never cut by another writer's bytes: 0 for
    /// datagram sockets (one line per message), `PIPE_BUF` for pipes (larger
    /// pipe writes may interleave with other writers), unlimited otherwise
    /// (`O_APPEND` files, and stream sockets, which this process alone
    /// writes).
    pub(crate) fn batch_limit(&self) -> usize {
        if self.datagram {
            0
        } else if self.mode == Syscall::Pipe {
            libc::PIPE_BUF
        } else {
            usize::MAX
        }
    }

    /// Writes all of `bytes` (complete lines), continuing after a short
    /// write. Used for batches: a short write of a batch happens at most when
    /// the destination is about to fail (a full disk), and dropping the rest
    /// of the batch would lose many lines where the direct path loses one.
    /// On failure, returns how many bytes were written before it.
    pub(crate) fn write_all(&self, bytes: &[u8]) -> Result<(), (usize, io::Error)> {
        let mut done = 0;
        while let Some(rest) = bytes.get(done..).filter(|r| !r.is_empty()) {
            match self.write_once(rest) {
                Ok(0) => return Err((done, io::Error::from(io::ErrorKind::WriteZero))),
                Ok(n) => done += n,
                Err(e) => return Err((done, e)),
            }
        }
        Ok(())
    }

    /// Exactly one successful `write()`/`send()` of `line`. A short write
    /// counts as success and is not retried: another writer's line could land
    /// between the two parts, which is worse than a cut line.
    pub(crate) fn write_once(&self, line: &[u8]) -> io::Result<usize> {
        if let (true, Some(t)) = (self.poll_first, self.timeout) {
            stall::wait_writable(self.fd, t)?;
        }
        loop {
            let r = match self.mode {
                Syscall::Plain => plain_write(self.fd, line),
                Syscall::Socket => send_nosignal(self.fd, line),
                Syscall::Pipe => write_blocking_sigpipe(self.fd, line),
            };
            match (r, self.timeout) {
                (Err(e), _) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A descriptor the host made non-blocking: wait for room,
                // boundedly, and try again.
                (Err(e), Some(t)) if e.kind() == io::ErrorKind::WouldBlock && self.poll_first => {
                    stall::wait_writable(self.fd, t)?;
                }
                // SO_SNDTIMEO expired: the reader took nothing for that long.
                (Err(e), Some(t)) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(stall::stalled(t))
                }
                (other, _) => return other,
            }
        }
    }
}

fn mode_of(fd: RawFd) -> Syscall {
    // SAFETY: `stat` is plain old data; an all-zero value is valid and fstat
    // only writes into it. A descriptor that is not open yields -1 (EBADF).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable `stat` for the duration of the call.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Syscall::Plain;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFSOCK => Syscall::Socket,
        libc::S_IFIFO => Syscall::Pipe,
        _ => Syscall::Plain,
    }
}

/// Whether the socket `fd` is a `SOCK_DGRAM` socket.
fn is_datagram(fd: RawFd) -> bool {
    let mut ty: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `ty` and `len` are valid for writes and `len` holds the size of
    // `ty`, as getsockopt(SO_TYPE) requires.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut ty as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    r == 0 && ty == libc::SOCK_DGRAM
}

fn result(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn plain_write(fd: RawFd, line: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `line`, readable for the call.
    // `fd` is only a number to the kernel: a closed one gives EBADF.
    result(unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) })
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn send_nosignal(fd: RawFd, line: &[u8]) -> io::Result<usize> {
    // SAFETY: as in `plain_write`; MSG_NOSIGNAL turns SIGPIPE into EPIPE.
    result(unsafe { libc::send(fd, line.as_ptr().cast(), line.len(), libc::MSG_NOSIGNAL) })
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn send_nosignal(fd: RawFd, line: &[u8]) -> io::Result<usize> {
    write_blocking_sigpipe(fd, line)
}

/// Whether `SIGPIPE` is ignored process-wide (the default of Rust programs).
fn sigpipe_ignored() -> bool {
    // SAFETY: `sigaction` is plain old data; with a null new action the call
    // only reads the current disposition into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

fn write_blocking_sigpipe(fd: RawFd, line: &[u8]) -> io::Result<usize> {
    if sigpipe_ignored() {
        plain_write(fd, line)
    } else {
        masked_write(fd, line)
    }
}

/// `write()` with `SIGPIPE` blocked in this thread; a `SIGPIPE` the write
/// raised is consumed before the old mask returns.
fn masked_write(fd: RawFd, line: &[u8]) -> io::Result<usize> {
    // SAFETY: every sigset_t is initialised by sigemptyset/pthread_sigmask/
    // sigpending before it is read; the mask change affects this thread only
    // and is undone before returning, whatever the write did.
    unsafe {
        let mut pipe_only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_only);
        libc::sigaddset(&mut pipe_only, libc::SIGPIPE);
        let mut old_mask: libc::sigset_t = std::mem::zeroed();
        if libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_only, &mut old_mask) != 0 {
            return plain_write(fd, line);
        }
        let mut pending: libc::sigset_t = std::mem::zeroed();
        let was_pending =
            libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let r = plain_write(fd, line);
        if matches!(&r, Err(e) if e.raw_os_error() == Some(libc::EPIPE)) && !was_pending {
            consume_pending_sigpipe(&pipe_only);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut());
        r
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn consume_pending_sigpipe(pipe_only: &libc::sigset_t) {
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `pipe_only` and `zero` are valid for the call; a zero timeout
    // never blocks, and SIGPIPE is blocked in this thread, so the signal our
    // write raised is pending here and is taken off without being delivered.
    unsafe {
        libc::sigtimedwait(pipe_only, std::ptr::null_mut(), &zero);
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn consume_pending_sigpipe(pipe_only: &libc::sigset_t) {
    // SAFETY: only called when our write failed with EPIPE while SIGPIPE was
    // blocked and not pending before, so a SIGPIPE is pending and sigwait
    // returns at once.
    unsafe {
        let mut sig = 0;
        libc::sigwait(pipe_only, &mut sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() returns.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just created and are owned by nobody else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    #[test]
    fn descriptor_types_pick_the_write() {
        let (r, w) = pipe();
        assert_eq!(Sink::owned(w, None).mode(), Syscall::Pipe);
        drop(r);
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(Sink::owned(a.into(), None).mode(), Syscall::Socket);
        let f = tempfile_in_target();
        assert_eq!(Sink::owned(f.into(), None).mode(), Syscall::Plain);
    }

    #[test]
    fn batch_limits_follow_the_descriptor() {
        let (r, w) = pipe();
        assert_eq!(Sink::owned(w, None).batch_limit(), libc::PIPE_BUF);
        drop(r);
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(Sink::owned(a.into(), None).batch_limit(), usize::MAX);
        let (d, _e) = std::os::unix::net::UnixDatagram::pair().unwrap();
        assert_eq!(Sink::owned(d.into(), None).batch_limit(), 0);
        assert_eq!(
            Sink::owned(tempfile::tempfile().unwrap().into(), None).batch_limit(),
            usize::MAX
        );
    }

    #[test]
    fn write_all_writes_everything_or_fails() {
        let (r, w) = pipe();
        let sink = Sink::owned(w, None);
        sink.write_all(b"a\nbb\n").unwrap();
        let mut got = [0u8; 8];
        // SAFETY: reads into a local buffer from the pipe's read end.
        let n = unsafe { libc::read(r.as_raw_fd(), got.as_mut_ptr().cast(), got.len()) };
        assert_eq!(&got[..n as usize], b"a\nbb\n");
        drop(r);
        let (written, e) = sink.write_all(b"x\n").unwrap_err();
        assert_eq!((written, e.raw_os_error()), (0, Some(libc::EPIPE)));
    }

    fn tempfile_in_target() -> std::fs::File {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("flightrec-sink-{}", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        f
    }

    #[test]
    fn broken_pipe_is_an_error_not_a_signal() {
        // The test harness ignores SIGPIPE, so this covers the fast path; the
        // blocked-signal path runs in tests/trace2_targets.rs in a child
        // process whose SIGPIPE disposition is the default.
        let (r, w) = pipe();
        drop(r);
        let sink = Sink::owned(w, None);
        let e = sink.write_once(b"x\n").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPIPE));
    }

    fn sigpipe_pending_here() -> bool {
        // SAFETY: sigpending fills the zeroed set; sigismember only reads it.
        unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGPIPE) == 1
        }
    }

    /// Runs `f` with SIGPIPE blocked in this thread, so a SIGPIPE left
    /// behind stays visible to `sigpending` instead of being discarded.
    fn with_sigpipe_blocked(f: impl FnOnce()) {
        // SAFETY: the sets are initialised before use; the mask is restored.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            f();
            // Drop whatever is left so the harness thread stays clean.
            while sigpipe_pending_here() {
                consume_pending_sigpipe(&set);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
    }

    #[test]
    fn masked_write_consumes_the_signal_it_raised() {
        with_sigpipe_blocked(|| {
            let (r, w) = pipe();
            drop(r);
            let e = masked_write(w.as_raw_fd(), b"line\n").unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EPIPE));
            assert!(!sigpipe_pending_here(), "our SIGPIPE was left pending");
        });
        let (r, w) = pipe();
        assert_eq!(masked_write(w.as_raw_fd(), b"line\n").unwrap(), 5);
        drop(r);
    }

    #[test]
    fn masked_write_keeps_a_sigpipe_that_was_pending_before() {
        with_sigpipe_blocked(|| {
            // SAFETY: signals this very thread; SIGPIPE is blocked, so it
            // only becomes pending.
            unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGPIPE) };
            assert!(sigpipe_pending_here());
            let (r, w) = pipe();
            drop(r);
            assert!(masked_write(w.as_raw_fd(), b"line\n").is_err());
            assert!(sigpipe_pending_here(), "the host's SIGPIPE was taken");
        });
    }

    #[test]
    fn closed_descriptor_gives_ebadf() {
        // -1 is never an open descriptor.
        let sink = Sink::borrowed(-1, None);
        assert_eq!(sink.mode(), Syscall::Plain);
        let e = sink.write_once(b"x\n").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }
}
