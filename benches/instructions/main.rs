//! Instructions per operation of flightrec's hot paths, counted with valgrind's
//! callgrind and checked against `instructions/baseline.txt`.
//!
//! ```text
//! cargo bench -p flightrec-benches --bench instructions              # check
//! cargo bench -p flightrec-benches --bench instructions -- --update  # rewrite the baseline
//! ```
//!
//! Each hot path runs in its own process under
//! `valgrind --tool=callgrind --toggle-collect=SYMBOL`, so only the
//! instructions executed inside the hot path's function (and what it calls) are
//! counted; the total is divided by the number of operations. Counts do not
//! depend on machine load. The check fails when a path needs more than the
//! tolerance (default 3 %) above its baseline, and asks for `--update` when it
//! needs that much less. Counts depend on the compiler version: update the
//! baseline with a new toolchain, in a commit of its own.

mod paths;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use flightrec_benches::callgrind::{parse_total, Baseline, Verdict};

const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/instructions/baseline.txt");

#[derive(Parser, Debug)]
#[command(about = "callgrind instruction counts of flightrec's hot paths")]
struct Args {
    /// Rewrite the baseline file with the counts of this run.
    #[arg(long)]
    update: bool,
    /// Allowed change in percent before a count is a regression.
    #[arg(long, default_value_t = 3.0)]
    tolerance: f64,
    /// Run one hot path in this process (what valgrind starts; internal).
    #[arg(long, hide = true)]
    path: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(name) = &args.path {
        return match paths::find(name) {
            Some(p) => {
                (p.run)(p.ops);
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("no hot path {name:?}");
                ExitCode::from(2)
            }
        };
    }
    match check(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Counts every hot path; `Ok(false)` when one regressed.
fn check(args: &Args) -> Result<bool, String> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if let Err(e) = Command::new("valgrind").arg("--version").output() {
        if ci {
            return Err(format!("valgrind is required under CI=true: {e}"));
        }
        println!("valgrind not runnable ({e}): instruction counts skipped");
        return Ok(true);
    }
    let text = std::fs::read_to_string(BASELINE).unwrap_or_default();
    let baseline = Baseline::parse(&text).map_err(|e| e.to_string())?;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("instructions");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;

    let mut measured = Baseline::default();
    let mut ok = true;
    println!("| hot path | instructions per operation | baseline | change |");
    println!("|---|---:|---:|---:|");
    for p in paths::ALL {
        let per_op = count(p, &dir)? as f64 / p.ops as f64;
        measured.per_op.insert(p.name.to_owned(), per_op);
        let verdict = baseline.check(p.name, per_op, args.tolerance);
        // Shown as +0.0 rather than -0.0 when the change rounds to nothing.
        let pct = |p: f64| if p.abs() < 0.05 { 0.0 } else { p };
        let (base, change) = match verdict {
            Verdict::Unchanged { baseline, percent } => {
                (format!("{baseline:.2}"), format!("{:+.1} %", pct(percent)))
            }
            Verdict::Regressed { baseline, percent } => {
                ok = args.update;
                (
                    format!("{baseline:.2}"),
                    format!("{percent:+.1} % REGRESSED"),
                )
            }
            Verdict::Improved { baseline, percent } => (
                format!("{baseline:.2}"),
                format!("{percent:+.1} % (update the baseline)"),
            ),
            Verdict::NoBaseline => {
                ok = args.update;
                ("—".to_owned(), "no baseline".to_owned())
            }
        };
        println!(
            "| `{}`: {} | {per_op:.2} | {base} | {change} |",
            p.name, p.what
        );
    }
    if args.update {
        let header = "Instructions (callgrind Ir) per operation of each hot path.\n\
                      Written by `cargo bench -p flightrec-benches --bench instructions -- --update`.";
        std::fs::write(BASELINE, measured.render(header)).map_err(|e| e.to_string())?;
        println!("\nbaseline written: instructions/baseline.txt");
    } else if !ok {
        println!(
            "\nan instruction count rose more than {} % above its baseline (or has none)",
            args.tolerance
        );
    }
    Ok(ok)
}

/// Instructions collected inside `p.symbol` for `p.ops` operations.
fn count(p: &paths::HotPath, dir: &Path) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out_file = dir.join(format!("{}.callgrind", p.name));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(format!("--toggle-collect={}", p.symbol))
        .arg("--collect-atstart=no")
        .arg(exe)
        .args(["--path", p.name])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{} under valgrind failed ({}): {}",
            p.name,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = std::fs::read_to_string(&out_file).map_err(|e| e.to_string())?;
    let total =
        parse_total(&text).ok_or_else(|| format!("{}: no total in callgrind output", p.name))?;
    // A symbol callgrind did not find would collect nothing at all.
    if total < p.ops {
        return Err(format!(
            "{}: only {total} instructions collected for {} operations (symbol {} not found?)",
            p.name, p.ops, p.symbol
        ));
    }
    Ok(total)
}
