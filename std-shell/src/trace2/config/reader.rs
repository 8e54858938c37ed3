//! Reads git config files entry by entry, in git's order, following
//! `include.path` where the directive stands.
//!
//! The syntax (sections, quoting, escapes, continuation lines, comments) is
//! parsed the way git's `config.c` parses it (`git_parse_source`,
//! `get_base_var`, `get_value`, `parse_value`), character by character, so
//! the entries, their line numbers and the line git calls bad are git's: every
//! entry in reading order with its file and line (for git's "bad config line N"
//! message), an included file read exactly at its `include.path` entry, and a
//! key written without `=` reported as having no value.
//!
//! This used to sit on `gix-config`'s event parser. That crate brought about
//! sixty crates into every program that traces; git's grammar is small and the
//! tests compare this reader with git itself, so it is written out here.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::entry::{ConfigEntry, Scope, MAX_INCLUDE_DEPTH};
use super::error::ConfigError;
use super::value::is_git_space;

/// Reading context: `$HOME` for `~/` in include paths.
pub(crate) struct Reader<'h> {
    pub(crate) home: Option<&'h Path>,
}

/// Called for each entry in reading order; an error stops the reading.
pub(crate) type Visit<'v> = dyn FnMut(&ConfigEntry) -> Result<(), ConfigError> + 'v;

impl Reader<'_> {
    /// Reads `path` if it is readable (a missing or unreadable file is
    /// skipped, as git's `access()` check does).
    pub(crate) fn read_file(
        &self,
        path: &Path,
        scope: Scope,
        depth: u32,
        visit: &mut Visit<'_>,
    ) -> Result<(), ConfigError> {
        let Ok(bytes) = std::fs::read(path) else {
            return Ok(());
        };
        self.read_bytes(&bytes, path, scope, depth, visit)
    }

    fn read_bytes(
        &self,
        bytes: &[u8],
        path: &Path,
        scope: Scope,
        depth: u32,
        visit: &mut Visit<'_>,
    ) -> Result<(), ConfigError> {
        let mut parse = Parser::new(bytes);
        loop {
            match parse.next_entry() {
                Ok(Some((key, value, line))) => {
                    let entry = ConfigEntry {
                        scope,
                        key,
                        value,
                        path: path.to_path_buf(),
                        line,
                    };
                    visit(&entry)?;
                    if entry.key == b"include.path" {
                        self.include(&entry, depth, visit)?;
                    }
                }
                Ok(None) => return Ok(()),
                // git reports every entry before the bad line, then dies.
                Err(line) => {
                    return Err(ConfigError::BadLine {
                        cause: None,
                        line,
                        path: path.to_path_buf(),
                    })
                }
            }
        }
    }

    /// git's `handle_path_include`: `~/` expansion, relative paths against
    /// the including file's directory, a missing file skipped.
    fn include(
        &self,
        entry: &ConfigEntry,
        depth: u32,
        visit: &mut Visit<'_>,
    ) -> Result<(), ConfigError> {
        let Some(value) = &entry.value else {
            return Err(ConfigError::missing_value(entry));
        };
        let Some(expanded) = expand_user_path(value, self.home) else {
            // git: "could not expand include path" is an error() that the
            // reading survives.
            return Ok(());
        };
        let target = if expanded.first() == Some(&b'/') {
            PathBuf::from(OsStr::from_bytes(&expanded))
        } else {
            let from = entry.path.as_os_str().as_bytes();
            let mut p = match from.iter().rposition(|&b| b == b'/') {
                Some(i) => from[..=i].to_vec(),
                None => Vec::new(),
            };
            p.extend_from_slice(&expanded);
            PathBuf::from(OsStr::from_bytes(&p))
        };
        if std::fs::metadata(&target).is_err() {
            return Ok(());
        }
        if depth + 1 > MAX_INCLUDE_DEPTH {
            return Err(ConfigError::IncludeDepth {
                path: target,
                from: entry.path.clone(),
            });
        }
        self.read_file(&target, entry.scope, depth + 1, visit)
    }
}

/// git's `interpolate_path` for `~/...` and `~`; `~user/` is not expanded
/// (`None`, as when git cannot find the user).
fn expand_user_path(path: &[u8], home: Option<&Path>) -> Option<Vec<u8>> {
    let Some(rest) = path.strip_prefix(b"~") else {
        return Some(path.to_vec());
    };
    if !rest.is_empty() && rest[0] != b'/' {
        return None;
    }
    let mut out = home?.as_os_str().as_bytes().to_vec();
    out.extend_from_slice(rest);
    Some(out)
}

