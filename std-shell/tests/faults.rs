//! Faults of the outputs: a reader that stops reading, a full disk, a file
//! size limit that cuts a line, numbers git truncates to a C `int`. Each
//! traced scenario runs in a fresh copy of this test binary, with a time
//! limit: a scenario that would hang fails instead.

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod trace2_scenario;
use trace2_scenario::{in_child, Scenario};

/// A hung child is killed after this long and the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `cmd` to its end, or kills it after [`LIMIT`] and panics.
fn run_bounded(mut cmd: Command) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain the pipes on threads so a chatty child cannot block on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the traced child hung for {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    let output = Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    };
    (output, elapsed)
}

fn warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .map(str::to_string)
        .collect()
}

/// The count of `warning: trace2: lost <n> lines for '<var>': ...`.
fn lost(warnings: &[String], var: &str) -> Option<u64> {
    let head = "warning: trace2: lost ";
    let tail = format!(" for '{var}'");
    warnings.iter().find_map(|w| {
        let rest = w.strip_prefix(head)?;
        let (n, rest) = rest.split_once(' ')?;
        let rest = rest.strip_prefix("lines").or(rest.strip_prefix("line"))?;
        rest.starts_with(&tail).then(|| n.parse().ok())?
    })
}

const THREADS: usize = 8;
const PER_THREAD: usize = 2000;

