//! The flag strings of compiler-rt's XRay runtime: `XRAY_OPTIONS` and
//! `XRAY_FDR_OPTIONS`.
//!
//! The grammar is that of compiler-rt's `sanitizer_common` flag parser: flags are
//! `name=value`, separated by any run of space, `,`, `:`, tab, CR or LF; a value may be
//! quoted with `'` or `"` to contain separators. Booleans are `0`/`no`/`false` or
//! `1`/`yes`/`true`; integers are decimal with an optional sign. A later occurrence of
//! a flag overrides an earlier one. Unknown names are collected (compiler-rt reports
//! them as "unrecognized flags") and do not stop parsing.
//!
//! Where compiler-rt is lenient in ways that produce nonsense, flightrec refuses the
//! string instead (see `docs/desktop-fdr.md`): an empty or out-of-range integer is an
//! error here, where compiler-rt reads `buffer_size=` as 0 and truncates
//! `buffer_max=99999999999` to 32 bits.
//!
//! ```
//! use flightrec::xray::options::{parse_flags, FdrFlags};
//! let mut flags = FdrFlags::default();
//! let unknown = parse_flags("buffer_size=4096:buffer_max=8 typo=1", "XRAY_FDR_OPTIONS", &mut flags).unwrap();
//! assert_eq!((flags.buffer_size, flags.buffer_max), (4096, 8));
//! assert_eq!(unknown, ["typo"]);
//! ```

use std::fmt;

/// Why a flag string was refused.
///
/// ```
/// use flightrec::xray::options::{parse_flags, split_flags, FdrFlags, FlagError};
/// assert_eq!(
///     split_flags("buffer_size", "XRAY_FDR_OPTIONS"),
///     Err(FlagError::ExpectedEquals { source: "XRAY_FDR_OPTIONS".into(), near: "buffer_size".into() })
/// );
/// let err = split_flags("xray_logfile_base='/tmp/x", "XRAY_OPTIONS").unwrap_err();
/// assert_eq!(err.to_string(), "unterminated string in XRAY_OPTIONS for flag 'xray_logfile_base'");
/// let err = parse_flags("buffer_max=many", "XRAY_FDR_OPTIONS", &mut FdrFlags::default()).unwrap_err();
/// assert!(matches!(err, FlagError::InvalidValue { ref flag, .. } if flag == "buffer_max"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlagError {
    /// A flag name not followed by `=` (compiler-rt: "expected '=' in XRAY_OPTIONS").
    ExpectedEquals {
        /// The variable or string being parsed.
        source: String,
        /// The text where `=` was expected.
        near: String,
    },
    /// A quoted value without its closing quote.
    UnterminatedString {
        /// The variable or string being parsed.
        source: String,
        /// The flag whose value is unterminated.
        flag: String,
    },
    /// A value of the wrong type or out of range for its flag.
    InvalidValue {
        /// The variable or string being parsed.
        source: String,
        /// The flag.
        flag: String,
        /// The value as written.
        value: String,
        /// What the flag accepts.
        expected: &'static str,
    },
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagError::ExpectedEquals { source, near } => {
                write!(f, "expected '=' in {source} near '{near}'")
            }
            FlagError::UnterminatedString { source, flag } => {
                write!(f, "unterminated string in {source} for flag '{flag}'")
            }
            FlagError::InvalidValue {
                source,
                flag,
                value,
                expected,
            } => write!(
                f,
                "invalid value '{value}' for {flag} in {source}: expected {expected}"
            ),
        }
    }
}

impl std::error::Error for FlagError {}

