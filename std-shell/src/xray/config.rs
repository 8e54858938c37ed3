//! What the desktop FDR runtime does: built in code with [`Config::builder`] or read
//! from `XRAY_OPTIONS` and `XRAY_FDR_OPTIONS` with [`Config::from_env`].
//!
//! ```
//! use flightrec::xray::{Config, Mode};
//! let cfg = Config::builder()
//!     .mode(Mode::Streaming)
//!     .buffer_size(4096)
//!     .buffer_max(64)
//!     .func_duration_threshold_us(0)
//!     .logfile_base("/tmp/trace-")
//!     .build()
//!     .unwrap();
//! assert_eq!(cfg.buffer_max, 64);
//!
//! let parsed = Config::from_options(
//!     "xray_mode=xray-fdr patch_premain=true",
//!     "buffer_size=4096 flightrec_mode=streaming",
//! )
//! .unwrap();
//! assert!(parsed.selected);
//! assert_eq!(parsed.config.mode, Mode::Streaming);
//! ```

use std::fmt;

use super::clock::CpuIds;
use super::options::{parse_flags, FdrFlags, FlagError, XRayFlags};

/// What happens to full buffers.
///
/// ```
/// use flightrec::xray::{Config, Mode};
/// assert_eq!(Config::default().mode, Mode::FlightRecorder);
/// for mode in [Mode::FlightRecorder, Mode::Streaming] {
///     // `name` is the value of `flightrec_mode=` that selects the mode.
///     let fdr = format!("flightrec_mode={}", mode.name());
///     assert_eq!(Config::from_options("xray_mode=xray-fdr", &fdr)?.config.mode, mode);
/// }
/// assert_eq!(Mode::Streaming.name(), "streaming");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Each thread keeps its newest buffers; the trace is written at exit, on
    /// [`dump`](super::dump) and on a fatal signal. compiler-rt's FDR behaviour.
    FlightRecorder,
    /// A background thread writes finished buffers to the file as they fill; records
    /// that find every buffer of their thread waiting are dropped and counted.
    Streaming,
}

impl Mode {
    /// The name used by `flightrec_mode=`. Example on [`Mode`].
    pub fn name(self) -> &'static str {
        match self {
            Mode::FlightRecorder => "flight-recorder",
            Mode::Streaming => "streaming",
        }
    }
}

