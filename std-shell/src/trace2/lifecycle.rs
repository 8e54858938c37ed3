//! Start and end of a traced process: [`init`] (`version`, `start`,
//! `cmd_ancestry`), and `exit` + `atexit` when `main` returns, when the
//! program calls [`exit`] or `std::process::exit`, or when a panic unwinds out
//! of `main` (spec §14).

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::panic::Location;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Instant;

use flightrec_core::trace2::{Args, Event, IdCounter, Msg, ProcessStats};

use super::ancestry::ancestry;
use super::command::start_event;
use super::config::Trace2Config;
use super::config_param::ConfigParamsFn;
use super::emit::{emit, emit_in, emit_where};
use super::message::error_event;
use super::outputs::{open_outputs, Output};
use super::runtime::{runtime, runtime_any, source_path, Loc, Runtime, Shared};
use super::sid::SessionId;
use super::signal::install_sigpipe_handler;
use super::stat_defs::{with_counter_defs, with_timer_defs};
use super::stats::report_thread;
use super::target::{strerror, BackgroundWriter, WriteMode};
use super::tls::{install_main, with_ctx};
use super::warning::warn;

/// How to start Trace2: the environment prefix, the version reported in the
/// `version` event, the settings and the argv of `start`.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let trace = dir.path().join("trace");
/// // The program's own prefix: MYAPP_TRACE2 is its normal target, in brief form.
/// std::env::set_var("MYAPP_TRACE2", &trace);
/// std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
///
/// let t2 = flightrec::trace2::Builder::new()
///     .prefix("MYAPP_TRACE2")
///     .version("2.1.0")
///     .argv(["myapp", "--fast"])
///     .init();
/// assert!(t2.is_active());
/// // Children started now nest under this session.
/// assert!(std::env::var_os("MYAPP_TRACE2_PARENT_SID").is_some());
/// drop(t2);
///
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.starts_with("version 2.1.0\nstart myapp --fast\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Builder {
    prefix: String,
    version: String,
    config: Option<Trace2Config>,
    argv: Option<Vec<OsString>>,
    config_params: Option<ConfigParamsFn>,
    write_mode: Option<WriteMode>,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// git's settings (`GIT_TRACE2*`), flightrec's crate version, this
    /// process's argv.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # std::env::set_var("HOME", dir.path()); // no global git config
    /// # std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
    /// # let trace = dir.path().join("trace");
    /// std::env::set_var("GIT_TRACE2", &trace);
    /// std::env::set_var("GIT_TRACE2_BRIEF", "1");
    /// let t2 = flightrec::trace2::Builder::new().init();
    /// drop(t2);
    /// let normal = std::fs::read_to_string(&trace)?;
    /// let exe = std::env::args().next().unwrap();
    /// let version = env!("CARGO_PKG_VERSION"); // this example belongs to flightrec
    /// assert!(normal.starts_with(&format!("version {version}\nstart {exe}\n")));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> Self {
        Builder {
            prefix: String::from("GIT_TRACE2"),
            version: String::from(env!("CARGO_PKG_VERSION")),
            config: None,
            argv: None,
            config_params: None,
            write_mode: None,
        }
    }

    /// The environment prefix: `MYAPP_TRACE2` reads `MYAPP_TRACE2`,
    /// `MYAPP_TRACE2_PERF`, ... and exports `MYAPP_TRACE2_PARENT_SID`; a
    /// prefix other than `GIT_TRACE2` reads no `trace2.*` git config. Example
    /// on [`Builder`].
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_string();
        self
    }

    /// The version the `version` event reports (git reports its own version;
    /// a program usually passes `env!("CARGO_PKG_VERSION")`). Defaults to the
    /// version of flightrec. Example on [`Builder`].
    pub fn version(mut self, version: &str) -> Self {
        self.version = version.to_string();
        self
    }

    /// Uses these settings instead of loading them for the prefix.
    ///
    /// ```
    /// use flightrec::trace2::config::Trace2Config;
    /// use std::ffi::OsString;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let trace = dir.path().join("perf");
    /// // Settings from the program's own source instead of the environment.
    /// let cfg = Trace2Config::load_from("MYAPP_TRACE2", |name| match name {
    ///     "MYAPP_TRACE2_PERF" => Some(OsString::from(&trace)),
    ///     "MYAPP_TRACE2_PERF_BRIEF" => Some(OsString::from("1")),
    ///     _ => None,
    /// });
    /// let t2 = flightrec::trace2::Builder::new().config(cfg).version("7").init();
    /// drop(t2);
    /// let perf = std::fs::read_to_string(&trace)?;
    /// assert!(perf.starts_with("d0 | main                     | version      |"));
    /// assert!(perf.lines().next().unwrap().ends_with("| 7"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn config(mut self, cfg: Trace2Config) -> Self {
        self.config = Some(cfg);
        self
    }

    /// The argv of the `start` event (defaults to `std::env::args_os()`).
    /// Example on [`Builder`].
    pub fn argv<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, argv: I) -> Self {
        self.argv = Some(argv.into_iter().map(Into::into).collect());
        self
    }

    /// The function that lists the config entries matching
    /// `trace2.configParams`, reported as `def_param`s at the first
    /// [`cmd_name`](super::cmd_name) (before those of `envVars`). Without one
    /// the runtime reads the system and global config files
    /// ([`config_params_from_files`](super::config_params_from_files) without
    /// a repository); a program that works in a repository passes a function
    /// that adds its local config.
    ///
    /// ```
    /// use flightrec::trace2::config::Trace2Config;
    /// use flightrec::trace2::ConfigParam;
    ///
    /// // A program that knows its repository adds its local config.
    /// fn with_local(cfg: &Trace2Config) -> Vec<ConfigParam> {
    ///     let mut params = flightrec::trace2::config_params_from_files(cfg, None);
    ///     params.push(ConfigParam {
    ///         scope: "local".into(),
    ///         key: "core.filemode".into(),
    ///         value: Some("true".into()),
    ///     });
    ///     params
    /// }
    ///
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2", &trace);
    /// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
    /// // MYAPP_TRACE2 names the file `trace` (brief).
    /// std::env::set_var("MYAPP_TRACE2_CONFIG_PARAMS", "core.filemode");
    /// let t2 = flightrec::trace2::Builder::new()
    ///     .prefix("MYAPP_TRACE2")
    ///     .config_params(with_local)
    ///     .init();
    /// flightrec::trace2::cmd_name("status");
    /// drop(t2);
    /// let normal = std::fs::read_to_string(&trace)?;
    /// assert!(normal.contains("\ndef_param scope:local core.filemode=true\n"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn config_params(mut self, f: ConfigParamsFn) -> Self {
        self.config_params = Some(f);
        self
    }

    /// How lines are written: [`WriteMode::Direct`] (git's one `write()` per
    /// line, the default) or [`WriteMode::Background`] (a bounded queue and
    /// a writer thread; see [`WriteMode`] for what it trades). Without this
    /// call the mode comes from `FLIGHTREC_TRACE2_WRITE`
    /// ([`WRITE_MODE_VAR`](super::target::WRITE_MODE_VAR)); with it, that
    /// variable is not read.
    ///
    /// ```
    /// use flightrec::trace2::target::WriteMode;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("event");
    /// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
    /// // MYAPP_TRACE2_EVENT names the file `event`; a 64 kB queue.
    /// let t2 = flightrec::trace2::Builder::new()
    ///     .prefix("MYAPP_TRACE2")
    ///     .write_mode(WriteMode::Background { queue_bytes: 64 << 10 })
    ///     .init();
    /// flightrec::printf!("queued");
    /// flightrec::trace2::flush(); // written now, not only at exit
    /// let event = std::fs::read_to_string(&trace)?;
    /// assert!(event.lines().last().unwrap().contains(r#""msg":"queued""#));
    /// drop(t2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_mode(mut self, mode: WriteMode) -> Self {
        self.write_mode = Some(mode);
        self
    }

    /// Starts Trace2 if a target is configured: opens the destinations (in
    /// order normal, perf, event, printing git's warnings), computes the
    /// session id, exports `<PREFIX>_PARENT_SID`, and emits `version`,
    /// `start` and (on Linux) `cmd_ancestry`. Otherwise nothing happens and
    /// every Trace2 call stays a no-op.
    ///
    /// Call it first thing in `main`, before other threads exist: exporting
    /// the variable with `std::env::set_var` is not synchronised with C code
    /// reading the environment on other threads. A second call does nothing.
    ///
    /// ```
    /// use flightrec::trace2::Builder;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// // Nothing configured for this prefix: an inactive session.
    /// std::env::remove_var("MYAPP_TRACE2");
    /// assert!(!Builder::new().prefix("MYAPP_TRACE2").init().is_active());
    /// assert!(!flightrec::trace2::enabled());
    ///
    /// std::env::set_var("MYAPP_TRACE2", &trace);
    /// let t2 = Builder::new().prefix("MYAPP_TRACE2").init();
    /// assert!(t2.is_active() && flightrec::trace2::enabled());
    /// // Once per process: a second session is inactive.
    /// assert!(!Builder::new().prefix("MYAPP_TRACE2").init().is_active());
    /// drop(t2);
    /// assert!(!flightrec::trace2::enabled()); // off for good after atexit
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn init(self) -> Session {
        let loc = Location::caller();
        let inert = Session { active: false, loc };
        if runtime_any().is_some() {
            return inert;
        }
        let cfg = self
            .config
            .unwrap_or_else(|| Trace2Config::load(&self.prefix));
        if !cfg.any_target() {
            return inert;
        }
        let parent = cfg
            .parent_sid
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned());
        let sid = SessionId::for_this_process(parent.as_deref());
        let outputs = open_outputs(&cfg, &sid.own);
        if outputs.is_empty() {
            return inert;
        }
        std::env::set_var(format!("{}_PARENT_SID", cfg.prefix), &sid.full);
        let background = start_background(self.write_mode, &outputs);
        let rt = Runtime {
            depth: sid.depth(),
            sid,
            outputs,
            origin: Instant::now(),
            cfg,
            version: self.version,
            config_params: self.config_params,
            shared: Mutex::new(Shared {
                hierarchy: None,
                params_emitted: false,
                totals: ProcessStats::new(),
                thread_ids: IdCounter::new(),
                repo_ids: IdCounter::new(),
            }),
            exit_code: AtomicI32::new(0),
            exit_emitted: AtomicBool::new(false),
            atexit_done: AtomicBool::new(false),
            child_ids: AtomicI64::new(0),
            exec_ids: AtomicI64::new(0),
            background,
        };
        let Ok(rt) = Runtime::install(rt) else {
            return inert;
        };
        install_main(rt);
        register_exit_handler();
        install_panic_hook();
        install_sigpipe_handler();
        let l = Loc::from(loc);
        emit(
            rt,
            l,
            &Event::Version {
                exe: rt.version.as_bytes(),
            },
        );
        // A directory target over its maxFiles writes into the discard
        // sentinel, and the event target says so right after `version`.
        if rt.outputs.iter().any(|o| o.dest.too_many_files()) {
            with_ctx(rt, |c| {
                emit_where(rt, c, l, &Event::TooManyFiles, |o| o.dest.too_many_files())
            });
        }
        match &self.argv {
            Some(a) => start_event(rt, l, a.iter().map(|s| s.as_bytes())),
            None => {
                let a: Vec<OsString> = std::env::args_os().collect();
                start_event(rt, l, a.iter().map(|s| s.as_bytes()));
            }
        }
        let names = ancestry();
        if !names.is_empty() {
            let v: Vec<&[u8]> = names.iter().map(|n| n.as_slice()).collect();
            emit(
                rt,
                Loc::caller(),
                &Event::CmdAncestry {
                    ancestry: Args::Bytes(&v),
                },
            );
        }
        Session { active: true, loc }
    }
}