/// A set of flags a flag string can set.
///
/// ```
/// use flightrec::xray::options::{parse_flags, FlagError, FlagSet};
/// #[derive(Default)]
/// struct Mine {
///     depth: u32,
/// }
/// impl FlagSet for Mine {
///     fn set(&mut self, name: &str, value: &str) -> Option<Result<(), &'static str>> {
///         match name {
///             "depth" => Some(value.parse().map(|v| self.depth = v).map_err(|_| "a depth")),
///             _ => None,
///         }
///     }
/// }
/// let mut mine = Mine::default();
/// assert_eq!(parse_flags("depth=3 color=red", "MY_OPTIONS", &mut mine), Ok(vec!["color".to_owned()]));
/// assert_eq!(mine.depth, 3);
/// let err = parse_flags("depth=-1", "MY_OPTIONS", &mut mine).unwrap_err();
/// assert_eq!(err.to_string(), "invalid value '-1' for depth in MY_OPTIONS: expected a depth");
/// ```
pub trait FlagSet {
    /// Sets flag `name` from its textual `value`. Returns `None` when the name is not
    /// a flag of this set, `Some(Err(expected))` when the value is not valid for it.
    /// Example on [`FlagSet`].
    fn set(&mut self, name: &str, value: &str) -> Option<Result<(), &'static str>>;
}

fn is_separator(c: u8) -> bool {
    matches!(c, b' ' | b',' | b':' | b'\n' | b'\t' | b'\r')
}

/// Splits a flag string into `(name, value)` pairs with compiler-rt's rules.
///
/// ```
/// use flightrec::xray::options::split_flags;
/// let pairs = split_flags("a=1,b='x y':c=\"z\"", "X").unwrap();
/// assert_eq!(pairs, [("a", "1"), ("b", "x y"), ("c", "z")]);
/// ```
pub fn split_flags<'s>(text: &'s str, source: &str) -> Result<Vec<(&'s str, &'s str)>, FlagError> {
    let b = text.as_bytes();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < b.len() && is_separator(b[pos]) {
            pos += 1;
        }
        if pos == b.len() {
            return Ok(out);
        }
        let name_start = pos;
        while pos < b.len() && b[pos] != b'=' && !is_separator(b[pos]) {
            pos += 1;
        }
        if pos == b.len() || b[pos] != b'=' {
            return Err(FlagError::ExpectedEquals {
                source: source.to_owned(),
                near: text[name_start..pos].to_owned(),
            });
        }
        let name = &text[name_start..pos];
        pos += 1;
        let value = if pos < b.len() && (b[pos] == b'\'' || b[pos] == b'"') {
            let quote = b[pos];
            let start = pos + 1;
            let Some(len) = b[start..].iter().position(|&c| c == quote) else {
                return Err(FlagError::UnterminatedString {
                    source: source.to_owned(),
                    flag: name.to_owned(),
                });
            };
            pos = start + len + 1;
            &text[start..start + len]
        } else {
            let start = pos;
            while pos < b.len() && !is_separator(b[pos]) {
                pos += 1;
            }
            &text[start..pos]
        };
        out.push((name, value));
    }
}

/// Parses `text` into `flags`; returns the names that are not flags of the set.
/// A later occurrence of a flag overrides an earlier one; the first bad value
/// stops parsing.
///
/// ```
/// use flightrec::xray::options::{parse_flags, XRayFlags};
/// let mut flags = XRayFlags::default();
/// let unknown = parse_flags("verbosity=1 xray_mode=xray-fdr verbosity=2 colour=1", "XRAY_OPTIONS", &mut flags)?;
/// assert_eq!(unknown, ["colour"]);
/// assert_eq!((flags.verbosity, flags.xray_mode.as_str()), (2, "xray-fdr"));
/// assert!(parse_flags("patch_premain=maybe", "XRAY_OPTIONS", &mut flags).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_flags<F: FlagSet>(
    text: &str,
    source: &str,
    flags: &mut F,
) -> Result<Vec<String>, FlagError> {
    let mut unknown = Vec::new();
    for (name, value) in split_flags(text, source)? {
        match flags.set(name, value) {
            None => unknown.push(name.to_owned()),
            Some(Ok(())) => {}
            Some(Err(expected)) => {
                return Err(FlagError::InvalidValue {
                    source: source.to_owned(),
                    flag: name.to_owned(),
                    value: value.to_owned(),
                    expected,
                })
            }
        }
    }
    Ok(unknown)
}

