//! `flightrec tasks`: a summary of an async executor's tasks from the records
//! of `flightrec-embassy` (the format is [`flightrec_core::tasks`]).
//!
//! Per task: spawns, ends, polls, wake-ups, the total and the longest poll, and
//! the time from a wake-up to the poll it caused (p50, p99, max); per executor:
//! passes over its run queue and its idle share. A task whose longest poll is
//! over a threshold is flagged: it blocked its executor (a poll that never
//! yields keeps every other task of that executor waiting).
//!
//! The inputs are FDR files of one program whose contexts share one clock (the
//! files `flightrec recv` writes, one per context: a wake-up made in an
//! interrupt handler is in that handler's file, the poll it causes in the
//! executor's); their events are merged by time, one cursor per thread, so
//! memory grows with threads and tasks, not with the files. Latency
//! percentiles come from a log-linear histogram (64 buckets per power of two,
//! values exact below 64 ticks and within 1/64 above); the maximum is exact.
//!
//! Names come from the firmware's ELF symbols: a task by the `static` that holds
//! it (embassy's task pool, `POOL` inside the task function, whose path names
//! the task), an executor by its `static`. Without an ELF they are addresses.
//!
//! ```
//! use flightrec_host::timeline::tasks::{Histogram, TaskSummary};
//! let mut h = Histogram::default();
//! for v in 1..=100 {
//!     h.add(v);
//! }
//! assert_eq!((h.quantile(0.5), h.quantile(0.99), h.max()), (50, 99, 100));
//! let s = TaskSummary::default();
//! assert_eq!(s.polls, 0);
//! ```

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use flightrec_core::fdr::decoder::DecodeError;
use flightrec_core::tasks::{key, TaskEvent, TaskEventKind, TaskFunction};

use crate::names::escape::escape;
use crate::names::statics::object_symbols;
use crate::read::events::{Kind, XEvent};
use crate::read::file::TraceFile;
use crate::read::index::{scan, ThreadCursor};

/// The typed event type of a loss marker (`flightrec: lost N records`).
const LOSS_MARKER: u16 = 0xF17C;

/// Wake-to-poll latencies in ticks: a log-linear histogram of bounded size.
///
/// ```
/// use flightrec_host::timeline::tasks::Histogram;
/// let mut h = Histogram::default();
/// assert_eq!(h.quantile(0.5), 0);
/// for v in [3, 5, 1000, 70_000] {
///     h.add(v);
/// }
/// assert_eq!((h.count(), h.max()), (4, 70_000));
/// assert_eq!(h.quantile(0.5), 5); // exact below 64
/// let p75 = h.quantile(0.75); // within 1/64 above
/// assert!((1000..=1000 + 1000 / 64).contains(&p75), "{p75}");
/// assert_eq!(h.quantile(1.0), 70_000);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    buckets: BTreeMap<u32, u64>,
    count: u64,
    max: u64,
}

impl Histogram {
    const SUB: u32 = 64;

    fn bucket(v: u64) -> u32 {
        if v < u64::from(Self::SUB) {
            return v as u32;
        }
        let exp = 63 - v.leading_zeros() - 6; // v >> exp is in 64..128
        Self::SUB + exp * Self::SUB + ((v >> exp) as u32 - Self::SUB)
    }

    fn upper(bucket: u32) -> u64 {
        if bucket < Self::SUB {
            return u64::from(bucket);
        }
        let exp = (bucket - Self::SUB) / Self::SUB;
        let mantissa = u64::from((bucket - Self::SUB) % Self::SUB + Self::SUB);
        ((mantissa + 1) << exp) - 1
    }

    /// Adds one value. Example on [`Histogram`].
    pub fn add(&mut self, v: u64) {
        *self.buckets.entry(Self::bucket(v)).or_default() += 1;
        self.count += 1;
        self.max = self.max.max(v);
    }

    /// How many values were added. Example on [`Histogram`].
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest value (exact). Example on [`Histogram`].
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value below or at which a share `q` of the values are (the upper end
    /// of its bucket, at most the maximum); 0 when empty. Example on
    /// [`Histogram`].
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (&b, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Self::upper(b).min(self.max);
            }
        }
        self.max
    }
}