/// The background writer for `outputs` when the mode (the builder's, else
/// `FLIGHTREC_TRACE2_WRITE`'s) asks for one; when its thread cannot start,
/// one warning and the direct mode.
fn start_background(mode: Option<WriteMode>, outputs: &[Output]) -> Option<BackgroundWriter> {
    let mode = mode.unwrap_or_else(|| {
        let (mode, warning) = WriteMode::from_env_with(|name| std::env::var_os(name));
        if let Some(w) = warning {
            warn(&w);
        }
        mode
    });
    let WriteMode::Background { queue_bytes } = mode else {
        return None;
    };
    let dests = outputs.iter().map(|o| Arc::clone(&o.dest)).collect();
    match BackgroundWriter::start(dests, queue_bytes) {
        Ok(bg) => Some(bg),
        Err(e) => {
            warn(&format!(
                "trace2: could not start the background writer: {}; writing directly",
                strerror(&e)
            ));
            None
        }
    }
}

/// Starts Trace2 with git's settings (`GIT_TRACE2*`) and flightrec's version;
/// see [`Builder::init`]. Keep the returned guard until `main` returns.
///
/// ```
/// fn main() -> std::io::Result<()> {
///     # let dir = tempfile::tempdir()?;
///     # std::env::set_var("HOME", dir.path()); // no global git config
///     # std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
///     # let trace = dir.path().join("trace");
///     std::env::set_var("GIT_TRACE2", &trace);
///     std::env::set_var("GIT_TRACE2_BRIEF", "1");
///     {
///         let _t2 = flightrec::trace2::init();
///         flightrec::trace2::cmd_name("demo");
///     } // exit and atexit here
///     let normal = std::fs::read_to_string(&trace)?;
///     assert!(normal.contains("\ncmd_name demo (demo)\nexit elapsed:"));
///     assert!(normal.lines().last().unwrap().starts_with("atexit elapsed:"));
///     Ok(())
/// }
/// ```
#[track_caller]
pub fn init() -> Session {
    Builder::new().init()
}

