//! The command-line surface of `recv`, `verify`, `dump` and `convert` (clap), and
//! what each exits with.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};

use crate::output::reader_gone;
use flightrec_host::convert::{convert_timeline, TimelineFormat};
use flightrec_host::convert::{ConvertError, Input as TraceInput};
use flightrec_host::core::trace2::{Format as Trace2Format, Target};
use flightrec_host::link::collect::Collector;
use flightrec_host::link::recv::{Input, RecvOptions, RecvReport, SerialSettings};
use flightrec_host::link::rtt::GdbSettings;
use flightrec_host::link::trace2::Trace2Strings;
use flightrec_host::names::escape::escape;
use flightrec_host::names::firmware::FirmwareNames;
use flightrec_host::names::{names_beside, Names};
use flightrec_host::out::dump::{dump_reading, DumpError};
use flightrec_host::progress::Progress;
use flightrec_host::read::file::TraceFile;
use flightrec_host::timeline::TimelineInput;
use flightrec_host::verify::{describe, unnamed_ids, verify_file, Verdict};

/// The exit codes, shown by `--help`.
///
/// ```
/// use clap::{CommandFactory, Parser};
/// use flightrec_cli::link::{LinkCommand, EXIT_CODES};
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(subcommand)]
///     cmd: LinkCommand,
/// }
/// let mut cli = Cli::command();
/// for name in ["recv", "verify", "dump", "convert"] {
///     let help = cli.find_subcommand_mut(name).unwrap().render_long_help().to_string();
///     assert!(help.contains(EXIT_CODES), "{name}: {help}");
/// }
/// assert!(EXIT_CODES.contains("\n  1  the input is damaged or invalid"));
/// ```
pub const EXIT_CODES: &str = "\
Exit status:
  0  success; also when the reader of the output goes away early (`| head`):
     the command stops quietly
  1  the input is damaged or invalid (verify: a file failed; dump/convert: the
     file does not decode; recv: frames were damaged, lost or left out)
  2  usage error, or a file or device could not be opened, read or written";

/// Exit status 1: the data is bad.
const BAD_INPUT: u8 = 1;
/// Exit status 2: usage or I/O.
const FAILURE: u8 = 2;

/// The link and FDR file commands, as subcommands of a program's command line.
///
/// ```
/// use clap::Parser;
/// use flightrec_cli::link::{run, LinkCommand};
/// use std::process::ExitCode;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(subcommand)]
///     cmd: LinkCommand,
/// }
/// let status = |args: &[&str]| {
///     let cli = Cli::try_parse_from([&["flightrec"], args].concat()).unwrap();
///     run(cli.cmd)
/// };
///
/// let dir = tempfile::tempdir().unwrap();
/// let good = dir.path().join("good.xray");
/// std::fs::write(&good, include_bytes!("../../testdata/xray/crafted-v5.xray")).unwrap();
/// let bad = dir.path().join("bad.xray");
/// std::fs::write(&bad, include_bytes!("../../testdata/xray/bad-fn-action5.xray")).unwrap();
/// let (good, bad) = (good.to_str().unwrap(), bad.to_str().unwrap());
///
/// assert_eq!(status(&["verify", "--quiet", good]), ExitCode::SUCCESS);
/// assert_eq!(status(&["verify", "--quiet", good, bad]), ExitCode::from(1)); // invalid data
/// assert_eq!(status(&["dump", "/nonexistent/t.xray"]), ExitCode::from(2)); // cannot read
/// assert!(Cli::try_parse_from(["flightrec", "convert", good]).is_err()); // --format missing
/// ```
#[derive(Subcommand)]
pub enum LinkCommand {
    /// Receive a framed link (serial device, file or stdin) into FDR files and a
    /// Trace2 text file.
    #[command(after_help = EXIT_CODES)]
    Recv(RecvArgs),
    /// Check FDR files with the core's decoder and verifier (what llvm-xray 14
    /// accepts); prints the first error's byte offset and reason.
    #[command(after_help = EXIT_CODES)]
    Verify(VerifyArgs),
    /// Print one line per record, like `llvm-xray fdr-dump`.
    #[command(after_help = EXIT_CODES)]
    Dump(DumpArgs),
    /// Convert an FDR file to Chrome trace-event JSON, Perfetto or llvm-xray's YAML;
    /// several inputs (FDR files, recv directories, Trace2 streams) to one timeline.
    #[command(after_help = EXIT_CODES)]
    Convert(ConvertArgs),
    /// Write the function names of a firmware ELF (its `.flightrec` section) as
    /// the names file `llvm-xray account|stack -m` reads.
    #[command(after_help = EXIT_CODES)]
    Names(NamesFileArgs),
}

