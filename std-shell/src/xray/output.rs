//! Output files: compiler-rt's names, and writes through raw descriptors.
//!
//! Traces are named like compiler-rt's: `<xray_logfile_base><program>.<XXXXXX>`,
//! where `<program>` is the last component of `argv[0]` and `XXXXXX` six random
//! letters and digits (`mkstemp`). The names file is the trace's name plus
//! [`NAMES_SUFFIX`].
//!
//! Every write goes through `write(2)` on a raw descriptor, with no buffering in
//! the library and no lock of the standard library, so the same code runs in a fatal
//! signal handler.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::names::Sink;

/// Appended to a trace's path to name its names file (the core's
/// [`SUFFIX`](flightrec_core::names::SUFFIX)).
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::{Config, NAMES_SUFFIX};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// flightrec::xray::init(Config::builder().logfile_base(base).build()?)?; // base: a temp dir
/// flightrec::xray::set_function_name(FunctionId::new(1).unwrap(), "main_loop");
/// drop(flightrec::xray::enter(FunctionId::new(1).unwrap()));
/// let report = flightrec::xray::shutdown()?;
/// let names = report.names_path.unwrap();
/// assert_eq!(names.to_str().unwrap(), format!("{}{NAMES_SUFFIX}", report.path.unwrap().display()));
/// let elf = std::fs::read(names)?;
/// assert!(elf.starts_with(b"\x7fELF") && elf.windows(12).any(|w| w == b"1\tmain_loop\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const NAMES_SUFFIX: &str = flightrec_core::names::SUFFIX;

/// The names file of `trace`: its path plus [`NAMES_SUFFIX`].
pub(crate) fn names_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(NAMES_SUFFIX);
    PathBuf::from(s)
}

/// The program name compiler-rt puts in file names: the last `/` component of
/// `argv[0]`, or `(unknown)`.
pub(crate) fn program_name() -> String {
    std::env::args_os()
        .next()
        .map(|a| {
            let b = a.as_bytes();
            let last = b.rsplit(|&c| c == b'/').next().unwrap_or(b);
            String::from_utf8_lossy(last).into_owned()
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "(unknown)".to_owned())
}

/// An open descriptor this module owns; closed on drop.
#[derive(Debug)]
pub(crate) struct RawFile {
    fd: libc::c_int,
}

impl RawFile {
    /// Creates `<prefix>XXXXXX` with `mkstemp` (mode 0600); returns it and its path.
    pub(crate) fn create_unique(prefix: &str) -> io::Result<(RawFile, PathBuf)> {
        let mut template = prefix.as_bytes().to_vec();
        template.extend_from_slice(b"XXXXXX\0");
        // SAFETY: `template` is a writable NUL-terminated buffer ending in six `X`.
        let fd = unsafe { libc::mkstemp(template.as_mut_ptr().cast()) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        template.pop();
        Ok((RawFile { fd }, PathBuf::from(OsStr::from_bytes(&template))))
    }

    /// Opens `path` for writing, creating or truncating it; the `errno` of a
    /// failure. Async-signal-safe.
    pub(crate) fn create(path: &CStr, exclusive: bool) -> Result<RawFile, i32> {
        let mut flags = libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC;
        flags |= if exclusive {
            libc::O_EXCL
        } else {
            libc::O_TRUNC
        };
        // SAFETY: `path` is NUL-terminated; `open` has no other preconditions.
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            Err(last_errno())
        } else {
            Ok(RawFile { fd })
        }
    }

    /// Writes all of `bytes`, retrying after signals and short writes; the
    /// `errno` of a failure. Async-signal-safe.
    pub(crate) fn write_all(&self, mut bytes: &[u8]) -> Result<(), i32> {
        while !bytes.is_empty() {
            // SAFETY: `bytes` is a valid readable slice for its length.
            let n = unsafe { libc::write(self.fd, bytes.as_ptr().cast(), bytes.len()) };
            if n < 0 {
                let e = last_errno();
                if e == libc::EINTR {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(libc::EIO);
            }
            bytes = &bytes[n as usize..];
        }
        Ok(())
    }
}

impl Drop for RawFile {
    fn drop(&mut self) {
        // SAFETY: `fd` is a descriptor this value owns and closes once.
        unsafe { libc::close(self.fd) };
    }
}

/// A [`Sink`] over a [`RawFile`] with a small buffer on the stack (kept small for
/// signal stacks); writes of 256 bytes or more go straight through.
pub(crate) struct FdSink<'f> {
    file: &'f RawFile,
    buf: [u8; 256],
    len: usize,
    /// The `errno` of the first failed write (0: none).
    errno: i32,
}

impl<'f> FdSink<'f> {
    /// A sink writing to `file`.
    pub(crate) fn new(file: &'f RawFile) -> Self {
        Self {
            file,
            buf: [0; 256],
            len: 0,
            errno: 0,
        }
    }

    /// Writes what is buffered; the `errno` of the first write that failed.
    pub(crate) fn flush(&mut self) -> Result<(), i32> {
        if self.len > 0 {
            let r = self.file.write_all(&self.buf[..self.len]);
            self.note(r);
            self.len = 0;
        }
        match self.errno {
            0 => Ok(()),
            e => Err(e),
        }
    }

    fn note(&mut self, r: Result<(), i32>) {
        if let (Err(e), 0) = (r, self.errno) {
            self.errno = e;
        }
    }
}

impl Sink for FdSink<'_> {
    fn put(&mut self, bytes: &[u8]) -> bool {
        if self.errno != 0 {
            return false;
        }
        if self.len + bytes.len() > self.buf.len() {
            let _ = self.flush();
        }
        if bytes.len() >= self.buf.len() {
            let r = self.file.write_all(bytes);
            self.note(r);
        } else {
            self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        }
        self.errno == 0
    }
}

