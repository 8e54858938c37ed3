//! Streaming expansion of an FDR file: the same events as [`crate::read::trace::load`],
//! produced one at a time from the file's bytes, in memory bounded by the number
//! of threads and blocks, never by the number of records.
//!
//! Three steps:
//!
//! 1. [`scan`] verifies the file (the core's decoder and block verifier, exactly
//!    as [`flightrec_core::fdr::decoder::verify`] does) and, in the same pass,
//!    indexes where each block starts, per thread (keyed by process and thread
//!    as llvm-xray's block index is).
//! 2. A [`ThreadCursor`] walks one thread's blocks from the index and expands
//!    their records into events ([`Index::thread_events`]): threads one after the
//!    other, in llvm-xray's order, is what the Chrome and Perfetto writers read.
//! 3. [`Index::merged`] yields every event in TSC order, the order of a stable
//!    sort of the thread-ordered events (what `llvm-xray convert` prints). Each
//!    thread's events are split into runs of non-decreasing TSC (one run per
//!    thread in a well-formed trace), and the runs are merged with ties broken by
//!    their position in the thread order: that is exactly a stable sort, with one
//!    cursor per run instead of the whole trace in memory.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use flightrec_core::fdr::decoder::{
    decode_record, BlockVerifier, DecodeError, DecodeErrorKind, Decoded, Decoder, Summary,
    VerifyError,
};
use flightrec_core::fdr::end::EndCheck;
use flightrec_core::fdr::header::HEADER_SIZE;
use flightrec_core::fdr::records::{MetadataKind, Record};
use flightrec_core::fdr::{FileHeader, Version};

use crate::progress::Progress;

use super::events::{Expander, XEvent};
use super::file::TraceFile;
use super::order::{llvm_block_order, llvm_thread_order};

/// How often (in bytes of input) [`scan`] reports its progress.
const REPORT_EVERY: usize = 1 << 20;

/// Where a block starts: its NewBuffer record, and how many bytes of the current
/// buffer the decoder had left before it (versions 3 and up count them).
#[derive(Clone, Copy, Debug)]
struct BlockStart {
    offset: u64,
    remaining: u32,
    /// Its WalltimeMarker (seconds, microseconds), by which llvm-xray orders a
    /// thread's blocks.
    wall: (u64, u32),
}

/// One thread of llvm-xray's block index.
#[derive(Debug)]
struct ThreadBlocks {
    /// (process, thread) as the file's records give them.
    key: (u64, i32),
    /// In file order.
    blocks: Vec<BlockStart>,
    /// llvm-xray's order (indexes of `blocks`), when it is not the file's.
    llvm: Option<Vec<u32>>,
}

/// A verified file's summary and block index.
///
/// ```
/// use flightrec_host::read::index::{scan, Merged, ThreadCursor};
///
/// let bytes = include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray");
/// let index = scan(bytes, &mut |_| {}).unwrap();
/// assert_eq!((index.summary().buffers, index.threads()), (3, 2));
/// assert_eq!(index.header().version.number(), 5);
/// // Threads one after the other (what `expand::load` lists)...
/// let mut tids = Vec::new();
/// for t in 0..index.threads() {
///     let mut cursor: ThreadCursor = index.thread_events(bytes, t);
///     while let Some(e) = cursor.next_event() {
///         tids.push(e.thread);
///     }
///     assert!(cursor.take_read() > 0); // record bytes read, for page release
/// }
/// assert_eq!(tids, [101, 101, 101, 101, 202, 202]);
/// // ...or merged in TSC order (what `llvm-xray convert` prints).
/// let mut merged: Merged = index.merged(bytes);
/// let mut tscs = Vec::new();
/// while let Some(e) = merged.next_event() {
///     tscs.push(e.tsc);
/// }
/// assert!(merged.take_read() > 0);
/// // The same, counting the bytes the run-finding walks read.
/// let mut read = 0;
/// let mut again = index.merged_releasing(bytes, &mut |n| read += n);
/// assert_eq!(again.next_event().unwrap().tsc, 1_000_000);
/// assert_eq!(tscs, [1_000_000, 1_000_050, 1_000_100, 1_000_650, 1_000_700, 1_000_900]);
/// // Each thread's blocks in file order (what the timeline reads): the same
/// // events, as this file's wall-time markers grow.
/// let mut in_file = index.merged_in_file_order(bytes, &mut |_| {});
/// let mut file_tscs = Vec::new();
/// while let Some(e) = in_file.next_event() {
///     file_tscs.push(e.tsc);
/// }
/// assert_eq!(file_tscs, tscs);
///
/// // A file the verifier rejects is not indexed.
/// let bad = scan(include_bytes!("../../../testdata/xray/bad-fn-action5.xray"), &mut |_| {});
/// assert_eq!(bad.unwrap_err().offset, 112);
/// ```
#[derive(Debug)]
pub struct Index {
    summary: Summary,
    /// Threads in llvm-xray's iteration order.
    threads: Vec<ThreadBlocks>,
}

