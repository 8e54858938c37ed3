//! The process-wide runtime: state, thread rings, the pause protocol, file output.
//!
//! # States
//!
//! `OFF` (not initialised) → `ARMED` (initialised, not recording) ⇄ `RECORDING`;
//! `PAUSED` while a dump or flush reads other threads' rings; `FINISHED` after
//! shutdown, a fatal signal or a broken output. Every record starts with one relaxed
//! load of the state and returns at once unless it is `RECORDING`.
//!
//! # Pause protocol
//!
//! A recording thread owns its ring's recorder and uses it without locks. To read
//! or flush another thread's recorder (dump, shutdown, fatal signal), the reader:
//!
//! 1. stores `PAUSED` (or `FINISHED`) in the state;
//! 2. runs a process-wide memory barrier (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`
//!    on Linux; where that is missing it sleeps 1 ms, which is what compiler-rt's
//!    grace period relies on);
//! 3. waits, at most `grace_period_ms`, for every live ring's `busy` flag to clear.
//!
//! A recording thread sets `busy`, then (after a compiler barrier) reads the state
//! again and records only if it is still `RECORDING`. With the barrier of step 2
//! this is Dekker's protocol: either the thread sees the pause, or the reader sees
//! `busy`. A ring still busy after the grace period is left unread.

use std::ffi::CString;
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flightrec_core::fdr::header::HEADER_SIZE;
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::writer::{Walltime, WriterConfig};

use super::clock::{self, Frequency};
use super::config::{Config, Mode};
use super::names::{self, Sink};
use super::output::{self, FdSink, RawFile, NAMES_SUFFIX};
use super::pool::{Pool, ThreadRing, FREE, LIVE, ORPHAN};
use super::Error;

pub(crate) const OFF: u8 = 0;
pub(crate) const ARMED: u8 = 1;
pub(crate) const RECORDING: u8 = 2;
pub(crate) const PAUSED: u8 = 3;
pub(crate) const FINISHED: u8 = 4;

/// The runtime's state; the one load every record starts with.
pub(crate) static STATE: AtomicU8 = AtomicU8::new(OFF);
/// The runtime, once initialised (leaked; never freed).
static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
/// Serialises `init`.
static INIT: Mutex<()> = Mutex::new(());

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
    pool: Pool,
    policy: Policy,
    pid: i32,
    threshold_ticks: u64,
    epoch: Walltime,
    epoch_tsc: u64,
    header: [u8; HEADER_SIZE],
    /// `membarrier` is registered and works.
    membarrier: bool,
    /// Held by the one reader running the pause protocol at a time.
    reader: AtomicBool,
    /// Held while writing the streaming file.
    file_lock: AtomicBool,
    /// Streaming: the open trace and its path.
    stream: Option<(RawFile, PathBuf)>,
    /// Flight recorder: the name a fatal-signal dump will create (not yet created).
    fatal_path: Option<(CString, PathBuf)>,
    /// Names file paths matching `stream` and `fatal_path`.
    stream_names: Option<CString>,
    fatal_names: Option<CString>,
    /// An output failed; the warning was printed.
    broken: AtomicBool,
    /// Shutdown ran.
    shut_down: AtomicBool,
    orphan_seq: AtomicU64,
    threads: AtomicU64,
    threads_without_ring: AtomicU64,
    records_without_ring: AtomicU64,
    records_paused: AtomicU64,
    retired_dropped: AtomicU64,
    buffers_written: AtomicU64,
    retired_overwritten: AtomicU64,
    rings_recycled: AtomicU64,
}

pub(crate) fn runtime() -> Option<&'static Runtime> {
    let p = RUNTIME.load(Ordering::Acquire);
    // SAFETY: set once to a leaked `Box<Runtime>`, never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

fn now_walltime() -> Walltime {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    Walltime {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        micros: d.subsec_micros(),
    }
}

#[cfg(target_os = "linux")]
fn register_membarrier() -> bool {
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;
    // SAFETY: `membarrier` takes two integer arguments and touches no memory.
    unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0) == 0 }
}
#[cfg(not(target_os = "linux"))]
fn register_membarrier() -> bool {
    false
}

/// Makes every thread's earlier stores visible to the caller's later loads
/// (step 2 of the pause protocol). Async-signal-safe.
fn heavy_barrier(membarrier: bool) {
    std::sync::atomic::fence(Ordering::SeqCst);
    #[cfg(target_os = "linux")]
    if membarrier {
        const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
        // SAFETY: as in `register_membarrier`.
        if unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0) } == 0 {
            return;
        }
    }
    let _ = membarrier;
    // No process-wide barrier: give store buffers far more time than they need.
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: `nanosleep` reads `ts`; a null remainder is allowed.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

