//! The config entries `trace2.configParams` selects, which the first
//! [`cmd_name`](super::cmd_name) reports as `def_param` events: the type of
//! one entry, the type of a program's own lister, and the default lister
//! that reads git's config files.

use std::path::Path;

use super::config::{ConfigFiles, Trace2Config};

/// A function that lists the config entries `trace2.configParams` asks for,
/// given to [`Builder::config_params`](super::Builder::config_params). It runs
/// once, at the first [`cmd_name`](super::cmd_name).
///
/// ```
/// use flightrec::trace2::config::Trace2Config;
/// use flightrec::trace2::{ConfigParam, ConfigParamsFn};
/// fn none(_: &Trace2Config) -> Vec<ConfigParam> {
///     Vec::new()
/// }
/// let lister: ConfigParamsFn = none;
/// let cfg = Trace2Config::load_from("MYAPP_TRACE2", |_| None);
/// assert!(lister(&cfg).is_empty());
/// ```
pub type ConfigParamsFn = fn(&Trace2Config) -> Vec<ConfigParam>;

/// One `trace2.configParams` match, for [`Builder::config_params`](super::Builder::config_params).
///
/// The first [`cmd_name`](super::cmd_name) reports each one as a `def_param` event (values
/// redacted), when `<PREFIX>_CONFIG_PARAMS` (or `trace2.configParams`) is set.
///
/// ```
/// use flightrec::trace2::config::Trace2Config;
/// use flightrec::trace2::{Builder, ConfigParam};
///
/// fn params(_cfg: &Trace2Config) -> Vec<ConfigParam> {
///     vec![ConfigParam {
///         scope: "local".into(),
///         key: "core.bare".into(),
///         value: Some("false".into()),
///     }]
/// }
///
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace); // the normal target, in a file
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// std::env::set_var("MYAPP_TRACE2_CONFIG_PARAMS", "core.*");
/// let t2 = Builder::new().prefix("MYAPP_TRACE2").config_params(params).init();
/// flightrec::trace2::cmd_name("status");
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("cmd_name status (status)\ndef_param scope:local core.bare=false\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigParam {
    /// `system`, `global`, `local`, `worktree`, `command`, ...
    pub scope: String,
    /// The key in git's canonical form (`core.quotepath`).
    pub key: String,
    /// The value; `None` for a key written without `=`.
    pub value: Option<String>,
}

/// The config entries `trace2.configParams` selects, read as git reads them:
/// the system and global config files and, when `git_dir` is given, that
/// repository's local (and worktree) config, in git's order, duplicates
/// included. A config error yields no entries (the settings loader has
/// already reported it). Without a [`Builder::config_params`](super::Builder::config_params)
/// function the runtime uses this with no repository.
///
/// ```
/// use flightrec::trace2::config::Trace2Config;
/// use flightrec::trace2::{config_params_from_files, ConfigParam};
///
/// let home = tempfile::tempdir()?;
/// std::fs::write(home.path().join(".gitconfig"), "[core]\n\tquotepath = false\n[user]\n\tname = A\n")?;
/// let git_dir = home.path().join("repo.git");
/// std::fs::create_dir(&git_dir)?;
/// std::fs::write(git_dir.join("config"), "[core]\n\tbare\n")?;
/// std::env::set_var("HOME", home.path());
/// std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
/// std::env::remove_var("GIT_CONFIG_GLOBAL");
/// std::env::remove_var("XDG_CONFIG_HOME");
/// std::env::set_var("MYAPP_TRACE2_CONFIG_PARAMS", "core.*");
///
/// let cfg = Trace2Config::load("MYAPP_TRACE2");
/// let param = |scope: &str, key: &str, value: Option<&str>| ConfigParam {
///     scope: scope.into(),
///     key: key.into(),
///     value: value.map(Into::into),
/// };
/// let global = param("global", "core.quotepath", Some("false"));
/// assert_eq!(config_params_from_files(&cfg, None), [global.clone()]);
/// assert_eq!(
///     config_params_from_files(&cfg, Some(&git_dir)),
///     [global, param("local", "core.bare", None)]
/// );
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn config_params_from_files(cfg: &Trace2Config, git_dir: Option<&Path>) -> Vec<ConfigParam> {
    let files = ConfigFiles::from_process_env();
    match cfg.def_params(&files, git_dir) {
        Ok(entries) => entries
            .into_iter()
            .map(|e| ConfigParam {
                scope: e.scope.as_str().to_string(),
                key: e.key_str().into_owned(),
                value: e.value.map(|v| String::from_utf8_lossy(&v).into_owned()),
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}
