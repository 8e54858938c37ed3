//! Trace2 destinations against git 2.47.3's captured behaviour
//! (`testdata/trace2/targets/`): the target grammar and its warnings, fds,
//! appended files, directory targets with collisions and `maxFiles`,
//! `af_unix:` sockets, write failures, SIGPIPE, and concurrent writers.
//!
//! Cases that depend on which descriptors are open (a closed fd, fd 9, fds
//! never closed, SIGPIPE with its default disposition) run in a child process
//! (this test binary again, one `#[ignore]`d test selected by name), so no
//! other test thread can open or close descriptors under them.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use flightrec::core::trace2::Target;
use flightrec::trace2::config::Trace2Config;
use flightrec::trace2::target::{Destination, OpenOutcome, SocketType, DISCARD_SENTINEL};

const SID: &str = "20231114T221320.123456Z-H65cb7838-P00001234";
const KINDS: [Target; 3] = [Target::Normal, Target::Perf, Target::Event];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/trace2/targets")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(data(name)).unwrap()
}

/// The `printf '%q '` words of a captured `*.env.txt`, as `NAME=VALUE` pairs.
fn env_words(text: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = text.trim_end().chars();
    let mut any = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.extend(chars.next());
                any = true;
            }
            '\'' => {
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
                any = true;
            }
            ' ' => {
                if any {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
        .into_iter()
        .filter_map(|w| w.split_once('=').map(|(k, v)| (k.into(), v.into())))
        .collect()
}

/// A configuration read from `vars` only (no config files).
fn config(vars: &[(&str, &str)]) -> Trace2Config {
    let map: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .chain([("GIT_CONFIG_NOSYSTEM".to_string(), OsString::from("1"))])
        .collect();
    Trace2Config::load_from("GIT_TRACE2", |name| map.get(name).cloned())
}

fn warning_lines(outcomes: &[Result<Destination, OpenOutcome>]) -> String {
    outcomes
        .iter()
        .filter_map(|o| match o {
            Err(OpenOutcome::Failed { warning: Some(w) }) => Some(format!("warning: {w}\n")),
            _ => None,
        })
        .collect()
}

fn open_all(cfg: &Trace2Config, sid: &str) -> Vec<Result<Destination, OpenOutcome>> {
    KINDS
        .iter()
        .map(|&k| Destination::open(k, cfg, sid))
        .collect()
}

/// Every captured `git version` probe (`<name>.env.txt`): the same settings
/// give git's warnings in git's order, and a target opens on stderr exactly
/// when git wrote its trace there.
#[test]
fn every_probe_gives_gits_warnings() {
    // The captures name paths that must not exist.
    assert!(!Path::new("/nonexistent-dir").exists());
    assert!(!Path::new("/nonexistent-sock").exists());
    let mut probes = 0;
    for entry in std::fs::read_dir(data("")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(probe) = name.strip_suffix(".env.txt") else {
            continue;
        };
        probes += 1;
        let words = env_words(&read(&name));
        let vars: Vec<(&str, &str)> = words
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let cfg = config(&vars);
        let opened = open_all(&cfg, SID);
        let stderr = read(&format!("{probe}.stderr.txt"));
        let want_warnings: String = stderr
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(warning_lines(&opened), want_warnings, "probe {probe}");
        let traced_on_stderr = stderr.lines().any(|l| !l.starts_with("warning: "));
        let on_stderr = opened
            .iter()
            .filter(|o| matches!(o, Ok(d) if d.raw_fd() == 2))
            .count();
        assert_eq!(on_stderr > 0, traced_on_stderr, "probe {probe}");
        assert_eq!(read(&format!("{probe}.rc.txt")), "0\n");
    }
    assert_eq!(probes, 18, "probes replayed");
}

#[test]
fn three_targets_on_stderr_write_in_target_order() {
    // GIT_TRACE2=1 GIT_TRACE2_PERF=2 GIT_TRACE2_EVENT=true: all on fd 2.
    let cfg = config(&[
        ("GIT_TRACE2", "1"),
        ("GIT_TRACE2_PERF", "2"),
        ("GIT_TRACE2_EVENT", "true"),
    ]);
    let opened = open_all(&cfg, SID);
    for (o, kind) in opened.iter().zip(KINDS) {
        let d = o.as_ref().unwrap();
        assert_eq!((d.kind(), d.raw_fd(), d.path()), (kind, 2, None));
    }
}

#[test]
fn a_file_is_created_then_appended() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("append.normal.txt");
    let want = read("append.normal.txt");
    // Two runs of git, each writing its six lines.
    let second = want[1..].find("version 2.47.3").unwrap() + 1;
    let runs = [&want[..second], &want[second..]];
    for run in runs {
        let cfg = config(&[("GIT_TRACE2", file.to_str().unwrap())]);
        let d = Destination::open(Target::Normal, &cfg, SID).unwrap();
        assert_eq!(d.path(), Some(file.as_path()));
        for line in run.split_inclusive('\n') {
            assert_eq!(d.write_line(line.as_bytes()), None);
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), want);
    // 0666 less the umask, as open(..., 0666) gives.
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    let umask = current_umask();
    assert_eq!(mode, 0o666 & !umask);
}