/// compiler-rt's boolean spellings.
fn parse_bool(v: &str) -> Result<bool, &'static str> {
    match v {
        "0" | "no" | "false" => Ok(false),
        "1" | "yes" | "true" => Ok(true),
        _ => Err("a boolean (0, no, false, 1, yes, true)"),
    }
}

/// A decimal integer with an optional sign, as compiler-rt's `internal_simple_strtoll`
/// reads it, but refused when empty or outside `i32` (compiler-rt stores flags in
/// `int` and truncates).
fn parse_int(v: &str) -> Result<i32, &'static str> {
    const EXPECTED: &str = "a decimal integer that fits 32 bits";
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(EXPECTED);
    }
    v.parse::<i32>().map_err(|_| EXPECTED)
}

fn parse_uptr(v: &str) -> Result<u64, &'static str> {
    const EXPECTED: &str = "a non-negative decimal integer";
    let digits = v.strip_prefix('+').unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(EXPECTED);
    }
    digits.parse::<u64>().map_err(|_| EXPECTED)
}

trait FlagValue: Sized {
    fn parse_flag(v: &str) -> Result<Self, &'static str>;
}
impl FlagValue for bool {
    fn parse_flag(v: &str) -> Result<Self, &'static str> {
        parse_bool(v)
    }
}
impl FlagValue for i32 {
    fn parse_flag(v: &str) -> Result<Self, &'static str> {
        parse_int(v)
    }
}
impl FlagValue for u64 {
    fn parse_flag(v: &str) -> Result<Self, &'static str> {
        parse_uptr(v)
    }
}
impl FlagValue for String {
    fn parse_flag(v: &str) -> Result<Self, &'static str> {
        Ok(v.to_owned())
    }
}

/// Declares a flag set: the struct, its defaults and its [`FlagSet`] impl.
macro_rules! flag_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $default:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default.into(), )* }
            }
        }

        impl FlagSet for $name {
            fn set(&mut self, name: &str, value: &str) -> Option<Result<(), &'static str>> {
                match name {
                    $( stringify!($field) => Some(
                        <$ty as FlagValue>::parse_flag(value).map(|v| self.$field = v)
                    ), )*
                    _ => None,
                }
            }
        }
    };
}

flag_set! {
    /// The flags of `XRAY_OPTIONS` (compiler-rt's `xray_flags.inc`, plus the common
    /// `verbosity` flag), with compiler-rt's defaults.
    ///
    /// ```
    /// use flightrec::xray::options::XRayFlags;
    /// let f = XRayFlags::default();
    /// assert_eq!(f.xray_logfile_base, "xray-log.");
    /// assert!(!f.patch_premain);
    /// ```
    pub struct XRayFlags {
        /// Start recording at initialisation (compiler-rt: patch the sleds before `main`).
        patch_premain: bool = false,
        /// Prefix of the output file name, directory included.
        xray_logfile_base: String = "xray-log.",
        /// The mode to install; flightrec implements `xray-fdr`.
        xray_mode: String = "",
        /// Page size override; accepted and ignored (flightrec does not patch code).
        xray_page_size_override: u64 = 0u64,
        /// Deprecated basic-mode switch; accepted, basic mode is not implemented.
        xray_naive_log: bool = false,
        /// Deprecated basic-mode threshold; accepted and ignored.
        xray_naive_log_func_duration_threshold_us: i32 = 5,
        /// Deprecated basic-mode depth; accepted and ignored.
        xray_naive_log_max_stack_depth: i32 = 64,
        /// Deprecated basic-mode buffer; accepted and ignored.
        xray_naive_log_thread_buffer_size: i32 = 1024,
        /// Deprecated: `true` selects FDR mode like `xray_mode=xray-fdr`.
        xray_fdr_log: bool = false,
        /// Deprecated: the threshold used when `XRAY_FDR_OPTIONS` is empty.
        xray_fdr_log_func_duration_threshold_us: i32 = 5,
        /// Deprecated and unused, as in compiler-rt.
        xray_fdr_log_grace_period_us: i32 = 0,
        /// Deprecated: the grace period used when `XRAY_FDR_OPTIONS` is empty.
        xray_fdr_log_grace_period_ms: i32 = 100,
        /// Messages on stderr: 0 none but errors, 1 file names and summaries, 2 more.
        verbosity: i32 = 0,
    }
}

