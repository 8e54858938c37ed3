//! Child processes and `exec()`: `child_start`/`child_exit`/`child_ready` around
//! a [`std::process::Command`], and `exec`/`exec_result`.
//!
//! The helper passes this process's session id and command hierarchy to the
//! child explicitly (`<PREFIX>_PARENT_SID`, `<PREFIX>_PARENT_NAME` on the
//! `Command`), so a traced child nests under this process (depth + 1) even if
//! the process environment was changed since [`init`](super::init).

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::panic::Location;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::Ordering;

use flightrec_core::trace2::{Args, Event, Micros};

use super::emit::{emit, emit_in};
use super::redact::{redact_all, views};
use super::runtime::{runtime, Loc, Runtime};
use super::tls::with_ctx;

/// A child process about to be started, with the details `child_start`
/// reports. Made by [`child`].
///
/// ```
/// use std::process::Command;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let mut cmd = Command::new("sh");
/// cmd.args(["-c", "exit 0"]);
/// flightrec::trace2::child(&mut cmd).class("editor").use_shell(true).status()?;
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let start = events.iter().find(|e| e["event"] == "child_start").unwrap();
/// assert!(start["child_class"] == "editor" && start["use_shell"] == true);
/// assert_eq!(start["argv"], serde_json::json!(["sh", "-c", "exit 0"]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ChildSpec<'c> {
    cmd: &'c mut Command,
    class: Option<String>,
    hook: Option<String>,
    use_shell: bool,
    git: bool,
}

/// Prepares `cmd` as a traced child: its `child_start` shows its program and
/// arguments (redacted), class `?` unless set.
///
/// ```
/// use std::process::Command;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let mut cmd = Command::new("sh");
/// cmd.args(["-c", "exit 3"]);
/// let status = flightrec::trace2::child(&mut cmd).status()?;
/// assert_eq!(status.code(), Some(3));
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// // Arguments are shell-quoted as git quotes them.
/// assert!(normal.contains("\nchild_start[0] sh -c 'exit 3'\nchild_exit[0] pid:"));
/// let exit = normal.lines().find(|l| l.starts_with("child_exit[0]")).unwrap();
/// assert!(exit.contains(" code:3 elapsed:"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn child(cmd: &mut Command) -> ChildSpec<'_> {
    ChildSpec {
        cmd,
        class: None,
        hook: None,
        use_shell: false,
        git: false,
    }
}

