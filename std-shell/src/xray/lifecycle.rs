//! Starting and ending the runtime: `init` (pool, files, writer thread, exit hook,
//! fatal-signal handler) and `shutdown` (the last dump and the report).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::writer::{Walltime, WriterConfig};
use flightrec_core::fdr::HeaderFlags;

use super::clock;
use super::config::{Config, Mode};
use super::flush::{write_names_file, writer_loop};
use super::names;
use super::output::{self, incomplete_path, names_path, reason, RawFile};
use super::pool::Pool;
use super::runtime::{install, runtime, Runtime, Stats};
use super::signal;
use super::state::{ARMED, FINISHED, RECORDING, STATE};
use super::Error;

/// Serialises `init`.
static INIT: Mutex<()> = Mutex::new(());

fn now_walltime() -> Walltime {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    Walltime {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        micros: d.subsec_micros(),
    }
}

/// The pool `config` asks for. The default layout (`thread_buffers` 0)
/// reserves far more address space than a program fills; where the system
/// refuses it (`ulimit -v`), half as many rings are tried, down to one ring
/// of `buffer_max` buffers (compiler-rt's whole pool), and one line says so.
fn reserve_pool(config: &Config, buffer_size: usize) -> Result<Pool, Error> {
    let (wanted, per_ring) = config.rings();
    let mut rings = wanted;
    loop {
        match Pool::new(rings, per_ring, buffer_size) {
            Ok(pool) => {
                if rings < wanted {
                    eprintln!(
                        "XRay: flightrec: {rings} thread rings of {per_ring} buffers instead of {wanted}: \
                         the system refused {} bytes; more threads than that record nothing, counted at exit",
                        wanted.saturating_mul(per_ring * buffer_size)
                    );
                }
                return Ok(pool);
            }
            Err(()) if config.thread_buffers == 0 && rings > 1 => rings /= 2,
            Err(()) => {
                return Err(Error::OutOfMemory(
                    rings.saturating_mul(per_ring * buffer_size),
                ))
            }
        }
    }
}