/// Why a configuration was refused. Tracing stays off.
///
/// ```
/// use flightrec::xray::options::FlagError;
/// use flightrec::xray::{Config, ConfigError};
/// let err = |x: &str, f: &str| Config::from_options(x, f).unwrap_err();
/// assert_eq!(err("xray_mode=xray-basic", ""), ConfigError::UnsupportedMode("xray-basic".into()));
/// assert_eq!(err("", "flightrec_mode=ring"), ConfigError::UnknownMode("ring".into()));
/// assert_eq!(err("", "flightrec_cpu_ids=maybe"), ConfigError::UnknownCpuIds("maybe".into()));
/// assert_eq!(err("xray_logfile_base=", ""), ConfigError::BadLogfileBase(String::new()));
/// assert!(matches!(err("", "buffer_max=0"), ConfigError::OutOfRange { option: "buffer_max", value: 0, .. }));
/// assert!(matches!(err("verbosity=loud", ""), ConfigError::Flags(FlagError::InvalidValue { .. })));
/// assert_eq!(
///     err("", "flightrec_mode=ring").to_string(),
///     "flightrec_mode=ring is unknown: expected flight-recorder or streaming"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// A flag string could not be parsed.
    Flags(FlagError),
    /// `xray_mode` names a mode flightrec does not implement.
    UnsupportedMode(String),
    /// A value is outside what the runtime accepts.
    OutOfRange {
        /// The option.
        option: &'static str,
        /// The value given.
        value: i64,
        /// What is accepted.
        expected: &'static str,
    },
    /// `flightrec_mode` is neither `flight-recorder` nor `streaming`.
    UnknownMode(String),
    /// `flightrec_cpu_ids` is not `auto`, a true boolean or a false one.
    UnknownCpuIds(String),
    /// `xray_logfile_base` is empty or contains a NUL byte.
    BadLogfileBase(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Flags(e) => e.fmt(f),
            ConfigError::UnsupportedMode(m) => write!(
                f,
                "xray_mode={m} is not supported by flightrec (only xray-fdr is)"
            ),
            ConfigError::OutOfRange {
                option,
                value,
                expected,
            } => write!(f, "{option}={value} is out of range: expected {expected}"),
            ConfigError::UnknownMode(m) => write!(
                f,
                "flightrec_mode={m} is unknown: expected flight-recorder or streaming"
            ),
            ConfigError::UnknownCpuIds(m) => write!(
                f,
                "flightrec_cpu_ids={m} is unknown: expected auto, 1/yes/true or 0/no/false"
            ),
            ConfigError::BadLogfileBase(b) => {
                write!(f, "xray_logfile_base={b:?} cannot name a file")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<FlagError> for ConfigError {
    fn from(e: FlagError) -> Self {
        ConfigError::Flags(e)
    }
}

/// The smallest buffer the runtime accepts: room for the buffer preamble, a CPU
/// record, an event marker and a short payload.
///
/// ```
/// use flightrec::xray::config::MIN_BUFFER_SIZE;
/// use flightrec::xray::Config;
/// assert!(Config::builder().buffer_size(MIN_BUFFER_SIZE).build().is_ok());
/// assert!(Config::builder().buffer_size(MIN_BUFFER_SIZE - 1).build().is_err());
/// ```
pub const MIN_BUFFER_SIZE: usize = 256;
/// The largest buffer the runtime accepts (compiler-rt stores the size in an `int`).
///
/// ```
/// use flightrec::xray::config::MAX_BUFFER_SIZE;
/// use flightrec::xray::Config;
/// assert_eq!(MAX_BUFFER_SIZE, i32::MAX as usize);
/// // Checked without allocating: `init` would allocate the pool.
/// assert!(Config::builder().buffer_size(MAX_BUFFER_SIZE).buffer_max(1).thread_buffers(1).build().is_ok());
/// assert!(Config::builder().buffer_size(MAX_BUFFER_SIZE + 1).build().is_err());
/// ```
pub const MAX_BUFFER_SIZE: usize = i32::MAX as usize;

/// The runtime's settings. Make one with [`Config::builder`] (checked) or
/// [`Config::from_env`]; [`init`](super::init) checks it again.
///
/// ```
/// use flightrec::xray::{Config, CpuIds, Mode};
/// let cfg = Config::builder().build()?; // compiler-rt's defaults, recording from `init`
/// assert_eq!(cfg, Config::default());
/// assert_eq!((cfg.mode, cfg.logfile_base.as_str(), cfg.patch_premain), (Mode::FlightRecorder, "xray-log.", true));
/// assert_eq!((cfg.buffer_size, cfg.buffer_max, cfg.thread_buffers), (16384, 100, 0));
/// // By default every thread may keep as many buffers as compiler-rt's whole
/// // queue, and each of up to `buffer_max` threads has a ring.
/// assert_eq!(cfg.rings(), (100, 100));
/// assert_eq!((cfg.func_duration_threshold_us, cfg.grace_period_ms), (5, 100));
/// assert_eq!((cfg.fatal_signals, cfg.cpu_ids), (true, CpuIds::Auto));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Flight recorder (default) or streaming.
    pub mode: Mode,
    /// Output file prefix: the file is `<logfile_base><program>.<6 random characters>`.
    pub logfile_base: String,
    /// Record from [`init`](super::init) on; otherwise from [`start`](super::start).
    pub patch_premain: bool,
    /// 0: errors only; 1: file names, clock and summary at exit; 2: more.
    pub verbosity: i32,
    /// Bytes per buffer, rounded down to a multiple of 8.
    pub buffer_size: usize,
    /// Buffers in the pool, allocated once at initialisation.
    pub buffer_max: usize,
    /// Buffers of each thread's ring, taken on the thread's first record; 0
    /// (the default): `buffer_max` buffers per thread and a ring for each of
    /// up to [`AUTO_RINGS_MAX`] (at most `buffer_max`) threads, so that no
    /// thread keeps less than compiler-rt's shared queue would (see
    /// [`Config::rings`]).
    pub thread_buffers: usize,
    /// Entry/exit pairs shorter than this many microseconds are erased.
    pub func_duration_threshold_us: u32,
    /// How long a flush waits for threads still inside a record.
    pub grace_period_ms: u32,
    /// Record but write no file.
    pub no_file_flush: bool,
    /// Streaming: how often the writer thread writes finished buffers.
    pub flush_interval_ms: u32,
    /// Write the trace when the process dies of a fatal signal.
    pub fatal_signals: bool,
    /// Write the trace on `SIGINT` and `SIGTERM` too, where the program
    /// leaves them at their default action, then let the signal end the
    /// process (`flightrec_dump_on_signal`, off by default).
    pub dump_on_signal: bool,
    /// Record CPU ids (x86_64 `rdtscp`): measured, always or never.
    pub cpu_ids: CpuIds,
}

/// The most rings the default `flightrec_thread_buffers=0` cuts: one per
/// thread recording at once, up to `buffer_max` of them.
///
/// ```
/// use flightrec::xray::config::AUTO_RINGS_MAX;
/// use flightrec::xray::Config;
/// assert_eq!(AUTO_RINGS_MAX, 128);
/// let big = Config::builder().buffer_max(1000).build()?;
/// assert_eq!(big.rings(), (128, 1000));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const AUTO_RINGS_MAX: usize = 128;

impl Config {
    /// The pool's rings and the buffers of each: `buffer_max /
    /// thread_buffers` rings of `thread_buffers` buffers, or with
    /// `thread_buffers` 0 (the default) a ring of `buffer_max` buffers for
    /// each of up to `min(buffer_max, AUTO_RINGS_MAX)` threads. The pool is
    /// reserved at `init` and its memory committed as threads write into it:
    /// a thread costs the buffers it filled, at most `buffer_max`.
    ///
    /// ```
    /// use flightrec::xray::Config;
    /// let cfg = Config::builder().buffer_max(64).thread_buffers(8).build()?;
    /// assert_eq!(cfg.rings(), (8, 8));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rings(&self) -> (usize, usize) {
        match self.thread_buffers {
            0 => (self.buffer_max.min(AUTO_RINGS_MAX), self.buffer_max),
            n => (self.buffer_max / n, n),
        }
    }
}