/// Verifies `bytes` and indexes its blocks per thread, calling `progress` with
/// the offset reached every mebibyte. Example on [`Index`].
///
/// The verdict is [`flightrec_core::fdr::decoder::verify`]'s, error offsets
/// included.
pub fn scan(bytes: &[u8], progress: &mut dyn FnMut(usize)) -> Result<Index, DecodeError> {
    let (index, cut) = scan_cut_short(bytes, progress)?;
    match cut {
        Some(e) => Err(e),
        None => Ok(index),
    }
}

/// [`scan`], except that a file cut short between two buffers (its header
/// promises an [end block](flightrec_core::fdr::end) it does not end with:
/// [`DecodeErrorKind::CutShort`]) is indexed with the buffers it holds, the
/// error given beside the index. What `convert` reads a crashed trace with.
///
/// ```
/// use flightrec_host::core::fdr::decoder::DecodeErrorKind;
/// use flightrec_host::core::fdr::end::EndBlock;
/// use flightrec_host::core::fdr::ring::RecorderConfig;
/// use flightrec_host::core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
/// use flightrec_host::core::fdr::{HeaderFlags, Version};
/// use flightrec_host::read::index::{scan, scan_cut_short};
///
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
/// let mut file = cfg.file_header(128).with_flags(HeaderFlags::END_BLOCK).to_bytes().to_vec();
/// let mut buf = [0u8; 128];
/// let w = BufferWriter::new(&mut buf, &cfg.writer, Walltime::default()).unwrap();
/// file.extend_from_slice(w.finish());
/// // No end block: cut short, yet its buffer is indexed.
/// let (index, cut) = scan_cut_short(&file, &mut |_| {}).unwrap();
/// assert_eq!(index.summary().buffers, 1);
/// assert_eq!(cut.unwrap().kind, DecodeErrorKind::CutShort { buffers: 1 });
/// assert!(scan(&file, &mut |_| {}).is_err());
/// let end = EndBlock { buffers: 1, pid: 0, closed: Walltime::default() };
/// file.extend_from_slice(&end.to_bytes(Version::V5).unwrap());
/// assert!(scan_cut_short(&file, &mut |_| {}).unwrap().1.is_none());
/// ```
pub fn scan_cut_short(
    bytes: &[u8],
    progress: &mut dyn FnMut(usize),
) -> Result<(Index, Option<DecodeError>), DecodeError> {
    scan_inner(bytes, progress, true)
}

/// [`scan`]'s verdict and summary without the block index: memory that does
/// not grow with the number of buffers (what `verify` needs).
///
/// ```
/// use flightrec_host::read::index::{scan, verify_only};
/// let bytes = include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray");
/// assert_eq!(verify_only(bytes, &mut |_| {}).unwrap(), *scan(bytes, &mut |_| {}).unwrap().summary());
/// let bad = include_bytes!("../../../testdata/xray/bad-fn-action5.xray");
/// assert_eq!(verify_only(bad, &mut |_| {}).unwrap_err().offset, 112);
/// ```
pub fn verify_only(bytes: &[u8], progress: &mut dyn FnMut(usize)) -> Result<Summary, DecodeError> {
    match scan_inner(bytes, progress, false)? {
        (_, Some(cut)) => Err(cut),
        (index, None) => Ok(index.summary),
    }
}