/// Eight threads tracing as fast as they can, then `exit` and `atexit`.
fn busy_threads() {
    let _t2 = flightrec::trace2::init();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                let _th = flightrec::trace2::thread_start(&format!("w{t}"));
                for i in 0..PER_THREAD {
                    flightrec::printf!("{t} {i} {}", "x".repeat(i % 200));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

/// Lines of the event target of `busy_threads` written to a file. The reference
/// run writes directly whatever mode is under test: the program emits the same
/// lines in both modes, and the background queue may drop lines under load.
fn busy_threads_total(s: &Scenario, test: &str, _mode: &str) -> u64 {
    let file = s.path("reference");
    let _ = std::fs::remove_file(&file);
    let mut cmd = s.command(test, test, &[("GIT_TRACE2_EVENT", &file)]);
    cmd.env("FLIGHTREC_TRACE2_WRITE", "direct");
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(warnings(&out), Vec::<String>::new());
    s.read("reference").lines().count() as u64
}

/// A listener that accepts and then reads nothing: every write mode ends
/// within the bound, warns once, and counts the lines it could not send.
fn stalled_listener(test: &str, mode: &str) {
    let s = Scenario::new();
    let total = busy_threads_total(&s, test, mode);
    let sock = s.file("sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let acceptor = std::thread::spawn(move || listener.accept().unwrap().0);
    let target = format!("af_unix:stream:{}", sock.display());
    let mut cmd = s.command(test, test, &[("GIT_TRACE2_EVENT", &target)]);
    cmd.env("FLIGHTREC_TRACE2_WRITE", mode)
        .env("FLIGHTREC_TRACE2_TIMEOUT_MS", "300");
    let (out, elapsed) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let w = warnings(&out);
    let stalled = "warning: unable to write trace to 'GIT_TRACE2_EVENT': \
                   the reader took no data for 300 ms (FLIGHTREC_TRACE2_TIMEOUT_MS)";
    assert_eq!(
        w.iter().filter(|l| *l == stalled).count(),
        1,
        "one warning: {w:?}"
    );
    let n = lost(&w, "GIT_TRACE2_EVENT").unwrap_or_else(|| panic!("no count: {w:?}"));
    assert!(n > 0);
    // The background queue also drops lines while the writer waits.
    let dropped: u64 = w
        .iter()
        .find_map(|l| {
            let rest = l.strip_prefix("warning: trace2: dropped ")?;
            rest.split(' ').next()?.parse().ok()
        })
        .unwrap_or(0);
    // What reached the socket plus what was counted is every line.
    let mut stream = acceptor.join().unwrap();
    let mut got = Vec::new();
    stream.read_to_end(&mut got).unwrap();
    // The marks of dropped lines (region `flightrec`/`dropped`) are the
    // runtime's own lines, in no count.
    // Whole lines only: a line the stall cut short is counted lost.
    let whole = got.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let received = got[..whole]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter(|l| {
            let marker = br#""category":"flightrec","label":"dropped""#;
            !l.windows(marker.len()).any(|w| w == marker)
        })
        .count() as u64;
    assert_eq!(received + n + dropped, total, "{w:?}");
    // A few waits of 300 ms, not a hang; generous for a loaded machine.
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    eprintln!("{mode}: {n} lost and {dropped} dropped of {total} lines, exit after {elapsed:?}");
}

#[test]
fn stalled_listener_direct() {
    if in_child("stalled_listener_direct", busy_threads) {
        return;
    }
    stalled_listener("stalled_listener_direct", "direct");
}

#[test]
fn stalled_listener_background() {
    if in_child("stalled_listener_background", busy_threads) {
        return;
    }
    stalled_listener("stalled_listener_background", "background");
}

fn few_lines() {
    let _t2 = flightrec::trace2::init();
    for i in 0..100 {
        flightrec::printf!("line {i} {}", "y".repeat(i));
    }
}

/// `/dev/full` fails every write with `ENOSPC`: every line is counted and
/// reported at exit, with no `DST_DEBUG` needed.
fn full_disk(test: &str, mode: &str) {
    let s = Scenario::new();
    let reference = s.path("reference");
    let mut cmd = s.command(test, test, &[("GIT_TRACE2", &reference)]);
    cmd.env("FLIGHTREC_TRACE2_WRITE", mode);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let total = s.read("reference").lines().count();
    let mut cmd = s.command(test, test, &[("GIT_TRACE2", "/dev/full")]);
    cmd.env("FLIGHTREC_TRACE2_WRITE", mode);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        warnings(&out),
        [format!(
            "warning: trace2: lost {total} lines for 'GIT_TRACE2': No space left on device"
        )]
    );
}

#[test]
fn full_disk_direct() {
    if in_child("full_disk_direct", few_lines) {
        return;
    }
    full_disk("full_disk_direct", "direct");
}

#[test]
fn full_disk_background() {
    if in_child("full_disk_background", few_lines) {
        return;
    }
    full_disk("full_disk_background", "background");
}

/// A file size limit stands for a disk that fills in the middle of a line:
/// the write is short, then fails. The cut line is counted, and said so.
fn size_limited() {
    // SAFETY: setting this process's own signal disposition and limit
    // before any thread starts; SIGXFSZ would otherwise kill it.
    let limit: libc::rlim_t = std::env::var("FAULTS_FILE_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: limit,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    few_lines();
}

fn cut_line(test: &str, mode: &str) {
    let s = Scenario::new();
    let reference = s.path("reference");
    let mut cmd = s.command(test, "uncut", &[("GIT_TRACE2", &reference)]);
    cmd.env("FLIGHTREC_TRACE2_WRITE", mode);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let uncut = s.read("reference");
    let total = uncut.lines().count();
    // The limit falls in the middle of the line of `line 20`, wherever the
    // lines before it end (their length depends on the program's path).
    let limit = uncut.find("line 20 ").expect("the reference has line 20") + 4;
    let limited = s.path("limited");
    let mut cmd = s.command(test, test, &[("GIT_TRACE2", &limited)]);
    cmd.env("FLIGHTREC_TRACE2_WRITE", mode);
    cmd.env("FAULTS_FILE_LIMIT", limit.to_string());
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read(&limited).unwrap();
    assert_eq!(text.len(), limit);
    assert_ne!(text.last(), Some(&b'\n'), "the limit falls inside a line");
    let whole = text.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(
        warnings(&out),
        [format!(
            "warning: trace2: lost {} lines for 'GIT_TRACE2': File too large \
             (a line was written cut short)",
            total - whole
        )]
    );
}

#[test]
fn cut_line_direct() {
    if in_child("uncut", few_lines) || in_child("cut_line_direct", size_limited) {
        return;
    }
    cut_line("cut_line_direct", "direct");
}

#[test]
fn cut_line_background() {
    if in_child("uncut", few_lines) || in_child("cut_line_background", size_limited) {
        return;
    }
    cut_line("cut_line_background", "background");
}

// ---------------------------------------------------------------------------
// Numbers git reads with atoi(): a C int.

fn git_available() -> bool {
    let found = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "git is required under CI");
        eprintln!("git not found: comparisons with git skipped");
    }
    found
}

fn git_in(dir: &std::path::Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    out
}

fn config_of(envs: &[(&str, &str)]) -> flightrec::trace2::config::Trace2Config {
    flightrec::trace2::config::Trace2Config::load_from("GIT_TRACE2", |name| {
        if name == "GIT_CONFIG_NOSYSTEM" {
            return Some("1".into());
        }
        envs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into())
    })
}

