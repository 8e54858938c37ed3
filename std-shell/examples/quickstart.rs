//! The first program to run: a small multi-threaded job traced with Trace2 and
//! XRay FDR through the environment, which then tells where its traces went and
//! how to look at them.
//!
//! ```text
//! cargo run -q -p flightrec --example quickstart [OUT_DIR]
//! ```
//!
//! With none of `GIT_TRACE2`, `GIT_TRACE2_PERF`, `GIT_TRACE2_EVENT` and
//! `XRAY_OPTIONS` set, it sets a perf and an event target and XRay's FDR mode
//! for itself, writing into OUT_DIR (default: a new directory under the system's
//! temporary directory). With any of them set, it uses exactly what you set.

use std::path::{Path, PathBuf};
use std::time::Duration;

fn main() {
    let out_dir = output_dir();
    let defaults = apply_default_environment(&out_dir);

    // Both runtimes read the environment once, first thing in `main`.
    let session = flightrec::trace2::init();
    if let Err(e) = flightrec::xray::init_from_env() {
        eprintln!("quickstart: XRay stays off: {e}");
    }
    flightrec::trace2::cmd_name("quickstart");

    let checksum = run_job();
    flightrec::data!("quickstart", "checksum", "{checksum}");

    let xray = flightrec::xray::shutdown().ok();
    drop(session); // writes Trace2's exit and atexit lines

    report(&out_dir, defaults, xray);
}

/// The job: a main thread that splits work among workers, each with regions,
/// data, timers and instrumented functions.
fn run_job() -> u64 {
    let _job = flightrec::region!("quickstart", "job");
    let workers: Vec<_> = (0..3u64)
        .map(|w| {
            std::thread::spawn(move || {
                let _thread = flightrec::trace2::thread_start("worker");
                let mut sum = 0;
                for batch in 0..4 {
                    let _r = flightrec::region!("worker", "batch", "batch {batch}");
                    sum += checksum_batch(w * 100 + batch);
                    flightrec::data!("worker", "sum", "{sum}");
                }
                sum
            })
        })
        .collect();
    let total = workers
        .into_iter()
        .map(|h| h.join().expect("worker panicked"))
        .sum();
    flightrec::printf!("all {} workers done", 3);
    total
}

fn checksum_batch(seed: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    (0..50)
        .map(|i| mix(seed.wrapping_mul(31).wrapping_add(i)))
        .sum()
}

fn mix(x: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    if x % 17 == 0 {
        std::thread::sleep(Duration::from_micros(20));
    }
    x.rotate_left(13) ^ (x >> 7)
}

fn output_dir() -> PathBuf {
    let dir = match std::env::args_os().nth(1) {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("flightrec-quickstart-{}", std::process::id())),
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("quickstart: cannot create {}: {e}", dir.display());
        std::process::exit(2);
    }
    dir.canonicalize().unwrap_or(dir)
}

/// What the example set for itself, when the caller set nothing.
struct Defaults {
    perf: Option<PathBuf>,
    event: Option<PathBuf>,
    xray: bool,
}

fn apply_default_environment(dir: &Path) -> Defaults {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let any_trace2 = ["GIT_TRACE2", "GIT_TRACE2_PERF", "GIT_TRACE2_EVENT"]
        .iter()
        .any(|v| set(v));
    let mut d = Defaults {
        perf: None,
        event: None,
        xray: false,
    };
    // Still one thread here, so changing the environment is safe.
    if !any_trace2 {
        let perf = dir.join("trace2-perf.txt");
        let event = dir.join("trace2-event.jsonl");
        std::env::set_var("GIT_TRACE2_PERF", &perf);
        std::env::set_var("GIT_TRACE2_EVENT", &event);
        d.perf = Some(perf);
        d.event = Some(event);
    }
    if !set("XRAY_OPTIONS") {
        let base = format!("{}/xray-log.", dir.display());
        std::env::set_var(
            "XRAY_OPTIONS",
            format!("xray_mode=xray-fdr patch_premain=true xray_logfile_base={base}"),
        );
        std::env::set_var("XRAY_FDR_OPTIONS", "func_duration_threshold_us=0");
        d.xray = true;
    }
    d
}

fn report(dir: &Path, d: Defaults, xray: Option<flightrec::xray::Report>) {
    println!("flightrec quickstart: traces in {}", dir.display());
    if d.perf.is_some() || d.xray {
        println!("(no tracing variables were set, so the example set them for itself)");
    }
    if let Some(perf) = &d.perf {
        println!();
        println!("Trace2 perf target (GIT_TRACE2_PERF): {}", perf.display());
        println!("  read it:            less {}", perf.display());
    }
    if let Some(event) = &d.event {
        println!(
            "Trace2 event target (GIT_TRACE2_EVENT): {}",
            event.display()
        );
        println!(
            "  as git's normal format: cargo run -q -p flightrec-cli --bin flightrec -- trace2 render --format normal {}",
            event.display()
        );
    }
    match xray.and_then(|r| r.path.map(|p| (p, r.names_path, r.stats))) {
        Some((trace, names, stats)) => {
            println!();
            println!("XRay FDR trace (XRAY_OPTIONS): {}", trace.display());
            println!(
                "  {} threads, {} buffers written, {} records dropped",
                stats.threads, stats.buffers_written, stats.records_dropped
            );
            if let Some(names) = &names {
                println!("  function names:     {}", names.display());
                println!(
                    "  time per call stack: llvm-xray stack -m {} {}",
                    names.display(),
                    trace.display()
                );
                println!(
                    "  for Perfetto:       llvm-xray convert -m {} --output-format=trace_event --symbolize -o {}/trace.json {}",
                    names.display(),
                    dir.display(),
                    trace.display()
                );
            }
            println!(
                "  check it:           cargo run -q -p flightrec-cli --bin flightrec -- verify {}",
                trace.display()
            );
            println!(
                "  or without llvm:    cargo run -q -p flightrec-cli --bin flightrec -- convert {} --format chrome -o {}/trace.json",
                trace.display(),
                dir.display()
            );
            println!("                      then open trace.json at https://ui.perfetto.dev");
            if let Some(event) = &d.event {
                println!(
                    "  with Trace2, one timeline (each worker's regions around its calls, numeric data as graphs):"
                );
                println!(
                    "                      cargo run -q -p flightrec-cli --bin flightrec -- convert {} {} --format perfetto -o {}/timeline.pftrace",
                    trace.display(),
                    event.display(),
                    dir.display()
                );
            }
        }
        None => {
            println!();
            println!("XRay FDR: no trace written (set XRAY_OPTIONS=\"xray_mode=xray-fdr patch_premain=true\")");
        }
    }
}
