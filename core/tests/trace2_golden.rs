//! Golden tests: the same events, clock readings, ids and source locations git
//! 2.47.3 used in the deterministic captures (`testdata/trace2/det/`, one
//! directory per scenario) must give git's lines byte for byte in all six
//! formats (normal, perf, event, each full and brief).
//!
//! The events are driven through [`ThreadState`], so region nesting, perf dots,
//! `t_rel` of regions and data and the event target's nesting filter are the
//! library's own. What git's own clock reads decide is fed in: each call's
//! `t_abs` (the captures' monotonic clock advances by 1 µs per read, so these
//! depend on how often git reads it) and the `t_rel` of finished children. The
//! full and brief captures are separate runs of git; the tests also check that
//! they agree on every clock reading, so one table of calls serves both.

use std::path::Path;

use flightrec_core::trace2::{
    write_sid_timestamp, Args, Event, Format, LineBuf, LineCtx, Msg, Target, ThreadName,
    ThreadState, WallTime,
};

/// The frozen wall clock of the captures: 1700000000.123456 s.
const NOW: WallTime = WallTime::new(1_700_000_000, 123_456);
/// Host tag (`H` + 8 hex digits of SHA-1 of `trace2-host`) and pid 4660.
const SID_SUFFIX: &[u8] = b"-H65cb7838-P00001234";

