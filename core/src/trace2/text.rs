//! String encodings git applies: `sq_quote_buf_pretty` for argv in normal/perf
//! lines and its JSON string escaping for the event target.

use core::fmt;

use super::event::{Args, Msg};
use super::line::{BufferTooSmall, LineBuf, Result};

/// Bytes git's `sq_quote_buf_pretty` leaves unquoted: ASCII alnum and `+,-./:=@_^`.
#[inline]
fn is_pretty_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'+' | b',' | b'-' | b'.' | b'/' | b':' | b'=' | b'@' | b'_' | b'^'
        )
}

/// Writes one argument quoted like git's `sq_quote_buf_pretty`: `''` when
/// empty, verbatim when every byte is safe, otherwise single-quoted with `'`
/// written as `'\''` and `!` as `'\!'`.
pub fn write_sq_pretty(out: &mut LineBuf<'_>, arg: &[u8]) -> Result {
    if arg.is_empty() {
        return out.put(b"''");
    }
    if arg.iter().all(|&b| is_pretty_safe(b)) {
        return out.put(arg);
    }
    out.byte(b'\'')?;
    let mut start = 0;
    for (i, &b) in arg.iter().enumerate() {
        let esc: &[u8] = match b {
            b'\'' => b"'\\''",
            b'!' => b"'\\!'",
            _ => continue,
        };
        out.put(&arg[start..i])?;
        out.put(esc)?;
        start = i + 1;
    }
    out.put(&arg[start..])?;
    out.byte(b'\'')
}

/// Writes an argv quoted element by element, joined by single spaces.
pub fn write_sq_argv(out: &mut LineBuf<'_>, argv: Args<'_>) -> Result {
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            out.byte(b' ')?;
        }
        write_sq_pretty(out, a)?;
    }
    Ok(())
}

/// Escape of byte `b` inside a JSON string, per git's `json-writer.c`:
/// 0 = copy raw, otherwise the short escape letter, or `u` for `\u00xx`.
const fn json_escape_class(b: u8) -> u8 {
    match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x0c => b'f',
        0x08 => b'b',
        0..=0x1f => b'u',
        _ => 0,
    }
}

const JSON_ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = json_escape_class(i as u8);
        i += 1;
    }
    t
};

/// Writes the body of a JSON string (no quotes) the way git does: `"`, `\`, and
/// control bytes below 0x20 are escaped (lowercase `\u00xx`); everything else,
/// including `/`, DEL and every byte >= 0x80 (valid UTF-8 or not), is copied raw.
pub fn write_json_escaped(out: &mut LineBuf<'_>, s: &[u8]) -> Result {
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        let class = JSON_ESCAPE[b as usize];
        if class == 0 {
            continue;
        }
        out.put(&s[start..i])?;
        if class == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.put(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ])?;
        } else {
            out.put(&[b'\\', class])?;
        }
        start = i + 1;
    }
    out.put(&s[start..])
}

/// Writes a quoted JSON string.
#[inline]
pub fn write_json_string(out: &mut LineBuf<'_>, s: &[u8]) -> Result {
    out.byte(b'"')?;
    write_json_escaped(out, s)?;
    out.byte(b'"')
}

/// The message git would write: present with a non-empty format.
#[inline]
pub(crate) fn shown<'m, 'a>(msg: &'m Option<Msg<'a>>) -> Option<&'m Msg<'a>> {
    msg.as_ref().filter(|m| m.has_format())
}

/// Renders a message raw (normal/perf).
pub(crate) fn write_msg_raw(out: &mut LineBuf<'_>, msg: &Msg<'_>) -> Result {
    match msg {
        Msg::Bytes(b) => out.put(b),
        Msg::Fmt(args) => fmt::write(out, *args).map_err(|_| BufferTooSmall),
    }
}

/// Renders a message as a JSON string body, escaping as it is formatted.
pub(crate) fn write_msg_json(out: &mut LineBuf<'_>, msg: &Msg<'_>) -> Result {
    match msg {
        Msg::Bytes(b) => write_json_escaped(out, b),
        Msg::Fmt(args) => {
            struct Escaper<'l, 'b>(&'l mut LineBuf<'b>);
            impl fmt::Write for Escaper<'_, '_> {
                fn write_str(&mut self, s: &str) -> fmt::Result {
                    write_json_escaped(self.0, s.as_bytes()).map_err(|_| fmt::Error)
                }
            }
            fmt::write(&mut Escaper(out), *args).map_err(|_| BufferTooSmall)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sq(s: &[u8]) -> ([u8; 64], usize) {
        let mut b = [0u8; 64];
        let mut l = LineBuf::new(&mut b);
        write_sq_pretty(&mut l, s).unwrap();
        let n = l.len();
        (b, n)
    }

    #[test]
    fn quoting_matches_git() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"", b"''"),
            (b"status", b"status"),
            (b"status --short", b"'status --short'"),
            (b"alias.hello=!echo hello", b"'alias.hello='\\!'echo hello'"),
            (b"it's", b"'it'\\''s'"),
            (
                b"https://user:pwd@example.com/",
                b"https://user:pwd@example.com/",
            ),
        ];
        for (input, want) in cases {
            let (b, n) = sq(input);
            assert_eq!(&b[..n], want);
        }
    }

    #[test]
    fn json_escapes_like_git() {
        let mut b = [0u8; 64];
        let mut l = LineBuf::new(&mut b);
        write_json_string(&mut l, b"a\"\\\n\r\t\x0c\x08\x01\x1f/\x7f\xff").unwrap();
        assert_eq!(
            l.as_bytes(),
            b"\"a\\\"\\\\\\n\\r\\t\\f\\b\\u0001\\u001f/\x7f\xff\""
        );
    }
}