fn current_umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
}

#[test]
fn missing_directory_of_a_file_target() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no-such-dir/x.txt");
    let quiet = config(&[("GIT_TRACE2", file.to_str().unwrap())]);
    assert_eq!(
        Destination::open(Target::Normal, &quiet, SID).unwrap_err(),
        OpenOutcome::Failed { warning: None }
    );
    for debug in ["1", "2", " 3x"] {
        let loud = config(&[
            ("GIT_TRACE2", file.to_str().unwrap()),
            ("GIT_TRACE2_DST_DEBUG", debug),
        ]);
        assert_eq!(
            Destination::open(Target::Normal, &loud, SID).unwrap_err(),
            OpenOutcome::Failed {
                warning: Some(format!(
                    "trace2: could not open '{}' for 'GIT_TRACE2' tracing: No such file or directory",
                    file.display()
                ))
            }
        );
    }
}

fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names.iter().map(|n| format!("{n}\n")).collect()
}

#[test]
fn directory_target_names_the_file_after_the_own_sid() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&[("GIT_TRACE2_EVENT", dir.path().to_str().unwrap())]);
    let parent = Destination::open(Target::Event, &cfg, SID).unwrap();
    let child_sid = format!("{SID}/20231114T221320.223456Z-H65cb7838-P00001235");
    let child = Destination::open(Target::Event, &cfg, &child_sid).unwrap();
    assert_eq!(parent.path(), Some(dir.path().join(SID).as_path()));
    assert!(!parent.too_many_files());
    assert_eq!(
        child.path(),
        Some(
            dir.path()
                .join("20231114T221320.223456Z-H65cb7838-P00001235")
                .as_path()
        )
    );
    assert_eq!(
        listing(dir.path()),
        format!("{SID}\n20231114T221320.223456Z-H65cb7838-P00001235\n")
    );
    // The captured listing: one file per traced process, named by its own
    // SID component (git -c alias.st=status st runs two processes).
    assert_eq!(
        read("dir-target.listing.txt"),
        "<SID-COMPONENT>\n<SID-COMPONENT>\n"
    );
    assert_eq!(parent.write_line(b"{\"event\":\"version\"}\n"), None);
    assert_eq!(
        std::fs::read(dir.path().join(SID)).unwrap(),
        b"{\"event\":\"version\"}\n"
    );
}

#[test]
fn directory_collisions_get_suffixes_then_give_up() {
    let dir = tempfile::tempdir().unwrap();
    let with_slash = format!("{}/", dir.path().display());
    let cfg = config(&[("GIT_TRACE2_EVENT", &with_slash)]);
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(Destination::open(Target::Event, &cfg, SID).unwrap());
    }
    assert_eq!(listing(dir.path()), read("dir-collision.listing.txt"));
    for _ in 3..10 {
        open.push(Destination::open(Target::Event, &cfg, SID).unwrap());
    }
    assert_eq!(
        listing(dir.path()),
        read("dir-collision-exhausted.listing.txt")
    );
    assert_eq!(
        Destination::open(Target::Event, &cfg, SID).unwrap_err(),
        OpenOutcome::Failed { warning: None }
    );
    // With DST_DEBUG: git's warning names the path without a suffix, and the
    // directory as given (no doubled slash).
    let dir_s = dir.path().to_str().unwrap();
    for value in [dir_s.to_string(), with_slash] {
        let loud = config(&[("GIT_TRACE2_EVENT", &value), ("GIT_TRACE2_DST_DEBUG", "1")]);
        let got = Destination::open(Target::Event, &loud, SID).unwrap_err();
        let want = read("dir-collision-exhausted.stderr.txt").replace("/scratch/cdir", dir_s);
        assert_eq!(warning_lines(&[Err(got)]), want);
    }
}