#[derive(Clone, Copy)]
enum Kind {
    Version(&'static str),
    Start(&'static [&'static str]),
    DefParam(&'static str, &'static str, &'static str),
    DefRepo(i32, &'static str),
    CmdName(&'static str, &'static str),
    CmdMode(&'static str),
    Enter(
        Option<i32>,
        &'static str,
        &'static str,
        Option<&'static str>,
    ),
    Leave(
        Option<i32>,
        &'static str,
        &'static str,
        Option<&'static str>,
    ),
    Data(Option<i32>, &'static str, &'static str, &'static str),
    DataJson(Option<i32>, &'static str, &'static str, &'static str),
    Error(&'static str, &'static str),
    Alias(&'static str, &'static [&'static str]),
    /// Child id, class, use_shell, argv.
    ChildStart(i64, &'static str, bool, &'static [&'static str]),
    /// A git command as child (`git` shown before argv): id, class, argv.
    GitChildStart(i64, &'static str, &'static [&'static str]),
    ChildExit(i64, i64, i32, u64),
    Exit(i32),
    Atexit(i32),
}

/// One API call: source location, `t_abs` in µs (the clock reading), event.
#[derive(Clone, Copy)]
struct Row {
    file: &'static str,
    line: u32,
    t_abs: u64,
    kind: Kind,
}

const fn r(file: &'static str, line: u32, t_abs: u64, kind: Kind) -> Row {
    Row {
        file,
        line,
        t_abs,
        kind,
    }
}

/// The session id git builds from the frozen clock, host and pid.
fn own_sid() -> Vec<u8> {
    let mut b = [0u8; 64];
    let mut l = LineBuf::new(&mut b);
    write_sid_timestamp(&mut l, NOW).unwrap();
    l.put(SID_SUFFIX).unwrap();
    l.as_bytes().to_vec()
}

/// One traced process: its full SID (inherited part included) and main thread.
struct Process {
    sid: Vec<u8>,
    main: ThreadState<8>,
}

impl Process {
    /// A process whose parent exported `parent_sid` (empty: none).
    fn new(parent_sid: &[u8]) -> Self {
        let mut sid = parent_sid.to_vec();
        if !sid.is_empty() {
            sid.push(b'/');
        }
        sid.extend_from_slice(&own_sid());
        Process {
            sid,
            main: ThreadState::new(ThreadName::main(), 0),
        }
    }

    /// Makes the calls of `rows` in this process and appends the lines
    /// `format` writes for them to `out`.
    fn run(&mut self, rows: &[Row], format: Format, out: &mut Vec<u8>) {
        let mut buf = [0u8; 1024];
        for row in rows {
            let (c, ev) = self.call(row, format.target);
            let ctx = LineCtx {
                time: NOW,
                file: c.file.as_bytes(),
                line: c.line,
                nesting: c.nesting,
                repo: c.repo,
                t_abs: row.t_abs,
                ..LineCtx::new(&self.sid, self.main.name.as_bytes())
            };
            let n = format.write_line(&ctx, &ev, &mut buf).unwrap();
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Applies one call to the thread state (regions, data timing) whatever
    /// the target prints, and returns its line inputs and event.
    fn call(&mut self, row: &Row, target: Target) -> (CallCtx, Event<'static>) {
        let main = &mut self.main;
        let mut c = CallCtx {
            file: row.file,
            line: row.line,
            nesting: main.nesting(),
            repo: None,
        };
        let t = row.t_abs;
        let ev = match row.kind {
            Kind::Version(v) => Event::Version { exe: v.as_bytes() },
            Kind::Start(argv) => Event::Start {
                argv: Args::Str(argv),
            },
            Kind::DefParam(scope, param, value) => Event::DefParam {
                scope: scope.as_bytes(),
                param: param.as_bytes(),
                value: Some(value.as_bytes()),
            },
            Kind::DefRepo(id, path) => {
                c.repo = Some(id);
                Event::DefRepo {
                    worktree: path.as_bytes(),
                }
            }
            Kind::CmdName(n, h) => Event::CmdName {
                name: n.as_bytes(),
                hierarchy: h.as_bytes(),
            },
            Kind::CmdMode(m) => Event::CmdMode { mode: m.as_bytes() },
            Kind::Enter(repo, cat, label, msg) => {
                // Formatted at the outer level, before the push.
                c.repo = repo;
                c.nesting = main.region_enter(t);
                Event::RegionEnter {
                    category: Some(cat.as_bytes()),
                    label: Some(label.as_bytes()),
                    msg: msg.map(|m| Msg::Bytes(m.as_bytes())),
                }
            }
            Kind::Leave(repo, cat, label, msg) => {
                c.repo = repo;
                let (t_rel, nesting) = main.region_leave(t).unwrap();
                c.nesting = nesting;
                Event::RegionLeave {
                    t_rel,
                    category: Some(cat.as_bytes()),
                    label: Some(label.as_bytes()),
                    msg: msg.map(|m| Msg::Bytes(m.as_bytes())),
                }
            }
            Kind::Data(repo, cat, key, value) => {
                c.repo = repo;
                Event::Data {
                    t_rel: main.data_t_rel(t),
                    category: cat.as_bytes(),
                    key: key.as_bytes(),
                    value: value.as_bytes(),
                }
            }
            Kind::DataJson(repo, cat, key, value) => {
                c.repo = repo;
                Event::DataJson {
                    t_rel: main.data_t_rel(t),
                    category: cat.as_bytes(),
                    key: key.as_bytes(),
                    value: value.as_bytes(),
                }
            }
            Kind::Error(msg, fmt) => Event::Error {
                msg: Msg::Bytes(msg.as_bytes()),
                fmt: fmt.as_bytes(),
            },
            Kind::Alias(alias, argv) => Event::Alias {
                alias: alias.as_bytes(),
                argv: Args::Str(argv),
            },
            Kind::ChildStart(id, class, use_shell, argv) => {
                child_start(id, class, use_shell, false, argv)
            }
            Kind::GitChildStart(id, class, argv) => child_start(id, class, false, true, argv),
            Kind::ChildExit(id, pid, code, t_rel) => Event::ChildExit {
                child_id: id,
                pid,
                code,
                t_rel,
            },
            Kind::Exit(code) => Event::Exit { code },
            Kind::Atexit(code) => {
                // Raised inside Trace2: each target uses its own location.
                (c.file, c.line) = match target {
                    Target::Normal => ("trace2/tr2_tgt_normal.c", 128),
                    Target::Perf => ("trace2/tr2_tgt_perf.c", 217),
                    Target::Event => ("trace2/tr2_tgt_event.c", 205),
                };
                assert_eq!(main.nesting(), 1, "enters and leaves balance");
                main.regions.unwind();
                Event::Atexit { code }
            }
        };
        (c, ev)
    }
}

/// The per-call parts of a line's context.
struct CallCtx {
    file: &'static str,
    line: u32,
    nesting: u32,
    repo: Option<i32>,
}

fn child_start(
    child_id: i64,
    class: &'static str,
    use_shell: bool,
    is_git: bool,
    argv: &'static [&'static str],
) -> Event<'static> {
    Event::ChildStart {
        child_id,
        child_class: Some(class.as_bytes()),
        hook_name: None,
        cd: None,
        use_shell,
        is_git,
        argv: Args::Str(argv),
    }
}

/// A scenario: the SID its first process inherits, and runs of calls, each
/// made by one process (0 = the git command run, 1 = its child, ...; a child's
/// SID extends its parent's).
struct Scenario<'a> {
    dir: &'a str,
    parent_sid: &'a str,
    runs: &'a [(usize, &'a [Row])],
}

/// The lines of `scenario` in `format`.
fn render(scenario: &Scenario<'_>, format: Format) -> Vec<u8> {
    let mut procs: Vec<Process> = vec![Process::new(scenario.parent_sid.as_bytes())];
    let mut out = Vec::new();
    for &(p, rows) in scenario.runs {
        while procs.len() <= p {
            let parent = procs.last().unwrap().sid.clone();
            procs.push(Process::new(&parent));
        }
        procs[p].run(rows, format, &mut out);
    }
    out
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
}

/// The `t_abs`/`t_rel` columns of a perf capture (git's clock readings).
fn perf_times(perf: &[u8], brief: bool) -> Vec<(String, String)> {
    let skip = if brief { 0 } else { 47 };
    String::from_utf8_lossy(perf)
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l[skip..].split(" | ").collect();
            (cols[4].to_string(), cols[5].to_string())
        })
        .collect()
}

fn check(scenario: &Scenario<'_>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/trace2/det")
        .join(scenario.dir);
    let name = scenario.dir;
    // One table of clock readings serves both runs of git only if they agree.
    assert_eq!(
        perf_times(&read(&dir, "perf.txt"), false),
        perf_times(&read(&dir, "perf-brief.txt"), true),
        "{name}: the full and brief captures read different clocks"
    );
    for (target, target_name) in [
        (Target::Normal, "normal"),
        (Target::Perf, "perf"),
        (Target::Event, "event"),
    ] {
        for brief in [false, true] {
            let file = if brief {
                format!("{target_name}-brief.txt")
            } else {
                format!("{target_name}.txt")
            };
            let want = read(&dir, &file);
            let got = render(scenario, Format::new(target, brief));
            let want = String::from_utf8_lossy(&want);
            let got = String::from_utf8_lossy(&got);
            for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
                assert_eq!(g, w, "{name}/{file}: line {}", i + 1);
            }
            assert_eq!(got, want, "{name}/{file}");
        }
    }
}

/// A scenario whose first process inherits no SID.
fn single<'a>(dir: &'a str, rows: &'a [(usize, &'a [Row])]) -> Scenario<'a> {
    Scenario {
        dir,
        parent_sid: "",
        runs: rows,
    }
}

/// Every directory of `testdata/trace2/det/`, each checked by a test below.
const SCENARIOS: &[&str] = &[
    "cmd-mode-long-file",
    "config-params",
    "die",
    "git-alias",
    "parent-sid",
    "shell-alias",
    "status",
    "unknown-command",
    "unknown-option",
    "version",
];

#[test]
fn every_capture_has_a_scenario() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/trace2/det");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, SCENARIOS);
}

