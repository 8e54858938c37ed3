//! The one way a name from an ELF or a trace is written to a terminal or a text
//! file: control characters (C0, DEL, C1: ESC, BEL, LF, CR, ...) as escapes and
//! bytes that are not UTF-8 as `\xNN`, so that a name can neither move the
//! cursor, set a window title or a colour, nor forge a line of output.
//!
//! YAML and Chrome JSON escape names by their own formats' rules
//! ([`crate::out::yaml`], [`crate::out::chrome`]); everything else (`names
//! --list`, `dump`, diagnostics that quote a name, the names files written)
//! goes through [`escape`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// `name` with every control character escaped: `\n`, `\r`, `\t`, `\e` (ESC),
/// `\a` (BEL), other ASCII controls and DEL as `\xNN`, C1 controls as
/// `\u{NN}`. Everything else is kept, a backslash too (names are Rust paths,
/// where a backslash does not occur; what matters is that no byte of the input
/// reaches the terminal as a control).
///
/// ```
/// use flightrec_host::names::escape::escape;
/// assert_eq!(escape("app::fib"), "app::fib");
/// assert_eq!(escape("a\x1b]0;title\x07b"), "a\\e]0;title\\ab");
/// assert_eq!(escape("x\ny\r"), "x\\ny\\r");
/// assert_eq!(escape("\u{9b}31m\x7f"), "\\u{9b}31m\\x7f");
/// assert!(matches!(escape("plain"), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn escape(name: &str) -> Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return Cow::Borrowed(name);
    }
    let mut s = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            '\x1b' => s.push_str("\\e"),
            '\x07' => s.push_str("\\a"),
            c if c.is_control() && (c as u32) < 0x80 => {
                let _ = write!(s, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(s, "\\u{{{:x}}}", c as u32);
            }
            c => s.push(c),
        }
    }
    Cow::Owned(s)
}

/// The text of `bytes` with each byte that is not part of valid UTF-8 written
/// as `\xNN` (where [`String::from_utf8_lossy`] would lose it to U+FFFD);
/// control characters are kept, for [`escape`] or a format's own escaping to
/// write: what a name read from an ELF section is held as.
///
/// ```
/// use flightrec_host::names::escape::text_of;
/// assert_eq!(text_of(b"app::f\xffn\x1b"), "app::f\\xffn\x1b");
/// assert_eq!(text_of("caf\u{e9}".as_bytes()), "caf\u{e9}");
/// ```
pub fn text_of(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        s.push_str(chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s
}

/// [`escape`] of [`text_of`]: bytes as a terminal may show them.
///
/// ```
/// use flightrec_host::names::escape::escape_bytes;
/// assert_eq!(escape_bytes(b"app::f\xffn\x1b[31m"), "app::f\\xffn\\e[31m");
/// ```
pub fn escape_bytes(bytes: &[u8]) -> String {
    escape(&text_of(bytes)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_control_character_survives() {
        let all: String = (0u32..0x200).filter_map(char::from_u32).collect();
        let out = escape(&all);
        assert!(!out.chars().any(char::is_control), "{out:?}");
        let bytes: Vec<u8> = (0u8..=255).collect();
        let out = escape_bytes(&bytes);
        assert!(!out.chars().any(char::is_control), "{out:?}");
        assert!(out.contains("\\xff"));
    }
}