impl Default for Config {
    /// compiler-rt's defaults, flight-recorder mode, recording from `init`.
    fn default() -> Self {
        Self {
            mode: Mode::FlightRecorder,
            logfile_base: "xray-log.".to_owned(),
            patch_premain: true,
            verbosity: 0,
            buffer_size: 16384,
            buffer_max: 100,
            thread_buffers: 0,
            func_duration_threshold_us: 5,
            grace_period_ms: 100,
            no_file_flush: false,
            flush_interval_ms: 10,
            fatal_signals: true,
            dump_on_signal: false,
            cpu_ids: CpuIds::Auto,
        }
    }
}

/// What [`Config::from_options`] and [`Config::from_env`] found.
///
/// ```
/// use flightrec::xray::{Config, ParsedOptions};
/// let parsed: ParsedOptions = Config::from_options("verbosity=1 xray_typo=1", "buffer_max=8 other=2")?;
/// assert!(!parsed.selected); // no xray_mode: FDR not asked for
/// assert_eq!((parsed.config.verbosity, parsed.config.buffer_max), (1, 8));
/// assert_eq!(parsed.unknown_flags, ["XRAY_OPTIONS: xray_typo", "XRAY_FDR_OPTIONS: other"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedOptions {
    /// FDR mode was selected (`xray_mode=xray-fdr` or the deprecated `xray_fdr_log=true`).
    pub selected: bool,
    /// The configuration.
    pub config: Config,
    /// Flag names neither flag set knows, with the variable they were in.
    pub unknown_flags: Vec<String>,
}