/// Arguments of `names`.
///
/// ```
/// use clap::Parser;
/// use flightrec_cli::link::{run, LinkCommand, NamesFileArgs};
/// use std::process::ExitCode;
///
/// #[derive(Parser)]
/// struct Names {
///     #[command(flatten)]
///     args: NamesFileArgs,
/// }
/// let dir = tempfile::tempdir().unwrap();
/// let out = dir.path().join("fw.names");
/// let out = out.to_str().unwrap();
/// // This example's program is an ELF file without the section: a failure.
/// let me = std::env::current_exe().unwrap();
/// let a = Names::try_parse_from(["names", "--elf", me.to_str().unwrap(), "-o", out]).unwrap();
/// assert_eq!(run(LinkCommand::Names(a.args)), ExitCode::from(2));
/// assert!(Names::try_parse_from(["names", "-o", out]).is_err()); // --elf missing
/// ```
#[derive(Args)]
pub struct NamesFileArgs {
    /// The firmware ELF.
    #[arg(long, value_name = "FW_ELF")]
    elf: PathBuf,
    /// The names file to write.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// Also print `id<TAB>name<TAB>file:line` lines on stdout (control bytes of
    /// names and locations escaped: `\e`, `\n`, `\xNN`).
    #[arg(long)]
    list: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ParityArg {
    None,
    Odd,
    Even,
}

/// git's Trace2 formats, for `recv --trace2-format`.
#[derive(Clone, Copy, ValueEnum)]
enum Trace2FormatArg {
    /// `GIT_TRACE2_EVENT`: JSON lines.
    Event,
    /// `GIT_TRACE2_PERF`: columns.
    Perf,
    /// `GIT_TRACE2`: plain lines.
    Normal,
}

#[derive(Clone, Copy, ValueEnum)]
enum FlowArg {
    None,
    Software,
    Hardware,
}

/// Arguments of `recv`.
///
/// ```
/// use clap::Parser;
/// use flightrec_host::core::link::{FrameKind, LinkWriter};
/// use flightrec_cli::link::{run, LinkCommand, RecvArgs};
/// use std::process::ExitCode;
///
/// /// A program's own `receive` command with recv's arguments.
/// #[derive(Parser)]
/// struct Receive {
///     #[command(flatten)]
///     args: RecvArgs,
/// }
///
/// // A captured link carrying one trace from source 2.
/// let trace = include_bytes!("../../testdata/xray/crafted-v5.xray");
/// let mut buf = [0u8; 1024];
/// let mut link = LinkWriter::new(&mut buf[..]);
/// link.send(FrameKind::FileHeader, 2, &trace[..32]).unwrap();
/// link.send(FrameKind::FdrBuffer, 2, &trace[32..]).unwrap();
/// let unused = link.into_inner().len();
/// let len = buf.len() - unused;
/// let dir = tempfile::tempdir().unwrap();
/// let capture = dir.path().join("capture.bin");
/// std::fs::write(&capture, &buf[..len]).unwrap();
/// let out = dir.path().join("out");
///
/// let (out_s, capture_s) = (out.to_str().unwrap(), capture.to_str().unwrap());
/// let a = Receive::try_parse_from(["receive", "-q", "-o", out_s, capture_s]).unwrap();
/// assert_eq!(run(LinkCommand::Recv(a.args)), ExitCode::SUCCESS);
/// assert_eq!(std::fs::read(out.join("source-2.xray")).unwrap(), trace);
///
/// // One damaged byte: the frame fails its CRC check, and the exit status says so.
/// buf[10] ^= 0xff;
/// std::fs::write(&capture, &buf[..len]).unwrap();
/// let a = Receive::try_parse_from(["receive", "-q", "-o", out_s, capture_s]).unwrap();
/// assert_eq!(run(LinkCommand::Recv(a.args)), ExitCode::from(1));
///
/// // A file and a device at once is a usage error; so is --gdb without --elf.
/// assert!(Receive::try_parse_from(["receive", "--device", "/dev/ttyUSB0", capture_s]).is_err());
/// assert!(Receive::try_parse_from(["receive", "--gdb", "localhost:1234"]).is_err());
///
/// // A firmware's RTT channel through a GDB server: an ELF without the control
/// // block's symbol is an error naming it (exit status 2).
/// let elf = dir.path().join("fw.elf");
/// std::fs::write(&elf, flightrec_testkit::target_image::elf_with_symbol("main", 0x100, 4)).unwrap();
/// let a = Receive::try_parse_from(["receive", "-q", "-o", out_s, "--gdb", "127.0.0.1:1", "--elf", elf.to_str().unwrap()]);
/// assert_eq!(run(LinkCommand::Recv(a.unwrap().args)), ExitCode::from(2));
/// ```
#[derive(Args)]
pub struct RecvArgs {
    /// Input file of a captured link; `-` or nothing for stdin. Not with --device.
    input: Option<PathBuf>,
    /// Serial device to read (e.g. /dev/ttyUSB0).
    #[arg(long, conflicts_with = "input")]
    device: Option<String>,
    /// Baud rate of the serial device.
    #[arg(long, default_value_t = 115_200)]
    baud: u32,
    /// Data bits (5 to 8).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(5..=8))]
    data_bits: u8,
    /// Parity.
    #[arg(long, value_enum, default_value_t = ParityArg::None)]
    parity: ParityArg,
    /// Stop bits (1 or 2).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    stop_bits: u8,
    /// Flow control.
    #[arg(long, value_enum, default_value_t = FlowArg::None)]
    flow_control: FlowArg,
    /// Stop when the serial device disappears instead of waiting for it to return.
    #[arg(long)]
    no_reconnect: bool,
    /// Read the firmware's RTT up-channel through this GDB server (HOST:PORT:
    /// QEMU's -gdb, OpenOCD, pyOCD, J-Link or probe-rs); needs --elf. The target
    /// is halted briefly at each poll.
    #[arg(long, value_name = "HOST:PORT", requires = "elf", conflicts_with_all = ["input", "device"])]
    gdb: Option<String>,
    /// Output directory for `source-<id>.xray` files.
    #[arg(short = 'o', long, default_value = ".")]
    out_dir: PathBuf,
    /// Trace2 text file (default: trace2.txt in the output directory).
    #[arg(long)]
    trace2: Option<PathBuf>,
    /// The format of the lines written for the firmware's compact Trace2 events
    /// (lines the firmware formatted itself are written as they came).
    #[arg(long, value_enum, default_value_t = Trace2FormatArg::Event)]
    trace2_format: Trace2FormatArg,
    /// The brief variant of --trace2-format (no time, file and line).
    #[arg(long)]
    trace2_brief: bool,
    /// Stop after this many seconds without input (default: wait for the end of
    /// the input or Ctrl-C).
    #[arg(long)]
    idle_timeout: Option<f64>,
    /// Largest frame payload accepted, in bytes (larger frames are skipped); at
    /// most 67108864 (64 MiB).
    #[arg(long, default_value_t = 1 << 20)]
    max_payload: usize,
    /// The firmware ELF that sends the link: its function names (the
    /// `.flightrec` section) are written beside each trace as
    /// `source-<id>.xray.names`, the file `llvm-xray account|stack -m` reads;
    /// the strings of its compact Trace2 events come from `.flightrec.trace2`;
    /// with --gdb, its `_SEGGER_RTT` symbol locates the RTT control block.
    #[arg(long, value_name = "FW_ELF")]
    elf: Option<PathBuf>,
    /// No progress display.
    #[arg(short, long)]
    quiet: bool,
}

/// Arguments of `verify`.
///
/// ```
/// use clap::Parser;
/// use flightrec_cli::link::{run, LinkCommand, VerifyArgs};
/// use std::process::ExitCode;
///
/// /// A program's own `check` command with verify's arguments.
/// #[derive(Parser)]
/// struct Check {
///     #[command(flatten)]
///     args: VerifyArgs,
/// }
/// let dir = tempfile::tempdir().unwrap();
/// let good = dir.path().join("good.xray");
/// std::fs::write(&good, include_bytes!("../../testdata/xray/crafted-v3.xray")).unwrap();
///
/// let a = Check::try_parse_from(["check", "--quiet", good.to_str().unwrap()]).unwrap();
/// assert_eq!(run(LinkCommand::Verify(a.args)), ExitCode::SUCCESS);
/// assert!(Check::try_parse_from(["check"]).is_err()); // at least one file
/// ```
#[derive(Args)]
pub struct VerifyArgs {
    /// FDR files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Function names to check the traces against (the program that wrote
    /// them, as `llvm-xray -m ./program`, or any names file): function ids
    /// they do not name are said on stderr (a trace of another program).
    #[arg(long, short = 'm', visible_alias = "instr_map", value_name = "NAMES")]
    names: Option<PathBuf>,
    /// No progress display.
    #[arg(short, long)]
    quiet: bool,
}

/// Where `dump` and `convert` take function names from.
///
/// ```
/// use clap::Parser;
/// use flightrec_cli::link::{run, LinkCommand};
/// use flightrec_host::names::names_beside;
/// use std::process::ExitCode;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(subcommand)]
///     cmd: LinkCommand,
/// }
/// let dir = tempfile::tempdir().unwrap();
/// let trace = dir.path().join("t.xray");
/// std::fs::write(&trace, include_bytes!("../../testdata/xray/crafted-v5.xray")).unwrap();
/// std::fs::write(names_beside(&trace), "1 main\n").unwrap();
/// let other = dir.path().join("other.names");
/// std::fs::write(&other, "1 start\n").unwrap();
/// let yaml = dir.path().join("t.yaml");
/// let (trace, other, yaml_s) = (trace.to_str().unwrap(), other.to_str().unwrap(), yaml.to_str().unwrap());
///
/// let convert = |names: &[&str]| {
///     let args = [&["flightrec", "convert", "--format", "yaml", "-q", "-o", yaml_s, trace], names];
///     let cli = Cli::try_parse_from(args.concat()).unwrap();
///     assert_eq!(run(cli.cmd), ExitCode::SUCCESS);
///     std::fs::read_to_string(&yaml).unwrap()
/// };
/// assert!(convert(&[]).contains("func-id: 1, function: main,")); // <trace>.names
/// assert!(convert(&["--names", other]).contains("func-id: 1, function: start,"));
/// assert!(convert(&["--no-names"]).contains("func-id: 1, function: '1',"));
/// assert!(Cli::try_parse_from(["flightrec", "dump", "--names", other, "--no-names", trace]).is_err());
/// ```
#[derive(Args)]
pub struct NamesArgs {
    /// Function names: the `<trace>.names` file the desktop runtime writes,
    /// the instrumented program itself (its `xray_instr_map` and symbols, as
    /// `llvm-xray -m ./program` reads them), llvm-xray's instrumentation map
    /// (YAML) or `ID NAME` lines [default: FILE.names when it exists]
    #[arg(long, short = 'm', visible_alias = "instr_map", value_name = "NAMES")]
    names: Option<PathBuf>,
    /// Do not look for FILE.names beside the trace.
    #[arg(long, conflicts_with = "names")]
    no_names: bool,
    /// Function names from the firmware ELF that sent the trace (its
    /// `.flightrec` section, filled by `#[flightrec::instrument]`).
    #[arg(long, value_name = "FW_ELF", conflicts_with_all = ["names", "no_names"])]
    elf: Option<PathBuf>,
    /// Say on stderr which names file is used.
    #[arg(short, long)]
    verbose: bool,
}

/// Arguments of `dump`.
///
/// ```
/// use clap::Parser;
/// use flightrec_cli::link::{run, DumpArgs, LinkCommand};
/// use std::process::ExitCode;
///
/// /// A program's own `show` command with dump's arguments.
/// #[derive(Parser)]
/// struct Show {
///     #[command(flatten)]
///     args: DumpArgs,
/// }
/// let dir = tempfile::tempdir().unwrap();
/// let good = dir.path().join("good.xray");
/// std::fs::write(&good, include_bytes!("../../testdata/xray/crafted-v2.xray")).unwrap();
/// let bad = dir.path().join("bad.xray");
/// std::fs::write(&bad, include_bytes!("../../testdata/xray/bad-metadata-kind10.xray")).unwrap();
/// let show = |args: &[&str]| run(LinkCommand::Dump(Show::try_parse_from([&["show"], args].concat()).unwrap().args));
///
/// assert_eq!(show(&["--no-names", good.to_str().unwrap()]), ExitCode::SUCCESS);
/// assert_eq!(show(&[bad.to_str().unwrap()]), ExitCode::from(1));
/// assert!(Show::try_parse_from(["show"]).is_err()); // the file is required
/// ```
#[derive(Args)]
pub struct DumpArgs {
    /// FDR file.
    file: PathBuf,
    #[command(flatten)]
    names: NamesArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum ConvertFormat {
    /// Chrome trace-event JSON (Perfetto, chrome://tracing).
    Chrome,
    /// The YAML of `llvm-xray convert --output-format=yaml` (with names:
    /// `--symbolize --instr_map NAMES`).
    Yaml,
    /// Perfetto's protobuf trace (ui.perfetto.dev, trace_processor).
    Perfetto,
}

/// Arguments of `convert`.
///
/// ```
/// use clap::Parser;
/// use flightrec_cli::link::{run, ConvertArgs, LinkCommand};
/// use std::process::ExitCode;
///
/// /// A program's own `export` command with convert's arguments.
/// #[derive(Parser)]
/// struct Export {
///     #[command(flatten)]
///     args: ConvertArgs,
/// }
/// let dir = tempfile::tempdir().unwrap();
/// let trace = dir.path().join("t.xray");
/// std::fs::write(&trace, include_bytes!("../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// let json = dir.path().join("t.json");
/// let (trace, json_s) = (trace.to_str().unwrap(), json.to_str().unwrap());
///
/// let a = Export::try_parse_from(["export", "--format", "chrome", "-q", "-o", json_s, trace]).unwrap();
/// assert_eq!(run(LinkCommand::Convert(a.args)), ExitCode::SUCCESS);
/// let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
/// let calls = doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count();
/// assert_eq!(calls, 3);
///
/// // An output that cannot be created: exit status 2.
/// let a = Export::try_parse_from(["export", "--format", "yaml", "-o", "/nonexistent/t.yaml", trace]);
/// assert_eq!(run(LinkCommand::Convert(a.unwrap().args)), ExitCode::from(2));
/// assert!(Export::try_parse_from(["export", "--format", "svg", trace]).is_err());
/// ```
#[derive(Args)]
pub struct ConvertArgs {
    /// FDR file; with several inputs (FDR files, `flightrec recv` directories,
    /// Trace2 event streams), one merged timeline (chrome and perfetto).
    #[arg(required = true, value_name = "INPUT")]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum)]
    format: ConvertFormat,
    /// Output file (stdout when absent).
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    names: NamesArgs,
    /// No progress display.
    #[arg(short, long)]
    quiet: bool,
}

/// Runs one command and maps its outcome to the documented exit status
/// ([`EXIT_CODES`]). Example on [`LinkCommand`].
pub fn run(cmd: LinkCommand) -> ExitCode {
    match cmd {
        LinkCommand::Recv(a) => recv(a),
        LinkCommand::Verify(a) => verify(a),
        LinkCommand::Dump(a) => dump_cmd(a),
        LinkCommand::Convert(a) => convert(a),
        LinkCommand::Names(a) => names_cmd(a),
    }
}

fn names_cmd(a: NamesFileArgs) -> ExitCode {
    let fw = match FirmwareNames::load(&a.elf) {
        Ok(fw) => fw,
        Err(e) => return fail(e),
    };
    for w in &fw.warnings {
        eprintln!("flightrec: warning: {}: {w}", a.elf.display());
    }
    if let Err(e) = fw.write_names_file(&a.output) {
        return fail(format_args!("{}: {e}", a.output.display()));
    }
    if a.list {
        let mut out = io::stdout().lock();
        for (id, e) in &fw.entries {
            if let Err(e) = writeln!(out, "{id}\t{}\t{}", escape(&e.name), escape(&e.location)) {
                if reader_gone(&e) {
                    break;
                }
                return fail(e);
            }
        }
    }
    ExitCode::SUCCESS
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("flightrec: {msg}");
    ExitCode::from(FAILURE)
}

/// The names for `trace`: the file given, else `<trace>.names` when it exists
/// (a damaged one is a warning, not a failure: nobody asked for it), else none.
fn load_names(trace: &Path, a: &NamesArgs) -> Result<Names, String> {
    if let Some(elf) = &a.elf {
        return Ok(
            firmware_names(elf, &[trace], a.verbose).map_or_else(Names::empty, |fw| fw.names())
        );
    }
    if let Some(path) = &a.names {
        let names = Names::load(path)?;
        if a.verbose {
            eprintln!("flightrec: {} names from {}", names.len(), path.display());
        }
        return Ok(names);
    }
    if a.no_names {
        return Ok(Names::empty());
    }
    let beside = names_beside(trace);
    if !beside.is_file() {
        if a.verbose {
            eprintln!("flightrec: no names file {}", beside.display());
        }
        return Ok(Names::empty());
    }
    if std::fs::metadata(&beside).is_ok_and(|m| m.len() == 0) {
        // Not silently: a names file naming nothing names no call.
        eprintln!(
            "flightrec: warning: {} is empty; going on without names (give the program with --names ./program)",
            beside.display()
        );
        return Ok(Names::empty());
    }
    match Names::load(&beside) {
        Ok(names) => {
            if a.verbose {
                eprintln!(
                    "flightrec: {} names from {} (beside the trace)",
                    names.len(),
                    beside.display()
                );
            }
            Ok(names)
        }
        Err(e) => {
            eprintln!("flightrec: warning: {e}; going on without names");
            Ok(Names::empty())
        }
    }
}

/// The names of firmware `elf`, warning (naming the file) when it has none
/// or when one of `traces` holds ids it does not name: the traces are still
/// written, with numeric ids.
fn firmware_names(elf: &Path, traces: &[&Path], verbose: bool) -> Option<FirmwareNames> {
    let fw = match FirmwareNames::load(elf) {
        Ok(fw) => fw,
        Err(e) => {
            eprintln!("flightrec: warning: {e}; function ids stay numeric");
            return None;
        }
    };
    for w in &fw.warnings {
        eprintln!("flightrec: warning: {}: {w}", elf.display());
    }
    if verbose {
        eprintln!(
            "flightrec: {} names from {}",
            fw.entries.len(),
            elf.display()
        );
    }
    for trace in traces {
        if let Ok(file) = TraceFile::open(trace) {
            if let Some(w) = fw.mismatch_warning(file.bytes(), trace, elf) {
                eprintln!("flightrec: warning: {w}");
            }
        }
    }
    Some(fw)
}

fn verify(a: VerifyArgs) -> ExitCode {
    let mut status = ExitCode::SUCCESS;
    let names = match a.names.as_deref().map(Names::load).transpose() {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    let mut out = io::stdout().lock();
    for path in &a.files {
        let progress = Progress::new(a.quiet);
        let verdict = verify_file(path, &progress);
        progress.finish();
        let line = match verdict {
            Verdict::Valid(s) => {
                if let (Some(names), Ok(file)) = (&names, TraceFile::open(path)) {
                    let mut last = 0;
                    let (ids, unnamed, first) = unnamed_ids(file.bytes(), names, &mut |at| {
                        file.consumed(at.saturating_sub(last));
                        last = at;
                    });
                    if unnamed > 0 {
                        let list: Vec<String> = first.iter().map(|id| format!("#{id}")).collect();
                        eprintln!(
                            "flightrec: warning: {}: {unnamed} of its {ids} function ids have no name in {} ({}{}): a trace of another program?",
                            path.display(),
                            a.names.as_deref().unwrap_or(Path::new("")).display(),
                            list.join(", "),
                            if unnamed > first.len() { ", ..." } else { "" }
                        );
                    }
                }
                writeln!(out, "{}: ok: {}", path.display(), describe(&s))
            }
            Verdict::Invalid(e) => {
                if status == ExitCode::SUCCESS {
                    status = ExitCode::from(BAD_INPUT);
                }
                writeln!(out, "{}: invalid: {e}", path.display())
            }
            Verdict::Unreadable(e) => {
                eprintln!("flightrec: {}: {e}", path.display());
                status = ExitCode::from(FAILURE);
                Ok(())
            }
        };
        match line {
            Ok(()) => {}
            // Nobody reads the rest: stop with what was found so far.
            Err(e) if reader_gone(&e) => return status,
            Err(e) => return fail(e),
        }
    }
    status
}

fn dump_cmd(a: DumpArgs) -> ExitCode {
    let names = match load_names(&a.file, &a.names) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    // Mapped, its pages released as the listing moves on: any size in
    // bounded memory (a FIFO or device is refused: save it to a file).
    let file = match TraceFile::open(&a.file) {
        Ok(f) => f,
        Err(e) => return fail(format_args!("{}: {e}", a.file.display())),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let mut last = 0;
    let result = dump_reading(file.bytes(), &names, &mut out, &mut |at| {
        file.consumed(at.saturating_sub(last));
        last = at;
    });
    let flushed = out.flush();
    match (result, flushed) {
        (Ok(_), Ok(())) => ExitCode::SUCCESS,
        (Err(DumpError::Io(e)), _) | (_, Err(e)) if reader_gone(&e) => ExitCode::SUCCESS,
        (Err(DumpError::Decode(e)), _) => {
            eprintln!("flightrec: {}: {e}", a.file.display());
            ExitCode::from(BAD_INPUT)
        }
        (Err(DumpError::Io(e)), _) | (_, Err(e)) => fail(e),
    }
}

fn convert(a: ConvertArgs) -> ExitCode {
    let single_fdr = match &a.files[..] {
        [one] => !one.is_dir() && !starts_with_brace(one),
        _ => false,
    };
    // Chrome and Perfetto are the timeline pipeline, of one input or many;
    // YAML lists one FDR file's records as llvm-xray does.
    if !single_fdr || !matches!(a.format, ConvertFormat::Yaml) {
        return convert_timeline_cmd(a);
    }
    let file = &a.files[0];
    let names = match load_names(file, &a.names) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    let started = Instant::now();
    let progress = Progress::new(a.quiet);
    let input = match TraceInput::open(file, &progress) {
        Ok(i) => i,
        Err(ConvertError::Unreadable(e)) => {
            progress.finish();
            return fail(format_args!("{}: {e}", file.display()));
        }
        Err(ConvertError::Invalid(e)) => {
            progress.finish();
            eprintln!("flightrec: {}: {e}", file.display());
            return ExitCode::from(BAD_INPUT);
        }
    };
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => match File::create(p) {
            Ok(f) => Box::new(BufWriter::with_capacity(1 << 20, f)),
            Err(e) => {
                progress.finish();
                return fail(format_args!("{}: {e}", p.display()));
            }
        },
        None => Box::new(BufWriter::with_capacity(1 << 20, io::stdout().lock())),
    };
    let written = input.write_yaml(&names, &mut out, &progress);
    let result = written.and_then(|r| out.flush().map(|()| r));
    progress.finish();
    match result {
        Ok(done) => {
            if !a.quiet {
                eprintln!(
                    "flightrec: converted {}",
                    done.summary_line(started.elapsed())
                );
            }
            if let Some(e) = input.cut_short() {
                // Every buffer it holds was converted; the input is still
                // incomplete, which the status says.
                eprintln!(
                    "flightrec: {}: {e}; converted the buffers it holds",
                    file.display()
                );
                return ExitCode::from(BAD_INPUT);
            }
            ExitCode::SUCCESS
        }
        Err(e) if reader_gone(&e) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

/// Whether the file is a regular file whose first byte is `{` (a Trace2 event
/// stream, not FDR). Anything else is not opened here (a FIFO would wait).
fn starts_with_brace(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut first = [0u8; 1];
    File::open(path)
        .and_then(|mut f| io::Read::read(&mut f, &mut first))
        .is_ok_and(|n| n == 1 && first[0] == b'{')
}

/// `convert` of several inputs (or of a `recv` directory or a Trace2 stream):
/// one timeline ([`flightrec_host::timeline`]).
fn convert_timeline_cmd(a: ConvertArgs) -> ExitCode {
    let format = match a.format {
        ConvertFormat::Yaml => {
            let what = match &a.files[..] {
                [one] if one.is_dir() => format!("{}: is a directory; ", one.display()),
                [one] => format!("{}: is a Trace2 event stream; ", one.display()),
                _ => String::new(),
            };
            return fail(format_args!(
                "{what}YAML output takes one FDR file (as llvm-xray convert does); \
                 merge several inputs into chrome or perfetto output"
            ));
        }
        ConvertFormat::Chrome => TimelineFormat::Chrome,
        ConvertFormat::Perfetto => TimelineFormat::Perfetto,
    };
    let mut inputs = Vec::new();
    for path in &a.files {
        let names = match load_names(path, &a.names) {
            Ok(n) => n,
            Err(e) => return fail(e),
        };
        inputs.push(TimelineInput {
            path: path.clone(),
            names,
        });
    }
    let started = Instant::now();
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => match File::create(p) {
            Ok(f) => Box::new(BufWriter::with_capacity(1 << 20, f)),
            Err(e) => return fail(format_args!("{}: {e}", p.display())),
        },
        None => Box::new(BufWriter::with_capacity(1 << 20, io::stdout().lock())),
    };
    let result = convert_timeline(&inputs, format, &mut out).and_then(|r| out.flush().map(|()| r));
    match result {
        Ok(done) => {
            for p in &done.problems {
                eprintln!("flightrec: {p}");
            }
            for n in &done.clock_notes {
                eprintln!("flightrec: warning: {n}");
            }
            for n in &done.notes {
                eprintln!("flightrec: note: {n}");
            }
            if done.unmatched_ends > 0 || done.unfinished > 0 {
                eprintln!(
                    "flightrec: {} exits without an entry left out, {} calls or regions still open at the end",
                    done.unmatched_ends, done.unfinished
                );
            }
            if done.clamped_times > 0 {
                eprintln!(
                    "flightrec: {} times outside 1970-2554 written at the nearest end",
                    done.clamped_times
                );
            }
            if done.overflow_events > 0 {
                eprintln!(
                    "flightrec: {} events of threads past the first {} on one `(more threads)` track, their calls nested as if one thread made them",
                    done.overflow_events,
                    flightrec_host::timeline::MAX_TRACKS
                );
            }
            if done.counter_values_dropped > 0 {
                eprintln!(
                    "flightrec: {} counter values left out (more than {} counters)",
                    done.counter_values_dropped,
                    flightrec_host::timeline::MAX_COUNTER_TRACKS
                );
            }
            if !a.quiet {
                let secs = started.elapsed().as_secs_f64().max(1e-9);
                eprintln!(
                    "flightrec: converted {} inputs, {:.1} MB, {} events on {} tracks in {secs:.2} s: {:.1} MB/s",
                    done.sources,
                    done.input_bytes as f64 / 1e6,
                    done.events,
                    done.tracks,
                    done.input_bytes as f64 / 1e6 / secs
                );
            }
            // Times moved into range and threads sharing a track: the
            // answer is not whole.
            let changed = done.clamped_times > 0 || done.overflow_events > 0;
            if done.problems.iter().any(|p| p.unreadable) {
                ExitCode::from(FAILURE)
            } else if done.problems.is_empty() && !changed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(BAD_INPUT)
            }
        }
        Err(e) if reader_gone(&e) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

fn recv(a: RecvArgs) -> ExitCode {
    let input = match (&a.device, &a.input) {
        _ if a.gdb.is_some() => Input::Gdb(GdbSettings::new(
            a.gdb.as_deref().unwrap_or_default(),
            a.elf.clone().unwrap_or_default(),
        )),
        (Some(path), _) => Input::Serial(SerialSettings {
            path: path.clone(),
            baud: a.baud,
            data_bits: match a.data_bits {
                5 => serialport::DataBits::Five,
                6 => serialport::DataBits::Six,
                7 => serialport::DataBits::Seven,
                _ => serialport::DataBits::Eight,
            },
            parity: match a.parity {
                ParityArg::None => serialport::Parity::None,
                ParityArg::Odd => serialport::Parity::Odd,
                ParityArg::Even => serialport::Parity::Even,
            },
            stop_bits: if a.stop_bits == 2 {
                serialport::StopBits::Two
            } else {
                serialport::StopBits::One
            },
            flow_control: match a.flow_control {
                FlowArg::None => serialport::FlowControl::None,
                FlowArg::Software => serialport::FlowControl::Software,
                FlowArg::Hardware => serialport::FlowControl::Hardware,
            },
            reconnect: !a.no_reconnect,
        }),
        (None, Some(p)) if p.as_os_str() != "-" => Input::File(p.clone()),
        _ => Input::Stdin,
    };
    let opts = RecvOptions {
        input,
        idle_timeout: a
            .idle_timeout
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64),
        max_payload: a.max_payload,
    };
    let trace2 = a
        .trace2
        .clone()
        .unwrap_or_else(|| a.out_dir.join("trace2.txt"));
    let mut collector = match Collector::new(&a.out_dir, trace2) {
        Ok(c) => c,
        Err(e) => return fail(format_args!("{}: {e}", a.out_dir.display())),
    };
    let target = match a.trace2_format {
        Trace2FormatArg::Event => Target::Event,
        Trace2FormatArg::Perf => Target::Perf,
        Trace2FormatArg::Normal => Target::Normal,
    };
    collector.set_trace2_format(Trace2Format::new(target, a.trace2_brief));
    // The strings of compact Trace2 events (a firmware that sends none has none).
    if let Some(elf) = &a.elf {
        match Trace2Strings::load(elf) {
            Ok(strings) => collector.set_trace2_strings(strings),
            Err(e) => eprintln!("flightrec: warning: {e}"),
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // A second Ctrl-C still ends the process the usual way.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::Relaxed) {
                std::process::exit(130);
            }
        });
    }
    let progress = Progress::new(a.quiet);
    let result = flightrec_host::link::recv::run(&opts, &mut collector, &stop, &progress);
    match result {
        Ok(report) => {
            print_report(&report, &collector);
            if let Some(elf) = &a.elf {
                write_firmware_names(elf, &collector);
            }
            let damaged = report.link.crc_failures
                + report.link.malformed
                + report.link.frames_lost
                + report.link.bytes_skipped
                > 0;
            if damaged || collector.had_problems() {
                ExitCode::from(BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            print_report(&RecvReport::default(), &collector);
            fail(e)
        }
    }
}

/// `recv --elf`: the names file beside each trace received.
fn write_firmware_names(elf: &Path, c: &Collector) {
    let traces: Vec<&Path> = c.sources().filter_map(|(_, s)| s.path.as_deref()).collect();
    let Some(fw) = firmware_names(elf, &traces, false) else {
        return;
    };
    for trace in traces {
        let out = names_beside(trace);
        match fw.write_names_file(&out) {
            Ok(()) => eprintln!(
                "  names: {} functions -> {}",
                fw.entries.len(),
                out.display()
            ),
            Err(e) => eprintln!("flightrec: warning: {}: {e}", out.display()),
        }
    }
}

fn print_report(r: &RecvReport, c: &Collector) {
    let l = &r.link;
    eprintln!(
        "flightrec recv: {} bytes, {} frames, {} CRC failures, {} malformed, {} bytes skipped, {} frames lost{}{}",
        r.bytes_read,
        l.frames,
        l.crc_failures,
        l.malformed,
        l.bytes_skipped,
        l.frames_lost,
        if r.disconnects > 0 {
            format!(", {} disconnects", r.disconnects)
        } else {
            String::new()
        },
        if r.interrupted { " (interrupted)" } else { "" },
    );
    for (id, s) in c.sources() {
        let file = s
            .path
            .as_ref()
            .map_or_else(|| "no file".to_string(), |p| p.display().to_string());
        let target = s.stats.map_or_else(
            || "no counters received".to_string(),
            |st| {
                format!(
                    "target dropped {} records, overwrote {} buffers, failed to send {} frames",
                    st.ring.records_dropped, st.ring.buffers_overwritten, st.frames_failed
                )
            },
        );
        eprintln!(
            "  source {id}: {} buffers -> {file}; {target}{}{}",
            s.buffers,
            if s.invalid_buffers > 0 {
                format!("; {} invalid buffers left out", s.invalid_buffers)
            } else {
                String::new()
            },
            if s.headerless_buffers > 0 {
                format!(
                    "; {} buffers lost without a file header{}",
                    s.headerless_buffers,
                    if s.headerless_dropped > 0 {
                        format!(
                            " ({} dropped on arrival: no room left to hold them)",
                            s.headerless_dropped
                        )
                    } else {
                        String::new()
                    }
                )
            } else {
                String::new()
            },
        );
    }
    let (lines, path) = c.trace2();
    if lines > 0 {
        eprintln!("  trace2: {lines} lines -> {}", path.display());
    }
    let t2 = c.trace2_events();
    if t2.events > 0 {
        eprintln!(
            "  trace2: {} compact events, {} lines{}{}",
            t2.events,
            t2.lines,
            [
                (t2.malformed, "malformed, left out"),
                (
                    t2.without_session,
                    "before their source's session, left out"
                ),
                (
                    t2.unbalanced,
                    "region_leave without a region open, left out"
                ),
                (
                    t2.unknown_strings,
                    "with a string id the ELF does not name (written as #<id>; give recv --elf)",
                ),
            ]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("; {n} {what}"))
            .collect::<String>(),
            if t2.pad_capped > 0 {
                let levels = flightrec_host::core::trace2::perf::MAX_PAD_NESTING;
                format!(
                    "; {} perf lines nested deeper than {levels} regions, padded for {levels}",
                    t2.pad_capped
                )
            } else {
                String::new()
            }
        );
    }
    if c.bad_control_frames() > 0 {
        eprintln!(
            "  {} header or counter frames with a bad payload",
            c.bad_control_frames()
        );
    }
}