/// One task's figures (times in ticks of the trace's clock). Example on
/// [`Summary`].
#[derive(Clone, Debug, Default)]
pub struct TaskSummary {
    /// The task's id (its address), when a typed event carried it.
    pub id: Option<u32>,
    /// The executor that spawned it, when known.
    pub executor: Option<u32>,
    /// Spawn events.
    pub spawns: u64,
    /// End events.
    pub ends: u64,
    /// Polls (entries of its poll id).
    pub polls: u64,
    /// Wake-ups (ready events).
    pub wakes: u64,
    /// Time in its polls.
    pub busy: u64,
    /// The longest poll.
    pub longest: u64,
    /// From the first wake-up after a poll to the start of the next poll.
    pub latency: Histogram,
    /// Its name, from the ELF.
    pub name: Option<String>,
}

/// One executor's figures. Example on [`Summary`].
#[derive(Clone, Debug, Default)]
pub struct ExecutorSummary {
    /// Passes over the run queue.
    pub passes: u64,
    /// Time in passes.
    pub busy: u64,
    /// The first pass's start and the last pass's end.
    pub span: Option<(u64, u64)>,
    /// The executor's id, when a typed event carried it.
    pub id: Option<u32>,
    /// Its name, from the ELF.
    pub name: Option<String>,
}

impl ExecutorSummary {
    /// The share of its span (first pass to last) spent outside passes.
    /// Example on [`Summary`].
    pub fn idle_share(&self) -> f64 {
        match self.span {
            Some((a, b)) if b > a => 1.0 - self.busy as f64 / (b - a) as f64,
            _ => 0.0,
        }
    }
}

/// What `flightrec tasks` found.
///
/// ```
/// use flightrec_host::timeline::tasks::{ExecutorSummary, Summary, TaskSummary};
/// let mut s = Summary { frequency: 1_000_000, ..Summary::default() };
/// let exec = ExecutorSummary {
///     passes: 2,
///     busy: 2_500,
///     span: Some((0, 10_000)),
///     id: Some(0x2000_0100),
///     name: Some("app::EXECUTOR".into()),
/// };
/// assert_eq!(exec.idle_share(), 0.75);
/// s.executors.insert(0x40, exec);
/// let hog = TaskSummary {
///     id: Some(0x2000_0a48),
///     executor: Some(0x2000_0100),
///     polls: 2,
///     longest: 2_000,
///     name: Some("app::hog".into()),
///     ..TaskSummary::default()
/// };
/// s.tasks.insert(0x292, hog);
/// s.tasks.insert(0x293, TaskSummary { polls: 1, longest: 10, ..TaskSummary::default() });
/// assert_eq!(s.micros(2_000), 2_000.0);
/// let blocking: Vec<_> = s.blocking(1_000.0).into_iter().map(|(k, _)| *k).collect();
/// assert_eq!(blocking, [0x292]);
/// assert_eq!(s.task_name(0x293, &s.tasks[&0x293]), "task#0x000293");
/// assert_eq!(s.executor_name(0x40), "app::EXECUTOR");
/// let mut text = Vec::new();
/// s.write_text(&mut text, 1_000.0).unwrap();
/// let text = String::from_utf8(text).unwrap();
/// assert!(text.starts_with("executor app::EXECUTOR: 2 passes, busy 2500 us, idle 75.0 %\n"), "{text}");
/// assert!(text.contains("blocking: app::hog held its executor for 2000 us"), "{text}");
/// let mut csv = Vec::new();
/// s.write_csv(&mut csv, 1_000.0).unwrap();
/// let csv = String::from_utf8(csv).unwrap();
/// assert!(csv.lines().nth(1).unwrap().starts_with("app::hog,app::EXECUTOR,0,0,2,0,0.0,2000.0,"), "{csv}");
/// let names = s.names_lines(&[(1, "app::main".to_string())].into());
/// assert_eq!(names, "1 app::main\n134218386 app::hog\n134218387 task#0x000293\n150995008 app::EXECUTOR\n");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Ticks per second of the trace's clock.
    pub frequency: u64,
    /// Tasks by key ([`flightrec_core::tasks::key`] of their address).
    pub tasks: BTreeMap<u32, TaskSummary>,
    /// Executors by key.
    pub executors: BTreeMap<u32, ExecutorSummary>,
    /// Records the target lost (loss markers): the counts are then incomplete.
    pub lost: u64,
    /// Exits without their entry, and entries never closed (the trace ends
    /// inside a poll).
    pub unmatched: u64,
    /// What could not be named, one line each.
    pub warnings: Vec<String>,
}

