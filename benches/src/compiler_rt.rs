//! Builds and runs the compiler-rt side of the comparison: `compare/xray-c/xray_loop.c`,
//! the comparison's loop in C with its called function instrumented by LLVM XRay
//! (clang-14 with `-fxray-instrument`, runtime from Debian's `libclang-rt-14-dev`).
//!
//! FDR mode is set up as LLVM 14 needs it: `XRAY_OPTIONS` selects `xray-fdr` and
//! patches the sleds before `main`; the program calls `__xray_log_init_mode`,
//! and `__xray_log_finalize` plus `__xray_log_flushLog` at the end, which write
//! the trace file. The FDR options match the flightrec ring of the Rust rows: 8
//! buffers of 64 KiB, reused oldest first, and every record kept (no duration
//! threshold, so compiler-rt does not erase short calls).
//!
//! ```no_run
//! use flightrec_benches::compiler_rt::XrayLoop;
//! let dir = std::env::temp_dir();
//! let prog = XrayLoop::build(&dir).expect("clang-14 and libclang-rt-14-dev");
//! let run = prog.run_fdr(10_000, 3, &dir).unwrap();
//! println!("{:?} ns per call, trace in {}", run.ns_per_call, run.trace.display());
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C source of the instrumented loop.
pub const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/compare/xray-c/xray_loop.c");

/// The compiler: XRay's runtime must match the compiler's version.
pub const CLANG: &str = "clang-14";

/// `XRAY_FDR_OPTIONS` of the FDR runs (see the module docs): the buffers of
/// [`ring_setup`](crate::ring_setup), no duration threshold, no grace period.
///
/// ```
/// assert_eq!(
///     flightrec_benches::compiler_rt::fdr_options(),
///     "func_duration_threshold_us=0 buffer_size=65536 buffer_max=8 grace_period_ms=0"
/// );
/// ```
pub fn fdr_options() -> String {
    use crate::ring_setup::{BUFFER, BUFFERS};
    format!(
        "func_duration_threshold_us=0 buffer_size={BUFFER} buffer_max={BUFFERS} grace_period_ms=0"
    )
}

/// Why the program could not be built or run.
#[derive(Debug)]
pub enum Error {
    /// The compiler is not installed.
    NoCompiler(std::io::Error),
    /// The compiler or the program failed; the message says how.
    Failed(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoCompiler(e) => write!(f, "{CLANG} not runnable ({e})"),
            Error::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// The built program.
#[derive(Clone, Debug)]
pub struct XrayLoop {
    path: PathBuf,
}

/// The result of an FDR run: timings and the trace file compiler-rt wrote.
#[derive(Clone, Debug)]
pub struct FdrRun {
    /// Nanoseconds per call, one value per batch.
    pub ns_per_call: Vec<f64>,
    /// The FDR trace written at the flush.
    pub trace: PathBuf,
}

impl XrayLoop {
    /// Compiles [`SOURCE`] into `out_dir` with [`CLANG`].
    pub fn build(out_dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(out_dir).map_err(|e| Error::Failed(e.to_string()))?;
        let path = out_dir.join("xray_loop");
        let out = Command::new(CLANG)
            .args([
                "-O2",
                "-fxray-instrument",
                "-fno-omit-frame-pointer",
                SOURCE,
                "-o",
            ])
            .arg(&path)
            .output()
            .map_err(Error::NoCompiler)?;
        if !out.status.success() {
            return Err(Error::Failed(format!(
                "{CLANG} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(XrayLoop { path })
    }

    /// The executable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs the loop with the sleds unpatched: the cost of the call alone.
    pub fn run_baseline(&self, calls: u64, batches: u32) -> Result<Vec<f64>, Error> {
        let mut cmd = Command::new(&self.path);
        cmd.args(["off", &calls.to_string(), &batches.to_string()])
            .env("XRAY_OPTIONS", "patch_premain=false")
            .env_remove("XRAY_FDR_OPTIONS");
        run(cmd, batches)
    }

    /// Runs the loop in FDR mode; the trace goes to a new file in `log_dir`.
    pub fn run_fdr(&self, calls: u64, batches: u32, log_dir: &Path) -> Result<FdrRun, Error> {
        std::fs::create_dir_all(log_dir).map_err(|e| Error::Failed(e.to_string()))?;
        let base = log_dir.join(format!("xray-{}-", std::process::id()));
        let before = traces(&base);
        let mut cmd = Command::new(&self.path);
        cmd.args(["fdr", &calls.to_string(), &batches.to_string()])
            .env(
                "XRAY_OPTIONS",
                format!(
                    "patch_premain=true xray_mode=xray-fdr verbosity=0 xray_logfile_base={}",
                    base.display()
                ),
            )
            .env("XRAY_FDR_OPTIONS", fdr_options());
        let ns_per_call = run(cmd, batches)?;
        let trace = traces(&base)
            .into_iter()
            .find(|t| !before.contains(t))
            .ok_or_else(|| Error::Failed("compiler-rt wrote no trace file".to_owned()))?;
        Ok(FdrRun { ns_per_call, trace })
    }
}

/// Trace files whose path starts with `base` (compiler-rt appends the program
/// name and a random suffix).
fn traces(base: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(prefix)) = (base.parent(), base.file_name()) else {
        return Vec::new();
    };
    let prefix = prefix.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn run(mut cmd: Command, batches: u32) -> Result<Vec<f64>, Error> {
    let out = cmd
        .output()
        .map_err(|e| Error::Failed(format!("cannot run {:?}: {e}", cmd.get_program())))?;
    if !out.status.success() {
        return Err(Error::Failed(format!(
            "{:?} failed ({}): {}",
            cmd.get_program(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse_batches(&String::from_utf8_lossy(&out.stdout), batches).map_err(Error::Failed)
}

/// Parses a subject's output: one number (ns per call) per line, `batches` lines.
///
/// ```
/// use flightrec_benches::compiler_rt::parse_batches;
/// assert_eq!(parse_batches("1.5\n2.25\n", 2), Ok(vec![1.5, 2.25]));
/// assert!(parse_batches("1.5\n", 2).is_err());
/// ```
pub fn parse_batches(stdout: &str, batches: u32) -> Result<Vec<f64>, String> {
    let values = stdout
        .lines()
        .map(|l| {
            l.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("not a time per call: {l:?}"))
        })
        .collect::<Result<Vec<f64>, String>>()?;
    if values.len() != batches as usize {
        return Err(format!(
            "expected {batches} batch times, got {}",
            values.len()
        ));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rejects_garbage_negative_and_wrong_counts() {
        assert!(parse_batches("abc\n", 1).is_err());
        assert!(parse_batches("-1\n", 1).is_err());
        assert!(parse_batches("NaN\n", 1).is_err());
        assert!(parse_batches("1\n2\n3\n", 2).is_err());
        assert_eq!(parse_batches(" 7 \n", 1), Ok(vec![7.0]));
    }

    #[test]
    fn source_is_in_the_repository() {
        assert!(Path::new(SOURCE).is_file(), "{SOURCE}");
    }
}
