//! The Trace2 runtime in a real process: each scenario runs in a fresh copy of
//! this test binary (the runtime is process-wide), with its own settings, and
//! the parent test checks the trace it wrote.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

mod trace2_scenario;
use trace2_scenario::{events, in_child, write_to_a_closed_pipe, Scenario};

/// Perf columns of a brief line, trimmed: depth, thread, event, repo, t_abs,
/// t_rel, category, payload (payload untrimmed on the left, to keep dots).
fn perf_cols(line: &str) -> Vec<String> {
    let mut cols: Vec<String> = line
        .splitn(8, " | ")
        .map(|c| c.trim_end().to_string())
        .collect();
    for c in cols.iter_mut().take(7) {
        *c = c.trim().to_string();
    }
    cols
}

fn event_names(evs: &[Value]) -> Vec<&str> {
    evs.iter().map(|e| e["event"].as_str().unwrap()).collect()
}

// ---- regions, data, nesting, file:line ----

static REGION_LINE: AtomicUsize = AtomicUsize::new(0);

#[test]
fn regions_data_and_nesting() {
    if in_child("regions_data_and_nesting", || {
        let _t2 = flightrec::trace2::init();
        flightrec::trace2::cmd_name("regions");
        {
            REGION_LINE.store(line!() as usize + 1, Ordering::Relaxed);
            let _outer = flightrec::region!("index", "refresh");
            let _inner = flightrec::region!("index", "inner");
            flightrec::data!("index", "entries", "{}", 1024);
        }
        flightrec::printf!("line {}", REGION_LINE.load(Ordering::Relaxed));
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "regions_data_and_nesting",
        &[
            ("GIT_TRACE2_PERF", &s.path("perf")),
            ("GIT_TRACE2_PERF_BRIEF", "1"),
            ("GIT_TRACE2_EVENT", &s.path("event")),
            ("GIT_TRACE2", &s.path("normal")),
            ("GIT_TRACE2_BRIEF", "1"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // perf: dots per level on every line, nesting-independent of the event filter.
    let perf = s.read("perf");
    let rows: Vec<Vec<String>> = perf
        .lines()
        .map(perf_cols)
        .filter(|c| c[2].starts_with("region") || c[2] == "data")
        .collect();
    let got: Vec<(String, String, String)> = rows
        .iter()
        .map(|c| (c[2].clone(), c[6].clone(), c[7].clone()))
        .collect();
    let want = [
        ("region_enter", "index", "label:refresh"),
        ("region_enter", "index", "..label:inner"),
        ("data", "index", "....entries:1024"),
        ("region_leave", "index", "..label:inner"),
        ("region_leave", "index", "label:refresh"),
    ];
    assert_eq!(
        got,
        want.iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect::<Vec<_>>()
    );
    // region_leave and data carry t_rel, region_enter does not.
    assert!(rows[0][5].is_empty() && !rows[2][5].is_empty() && !rows[3][5].is_empty());

    // event: default nesting 2 drops the data at nesting 3.
    let evs = events(&s.read("event"));
    let nested: Vec<(&str, i64)> = evs
        .iter()
        .filter(|e| e.get("nesting").is_some())
        .map(|e| (e["event"].as_str().unwrap(), e["nesting"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        nested,
        [
            ("region_enter", 1),
            ("region_enter", 2),
            ("region_leave", 2),
            ("region_leave", 1)
        ]
    );
    let enter = evs.iter().find(|e| e["event"] == "region_enter").unwrap();
    assert_eq!(enter["file"], "std-shell/tests/trace2_runtime.rs");
    // The child printed the region's line number into its printf event.
    let printf = evs.iter().find(|e| e["event"] == "printf").unwrap();
    assert_eq!(printf["msg"], format!("line {}", enter["line"]));
    // Every line of the process has the same well-formed SID.
    let sid = evs[0]["sid"].as_str().unwrap();
    assert_eq!(sid.len(), 43);
    assert!(sid.ends_with(&format!("-P{:08x}", out_pid(&evs))));
    assert!(evs.iter().all(|e| e["sid"] == sid && e["thread"] == "main"));
    assert_eq!(event_names(&evs)[..2], ["version", "start"]);
    assert_eq!(event_names(&evs).last(), Some(&"atexit"));

    // normal: no region or data lines.
    let normal = s.read("normal");
    assert!(
        normal
            .lines()
            .all(|l| !l.starts_with("region_") && !l.contains("entries")),
        "{normal}"
    );
    assert!(
        normal.contains(&format!("line {}\n", enter["line"])),
        "{normal}"
    );
}

/// The pid in the SID (the last 8 hex digits).
fn out_pid(evs: &[Value]) -> u32 {
    let sid = evs[0]["sid"].as_str().unwrap();
    u32::from_str_radix(&sid[sid.len() - 8..], 16).unwrap()
}

#[test]
fn event_nesting_setting_lets_deeper_data_through() {
    if in_child("event_nesting_setting_lets_deeper_data_through", || {
        let _t2 = flightrec::trace2::init();
        let _a = flightrec::region!("a", "one");
        let _b = flightrec::region!("a", "two");
        flightrec::trace2::data("a", "k", "v");
    }) {
        return;
    }
    let s = Scenario::new();
    s.run(
        "event_nesting_setting_lets_deeper_data_through",
        &[
            ("GIT_TRACE2_EVENT", &s.path("event")),
            ("GIT_TRACE2_EVENT_NESTING", "3"),
        ],
    );
    let evs = events(&s.read("event"));
    let data = evs
        .iter()
        .find(|e| e["event"] == "data")
        .expect("data at nesting 3");
    assert_eq!(data["nesting"], 3);
    assert_eq!(data["value"], "v");
}

// ---- threads ----

#[test]
fn threads_main_conversion_and_unknown_threads() {
    if in_child("threads_main_conversion_and_unknown_threads", || {
        static PER_THREAD: flightrec::trace2::Counter =
            flightrec::trace2::Counter::new("test", "c", true);
        let _t2 = flightrec::trace2::init();
        {
            let _m = flightrec::trace2::thread_start("on-main");
            flightrec::trace2::data("t", "k", "main");
        }
        std::thread::spawn(|| {
            let _w = flightrec::trace2::thread_start("worker");
            PER_THREAD.add(5);
            let _r = flightrec::region!("t", "unbalanced"); // unwound at thread_exit
            std::mem::forget(_r);
        })
        .join()
        .unwrap();
        std::thread::spawn(|| flightrec::trace2::data("t", "k", "anonymous"))
            .join()
            .unwrap();
        PER_THREAD.add(1);
    }) {
        return;
    }
    let s = Scenario::new();
    s.run(
        "threads_main_conversion_and_unknown_threads",
        &[
            ("GIT_TRACE2_PERF", &s.path("perf")),
            ("GIT_TRACE2_PERF_BRIEF", "1"),
        ],
    );
    let rows: Vec<Vec<String>> = s.read("perf").lines().map(perf_cols).collect();
    let find =
        |thread: &str, event: &str| rows.iter().position(|c| c[1] == thread && c[2] == event);
    // thread_start on main is a region with the message only.
    let enter = &rows[find("main", "region_enter").unwrap()];
    assert_eq!(
        (enter[6].as_str(), enter[7].as_str()),
        ("", " thread-proc on main: on-main")
    );
    let leave = &rows[find("main", "region_leave").unwrap()];
    assert_eq!(leave[7], " thread-proc on main");
    let data = &rows[find("main", "data").unwrap()];
    assert_eq!(data[7], "..k:main");
    // The worker: thread_start, th_counter, thread_exit (after its region was unwound).
    let (ts, tc, te) = (
        find("th01:worker", "thread_start").unwrap(),
        find("th01:worker", "th_counter").unwrap(),
        find("th01:worker", "thread_exit").unwrap(),
    );
    assert!(ts < tc && tc < te);
    assert_eq!(rows[tc][7], "name:c value:5");
    assert_eq!(rows[te][7], "", "thread_exit at nesting 1: no dots");
    assert!(!rows[te][5].is_empty(), "thread_exit has t_rel");
    // A thread without thread_start gets a lazy context.
    assert_eq!(
        rows[find("th02:unknown", "data").unwrap()][7],
        "k:anonymous"
    );
    // main's per-thread counter, then the process total (worker 5 + main 1), then atexit.
    let n = rows.len();
    assert_eq!(
        (
            rows[n - 3][1].as_str(),
            rows[n - 3][2].as_str(),
            rows[n - 3][7].as_str()
        ),
        ("main", "th_counter", "name:c value:1")
    );
    assert_eq!(
        (rows[n - 2][2].as_str(), rows[n - 2][7].as_str()),
        ("counter", "name:c value:6")
    );
    assert_eq!(rows[n - 1][2], "atexit");
}

// ---- lifecycle ----

#[test]
fn panic_in_main_reports_error_and_code_101() {
    if in_child("panic_in_main_reports_error_and_code_101", || {
        let _t2 = flightrec::trace2::init();
        panic!("boom {}", 7);
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "panic_in_main_reports_error_and_code_101",
        &[("GIT_TRACE2_EVENT", &s.path("event"))],
    );
    assert_eq!(out.status.code(), Some(101));
    let evs = events(&s.read("event"));
    let names = event_names(&evs);
    let n = names.len();
    assert_eq!(names[n - 3..], ["error", "exit", "atexit"]);
    assert_eq!(evs[n - 3]["msg"], "boom 7");
    assert_eq!(evs[n - 3]["file"], "std-shell/tests/trace2_runtime.rs");
    assert_eq!(
        (evs[n - 2]["code"].as_i64(), evs[n - 1]["code"].as_i64()),
        (Some(101), Some(101))
    );
}

#[test]
fn process_exit_still_emits_exit_and_atexit() {
    if in_child("process_exit_still_emits_exit_and_atexit", || {
        let t2 = flightrec::trace2::init();
        std::mem::forget(t2); // as if main never returned
        std::process::exit(3);
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "process_exit_still_emits_exit_and_atexit",
        &[("GIT_TRACE2_PERF", &s.path("perf"))],
    );
    assert_eq!(out.status.code(), Some(3));
    let rows: Vec<Vec<String>> = s
        .read("perf")
        .lines()
        .map(|l| perf_cols(l.split_once(" | ").unwrap().1))
        .collect();
    let n = rows.len();
    assert_eq!(
        (rows[n - 2][2].as_str(), rows[n - 2][7].as_str()),
        ("exit", "code:3")
    );
    assert_eq!(
        (rows[n - 1][2].as_str(), rows[n - 1][7].as_str()),
        ("atexit", "code:3")
    );
}

#[test]
fn trace2_exit_masks_the_code() {
    if in_child("trace2_exit_masks_the_code", || {
        let _t2 = flightrec::trace2::init();
        flightrec::trace2::exit(-2);
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "trace2_exit_masks_the_code",
        &[("GIT_TRACE2", &s.path("normal")), ("GIT_TRACE2_BRIEF", "1")],
    );
    assert_eq!(out.status.code(), Some(254));
    let normal = s.read("normal");
    let tail: Vec<&str> = normal.lines().rev().take(2).collect();
    assert!(
        tail[0].starts_with("atexit elapsed:") && tail[0].ends_with(" code:254"),
        "{normal}"
    );
    assert!(
        tail[1].starts_with("exit elapsed:") && tail[1].ends_with(" code:254"),
        "{normal}"
    );
}

#[test]
fn sigpipe_with_default_disposition_emits_signal_and_no_atexit() {
    if in_child(
        "sigpipe_with_default_disposition_emits_signal_and_no_atexit",
        || {
            // SAFETY: test-only: restore the default SIGPIPE disposition before init.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            let _t2 = flightrec::trace2::init();
            write_to_a_closed_pipe();
            unreachable!("SIGPIPE ends the process");
        },
    ) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "sigpipe_with_default_disposition_emits_signal_and_no_atexit",
        &[("GIT_TRACE2_EVENT", &s.path("event"))],
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE));
    let evs = events(&s.read("event"));
    let last = evs.last().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["signo"].as_i64()),
        (Some("signal"), Some(13))
    );
    assert!(!event_names(&evs).contains(&"atexit"));
}

#[test]
fn broken_pipe_destination_disables_itself_with_one_warning() {
    if in_child(
        "broken_pipe_destination_disables_itself_with_one_warning",
        || {
            // SAFETY: test-only: SIGPIPE at its default, so a broken trace pipe
            // would kill the process if the runtime did not handle it.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            let mut fds = [0; 2];
            // SAFETY: fd 7 becomes the write end of a pipe whose read end is closed.
            unsafe {
                libc::pipe(fds.as_mut_ptr());
                libc::close(fds[0]);
                libc::dup2(fds[1], 7);
            }
            let _t2 = flightrec::trace2::init();
            flightrec::printf!("one");
            flightrec::printf!("two");
            println!("still running");
        },
    ) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "broken_pipe_destination_disables_itself_with_one_warning",
        &[("GIT_TRACE2", "7"), ("GIT_TRACE2_DST_DEBUG", "1")],
    );
    assert!(out.status.success(), "{:?}", out.status);
    assert!(String::from_utf8_lossy(&out.stdout).contains("still running"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    // git's one DST_DEBUG warning, then at exit the count of the lines lost
    // (all seven: the first write failed).
    assert_eq!(
        warnings,
        [
            "warning: unable to write trace to 'GIT_TRACE2': Broken pipe",
            "warning: trace2: lost 7 lines for 'GIT_TRACE2': Broken pipe"
        ]
    );
}

#[test]
fn nothing_configured_means_no_session() {
    if in_child("nothing_configured_means_no_session", || {
        let t2 = flightrec::trace2::init();
        assert!(!t2.is_active());
        assert!(!flightrec::trace2::enabled());
        assert!(std::env::var_os("GIT_TRACE2_PARENT_SID").is_none());
        let _r = flightrec::region!("a", "b");
        flightrec::trace2::cmd_name("x");
        assert!(std::env::var_os("GIT_TRACE2_PARENT_NAME").is_none());
        println!("checked");
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run("nothing_configured_means_no_session", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("checked"));
}

// ---- sessions, children, parameters ----

#[test]
fn parent_sid_and_name_are_inherited_and_exported() {
    if in_child("parent_sid_and_name_are_inherited_and_exported", || {
        let _t2 = flightrec::trace2::init();
        flightrec::trace2::cmd_name("child");
        let sid = std::env::var("GIT_TRACE2_PARENT_SID").unwrap();
        let name = std::env::var("GIT_TRACE2_PARENT_NAME").unwrap();
        flightrec::printf!("{sid} {name}");
    }) {
        return;
    }
    let s = Scenario::new();
    s.run(
        "parent_sid_and_name_are_inherited_and_exported",
        &[
            ("GIT_TRACE2_EVENT", &s.path("event")),
            ("GIT_TRACE2_PERF", &s.path("perf")),
            ("GIT_TRACE2_PERF_BRIEF", "1"),
            ("GIT_TRACE2_PARENT_SID", "outer-sid/middle-sid"),
            ("GIT_TRACE2_PARENT_NAME", "outer/middle"),
        ],
    );
    let evs = events(&s.read("event"));
    let sid = evs[0]["sid"].as_str().unwrap();
    assert!(sid.starts_with("outer-sid/middle-sid/"), "{sid}");
    let name = evs.iter().find(|e| e["event"] == "cmd_name").unwrap();
    assert_eq!(name["hierarchy"], "outer/middle/child");
    let printf = evs.iter().find(|e| e["event"] == "printf").unwrap();
    assert_eq!(printf["msg"], format!("{sid} outer/middle/child"));
    assert!(s.read("perf").lines().all(|l| l.starts_with("d2 | ")));
}

#[test]
fn children_get_the_session_and_report_exit_codes() {
    if in_child("children_get_the_session_and_report_exit_codes", || {
        let _t2 = flightrec::trace2::init();
        flightrec::trace2::cmd_name("parent");
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo \"$GIT_TRACE2_PARENT_SID|$GIT_TRACE2_PARENT_NAME\" > inherited.txt; exit 4",
        ])
        .current_dir(".");
        let status = flightrec::trace2::child(&mut cmd)
            .class("probe")
            .use_shell(true)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(4));
        let mut kill = Command::new("sh");
        kill.args(["-c", "kill -9 $$"]);
        flightrec::trace2::child(&mut kill)
            .hook("pre-commit")
            .status()
            .unwrap();
        let mut missing = Command::new("/nonexistent/program");
        assert!(flightrec::trace2::child(&mut missing).spawn().is_err());
    }) {
        return;
    }
    let s = Scenario::new();
    s.run(
        "children_get_the_session_and_report_exit_codes",
        &[
            ("GIT_TRACE2_EVENT", &s.path("event")),
            ("GIT_TRACE2", &s.path("normal")),
            ("GIT_TRACE2_BRIEF", "1"),
        ],
    );
    let evs = events(&s.read("event"));
    let sid = evs[0]["sid"].as_str().unwrap();
    assert_eq!(s.read("inherited.txt").trim_end(), format!("{sid}|parent"));
    let starts: Vec<&Value> = evs.iter().filter(|e| e["event"] == "child_start").collect();
    assert_eq!(starts[0]["child_class"], "probe");
    assert_eq!(starts[0]["use_shell"], true);
    assert_eq!(starts[0]["cd"], ".");
    assert_eq!(starts[1]["child_class"], "hook");
    assert_eq!(starts[1]["hook_name"], "pre-commit");
    let exits: Vec<(i64, i64)> = evs
        .iter()
        .filter(|e| e["event"] == "child_exit")
        .map(|e| (e["child_id"].as_i64().unwrap(), e["code"].as_i64().unwrap()))
        .collect();
    assert_eq!(exits, [(0, 4), (1, 128 + 9), (2, -1)]);
    let normal = s.read("normal");
    assert!(
        normal.contains("child_exit[2] pid:-1 code:-1 elapsed:"),
        "{normal}"
    );
    assert!(normal.contains("child_start[0] cd .; sh -c "), "{normal}");
}

#[test]
fn env_var_def_params_are_redacted_and_reported_once() {
    if in_child("env_var_def_params_are_redacted_and_reported_once", || {
        let _t2 = flightrec::trace2::init();
        flightrec::trace2::cmd_name("one");
        flightrec::trace2::cmd_name("two");
    }) {
        return;
    }
    let s = Scenario::new();
    s.run(
        "env_var_def_params_are_redacted_and_reported_once",
        &[
            ("GIT_TRACE2", &s.path("normal")),
            ("GIT_TRACE2_BRIEF", "1"),
            ("GIT_TRACE2_ENV_VARS", "MY_URL, MY_EMPTY ,MY_MISSING"),
            ("MY_URL", "https://user:pwd@example.com/"),
            ("MY_EMPTY", ""),
        ],
    );
    let normal = s.read("normal");
    let lines: Vec<&str> = normal
        .lines()
        .filter(|l| l.starts_with("cmd_name") || l.starts_with("def_param"))
        .collect();
    assert_eq!(
        lines,
        [
            "cmd_name one (one)",
            "def_param scope:command MY_URL=https://user:<REDACTED>@example.com/",
            "cmd_name two (one/two)",
        ]
    );
}

#[test]
fn reentrant_events_are_dropped_not_deadlocked() {
    if in_child("reentrant_events_are_dropped_not_deadlocked", || {
        struct Sneaky;
        impl std::fmt::Display for Sneaky {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                flightrec::printf!("inner");
                f.write_str("outer")
            }
        }
        let _t2 = flightrec::trace2::init();
        flightrec::printf!("{}", Sneaky);
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "reentrant_events_are_dropped_not_deadlocked",
        &[("GIT_TRACE2", &s.path("normal")), ("GIT_TRACE2_BRIEF", "1")],
    );
    assert!(out.status.success());
    let normal = s.read("normal");
    assert!(normal.lines().any(|l| l == "outer"), "{normal}");
    assert!(!normal.contains("inner"), "{normal}");
}

#[test]
fn lines_match_the_core_formatters_byte_for_byte() {
    if in_child("lines_match_the_core_formatters_byte_for_byte", || {
        let _t2 = flightrec::trace2::Builder::new()
            .version("9.8.7")
            .argv(["app", "x y"])
            .init();
    }) {
        return;
    }
    use flightrec::core::trace2::{Args, Event, Format, LineCtx, Target, WallTime};
    let s = Scenario::new();
    s.run(
        "lines_match_the_core_formatters_byte_for_byte",
        &[("GIT_TRACE2_EVENT", &s.path("event")), ("TZ", "UTC")],
    );
    let text = s.read("event");
    let evs = events(&text);
    let start = &evs[1];
    // Rebuild the start line with the core formatter from the values the
    // runtime chose (sid, time, file:line, t_abs) and compare bytes.
    let time = start["time"].as_str().unwrap();
    let t: Vec<u32> = time[11..26]
        .split([':', '.'])
        .map(|x| x.parse().unwrap())
        .collect();
    let day_secs = i64::from(t[0] * 3600 + t[1] * 60 + t[2]);
    let days = flightrec::core::trace2::days_from_civil(
        time[0..4].parse().unwrap(),
        time[5..7].parse().unwrap(),
        time[8..10].parse().unwrap(),
    );
    let sid = start["sid"].as_str().unwrap();
    let t_abs = (start["t_abs"].as_f64().unwrap() * 1e6).round() as u64;
    let argv = ["app", "x y"];
    let ctx = LineCtx {
        time: WallTime::new(days * 86_400 + day_secs, t[3]),
        file: start["file"].as_str().unwrap().as_bytes(),
        line: start["line"].as_u64().unwrap() as u32,
        t_abs,
        ..LineCtx::new(sid.as_bytes(), b"main")
    };
    let mut buf = [0u8; 1024];
    let n = Format::new(Target::Event, false)
        .write_line(
            &ctx,
            &Event::Start {
                argv: Args::Str(&argv),
            },
            &mut buf,
        )
        .unwrap();
    assert_eq!(
        std::str::from_utf8(&buf[..n]).unwrap(),
        format!("{}\n", text.lines().nth(1).unwrap())
    );
    assert_eq!(evs[0]["exe"], "9.8.7");
    let _ = Path::new(".");
}

#[test]
fn repos_json_modes_aliases_ready_children_and_failed_exec() {
    if in_child(
        "repos_json_modes_aliases_ready_children_and_failed_exec",
        || {
            let _t2 = flightrec::trace2::init();
            flightrec::trace2::cmd_mode("write");
            flightrec::trace2::alias("st", &["status", "--short"]);
            let repo = flightrec::trace2::def_repo(Path::new("/tmp/wt"));
            {
                let _r = flightrec::trace2::region_in(repo, "index", "read");
                flightrec::trace2::data_json("stats", "counts", r#"{"a":1}"#);
            }
            flightrec::error!("unknown option `{}'", "--bogus");
            let mut bg = Command::new("sleep");
            bg.arg("0");
            let mut child = flightrec::trace2::child(&mut bg)
                .class("background")
                .spawn()
                .unwrap();
            let pid = i64::from(child.inner().id());
            child.record().ready(pid, "ready");
            child.wait().unwrap();
            let err = flightrec::trace2::exec(&mut Command::new("/nonexistent/exe"));
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        },
    ) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "repos_json_modes_aliases_ready_children_and_failed_exec",
        &[
            ("GIT_TRACE2_EVENT", &s.path("event")),
            ("GIT_TRACE2", &s.path("normal")),
            ("GIT_TRACE2_BRIEF", "1"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let evs = events(&s.read("event"));
    let get = |name: &str| {
        evs.iter()
            .find(|e| e["event"] == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    assert_eq!(get("cmd_mode")["name"], "write");
    assert_eq!(
        get("alias")["argv"],
        serde_json::json!(["status", "--short"])
    );
    assert_eq!(
        (
            get("def_repo")["repo"].as_i64(),
            get("def_repo")["worktree"].as_str()
        ),
        (Some(1), Some("/tmp/wt"))
    );
    assert_eq!(get("region_enter")["repo"], 1);
    assert_eq!(get("data_json")["value"], serde_json::json!({"a": 1}));
    assert_eq!(get("data_json")["nesting"], 2);
    assert_eq!(
        (get("error")["msg"].as_str(), get("error")["fmt"].as_str()),
        (
            Some("unknown option `--bogus'"),
            Some("unknown option `{}'")
        )
    );
    assert_eq!(
        (
            get("child_ready")["ready"].as_str(),
            get("child_start")["child_class"].as_str()
        ),
        (Some("ready"), Some("background"))
    );
    assert_eq!(get("exec")["exe"], "/nonexistent/exe");
    assert_eq!(get("exec")["argv"], serde_json::json!(["/nonexistent/exe"]));
    assert_eq!(get("exec_result")["code"], libc::ENOENT);
    let normal = s.read("normal");
    assert!(
        normal.contains("\nexec_result[0] code:2 err:No such file or directory\n"),
        "{normal}"
    );
    assert!(
        normal.contains("\nalias st -> status --short\n"),
        "{normal}"
    );
    assert!(normal.contains("\nworktree /tmp/wt\n"), "{normal}");
}