impl Config {
    /// A builder starting from [`Config::default`]. Example on [`Config`].
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder {
            config: Config::default(),
        }
    }

    /// Checks every value; [`ConfigBuilder::build`] and [`init`](super::init) call it.
    ///
    /// ```
    /// use flightrec::xray::{Config, ConfigError};
    /// let mut cfg = Config::default();
    /// assert_eq!(cfg.validate(), Ok(()));
    /// cfg.thread_buffers = cfg.buffer_max + 1; // more than the pool holds
    /// assert!(matches!(cfg.validate(), Err(ConfigError::OutOfRange { option: "flightrec_thread_buffers", .. })));
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn range(
            option: &'static str,
            value: usize,
            min: usize,
            max: usize,
            expected: &'static str,
        ) -> Result<(), ConfigError> {
            if value < min || value > max {
                return Err(ConfigError::OutOfRange {
                    option,
                    value: i64::try_from(value).unwrap_or(i64::MAX),
                    expected,
                });
            }
            Ok(())
        }
        range(
            "buffer_size",
            self.buffer_size,
            MIN_BUFFER_SIZE,
            MAX_BUFFER_SIZE,
            "256 to 2147483647 bytes",
        )?;
        range(
            "buffer_max",
            self.buffer_max,
            1,
            1 << 20,
            "1 to 1048576 buffers",
        )?;
        range(
            "flightrec_thread_buffers",
            self.thread_buffers,
            0,
            self.buffer_max,
            "0 (buffer_max per thread) to buffer_max buffers",
        )?;
        if self.logfile_base.is_empty() || self.logfile_base.contains('\0') {
            return Err(ConfigError::BadLogfileBase(self.logfile_base.clone()));
        }
        Ok(())
    }

    /// Reads the two flag strings like compiler-rt: defaults, then `xray_options`
    /// (`XRAY_OPTIONS`), then `fdr_options` (`XRAY_FDR_OPTIONS`). When `fdr_options`
    /// is empty, the deprecated `xray_fdr_log_func_duration_threshold_us` and
    /// `xray_fdr_log_grace_period_ms` of `xray_options` apply instead.
    ///
    /// The result says whether FDR mode was selected at all; an unsupported
    /// `xray_mode`, a malformed string or a bad value is an error.
    ///
    /// ```
    /// use flightrec::xray::Config;
    /// // The deprecated spelling, with the threshold of XRAY_OPTIONS (XRAY_FDR_OPTIONS empty).
    /// let old = Config::from_options("xray_fdr_log=true xray_fdr_log_func_duration_threshold_us=7", "")?;
    /// assert!(old.selected);
    /// assert_eq!(old.config.func_duration_threshold_us, 7);
    /// // A non-empty XRAY_FDR_OPTIONS wins, with its own default for what it leaves out.
    /// let new = Config::from_options(
    ///     "xray_mode=xray-fdr xray_fdr_log_func_duration_threshold_us=7",
    ///     "buffer_size=4096",
    /// )?;
    /// assert_eq!((new.config.func_duration_threshold_us, new.config.buffer_size), (5, 4096));
    /// assert!(Config::from_options("xray_mode=xray-fdr buffer_size", "").is_err()); // no `=`
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_options(
        xray_options: &str,
        fdr_options: &str,
    ) -> Result<ParsedOptions, ConfigError> {
        let mut x = XRayFlags::default();
        let mut unknown = Vec::new();
        for name in parse_flags(xray_options, "XRAY_OPTIONS", &mut x)? {
            unknown.push(format!("XRAY_OPTIONS: {name}"));
        }
        let mut f = FdrFlags::default();
        for name in parse_flags(fdr_options, "XRAY_FDR_OPTIONS", &mut f)? {
            unknown.push(format!("XRAY_FDR_OPTIONS: {name}"));
        }
        if fdr_options.is_empty() {
            f.func_duration_threshold_us = x.xray_fdr_log_func_duration_threshold_us;
            f.grace_period_ms = x.xray_fdr_log_grace_period_ms;
        }
        let selected = match x.xray_mode.as_str() {
            "xray-fdr" => true,
            "" => x.xray_fdr_log,
            other => return Err(ConfigError::UnsupportedMode(other.to_owned())),
        };
        fn non_negative(option: &'static str, v: i32) -> Result<u32, ConfigError> {
            u32::try_from(v).map_err(|_| ConfigError::OutOfRange {
                option,
                value: v.into(),
                expected: "0 or more",
            })
        }
        fn positive(option: &'static str, v: i32) -> Result<usize, ConfigError> {
            usize::try_from(v)
                .ok()
                .filter(|&n| n > 0)
                .ok_or(ConfigError::OutOfRange {
                    option,
                    value: v.into(),
                    expected: "1 or more",
                })
        }
        let mode = match f.flightrec_mode.as_str() {
            "flight-recorder" => Mode::FlightRecorder,
            "streaming" => Mode::Streaming,
            other => return Err(ConfigError::UnknownMode(other.to_owned())),
        };
        let cpu_ids = match f.flightrec_cpu_ids.as_str() {
            "auto" => CpuIds::Auto,
            "1" | "yes" | "true" => CpuIds::Always,
            "0" | "no" | "false" => CpuIds::Never,
            other => return Err(ConfigError::UnknownCpuIds(other.to_owned())),
        };
        let config = Config {
            mode,
            logfile_base: x.xray_logfile_base,
            patch_premain: x.patch_premain,
            verbosity: x.verbosity,
            buffer_size: positive("buffer_size", f.buffer_size)?,
            buffer_max: positive("buffer_max", f.buffer_max)?,
            thread_buffers: non_negative("flightrec_thread_buffers", f.flightrec_thread_buffers)?
                as usize,
            func_duration_threshold_us: non_negative(
                "func_duration_threshold_us",
                f.func_duration_threshold_us,
            )?,
            grace_period_ms: non_negative("grace_period_ms", f.grace_period_ms)?,
            no_file_flush: f.no_file_flush,
            flush_interval_ms: positive(
                "flightrec_flush_interval_ms",
                f.flightrec_flush_interval_ms,
            )? as u32,
            fatal_signals: f.flightrec_fatal_signals,
            dump_on_signal: f.flightrec_dump_on_signal,
            cpu_ids,
        };
        config.validate()?;
        Ok(ParsedOptions {
            selected,
            config,
            unknown_flags: unknown,
        })
    }

    /// [`Config::from_options`] on the environment variables `XRAY_OPTIONS` and
    /// `XRAY_FDR_OPTIONS` (unset reads as empty).
    ///
    /// ```
    /// use flightrec::xray::{Config, Mode};
    /// std::env::set_var("XRAY_OPTIONS", "xray_mode=xray-fdr verbosity=1");
    /// std::env::set_var("XRAY_FDR_OPTIONS", "flightrec_mode=streaming");
    /// let parsed = Config::from_env()?;
    /// assert!(parsed.selected);
    /// assert_eq!((parsed.config.mode, parsed.config.verbosity), (Mode::Streaming, 1));
    /// std::env::remove_var("XRAY_FDR_OPTIONS");
    /// assert_eq!(Config::from_env()?.config.mode, Mode::FlightRecorder);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_env() -> Result<ParsedOptions, ConfigError> {
        let get = |name| {
            std::env::var_os(name)
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        Self::from_options(&get("XRAY_OPTIONS"), &get("XRAY_FDR_OPTIONS"))
    }
}

