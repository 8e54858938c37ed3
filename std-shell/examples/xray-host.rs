//! A small multi-threaded program traced with LLVM XRay FDR through `XRAY_OPTIONS`,
//! like a program built with clang's `-fxray-instrument`.
//!
//! ```text
//! XRAY_OPTIONS="xray_mode=xray-fdr patch_premain=true verbosity=1 xray_logfile_base=/tmp/xray-" \
//! XRAY_FDR_OPTIONS="func_duration_threshold_us=0" \
//!     cargo run -p flightrec --example xray-host
//! ```
//!
//! Add `flightrec_mode=streaming` to `XRAY_FDR_OPTIONS` to write buffers while the
//! program runs. Without `XRAY_OPTIONS` the example sets a default configuration in
//! code, so that a plain `cargo run --example xray-host` traces too.

use flightrec::core::fdr::FunctionId;
use flightrec::xray::{self, Config};

/// Parses one "request": a traced function with a traced helper.
fn parse(request: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    let mut h = request;
    for _ in 0..16 {
        h = checksum(h);
    }
    h
}

fn checksum(x: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    x.rotate_left(13) ^ 0x9e37_79b9_7f4a_7c15
}

/// Handles a batch with its size as the traced argument, and marks slow batches
/// with a custom event.
fn handle_batch(worker: u64, batch: u64) -> u64 {
    static HANDLE: std::sync::OnceLock<FunctionId> = std::sync::OnceLock::new();
    let id = *HANDLE.get_or_init(|| xray::function_id("handle_batch"));
    let size = 4 + batch % 5;
    let _f = xray::enter_with_arg(id, size);
    let sum = (0..size)
        .map(|r| parse(worker * 1000 + batch * 10 + r))
        .fold(0u64, u64::wrapping_add);
    if size == 8 {
        xray::custom_event(format!("worker {worker}: large batch {batch}").as_bytes());
    }
    sum
}

fn main() {
    let from_env = match xray::init_from_env() {
        Ok(on) => on,
        Err(e) => {
            eprintln!("xray-host: {e}");
            std::process::exit(2);
        }
    };
    if !from_env {
        let cfg = Config::builder()
            .logfile_base(std::env::temp_dir().join("xray-").display().to_string())
            .func_duration_threshold_us(0)
            .verbosity(1)
            .build()
            .expect("valid configuration");
        xray::init(cfg).expect("start XRay");
    }

    let total: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4u64)
            .map(|w| {
                s.spawn(move || {
                    let _scope = flightrec::xray_scope!("worker");
                    (0..50)
                        .map(|b| handle_batch(w, b))
                        .fold(0u64, u64::wrapping_add)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold(0, u64::wrapping_add)
    });
    println!("checksum {total:x}");

    let report = match xray::shutdown() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("xray-host: {e}");
            std::process::exit(1);
        }
    };
    let (Some(trace), Some(names)) = (report.path, report.names_path) else {
        println!("no trace written (see XRAY_FDR_OPTIONS no_file_flush)");
        return;
    };
    let (t, n) = (trace.display(), names.display());
    println!("trace: {t}");
    println!("names: {n}");
    println!(
        "{} threads, {} records dropped",
        report.stats.threads, report.stats.records_dropped
    );
    println!("look at it with (-k: a flight recorder keeps calls whose entry was overwritten):");
    println!("  llvm-xray fdr-dump --verify {t}");
    println!("  llvm-xray account -k -sort=sum -sortorder=dsc -m {n} {t}");
    println!("  llvm-xray stack -k -m {n} {t}");
    println!("  llvm-xray convert -m {n} --symbolize --output-format=trace_event {t} > trace.json");
}
