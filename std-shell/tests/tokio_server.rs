//! End to end on an async program: a small tokio TCP key-value server and its
//! clients, in the style of mini-redis (a task per connection, a frame parser,
//! `#[tracing::instrument]` spans with fields, `tracing` events), traced
//! through the `tracing` layer by adding it to the subscriber and nothing else.
//! Trace2's event output parses, with balanced regions on every thread; the FDR
//! trace passes `llvm-xray stack` and `account` (without `-k`) with its names
//! file, and names the program's spans. Runs in a child process (the runtimes
//! are process-wide).

mod layer_common;

use layer_common::*;
use tracing_subscriber::prelude::*;

const CHILD: &str = "child";
const CLIENTS: usize = 16;
const KEYS: usize = 8;

/// The server: `SET key value`, `GET key`, one command a line, one reply a line.
mod server {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{TcpListener, TcpStream};
    use tracing::Instrument;

    type Db = Arc<Mutex<HashMap<String, String>>>;

    /// Accepts `connections` connections, each served by its own task.
    pub async fn run(listener: TcpListener, connections: usize) {
        let db = Db::default();
        let mut tasks = Vec::new();
        for id in 0..connections {
            let (socket, peer) = listener.accept().await.unwrap();
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
            let reply = apply(&line, &db).await;
            write.write_all(reply.as_bytes()).await?;
            write.write_all(b"\n").await?;
        }
        Ok(())
    }

    #[tracing::instrument(skip(db))]
    async fn apply(command: &str, db: &Db) -> String {
        tokio::task::yield_now().await;
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

/// A client: sets and reads back keys, and sends one bad command.
mod client {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpStream;

    #[tracing::instrument(fields(client = n))]
    pub async fn session(addr: std::net::SocketAddr, n: usize, keys: usize) -> usize {
        let socket = TcpStream::connect(addr).await.unwrap();
        let (read, mut write) = socket.into_split();
        let mut replies = BufReader::new(read).lines();
        let mut ok = 0;
        for k in 0..keys {
            let key = format!("k{n}-{k}");
            for command in [format!("SET {key} v{k}"), format!("GET {key}")] {
                write.write_all(command.as_bytes()).await.unwrap();
                write.write_all(b"\n").await.unwrap();
                let reply = replies.next_line().await.unwrap().unwrap();
                ok += usize::from(reply == "OK" || reply == format!("v{k}"));
            }
        }
        write.write_all(b"FLUSH everything\n").await.unwrap();
        let reply = replies.next_line().await.unwrap().unwrap();
        assert_eq!(reply, "ERR unknown command");
        tracing::info!(ok, "done");
        ok
    }
}

#[test]
fn a_traced_tokio_server_and_its_clients() {
    let dir = run_scenario(CHILD, "server");
    let events = events(&dir);
    let threads = balanced_regions(&events);
    let regions: usize = threads.values().map(|&(_, n)| n).sum();
    // Every connection, command and client session is at least one region.
    assert!(
        regions >= CLIENTS * (1 + 1 + KEYS * 2 + 1 + 1),
        "{regions}: {threads:?}"
    );
    for (thread, (deepest, _)) in &threads {
        // connection > handle > apply, or session: never deeper.
        assert!(*deepest <= 3, "{thread}: nesting {deepest}");
    }
    let labels = |name: &str| {
        named(&events, "region_enter")
            .iter()
            .filter(|e| e["label"] == name)
            .count()
    };
    assert!(labels("connection") >= CLIENTS && labels("session") >= CLIENTS);
    assert!(labels("apply") >= CLIENTS * (KEYS * 2 + 1));
    let apply = named(&events, "region_enter")
        .into_iter()
        .find(|e| e["label"] == "apply")
        .unwrap();
    assert_eq!(apply["category"], "tokio_server::server");
    assert!(
        apply["msg"].as_str().unwrap().starts_with("command="),
        "{apply}"
    );
    let errors = named(&events, "error");
    assert_eq!(errors.len(), CLIENTS);
    assert!(errors
        .iter()
        .all(|e| e["msg"] == "unknown command command=FLUSH everything"));
    let done = named(&events, "data")
        .into_iter()
        .filter(|e| e["key"] == "ok")
        .count();
    assert_eq!(done, 0, "`done` has a message and a field: data_json");
    let done: Vec<_> = named(&events, "data_json")
        .into_iter()
        .filter(|e| e["key"] == "done")
        .collect();
    assert_eq!(done.len(), CLIENTS);
    assert!(done.iter().all(|e| e["value"]["ok"] == KEYS * 2));

    let trace = fdr_trace(&dir);
    let names = fdr_names(&trace);
    for name in [
        "tokio_server::server::connection",
        "tokio_server::server::handle",
        "tokio_server::server::apply",
        "tokio_server::client::session",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    if let Some(account) = judge_fdr(&trace) {
        assert!(account.contains("tokio_server::server::apply"), "{account}");
    }
}

#[test]
#[ignore = "a scenario child, run by the other tests"]
fn child() {
    let Ok(name) = std::env::var(CHILD_VAR) else {
        return;
    };
    assert_eq!(name, "server");
    let t2 = start_tracing(&child_dir());
    // The one line a program already using `tracing` adds:
    tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new("debug"))
        .with(flightrec::layer::layer())
        .init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(server::run(listener, CLIENTS));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|n| tokio::spawn(client::session(addr, n, KEYS)))
            .collect();
        for c in clients {
            assert_eq!(c.await.unwrap(), KEYS * 2);
        }
        server.await.unwrap();
    });
    drop(rt);
    finish_tracing(t2);
}
