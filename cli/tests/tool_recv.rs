//! `flightrec recv` end to end: a link stream made by the core's `LinkWriter` from
//! real streaming rings, damaged on purpose (flipped bytes, lost bytes, a receiver
//! that starts mid-stream), fed through a file, stdin and a pseudo-terminal pair.
//!
//! The judge: every FDR file written holds only buffers that were sent, unchanged
//! and in order, and every buffer whose frame arrived undamaged is there; every file
//! passes the core's verifier (and `llvm-xray`, when installed); the Trace2 file
//! holds exactly the undamaged lines.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use flightrec_host::core::clock::Timestamp;
use flightrec_host::core::fdr::decoder::verify;
use flightrec_host::core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_host::core::fdr::writer::WriterConfig;
use flightrec_host::core::fdr::FunctionId;
use flightrec_host::core::link::{compact, FrameKind, LinkWriter, Source};

/// One frame as sent, with its place on the wire.
#[derive(Clone, Debug)]
struct SentFrame {
    kind: FrameKind,
    source: u32,
    payload: Vec<u8>,
    /// Wire span: first byte ..= its closing delimiter.
    span: (usize, usize),
}

struct Stream {
    wire: Vec<u8>,
    frames: Vec<SentFrame>,
}

/// A sink that remembers where each frame starts.
struct Recording {
    wire: Vec<u8>,
}

impl embedded_io::ErrorType for Recording {
    type Error = std::convert::Infallible;
}

