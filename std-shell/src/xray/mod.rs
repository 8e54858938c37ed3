//! LLVM XRay FDR traces of desktop programs, configured like compiler-rt's runtime.
//!
//! The program marks functions with guards ([`enter`], [`xray_fn!`](crate::xray_fn),
//! [`xray_scope!`](crate::xray_scope)) and events ([`custom_event`],
//! [`typed_event`]); [`init_from_env`] reads `XRAY_OPTIONS` and `XRAY_FDR_OPTIONS`
//! exactly like compiler-rt (or [`init`] takes a [`Config`] built in code). Each
//! thread records into its own ring of buffers from a pool allocated once, through
//! the core's [`Recorder`](flightrec_core::fdr::ring::Recorder); the file is a
//! version-5 FDR trace that `llvm-xray` reads, with a names file beside it
//! (`<trace>.names`, an ELF instrumentation map: `llvm-xray account -m <trace>.names
//! <trace>`).
//!
//! * [`Mode::FlightRecorder`] (default): threads keep their newest buffers; the
//!   trace is written at exit, on [`dump`] and on a fatal signal.
//! * [`Mode::Streaming`]: a writer thread appends finished buffers to the trace as
//!   they fill; records that find all of their thread's buffers waiting are dropped
//!   and counted ([`stats`], the exit summary, and a loss event in the trace).
//!
//! While XRay is not recording, every call costs one relaxed atomic load.
//!
//! ```no_run
//! fn main() {
//!     // XRAY_OPTIONS="xray_mode=xray-fdr patch_premain=true verbosity=1"
//!     flightrec::xray::init_from_env().expect("bad XRAY_OPTIONS");
//!     work(3);
//!     // At exit the trace is written to xray-log.<program>.XXXXXX.
//! }
//!
//! fn work(n: u64) -> u64 {
//!     let _f = flightrec::xray_fn!();
//!     if n == 0 { 1 } else { n * work(n - 1) }
//! }
//! ```
//!
//! Details, differences from compiler-rt and the file formats: `docs/desktop-fdr.md`.

mod claim;
pub mod clock;
pub mod config;
mod flush;
mod fork;
mod lifecycle;
pub mod names;
pub mod options;
mod output;
mod pool;
mod record;
mod runtime;
mod signal;
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
#[doc(hidden)]
pub mod sled_abi;
mod state;

use std::fmt;
use std::path::PathBuf;

#[cfg(all(unix, feature = "trace2"))]
pub(crate) use claim::traced_thread_id;
pub use clock::CpuIds;
pub use config::{Config, ConfigBuilder, ConfigError, Mode, ParsedOptions};
pub use lifecycle::Report;
pub use names::{function_id, set_function_name};
pub use output::{INCOMPLETE_SUFFIX, NAMES_SUFFIX};
#[doc(hidden)]
pub use record::enclosing_function_name;
#[cfg(feature = "tracing")]
pub(crate) use record::record_function_on_ring;
pub use record::{
    custom_event, enter, enter_with_arg, is_recording, record_enter, record_enter_with_arg,
    record_exit, record_tail_exit, try_record, typed_event, CallSite, FunctionGuard,
};
pub use runtime::Stats;