impl Summary {
    /// Ticks as microseconds. Example on [`Summary`].
    pub fn micros(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e6 / self.frequency.max(1) as f64
    }

    /// Tasks whose longest poll is over `threshold_us`, longest first. Example
    /// on [`Summary`].
    pub fn blocking(&self, threshold_us: f64) -> Vec<(&u32, &TaskSummary)> {
        let mut v: Vec<_> = self
            .tasks
            .iter()
            .filter(|(_, t)| self.micros(t.longest) > threshold_us)
            .collect();
        v.sort_by_key(|(_, t)| Reverse(t.longest));
        v
    }

    /// A task's name: from the ELF, or its address (or key). Example on
    /// [`Summary`].
    pub fn task_name(&self, k: u32, t: &TaskSummary) -> String {
        match (&t.name, t.id) {
            (Some(n), _) => n.clone(),
            (None, Some(id)) => format!("task@{id:#010x}"),
            (None, None) => format!("task#{k:#08x}"),
        }
    }

    /// An executor's name: from the ELF, or its address (or key). Example on
    /// [`Summary`].
    pub fn executor_name(&self, k: u32) -> String {
        match self.executors.get(&k) {
            Some(ExecutorSummary { name: Some(n), .. }) => n.clone(),
            Some(ExecutorSummary { id: Some(id), .. }) => format!("executor@{id:#010x}"),
            _ => format!("executor#{k:#08x}"),
        }
    }

    /// Names tasks and executors by the symbols of an ELF image. Returns how
    /// many tasks are not inside a task pool (`...::POOL`) of the image, or
    /// executors not in a `static` of their own (a stream from another
    /// build?): they keep their addresses.
    ///
    /// ```
    /// use flightrec_host::timeline::tasks::{Summary, TaskSummary};
    /// // This example's own program: an ELF with symbols, and no task pool at
    /// // the made-up address.
    /// let image = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    /// let mut s = Summary::default();
    /// assert_eq!(s.name_from_elf(&image), Ok(0));
    /// s.tasks.insert(1, TaskSummary { id: Some(4), ..TaskSummary::default() });
    /// assert_eq!(s.name_from_elf(&image), Ok(1));
    /// assert!(s.name_from_elf(b"not an ELF").is_err());
    /// ```
    pub fn name_from_elf(&mut self, image: &[u8]) -> Result<usize, String> {
        let symbols = object_symbols(image)?;
        let find = |addr: u32| -> Option<String> {
            let a = u64::from(addr);
            let i = symbols.partition_point(|s| s.0 <= a);
            let (start, size, name) = symbols.get(i.checked_sub(1)?)?;
            (a < start + (*size).max(1)).then(|| name.clone())
        };
        let mut outside = 0;
        for t in self.tasks.values_mut() {
            t.name =
                t.id.and_then(find)
                    .and_then(|n| n.strip_suffix("::POOL").map(str::to_owned));
            outside += usize::from(t.name.is_none());
        }
        // An executor is no task pool: one found in a pool is from another build.
        for e in self.executors.values_mut() {
            e.name = e.id.and_then(find).filter(|n| !n.ends_with("::POOL"));
            outside += usize::from(e.name.is_none());
        }
        Ok(outside)
    }

    /// `ID NAME` lines (what `flightrec convert --names` and the host's names
    /// reader take) naming each task's poll id by the task and each
    /// executor's pass id by the executor, after `others` (the firmware's
    /// `#[flightrec::instrument]` names, by id): the converters then show the
    /// polls as slices named by their task. Example on [`Summary`].
    pub fn names_lines(&self, others: &BTreeMap<u32, String>) -> String {
        let mut out = String::new();
        for (id, name) in others {
            let _ = writeln!(out, "{id} {}", escape(name));
        }
        for (&k, t) in &self.tasks {
            let id = (flightrec_core::tasks::POLL_KIND << flightrec_core::tasks::KEY_BITS) | k;
            let _ = writeln!(out, "{id} {}", escape(&self.task_name(k, t)));
        }
        for &k in self.executors.keys() {
            let id = (flightrec_core::tasks::PASS_KIND << flightrec_core::tasks::KEY_BITS) | k;
            let _ = writeln!(out, "{id} {}", escape(&self.executor_name(k)));
        }
        out
    }
}

