//! The background writer of [`WriteMode::Background`](super::WriteMode):
//! bounded per-destination queues behind one mutex, drained in batches by one
//! thread.
//!
//! The calling thread appends a formatted line to its destination's queue
//! (one uncontended lock, one copy) and returns. It wakes the writer only
//! when the writer sleeps and either the queue was empty or it is half full,
//! because a condvar notify is a system call: a program that traces
//! continuously pays one wake-up per batch, not per line. The writer, once
//! woken by a first line, lingers for [`LINGER`] (or until the queue is half
//! full, or someone waits in [`BackgroundWriter::flush`]) so that sparse
//! lines still share a `write()`; then it swaps the filled queues with its
//! empty spares (a double buffer: no allocation once both have grown) and
//! writes them without holding the lock.
//!
//! A full queue refuses the lines and counts them; the caller
//! (`trace2::gap`) drops whole regions and marks where, and
//! [`BackgroundWriter::shutdown`] reports the counts once. A caller may push
//! past the capacity (`must`): the `region_leave` of a region whose enter is
//! queued, with the marker of the lines dropped inside it. That overshoot is
//! bounded by the regions open when the queue filled up (an enter is only
//! taken below the capacity), so the queue stays bounded. Nothing here blocks on I/O except
//! [`BackgroundWriter::flush`] and [`BackgroundWriter::shutdown`], which wait
//! for the writer on purpose.
//!
//! Signal handlers must not come here (the queue's mutex is not
//! async-signal-safe): the runtime writes a `signal` event directly.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Destination;

/// How long the writer waits after a first line for more to join its batch.
pub(crate) const LINGER: Duration = Duration::from_millis(1);

/// Set in a child of `fork()`: the writer thread was not copied, so the
/// child's lines go out directly and nothing waits for the writer.
static FORKED: AtomicBool = AtomicBool::new(false);

std::thread_local! {
    /// Set on the writer thread, which must never wait for itself (a panic
    /// hook that flushes, for instance).
    static IS_WRITER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Lines queued for one destination: their bytes back to back, and where
/// each ends (datagram sockets send one line per message, pipes cut batches
/// at line ends).
#[derive(Debug, Default)]
struct Batch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// Indices (in `ends`) of the runtime's own marker lines.
    markers: Vec<usize>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.markers.clear();
    }
}

#[derive(Debug)]
struct State {
    /// The queues being filled, one per destination.
    queues: Vec<Batch>,
    /// Lines accepted so far, and how many of them the writer has finished.
    queued: u64,
    written: u64,
    /// The writer sleeps on `work` (a push may need to wake it).
    writer_waiting: bool,
    /// Threads waiting in `flush`.
    flushers: usize,
    /// `shutdown` asked the writer to write what is left and end.
    stop: bool,
    /// The process is exiting: no line is dropped any more (see
    /// [`BackgroundWriter::keep_all`]).
    keep_all: bool,
    /// The writer thread has ended (or never started).
    writer_done: bool,
}

#[derive(Debug)]
struct Inner {
    dests: Vec<Arc<Destination>>,
    capacity: usize,
    /// Lines dropped per destination because its queue was full (counted
    /// without the lock: a thread dropping a whole region counts each line).
    dropped: Vec<AtomicU64>,
    /// Runs of dropped lines per destination whose marker is not written
    /// yet (a thread that traced nothing after its gap).
    unmarked: Vec<AtomicU64>,
    state: Mutex<State>,
    /// The writer waits here for lines, flushes and the stop.
    work: Condvar,
    /// Flushers wait here for the writer to finish a batch.
    written: Condvar,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Only plain data is behind the lock: a panic elsewhere leaves it
        // usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What became of a line given to [`BackgroundWriter::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Queued for the writer.
    Queued,
    /// The queue was full: nothing was queued (the caller counts the loss).
    Dropped,
    /// No writer takes lines any more (shut down, or this is a forked
    /// child): the caller writes the line itself.
    Closed,
}