fn scan_inner(
    bytes: &[u8],
    progress: &mut dyn FnMut(usize),
    keep_blocks: bool,
) -> Result<(Index, Option<DecodeError>), DecodeError> {
    let mut decoder = Decoder::new(bytes)?;
    let header = *decoder.header();
    let extents_enforced = header.version >= Version::V3;
    let mut summary = Summary {
        header,
        buffers: 0,
        extents: 0,
        function_records: 0,
        metadata_records: 0,
        custom_events: 0,
        typed_events: 0,
        call_arguments: 0,
        skipped_bytes: 0,
        end_block: false,
    };
    let mut verifier = BlockVerifier::new();
    let mut end = EndCheck::new(&header);
    let mut block_start = HEADER_SIZE;
    let mut remaining: u32 = 0;
    let mut next_report = REPORT_EVERY;

    let mut keys: Vec<(u64, i32)> = Vec::new();
    let mut thread_of: HashMap<(u64, i32), usize> = HashMap::new();
    let mut blocks: Vec<Vec<BlockStart>> = Vec::new();
    // The block being read: its key so far and where it starts.
    let mut open: Option<((u64, i32), BlockStart)> = None;
    let mut close = |open: Option<((u64, i32), BlockStart)>| {
        if let Some((key, start)) = open {
            let t = *thread_of.entry(key).or_insert_with(|| {
                keys.push(key);
                blocks.push(Vec::new());
                keys.len() - 1
            });
            if keep_blocks {
                blocks[t].push(start);
            }
        }
    };

    while let Some(item) = decoder.next() {
        let decoded = item?;
        end.feed(&decoded)?;
        let Decoded { offset, record } = decoded;
        let len = decoder.offset() - offset;
        verifier.feed(&record).map_err(|e| {
            let at = match e {
                VerifyError::InvalidTerminal { .. } => block_start,
                _ => offset,
            };
            DecodeError::new(at, DecodeErrorKind::Grammar(e))
        })?;
        let bump = |n: &mut usize| *n = n.saturating_add(1);
        if record.is_metadata() {
            bump(&mut summary.metadata_records);
        }
        match record {
            Record::Function { .. } => bump(&mut summary.function_records),
            Record::NewBuffer { tid } => {
                bump(&mut summary.buffers);
                block_start = offset;
                close(open.take());
                open = Some((
                    (0, tid),
                    BlockStart {
                        offset: offset as u64,
                        remaining,
                        wall: (0, 0),
                    },
                ));
            }
            Record::BufferExtents { .. } => bump(&mut summary.extents),
            Record::CustomEvent { .. } => bump(&mut summary.custom_events),
            Record::TypedEvent { .. } => bump(&mut summary.typed_events),
            Record::CallArgument { .. } => bump(&mut summary.call_arguments),
            Record::Pid { pid } => {
                if let Some((key, _)) = &mut open {
                    key.0 = i64::from(pid) as u64;
                }
            }
            Record::Walltime { seconds, micros } => {
                if let Some((_, start)) = &mut open {
                    start.wall = (seconds as u64, micros);
                }
            }
            _ => {}
        }
        if let Record::BufferExtents { size } = record {
            remaining = size as u32;
        } else if extents_enforced {
            remaining = remaining.saturating_sub(len as u32);
        }
        if offset >= next_report {
            progress(offset);
            next_report = offset.saturating_add(REPORT_EVERY);
        }
    }
    verifier.finish().map_err(|e| {
        let at = match e {
            // Only a header, where the header promises an end block: cut short.
            VerifyError::NoBuffers => match end.finish(bytes.len()) {
                Err(cut) => return cut,
                Ok(_) => bytes.len(),
            },
            _ => block_start,
        };
        DecodeError::new(at, DecodeErrorKind::Grammar(e))
    })?;
    summary.skipped_bytes = decoder.skipped_bytes();
    let (end_block, cut) = match end.finish(bytes.len()) {
        Ok(at) => (at, None),
        Err(
            e @ DecodeError {
                kind: DecodeErrorKind::CutShort { .. },
                ..
            },
        ) => (None, Some(e)),
        Err(e) => return Err(e),
    };
    let summary = summary.with_end_block(end_block);
    // The end block holds no event: it is not one of the threads' blocks.
    if end_block.is_none() {
        close(open.take());
    }
    progress(bytes.len());

    let mut slots: Vec<Option<Vec<BlockStart>>> = blocks.into_iter().map(Some).collect();
    let threads = llvm_thread_order(&keys)
        .into_iter()
        .filter_map(|t| Some((keys[t], slots[t].take()?)))
        .map(|(key, blocks)| {
            // In llvm-xray's order: sorted by wall time as `llvm::sort` does.
            let walls: Vec<(u64, u32)> = blocks.iter().map(|b| b.wall).collect();
            let order = llvm_block_order(&walls);
            drop(walls);
            // Four bytes a block, and none when it is the file's order.
            let llvm = (!order.iter().enumerate().all(|(i, k)| i == *k))
                .then(|| order.into_iter().map(|k| k as u32).collect());
            ThreadBlocks { key, blocks, llvm }
        })
        .collect();
    Ok((Index { summary, threads }, cut))
}