/// Open poll and pass entries of one thread.
type Stack = Vec<(TaskFunction, u64)>;

/// Adds one event (in time order) to `s`; `ready` holds each task's first
/// wake-up since its last poll.
fn add_event(s: &mut Summary, ready: &mut HashMap<u32, u64>, stack: &mut Stack, e: &XEvent) {
    match e.kind {
        Kind::TypedEvent if e.event_type == LOSS_MARKER => {
            let text = String::from_utf8_lossy(&e.data);
            let n = text
                .split_whitespace()
                .find_map(|w| w.parse::<u64>().ok())
                .unwrap_or(1);
            s.lost += n;
        }
        Kind::TypedEvent => {
            let Some(ev) = TaskEvent::parse(e.event_type, &e.data) else {
                return;
            };
            let t = s.tasks.entry(key(ev.task)).or_default();
            t.id = Some(ev.task);
            t.executor = Some(ev.executor);
            s.executors.entry(key(ev.executor)).or_default().id = Some(ev.executor);
            match ev.kind {
                TaskEventKind::Spawn => t.spawns += 1,
                TaskEventKind::End => t.ends += 1,
                TaskEventKind::Ready => {
                    t.wakes += 1;
                    ready.entry(key(ev.task)).or_insert(e.tsc);
                }
            }
        }
        Kind::Enter | Kind::EnterArg => {
            let Some(f) = flightrec_core::fdr::FunctionId::new(e.func_id)
                .ok()
                .and_then(TaskFunction::of)
            else {
                return;
            };
            if let TaskFunction::Poll { key } = f {
                let t = s.tasks.entry(key).or_default();
                t.polls += 1;
                if let Some(r) = ready.remove(&key) {
                    t.latency.add(e.tsc.saturating_sub(r));
                }
            }
            stack.push((f, e.tsc));
        }
        Kind::Exit | Kind::TailExit => {
            let Some(f) = flightrec_core::fdr::FunctionId::new(e.func_id)
                .ok()
                .and_then(TaskFunction::of)
            else {
                return;
            };
            let Some(i) = stack.iter().rposition(|(g, _)| *g == f) else {
                s.unmatched += 1;
                return;
            };
            let (_, start) = stack[i];
            // Entries above it were never closed.
            s.unmatched += (stack.len() - i - 1) as u64;
            stack.truncate(i);
            let d = e.tsc.saturating_sub(start);
            match f {
                TaskFunction::Poll { key } => {
                    let t = s.tasks.entry(key).or_default();
                    t.busy += d;
                    t.longest = t.longest.max(d);
                }
                TaskFunction::Pass { key } => {
                    let x = s.executors.entry(key).or_default();
                    x.passes += 1;
                    x.busy += d;
                    x.span = Some(x.span.map_or((start, e.tsc), |(a, _)| (a, e.tsc)));
                }
            }
        }
        _ => {}
    }
}