flag_set! {
    /// The flags of `XRAY_FDR_OPTIONS` (compiler-rt's `xray_fdr_flags.inc`, same
    /// defaults), plus flightrec's own flags, all named `flightrec_*`.
    ///
    /// ```
    /// use flightrec::xray::options::FdrFlags;
    /// let f = FdrFlags::default();
    /// assert_eq!((f.buffer_size, f.buffer_max, f.func_duration_threshold_us), (16384, 100, 5));
    /// assert_eq!(f.flightrec_mode, "flight-recorder");
    /// ```
    pub struct FdrFlags {
        /// Entry/exit pairs shorter than this are erased from the trace.
        func_duration_threshold_us: i32 = 5,
        /// How long a flush waits for threads still inside a record.
        grace_period_ms: i32 = 100,
        /// Bytes per buffer.
        buffer_size: i32 = 16384,
        /// Buffers in the process-wide pool.
        buffer_max: i32 = 100,
        /// Record, but never write files.
        no_file_flush: bool = false,
        /// flightrec: `flight-recorder` (keep the newest buffers, write at exit, on
        /// demand and on a fatal signal) or `streaming` (a thread writes buffers as
        /// they fill).
        flightrec_mode: String = "flight-recorder",
        /// flightrec: buffers of each thread's ring; 0: `buffer_max`, with a
        /// ring for each of up to `buffer_max` threads (at most 128).
        flightrec_thread_buffers: i32 = 0,
        /// flightrec: streaming mode writes finished buffers this often.
        flightrec_flush_interval_ms: i32 = 10,
        /// flightrec: write the trace when the process dies of SIGSEGV, SIGBUS,
        /// SIGILL, SIGFPE or SIGABRT.
        flightrec_fatal_signals: bool = true,
        /// flightrec: also write the trace on SIGINT and SIGTERM (where the
        /// program does not handle them), then end the process by the signal.
        flightrec_dump_on_signal: bool = false,
        /// flightrec: record CPU ids with `rdtscp`: `auto` (when it is cheap), or a
        /// boolean.
        flightrec_cpu_ids: String = "auto",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_and_quotes() {
        let p = split_flags("  a=1,,b=2:c=3\td=4\ne=5\rf='x,y:z' g=\"q'q\"  ", "S").unwrap();
        assert_eq!(
            p,
            [
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4"),
                ("e", "5"),
                ("f", "x,y:z"),
                ("g", "q'q")
            ]
        );
        assert_eq!(split_flags("", "S").unwrap(), []);
        assert_eq!(split_flags("a=", "S").unwrap(), [("a", "")]);
    }

    #[test]
    fn grammar_errors() {
        assert!(matches!(
            split_flags("a=1 b", "XRAY_OPTIONS"),
            Err(FlagError::ExpectedEquals { near, .. }) if near == "b"
        ));
        assert!(matches!(
            split_flags("a='open", "S"),
            Err(FlagError::UnterminatedString { flag, .. }) if flag == "a"
        ));
    }

    #[test]
    fn values() {
        assert_eq!(parse_bool("yes"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert!(parse_bool("on").is_err());
        assert_eq!(parse_int("-5"), Ok(-5));
        assert_eq!(parse_int("+7"), Ok(7));
        assert!(parse_int("").is_err());
        assert!(parse_int("12k").is_err());
        assert!(parse_int("99999999999").is_err());
        assert_eq!(parse_uptr("4096"), Ok(4096));
        assert!(parse_uptr("-1").is_err());
    }
}
