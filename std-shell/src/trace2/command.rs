//! The command: its line (`start`), name and hierarchy (`cmd_name`), mode,
//! executable path and aliases.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use flightrec_core::trace2::{Args, Event};

use super::emit::emit;
use super::params::emit_param_lists;
use super::redact::{redact_all, views};
use super::runtime::{runtime, Loc, Runtime};

/// `start`: the command line, redacted (git emits it once at startup; a second
/// call is what git's test tool uses to check redaction).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::cmd_start(["app", "clone", "https://user:pwd@example.com/"]);
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// // Arguments are shell-quoted as git quotes them.
/// assert!(normal.contains("\nstart app clone 'https://user:<REDACTED>@example.com/'\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn cmd_start<I, S>(argv: I)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let Some(rt) = runtime() else { return };
    let owned: Vec<S> = argv.into_iter().collect();
    start_event(
        rt,
        Loc::caller(),
        owned.iter().map(|a| a.as_ref().as_bytes()),
    );
}

pub(crate) fn start_event<'a>(rt: &Runtime, loc: Loc<'_>, argv: impl Iterator<Item = &'a [u8]>) {
    let red = redact_all(rt, argv);
    let v = views(&red);
    emit(
        rt,
        loc,
        &Event::Start {
            argv: Args::Bytes(&v),
        },
    );
}

/// `cmd_name`: the command's name. Its hierarchy is the inherited
/// `<PREFIX>_PARENT_NAME` (or the previous hierarchy of this process) + `/` +
/// `name`, and `<PREFIX>_PARENT_NAME` is set to it for child processes. The
/// first call also reports the `def_param`s of `trace2.configParams` and
/// `trace2.envVars`.
///
/// Setting the environment variable is not synchronised with C code reading
/// the environment on other threads: call it early, before starting threads,
/// as git does. Children started through [`child`](super::child()) get the value
/// explicitly in any case.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::cmd_name("remote");
/// flightrec::trace2::cmd_name("add"); // a sub-command: the hierarchy grows
/// assert_eq!(std::env::var("MYAPP_TRACE2_PARENT_NAME").as_deref(), Ok("remote/add"));
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\ncmd_name remote (remote)\ncmd_name add (remote/add)\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn cmd_name(name: &str) {
    let Some(rt) = runtime() else { return };
    let loc = Loc::caller();
    let (hierarchy, first) = {
        let mut sh = rt.shared();
        let parent = sh.hierarchy.clone().or_else(|| {
            rt.cfg
                .parent_name
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
        });
        let h = match parent {
            Some(p) if !p.is_empty() => format!("{p}/{name}"),
            _ => name.to_string(),
        };
        sh.hierarchy = Some(h.clone());
        let first = !sh.params_emitted;
        sh.params_emitted = true;
        (h, first)
    };
    std::env::set_var(format!("{}_PARENT_NAME", rt.cfg.prefix), &hierarchy);
    emit(
        rt,
        loc,
        &Event::CmdName {
            name: name.as_bytes(),
            hierarchy: hierarchy.as_bytes(),
        },
    );
    if first {
        emit_param_lists(rt);
    }
}

/// `cmd_mode`: a sub-mode of the command.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::cmd_mode("branch");
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\ncmd_mode branch\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn cmd_mode(mode: &str) {
    let Some(rt) = runtime() else { return };
    emit(
        rt,
        Loc::caller(),
        &Event::CmdMode {
            mode: mode.as_bytes(),
        },
    );
}

/// `cmd_path`: the full path of the executable.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::cmd_path(&std::env::current_exe()?);
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// let exe = std::env::current_exe()?;
/// assert!(normal.contains(&format!("\ncmd_path {}\n", exe.display())));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn cmd_path(path: &std::path::Path) {
    let Some(rt) = runtime() else { return };
    emit(
        rt,
        Loc::caller(),
        &Event::CmdPath {
            path: path.as_os_str().as_bytes(),
        },
    );
}

/// `alias`: an alias and its expansion (never redacted, like git).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::alias("st", &["status", "--short"]);
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\nalias st -> status --short\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn alias<S: AsRef<str>>(alias: &str, argv: &[S]) {
    let Some(rt) = runtime() else { return };
    let v: Vec<&[u8]> = argv.iter().map(|a| a.as_ref().as_bytes()).collect();
    emit(
        rt,
        Loc::caller(),
        &Event::Alias {
            alias: alias.as_bytes(),
            argv: Args::Bytes(&v),
        },
    );
}
