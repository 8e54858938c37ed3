//! Trace2 settings as git reads them: `GIT_TRACE2*` environment variables (or a
//! program's own prefix) over the `trace2.*` keys of the system and global git
//! config files.
//!
//! * [`Trace2Config`]: the settings of a process. [`Trace2Config::load`]
//!   never fails (a config file git would die on disables Trace2 after
//!   printing git's messages once); [`Trace2Config::try_load_from`] and
//!   [`Trace2Config::load_with`] return the [`ConfigError`] instead.
//! * [`ConfigFiles`]: which files are read (system, XDG, `~/.gitconfig`,
//!   `GIT_CONFIG_NOSYSTEM`/`GIT_CONFIG_SYSTEM`/`GIT_CONFIG_GLOBAL`), with
//!   `include.path` followed where it stands. Repository-local config and
//!   `-c` are not read for settings, as in git.
//! * For `def_param`: [`ConfigFiles::entries`] lists every entry with its
//!   [`Scope`] and canonical key (local and worktree files too when given a
//!   git directory), and [`def_param_entries`] / [`wildmatch_key`] apply the
//!   `configParams` patterns with git's wildmatch.
//!
//! Precedence (git's `tr2_sysenv_get`): an environment variable that is set
//! and non-empty wins; otherwise the last config value read; an empty value
//! counts as unset.
//!
//! A program that picks its own prefix (`MYAPP_TRACE2` gives `MYAPP_TRACE2`,
//! `MYAPP_TRACE2_PERF`, ...) reads no `trace2.*` keys: git's config belongs
//! to git. It can name a config section of its own with
//! [`Trace2Config::load_with`] (section `myapp-trace2` gives
//! `myapp-trace2.eventTarget`, ...).
//!
//! ```
//! use flightrec::trace2::config::{ConfigFiles, Trace2Config};
//! use std::ffi::OsString;
//!
//! let home = tempfile::tempdir().unwrap();
//! std::fs::write(
//!     home.path().join(".gitconfig"),
//!     "[trace2]\n\teventTarget = /tmp/t2-event\n\teventBrief = yes\n",
//! )
//! .unwrap();
//! let env = |name: &str| match name {
//!     "HOME" => Some(OsString::from(home.path())),
//!     "GIT_CONFIG_NOSYSTEM" => Some(OsString::from("1")),
//!     "GIT_TRACE2_EVENT" => Some(OsString::new()), // empty: does not override
//!     _ => None,
//! };
//! let cfg = Trace2Config::try_load_from("GIT_TRACE2", env).unwrap();
//! assert_eq!(cfg.event.value.as_deref(), Some("/tmp/t2-event".as_ref()));
//! assert!(cfg.event.brief);
//! ```

mod entry;
mod error;
mod files;
mod params;
mod reader;
mod value;

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::sync::atomic::{AtomicBool, Ordering};

use flightrec_core::trace2::Target;

pub use entry::{ConfigEntry, Scope, MAX_INCLUDE_DEPTH};
pub use error::ConfigError;
pub use files::{ConfigFiles, SYSTEM_CONFIG};
pub use params::{def_param_entries, matches_any, wildmatch_key};
pub use value::{atoi, is_git_space, parse_maybe_bool};

/// One target's setting: the destination value as written (env or config) and
/// its brief flag.
///
/// ```
/// use flightrec::trace2::config::{ConfigFiles, TargetSetting, Trace2Config};
/// use std::ffi::OsString;
///
/// // Unset by default: no destination, not brief.
/// assert_eq!(TargetSetting::default(), TargetSetting { value: None, brief: false });
///
/// let env = |name: &str| match name {
///     "GIT_TRACE2_EVENT" => Some(OsString::from("/tmp/t2")),
///     "GIT_TRACE2_EVENT_BRIEF" => Some(OsString::from("on")),
///     _ => None,
/// };
/// let cfg = Trace2Config::load_with("GIT_TRACE2", None, env, &ConfigFiles::none()).unwrap();
/// assert_eq!(
///     cfg.event,
///     TargetSetting { value: Some("/tmp/t2".into()), brief: true }
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetSetting {
    /// The destination value (`1`, `2`..`9`, an absolute path, `af_unix:...`),
    /// `None` when unset or empty.
    pub value: Option<OsString>,
    /// The target's `*_BRIEF` / `trace2.*Brief` setting.
    pub brief: bool,
}

