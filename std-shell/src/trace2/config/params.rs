//! `configParams` patterns: which config entries `def_param` reports.

use super::entry::ConfigEntry;
use super::value::is_git_space;

/// git's `wildmatch(pattern, key, WM_CASEFOLD)` without `WM_PATHNAME`: `*`
/// also matches `.` (and `/`), `?`, `[...]` and `\` escapes work, and case
/// is ignored.
///
/// ```
/// use flightrec::trace2::config::wildmatch_key;
/// assert!(wildmatch_key("core.*", b"core.repositoryformatversion"));
/// assert!(wildmatch_key("remote.*.url", b"remote.origin.url"));
/// assert!(wildmatch_key("*", b"a.b.c"));
/// assert!(wildmatch_key("Foo.BAR", b"foo.bar"));
/// assert!(!wildmatch_key("core.*", b"corex.a"));
/// ```
pub fn wildmatch_key(pattern: &str, key: &[u8]) -> bool {
    wildmatch(pattern.as_bytes(), key) == Wild::Match
}

/// The outcome of git's `dowild`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wild {
    Match,
    NoMatch,
    /// The text ran out: no shorter suffix can match either.
    AbortAll,
}

/// git's `dowild(p, text, WM_CASEFOLD)` (wildmatch.c) without `WM_PATHNAME`:
/// `*` and `**` both match any run of bytes, `?` any byte, `[...]` a class
/// (`!` or `^` negates, ranges, `[:alpha:]`-style names), `\` quotes the next
/// byte; ASCII case is ignored.
fn wildmatch(pattern: &[u8], text: &[u8]) -> Wild {
    let (mut p, mut t) = (0, 0);
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    while p < pattern.len() && pattern[p] != 0 {
        let mut p_ch = pattern[p].to_ascii_lowercase();
        let t_ch = at(text, t).to_ascii_lowercase();
        if t_ch == 0 && p_ch != b'*' {
            return Wild::AbortAll;
        }
        match p_ch {
            b'?' => {}
            b'*' => {
                // Without WM_PATHNAME `**` is `*`, and `*` also matches `/`.
                while at(pattern, p + 1) == b'*' {
                    p += 1;
                }
                p += 1;
                if p >= pattern.len() {
                    return Wild::Match;
                }
                loop {
                    if at(text, t) == 0 {
                        return Wild::AbortAll;
                    }
                    // A literal after the star: skip to its next occurrence.
                    let next = pattern[p];
                    if !matches!(next, b'*' | b'?' | b'[' | b'\\') {
                        let want = next.to_ascii_lowercase();
                        while at(text, t) != 0 && at(text, t).to_ascii_lowercase() != want {
                            t += 1;
                        }
                        if at(text, t) == 0 {
                            return Wild::NoMatch;
                        }
                    }
                    match wildmatch(&pattern[p..], &text[t..]) {
                        Wild::NoMatch => {}
                        other => return other,
                    }
                    t += 1;
                }
            }
            b'[' => {
                p += 1;
                p_ch = at(pattern, p);
                let negated = p_ch == b'!' || p_ch == b'^';
                if negated {
                    p += 1;
                    p_ch = at(pattern, p);
                }
                let mut prev_ch = 0u8;
                let mut matched = false;
                loop {
                    if p_ch == 0 {
                        return Wild::AbortAll;
                    }
                    if p_ch == b'\\' {
                        p += 1;
                        p_ch = at(pattern, p);
                        if p_ch == 0 {
                            return Wild::AbortAll;
                        }
                        if t_ch == p_ch {
                            matched = true;
                        }
                    } else if p_ch == b'-'
                        && prev_ch != 0
                        && at(pattern, p + 1) != 0
                        && at(pattern, p + 1) != b']'
                    {
                        p += 1;
                        p_ch = at(pattern, p);
                        if p_ch == b'\\' {
                            p += 1;
                            p_ch = at(pattern, p);
                            if p_ch == 0 {
                                return Wild::AbortAll;
                            }
                        }
                        let upper = t_ch.to_ascii_uppercase();
                        if (prev_ch..=p_ch).contains(&t_ch)
                            || (t_ch.is_ascii_lowercase() && (prev_ch..=p_ch).contains(&upper))
                        {
                            matched = true;
                        }
                        p_ch = 0; // so that prev_ch becomes 0: no range from a range's end
                    } else if p_ch == b'[' && at(pattern, p + 1) == b':' {
                        // A class name up to ":]"; without one it is a literal '['.
                        let start = p + 2;
                        let mut end = start;
                        while at(pattern, end) != 0 && at(pattern, end) != b']' {
                            end += 1;
                        }
                        if at(pattern, end) == 0 {
                            return Wild::AbortAll;
                        }
                        if end - start == 0 || at(pattern, end - 1) != b':' {
                            // Not a class: "[:" taken literally.
                            if t_ch == b'[' {
                                matched = true;
                            }
                        } else {
                            match class_matches(&pattern[start..end - 1], t_ch) {
                                Some(true) => matched = true,
                                Some(false) => {}
                                None => return Wild::AbortAll, // malformed [:class:]
                            }
                            p = end;
                            p_ch = 0;
                        }
                    } else if t_ch == p_ch {
                        matched = true;
                    }
                    prev_ch = p_ch;
                    p += 1;
                    p_ch = at(pattern, p);
                    if p_ch == b']' {
                        break;
                    }
                }
                if matched == negated {
                    return Wild::NoMatch;
                }
            }
            _ => {
                if p_ch == b'\\' {
                    p += 1;
                    // git compares the quoted byte as written, not case-folded.
                    p_ch = at(pattern, p);
                }
                if t_ch != p_ch {
                    return Wild::NoMatch;
                }
            }
        }
        p += 1;
        t += 1;
    }
    if at(text, t) != 0 {
        Wild::NoMatch
    } else {
        Wild::Match
    }
}