impl Index {
    /// What the verifier counted. Example on [`Index`].
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// The file header. Example on [`Index`].
    pub fn header(&self) -> &FileHeader {
        &self.summary.header
    }

    /// The process and thread ids of thread `t` (of [`Index::threads`]), as
    /// its records give them.
    ///
    /// ```
    /// use flightrec_host::read::index::scan;
    /// let bytes = include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray");
    /// let index = scan(bytes, &mut |_| {}).unwrap();
    /// let mut keys: Vec<(u64, i32)> = (0..index.threads()).map(|t| index.thread_key(t)).collect();
    /// keys.sort();
    /// assert_eq!(keys, [(4242, 101), (4242, 202)]);
    /// ```
    pub fn thread_key(&self, t: usize) -> (u64, i32) {
        self.threads[t].key
    }

    /// Number of threads (distinct process and thread pairs). Example on [`Index`].
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// A cursor over the events of thread `t` (in llvm-xray's thread order) of the
    /// file `bytes` this index was built from. Example on [`Index`].
    pub fn thread_events<'a>(&'a self, bytes: &'a [u8], t: usize) -> ThreadCursor<'a> {
        self.cursor(bytes, t, true)
    }

    /// A cursor over thread `t`'s blocks in llvm-xray's order (`llvm`) or in
    /// the file's.
    fn cursor<'a>(&'a self, bytes: &'a [u8], t: usize, llvm: bool) -> ThreadCursor<'a> {
        let thread = self.threads.get(t);
        let blocks = thread.map_or(&[][..], |t| &t.blocks[..]);
        let order = thread.and_then(|t| t.llvm.as_deref()).filter(|_| llvm);
        ThreadCursor {
            bytes,
            version: self.summary.header.version,
            blocks,
            order,
            next_block: 0,
            walker: None,
            expander: Expander::new(self.summary.header.version),
            finished: false,
            produced: 0,
            read: 0,
        }
    }

    /// Every event of the file `bytes` in TSC order, ties in thread order (a stable
    /// sort of the thread-ordered events). Example on [`Index`].
    ///
    /// Memory: one cursor per run of non-decreasing TSC in a thread; finding the
    /// runs costs one extra expansion pass over the file.
    pub fn merged<'a>(&'a self, bytes: &'a [u8]) -> Merged<'a> {
        self.merged_releasing(bytes, &mut |_| {})
    }