/// Summarises FDR files given as bytes (all of one program, on one clock).
///
/// ```
/// let s = flightrec_host::timeline::tasks::summarize_bytes(&[include_bytes!("../../../testdata/xray/crafted-v5.xray")]).unwrap();
/// assert!(s.tasks.is_empty());
/// ```
pub fn summarize_bytes(files: &[&[u8]]) -> Result<Summary, (usize, DecodeError)> {
    let mut s = Summary::default();
    let mut indexes = Vec::new();
    for (i, bytes) in files.iter().enumerate() {
        let index = scan(bytes, &mut |_| {}).map_err(|e| (i, e))?;
        let frequency = index.header().cycle_frequency.get();
        if s.frequency == 0 {
            s.frequency = frequency;
        } else if frequency != s.frequency {
            s.warnings.push(format!(
                "input {} counts {frequency} ticks a second, the first {}: not one clock, \
                 so its times do not compare with the others'",
                i + 1,
                s.frequency
            ));
        }
        indexes.push(index);
    }
    // One cursor per thread of every file, merged by time.
    let mut cursors: Vec<(ThreadCursor, Stack)> = Vec::new();
    for (index, bytes) in indexes.iter().zip(files) {
        for t in 0..index.threads() {
            cursors.push((index.thread_events(bytes, t), Vec::new()));
        }
    }
    let mut heads: Vec<Option<XEvent>> = cursors.iter_mut().map(|(c, _)| c.next_event()).collect();
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = heads
        .iter()
        .enumerate()
        .filter_map(|(i, h)| h.as_ref().map(|e| Reverse((e.tsc, i))))
        .collect();
    let mut ready = HashMap::new();
    while let Some(Reverse((_, i))) = heap.pop() {
        let Some(e) = heads[i].take() else { continue };
        add_event(&mut s, &mut ready, &mut cursors[i].1, &e);
        heads[i] = cursors[i].0.next_event();
        if let Some(n) = &heads[i] {
            heap.push(Reverse((n.tsc, i)));
        }
    }
    s.unmatched += cursors.iter().map(|(_, st)| st.len() as u64).sum::<u64>();
    Ok(s)
}

