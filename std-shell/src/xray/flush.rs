//! Writing the trace: flight-recorder dumps, the streaming writer thread and its
//! drain, the names file, and the dump a fatal signal makes.

use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

use flightrec_core::fdr::end::{EndBlock, END_BLOCK_SIZE};
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::ring::LOSS_EVENT_TYPE;
use flightrec_core::fdr::writer::Walltime;
use flightrec_core::fdr::{FileHeader, Version};

use super::claim::current_tid;
use super::config::Mode;
use super::names::{self, Sink};
use super::output::{self, incomplete_path, names_path, reason, FdSink, RawFile};
use super::pool::{FREE, ORPHAN};
use super::runtime::{runtime, Runtime};
use super::state::{Paused, FINISHED, STATE};
use super::Error;

impl Runtime {
    /// Writes the flight-recorder trace (header and every thread's buffers) to `out`.
    /// Returns the buffers written, or `None` on a write error. Async-signal-safe.
    fn write_rings(&self, paused: &Paused<'_>, out: &mut dyn Sink) -> Option<u64> {
        let mut count = 0u64;
        let mut ok = out.put(&self.header);
        for_each_whole_buffer(paused, |head, rest| {
            ok &= out.put(head) & out.put(rest);
            count += 1;
        });
        ok &= out.put(&self.end_block(count));
        ok.then_some(count)
    }

    /// The end block of a trace that holds `buffers` buffers: what tells a whole
    /// file from one cut short between two buffers (the header has
    /// `HeaderFlags::END_BLOCK`). Async-signal-safe (`clock_gettime`).
    pub(super) fn end_block(&self, buffers: u64) -> [u8; END_BLOCK_SIZE] {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec to fill; clock_gettime is
        // async-signal-safe.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
        let end = EndBlock {
            buffers,
            pid: self.pid.load(Ordering::Relaxed),
            closed: Walltime {
                seconds: now.tv_sec,
                micros: (now.tv_nsec / 1000).clamp(0, 999_999) as u32,
            },
        };
        let version = FileHeader::parse(&self.header).map_or(Version::V5, |h| h.version);
        // The runtime writes version 5, which takes an end block.
        end.to_bytes(version).unwrap_or([0; END_BLOCK_SIZE])
    }