/// The traced process: emits `exit` and `atexit` when dropped (code 0, or 101
/// when a panic unwinds through it, as Rust's runtime exits then), unless the
/// process has already exited through [`Session::exit`] or [`exit`].
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace` (brief).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// assert!(t2.is_active());
/// let worker = std::thread::spawn(move || {
///     let _moved = t2;
///     panic!("worker failed"); // unwinds through the session: code 101
/// });
/// assert!(worker.join().is_err());
/// let normal = std::fs::read_to_string(&trace)?;
/// let tail: Vec<&str> = normal.lines().rev().take(3).collect();
/// assert!(tail[0].starts_with("atexit elapsed:") && tail[0].ends_with(" code:101"));
/// assert!(tail[1].starts_with("exit elapsed:") && tail[1].ends_with(" code:101"));
/// assert_eq!(tail[2], "error worker failed"); // from the panic hook
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "exit and atexit are emitted when this guard is dropped"]
#[derive(Debug)]
pub struct Session {
    active: bool,
    loc: &'static Location<'static>,
}

impl Session {
    /// Whether Trace2 was started by this guard. Example on [`Session`].
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Emits `exit` (code masked to 8 bits) and `atexit`, and returns the
    /// code for `main` to return.
    ///
    /// ```
    /// use std::process::ExitCode;
    /// # let dir = tempfile::tempdir()?;
    /// # let trace = dir.path().join("trace");
    /// # std::env::set_var("MYAPP_TRACE2", &trace);
    /// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
    /// // MYAPP_TRACE2 names the file `trace` (brief).
    /// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    /// let code: ExitCode = t2.exit(258); // `main` would return this: 258 & 0xff = 2
    /// assert_eq!(code, ExitCode::from(2));
    /// let normal = std::fs::read_to_string(&trace)?;
    /// let tail: Vec<&str> = normal.lines().rev().take(2).collect();
    /// assert!(tail[0].starts_with("atexit elapsed:") && tail[0].ends_with(" code:2"));
    /// assert!(tail[1].starts_with("exit elapsed:") && tail[1].ends_with(" code:2"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn exit(mut self, code: i32) -> ExitCode {
        let loc = Loc::caller();
        if self.active {
            finish(loc, code);
            self.active = false;
        }
        ExitCode::from((code & 0xff) as u8)
    }

    /// Ends the trace with the result `main` is about to return, and returns
    /// it: for `Err(e)` an `error` event with the message Rust prints
    /// (`Error: {e:?}`) and `exit` with code 1, the code the process exits
    /// with; for `Ok` code 0. Without it the session would end with code 0
    /// when `main` returns `Err`.
    ///
    /// ```
    /// use std::process::Command;
    ///
    /// fn run() -> Result<(), String> {
    ///     Err("config file missing".into())
    /// }
    ///
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     # let dir = tempfile::tempdir()?;
    ///     # let trace = dir.path().join("trace");
    ///     // This example runs itself again as a child whose `main` returns `Err`.
    ///     if std::env::var_os("EXIT_RESULT_CHILD").is_some() {
    ///         let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
    ///         return Ok(t2.exit_result(run())?); // the last line of such a `main`
    ///     }
    ///     let out = Command::new(std::env::current_exe()?)
    ///         .env("EXIT_RESULT_CHILD", "1")
    ///         .env("MYAPP_TRACE2", &trace)
    ///         .env("MYAPP_TRACE2_BRIEF", "1")
    ///         .output()?;
    ///     assert_eq!(out.status.code(), Some(1));
    ///     assert_eq!(String::from_utf8(out.stderr)?, "Error: \"config file missing\"\n");
    ///     let normal = std::fs::read_to_string(&trace)?;
    ///     let tail: Vec<&str> = normal.lines().rev().take(3).collect();
    ///     assert!(tail[0].starts_with("atexit elapsed:") && tail[0].ends_with(" code:1"));
    ///     assert!(tail[1].starts_with("exit elapsed:") && tail[1].ends_with(" code:1"));
    ///     assert_eq!(tail[2], "error Error: \"config file missing\"");
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn exit_result<T, E: fmt::Debug>(mut self, result: Result<T, E>) -> Result<T, E> {
        let loc = Loc::caller();
        if self.active {
            let code = match &result {
                Ok(_) => 0,
                Err(e) => {
                    if let Some(rt) = runtime() {
                        let msg = format!("Error: {e:?}");
                        error_event(rt, loc, b"Error: {:?}", Msg::Bytes(msg.as_bytes()));
                    }
                    1
                }
            };
            finish(loc, code);
            self.active = false;
        }
        result
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.active {
            let code = if std::thread::panicking() { 101 } else { 0 };
            finish(Loc::from(self.loc), code);
        }
    }
}

