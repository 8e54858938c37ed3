//! `test-tool trace2 <subcommand> <args...>`: git's Trace2 test helper
//! (`t/helper/test-trace2.c`) on flightrec's runtime, with the same
//! subcommands, arguments, events and exit codes, so that git's own Trace2
//! tests (t0210 normal, t0211 perf, t0212 event) can be run against it.
//!
//! ```text
//! GIT_TRACE2_PERF=/tmp/t.perf GIT_TRACE2_PERF_BRIEF=1 \
//!     cargo run -q -p flightrec --example test-tool -- trace2 004child test-tool trace2 001return 0
//! ```
//!
//! Differences from git's helper: the `version` event reports flightrec's
//! version; `BUG` messages name this file; `def_param`s of
//! `GIT_TRACE2_CONFIG_PARAMS` come from the system, global and local config
//! files (not from `-c`, which the helper has no use for).

use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flightrec::trace2::{self, ConfigParam, Counter, Repo, Timer};

/// git's `TRACE2_TIMER_ID_TEST1` / `TEST2`.
static TIMER_TEST1: Timer = Timer::new("test", "test1", false);
static TIMER_TEST2: Timer = Timer::new("test", "test2", true);
/// git's `TRACE2_COUNTER_ID_TEST1` / `TEST2`.
static COUNTER_TEST1: Counter = Counter::new("test", "test1", false);
static COUNTER_TEST2: Counter = Counter::new("test", "test2", true);

/// Exit code of `BUG()` in git's test helpers.
const BUG_EXIT_CODE: i32 = 99;

/// Set by `bug()`, cleared by `BUG_if_bug()` (git's `bug_called_must_BUG`).
static BUG_CALLED: AtomicBool = AtomicBool::new(false);

const USAGE: &str = "usage: test-tool trace2 <ut_name_1> <ut_usage_1>
   or: test-tool trace2 <ut_name_2> <ut_usage_2> ...

  001return <exit_code>
  002exit <exit_code>
  003error <error_message>+
  004child [<child_command_line>]
  005exec <git_command_args>
  006data [<category> <key> <value>]+
  007BUG
  008bug
  009bug_BUG
  010bug_BUG
  100timer <count> <ms_delay>
  101timer <count> <ms_delay> <threads>
  200counter <v1> [<v2> [<v3> [...]]]
  201counter <v1> <v2> <threads>
  300redact_start <argv...>
  301redact_child_start <argv...>
  302redact_exec <exe> <argv...>
  303redact_def_param <key> <value>
";

fn main() -> ExitCode {
    let t2 = trace2::Builder::new()
        .config_params(git_config_params)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("trace2") {
        eprint!("{USAGE}");
        return t2.exit(129);
    }
    trace2::cmd_name("trace2");
    let code = run(&args[1..]);
    if BUG_CALLED.load(Ordering::Relaxed) {
        big_bug("on exit(): had bug() call(s) in this process without explicit BUG_if_bug()");
    }
    t2.exit(code)
}

