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
///
/// ```
/// use flightrec_core::trace2::text::write_sq_pretty;
/// use flightrec_core::trace2::LineBuf;
/// let quoted = |arg: &[u8]| {
///     let mut storage = [0u8; 64];
///     let mut l = LineBuf::new(&mut storage);
///     write_sq_pretty(&mut l, arg).unwrap();
///     l.as_bytes().to_vec()
/// };
/// // As git 2.47.3 quotes them in the `start` line of
/// // `git log -1 --format='%h %s' "--grep=it's!" --grep= ''`.
/// assert_eq!(quoted(b"--grep="), b"--grep=");
/// assert_eq!(quoted(b"--format=%h %s"), b"'--format=%h %s'");
/// assert_eq!(quoted(b"--grep=it's!"), br"'--grep=it'\''s'\!''");
/// assert_eq!(quoted(b""), b"''");
/// ```
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
///
/// ```
/// use flightrec_core::trace2::text::write_sq_argv;
/// use flightrec_core::trace2::{Args, LineBuf};
/// let argv = ["git", "log", "-1", "--format=%h %s", ""];
/// let mut storage = [0u8; 64];
/// let mut l = LineBuf::new(&mut storage);
/// write_sq_argv(&mut l, Args::Str(&argv)).unwrap();
/// // The `start` line of `git log -1 --format='%h %s' ''` (git 2.47.3, GIT_TRACE2_BRIEF).
/// assert_eq!(l.as_bytes(), br"git log -1 '--format=%h %s' ''");
/// ```
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

/// A word whose byte `i` has its top bit set if byte `i` of `w` is below 0x20,
/// a `"` or a `\\`, possibly with more bits set above such a byte (the borrow of
/// the subtraction): nonzero exactly when some byte needs a JSON escape.
///
/// Classic SWAR tests ("has a byte less than n", "has a zero byte" of `w` xor
/// the quote or backslash pattern), sharing `!w` because the quote and
/// backslash patterns have their top bits clear.
#[inline(always)]
fn escape_hits(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let below_space = w.wrapping_sub(LO * 0x20);
    let quote = (w ^ (LO * u64::from(b'"'))).wrapping_sub(LO);
    let backslash = (w ^ (LO * u64::from(b'\\'))).wrapping_sub(LO);
    (below_space | quote | backslash) & !w & HI
}

/// True when any of the 8 bytes of `w` needs a JSON escape (`< 0x20`, `"`, `\\`).
#[inline(always)]
fn word_needs_escape(w: u64) -> bool {
    escape_hits(w) != 0
}

/// [`word_needs_escape`] of two words at once, one branch for both.
#[inline(always)]
fn pair_needs_escape(a: &[u8; 8], b: &[u8; 8]) -> bool {
    (escape_hits(u64::from_le_bytes(*a)) | escape_hits(u64::from_le_bytes(*b))) != 0
}

/// True when some byte of `s` needs a JSON escape.
/// Copies `s` into the front of `dst` if no byte of `s` needs a JSON escape
/// and `dst` is long enough; returns false otherwise, with `dst` possibly
/// partly written.
///
/// Strings are checked a word at a time while they are copied (16 bytes per
/// branch); strings shorter than 16 bytes are read as two overlapping words or
/// single bytes, so no call to `memcpy` is made for them.
#[inline(always)]
fn copy_if_clean(dst: &mut [u8], s: &[u8]) -> bool {
    let n = s.len();
    let Some(dst) = dst.get_mut(..n) else {
        return false;
    };
    match n {
        0 => true,
        1..=3 => {
            let (a, b, c) = (s[0], s[n / 2], s[n - 1]);
            let esc = |x: u8| JSON_ESCAPE[x as usize] != 0;
            if esc(a) | esc(b) | esc(c) {
                return false;
            }
            dst[0] = a;
            dst[n / 2] = b;
            dst[n - 1] = c;
            true
        }
        4..=7 => {
            let (Some(a), Some(b)) = (s.first_chunk::<4>(), s.last_chunk::<4>()) else {
                return false;
            };
            let w = u64::from(u32::from_le_bytes(*a)) | u64::from(u32::from_le_bytes(*b)) << 32;
            if word_needs_escape(w) {
                return false;
            }
            if let Some(d) = dst.first_chunk_mut::<4>() {
                *d = *a;
            }
            if let Some(d) = dst.last_chunk_mut::<4>() {
                *d = *b;
            }
            true
        }
        8..=16 => {
            let (Some(a), Some(b)) = (s.first_chunk::<8>(), s.last_chunk::<8>()) else {
                return false;
            };
            if pair_needs_escape(a, b) {
                return false;
            }
            if let Some(d) = dst.first_chunk_mut::<8>() {
                *d = *a;
            }
            if let Some(d) = dst.last_chunk_mut::<8>() {
                *d = *b;
            }
            true
        }
        _ => {
            let mut blocks = s.chunks_exact(16);
            for (d, block) in dst.chunks_exact_mut(16).zip(&mut blocks) {
                let (Some(a), Some(b)) = (block.first_chunk::<8>(), block.last_chunk::<8>()) else {
                    return false;
                };
                if pair_needs_escape(a, b) {
                    return false;
                }
                d.copy_from_slice(block);
            }
            if blocks.remainder().is_empty() {
                return true;
            }
            // The last 16 bytes overlap bytes already copied, which is harmless.
            let Some(last) = s.last_chunk::<16>() else {
                return false;
            };
            let (Some(a), Some(b)) = (last.first_chunk::<8>(), last.last_chunk::<8>()) else {
                return false;
            };
            if pair_needs_escape(a, b) {
                return false;
            }
            if let Some(d) = dst.last_chunk_mut::<16>() {
                *d = *last;
            }
            true
        }
    }
}

