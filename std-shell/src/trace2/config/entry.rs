//! What reading config files gives: entries with their scope, file and line.
//! A leaf: the reader, the files and the errors import it, it imports none of
//! them.

use std::path::PathBuf;

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

/// Where a config entry comes from; the names are git's `def_param` scopes.
///
/// ```
/// use flightrec::trace2::config::{ConfigFiles, Scope};
///
/// let dir = tempfile::tempdir().unwrap();
/// let (system, global) = (dir.path().join("system"), dir.path().join("global"));
/// std::fs::write(&system, "[core]\n\tpager = less\n").unwrap();
/// std::fs::write(&global, "[user]\n\tname = U\n").unwrap();
/// std::fs::write(dir.path().join("config"), "[core]\n\tbare = true\n").unwrap();
/// let files = ConfigFiles { system: Some(system), global: vec![global], home: None };
///
/// let scopes: Vec<&str> = files
///     .entries(Some(dir.path()))
///     .unwrap()
///     .iter()
///     .map(|e| e.scope.as_str())
///     .collect();
/// assert_eq!(scopes, ["system", "global", "local"]);
/// assert_eq!(Scope::Worktree.as_str(), "worktree");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The system file (`/etc/gitconfig` or `$GIT_CONFIG_SYSTEM`).
    System,
    /// `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig` (or `$GIT_CONFIG_GLOBAL`).
    Global,
    /// A repository's `config`.
    Local,
    /// A worktree's `config.worktree` (with `extensions.worktreeConfig`).
    Worktree,
    /// Command-line values (`git -c`); flightrec reads none itself.
    Command,
}

impl Scope {
    /// git's name of the scope.
    ///
    /// ```
    /// assert_eq!(flightrec::trace2::config::Scope::Global.as_str(), "global");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::System => "system",
            Scope::Global => "global",
            Scope::Local => "local",
            Scope::Worktree => "worktree",
            Scope::Command => "command",
        }
    }
}