fn run(args: &[String]) -> i32 {
    let Some((name, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return 129;
    };
    match name.as_str() {
        "001return" => ut_001return(rest),
        "002exit" => ut_002exit(rest),
        "003error" => ut_003error(rest),
        "004child" => ut_004child(rest),
        "005exec" => ut_005exec(rest),
        "006data" => ut_006data(rest),
        "007bug" => big_bug("the bug message"),
        "008bug" => {
            bug(format_args!("a bug message"), "a bug message");
            bug(format_args!("another bug message"), "another bug message");
            bug_if_bug(
                "an explicit BUG_if_bug() following bug() call(s) is nice, but not required",
            );
            0
        }
        "009bug_BUG" => {
            bug(format_args!("a bug message"), "a bug message");
            bug(format_args!("another bug message"), "another bug message");
            0
        }
        "010bug_BUG" => {
            bug(format_args!("a {} message", "bug"), "a %s message");
            big_bug_fmt(format_args!("a {} message", "BUG"), "a %s message")
        }
        "100timer" => ut_100timer(rest),
        "101timer" => ut_101timer(rest),
        "200counter" => ut_200counter(rest),
        "201counter" => ut_201counter(rest),
        "300redact_start" => {
            trace2::cmd_start(rest);
            0
        }
        "301redact_child_start" => ut_301redact_child_start(rest),
        "302redact_exec" => ut_302redact_exec(rest),
        "303redact_def_param" => ut_303redact_def_param(rest),
        _ => {
            eprint!("{USAGE}");
            129
        }
    }
}

/// git's `die()`: an `error` event, `fatal: <msg>` on stderr, exit 128.
#[track_caller]
fn die(msg: &str) -> ! {
    trace2::error(msg);
    eprintln!("fatal: {msg}");
    trace2::exit(128)
}

/// git's `error("%s", msg)`.
#[track_caller]
fn error_s(msg: &str) {
    trace2::error_fmt("%s", format_args!("{msg}"));
    eprintln!("error: {msg}");
}

/// git's `bug()`: reports and remembers that a `BUG_if_bug()` is due.
#[track_caller]
fn bug(msg: std::fmt::Arguments<'_>, fmt: &str) {
    let loc = std::panic::Location::caller();
    trace2::error_fmt(fmt, msg);
    eprintln!("BUG: {}:{}: {msg}", loc.file(), loc.line());
    BUG_CALLED.store(true, Ordering::Relaxed);
}

/// git's `BUG_if_bug()`.
#[track_caller]
fn bug_if_bug(msg: &str) {
    if BUG_CALLED.load(Ordering::Relaxed) {
        big_bug(msg);
    }
}

/// git's `BUG()` with a plain message.
#[track_caller]
fn big_bug(msg: &str) -> ! {
    big_bug_fmt(format_args!("{msg}"), msg)
}

/// git's `BUG()`: an `error` event, `BUG: file:line: msg` on stderr, and exit
/// code 99 in test helpers.
#[track_caller]
fn big_bug_fmt(msg: std::fmt::Arguments<'_>, fmt: &str) -> ! {
    let loc = std::panic::Location::caller();
    BUG_CALLED.store(false, Ordering::Relaxed);
    trace2::error_fmt(fmt, msg);
    eprintln!("BUG: {}:{}: {msg}", loc.file(), loc.line());
    trace2::exit(BUG_EXIT_CODE)
}

fn int(s: &str, what: &str) -> i32 {
    s.parse().unwrap_or_else(|_| die(what))
}

fn ut_001return(args: &[String]) -> i32 {
    match args {
        [code] => int(code, "expect <exit_code>"),
        _ => die("expect <exit_code>"),
    }
}

fn ut_002exit(args: &[String]) -> i32 {
    match args {
        [code] => trace2::exit(int(code, "expect <exit_code>")),
        _ => die("expect <exit_code>"),
    }
}

fn ut_003error(args: &[String]) -> i32 {
    if args.is_empty() {
        die("expect <error_message>");
    }
    for a in args {
        error_s(a);
    }
    0
}

/// Runs the arguments as a child process (git's `run_command`) and returns
/// its exit code.
fn ut_004child(args: &[String]) -> i32 {
    let Some((program, rest)) = args.split_first() else {
        return 0;
    };
    let mut cmd = Command::new(program);
    cmd.args(rest);
    match trace2::child(&mut cmd).status() {
        Ok(status) => status.code().unwrap_or(-1),
        Err(e) => {
            error_s(&format!("cannot run {program}: {e}"));
            -1
        }
    }
}

/// Replaces this process with `git <args>`.
fn ut_005exec(args: &[String]) -> i32 {
    if args.is_empty() {
        return 0;
    }
    let err = trace2::exec(Command::new("git").args(args));
    error_s(&format!("cannot exec 'git': {err}"));
    -1
}

fn ut_006data(args: &[String]) -> i32 {
    if args.is_empty() || args.len() % 3 != 0 {
        die("expect [<category> <key> <value>]+");
    }
    for t in args.chunks(3) {
        trace2::data_in(Repo::THE_REPOSITORY, &t[0], &t[1], &t[2]);
    }
    0
}

fn ut_100timer(args: &[String]) -> i32 {
    let [count, delay] = args else {
        die("expect <count> <ms_delay>")
    };
    let count = int(count, "expect <count> <ms_delay>");
    let delay = int(delay, "expect <count> <ms_delay>");
    for _ in 0..count {
        TIMER_TEST1.start();
        sleep_ms(delay);
        TIMER_TEST1.stop();
    }
    0
}

fn ut_101timer(args: &[String]) -> i32 {
    let [count, delay, threads] = args else {
        die("expect <count> <ms_delay> <threads>")
    };
    let usage = "expect <count> <ms_delay> <threads>";
    let (count, delay, threads) = (int(count, usage), int(delay, usage), int(threads, usage));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let _t2 = trace2::thread_start("ut_101");
                for _ in 0..count {
                    TIMER_TEST2.start();
                    sleep_ms(delay);
                    TIMER_TEST2.stop();
                }
            })
        })
        .collect();
    join(workers)
}