    /// [`Index::merged`], calling `read` with the bytes read by the walks that
    /// find the runs (for [`crate::read::file::TraceFile::consumed`]). Example on
    /// [`Index`].
    pub fn merged_releasing<'a>(
        &'a self,
        bytes: &'a [u8],
        read: &mut dyn FnMut(usize),
    ) -> Merged<'a> {
        self.merged_in(bytes, read, true)
    }

    /// Every event in TSC order, each thread's blocks expanded in the order
    /// the file holds them instead of llvm-xray's (which differs only when
    /// blocks' wall-time markers do not both grow: llvm's comparator then
    /// shuffles them, and each shuffled block would be a run of its own).
    /// The same events at the same times, with memory bounded by the
    /// threads, not the buffers; what the timeline reads. Example on
    /// [`Index`].
    pub fn merged_in_file_order<'a>(
        &'a self,
        bytes: &'a [u8],
        read: &mut dyn FnMut(usize),
    ) -> Merged<'a> {
        self.merged_in(bytes, read, false)
    }

    fn merged_in<'a>(
        &'a self,
        bytes: &'a [u8],
        read: &mut dyn FnMut(usize),
        llvm: bool,
    ) -> Merged<'a> {
        let mut runs: Vec<ThreadCursor<'a>> = Vec::new();
        for t in 0..self.threads.len() {
            // Where this thread's TSC goes down: the ordinals of run starts.
            let mut starts = Vec::new();
            let mut cursor = self.cursor(bytes, t, llvm);
            let mut last: Option<u64> = None;
            while let Some(e) = cursor.next_event() {
                if last.is_some_and(|l| e.tsc < l) {
                    starts.push(cursor.produced - 1);
                }
                last = Some(e.tsc);
                if cursor.produced % 4096 == 0 {
                    read(cursor.take_read());
                }
            }
            // One cursor at each run start, taken along a second walk.
            let mut cursor = self.cursor(bytes, t, llvm);
            runs.push(cursor.clone());
            for start in starts {
                while cursor.produced < start {
                    cursor.next_event();
                    if cursor.produced % 4096 == 0 {
                        read(cursor.take_read());
                    }
                }
                runs.push(cursor.clone());
            }
        }
        let mut heap = BinaryHeap::with_capacity(runs.len());
        let mut heads = Vec::with_capacity(runs.len());
        for (i, run) in runs.iter_mut().enumerate() {
            let head = run.next_event();
            if let Some(e) = &head {
                heap.push(Reverse((e.tsc, i)));
            }
            heads.push(head);
        }
        // A run stops where the next run of its thread starts (the ordinal of
        // that run's first event).
        let mut ends: Vec<Option<u64>> = vec![None; runs.len()];
        for i in 1..runs.len() {
            if std::ptr::eq(runs[i - 1].blocks, runs[i].blocks) {
                ends[i - 1] = Some(runs[i].produced - 1);
            }
        }
        Merged {
            runs,
            ends,
            heads,
            heap,
        }
    }
}

/// Walks the records of one block the way the core's [`Decoder`] delimits them,
/// from the block's NewBuffer up to the next NewBuffer or the end of the file.
#[derive(Clone, Debug)]
struct BlockWalker {
    offset: usize,
    remaining: u32,
    started: bool,
}

impl BlockWalker {
    /// The next record and its length, or `None` at the end of the block.
    fn next<'a>(&mut self, bytes: &'a [u8], version: Version) -> Option<(Record<'a>, usize)> {
        let extents_enforced = version >= Version::V3;
        loop {
            let rest = bytes.get(self.offset..).filter(|r| !r.is_empty())?;
            if extents_enforced && self.remaining == 0 {
                let tag = MetadataKind::BufferExtents.tag();
                let skip = rest.iter().position(|&b| b == tag)?;
                self.offset += skip;
            }
            let rest = &bytes[self.offset..];
            let (record, len) = match decode_record(version, rest) {
                Ok(ok) => ok,
                // A BufferExtents cut short at the end of the file, as the decoder
                // reads it.
                Err(_) if rest.first() == Some(&MetadataKind::BufferExtents.tag()) => {
                    let size = rest.get(1..9)?;
                    let size = u64::from_le_bytes(size.try_into().ok()?);
                    (Record::BufferExtents { size }, rest.len())
                }
                // The file was verified: it changed under us. Stop here.
                Err(_) => return None,
            };
            match record {
                Record::BufferExtents { size } => {
                    self.remaining = size as u32;
                    self.offset += len;
                    continue;
                }
                Record::NewBuffer { .. } if self.started => return None,
                _ => {}
            }
            if extents_enforced {
                if len > self.remaining as usize {
                    return None;
                }
                self.remaining -= len as u32;
            }
            self.started = true;
            self.offset += len;
            return Some((record, len));
        }
    }
}