/// Whether `c` (already lowercased) is in git's `[:name:]` class (with
/// `WM_CASEFOLD`, `upper` also takes lowercase letters); `None` for a name
/// git does not know.
fn class_matches(name: &[u8], c: u8) -> Option<bool> {
    Some(match name {
        b"alnum" => c.is_ascii_alphanumeric(),
        b"alpha" => c.is_ascii_alphabetic(),
        b"blank" => c == b' ' || c == b'\t',
        b"cntrl" => c.is_ascii_control(),
        b"digit" => c.is_ascii_digit(),
        b"graph" => c.is_ascii_graphic(),
        b"lower" => c.is_ascii_lowercase(),
        b"print" => c.is_ascii_graphic() || c == b' ',
        b"punct" => c.is_ascii_punctuation(),
        b"space" => is_git_space(c),
        b"upper" => c.is_ascii_uppercase() || c.is_ascii_lowercase(),
        b"xdigit" => c.is_ascii_hexdigit(),
        _ => return None,
    })
}

/// Whether any of `patterns` (a `Trace2Config::config_params` list)
/// matches `key`.
///
/// ```
/// use flightrec::trace2::config::matches_any;
/// let patterns = ["core.*".to_string(), "remote.*.url".to_string()];
/// assert!(matches_any(&patterns, b"core.abbrev"));
/// assert!(matches_any(&patterns, b"remote.origin.url"));
/// assert!(!matches_any(&patterns, b"user.email"));
/// assert!(!matches_any(&[], b"core.abbrev"));
/// ```
pub fn matches_any(patterns: &[String], key: &[u8]) -> bool {
    patterns.iter().any(|p| wildmatch_key(p, key))
}