/// Why the runtime did not do what was asked. Tracing stays off (or as it was).
///
/// ```
/// use flightrec::xray::{Config, ConfigError, Error};
/// assert_eq!(flightrec::xray::shutdown(), Err(Error::NotInitialized));
/// assert_eq!(flightrec::xray::dump(), Err(Error::NotInitialized));
///
/// let mut bad = Config::default();
/// bad.buffer_size = 16;
/// let err = flightrec::xray::init(bad).unwrap_err();
/// assert!(matches!(err, Error::Config(ConfigError::OutOfRange { option: "buffer_size", .. })));
/// assert_eq!(err.to_string(), "XRay configuration: buffer_size=16 is out of range: expected 256 to 2147483647 bytes");
///
/// flightrec::xray::init(Config::builder().no_file_flush(true).build()?)?;
/// assert_eq!(flightrec::xray::init(Config::default()), Err(Error::AlreadyInitialized));
/// flightrec::xray::shutdown()?;
/// assert_eq!(flightrec::xray::shutdown(), Err(Error::AlreadyShutDown));
/// assert!(!flightrec::xray::start()); // for good
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The configuration is invalid.
    Config(ConfigError),
    /// [`init`] already ran in this process.
    AlreadyInitialized,
    /// The runtime was not initialised.
    NotInitialized,
    /// [`shutdown`] already ran (or a fatal signal wrote the trace).
    AlreadyShutDown,
    /// The pool could not be allocated (bytes asked for).
    OutOfMemory(usize),
    /// Another dump did not finish within the grace period.
    Busy,
    /// A file could not be created or written.
    Io(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(e) => write!(f, "XRay configuration: {e}"),
            Error::AlreadyInitialized => f.write_str("XRay is already initialised"),
            Error::NotInitialized => f.write_str("XRay is not initialised"),
            Error::AlreadyShutDown => f.write_str("XRay has already been shut down"),
            Error::OutOfMemory(n) => write!(f, "cannot allocate {n} bytes of XRay buffers"),
            Error::Busy => f.write_str("another XRay dump is in progress"),
            Error::Io(e) => write!(f, "XRay output: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(e)
    }
}

/// Starts the runtime with `config`: measures the clock, allocates the pool, opens
/// the trace (streaming), installs the exit hook and the fatal-signal handler, and
/// starts recording if `config.patch_premain` is set (else at [`start`]).
/// Once per process.
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::{Config, Mode};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().mode(Mode::Streaming).logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?; // patch_premain: recording from now on
/// assert!(flightrec::xray::is_recording());
/// {
///     let _f = flightrec::xray::enter(FunctionId::new(7).unwrap());
/// }
/// let report = flightrec::xray::shutdown()?;
/// let trace = std::fs::read(report.path.unwrap())?;
/// let functions: Vec<(FunctionAction, u32)> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(functions, [(FunctionAction::Enter, 7), (FunctionAction::Exit, 7)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn init(config: Config) -> Result<(), Error> {
    lifecycle::init(config)
}

/// Reads `XRAY_OPTIONS` and `XRAY_FDR_OPTIONS` and starts the runtime when they
/// select FDR mode (`xray_mode=xray-fdr`, or the deprecated `xray_fdr_log=true`).
/// Returns `Ok(false)` when they do not. Unknown flags are reported on stderr, as
/// compiler-rt's "found N unrecognized flag(s)" warning; errors are returned and
/// also reported there, since a program traced through the environment may not
/// look at the result.
///
/// ```
/// // Without XRAY_OPTIONS nothing happens.
/// std::env::remove_var("XRAY_OPTIONS");
/// assert_eq!(flightrec::xray::init_from_env(), Ok(false));
/// ```
pub fn init_from_env() -> Result<bool, Error> {
    let parsed = match Config::from_env() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("XRay: flightrec: {e}; tracing stays off");
            return Err(Error::Config(e));
        }
    };
    if !parsed.unknown_flags.is_empty() {
        eprintln!(
            "WARNING: found {} unrecognized flag(s):",
            parsed.unknown_flags.len()
        );
        for name in &parsed.unknown_flags {
            eprintln!("    {name}");
        }
    }
    if !parsed.selected {
        return Ok(false);
    }
    if let Err(e) = init(parsed.config) {
        eprintln!("XRay: flightrec: {e}; tracing stays off");
        return Err(e);
    }
    Ok(true)
}