/// The queues and the writer thread of one runtime.
#[derive(Debug)]
pub(crate) struct BackgroundWriter {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl BackgroundWriter {
    /// Starts the writer thread for `dests` (index = the slot given to
    /// [`Self::push`]), each with a queue of `capacity` bytes.
    pub(crate) fn start(dests: Vec<Arc<Destination>>, capacity: usize) -> io::Result<Self> {
        register_fork_handler();
        let n = dests.len();
        let inner = Arc::new(Inner {
            dests,
            capacity: capacity.max(1),
            dropped: (0..n).map(|_| AtomicU64::new(0)).collect(),
            unmarked: (0..n).map(|_| AtomicU64::new(0)).collect(),
            state: Mutex::new(State {
                queues: (0..n).map(|_| Batch::default()).collect(),
                queued: 0,
                written: 0,
                writer_waiting: false,
                flushers: 0,
                stop: false,
                keep_all: false,
                writer_done: false,
            }),
            work: Condvar::new(),
            written: Condvar::new(),
        });
        let for_thread = Arc::clone(&inner);
        let thread = spawn_without_signals(move || writer_loop(&for_thread))?;
        Ok(BackgroundWriter {
            inner,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Appends complete `lines` to the queue of destination `slot`, all of
    /// them or none: [`Pushed::Dropped`] (nothing queued, nothing counted)
    /// when they do not fit, unless `must`, or the queue is empty (a line
    /// longer than the capacity is still taken), or the process is exiting.
    /// The first `markers` lines are the runtime's own marks (not counted
    /// if the destination loses them).
    #[inline]
    pub(crate) fn push(&self, slot: usize, lines: &[&[u8]], markers: usize, must: bool) -> Pushed {
        if FORKED.load(Ordering::Relaxed) {
            return Pushed::Closed;
        }
        let inner = &*self.inner;
        let mut st = inner.lock();
        if st.stop || st.writer_done {
            return Pushed::Closed;
        }
        let bounded = !st.keep_all && !must;
        let Some(q) = st.queues.get_mut(slot) else {
            return Pushed::Closed;
        };
        let was_empty = q.is_empty();
        let len: usize = lines.iter().map(|l| l.len()).sum();
        if !was_empty && bounded && q.bytes.len() + len > inner.capacity {
            return Pushed::Dropped;
        }
        for (i, line) in lines.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
            if i < markers {
                q.markers.push(q.ends.len());
            }
            q.bytes.extend_from_slice(line);
            q.ends.push(q.bytes.len());
        }
        let half_full = q.bytes.len() >= inner.capacity / 2;
        st.queued += 1;
        let wake = st.writer_waiting && (was_empty || half_full);
        if wake {
            // One notify is enough until the writer looks again.
            st.writer_waiting = false;
        }
        drop(st);
        if wake {
            inner.work.notify_one();
        }
        Pushed::Queued
    }

    /// Counts `n` lines of destination `slot` as dropped.
    #[inline]
    pub(crate) fn count_dropped(&self, slot: usize, n: u64) {
        if let Some(d) = self.inner.dropped.get(slot) {
            d.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A run of dropped lines of destination `slot` began (`opened`) or
    /// its marker was written.
    #[inline]
    pub(crate) fn gap(&self, slot: usize, opened: bool) {
        if let Some(u) = self.inner.unmarked.get(slot) {
            if opened {
                u.fetch_add(1, Ordering::Relaxed);
            } else {
                u.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Waits until every line queued before this call is written (or the
    /// writer has ended). Does nothing in a forked child or on the writer
    /// thread itself.
    pub(crate) fn flush(&self) {
        if FORKED.load(Ordering::Relaxed) || IS_WRITER.with(|w| w.get()) {
            return;
        }
        let inner = &*self.inner;
        let mut st = inner.lock();
        let target = st.queued;
        if st.written >= target || st.writer_done {
            return;
        }
        st.flushers += 1;
        if st.writer_waiting {
            st.writer_waiting = false;
            inner.work.notify_one();
        }
        while st.written < target && !st.writer_done {
            st = inner.written.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.flushers -= 1;
    }

    /// Flushes, then lets the queues grow past their capacity: from `exit`
    /// on, the few lines left (`exit`, timers, counters, `atexit`) are
    /// written even when the destination is slow, never dropped.
    pub(crate) fn keep_all(&self) {
        self.flush();
        self.inner.lock().keep_all = true;
    }

    /// Writes what is queued, ends the writer thread and returns, per
    /// destination that lost lines, the lines dropped and the runs of them
    /// left without a marker (each destination's counts once: a second call
    /// returns nothing). Lines pushed afterwards are [`Pushed::Closed`].
    pub(crate) fn shutdown(&self) -> Vec<Lost> {
        if FORKED.load(Ordering::Relaxed) || IS_WRITER.with(|w| w.get()) {
            return Vec::new();
        }
        {
            let mut st = self.inner.lock();
            st.stop = true;
            st.writer_waiting = false;
        }
        self.inner.work.notify_one();
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        let inner = &*self.inner;
        inner
            .dests
            .iter()
            .zip(inner.dropped.iter().zip(&inner.unmarked))
            .filter_map(|(dest, (d, u))| {
                let lines = d.swap(0, Ordering::Relaxed);
                let unmarked = u.swap(0, Ordering::Relaxed);
                (lines > 0).then(|| Lost {
                    dest: Arc::clone(dest),
                    lines,
                    unmarked,
                })
            })
            .collect()
    }

    /// Lines dropped so far per destination slot.
    #[cfg(test)]
    fn dropped(&self) -> Vec<u64> {
        self.inner
            .dropped
            .iter()
            .map(|d| d.load(Ordering::Relaxed))
            .collect()
    }
}

/// What one destination lost to a full queue (see
/// [`BackgroundWriter::shutdown`]).
#[derive(Debug)]
pub(crate) struct Lost {
    pub dest: Arc<Destination>,
    /// Lines dropped.
    pub lines: u64,
    /// Runs of dropped lines whose marker was never written.
    pub unmarked: u64,
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The writer thread: waits for lines, lingers for company, swaps the queues
/// with its spares and writes them; after `stop`, writes what is left and
/// ends.
fn writer_loop(inner: &Inner) {
    IS_WRITER.with(|w| w.set(true));
    // Whatever happens, flushers must not wait for a writer that is gone.
    struct Done<'a>(&'a Inner);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.lock().writer_done = true;
            self.0.written.notify_all();
        }
    }
    let _done = Done(inner);
    let mut spares: Vec<Batch> = inner.dests.iter().map(|_| Batch::default()).collect();
    let mut st = inner.lock();
    loop {
        if st.queues.iter().all(Batch::is_empty) {
            if st.stop {
                return;
            }
            st.writer_waiting = true;
            st = inner.work.wait(st).unwrap_or_else(|e| e.into_inner());
            st.writer_waiting = false;
            // Lines arrived: give others a moment to join the batch.
            if !st.stop && st.flushers == 0 && !half_full(inner, &st) {
                st.writer_waiting = true;
                st = inner
                    .work
                    .wait_timeout(st, LINGER)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                st.writer_waiting = false;
            }
            continue;
        }
        std::mem::swap(&mut st.queues, &mut spares);
        let upto = st.queued;
        drop(st);
        for (dest, batch) in inner.dests.iter().zip(spares.iter_mut()) {
            if !batch.is_empty() {
                let warning = crate::trace2::write_mark::while_writing(|| {
                    dest.write_lines(&batch.bytes, &batch.ends, &batch.markers)
                });
                if let Some(w) = warning {
                    crate::trace2::warning::warn(&w);
                }
                batch.clear();
            }
        }
        st = inner.lock();
        st.written = upto;
        if st.flushers > 0 {
            inner.written.notify_all();
        }
    }
}

fn half_full(inner: &Inner, st: &State) -> bool {
    st.queues
        .iter()
        .any(|q| q.bytes.len() >= inner.capacity / 2)
}

/// Spawns `f` on a thread that blocks every signal it can, so that signals
/// sent to the process reach the host's own threads and handlers, never the
/// writer.
fn spawn_without_signals(f: impl FnOnce() + Send + 'static) -> io::Result<JoinHandle<()>> {
    // SAFETY: both sets are initialised (sigfillset, pthread_sigmask) before
    // they are read; the mask of the calling thread is restored before
    // returning whatever the spawn did. The new thread inherits the full mask.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut old: libc::sigset_t = std::mem::zeroed();
        let masked = libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) == 0;
        let r = std::thread::Builder::new()
            .name("trace2-writer".into())
            .spawn(f);
        if masked {
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
        r
    }
}

/// Marks a child of `fork()` as having no writer thread (once per process).
fn register_fork_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        extern "C" fn in_child() {
            // An atomic store: async-signal-safe, as a fork child handler
            // must be.
            FORKED.store(true, Ordering::Relaxed);
        }
        // SAFETY: `in_child` is a plain `extern "C"` function that lives for
        // the whole program; no prepare or parent handler is installed.
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trace2::Target;
    use crate::trace2::target::OpenParams;

    fn file_dest(path: &std::path::Path) -> Arc<Destination> {
        Arc::new(
            Destination::open_value(
                path.as_os_str(),
                OpenParams {
                    kind: Target::Normal,
                    var: "GIT_TRACE2",
                    dst_debug: true,
                    max_files: 0,
                    sid: "sid",
                },
            )
            .unwrap(),
        )
    }

    #[test]
    fn flush_writes_every_queued_line_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let bg = BackgroundWriter::start(vec![file_dest(&path)], 1 << 20).unwrap();
        let mut want = String::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            assert_eq!(bg.push(0, &[line.as_bytes()], 0, false), Pushed::Queued);
            want.push_str(&line);
        }
        bg.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
        assert!(bg.shutdown().is_empty());
        assert_eq!(bg.push(0, &[b"late\n"], 0, false), Pushed::Closed);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        // A FIFO nobody reads yet: the writer blocks once the pipe is full,
        // and the queue behind it fills up.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that lives for the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Opening either end waits for the other: the reader opens on a
        // thread and reads nothing until it is handed back below.
        let opener = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::File::open(fifo).unwrap())
        };
        let dest = file_dest(&fifo);
        let reader = opener.join().unwrap();
        let bg = BackgroundWriter::start(vec![dest], 4096).unwrap();
        let line: Vec<u8> = [b'x'; 99].iter().chain(b"\n").copied().collect();
        let mut dropped = 0;
        for _ in 0..5000 {
            if bg.push(0, &[&line], 0, false) == Pushed::Dropped {
                bg.count_dropped(0, 1);
                dropped += 1;
            }
        }
        assert!(dropped > 0, "500 kB through a 64 kB pipe and a 4 kB queue");
        assert_eq!(bg.dropped(), [dropped]);
        // Drain the FIFO so the writer can finish.
        let drain = std::thread::spawn(move || {
            let mut all = Vec::new();
            std::io::Read::read_to_end(&mut { reader }, &mut all).unwrap();
            all
        });
        let counts = bg.shutdown();
        assert_eq!(counts.len(), 1);
        assert_eq!((counts[0].lines, counts[0].unmarked), (dropped, 0));
        assert!(bg.shutdown().is_empty(), "the count is reported once");
        drop(counts);
        drop(bg); // closes the write end: the reader sees the end
        let all = drain.join().unwrap();
        assert_eq!(all.len(), (5000 - dropped as usize) * 100);
        assert!(
            all.chunks(100).all(|l| l == line.as_slice()),
            "lines stay whole"
        );
    }

    #[test]
    fn the_writer_thread_blocks_signals() {
        let dir = tempfile::tempdir().unwrap();
        let bg = BackgroundWriter::start(vec![file_dest(&dir.path().join("t"))], 64).unwrap();
        // The writer's mask, read from /proc: SigBlk of its task. The mask is
        // inherited at creation, but the thread names itself once it runs, so
        // wait (boundedly) for the name to appear.
        let writer_status = || {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("status")).ok())
                .find(|s| s.lines().any(|l| l == "Name:\ttrace2-writer"))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            match writer_status() {
                Some(status) => break status,
                None if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                None => panic!("no thread named trace2-writer within 10 s"),
            }
        };
        let blocked = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:\t"))
            .unwrap();
        let mask = u64::from_str_radix(blocked, 16).unwrap();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGPIPE, libc::SIGUSR1] {
            assert_ne!(mask & (1 << (sig - 1)), 0, "signal {sig} not blocked");
        }
        drop(bg);
    }
}
