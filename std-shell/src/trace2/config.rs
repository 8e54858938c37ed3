//! Trace2 settings as git reads them: `GIT_TRACE2*` environment variables (or a
//! program's own prefix) over the `trace2.*` keys of the system and global git
//! config files.
//!
//! Interface shared by the runtime ([`super`]) and the target opener
//! ([`super::target`]). The loader reads only the environment for now; git
//! config files are read by the full implementation.

use std::ffi::OsString;

use flightrec_core::trace2::Target;

/// One target's setting: the destination value as written (env or config) and
/// its brief flag.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetSetting {
    /// The destination value (`1`, `2`..`9`, an absolute path, `af_unix:...`),
    /// `None` when unset or empty.
    pub value: Option<OsString>,
    /// The target's `*_BRIEF` / `trace2.*Brief` setting.
    pub brief: bool,
}

/// Every Trace2 setting of a process.
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
    /// `GIT_TRACE2_REDACT` (environment only; default on).
    pub redact: bool,
    /// `GIT_TRACE2_PARENT_SID` (environment only).
    pub parent_sid: Option<OsString>,
    /// `GIT_TRACE2_PARENT_NAME` (environment only).
    pub parent_name: Option<OsString>,
}

impl Trace2Config {
    /// The settings of this process for `prefix` (`"GIT_TRACE2"` for git's names).
    pub fn load(prefix: &str) -> Self {
        Self::load_from(prefix, |name| std::env::var_os(name))
    }

    /// The settings read through `env` (a lookup of environment variables), so
    /// tests need not touch the process environment.
    pub fn load_from(prefix: &str, env: impl Fn(&str) -> Option<OsString>) -> Self {
        let get = |suffix: &str| env(&format!("{prefix}{suffix}")).filter(|v| !v.is_empty());
        let brief = |suffix: &str| {
            get(suffix)
                .and_then(|v| parse_maybe_bool(&v.to_string_lossy()))
                .unwrap_or(false)
        };
        let list = |suffix: &str| -> Vec<String> {
            get(suffix)
                .map(|v| {
                    v.to_string_lossy()
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let atoi = |suffix: &str| get(suffix).map(|v| atoi(&v.to_string_lossy())).unwrap_or(0);
        let nesting = atoi("_EVENT_NESTING");
        Trace2Config {
            prefix: prefix.to_string(),
            normal: TargetSetting {
                value: get(""),
                brief: brief("_BRIEF"),
            },
            perf: TargetSetting {
                value: get("_PERF"),
                brief: brief("_PERF_BRIEF"),
            },
            event: TargetSetting {
                value: get("_EVENT"),
                brief: brief("_EVENT_BRIEF"),
            },
            event_nesting: if nesting > 0 { nesting as u32 } else { 2 },
            config_params: list("_CONFIG_PARAMS"),
            env_vars: list("_ENV_VARS"),
            dst_debug: atoi("_DST_DEBUG") > 0,
            max_files: atoi("_MAX_FILES").max(0) as u32,
            redact: env(&format!("{prefix}_REDACT"))
                .map(|v| parse_maybe_bool(&v.to_string_lossy()).unwrap_or(true))
                .unwrap_or(true),
            parent_sid: env(&format!("{prefix}_PARENT_SID")).filter(|v| !v.is_empty()),
            parent_name: env(&format!("{prefix}_PARENT_NAME")).filter(|v| !v.is_empty()),
        }
    }

    /// The setting of one target.
    pub fn setting(&self, kind: Target) -> &TargetSetting {
        match kind {
            Target::Normal => &self.normal,
            Target::Perf => &self.perf,
            Target::Event => &self.event,
        }
    }

    /// The environment variable that names a target in warnings
    /// (`GIT_TRACE2`, `GIT_TRACE2_PERF`, `GIT_TRACE2_EVENT` for git's prefix).
    pub fn var_name(&self, kind: Target) -> String {
        match kind {
            Target::Normal => self.prefix.clone(),
            Target::Perf => format!("{}_PERF", self.prefix),
            Target::Event => format!("{}_EVENT", self.prefix),
        }
    }

    /// Whether any of the three targets has a destination set.
    pub fn any_target(&self) -> bool {
        self.normal.value.is_some() || self.perf.value.is_some() || self.event.value.is_some()
    }
}

/// git's `git_parse_maybe_bool`: `Some(bool)`, or `None` when unparsable.
pub fn parse_maybe_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        other => other.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// C's `atoi`: leading whitespace, optional sign, digits; 0 when none.
pub fn atoi(v: &str) -> i64 {
    let t = v.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg {
        -n
    } else {
        n
    }
}
