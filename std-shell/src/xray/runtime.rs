//! The process-wide runtime: what `init` set up and the counters, reached through
//! [`runtime`] once initialised.
//!
//! The other ideas live beside it: the state machine and the pause protocol
//! ([`super::state`]), the thread-ring claim ([`super::claim`]), writing the trace
//! ([`super::flush`]) and `init`/`shutdown` ([`super::lifecycle`]).

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use flightrec_core::fdr::header::HEADER_SIZE;
use flightrec_core::fdr::ring::Policy;
use flightrec_core::fdr::writer::Walltime;

use super::clock::Frequency;
use super::config::Config;
use super::output::RawFile;
use super::pool::{Pool, FREE};
use super::state::{PauseProtocol, Paused};

/// The runtime, once initialised; never dropped.
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Counters of the runtime. Totals over all threads since `init`.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::{Config, Mode, Stats};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // One thread with one 256-byte buffer: 25 function records fill it.
/// let config = Config::builder()
///     .logfile_base(base) // a file prefix in a temporary directory
///     .func_duration_threshold_us(0)
///     .buffer_size(256)
///     .buffer_max(1)
///     .thread_buffers(1)
///     .build()?;
/// flightrec::xray::init(config)?;
/// let f = FunctionId::new(1).unwrap();
/// for _ in 0..100 {
///     drop(flightrec::xray::enter(f));
/// }
/// // The second thread finds the pool empty and records nothing.
/// std::thread::spawn(move || drop(flightrec::xray::enter(f))).join().unwrap();
/// let stats: Stats = flightrec::xray::shutdown()?.stats;
/// assert_eq!((stats.threads, stats.threads_without_ring), (1, 1));
/// assert_eq!(stats.records_without_ring, 2);
/// assert!(stats.buffers_overwritten > 0); // the one buffer was reused
/// assert_eq!(stats.buffers_written, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Rings handed to threads (a recycled ring counts again).
    pub threads: u64,
    /// Threads that found no ring and record nothing.
    pub threads_without_ring: u64,
    /// Records lost: every kind below, plus what the rings dropped (streaming:
    /// the writer was behind; any mode: a record larger than a buffer).
    pub records_dropped: u64,
    /// Of those, records of threads without a ring.
    pub records_without_ring: u64,
    /// Of those, records attempted while a dump or flush paused recording, or from
    /// a signal handler that interrupted a record on the same thread.
    pub records_paused: u64,
    /// Of those, records in buffers that streaming's last drain could not write
    /// because the writer thread was stuck in a write for longer than
    /// `grace_period_ms`.
    pub records_unwritten: u64,
    /// Buffers written to files.
    pub buffers_written: u64,
    /// Flight recorder: buffers overwritten by newer ones before a dump.
    pub buffers_overwritten: u64,
    /// Flight recorder: rings of exited threads given to new threads.
    pub rings_recycled: u64,
}

pub(crate) struct Runtime {
    pub(crate) config: Config,
    pub(crate) frequency: Frequency,
    pub(super) pool: Pool,
    pub(super) policy: Policy,
    /// The process id in the records (a forked child's own, see `fork`).
    pub(super) pid: AtomicI32,
    /// Streaming, in a forked child: the trace belongs to the parent, and the
    /// child records nothing (`fork`).
    pub(super) forked_stream: AtomicBool,
    pub(super) threshold_ticks: u64,
    pub(super) epoch: Walltime,
    pub(super) epoch_tsc: u64,
    pub(super) header: [u8; HEADER_SIZE],
    pub(super) pause_protocol: PauseProtocol,
    /// Held while writing the streaming file.
    pub(super) file_lock: AtomicBool,
    /// Streaming: the writer thread was started and has not left its loop.
    pub(super) writer_active: AtomicBool,
    /// Streaming: asks the writer thread to leave its loop (the last drain is
    /// the shutdown's).
    pub(super) writer_stop: AtomicBool,
    /// Streaming: the writer thread's id (0 before it runs).
    pub(super) writer_tid: AtomicI32,
    /// Streaming: the open trace and its path.
    pub(super) stream: Option<(RawFile, PathBuf)>,
    /// Flight recorder: the name a fatal-signal dump will create (not yet created).
    pub(super) fatal_path: Option<(CString, PathBuf)>,
    /// Names file paths matching `stream` and `fatal_path`.
    pub(super) stream_names: Option<CString>,
    pub(super) fatal_names: Option<CString>,
    /// An output failed; the warning was printed.
    pub(super) broken: AtomicBool,
    /// The `errno` of the first failed write of the streaming trace (0: none).
    pub(super) write_errno: AtomicI32,
    /// The names file could not be rewritten (said once).
    pub(super) names_broken: AtomicBool,
    /// Streaming: the trace's path as a C string (renamed from a signal
    /// handler when it cannot be written).
    pub(super) stream_c: Option<CString>,
    /// `<trace>.incomplete` and its names file, for the trace this runtime
    /// writes from a signal handler or as a stream.
    pub(super) incomplete: Option<(CString, CString)>,
    /// Shutdown ran.
    pub(super) shut_down: AtomicBool,
    pub(super) orphan_seq: AtomicU64,
    pub(super) threads: AtomicU64,
    pub(super) threads_without_ring: AtomicU64,
    pub(super) records_without_ring: AtomicU64,
    pub(super) records_paused: AtomicU64,
    pub(super) records_unwritten: AtomicU64,
    pub(super) retired_dropped: AtomicU64,
    pub(super) buffers_written: AtomicU64,
    pub(super) retired_overwritten: AtomicU64,
    pub(super) rings_recycled: AtomicU64,
}