/// A path as a C string (`None` if it contains NUL).
pub(crate) fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// A name `<prefix>XXXXXX` that does not exist yet, chosen now and created later
/// with [`RawFile::create`] (exclusive) from a signal handler, where `mkstemp` is not
/// allowed.
pub(crate) fn reserve_unique_name(prefix: &str) -> PathBuf {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    loop {
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let mut r = h.finish();
        let mut name = prefix.to_owned();
        for _ in 0..6 {
            name.push(ALPHABET[(r % ALPHABET.len() as u64) as usize] as char);
            r /= ALPHABET.len() as u64;
        }
        let path = PathBuf::from(name);
        if !path.exists() {
            return path;
        }
    }
}

/// Writes to stderr with one `write(2)`: no lock, no allocation, async-signal-safe.
pub(crate) fn stderr_raw(parts: &[&[u8]]) {
    let mut buf = [0u8; 512];
    let mut len = 0;
    for p in parts {
        let k = p.len().min(buf.len() - len);
        buf[len..len + k].copy_from_slice(&p[..k]);
        len += k;
    }
    // SAFETY: writing a valid buffer to fd 2; the result does not matter.
    unsafe { libc::write(2, buf.as_ptr().cast(), len) };
}

/// Appended to a trace's path when the trace could not be written whole: a
/// file under its normal name is complete; `<name>.incomplete` stops early
/// (a full disk, an I/O error), and its names file is
/// `<name>.incomplete.names`.
///
/// ```
/// assert_eq!(flightrec::xray::INCOMPLETE_SUFFIX, ".incomplete");
/// ```
pub const INCOMPLETE_SUFFIX: &str = ".incomplete";

/// `trace` plus [`INCOMPLETE_SUFFIX`].
pub(crate) fn incomplete_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(INCOMPLETE_SUFFIX);
    PathBuf::from(s)
}

/// This thread's `errno`. Async-signal-safe (a read of a thread-local).
pub(crate) fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The C library's text for `errno`, without Rust's " (os error N)".
pub(crate) fn reason(errno: i32) -> String {
    if errno == libc::ETIMEDOUT {
        return String::from_utf8_lossy(reason_static(errno)).into_owned();
    }
    let s = io::Error::from_raw_os_error(errno).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The text of the `errno` values a write or create can fail with, for a
/// signal handler (`strerror` is not async-signal-safe).
pub(crate) fn reason_static(errno: i32) -> &'static [u8] {
    match errno {
        libc::ENOSPC => b"No space left on device",
        libc::EDQUOT => b"Disk quota exceeded",
        libc::EFBIG => b"File too large",
        libc::EIO => b"Input/output error",
        libc::EACCES => b"Permission denied",
        libc::EROFS => b"Read-only file system",
        libc::ENOENT => b"No such file or directory",
        libc::ENOTDIR => b"Not a directory",
        libc::EEXIST => b"File exists",
        libc::EMFILE | libc::ENFILE => b"Too many open files",
        // What `finish_stream` records when the writer thread did not let go of
        // the file.
        libc::ETIMEDOUT => b"the writer thread did not finish a write within grace_period_ms",
        _ => b"write error",
    }
}