impl ChildSpec<'_> {
    /// The child's class (`?` when not set): `pager`, `editor`, `transport/ssh`, ...
    /// Example on [`ChildSpec`].
    pub fn class(mut self, class: &str) -> Self {
        self.class = Some(class.to_string());
        self
    }

    /// The child is hook `name` (class `hook`).
    ///
    /// ```
    /// use std::process::Command;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
    /// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// let mut cmd = Command::new("true");
    /// flightrec::trace2::child(&mut cmd).hook("pre-commit").status()?;
    /// drop(t2);
    /// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
    ///     .lines()
    ///     .map(serde_json::from_str)
    ///     .collect::<Result<_, _>>()?;
    /// let start = events.iter().find(|e| e["event"] == "child_start").unwrap();
    /// assert!(start["child_class"] == "hook" && start["hook_name"] == "pre-commit");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hook(mut self, name: &str) -> Self {
        self.hook = Some(name.to_string());
        self
    }

    /// The child runs through a shell (`use_shell` in the event target).
    /// Example on [`ChildSpec`].
    pub fn use_shell(mut self, yes: bool) -> Self {
        self.use_shell = yes;
        self
    }

    /// The child is a git command: shown as `git <args>` (the program itself
    /// is not shown), as git shows its `git_cmd` children.
    ///
    /// ```
    /// use std::process::Command;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2", &trace);
    /// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
    /// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// let mut cmd = Command::new("/usr/libexec/git-core/git");
    /// cmd.args(["status", "--short"]);
    /// flightrec::trace2::child(&mut cmd).git_command(true).announce().exit(-1, 0);
    /// drop(t2);
    /// let normal = std::fs::read_to_string(&trace)?;
    /// assert!(normal.contains("\nchild_start[0] git status --short\n"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn git_command(mut self, yes: bool) -> Self {
        self.git = yes;
        self
    }

    /// Sets the inherited variables on the command and emits `child_start`,
    /// without starting anything; the returned record reports the end (for a
    /// child started some other way).
    ///
    /// ```
    /// use flightrec::trace2::ChildRecord;
    /// use std::process::Command;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2", &trace);
    /// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
    /// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// let mut cmd = Command::new("ssh");
    /// cmd.arg("example.com");
    /// let record: ChildRecord = flightrec::trace2::child(&mut cmd).class("transport/ssh").announce();
    /// assert_eq!(record.id(), 0); // ch0: the first child of this process
    /// // The command now carries the session id for the child to nest under.
    /// let sid = cmd.get_envs().find(|(k, _)| *k == "MYAPP_TRACE2_PARENT_SID");
    /// assert!(sid.is_some());
    /// record.exit(4242, 255);
    /// drop(t2);
    /// let normal = std::fs::read_to_string(&trace)?;
    /// assert!(normal.contains("\nchild_start[0] ssh example.com\nchild_exit[0] pid:4242 code:255 elapsed:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn announce(mut self) -> ChildRecord {
        self.announce_at(Location::caller())
    }

    fn announce_at(&mut self, loc: &'static Location<'static>) -> ChildRecord {
        let Some(rt) = runtime() else {
            return ChildRecord::inactive(loc);
        };
        set_inherited_env(rt, self.cmd);
        let id = rt.child_ids.fetch_add(1, Ordering::Relaxed);
        let program = self.cmd.get_program().as_bytes();
        let mut args: Vec<&[u8]> = Vec::new();
        if !self.git {
            args.push(program);
        }
        args.extend(self.cmd.get_args().map(OsStr::as_bytes));
        let red = redact_all(rt, args);
        let v = views(&red);
        let cd = self.cmd.get_current_dir().map(|d| d.as_os_str().as_bytes());
        let now = rt.now();
        emit(
            rt,
            Loc::from(loc),
            &Event::ChildStart {
                child_id: id,
                child_class: self.class.as_deref().map(str::as_bytes),
                hook_name: self.hook.as_deref().map(str::as_bytes),
                cd,
                use_shell: self.use_shell,
                is_git: self.git,
                argv: Args::Bytes(&v),
            },
        );
        ChildRecord {
            active: true,
            id,
            start: now,
            loc,
        }
    }

    /// Emits `child_start` and spawns the child. A failed spawn is reported
    /// as `child_exit` with `pid:-1 code:-1`, like git.
    ///
    /// ```
    /// use std::process::Command;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2", &trace);
    /// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
    /// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// let mut missing = Command::new("/nonexistent/editor");
    /// let err = flightrec::trace2::child(&mut missing).spawn().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    /// let mut child = flightrec::trace2::child(&mut Command::new("true")).spawn()?;
    /// assert!(child.wait()?.success());
    /// drop(t2);
    /// let normal = std::fs::read_to_string(&trace)?;
    /// assert!(normal.contains("\nchild_start[0] /nonexistent/editor\nchild_exit[0] pid:-1 code:-1 elapsed:"));
    /// assert!(normal.contains("\nchild_start[1] true\nchild_exit[1] pid:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn spawn(mut self) -> io::Result<TracedChild> {
        let record = self.announce_at(Location::caller());
        match self.cmd.spawn() {
            Ok(child) => Ok(TracedChild {
                child,
                record,
                exited: false,
            }),
            Err(e) => {
                record.exit(-1, -1);
                Err(e)
            }
        }
    }

    /// Spawns the child and waits for it (`child_start` ... `child_exit`).
    /// Example on [`child`].
    #[track_caller]
    pub fn status(self) -> io::Result<ExitStatus> {
        self.spawn()?.wait()
    }
}

/// Sets `<PREFIX>_PARENT_SID` and `<PREFIX>_PARENT_NAME` on `cmd`.
fn set_inherited_env(rt: &Runtime, cmd: &mut Command) {
    let prefix = &rt.cfg.prefix;
    cmd.env(format!("{prefix}_PARENT_SID"), &rt.sid.full);
    let hierarchy = rt.shared().hierarchy.clone();
    if let Some(h) = hierarchy {
        cmd.env(format!("{prefix}_PARENT_NAME"), h);
    }
}

