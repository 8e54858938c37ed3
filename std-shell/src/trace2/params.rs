//! Parameters: `def_param` events, given by the program ([`def_param`],
//! [`def_param_scoped`]) or listed by the settings at the first
//! [`cmd_name`](super::cmd_name) (`trace2.configParams`, `trace2.envVars`).
//! Values are redacted.

use std::os::unix::ffi::OsStrExt;

use flightrec_core::trace2::Event;

use super::config_param::config_params_from_files;
use super::emit::emit;
use super::redact::redact;
use super::runtime::{runtime, Loc, Runtime};

/// `def_param` with scope `unknown` (git's `trace2_def_param` without config
/// context); the value is redacted.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::def_param("remote.origin.url", "https://me:secret@example.com/r");
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains(
///     "\ndef_param scope:unknown remote.origin.url=https://me:<REDACTED>@example.com/r\n"
/// ));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn def_param(param: &str, value: &str) {
    def_param_scoped("unknown", param, Some(value));
}

/// `def_param` with an explicit scope (`system`, `global`, `local`,
/// `worktree`, `command`, ...); `None` is a config key without a value.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::def_param_scoped("global", "core.quotepath", Some("false"));
/// flightrec::trace2::def_param_scoped("local", "core.bare", None);
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains(
///     "\ndef_param scope:global core.quotepath=false\ndef_param scope:local core.bare\n"
/// ));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn def_param_scoped(scope: &str, param: &str, value: Option<&str>) {
    let Some(rt) = runtime() else { return };
    def_param_event(
        rt,
        Loc::caller(),
        scope.as_bytes(),
        param.as_bytes(),
        value.map(str::as_bytes),
    );
}

/// The `def_param`s of `configParams` (through the registered lister) and of
/// `envVars`, in that order.
pub(crate) fn emit_param_lists(rt: &Runtime) {
    let loc = Loc::caller();
    if !rt.cfg.config_params.is_empty() {
        let params = match rt.config_params {
            Some(list) => list(&rt.cfg),
            None => config_params_from_files(&rt.cfg, None),
        };
        for p in params {
            def_param_event(
                rt,
                loc,
                p.scope.as_bytes(),
                p.key.as_bytes(),
                p.value.as_deref().map(str::as_bytes),
            );
        }
    }
    for name in &rt.cfg.env_vars {
        if let Some(v) = std::env::var_os(name).filter(|v| !v.is_empty()) {
            def_param_event(rt, loc, b"command", name.as_bytes(), Some(v.as_bytes()));
        }
    }
}

pub(crate) fn def_param_event(
    rt: &Runtime,
    loc: Loc<'_>,
    scope: &[u8],
    param: &[u8],
    value: Option<&[u8]>,
) {
    let value = value.map(|v| redact(rt, v));
    emit(
        rt,
        loc,
        &Event::DefParam {
            scope,
            param,
            value: value.as_deref(),
        },
    );
}