/// The events of one thread, expanded as they are read. Example on [`Index`].
#[derive(Clone, Debug)]
pub struct ThreadCursor<'a> {
    bytes: &'a [u8],
    version: Version,
    blocks: &'a [BlockStart],
    /// The order to walk `blocks` in (llvm-xray's), or `None`: the file's.
    order: Option<&'a [u32]>,
    next_block: usize,
    walker: Option<BlockWalker>,
    expander: Expander,
    finished: bool,
    produced: u64,
    read: usize,
}

impl std::fmt::Debug for Expander {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Expander")
    }
}

impl ThreadCursor<'_> {
    /// The next event, or `None` after the thread's last one. Example on [`Index`].
    pub fn next_event(&mut self) -> Option<XEvent> {
        loop {
            if let Some(e) = self.expander.out.pop() {
                self.produced += 1;
                return Some(e);
            }
            if self.finished {
                return None;
            }
            let walker = match &mut self.walker {
                Some(w) => w,
                None => match self
                    .order
                    .map_or(Some(self.next_block), |o| {
                        o.get(self.next_block).map(|k| *k as usize)
                    })
                    .and_then(|k| self.blocks.get(k))
                {
                    Some(start) => {
                        self.next_block += 1;
                        self.walker.insert(BlockWalker {
                            offset: usize::try_from(start.offset).unwrap_or(usize::MAX),
                            remaining: start.remaining,
                            started: false,
                        })
                    }
                    None => {
                        self.finished = true;
                        self.expander.reset_current();
                        continue;
                    }
                },
            };
            match walker.next(self.bytes, self.version) {
                Some((record, len)) => {
                    self.read += len;
                    self.expander.visit(&record);
                }
                None => self.walker = None,
            }
        }
    }

    /// Bytes of records read since the last call (for the page release of
    /// [`crate::read::file::TraceFile::consumed`]). Example on [`Index`].
    pub fn take_read(&mut self) -> usize {
        std::mem::take(&mut self.read)
    }
}

/// Every event in TSC order. Example on [`Index`].
#[derive(Debug)]
pub struct Merged<'a> {
    runs: Vec<ThreadCursor<'a>>,
    /// The ordinal (in its thread) of the first event after each run, for runs
    /// followed by another run of the same thread.
    ends: Vec<Option<u64>>,
    heads: Vec<Option<XEvent>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Merged<'_> {
    /// The next event in TSC order. Example on [`Index`].
    pub fn next_event(&mut self) -> Option<XEvent> {
        let Reverse((_, i)) = self.heap.pop()?;
        let event = self.heads[i].take();
        let run = &mut self.runs[i];
        let at_end = self.ends[i].is_some_and(|end| run.produced >= end);
        if !at_end {
            if let Some(e) = run.next_event() {
                self.heap.push(Reverse((e.tsc, i)));
                self.heads[i] = Some(e);
            }
        }
        event
    }

    /// Bytes of records read since the last call. Example on [`Index`].
    pub fn take_read(&mut self) -> usize {
        self.runs.iter_mut().map(ThreadCursor::take_read).sum()
    }
}