/// Every Trace2 setting of a process.
///
/// Loaded as git loads it: a set, non-empty environment variable wins over the
/// last `trace2.*` value of the config files; an empty one counts as unset.
///
/// ```
/// use flightrec::core::trace2::Target;
/// use flightrec::trace2::config::Trace2Config;
/// use std::ffi::OsString;
///
/// let home = tempfile::tempdir().unwrap();
/// std::fs::write(
///     home.path().join(".gitconfig"),
///     "[trace2]\n\tperfTarget = /tmp/perf-from-config\n\tnormalTarget = 2\n\
///      \tmaxFiles = 50\n\tenvVars = HOME, LANG\n",
/// )
/// .unwrap();
/// let env = |name: &str| match name {
///     "HOME" => Some(OsString::from(home.path())),
///     "GIT_CONFIG_NOSYSTEM" => Some(OsString::from("true")),
///     "GIT_TRACE2_PERF" => Some(OsString::from("1")), // the environment wins
///     "GIT_TRACE2" => Some(OsString::new()),         // empty: the config's 2 stands
///     _ => None,
/// };
/// let cfg = Trace2Config::try_load_from("GIT_TRACE2", env).unwrap();
///
/// assert_eq!(cfg.setting(Target::Perf).value.as_deref(), Some("1".as_ref()));
/// assert_eq!(cfg.setting(Target::Normal).value.as_deref(), Some("2".as_ref()));
/// assert_eq!(cfg.setting(Target::Event).value, None);
/// assert!(cfg.any_target());
/// assert_eq!((cfg.max_files, cfg.event_nesting), (50, 2));
/// assert_eq!(cfg.env_vars, ["HOME", "LANG"]);
/// assert!(cfg.redact);
/// assert_eq!(cfg.var_name(Target::Perf), "GIT_TRACE2_PERF");
///
/// // Nothing set anywhere: every target off.
/// let quiet = Trace2Config::try_load_from("GIT_TRACE2", |name: &str| match name {
///     "HOME" => Some(OsString::from(home.path().join("nowhere"))),
///     "GIT_CONFIG_NOSYSTEM" => Some(OsString::from("1")),
///     _ => None,
/// })
/// .unwrap();
/// assert!(!quiet.any_target());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace2Config {
    /// The environment prefix (`GIT_TRACE2` for git; a program may choose its own).
    pub prefix: String,
    /// `GIT_TRACE2` / `trace2.normalTarget` and `GIT_TRACE2_BRIEF`.
    pub normal: TargetSetting,
    /// `GIT_TRACE2_PERF` / `trace2.perfTarget` and `GIT_TRACE2_PERF_BRIEF`.
    pub perf: TargetSetting,
    /// `GIT_TRACE2_EVENT` / `trace2.eventTarget` and `GIT_TRACE2_EVENT_BRIEF`.
    pub event: TargetSetting,
    /// `GIT_TRACE2_EVENT_NESTING` (default 2).
    pub event_nesting: u32,
    /// `GIT_TRACE2_CONFIG_PARAMS`: wildmatch patterns of config keys to report.
    pub config_params: Vec<String>,
    /// `GIT_TRACE2_ENV_VARS`: environment variable names to report.
    pub env_vars: Vec<String>,
    /// `GIT_TRACE2_DST_DEBUG` > 0: warn when a destination fails.
    pub dst_debug: bool,
    /// `GIT_TRACE2_MAX_FILES` (0: no limit).
    pub max_files: u32,
    /// `GIT_TRACE2_REDACT` (environment only; default on, empty is off; a value
    /// that is no boolean is [`ConfigError::BadEnvBool`] once a target is on).
    pub redact: bool,
    /// `GIT_TRACE2_PARENT_SID` (environment only).
    pub parent_sid: Option<OsString>,
    /// `GIT_TRACE2_PARENT_NAME` (environment only).
    pub parent_name: Option<OsString>,
}