#[cfg(target_os = "linux")]
pub(crate) fn current_tid() -> i32 {
    // SAFETY: `gettid` has no preconditions.
    unsafe { libc::gettid() }
}
#[cfg(not(target_os = "linux"))]
pub(crate) fn current_tid() -> i32 {
    static NEXT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Initialises the runtime with `config`. See [`super::init`].
pub(crate) fn init(config: Config) -> Result<(), Error> {
    config.validate().map_err(Error::Config)?;
    let _g = INIT.lock().unwrap_or_else(|e| e.into_inner());
    if !RUNTIME.load(Ordering::Acquire).is_null() {
        return Err(Error::AlreadyInitialized);
    }
    let frequency = clock::measure_frequency();
    let cpu_ids = clock::select_cpu_ids(config.cpu_ids);
    let buffer_size = config.buffer_size & !7;
    let rings = config.buffer_max / config.thread_buffers;
    let pool = Pool::new(rings, config.thread_buffers, buffer_size)
        .map_err(|()| Error::OutOfMemory(config.buffer_max * buffer_size))?;
    let policy = match config.mode {
        Mode::FlightRecorder => Policy::FlightRecorder,
        Mode::Streaming => Policy::Streaming,
    };
    let threshold_ticks = (u128::from(config.func_duration_threshold_us)
        * u128::from(frequency.hz.get())
        / 1_000_000)
        .min(u128::from(u64::MAX)) as u64;
    let header_cfg = RecorderConfig::new(WriterConfig::new(0), frequency.hz.get());
    let header = header_cfg.file_header(buffer_size).to_bytes();
    let prefix = format!("{}{}.", config.logfile_base, output::program_name());

    let mut stream = None;
    let mut stream_names = None;
    let mut fatal_path = None;
    let mut fatal_names = None;
    if !config.no_file_flush {
        match config.mode {
            Mode::Streaming => {
                let (file, path) = RawFile::create_unique(&prefix)
                    .map_err(|e| Error::Io(format!("cannot create '{prefix}XXXXXX': {e}")))?;
                if !file.write_all(&header) {
                    return Err(Error::Io(format!("cannot write '{}'", path.display())));
                }
                stream_names = output::c_path(&names_path(&path));
                stream = Some((file, path));
            }
            Mode::FlightRecorder => {
                let path = output::reserve_unique_name(&prefix);
                fatal_names = output::c_path(&names_path(&path));
                fatal_path = output::c_path(&path).map(|c| (c, path));
            }
        }
    }
    let epoch_tsc = clock::now().tsc;
    let rt = Box::new(Runtime {
        frequency,
        pool,
        policy,
        pid: std::process::id() as i32,
        threshold_ticks,
        epoch: now_walltime(),
        epoch_tsc,
        header,
        membarrier: register_membarrier(),
        reader: AtomicBool::new(false),
        file_lock: AtomicBool::new(false),
        stream,
        fatal_path,
        stream_names,
        fatal_names,
        broken: AtomicBool::new(false),
        shut_down: AtomicBool::new(false),
        orphan_seq: AtomicU64::new(0),
        threads: AtomicU64::new(0),
        threads_without_ring: AtomicU64::new(0),
        records_without_ring: AtomicU64::new(0),
        records_paused: AtomicU64::new(0),
        retired_dropped: AtomicU64::new(0),
        buffers_written: AtomicU64::new(0),
        retired_overwritten: AtomicU64::new(0),
        rings_recycled: AtomicU64::new(0),
        config,
    });
    let rt: &'static Runtime = Box::leak(rt);
    RUNTIME.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    if rt.config.verbosity >= 1 {
        eprintln!(
            "XRay: flightrec FDR {} mode, {} thread rings of {} x {} bytes, clock {} Hz ({:?}), CPU ids {}",
            rt.config.mode.name(),
            rt.pool.rings.len(),
            rt.config.thread_buffers,
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
        let spawned = std::thread::Builder::new()
            .name("flightrec-xray-writer".into())
            .spawn(move || writer_loop(rt));
        if let Err(e) = spawned {
            rt.disable(&format!("cannot start the writer thread: {e}"));
            return Err(Error::Io(format!("cannot start the writer thread: {e}")));
        }
    }
    // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
    unsafe { libc::atexit(at_exit) };
    if rt.config.fatal_signals {
        super::signal::install();
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

fn names_path(trace: &std::path::Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(NAMES_SUFFIX);
    PathBuf::from(s)
}

extern "C" fn at_exit() {
    // Unwinding out of an `extern "C"` function aborts; nothing here panics, but a
    // panic must not turn a normal exit into an abort.
    let _ = std::panic::catch_unwind(|| {
        let _ = shutdown();
    });
}

/// Starts or stops recording (`ARMED` ⇄ `RECORDING`).
pub(crate) fn set_recording(on: bool) -> bool {
    let (from, to) = if on {
        (ARMED, RECORDING)
    } else {
        (RECORDING, ARMED)
    };
    match STATE.compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => true,
        Err(s) => s == to,
    }
}

/// A thread-exit guard: releases the thread's ring when the thread's TLS is
/// destroyed.
struct ThreadExit;

impl Drop for ThreadExit {
    fn drop(&mut self) {
        let p = CURRENT.with(|c| c.replace(NO_RING));
        if p as usize <= NO_RING as usize {
            return;
        }
        // SAFETY: `CURRENT` only ever holds null, `NO_RING` or a ring of the leaked
        // runtime.
        let ring = unsafe { &*p };
        let Some(rt) = runtime() else { return };
        // Streaming: publish the partial buffer so the writer takes it. Under the
        // pause protocol, like a record.
        ring.busy.store(true, Ordering::Relaxed);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        let s = STATE.load(Ordering::Relaxed);
        if rt.policy == Policy::Streaming && (s == RECORDING || s == ARMED) {
            // SAFETY: owner, not paused (checked after setting busy).
            if let Some(rec) = unsafe { ring.recorder() } {
                rec.flush();
            }
        }
        ring.busy.store(false, Ordering::Release);
        // A reader may hold the lock briefly; exiting threads may wait for it.
        if ring.lock_until(Instant::now() + Duration::from_secs(1)) {
            ring.orphaned_at.store(
                rt.orphan_seq.fetch_add(1, Ordering::Relaxed),
                Ordering::Relaxed,
            );
            ring.state.store(ORPHAN, Ordering::Release);
            ring.unlock();
        } else {
            ring.state.store(ORPHAN, Ordering::Release);
        }
    }
}

/// `CURRENT` when the thread has no ring and must not try again.
pub(crate) const NO_RING: *const ThreadRing = std::ptr::dangling::<ThreadRing>();

thread_local! {
    /// This thread's ring: null before its first record, `NO_RING` when it has none.
    pub(crate) static CURRENT: std::cell::Cell<*const ThreadRing> =
        const { std::cell::Cell::new(std::ptr::null()) };
    static EXIT: ThreadExit = const { ThreadExit };
}

/// First record of a thread: take a ring. `None` when the pool has none.
#[cold]
#[inline(never)]
pub(crate) fn claim_ring() -> Option<&'static ThreadRing> {
    let rt = runtime()?;
    let current = CURRENT.with(|c| c.get());
    if current == NO_RING {
        rt.records_without_ring.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    // Register the exit guard first; during TLS teardown this fails and the thread
    // must not take a ring it could never give back.
    if EXIT.try_with(|_| ()).is_err() {
        let _ = CURRENT.try_with(|c| c.set(NO_RING));
        rt.records_without_ring.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let Some((ring, recycled)) = rt.pool.take(rt.policy == Policy::FlightRecorder) else {
        CURRENT.with(|c| c.set(NO_RING));
        rt.threads_without_ring.fetch_add(1, Ordering::Relaxed);
        rt.records_without_ring.fetch_add(1, Ordering::Relaxed);
        if rt.threads_without_ring.load(Ordering::Relaxed) == 1 && rt.config.verbosity >= 1 {
            eprintln!(
                "XRay: flightrec: all {} thread rings are in use; new threads are not traced",
                rt.pool.rings.len()
            );
        }
        return None;
    };
    let writer = WriterConfig::new(current_tid())
        .with_pid(rt.pid)
        .with_threshold_ticks(rt.threshold_ticks);
    let cfg = RecorderConfig::new(writer, rt.frequency.hz.get()).with_epoch(rt.epoch, rt.epoch_tsc);
    if recycled {
        rt.rings_recycled.fetch_add(1, Ordering::Relaxed);
        // SAFETY: orphan ring under its lock: no owner.
        if let Some(rec) = unsafe { ring.recorder() } {
            rt.retired_overwritten.fetch_add(
                u64::from(rec.stats().buffers_overwritten)
                    + u64::from(
                        rec.stats()
                            .buffers_finished
                            .min(rt.config.thread_buffers as u32),
                    ),
                Ordering::Relaxed,
            );
        }
    }
    // SAFETY: we hold the ring's lock and it is free or orphaned (no owner).
    let dropped = unsafe { ring.assign(rt.policy, cfg) };
    rt.retired_dropped.fetch_add(dropped, Ordering::Relaxed);
    ring.state.store(LIVE, Ordering::Release);
    ring.unlock();
    rt.threads.fetch_add(1, Ordering::Relaxed);
    CURRENT.with(|c| c.set(ring));
    Some(ring)
}

/// Counts a record lost to a pause or a re-entered record.
#[cold]
#[inline(never)]
pub(crate) fn note_paused_drop() {
    if let Some(rt) = runtime() {
        rt.records_paused.fetch_add(1, Ordering::Relaxed);
    }
}

/// The reader lock plus the paused state; restores the previous state on drop
/// (`FINISHED` stays).
pub(crate) struct Paused {
    rt: &'static Runtime,
    restore: u8,
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = STATE.compare_exchange(PAUSED, self.restore, Ordering::SeqCst, Ordering::SeqCst);
        self.rt.reader.store(false, Ordering::Release);
    }
}

impl Runtime {
    fn grace(&self) -> Duration {
        Duration::from_millis(u64::from(self.config.grace_period_ms))
    }

    /// Runs the pause protocol. `finish` ends recording for good. `None` when
    /// another reader did not finish within the grace period. Async-signal-safe.
    pub(crate) fn pause(&'static self, finish: bool) -> Option<Paused> {
        let deadline = Instant::now() + self.grace();
        while self
            .reader
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::yield_now();
        }
        let target = if finish { FINISHED } else { PAUSED };
        let prev = STATE.swap(target, Ordering::SeqCst);
        let restore = if finish || prev == FINISHED {
            FINISHED
        } else {
            prev
        };
        heavy_barrier(self.membarrier);
        let deadline = Instant::now() + self.grace();
        for r in self.pool.rings.iter() {
            let mut busy = r.busy.load(Ordering::Acquire);
            while busy && Instant::now() < deadline {
                std::hint::spin_loop();
                busy = r.busy.load(Ordering::Acquire);
            }
            r.unreadable.store(busy, Ordering::Relaxed);
        }
        Some(Paused { rt: self, restore })
    }

    /// Calls `f` with each readable ring that has an owner or an exited owner, under
    /// its lock. Needs a [`Paused`].
    fn for_each_used_ring(&self, _paused: &Paused, mut f: impl FnMut(&ThreadRing)) {
        let deadline = Instant::now() + self.grace();
        for r in self.pool.rings.iter() {
            if r.state.load(Ordering::Acquire) == FREE || r.unreadable.load(Ordering::Relaxed) {
                continue;
            }
            if !r.lock_until(deadline) {
                continue;
            }
            let s = r.state.load(Ordering::Acquire);
            if s == LIVE || s == ORPHAN {
                f(r);
            }
            r.unlock();
        }
    }

    /// Writes the flight-recorder trace (header and every thread's buffers) to `out`.
    /// Returns the buffers written, or `None` on a write error. Async-signal-safe.
    fn write_rings(&self, paused: &Paused, out: &mut dyn Sink) -> Option<u64> {
        let mut count = 0u64;
        let mut ok = out.put(&self.header);
        self.for_each_used_ring(paused, |r| {
            // SAFETY: under the ring's lock, recording paused, owner not busy.
            if let Some(rec) = unsafe { r.recorder() } {
                rec.for_each_buffer(|b| {
                    ok &= out.put(b);
                    count += 1;
                });
            }
        });
        ok.then_some(count)
    }

    /// Buffers a flight-recorder dump would write now.
    fn count_buffers(&self, paused: &Paused) -> u64 {
        let mut n = 0;
        self.for_each_used_ring(paused, |r| {
            // SAFETY: as in `write_rings`.
            if let Some(rec) = unsafe { r.recorder() } {
                rec.for_each_buffer(|_| n += 1);
            }
        });
        n
    }

    /// Streaming: publishes every ring's partial buffer. Needs a [`Paused`].
    fn flush_all(&self, paused: &Paused) {
        self.for_each_used_ring(paused, |r| {
            // SAFETY: as in `write_rings`.
            if let Some(rec) = unsafe { r.recorder() } {
                rec.flush();
            }
        });
    }

    /// Streaming: writes every finished buffer to the trace; recycles drained
    /// orphan rings. Allocation-free and lock-free (spins at most `grace_period_ms`
    /// on the file). Returns `false` on a write error.
    pub(crate) fn drain(&self) -> bool {
        let Some((file, _)) = &self.stream else {
            // no_file_flush: take the buffers and discard them.
            return self.drain_into(None);
        };
        let deadline = Instant::now() + self.grace();
        while self
            .file_lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            if Instant::now() >= deadline {
                return true;
            }
            std::thread::yield_now();
        }
        let ok = self.drain_into(Some(file));
        self.file_lock.store(false, Ordering::Release);
        ok
    }

    fn drain_into(&self, file: Option<&RawFile>) -> bool {
        let mut ok = true;
        for r in self.pool.rings.iter() {
            let s = r.state.load(Ordering::Acquire);
            if s == FREE || !r.try_lock() {
                continue;
            }
            let s = r.state.load(Ordering::Acquire);
            if s == ORPHAN {
                // No owner: publish what the thread left behind.
                // SAFETY: orphan ring under its lock.
                if let Some(rec) = unsafe { r.recorder() } {
                    rec.flush();
                }
            }
            // SAFETY: under the ring's lock.
            if let Some(cons) = unsafe { r.consumer() } {
                while let Some(buf) = cons.pop() {
                    if let Some(f) = file {
                        ok &= !self.broken.load(Ordering::Relaxed) && f.write_all(&buf);
                    }
                    if ok {
                        self.buffers_written.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if s == ORPHAN && cons.pending() == 0 {
                    r.state.store(FREE, Ordering::Release);
                }
            }
            r.unlock();
        }
        ok
    }

    /// Turns tracing off for good after an output failure, with one warning.
    pub(crate) fn disable(&self, why: &str) {
        STATE.store(FINISHED, Ordering::SeqCst);
        if !self.broken.swap(true, Ordering::Relaxed) {
            output::stderr_raw(&[
                b"XRay: flightrec: tracing disabled: ",
                why.as_bytes(),
                b"\n",
            ]);
        }
    }

    /// The counters. Exact once recording is paused or finished.
    pub(crate) fn stats(&self) -> Stats {
        let mut ring_dropped = 0u64;
        let mut overwritten = 0u64;
        for r in self.pool.rings.iter() {
            if r.state.load(Ordering::Acquire) == FREE && r.tid.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if r.lock_until(Instant::now() + Duration::from_millis(10)) {
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
        Stats {
            threads: self.threads.load(Ordering::Relaxed),
            threads_without_ring: self.threads_without_ring.load(Ordering::Relaxed),
            records_dropped: self.retired_dropped.load(Ordering::Relaxed)
                + ring_dropped
                + without
                + paused,
            records_without_ring: without,
            records_paused: paused,
            buffers_written: self.buffers_written.load(Ordering::Relaxed),
            buffers_overwritten: overwritten + self.retired_overwritten.load(Ordering::Relaxed),
            rings_recycled: self.rings_recycled.load(Ordering::Relaxed),
        }
    }

    fn write_names(&self, path: &std::ffi::CStr) -> bool {
        let Some(file) = RawFile::create(path, false) else {
            return false;
        };
        let mut sink = FdSink::new(&file);
        let ok = names::write_names_elf(&mut sink, names::max_named_id());
        sink.flush() && ok
    }

    /// Flight recorder: writes the trace now to a new file. Not for signal handlers.
    fn dump_flight_recorder(&'static self) -> Result<Option<PathBuf>, Error> {
        let paused = self.pause(false).ok_or(Error::Busy)?;
        if self.count_buffers(&paused) == 0 {
            return Ok(None);
        }
        let prefix = format!("{}{}.", self.config.logfile_base, output::program_name());
        let (file, path) = RawFile::create_unique(&prefix)
            .map_err(|e| Error::Io(format!("cannot create '{prefix}XXXXXX': {e}")))?;
        let mut sink = FdSink::new(&file);
        let written = self.write_rings(&paused, &mut sink);
        let flushed = sink.flush();
        drop(paused);
        let Some(n) = written.filter(|_| flushed) else {
            return Err(Error::Io(format!("cannot write '{}'", path.display())));
        };
        self.buffers_written.fetch_add(n, Ordering::Relaxed);
        let names = names_path(&path);
        if !output::c_path(&names).is_some_and(|c| self.write_names(&c)) {
            return Err(Error::Io(format!("cannot write '{}'", names.display())));
        }
        Ok(Some(path))
    }

    /// Streaming: publishes partial buffers and writes everything pending now.
    fn dump_streaming(&'static self, finish: bool) -> Result<Option<PathBuf>, Error> {
        {
            let paused = self.pause(finish).ok_or(Error::Busy)?;
            self.flush_all(&paused);
        }
        if !self.drain() {
            self.disable("cannot write the trace file");
            return Err(Error::Io("cannot write the trace file".into()));
        }
        let Some((_, path)) = &self.stream else {
            return Ok(None);
        };
        if let Some(c) = &self.stream_names {
            if !self.write_names(c) {
                return Err(Error::Io(format!(
                    "cannot write the names file of '{}'",
                    path.display()
                )));
            }
        }
        Ok(Some(path.clone()))
    }

    /// What a fatal signal does: stop recording, write what there is, say where.
    /// Async-signal-safe: no allocation, no locks of the standard library.
    pub(crate) fn fatal_dump(&'static self) {
        if self.config.no_file_flush || self.shut_down.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(paused) = self.pause(true) else {
            return;
        };
        let path = match self.config.mode {
            Mode::FlightRecorder => {
                let Some((cpath, path)) = &self.fatal_path else {
                    return;
                };
                if self.count_buffers(&paused) == 0 {
                    return;
                }
                let Some(file) = RawFile::create(cpath, true) else {
                    return;
                };
                let mut sink = FdSink::new(&file);
                let _ = self.write_rings(&paused, &mut sink);
                sink.flush();
                if let Some(n) = &self.fatal_names {
                    self.write_names(n);
                }
                path
            }
            Mode::Streaming => {
                self.flush_all(&paused);
                drop(paused);
                self.drain();
                if let Some(n) = &self.stream_names {
                    self.write_names(n);
                }
                let Some((_, path)) = &self.stream else {
                    return;
                };
                path
            }
        };
        output::stderr_raw(&[
            b"XRay: flightrec: fatal signal; trace written to '",
            path.as_os_str().as_encoded_bytes(),
            b"'\n",
        ]);
    }
}

/// Streaming: the writer thread.
fn writer_loop(rt: &'static Runtime) {
    let interval = Duration::from_millis(u64::from(rt.config.flush_interval_ms));
    loop {
        let s = STATE.load(Ordering::Acquire);
        if s == FINISHED {
            return;
        }
        if !rt.drain() {
            rt.disable("cannot write the trace file");
            return;
        }
        std::thread::park_timeout(interval);
    }
}

/// See [`super::dump`].
pub(crate) fn dump() -> Result<Option<PathBuf>, Error> {
    let rt = runtime().ok_or(Error::NotInitialized)?;
    if rt.config.no_file_flush || STATE.load(Ordering::Acquire) == FINISHED {
        return Ok(None);
    }
    match rt.config.mode {
        Mode::FlightRecorder => rt.dump_flight_recorder(),
        Mode::Streaming => rt.dump_streaming(false),
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
    /// Its names file.
    pub names_path: Option<PathBuf>,
    /// Final counters.
    pub stats: Stats,
}

/// See [`super::shutdown`].
pub(crate) fn shutdown() -> Result<Report, Error> {
    let rt = runtime().ok_or(Error::NotInitialized)?;
    if rt.shut_down.swap(true, Ordering::SeqCst) {
        return Err(Error::AlreadyShutDown);
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
    if rt.config.verbosity >= 1 {
        match &path {
            Some(p) => eprintln!(
                "XRay: flightrec: wrote '{}' ({} buffers); names in '{}'",
                p.display(),
                stats.buffers_written,
                names_path(p).display()
            ),
            None => {
                eprintln!("XRay: flightrec: no trace written (nothing recorded or no_file_flush)")
            }
        }
        eprintln!(
            "XRay: flightrec: {} threads, {} records dropped ({} without a ring, {} while paused), {} buffers overwritten",
            stats.threads,
            stats.records_dropped,
            stats.records_without_ring,
            stats.records_paused,
            stats.buffers_overwritten
        );
    }
    Ok(Report {
        names_path: path.as_deref().map(names_path),
        path,
        stats,
    })
}

/// The clock rate in the header, once initialised.
#[allow(dead_code)]
pub(crate) fn frequency() -> Option<NonZeroU64> {
    runtime().map(|rt| rt.frequency.hz)
}
