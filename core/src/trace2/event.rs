//! The Trace2 event model: one variant per event git's Trace2 API emits, with
//! every field the spec names. All data is borrowed from the caller.

use core::fmt;

/// Bytes of a string git passes through unvalidated (may be non-UTF-8).
///
/// ```
/// use flightrec_core::trace2::{normal, Bytes, Event, LineCtx};
/// let exe: Bytes = b"2.47.3";
/// let mut buf = [0u8; 64];
/// let n = normal::write_line(true, &LineCtx::new(b"sid", b"main"), &Event::Version { exe }, &mut buf).unwrap();
/// assert_eq!(&buf[..n], b"version 2.47.3\n"); // what git 2.47.3 writes (GIT_TRACE2_BRIEF)
/// ```
pub type Bytes<'a> = &'a [u8];

/// A borrowed argument list (`argv`, an ancestry list): byte strings or `str`s.
///
/// ```
/// use flightrec_core::trace2::{normal, Args, Event, LineCtx};
/// let argv = ["git", "status"];
/// let a = Args::Str(&argv);
/// assert_eq!((a.len(), a.is_empty()), (2, false));
/// assert_eq!(a.get(1), Some(&b"status"[..]));
/// assert_eq!(a.get(2), None);
/// assert_eq!(a.iter().collect::<Vec<_>>(), [&b"git"[..], b"status"]);
/// assert!(Args::EMPTY.is_empty());
///
/// // `git status` as git's normal target (GIT_TRACE2_BRIEF) writes it.
/// let ctx = LineCtx::new(b"sid", b"main");
/// let mut buf = [0u8; 64];
/// let n = normal::write_line(true, &ctx, &Event::Start { argv: a }, &mut buf).unwrap();
/// assert_eq!(&buf[..n], b"start git status\n");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Args<'a> {
    /// Byte-string arguments (git's raw `char *`).
    Bytes(&'a [&'a [u8]]),
    /// UTF-8 arguments.
    Str(&'a [&'a str]),
}

impl<'a> Args<'a> {
    /// An empty list. Example on [`Args`].
    pub const EMPTY: Args<'static> = Args::Bytes(&[]);

    /// Number of arguments. Example on [`Args`].
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Args::Bytes(a) => a.len(),
            Args::Str(a) => a.len(),
        }
    }

    /// True when there are no arguments. Example on [`Args`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Argument `i` as bytes. Example on [`Args`].
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        match *self {
            Args::Bytes(a) => a.get(i).copied(),
            Args::Str(a) => a.get(i).map(|s| s.as_bytes()),
        }
    }

    /// Iterates over the arguments as bytes. Example on [`Args`].
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let this = *self;
        (0..this.len()).filter_map(move |i| this.get(i))
    }
}

impl<'a> From<&'a [&'a str]> for Args<'a> {
    fn from(a: &'a [&'a str]) -> Self {
        Args::Str(a)
    }
}

impl<'a> From<&'a [&'a [u8]]> for Args<'a> {
    fn from(a: &'a [&'a [u8]]) -> Self {
        Args::Bytes(a)
    }
}

/// A message: pre-formatted bytes or printf-like `format_args!` output that the
/// formatter renders straight into the line (no allocation).
///
/// Git writes a message only when its *format* is non-empty, even if the
/// formatted text is empty (`"msg":""` for `"%s"` of `""`). Events therefore take
/// an `Option<Msg>`: `None` is "no message"; `Some(Msg::Bytes(b""))` is a message
/// whose text is empty; `Some(Msg::Fmt(format_args!("")))` has an empty format
/// and counts as no message ([`Msg::has_format`]).
///
/// ```
/// use flightrec_core::trace2::{json, Event, LineCtx, Msg};
/// assert!(Msg::Bytes(b"").is_empty());
/// assert!(Msg::Bytes(b"").has_format());
/// assert!(!Msg::Fmt(format_args!("")).has_format());
/// assert!(!Msg::Fmt(format_args!("{}", 1)).is_empty());
///
/// // An error event as git 2.47.3 writes it (GIT_TRACE2_EVENT_BRIEF): the message
/// // is formatted straight into the line.
/// let ctx = LineCtx::new(b"20261122T022644.164627Z-H0a7c9cdf-P000007e7", b"main");
/// let ev = Event::Error {
///     msg: Msg::Fmt(format_args!("pathspec '{}' did not match any file(s) known to git", "nonexistent")),
///     fmt: b"pathspec '%s' did not match any file(s) known to git",
/// };
/// let mut buf = [0u8; 512];
/// let n = json::write_line(true, 2, &ctx, &ev, &mut buf).unwrap();
/// assert_eq!(
///     std::str::from_utf8(&buf[..n]).unwrap(),
///     concat!(
///         r#"{"event":"error","sid":"20261122T022644.164627Z-H0a7c9cdf-P000007e7","thread":"main","#,
///         r#""msg":"pathspec 'nonexistent' did not match any file(s) known to git","#,
///         r#""fmt":"pathspec '%s' did not match any file(s) known to git"}"#,
///         "\n"
///     )
/// );
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Msg<'a> {
    /// Already formatted bytes (raw, may be non-UTF-8).
    Bytes(&'a [u8]),
    /// Formatted while the line is written.
    Fmt(fmt::Arguments<'a>),
}

impl Msg<'_> {
    /// False only for a `format_args!("")`: git omits messages with an empty format.
    /// Example on [`Msg`].
    #[inline]
    pub fn has_format(&self) -> bool {
        match self {
            Msg::Bytes(_) => true,
            Msg::Fmt(a) => a.as_str() != Some(""),
        }
    }

    /// True when the message text is known to be empty (a `format_args!` with
    /// arguments is not known to be). Example on [`Msg`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        match self {
            Msg::Bytes(b) => b.is_empty(),
            Msg::Fmt(a) => a.as_str() == Some(""),
        }
    }
}