#[test]
fn status_with_nested_regions_and_data() {
    check(&single("status", &[(0, STATUS)]));
}

#[test]
fn cmd_mode_long_file_and_error_inside_region() {
    check(&single("cmd-mode-long-file", &[(0, CMD_MODE_LONG_FILE)]));
}

#[test]
fn unknown_option_error_with_format() {
    check(&single("unknown-option", &[(0, UNKNOWN_OPTION)]));
}

#[test]
fn shell_alias_children_and_quoting() {
    check(&single("shell-alias", &[(0, SHELL_ALIAS)]));
}

#[test]
fn version_minimal_lifecycle() {
    check(&single("version", &[(0, VERSION)]));
}

#[test]
fn die_error_and_exit_128() {
    check(&single("die", &[(0, DIE)]));
}

#[test]
fn unknown_command_failed_dashed_child() {
    check(&single("unknown-command", &[(0, UNKNOWN_COMMAND)]));
}

#[test]
fn config_params_scopes_and_env_vars() {
    check(&single("config-params", &[(0, CONFIG_PARAMS)]));
}

#[test]
fn parent_sid_depth_and_hierarchy() {
    check(&Scenario {
        dir: "parent-sid",
        parent_sid: "outer-sid/middle-sid",
        runs: &[(0, PARENT_SID)],
    });
}

