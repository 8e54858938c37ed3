//! The Trace2 event model: one variant per event git's Trace2 API emits, with
//! every field the spec names. All data is borrowed from the caller.

use core::fmt;

/// Bytes of a string git passes through unvalidated (may be non-UTF-8).
pub type Bytes<'a> = &'a [u8];

/// A borrowed argument list (`argv`, an ancestry list): byte strings or `str`s.
///
/// ```
/// use flightrec_core::trace2::Args;
/// let argv = ["git", "status"];
/// let a = Args::Str(&argv);
/// assert_eq!(a.len(), 2);
/// assert_eq!(a.get(1), Some(&b"status"[..]));
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
    /// An empty list.
    pub const EMPTY: Args<'static> = Args::Bytes(&[]);

    /// Number of arguments.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Args::Bytes(a) => a.len(),
            Args::Str(a) => a.len(),
        }
    }

    /// True when there are no arguments.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Argument `i` as bytes.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        match *self {
            Args::Bytes(a) => a.get(i).copied(),
            Args::Str(a) => a.get(i).map(|s| s.as_bytes()),
        }
    }

    /// Iterates over the arguments as bytes.
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
/// use flightrec_core::trace2::Msg;
/// assert!(Msg::Bytes(b"").is_empty());
/// assert!(Msg::Bytes(b"").has_format());
/// assert!(!Msg::Fmt(format_args!("")).has_format());
/// assert!(!Msg::Fmt(format_args!("{}", 1)).is_empty());
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
    #[inline]
    pub fn has_format(&self) -> bool {
        match self {
            Msg::Bytes(_) => true,
            Msg::Fmt(a) => a.as_str() != Some(""),
        }
    }

    /// True when the message text is known to be empty.
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
pub type Micros = u64;

/// One Trace2 event. Per-line inputs shared by all events (time, file:line,
/// thread, sid, nesting, repo, `t_abs`) live in [`LineCtx`](super::LineCtx).
///
/// ```
/// use flightrec_core::trace2::{Event, Msg};
/// let ev = Event::RegionEnter {
///     category: Some(b"index"),
///     label: Some(b"refresh"),
///     msg: Some(Msg::Bytes(b".git/index")),
/// };
/// assert_eq!(ev.name(), "region_enter");
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
    /// Git's name of the event (`region_enter`, `th_timer`, ...).
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
