//! # flightrec-cli
//!
//! The `flightrec` command: a thin command line over [`flightrec_host`].
//!
//! * `flightrec recv`, `verify`, `dump`, `convert`: the serial link and FDR files
//!   ([`link`]; see `flightrec help` and `docs/firmware-guide.md`).
//! * `flightrec trace2 render --format normal|perf|event [--brief] [FILE]`
//!   converts a git Trace2 event stream (stdin when FILE is absent).
//!
//! Install it with `cargo install flightrec-cli` (from a checkout:
//! `cargo install --path cli`).
#![warn(missing_docs)]

pub mod link;
pub mod output;
pub mod tasks;

use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use flightrec_core::trace2::Target;
use flightrec_host::out::trace2_render::{render, RenderOptions};

use crate::link as link_cli;
use crate::output::reader_gone;

/// What `flightrec --help` and `flightrec help` say first.
///
/// It is set on the command after clap's derive, because the flattened
/// [`link::LinkCommand`] would otherwise put its own doc comment (a code example)
/// in its place.
///
/// ```
/// assert!(flightrec_cli::ABOUT.starts_with("flightrec"));
/// assert!(!flightrec_cli::ABOUT.contains("```"));
/// ```
pub const ABOUT: &str =
    "flightrec: receive, check and convert LLVM XRay FDR traces and git Trace2 streams";

/// The longer text of `flightrec --help`; its first line is [`ABOUT`].
///
/// ```
/// use flightrec_cli::{ABOUT, LONG_ABOUT};
/// assert!(LONG_ABOUT.starts_with(ABOUT));
/// assert!(LONG_ABOUT.contains("trace2 render"));
/// ```
pub const LONG_ABOUT: &str = "\
flightrec: receive, check and convert LLVM XRay FDR traces and git Trace2 streams.

`recv` reads a firmware's framed link (serial device, file or stdin) into FDR files
and Trace2 text; `verify`, `dump` and `convert` read FDR files (convert writes
llvm-xray's YAML or Chrome trace-event JSON for Perfetto); `trace2 render` turns a
Trace2 event stream into git's normal or perf format.";

#[derive(Parser)]
#[command(name = "flightrec", version, after_help = link_cli::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// git Trace2 tools.
    Trace2 {
        #[command(subcommand)]
        command: Trace2Command,
    },
    /// Summarise an async executor's tasks (flightrec-embassy's records).
    Tasks(tasks::TasksArgs),
    #[command(flatten)]
    Link(link_cli::LinkCommand),
}

#[derive(Subcommand)]
enum Trace2Command {
    /// Render a Trace2 event stream (git's JSON lines) in another Trace2 format.
    Render(RenderArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Normal,
    Perf,
    Event,
}

#[derive(clap::Args)]
struct RenderArgs {
    /// Output format.
    #[arg(long, value_enum)]
    format: FormatArg,
    /// Brief variant of the format.
    #[arg(long)]
    brief: bool,
    /// Local time offset from UTC in seconds (east positive) for the
    /// HH:MM:SS prefix of normal and perf lines; the stream carries UTC only.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    utc_offset: i32,
    /// Event output only: drop region/data events nested deeper than this
    /// (default: keep everything the input has).
    #[arg(long)]
    event_nesting: Option<u32>,
    /// Input file (stdin when absent).
    file: Option<PathBuf>,
}

/// The whole command line, with its about texts.
///
/// ```
/// let help = flightrec_cli::command().render_long_help().to_string();
/// assert!(help.starts_with(flightrec_cli::LONG_ABOUT));
/// assert!(!help.contains("use clap"));
/// ```
pub fn command() -> clap::Command {
    Cli::command().about(ABOUT).long_about(LONG_ABOUT)
}

/// Runs the command line `args` (the program name first) and returns the exit
/// status; the `flightrec` binary's `main` is `run(std::env::args_os())`. Usage
/// errors, `--help` and `--version` print what clap prints and return its status.
///
/// ```
/// use std::process::ExitCode;
///
/// let dir = tempfile::tempdir().unwrap();
/// let trace = dir.path().join("t.xray");
/// std::fs::write(&trace, include_bytes!("../../testdata/xray/crafted-v5.xray")).unwrap();
/// let trace = trace.to_str().unwrap();
/// assert_eq!(flightrec_cli::run(["flightrec", "verify", "--quiet", trace]), ExitCode::SUCCESS);
/// assert_eq!(flightrec_cli::run(["flightrec", "no-such-command"]), ExitCode::from(2));
/// assert_eq!(flightrec_cli::run(["flightrec", "--version"]), ExitCode::SUCCESS);
/// ```
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let parsed = command()
        .try_get_matches_from(args)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // clap's own words: the help, the version, or what is wrong with the usage.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let args = match cli.command {
        Command::Trace2 {
            command: Trace2Command::Render(args),
        } => args,
        Command::Link(cmd) => return link_cli::run(cmd),
        Command::Tasks(args) => return tasks::run(args),
    };
    let target = match args.format {
        FormatArg::Normal => Target::Normal,
        FormatArg::Perf => Target::Perf,
        FormatArg::Event => Target::Event,
    };
    let mut opts = RenderOptions::new(target, args.brief);
    opts.utc_offset_secs = args.utc_offset;
    if let Some(n) = args.event_nesting {
        opts.format.event_nesting = n;
    }
    let stdout = io::stdout().lock();
    let stderr = io::stderr().lock();
    let result = match &args.file {
        Some(path) => match File::open(path) {
            Ok(f) => render(BufReader::new(f), stdout, stderr, &opts),
            Err(e) => {
                eprintln!("flightrec: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
        None => render(io::stdin().lock(), stdout, stderr, &opts),
    };
    match result {
        Ok(report) if report.skipped.is_empty() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        // The reader of the output went away (`| head`): nothing more to do.
        Err(e) if reader_gone(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flightrec: {e}");
            ExitCode::from(2)
        }
    }
}