impl<'a> From<&'a [u8]> for Msg<'a> {
    fn from(b: &'a [u8]) -> Self {
        Msg::Bytes(b)
    }
}

impl<'a> From<&'a str> for Msg<'a> {
    fn from(s: &'a str) -> Self {
        Msg::Bytes(s.as_bytes())
    }
}

impl<'a> From<fmt::Arguments<'a>> for Msg<'a> {
    fn from(a: fmt::Arguments<'a>) -> Self {
        Msg::Fmt(a)
    }
}

/// Elapsed time in microseconds (git's `getnanotime() / 1000` differences).
///
/// ```
/// use flightrec_core::trace2::{perf, Event, LineCtx, Micros, Msg};
/// let t_rel: Micros = 17;
/// let ctx = LineCtx { t_abs: 1_082, repo: Some(1), ..LineCtx::new(b"sid", b"main") };
/// let ev = Event::RegionLeave {
///     t_rel,
///     category: Some(b"index"),
///     label: Some(b"do_read_index"),
///     msg: Some(Msg::Bytes(b".git/index")),
/// };
/// let mut buf = [0u8; 256];
/// let n = perf::write_line(true, &ctx, &ev, &mut buf).unwrap();
/// // A line of `git status` with GIT_TRACE2_PERF_BRIEF (git 2.47.3).
/// assert_eq!(
///     std::str::from_utf8(&buf[..n]).unwrap(),
///     "d0 | main                     | region_leave | r1  |  0.001082 |  0.000017 | index        | label:do_read_index .git/index\n"
/// );
/// ```
pub type Micros = u64;