/// The entries of `entries` that `def_param` reports for `patterns`, in
/// order, duplicates included.
///
/// ```
/// use flightrec::trace2::config::{def_param_entries, ConfigEntry, Scope};
/// let e = |key: &str| ConfigEntry {
///     scope: Scope::Global,
///     key: key.as_bytes().to_vec(),
///     value: Some(b"1".to_vec()),
///     path: "/home/u/.gitconfig".into(),
///     line: 1,
/// };
/// let all = [e("foo.a"), e("bar.b"), e("foo.c")];
/// let patterns = ["foo.*".to_string()];
/// let shown: Vec<_> = def_param_entries(&all, &patterns).collect();
/// assert_eq!(shown.len(), 2);
/// assert_eq!(shown[1].key, b"foo.c");
/// ```
pub fn def_param_entries<'a>(
    entries: &'a [ConfigEntry],
    patterns: &'a [String],
) -> impl Iterator<Item = &'a ConfigEntry> + 'a {
    entries
        .iter()
        .filter(move |e| !patterns.is_empty() && matches_any(patterns, &e.key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_wildmatch_semantics() {
        // `*` crosses dots; brackets and `?` work; case folds both ways.
        assert!(wildmatch_key("t0212.*", b"t0212.abc"));
        assert!(wildmatch_key("*.url", b"remote.origin.url"));
        assert!(wildmatch_key("core.?bbrev", b"core.abbrev"));
        assert!(wildmatch_key("core.[a-c]bbrev", b"core.abbrev"));
        assert!(!wildmatch_key("core.[!a]bbrev", b"core.abbrev"));
        assert!(wildmatch_key("CORE.*", b"core.abbrev"));
        assert!(wildmatch_key("remote.*.URL", b"remote.Origin.url"));
        assert!(!wildmatch_key("core", b"core.abbrev"));
        assert!(!wildmatch_key("", b"core.abbrev"));
        assert!(wildmatch_key("a\\*b", b"a*b"));
        assert!(!wildmatch_key("a\\*b", b"axb"));
    }
}

#[cfg(test)]
mod wildmatch_tests {
    use super::wildmatch_key;

    /// Cases of git's t/t3070-wildmatch.sh, with the result of its case-folding
    /// non-pathname column (`imatch`), the mode `configParams` uses.
    #[test]
    fn t3070_imatch_cases() {
        let cases: &[(&str, &str, bool)] = &[
            ("foo", "foo", true),
            ("bar", "foo", false),
            ("", "", true),
            ("???", "foo", true),
            ("??", "foo", false),
            ("*", "foo", true),
            ("f*", "foo", true),
            ("*f", "foo", false),
            ("*foo*", "foo", true),
            ("*ob*a*r*", "foobar", true),
            ("*ab", "aaaaaaabababab", true),
            ("foo\\*", "foo*", true),
            ("foo\\*bar", "foobar", false),
            ("f\\\\oo", "f\\oo", true),
            ("*[al]?", "ball", true),
            ("[ten]", "ten", false),
            ("**[!te]", "ten", true),
            ("**[!ten]", "ten", false),
            ("t[a-g]n", "ten", true),
            ("t[!a-g]n", "ten", false),
            ("t[!a-g]n", "ton", true),
            ("t[^a-g]n", "ton", true),
            ("a[]]b", "a]b", true),
            ("a[]-]b", "a-b", true),
            ("a[]-]b", "a]b", true),
            ("a[]-]b", "aab", false),
            ("a[]a-]b", "aab", true),
            ("]", "]", true),
            ("foo*bar", "foo/baz/bar", true),
            ("*/foo", "foo", false),
            ("[A-Z]", "a", true),
            ("[a-z]", "A", true),
            ("[[:upper:]]", "a", true),
            ("[[:digit:]]", "5", true),
            ("[[:digit:]]", "x", false),
            ("Foo.BAR", "foo.bar", true),
            ("*.url", "remote.origin.URL", true),
        ];
        for &(pattern, text, want) in cases {
            assert_eq!(
                wildmatch_key(pattern, text.as_bytes()),
                want,
                "{pattern:?} vs {text:?}"
            );
        }
    }
}
