//! `configParams` patterns: which config entries `def_param` reports.

use super::reader::ConfigEntry;

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
    gix_glob::wildmatch(
        bstr::BStr::new(pattern.as_bytes()),
        bstr::BStr::new(key),
        gix_glob::wildmatch::Mode::IGNORE_CASE,
    )
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