/// The captured `maxfiles_probe`: `nr` files in a directory, `MAX_FILES` =
/// `max`, three runs (processes) one after the other.
fn maxfiles_probe(name: &str, nr: usize, max: &str, var: &str) {
    let root = tempfile::tempdir().unwrap();
    let mdir = root.path().join("mdir");
    std::fs::create_dir(&mdir).unwrap();
    for i in 1..=nr {
        std::fs::File::create(mdir.join(format!("f{i}"))).unwrap();
    }
    let kind = match var {
        "GIT_TRACE2" => Target::Normal,
        "GIT_TRACE2_PERF" => Target::Perf,
        _ => Target::Event,
    };
    let cfg = config(&[
        ("GIT_TRACE2_DST_DEBUG", "1"),
        ("GIT_TRACE2_MAX_FILES", max),
        (var, mdir.to_str().unwrap()),
    ]);
    for run in 1..=3 {
        // Each run is a new process with its own SID.
        let sid = format!("20261121T21554{run}.874170Z-H0a7c9cdf-P000021b{run}");
        let got = Destination::open(kind, &cfg, &sid);
        let want_stderr = read(&format!("{name}.run{run}.stderr.txt"))
            .replace("/scratch/mdir", mdir.to_str().unwrap());
        match got {
            Ok(d) => {
                assert_eq!(want_stderr, "", "{name} run {run}");
                let discard = d.path() == Some(mdir.join(DISCARD_SENTINEL).as_path());
                assert_eq!(d.too_many_files(), discard, "{name} run {run}");
                if discard {
                    // The whole trace of this process goes into the sentinel.
                    let lines = read(&format!("{name}.git-trace2-discard.txt"));
                    for line in lines.split_inclusive('\n') {
                        assert_eq!(d.write_line(line.as_bytes()), None);
                    }
                    assert_eq!(
                        std::fs::read_to_string(mdir.join(DISCARD_SENTINEL)).unwrap(),
                        lines
                    );
                }
            }
            Err(e) => assert_eq!(warning_lines(&[Err(e)]), want_stderr, "{name} run {run}"),
        }
        let sid_pattern = |l: &str| {
            l.len() == 43 && l.as_bytes()[8] == b'T' && l.contains("Z-H") && l.contains("-P")
        };
        let got_listing: String = listing(&mdir)
            .lines()
            .map(|l| {
                if sid_pattern(l) {
                    "<SID-COMPONENT>\n".to_string()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        assert_eq!(
            got_listing,
            read(&format!("{name}.run{run}.listing.txt")),
            "{name} run {run}"
        );
    }
}

#[test]
fn max_files_three_of_five_event() {
    maxfiles_probe("maxfiles-3of5-event", 3, "5", "GIT_TRACE2_EVENT");
}

#[test]
fn max_files_two_of_five_event() {
    maxfiles_probe("maxfiles-2of5-event", 2, "5", "GIT_TRACE2_EVENT");
}

#[test]
fn max_files_three_of_five_normal() {
    maxfiles_probe("maxfiles-3of5-normal", 3, "5", "GIT_TRACE2");
}

#[test]
fn max_files_three_of_five_perf() {
    maxfiles_probe("maxfiles-3of5-perf", 3, "5", "GIT_TRACE2_PERF");
}

#[test]
fn max_files_negative_means_no_limit() {
    maxfiles_probe("maxfiles-negative", 3, "-1", "GIT_TRACE2_EVENT");
}

#[test]
fn max_files_sentinel_that_cannot_be_created() {
    // A dangling symlink named like the sentinel: stat() does not see it, so
    // the count runs and says "full", then O_CREAT|O_EXCL fails with EEXIST
    // (also for root). git then names the SID path in its warning.
    let root = tempfile::tempdir().unwrap();
    let mdir = root.path().join("mdir");
    std::fs::create_dir(&mdir).unwrap();
    std::os::unix::fs::symlink(root.path().join("nowhere"), mdir.join(DISCARD_SENTINEL)).unwrap();
    let cfg = config(&[
        ("GIT_TRACE2_DST_DEBUG", "1"),
        ("GIT_TRACE2_MAX_FILES", "3"),
        ("GIT_TRACE2_EVENT", mdir.to_str().unwrap()),
    ]);
    assert_eq!(
        Destination::open(Target::Event, &cfg, SID).unwrap_err(),
        OpenOutcome::Failed {
            warning: Some(format!(
                "trace2: could not open '{}/{SID}' for 'GIT_TRACE2_EVENT' tracing: File exists",
                mdir.display()
            ))
        }
    );
    // Below the limit the same directory is fine.
    let roomy = config(&[
        ("GIT_TRACE2_MAX_FILES", "4"),
        ("GIT_TRACE2_EVENT", mdir.to_str().unwrap()),
    ]);
    let d = Destination::open(Target::Event, &roomy, SID).unwrap();
    assert!(!d.too_many_files());
}

/// The lines of a captured stream, each one event.
fn event_lines(name: &str) -> Vec<String> {
    read(name)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn af_unix_stream_receives_the_byte_stream() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("t2.stream.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let lines = event_lines("afunix-stream.received.txt");
    for value in [
        format!("af_unix:{}", sock.display()),
        format!("af_unix:stream:{}", sock.display()),
    ] {
        let cfg = config(&[("GIT_TRACE2_EVENT", &value)]);
        let d = Destination::open(Target::Event, &cfg, SID).unwrap();
        assert_eq!(d.socket_type(), Some(SocketType::Stream));
        let (mut conn, _) = listener.accept().unwrap();
        for l in &lines {
            assert_eq!(d.write_line(l.as_bytes()), None);
        }
        drop(d); // closes the socket: the reader sees EOF
        let mut got = String::new();
        conn.read_to_string(&mut got).unwrap();
        assert_eq!(got, read("afunix-stream.received.txt"));
    }
}

#[test]
fn af_unix_dgram_sends_one_datagram_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("t2.dgram.sock");
    let server = UnixDatagram::bind(&sock).unwrap();
    // `af_unix:dgram:` asks for datagrams; plain `af_unix:` falls back to
    // them because the stream connect fails with EPROTOTYPE.
    for value in [
        format!("af_unix:dgram:{}", sock.display()),
        format!("af_unix:{}", sock.display()),
    ] {
        let cfg = config(&[("GIT_TRACE2_EVENT", &value)]);
        let d = Destination::open(Target::Event, &cfg, SID).unwrap();
        assert_eq!(d.socket_type(), Some(SocketType::Dgram));
        let lines = event_lines("afunix-dgram.received.txt");
        for l in &lines {
            assert_eq!(d.write_line(l.as_bytes()), None);
        }
        let mut got = String::new();
        let mut buf = vec![0u8; 65536];
        for _ in &lines {
            let n = server.recv(&mut buf).unwrap();
            got.push_str(&format!("<datagram {n} bytes>\n"));
            got.push_str(std::str::from_utf8(&buf[..n]).unwrap());
        }
        assert_eq!(got, read("afunix-dgram.received.txt"));
    }
}

#[test]
fn af_unix_stream_only_does_not_fall_back() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("d.sock");
    let _server = UnixDatagram::bind(&sock).unwrap();
    let cfg = config(&[
        (
            "GIT_TRACE2_EVENT",
            &format!("af_unix:stream:{}", sock.display()),
        ),
        ("GIT_TRACE2_DST_DEBUG", "1"),
    ]);
    assert_eq!(
        Destination::open(Target::Event, &cfg, SID).unwrap_err(),
        OpenOutcome::Failed {
            warning: Some(format!(
                "trace2: could not connect to socket '{}' for 'GIT_TRACE2_EVENT' tracing: Protocol wrong type for socket",
                sock.display()
            ))
        }
    );
}

#[test]
fn af_unix_path_longer_than_sun_path() {
    let long = format!("/{}", "s".repeat(107));
    let cfg = config(&[
        ("GIT_TRACE2_PERF", &format!("af_unix:dgram:{long}")),
        ("GIT_TRACE2_DST_DEBUG", "1"),
    ]);
    assert_eq!(
        Destination::open(Target::Perf, &cfg, SID).unwrap_err(),
        OpenOutcome::Failed {
            warning: Some(format!(
                "trace2: invalid AF_UNIX path '{long}' for 'GIT_TRACE2_PERF' tracing"
            ))
        }
    );
}

#[test]
fn a_failing_socket_disables_itself_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let cfg = config(&[
        ("GIT_TRACE2_EVENT", &format!("af_unix:{}", sock.display())),
        ("GIT_TRACE2_DST_DEBUG", "1"),
    ]);
    let d = Arc::new(Destination::open(Target::Event, &cfg, SID).unwrap());
    let (conn, _) = listener.accept().unwrap();
    drop(conn);
    drop(listener);
    let warnings: Vec<String> = (0..8)
        .map(|_| {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                (0..200)
                    .filter_map(|_| d.write_line(b"{\"event\":\"x\"}\n"))
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(
        warnings,
        ["unable to write trace to 'GIT_TRACE2_EVENT': Broken pipe"]
    );
    assert!(!d.is_enabled());
}

#[test]
fn many_threads_never_interleave_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shared.txt");
    let cfg = config(&[("GIT_TRACE2_PERF", file.to_str().unwrap())]);
    // Two destinations on one file stand for two processes; four threads
    // write through each.
    let dests = [
        Arc::new(Destination::open(Target::Perf, &cfg, SID).unwrap()),
        Arc::new(Destination::open(Target::Perf, &cfg, SID).unwrap()),
    ];
    const THREADS: usize = 8;
    const LINES: usize = 500;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let d = Arc::clone(&dests[t % 2]);
            std::thread::spawn(move || {
                for i in 0..LINES {
                    // Lengths from 20 to over 5000 bytes, beyond PIPE_BUF.
                    let fill = char::from(b'a' + (t as u8));
                    let body: String =
                        std::iter::repeat_n(fill, (i * 37 + t * 11) % 5000).collect();
                    let line = format!("t{t} n{i} len{} {body}\n", body.len());
                    assert_eq!(d.write_line(line.as_bytes()), None);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let text = std::fs::read_to_string(&file).unwrap();
    let mut next = [0usize; THREADS];
    for line in text.lines() {
        let mut parts = line.splitn(4, ' ');
        let t: usize = parts.next().unwrap()[1..].parse().unwrap();
        let n: usize = parts.next().unwrap()[1..].parse().unwrap();
        let len: usize = parts.next().unwrap()[3..].parse().unwrap();
        let body = parts.next().unwrap_or("");
        assert_eq!(n, next[t], "lines of thread {t} out of order or lost");
        next[t] += 1;
        assert_eq!(body.len(), len, "line cut: {line:.60}");
        let fill = char::from(b'a' + (t as u8));
        assert!(body.chars().all(|c| c == fill), "bytes mixed: {line:.60}");
    }
    assert_eq!(next, [LINES; THREADS]);
}

// ---------------------------------------------------------------------------
// Child-process cases.

const CHILD: &str = "FLIGHTREC_TARGETS_CHILD";

/// Runs the ignored test `name` of this binary alone in a child process and
/// returns the lines it printed with the `child: ` prefix.
fn run_child(name: &str, envs: &[(&str, &str)]) -> Vec<String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            name,
            "--exact",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child {name} failed: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = stdout
        .lines()
        // The harness prints "test NAME ... " before the first line.
        .filter_map(|l| l.split_once("child: ").map(|(_, r)| r.to_string()))
        .collect();
    assert!(lines.last().is_some_and(|l| l == "done"), "{stdout}");
    lines
}

fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

fn fd_is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only queries the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

#[test]
fn closed_fd_warns_once_with_dst_debug() {
    let debug = run_child("child_closed_fd", &[("DEBUG", "1")]);
    let want = read("closed-fd-debug.stderr.txt");
    assert_eq!(debug[0], want.trim_end().strip_prefix("warning: ").unwrap());
    assert_eq!(debug[1..], ["none", "enabled=false", "done"]);
    let quiet = run_child("child_closed_fd", &[]);
    assert_eq!(read("closed-fd-nodebug.stderr.txt"), "");
    assert_eq!(quiet, ["none", "none", "enabled=false", "done"]);
}

#[test]
#[ignore = "child process of closed_fd_warns_once_with_dst_debug"]
fn child_closed_fd() {
    if !in_child() {
        return;
    }
    let fd = (3..=9)
        .find(|&fd| !fd_is_open(fd))
        .expect("a closed fd in 3..9");
    let mut vars = vec![("GIT_TRACE2", fd.to_string())];
    if std::env::var_os("DEBUG").is_some() {
        vars.push(("GIT_TRACE2_DST_DEBUG", "1".into()));
    }
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let d = Destination::open(Target::Normal, &config(&vars), SID).unwrap();
    for _ in 0..2 {
        let w = d.write_line(b"version 2.47.3\n");
        println!("child: {}", w.as_deref().unwrap_or("none"));
    }
    println!("child: enabled={}", d.is_enabled());
    println!("child: done");
}

#[test]
fn fd_9_is_written_and_never_closed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fd9.txt");
    let lines = run_child("child_fd9", &[("FD9_FILE", file.to_str().unwrap())]);
    assert_eq!(lines, ["still open after drop: true", "done"]);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        read("fd9.normal.txt")
    );
}

#[test]
#[ignore = "child process of fd_9_is_written_and_never_closed"]
fn child_fd9() {
    if !in_child() {
        return;
    }
    let f = std::fs::File::create(std::env::var_os("FD9_FILE").unwrap()).unwrap();
    // SAFETY: dup2 onto 9 in this single-threaded child; fd 9 then refers
    // to the file and stays open after `f` is dropped.
    assert_eq!(unsafe { libc::dup2(f.as_raw_fd(), 9) }, 9);
    drop(f);
    let d = Destination::open(Target::Normal, &config(&[("GIT_TRACE2", "9")]), SID).unwrap();
    assert_eq!(d.raw_fd(), 9);
    for line in read("fd9.normal.txt").split_inclusive('\n') {
        assert_eq!(d.write_line(line.as_bytes()), None);
    }
    drop(d);
    println!("child: still open after drop: {}", fd_is_open(9));
    println!("child: done");
}

#[test]
fn owned_descriptors_close_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let lines = run_child(
        "child_owned_close",
        &[("DIR", dir.path().to_str().unwrap())],
    );
    assert_eq!(
        lines,
        [
            "file open: true then false",
            "dir open: true then false",
            "done"
        ]
    );
}

#[test]
#[ignore = "child process of owned_descriptors_close_on_drop"]
fn child_owned_close() {
    if !in_child() {
        return;
    }
    let dir = PathBuf::from(std::env::var_os("DIR").unwrap());
    let file = dir.join("f.txt");
    for (what, value) in [("file", file.as_os_str()), ("dir", dir.as_os_str())] {
        let cfg = config(&[("GIT_TRACE2", value.to_str().unwrap())]);
        let d = Destination::open(Target::Normal, &cfg, SID).unwrap();
        let fd = d.raw_fd();
        let before = fd_is_open(fd);
        drop(d);
        println!("child: {what} open: {before} then {}", fd_is_open(fd));
    }
    println!("child: done");
}

#[test]
fn sigpipe_never_kills_the_host() {
    let lines = run_child("child_sigpipe", &[]);
    assert_eq!(
        lines,
        [
            "pipe: unable to write trace to 'GIT_TRACE2': Broken pipe",
            "socket: unable to write trace to 'GIT_TRACE2_EVENT': Broken pipe",
            "alive",
            "done"
        ]
    );
}

#[test]
#[ignore = "child process of sigpipe_never_kills_the_host"]
fn child_sigpipe() {
    if !in_child() {
        return;
    }
    // SAFETY: restores the default disposition (terminate) in this child,
    // the case of a C host or a Rust program built to keep SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the pipe's two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the descriptors are ours: close the reader, move the writer to 8.
    unsafe {
        libc::close(fds[0]);
        assert_eq!(libc::dup2(fds[1], 8), 8);
        libc::close(fds[1]);
    }
    let cfg = config(&[("GIT_TRACE2", "8"), ("GIT_TRACE2_DST_DEBUG", "1")]);
    let d = Destination::open(Target::Normal, &cfg, SID).unwrap();
    println!("child: pipe: {}", d.write_line(b"x\n").unwrap_or_default());

    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let value = format!("af_unix:stream:{}", sock.display());
    let cfg = config(&[("GIT_TRACE2_EVENT", &value), ("GIT_TRACE2_DST_DEBUG", "1")]);
    let d = Destination::open(Target::Event, &cfg, SID).unwrap();
    drop(listener.accept().unwrap());
    // The first send may still succeed into the socket buffer before the
    // peer's close is seen; keep writing until the destination gives up.
    let mut warning = None;
    for _ in 0..100 {
        if let Some(w) = d.write_line(b"{}\n") {
            warning = Some(w);
            break;
        }
    }
    println!("child: socket: {}", warning.unwrap_or_default());
    println!("child: alive");
    println!("child: done");
}

#[test]
fn env_words_reads_printf_q() {
    assert_eq!(
        env_words("GIT_TRACE2_EVENT= MY\\ X=a\\ b '' \n"),
        [
            ("GIT_TRACE2_EVENT".to_string(), String::new()),
            ("MY X".to_string(), "a b".to_string())
        ]
    );
}
