//! Async code on a multi-threaded tokio runtime: many concurrent tasks whose
//! futures are wrapped with `in_region` and `in_function` (entered and left on
//! every poll) leave balanced regions on every thread, with bounded nesting, in
//! Trace2's event output, and balanced call stacks in the FDR trace
//! (`llvm-xray account` without `-k`). Worker threads carry tokio's thread
//! name. The scenario runs in a child process (the runtimes are process-wide).

mod layer_common;

use std::time::Duration;

use flightrec::future::FutureExt;
use flightrec::xray::CallSite;
use layer_common::*;

const CHILD: &str = "child";
const TASKS: usize = 200;
const STEPS: usize = 5;

static CONNECTION: CallSite = CallSite::new();
static REQUEST: CallSite = CallSite::new();

/// One task: a connection that serves `STEPS` requests, yielding and sleeping
/// in between, so that it moves between worker threads while others run.
async fn connection(n: usize) -> usize {
    let mut served = 0;
    for step in 0..STEPS {
        let request = async move {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_micros(((n + step) % 7) as u64 * 50)).await;
            1
        };
        served += request
            .in_region("request", "serve")
            .in_function(REQUEST.id(|| "async_tasks::request"))
            .await;
    }
    served
}

#[test]
fn concurrent_tasks_leave_every_thread_balanced() {
    let dir = run_scenario(CHILD, "tasks");
    let events = events(&dir);
    let threads = balanced_regions(&events);
    // Worker threads are named after tokio's std thread name (cut at git's
    // 24 bytes): `th01:tokio-rt-worker` with this tokio.
    let std_name = std::fs::read_to_string(dir.join("worker-name")).unwrap();
    let workers = threads
        .keys()
        .filter(|t| {
            let (th, name) = t.split_once(':').unwrap_or_default();
            th.len() == 4 && th.starts_with("th") && t.len() <= 24 && std_name.starts_with(name)
        })
        .count();
    assert!(workers >= 2, "{std_name}: {threads:?}");
    assert_eq!(threads.len(), workers + 1, "{threads:?}"); // and main
    let regions: usize = threads.values().map(|&(_, n)| n).sum();
    assert!(regions >= TASKS * (STEPS + 1) * 2, "{regions} regions");
    for (thread, (deepest, _)) in &threads {
        // A connection's region, and a request's inside it: never deeper.
        assert!(*deepest <= 2, "{thread}: nesting {deepest}");
    }
    let trace = fdr_trace(&dir);
    let names = fdr_names(&trace);
    assert!(
        names.iter().any(|n| n == "async_tasks::connection"),
        "{names:?}"
    );
    if let Some(account) = judge_fdr(&trace) {
        assert!(account.contains("async_tasks::request"), "{account}");
    }
}

#[test]
#[ignore = "a scenario child, run by the other tests"]
fn child() {
    let Ok(name) = std::env::var(CHILD_VAR) else {
        return;
    };
    assert_eq!(name, "tasks");
    let t2 = start_tracing(&child_dir());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    let worker_name = rt.block_on(async {
        tokio::spawn(async { std::thread::current().name().map(str::to_owned) })
            .await
            .unwrap()
    });
    std::fs::write(child_dir().join("worker-name"), worker_name.unwrap()).unwrap();
    let served: usize = rt.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|n| {
                tokio::spawn(
                    connection(n)
                        .in_region("net", "connection")
                        .in_function(CONNECTION.id(|| "async_tasks::connection")),
                )
            })
            .collect();
        let mut served = 0;
        for t in tasks {
            served += t.await.unwrap();
        }
        served
    });
    assert_eq!(served, TASKS * STEPS);
    drop(rt); // the workers end before the trace is written
    finish_tracing(t2);
}