fn ut_200counter(args: &[String]) -> i32 {
    if args.is_empty() {
        die("expect <v1> [<v2> [...]]");
    }
    for v in args {
        COUNTER_TEST1.add(int(v, "expect <v1> [<v2> [...]]") as u64);
    }
    0
}

fn ut_201counter(args: &[String]) -> i32 {
    let [v1, v2, threads] = args else {
        die("expect <v1> <v2> <threads>")
    };
    let usage = "expect <v1> <v2> <threads>";
    let (v1, v2, threads) = (
        int(v1, usage) as u64,
        int(v2, usage) as u64,
        int(threads, usage),
    );
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let _t2 = trace2::thread_start("ut_201");
                COUNTER_TEST2.add(v1);
                COUNTER_TEST2.add(v2);
            })
        })
        .collect();
    join(workers)
}

fn ut_301redact_child_start(args: &[String]) -> i32 {
    let Some((program, rest)) = args.split_first() else {
        die("expect <argv...>")
    };
    let mut cmd = Command::new(program);
    cmd.args(rest);
    // Announced only: the child is neither run nor reported as exited.
    let _ = trace2::child(&mut cmd).announce();
    0
}

fn ut_302redact_exec(args: &[String]) -> i32 {
    let Some((exe, rest)) = args.split_first() else {
        die("expect <exe> <argv...>")
    };
    trace2::exec_event(Some(exe.as_ref()), rest);
    0
}

fn ut_303redact_def_param(args: &[String]) -> i32 {
    let [key, value] = args else {
        die("expect <key> <value>")
    };
    trace2::def_param(key, value);
    0
}

fn sleep_ms(ms: i32) {
    std::thread::sleep(Duration::from_millis(u64::try_from(ms).unwrap_or(0)));
}

fn join(workers: Vec<std::thread::JoinHandle<()>>) -> i32 {
    for w in workers {
        if w.join().is_err() {
            return 1;
        }
    }
    0
}

/// The config entries whose keys match `GIT_TRACE2_CONFIG_PARAMS`, with
/// their scopes: system, global, and the local config of the repository
/// around the current directory (git's test helper runs inside one).
fn git_config_params(cfg: &trace2::config::Trace2Config) -> Vec<ConfigParam> {
    trace2::config_params_from_files(cfg, git_dir().as_deref())
}

/// `$GIT_DIR`, or the nearest `.git` directory from the current directory up.
fn git_dir() -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("GIT_DIR") {
        return Some(d.into());
    }
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors().map(|d| d.join(".git")).find(|g| g.is_dir())
}
