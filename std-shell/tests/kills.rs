//! SIGKILL and SIGINT at random moments: a program tracing with Trace2 (three
//! targets, both write modes) and XRay (streaming, and the flight recorder with
//! `dump_on_signal`) on several threads is killed again and again, and what it
//! left behind must not be corrupt:
//!
//! * every Trace2 line is whole: each event line parses as JSON, each normal and
//!   perf line ends with a line feed (git writes a line with one `write`); only
//!   the last line of a file may be cut, and only at a page boundary of the file,
//!   where the kernel ends a `write` that a fatal signal interrupts;
//! * every streamed FDR file either verifies or is cut short (a truncated record,
//!   payload or buffer: what `flightrec verify` reports as incomplete), never
//!   anything else, and its `.names` file lists the traced function;
//! * after SIGINT with `dump_on_signal`, the flight recorder's trace is written
//!   whole and verifies, and the process still dies of SIGINT.
//!
//! `KILLS_ROUNDS` sets the number of rounds (default 12: CI); the seed of the
//! random moments is printed, and `KILLS_SEED` replays one.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flightrec::core::fdr::decoder::{verify, DecodeErrorKind, VerifyError};
use flightrec::core::fdr::FunctionId;
use flightrec::xray::{Config, Mode};

mod trace2_scenario;
use trace2_scenario::{in_child, Scenario};

/// The scenario reads its XRay mode and trace prefix from these.
const XRAY_MODE: &str = "KILLS_XRAY_MODE";
const XRAY_BASE: &str = "KILLS_XRAY_BASE";
/// The child prints this on stdout once tracing is under way.
const READY: &str = "tracing-started";

/// Four threads trace regions, printf lines and XRay calls until killed.
fn trace_until_killed() {
    let mode = match std::env::var(XRAY_MODE).as_deref() {
        Ok("streaming") => Mode::Streaming,
        _ => Mode::FlightRecorder,
    };
    let config = Config::builder()
        .logfile_base(std::env::var(XRAY_BASE).unwrap())
        .mode(mode)
        .func_duration_threshold_us(0)
        .buffer_size(4096)
        .buffer_max(16)
        .thread_buffers(8)
        .flush_interval_ms(2)
        .dump_on_signal(true)
        .build()
        .unwrap();
    flightrec::xray::init(config).unwrap();
    let _t2 = flightrec::trace2::init();
    let f = FunctionId::new(1).unwrap();
    flightrec::xray::set_function_name(f, "kills::work");
    // Workers that finished a round: READY only once each has recorded, so
    // that a dump on SIGINT always has something to write (a loaded machine
    // may not have run them yet when `main` gets here).
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let workers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let _th = flightrec::trace2::thread_start(&format!("w{t}"));
                for i in 0u64.. {
                    {
                        let _r = flightrec::region!("kills", "work", "round {}", i);
                        let _g = flightrec::xray::enter_with_arg(f, i);
                        flightrec::printf!("{t} {i} {}", "x".repeat((i % 90) as usize));
                    }
                    if i == 0 {
                        STARTED.fetch_add(1, std::sync::atomic::Ordering::Release);
                    }
                }
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while STARTED.load(std::sync::atomic::Ordering::Acquire) < 4 {
        assert!(std::time::Instant::now() < deadline, "workers never ran");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    println!("{READY}");
    for w in workers {
        let _ = w.join();
    }
}

/// A small deterministic generator for the moments and the signals.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn wait_ready(child: &mut Child) {
    use std::io::BufRead;
    let out = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(out).lines();
    let start = Instant::now();
    for line in lines.by_ref() {
        if line.unwrap().contains(READY) {
            // Keep draining so the child never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "child never started"
        );
    }
    panic!("the child ended before tracing started");
}

