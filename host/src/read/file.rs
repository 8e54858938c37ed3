//! Opening a trace file for the streaming readers: a read-only memory map whose
//! resident pages are dropped every few tens of megabytes, so that reading a file
//! of any size keeps the process small.
//!
//! Only regular files are mapped. A FIFO, a socket or a device is refused before
//! it is opened (opening a FIFO would wait for a writer), and so is a directory.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use memmap2::{Mmap, UncheckedAdvice};

/// Bytes read between two drops of the mapped pages.
const RELEASE_EVERY: usize = 32 << 20;

/// Maps from this size on get a guard: a thread that drops the mapped pages
/// whenever the process's resident memory passes [`RESIDENT_LIMIT`], so that
/// a reader that walks far in one step (a long run of padding the decoder
/// skips in one go) stays bounded too.
const GUARDED_FROM: usize = 64 << 20;
/// Resident memory (bytes) past which the guard drops the mapped pages.
const RESIDENT_LIMIT: u64 = 96 << 20;
/// How often the guard looks.
const GUARD_EVERY: Duration = Duration::from_millis(10);

/// A trace file mapped read-only.
///
/// ```
/// use flightrec_host::read::file::TraceFile;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.xray");
/// std::fs::write(&path, include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
/// let file = TraceFile::open(&path).unwrap();
/// assert_eq!(file.bytes().len(), include_bytes!("../../../testdata/xray/crafted-v5.xray").len());
/// file.consumed(4096); // counts reading; drops pages now and then
///
/// // A directory is refused with the reason.
/// let err = TraceFile::open(dir.path()).unwrap_err();
/// assert!(err.to_string().contains("directory"), "{err}");
/// ```
#[derive(Debug)]
pub struct TraceFile {
    map: Option<Arc<Mmap>>,
    /// Kept for its drop: the thread stops with the file.
    _guard: Option<Guard>,
    since_release: std::cell::Cell<usize>,
    release_every: std::cell::Cell<usize>,
}

impl TraceFile {
    /// Opens and maps `path` if it is a regular file. Example on [`TraceFile`].
    pub fn open(path: &Path) -> io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        let kind = meta.file_type();
        if kind.is_dir() {
            return Err(io::Error::other("is a directory, not a trace file"));
        }
        if !kind.is_file() {
            return Err(io::Error::other(
                "not a regular file (a FIFO, socket or device cannot be converted or verified; \
                 save it to a file first)",
            ));
        }
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(Self {
                map: None,
                _guard: None,
                since_release: 0.into(),
                release_every: RELEASE_EVERY.into(),
            });
        }
        // SAFETY: the map is read-only and private. Its contents could change if
        // another process writes the file while it is read; the readers never
        // trust them (every record is decoded with bounds checks, and the index
        // built from the first pass is only a hint of where blocks start).
        let map = unsafe { Mmap::map(&file)? };
        let _ = map.advise(memmap2::Advice::Sequential);
        let map = Arc::new(map);
        let guard = (map.len() >= GUARDED_FROM).then(|| Guard::start(map.clone()));
        Ok(Self {
            map: Some(map),
            _guard: guard,
            since_release: 0.into(),
            release_every: RELEASE_EVERY.into(),
        })
    }

    /// Drops the resident pages every `bytes` read instead of every 32 MiB (at
    /// least 1 MiB): several files read at once share the budget of one.
    ///
    /// ```
    /// use flightrec_host::read::file::TraceFile;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("t.xray");
    /// std::fs::write(&path, include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
    /// let file = TraceFile::open(&path).unwrap();
    /// file.set_release_every(8 << 20);
    /// file.consumed(9 << 20); // past 8 MiB: the pages are dropped
    /// assert_eq!(file.bytes()[0], 5); // and read again when used
    /// ```
    pub fn set_release_every(&self, bytes: usize) {
        self.release_every.set(bytes.max(1 << 20));
    }

    /// The file's bytes. Example on [`TraceFile`].
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().map_or(&[], |m| &m[..])
    }

    /// Counts `n` bytes read; past `RELEASE_EVERY` (32 MiB), drops every resident page of
    /// the map (they come back from the page cache when read again). Example on
    /// [`TraceFile`].
    pub fn consumed(&self, n: usize) {
        let total = self.since_release.get().saturating_add(n);
        if total < self.release_every.get() {
            self.since_release.set(total);
            return;
        }
        self.since_release.set(0);
        if let Some(map) = &self.map {
            // SAFETY: MADV_DONTNEED on a private read-only file mapping only
            // drops the process's copies of the pages; the next access reads them
            // again from the file, so every slice into the map stays valid and
            // keeps its contents.
            let _ = unsafe { map.unchecked_advise_range(UncheckedAdvice::DontNeed, 0, map.len()) };
        }
    }
}

/// Drops a map's resident pages whenever the process's resident memory
/// passes [`RESIDENT_LIMIT`], until dropped itself. Where `/proc/self/status`
/// cannot be read it stops at once (the readers' own releases remain).
#[derive(Debug)]
struct Guard {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Guard {
    fn start(map: Arc<Mmap>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("flightrec-pages".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    let Some(resident) = resident_bytes() else {
                        return;
                    };
                    if resident > RESIDENT_LIMIT {
                        // SAFETY: as in `TraceFile::consumed`: a private
                        // read-only file mapping; dropped pages are read
                        // again from the file, every slice stays valid.
                        let _ = unsafe {
                            map.unchecked_advise_range(UncheckedAdvice::DontNeed, 0, map.len())
                        };
                    }
                    std::thread::sleep(GUARD_EVERY);
                }
            })
            .ok();
        Self { stop, thread }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // It wakes within GUARD_EVERY and sees the flag.
            let _ = t.join();
        }
    }
}

/// The process's resident memory, from `VmRSS` in `/proc/self/status`.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