/// Initialises the runtime with `config`. See [`super::init`].
pub(crate) fn init(config: Config) -> Result<(), Error> {
    config.validate().map_err(Error::Config)?;
    let _g = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if runtime().is_some() {
        return Err(Error::AlreadyInitialized);
    }
    let frequency = clock::measure_frequency();
    let cpu_ids = clock::select_cpu_ids(config.cpu_ids);
    let buffer_size = config.buffer_size & !7;
    let pool = reserve_pool(&config, buffer_size)?;
    let policy = match config.mode {
        Mode::FlightRecorder => Policy::FlightRecorder,
        Mode::Streaming => Policy::Streaming,
    };
    let threshold_ticks = (u128::from(config.func_duration_threshold_us)
        * u128::from(frequency.hz.get())
        / 1_000_000)
        .min(u128::from(u64::MAX)) as u64;
    // The wall clock and the TSC read together: every thread's recorder starts
    // from them, and the header keeps the wall-clock time at TSC 0 they give.
    let epoch_tsc = clock::now().tsc;
    let epoch = now_walltime();
    let header_cfg =
        RecorderConfig::new(WriterConfig::new(0), frequency.hz.get()).with_epoch(epoch, epoch_tsc);
    // Every file ends with an end block: one cut short between two buffers
    // (a full disk, a crash) is then known to be incomplete.
    let header = header_cfg
        .file_header(buffer_size)
        .with_flags(HeaderFlags::END_BLOCK)
        .to_bytes();
    let prefix = format!("{}{}.", config.logfile_base, output::program_name());

    let mut stream = None;
    let mut stream_names = None;
    let mut fatal_path = None;
    let mut fatal_names = None;
    let mut incomplete = None;
    if !config.no_file_flush {
        let path = match config.mode {
            Mode::Streaming => {
                let (file, path) = RawFile::create_unique(&prefix).map_err(|e| {
                    Error::Io(format!(
                        "cannot create '{prefix}XXXXXX': {}",
                        reason(e.raw_os_error().unwrap_or(libc::EIO))
                    ))
                })?;
                let cannot = |what: &Path, e| {
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::remove_file(names_path(&path));
                    Error::Io(format!("cannot write '{}': {}", what.display(), reason(e)))
                };
                file.write_all(&header).map_err(|e| cannot(&path, e))?;
                // The names file exists from the start (and is kept current by
                // the writer thread), so a killed process leaves a pair.
                let names = names_path(&path);
                stream_names = output::c_path(&names);
                if let Some(c) = &stream_names {
                    write_names_file(c).map_err(|e| cannot(&names, e))?;
                }
                stream = Some((file, path.clone()));
                path
            }
            Mode::FlightRecorder => {
                let path = output::reserve_unique_name(&prefix);
                check_writable_dir(&path);
                fatal_names = output::c_path(&names_path(&path));
                fatal_path = output::c_path(&path).map(|c| (c, path.clone()));
                path
            }
        };
        let cut = incomplete_path(&path);
        incomplete = output::c_path(&cut).zip(output::c_path(&names_path(&cut)));
    }
    let stream_c = stream.as_ref().and_then(|(_, p)| output::c_path(p));
    let rt = Runtime {
        threshold_ticks,
        epoch,
        epoch_tsc,
        header,
        stream,
        fatal_path,
        stream_names,
        fatal_names,
        stream_c,
        incomplete,
        ..Runtime::new(config, frequency, pool, policy)
    };
    let rt = install(rt).ok_or(Error::AlreadyInitialized)?;
    if rt.config.verbosity >= 1 {
        eprintln!(
            "XRay: flightrec FDR {} mode, {} thread rings of {} x {} bytes, clock {} Hz ({:?}), CPU ids {}",
            rt.config.mode.name(),
            rt.pool.rings.len(),
            rt.pool.per_ring,
            buffer_size,
            rt.frequency.hz,
            rt.frequency.source,
            if cpu_ids { "on" } else { "off" }
        );
        if let Some((_, p)) = &rt.stream {
            eprintln!("XRay: Log file in '{}'", p.display());
        }
    }
    if rt.config.mode == Mode::Streaming {
        // Active from before the thread runs, so that a shutdown right after
        // `init` waits for it to start and leave.
        rt.writer_active.store(true, Ordering::Release);
        let spawned = std::thread::Builder::new()
            .name("flightrec-xray-writer".into())
            .spawn(move || writer_loop(rt));
        if let Err(e) = spawned {
            rt.writer_active.store(false, Ordering::Release);
            rt.disable(&format!("cannot start the writer thread: {e}"));
            return Err(Error::Io(format!("cannot start the writer thread: {e}")));
        }
    }
    // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
    unsafe { libc::atexit(at_exit) };
    super::fork::register();
    if rt.config.fatal_signals || rt.config.dump_on_signal {
        signal::install(
            on_fatal_signal,
            signal::Handled {
                faults: rt.config.fatal_signals,
                termination: rt.config.dump_on_signal,
            },
        );
    }
    STATE.store(
        if rt.config.patch_premain {
            RECORDING
        } else {
            ARMED
        },
        Ordering::SeqCst,
    );
    Ok(())
}

extern "C" fn at_exit() {
    // Unwinding out of an `extern "C"` function aborts; nothing here panics, but a
    // panic must not turn a normal exit into an abort.
    // `shutdown` says what went wrong itself.
    let _ = std::panic::catch_unwind(shutdown);
}

/// A flight recorder writes its trace at exit, on demand or from a signal
/// handler: say at once when its directory cannot take a file, rather than
/// only when the trace is lost. The test is the real one: the trace's reserved
/// name is created (exclusively) and removed again, so the reason is the one
/// the dump would meet (`Not a directory` under a regular file, a file system
/// such as `/proc` that takes no new file), not a guess from permission bits.
fn check_writable_dir(trace: &Path) {
    let dir = match trace.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(c) = output::c_path(trace) else {
        return;
    };
    // SAFETY: a NUL-terminated path; the descriptor is closed at once.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd >= 0 {
        // SAFETY: the descriptor just opened and the file just created.
        unsafe {
            libc::close(fd);
            libc::unlink(c.as_ptr());
        }
        return;
    }
    let e = output::last_errno();
    let _ = writeln!(
        std::io::stderr().lock(),
        "XRay: flightrec: cannot write traces to '{}': {}",
        dir.display(),
        reason(e)
    );
}

/// What a fatal signal does (registered with the signal handler by `init`).
fn on_fatal_signal() {
    if let Some(rt) = runtime() {
        rt.fatal_dump();
    }
}