/// The FDR files of `inputs`: files as they are, directories (`flightrec recv`
/// output) as their `*.xray` files, sorted. Example on [`summarize`].
pub fn input_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .filter_map(|d| d.ok().map(|d| d.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "xray"))
                .collect();
            if found.is_empty() {
                return Err(format!("{}: no .xray files in this directory", p.display()));
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Summarises the FDR files and `recv` directories of `inputs`, naming tasks
/// from `elf` when given.
///
/// ```
/// use flightrec_host::timeline::tasks::{input_files, summarize};
/// let dir = tempfile::tempdir().unwrap();
/// let trace = dir.path().join("source-1.xray");
/// std::fs::write(&trace, include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
/// std::fs::write(dir.path().join("source-1.xray.names"), "1 main\n").unwrap();
/// assert_eq!(input_files(&[dir.path().to_path_buf()]).unwrap(), [trace.clone()]);
/// // A trace without task records: an empty summary.
/// let s = summarize(&[dir.path().to_path_buf()], None).unwrap();
/// assert!(s.tasks.is_empty() && s.executors.is_empty());
/// let empty = tempfile::tempdir().unwrap();
/// assert!(summarize(&[empty.path().to_path_buf()], None).unwrap_err().contains("no .xray files"));
/// ```
pub fn summarize(inputs: &[PathBuf], elf: Option<&Path>) -> Result<Summary, String> {
    let files = input_files(inputs)?;
    let maps = files
        .iter()
        .map(|f| TraceFile::open(f).map_err(|e| format!("{}: {e}", f.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let bytes: Vec<&[u8]> = maps.iter().map(|m| m.bytes()).collect();
    let mut s = summarize_bytes(&bytes)
        .map_err(|(i, e)| format!("{}: not a valid FDR file: {e}", files[i].display()))?;
    if let Some(elf) = elf {
        let image = std::fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
        let outside = s
            .name_from_elf(&image)
            .map_err(|e| format!("{}: {e}", elf.display()))?;
        if outside > 0 {
            s.warnings.push(format!(
                "{outside} tasks or executors are not in a task pool or a static of {} (a stream from another build?): they keep their addresses",
                elf.display()
            ));
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_bound_their_values() {
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1000, 123_456, u64::MAX / 3] {
            let b = Histogram::bucket(v);
            assert!(Histogram::upper(b) >= v, "{v}");
            assert!(Histogram::upper(b) - v <= v / 64, "{v}");
        }
        let mut h = Histogram::default();
        h.add(10_000);
        h.add(5);
        assert_eq!((h.quantile(0.5), h.max(), h.count()), (5, 10_000, 2));
    }

    /// A trace made by hand: a wake-up in one file, the poll in another, a
    /// poll left open, an exit without its entry and a loss marker: each
    /// counted, none silent.
    #[test]
    fn merges_files_and_counts_what_is_wrong() {
        use flightrec_core::clock::Timestamp;
        use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
        use flightrec_core::tasks::{pass_id, poll_id};
        let (exec, task, other) = (0x2000_0100, 0x2000_0a48, 0x2000_0b00);
        let at = |tsc| Timestamp { tsc, cpu: 0 };
        let event = |kind, task| TaskEvent {
            kind,
            executor: exec,
            task,
        };
        let file = |id, fill: &dyn Fn(&mut BufferWriter)| {
            let mut buf = vec![0u8; 1024];
            let mut w =
                BufferWriter::new(&mut buf, &WriterConfig::new(id), Walltime::default()).unwrap();
            fill(&mut w);
            let len = w.as_bytes().len();
            let header = flightrec_core::fdr::FileHeader::new(
                core::num::NonZeroU64::new(1_000_000).unwrap(),
                1024,
            );
            let mut out = header.to_bytes().to_vec();
            out.extend_from_slice(&buf[..len]);
            out
        };
        // An interrupt handler's file: the spawn and two wake-ups of `task`.
        let irq = file(2, &|w| {
            let spawn = event(TaskEventKind::Spawn, task);
            w.typed_event(at(100), TaskEventKind::Spawn.event_type(), &spawn.emit())
                .unwrap();
            for t in [110, 120] {
                let ready = event(TaskEventKind::Ready, task);
                w.typed_event(at(t), TaskEventKind::Ready.event_type(), &ready.emit())
                    .unwrap();
            }
        });
        // The executor's file: a pass with the poll of `task` (woken at 110,
        // polled at 150: 40 ticks), its end, an exit of `other` never entered, a
        // loss marker, and a poll of `other` left open.
        let main = file(1, &|w| {
            w.enter(pass_id(exec), at(140)).unwrap();
            w.enter(poll_id(task), at(150)).unwrap();
            let end = event(TaskEventKind::End, task);
            w.typed_event(at(160), TaskEventKind::End.event_type(), &end.emit())
                .unwrap();
            w.exit(poll_id(task), at(1_650)).unwrap();
            w.exit(poll_id(other), at(1_700)).unwrap();
            w.exit(pass_id(exec), at(1_800)).unwrap();
            w.typed_event(at(1_900), LOSS_MARKER, b"flightrec: lost 5 records")
                .unwrap();
            w.enter(poll_id(other), at(2_000)).unwrap();
        });
        let s = summarize_bytes(&[&main, &irq]).unwrap();
        let t = &s.tasks[&key(task)];
        assert_eq!((t.spawns, t.ends, t.polls, t.wakes), (1, 1, 1, 2));
        assert_eq!((t.busy, t.longest, t.latency.max()), (1_500, 1_500, 40));
        assert_eq!(t.executor, Some(exec));
        let e = &s.executors[&key(exec)];
        assert_eq!((e.passes, e.busy, e.span), (1, 1_660, Some((140, 1_800))));
        // The exit without its entry and the poll left open.
        assert_eq!((s.unmatched, s.lost), (2, 5));
        assert_eq!(s.tasks[&key(other)].polls, 1);
        // 1.5 ms at 1 MHz: blocking over 1 ms.
        assert_eq!(s.blocking(1_000.0).len(), 1);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        // Files on two clocks: said.
        let mut other_clock = irq.clone();
        other_clock[8..16].copy_from_slice(&48_000_000u64.to_le_bytes());
        let s = summarize_bytes(&[&main, &other_clock]).unwrap();
        assert!(s.warnings[0].contains("not one clock"), "{:?}", s.warnings);
        // A damaged file is an error naming it (the second).
        let mut bad = irq.clone();
        bad.truncate(40);
        assert_eq!(summarize_bytes(&[&main, &bad]).unwrap_err().0, 1);
    }

    #[test]
    fn demangles_legacy_paths() {
        use crate::names::program::demangle;
        assert_eq!(
            demangle("_ZN22flightrec_embassy_qemu6ticker4POOL17h0123456789abcdefE"),
            "flightrec_embassy_qemu::ticker::POOL"
        );
        assert_eq!(demangle("EXECUTOR"), "EXECUTOR");
        assert_eq!(demangle("_ZN3foo3barE"), "foo::bar");
    }
}
