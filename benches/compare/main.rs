//! Side by side: the cost of one instrumented call (enter + exit) with
//! flightrec, compiler-rt's XRay FDR mode, fastrace and tracing, beside the
//! floor (`rdtsc` plus a store), all measured in one run on one machine; and
//! the cost of a Trace2 region (enter + leave lines to a file) with flightrec's
//! formatters beside tracing's fmt layer. Prints Markdown tables with medians,
//! net costs and ratios, then the issue's goals as met or missed.
//!
//! ```text
//! cargo bench -p flightrec-benches --bench compare
//! cargo bench -p flightrec-benches --bench compare -- --rounds 9 --calls 200000
//! ```
//!
//! Method: every subject runs the same loop (`calls` calls of a never-inlined
//! function whose result is summed) in a process of its own, so each tracer gets
//! its global setup (a global `tracing` subscriber, fastrace's reporter,
//! compiler-rt's premain patching) exactly as a program would. A process makes one
//! warm-up batch and `batches` timed batches. Rounds run every subject once, in an
//! order rotated each round, so slow drifts of a shared machine hit all subjects
//! alike; a row's figure is the median of all its batches, timed in thread CPU
//! time so that time slices lost to other programs do not count. Net cost = a row's
//! median minus the median of the same loop without tracing in the same
//! language. Each subject checks after its batches that it recorded every call.
//! The compiler-rt program is built by this command with clang-14
//! (`compare/xray-c/`, Debian packages clang-14 and libclang-rt-14-dev).

mod fdr_subjects;
mod subjects;
mod timing;
mod trace2_subjects;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use flightrec_benches::compiler_rt::{self, parse_batches, XrayLoop};
use flightrec_benches::side_by_side::{Goal, Row, Table};
use flightrec_core::trace2::Target;

use subjects::{Runner, Section, Subject};

#[derive(Parser, Debug)]
#[command(about = "flightrec beside compiler-rt XRay FDR, fastrace and tracing")]
struct Args {
    /// Rounds; each runs every subject once.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Calls per batch.
    #[arg(long, default_value_t = 20_000)]
    calls: u64,
    /// Timed batches per subject process.
    #[arg(long, default_value_t = 10)]
    batches: u32,
    /// Run one subject in this process and print its batch times (internal).
    #[arg(long, hide = true)]
    subject: Option<String>,
    /// Directory for the files subjects write (internal).
    #[arg(long, hide = true)]
    work_dir: Option<PathBuf>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.calls == 0 || args.batches == 0 || args.rounds == 0 {
        eprintln!("--calls, --batches and --rounds must be positive");
        return ExitCode::from(2);
    }
    match &args.subject {
        Some(key) => run_subject_here(key, &args),
        None => drive(&args),
    }
}