/// A child announced by `child_start`; reports its end. Example on
/// [`ChildSpec::announce`].
#[derive(Debug)]
pub struct ChildRecord {
    active: bool,
    id: i64,
    start: Micros,
    loc: &'static Location<'static>,
}

impl ChildRecord {
    fn inactive(loc: &'static Location<'static>) -> Self {
        ChildRecord {
            active: false,
            id: -1,
            start: 0,
            loc,
        }
    }

    /// The child id (`ch<id>`), -1 when Trace2 is off. Example on
    /// [`ChildSpec::announce`].
    pub fn id(&self) -> i64 {
        self.id
    }

    /// `child_exit` with the child's pid and exit code. Example on
    /// [`ChildSpec::announce`].
    #[track_caller]
    pub fn exit(&self, pid: i64, code: i32) {
        self.end(Location::caller(), |t_rel| Event::ChildExit {
            child_id: self.id,
            pid,
            code,
            t_rel,
        });
    }

    /// `child_ready` for a background child: `ready`, `timeout` or `error`.
    ///
    /// ```
    /// use std::process::Command;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2", &trace);
    /// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
    /// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// let mut daemon = flightrec::trace2::child(&mut Command::new("sleep").arg("0.01")).spawn()?;
    /// let pid = i64::from(daemon.inner().id());
    /// daemon.record().ready(pid, "ready"); // the daemon answered; stop watching it
    /// drop(t2);
    /// daemon.inner().wait()?;
    /// let normal = std::fs::read_to_string(&trace)?;
    /// assert!(normal.contains(&format!("\nchild_ready[0] pid:{pid} ready:ready elapsed:")));
    /// assert!(!normal.contains("child_exit"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn ready(&self, pid: i64, ready: &str) {
        self.end(Location::caller(), |t_rel| Event::ChildReady {
            child_id: self.id,
            pid,
            ready: ready.as_bytes(),
            t_rel,
        });
    }

    fn end<'e>(&self, loc: &'static Location<'static>, ev: impl FnOnce(Micros) -> Event<'e>) {
        if !self.active {
            return;
        }
        let Some(rt) = runtime() else { return };
        let _ = self.loc;
        with_ctx(rt, |c| {
            let now = rt.now();
            let e = ev(now.saturating_sub(self.start));
            emit_in(rt, c, Loc::from(loc), &e);
        });
    }
}

/// A running traced child. [`wait`](Self::wait) reports `child_exit`.
///
/// ```
/// use flightrec::trace2::TracedChild;
/// use std::io::Read;
/// use std::process::{Command, Stdio};
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let mut cmd = Command::new("sh");
/// cmd.args(["-c", "echo $MYAPP_TRACE2_PARENT_SID"]).stdout(Stdio::piped());
/// let mut child: TracedChild = flightrec::trace2::child(&mut cmd).spawn()?;
/// let mut out = String::new();
/// child.inner().stdout.take().unwrap().read_to_string(&mut out)?;
/// let id = child.record().id();
/// assert!(child.wait()?.success());
/// assert!(child.wait()?.success()); // child_exit is reported once
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// // The child sees this process's session id, to nest its own trace under it.
/// assert_eq!(out.trim_end(), events[0]["sid"]);
/// let exits: Vec<_> = events.iter().filter(|e| e["event"] == "child_exit").collect();
/// assert_eq!(exits.len(), 1);
/// assert!(exits[0]["child_id"] == id && exits[0]["code"] == 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TracedChild {
    child: Child,
    record: ChildRecord,
    exited: bool,
}

impl TracedChild {
    /// The child process. Example on [`TracedChild`].
    pub fn inner(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The child's record (for `child_ready`). Example on [`TracedChild`].
    pub fn record(&self) -> &ChildRecord {
        &self.record
    }

    /// Waits for the child and emits `child_exit` (once) with its code; a
    /// child killed by signal `N` reports `128 + N`, as git does.
    ///
    /// ```
    /// use std::process::Command;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2", &trace);
    /// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
    /// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// let mut child = flightrec::trace2::child(&mut Command::new("sleep").arg("10")).spawn()?;
    /// child.inner().kill()?; // SIGKILL, signal 9
    /// assert!(!child.wait()?.success());
    /// drop(t2);
    /// let normal = std::fs::read_to_string(&trace)?;
    /// let exit = normal.lines().find(|l| l.starts_with("child_exit[0]")).unwrap();
    /// assert!(exit.contains(" code:137 elapsed:"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        let loc = Location::caller();
        let status = self.child.wait()?;
        if !self.exited {
            self.exited = true;
            let code = status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
            let pid = i64::from(self.child.id());
            self.record.end(loc, |t_rel| Event::ChildExit {
                child_id: self.record.id,
                pid,
                code,
                t_rel,
            });
        }
        Ok(status)
    }
}

