//! The flightrec host command-line tool.
//!
//! * `flightrec trace2 render --format normal|perf|event [--brief] [FILE]`
//!   converts a git Trace2 event stream (stdin when FILE is absent).
//! * `flightrec recv`, `verify`, `dump`, `convert`: the serial link and FDR files
//!   (see `flightrec help` and `docs/firmware-guide.md`).

use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use flightrec::core::trace2::Target;
use flightrec::trace2_render::{render, RenderOptions};

use flightrec::tool::cli as link_cli;
use flightrec::tool::output::reader_gone;

#[derive(Parser)]
#[command(
    name = "flightrec",
    version,
    about = "flightrec host tools",
    after_help = link_cli::EXIT_CODES
)]
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Command::Trace2 {
            command: Trace2Command::Render(args),
        } => args,
        Command::Link(cmd) => return link_cli::run(cmd),
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
