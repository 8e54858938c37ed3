//! The event functions of the public API. Each one is a no-op costing one
//! relaxed atomic load when Trace2 is off, and takes its `file:line` from the
//! caller (`#[track_caller]`).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;

use flightrec_core::trace2::{redact_url, Args, Event, Msg};

use super::runtime::{runtime, Loc, Runtime};
use super::tls::with_ctx;

/// A repository id for the events that carry one (`def_repo`, regions and
/// data). Git's `the_repository` before `def_repo` is id 0.
///
/// [`def_repo`] hands out ids 1, 2, ... while Trace2 is on, and
/// [`Repo::THE_REPOSITORY`] while it is off (every call is a no-op then).
///
/// ```
/// use flightrec::trace2::Repo;
/// assert_eq!(Repo::THE_REPOSITORY.id(), 0);
/// assert_eq!(Repo::new(2).id(), 2);
/// assert_eq!(Repo::new(0), Repo::THE_REPOSITORY);
/// // No target is set in this example's environment: Trace2 is off.
/// let repo = flightrec::trace2::def_repo(std::path::Path::new("/src/app"));
/// assert_eq!(repo, Repo::THE_REPOSITORY);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repo(i32);

impl Repo {
    /// Git's `the_repository` before it is defined: id 0 (`r0`). Example on
    /// [`Repo`].
    pub const THE_REPOSITORY: Repo = Repo(0);

    /// A repository with an explicit id. Example on [`Repo`].
    pub const fn new(id: i32) -> Self {
        Repo(id)
    }

    /// The id. Example on [`Repo`].
    pub const fn id(self) -> i32 {
        self.0
    }
}

/// One `trace2.configParams` match, for [`Builder::config_params`](super::Builder::config_params).
///
/// The first [`cmd_name`] reports each one as a `def_param` event (values
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
pub fn config_params_from_files(
    cfg: &super::config::Trace2Config,
    git_dir: Option<&std::path::Path>,
) -> Vec<ConfigParam> {
    let files = super::config::ConfigFiles::from_process_env();
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

/// Git's redaction of an argument (when `GIT_TRACE2_REDACT` is on).
pub(crate) fn redact<'a>(rt: &Runtime, arg: &'a [u8]) -> Cow<'a, [u8]> {
    if !rt.cfg.redact {
        return Cow::Borrowed(arg);
    }
    match redact_url(arg) {
        Some(r) => {
            let mut v = vec![0; r.len()];
            match r.write_into(&mut v) {
                Ok(n) => v.truncate(n),
                Err(_) => return Cow::Borrowed(arg),
            }
            Cow::Owned(v)
        }
        None => Cow::Borrowed(arg),
    }
}

/// Redacts every argument.
pub(crate) fn redact_all<'a, I: IntoIterator<Item = &'a [u8]>>(
    rt: &Runtime,
    args: I,
) -> Vec<Cow<'a, [u8]>> {
    args.into_iter().map(|a| redact(rt, a)).collect()
}

/// Borrowed views of owned arguments, for [`Args::Bytes`].
pub(crate) fn views<'a>(args: &'a [Cow<'a, [u8]>]) -> Vec<&'a [u8]> {
    args.iter().map(|a| a.as_ref()).collect()
}

/// Emits `ev` on this thread at the current nesting.
#[inline]
pub(crate) fn emit(rt: &Runtime, loc: Loc<'_>, ev: &Event<'_>) {
    with_ctx(rt, |c| c.emit(rt, loc, ev));
}

/// Waits until every line traced so far is written to its destinations.
///
/// In the default [`WriteMode::Direct`](super::target::WriteMode::Direct)
/// every line is written before its call returns and this does nothing. In
/// [`WriteMode::Background`](super::target::WriteMode::Background) it waits
/// for the writer thread: call it before handing the trace file to someone
/// else, or before starting a child process without [`child`](super::child)
/// (which flushes after `child_start` itself). Exit paths flush on their own.
///
/// ```
/// use flightrec::trace2::target::WriteMode;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace` (brief).
/// let t2 = flightrec::trace2::Builder::new()
///     .prefix("MYAPP_TRACE2")
///     .write_mode(WriteMode::background())
///     .init();
/// flightrec::trace2::cmd_name("report");
/// flightrec::trace2::flush();
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.ends_with("\ncmd_name report (report)\n"));
/// drop(t2);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn flush() {
    if let Some(rt) = runtime() {
        rt.flush();
    }
}

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
/// as git does. Children started through [`child`](super::child) get the value
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

/// The `def_param`s of `configParams` (through the registered lister) and of
/// `envVars`, in that order.
fn emit_param_lists(rt: &Runtime) {
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

/// `def_repo`: defines a repository by its worktree and returns its id
/// (1, 2, ... in order), for [`region_in`](super::region_in) and
/// [`data_in`]. While Trace2 is off it returns [`Repo::THE_REPOSITORY`].
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let repo = flightrec::trace2::def_repo(std::path::Path::new("/src/app"));
/// let other = flightrec::trace2::def_repo(std::path::Path::new("/src/lib"));
/// assert_eq!((repo.id(), other.id()), (1, 2));
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// assert!(events.iter().any(|e| e["event"] == "def_repo" && e["repo"] == 1 && e["worktree"] == "/src/app"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn def_repo(worktree: &std::path::Path) -> Repo {
    let Some(rt) = runtime() else { return Repo(0) };
    let id = rt.shared().repo_ids.next_id() as i32;
    let loc = Loc::caller();
    with_ctx(rt, |c| {
        let n = c.state.nesting();
        c.emit_at(
            rt,
            loc,
            n,
            Some(id),
            rt.now(),
            &Event::DefRepo {
                worktree: worktree.as_os_str().as_bytes(),
            },
        )
    });
    Repo(id)
}