/// One Trace2 event. Per-line inputs shared by all events (time, file:line,
/// thread, sid, nesting, repo, `t_abs`) live in [`LineCtx`](super::LineCtx).
///
/// ```
/// use flightrec_core::trace2::{json, Event, LineCtx, Msg};
/// let ev = Event::RegionEnter {
///     category: Some(b"index"),
///     label: Some(b"do_read_index"),
///     msg: Some(Msg::Bytes(b".git/index")),
/// };
/// assert_eq!(ev.name(), "region_enter");
///
/// // The line git 2.47.3 writes for it during `git status` (GIT_TRACE2_EVENT_BRIEF).
/// let sid = b"20261122T022631.208219Z-H0a7c9cdf-P0000069d";
/// let ctx = LineCtx { repo: Some(1), nesting: 1, ..LineCtx::new(sid, b"main") };
/// let mut buf = [0u8; 256];
/// let n = json::write_line(true, 2, &ctx, &ev, &mut buf).unwrap();
/// assert_eq!(
///     std::str::from_utf8(&buf[..n]).unwrap(),
///     concat!(
///         r#"{"event":"region_enter","sid":"20261122T022631.208219Z-H0a7c9cdf-P0000069d","#,
///         r#""thread":"main","repo":1,"nesting":1,"category":"index","label":"do_read_index","#,
///         r#""msg":".git/index"}"#,
///         "\n"
///     )
/// );
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// `version`: the program version (git's `exe`); the event format version is
    /// always `"4"`.
    Version {
        /// The version string (`2.47.3`).
        exe: Bytes<'a>,
    },
    /// `too_many_files` (event target only, after `version` in discard mode).
    TooManyFiles,
    /// `start`: the command line (already redacted by the caller if wanted).
    Start {
        /// The full argv.
        argv: Args<'a>,
    },
    /// `exit` with the (8-bit masked) exit code; elapsed = `t_abs`.
    Exit {
        /// Exit code.
        code: i32,
    },
    /// `atexit`, the very last event; elapsed = `t_abs`.
    Atexit {
        /// The last exit code.
        code: i32,
    },
    /// `signal`: the process dies of signal `signo`; elapsed = `t_abs`.
    Signal {
        /// Signal number.
        signo: i32,
    },
    /// `error`: an error/warning/die message. It is shown when `fmt` or `msg` is
    /// non-empty; the event target then writes both `msg` and `fmt`.
    Error {
        /// The formatted message.
        msg: Msg<'a>,
        /// The raw printf format (event target `fmt`), e.g. ``unknown option `%s'``.
        fmt: Bytes<'a>,
    },
    /// `cmd_path`: the full path of the executable.
    CmdPath {
        /// Path.
        path: Bytes<'a>,
    },
    /// `cmd_ancestry`: parent process names, nearest first.
    CmdAncestry {
        /// Names.
        ancestry: Args<'a>,
    },
    /// `cmd_name`: the command and its hierarchy (`parent/.../name`).
    CmdName {
        /// Command name.
        name: Bytes<'a>,
        /// Hierarchy; empty means none.
        hierarchy: Bytes<'a>,
    },
    /// `cmd_mode`: a sub-mode of the command.
    CmdMode {
        /// Mode.
        mode: Bytes<'a>,
    },
    /// `alias`: an alias and its expansion.
    Alias {
        /// The alias.
        alias: Bytes<'a>,
        /// The expansion.
        argv: Args<'a>,
    },
    /// `child_start`.
    ChildStart {
        /// Child id within this process.
        child_id: i64,
        /// Child class (`None` prints `?`); ignored when `hook_name` is set.
        child_class: Option<Bytes<'a>>,
        /// Hook name: the child is a hook (class `hook`).
        hook_name: Option<Bytes<'a>>,
        /// Directory the child runs in.
        cd: Option<Bytes<'a>>,
        /// Run through a shell.
        use_shell: bool,
        /// A git command: `git` is shown before `argv`.
        is_git: bool,
        /// The child's argv (without the `git` for git commands).
        argv: Args<'a>,
    },
    /// `child_exit`.
    ChildExit {
        /// Child id.
        child_id: i64,
        /// Pid (-1 when the spawn failed).
        pid: i64,
        /// Exit code.
        code: i32,
        /// Child run time.
        t_rel: Micros,
    },
    /// `child_ready` (background children).
    ChildReady {
        /// Child id.
        child_id: i64,
        /// Pid.
        pid: i64,
        /// `ready`, `timeout` or `error`.
        ready: Bytes<'a>,
        /// Time since the child started.
        t_rel: Micros,
    },
    /// `exec`: the process is about to `exec()`.
    Exec {
        /// Exec id.
        exec_id: i64,
        /// Executable, if given.
        exe: Option<Bytes<'a>>,
        /// Arguments.
        argv: Args<'a>,
    },
    /// `exec_result`: the `exec()` failed (or its result is reported).
    ExecResult {
        /// Exec id.
        exec_id: i64,
        /// Result code (an errno when > 0).
        code: i32,
        /// `strerror(code)`, shown when `code > 0` (the core has no `strerror`).
        err: Bytes<'a>,
    },
    /// `thread_start` (perf and event only).
    ThreadStart,
    /// `thread_exit` with the thread's run time.
    ThreadExit {
        /// Thread run time.
        t_rel: Micros,
    },
    /// `def_param`: a config value or environment variable.
    DefParam {
        /// `system`, `global`, `local`, `worktree`, `command`, `submodule`, `unknown`.
        scope: Bytes<'a>,
        /// Key or variable name.
        param: Bytes<'a>,
        /// Value; `None` for a valueless config key (newer git's behaviour, §16.21).
        value: Option<Bytes<'a>>,
    },
    /// `def_repo`: a repository; its id is [`LineCtx::repo`](super::LineCtx::repo).
    DefRepo {
        /// Worktree path.
        worktree: Bytes<'a>,
    },
    /// `region_enter`, formatted at the outer nesting level (before the push).
    RegionEnter {
        /// Category.
        category: Option<Bytes<'a>>,
        /// Label.
        label: Option<Bytes<'a>>,
        /// Message (`None`: no message).
        msg: Option<Msg<'a>>,
    },
    /// `region_leave`, formatted at the outer nesting level (after the pop).
    RegionLeave {
        /// Time spent in the region.
        t_rel: Micros,
        /// Category.
        category: Option<Bytes<'a>>,
        /// Label.
        label: Option<Bytes<'a>>,
        /// Message (`None`: no message).
        msg: Option<Msg<'a>>,
    },
    /// `data`: a key/value pair (the value is always a string).
    Data {
        /// Time since the innermost region started.
        t_rel: Micros,
        /// Category.
        category: Bytes<'a>,
        /// Key.
        key: Bytes<'a>,
        /// Value.
        value: Bytes<'a>,
    },
    /// `data_json`: a key with a pre-built JSON value, inserted verbatim.
    DataJson {
        /// Time since the innermost region started.
        t_rel: Micros,
        /// Category.
        category: Bytes<'a>,
        /// Key.
        key: Bytes<'a>,
        /// Compact JSON text.
        value: Bytes<'a>,
    },
    /// `printf`: a free-form message.
    Printf {
        /// Message (`None`: no message).
        msg: Option<Msg<'a>>,
    },
    /// `th_timer` (`per_thread`) or `timer` (process-wide).
    Timer {
        /// Per-thread (`th_timer`) rather than process-wide (`timer`).
        per_thread: bool,
        /// Category.
        category: Bytes<'a>,
        /// Name.
        name: Bytes<'a>,
        /// Number of intervals.
        intervals: u64,
        /// Total time, nanoseconds.
        total_ns: u64,
        /// Shortest interval, nanoseconds.
        min_ns: u64,
        /// Longest interval, nanoseconds.
        max_ns: u64,
    },
    /// `th_counter` (`per_thread`) or `counter` (process-wide).
    Counter {
        /// Per-thread (`th_counter`) rather than process-wide (`counter`).
        per_thread: bool,
        /// Category.
        category: Bytes<'a>,
        /// Name.
        name: Bytes<'a>,
        /// Value.
        value: u64,
    },
}

