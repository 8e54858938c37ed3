//! What tracing costs a tokio server per request: a small key-value server in
//! the style of mini-redis (a task per connection, `#[tracing::instrument]`
//! spans with fields, `tracing` events), driven on loopback by this program's
//! own clients with a bounded number of requests, once per subscriber:
//!
//! * `none`: no subscriber (the request's own CPU);
//! * `fmt`: `tracing-subscriber`'s fmt layer writing its lines to a file;
//! * `idle`: flightrec's layer with no Trace2 target (the registry, the
//!   filter and the layer's own bookkeeping);
//! * `direct`, `background`: flightrec's layer, Trace2's event target to a
//!   file, in the direct and the background write mode.
//!
//! Each run serves in a child process of its own (the runtimes are
//! process-wide) that reports its CPU time (user + system, every thread: the
//! background writer's too) from its first accepted connection to the end of
//! tracing (the trace flushed and closed). Runs alternate between subscribers;
//! the table gives each subscriber's median CPU per request and its ratio to
//! `none`.
//!
//! ```sh
//! cargo run --release -p flightrec --example server-cost -- [ROUNDS] [CONNECTIONS] [REQUESTS] [SUBJECTS]
//! ```
//!
//! Defaults: 5 rounds, 16 connections, 500 requests each, every subscriber
//! (`SUBJECTS`: some of them, comma-separated; ratios are to the first).
//! Exits non-zero when a run fails or a reply is wrong; lines the background
//! mode dropped (its queue full while the writer thread waited for a CPU)
//! are counted in the table, from the runtime's own report at exit.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tracing_subscriber::prelude::*;

const SUBJECTS: [&str; 5] = ["none", "fmt", "idle", "direct", "background"];
/// The server's tokio worker threads.
const WORKERS: usize = 2;
/// How long a run may take before it counts as failed.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

mod server {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{TcpListener, TcpStream};
    use tracing::Instrument;

    type Db = Arc<Mutex<HashMap<String, String>>>;

    /// Serves `connections` connections, each in a task of its own.
    pub async fn run(listener: TcpListener, connections: usize, started: impl FnOnce()) {
        let db = Db::default();
        let mut tasks = Vec::new();
        let mut started = Some(started);
        for id in 0..connections {
            let (socket, peer) = listener.accept().await.unwrap();
            if let Some(f) = started.take() {
                f();
            }
            tracing::debug!(%peer, "accepted");
            let db = db.clone();
            tasks.push(tokio::spawn(
                async move {
                    if let Err(e) = handle(socket, db).await {
                        tracing::error!(error = %e, "connection failed");
                    }
                }
                .instrument(tracing::info_span!("connection", id)),
            ));
        }
        for t in tasks {
            t.await.unwrap();
        }
    }

    #[tracing::instrument(skip_all)]
    async fn handle(socket: TcpStream, db: Db) -> std::io::Result<()> {
        let (read, mut write) = socket.into_split();
        let mut lines = BufReader::new(read).lines();
        while let Some(line) = lines.next_line().await? {
            let mut reply = apply(&line, &db).await;
            reply.push('\n');
            write.write_all(reply.as_bytes()).await?;
        }
        Ok(())
    }

    #[tracing::instrument(skip(db))]
    async fn apply(command: &str, db: &Db) -> String {
        let mut words = command.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("SET"), Some(key), Some(value)) => {
                db.lock().unwrap().insert(key.into(), value.into());
                tracing::debug!(key, size = value.len(), "stored");
                "OK".into()
            }
            (Some("GET"), Some(key), None) => {
                let value = db.lock().unwrap().get(key).cloned();
                tracing::debug!(key, found = value.is_some());
                value.unwrap_or_else(|| "(nil)".into())
            }
            _ => {
                tracing::error!(command, "unknown command");
                "ERR unknown command".into()
            }
        }
    }
}

/// CPU time of the whole process (every thread), in nanoseconds.
fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}

/// The child: serves `connections` connections traced by `subject`, prints
/// its port, then its CPU time from the first connection to the end.
fn serve(subject: &str, connections: usize, dir: &str) {
    let t2 = match subject {
        "none" => None,
        "fmt" => {
            let file = std::fs::File::create(format!("{dir}/fmt.log")).unwrap();
            tracing_subscriber::registry()
                .with(tracing_subscriber::EnvFilter::new("debug"))
                .with(
                    tracing_subscriber::fmt::layer()
                        .with_writer(std::sync::Mutex::new(file))
                        .with_ansi(false),
                )
                .init();
            None
        }
        "idle" | "direct" | "background" => {
            let t2 = flightrec::trace2::Builder::new()
                .prefix("COST_TRACE2")
                .init();
            assert_eq!(flightrec::trace2::enabled(), subject != "idle");
            tracing_subscriber::registry()
                .with(tracing_subscriber::EnvFilter::new("debug"))
                .with(flightrec::layer::layer())
                .init();
            Some(t2)
        }
        other => panic!("unknown subject {other}"),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .unwrap();
    let start = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let at_start = start.clone();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("PORT {}", listener.local_addr().unwrap().port());
        server::run(listener, connections, move || {
            at_start.store(process_cpu_ns(), std::sync::atomic::Ordering::Relaxed);
        })
        .await;
    });
    drop(rt);
    drop(t2); // exit and atexit: the queue written, the file closed
    let cpu = process_cpu_ns() - start.load(std::sync::atomic::Ordering::Relaxed);
    println!("CPU {cpu}");
}

