//! Trace2's background write mode in real processes: each scenario runs in a
//! fresh copy of this test binary (the runtime is process-wide), and the
//! parent test checks what reached the destinations.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Output, Stdio};

use flightrec::trace2::target::WriteMode;
use serde_json::Value;

mod trace2_scenario;
use trace2_scenario::{events, in_child, self_test, write_to_a_closed_pipe, Scenario, WRITE};

fn warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .map(str::to_string)
        .collect()
}

fn background() -> flightrec::trace2::Builder {
    flightrec::trace2::Builder::new().write_mode(WriteMode::background())
}

// ---- the same lines as the direct mode ----

/// `name:<digits and dots>` with the number replaced by `#`.
fn scrub_number_after(line: &str, name: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find(name) {
        let (head, tail) = rest.split_at(i + name.len());
        out.push_str(head);
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .unwrap_or(tail.len());
        out.push('#');
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Times, pids and session ids of the three formats blanked; everything
/// else is compared byte for byte.
fn scrub(target: &str, text: &str) -> Vec<String> {
    text.lines()
        .map(|line| match target {
            "normal" => ["elapsed:", "pid:"]
                .iter()
                .fold(line.to_string(), |l, n| scrub_number_after(&l, n)),
            "perf" => {
                // d0 | thread | event | repo | t_abs | t_rel | category | payload
                let mut cols: Vec<String> = line.splitn(8, " | ").map(str::to_string).collect();
                for c in cols.iter_mut().skip(4).take(2) {
                    *c = c
                        .chars()
                        .map(|ch| if ch.is_ascii_digit() { '#' } else { ch })
                        .collect();
                }
                let joined = cols.join(" | ");
                ["elapsed:", "pid:"]
                    .iter()
                    .fold(joined, |l, n| scrub_number_after(&l, n))
            }
            _ => {
                let mut v: Value = serde_json::from_str(line).unwrap();
                for key in ["sid", "time", "t_abs", "t_rel", "pid"] {
                    if v.get(key).is_some() {
                        v[key] = Value::from("#");
                    }
                }
                v.to_string()
            }
        })
        .collect()
}

fn same_lines_scenario() {
    let _t2 = flightrec::trace2::Builder::new().version("1.2.3").init();
    flightrec::trace2::cmd_name("same");
    {
        let _outer = flightrec::region!("index", "refresh");
        let _inner = flightrec::region!("index", "inner");
        flightrec::data!("index", "entries", "{}", 1024);
    }
    let worker = std::thread::spawn(|| {
        let _th = flightrec::trace2::thread_start("worker");
        for i in 0..50 {
            flightrec::printf!("worker {i}");
        }
    });
    worker.join().unwrap();
    flightrec::trace2::child(&mut Command::new("true"))
        .status()
        .unwrap();
    for i in 0..200 {
        let _r = flightrec::region!("loop", "step");
        flightrec::printf!("step {i}");
    }
}

#[test]
fn background_writes_the_lines_the_direct_mode_writes() {
    if in_child(
        "background_writes_the_lines_the_direct_mode_writes",
        same_lines_scenario,
    ) {
        return;
    }
    let s = Scenario::new();
    let mut traces = Vec::new();
    for (mode, dir) in [("direct", "d"), ("background", "b")] {
        std::fs::create_dir_all(s.dir.join(dir)).unwrap();
        let (normal, perf, event) = (
            s.path(&format!("{dir}/normal")),
            s.path(&format!("{dir}/perf")),
            s.path(&format!("{dir}/event")),
        );
        // The write mode from the environment only, as a program that
        // cannot be changed would get it.
        let out = s.run(
            "background_writes_the_lines_the_direct_mode_writes",
            &[
                (WRITE, mode),
                ("GIT_TRACE2", &normal),
                ("GIT_TRACE2_BRIEF", "1"),
                ("GIT_TRACE2_PERF", &perf),
                ("GIT_TRACE2_PERF_BRIEF", "1"),
                ("GIT_TRACE2_EVENT", &event),
                ("GIT_TRACE2_EVENT_BRIEF", "1"),
            ],
        );
        assert!(out.status.success(), "{mode}: {out:?}");
        assert_eq!(warnings(&out), Vec::<String>::new(), "{mode}");
        traces.push(["normal", "perf", "event"].map(|t| (t, s.read(&format!("{dir}/{t}")))));
    }
    for ((target, direct), (_, queued)) in traces[0].iter().zip(&traces[1]) {
        assert!(direct.lines().count() > 250, "{target}: {direct}");
        let (a, b) = (scrub(target, direct), scrub(target, queued));
        if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            panic!(
                "{target}: line {i} differs:\n direct:     {:?}\n background: {:?}",
                a.get(i),
                b.get(i)
            );
        }
    }
}

// ---- threads ----

const THREADS: usize = 8;
const PER_THREAD: usize = 2000;

#[test]
fn many_threads_lines_never_interleave() {
    if in_child("many_threads_lines_never_interleave", || {
        let _t2 = flightrec::trace2::Builder::new()
            .write_mode(WriteMode::Background {
                queue_bytes: 64 << 20,
            })
            .init();
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                std::thread::spawn(move || {
                    let _th = flightrec::trace2::thread_start(&format!("w{t}"));
                    for i in 0..PER_THREAD {
                        let _r = flightrec::region!("work", "item");
                        flightrec::printf!("{t} {i} {}", "x".repeat(i % 300));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        "many_threads_lines_never_interleave",
        &[
            ("GIT_TRACE2_EVENT", &s.path("event")),
            ("GIT_TRACE2_PERF", &s.path("perf")),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(warnings(&out), Vec::<String>::new());
    // Every event line parses: none was cut or mixed with another.
    let evs = events(&s.read("event"));
    let mut next = [0usize; THREADS];
    for e in evs.iter().filter(|e| e["event"] == "printf") {
        let msg = e["msg"].as_str().unwrap();
        let mut f = msg.splitn(3, ' ');
        let t: usize = f.next().unwrap().parse().unwrap();
        let i: usize = f.next().unwrap().parse().unwrap();
        assert_eq!(f.next().unwrap(), "x".repeat(i % 300));
        assert!(e["thread"].as_str().unwrap().ends_with(&format!(":w{t}")));
        assert_eq!(i, next[t], "thread {t} out of order");
        next[t] += 1;
    }
    assert_eq!(next, [PER_THREAD; THREADS], "every line arrived once");
    assert_eq!(evs.last().unwrap()["event"], "atexit");
    // Every perf line has its eight columns and one printf payload at most.
    let perf = s.read("perf");
    let printfs = perf
        .lines()
        .filter(|l| l.splitn(9, " | ").count() == 9 && l.contains(" | printf "))
        .count();
    assert_eq!(printfs, THREADS * PER_THREAD);
}

// ---- children ----

const CHILD_TEST: &str = "child_lines_come_after_child_start";
const CHILD_SIDE: &str = "child_lines_come_after_child_start/child";
const BEFORE_CHILD: usize = 2_000;

#[test]
fn child_lines_come_after_child_start() {
    if in_child(CHILD_SIDE, || {
        // The write mode is inherited through FLIGHTREC_TRACE2_WRITE.
        let _t2 = flightrec::trace2::init();
        flightrec::printf!("from the child");
    }) {
        return;
    }
    if in_child(CHILD_TEST, || {
        // Enough lines that the writer is still busy with them when the
        // child would start writing, were it not for the flush.
        let _t2 = flightrec::trace2::Builder::new()
            .write_mode(WriteMode::Background {
                queue_bytes: 64 << 20,
            })
            .init();
        let pad = "p".repeat(1000);
        for i in 0..BEFORE_CHILD {
            flightrec::printf!("before {i} {pad}");
        }
        let mut cmd = self_test(CHILD_TEST, CHILD_SIDE);
        cmd.env(WRITE, "background");
        assert!(flightrec::trace2::child(&mut cmd)
            .status()
            .unwrap()
            .success());
        flightrec::printf!("after");
    }) {
        return;
    }
    // The event target is stderr, a pipe this test leaves unread for a
    // while: the parent's writer is stuck with most of its lines when
    // `child_start` is traced, and the child would get its lines into the
    // pipe first, were it not for the flush.
    let s = Scenario::new();
    let mut scenario = s
        .command(CHILD_TEST, CHILD_TEST, &[("GIT_TRACE2_EVENT", "2")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut stderr = String::new();
    scenario
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(scenario.wait().unwrap().success(), "{stderr}");
    let evs: Vec<Value> = events(
        &stderr
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    let parent_sid = evs[0]["sid"].as_str().unwrap();
    let at = |pred: &dyn Fn(&Value) -> bool| evs.iter().position(pred).unwrap();
    let child_start = at(&|e| e["event"] == "child_start");
    let child_exit = at(&|e| e["event"] == "child_exit");
    let child_lines: Vec<usize> = (0..evs.len())
        .filter(|&i| evs[i]["sid"] != parent_sid)
        .collect();
    assert!(!child_lines.is_empty(), "the child traced");
    assert!(
        evs[child_lines[0]]["sid"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{parent_sid}/")),
        "the child's session nests under the parent's"
    );
    assert!(
        child_start < child_lines[0] && *child_lines.last().unwrap() < child_exit,
        "child_start {child_start}, child lines {child_lines:?}, child_exit {child_exit}"
    );
    assert_eq!(
        child_lines.len(),
        evs[child_start + 1..child_exit].len(),
        "only the child writes between child_start and child_exit"
    );
    let befores = evs[..child_start]
        .iter()
        .filter(|e| e["msg"].as_str().is_some_and(|m| m.starts_with("before ")))
        .count();
    assert_eq!(befores, BEFORE_CHILD);
    assert!(evs[child_lines[0]..=*child_lines.last().unwrap()]
        .iter()
        .any(|e| e["msg"] == "from the child"));
}

// ---- exit paths ----

const EXIT_TEST: &str = "every_exit_path_writes_the_whole_queue";
const LINES: usize = 3000;

fn queue_lines() {
    for i in 0..LINES {
        flightrec::printf!("queued {i}");
    }
}

#[test]
fn every_exit_path_writes_the_whole_queue() {
    let scenarios: [(&str, fn(), i32); 5] = [
        (
            "return",
            || {
                let _t2 = background().init();
                queue_lines();
            },
            0,
        ),
        (
            "process_exit",
            || {
                std::mem::forget(background().init()); // as if main never returned
                queue_lines();
                std::process::exit(3);
            },
            3,
        ),
        (
            "trace2_exit",
            || {
                let _t2 = background().init();
                queue_lines();
                flightrec::trace2::exit(4);
            },
            4,
        ),
        (
            "session_exit",
            || {
                let t2 = background().init();
                queue_lines();
                let _ = t2.exit(5);
            },
            0,
        ),
        (
            "panic",
            || {
                let _t2 = background().init();
                queue_lines();
                panic!("boom");
            },
            101,
        ),
    ];
    for (name, f, _) in &scenarios {
        if in_child(&format!("{EXIT_TEST}/{name}"), f) {
            return;
        }
    }
    let s = Scenario::new();
    for (name, _, status) in scenarios {
        let file = s.path(name);
        let out = s
            .command(
                EXIT_TEST,
                &format!("{EXIT_TEST}/{name}"),
                &[("GIT_TRACE2", &file), ("GIT_TRACE2_BRIEF", "1")],
            )
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(status), "{name}: {out:?}");
        let normal = s.read(name);
        let queued: Vec<&str> = normal
            .lines()
            .filter(|l| l.starts_with("queued "))
            .collect();
        let want: Vec<String> = (0..LINES).map(|i| format!("queued {i}")).collect();
        assert_eq!(queued, want, "{name}");
        let tail: Vec<&str> = normal.lines().rev().take(2).collect();
        let code = match name {
            "session_exit" => 5,
            _ => status,
        };
        assert!(
            tail[1].starts_with("exit ") && tail[1].ends_with(&format!(" code:{code}")),
            "{name}: {tail:?}"
        );
        assert!(
            tail[0].starts_with("atexit ") && tail[0].ends_with(&format!(" code:{code}")),
            "{name}: {tail:?}"
        );
        if name == "panic" {
            assert!(normal.contains(&format!("queued {}\nerror boom\nexit ", LINES - 1)));
        }
    }
}

// ---- a full queue ----

const FULL_TEST: &str = "a_full_queue_drops_lines_and_reports_the_count";
const FULL_LINES: usize = 20_000;

#[test]
fn a_full_queue_drops_lines_and_reports_the_count() {
    if in_child(FULL_TEST, || {
        // The trace goes to stderr, a pipe the parent does not read until
        // this process says every line was traced: the writer blocks on the
        // full pipe and the 16 kB queue behind it overflows.
        let _t2 = flightrec::trace2::Builder::new()
            .write_mode(WriteMode::Background {
                queue_bytes: 16 << 10,
            })
            .init();
        let pad = "p".repeat(90);
        for i in 0..FULL_LINES {
            flightrec::printf!("{i:05} {pad}");
        }
        println!("TRACED");
    }) {
        return;
    }
    let s = Scenario::new();
    let mut child = s
        .command(
            FULL_TEST,
            FULL_TEST,
            &[("GIT_TRACE2", "2"), ("GIT_TRACE2_BRIEF", "1")],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stdout_lines = stdout.lines();
    assert!(
        stdout_lines.any(|l| l.unwrap() == "TRACED"),
        "the host thread finished tracing while nobody read the trace"
    );
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{stderr}");
    let traced: Vec<usize> = stderr
        .lines()
        .filter(|l| l.len() == 96 && l.ends_with('p'))
        .map(|l| l[..5].parse().unwrap())
        .collect();
    assert!(
        traced.windows(2).all(|w| w[0] < w[1]),
        "in order, each once"
    );
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    let dropped = FULL_LINES - traced.len();
    assert!(
        dropped > 0,
        "a 64 kB pipe and a 16 kB queue cannot hold 2 MB"
    );
    assert_eq!(
        warnings,
        [format!(
            "warning: trace2: dropped {dropped} lines for 'GIT_TRACE2': the background queue was full"
        )]
    );
    // Each run of dropped lines is marked where it was (the normal target has
    // no regions: a printf), the last one right before `exit`; the marks
    // count every dropped line.
    let marked: usize = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("flightrec: "))
        .map(|l| {
            let n = l
                .strip_suffix(" lines dropped: the background queue was full")
                .or_else(|| l.strip_suffix(" line dropped: the background queue was full"))
                .unwrap_or_else(|| panic!("{l}"));
            n.parse::<usize>().unwrap()
        })
        .sum();
    assert_eq!(marked, dropped);
    // The queue was still full when the process exited: `exit` and `atexit`
    // waited for room instead of being dropped. The warning comes last.
    let lines: Vec<&str> = stderr.lines().collect();
    let n = lines.len();
    assert!(
        lines[n - 4].starts_with("flightrec: "),
        "{:?}",
        &lines[n - 4..]
    );
    assert!(lines[n - 3].starts_with("exit "), "{:?}", &lines[n - 3..]);
    assert!(lines[n - 2].starts_with("atexit "), "{:?}", &lines[n - 3..]);
}

// ---- overload: whole regions dropped, and where ----

const REGIONS_TEST: &str = "a_full_queue_drops_whole_regions_and_marks_where";
const REGION_THREADS: usize = 4;
const ROUNDS: usize = 3000;

#[test]
fn a_full_queue_drops_whole_regions_and_marks_where() {
    if in_child(REGIONS_TEST, || {
        // The event trace goes to stderr, a pipe the parent does not read
        // until every worker has traced its rounds: the writer blocks and the
        // 16 kB queue overflows while regions are open on every thread.
        let _t2 = flightrec::trace2::Builder::new()
            .write_mode(WriteMode::Background {
                queue_bytes: 16 << 10,
            })
            .init();
        let traced = std::sync::Arc::new(std::sync::Barrier::new(REGION_THREADS + 1));
        let drained = std::sync::Arc::new(std::sync::Barrier::new(REGION_THREADS + 1));
        let workers: Vec<_> = (0..REGION_THREADS)
            .map(|t| {
                let (traced, drained) = (traced.clone(), drained.clone());
                std::thread::spawn(move || {
                    let _th = flightrec::trace2::thread_start(&format!("w{t}"));
                    for i in 0..ROUNDS {
                        let _outer = flightrec::region!("load", "request");
                        flightrec::data!("load", "round", "{i}");
                        {
                            let _inner = flightrec::region!("load", "parse");
                            flightrec::printf!("{t} {i} parsing");
                            let _deep = flightrec::region!("load", "lookup");
                            flightrec::data!("load", "key", "k{i}");
                        }
                        flightrec::printf!("{t} {i} replied");
                    }
                    traced.wait();
                    drained.wait();
                    // The queue is empty again: this closes the thread's gap.
                    let _last = flightrec::region!("load", "last");
                })
            })
            .collect();
        traced.wait();
        println!("TRACED");
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).unwrap();
        flightrec::trace2::flush();
        drained.wait();
        for w in workers {
            w.join().unwrap();
        }
    }) {
        return;
    }
    let s = Scenario::new();
    let mut child = s
        .command(
            REGIONS_TEST,
            REGIONS_TEST,
            &[
                ("GIT_TRACE2_EVENT", "2"),
                ("GIT_TRACE2_EVENT_NESTING", "10"),
            ],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout_lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        stdout_lines.any(|l| l.unwrap() == "TRACED"),
        "the workers finished tracing while nobody read the trace"
    );
    let mut stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        stderr_pipe.read_to_string(&mut all).unwrap();
        all
    });
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"go\n").unwrap();
    let status = child.wait().unwrap();
    let stderr = reader.join().unwrap();
    assert!(status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    let evs = events(
        &stderr
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    // Per thread: every leave closes the innermost open region, with its
    // label and nesting; every line inside regions has the nesting of the
    // regions open before it; nothing stays open.
    let mut stacks: std::collections::HashMap<String, Vec<(String, u64)>> = Default::default();
    let (mut enters, mut leaves, mut markers, mut marked) = (0, 0, 0, 0u64);
    for e in &evs {
        let thread = e["thread"].as_str().unwrap().to_string();
        let stack = stacks.entry(thread.clone()).or_default();
        let depth = stack.len() as u64 + 1;
        let label = e["label"].as_str().unwrap_or("").to_string();
        match e["event"].as_str().unwrap() {
            "region_enter" => {
                assert_eq!(e["nesting"], depth, "{thread}: {e}");
                if label == "dropped" {
                    assert_eq!(e["category"], "flightrec");
                    let msg = e["msg"].as_str().unwrap();
                    let n = msg
                        .strip_suffix(" lines dropped: the background queue was full")
                        .or_else(|| {
                            msg.strip_suffix(" line dropped: the background queue was full")
                        })
                        .unwrap_or_else(|| panic!("{msg}"));
                    marked += n.parse::<u64>().unwrap();
                    markers += 1;
                }
                stack.push((label, depth));
                enters += 1;
            }
            "region_leave" => {
                let (open, nesting) = stack.pop().unwrap_or_else(|| panic!("{thread}: {e}"));
                assert_eq!((label, e["nesting"].as_u64().unwrap()), (open, nesting));
                leaves += 1;
            }
            "data" => assert_eq!(e["nesting"], depth, "{thread}: {e}"),
            _ => {}
        }
    }
    for (thread, stack) in &stacks {
        assert!(stack.is_empty(), "{thread} left open: {stack:?}");
    }
    assert_eq!(enters, leaves);
    // Lines were lost, each counted once in a marker and once in the report.
    assert!(markers > 0, "a 16 kB queue cannot hold {ROUNDS} rounds");
    assert_eq!(
        warnings,
        [format!(
            "warning: trace2: dropped {marked} lines for 'GIT_TRACE2_EVENT': the background queue was full"
        )]
    );
    // Whole regions went: fewer `request` regions than rounds, each whole.
    let requests = |kind: &str| {
        evs.iter()
            .filter(|e| e["event"] == kind && e["label"] == "request")
            .count()
    };
    assert!(requests("region_enter") < REGION_THREADS * ROUNDS);
    assert_eq!(requests("region_enter"), requests("region_leave"));
    let last = evs
        .iter()
        .filter(|e| e["event"] == "region_enter" && e["label"] == "last")
        .count();
    assert_eq!(
        last, REGION_THREADS,
        "every worker traced again after the drain"
    );
}

// ---- a broken target ----

const BROKEN_TEST: &str = "a_broken_target_disables_itself_with_one_warning";

#[test]
fn a_broken_target_disables_itself_with_one_warning() {
    if in_child(BROKEN_TEST, || {
        // SAFETY: test-only: SIGPIPE at its default, so a broken trace pipe
        // would kill the process if the writer thread did not handle it.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let mut fds = [0; 2];
        // SAFETY: fd 7 becomes the write end of a pipe whose read end is closed.
        unsafe {
            libc::pipe(fds.as_mut_ptr());
            libc::close(fds[0]);
            libc::dup2(fds[1], 7);
        }
        let _t2 = background().init();
        for i in 0..1000 {
            flightrec::printf!("line {i}");
            if i % 100 == 0 {
                flightrec::trace2::flush(); // many batches, each would fail
            }
        }
        println!("still running");
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        BROKEN_TEST,
        &[("GIT_TRACE2", "7"), ("GIT_TRACE2_DST_DEBUG", "1")],
    );
    assert!(out.status.success(), "{:?}", out.status);
    assert!(String::from_utf8_lossy(&out.stdout).contains("still running"));
    // The warning git prints with DST_DEBUG, then at exit the count of the
    // lines lost (every line: the first write failed).
    assert_eq!(
        warnings(&out),
        [
            "warning: unable to write trace to 'GIT_TRACE2': Broken pipe",
            "warning: trace2: lost 1005 lines for 'GIT_TRACE2': Broken pipe"
        ]
    );
}

// ---- signals ----

const SIGNAL_TEST: &str = "sigpipe_writes_the_signal_event_directly";

#[test]
fn sigpipe_writes_the_signal_event_directly() {
    if in_child(SIGNAL_TEST, || {
        // SAFETY: test-only: the default SIGPIPE disposition before init.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let _t2 = background().init();
        flightrec::printf!("before");
        flightrec::trace2::flush();
        write_to_a_closed_pipe();
        println!("not reached");
    }) {
        return;
    }
    use std::os::unix::process::ExitStatusExt;
    let s = Scenario::new();
    let out = s.run(SIGNAL_TEST, &[("GIT_TRACE2_EVENT", &s.path("event"))]);
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{out:?}");
    let evs = events(&s.read("event"));
    let names: Vec<&str> = evs.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names[names.len() - 2..], ["printf", "signal"]);
    assert_eq!(evs.last().unwrap()["signo"], libc::SIGPIPE);
}

// ---- panics that abort, and fork ----

const ABORT_TEST: &str = "a_panic_writes_the_queue_even_when_the_process_aborts";

#[test]
fn a_panic_writes_the_queue_even_when_the_process_aborts() {
    if in_child(ABORT_TEST, || {
        // A silent hook under Trace2's: the panic message must not go to the
        // unread stderr pipe and wait there.
        std::panic::set_hook(Box::new(|_| {}));
        let _t2 = background().init();
        // More than the pipe holds (64 kB), less than the queue (1 MiB).
        let pad = "p".repeat(100);
        for _ in 0..2000 {
            flightrec::printf!("{pad}");
        }
        queue_lines();
        // As with `panic = "abort"`: nothing runs after the panic hook but
        // the abort.
        let worker = std::thread::spawn(|| panic!("worker failed"));
        let _ = worker.join();
        std::process::abort();
    }) {
        return;
    }
    // The trace goes to stderr, a pipe left unread for a while: without the
    // hook's flush the writer would still be stuck when the process aborts.
    use std::os::unix::process::ExitStatusExt;
    let s = Scenario::new();
    let mut scenario = s
        .command(
            ABORT_TEST,
            ABORT_TEST,
            &[("GIT_TRACE2", "2"), ("GIT_TRACE2_BRIEF", "1")],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut stderr = String::new();
    scenario
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = scenario.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{stderr}");
    let queued = stderr.lines().filter(|l| l.starts_with("queued ")).count();
    assert_eq!(queued, LINES, "{stderr}");
    assert!(stderr.contains("\nerror worker failed\n"), "{stderr}");
}

const FORK_TEST: &str = "a_forked_child_writes_its_lines_directly";

#[test]
fn a_forked_child_writes_its_lines_directly() {
    if in_child(FORK_TEST, || {
        let _t2 = background().init();
        flightrec::printf!("parent before fork");
        flightrec::trace2::flush();
        // SAFETY: test-only: the child only traces (the line is formatted
        // into a buffer the forking thread owns, and written directly) and
        // leaves with _exit, running no exit handler.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                flightrec::printf!("forked child");
                libc::_exit(0);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        }
        flightrec::printf!("parent after fork");
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        FORK_TEST,
        &[("GIT_TRACE2", &s.path("normal")), ("GIT_TRACE2_BRIEF", "1")],
    );
    assert!(out.status.success(), "{out:?}");
    let normal = s.read("normal");
    assert!(
        normal.contains("\nparent before fork\nforked child\nparent after fork\n"),
        "{normal}"
    );
}

// ---- exec ----

const EXEC_TEST: &str = "exec_writes_the_queue_before_the_program_is_replaced";
const EXEC_SIDE: &str = "exec_writes_the_queue_before_the_program_is_replaced/new";

#[test]
fn exec_writes_the_queue_before_the_program_is_replaced() {
    if in_child(EXEC_SIDE, || {
        let _t2 = flightrec::trace2::init();
        flightrec::printf!("the new program");
    }) {
        return;
    }
    if in_child(EXEC_TEST, || {
        let _t2 = background().init();
        queue_lines();
        let mut cmd = self_test(EXEC_TEST, EXEC_SIDE);
        cmd.env(WRITE, "background");
        let err = flightrec::trace2::exec(&mut cmd);
        panic!("exec failed: {err}");
    }) {
        return;
    }
    let s = Scenario::new();
    let out = s.run(
        EXEC_TEST,
        &[("GIT_TRACE2", &s.path("normal")), ("GIT_TRACE2_BRIEF", "1")],
    );
    assert!(out.status.success(), "{out:?}");
    let normal = s.read("normal");
    let lines: Vec<&str> = normal.lines().collect();
    let queued = lines.iter().filter(|l| l.starts_with("queued ")).count();
    assert_eq!(queued, LINES, "{normal}");
    let exec = lines
        .iter()
        .position(|l| l.starts_with("exec[0] "))
        .unwrap();
    assert_eq!(lines[exec - 1], format!("queued {}", LINES - 1));
    assert!(lines[exec + 1].starts_with("version "), "{normal}");
    assert_eq!(lines[lines.len() - 3], "the new program");
}