/// Emits `exit` (code masked to 8 bits, as git's `exit()` wrapper does) and
/// `atexit`, then exits the process with that code.
///
/// `std::process::exit` (or `exit()` from C code) emits the same events
/// through a C library exit handler; this function also records the caller's
/// `file:line`.
///
/// ```
/// use std::process::Command;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// // This example runs itself again as a child that exits with code 3.
/// if std::env::var_os("EXIT_EXAMPLE_CHILD").is_some() {
///     let _t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
///     flightrec::trace2::exit(3);
/// }
/// let status = Command::new(std::env::current_exe()?)
///     .env("EXIT_EXAMPLE_CHILD", "1")
///     .env("MYAPP_TRACE2", &trace)
///     .env("MYAPP_TRACE2_BRIEF", "1")
///     .status()?;
/// assert_eq!(status.code(), Some(3));
/// let normal = std::fs::read_to_string(&trace)?;
/// let tail: Vec<&str> = normal.lines().rev().take(2).collect();
/// assert!(tail[0].starts_with("atexit elapsed:") && tail[0].ends_with(" code:3"));
/// assert!(tail[1].starts_with("exit elapsed:") && tail[1].ends_with(" code:3"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn exit(code: i32) -> ! {
    finish(Loc::caller(), code);
    std::process::exit(code)
}

