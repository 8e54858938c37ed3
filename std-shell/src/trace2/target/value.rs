//! git's grammar of a target value (`GIT_TRACE2`, `trace2.normalTarget`, ...),
//! without touching the file system.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a target value asks for, in git's order of rules (first match wins).
///
/// ```
/// use flightrec::trace2::target::TargetValue;
/// use std::ffi::OsStr;
/// assert_eq!(TargetValue::parse(OsStr::new("FALSE")), TargetValue::Off);
/// assert_eq!(TargetValue::parse(OsStr::new("True")), TargetValue::Stderr);
/// assert_eq!(TargetValue::parse(OsStr::new("9")), TargetValue::Fd(9));
/// assert_eq!(TargetValue::parse(OsStr::new("10")), TargetValue::Unknown);
/// assert!(matches!(TargetValue::parse(OsStr::new("/tmp/t2")), TargetValue::Absolute(_)));
/// assert!(matches!(TargetValue::parse(OsStr::new("af_unix:/s")), TargetValue::UnixSocket(_)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetValue<'a> {
    /// Unset, empty, `0` or `false` (any case): the target is off, silently.
    Off,
    /// `1` or `true` (any case): standard error. `1` never means stdout.
    Stderr,
    /// A single digit `2`..`9`: that already open descriptor, never closed.
    Fd(u8),
    /// An absolute path: a directory (one file per process) or a file
    /// (appended to); which one is decided when the target opens.
    Absolute(&'a Path),
    /// `af_unix:[stream:|dgram:]<path>`, checked by [`UnixSocketSpec::parse`].
    UnixSocket(&'a OsStr),
    /// Anything else (relative paths, `yes`, `10`, ...): git always warns.
    Unknown,
}

impl<'a> TargetValue<'a> {
    /// Classifies a target value (an unset setting is [`TargetValue::Off`]
    /// too). Example on [`TargetValue`].
    pub fn parse(value: &'a OsStr) -> Self {
        let v = value.as_bytes();
        if v.is_empty() || v == b"0" || v.eq_ignore_ascii_case(b"false") {
            TargetValue::Off
        } else if v == b"1" || v.eq_ignore_ascii_case(b"true") {
            TargetValue::Stderr
        } else if v.len() == 1 && v[0].is_ascii_digit() {
            // `0` and `1` were taken by the rules above.
            TargetValue::Fd(v[0] - b'0')
        } else if v[0] == b'/' {
            TargetValue::Absolute(Path::new(value))
        } else if v.starts_with(AF_UNIX) {
            TargetValue::UnixSocket(value)
        } else {
            TargetValue::Unknown
        }
    }
}

const AF_UNIX: &[u8] = b"af_unix:";

/// The socket types an `af_unix:` value may ask for.
///
/// ```
/// use flightrec::trace2::target::{SocketType, UnixSocketSpec};
/// let ty = |v: &str| UnixSocketSpec::parse(v.as_ref()).unwrap().socket_type;
/// assert_eq!(ty("af_unix:stream:/s"), SocketType::Stream);
/// assert_eq!(ty("af_unix:dgram:/s"), SocketType::Dgram);
/// assert_eq!(ty("af_unix:/s"), SocketType::Auto);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketType {
    /// `af_unix:stream:<path>`: only `SOCK_STREAM`.
    Stream,
    /// `af_unix:dgram:<path>`: only `SOCK_DGRAM`, one datagram per line.
    Dgram,
    /// `af_unix:<path>`: `SOCK_STREAM`, then `SOCK_DGRAM` only when the stream
    /// connect fails with `EPROTOTYPE`.
    Auto,
}

/// A checked `af_unix:` value: the socket type and an absolute path that fits
/// `sun_path`.
///
/// ```
/// use flightrec::trace2::target::{SocketType, UnixSocketSpec};
/// use std::path::Path;
/// assert_eq!(
///     UnixSocketSpec::parse("af_unix:stream:/run/t2.sock".as_ref()),
///     Ok(UnixSocketSpec { socket_type: SocketType::Stream, path: Path::new("/run/t2.sock") })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnixSocketSpec<'a> {
    /// Which socket types to try.
    pub socket_type: SocketType,
    /// The socket's absolute path.
    pub path: &'a Path,
}

/// Why an `af_unix:` value is unusable.
///
/// ```
/// use flightrec::trace2::target::{UnixSocketError, UnixSocketSpec};
/// use std::ffi::OsStr;
/// assert_eq!(UnixSocketSpec::parse(OsStr::new("af_unix:dgram:")), Err(UnixSocketError::EmptyPath));
/// assert_eq!(
///     UnixSocketSpec::parse(OsStr::new("af_unix:run/t2.sock")),
///     Err(UnixSocketError::InvalidPath(OsStr::new("run/t2.sock")))
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnixSocketError<'a> {
    /// Nothing after the prefix (`af_unix:`, `af_unix:stream:`).
    EmptyPath,
    /// The text after the recognized prefix is not absolute or does not fit
    /// `sun_path` (108 bytes with its NUL on Linux).
    InvalidPath(&'a OsStr),
}

