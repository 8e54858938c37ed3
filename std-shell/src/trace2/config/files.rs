//! Which git config files a process reads, located as git locates them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::entry::{ConfigEntry, Scope};
use super::error::ConfigError;
use super::reader::{Reader, Visit};
use super::value::parse_maybe_bool;

/// The system file git reads (`$(prefix)/etc/gitconfig` with git's usual
/// prefix `/usr`, which distributions build with `sysconfdir=/etc`).
///
/// ```
/// use flightrec::trace2::config::{ConfigFiles, SYSTEM_CONFIG};
/// use std::path::Path;
///
/// let files = ConfigFiles::from_env(|_: &str| None);
/// assert_eq!(files.system.as_deref(), Some(Path::new(SYSTEM_CONFIG)));
/// ```
pub const SYSTEM_CONFIG: &str = "/etc/gitconfig";

/// The system and global config files of a process, in reading order.
///
/// ```
/// use flightrec::trace2::config::ConfigFiles;
/// use std::ffi::OsString;
/// use std::path::PathBuf;
/// let env = |name: &str| match name {
///     "HOME" => Some(OsString::from("/home/u")),
///     _ => None,
/// };
/// let files = ConfigFiles::from_env(env);
/// assert_eq!(files.system, Some(PathBuf::from("/etc/gitconfig")));
/// assert_eq!(
///     files.global,
///     [PathBuf::from("/home/u/.config/git/config"), PathBuf::from("/home/u/.gitconfig")]
/// );
///
/// // git's overrides: no system file, one global file.
/// let env = |name: &str| match name {
///     "HOME" => Some(OsString::from("/home/u")),
///     "GIT_CONFIG_NOSYSTEM" => Some(OsString::from("yes")),
///     "GIT_CONFIG_GLOBAL" => Some(OsString::from("/etc/ci.gitconfig")),
///     _ => None,
/// };
/// let files = ConfigFiles::from_env(env);
/// assert_eq!(files.system, None);
/// assert_eq!(files.global, [PathBuf::from("/etc/ci.gitconfig")]);
///
/// // No files at all: settings from the environment only.
/// let none = ConfigFiles::none();
/// assert!(none.system.is_none() && none.global.is_empty());
/// assert!(none.entries(None).unwrap().is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigFiles {
    /// The system file, `None` with `GIT_CONFIG_NOSYSTEM`.
    pub system: Option<PathBuf>,
    /// The global files in reading order: the XDG file then `~/.gitconfig`,
    /// or only `$GIT_CONFIG_GLOBAL`.
    pub global: Vec<PathBuf>,
    /// `$HOME`, for `~/` in include paths.
    pub home: Option<PathBuf>,
}

impl ConfigFiles {
    /// No files: settings come from the environment only. Example on
    /// [`ConfigFiles`].
    pub fn none() -> Self {
        ConfigFiles::default()
    }