/// `exit` (once) then the atexit processing.
fn finish(loc: Loc<'_>, code: i32) {
    let Some(rt) = runtime_any() else { return };
    emit_exit(rt, loc, code);
    run_atexit(rt);
}

fn emit_exit(rt: &Runtime, loc: Loc<'_>, code: i32) {
    if rt.atexit_done.load(Ordering::Acquire) || rt.exit_emitted.swap(true, Ordering::AcqRel) {
        return;
    }
    let code = code & 0xff;
    rt.exit_code.store(code, Ordering::Release);
    emit(rt, loc, &Event::Exit { code });
}

/// Git's atexit handler: unwind this thread's regions, report its
/// `th_timer`/`th_counter`, merge its data, report `timer`s and `counter`s,
/// then `atexit`; after that Trace2 is off.
fn run_atexit(rt: &Runtime) {
    if rt.atexit_done.swap(true, Ordering::AcqRel) {
        return;
    }
    let loc = Loc::caller();
    with_ctx(rt, |c| {
        c.state.regions.unwind();
        report_thread(rt, c);
        let totals = rt.shared().totals;
        with_timer_defs(|defs| {
            for ev in totals.timer_events(defs) {
                emit_in(rt, c, loc, &ev);
            }
        });
        with_counter_defs(|defs| {
            for ev in totals.counter_events(defs) {
                emit_in(rt, c, loc, &ev);
            }
        });
        let code = rt.exit_code.load(Ordering::Acquire);
        emit_in(rt, c, loc, &Event::Atexit { code });
    });
    Runtime::disable();
    rt.finish_background();
}