/// One client connection: `requests` requests (SET and GET in turn), each
/// reply checked.
async fn client(port: u16, n: usize, requests: usize) {
    let socket = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (read, mut write) = socket.into_split();
    let mut replies = tokio::io::BufReader::new(read).lines();
    for r in 0..requests {
        let key = format!("k{n}-{}", r / 2);
        let (command, want) = if r % 2 == 0 {
            (format!("SET {key} value-{r:08}\n"), "OK".to_string())
        } else {
            (format!("GET {key}\n"), format!("value-{:08}", r - 1))
        };
        write.write_all(command.as_bytes()).await.unwrap();
        let reply = replies.next_line().await.unwrap().unwrap();
        assert_eq!(reply, want);
    }
}

/// Runs one child serving `subject`; its CPU ns and whatever it warned.
fn run(subject: &str, connections: usize, requests: usize) -> Result<(u64, String), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir_s = dir.path().to_str().ok_or("temp dir not UTF-8")?.to_string();
    let mut cmd = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
    cmd.args(["serve", subject, &connections.to_string(), &dir_s])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if subject != "idle" {
        cmd.env("COST_TRACE2_EVENT", dir.path().join("event"));
    }
    if subject == "background" {
        cmd.env("FLIGHTREC_TRACE2_WRITE", "background");
    } else {
        cmd.env_remove("FLIGHTREC_TRACE2_WRITE");
    }
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let port: u16 = match out.next() {
        Some(Ok(l)) => l
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .ok_or(format!("not a port: {l}"))?,
        other => return Err(format!("no port from the server: {other:?}")),
    };
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    clients.block_on(async {
        let all = (0..connections).map(|n| tokio::spawn(client(port, n, requests)));
        let joined = async {
            for c in all.collect::<Vec<_>>() {
                c.await.unwrap();
            }
        };
        tokio::time::timeout(RUN_DEADLINE, joined)
            .await
            .map_err(|_| format!("{subject}: clients not done in {RUN_DEADLINE:?}"))
    })?;
    let cpu = match out.next() {
        Some(Ok(l)) => l
            .strip_prefix("CPU ")
            .and_then(|c| c.parse().ok())
            .ok_or(format!("not a CPU time: {l}"))?,
        other => return Err(format!("no CPU time from the server: {other:?}")),
    };
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return Err(format!(
            "{subject}: server failed: {}\n{stderr}",
            output.status
        ));
    }
    let event = std::fs::metadata(dir.path().join("event")).map_or(0, |m| m.len());
    let fmt = std::fs::metadata(dir.path().join("fmt.log")).map_or(0, |m| m.len());
    let bytes = event.max(fmt);
    if !["none", "idle"].contains(&subject) && bytes == 0 {
        return Err(format!("{subject}: wrote no trace"));
    }
    Ok((cpu, format!("{bytes}\t{stderr}")))
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("serve") {
        serve(&args[2], args[3].parse().unwrap(), &args[4]);
        return;
    }
    let num = |i: usize, d: usize| args.get(i).map_or(d, |a| a.parse().expect("a number"));
    let (rounds, connections, requests) = (num(1, 5), num(2, 16), num(3, 500));
    let subjects: Vec<&str> = match args.get(4) {
        Some(list) => list.split(',').collect(),
        None => SUBJECTS.to_vec(),
    };
    if let Some(bad) = subjects.iter().find(|s| !SUBJECTS.contains(s)) {
        eprintln!("unknown subscriber {bad}: expected some of {SUBJECTS:?}");
        std::process::exit(2);
    }
    let total = (connections * requests) as f64;
    let mut cpu: Vec<Vec<u64>> = vec![Vec::new(); subjects.len()];
    let mut bytes = vec![0u64; subjects.len()];
    let mut dropped = vec![0u64; subjects.len()];
    for _ in 0..rounds {
        for (i, subject) in subjects.iter().enumerate() {
            match run(subject, connections, requests) {
                Ok((ns, info)) => {
                    let (b, stderr) = info.split_once('\t').unwrap_or(("0", ""));
                    dropped[i] += stderr
                        .lines()
                        .filter_map(|l| l.strip_prefix("warning: trace2: dropped "))
                        .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
                        .sum::<u64>();
                    bytes[i] = b.parse().unwrap_or(0);
                    cpu[i].push(ns);
                }
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1);
                }
            }
        }
    }
    let base = median(&mut cpu[0]) as f64 / total;
    println!(
        "{rounds} rounds, {connections} connections x {requests} requests, {WORKERS} server workers; median server CPU per request"
    );
    println!("| subscriber | CPU per request | × untraced | trace bytes per request | lines dropped (all rounds) |");
    println!("|---|---:|---:|---:|---:|");
    for (i, subject) in subjects.iter().enumerate() {
        let per = median(&mut cpu[i]) as f64 / total;
        println!(
            "| {subject} | {:.2} µs | {:.2}× | {:.0} | {} |",
            per / 1000.0,
            per / base,
            bytes[i] as f64 / total,
            dropped[i]
        );
    }
}
