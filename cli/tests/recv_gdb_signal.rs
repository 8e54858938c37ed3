//! `flightrec recv --gdb` stops within a second of Ctrl-C (a real SIGINT to the
//! binary) in every state: connecting to a server that is not there yet, awaiting
//! the acknowledgement of a packet from a silent server, mid-read of a reply
//! trickled a byte at a time, and idle between polls of a target that sends
//! nothing more (writing what it received). And `--idle-timeout` never hides an
//! error: the exit status and message are those of a run without it. Each case
//! has a time limit: a regression fails (and the child is killed) instead of
//! hanging.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use flightrec_host::core::link::{FrameKind, LinkWriter};
use flightrec_testkit::gdb_stub::{Hostile, MemoryStub, StubConfig};
use flightrec_testkit::target_image::{control_block_image, elf_with_symbol, Layout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const BASE: u64 = 0x2000_0000;
const LAYOUT: Layout = Layout {
    pointer_size: 4,
    big_endian: false,
};
/// The most a run may take from SIGINT to its exit.
const LIMIT: Duration = Duration::from_secs(1);

fn start(address: &str, dir: &Path, extra: &[&str]) -> Child {
    let elf = dir.join("fw.elf");
    std::fs::write(&elf, elf_with_symbol("_SEGGER_RTT", BASE as u32, 0)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(["recv", "-q", "--gdb", address, "--elf"])
        .arg(&elf)
        .arg("-o")
        .arg(dir.join("out"))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit, `limit` at most (then kills it and fails).
fn wait_within(mut child: Child, limit: Duration, what: &str) -> (Output, Duration) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let took = started.elapsed();
            return (child.wait_with_output().unwrap(), took);
        }
        if started.elapsed() > limit + Duration::from_secs(4) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running {:?} after it was due; stderr:\n{}",
                started.elapsed(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits until `reached` says `child` is in its state (10 s at most), lets it
/// stay there for `settle`, sends SIGINT, and returns its output and the time
/// from the signal to its exit (at most `LIMIT`).
fn interrupt(child: Child, reached: impl Fn() -> bool, settle: Duration, state: &str) -> Output {
    let waiting = Instant::now();
    while !reached() {
        assert!(
            waiting.elapsed() < Duration::from_secs(10),
            "{state}: never reached"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(settle);
    assert!(
        kill(Pid::from_raw(child.id() as i32), None).is_ok(),
        "{state}: the run ended before the signal"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let (out, took) = wait_within(child, LIMIT, state);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{state}: SIGINT to exit {:.0} ms", took.as_secs_f64() * 1e3);
    assert!(
        took < LIMIT,
        "{state}: {took:?} from SIGINT to exit\n{stderr}"
    );
    assert!(stderr.contains("(interrupted)"), "{state}: {stderr}");
    out
}

/// A port on which nothing listens.
fn free_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

#[test]
fn sigint_while_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let child = start(&free_port(), dir.path(), &[]);
    // Nothing to see from outside: the time to start and try a few times.
    let out = interrupt(child, || true, Duration::from_millis(700), "connecting");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn sigint_while_awaiting_an_ack() {
    let dir = tempfile::tempdir().unwrap();
    let stub = MemoryStub::spawn_with(
        StubConfig::new(BASE, vec![0; 64]).hostile(b"qSupported", Hostile::Silent),
    )
    .unwrap();
    let child = start(&stub.address(), dir.path(), &[]);
    let out = interrupt(
        child,
        || !stub.packets().is_empty(),
        Duration::from_millis(200),
        "awaiting an ack",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stub.packets(), [b"qSupported:swbreak+;hwbreak+".to_vec()]);
}

#[test]
fn sigint_mid_read() {
    let dir = tempfile::tempdir().unwrap();
    let ram = control_block_image(BASE, 64, LAYOUT);
    let stub = MemoryStub::spawn_with(
        StubConfig::new(BASE, ram).hostile(b"m", Hostile::Trickle(Duration::from_millis(100))),
    )
    .unwrap();
    let child = start(&stub.address(), dir.path(), &[]);
    let out = interrupt(
        child,
        || stub.packets().iter().any(|p| p.starts_with(b"m")),
        Duration::from_millis(200),
        "mid-read",
    );
    assert!(out.status.success(), "{out:?}");
}

/// A link of one FDR file from source 3, and the file.
fn captured_link() -> (Vec<u8>, Vec<u8>) {
    let trace = include_bytes!("../../testdata/xray/crafted-v5.xray");
    let mut buf = vec![0u8; 4096];
    let mut link = LinkWriter::new(&mut buf[..]);
    link.send(FrameKind::FileHeader, 3, &trace[..32]).unwrap();
    link.send(FrameKind::FdrBuffer, 3, &trace[32..]).unwrap();
    let unused = link.into_inner().len();
    let len = buf.len() - unused;
    buf.truncate(len);
    (buf, trace.to_vec())
}

#[test]
fn sigint_while_idle_writes_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let (wire, file) = captured_link();
    let size = 4096usize;
    let ram = control_block_image(BASE, size as u32, LAYOUT);
    let buffer = ram.len() - size;
    let mut sent = false;
    // The target writes the link once, then runs on sending nothing.
    let stub = MemoryStub::spawn_with(StubConfig::new(BASE, ram).running(move |mem| {
        if !sent {
            mem[buffer..buffer + wire.len()].copy_from_slice(&wire);
            mem[36..40].copy_from_slice(&(wire.len() as u32).to_le_bytes());
            sent = true;
        }
        true
    }))
    .unwrap();
    let child = start(&stub.address(), dir.path(), &[]);
    // Idle once the link was read and the read offset moved on (an `M`).
    let out = interrupt(
        child,
        || stub.packets().iter().any(|p| p.starts_with(b"M")),
        Duration::from_millis(300),
        "idle",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read(dir.path().join("out/source-3.xray")).unwrap(),
        file
    );
    // The target was left running: the stub saw `D`.
    assert_eq!(stub.packets().last().map(Vec::as_slice), Some(&b"D"[..]));
}

#[test]
fn sigint_with_a_detach_that_does_not_finish_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (wire, file) = captured_link();
    let size = 4096usize;
    let ram = control_block_image(BASE, size as u32, LAYOUT);
    let buffer = ram.len() - size;
    let mut sent = false;
    // As in the idle case, but the server never answers `D`: the reader has
    // 0.4 s to leave the target running.
    let config = StubConfig::new(BASE, ram)
        .running(move |mem| {
            if !sent {
                mem[buffer..buffer + wire.len()].copy_from_slice(&wire);
                mem[36..40].copy_from_slice(&(wire.len() as u32).to_le_bytes());
                sent = true;
            }
            true
        })
        .hostile(b"D", Hostile::Silent);
    let stub = MemoryStub::spawn_with(config).unwrap();
    let child = start(&stub.address(), dir.path(), &[]);
    std::thread::sleep(Duration::from_millis(100));
    let waiting = Instant::now();
    while !stub.packets().iter().any(|p| p.starts_with(b"M")) {
        assert!(waiting.elapsed() < Duration::from_secs(10), "never idle");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let (out, took) = wait_within(child, LIMIT, "a slow detach");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "a slow detach: SIGINT to exit {:.0} ms",
        took.as_secs_f64() * 1e3
    );
    assert!(took < LIMIT, "{took:?}\n{stderr}");
    // The error is the run's: status 2, and what is left undone.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "no acknowledgement of a packet from the GDB server in the 0.4 s given to leave"
        ) && stderr.contains("(leaving the target: it may still be halted)"),
        "{stderr}"
    );
    // What was received is written.
    assert_eq!(
        std::fs::read(dir.path().join("out/source-3.xray")).unwrap(),
        file
    );
}

/// A server that accepts, says nothing for a while, then closes the connection.
fn closing_server(after: Duration) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            std::thread::sleep(after);
            let _ = s.write_all(b"");
            let mut sink = [0u8; 64];
            let _ = s.set_nonblocking(true);
            let _ = s.read(&mut sink);
        }
    });
    address
}

#[test]
fn idle_timeout_never_hides_an_error() {
    let run = |extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let address = closing_server(Duration::from_millis(1200));
        let child = start(&address, dir.path(), extra);
        let (out, _) = wait_within(child, Duration::from_secs(8), "closing server");
        let stderr = String::from_utf8_lossy(&out.stderr).replace(&address, "ADDRESS");
        let error = stderr
            .lines()
            .find(|l| l.starts_with("flightrec: "))
            .map(str::to_string);
        (out.status.code(), error)
    };
    let without = run(&[]);
    let with = run(&["--idle-timeout", "0.3"]);
    assert_eq!(without.0, Some(2), "{without:?}");
    assert!(
        without
            .1
            .as_deref()
            .is_some_and(|e| e.contains("closed the connection")),
        "{without:?}"
    );
    assert_eq!(with, without);
}