/// The runtime, once initialised. Lock-free; safe in a signal handler.
pub(crate) fn runtime() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// Makes `rt` the runtime; `None` if there already is one.
pub(super) fn install(rt: Runtime) -> Option<&'static Runtime> {
    RUNTIME.set(rt).ok()?;
    RUNTIME.get()
}

impl Runtime {
    /// A runtime for `config` over `pool` with no files and every counter at zero;
    /// `init` fills in the rest with struct-update syntax.
    pub(super) fn new(config: Config, frequency: Frequency, pool: Pool, policy: Policy) -> Self {
        Self {
            config,
            frequency,
            pool,
            policy,
            pid: AtomicI32::new(std::process::id() as i32),
            forked_stream: AtomicBool::new(false),
            threshold_ticks: 0,
            epoch: Walltime::default(),
            epoch_tsc: 0,
            header: [0; HEADER_SIZE],
            pause_protocol: PauseProtocol::new(),
            file_lock: AtomicBool::new(false),
            writer_active: AtomicBool::new(false),
            writer_stop: AtomicBool::new(false),
            writer_tid: AtomicI32::new(0),
            stream: None,
            fatal_path: None,
            stream_names: None,
            fatal_names: None,
            broken: AtomicBool::new(false),
            write_errno: AtomicI32::new(0),
            names_broken: AtomicBool::new(false),
            stream_c: None,
            incomplete: None,
            shut_down: AtomicBool::new(false),
            orphan_seq: AtomicU64::new(0),
            threads: AtomicU64::new(0),
            threads_without_ring: AtomicU64::new(0),
            records_without_ring: AtomicU64::new(0),
            records_paused: AtomicU64::new(0),
            records_unwritten: AtomicU64::new(0),
            retired_dropped: AtomicU64::new(0),
            buffers_written: AtomicU64::new(0),
            retired_overwritten: AtomicU64::new(0),
            rings_recycled: AtomicU64::new(0),
        }
    }

    pub(super) fn grace(&self) -> Duration {
        Duration::from_millis(u64::from(self.config.grace_period_ms))
    }

    /// Runs the pause protocol over every ring. `finish` ends recording for good.
    /// `None` when another reader did not finish within the grace period.
    /// Async-signal-safe.
    pub(super) fn pause(&self, finish: bool) -> Option<Paused<'_>> {
        self.pause_protocol
            .pause(&self.pool.rings, self.grace(), finish, None)
    }

    /// The pause protocol run by a signal handler on the thread it interrupted,
    /// whose own ring is not waited for. Async-signal-safe.
    pub(super) fn pause_interrupted(&self) -> Option<Paused<'_>> {
        self.pause_protocol.pause(
            &self.pool.rings,
            self.grace(),
            true,
            Some(super::claim::current_tid()),
        )
    }

    /// The counters. Exact once recording is paused or finished.
    pub(crate) fn stats(&self) -> Stats {
        let mut ring_dropped = 0u64;
        let mut overwritten = 0u64;
        for r in self.pool.rings.iter() {
            if r.state.load(Ordering::Acquire) == FREE && r.tid.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if r.lock_until(std::time::Instant::now() + Duration::from_millis(10)) {
                // SAFETY: reading the ring's atomic counters through the consumer,
                // under the lock (the consumer is not otherwise used).
                if let Some(c) = unsafe { r.consumer() } {
                    let s = c.stats();
                    ring_dropped += u64::from(s.records_dropped);
                    overwritten += u64::from(s.buffers_overwritten);
                }
                r.unlock();
            }
        }
        let without = self.records_without_ring.load(Ordering::Relaxed);
        let paused = self.records_paused.load(Ordering::Relaxed);
        let unwritten = self.records_unwritten.load(Ordering::Relaxed);
        Stats {
            threads: self.threads.load(Ordering::Relaxed),
            threads_without_ring: self.threads_without_ring.load(Ordering::Relaxed),
            records_dropped: self.retired_dropped.load(Ordering::Relaxed)
                + ring_dropped
                + without
                + paused
                + unwritten,
            records_without_ring: without,
            records_paused: paused,
            records_unwritten: unwritten,
            buffers_written: self.buffers_written.load(Ordering::Relaxed),
            buffers_overwritten: overwritten + self.retired_overwritten.load(Ordering::Relaxed),
            rings_recycled: self.rings_recycled.load(Ordering::Relaxed),
        }
    }
}
