//! git's Trace2 tests (t0210 normal, t0211 perf, t0212 event) run against the
//! `test-tool` example: the same `test-tool trace2 <subcommand>` command lines,
//! the same scrubbing of times, pids and executables, and the expected
//! outputs of git's tests, with `$V` being flightrec's version.
//!
//! `005exec` hands over to the real `git`, which judges the inherited session
//! id and command hierarchy by writing its own lines into the same file.

use serde_json::json;
use support::{scrub_normal, scrub_perf, summarize_events, Outcome, Run, V};

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

// ---- t0210: normal target, GIT_TRACE2_BRIEF=1 ----

fn normal(args: &[&str]) -> (Vec<String>, Outcome) {
    let run = Run::new("normal")
        .env("GIT_TRACE2_BRIEF", "1")
        .trace("GIT_TRACE2");
    let out = run.tool(args);
    (scrub_normal(&run.read_trace()), out)
}

#[test]
fn t0210_return_code_0_and_1() {
    for code in ["0", "1"] {
        let (actual, run) = normal(&["trace2", "001return", code]);
        assert_eq!(run.code, code.parse::<i32>().unwrap());
        let expect = format!(
            "version {V}\nstart _EXE_ trace2 001return {code}\ncmd_name trace2 (trace2)\n\
             exit elapsed:_TIME_ code:{code}\natexit elapsed:_TIME_ code:{code}"
        );
        assert_eq!(actual, lines(&expect));
    }
}

#[test]
fn t0210_exit_code_0_and_1() {
    for code in ["0", "1"] {
        let (actual, run) = normal(&["trace2", "002exit", code]);
        assert_eq!(run.code, code.parse::<i32>().unwrap());
        let expect = format!(
            "version {V}\nstart _EXE_ trace2 002exit {code}\ncmd_name trace2 (trace2)\n\
             exit elapsed:_TIME_ code:{code}\natexit elapsed:_TIME_ code:{code}"
        );
        assert_eq!(actual, lines(&expect));
    }
}

#[test]
fn t0210_exit_code_is_masked_to_8_bits() {
    let (actual, run) = normal(&["trace2", "002exit", "-1"]);
    assert_eq!(run.code, 255);
    assert_eq!(actual[3], "exit elapsed:_TIME_ code:255");
    assert_eq!(actual[4], "atexit elapsed:_TIME_ code:255");
}

#[test]
fn t0210_error_event() {
    let (actual, run) = normal(&["trace2", "003error", "hello world", "this is a test"]);
    assert_eq!(run.code, 0);
    let expect = format!(
        "version {V}\nstart _EXE_ trace2 003error 'hello world' 'this is a test'\n\
         cmd_name trace2 (trace2)\nerror hello world\nerror this is a test\n\
         exit elapsed:_TIME_ code:0\natexit elapsed:_TIME_ code:0"
    );
    assert_eq!(actual, lines(&expect));
}

fn bug_case(sub: &str, errors: &[&str], stderr_tails: &[&str]) {
    let (actual, run) = normal(&["trace2", sub]);
    assert_eq!(run.code, 99, "{sub}");
    let mut expect = vec![
        format!("version {V}"),
        format!("start _EXE_ trace2 {sub}"),
        "cmd_name trace2 (trace2)".to_string(),
    ];
    expect.extend(errors.iter().map(|e| format!("error {e}")));
    expect.push("exit elapsed:_TIME_ code:99".into());
    expect.push("atexit elapsed:_TIME_ code:99".into());
    assert_eq!(actual, expect, "{sub}");
    // t0210 strips each stderr line up to its last ": ".
    let tails: Vec<&str> = run
        .stderr
        .lines()
        .map(|l| l.rsplit_once(": ").map_or(l, |(_, t)| t))
        .collect();
    assert_eq!(tails, stderr_tails, "{sub}");
    assert!(
        run.stderr.lines().all(|l| l.starts_with("BUG: ")),
        "{}",
        run.stderr
    );
}

#[test]
fn t0210_bug_messages() {
    bug_case("007bug", &["the bug message"], &["the bug message"]);
    bug_case(
        "008bug",
        &[
            "a bug message",
            "another bug message",
            "an explicit BUG_if_bug() following bug() call(s) is nice, but not required",
        ],
        &[
            "a bug message",
            "another bug message",
            "an explicit BUG_if_bug() following bug() call(s) is nice, but not required",
        ],
    );
    bug_case(
        "009bug_BUG",
        &[
            "a bug message",
            "another bug message",
            "on exit(): had bug() call(s) in this process without explicit BUG_if_bug()",
        ],
        &[
            "a bug message",
            "another bug message",
            "had bug() call(s) in this process without explicit BUG_if_bug()",
        ],
    );
    bug_case(
        "010bug_BUG",
        &["a bug message", "a BUG message"],
        &["a bug message", "a BUG message"],
    );
}