/// Registers the C library exit handler once, so that `std::process::exit`
/// (or `exit()` from C code) still emits `exit` and `atexit`. With glibc the
/// handler receives the exit status (`on_exit`); elsewhere (`atexit`) it
/// reports the last code Trace2 saw.
fn register_exit_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            extern "C" {
                fn on_exit(
                    f: extern "C" fn(libc::c_int, *mut libc::c_void),
                    arg: *mut libc::c_void,
                ) -> libc::c_int;
            }
            // SAFETY: `on_exit_handler` is a plain `extern "C"` function that
            // lives for the whole program and ignores its argument.
            unsafe {
                on_exit(on_exit_handler, std::ptr::null_mut());
            }
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            // SAFETY: as above, for the portable `atexit`.
            unsafe {
                libc::atexit(atexit_handler);
            }
        }
    });
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn on_exit_handler(status: libc::c_int, _arg: *mut libc::c_void) {
    // A panic must not cross the C boundary: catch it and stay silent.
    let _ = std::panic::catch_unwind(|| {
        if let Some(rt) = runtime_any() {
            emit_exit(rt, Loc::caller(), status);
            run_atexit(rt);
        }
    });
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
extern "C" fn atexit_handler() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(rt) = runtime_any() {
            let code = rt.exit_code.load(Ordering::Acquire);
            emit_exit(rt, Loc::caller(), code);
            run_atexit(rt);
        }
    });
}

/// Adds an `error` event for every panic (with the panic's location and
/// message) before the previous hook runs.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(rt) = runtime() {
                let msg: &str = if let Some(s) = info.payload().downcast_ref::<&str>() {
                    s
                } else if let Some(s) = info.payload().downcast_ref::<String>() {
                    s
                } else {
                    "Box<dyn Any>"
                };
                let loc = info.location().map_or(Loc::caller(), |l| Loc {
                    file: source_path(l.file()),
                    line: l.line(),
                });
                error_event(rt, loc, msg.as_bytes(), Msg::Bytes(msg.as_bytes()));
                // With panic=abort nothing runs after the hook: the queue is
                // written now.
                rt.flush();
            }
            previous(info);
        }));
    });
}
