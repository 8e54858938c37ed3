//! The config errors git dies on while reading Trace2's settings, as a value.

use std::fmt;
use std::path::PathBuf;

use super::entry::{ConfigEntry, MAX_INCLUDE_DEPTH};

/// A config file git would refuse: git prints [`ConfigError::git_messages`]
/// and exits with 128. flightrec never exits the host program: the caller
/// prints the messages once and runs with Trace2 disabled (see
/// [`super::Trace2Config::load`]).
///
/// ```
/// use flightrec::trace2::config::{ConfigError, ConfigFiles, Trace2Config};
///
/// let dir = tempfile::tempdir().unwrap();
/// let load = |text: &str| {
///     let file = dir.path().join("gitconfig");
///     std::fs::write(&file, text).unwrap();
///     let files = ConfigFiles { global: vec![file], ..ConfigFiles::none() };
///     Trace2Config::load_with("GIT_TRACE2", Some("trace2"), |_: &str| None, &files).unwrap_err()
/// };
///
/// // A recognized key without `=`.
/// let e = load("[trace2]\n\tnormalTarget = 2\n\teventTarget\n");
/// assert!(matches!(e, ConfigError::BadLine { line: 3, .. }));
/// assert_eq!(e.git_messages()[0], "error: missing value for 'trace2.eventtarget'");
///
/// // A syntax error: git's single fatal line, also the Display text.
/// let e = load("[trace2\n");
/// assert!(matches!(e, ConfigError::BadLine { cause: None, line: 1, .. }));
/// assert!(e.to_string().starts_with("fatal: bad config line 1 in file "));
///
/// // A file that includes itself.
/// let e = load("[include]\n\tpath = gitconfig\n");
/// assert!(matches!(e, ConfigError::IncludeDepth { .. }));
/// assert!(e.to_string().contains("This might be due to circular includes."));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// A line git cannot accept: a syntax error (`cause: None`), or a
    /// recognized key (`trace2.eventTarget`, `include.path`) written without
    /// `=` (`cause: Some("missing value for 'trace2.eventtarget'")`).
    BadLine {
        /// The `error:` text git prints first, if any.
        cause: Option<String>,
        /// The line, 1-based.
        line: usize,
        /// The file, as git names it (`$HOME/.gitconfig`, an included path).
        path: PathBuf,
    },
    /// An environment variable git reads with `git_env_bool` holds no boolean
    /// (`GIT_TRACE2_REDACT=xyz`). git dies on it once a target is on.
    BadEnvBool {
        /// The variable, with the program's prefix (`GIT_TRACE2_REDACT`).
        name: String,
        /// Its value, as git prints it.
        value: String,
    },
    /// More than ten nested `include.path` levels (usually a cycle).
    IncludeDepth {
        /// The file that would be included.
        path: PathBuf,
        /// The file that includes it.
        from: PathBuf,
    },
}

impl ConfigError {
    pub(crate) fn missing_value(entry: &ConfigEntry) -> Self {
        ConfigError::BadLine {
            cause: Some(format!("missing value for '{}'", entry.key_str())),
            line: entry.line,
            path: entry.path.clone(),
        }
    }

    /// git's lines on stderr for this error, each with its `error: ` or
    /// `fatal: ` prefix and without the line end.
    ///
    /// ```
    /// use flightrec::trace2::config::ConfigError;
    /// let e = ConfigError::BadLine {
    ///     cause: Some("missing value for 'trace2.eventtarget'".into()),
    ///     line: 2,
    ///     path: "/home/u/.gitconfig".into(),
    /// };
    /// assert_eq!(
    ///     e.git_messages(),
    ///     [
    ///         "error: missing value for 'trace2.eventtarget'",
    ///         "fatal: bad config line 2 in file /home/u/.gitconfig",
    ///     ]
    /// );
    /// ```
    pub fn git_messages(&self) -> Vec<String> {
        match self {
            ConfigError::BadLine { cause, line, path } => cause
                .iter()
                .map(|c| format!("error: {c}"))
                .chain([format!(
                    "fatal: bad config line {line} in file {}",
                    path.display()
                )])
                .collect(),
            ConfigError::BadEnvBool { name, value } => vec![format!(
                "fatal: bad boolean environment value '{value}' for '{name}'"
            )],
            ConfigError::IncludeDepth { path, from } => vec![format!(
                "fatal: exceeded maximum include depth ({MAX_INCLUDE_DEPTH}) while including\n\t{}\nfrom\n\t{}\n\
                 This might be due to circular includes.",
                path.display(),
                from.display()
            )],
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.git_messages().join("\n"))
    }
}

impl std::error::Error for ConfigError {}