fn expect_001return_normal() -> Vec<String> {
    lines(&format!(
        "version {V}\nstart _EXE_ trace2 001return 0\ncmd_name trace2 (trace2)\n\
         exit elapsed:_TIME_ code:0\natexit elapsed:_TIME_ code:0"
    ))
}

#[test]
fn t0210_automatic_filename() {
    let run = Run::new("normal").env("GIT_TRACE2_BRIEF", "1");
    let traces = run.dir().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let run = run.env("GIT_TRACE2", traces.to_str().unwrap());
    assert_eq!(run.tool(&["trace2", "001return", "0"]).code, 0);
    let files: Vec<_> = std::fs::read_dir(&traces)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    // The file is named after the process's own SID component.
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(name.len(), 43, "{name}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(scrub_normal(&text), expect_001return_normal());
}

#[test]
fn t0210_using_global_config() {
    let run = Run::new("normal");
    run.git(&["config", "--global", "trace2.normalBrief", "1"]);
    run.git(&[
        "config",
        "--global",
        "trace2.normalTarget",
        run.trace_path(),
    ]);
    assert_eq!(run.tool(&["trace2", "001return", "0"]).code, 0);
    assert_eq!(scrub_normal(&run.read_trace()), expect_001return_normal());
}

#[test]
fn t0210_using_global_config_with_include() {
    let run = Run::new("normal");
    run.git(&["config", "--global", "trace2.normalBrief", "1"]);
    run.git(&[
        "config",
        "--global",
        "trace2.normalTarget",
        run.trace_path(),
    ]);
    let real = run.dir().join("real.gitconfig");
    std::fs::rename(run.dir().join(".gitconfig"), &real).unwrap();
    run.git(&["config", "--global", "include.path", real.to_str().unwrap()]);
    assert_eq!(run.tool(&["trace2", "001return", "0"]).code, 0);
    assert_eq!(scrub_normal(&run.read_trace()), expect_001return_normal());
}

#[test]
fn unknown_subcommand_prints_usage_and_exits_129() {
    let (actual, run) = normal(&["trace2", "999nope"]);
    assert_eq!(run.code, 129);
    assert!(
        run.stderr.starts_with("usage: test-tool trace2"),
        "{}",
        run.stderr
    );
    assert_eq!(actual.last().unwrap(), "atexit elapsed:_TIME_ code:129");
}

// ---- t0211: perf target, GIT_TRACE2_PERF_BRIEF=1 ----

fn perf(args: &[&str]) -> (Vec<String>, Outcome) {
    let run = Run::new("perf")
        .env("GIT_TRACE2_PERF_BRIEF", "1")
        .trace("GIT_TRACE2_PERF");
    let out = run.tool(args);
    (scrub_perf(&run.read_trace()), out)
}

#[test]
fn t0211_return_code_0_and_1() {
    for code in ["0", "1"] {
        let (actual, run) = perf(&["trace2", "001return", code]);
        assert_eq!(run.code, code.parse::<i32>().unwrap());
        let expect = format!(
            "d0|main|version|||||{V}\n\
             d0|main|start||_T_ABS_|||_EXE_ trace2 001return {code}\n\
             d0|main|cmd_name|||||trace2 (trace2)\n\
             d0|main|exit||_T_ABS_|||code:{code}\n\
             d0|main|atexit||_T_ABS_|||code:{code}"
        );
        assert_eq!(actual, lines(&expect));
    }
}

#[test]
fn t0211_error_event() {
    let (actual, _) = perf(&["trace2", "003error", "hello world", "this is a test"]);
    let expect = format!(
        "d0|main|version|||||{V}\n\
         d0|main|start||_T_ABS_|||_EXE_ trace2 003error 'hello world' 'this is a test'\n\
         d0|main|cmd_name|||||trace2 (trace2)\n\
         d0|main|error|||||hello world\n\
         d0|main|error|||||this is a test\n\
         d0|main|exit||_T_ABS_|||code:0\n\
         d0|main|atexit||_T_ABS_|||code:0"
    );
    assert_eq!(actual, lines(&expect));
}

#[test]
fn t0211_child_processes() {
    let (actual, run) = perf(&[
        "trace2",
        "004child",
        "test-tool",
        "trace2",
        "004child",
        "test-tool",
        "trace2",
        "001return",
        "0",
    ]);
    assert_eq!(run.code, 0);
    let expect = format!(
        "d0|main|version|||||{V}\n\
         d0|main|start||_T_ABS_|||_EXE_ trace2 004child test-tool trace2 004child test-tool trace2 001return 0\n\
         d0|main|cmd_name|||||trace2 (trace2)\n\
         d0|main|child_start||_T_ABS_|||[ch0] class:? argv:[test-tool trace2 004child test-tool trace2 001return 0]\n\
         d1|main|version|||||{V}\n\
         d1|main|start||_T_ABS_|||_EXE_ trace2 004child test-tool trace2 001return 0\n\
         d1|main|cmd_name|||||trace2 (trace2/trace2)\n\
         d1|main|child_start||_T_ABS_|||[ch0] class:? argv:[test-tool trace2 001return 0]\n\
         d2|main|version|||||{V}\n\
         d2|main|start||_T_ABS_|||_EXE_ trace2 001return 0\n\
         d2|main|cmd_name|||||trace2 (trace2/trace2/trace2)\n\
         d2|main|exit||_T_ABS_|||code:0\n\
         d2|main|atexit||_T_ABS_|||code:0\n\
         d1|main|child_exit||_T_ABS_|_T_REL_||[ch0] pid:_PID_ code:0\n\
         d1|main|exit||_T_ABS_|||code:0\n\
         d1|main|atexit||_T_ABS_|||code:0\n\
         d0|main|child_exit||_T_ABS_|_T_REL_||[ch0] pid:_PID_ code:0\n\
         d0|main|exit||_T_ABS_|||code:0\n\
         d0|main|atexit||_T_ABS_|||code:0"
    );
    assert_eq!(actual, lines(&expect));
}

#[test]
fn t0211_using_global_config() {
    let run = Run::new("perf");
    run.git(&["config", "--global", "trace2.perfBrief", "1"]);
    run.git(&["config", "--global", "trace2.perfTarget", run.trace_path()]);
    assert_eq!(run.tool(&["trace2", "001return", "0"]).code, 0);
    let expect = format!(
        "d0|main|version|||||{V}\n\
         d0|main|start||_T_ABS_|||_EXE_ trace2 001return 0\n\
         d0|main|cmd_name|||||trace2 (trace2)\n\
         d0|main|exit||_T_ABS_|||code:0\n\
         d0|main|atexit||_T_ABS_|||code:0"
    );
    assert_eq!(scrub_perf(&run.read_trace()), lines(&expect));
}

/// t0211's `try_simple`: `cmd_name` and the `def_param`s of `configParams`
/// and `envVars`, both set in the global config.
#[test]
fn t0211_def_params_from_global_config_and_env() {
    let run = Run::new("perf")
        .env("GIT_TRACE2_PERF_BRIEF", "1")
        .env("ENV_PROP_FOO", "blue");
    run.git(&["config", "--global", "trace2.configParams", "cfg.prop.*"]);
    run.git(&[
        "config",
        "--global",
        "trace2.envvars",
        "ENV_PROP_FOO,ENV_PROP_BAR",
    ]);
    run.git(&["config", "--global", "cfg.prop.foo", "red"]);
    let run = run.trace("GIT_TRACE2_PERF");
    assert_eq!(run.tool(&["trace2", "001return", "0"]).code, 0);
    let actual = scrub_perf(&run.read_trace());
    let params: Vec<&String> = actual
        .iter()
        .filter(|l| l.starts_with("d0|main|cmd_name|") || l.starts_with("d0|main|def_param|"))
        .collect();
    assert_eq!(
        params,
        [
            "d0|main|cmd_name|||||trace2 (trace2)",
            "d0|main|def_param||||scope:global|cfg.prop.foo:red",
            "d0|main|def_param||||scope:comman|ENV_PROP_FOO:blue",
        ]
    );
}

/// t0211's `have_timer_event`/`have_counter_event`: a line with this prefix.
fn has_line(actual: &[String], prefix: &str) -> bool {
    actual.iter().any(|l| l.starts_with(prefix))
}

#[test]
fn t0211_stopwatch_timer_test1() {
    let (actual, _) = perf(&["trace2", "100timer", "5", "10"]);
    assert!(
        has_line(
            &actual,
            "d0|main|timer||||test|name:test1 intervals:5 total:_T_TOTAL_ min:_T_MIN_ max:_T_MAX_"
        ),
        "{actual:#?}"
    );
    assert!(!actual.iter().any(|l| l.contains("th_timer")));
}

#[test]
fn t0211_stopwatch_timer_test2_in_threads() {
    let (actual, _) = perf(&["trace2", "101timer", "5", "10", "3"]);
    for th in ["th01:ut_101", "th02:ut_101", "th03:ut_101"] {
        assert!(
            has_line(
                &actual,
                &format!("d0|{th}|th_timer||||test|name:test2 intervals:5 ")
            ),
            "{th}: {actual:#?}"
        );
        // thread_start and thread_exit frame the per-thread timer.
        let start = actual
            .iter()
            .position(|l| l.starts_with(&format!("d0|{th}|thread_start|")))
            .unwrap();
        let timer = actual
            .iter()
            .position(|l| l.starts_with(&format!("d0|{th}|th_timer|")))
            .unwrap();
        let exit = actual
            .iter()
            .position(|l| l.starts_with(&format!("d0|{th}|thread_exit|")))
            .unwrap();
        assert!(start < timer && timer < exit);
    }
    assert!(
        has_line(&actual, "d0|main|timer||||test|name:test2 intervals:15 "),
        "{actual:#?}"
    );
    // The process-wide timer comes after exit and before atexit.
    let n = actual.len();
    assert!(actual[n - 2].starts_with("d0|main|timer|"));
    assert!(actual[n - 3].starts_with("d0|main|exit|"));
}

#[test]
fn t0211_global_counter_test1() {
    let (actual, _) = perf(&["trace2", "200counter", "1", "2", "3", "4", "5"]);
    assert!(
        has_line(&actual, "d0|main|counter||||test|name:test1 value:15"),
        "{actual:#?}"
    );
}

#[test]
fn t0211_global_counter_test2_in_threads() {
    let (actual, _) = perf(&["trace2", "201counter", "7", "13", "3"]);
    for th in ["th01:ut_201", "th02:ut_201", "th03:ut_201"] {
        assert!(
            has_line(
                &actual,
                &format!("d0|{th}|th_counter||||test|name:test2 value:20")
            ),
            "{th}: {actual:#?}"
        );
    }
    assert!(
        has_line(&actual, "d0|main|counter||||test|name:test2 value:60"),
        "{actual:#?}"
    );
}

// ---- t0212: event target ----

fn event(run: &Run, args: &[&str]) -> (serde_json::Value, Outcome) {
    let out = run.tool(args);
    (summarize_events(&run.read_trace()), out)
}

#[test]
fn t0212_error_event() {
    let run = Run::new("event").trace("GIT_TRACE2_EVENT");
    let (actual, out) = event(
        &run,
        &["trace2", "003error", "hello world", "this is a test"],
    );
    assert_eq!(out.code, 0);
    assert_eq!(
        actual,
        json!({"_SID0_": {
            "argv": ["_EXE_", "trace2", "003error", "hello world", "this is a test"],
            "errors": ["%s", "%s"],
            "exit_code": 0,
            "hierarchy": "trace2",
            "name": "trace2",
            "version": V,
        }})
    );
}

#[test]
fn t0212_nested_children() {
    let run = Run::new("event").trace("GIT_TRACE2_EVENT");
    let (actual, out) = event(
        &run,
        &[
            "trace2",
            "004child",
            "test-tool",
            "trace2",
            "004child",
            "test-tool",
            "trace2",
            "001return",
            "0",
        ],
    );
    assert_eq!(out.code, 0);
    assert_eq!(
        actual,
        json!({
            "_SID0_": {
                "argv": ["_EXE_", "trace2", "004child", "test-tool", "trace2", "004child", "test-tool", "trace2", "001return", "0"],
                "child": {"0": {
                    "child_argv": ["_EXE_", "trace2", "004child", "test-tool", "trace2", "001return", "0"],
                    "child_class": "?",
                    "child_code": 0,
                    "use_shell": 0,
                }},
                "exit_code": 0,
                "hierarchy": "trace2",
                "name": "trace2",
                "version": V,
            },
            "_SID0_/_SID1_": {
                "argv": ["_EXE_", "trace2", "004child", "test-tool", "trace2", "001return", "0"],
                "child": {"0": {
                    "child_argv": ["_EXE_", "trace2", "001return", "0"],
                    "child_class": "?",
                    "child_code": 0,
                    "use_shell": 0,
                }},
                "exit_code": 0,
                "hierarchy": "trace2/trace2",
                "name": "trace2",
                "version": V,
            },
            "_SID0_/_SID1_/_SID2_": {
                "argv": ["_EXE_", "trace2", "001return", "0"],
                "exit_code": 0,
                "hierarchy": "trace2/trace2/trace2",
                "name": "trace2",
                "version": V,
            },
        })
    );
}

#[test]
fn t0212_list_config() {
    let run = Run::new("event")
        .trace("GIT_TRACE2_EVENT")
        .env("GIT_TRACE2_CONFIG_PARAMS", "t0212.*");
    run.git(&["init", "-q", "."]);
    run.git(&["config", "--local", "t0212.abc", "1"]);
    run.git(&["config", "--local", "t0212.def", "hello world"]);
    let (actual, _) = event(&run, &["trace2", "001return", "0"]);
    assert_eq!(
        actual,
        json!({"_SID0_": {
            "argv": ["_EXE_", "trace2", "001return", "0"],
            "exit_code": 0,
            "hierarchy": "trace2",
            "name": "trace2",
            "params": [
                {"param": "t0212.abc", "value": "1"},
                {"param": "t0212.def", "value": "hello world"},
            ],
            "version": V,
        }})
    );
}

#[test]
fn t0212_list_env_vars() {
    let run = Run::new("event")
        .trace("GIT_TRACE2_EVENT")
        .env("GIT_TRACE2_ENV_VARS", "A_VAR,OTHER_VAR,MISSING")
        .env("A_VAR", "1")
        .env("OTHER_VAR", "hello world");
    let (actual, _) = event(&run, &["trace2", "001return", "0"]);
    assert_eq!(
        actual,
        json!({"_SID0_": {
            "argv": ["_EXE_", "trace2", "001return", "0"],
            "exit_code": 0,
            "hierarchy": "trace2",
            "name": "trace2",
            "params": [
                {"param": "A_VAR", "value": "1"},
                {"param": "OTHER_VAR", "value": "hello world"},
            ],
            "version": V,
        }})
    );
}

#[test]
fn t0212_basic_data() {
    let run = Run::new("event").trace("GIT_TRACE2_EVENT");
    let (actual, _) = event(
        &run,
        &[
            "trace2",
            "006data",
            "test_category",
            "k1",
            "v1",
            "test_category",
            "k2",
            "v2",
        ],
    );
    assert_eq!(
        actual,
        json!({"_SID0_": {
            "argv": ["_EXE_", "trace2", "006data", "test_category", "k1", "v1", "test_category", "k2", "v2"],
            "data": {"test_category": {"k1": "v1", "k2": "v2"}},
            "exit_code": 0,
            "hierarchy": "trace2",
            "name": "trace2",
            "version": V,
        }})
    );
    // git's the_repository: repo id 0 on each data line.
    let raw = run.read_trace();
    let data: Vec<serde_json::Value> = raw
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "data")
        .collect();
    assert_eq!(data.len(), 2);
    assert!(data.iter().all(|d| d["repo"] == 0 && d["nesting"] == 1));
}