/// The eleven settings that have a config key, in git's table order:
/// environment suffix and lowercase key name.
const SETTINGS: [(&str, &str); 11] = [
    ("", "normaltarget"),
    ("_BRIEF", "normalbrief"),
    ("_PERF", "perftarget"),
    ("_PERF_BRIEF", "perfbrief"),
    ("_EVENT", "eventtarget"),
    ("_EVENT_BRIEF", "eventbrief"),
    ("_EVENT_NESTING", "eventnesting"),
    ("_CONFIG_PARAMS", "configparams"),
    ("_ENV_VARS", "envvars"),
    ("_DST_DEBUG", "destinationdebug"),
    ("_MAX_FILES", "maxfiles"),
];

/// git's prefix, whose settings also come from the `trace2` config section.
///
/// ```
/// use flightrec::core::trace2::Target;
/// use flightrec::trace2::config::{default_section, ConfigFiles, Trace2Config, GIT_PREFIX};
///
/// assert_eq!(default_section(GIT_PREFIX), Some("trace2"));
/// let cfg = Trace2Config::load_with(GIT_PREFIX, None, |_: &str| None, &ConfigFiles::none()).unwrap();
/// assert_eq!(cfg.var_name(Target::Event), "GIT_TRACE2_EVENT");
/// ```
pub const GIT_PREFIX: &str = "GIT_TRACE2";

/// The config section read for `prefix`: `trace2` for [`GIT_PREFIX`], none
/// for any other prefix.
///
/// ```
/// use flightrec::trace2::config::default_section;
/// assert_eq!(default_section("GIT_TRACE2"), Some("trace2"));
/// assert_eq!(default_section("MYAPP_TRACE2"), None);
/// ```
pub fn default_section(prefix: &str) -> Option<&'static str> {
    (prefix == GIT_PREFIX).then_some("trace2")
}

static CONFIG_ERROR_PRINTED: AtomicBool = AtomicBool::new(false);

impl Trace2Config {
    /// The settings of this process for `prefix` (`"GIT_TRACE2"` for git's
    /// names), from the environment and the config files git reads.
    ///
    /// A config file git would die on (see [`ConfigError`]) does not stop
    /// the program: git's messages are printed once on stderr and the result
    /// has every target off, so Trace2 stays disabled.
    ///
    /// ```
    /// use flightrec::trace2::config::Trace2Config;
    ///
    /// // A prefix of the program's own reads the environment only.
    /// std::env::set_var("MYAPP_TRACE2_PERF", "2");
    /// std::env::set_var("MYAPP_TRACE2_MAX_FILES", "7");
    /// let cfg = Trace2Config::load("MYAPP_TRACE2");
    /// assert_eq!(cfg.perf.value.as_deref(), Some("2".as_ref()));
    /// assert_eq!(cfg.max_files, 7);
    /// assert_eq!(cfg.normal.value, None);
    /// ```
    pub fn load(prefix: &str) -> Self {
        Self::load_from(prefix, |name| std::env::var_os(name))
    }