/// Waits for the child to die, killing it for good after 30 s (a hang fails).
fn wait_dead(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the traced child did not die of its signal within 30 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn files_with_prefix(dir: &std::path::Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

/// Whether `text` may end in a cut line: the kernel ends a `write` to a regular file
/// early when a fatal signal arrives between two pages of it (`generic_perform_write`
/// checks for one before each page), so after SIGKILL, or a SIGINT that kills, the
/// last line, and only the last, may stop at a page boundary of the file. git's own
/// Trace2 files behave the same.
fn cut_at_a_page_boundary(text: &str) -> bool {
    !text.is_empty() && text.len() % 4096 == 0
}

fn check_trace2(s: &Scenario, round: usize, write: &str) {
    let event = s.read("event");
    let lines: Vec<&str> = event.split_inclusive('\n').collect();
    for (n, line) in lines.iter().enumerate() {
        let whole = line.ends_with('\n') && serde_json::from_str::<serde_json::Value>(line).is_ok();
        let last_cut =
            n + 1 == lines.len() && !line.ends_with('\n') && cut_at_a_page_boundary(&event);
        assert!(
            whole || last_cut,
            "round {round}: event line {} of {} is not a whole JSON line (file of {} bytes): {line:?}",
            n + 1,
            lines.len(),
            event.len()
        );
    }
    // The direct mode writes the version event in `init`, before the child says
    // it is ready. The background mode queues it for the writer thread: a kill
    // that lands before that thread's first batch (on a loaded machine it need
    // not run within the few milliseconds a round may wait) leaves the file
    // empty, and an empty file is not a corrupt one. Whatever the writer wrote
    // starts with the version event.
    assert!(
        event.contains("\"event\":\"version\"") || (write == "background" && event.is_empty()),
        "round {round} (trace2 {write}): no version event in {} bytes of event lines",
        event.len()
    );
    for target in ["normal", "perf"] {
        let text = s.read(target);
        assert!(
            text.is_empty() || text.ends_with('\n') || cut_at_a_page_boundary(&text),
            "round {round}: the {target} target ends in a cut line not at a page boundary ({} bytes): {:?}",
            text.len(),
            &text[text.len().saturating_sub(80)..]
        );
    }
}

/// Whether a decode error means "the file ends too soon" (what a kill can do).
fn is_cut_short(kind: &DecodeErrorKind) -> bool {
    matches!(
        kind,
        DecodeErrorKind::TruncatedRecord { .. }
            | DecodeErrorKind::TruncatedPayload { .. }
            | DecodeErrorKind::BufferOverRead { .. }
            // Only the header was written.
            | DecodeErrorKind::Grammar(VerifyError::NoBuffers)
            // The last block stops inside its preamble.
            | DecodeErrorKind::Grammar(VerifyError::InvalidTerminal { .. })
            // Cut between two buffers: no end block.
            | DecodeErrorKind::CutShort { .. }
    )
}

/// Checks the FDR files; returns how many were cut short.
fn check_xray(s: &Scenario, round: usize, signal: i32, mode: &str) -> usize {
    let mut cut = 0;
    let traces: Vec<_> = files_with_prefix(&s.dir, "xr-")
        .into_iter()
        .filter(|p| p.extension().is_none_or(|e| e != "names"))
        .collect();
    if mode == "flight-recorder" && signal == libc::SIGINT {
        // dump_on_signal: the whole flight recorder is written, then SIGINT kills.
        assert_eq!(traces.len(), 1, "round {round}: {traces:?}");
        let bytes = std::fs::read(&traces[0]).unwrap();
        let summary = verify(&bytes)
            .unwrap_or_else(|e| panic!("round {round}: dumped trace does not verify: {e}"));
        assert!(summary.function_records > 0, "round {round}: empty dump");
    }
    for trace in &traces {
        let bytes = std::fs::read(trace).unwrap();
        if bytes.is_empty() {
            continue; // created, killed before the header was written
        }
        if let Err(e) = verify(&bytes) {
            cut += 1;
            assert!(
                is_cut_short(&e.kind),
                "round {round}: {} is corrupt, not just cut short: {e}",
                trace.display()
            );
        }
        if mode == "streaming" {
            let names = std::fs::read(format!("{}.names", trace.display())).unwrap_or_default();
            // The names file is an ELF; the name is stored as text inside it.
            let named = names.windows(11).any(|w| w == b"kills::work");
            assert!(
                named || bytes.len() < 4096,
                "round {round}: {}.names does not name the traced function",
                trace.display()
            );
        }
    }
    cut
}

#[test]
fn random_kills_leave_nothing_corrupt() {
    if in_child("kills", trace_until_killed) {
        return;
    }
    let rounds: usize = std::env::var("KILLS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let seed: u64 = std::env::var("KILLS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("random_kills: {rounds} rounds, KILLS_SEED={seed}");
    let mut rng = Rng(seed);
    for round in 0..rounds {
        let s = Scenario::new();
        let signal = if rng.next() % 2 == 0 {
            libc::SIGKILL
        } else {
            libc::SIGINT
        };
        let mode = if rng.next() % 2 == 0 {
            "streaming"
        } else {
            "flight-recorder"
        };
        let write = if rng.next() % 2 == 0 {
            "direct"
        } else {
            "background"
        };
        let delay = Duration::from_millis(rng.next() % 250);
        let base = format!("{}/xr-", s.dir.display());
        let event = s.file("event");
        let normal = s.file("normal");
        let perf = s.file("perf");
        let mut cmd: Command = s.command("random_kills_leave_nothing_corrupt", "kills", &[]);
        cmd.env("GIT_TRACE2_EVENT", &event)
            .env("GIT_TRACE2", &normal)
            .env("GIT_TRACE2_PERF", &perf)
            .env("FLIGHTREC_TRACE2_WRITE", write)
            .env(XRAY_MODE, mode)
            .env(XRAY_BASE, &base)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        wait_ready(&mut child);
        std::thread::sleep(delay);
        // SAFETY: signalling our own child, whose pid is live until we wait on it.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = wait_dead(&mut child);
        assert_eq!(
            status.signal(),
            Some(signal),
            "round {round} ({mode}, {write}, {delay:?}): the child did not die of signal {signal}: {status:?}"
        );
        check_trace2(&s, round, write);
        let cut = check_xray(&s, round, signal, mode);
        eprintln!(
            "round {round}: {mode}, trace2 {write}, signal {signal} after {delay:?}: {} event lines, {} trace and names files, {cut} cut short",
            s.read("event").lines().count(),
            files_with_prefix(&s.dir, "xr-").len(),
        );
    }
}

/// The classification the kill rounds rely on: a real compiler-rt trace cut at
/// any byte either still verifies (a cut between buffers) or fails as cut short.
#[test]
fn every_cut_of_a_real_trace_is_cut_short_or_whole() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/xray/real-v5-smallbuffers.xray"
    );
    let bytes = std::fs::read(path).unwrap();
    verify(&bytes).unwrap();
    let (mut whole, mut short) = (0, 0);
    for len in 32..bytes.len() {
        match verify(&bytes[..len]) {
            Ok(_) => whole += 1,
            Err(e) => {
                assert!(is_cut_short(&e.kind), "cut at {len}: {e}");
                short += 1;
            }
        }
    }
    assert!(
        short > whole && whole > 0,
        "{short} cut short, {whole} whole"
    );
}