/// Writes the body of a JSON string (no quotes) the way git does: `"`, `\`, and
/// control bytes below 0x20 are escaped (lowercase `\u00xx`); everything else,
/// including `/`, DEL and every byte >= 0x80 (valid UTF-8 or not), is copied raw.
///
/// ```
/// use flightrec_core::trace2::text::write_json_escaped;
/// use flightrec_core::trace2::LineBuf;
/// let mut storage = [0u8; 64];
/// let mut l = LineBuf::new(&mut storage);
/// // Arguments of a `git log` whose `start` event git 2.47.3 writes as shown.
/// write_json_escaped(&mut l, b"--grep=a\"b\tc\x01/\\").unwrap();
/// assert_eq!(l.as_bytes(), br#"--grep=a\"b\tc\u0001/\\"#);
/// let mut l = LineBuf::new(&mut storage);
/// write_json_escaped(&mut l, b"--grep=\xe9\xff\x7f").unwrap();
/// assert_eq!(l.as_bytes(), b"--grep=\xe9\xff\x7f");
/// ```
// Always inlined: the call would cost about as much as the check and copy of
// a typical 10-byte field.
#[inline(always)]
pub fn write_json_escaped(out: &mut LineBuf<'_>, s: &[u8]) -> Result {
    // Most strings need no escape at all: checked and copied in one pass.
    if copy_if_clean(out.spare(), s) {
        return out.advance(s.len());
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

/// Writes a quoted JSON string (escaped like [`write_json_escaped`]).
///
/// ```
/// use flightrec_core::trace2::text::write_json_string;
/// use flightrec_core::trace2::{BufferTooSmall, LineBuf};
/// let mut storage = [0u8; 8];
/// let mut l = LineBuf::new(&mut storage);
/// write_json_string(&mut l, b"a\"b").unwrap();
/// assert_eq!(l.as_bytes(), br#""a\"b""#);
/// assert_eq!(write_json_string(&mut l, b"long"), Err(BufferTooSmall));
/// ```
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
        // Every byte value at every position of every length up to 40 (all
        // the copy's paths, both words of a pair, the overlapping tail), with
        // clean neighbours and with a second byte that needs an escape.
        let clean_bytes = [b'x', b' ', b'#', b']', 0x7f, 0x80, 0xff, b'!'];
        for n in 0..=40usize {
            for pos in 0..n {
                for b in 0..=255u8 {
                    let filler = clean_bytes[(pos + usize::from(b)) % clean_bytes.len()];
                    let mut v = [filler; 40];
                    v[pos] = b;
                    let s = &v[..n];
                    let mut dst = [0u8; 48];
                    let clean = JSON_ESCAPE[b as usize] == 0;
                    assert_eq!(
                        copy_if_clean(&mut dst, s),
                        clean,
                        "byte {b:#x} at {pos} of {n}"
                    );
                    if clean {
                        assert_eq!(&dst[..n], s, "copy of {n} bytes");
                        assert!(dst[n..].iter().all(|&c| c == 0), "nothing past {n}");
                    }
                }
            }
            let s = &[b'x'; 40][..n];
            let mut dst = [0u8; 48];
            assert!(copy_if_clean(&mut dst, s));
            assert!(!copy_if_clean(&mut dst[..n.saturating_sub(1)], s) || n == 0);
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