    /// Streaming, at the end: writes every buffer left and the end block under
    /// one hold of the file lock (no buffer is written after the end block).
    /// `false` on a write error (its `errno` kept for the message), and when the
    /// file stays locked past `grace_period_ms` (a writer thread stuck in a
    /// write): then the buffers left are taken out of the rings and their
    /// records counted as unwritten (`ETIMEDOUT`), never lost in silence.
    /// Async-signal-safe.
    fn finish_stream(&self) -> bool {
        let Some((file, _)) = &self.stream else {
            return self.drain_into(None, true);
        };
        if !self.lock_file() {
            self.drain_into(None, true);
            let _ = self.write_errno.compare_exchange(
                0,
                libc::ETIMEDOUT,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            return false;
        }
        let mut ok = self.drain_into(Some(file), true);
        if ok {
            let end = self.end_block(self.buffers_written.load(Ordering::Relaxed));
            if let Err(e) = file.write_all(&end) {
                ok = false;
                let _ =
                    self.write_errno
                        .compare_exchange(0, e, Ordering::Relaxed, Ordering::Relaxed);
            }
        }
        self.file_lock.store(false, Ordering::Release);
        ok
    }

    /// Streaming, before the last drain: asks the writer thread to leave its
    /// loop and waits until it has, so that the last drain finds the file and
    /// every ring unlocked. The wait ends `grace_period_ms` after the writer
    /// last finished a buffer: a writer that is writing a long backlog is
    /// waited for, one stuck in a write is not. `false` when it did not leave
    /// (or the caller is the writer thread, in a signal handler).
    /// Async-signal-safe (atomics, `clock_gettime`, `sched_yield`, one `futex`
    /// wake).
    fn stop_writer(&self) -> bool {
        if !self.writer_active.load(Ordering::Acquire) {
            return true;
        }
        if self.writer_tid.load(Ordering::Relaxed) == current_tid() {
            return false;
        }
        self.writer_stop.store(true, Ordering::Release);
        wake_writer();
        let mut seen = self.buffers_written.load(Ordering::Relaxed);
        let mut deadline = Instant::now() + self.grace();
        while self.writer_active.load(Ordering::Acquire) {
            let now = Instant::now();
            let written = self.buffers_written.load(Ordering::Relaxed);
            if written != seen {
                seen = written;
                deadline = now + self.grace();
            } else if now >= deadline {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }

    /// Takes the file lock, spinning at most `grace_period_ms`; `false` when it
    /// could not (the caller then writes nothing). Async-signal-safe.
    fn lock_file(&self) -> bool {
        let deadline = Instant::now() + self.grace();
        while self
            .file_lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }

    /// Buffers a flight-recorder dump would write now.
    fn count_buffers(&self, paused: &Paused<'_>) -> u64 {
        let mut n = 0;
        for_each_whole_buffer(paused, |_, _| n += 1);
        n
    }

    /// Streaming: publishes every ring's partial buffer.
    /// The ring of a thread a signal stopped inside a record keeps its partial
    /// buffer (its finished ones are drained as every ring's).
    fn flush_all(&self, paused: &Paused<'_>) {
        paused.for_each_used_ring(|r| {
            if paused.is_interrupted(r) {
                return;
            }
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
            return self.drain_into(None, false);
        };
        if !self.lock_file() {
            // The lock's holder is draining: what this drain would write, it
            // writes (the last drain is `finish_stream`'s, which does not give up
            // in silence).
            return true;
        }
        let ok = self.drain_into(Some(file), false);
        self.file_lock.store(false, Ordering::Release);
        ok
    }

    /// Writes the finished buffers of every ring to `file`, or (no file)
    /// takes them out and counts their records as unwritten. A ring whose lock
    /// is held is skipped, except by the `last` drain, which waits for it up to
    /// `grace_period_ms`.
    fn drain_into(&self, file: Option<&RawFile>, last: bool) -> bool {
        let mut ok = true;
        let deadline = Instant::now() + self.grace();
        for r in self.pool.rings.iter() {
            let s = r.state.load(Ordering::Acquire);
            if s == FREE {
                continue;
            }
            let locked = if last {
                r.lock_until(deadline)
            } else {
                r.try_lock()
            };
            if !locked {
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
                        ok &= !self.broken.load(Ordering::Relaxed);
                        if ok {
                            if let Err(e) = f.write_all(&buf) {
                                ok = false;
                                let _ = self.write_errno.compare_exchange(
                                    0,
                                    e,
                                    Ordering::Relaxed,
                                    Ordering::Relaxed,
                                );
                            }
                        }
                    }
                    if ok && file.is_some() {
                        self.buffers_written.fetch_add(1, Ordering::Relaxed);
                    } else if self.stream.is_some() {
                        self.records_unwritten
                            .fetch_add(records_in(&buf), Ordering::Relaxed);
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

    /// Streaming: the trace file could not be written (the writer thread,
    /// the last drain, or a fatal signal's). Once: stops tracing, renames the
    /// trace `<name>.incomplete` so that a cut trace never passes for a whole
    /// one, writes its names file there, and says so on stderr with the path
    /// and the reason. Async-signal-safe.
    pub(crate) fn stream_failed(&self) {
        STATE.store(FINISHED, Ordering::SeqCst);
        if self.broken.swap(true, Ordering::Relaxed) {
            return;
        }
        let errno = self.write_errno.load(Ordering::Relaxed);
        let path = self
            .stream
            .as_ref()
            .map(|(_, p)| p.as_os_str().as_encoded_bytes());
        let mut renamed = false;
        if let (Some(from), Some((to, to_names))) = (&self.stream_c, &self.incomplete) {
            // SAFETY: both are NUL-terminated paths; rename is async-signal-safe.
            renamed = unsafe { libc::rename(from.as_ptr(), to.as_ptr()) } == 0;
            if renamed {
                let _ = write_names_file(to_names);
                if let Some(n) = &self.stream_names {
                    // SAFETY: a NUL-terminated path; unlink is async-signal-safe.
                    unsafe { libc::unlink(n.as_ptr()) };
                }
            }
        }
        let path = path.unwrap_or_default();
        let head: [&[u8]; 4] = [
            b"XRay: flightrec: tracing disabled: cannot write the trace file '",
            path,
            b"': ",
            output::reason_static(errno),
        ];
        let tail: [&[u8]; 3] = if renamed {
            [b"; the trace so far is in '", path, b".incomplete'\n"]
        } else {
            [b"\n", b"", b""]
        };
        output::stderr_raw(&[
            head[0], head[1], head[2], head[3], tail[0], tail[1], tail[2],
        ]);
    }

    /// Streaming: rewrites the names file when names were added since the
    /// last time, through a temporary file and `rename`, so that the file on
    /// disk is always whole (a `SIGKILL` leaves a usable pair). Not for
    /// signal handlers.
    pub(crate) fn refresh_names(&self, written: &mut u32) {
        let now = names::names_stored();
        if now == *written || self.broken.load(Ordering::Relaxed) {
            return;
        }
        let Some((_, path)) = &self.stream else {
            return;
        };
        let names = names_path(path);
        let mut tmp = names.clone().into_os_string();
        tmp.push(".tmp");
        let (Some(c_names), Some(c_tmp)) = (output::c_path(&names), output::c_path(tmp.as_ref()))
        else {
            return;
        };
        match write_names_file(&c_tmp) {
            // SAFETY: two NUL-terminated paths.
            Ok(()) if unsafe { libc::rename(c_tmp.as_ptr(), c_names.as_ptr()) } == 0 => {
                *written = now;
            }
            Ok(()) => self.names_failed(&names, output::last_errno()),
            Err(e) => {
                // SAFETY: a NUL-terminated path.
                unsafe { libc::unlink(c_tmp.as_ptr()) };
                self.names_failed(&names, e);
            }
        }
    }

    /// Says once that the names file cannot be kept current.
    fn names_failed(&self, names: &std::path::Path, errno: i32) {
        if !self.names_broken.swap(true, Ordering::Relaxed) {
            output::stderr_raw(&[
                b"XRay: flightrec: cannot write '",
                names.as_os_str().as_encoded_bytes(),
                b"': ",
                reason(errno).as_bytes(),
                b"\n",
            ]);
        }
    }

    /// Flight recorder: writes the trace now to a new file. Not for signal handlers.
    pub(super) fn dump_flight_recorder(&self) -> Result<Option<PathBuf>, Error> {
        let paused = self.pause(false).ok_or(Error::Busy)?;
        if self.count_buffers(&paused) == 0 {
            return Ok(None);
        }
        let prefix = format!("{}{}.", self.config.logfile_base, output::program_name());
        let (file, path) = RawFile::create_unique(&prefix).map_err(|e| {
            Error::Io(format!(
                "cannot create '{prefix}XXXXXX': {}",
                reason(e.raw_os_error().unwrap_or(libc::EIO))
            ))
        })?;
        let mut sink = FdSink::new(&file);
        let written = self.write_rings(&paused, &mut sink);
        let flushed = sink.flush();
        drop(paused);
        let n = match (written, flushed) {
            (Some(n), Ok(())) => n,
            (_, Err(e)) => return Err(self.cut_short(&path, e)),
            (None, Ok(())) => return Err(self.cut_short(&path, libc::EIO)),
        };
        self.buffers_written.fetch_add(n, Ordering::Relaxed);
        let names = names_path(&path);
        let c_names = output::c_path(&names).ok_or(Error::Io(format!(
            "cannot write '{}': the path holds a NUL byte",
            names.display()
        )))?;
        write_names_file(&c_names)
            .map_err(|e| Error::Io(format!("cannot write '{}': {}", names.display(), reason(e))))?;
        Ok(Some(path))
    }

    /// A flight-recorder dump that could not be written whole: renamed
    /// `<name>.incomplete` (with its names file), and the error that says
    /// where and why.
    fn cut_short(&self, path: &std::path::Path, errno: i32) -> Error {
        let incomplete = incomplete_path(path);
        let mut text = format!("cannot write '{}': {}", path.display(), reason(errno));
        if std::fs::rename(path, &incomplete).is_ok() {
            if let Some(c) = output::c_path(&names_path(&incomplete)) {
                let _ = write_names_file(&c);
            }
            text.push_str(&format!(
                "; the part written is in '{}'",
                incomplete.display()
            ));
        }
        Error::Io(text)
    }

    /// Streaming: publishes partial buffers and writes everything pending now.
    pub(super) fn dump_streaming(&self, finish: bool) -> Result<Option<PathBuf>, Error> {
        {
            let paused = self.pause(finish).ok_or(Error::Busy)?;
            if finish {
                // Recording has stopped; what the writer is writing now is the
                // last of it, and the rings must be free for `flush_all`.
                self.stop_writer();
            }
            self.flush_all(&paused);
        }
        let Some((_, path)) = &self.stream else {
            self.drain();
            return Ok(None);
        };
        let written = if finish {
            self.finish_stream()
        } else {
            self.drain()
        };
        if self.broken.load(Ordering::Relaxed) || !written {
            self.stream_failed();
            return Err(Error::Io(format!(
                "cannot write '{}': {}",
                path.display(),
                reason(match self.write_errno.load(Ordering::Relaxed) {
                    0 => libc::EIO,
                    e => e,
                })
            )));
        }
        if let Some(c) = &self.stream_names {
            write_names_file(c).map_err(|e| {
                Error::Io(format!(
                    "cannot write '{}': {}",
                    names_path(path).display(),
                    reason(e)
                ))
            })?;
        }
        Ok(Some(path.clone()))
    }

    /// What a fatal signal does: stop recording, write what there is, say where.
    /// Async-signal-safe: no allocation, no locks of the standard library.
    pub(super) fn fatal_dump(&self) {
        if self.config.no_file_flush
            || self.forked_stream.load(Ordering::Relaxed)
            || self.shut_down.swap(true, Ordering::SeqCst)
        {
            return;
        }
        let Some(paused) = self.pause_interrupted() else {
            return nothing_written(b"another dump did not finish within grace_period_ms");
        };
        let path = match self.config.mode {
            Mode::FlightRecorder => {
                let Some((cpath, path)) = &self.fatal_path else {
                    return nothing_written(b"the trace's path holds a NUL byte");
                };
                if self.count_buffers(&paused) == 0 {
                    return nothing_written(if paused.left_out() > 0 {
                        b"every thread that recorded stayed inside a record past grace_period_ms"
                    } else {
                        b"nothing was recorded"
                    });
                }
                let path = path.as_os_str().as_encoded_bytes();
                let file = match RawFile::create(cpath, true) {
                    Ok(file) => file,
                    Err(e) => return fatal_failed(path, e, false),
                };
                let mut sink = FdSink::new(&file);
                let _ = self.write_rings(&paused, &mut sink);
                if let Err(e) = sink.flush() {
                    let mut renamed = false;
                    if let Some((to, to_names)) = &self.incomplete {
                        // SAFETY: NUL-terminated paths; rename is async-signal-safe.
                        renamed = unsafe { libc::rename(cpath.as_ptr(), to.as_ptr()) } == 0;
                        if renamed {
                            let _ = write_names_file(to_names);
                        }
                    }
                    return fatal_failed(path, e, renamed);
                }
                if let Some(n) = &self.fatal_names {
                    if let Err(e) = write_names_file(n) {
                        return fatal_failed(n.to_bytes(), e, false);
                    }
                }
                path
            }
            Mode::Streaming => {
                self.stop_writer();
                self.flush_all(&paused);
                drop(paused);
                if self.broken.load(Ordering::Relaxed) || !self.finish_stream() {
                    // Says where and why, once.
                    return self.stream_failed();
                }
                let Some((_, path)) = &self.stream else {
                    return;
                };
                if let Some(n) = &self.stream_names {
                    if let Err(e) = write_names_file(n) {
                        return fatal_failed(n.to_bytes(), e, false);
                    }
                }
                path.as_os_str().as_encoded_bytes()
            }
        };
        output::stderr_raw(&[
            b"XRay: flightrec: fatal signal; trace written to '",
            path,
            b"'\n",
        ]);
    }
}

/// Calls `f` with every buffer a flight-recorder dump writes, in one or two
/// parts (`f(head, rest)`, written one after the other): each readable
/// thread's buffers, oldest first. Of the ring whose owner a signal stopped
/// inside a record, a buffer that ends in a record cut short is written up to
/// its last complete record, under a BufferExtents record that counts what
/// is kept (`head`); one that does not start with a BufferExtents record
/// followed by whole records is left out. Async-signal-safe.
fn for_each_whole_buffer(paused: &Paused<'_>, mut f: impl FnMut(&[u8], &[u8])) {
    paused.for_each_used_ring(|r| {
        let cut = paused.is_interrupted(r);
        // SAFETY: under the ring's lock, recording paused, owner not busy, or
        // (`cut`) the owner is the caller, stopped by a signal, which does not
        // go on with its record before the caller returns.
        if let Some(rec) = unsafe { r.recorder() } {
            rec.for_each_buffer(|b| {
                if !cut {
                    return f(&[], b);
                }
                let whole = whole_records(b);
                if whole == b.len() {
                    return f(&[], b);
                }
                let mut extents = [0u8; 16];
                if let Some((EXTENTS_LEN, kept)) =
                    whole.checked_sub(EXTENTS_LEN).and_then(|after| {
                        Record::BufferExtents { size: after as u64 }
                            .encode(Version::V5, &mut extents)
                            .ok()
                            .zip(b.get(EXTENTS_LEN..whole))
                    })
                {
                    if matches!(
                        Record::parse(Version::V5, b),
                        Ok((Record::BufferExtents { .. }, EXTENTS_LEN))
                    ) {
                        f(&extents, kept);
                    }
                }
            });
        }
    });
}

/// The size of a BufferExtents record, the first of a version-5 buffer.
const EXTENTS_LEN: usize = 16;

/// How many bytes at the start of `buffer` are whole records.
fn whole_records(buffer: &[u8]) -> usize {
    let mut at = 0;
    while let Some(rest) = buffer.get(at..).filter(|r| !r.is_empty()) {
        match Record::parse(Version::V5, rest) {
            Ok((_, len)) if len > 0 => at += len,
            _ => break,
        }
    }
    at
}

/// The records a user recorded in an FDR buffer: function records and events,
/// not the runtime's own loss markers. Stops at the first record that does not
/// parse (a buffer's unused tail).
fn records_in(buffer: &[u8]) -> u64 {
    let mut n = 0;
    let mut at = 0;
    while let Some(rest) = buffer.get(at..) {
        let Ok((record, len)) = Record::parse(Version::V5, rest) else {
            break;
        };
        match record {
            Record::Function { .. } | Record::CustomEvent { .. } => n += 1,
            Record::TypedEvent { event_type, .. } if event_type != LOSS_EVENT_TYPE => n += 1,
            _ => {}
        }
        at += len;
    }
    n
}

/// The line a fatal-signal dump prints when it writes no trace, and why.
/// Async-signal-safe.
fn nothing_written(why: &[u8]) {
    output::stderr_raw(&[
        b"XRay: flightrec: fatal signal; no trace written: ",
        why,
        b"\n",
    ]);
}

/// The line a fatal-signal dump prints when it cannot write `path`.
/// Async-signal-safe.
fn fatal_failed(path: &[u8], errno: i32, renamed: bool) {
    let head: [&[u8]; 4] = [
        b"XRay: flightrec: fatal signal; cannot write '",
        path,
        b"': ",
        output::reason_static(errno),
    ];
    let tail: [&[u8]; 3] = if renamed {
        [b"; the part written is in '", path, b".incomplete'\n"]
    } else {
        [b"\n", b"", b""]
    };
    output::stderr_raw(&[
        head[0], head[1], head[2], head[3], tail[0], tail[1], tail[2],
    ]);
}

/// The names file of the current names at `path`, written whole (the
/// `errno` of a failure). Async-signal-safe.
///
/// No file when the runtime was told the program is its own map and no
/// function has a name (`names::names_file_only_when_named`).
pub(super) fn write_names_file(path: &CStr) -> Result<(), i32> {
    if !names::names_file_wanted() {
        return Ok(());
    }
    let file = RawFile::create(path, false)?;
    let mut sink = FdSink::new(&file);
    let ok = names::write_names_elf(&mut sink, names::max_named_id());
    let result = match sink.flush() {
        Err(e) => Err(e),
        Ok(()) if ok => Ok(()),
        Ok(()) => Err(libc::EIO),
    };
    if result.is_err() {
        // A names file cut short (a full disk) would pass for a whole one, or
        // be empty: none at all.
        // SAFETY: a NUL-terminated path; unlink is async-signal-safe.
        unsafe { libc::unlink(path.as_ptr()) };
    }
    result
}

/// Streaming: the writer thread, once it runs.
static WRITER: OnceLock<Thread> = OnceLock::new();

/// What streaming rings' recorders call after handing over a buffer
/// ([`Consumer::set_buffer_ready`]): wakes the writer the moment
/// a thread hands over a full buffer, so that a burst is written while it happens
/// instead of filling the ring before the next interval and being dropped. Once per
/// buffer, never per record. Safe from a signal handler on Linux, where
/// `Thread::unpark` is an atomic swap and at most one `futex` wake.
///
/// [`Consumer::set_buffer_ready`]: flightrec_core::fdr::ring::Consumer::set_buffer_ready
pub(super) fn wake_writer() {
    if let Some(writer) = WRITER.get() {
        writer.unpark();
    }
}

/// Streaming: the writer thread. It drains every ring when a recorder wakes it
/// ([`wake_writer`]) and at least every `flush_interval_ms`, which also picks up
/// the partly filled buffers of threads that exited.
pub(super) fn writer_loop(rt: &'static Runtime) {
    /// Says the writer has left its loop, however it leaves.
    struct Leaving(&'static Runtime);
    impl Drop for Leaving {
        fn drop(&mut self) {
            self.0.writer_active.store(false, Ordering::Release);
        }
    }
    let _leaving = Leaving(rt);
    let interval = Duration::from_millis(u64::from(rt.config.flush_interval_ms));
    let mut names_written = 0;
    rt.writer_tid.store(current_tid(), Ordering::Relaxed);
    let _ = WRITER.set(std::thread::current());
    loop {
        if STATE.load(Ordering::Acquire) == FINISHED || rt.writer_stop.load(Ordering::Acquire) {
            return;
        }
        if !rt.drain() {
            rt.stream_failed();
            return;
        }
        rt.refresh_names(&mut names_written);
        std::thread::park_timeout(interval);
    }
}

/// See [`super::dump`].
pub(crate) fn dump() -> Result<Option<PathBuf>, Error> {
    let rt = runtime().ok_or(Error::NotInitialized)?;
    if rt.config.no_file_flush
        || rt.forked_stream.load(Ordering::Relaxed)
        || STATE.load(Ordering::Acquire) == FINISHED
    {
        return Ok(None);
    }
    match rt.config.mode {
        Mode::FlightRecorder => rt.dump_flight_recorder(),
        Mode::Streaming => rt.dump_streaming(false),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    use flightrec_core::fdr::writer::WriterConfig;
    use flightrec_core::fdr::{FunctionAction, FunctionId};

    use super::super::clock;
    use super::super::config::{Config, Mode};
    use super::super::output::RawFile;
    use super::super::pool::{Pool, LIVE};
    use super::super::runtime::Runtime;
    use super::{writer_loop, END_BLOCK_SIZE};

    /// A streaming runtime (not installed) writing to a file in `dir`, with one
    /// live ring of two 256-byte buffers holding `pairs` enter/exit pairs, the
    /// last buffer published (as `flush_all` would).
    fn streaming_runtime(dir: &std::path::Path, pairs: usize) -> &'static Runtime {
        let config = Config {
            mode: Mode::Streaming,
            grace_period_ms: 50,
            ..Config::default()
        };
        let pool = Pool::new(1, 2, 256).unwrap();
        let prefix = format!("{}/t.", dir.display());
        let stream = RawFile::create_unique(&prefix).unwrap();
        let frequency = clock::measure_frequency();
        let rt: &'static Runtime = Box::leak(Box::new(Runtime {
            stream: Some(stream),
            ..Runtime::new(config, frequency, pool, Policy::Streaming)
        }));
        let (ring, _) = rt.pool.take(false).unwrap();
        let cfg = RecorderConfig::new(WriterConfig::new(7), frequency.hz.get());
        // SAFETY: the ring is locked and free.
        unsafe { ring.assign(Policy::Streaming, cfg, None) };
        ring.state.store(LIVE, Ordering::Release);
        // SAFETY: locked, no owner thread.
        let rec = unsafe { ring.recorder() }.unwrap();
        let id = FunctionId::new(3).unwrap();
        for _ in 0..pairs {
            rec.function(FunctionAction::Enter, id, clock::now())
                .unwrap();
            rec.function(FunctionAction::Exit, id, clock::now())
                .unwrap();
        }
        rec.flush();
        ring.unlock();
        rt
    }

    fn trace_len(rt: &Runtime) -> u64 {
        std::fs::metadata(&rt.stream.as_ref().unwrap().1)
            .unwrap()
            .len()
    }

    #[test]
    fn the_last_drain_writes_every_buffer_and_the_end_block() {
        let dir = tempfile::tempdir().unwrap();
        let rt = streaming_runtime(dir.path(), 10);
        assert!(rt.finish_stream());
        assert_eq!(rt.buffers_written.load(Ordering::Relaxed), 1);
        assert_eq!(rt.stats().records_unwritten, 0);
        let trace = std::fs::read(&rt.stream.as_ref().unwrap().1).unwrap();
        let (buffer, end) = trace.split_at(trace.len() - END_BLOCK_SIZE);
        assert_eq!(super::records_in(buffer), 20, "the buffer, whole");
        assert_eq!(end[0] & 1, 1, "then the end block's metadata records");
        assert_eq!(super::records_in(end), 0);
    }

    #[test]
    fn a_file_held_past_the_grace_period_counts_what_it_could_not_write() {
        let dir = tempfile::tempdir().unwrap();
        let rt = streaming_runtime(dir.path(), 10);
        // A writer thread stuck in a write holds the file lock.
        rt.file_lock.store(true, Ordering::Release);
        let start = Instant::now();
        assert!(
            !rt.finish_stream(),
            "the last drain did not write the trace"
        );
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(rt.write_errno.load(Ordering::Relaxed), libc::ETIMEDOUT);
        let stats = rt.stats();
        assert_eq!((stats.records_unwritten, stats.records_dropped), (20, 20));
        assert_eq!(stats.buffers_written, 0);
        assert_eq!(
            trace_len(rt),
            0,
            "nothing written while another holds the file"
        );
    }

    #[test]
    fn stopping_the_writer_waits_for_it_to_leave_and_not_longer() {
        let dir = tempfile::tempdir().unwrap();
        let rt = streaming_runtime(dir.path(), 3);
        rt.writer_active.store(true, Ordering::Release);
        let writer = std::thread::spawn(move || writer_loop(rt));
        assert!(rt.stop_writer(), "the writer leaves its loop when asked");
        writer.join().unwrap();
        assert!(!rt.writer_active.load(Ordering::Acquire));
        assert!(rt.finish_stream());
        assert_eq!(rt.buffers_written.load(Ordering::Relaxed), 1);

        // A writer that never leaves (stuck in a write) is given up on after
        // the grace period, since it finishes no buffer meanwhile.
        let rt = streaming_runtime(dir.path(), 3);
        rt.writer_active.store(true, Ordering::Release);
        let start = Instant::now();
        assert!(!rt.stop_writer());
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(50), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
    }

    #[test]
    fn records_in_counts_what_a_user_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let rt = streaming_runtime(dir.path(), 4);
        let ring = &rt.pool.rings[0];
        assert!(ring.try_lock());
        // SAFETY: locked.
        let cons = unsafe { ring.consumer() }.unwrap();
        let buf = cons.pop().unwrap();
        assert_eq!(super::records_in(&buf), 8);
        assert_eq!(super::records_in(&buf[..40]), 0, "header records only");
        assert_eq!(super::records_in(&[]), 0);
    }
}