    /// The files git 2.47 reads for "very early config", located through the
    /// environment lookup `env`: `GIT_CONFIG_NOSYSTEM` (a git boolean),
    /// `GIT_CONFIG_SYSTEM`, `GIT_CONFIG_GLOBAL`, `XDG_CONFIG_HOME`, `HOME`.
    /// Example on [`ConfigFiles`].
    ///
    /// Without the `git-config` feature no file is located (the result is
    /// [`ConfigFiles::none`]), so only the environment configures Trace2.
    pub fn from_env(env: impl Fn(&str) -> Option<OsString>) -> Self {
        if !cfg!(feature = "git-config") {
            return Self::none();
        }
        let nosystem = env("GIT_CONFIG_NOSYSTEM")
            .and_then(|v| parse_maybe_bool(&v.to_string_lossy()))
            .unwrap_or(false);
        let system = (!nosystem).then(|| {
            env("GIT_CONFIG_SYSTEM")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(SYSTEM_CONFIG))
        });
        let home = env("HOME").map(PathBuf::from);
        let global = match env("GIT_CONFIG_GLOBAL") {
            Some(g) => vec![PathBuf::from(g)],
            None => {
                let xdg = match env("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
                    Some(x) => Some(join(Path::new(&x), "git/config")),
                    None => home.as_deref().map(|h| join(h, ".config/git/config")),
                };
                let user = home.as_deref().map(|h| join(h, ".gitconfig"));
                xdg.into_iter().chain(user).collect()
            }
        };
        ConfigFiles {
            system,
            global,
            home,
        }
    }

    /// The files of the process environment.
    ///
    /// ```
    /// use flightrec::trace2::config::ConfigFiles;
    /// use std::path::PathBuf;
    ///
    /// std::env::remove_var("GIT_CONFIG_NOSYSTEM");
    /// std::env::set_var("GIT_CONFIG_SYSTEM", "/opt/git/etc/gitconfig");
    /// std::env::set_var("GIT_CONFIG_GLOBAL", "/srv/ci/gitconfig");
    /// let files = ConfigFiles::from_process_env();
    /// assert_eq!(files.system, Some(PathBuf::from("/opt/git/etc/gitconfig")));
    /// assert_eq!(files.global, [PathBuf::from("/srv/ci/gitconfig")]);
    /// ```
    pub fn from_process_env() -> Self {
        Self::from_env(|name| std::env::var_os(name))
    }

    /// Visits every entry of the system then the global files (with their
    /// includes) in git's reading order; `visit` may stop the reading with an
    /// error.
    ///
    /// An included file is read where its `include.path` stands:
    ///
    /// ```
    /// use flightrec::trace2::config::{ConfigError, ConfigFiles};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("extra"), "[trace2]\n\tperfTarget = 2\n").unwrap();
    /// let global = dir.path().join("gitconfig");
    /// std::fs::write(&global, "[trace2]\n\tperfTarget = 1\n[include]\n\tpath = extra\n\
    ///                          [trace2]\n\tperfTarget = 3\n").unwrap();
    /// let files = ConfigFiles { global: vec![global], ..ConfigFiles::none() };
    ///
    /// let mut seen = Vec::new();
    /// files
    ///     .visit(&mut |e| {
    ///         seen.push(format!("{}={}", e.key_str(), String::from_utf8_lossy(e.value.as_deref().unwrap())));
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// assert_eq!(
    ///     seen,
    ///     ["trace2.perftarget=1", "include.path=extra", "trace2.perftarget=2", "trace2.perftarget=3"]
    /// );
    ///
    /// // The visitor's error stops the reading and is returned.
    /// let mut count = 0;
    /// let stop = files.visit(&mut |e| {
    ///     count += 1;
    ///     Err(ConfigError::BadLine { cause: None, line: e.line, path: e.path.clone() })
    /// });
    /// assert!(matches!(stop, Err(ConfigError::BadLine { line: 2, .. })));
    /// assert_eq!(count, 1);
    /// ```
    pub fn visit(
        &self,
        visit: &mut dyn FnMut(&ConfigEntry) -> Result<(), ConfigError>,
    ) -> Result<(), ConfigError> {
        self.visit_with_repo(None, visit)
    }

    fn visit_with_repo(
        &self,
        repo: Option<&Path>,
        visit: &mut Visit<'_>,
    ) -> Result<(), ConfigError> {
        let reader = Reader {
            home: self.home.as_deref(),
        };
        if let Some(system) = &self.system {
            reader.read_file(system, Scope::System, 0, visit)?;
        }
        for global in &self.global {
            reader.read_file(global, Scope::Global, 0, visit)?;
        }
        if let Some(git_dir) = repo {
            let common = common_dir(git_dir);
            let local = common.join("config");
            let mut worktree_config = false;
            reader.read_file(&local, Scope::Local, 0, &mut |e| {
                if e.key == b"extensions.worktreeconfig" {
                    worktree_config = match &e.value {
                        None => true,
                        Some(v) => parse_maybe_bool(&String::from_utf8_lossy(v)).unwrap_or(false),
                    };
                }
                visit(e)
            })?;
            if worktree_config {
                reader.read_file(&git_dir.join("config.worktree"), Scope::Worktree, 0, visit)?;
            }
        }
        Ok(())
    }

    /// Every entry `def_param` may report, in git's reading order with
    /// duplicates: system, global, then — when `git_dir` names a repository's
    /// git directory — its local `config` (from the common directory of a
    /// linked worktree) and, with `extensions.worktreeConfig`, the worktree's
    /// `config.worktree`. Keys without a value are included (`value: None`).
    ///
    /// ```
    /// use flightrec::trace2::config::{ConfigFiles, Scope};
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("config"), "[core]\n\tbare = false\n").unwrap();
    /// let files = ConfigFiles::none();
    /// let all = files.entries(Some(dir.path())).unwrap();
    /// assert_eq!(all[0].scope, Scope::Local);
    /// assert_eq!(all[0].key, b"core.bare");
    /// assert_eq!(all[0].value.as_deref(), Some(&b"false"[..]));
    /// ```
    pub fn entries(&self, git_dir: Option<&Path>) -> Result<Vec<ConfigEntry>, ConfigError> {
        let mut all = Vec::new();
        self.visit_with_repo(git_dir, &mut |e| {
            all.push(e.clone());
            Ok(())
        })?;
        Ok(all)
    }
}

/// The common directory of a git directory: the `commondir` file of a linked
/// worktree's git directory names it (relative to the git directory).
fn common_dir(git_dir: &Path) -> PathBuf {
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(s) => {
            let c = Path::new(s.trim_end_matches(['\n', '\r']));
            if c.is_absolute() {
                c.to_path_buf()
            } else {
                git_dir.join(c)
            }
        }
        Err(_) => git_dir.to_path_buf(),
    }
}

/// `dir` + `/` + `rest` without normalising, as git's `mkpathdup("%s/%s")`.
fn join(dir: &Path, rest: &str) -> PathBuf {
    let mut p = dir.as_os_str().to_os_string();
    p.push("/");
    p.push(rest);
    PathBuf::from(p)
}