/// What [`super::shutdown`] reports.
///
/// ```
/// use flightrec::xray::{Config, Report};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// flightrec::xray::init(Config::builder().logfile_base(base).build()?)?; // base: a temp dir
/// // Nothing recorded: a flight recorder writes no file.
/// let report: Report = flightrec::xray::shutdown()?;
/// assert_eq!((report.path, report.names_path), (None, None));
/// assert_eq!(report.stats.threads, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The trace file, if one was written.
    pub path: Option<PathBuf>,
    /// Its names file (none for a program traced through XRay sleds whose
    /// functions have no names: the program is its own map).
    pub names_path: Option<PathBuf>,
    /// Final counters.
    pub stats: Stats,
}

/// See [`super::shutdown`]. A trace that could not be written is also said on
/// stderr, since a program may not look at the result (and the exit hook then
/// finds the runtime shut down).
pub(crate) fn shutdown() -> Result<Report, Error> {
    let result = finish();
    match &result {
        Ok(_) | Err(Error::NotInitialized | Error::AlreadyShutDown) => {}
        // A streaming trace that failed said so when it failed.
        Err(_) if runtime().is_some_and(|rt| rt.broken.load(Ordering::Relaxed)) => {}
        Err(e) => {
            // Not eprintln!: a closed stderr must not panic here.
            let _ = writeln!(std::io::stderr().lock(), "XRay: flightrec: {e}");
        }
    }
    result
}

/// The work of [`shutdown`].
fn finish() -> Result<Report, Error> {
    let rt = runtime().ok_or(Error::NotInitialized)?;
    if rt.shut_down.swap(true, Ordering::SeqCst) {
        return Err(Error::AlreadyShutDown);
    }
    if let Some(note) = rt.forked_stream_note() {
        let _ = writeln!(std::io::stderr().lock(), "{note}");
        return Ok(Report {
            path: None,
            names_path: None,
            stats: Stats::default(),
        });
    }
    let path = if rt.config.no_file_flush {
        let paused = rt.pause(true);
        drop(paused);
        rt.drain();
        None
    } else {
        match rt.config.mode {
            Mode::FlightRecorder => {
                let p = rt.dump_flight_recorder();
                STATE.store(FINISHED, Ordering::SeqCst);
                p?
            }
            Mode::Streaming => {
                let p = rt.dump_streaming(true)?;
                if rt.buffers_written.load(Ordering::Relaxed) == 0 {
                    // A file with a header and no buffer is invalid for llvm-xray.
                    if let Some(p) = &p {
                        let _ = std::fs::remove_file(p);
                        let _ = std::fs::remove_file(names_path(p));
                    }
                    None
                } else {
                    p
                }
            }
        }
    };
    STATE.store(FINISHED, Ordering::SeqCst);
    let stats = rt.stats();
    if rt.config.verbosity == 0 && (stats.records_dropped > 0 || stats.buffers_overwritten > 0) {
        // What the trace lacks is said whatever the verbosity (compiler-rt
        // says nothing); `verbosity=1` gives the whole summary below.
        let _ = writeln!(
            std::io::stderr().lock(),
            "XRay: flightrec: the trace lacks records: {} buffers overwritten by newer ones, {} records dropped ({} of threads without a ring); flightrec_thread_buffers and buffer_max keep more",
            stats.buffers_overwritten,
            stats.records_dropped,
            stats.records_without_ring
        );
    }
    if rt.config.verbosity >= 1 {
        match &path {
            Some(p) if names::names_file_wanted() => eprintln!(
                "XRay: flightrec: wrote '{}' ({} buffers); names in '{}'",
                p.display(),
                stats.buffers_written,
                names_path(p).display()
            ),
            Some(p) => eprintln!(
                "XRay: flightrec: wrote '{}' ({} buffers)",
                p.display(),
                stats.buffers_written
            ),
            None => {
                eprintln!("XRay: flightrec: no trace written (nothing recorded or no_file_flush)")
            }
        }
        eprintln!(
            "XRay: flightrec: {} threads, {} records dropped ({} without a ring, {} while paused, {} unwritten at the end), {} buffers overwritten",
            stats.threads,
            stats.records_dropped,
            stats.records_without_ring,
            stats.records_paused,
            stats.records_unwritten,
            stats.buffers_overwritten
        );
    }
    Ok(Report {
        // See `write_names_file`.
        names_path: path
            .as_deref()
            .filter(|_| names::names_file_wanted())
            .map(names_path),
        path,
        stats,
    })
}
