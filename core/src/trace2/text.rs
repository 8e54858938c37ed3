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

/// True when any of the 8 bytes of `w` needs a JSON escape (`< 0x20`, `"`, `\`).
///
/// Classic SWAR tests ("has a byte less than n", "has a zero byte"): exact for
/// the question "is there any such byte", which is all the fast path needs.
#[inline]
fn word_needs_escape(w: u64) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let below_space = w.wrapping_sub(LO * 0x20) & !w & HI;
    let q = w ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q & HI;
    let bs = w ^ (LO * u64::from(b'\\'));
    let backslash = bs.wrapping_sub(LO) & !bs & HI;
    (below_space | quote | backslash) != 0
}

/// True when some byte of `s` needs a JSON escape.
#[inline]
fn needs_escape(s: &[u8]) -> bool {
    if s.len() < 8 {
        return s.iter().any(|&b| JSON_ESCAPE[b as usize] != 0);
    }
    let mut i = 0;
    loop {
        // The last word overlaps bytes already checked, which is harmless.
        let at = i.min(s.len() - 8);
        if let Some(Ok(word)) = s.get(at..at + 8).map(<[u8; 8]>::try_from) {
            if word_needs_escape(u64::from_le_bytes(word)) {
                return true;
            }
        }
        i = at + 8;
        if i >= s.len() {
            return false;
        }
    }
}

/// Writes the body of a JSON string (no quotes) the way git does: `"`, `\`, and
/// control bytes below 0x20 are escaped (lowercase `\u00xx`); everything else,
/// including `/`, DEL and every byte >= 0x80 (valid UTF-8 or not), is copied raw.
#[inline]
pub fn write_json_escaped(out: &mut LineBuf<'_>, s: &[u8]) -> Result {
    // Most strings need no escape at all: one check, one copy.
    if !needs_escape(s) {
        return out.put(s);
    }
    write_json_escaped_slow(out, s)
}

#[cold]
fn write_json_escaped_slow(out: &mut LineBuf<'_>, s: &[u8]) -> Result {
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
#[inline(always)]
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
    fn swar_check_agrees_with_the_table() {
        for b in 0..=255u8 {
            for pos in 0..8 {
                let mut w = [b'a'; 8];
                w[pos] = b;
                let want = JSON_ESCAPE[b as usize] != 0;
                assert_eq!(
                    word_needs_escape(u64::from_le_bytes(w)),
                    want,
                    "byte {b:#x} at {pos}"
                );
            }
        }
        for n in 0..20 {
            for pos in 0..n {
                let mut v = [b'x'; 20];
                v[pos] = b'"';
                assert!(needs_escape(&v[..n]), "quote at {pos} of {n}");
            }
            assert!(!needs_escape(&[b'x'; 20][..n]));
        }
        // Neighbouring bytes that could borrow into each other.
        assert!(!word_needs_escape(u64::from_le_bytes(
            *b"\x20\x21\xff\x80\x7f\x23\x5d\x5b"
        )));
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