#[test]
fn max_files_past_int_is_truncated_like_git() {
    // 4294967301 is 2^32 + 5: git's limit is 5 entries, `.` and `..`
    // included, so four files fill the directory.
    let value = "4294967301";
    assert_eq!(config_of(&[("GIT_TRACE2_MAX_FILES", value)]).max_files, 5);
    if !git_available() {
        return;
    }
    let s = Scenario::new();
    let dir = s.file("traces");
    for (files, discarded) in [(2, false), (3, true)] {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        for i in 0..files {
            std::fs::write(dir.join(format!("f{i}")), "").unwrap();
        }
        let d = dir.to_str().unwrap();
        git_in(
            &s.dir,
            &["version"],
            &[("GIT_TRACE2_EVENT", d), ("GIT_TRACE2_MAX_FILES", value)],
        );
        let sentinel = dir.join(flightrec::trace2::target::DISCARD_SENTINEL);
        assert_eq!(sentinel.exists(), discarded, "git with {files} files");
    }
}

#[test]
fn event_nesting_past_int_is_truncated_like_git() {
    // 4294967297 is 2^32 + 1: git keeps regions of nesting 1 only.
    let value = "4294967297";
    assert_eq!(
        config_of(&[("GIT_TRACE2_EVENT_NESTING", value)]).event_nesting,
        1
    );
    if !git_available() {
        return;
    }
    let s = Scenario::new();
    let repo = s.file("repo");
    std::fs::create_dir(&repo).unwrap();
    git_in(&repo, &["init", "-q", "."], &[]);
    std::fs::write(repo.join("a"), "a").unwrap();
    git_in(&repo, &["add", "a"], &[]);
    let nestings = |nesting: Option<&str>| -> Vec<u64> {
        let ev = s.path("event");
        let _ = std::fs::remove_file(&ev);
        let mut envs = vec![("GIT_TRACE2_EVENT", ev.as_str())];
        if let Some(n) = nesting {
            envs.push(("GIT_TRACE2_EVENT_NESTING", n));
        }
        git_in(&repo, &["status"], &envs);
        let mut n: Vec<u64> = trace2_scenario::events(&s.read("event"))
            .iter()
            .filter_map(|e| e["nesting"].as_u64())
            .collect();
        n.sort_unstable();
        n.dedup();
        n
    };
    assert_eq!(nestings(None), [1, 2], "git status nests regions");
    assert_eq!(nestings(Some(value)), [1]);
}

// ---------------------------------------------------------------------------
// XRay outputs that cannot be written.

use flightrec::core::fdr::FunctionId;
use flightrec::xray::{Config, Mode};

/// Records `calls` calls of function 1 (named `main_loop`) on this thread.
fn record(calls: u64) {
    let f = FunctionId::new(1).unwrap();
    flightrec::xray::set_function_name(f, "main_loop");
    for i in 0..calls {
        let _g = flightrec::xray::enter_with_arg(f, i);
    }
}

fn xray_config(base: &str, mode: Mode) -> flightrec::xray::ConfigBuilder {
    Config::builder()
        .logfile_base(base)
        .mode(mode)
        .func_duration_threshold_us(0)
        .buffer_size(4096)
        .buffer_max(64)
        .thread_buffers(32)
        .flush_interval_ms(5)
}