/// Builds a [`Config`] in code; every setter has the name of its compiler-rt flag
/// (without the `xray_` or `flightrec_` prefix).
///
/// ```
/// use flightrec::xray::{Config, CpuIds, Mode};
/// let built = Config::builder()
///     .mode(Mode::Streaming)
///     .logfile_base("/var/tmp/app-")
///     .patch_premain(false)
///     .verbosity(2)
///     .buffer_size(4096)
///     .buffer_max(64)
///     .thread_buffers(8)
///     .func_duration_threshold_us(0)
///     .grace_period_ms(50)
///     .no_file_flush(true)
///     .flush_interval_ms(20)
///     .fatal_signals(false)
///     .dump_on_signal(true)
///     .cpu_ids(CpuIds::Never)
///     .build()?;
/// // The same settings as compiler-rt-style flag strings.
/// let parsed = Config::from_options(
///     "xray_mode=xray-fdr xray_logfile_base=/var/tmp/app- patch_premain=false verbosity=2",
///     "flightrec_mode=streaming buffer_size=4096 buffer_max=64 flightrec_thread_buffers=8 \
///      func_duration_threshold_us=0 grace_period_ms=50 no_file_flush=true \
///      flightrec_flush_interval_ms=20 flightrec_fatal_signals=false flightrec_cpu_ids=no \
///      flightrec_dump_on_signal=true",
/// )?;
/// assert_eq!(built, parsed.config);
///
/// let err = Config::builder().buffer_size(16).build().unwrap_err();
/// assert!(err.to_string().contains("buffer_size=16"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ConfigBuilder {
    config: Config,
}

