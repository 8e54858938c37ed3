//! Reads git config files entry by entry, in git's order, following
//! `include.path` where the directive stands.
//!
//! The syntax (sections, quoting, escapes, continuation lines, comments) is
//! parsed by `gix-config`'s event parser. On top of the events this module
//! does what git's `config.c` does and `gix_config::File` does not: it keeps
//! every entry in reading order with its file and line (for git's "bad config
//! line N" message), inserts an included file exactly at its `include.path`
//! entry (gix-config appends it after the whole section), and reports a key
//! written without `=` as having no value.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix_config::parse::{EventRef, Events};

use super::error::ConfigError;
use super::files::Scope;

/// git's `MAX_INCLUDE_DEPTH`.
///
/// Ten nested includes are read; an eleventh level is an error.
///
/// ```
/// use flightrec::trace2::config::{ConfigError, ConfigFiles, MAX_INCLUDE_DEPTH};
///
/// let dir = tempfile::tempdir().unwrap();
/// // f0 includes f1, ..., f(n-1) includes fn, which holds the value.
/// let chain = |n: u32| {
///     for i in 0..n {
///         let text = format!("[include]\n\tpath = f{}\n", i + 1);
///         std::fs::write(dir.path().join(format!("f{i}")), text).unwrap();
///     }
///     std::fs::write(dir.path().join(format!("f{n}")), "[a]\n\tb = 1\n").unwrap();
///     let files = ConfigFiles { global: vec![dir.path().join("f0")], ..ConfigFiles::none() };
///     files.entries(None)
/// };
/// let deepest = chain(MAX_INCLUDE_DEPTH).unwrap();
/// assert_eq!(deepest.last().unwrap().key, b"a.b");
/// let e = chain(MAX_INCLUDE_DEPTH + 1).unwrap_err();
/// assert!(matches!(e, ConfigError::IncludeDepth { .. }));
/// assert!(e.to_string().contains(&format!("({MAX_INCLUDE_DEPTH})")));
/// ```
pub const MAX_INCLUDE_DEPTH: u32 = 10;

/// One `key = value` of a config file.
///
/// ```
/// use flightrec::trace2::config::{ConfigFiles, Scope};
///
/// let dir = tempfile::tempdir().unwrap();
/// let file = dir.path().join("gitconfig");
/// std::fs::write(&file, "# remotes\n[Remote \"Origin\"]\n\tURL = \"x y\"\n\tPrune\n").unwrap();
/// let files = ConfigFiles { global: vec![file.clone()], ..ConfigFiles::none() };
/// let all = files.entries(None).unwrap();
///
/// // Section and key lowercased, the quoted subsection kept as written.
/// assert_eq!(all[0].key_str(), "remote.Origin.url");
/// assert_eq!(all[0].value.as_deref(), Some(&b"x y"[..]));
/// assert_eq!((all[0].scope, all[0].line), (Scope::Global, 3));
/// assert_eq!(all[0].path, file);
/// // A key without `=` has no value (git's implicit true).
/// assert_eq!((all[1].key_str(), all[1].value.as_deref()), ("remote.Origin.prune".into(), None));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigEntry {
    /// Where the entry comes from (`system`, `global`, `local`, `worktree`).
    pub scope: Scope,
    /// git's canonical key: `section.subsection.key` with section and key
    /// lowercased (the subsection too in the old `[section.sub]` syntax).
    pub key: Vec<u8>,
    /// The value, unquoted and unescaped; `None` for a key written without
    /// `=` (git's implicit `true`).
    pub value: Option<Vec<u8>>,
    /// The file that holds the entry (an included file for included entries).
    pub path: PathBuf,
    /// The line the entry ends on (1-based), as git counts it.
    pub line: usize,
}

impl ConfigEntry {
    /// The key as text (lossy for non-UTF-8 subsections). Example on
    /// [`ConfigEntry`].
    pub fn key_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.key)
    }
}

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
        match Events::from_bytes(bytes, None) {
            Ok(events) => self.walk(&events, path, scope, depth, visit),
            Err(e) => {
                // git reports every entry before the bad line, then dies; do
                // the same with the lines before the one the parser rejects.
                let line = e.line_number();
                let before = line_start(bytes, line);
                if let Ok(events) = Events::from_bytes(&bytes[..before], None) {
                    self.walk(&events, path, scope, depth, visit)?;
                }
                Err(ConfigError::BadLine {
                    cause: None,
                    line,
                    path: path.to_path_buf(),
                })
            }
        }
    }

    fn walk(
        &self,
        events: &Events,
        path: &Path,
        scope: Scope,
        depth: u32,
        visit: &mut Visit<'_>,
    ) -> Result<(), ConfigError> {
        let mut line = 1usize;
        let mut section: Vec<u8> = Vec::new();
        let mut key: Option<Vec<u8>> = None;
        let mut separator = false;
        let mut parts: Vec<u8> = Vec::new();
        let mut done = |key: Vec<u8>, value: Option<Vec<u8>>, line: usize| {
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
            Ok::<(), ConfigError>(())
        };
        for event in events.iter() {
            match event {
                EventRef::SectionHeader {
                    name,
                    separator: sep,
                    subsection_name,
                } => {
                    section = name.to_ascii_lowercase();
                    if let Some(sub) = subsection_name {
                        section.push(b'.');
                        if sep.is_some_and(|s| s == ".") {
                            section.extend(sub.to_ascii_lowercase());
                        } else {
                            section.extend_from_slice(sub);
                        }
                    }
                }
                EventRef::SectionValueName(name) => {
                    let mut k = section.clone();
                    k.push(b'.');
                    k.extend(name.to_ascii_lowercase());
                    key = Some(k);
                    separator = false;
                    parts.clear();
                }
                EventRef::KeyValueSeparator => separator = true,
                EventRef::Value(v) => {
                    if let Some(k) = key.take() {
                        let value = separator.then(|| normalize(v));
                        done(k, value, line)?;
                    }
                }
                EventRef::ValueNotDone(v) => parts.extend_from_slice(v),
                EventRef::ValueDone(v) => {
                    parts.extend_from_slice(v);
                    if let Some(k) = key.take() {
                        done(k, Some(normalize(&parts)), line)?;
                    }
                    parts.clear();
                }
                EventRef::Newline(n) => {
                    line += n.iter().filter(|&&b| b == b'\n').count();
                }
                EventRef::Comment { .. } | EventRef::Whitespace(_) => {}
            }
        }
        Ok(())
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

fn normalize(raw: &[u8]) -> Vec<u8> {
    gix_config::value::normalize(bstr::BStr::new(raw)).to_vec()
}

/// Byte offset where 1-based line `line` starts (the end if it does not).
fn line_start(bytes: &[u8], line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(line - 2)
        .map_or(bytes.len(), |(i, _)| i + 1)
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
        assert_eq!(line_start(b"a\nb\nc", 1), 0);
        assert_eq!(line_start(b"a\nb\nc", 3), 4);
        assert_eq!(line_start(b"a\n", 5), 2);
    }
}