/// Starts recording (compiler-rt: `__xray_patch`). `false` if not initialised or
/// already shut down.
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::Config;
/// assert!(!flightrec::xray::start()); // not initialised
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().patch_premain(false).logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// let (early, traced) = (FunctionId::new(1).unwrap(), FunctionId::new(2).unwrap());
/// drop(flightrec::xray::enter(early)); // armed, not recording: nothing
/// assert!(flightrec::xray::start());
/// drop(flightrec::xray::enter(traced));
/// assert!(flightrec::xray::stop());
/// drop(flightrec::xray::enter(early)); // stopped: nothing
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let functions: Vec<(FunctionAction, u32)> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(functions, [(FunctionAction::Enter, 2), (FunctionAction::Exit, 2)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn start() -> bool {
    state::set_recording(true)
}

/// Stops recording until [`start`] (compiler-rt: `__xray_unpatch`). Example on
/// [`start`].
pub fn stop() -> bool {
    state::set_recording(false)
}

/// Writes the trace now. Flight recorder: a new file with every thread's newest
/// buffers (recording pauses meanwhile; records attempted then are counted as
/// dropped), `Ok(None)` if nothing was recorded. Streaming: publishes every
/// thread's partial buffer and writes all pending buffers; returns the trace's path.
/// Also writes the names file. `Ok(None)` with `no_file_flush`.
///
/// ```
/// use flightrec::core::fdr::decoder::verify;
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::{Config, NAMES_SUFFIX};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?; // flight recorder (the default)
/// assert_eq!(flightrec::xray::dump()?, None); // nothing recorded yet
/// drop(flightrec::xray::enter(FunctionId::new(1).unwrap()));
/// let first = flightrec::xray::dump()?.unwrap();
/// drop(flightrec::xray::enter(FunctionId::new(1).unwrap()));
/// let second = flightrec::xray::dump()?.unwrap(); // a new file each time
/// assert_ne!(first, second);
/// for path in [&first, &second] {
///     assert_eq!(verify(&std::fs::read(path)?)?.function_records % 2, 0);
///     let names = format!("{}{NAMES_SUFFIX}", path.display());
///     assert!(std::fs::metadata(names)?.len() > 0);
/// }
/// // A flight recorder keeps the newest buffers: the second dump holds both calls.
/// assert_eq!(verify(&std::fs::read(&second)?)?.function_records, 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn dump() -> Result<Option<PathBuf>, Error> {
    flush::dump()
}

/// Stops recording for good and writes the trace (what the exit hook does; call it
/// to get the [`Report`], e.g. before `std::process::exit` from a context where
/// exit hooks do not run).
///
/// ```
/// use flightrec::core::fdr::decoder::verify;
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::{Config, NAMES_SUFFIX};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// drop(flightrec::xray::enter(FunctionId::new(3).unwrap()));
/// let report = flightrec::xray::shutdown()?;
/// assert!(!flightrec::xray::is_recording());
/// let path = report.path.unwrap();
/// assert!(path.file_name().unwrap().to_str().unwrap().starts_with("trace-"));
/// assert_eq!(report.names_path, Some(format!("{}{NAMES_SUFFIX}", path.display()).into()));
/// let summary = verify(&std::fs::read(&path)?)?;
/// assert_eq!(summary.function_records, 2);
/// assert_eq!((report.stats.threads, report.stats.records_dropped), (1, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn shutdown() -> Result<Report, Error> {
    lifecycle::shutdown()
}

/// The runtime's counters (all zero before [`init`]).
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::{Config, Stats};
/// assert_eq!(flightrec::xray::stats(), Stats::default());
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// drop(flightrec::xray::enter(FunctionId::new(1).unwrap()));
/// std::thread::spawn(|| drop(flightrec::xray::enter(FunctionId::new(2).unwrap()))).join().unwrap();
/// let stats = flightrec::xray::stats();
/// assert_eq!((stats.threads, stats.threads_without_ring, stats.records_dropped), (2, 0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn stats() -> Stats {
    runtime::runtime().map(|rt| rt.stats()).unwrap_or_default()
}

/// The TSC frequency in the file header, once initialised.
///
/// ```
/// use flightrec::xray::Config;
/// assert_eq!(flightrec::xray::frequency(), None);
/// flightrec::xray::init(Config::builder().no_file_flush(true).build()?)?;
/// let f = flightrec::xray::frequency().unwrap();
/// assert!(f.hz.get() >= 1_000_000); // at least 1 MHz
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn frequency() -> Option<clock::Frequency> {
    runtime::runtime().map(|rt| rt.frequency)
}