/// `data`: a key and a string value in a category.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::data("index", "entries", "1024");
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let data = events.iter().find(|e| e["event"] == "data").unwrap();
/// assert!(data["category"] == "index" && data["key"] == "entries" && data["value"] == "1024");
/// assert!(data.get("repo").is_none()); // see `data_in`
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
#[inline]
pub fn data(category: &str, key: &str, value: &str) {
    let Some(rt) = runtime() else { return };
    data_raw(rt, Loc::caller(), None, category, key, value.as_bytes());
}

/// [`data`] for repository `repo`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let repo = flightrec::trace2::def_repo(std::path::Path::new("/src/app"));
/// flightrec::trace2::data_in(repo, "index", "version", "2");
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let data = events.iter().find(|e| e["event"] == "data").unwrap();
/// assert!(data["repo"] == 1 && data["key"] == "version" && data["value"] == "2");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn data_in(repo: Repo, category: &str, key: &str, value: &str) {
    let Some(rt) = runtime() else { return };
    data_raw(
        rt,
        Loc::caller(),
        Some(repo.0),
        category,
        key,
        value.as_bytes(),
    );
}

/// [`data`] with a formatted value (what [`data!`](crate::data) calls).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::data_fmt("index", "entries", format_args!("{}", 1024));
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// assert!(events.iter().any(|e| e["event"] == "data" && e["key"] == "entries" && e["value"] == "1024"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn data_fmt(category: &str, key: &str, value: fmt::Arguments<'_>) {
    let Some(rt) = runtime() else { return };
    let loc = Loc::caller();
    with_ctx(rt, |c| {
        let mut scratch = std::mem::take(&mut c.scratch);
        scratch.clear();
        let _ = scratch.write_fmt(value);
        data_event(rt, c, loc, None, category, key, &scratch);
        c.scratch = scratch;
    });
}

fn data_raw(
    rt: &Runtime,
    loc: Loc<'_>,
    repo: Option<i32>,
    category: &str,
    key: &str,
    value: &[u8],
) {
    with_ctx(rt, |c| data_event(rt, c, loc, repo, category, key, value));
}

fn data_event(
    rt: &Runtime,
    c: &mut super::tls::ThreadCtx,
    loc: Loc<'_>,
    repo: Option<i32>,
    category: &str,
    key: &str,
    value: &[u8],
) {
    data_like_event(rt, c, loc, repo, |t_rel| Event::Data {
        t_rel,
        category: category.as_bytes(),
        key: key.as_bytes(),
        value,
    });
}

/// Emits a `data` or `data_json` event: both carry `t_rel` since the innermost
/// open region and are written at the thread's current nesting.
fn data_like_event<'e>(
    rt: &Runtime,
    c: &mut super::tls::ThreadCtx,
    loc: Loc<'_>,
    repo: Option<i32>,
    event: impl FnOnce(u64) -> Event<'e>,
) {
    let now = rt.now();
    let t_rel = c.state.data_t_rel(now);
    let n = c.state.nesting();
    c.emit_at(rt, loc, n, repo, now, &event(t_rel));
}

/// `data_json`: a key with a JSON value, given as compact JSON text and
/// written verbatim.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::data_json("traverse_trees", "statistics", r#"{"depth_max":1}"#);
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let data = events.iter().find(|e| e["event"] == "data_json").unwrap();
/// assert_eq!(data["value"], serde_json::json!({ "depth_max": 1 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn data_json(category: &str, key: &str, json: &str) {
    let Some(rt) = runtime() else { return };
    let loc = Loc::caller();
    with_ctx(rt, |c| {
        data_like_event(rt, c, loc, None, |t_rel| Event::DataJson {
            t_rel,
            category: category.as_bytes(),
            key: key.as_bytes(),
            value: json.as_bytes(),
        })
    });
}

/// `printf`: a free-form message (what [`printf!`](crate::printf) calls).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::printf(format_args!("refreshed {} entries", 12));
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\nrefreshed 12 entries\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn printf(msg: fmt::Arguments<'_>) {
    let Some(rt) = runtime() else { return };
    emit(
        rt,
        Loc::caller(),
        &Event::Printf {
            msg: Some(Msg::Fmt(msg)),
        },
    );
}

/// `error`: an error message with the format it came from (the event
/// target's `fmt`; what [`error!`](crate::error) calls).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::error_fmt("unknown option `{}'", format_args!("unknown option `{}'", "--bogus"));
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let error = events.iter().find(|e| e["event"] == "error").unwrap();
/// assert_eq!(error["msg"], "unknown option `--bogus'");
/// assert_eq!(error["fmt"], "unknown option `{}'");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn error_fmt(fmt: &str, msg: fmt::Arguments<'_>) {
    let Some(rt) = runtime() else { return };
    error_event(rt, Loc::caller(), fmt.as_bytes(), Msg::Fmt(msg));
}

/// `error` with a plain message (its format is the message itself).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::error("not a repository");
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\nerror not a repository\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn error(msg: &str) {
    let Some(rt) = runtime() else { return };
    error_event(
        rt,
        Loc::caller(),
        msg.as_bytes(),
        Msg::Bytes(msg.as_bytes()),
    );
}

pub(crate) fn error_event(rt: &Runtime, loc: Loc<'_>, fmt: &[u8], msg: Msg<'_>) {
    emit(rt, loc, &Event::Error { msg, fmt });
}