    /// As [`Self::load`], with environment variables read through `env` (the
    /// config files are located through it too: `HOME`, `XDG_CONFIG_HOME`,
    /// `GIT_CONFIG_*`), so tests need not touch the process environment.
    ///
    /// ```
    /// use flightrec::trace2::config::Trace2Config;
    /// use std::ffi::OsString;
    ///
    /// // `eventTarget` without `=`: git dies with "missing value".
    /// let home = tempfile::tempdir().unwrap();
    /// std::fs::write(home.path().join(".gitconfig"), "[trace2]\n\teventTarget\n").unwrap();
    /// let env = |name: &str| match name {
    ///     "HOME" => Some(OsString::from(home.path())),
    ///     "GIT_CONFIG_NOSYSTEM" => Some(OsString::from("1")),
    ///     "GIT_TRACE2_PERF" => Some(OsString::from("2")),
    ///     "GIT_TRACE2_MAX_FILES" => Some(OsString::from("3")),
    ///     _ => None,
    /// };
    /// assert!(Trace2Config::try_load_from("GIT_TRACE2", &env).is_err());
    ///
    /// // load_from prints git's messages once and turns every target off,
    /// // keeping the other environment settings.
    /// let cfg = Trace2Config::load_from("GIT_TRACE2", &env);
    /// assert!(!cfg.any_target());
    /// assert_eq!(cfg.max_files, 3);
    /// ```
    pub fn load_from(prefix: &str, env: impl Fn(&str) -> Option<OsString>) -> Self {
        match Self::try_load_from(prefix, &env) {
            Ok(cfg) => cfg,
            Err(e) => {
                if !CONFIG_ERROR_PRINTED.swap(true, Ordering::Relaxed) {
                    // Not eprintln!: a closed stderr must not panic the host.
                    let mut err = std::io::stderr().lock();
                    for line in e.git_messages() {
                        let _ = writeln!(err, "{line}");
                    }
                }
                Self::load_with(prefix, None, env, &ConfigFiles::none())
                    .map(|c| c.disabled())
                    .unwrap_or_else(|_| Self::off(prefix))
            }
        }
    }

