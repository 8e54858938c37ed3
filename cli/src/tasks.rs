//! `flightrec tasks`: the async executor's tasks of FDR files or `recv`
//! directories ([`flightrec_host::timeline::tasks`]).

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use flightrec_host::names::firmware::FirmwareNames;
use flightrec_host::timeline::tasks::summarize;

use crate::output::reader_gone;

/// Summarise the tasks of an async executor (flightrec-embassy's records):
/// polls, total and longest poll, wake-to-poll latency, idle share per executor.
/// Example on [`run`].
#[derive(clap::Args)]
pub struct TasksArgs {
    /// FDR files, or directories written by `flightrec recv` (all their
    /// `.xray` files): one program's contexts, on one clock.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The firmware's ELF: names tasks (their task pool's symbol) and executors.
    #[arg(long)]
    elf: Option<PathBuf>,
    /// A task whose longest poll is over this many microseconds is flagged as
    /// blocking its executor.
    #[arg(long, default_value_t = 1000.0)]
    blocking_us: f64,
    /// CSV (one row per task) instead of text.
    #[arg(long)]
    csv: bool,
    /// Also write `ID NAME` lines for `flightrec convert --names`: the firmware's
    /// function names (`--elf`), each task's poll id named by the task and each
    /// executor's pass id by the executor.
    #[arg(long, value_name = "FILE")]
    names_out: Option<PathBuf>,
}

/// Runs `flightrec tasks`: 0 when the summary is whole, 1 when the target lost
/// records, polls were left open or a task could not be named from `--elf`
/// (the figures are printed, with a warning), 2 when an input cannot be read.
///
/// ```
/// use clap::{Args, FromArgMatches};
/// use flightrec_cli::tasks::{run, TasksArgs};
/// use std::process::ExitCode;
///
/// let dir = tempfile::tempdir().unwrap();
/// let trace = dir.path().join("t.xray");
/// std::fs::write(&trace, include_bytes!("../../testdata/xray/crafted-v5.xray")).unwrap();
/// let parse = |args: &[&str]| {
///     let cmd = TasksArgs::augment_args(clap::Command::new("tasks"));
///     TasksArgs::from_arg_matches(&cmd.get_matches_from(args)).unwrap()
/// };
/// // A trace without task records: said, and not a whole answer.
/// assert_eq!(run(parse(&["tasks", trace.to_str().unwrap()])), ExitCode::from(1));
/// // A file that is not there.
/// let missing = dir.path().join("none.xray");
/// assert_eq!(run(parse(&["tasks", missing.to_str().unwrap()])), ExitCode::from(2));
/// // The same through the command line.
/// assert_eq!(flightrec_cli::run(["flightrec", "tasks", "--csv", trace.to_str().unwrap()]), ExitCode::from(1));
/// ```
pub fn run(args: TasksArgs) -> ExitCode {
    let s = match summarize(&args.inputs, args.elf.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("flightrec tasks: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &args.names_out {
        let mut functions = std::collections::BTreeMap::new();
        if let Some(elf) = &args.elf {
            match FirmwareNames::load(elf) {
                Ok(fw) => functions.extend(fw.entries.into_iter().map(|(id, e)| (id, e.name))),
                // A firmware without instrumented functions: the tasks alone.
                Err(e) => eprintln!("flightrec tasks: {}: {e}: no function names", elf.display()),
            }
        }
        if let Err(e) = std::fs::write(path, s.names_lines(&functions)) {
            eprintln!("flightrec tasks: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let mut out = io::stdout().lock();
    let written = if args.csv {
        s.write_csv(&mut out, args.blocking_us)
    } else {
        s.write_text(&mut out, args.blocking_us)
    };
    match written {
        Ok(()) => {}
        Err(e) if reader_gone(&e) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flightrec tasks: {e}");
            return ExitCode::from(2);
        }
    }
    if s.tasks.is_empty() {
        eprintln!("flightrec tasks: no task records in the input (is the embassy backend on?)");
        return ExitCode::from(1);
    }
    for w in &s.warnings {
        eprintln!("flightrec tasks: warning: {w}");
    }
    let mut whole = s.warnings.is_empty();
    if s.lost > 0 {
        eprintln!(
            "flightrec tasks: warning: the target lost {} records: the counts are incomplete",
            s.lost
        );
        whole = false;
    }
    if s.unmatched > 0 {
        eprintln!(
            "flightrec tasks: warning: {} poll or pass records without their pair (a trace cut inside a poll?)",
            s.unmatched
        );
        whole = false;
    }
    if whole {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
