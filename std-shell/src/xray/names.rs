//! Function names: a process-wide table from function id to name, and the names
//! file written beside every trace.
//!
//! Ids come from [`function_id`] (and the [`xray_fn!`](crate::xray_fn) /
//! [`xray_scope!`](crate::xray_scope) macros, one id per call site), which count up
//! from 1, or are chosen by the program and named with [`set_function_name`]. Names
//! are kept for the life of the process. Ids from 1 to [`MAX_NAMED_ID`] can have a
//! name.
//!
//! The table is written and read without locks on the reading side, so a fatal
//! signal handler can write the names file (see [`write_names_elf`]).
//!
//! ```
//! use flightrec::xray::names::{function_id, function_name};
//! let id = function_id("parse_config");
//! assert_eq!(function_name(id.get()), Some("parse_config"));
//! ```

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use flightrec_core::fdr::FunctionId;
use flightrec_core::names::file;

/// The highest id that can carry a name.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{function_name, set_function_name, MAX_NAMED_ID};
/// assert!(set_function_name(FunctionId::new(MAX_NAMED_ID).unwrap(), "last"));
/// assert!(!set_function_name(FunctionId::new(MAX_NAMED_ID + 1).unwrap(), "too far"));
/// assert_eq!(function_name(MAX_NAMED_ID + 1), None);
/// ```
pub const MAX_NAMED_ID: u32 = (1 << 20) - 1;

const CHUNK: usize = 256;
const CHUNKS: usize = (MAX_NAMED_ID as usize + 1) / CHUNK;

/// One chunk of the table: for ids `k * CHUNK ..`, the index in [`STORED`] of each
/// id's newest name, plus one (0: no name).
type Chunk = [AtomicU32; CHUNK];

/// The table, a chunk allocated on its first name and never freed.
static TABLE: [OnceLock<Box<Chunk>>; CHUNKS] = [const { OnceLock::new() }; CHUNKS];

/// Segments of [`STORED`]: segment `s` has `CHUNK << s` slots, so 25 of them hold
/// more names than a `u32` counts.
const SEGMENTS: usize = 25;