#[test]
fn git_alias_child_process_interleaved() {
    let child = status_rows(
        &["/usr/local/libexec/git-core/git", "status", "--short"],
        "_run_dashed_/_run_git_alias_/status",
    );
    let child: &'static [Row] = child.leak();
    check(&Scenario {
        dir: "git-alias",
        parent_sid: "",
        runs: &[
            (0, GIT_ALIAS_BEFORE_CHILD),
            (1, child),
            (0, GIT_ALIAS_AFTER_CHILD),
        ],
    });
}

/// The calls of `git status` (the `status` capture) run with `argv` under the
/// command hierarchy `hierarchy`.
fn status_rows(argv: &'static [&'static str], hierarchy: &'static str) -> Vec<Row> {
    STATUS
        .iter()
        .map(|row| match row.kind {
            Kind::Start(_) => Row {
                kind: Kind::Start(argv),
                ..*row
            },
            Kind::CmdName(name, _) => Row {
                kind: Kind::CmdName(name, hierarchy),
                ..*row
            },
            _ => *row,
        })
        .collect()
}

const VERSION: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r("common-main.c", 58, 1, Kind::Start(&["git", "version"])),
    r("git.c", 480, 0, Kind::CmdName("version", "version")),
    r("git.c", 752, 2, Kind::Exit(0)),
    r("", 0, 3, Kind::Atexit(0)),
];

const PARENT_SID: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r("common-main.c", 58, 1, Kind::Start(&["git", "version"])),
    r(
        "git.c",
        480,
        0,
        Kind::CmdName("version", "outer/middle/version"),
    ),
    r("git.c", 752, 2, Kind::Exit(0)),
    r("", 0, 3, Kind::Atexit(0)),
];

const DIE: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r(
        "common-main.c",
        58,
        1,
        Kind::Start(&["git", "rev-parse", "--verify", "does-not-exist"]),
    ),
    r("git.c", 480, 0, Kind::CmdName("rev-parse", "rev-parse")),
    r("repository.c", 241, 0, Kind::DefRepo(1, "/scratch/repo")),
    r(
        "usage.c",
        64,
        0,
        Kind::Error("Needed a single revision", "Needed a single revision"),
    ),
    r("usage.c", 78, 2, Kind::Exit(128)),
    r("", 0, 3, Kind::Atexit(128)),
];

const UNKNOWN_COMMAND: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r("common-main.c", 58, 1, Kind::Start(&["git", "bogus-cmd"])),
    r(
        "git.c",
        775,
        0,
        Kind::CmdName("_run_dashed_", "_run_dashed_"),
    ),
    r(
        "run-command.c",
        733,
        2,
        Kind::ChildStart(0, "dashed", false, &["git-bogus-cmd"]),
    ),
    r("run-command.c", 949, 3, Kind::ChildExit(0, -1, -1, 1)),
    r("help.c", 740, 4, Kind::Exit(1)),
    r("", 0, 5, Kind::Atexit(1)),
];

