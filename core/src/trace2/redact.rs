//! URL password redaction (`GIT_TRACE2_REDACT`, on by default in git).
//!
//! Git redacts only arguments that *start* with `https://` or `http://`
//! (case-sensitive): when the authority part before the first `@` or `/`
//! holds a `user:password@`, everything between the first `:` and the `@` is
//! replaced by `<REDACTED>`. Anything else (`ssh://`, a user without a
//! password, a URL inside a longer argument such as
//! `url.X.insteadOf=https://user:pwd@host/`) is left as it is.
//!
//! Git applies it to the argv of `start`, `child_start` and `exec` and to
//! `def_param` values, never to alias argv, messages or data values; that
//! choice is the caller's. Nothing here allocates: [`redact_url`] returns the
//! two kept spans and [`Redacted::write_into`] joins them into a buffer.

use super::line::{BufferTooSmall, LineBuf};

/// The text that replaces a password.
///
/// ```
/// use flightrec_core::trace2::redact::{redact_url, REDACTED};
/// let mut buf = [0u8; 64];
/// let n = redact_url(b"https://u:hunter2@host/").unwrap().write_into(&mut buf).unwrap();
/// assert_eq!(&buf[..n], [&b"https://u:"[..], REDACTED, b"@host/"].concat());
/// ```
pub const REDACTED: &[u8] = b"<REDACTED>";

/// A redacted argument: `head` + [`REDACTED`] + `tail`, both spans borrowed
/// from the original.
///
/// ```
/// use flightrec_core::trace2::redact::{redact_url, REDACTED};
/// let r = redact_url(b"https://user:pwd@example.com/repo").unwrap();
/// assert_eq!(r.head, b"https://user:");
/// assert_eq!(r.tail, b"@example.com/repo");
/// assert_eq!(r.len(), r.head.len() + REDACTED.len() + r.tail.len());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Redacted<'a> {
    /// Scheme, `://`, user and the `:` after it.
    pub head: &'a [u8],
    /// The `@` and everything after it.
    pub tail: &'a [u8],
}

impl Redacted<'_> {
    /// Length of the redacted text. Example on [`Redacted`].
    #[allow(clippy::len_without_is_empty)] // never empty: it always holds REDACTED
    pub fn len(&self) -> usize {
        self.head.len() + REDACTED.len() + self.tail.len()
    }

    /// Writes the redacted text into `out` and returns its length.
    ///
    /// ```
    /// use flightrec_core::trace2::redact::redact_url;
    /// let mut buf = [0u8; 64];
    /// let n = redact_url(b"http://me:secret@host").unwrap().write_into(&mut buf).unwrap();
    /// assert_eq!(&buf[..n], b"http://me:<REDACTED>@host");
    /// let mut tiny = [0u8; 4];
    /// assert!(redact_url(b"http://me:secret@host").unwrap().write_into(&mut tiny).is_err());
    /// ```
    pub fn write_into(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut l = LineBuf::new(out);
        l.put(self.head)?;
        l.put(REDACTED)?;
        l.put(self.tail)?;
        Ok(l.len())
    }
}

/// Git's `redact_arg`: `Some` when `arg` is an `http(s)://` URL with a
/// password, `None` when it is to be logged unchanged.
///
/// A NUL byte ends the argument, as it would a C string.
///
/// ```
/// use flightrec_core::trace2::redact::redact_url;
/// assert!(redact_url(b"https://user@example.com/").is_none()); // no password
/// assert!(redact_url(b"ssh://user:pwd@example.com/").is_none()); // not http(s)
/// assert!(redact_url(b"https://example.com/a:b@c").is_none()); // `/` before `@`
/// assert!(redact_url(b"HTTPS://user:pwd@example.com/").is_none()); // case-sensitive
/// let r = redact_url(b"https://user:p:w@example.com/").unwrap();
/// assert_eq!(r.head, b"https://user:");
/// ```
pub fn redact_url(arg: &[u8]) -> Option<Redacted<'_>> {
    let arg = match arg.iter().position(|&b| b == 0) {
        Some(nul) => &arg[..nul],
        None => arg,
    };
    let scheme_len = if arg.starts_with(b"https://") {
        8
    } else if arg.starts_with(b"http://") {
        7
    } else {
        return None;
    };
    let rest = &arg[scheme_len..];
    let at = rest.iter().position(|&b| b == b'@' || b == b'/')?;
    if rest[at] != b'@' {
        return None;
    }
    let colon = rest[..at].iter().position(|&b| b == b':')?;
    Some(Redacted {
        head: &arg[..scheme_len + colon + 1],
        tail: &rest[at..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(arg: &[u8]) -> Option<([u8; 128], usize)> {
        let mut buf = [0u8; 128];
        let r = redact_url(arg)?;
        let n = r.write_into(&mut buf).unwrap();
        assert_eq!(n, r.len());
        Some((buf, n))
    }

    #[test]
    fn git_examples() {
        let cases: [(&[u8], Option<&[u8]>); 9] = [
            (
                b"https://user:pwd@example.com/",
                Some(b"https://user:<REDACTED>@example.com/"),
            ),
            (
                b"http://user:pwd@example.com",
                Some(b"http://user:<REDACTED>@example.com"),
            ),
            (b"https://:pwd@h/", Some(b"https://:<REDACTED>@h/")),
            (b"https://user:@h/", Some(b"https://user:<REDACTED>@h/")),
            (b"https://user@example.com/", None),
            (b"git://user:pwd@example.com/", None),
            (b"url.x.insteadOf=https://user:pwd@example.com/", None),
            (b"https://host/path@x:y", None),
            (b"https://", None),
        ];
        for (arg, want) in cases {
            match (redacted(arg), want) {
                (Some((buf, n)), Some(w)) => assert_eq!(&buf[..n], w),
                (None, None) => {}
                (got, _) => panic!("{:?}: {:?}", arg, got.map(|(b, n)| b[..n].to_vec())),
            }
        }
    }

    #[test]
    fn nul_ends_the_argument() {
        assert!(redact_url(b"https://user\0:pwd@h/").is_none());
        let r = redact_url(b"https://u:p@h\0tail").unwrap();
        assert_eq!(r.tail, b"@h");
    }
}