/// Every name ever stored, in order, each slot written once: renaming an id
/// stores a new name and points the id at it, so a reader never sees a slot
/// change. Segments are allocated on first use and never freed.
static STORED: [OnceLock<Box<[OnceLock<&'static str>]>>; SEGMENTS] =
    [const { OnceLock::new() }; SEGMENTS];

/// The slot of stored name `index`: segment and position in it.
fn stored_slot(index: u32) -> (usize, usize) {
    let j = u64::from(index) + CHUNK as u64;
    let segment = (j.ilog2() - CHUNK.ilog2()) as usize;
    (segment, (j - ((CHUNK as u64) << segment)) as usize)
}

/// The highest id with a name (0: none).
static MAX_ID: AtomicU32 = AtomicU32::new(0);
/// The next id [`function_id`] considers.
static NEXT_ID: AtomicU32 = AtomicU32::new(1);
/// Serialises writers (readers never take it); holds the number of names in
/// [`STORED`].
static WRITER: Mutex<u32> = Mutex::new(0);

/// The name of `id`, if it has one. Lock-free; safe in a signal handler.
///
/// ```
/// use flightrec::xray::names::{function_id, function_name};
/// let id = function_id("load_index");
/// assert_eq!(function_name(id.get()), Some("load_index"));
/// assert_eq!(function_name(id.get() + 1), None); // not handed out yet
/// assert_eq!(function_name(0), None); // 0 is never a function id
/// ```
pub fn function_name(id: u32) -> Option<&'static str> {
    if id == 0 || id > MAX_NAMED_ID {
        return None;
    }
    let chunk = TABLE[id as usize / CHUNK].get()?;
    let index = chunk[id as usize % CHUNK]
        .load(Ordering::Acquire)
        .checked_sub(1)?;
    let (segment, slot) = stored_slot(index);
    STORED[segment].get()?.get(slot)?.get().copied()
}

/// The highest id that has a name, 0 if none: what the names file covers.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{max_named_id, set_function_name};
/// assert_eq!(max_named_id(), 0);
/// set_function_name(FunctionId::new(500).unwrap(), "chosen");
/// set_function_name(FunctionId::new(20).unwrap(), "lower");
/// assert_eq!(max_named_id(), 500);
/// ```
pub fn max_named_id() -> u32 {
    MAX_ID.load(Ordering::Acquire)
}

/// Whether a trace gets a names file when no function has a name.
static UNNAMED_NAMES_FILE: AtomicBool = AtomicBool::new(true);

/// For a runtime whose program is its own instrumentation map (XRay sleds:
/// `llvm-xray account -m ./program`): from now on a trace gets a names file
/// only when some function has a name, instead of one that names nothing.
#[doc(hidden)]
pub fn names_file_only_when_named() {
    UNNAMED_NAMES_FILE.store(false, Ordering::Relaxed);
}

/// Whether the names file is written now.
pub(crate) fn names_file_wanted() -> bool {
    UNNAMED_NAMES_FILE.load(Ordering::Relaxed) || names_stored() > 0
}

/// How many names were stored so far: a writer that saw the same count has
/// the names file up to date.
static NAMES_STORED: AtomicU32 = AtomicU32::new(0);

/// The count of names stored so far (it grows on every new or changed name).
pub(crate) fn names_stored() -> u32 {
    NAMES_STORED.load(Ordering::Acquire)
}

/// Stores a name; `stored` is the count [`WRITER`] holds. `false` when
/// [`STORED`] is full (after about four billion names).
fn store(stored: &mut u32, id: u32, name: &'static str) -> bool {
    let index = *stored;
    if index == u32::MAX {
        return false;
    }
    let (segment, slot) = stored_slot(index);
    let segment =
        STORED[segment].get_or_init(|| (0..CHUNK << segment).map(|_| OnceLock::new()).collect());
    if segment[slot].set(name).is_err() {
        return false;
    }
    *stored = index + 1;
    NAMES_STORED.store(index + 1, Ordering::Release);
    let chunk =
        TABLE[id as usize / CHUNK].get_or_init(|| Box::new([const { AtomicU32::new(0) }; CHUNK]));
    // Release: a reader that sees the index sees the slot written.
    chunk[id as usize % CHUNK].store(index + 1, Ordering::Release);
    if id > MAX_ID.load(Ordering::Relaxed) {
        MAX_ID.store(id, Ordering::Release);
    }
    true
}

/// A new function id named `name`: the lowest id from 1 up that this table has not
/// handed out or named yet.
///
/// Past [`MAX_NAMED_ID`] the id is still new but has no name.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{function_id, set_function_name};
/// assert!(set_function_name(FunctionId::new(2).unwrap(), "chosen by the program"));
/// assert_eq!(function_id("a").get(), 1);
/// assert_eq!(function_id("b").get(), 3); // 2 is taken
/// assert_eq!(function_id("a").get(), 4); // a new id for every call
/// ```
pub fn function_id(name: &'static str) -> FunctionId {
    let mut stored = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let mut id = NEXT_ID.load(Ordering::Relaxed);
    while function_name(id).is_some() {
        id += 1;
    }
    NEXT_ID.store(id + 1, Ordering::Relaxed);
    if id <= MAX_NAMED_ID {
        store(&mut stored, id, name);
    }
    FunctionId::new(id & FunctionId::MAX).expect("masked to 28 bits")
}

/// Names an id the program chose itself. A later name for the same id replaces the
/// earlier one. Ids above [`MAX_NAMED_ID`] are ignored (returns `false`).
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{function_name, set_function_name};
/// assert!(set_function_name(FunctionId::new(900_000).unwrap(), "decode_frame"));
/// assert_eq!(function_name(900_000), Some("decode_frame"));
/// ```
pub fn set_function_name(id: FunctionId, name: &str) -> bool {
    let id = id.get();
    if id == 0 || id > MAX_NAMED_ID {
        return false;
    }
    let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
    let mut stored = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    store(&mut stored, id, name)
}

/// A byte sink that may fail; the names and trace writers use it so that the same
/// code writes to memory, to a file, or to a raw descriptor from a signal handler.
///
/// ```
/// use flightrec::xray::names::{function_id, write_names_elf, Sink};
/// /// Keeps at most `limit` bytes, then refuses everything (like a full disk).
/// struct Limited {
///     bytes: Vec<u8>,
///     limit: usize,
///     failed: bool,
/// }
/// impl Sink for Limited {
///     fn put(&mut self, bytes: &[u8]) -> bool {
///         self.failed |= self.bytes.len() + bytes.len() > self.limit;
///         if !self.failed {
///             self.bytes.extend_from_slice(bytes);
///         }
///         !self.failed
///     }
/// }
/// let id = function_id("work").get();
/// let mut whole = Vec::new(); // `Vec<u8>` is a sink that never fails
/// assert!(write_names_elf(&mut whole, id));
/// let mut short = Limited { bytes: Vec::new(), limit: 100, failed: false };
/// assert!(!write_names_elf(&mut short, id)); // the failure is reported
/// assert_eq!(short.bytes, whole[..short.bytes.len()]);
/// ```
pub trait Sink {
    /// Writes all of `bytes`; `false` if that failed. The writer then returns
    /// `false` too, but may call `put` again before it does, so a sink that
    /// failed should keep failing. Example on [`Sink`].
    fn put(&mut self, bytes: &[u8]) -> bool;
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> bool {
        self.extend_from_slice(bytes);
        true
    }
}

/// Base address (and file offset) of `.text` in the names file: function `id` is
/// the byte at `TEXT_ADDR + id - 1` (see [`flightrec_core::names::file`]).
pub use flightrec_core::names::file::TEXT_ADDR;

/// Writes the names file for ids 1 to `max_id` (normally [`max_named_id`]; at
/// most [`MAX_NAMED_ID`]): the ELF instrumentation map `llvm-xray` reads with
/// `-m FILE`, whose `flightrec_names` section holds the id-to-name table. The
/// format is [`flightrec_core::names`]'s.
///
/// Allocation-free and lock-free: safe in a signal handler with a raw-descriptor sink.
///
/// ```
/// use flightrec::core::names::{elf, table, SECTION};
/// use flightrec::xray::names::{function_id, write_names_elf};
/// let id = function_id("example::work");
/// let mut names_file = Vec::new();
/// assert!(write_names_elf(&mut names_file, id.get()));
/// let section = elf::find_section(&names_file, SECTION).unwrap().unwrap();
/// let last = table::entries(section).last().unwrap().unwrap();
/// assert_eq!((last.id, last.name), (id.get(), "example::work"));
/// ```
pub fn write_names_elf(out: &mut dyn Sink, max_id: u32) -> bool {
    let name_of = |id| function_name(id).map(str::as_bytes);
    let put = |bytes: &[u8]| out.put(bytes).then_some(()).ok_or(());
    file::write(max_id.min(MAX_NAMED_ID), name_of, put).is_ok()
}

/// Held by the unit tests that take ids from the process-wide counter, since
/// one test's expectations (consecutive ids, a name at the next id) break when
/// another takes ids at the same time.
#[cfg(test)]
pub(crate) fn counter_test_lock() -> std::sync::MutexGuard<'static, ()> {
    static COUNTER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    COUNTER.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_and_skip_named_ones() {
        let _serial = counter_test_lock();
        let a = function_id("a");
        assert!(set_function_name(
            FunctionId::new(a.get() + 1).unwrap(),
            "taken"
        ));
        let b = function_id("b");
        assert_eq!(b.get(), a.get() + 2);
        assert_eq!(function_name(a.get()), Some("a"));
        assert_eq!(function_name(b.get() + 1000), None);
        assert!(!set_function_name(
            FunctionId::new(MAX_NAMED_ID + 1).unwrap(),
            "x"
        ));
    }

    #[test]
    fn renamed_ids_read_their_newest_name() {
        let id = FunctionId::new(30_001).unwrap();
        assert!(set_function_name(id, "first"));
        assert!(set_function_name(id, "second"));
        assert_eq!(function_name(30_001), Some("second"));
    }

    #[test]
    fn stored_slots_fill_each_segment_in_order() {
        assert_eq!(stored_slot(0), (0, 0));
        assert_eq!(stored_slot(255), (0, 255));
        assert_eq!(stored_slot(256), (1, 0));
        assert_eq!(stored_slot(767), (1, 511));
        assert_eq!(stored_slot(768), (2, 0));
        let (last, at) = stored_slot(u32::MAX - 1);
        assert!(last < SEGMENTS && at < CHUNK << last);
    }

    #[test]
    fn names_file_holds_the_table_with_odd_bytes_replaced() {
        use flightrec_core::names::{elf, table, SECTION};
        let _serial = counter_test_lock();
        let id = function_id("with \"quote\" and \0 nul");
        let mut names_file = Vec::new();
        assert!(write_names_elf(&mut names_file, id.get()));
        let section = elf::find_section(&names_file, SECTION).unwrap().unwrap();
        let entry = table::entries(section)
            .map(Result::unwrap)
            .find(|e| e.id == id.get())
            .unwrap();
        assert_eq!(entry.name, "with 'quote' and _ nul");
    }
}