/// Stands for a disk that fills after `bytes` bytes of any one file.
fn limit_file_size(bytes: u64) {
    // SAFETY: this process's own signal disposition and limit, set before
    // tracing starts; SIGXFSZ would otherwise kill it.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Files of `dir` whose names start with `prefix`, sorted.
fn files_in(dir: &std::path::Path, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// The scenarios below take their trace prefix from this variable.
const BASE: &str = "FAULTS_XRAY_BASE";

fn base() -> String {
    std::env::var(BASE).unwrap()
}

#[test]
fn xray_missing_directory_is_reported_at_init_and_exit() {
    if in_child("xray_missing_directory", || {
        flightrec::xray::init(xray_config(&base(), Mode::FlightRecorder).build().unwrap()).unwrap();
        record(100);
    }) {
        return;
    }
    let s = Scenario::new();
    let missing = s.file("missing");
    let base = format!("{}/t-", missing.display());
    let mut cmd = s.command(
        "xray_missing_directory_is_reported_at_init_and_exit",
        "xray_missing_directory",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let err = stderr_of(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("XRay")).collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(
        lines[0],
        format!(
            "XRay: flightrec: cannot write traces to '{}': No such file or directory",
            missing.display()
        )
    );
    assert!(
        lines[1].starts_with(&format!(
            "XRay: flightrec: XRay output: cannot create '{base}"
        )) && lines[1].ends_with("XXXXXX': No such file or directory"),
        "{err}"
    );
}

#[test]
fn xray_flight_recorder_cut_short_is_renamed_and_reported() {
    if in_child("xray_fr_cut", || {
        // 32 buffers of 4 kB do not fit under 20 kB.
        limit_file_size(20_000);
        flightrec::xray::init(xray_config(&base(), Mode::FlightRecorder).build().unwrap()).unwrap();
        record(20_000);
    }) {
        return;
    }
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(
        "xray_flight_recorder_cut_short_is_renamed_and_reported",
        "xray_fr_cut",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let files = files_in(&s.dir, "t-");
    assert_eq!(files.len(), 2, "{files:?}");
    let (trace, names) = (&files[0], &files[1]);
    assert!(trace.ends_with(".incomplete"), "{files:?}");
    assert_eq!(*names, format!("{trace}.names"));
    let whole = trace.strip_suffix(".incomplete").unwrap();
    let err = stderr_of(&out);
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("XRay"))
            .collect::<Vec<_>>(),
        [format!(
            "XRay: flightrec: XRay output: cannot write '{}/{whole}': File too large; \
             the part written is in '{}/{trace}'",
            s.dir.display(),
            s.dir.display()
        )]
    );
    let len = std::fs::metadata(s.file(trace)).unwrap().len();
    assert_eq!(len, 20_000, "cut at the limit");
}

#[test]
fn xray_streaming_cut_short_is_renamed_and_reported_once() {
    if in_child("xray_stream_cut", || {
        limit_file_size(20_000);
        flightrec::xray::init(xray_config(&base(), Mode::Streaming).build().unwrap()).unwrap();
        for _ in 0..20 {
            record(2_000);
            std::thread::sleep(Duration::from_millis(10));
        }
    }) {
        return;
    }
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(
        "xray_streaming_cut_short_is_renamed_and_reported_once",
        "xray_stream_cut",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let files = files_in(&s.dir, "t-");
    assert_eq!(files.len(), 2, "{files:?}");
    let trace = &files[0];
    assert!(trace.ends_with(".incomplete"), "{files:?}");
    assert_eq!(files[1], format!("{trace}.names"));
    let whole = format!(
        "{}/{}",
        s.dir.display(),
        trace.strip_suffix(".incomplete").unwrap()
    );
    let err = stderr_of(&out);
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("XRay"))
            .collect::<Vec<_>>(),
        [format!(
            "XRay: flightrec: tracing disabled: cannot write the trace file '{whole}': \
             File too large; the trace so far is in '{whole}.incomplete'"
        )]
    );
}

#[test]
fn xray_streaming_sigkill_leaves_a_names_file() {
    if in_child("xray_stream_kill", || {
        flightrec::xray::init(xray_config(&base(), Mode::Streaming).build().unwrap()).unwrap();
        record(1000);
        // The writer thread runs every 5 ms: give it a few rounds.
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: ends this process at once, as `kill -9` would.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }) {
        return;
    }
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(
        "xray_streaming_sigkill_leaves_a_names_file",
        "xray_stream_kill",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{out:?}");
    let files = files_in(&s.dir, "t-");
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(files[1], format!("{}.names", files[0]));
    let elf = std::fs::read(s.file(&files[1])).unwrap();
    assert!(elf.starts_with(b"\x7fELF"));
    assert!(elf.windows(12).any(|w| w == b"1\tmain_loop\n"));
}

fn dump_on_signal(test: &str, scenario: &str, sig: i32, flag: bool) {
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(test, scenario, &[]);
    cmd.env(BASE, &base)
        .env("FAULTS_SIGNAL", sig.to_string())
        .env("FAULTS_FLAG", if flag { "1" } else { "" });
    let (out, _) = run_bounded(cmd);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(sig), "{out:?}");
    let files = files_in(&s.dir, "t-");
    if !flag {
        assert_eq!(files, Vec::<String>::new(), "off by default");
        return;
    }
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(files[1], format!("{}.names", files[0]));
    let err = stderr_of(&out);
    assert!(
        err.contains(&format!(
            "XRay: flightrec: fatal signal; trace written to '{}/{}'",
            s.dir.display(),
            files[0]
        )),
        "{err}"
    );
    // The 32-byte header and the buffer of the 100 calls.
    let len = std::fs::metadata(s.file(&files[0])).unwrap().len();
    assert!(len > 32 + 100 * 8, "{len}");
}

fn signalled_child() {
    let flag = std::env::var("FAULTS_FLAG").is_ok_and(|v| v == "1");
    let sig: i32 = std::env::var("FAULTS_SIGNAL").unwrap().parse().unwrap();
    // A program that does not handle the signal: its default action, whatever
    // the test runner left (a shell's background job inherits SIGINT ignored,
    // and flightrec rightly leaves an ignored signal alone).
    // SAFETY: `signal` with SIG_DFL, before any other thread of this child runs.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
    flightrec::xray::init(
        xray_config(&base(), Mode::FlightRecorder)
            .dump_on_signal(flag)
            .build()
            .unwrap(),
    )
    .unwrap();
    record(100);
    // SAFETY: the program does not handle the signal: it ends the process.
    unsafe { libc::raise(sig) };
    unreachable!("the signal ends the process");
}

#[test]
fn xray_dump_on_sigterm() {
    if in_child("xray_sig", signalled_child) {
        return;
    }
    dump_on_signal("xray_dump_on_sigterm", "xray_sig", libc::SIGTERM, true);
    dump_on_signal("xray_dump_on_sigterm", "xray_sig", libc::SIGINT, true);
    dump_on_signal("xray_dump_on_sigterm", "xray_sig", libc::SIGTERM, false);
}

/// A one-thread program that faults inside a record: the payload of its
/// custom event is a page it cannot read, so the fault comes while the runtime
/// copies it, and the handler runs on that thread with its ring busy.
fn fault_in_record_child() {
    flightrec::xray::init(xray_config(&base(), Mode::FlightRecorder).build().unwrap()).unwrap();
    record(1000);
    flightrec::xray::custom_event(b"the last whole event");
    // SAFETY: a fresh anonymous mapping that nothing can read.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    // SAFETY: none; the slice points at memory that cannot be read, on purpose:
    // the copy faults (SIGSEGV) and the process dies of it.
    let unreadable = unsafe { std::slice::from_raw_parts(page.cast::<u8>(), 64) };
    flightrec::xray::custom_event(unreadable);
    unreachable!("the copy of the payload faults");
}

/// A fault inside a record writes the faulting thread's buffers up to its last
/// complete record, with the end block and the names file: a whole trace.
/// (The handler used to wait for the record in progress, leave the ring out,
/// and write nothing, silently.)
#[test]
fn xray_fault_inside_a_record_writes_what_exists() {
    if in_child("xray_fault_in_record", fault_in_record_child) {
        return;
    }
    use flightrec::core::fdr::decoder::{verify, Decoder};
    use flightrec::core::fdr::records::Record;
    use std::os::unix::process::ExitStatusExt;
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(
        "xray_fault_inside_a_record_writes_what_exists",
        "xray_fault_in_record",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    let err = stderr_of(&out);
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    let files = files_in(&s.dir, "t-");
    assert_eq!(files.len(), 2, "{files:?}\n{err}");
    assert_eq!(files[1], format!("{}.names", files[0]));
    assert!(
        err.contains(&format!(
            "XRay: flightrec: fatal signal; trace written to '{}/{}'",
            s.dir.display(),
            files[0]
        )),
        "{err}"
    );
    let trace = std::fs::read(s.file(&files[0])).unwrap();
    let summary = verify(&trace).unwrap();
    assert_eq!(summary.function_records, 2000, "{summary:?}");
    let events: Vec<Vec<u8>> = Decoder::new(&trace)
        .unwrap()
        .filter_map(|d| match d.unwrap().record {
            Record::CustomEvent { payload, .. } => Some(payload.to_vec()),
            _ => None,
        })
        .collect();
    assert_eq!(events, [b"the last whole event".to_vec()]);
}

/// A fatal signal before anything was recorded: no trace, and one line that
/// says so and why.
#[test]
fn xray_fatal_signal_with_nothing_recorded_says_so() {
    if in_child("xray_nothing_recorded", || {
        flightrec::xray::init(xray_config(&base(), Mode::FlightRecorder).build().unwrap()).unwrap();
        std::process::abort();
    }) {
        return;
    }
    use std::os::unix::process::ExitStatusExt;
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(
        "xray_fatal_signal_with_nothing_recorded_says_so",
        "xray_nothing_recorded",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    let err = stderr_of(&out);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{err}");
    assert_eq!(files_in(&s.dir, "t-"), Vec::<String>::new());
    assert!(
        err.contains("XRay: flightrec: fatal signal; no trace written: nothing was recorded\n"),
        "{err}"
    );
}

/// A flight recorder that overwrote buffers says so at exit, with the default
/// verbosity (0).
#[test]
fn xray_overwritten_buffers_are_reported_at_exit_without_verbosity() {
    if in_child("xray_overwrites", || {
        flightrec::xray::init(
            xray_config(&base(), Mode::FlightRecorder)
                .buffer_max(2)
                .thread_buffers(2)
                .build()
                .unwrap(),
        )
        .unwrap();
        record(5000);
    }) {
        return;
    }
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(
        "xray_overwritten_buffers_are_reported_at_exit_without_verbosity",
        "xray_overwrites",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("XRay: flightrec: the trace lacks records: "))
        .unwrap_or_else(|| panic!("no loss line: {err}"));
    let overwritten: u64 = line
        .strip_prefix("XRay: flightrec: the trace lacks records: ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(overwritten > 0, "{line}");
}

/// The output check at `init` gives the reason the dump would meet: under a
/// regular file, `Not a directory` (it said `Permission denied`); in `/proc`,
/// which takes no new file, a line too (it said nothing).
#[test]
fn xray_unwritable_directories_are_reported_with_the_real_reason() {
    if in_child("xray_bad_dir", || {
        flightrec::xray::init(xray_config(&base(), Mode::FlightRecorder).build().unwrap()).unwrap();
    }) {
        return;
    }
    let s = Scenario::new();
    let file = s.file("regular");
    std::fs::write(&file, b"").unwrap();
    for (base, dir, why) in [
        (
            format!("{}/t-", file.display()),
            file.display().to_string(),
            Some("Not a directory"),
        ),
        ("/proc/x-".to_owned(), "/proc".to_owned(), None),
    ] {
        let mut cmd = s.command(
            "xray_unwritable_directories_are_reported_with_the_real_reason",
            "xray_bad_dir",
            &[],
        );
        cmd.env(BASE, &base);
        let (out, _) = run_bounded(cmd);
        assert!(out.status.success(), "{out:?}");
        let err = stderr_of(&out);
        let head = format!("XRay: flightrec: cannot write traces to '{dir}': ");
        let line = err
            .lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("{base}: {err}"));
        if let Some(why) = why {
            assert_eq!(line, format!("{head}{why}"));
        }
    }
}

/// When the disk takes a cut trace but not its names file, no names file is
/// left (it used to be left empty beside `<trace>.incomplete`).
#[test]
fn xray_names_file_that_cannot_be_written_whole_is_not_left() {
    if in_child("xray_names_cut", || {
        // The 32-byte header and a little more; no names ELF fits.
        limit_file_size(100);
        flightrec::xray::init(xray_config(&base(), Mode::FlightRecorder).build().unwrap()).unwrap();
        record(100);
    }) {
        return;
    }
    let s = Scenario::new();
    let base = format!("{}/t-", s.dir.display());
    let mut cmd = s.command(
        "xray_names_file_that_cannot_be_written_whole_is_not_left",
        "xray_names_cut",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let files = files_in(&s.dir, "t-");
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with(".incomplete"), "{files:?}");
    assert!(stderr_of(&out).contains("the part written is in"));
}

/// A program that calls `shutdown()` and ignores its error still tells the
/// user: the trace could not be written, and why (the exit hook, which used to
/// say it, then finds the runtime shut down).
#[test]
fn xray_shutdown_error_ignored_by_the_program_is_still_said() {
    if in_child("xray_shutdown_ignored", || {
        flightrec::xray::init(xray_config(&base(), Mode::FlightRecorder).build().unwrap()).unwrap();
        record(100);
        let _ = flightrec::xray::shutdown();
    }) {
        return;
    }
    let s = Scenario::new();
    let missing = s.file("missing");
    let base = format!("{}/t-", missing.display());
    let mut cmd = s.command(
        "xray_shutdown_error_ignored_by_the_program_is_still_said",
        "xray_shutdown_ignored",
        &[],
    );
    cmd.env(BASE, &base);
    let (out, _) = run_bounded(cmd);
    assert!(out.status.success(), "{out:?}");
    let err = stderr_of(&out);
    let cannot: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("XRay: flightrec: XRay output: cannot create"))
        .collect();
    assert_eq!(cannot.len(), 1, "{err}");
    assert!(cannot[0].ends_with("No such file or directory"), "{err}");
}