/// Verifies and indexes a mapped file, showing the pass on `progress`.
///
/// ```
/// use flightrec_host::progress::Progress;
/// use flightrec_host::read::file::TraceFile;
/// use flightrec_host::read::index::{scan_file, scan_file_cut_short};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.xray");
/// std::fs::write(&path, include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// let file = TraceFile::open(&path).unwrap();
/// let quiet = Progress::new(true);
/// assert_eq!(scan_file(&file, &quiet).unwrap().threads(), 2);
/// let (index, cut) = scan_file_cut_short(&file, &quiet).unwrap();
/// assert!(cut.is_none() && index.threads() == 2);
/// ```
pub fn scan_file(file: &TraceFile, progress: &Progress) -> Result<Index, DecodeError> {
    let (index, cut) = scan_file_cut_short(file, progress)?;
    match cut {
        Some(e) => Err(e),
        None => Ok(index),
    }
}

/// [`scan_file`], a file cut short between buffers indexed all the same (see
/// [`scan_cut_short`]). Example on [`scan_file`].
pub fn scan_file_cut_short(
    file: &TraceFile,
    progress: &Progress,
) -> Result<(Index, Option<DecodeError>), DecodeError> {
    let bytes = file.bytes();
    progress.pass(bytes.len() as u64, "verifying");
    let mut last = 0usize;
    scan_cut_short(bytes, &mut |at| {
        file.consumed(at.saturating_sub(last));
        last = at;
        progress.advance(at as u64);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flightrec_core::clock::Timestamp;
    use flightrec_core::fdr::ring::RecorderConfig;
    use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    use flightrec_core::fdr::FunctionId;

    /// Two threads, several buffers each, whose clocks jump back now and then
    /// (CPU migrations): the merge must still be a stable sort.
    fn jumpy_file() -> Vec<u8> {
        let cfgs: Vec<RecorderConfig> = (0..2)
            .map(|t| RecorderConfig::new(WriterConfig::new(7 + t).with_pid(9), 1_000_000))
            .collect();
        let mut file = cfgs[0].file_header(256).to_bytes().to_vec();
        let mut rng = 12345u64;
        let mut tsc = [5_000u64, 5_000];
        for b in 0..12 {
            let t = b % 2;
            let mut buf = [0u8; 256];
            let mut w = BufferWriter::new(&mut buf, &cfgs[t].writer, Walltime::default()).unwrap();
            for _ in 0..8 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                // Mostly forward, sometimes back by up to 300 ticks, sometimes
                // to the same time as the other thread.
                tsc[t] = match rng % 8 {
                    0 => tsc[t].saturating_sub(rng % 300),
                    1 => tsc[1 - t],
                    _ => tsc[t] + rng % 50,
                };
                let cpu = (rng >> 8) as u16 % 3;
                let ts = Timestamp { tsc: tsc[t], cpu };
                let id = FunctionId::new(1 + (rng >> 16) as u32 % 4).unwrap();
                if w.enter(id, ts).is_err() {
                    break;
                }
            }
            let n = w.len();
            file.extend_from_slice(&buf[..n]);
        }
        file
    }

    #[test]
    fn merge_is_a_stable_sort_even_when_clocks_go_back() {
        let bytes = jumpy_file();
        let trace = crate::read::trace::load(&bytes).unwrap();
        let sorted: Vec<XEvent> = trace.sorted_events().into_iter().cloned().collect();
        let index = scan(&bytes, &mut |_| {}).unwrap();
        let mut merged = index.merged(&bytes);
        let mut got = Vec::new();
        while let Some(e) = merged.next_event() {
            got.push(e);
        }
        // The file really has runs (times going back within a thread).
        let back = trace
            .events
            .windows(2)
            .filter(|w| w[0].thread == w[1].thread && w[1].tsc < w[0].tsc);
        assert!(back.count() > 3);
        assert_eq!(got, sorted);
    }

    #[test]
    fn scan_agrees_with_the_core_verifier_on_every_vector() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/xray");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "xray") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let ours = scan(&bytes, &mut |_| {}).map(|i| *i.summary());
            let core = flightrec_core::fdr::decoder::verify(&bytes);
            assert_eq!(ours, core, "{}", path.display());
        }
    }
}