/// Child mode: run one Rust subject, print one line per batch.
fn run_subject_here(key: &str, args: &Args) -> ExitCode {
    let dir = args
        .work_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let (calls, batches) = (args.calls, args.batches);
    let result = match key {
        "call" => fdr_subjects::call(calls, batches),
        "floor" => fdr_subjects::floor(calls, batches),
        "floor-rdtscp" => fdr_subjects::floor_rdtscp(calls, batches),
        "flightrec-core" => fdr_subjects::flightrec_core(calls, batches),
        "flightrec-xray" => fdr_subjects::flightrec_xray(calls, batches, &dir),
        "fastrace" => fdr_subjects::fastrace(calls, batches),
        "tracing-registry" => fdr_subjects::tracing_registry(calls, batches),
        "tracing-fmt" => fdr_subjects::tracing_fmt(calls, batches, &dir),
        "t2-core-perf" => trace2_subjects::core_formatter(Target::Perf, calls, batches, &dir),
        "t2-core-event" => trace2_subjects::core_formatter(Target::Event, calls, batches, &dir),
        "t2-shell-perf" => trace2_subjects::shell_target(Target::Perf, calls, batches, &dir),
        "t2-shell-event" => trace2_subjects::shell_target(Target::Event, calls, batches, &dir),
        other => Err(format!("no Rust subject {other:?}")),
    };
    match result {
        Ok(ns) => {
            for v in ns {
                println!("{v:.3}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{key}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The C program, or why it is not there.
enum CProgram {
    Built(XrayLoop),
    Missing(String),
}

/// Driver mode: every subject, every round, then the tables.
fn drive(args: &Args) -> ExitCode {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("compare-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut failures: Vec<String> = Vec::new();
    let program = match XrayLoop::build(&dir) {
        Ok(p) => CProgram::Built(p),
        Err(e @ compiler_rt::Error::NoCompiler(_)) if !ci => CProgram::Missing(e.to_string()),
        Err(e) => {
            failures.push(format!("compiler-rt program: {e}"));
            CProgram::Missing(e.to_string())
        }
    };

    let load_before = load_average();
    let runnable: Vec<&Subject> = subjects::ALL.iter().collect();
    let mut samples: HashMap<&str, Vec<f64>> = HashMap::new();
    for round in 0..args.rounds {
        eprintln!("round {} of {}", round + 1, args.rounds);
        let k = round as usize % runnable.len();
        for s in runnable[k..].iter().chain(&runnable[..k]) {
            match measure_subject(s, &program, args, &dir) {
                Ok(Some(ns)) => samples.entry(s.key).or_default().extend(ns),
                Ok(None) => {}
                Err(e) => failures.push(format!("{}: {e}", s.key)),
            }
        }
        if !failures.is_empty() {
            break;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let unavailable = match &program {
        CProgram::Missing(why) => Some(why.as_str()),
        CProgram::Built(_) => None,
    };
    let (fdr, trace2) = tables(&samples, unavailable);
    println!(
        "Machine: {}, {} CPUs; load average {} before, {} after.",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before,
        load_average()
    );
    println!(
        "Per row: median of {} rounds × {} batches of {} calls, thread CPU time per call; net = minus the same loop without tracing.\n",
        args.rounds, args.batches, args.calls
    );
    println!("{}", fdr.render());
    for goal in FDR_GOALS {
        println!("{}", goal.report(&fdr));
    }
    println!("\n{}", trace2.render());

    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("error: {f}");
        }
        ExitCode::FAILURE
    }
}

/// The issue's goals for flightrec's FDR pair, on net costs.
const FDR_GOALS: &[Goal] = &[
    Goal {
        text: "compiler-rt FDR / flightrec core ≥ 4",
        numerator: "compiler-rt",
        denominator: "flightrec-core",
        bound: 4.0,
        at_least: true,
    },
    Goal {
        text: "fastrace local span / flightrec core ≥ 2",
        numerator: "fastrace",
        denominator: "flightrec-core",
        bound: 2.0,
        at_least: true,
    },
    Goal {
        text: "flightrec core / floor ≤ 1.3",
        numerator: "flightrec-core",
        denominator: "floor",
        bound: 1.3,
        at_least: false,
    },
    Goal {
        text: "compiler-rt FDR / flightrec std shell ≥ 4",
        numerator: "compiler-rt",
        denominator: "flightrec-xray",
        bound: 4.0,
        at_least: true,
    },
    Goal {
        text: "fastrace local span / flightrec std shell ≥ 2",
        numerator: "fastrace",
        denominator: "flightrec-xray",
        bound: 2.0,
        at_least: true,
    },
    Goal {
        text: "flightrec std shell / floor ≤ 1.3",
        numerator: "flightrec-xray",
        denominator: "floor",
        bound: 1.3,
        at_least: false,
    },
];

/// One subject's batch times; `None` for a subject this run cannot measure.
fn measure_subject(
    s: &Subject,
    program: &CProgram,
    args: &Args,
    dir: &Path,
) -> Result<Option<Vec<f64>>, String> {
    let prog = match (s.runner, program) {
        (Runner::Rust, _) => return run_rust_subject(s.key, args, dir).map(Some),
        (_, CProgram::Missing(_)) => return Ok(None),
        (_, CProgram::Built(p)) => p,
    };
    if s.runner == Runner::CompilerRtBaseline {
        return prog
            .run_baseline(args.calls, args.batches)
            .map(Some)
            .map_err(|e| e.to_string());
    }
    let run = prog
        .run_fdr(args.calls, args.batches, dir)
        .map_err(|e| e.to_string())?;
    // The trace holds every 8-byte record, or at least one full 64 KiB buffer of
    // them once there were more (header: 32 bytes).
    let len = std::fs::metadata(&run.trace).map_or(0, |m| m.len());
    let _ = std::fs::remove_file(&run.trace);
    let records = 2 * args.calls * (u64::from(args.batches) + 1);
    if len < 32 + (8 * records).min(64 * 1024) {
        return Err(format!("compiler-rt trace has only {len} bytes"));
    }
    Ok(Some(run.ns_per_call))
}

/// Runs this binary again with `--subject`.
fn run_rust_subject(key: &str, args: &Args, dir: &Path) -> Result<Vec<f64>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .args(["--subject", key, "--work-dir"])
        .arg(dir)
        .args(["--calls", &args.calls.to_string()])
        .args(["--batches", &args.batches.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    // The subject's files can be large (the fmt and Trace2 rows write lines).
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.path().extension().is_some_and(|e| e == "log") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    if !out.status.success() {
        return Err(format!(
            "failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_batches(&String::from_utf8_lossy(&out.stdout), args.batches)
}

/// The two tables from the samples.
fn tables(samples: &HashMap<&str, Vec<f64>>, c_unavailable: Option<&str>) -> (Table, Table) {
    let row = |s: &Subject| match (s.runner, samples.get(s.key)) {
        (_, Some(v)) => Row::measured(s.key, s.label, s.baseline, v.clone()),
        (Runner::CompilerRtBaseline | Runner::CompilerRtFdr, None) => {
            Row::not_available(s.key, s.label, c_unavailable.unwrap_or("not measured"))
        }
        (_, None) => Row::not_available(s.key, s.label, "not measured (failed)"),
    };
    let mut fdr = Table::new(
        "FDR: one instrumented call (enter + exit records)",
        "floor",
        "floor",
    );
    for s in subjects::ALL.iter().filter(|s| s.section == Section::Fdr) {
        fdr.push(row(s));
    }
    let mut trace2 = Table::new(
        "Trace2: one region (region_enter + region_leave lines to a file)",
        "tracing-fmt",
        "tracing fmt",
    );
    for key in ["call", "tracing-fmt"] {
        if let Some(s) = subjects::find(key) {
            trace2.push(row(s));
        }
    }
    for s in subjects::ALL
        .iter()
        .filter(|s| s.section == Section::Trace2)
    {
        trace2.push(row(s));
    }
    (fdr, trace2)
}

/// The CPU model from `/proc/cpuinfo`, for the record.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

/// The one-minute load average, for the record (other programs share the machine).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}