/// `sizeof(((struct sockaddr_un *)0)->sun_path)`: the longest socket path
/// is one byte shorter (the NUL).
///
/// ```
/// use flightrec::trace2::target::{UnixSocketSpec, SUN_PATH_LEN};
/// let fits = format!("af_unix:/{}", "s".repeat(SUN_PATH_LEN - 2));
/// let too_long = format!("af_unix:/{}", "s".repeat(SUN_PATH_LEN - 1));
/// assert!(UnixSocketSpec::parse(fits.as_ref()).is_ok());
/// assert!(UnixSocketSpec::parse(too_long.as_ref()).is_err());
/// ```
pub const SUN_PATH_LEN: usize = 108;

impl<'a> UnixSocketSpec<'a> {
    /// Parses `af_unix:[stream:|dgram:]<path>` as git does: no other type
    /// keyword exists, so `af_unix:seqpacket:/x` names the relative path
    /// `seqpacket:/x`.
    ///
    /// ```
    /// use flightrec::trace2::target::{SocketType, UnixSocketError, UnixSocketSpec};
    /// use std::ffi::OsStr;
    /// let s = UnixSocketSpec::parse(OsStr::new("af_unix:dgram:/run/t2.sock")).unwrap();
    /// assert_eq!(s.socket_type, SocketType::Dgram);
    /// assert_eq!(
    ///     UnixSocketSpec::parse(OsStr::new("af_unix:seqpacket:/x")),
    ///     Err(UnixSocketError::InvalidPath(OsStr::new("seqpacket:/x")))
    /// );
    /// ```
    pub fn parse(value: &'a OsStr) -> Result<Self, UnixSocketError<'a>> {
        let v = value.as_bytes();
        let (socket_type, rest) = if let Some(r) = v.strip_prefix(b"af_unix:stream:") {
            (SocketType::Stream, r)
        } else if let Some(r) = v.strip_prefix(b"af_unix:dgram:") {
            (SocketType::Dgram, r)
        } else if let Some(r) = v.strip_prefix(AF_UNIX) {
            (SocketType::Auto, r)
        } else {
            return Err(UnixSocketError::EmptyPath);
        };
        if rest.is_empty() {
            return Err(UnixSocketError::EmptyPath);
        }
        if rest[0] != b'/' || rest.len() >= SUN_PATH_LEN {
            return Err(UnixSocketError::InvalidPath(OsStr::from_bytes(rest)));
        }
        Ok(UnixSocketSpec {
            socket_type,
            path: Path::new(OsStr::from_bytes(rest)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> TargetValue<'_> {
        TargetValue::parse(OsStr::new(s))
    }

    #[test]
    fn grammar_in_git_order() {
        for off in ["", "0", "false", "FALSE", "fAlSe"] {
            assert_eq!(p(off), TargetValue::Off, "{off:?}");
        }
        for err in ["1", "true", "TRUE"] {
            assert_eq!(p(err), TargetValue::Stderr, "{err:?}");
        }
        for d in 2..=9u8 {
            assert_eq!(p(&d.to_string()), TargetValue::Fd(d));
        }
        for unknown in [
            "10",
            "yes",
            "on",
            "2x",
            "relative.txt",
            "-1",
            " 1",
            "af_unix",
        ] {
            assert_eq!(p(unknown), TargetValue::Unknown, "{unknown:?}");
        }
        assert_eq!(p("/x"), TargetValue::Absolute(Path::new("/x")));
        assert_eq!(
            p("af_unix:rel"),
            TargetValue::UnixSocket(OsStr::new("af_unix:rel"))
        );
    }

    #[test]
    fn socket_values() {
        let parse = |s: &'static str| UnixSocketSpec::parse(OsStr::new(s));
        assert_eq!(parse("af_unix:"), Err(UnixSocketError::EmptyPath));
        assert_eq!(parse("af_unix:stream:"), Err(UnixSocketError::EmptyPath));
        assert_eq!(parse("af_unix:dgram:"), Err(UnixSocketError::EmptyPath));
        assert_eq!(
            parse("af_unix:relative/sock"),
            Err(UnixSocketError::InvalidPath(OsStr::new("relative/sock")))
        );
        assert_eq!(
            parse("af_unix:/s").unwrap(),
            UnixSocketSpec {
                socket_type: SocketType::Auto,
                path: Path::new("/s")
            }
        );
        assert_eq!(
            parse("af_unix:stream:/s").unwrap().socket_type,
            SocketType::Stream
        );
        // 107 bytes fit with the NUL, 108 do not.
        let fits = format!("af_unix:/{}", "a".repeat(SUN_PATH_LEN - 2));
        assert!(UnixSocketSpec::parse(OsStr::new(&fits)).is_ok());
        let long = format!("af_unix:/{}", "a".repeat(SUN_PATH_LEN - 1));
        assert!(matches!(
            UnixSocketSpec::parse(OsStr::new(&long)),
            Err(UnixSocketError::InvalidPath(_))
        ));
    }
}