impl embedded_io::Write for Recording {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.wire.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Records `calls` calls on two sources and Trace2 lines, flushing as a main loop
/// would; returns the wire and every frame with its span.
fn make_stream(calls: u64, seed: u64) -> Stream {
    let mut storage = [vec![0u8; 4 * 1024], vec![0u8; 4 * 1024]];
    let slots = [[Slot::NEW; 4], [Slot::NEW; 4]];
    let [sa, sb] = &mut storage;
    let mut ring_a = Ring::new(sa, &slots[0], Policy::Streaming).unwrap();
    let mut ring_b = Ring::new(sb, &slots[1], Policy::Streaming).unwrap();
    let cfg_a = RecorderConfig::new(WriterConfig::new(1).with_pid(42), 48_000_000);
    let cfg_b = RecorderConfig::new(WriterConfig::new(2).with_pid(42), 48_000_000);
    let mut src_a = Source::new(1, cfg_a.file_header(ring_a.buffer_size())).with_header_every(2);
    let mut src_b = Source::new(2, cfg_b.file_header(ring_b.buffer_size())).with_header_every(2);
    let (mut rec_a, mut con_a) = ring_a.split(cfg_a);
    let (mut rec_b, mut con_b) = ring_b.split(cfg_b);

    // Frames are recovered from the wire afterwards by decoding the clean stream.
    let mut link = LinkWriter::new(Recording { wire: Vec::new() });
    let mut x = seed | 1;
    for i in 0..calls {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t = i * 1000;
        let f = FunctionId::new(1 + (x % 5) as u32).unwrap();
        let g = FunctionId::new(10 + (x % 3) as u32).unwrap();
        let ts = |d: u64| Timestamp { tsc: t + d, cpu: 0 };
        let _ = rec_a.enter(f, ts(0));
        let _ = rec_a.enter(g, ts(100 + x % 50));
        let _ = rec_b.enter(FunctionId::new(20).unwrap(), ts(300));
        let _ = rec_b.exit(FunctionId::new(20).unwrap(), ts(310));
        let _ = rec_a.exit(g, ts(400));
        let _ = rec_a.exit(f, ts(900));
        if i % 50 == 0 {
            let line = format!("region_enter i={i}\n");
            link.send_trace2_line(0, line.as_bytes()).unwrap();
        }
        if i % 10 == 0 {
            link.flush_one(&mut src_a, &mut con_a).unwrap();
            link.flush_one(&mut src_b, &mut con_b).unwrap();
        }
    }
    rec_a.flush();
    rec_b.flush();
    while link.flush_one(&mut src_a, &mut con_a).unwrap() {}
    while link.flush_one(&mut src_b, &mut con_b).unwrap() {}
    link.send_source_status(&mut src_a, &con_a).unwrap();
    link.send_source_status(&mut src_b, &con_b).unwrap();
    let wire = link.into_inner().wire;

    // Split the clean wire at its delimiters: run k is frame k (after the leading 0).
    let mut frames = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut dec = flightrec_host::core::link::FrameDecoder::new(&mut buf);
    let mut pos = 0;
    let mut start = 1; // the writer's leading delimiter
    while pos < wire.len() {
        let (used, ev) = dec.feed(&wire[pos..]);
        pos += used;
        if let Some(flightrec_host::core::link::Event::Frame(f)) = ev {
            // A buffer sent in its compact or packed form stands for the buffer it
            // expands to.
            let payload = if f.head.kind == FrameKind::FdrCompact {
                let mut b = vec![0u8; compact::expanded_len(f.payload).unwrap()];
                compact::expand(f.payload, &mut b).unwrap();
                b
            } else if f.head.kind == FrameKind::FdrPacked {
                let mut b = vec![0u8; compact::unpacked_len(f.payload).unwrap()];
                compact::unpack(f.payload, &mut b).unwrap();
                b
            } else {
                f.payload.to_vec()
            };
            frames.push(SentFrame {
                kind: f.head.kind,
                source: f.head.source,
                payload,
                span: (start, pos - 1),
            });
            start = pos;
        }
    }
    assert_eq!(dec.stats().frames as usize, frames.len());
    Stream { wire, frames }
}

/// Damage to apply: (frame index, what).
enum Hit {
    /// XOR one byte in the middle of the frame.
    Flip(usize),
    /// Remove 5 bytes from the middle of the frame.
    Drop(usize),
}

/// Applies the damage and an optional mid-stream start (a cut inside frame
/// `start_in`); returns the damaged wire and the indices of damaged frames.
fn damage(s: &Stream, hits: &[Hit], start_in: Option<usize>) -> (Vec<u8>, Vec<usize>) {
    let mut wire = s.wire.clone();
    let mut damaged = Vec::new();
    let mut hits: Vec<(usize, bool)> = hits
        .iter()
        .map(|h| match h {
            Hit::Flip(i) => (*i, true),
            Hit::Drop(i) => (*i, false),
        })
        .collect();
    // From the end, so earlier spans stay put.
    hits.sort_by_key(|h| std::cmp::Reverse(h.0));
    for (i, flip) in hits {
        let (a, b) = s.frames[i].span;
        let mid = a + (b - a) / 2;
        if flip {
            wire[mid] ^= 0x5a;
        } else {
            wire.drain(mid..mid + 5);
        }
        damaged.push(i);
    }
    if let Some(i) = start_in {
        let (a, b) = s.frames[i].span;
        wire.drain(..a + (b - a) / 3);
        damaged.extend(0..=i);
    }
    (wire, damaged)
}

fn flightrec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flightrec-recv-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Checks the output directory against what was sent.
fn judge(s: &Stream, damaged: &[usize], dir: &Path) {
    let mut expected: BTreeMap<u32, Vec<&[u8]>> = BTreeMap::new();
    let mut all: BTreeMap<u32, Vec<&[u8]>> = BTreeMap::new();
    let mut lines = Vec::new();
    for (i, f) in s.frames.iter().enumerate() {
        match f.kind {
            FrameKind::FdrBuffer | FrameKind::FdrCompact | FrameKind::FdrPacked => {
                all.entry(f.source).or_default().push(&f.payload);
                if !damaged.contains(&i) {
                    expected.entry(f.source).or_default().push(&f.payload);
                }
            }
            FrameKind::Trace2Line if !damaged.contains(&i) => lines.push(f.payload.clone()),
            _ => {}
        }
    }
    for (source, want) in &expected {
        let path = dir.join(format!("source-{source}.xray"));
        let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        verify(&file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Walk the file: each piece must be the next sent buffer (in order).
        let sent = &all[source];
        let mut at = 32;
        let mut next = 0;
        let mut got: Vec<&[u8]> = Vec::new();
        while at < file.len() {
            let k = sent[next..]
                .iter()
                .position(|b| file[at..].starts_with(b))
                .unwrap_or_else(|| panic!("source {source}: bytes at {at} are no buffer sent"));
            got.push(sent[next + k]);
            at += sent[next + k].len();
            next += k + 1;
        }
        for w in want {
            assert!(
                got.iter().any(|g| g == w),
                "source {source}: an undamaged buffer is missing"
            );
        }
        check_llvm(&path);
    }
    let text = std::fs::read(dir.join("trace2.txt")).unwrap_or_default();
    assert_eq!(text, lines.concat(), "trace2 lines");
}

fn check_llvm(path: &Path) {
    let ok = Command::new("llvm-xray")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "llvm-xray is missing"
        );
        return;
    }
    for args in [
        &["fdr-dump", "--verify"][..],
        &["convert", "--output-format=yaml"][..],
    ] {
        let out = Command::new("llvm-xray")
            .args(args)
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "llvm-xray {args:?} {}",
            path.display()
        );
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn buffer_frames(s: &Stream) -> Vec<usize> {
    (0..s.frames.len())
        .filter(|&i| {
            matches!(
                s.frames[i].kind,
                FrameKind::FdrBuffer | FrameKind::FdrCompact | FrameKind::FdrPacked
            )
        })
        .collect()
}

#[test]
fn file_input_with_corruption_and_lost_bytes() {
    let s = make_stream(3000, 7);
    let bufs = buffer_frames(&s);
    assert!(bufs.len() > 20, "{} buffers", bufs.len());
    let hits = [
        Hit::Flip(bufs[3]),
        Hit::Drop(bufs[8]),
        Hit::Flip(bufs[9]),
        Hit::Flip(1), // a Trace2 line or header near the start
    ];
    let (wire, damaged) = damage(&s, &hits, None);
    let dir = scratch("file");
    let input = dir.join("link.bin");
    std::fs::write(&input, &wire).unwrap();
    let out = flightrec()
        .args(["recv", input.to_str().unwrap(), "-o"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = stderr(&out);
    // Damage seen: status 1, and the report says what.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("CRC failures"), "{err}");
    assert!(!err.contains(" 0 CRC failures"), "{err}");
    judge(&s, &damaged, &dir.join("out"));
    // The target's counters arrived.
    assert!(err.contains("target dropped"), "{err}");

    // The clean stream: status 0, everything.
    std::fs::write(&input, &s.wire).unwrap();
    let clean = dir.join("clean");
    let out = flightrec()
        .args(["recv", input.to_str().unwrap(), "-q", "-o"])
        .arg(&clean)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    judge(&s, &[], &clean);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stdin_input_that_starts_mid_stream() {
    let s = make_stream(1500, 11);
    let bufs = buffer_frames(&s);
    // Start inside the third buffer frame: its header came before, so the buffers
    // after it wait for the next header, which repeats every 2 buffers.
    let (wire, damaged) = damage(&s, &[Hit::Drop(bufs[6])], Some(bufs[2]));
    let dir = scratch("stdin");
    let mut child = flightrec()
        .args(["recv", "-", "-o"])
        .arg(&dir)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&wire).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    judge(&s, &damaged, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pseudo-terminal pair in raw mode: (master, slave fd kept open, slave path).
fn pty() -> (File, std::os::fd::OwnedFd, PathBuf) {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    let p = nix::pty::openpty(None, None).unwrap();
    // Not inherited by the recv child, or closing the master would not hang up.
    for fd in [p.master.as_fd(), p.slave.as_fd()] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).unwrap();
    }
    // Non-blocking writes, so a receiver that died cannot hang the test.
    fcntl(p.master.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
    let mut t = tcgetattr(p.slave.as_fd()).unwrap();
    cfmakeraw(&mut t);
    tcsetattr(p.slave.as_fd(), SetArg::TCSANOW, &t).unwrap();
    let path = nix::unistd::ttyname(p.slave.as_fd()).unwrap();
    (File::from(p.master), p.slave, path)
}

/// Waits until process `pid` has `device` open (so nothing written before it
/// listens can be lost or flushed away).
fn wait_open(pid: u32, device: &Path) {
    let target = std::fs::canonicalize(device).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == target));
        if open {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "recv never opened {}",
            device.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn write_slowly(master: &mut File, bytes: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for chunk in bytes.chunks(997) {
        let mut rest = chunk;
        while !rest.is_empty() {
            match master.write(rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "the receiver stopped reading");
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => panic!("pty write: {e}"),
            }
        }
        std::thread::sleep(Duration::from_micros(300));
    }
}

fn wait(child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() {
        if start.elapsed() > limit {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("recv did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    waiter.join().unwrap()
}

#[test]
fn serial_pty_with_corruption() {
    let s = make_stream(2000, 3);
    let bufs = buffer_frames(&s);
    let (wire, damaged) = damage(&s, &[Hit::Flip(bufs[4]), Hit::Drop(bufs[5])], None);
    let dir = scratch("pty");
    let (mut master, _slave, path) = pty();
    let child = flightrec()
        .args(["recv", "--device"])
        .arg(&path)
        .args([
            "--baud",
            "921600",
            "--no-reconnect",
            "--idle-timeout",
            "3",
            "-o",
        ])
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_open(child.id(), &path);
    write_slowly(&mut master, &wire);
    // Let the reader drain the pty, then hang up.
    std::thread::sleep(Duration::from_millis(500));
    drop(master);
    let out = wait(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    judge(&s, &damaged, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serial_device_that_disappears_and_comes_back() {
    let s = make_stream(2000, 5);
    // Split at a frame boundary halfway.
    let half = s.frames[s.frames.len() / 2].span.0;
    let dir = scratch("reconnect");
    let link = dir.join("ttyFLIGHT");
    let (mut m1, s1, p1) = pty();
    std::os::unix::fs::symlink(&p1, &link).unwrap();
    let child = flightrec()
        .args(["recv", "--device"])
        .arg(&link)
        .args(["--idle-timeout", "4", "-o"])
        .arg(dir.join("out"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_open(child.id(), &p1);
    write_slowly(&mut m1, &s.wire[..half]);
    std::thread::sleep(Duration::from_millis(500));
    // Unplug: the device goes away, a new one appears under the same name.
    drop(m1);
    drop(s1);
    std::thread::sleep(Duration::from_millis(400));
    let (mut m2, _s2, p2) = pty();
    let tmp = dir.join("ttyFLIGHT.new");
    std::os::unix::fs::symlink(&p2, &tmp).unwrap();
    std::fs::rename(&tmp, &link).unwrap();
    wait_open(child.id(), &p2);
    write_slowly(&mut m2, &s.wire[half..]);
    let out = wait(child, Duration::from_secs(30));
    let err = stderr(&out);
    assert!(err.contains("device gone"), "{err}");
    assert!(err.contains("1 disconnects"), "{err}");
    judge(&s, &[], &dir.join("out"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_keeps_what_was_received() {
    let s = make_stream(2000, 9);
    // Everything up to the middle frame, then Ctrl-C while the line is quiet.
    let mid = s.frames.len() / 2;
    let cut = s.frames[mid].span.1 + 1;
    let dir = scratch("sigint");
    let (mut master, _slave, path) = pty();
    let child = flightrec()
        .args(["recv", "--device"])
        .arg(&path)
        .args(["-o"])
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_open(child.id(), &path);
    write_slowly(&mut master, &s.wire[..cut]);
    std::thread::sleep(Duration::from_millis(600));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = wait(child, Duration::from_secs(10));
    let err = stderr(&out);
    assert!(err.contains("(interrupted)"), "{err}");
    let sent = Stream {
        wire: s.wire[..cut].to_vec(),
        frames: s.frames[..=mid].to_vec(),
    };
    judge(&sent, &[], &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The wire of `frames` (kind, source, payload) as `LinkWriter` sends them.
fn wire_of(frames: &[(FrameKind, u32, &[u8])]) -> Vec<u8> {
    let mut link = LinkWriter::new(Recording { wire: Vec::new() });
    for &(kind, source, payload) in frames {
        link.send(kind, source, payload).unwrap();
    }
    link.into_inner().wire
}

const CRAFTED: &[u8] = include_bytes!("../../testdata/xray/crafted-v5.xray");

#[test]
fn many_sources_with_few_file_descriptors() {
    // 40 sources, each sending its header and a buffer, then a second buffer
    // each: with `ulimit -n 16`, recv used to fail with EMFILE after 12 files.
    let (header, buffer) = CRAFTED.split_at(32);
    let mut frames = Vec::new();
    for source in 1..=40 {
        frames.push((FrameKind::FileHeader, source, header));
        frames.push((FrameKind::FdrBuffer, source, buffer));
    }
    for source in 1..=40 {
        frames.push((FrameKind::FdrBuffer, source, buffer));
    }
    let dir = scratch("fds");
    let capture = dir.join("capture.bin");
    std::fs::write(&capture, wire_of(&frames)).unwrap();
    let out_dir = dir.join("out");
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 16 && exec "$0" recv -q -o "$1" "$2""#)
        .arg(env!("CARGO_BIN_EXE_flightrec"))
        .arg(&out_dir)
        .arg(&capture)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let mut twice = CRAFTED.to_vec();
    twice.extend_from_slice(buffer);
    for source in 1..=40 {
        let path = out_dir.join(format!("source-{source}.xray"));
        assert_eq!(std::fs::read(&path).unwrap(), twice, "source {source}");
        assert!(
            err.contains(&format!("  source {source}: 2 buffers -> ")),
            "{err}"
        );
    }
    check_llvm(&out_dir.join("source-1.xray"));
    check_llvm(&out_dir.join("source-40.xray"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_as_input_is_named() {
    let dir = scratch("dir-input");
    let out = flightrec()
        .args(["recv", "-q", "-o"])
        .arg(dir.join("out"))
        .arg(&dir)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("flightrec: {}: is a directory", dir.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_max_payload_beyond_the_limit_is_refused() {
    let dir = scratch("max-payload");
    let capture = dir.join("capture.bin");
    std::fs::write(&capture, b"").unwrap();
    let out = flightrec()
        .args(["recv", "-q", "--max-payload", "100000000000", "-o"])
        .arg(&dir)
        .arg(&capture)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("more than the limit of 67108864"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Peak resident memory of a running process, in KiB (Linux `VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn an_endless_input_is_read_in_bounded_memory() {
    // `/dev/zero` is read far faster than it is decoded: with an unbounded
    // queue recv grew by hundreds of MB a second.
    let dir = scratch("zero");
    let mut child = flightrec()
        .args(["recv", "-q", "-o"])
        .arg(&dir)
        .arg("/dev/zero")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let peak = peak_kib(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(peak < 64 * 1024, "peak {peak} KiB");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn buffers_without_a_header_are_held_in_bounded_room_and_the_rest_counted() {
    // 40 sources send a 1 MiB buffer each and never a header: 32 MiB are held
    // (for a header that might still come), the other 8 buffers are dropped on
    // arrival; all 40 are reported lost at the end.
    let payload = vec![0x5a_u8; 1 << 20];
    let frames: Vec<_> = (1..=40)
        .map(|source| (FrameKind::FdrBuffer, source, &payload[..]))
        .collect();
    let dir = scratch("headerless");
    let capture = dir.join("capture.bin");
    std::fs::write(&capture, wire_of(&frames)).unwrap();
    let out = flightrec()
        .args(["recv", "-q", "-o"])
        .arg(dir.join("out"))
        .arg(&capture)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let held = "1 buffers lost without a file header\n";
    let dropped =
        "1 buffers lost without a file header (1 dropped on arrival: no room left to hold them)\n";
    assert_eq!(err.matches(held).count(), 32, "{err}");
    assert_eq!(err.matches(dropped).count(), 8, "{err}");
    assert!(
        err.contains(&format!(
            "  source 40: 0 buffers -> no file; no counters received; {dropped}"
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A minimal little-endian ELF32 file with one section, `name`, at address 0.
fn elf_with_section(name: &str, data: &[u8]) -> Vec<u8> {
    let mut shstrtab = vec![0u8];
    shstrtab.extend_from_slice(name.as_bytes());
    shstrtab.push(0);
    let shstrtab_name = shstrtab.len() as u32;
    shstrtab.extend_from_slice(b".shstrtab\0");
    let data_off = 52u32;
    let shstrtab_off = data_off + data.len() as u32;
    let shoff = shstrtab_off + shstrtab.len() as u32;
    let mut elf = vec![0u8; 52];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 1; // ELF32
    elf[5] = 1; // little-endian
    elf[6] = 1;
    elf[16..18].copy_from_slice(&2u16.to_le_bytes()); // executable
    elf[18..20].copy_from_slice(&40u16.to_le_bytes()); // ARM
    elf[32..36].copy_from_slice(&shoff.to_le_bytes());
    elf[40..42].copy_from_slice(&52u16.to_le_bytes());
    elf[46..48].copy_from_slice(&40u16.to_le_bytes());
    elf[48..50].copy_from_slice(&3u16.to_le_bytes()); // sections
    elf[50..52].copy_from_slice(&2u16.to_le_bytes()); // .shstrtab
    elf.extend_from_slice(data);
    elf.extend_from_slice(&shstrtab);
    let section = |name: u32, kind: u32, off: u32, len: u32| {
        let mut s = vec![0u8; 40];
        s[..4].copy_from_slice(&name.to_le_bytes());
        s[4..8].copy_from_slice(&kind.to_le_bytes());
        s[16..20].copy_from_slice(&off.to_le_bytes());
        s[20..24].copy_from_slice(&len.to_le_bytes());
        s
    };
    elf.extend(section(0, 0, 0, 0));
    elf.extend(section(1, 1, data_off, data.len() as u32));
    elf.extend(section(
        shstrtab_name,
        3,
        shstrtab_off,
        shstrtab.len() as u32,
    ));
    elf
}

/// Compact Trace2 events: `recv` writes them in the format `--trace2-format` and
/// `--trace2-brief` name, the lines the core's formatter makes; the strings
/// interned in the ELF are looked up (here an ELF made by the test, with a
/// `.flightrec.trace2` section) and without `--elf` they are `#<id>`, counted,
/// and the exit status is 1.
#[test]
fn compact_trace2_events_in_each_format() {
    use flightrec_host::core::link::trace2::{DataInt, Exit, RegionEnter, Session, Str};
    use flightrec_host::core::trace2::{Event, Format, LineCtx, Target, ThreadName, ThreadState};

    let mut link = LinkWriter::new(Recording { wire: Vec::new() });
    let session = Session {
        hz: 1_000_000,
        sid: Str::Bytes(b"sid-1"),
        thread: Str::Bytes(b"main"),
    };
    link.send_trace2(0, 0, &session).unwrap();
    // Ids 1 and 10 of the section below.
    let (category, label) = (Some(Str::Id(1)), Some(Str::Id(10)));
    link.send_trace2(
        0,
        1_500,
        &RegionEnter {
            category,
            label,
            msg: None,
        },
    )
    .unwrap();
    let ev = DataInt {
        category: Str::Id(1),
        key: Str::Bytes(b"n"),
        value: -7,
    };
    link.send_trace2(0, 2_000, &ev).unwrap();
    link.send_trace2(0, 9_000, &Exit { code: 3 }).unwrap();
    let wire = link.into_inner().wire;

    let dir = scratch("compact-trace2");
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("wire.bin");
    std::fs::write(&input, &wire).unwrap();
    let elf = dir.join("fw.elf");
    std::fs::write(
        &elf,
        elf_with_section(".flightrec.trace2", b"\0firmware\0workload\0"),
    )
    .unwrap();

    for (target, name, brief) in [
        (Target::Event, "event", false),
        (Target::Perf, "perf", true),
        (Target::Perf, "perf", false),
        (Target::Normal, "normal", false),
    ] {
        let out = dir.join(format!("{name}-{brief}"));
        let mut cmd = flightrec();
        cmd.args(["recv", "-q", "--trace2-format", name])
            .arg(&input);
        cmd.arg("-o").arg(&out).arg("--elf").arg(&elf);
        if brief {
            cmd.arg("--trace2-brief");
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));

        let format = Format::new(target, brief);
        let mut thread = ThreadState::<8>::new(ThreadName::main(), 0);
        let mut expected = Vec::new();
        let mut buf = [0u8; 512];
        let mut line = |nesting, t_abs, ev: &Event<'_>| {
            let ctx = LineCtx {
                nesting,
                t_abs,
                ..LineCtx::new(b"sid-1", b"main")
            };
            let n = format.write_line(&ctx, ev, &mut buf).unwrap();
            expected.extend_from_slice(&buf[..n]);
        };
        let nesting = thread.region_enter(1_500);
        let (category, label) = (Some(&b"firmware"[..]), Some(&b"workload"[..]));
        line(
            nesting,
            1_500,
            &Event::RegionEnter {
                category,
                label,
                msg: None,
            },
        );
        let data = Event::Data {
            t_rel: thread.data_t_rel(2_000),
            category: b"firmware",
            key: b"n",
            value: b"-7",
        };
        line(thread.nesting(), 2_000, &data);
        line(thread.nesting(), 9_000, &Event::Exit { code: 3 });
        assert_eq!(
            String::from_utf8(std::fs::read(out.join("trace2.txt")).unwrap()).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    }

    // Without the ELF.
    let out = dir.join("no-elf");
    let o = flightrec()
        .args(["recv"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 with a string id the ELF does not name"),
        "{}",
        stderr(&o)
    );
    assert!(std::fs::read_to_string(out.join("trace2.txt"))
        .unwrap()
        .contains("\"category\":\"#1\""));
    std::fs::remove_dir_all(&dir).unwrap();
}