impl Event<'_> {
    /// Git's name of the event (`region_enter`, `th_timer`, ...). Example on
    /// [`Event`].
    pub fn name(&self) -> &'static str {
        match self {
            Event::Version { .. } => "version",
            Event::TooManyFiles => "too_many_files",
            Event::Start { .. } => "start",
            Event::Exit { .. } => "exit",
            Event::Atexit { .. } => "atexit",
            Event::Signal { .. } => "signal",
            Event::Error { .. } => "error",
            Event::CmdPath { .. } => "cmd_path",
            Event::CmdAncestry { .. } => "cmd_ancestry",
            Event::CmdName { .. } => "cmd_name",
            Event::CmdMode { .. } => "cmd_mode",
            Event::Alias { .. } => "alias",
            Event::ChildStart { .. } => "child_start",
            Event::ChildExit { .. } => "child_exit",
            Event::ChildReady { .. } => "child_ready",
            Event::Exec { .. } => "exec",
            Event::ExecResult { .. } => "exec_result",
            Event::ThreadStart => "thread_start",
            Event::ThreadExit { .. } => "thread_exit",
            Event::DefParam { .. } => "def_param",
            Event::DefRepo { .. } => "def_repo",
            Event::RegionEnter { .. } => "region_enter",
            Event::RegionLeave { .. } => "region_leave",
            Event::Data { .. } => "data",
            Event::DataJson { .. } => "data_json",
            Event::Printf { .. } => "printf",
            Event::Timer {
                per_thread: true, ..
            } => "th_timer",
            Event::Timer { .. } => "timer",
            Event::Counter {
                per_thread: true, ..
            } => "th_counter",
            Event::Counter { .. } => "counter",
        }
    }

    /// True for the events the event target filters by nesting
    /// (`region_enter`, `region_leave`, `data`, `data_json`).
    ///
    /// ```
    /// use flightrec_core::trace2::{json, Event, LineCtx};
    /// let data = Event::Data { t_rel: 7, category: b"index", key: b"refresh/sum_lstat", value: b"0" };
    /// let exit = Event::Exit { code: 0 };
    /// assert!(data.is_nesting_filtered());
    /// assert!(!exit.is_nesting_filtered());
    /// // Three regions deep, past the event target's default nesting of 2.
    /// let ctx = LineCtx { nesting: 3, ..LineCtx::new(b"sid", b"main") };
    /// let mut buf = [0u8; 256];
    /// assert_eq!(json::write_line(true, 2, &ctx, &data, &mut buf), Ok(0));
    /// assert!(json::write_line(true, 2, &ctx, &exit, &mut buf).unwrap() > 0);
    /// ```
    pub fn is_nesting_filtered(&self) -> bool {
        matches!(
            self,
            Event::RegionEnter { .. }
                | Event::RegionLeave { .. }
                | Event::Data { .. }
                | Event::DataJson { .. }
        )
    }
}