#[test]
fn t0212_using_global_config_error_event() {
    let run = Run::new("event");
    run.git(&["config", "--global", "trace2.eventTarget", run.trace_path()]);
    let (actual, _) = event(
        &run,
        &["trace2", "003error", "hello world", "this is a test"],
    );
    assert_eq!(
        actual,
        json!({"_SID0_": {
            "argv": ["_EXE_", "trace2", "003error", "hello world", "this is a test"],
            "errors": ["%s", "%s"],
            "exit_code": 0,
            "hierarchy": "trace2",
            "name": "trace2",
            "version": V,
        }})
    );
}

#[test]
fn t0212_discard_traces_when_there_are_too_many_files() {
    let run = Run::new("event").env("GIT_TRACE2_MAX_FILES", "5");
    let dir = run.dir().join("trace_target_dir");
    std::fs::create_dir(&dir).unwrap();
    for i in 1..=5 {
        std::fs::write(dir.join(i.to_string()), "").unwrap();
    }
    let run = run.env("GIT_TRACE2_EVENT", dir.to_str().unwrap());
    assert_eq!(run.tool(&["trace2", "001return", "0"]).code, 0);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["1", "2", "3", "4", "5", "git-trace2-discard"]);
    let sentinel = std::fs::read_to_string(dir.join("git-trace2-discard")).unwrap();
    let mut l = sentinel.lines();
    assert!(
        l.next().unwrap().contains(r#""event":"version""#),
        "{sentinel}"
    );
    assert!(
        l.next().unwrap().contains(r#""event":"too_many_files""#),
        "{sentinel}"
    );
}

#[test]
fn t0212_unsafe_urls_are_redacted() {
    for sub in ["300redact_start", "301redact_child_start", "302redact_exec"] {
        let run = Run::new("event").trace("GIT_TRACE2_EVENT");
        let (_, out) = event(
            &run,
            &[
                "trace2",
                sub,
                "git",
                "clone",
                "https://user:pwd@example.com/",
                "clone2",
            ],
        );
        assert_eq!(out.code, 0);
        let raw = run.read_trace();
        assert!(!raw.contains("user:pwd"), "{sub}: {raw}");
        assert!(
            raw.contains("https://user:<REDACTED>@example.com/"),
            "{sub}: {raw}"
        );
    }
    let run = Run::new("event").trace("GIT_TRACE2_EVENT");
    event(
        &run,
        &[
            "trace2",
            "303redact_def_param",
            "url",
            "https://user:pwd@example.com/",
        ],
    );
    let raw = run.read_trace();
    assert!(!raw.contains("user:pwd"), "{raw}");
    assert!(
        raw.contains(
            r#""scope":"unknown","param":"url","value":"https://user:<REDACTED>@example.com/""#
        ),
        "{raw}"
    );
}

#[test]
fn redaction_off_keeps_the_password() {
    let run = Run::new("event")
        .trace("GIT_TRACE2_EVENT")
        .env("GIT_TRACE2_REDACT", "0");
    event(
        &run,
        &[
            "trace2",
            "303redact_def_param",
            "url",
            "https://user:pwd@example.com/",
        ],
    );
    let raw = run.read_trace();
    assert!(
        raw.contains(r#""value":"https://user:pwd@example.com/""#),
        "{raw}"
    );
    assert!(raw.contains(r#""argv":["#) && raw.contains("https://user:pwd@example.com/"));
}

#[test]
fn exec_hands_over_to_git_with_the_session_id() {
    let run = Run::new("perf")
        .env("GIT_TRACE2_PERF_BRIEF", "1")
        .trace("GIT_TRACE2_PERF");
    let out = run.tool(&["trace2", "005exec", "version"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("git version "), "{}", out.stdout);
    let actual = scrub_perf(&run.read_trace());
    let git_v = out
        .stdout
        .trim()
        .trim_start_matches("git version ")
        .to_string();
    let expect = format!(
        "d0|main|version|||||{V}\n\
         d0|main|start||_T_ABS_|||_EXE_ trace2 005exec version\n\
         d0|main|cmd_name|||||trace2 (trace2)\n\
         d0|main|exec||_T_ABS_|||id:0 argv:[git git version]\n\
         d1|main|version|||||{git_v}\n\
         d1|main|start||_T_ABS_|||_EXE_ version\n\
         d1|main|cmd_name|||||version (trace2/version)\n\
         d1|main|exit||_T_ABS_|||code:0\n\
         d1|main|atexit||_T_ABS_|||code:0"
    );
    assert_eq!(actual, lines(&expect));
    // Same process, so git's own SID component ends with the same pid.
    let event = Run::new("event").trace("GIT_TRACE2_EVENT");
    event.tool(&["trace2", "005exec", "version"]);
    let sids: Vec<String> = event
        .read_trace()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["sid"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let ours = &sids[0];
    let gits = sids.last().unwrap();
    let (parent, own) = gits
        .rsplit_once('/')
        .expect("git nests under the exec'ing process");
    assert_eq!(parent, ours);
    assert_eq!(&own[own.len() - 9..], &ours[ours.len() - 9..], "same pid");
}

/// Running the example the way git's tests run `test-tool`, and git's
/// scrubbing rules.
mod support {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;

    use serde_json::{json, Map, Value};

    /// The version the `version` event reports (git's tests call it `$V`).
    pub const V: &str = env!("CARGO_PKG_VERSION");

    /// A directory on `PATH` whose `test-tool` is the example, built once.
    fn tool_dir() -> &'static Path {
        static DIR: OnceLock<PathBuf> = OnceLock::new();
        DIR.get_or_init(|| {
            let example = flightrec_testkit::examples::build_example("flightrec", "test-tool");
            let dir = std::env::temp_dir()
                .join(format!("flightrec-test-tool-bin-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let link = dir.join("test-tool");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&example, &link).unwrap();
            dir
        })
    }

    /// What a run printed and returned.
    #[derive(Debug)]
    pub struct Outcome {
        pub code: i32,
        pub stdout: String,
        pub stderr: String,
    }

    /// One scratch directory (cwd and `HOME`), a trace file and settings,
    /// with every inherited `GIT_*` variable removed.
    pub struct Run {
        dir: PathBuf,
        trace: PathBuf,
        envs: Vec<(String, String)>,
    }

    impl Run {
        pub fn new(kind: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "flightrec-test-tool-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let trace = dir.join(format!("trace.{kind}"));
            Run {
                dir,
                trace,
                envs: Vec::new(),
            }
        }

        pub fn env(mut self, k: &str, v: &str) -> Self {
            self.envs.push((k.into(), v.into()));
            self
        }

        /// Sends the target named by `var` to this run's trace file.
        pub fn trace(self, var: &str) -> Self {
            let t = self.trace.to_string_lossy().into_owned();
            self.env(var, &t)
        }

        fn command(&self, program: &str) -> Command {
            let mut c = Command::new(program);
            for (k, _) in std::env::vars_os() {
                if k.to_string_lossy().starts_with("GIT_") {
                    c.env_remove(k);
                }
            }
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut paths = vec![tool_dir().to_path_buf()];
            paths.extend(std::env::split_paths(&path));
            c.env("PATH", std::env::join_paths(paths).unwrap())
                .env("HOME", &self.dir)
                .env("XDG_CONFIG_HOME", self.dir.join(".config"))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .current_dir(&self.dir);
            c
        }

        /// Runs `test-tool <args>` (found on `PATH`) with the settings.
        pub fn tool(&self, args: &[&str]) -> Outcome {
            let out = self
                .command("test-tool")
                .args(args)
                .envs(self.envs.iter().map(|(k, v)| (k, v)))
                .output()
                .expect("test-tool runs");
            Outcome {
                code: out.status.code().expect("exited"),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        }

        /// Runs `git <args>` in the scratch directory, without tracing.
        pub fn git(&self, args: &[&str]) {
            let out = self.command("git").args(args).output().expect("git runs");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }

        pub fn dir(&self) -> &Path {
            &self.dir
        }

        pub fn trace_path(&self) -> &str {
            self.trace.to_str().unwrap()
        }

        pub fn read_trace(&self) -> String {
            String::from_utf8(std::fs::read(&self.trace).expect("trace file written")).unwrap()
        }
    }

    impl Drop for Run {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Replaces every `elapsed:<float>` by `elapsed:_TIME_`.
    fn scrub_elapsed(line: &str) -> String {
        let mut out = String::new();
        let mut rest = line;
        while let Some(i) = rest.find("elapsed:") {
            out.push_str(&rest[..i + 8]);
            rest = &rest[i + 8..];
            let n = rest
                .bytes()
                .take_while(|b| b.is_ascii_digit() || *b == b'.')
                .count();
            if rest[..n].contains('.') {
                out.push_str("_TIME_");
                rest = &rest[n..];
            }
        }
        out.push_str(rest);
        out
    }

    /// t0210's scrubber: times, the executable in `start`, no `cmd_path` or
    /// `cmd_ancestry`.
    pub fn scrub_normal(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for line in text.lines() {
            let line = scrub_elapsed(line);
            if line.starts_with("cmd_path") || line.starts_with("cmd_ancestry") {
                continue;
            }
            if let Some(rest) = line.strip_prefix("start ") {
                let after = if let Some(q) = rest.strip_prefix('\'') {
                    q.split_once("' ").map(|(_, r)| r)
                } else {
                    rest.split_once(' ').map(|(_, r)| r)
                };
                if let Some(after) = after {
                    out.push(format!("start _EXE_ {after}"));
                    continue;
                }
            }
            out.push(line);
        }
        out
    }

    /// t0211's scrubber: columns trimmed and joined by `|`, times, pids and
    /// timer values replaced, the executable in `start` replaced, no
    /// `cmd_path`/`cmd_ancestry`, no `data` of categories `process`/`fsync`.
    pub fn scrub_perf(text: &str) -> Vec<String> {
        const EVENT: usize = 2;
        const T_ABS: usize = 4;
        const T_REL: usize = 5;
        const CATEGORY: usize = 6;
        const REST: usize = 7;
        let mut out = Vec::new();
        for line in text.lines() {
            let mut raw: Vec<&str> = line.split('|').collect();
            while raw.last() == Some(&"") {
                raw.pop();
            }
            let mut tok: Vec<String> = raw.iter().map(|t| t.trim().to_string()).collect();
            let col = |tok: &[String], i: usize| tok.get(i).cloned().unwrap_or_default();
            let ev = col(&tok, EVENT);
            if ev.contains("cmd_path") || ev.contains("cmd_ancestry") {
                continue;
            }
            if ev.contains("data")
                && (col(&tok, CATEGORY).contains("process")
                    || col(&tok, CATEGORY).contains("fsync"))
            {
                continue;
            }
            if tok.len() > REST {
                let rest = tok[REST].clone();
                if ev.starts_with("start") {
                    let first_len = if let Some(q) = rest.strip_prefix('\'') {
                        q.find('\'').map_or(rest.len(), |i| i + 2)
                    } else {
                        rest.find(' ').unwrap_or(rest.len())
                    };
                    let tail = rest[first_len..]
                        .trim_start_matches(|c: char| !c.is_alphanumeric() && c != '_');
                    tok[REST] = format!("_EXE_ {tail}");
                } else if ev.contains("child_exit") {
                    if let Some(i) = rest.find(" pid:") {
                        let n = rest[i + 5..].bytes().take_while(u8::is_ascii_digit).count();
                        tok[REST] = format!("{} pid:_PID_{}", &rest[..i], &rest[i + 5 + n..]);
                    }
                } else if ev.contains("timer") {
                    let mut r = rest;
                    for (key, token) in [
                        (" total:", "_T_TOTAL_"),
                        (" min:", "_T_MIN_"),
                        (" max:", "_T_MAX_"),
                    ] {
                        if let Some(i) = r.find(key) {
                            let s = i + key.len();
                            let n = r[s..]
                                .bytes()
                                .take_while(|b| b.is_ascii_digit() || *b == b'.')
                                .count();
                            r = format!("{}{}{}", &r[..s], token, &r[s + n..]);
                        }
                    }
                    tok[REST] = r;
                }
            }
            for i in [T_ABS, T_REL] {
                if tok
                    .get(i)
                    .is_some_and(|t| t.bytes().any(|b| b.is_ascii_digit()))
                {
                    tok[i] = if i == T_ABS { "_T_ABS_" } else { "_T_REL_" }.into();
                }
            }
            out.push(tok.join("|"));
        }
        out
    }

    /// t0212's summary of an event stream: one entry per process (SIDs
    /// renamed `_SID0_`, `_SID1_`, ... in order of appearance) with its
    /// version, argv, name, hierarchy, exit code, errors, params, children,
    /// repos and data.
    pub fn summarize_events(text: &str) -> Value {
        let mut sid_names: Vec<String> = Vec::new();
        let mut procs = Map::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let ev: Value = serde_json::from_str(line).expect("every line is JSON");
            let sid = ev["sid"]
                .as_str()
                .unwrap()
                .split('/')
                .map(|p| {
                    let i = sid_names.iter().position(|s| s == p).unwrap_or_else(|| {
                        sid_names.push(p.to_string());
                        sid_names.len() - 1
                    });
                    format!("_SID{i}_")
                })
                .collect::<Vec<_>>()
                .join("/");
            let p = procs
                .entry(sid)
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .unwrap();
            let exe_first = |v: &Value| {
                let mut a = v.as_array().unwrap().clone();
                a[0] = json!("_EXE_");
                Value::Array(a)
            };
            match ev["event"].as_str().unwrap() {
                "version" => {
                    p.insert("version".into(), ev["exe"].clone());
                }
                "start" => {
                    p.insert("argv".into(), exe_first(&ev["argv"]));
                }
                "exit" | "atexit" => {
                    p.insert("exit_code".into(), ev["code"].clone());
                }
                "error" => {
                    let e = if ev.get("fmt").is_some() {
                        &ev["fmt"]
                    } else {
                        &ev["msg"]
                    };
                    push(p, "errors", e.clone());
                }
                "cmd_path" | "cmd_ancestry" | "data_json" | "thread_start" | "thread_exit"
                | "exec" | "exec_result" => {}
                "cmd_name" => {
                    p.insert("name".into(), ev["name"].clone());
                    p.insert("hierarchy".into(), ev["hierarchy"].clone());
                }
                "alias" => {
                    p.insert(
                        "alias".into(),
                        json!({"key": ev["alias"], "argv": ev["argv"]}),
                    );
                }
                "def_param" => push(
                    p,
                    "params",
                    json!({"param": ev["param"], "value": ev["value"]}),
                ),
                "child_start" => {
                    let c = child(p, &ev);
                    c.insert("child_class".into(), ev["child_class"].clone());
                    c.insert("child_argv".into(), exe_first(&ev["argv"]));
                    c.insert(
                        "use_shell".into(),
                        json!(if ev["use_shell"] == json!(true) { 1 } else { 0 }),
                    );
                }
                "child_exit" => {
                    child(p, &ev).insert("child_code".into(), ev["code"].clone());
                }
                "def_repo" => {
                    let r = p.entry("repos").or_insert_with(|| json!({}));
                    r[ev["repo"].to_string()] = json!("_WORKTREE_");
                }
                "data" => {
                    let d = p.entry("data").or_insert_with(|| json!({}));
                    let cat = ev["category"].as_str().unwrap().to_string();
                    let key = ev["key"].as_str().unwrap().to_string();
                    if d.get(&cat).is_none() {
                        d[&cat] = json!({});
                    }
                    d[&cat][&key] = ev["value"].clone();
                }
                other => push(p, other, ev.get("value").cloned().unwrap_or(Value::Null)),
            }
        }
        Value::Object(procs)
    }

    fn push(p: &mut Map<String, Value>, key: &str, v: Value) {
        p.entry(key)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .unwrap()
            .push(v);
    }

    fn child<'a>(p: &'a mut Map<String, Value>, ev: &Value) -> &'a mut Map<String, Value> {
        let children = p.entry("child").or_insert_with(|| json!({}));
        let id = ev["child_id"].to_string();
        if children.get(&id).is_none() {
            children[&id] = json!({});
        }
        children[&id].as_object_mut().unwrap()
    }
}
