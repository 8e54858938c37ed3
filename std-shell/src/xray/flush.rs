//! Writing the trace: flight-recorder dumps, the streaming writer thread and its
//! drain, the names file, and the dump a fatal signal makes.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::config::Mode;
use super::names::{self, Sink};
use super::output::{self, names_path, FdSink, RawFile};
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
        paused.for_each_used_ring(|r| {
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
    fn count_buffers(&self, paused: &Paused<'_>) -> u64 {
        let mut n = 0;
        paused.for_each_used_ring(|r| {
            // SAFETY: as in `write_rings`.
            if let Some(rec) = unsafe { r.recorder() } {
                rec.for_each_buffer(|_| n += 1);
            }
        });
        n
    }

    /// Streaming: publishes every ring's partial buffer.
    fn flush_all(&self, paused: &Paused<'_>) {
        paused.for_each_used_ring(|r| {
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

    fn write_names(&self, path: &std::ffi::CStr) -> bool {
        let Some(file) = RawFile::create(path, false) else {
            return false;
        };
        let mut sink = FdSink::new(&file);
        let ok = names::write_names_elf(&mut sink, names::max_named_id());
        sink.flush() && ok
    }

    /// Flight recorder: writes the trace now to a new file. Not for signal handlers.
    pub(super) fn dump_flight_recorder(&self) -> Result<Option<PathBuf>, Error> {
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
    pub(super) fn dump_streaming(&self, finish: bool) -> Result<Option<PathBuf>, Error> {
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
    pub(super) fn fatal_dump(&self) {
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
pub(super) fn writer_loop(rt: &'static Runtime) {
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