const CONFIG_PARAMS: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r(
        "common-main.c",
        58,
        1,
        Kind::Start(&[
            "git",
            "-c",
            "foo.bar=baz",
            "-c",
            "core.quotepath=false",
            "rev-parse",
            "--abbrev-ref",
            "HEAD",
        ]),
    ),
    r("git.c", 480, 0, Kind::CmdName("rev-parse", "rev-parse")),
    // Config keys matching GIT_TRACE2_CONFIG_PARAMS, in config order.
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("global", "foo.global", "global value"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("local", "core.repositoryformatversion", "0"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("local", "core.filemode", "true"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("local", "core.bare", "false"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("local", "core.logallrefupdates", "true"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("local", "core.abbrev", "12"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("local", "foo.local", "local value"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("command", "foo.bar", "baz"),
    ),
    r(
        "trace2.c",
        437,
        0,
        Kind::DefParam("command", "core.quotepath", "false"),
    ),
    // GIT_TRACE2_ENV_VARS: set and non-empty only.
    r(
        "trace2.c",
        438,
        0,
        Kind::DefParam("command", "MY_ENV_A", "hello world"),
    ),
    r("repository.c", 241, 0, Kind::DefRepo(1, "/scratch/repo")),
    r("git.c", 752, 2, Kind::Exit(0)),
    r("", 0, 3, Kind::Atexit(0)),
];

const GIT_ALIAS_BEFORE_CHILD: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r(
        "common-main.c",
        58,
        1,
        Kind::Start(&["git", "-c", "alias.st=status --short", "st"]),
    ),
    r(
        "git.c",
        775,
        0,
        Kind::CmdName("_run_dashed_", "_run_dashed_"),
    ),
    r(
        "run-command.c",
        733,
        2,
        Kind::ChildStart(0, "dashed", false, &["git-st"]),
    ),
    r("run-command.c", 949, 3, Kind::ChildExit(0, -1, -1, 1)),
    r("git.c", 431, 0, Kind::Alias("st", &["status", "--short"])),
    r(
        "git.c",
        831,
        0,
        Kind::CmdName("_run_git_alias_", "_run_dashed_/_run_git_alias_"),
    ),
    r(
        "run-command.c",
        733,
        4,
        Kind::GitChildStart(1, "git_alias", &["status", "--short"]),
    ),
];

const GIT_ALIAS_AFTER_CHILD: &[Row] = &[
    r("run-command.c", 989, 5, Kind::ChildExit(1, 99999, 0, 1)),
    r("git.c", 851, 6, Kind::Exit(0)),
    r("", 0, 7, Kind::Atexit(0)),
];

const UNKNOWN_OPTION: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r(
        "common-main.c",
        58,
        1,
        Kind::Start(&["git", "status", "--bogus"]),
    ),
    r("repository.c", 241, 0, Kind::DefRepo(1, "/scratch/repo")),
    r("git.c", 480, 0, Kind::CmdName("status", "status")),
    r(
        "usage.c",
        83,
        0,
        Kind::Error("unknown option `bogus'", "unknown option `%s'"),
    ),
    r("parse-options.c", 1282, 2, Kind::Exit(129)),
    r("", 0, 3, Kind::Atexit(129)),
];

const SHELL_ALIAS: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r(
        "common-main.c",
        58,
        1,
        Kind::Start(&["git", "-c", "alias.hello=!echo hello", "hello"]),
    ),
    r(
        "git.c",
        775,
        0,
        Kind::CmdName("_run_dashed_", "_run_dashed_"),
    ),
    r(
        "run-command.c",
        733,
        2,
        Kind::ChildStart(0, "dashed", false, &["git-hello"]),
    ),
    r("run-command.c", 949, 3, Kind::ChildExit(0, -1, -1, 1)),
    r("repository.c", 241, 0, Kind::DefRepo(1, "/scratch/repo")),
    r("git.c", 395, 0, Kind::Alias("hello", &["echo hello"])),
    r(
        "git.c",
        396,
        0,
        Kind::CmdName("_run_shell_alias_", "_run_dashed_/_run_shell_alias_"),
    ),
    r(
        "run-command.c",
        733,
        4,
        Kind::ChildStart(1, "shell_alias", true, &["echo hello"]),
    ),
    r("run-command.c", 989, 5, Kind::ChildExit(1, 99999, 0, 1)),
    r("git.c", 400, 6, Kind::Exit(0)),
    r("", 0, 7, Kind::Atexit(0)),
];

const STATUS: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r(
        "common-main.c",
        58,
        1,
        Kind::Start(&["git", "status", "--porcelain"]),
    ),
    r("repository.c", 241, 0, Kind::DefRepo(1, "/scratch/repo")),
    r("git.c", 480, 0, Kind::CmdName("status", "status")),
    r(
        "read-cache.c",
        2383,
        2,
        Kind::Enter(Some(1), "index", "do_read_index", Some(".git/index")),
    ),
    r(
        "cache-tree.c",
        637,
        3,
        Kind::Enter(Some(1), "cache_tree", "read", None),
    ),
    r(
        "cache-tree.c",
        639,
        4,
        Kind::Leave(Some(1), "cache_tree", "read", None),
    ),
    r(
        "read-cache.c",
        2332,
        5,
        Kind::Data(Some(1), "index", "read/version", "2"),
    ),
    r(
        "read-cache.c",
        2334,
        6,
        Kind::Data(Some(1), "index", "read/cache_nr", "3"),
    ),
    r(
        "read-cache.c",
        2388,
        7,
        Kind::Leave(Some(1), "index", "do_read_index", Some(".git/index")),
    ),
    r(
        "read-cache.c",
        1540,
        8,
        Kind::Enter(None, "index", "refresh", None),
    ),
    r(
        "read-cache.c",
        1622,
        9,
        Kind::Data(None, "index", "refresh/sum_lstat", "3"),
    ),
    r(
        "read-cache.c",
        1623,
        10,
        Kind::Data(None, "index", "refresh/sum_scan", "1"),
    ),
    r(
        "read-cache.c",
        1624,
        11,
        Kind::Leave(None, "index", "refresh", None),
    ),
    r(
        "wt-status.c",
        836,
        12,
        Kind::Enter(Some(1), "status", "worktrees", None),
    ),
    r(
        "diffcore-rename.c",
        1408,
        14,
        Kind::Enter(Some(1), "diff", "setup", None),
    ),
    r(
        "diffcore-rename.c",
        1461,
        15,
        Kind::Leave(Some(1), "diff", "setup", None),
    ),
    r(
        "diffcore-rename.c",
        1640,
        16,
        Kind::Enter(Some(1), "diff", "write back to queue", None),
    ),
    r(
        "diffcore-rename.c",
        1717,
        17,
        Kind::Leave(Some(1), "diff", "write back to queue", None),
    ),
    r(
        "wt-status.c",
        838,
        18,
        Kind::Leave(Some(1), "status", "worktrees", None),
    ),
    r(
        "wt-status.c",
        845,
        19,
        Kind::Enter(Some(1), "status", "index", None),
    ),
    r(
        "unpack-trees.c",
        1902,
        20,
        Kind::Enter(Some(1), "unpack_trees", "unpack_trees", None),
    ),
    r(
        "unpack-trees.c",
        2006,
        21,
        Kind::Enter(Some(1), "unpack_trees", "traverse_trees", None),
    ),
    r(
        "unpack-trees.c",
        2008,
        22,
        Kind::Leave(Some(1), "unpack_trees", "traverse_trees", None),
    ),
    r(
        "unpack-trees.c",
        2105,
        23,
        Kind::Leave(Some(1), "unpack_trees", "unpack_trees", None),
    ),
    r(
        "diffcore-rename.c",
        1408,
        24,
        Kind::Enter(Some(1), "diff", "setup", None),
    ),
    r(
        "diffcore-rename.c",
        1461,
        25,
        Kind::Leave(Some(1), "diff", "setup", None),
    ),
    r(
        "diffcore-rename.c",
        1640,
        26,
        Kind::Enter(Some(1), "diff", "write back to queue", None),
    ),
    r(
        "diffcore-rename.c",
        1717,
        27,
        Kind::Leave(Some(1), "diff", "write back to queue", None),
    ),
    r(
        "wt-status.c",
        847,
        28,
        Kind::Leave(Some(1), "status", "index", None),
    ),
    r(
        "wt-status.c",
        850,
        29,
        Kind::Enter(Some(1), "status", "untracked", None),
    ),
    r(
        "dir.c",
        3089,
        31,
        Kind::Enter(Some(1), "dir", "read_directory", None),
    ),
    r(
        "name-hash.c",
        594,
        32,
        Kind::Enter(Some(1), "index", "name-hash-init", None),
    ),
    r(
        "name-hash.c",
        615,
        33,
        Kind::Leave(Some(1), "index", "name-hash-init", None),
    ),
    r(
        "dir.c",
        3057,
        34,
        Kind::Data(Some(1), "read_directory", "path", ""),
    ),
    r(
        "dir.c",
        3065,
        35,
        Kind::Data(Some(1), "read_directory", "directories-visited", "5"),
    ),
    r(
        "dir.c",
        3067,
        36,
        Kind::Data(Some(1), "read_directory", "paths-visited", "10"),
    ),
    r(
        "dir.c",
        3112,
        37,
        Kind::Leave(Some(1), "dir", "read_directory", None),
    ),
    r(
        "wt-status.c",
        852,
        39,
        Kind::Leave(Some(1), "status", "untracked", None),
    ),
    r(
        "wt-status.c",
        2554,
        40,
        Kind::Data(Some(1), "status", "count/changed", "1"),
    ),
    r(
        "wt-status.c",
        2555,
        41,
        Kind::Data(Some(1), "status", "count/untracked", "2"),
    ),
    r(
        "wt-status.c",
        2557,
        42,
        Kind::Data(Some(1), "status", "count/ignored", "0"),
    ),
    r(
        "wt-status.c",
        2559,
        43,
        Kind::Enter(Some(1), "status", "print", None),
    ),
    r(
        "wt-status.c",
        2580,
        44,
        Kind::Leave(Some(1), "status", "print", None),
    ),
    r("git.c", 752, 45, Kind::Exit(0)),
    r(
        "tree-walk.c",
        186,
        46,
        Kind::DataJson(
            Some(1),
            "traverse_trees",
            "statistics",
            "{\"traverse_trees_count\":1,\"traverse_trees_max_depth\":1}",
        ),
    ),
    r("trace2/tr2_tgt_perf.c", 217, 47, Kind::Atexit(0)),
];
const CMD_MODE_LONG_FILE: &[Row] = &[
    r("common-main.c", 57, 0, Kind::Version("2.47.3")),
    r(
        "common-main.c",
        58,
        1,
        Kind::Start(&["git", "multi-pack-index", "write"]),
    ),
    r("repository.c", 241, 0, Kind::DefRepo(1, "/scratch/repo")),
    r(
        "git.c",
        480,
        0,
        Kind::CmdName("multi-pack-index", "multi-pack-index"),
    ),
    r("builtin/multi-pack-index.c", 149, 0, Kind::CmdMode("write")),
    r(
        "midx-write.c",
        1072,
        2,
        Kind::Enter(Some(1), "midx", "write_midx_internal", None),
    ),
    r(
        "usage.c",
        83,
        0,
        Kind::Error("no pack files to index.", "no pack files to index."),
    ),
    r(
        "midx-write.c",
        1495,
        3,
        Kind::Leave(Some(1), "midx", "write_midx_internal", None),
    ),
    r("git.c", 752, 4, Kind::Exit(1)),
    r("trace2/tr2_tgt_perf.c", 217, 5, Kind::Atexit(1)),
];