impl ConfigBuilder {
    /// Flight recorder or streaming. Example on [`ConfigBuilder`].
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self
    }
    /// Output file prefix (`xray_logfile_base`). Example on [`ConfigBuilder`].
    pub fn logfile_base(mut self, base: impl Into<String>) -> Self {
        self.config.logfile_base = base.into();
        self
    }
    /// Record from `init` on (`patch_premain`); the builder's default is `true`.
    /// Example on [`ConfigBuilder`].
    pub fn patch_premain(mut self, on: bool) -> Self {
        self.config.patch_premain = on;
        self
    }
    /// Messages on stderr (`verbosity`). Example on [`ConfigBuilder`].
    pub fn verbosity(mut self, level: i32) -> Self {
        self.config.verbosity = level;
        self
    }
    /// Bytes per buffer (`buffer_size`). Example on [`ConfigBuilder`].
    pub fn buffer_size(mut self, bytes: usize) -> Self {
        self.config.buffer_size = bytes;
        self
    }
    /// Buffers in the pool (`buffer_max`). Example on [`ConfigBuilder`].
    pub fn buffer_max(mut self, buffers: usize) -> Self {
        self.config.buffer_max = buffers;
        self
    }
    /// Buffers per thread (`flightrec_thread_buffers`). Example on [`ConfigBuilder`].
    pub fn thread_buffers(mut self, buffers: usize) -> Self {
        self.config.thread_buffers = buffers;
        self
    }
    /// Short-call threshold (`func_duration_threshold_us`). Example on [`ConfigBuilder`].
    pub fn func_duration_threshold_us(mut self, us: u32) -> Self {
        self.config.func_duration_threshold_us = us;
        self
    }
    /// Flush grace period (`grace_period_ms`). Example on [`ConfigBuilder`].
    pub fn grace_period_ms(mut self, ms: u32) -> Self {
        self.config.grace_period_ms = ms;
        self
    }
    /// Write no files (`no_file_flush`). Example on [`ConfigBuilder`].
    pub fn no_file_flush(mut self, on: bool) -> Self {
        self.config.no_file_flush = on;
        self
    }
    /// Streaming write interval (`flightrec_flush_interval_ms`); 0 counts as 1.
    ///
    /// ```
    /// use flightrec::xray::Config;
    /// assert_eq!(Config::builder().flush_interval_ms(0).build()?.flush_interval_ms, 1);
    /// assert_eq!(Config::builder().flush_interval_ms(25).build()?.flush_interval_ms, 25);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush_interval_ms(mut self, ms: u32) -> Self {
        self.config.flush_interval_ms = ms.max(1);
        self
    }
    /// Dump on fatal signals (`flightrec_fatal_signals`). Example on [`ConfigBuilder`].
    pub fn fatal_signals(mut self, on: bool) -> Self {
        self.config.fatal_signals = on;
        self
    }
    /// Dump on `SIGINT`/`SIGTERM` (`flightrec_dump_on_signal`). Example on
    /// [`ConfigBuilder`].
    pub fn dump_on_signal(mut self, on: bool) -> Self {
        self.config.dump_on_signal = on;
        self
    }
    /// CPU ids (`flightrec_cpu_ids`). Example on [`ConfigBuilder`].
    pub fn cpu_ids(mut self, choice: CpuIds) -> Self {
        self.config.cpu_ids = choice;
        self
    }
    /// The checked configuration. Example on [`ConfigBuilder`].
    pub fn build(self) -> Result<Config, ConfigError> {
        self.config.validate()?;
        Ok(self.config)
    }
}