/// Emits `exec` for `cmd`, replaces the process with it (`exec()`), and when
/// that fails emits `exec_result` with the error number and returns the error.
/// The new program inherits this process's session id (depth + 1, same pid).
///
/// When `exec()` succeeds this function does not return; the example shows
/// the failure.
///
/// ```
/// use std::process::Command;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let err = flightrec::trace2::exec(Command::new("/nonexistent/git").arg("version"));
/// assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// // `exec[<id>] <exe> <argv>`: argv includes the program, as in git.
/// assert!(normal.contains("\nexec[0] /nonexistent/git /nonexistent/git version\n"));
/// assert!(normal.contains("\nexec_result[0] code:2 err:No such file or directory\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn exec(cmd: &mut Command) -> io::Error {
    let loc = Location::caller();
    let program = cmd.get_program().to_os_string();
    let mut argv = vec![program.clone()];
    argv.extend(cmd.get_args().map(OsStr::to_os_string));
    let id = exec_event_at(loc, Some(&program), &argv);
    if let Some(rt) = runtime() {
        set_inherited_env(rt, cmd);
    }
    let err = cmd.exec();
    let code = err.raw_os_error().unwrap_or(-1);
    exec_result_at(loc, id, code);
    err
}

/// Emits `exec` (exe and redacted argv) without exec'ing, and returns its id
/// for [`exec_result`] (-1 when Trace2 is off), for a program that calls
/// `exec()` itself.
///
/// ```
/// use std::ffi::OsStr;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let id = flightrec::trace2::exec_event(Some(OsStr::new("/usr/bin/git")), &["git", "fetch"]);
/// flightrec::trace2::exec_result(id, 13); // EACCES
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let exec = events.iter().find(|e| e["event"] == "exec").unwrap();
/// assert!(exec["exec_id"] == id && exec["exe"] == "/usr/bin/git");
/// assert_eq!(exec["argv"], serde_json::json!(["git", "fetch"]));
/// let result = events.iter().find(|e| e["event"] == "exec_result").unwrap();
/// assert!(result["exec_id"] == id && result["code"] == 13);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn exec_event<S: AsRef<OsStr>>(exe: Option<&OsStr>, argv: &[S]) -> i64 {
    exec_event_at(Location::caller(), exe, argv)
}

fn exec_event_at<S: AsRef<OsStr>>(
    loc: &'static Location<'static>,
    exe: Option<&OsStr>,
    argv: &[S],
) -> i64 {
    let Some(rt) = runtime() else { return -1 };
    let id = rt.exec_ids.fetch_add(1, Ordering::Relaxed);
    let red = redact_all(rt, argv.iter().map(|a| a.as_ref().as_bytes()));
    let v = views(&red);
    emit(
        rt,
        Loc::from(loc),
        &Event::Exec {
            exec_id: id,
            exe: exe.map(OsStr::as_bytes),
            argv: Args::Bytes(&v),
        },
    );
    id
}

/// Emits `exec_result` with `code` (an errno when > 0, shown with its text).
///
/// ```
/// use std::ffi::OsStr;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let id = flightrec::trace2::exec_event(None::<&OsStr>, &["helper"]);
/// flightrec::trace2::exec_result(id, 13);
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\nexec_result[0] code:13 err:Permission denied\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn exec_result(exec_id: i64, code: i32) {
    exec_result_at(Location::caller(), exec_id, code);
}

fn exec_result_at(loc: &'static Location<'static>, exec_id: i64, code: i32) {
    let Some(rt) = runtime() else { return };
    let err = if code > 0 {
        super::target::strerror(&io::Error::from_raw_os_error(code))
    } else {
        String::new()
    };
    emit(
        rt,
        Loc::from(loc),
        &Event::ExecResult {
            exec_id,
            code,
            err: err.as_bytes(),
        },
    );
}