    /// The settings for `prefix` from `env` and the files it locates, or the
    /// config error git would die on. Example on [`Trace2Config`] (and on
    /// [`ConfigError`] for the error).
    pub fn try_load_from(
        prefix: &str,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, ConfigError> {
        let files = ConfigFiles::from_env(&env);
        Self::load_with(prefix, default_section(prefix), env, &files)
    }

    /// The settings for `prefix`, with `section.<key>` entries of `files` under
    /// the environment (`section` `None`: environment only).
    ///
    /// ```
    /// use flightrec::trace2::config::{ConfigFiles, Trace2Config};
    /// use std::ffi::OsString;
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = dir.path().join("app.config");
    /// std::fs::write(&file, "[myapp-trace2]\n\tperfTarget = 1\n\tmaxFiles = 20\n").unwrap();
    /// let files = ConfigFiles { global: vec![file], ..ConfigFiles::none() };
    /// let env = |name: &str| (name == "MYAPP_TRACE2").then(|| OsString::from("2"));
    /// let cfg = Trace2Config::load_with("MYAPP_TRACE2", Some("myapp-trace2"), env, &files).unwrap();
    /// assert_eq!(cfg.normal.value.as_deref(), Some("2".as_ref()));
    /// assert_eq!(cfg.perf.value.as_deref(), Some("1".as_ref()));
    /// assert_eq!(cfg.max_files, 20);
    /// ```
    pub fn load_with(
        prefix: &str,
        section: Option<&str>,
        env: impl Fn(&str) -> Option<OsString>,
        files: &ConfigFiles,
    ) -> Result<Self, ConfigError> {
        let mut from_config: [Option<Vec<u8>>; 11] = Default::default();
        if let Some(section) = section {
            let section = section.to_ascii_lowercase();
            files.visit(&mut |entry| {
                let Some(name) = entry
                    .key
                    .strip_prefix(section.as_bytes())
                    .and_then(|k| k.strip_prefix(b"."))
                else {
                    return Ok(());
                };
                if let Some(i) = SETTINGS.iter().position(|(_, k)| k.as_bytes() == name) {
                    match &entry.value {
                        Some(v) => from_config[i] = Some(v.clone()),
                        None => return Err(ConfigError::missing_value(entry)),
                    }
                }
                Ok(())
            })?;
        }
        let value = |i: usize| -> Option<OsString> {
            env(&format!("{prefix}{}", SETTINGS[i].0))
                .filter(|v| !v.is_empty())
                .or_else(|| from_config[i].clone().map(OsString::from_vec))
                .filter(|v| !v.is_empty())
        };
        let text = |i: usize| value(i).map(|v| v.to_string_lossy().into_owned());
        let brief = |i: usize| text(i).and_then(|v| parse_maybe_bool(&v)).unwrap_or(false);
        let number = |i: usize| text(i).map(|v| c_int_atoi(&v)).unwrap_or(0);
        let list = |i: usize| -> Vec<String> {
            text(i)
                .map(|v| {
                    v.split(',')
                        // git's strbuf_trim: its isspace is space, TAB, LF and CR
                        // only (a pattern keeps a trailing VT or FF).
                        .map(|s| s.trim_matches([' ', '\t', '\n', '\r']))
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let nesting = number(6);
        let only_env = |suffix: &str| env(&format!("{prefix}{suffix}"));
        // git_env_bool(GIT_TRACE2_REDACT, 1): unset is on, empty is off, and a
        // value that is no boolean is fatal, but git reads it only once a target
        // is on (an off or unusable value never gets that far).
        let redact = match only_env("_REDACT") {
            None => true,
            Some(v) => match parse_maybe_bool(&v.to_string_lossy()) {
                Some(on) => on,
                None if (0..3).any(|i| target_wanted(value(2 * i).as_deref())) => {
                    return Err(ConfigError::BadEnvBool {
                        name: format!("{prefix}_REDACT"),
                        value: v.to_string_lossy().into_owned(),
                    });
                }
                None => true,
            },
        };
        Ok(Trace2Config {
            prefix: prefix.to_string(),
            normal: TargetSetting {
                value: value(0),
                brief: brief(1),
            },
            perf: TargetSetting {
                value: value(2),
                brief: brief(3),
            },
            event: TargetSetting {
                value: value(4),
                brief: brief(5),
            },
            event_nesting: if nesting > 0 {
                u32::try_from(nesting).unwrap_or(u32::MAX)
            } else {
                2
            },
            config_params: list(7),
            env_vars: list(8),
            dst_debug: number(9) > 0,
            max_files: u32::try_from(number(10).max(0)).unwrap_or(u32::MAX),
            redact,
            parent_sid: only_env("_PARENT_SID").filter(|v| !v.is_empty()),
            parent_name: only_env("_PARENT_NAME").filter(|v| !v.is_empty()),
        })
    }

    /// Every setting unset.
    fn off(prefix: &str) -> Self {
        Trace2Config {
            prefix: prefix.to_string(),
            normal: TargetSetting::default(),
            perf: TargetSetting::default(),
            event: TargetSetting::default(),
            event_nesting: 2,
            config_params: Vec::new(),
            env_vars: Vec::new(),
            dst_debug: false,
            max_files: 0,
            redact: true,
            parent_sid: None,
            parent_name: None,
        }
    }

    /// These settings with every target off.
    fn disabled(mut self) -> Self {
        self.normal.value = None;
        self.perf.value = None;
        self.event.value = None;
        self
    }

    /// The setting of one target. Example on [`Trace2Config`].
    pub fn setting(&self, kind: Target) -> &TargetSetting {
        match kind {
            Target::Normal => &self.normal,
            Target::Perf => &self.perf,
            Target::Event => &self.event,
        }
    }

    /// The environment variable that names a target in warnings
    /// (`GIT_TRACE2`, `GIT_TRACE2_PERF`, `GIT_TRACE2_EVENT` for git's prefix).
    /// Example on [`Trace2Config`].
    pub fn var_name(&self, kind: Target) -> String {
        match kind {
            Target::Normal => self.prefix.clone(),
            Target::Perf => format!("{}_PERF", self.prefix),
            Target::Event => format!("{}_EVENT", self.prefix),
        }
    }

    /// The config entries that `def_param` reports for these settings'
    /// `configParams` patterns, in git's reading order with duplicates:
    /// system and global files of `files`, then the repository's local (and
    /// worktree) config when `git_dir` is given. Empty without patterns.
    ///
    /// ```
    /// use flightrec::trace2::config::{ConfigFiles, Trace2Config};
    /// use std::ffi::OsString;
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("config"), "[core]\n\tabbrev = 12\n[foo]\n\tx = 1\n").unwrap();
    /// let env = |name: &str| {
    ///     (name == "GIT_TRACE2_CONFIG_PARAMS").then(|| OsString::from("core.*"))
    /// };
    /// let cfg = Trace2Config::load_with("GIT_TRACE2", None, env, &ConfigFiles::none()).unwrap();
    /// let params = cfg.def_params(&ConfigFiles::none(), Some(dir.path())).unwrap();
    /// assert_eq!(params.len(), 1);
    /// assert_eq!((params[0].scope.as_str(), &params[0].key[..]), ("local", &b"core.abbrev"[..]));
    /// ```
    pub fn def_params(
        &self,
        files: &ConfigFiles,
        git_dir: Option<&std::path::Path>,
    ) -> Result<Vec<ConfigEntry>, ConfigError> {
        if self.config_params.is_empty() {
            return Ok(Vec::new());
        }
        let all = files.entries(git_dir)?;
        Ok(def_param_entries(&all, &self.config_params)
            .cloned()
            .collect())
    }

    /// Whether any of the three targets has a destination set. Example on
    /// [`Trace2Config`].
    pub fn any_target(&self) -> bool {
        self.normal.value.is_some() || self.perf.value.is_some() || self.event.value.is_some()
    }
}

/// Whether git would turn a target with this value on (and so go on to read
/// the rest of its settings): not off, and not a value it only warns about.
fn target_wanted(value: Option<&std::ffi::OsStr>) -> bool {
    use crate::trace2::target::TargetValue;
    value.is_some_and(|v| {
        !matches!(
            TargetValue::parse(v),
            TargetValue::Off | TargetValue::Unknown
        )
    })
}

/// git's `atoi()` of a Trace2 number (`MAX_FILES`, `EVENT_NESTING`,
/// `DST_DEBUG`): glibc's `atoi` is `(int) strtol(v, NULL, 10)`, so the value
/// saturates at the `long` range and then keeps its low 32 bits, as a C
/// `int`: `4294967301` is 5, `4294967297` is 1, `99999999999999999999` is -1.
fn c_int_atoi(v: &str) -> i64 {
    let n = atoi(v);
    // `atoi` saturates a negative overflow at -i64::MAX; strtol at LONG_MIN.
    let long = if n == -i64::MAX && strtol_overflows(v) {
        i64::MIN
    } else {
        n
    };
    // The truncation to a C `int` is the point here.
    i64::from(long as i32)
}

/// Whether the digits of `v` (after blanks and a sign) exceed `i64::MAX`.
fn strtol_overflows(v: &str) -> bool {
    let t = v.trim_start().trim_start_matches(['-', '+']);
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<i64>().is_err() && !digits.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_booleans() {
        for t in ["true", "Yes", "ON", "1", "2", "1k", "-1", "0x10", " 7"] {
            assert_eq!(parse_maybe_bool(t), Some(true), "{t:?}");
        }
        for f in ["false", "No", "off", "", "0", "0k", "00", "0x0"] {
            assert_eq!(parse_maybe_bool(f), Some(false), "{f:?}");
        }
        for junk in ["junk", "1x", "k", "0x", "99999999999", "4g", "1 "] {
            assert_eq!(parse_maybe_bool(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn numbers_are_c_ints_like_gits_atoi() {
        for (text, want) in [
            ("4294967301", 5),
            ("4294967297", 1),
            ("2147483648", -2147483648),
            ("99999999999999999999", -1),
            ("-99999999999999999999", 0),
            ("-9223372036854775807", 1),
            (" 12x", 12),
            ("junk", 0),
        ] {
            assert_eq!(c_int_atoi(text), want, "{text:?}");
        }
        let cfg = Trace2Config::load_from("GIT_TRACE2", |name| match name {
            "GIT_TRACE2_MAX_FILES" => Some("4294967301".into()),
            "GIT_TRACE2_EVENT_NESTING" => Some("4294967297".into()),
            "GIT_TRACE2_DST_DEBUG" => Some("4294967296".into()),
            "GIT_CONFIG_NOSYSTEM" => Some("1".into()),
            _ => None,
        });
        assert_eq!(
            (cfg.max_files, cfg.event_nesting, cfg.dst_debug),
            (5, 1, false)
        );
    }
}
