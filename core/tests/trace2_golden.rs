//! Golden tests: the same events, clock readings, ids and source locations git
//! 2.47.3 used in the deterministic captures (`tests/data/trace2/det/`) must give
//! git's lines byte for byte in all six formats (normal, perf, event, each
//! full and brief).
//!
//! The events are driven through [`ThreadState`], so region nesting, perf dots,
//! `t_rel` and the event target's nesting filter are the library's own; only the
//! clock readings (`t_abs` of each call, which depend on how often git reads its
//! clock) are taken from the capture.

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
    ChildStart(i64, &'static str, bool, &'static [&'static str]),
    ChildExit(i64, i64, i32, u64),
    Exit(i32),
    Atexit(i32),
}

/// One API call: source location, `t_abs` in µs (the clock reading), event.
struct Row {
    file: &'static str,
    line: u32,
    t_abs: u64,
    kind: Kind,
}

fn sid() -> Vec<u8> {
    let mut b = [0u8; 64];
    let mut l = LineBuf::new(&mut b);
    write_sid_timestamp(&mut l, NOW).unwrap();
    l.put(SID_SUFFIX).unwrap();
    l.as_bytes().to_vec()
}

/// Runs the calls through a main-thread state and formats them in `format`.
fn run(rows: &[Row], format: Format) -> Vec<u8> {
    let sid = sid();
    let mut main = ThreadState::<8>::new(ThreadName::main(), 0);
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    for row in rows {
        let mut repo = None;
        let nesting;
        let (mut file, mut line) = (row.file, row.line);
        let ev = match row.kind {
            Kind::Version(v) => Event::Version { exe: v.as_bytes() },
            Kind::Start(argv) => Event::Start {
                argv: Args::Str(argv),
            },
            Kind::DefRepo(id, path) => {
                repo = Some(id);
                Event::DefRepo {
                    worktree: path.as_bytes(),
                }
            }
            Kind::CmdName(n, h) => Event::CmdName {
                name: n.as_bytes(),
                hierarchy: h.as_bytes(),
            },
            Kind::CmdMode(m) => Event::CmdMode { mode: m.as_bytes() },
            Kind::Enter(r, cat, label, msg) => {
                repo = r;
                Event::RegionEnter {
                    category: Some(cat.as_bytes()),
                    label: Some(label.as_bytes()),
                    msg: msg.map(|m| Msg::Bytes(m.as_bytes())),
                }
            }
            Kind::Leave(r, cat, label, msg) => {
                repo = r;
                Event::RegionLeave {
                    t_rel: 0, // set below from the region stack
                    category: Some(cat.as_bytes()),
                    label: Some(label.as_bytes()),
                    msg: msg.map(|m| Msg::Bytes(m.as_bytes())),
                }
            }
            Kind::Data(r, cat, key, value) => {
                repo = r;
                Event::Data {
                    t_rel: 0,
                    category: cat.as_bytes(),
                    key: key.as_bytes(),
                    value: value.as_bytes(),
                }
            }
            Kind::DataJson(r, cat, key, value) => {
                repo = r;
                Event::DataJson {
                    t_rel: 0,
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
            Kind::ChildStart(id, class, use_shell, argv) => Event::ChildStart {
                child_id: id,
                child_class: Some(class.as_bytes()),
                hook_name: None,
                cd: None,
                use_shell,
                is_git: false,
                argv: Args::Str(argv),
            },
            Kind::ChildExit(id, pid, code, t_rel) => Event::ChildExit {
                child_id: id,
                pid,
                code,
                t_rel,
            },
            Kind::Exit(code) => Event::Exit { code },
            Kind::Atexit(code) => {
                // Raised inside Trace2: each target uses its own location.
                (file, line) = match format.target {
                    Target::Normal => ("trace2/tr2_tgt_normal.c", 128),
                    Target::Perf => ("trace2/tr2_tgt_perf.c", 217),
                    Target::Event => ("trace2/tr2_tgt_event.c", 205),
                };
                main.regions.unwind();
                Event::Atexit { code }
            }
        };
        // Side effects on the region stack happen whatever the target prints.
        let ev = match ev {
            Event::RegionEnter { .. } => {
                nesting = main.region_enter(row.t_abs);
                ev
            }
            Event::RegionLeave {
                category,
                label,
                msg,
                ..
            } => {
                let (t_rel, n) = main.region_leave(row.t_abs).unwrap();
                nesting = n;
                Event::RegionLeave {
                    t_rel,
                    category,
                    label,
                    msg,
                }
            }
            Event::Data {
                category,
                key,
                value,
                ..
            } => {
                nesting = main.nesting();
                Event::Data {
                    t_rel: main.data_t_rel(row.t_abs),
                    category,
                    key,
                    value,
                }
            }
            Event::DataJson {
                category,
                key,
                value,
                ..
            } => {
                nesting = main.nesting();
                Event::DataJson {
                    t_rel: main.data_t_rel(row.t_abs),
                    category,
                    key,
                    value,
                }
            }
            other => {
                nesting = main.nesting();
                other
            }
        };
        let ctx = LineCtx {
            time: NOW,
            file: file.as_bytes(),
            line,
            nesting,
            repo,
            t_abs: row.t_abs,
            ..LineCtx::new(&sid, main.name.as_bytes())
        };
        let n = format.write_line(&ctx, &ev, &mut buf).unwrap();
        out.extend_from_slice(&buf[..n]);
    }
    assert_eq!(main.nesting(), 1, "enters and leaves balance");
    out
}

fn check(scenario: &str, rows: &[Row]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trace2/det")
        .join(scenario);
    for (target, name) in [
        (Target::Normal, "normal"),
        (Target::Perf, "perf"),
        (Target::Event, "event"),
    ] {
        for brief in [false, true] {
            let file = if brief {
                format!("{name}-brief.txt")
            } else {
                format!("{name}.txt")
            };
            let want = std::fs::read(dir.join(&file)).unwrap();
            let got = run(rows, Format::new(target, brief));
            let want = String::from_utf8_lossy(&want);
            let got = String::from_utf8_lossy(&got);
            for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
                assert_eq!(g, w, "{scenario}/{file}: line {}", i + 1);
            }
            assert_eq!(got, want, "{scenario}/{file}");
        }
    }
}

#[test]
fn status_with_nested_regions_and_data() {
    check("status", STATUS);
}

#[test]
fn cmd_mode_long_file_and_error_inside_region() {
    check("cmd-mode-long-file", CMD_MODE_LONG_FILE);
}

#[test]
fn unknown_option_error_with_format() {
    check("unknown-option", UNKNOWN_OPTION);
}

#[test]
fn shell_alias_children_and_quoting() {
    check("shell-alias", SHELL_ALIAS);
}

const UNKNOWN_OPTION: &[Row] = &[
    Row {
        file: "common-main.c",
        line: 57,
        t_abs: 0,
        kind: Kind::Version("2.47.3"),
    },
    Row {
        file: "common-main.c",
        line: 58,
        t_abs: 1,
        kind: Kind::Start(&["git", "status", "--bogus"]),
    },
    Row {
        file: "repository.c",
        line: 241,
        t_abs: 0,
        kind: Kind::DefRepo(1, "/scratch/repo"),
    },
    Row {
        file: "git.c",
        line: 480,
        t_abs: 0,
        kind: Kind::CmdName("status", "status"),
    },
    Row {
        file: "usage.c",
        line: 83,
        t_abs: 0,
        kind: Kind::Error("unknown option `bogus'", "unknown option `%s'"),
    },
    Row {
        file: "parse-options.c",
        line: 1282,
        t_abs: 2,
        kind: Kind::Exit(129),
    },
    Row {
        file: "",
        line: 0,
        t_abs: 3,
        kind: Kind::Atexit(129),
    },
];

const SHELL_ALIAS: &[Row] = &[
    Row {
        file: "common-main.c",
        line: 57,
        t_abs: 0,
        kind: Kind::Version("2.47.3"),
    },
    Row {
        file: "common-main.c",
        line: 58,
        t_abs: 1,
        kind: Kind::Start(&["git", "-c", "alias.hello=!echo hello", "hello"]),
    },
    Row {
        file: "git.c",
        line: 775,
        t_abs: 0,
        kind: Kind::CmdName("_run_dashed_", "_run_dashed_"),
    },
    Row {
        file: "run-command.c",
        line: 733,
        t_abs: 2,
        kind: Kind::ChildStart(0, "dashed", false, &["git-hello"]),
    },
    Row {
        file: "run-command.c",
        line: 949,
        t_abs: 3,
        kind: Kind::ChildExit(0, -1, -1, 1),
    },
    Row {
        file: "repository.c",
        line: 241,
        t_abs: 0,
        kind: Kind::DefRepo(1, "/scratch/repo"),
    },
    Row {
        file: "git.c",
        line: 395,
        t_abs: 0,
        kind: Kind::Alias("hello", &["echo hello"]),
    },
    Row {
        file: "git.c",
        line: 396,
        t_abs: 0,
        kind: Kind::CmdName("_run_shell_alias_", "_run_dashed_/_run_shell_alias_"),
    },
    Row {
        file: "run-command.c",
        line: 733,
        t_abs: 4,
        kind: Kind::ChildStart(1, "shell_alias", true, &["echo hello"]),
    },
    Row {
        file: "run-command.c",
        line: 989,
        t_abs: 5,
        kind: Kind::ChildExit(1, 99999, 0, 1),
    },
    Row {
        file: "git.c",
        line: 400,
        t_abs: 6,
        kind: Kind::Exit(0),
    },
    Row {
        file: "",
        line: 0,
        t_abs: 7,
        kind: Kind::Atexit(0),
    },
];

const STATUS: &[Row] = &[
    Row {
        file: "common-main.c",
        line: 57,
        t_abs: 0,
        kind: Kind::Version("2.47.3"),
    },
    Row {
        file: "common-main.c",
        line: 58,
        t_abs: 1,
        kind: Kind::Start(&["git", "status", "--porcelain"]),
    },
    Row {
        file: "repository.c",
        line: 241,
        t_abs: 0,
        kind: Kind::DefRepo(1, "/scratch/repo"),
    },
    Row {
        file: "git.c",
        line: 480,
        t_abs: 0,
        kind: Kind::CmdName("status", "status"),
    },
    Row {
        file: "read-cache.c",
        line: 2383,
        t_abs: 2,
        kind: Kind::Enter(Some(1), "index", "do_read_index", Some(".git/index")),
    },
    Row {
        file: "cache-tree.c",
        line: 637,
        t_abs: 3,
        kind: Kind::Enter(Some(1), "cache_tree", "read", None),
    },
    Row {
        file: "cache-tree.c",
        line: 639,
        t_abs: 4,
        kind: Kind::Leave(Some(1), "cache_tree", "read", None),
    },
    Row {
        file: "read-cache.c",
        line: 2332,
        t_abs: 5,
        kind: Kind::Data(Some(1), "index", "read/version", "2"),
    },
    Row {
        file: "read-cache.c",
        line: 2334,
        t_abs: 6,
        kind: Kind::Data(Some(1), "index", "read/cache_nr", "3"),
    },
    Row {
        file: "read-cache.c",
        line: 2388,
        t_abs: 7,
        kind: Kind::Leave(Some(1), "index", "do_read_index", Some(".git/index")),
    },
    Row {
        file: "read-cache.c",
        line: 1540,
        t_abs: 8,
        kind: Kind::Enter(None, "index", "refresh", None),
    },
    Row {
        file: "read-cache.c",
        line: 1622,
        t_abs: 9,
        kind: Kind::Data(None, "index", "refresh/sum_lstat", "3"),
    },
    Row {
        file: "read-cache.c",
        line: 1623,
        t_abs: 10,
        kind: Kind::Data(None, "index", "refresh/sum_scan", "1"),
    },
    Row {
        file: "read-cache.c",
        line: 1624,
        t_abs: 11,
        kind: Kind::Leave(None, "index", "refresh", None),
    },
    Row {
        file: "wt-status.c",
        line: 836,
        t_abs: 12,
        kind: Kind::Enter(Some(1), "status", "worktrees", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1408,
        t_abs: 14,
        kind: Kind::Enter(Some(1), "diff", "setup", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1461,
        t_abs: 15,
        kind: Kind::Leave(Some(1), "diff", "setup", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1640,
        t_abs: 16,
        kind: Kind::Enter(Some(1), "diff", "write back to queue", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1717,
        t_abs: 17,
        kind: Kind::Leave(Some(1), "diff", "write back to queue", None),
    },
    Row {
        file: "wt-status.c",
        line: 838,
        t_abs: 18,
        kind: Kind::Leave(Some(1), "status", "worktrees", None),
    },
    Row {
        file: "wt-status.c",
        line: 845,
        t_abs: 19,
        kind: Kind::Enter(Some(1), "status", "index", None),
    },
    Row {
        file: "unpack-trees.c",
        line: 1902,
        t_abs: 20,
        kind: Kind::Enter(Some(1), "unpack_trees", "unpack_trees", None),
    },
    Row {
        file: "unpack-trees.c",
        line: 2006,
        t_abs: 21,
        kind: Kind::Enter(Some(1), "unpack_trees", "traverse_trees", None),
    },
    Row {
        file: "unpack-trees.c",
        line: 2008,
        t_abs: 22,
        kind: Kind::Leave(Some(1), "unpack_trees", "traverse_trees", None),
    },
    Row {
        file: "unpack-trees.c",
        line: 2105,
        t_abs: 23,
        kind: Kind::Leave(Some(1), "unpack_trees", "unpack_trees", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1408,
        t_abs: 24,
        kind: Kind::Enter(Some(1), "diff", "setup", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1461,
        t_abs: 25,
        kind: Kind::Leave(Some(1), "diff", "setup", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1640,
        t_abs: 26,
        kind: Kind::Enter(Some(1), "diff", "write back to queue", None),
    },
    Row {
        file: "diffcore-rename.c",
        line: 1717,
        t_abs: 27,
        kind: Kind::Leave(Some(1), "diff", "write back to queue", None),
    },
    Row {
        file: "wt-status.c",
        line: 847,
        t_abs: 28,
        kind: Kind::Leave(Some(1), "status", "index", None),
    },
    Row {
        file: "wt-status.c",
        line: 850,
        t_abs: 29,
        kind: Kind::Enter(Some(1), "status", "untracked", None),
    },
    Row {
        file: "dir.c",
        line: 3089,
        t_abs: 31,
        kind: Kind::Enter(Some(1), "dir", "read_directory", None),
    },
    Row {
        file: "name-hash.c",
        line: 594,
        t_abs: 32,
        kind: Kind::Enter(Some(1), "index", "name-hash-init", None),
    },
    Row {
        file: "name-hash.c",
        line: 615,
        t_abs: 33,
        kind: Kind::Leave(Some(1), "index", "name-hash-init", None),
    },
    Row {
        file: "dir.c",
        line: 3057,
        t_abs: 34,
        kind: Kind::Data(Some(1), "read_directory", "path", ""),
    },
    Row {
        file: "dir.c",
        line: 3065,
        t_abs: 35,
        kind: Kind::Data(Some(1), "read_directory", "directories-visited", "5"),
    },
    Row {
        file: "dir.c",
        line: 3067,
        t_abs: 36,
        kind: Kind::Data(Some(1), "read_directory", "paths-visited", "10"),
    },
    Row {
        file: "dir.c",
        line: 3112,
        t_abs: 37,
        kind: Kind::Leave(Some(1), "dir", "read_directory", None),
    },
    Row {
        file: "wt-status.c",
        line: 852,
        t_abs: 39,
        kind: Kind::Leave(Some(1), "status", "untracked", None),
    },
    Row {
        file: "wt-status.c",
        line: 2554,
        t_abs: 40,
        kind: Kind::Data(Some(1), "status", "count/changed", "1"),
    },
    Row {
        file: "wt-status.c",
        line: 2555,
        t_abs: 41,
        kind: Kind::Data(Some(1), "status", "count/untracked", "2"),
    },
    Row {
        file: "wt-status.c",
        line: 2557,
        t_abs: 42,
        kind: Kind::Data(Some(1), "status", "count/ignored", "0"),
    },
    Row {
        file: "wt-status.c",
        line: 2559,
        t_abs: 43,
        kind: Kind::Enter(Some(1), "status", "print", None),
    },
    Row {
        file: "wt-status.c",
        line: 2580,
        t_abs: 44,
        kind: Kind::Leave(Some(1), "status", "print", None),
    },
    Row {
        file: "git.c",
        line: 752,
        t_abs: 45,
        kind: Kind::Exit(0),
    },
    Row {
        file: "tree-walk.c",
        line: 186,
        t_abs: 46,
        kind: Kind::DataJson(
            Some(1),
            "traverse_trees",
            "statistics",
            "{\"traverse_trees_count\":1,\"traverse_trees_max_depth\":1}",
        ),
    },
    Row {
        file: "trace2/tr2_tgt_perf.c",
        line: 217,
        t_abs: 47,
        kind: Kind::Atexit(0),
    },
];
const CMD_MODE_LONG_FILE: &[Row] = &[
    Row {
        file: "common-main.c",
        line: 57,
        t_abs: 0,
        kind: Kind::Version("2.47.3"),
    },
    Row {
        file: "common-main.c",
        line: 58,
        t_abs: 1,
        kind: Kind::Start(&["git", "multi-pack-index", "write"]),
    },
    Row {
        file: "repository.c",
        line: 241,
        t_abs: 0,
        kind: Kind::DefRepo(1, "/scratch/repo"),
    },
    Row {
        file: "git.c",
        line: 480,
        t_abs: 0,
        kind: Kind::CmdName("multi-pack-index", "multi-pack-index"),
    },
    Row {
        file: "builtin/multi-pack-index.c",
        line: 149,
        t_abs: 0,
        kind: Kind::CmdMode("write"),
    },
    Row {
        file: "midx-write.c",
        line: 1072,
        t_abs: 2,
        kind: Kind::Enter(Some(1), "midx", "write_midx_internal", None),
    },
    Row {
        file: "usage.c",
        line: 83,
        t_abs: 0,
        kind: Kind::Error("no pack files to index.", "no pack files to index."),
    },
    Row {
        file: "midx-write.c",
        line: 1495,
        t_abs: 3,
        kind: Kind::Leave(Some(1), "midx", "write_midx_internal", None),
    },
    Row {
        file: "git.c",
        line: 752,
        t_abs: 4,
        kind: Kind::Exit(1),
    },
    Row {
        file: "trace2/tr2_tgt_perf.c",
        line: 217,
        t_abs: 5,
        kind: Kind::Atexit(1),
    },
];