/// git's `iskeychar`: what a section or key name may hold.
fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// What [`Parser::next_entry`] gives: the key, the value (`None` without `=`)
/// and the line the entry ends on; or the line git calls bad.
type Parsed = Result<Option<(Vec<u8>, Option<Vec<u8>>, usize)>, usize>;

/// git's config parser over one file's bytes: `git_parse_source` and the
/// functions it calls, with git's line counting (`linenr` counts a line feed
/// as it is read, and once more at the end of the file).
struct Parser<'b> {
    bytes: &'b [u8],
    pos: usize,
    /// git's `linenr`.
    line: usize,
    /// The end of the file was read (`get_next_char` then gives `\n`).
    eof: bool,
    /// `section.` or `section.subsection.` of the entries that follow.
    section: Vec<u8>,
}

impl<'b> Parser<'b> {
    fn new(bytes: &'b [u8]) -> Self {
        // A UTF-8 byte order mark at the start is skipped; a partial one is a
        // bad first line, as its first byte is not a letter.
        let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        Self {
            bytes,
            pos: 0,
            line: 1,
            eof: false,
            section: Vec::new(),
        }
    }

    /// git's `get_next_char`: CR LF reads as LF, the end of the file as LF.
    fn next_char(&mut self) -> u8 {
        let Some(&c) = self.bytes.get(self.pos) else {
            self.eof = true;
            self.line += 1;
            return b'\n';
        };
        self.pos += 1;
        if c == b'\r' && self.bytes.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
            self.line += 1;
            return b'\n';
        }
        if c == b'\n' {
            self.line += 1;
        }
        c
    }

    /// The next `key = value` (git's `git_parse_source` loop up to its
    /// callback), `Ok(None)` at the end of the file.
    fn next_entry(&mut self) -> Parsed {
        let mut comment = false;
        loop {
            let c = self.next_char();
            if c == b'\n' {
                if self.eof {
                    return Ok(None);
                }
                comment = false;
                continue;
            }
            if comment || is_git_space(c) {
                continue;
            }
            if c == b'#' || c == b';' {
                comment = true;
                continue;
            }
            if c == b'[' {
                self.section.clear();
                if self.base_var().is_none() || self.section.is_empty() {
                    return Err(self.line);
                }
                self.section.push(b'.');
                continue;
            }
            if !c.is_ascii_alphabetic() {
                return Err(self.line);
            }
            let mut key = self.section.clone();
            key.push(c.to_ascii_lowercase());
            return self.value(key);
        }
    }

    /// git's `get_base_var`: `[section]`, `[section.sub]` (all lowercased) or
    /// `[section "sub"]` (the subsection kept as written).
    fn base_var(&mut self) -> Option<()> {
        loop {
            let c = self.next_char();
            if self.eof {
                return None;
            }
            if c == b']' {
                return Some(());
            }
            if is_git_space(c) {
                return self.extended_base_var(c);
            }
            if !is_key_char(c) && c != b'.' {
                return None;
            }
            self.section.push(c.to_ascii_lowercase());
        }
    }

    /// git's `get_extended_base_var`: ` "subsection"]` after the name.
    fn extended_base_var(&mut self, mut c: u8) -> Option<()> {
        loop {
            if c == b'\n' {
                return self.incomplete_line();
            }
            c = self.next_char();
            if !is_git_space(c) {
                break;
            }
        }
        if c != b'"' {
            return None;
        }
        self.section.push(b'.');
        loop {
            let mut c = self.next_char();
            if c == b'\n' {
                return self.incomplete_line();
            }
            if c == b'"' {
                break;
            }
            if c == b'\\' {
                c = self.next_char();
                if c == b'\n' {
                    return self.incomplete_line();
                }
            }
            self.section.push(c);
        }
        (self.next_char() == b']').then_some(())
    }

    /// git's `error_incomplete_line`: the line feed just read is not counted.
    fn incomplete_line(&mut self) -> Option<()> {
        self.line -= 1;
        None
    }

    /// git's `get_value`: the rest of the key, then `= value` or nothing.
    fn value(&mut self, mut key: Vec<u8>) -> Parsed {
        let mut c;
        loop {
            c = self.next_char();
            if self.eof || !is_key_char(c) {
                break;
            }
            key.push(c.to_ascii_lowercase());
        }
        while c == b' ' || c == b'\t' {
            c = self.next_char();
        }
        let mut value = None;
        if c != b'\n' {
            if c != b'=' {
                return Err(self.line);
            }
            match self.parse_value() {
                Some(v) => value = Some(v),
                None => return Err(self.line),
            }
        }
        // The line feed that ended the entry is already read; the entry
        // belongs to the line before it.
        Ok(Some((key, value, self.line - 1)))
    }

    /// git's `parse_value`: quotes, the escapes `\t \b \n \\ \"`, a backslash
    /// before the line feed continuing the value, comments outside quotes,
    /// and white space kept inside the value but trimmed at its end.
    fn parse_value(&mut self) -> Option<Vec<u8>> {
        let mut value = Vec::new();
        let (mut quote, mut comment) = (false, false);
        // Where trailing white space started (0: none pending).
        let mut trim_len = 0;
        loop {
            let mut c = self.next_char();
            if c == b'\n' {
                if quote {
                    self.line -= 1;
                    return None;
                }
                if trim_len != 0 {
                    value.truncate(trim_len);
                }
                return Some(value);
            }
            if comment {
                continue;
            }
            if is_git_space(c) && !quote {
                if trim_len == 0 {
                    trim_len = value.len();
                }
                if !value.is_empty() {
                    value.push(c);
                }
                continue;
            }
            if !quote && (c == b';' || c == b'#') {
                comment = true;
                continue;
            }
            trim_len = 0;
            if c == b'\\' {
                c = match self.next_char() {
                    b'\n' => continue,
                    b't' => b'\t',
                    b'b' => 0x08,
                    b'n' => b'\n',
                    c @ (b'\\' | b'"') => c,
                    _ => return None,
                };
                value.push(c);
                continue;
            }
            if c == b'"' {
                quote = !quote;
                continue;
            }
            value.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Key, value and line of one entry.
    type Seen = (String, Option<String>, usize);

    fn entries(text: &str) -> (Vec<Seen>, Option<ConfigError>) {
        let mut got = Vec::new();
        let r = Reader { home: None }.read_bytes(
            text.as_bytes(),
            Path::new("/cfg"),
            Scope::Global,
            0,
            &mut |e| {
                got.push((
                    e.key_str().into_owned(),
                    e.value
                        .as_ref()
                        .map(|v| String::from_utf8_lossy(v).into_owned()),
                    e.line,
                ));
                Ok(())
            },
        );
        (got, r.err())
    }

    fn kv(k: &str, v: Option<&str>, line: usize) -> Seen {
        (k.to_string(), v.map(str::to_string), line)
    }

    #[test]
    fn keys_values_and_lines_as_git_reports_them() {
        let (got, err) = entries(
            "# comment\n[Trace2]\n\tEventTarget\n\tnormalTarget = \"/x y\" ; c\n  v = a\\\n b\n\
             [Foo \"Sub.X\"] Key = 1\n[a.B]\nk=\n",
        );
        assert_eq!(err, None);
        assert_eq!(
            got,
            [
                kv("trace2.eventtarget", None, 3),
                kv("trace2.normaltarget", Some("/x y"), 4),
                kv("trace2.v", Some("a b"), 6),
                kv("foo.Sub.X.key", Some("1"), 7),
                kv("a.b.k", Some(""), 9),
            ]
        );
    }

    #[test]
    fn entries_before_a_bad_line_are_still_read() {
        let (got, err) = entries("[a]\nx = 1\n[b\ny = 2\n");
        assert_eq!(got, [kv("a.x", Some("1"), 2)]);
        assert_eq!(
            err,
            Some(ConfigError::BadLine {
                cause: None,
                line: 3,
                path: PathBuf::from("/cfg")
            })
        );
    }

    #[test]
    fn user_paths() {
        let home = Path::new("/home/u");
        assert_eq!(expand_user_path(b"~/x", Some(home)).unwrap(), b"/home/u/x");
        assert_eq!(expand_user_path(b"~", Some(home)).unwrap(), b"/home/u");
        assert_eq!(expand_user_path(b"~/x", None), None);
        assert_eq!(expand_user_path(b"~bob/x", Some(home)), None);
        assert_eq!(expand_user_path(b"rel/x", None).unwrap(), b"rel/x");
    }
}
