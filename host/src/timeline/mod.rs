//! `convert` with several inputs: one timeline, on one clock, from FDR files,
//! `flightrec recv` output directories and Trace2 event streams.
//!
//! # Inputs
//!
//! * An FDR file (any file that does not start with `{`): verified and indexed
//!   like a single-input conversion ([`crate::read::index::scan`]), then read in TSC
//!   order over its threads ([`crate::read::index::Index::merged`]).
//! * A Trace2 event stream (JSON lines, what `GIT_TRACE2_EVENT` writes): read a
//!   line at a time.
//! * A directory written by `flightrec recv`: its `source-*.xray` files and its
//!   `trace2.txt`, all from one device.
//!
//! # One clock
//!
//! Every event is placed in nanoseconds since the Unix epoch:
//!
//! * FDR: each buffer starts with a wall-time marker and the TSC of the same
//!   moment (NewCPUId); the file's offset between the two clocks is taken from
//!   its first buffers (the largest `wall - tsc / frequency` over them: the marker
//!   is truncated to the microsecond, so the largest is the closest), and each
//!   event's TSC is converted with the header's cycle frequency and shifted by it.
//! * Trace2: the absolute `time` field. Events without one (`_BRIEF` streams,
//!   or a firmware's lines, whose `time` is the epoch itself) are placed by their
//!   `t_abs` from the process start, which is known from any event that carries
//!   both; without one either, at the last time of their process.
//! * The sources of one `recv` directory share their clock: one offset, the
//!   largest of theirs, for all of them. A firmware without a wall clock writes
//!   markers counted from its boot (offset zero) and `t_abs` from the same boot,
//!   so its FDR files and its Trace2 lines line up with each other.
//!
//! # Tracks
//!
//! A track per thread: FDR threads by process and thread id (`main` for the
//! thread whose id is the process id, as on Linux, else `thread N`); Trace2
//! threads by their name within the process whose id ends the session id
//! (`-P<hex>`), and the Trace2 `main` thread on the process's main thread track,
//! so regions and the functions called in them share one track; the sources of a
//! `recv` directory as `source N` under a process named after the directory.
//! Trace2 has no thread id for other threads; a thread that says its own with a
//! `data` event of category `flightrec` and key `tid` (value: the thread id, as
//! `gettid` gives it; flightrec's runtime writes it while XRay is on) has its
//! later events on that FDR thread's track. A `thread_start` whose thread has
//! not said its id yet is held until that thread's next event and goes on the
//! same track (the runtime says the id right after it).
//!
//! # Counter tracks
//!
//! Trace2 `counter` and `th_counter` (the count), `timer` and `th_timer` (the
//! total time, in ns), and `data` whose value is a decimal number (`data_json`:
//! a JSON number) are also values on a counter track named after the event,
//! category and name (`counter app/items`, `data index/entries`): of the
//! thread for `th_*` events, else of the process. They stay instants too, with
//! all their fields. At most [`MAX_COUNTER_TRACKS`]; values of further
//! counters are left out and counted.
//!
//! # Streaming
//!
//! The inputs are merged by time with a heap holding one event per input; each
//! track keeps its open slices (a stack). Memory depends on the number of inputs,
//! threads and the call depth, not on the trace sizes. Within a track time never
//! goes back (an event earlier than the track's last is held at it), so slices
//! nest. Calls and regions share a track's stack: an FDR exit closes the
//! innermost open call of its function and everything opened inside it, a
//! `region_leave` the innermost open region and everything inside it.
//!
//! # Bad inputs
//!
//! An input that cannot be read or does not verify is reported with its path and
//! the first error's byte offset and left out; a Trace2 line that is not valid
//! JSON is reported with its line number and byte offset and skipped. The rest
//! is converted.

pub mod tasks;

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use flightrec_core::fdr::decoder::Decoder;
use flightrec_core::fdr::end::END_CPU;
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::{FileHeader, FunctionId};
use flightrec_core::tasks::{
    key, TaskEvent, TaskEventKind, TaskFunction, KEY_BITS, PASS_KIND, POLL_KIND,
};
use flightrec_core::trace2::days_from_civil;
use serde_json::Value;

use crate::model::{Arg, ArgName, CounterTrack, CounterUnit, CounterValue, TimelineSink, Track};
use crate::names::Names;
use crate::progress::Progress;
use crate::read::events::{Kind, XEvent};
use crate::read::file::TraceFile;
use crate::read::index::{scan_file_cut_short, Index, Merged};

/// Longest Trace2 line read (1 MiB); a longer one is reported and skipped.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{TimelineInput, MAX_TRACE2_LINE};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// let long = format!(
///     r#"{{"event":"data","sid":"S-P1","key":"k","value":"{}"}}"#,
///     "x".repeat(MAX_TRACE2_LINE)
/// );
/// let short = r#"{"event":"exit","sid":"S-P1","time":"1970-01-01T00:00:02.000000Z","code":0}"#;
/// std::fs::write(&t2, format!("{long}\n{short}\n")).unwrap();
/// let inputs = [TimelineInput { path: t2, names: Names::empty() }];
/// let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut Vec::new()).unwrap();
/// // The long line is reported at its offset and skipped; the next one is read.
/// assert_eq!(report.problems.len(), 1);
/// assert_eq!(report.problems[0].offset, Some(0));
/// assert!(report.problems[0].reason.contains(&format!("longer than {MAX_TRACE2_LINE} bytes")));
/// assert_eq!((report.events, report.instants), (1, 1));
/// ```
pub const MAX_TRACE2_LINE: usize = 1 << 20;

/// Buffers of an FDR file looked at for its clock offset.
const CLOCK_SAMPLES: usize = 64;

/// Events between two page releases of an FDR input.
const RELEASE_EVERY_EVENTS: u64 = 1 << 12;

/// Tracks a timeline makes; events of further threads go to one track named
/// `(more threads)` (a hostile stream naming a new thread on every line must not
/// grow memory without bound).
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{TimelineInput, MAX_TRACKS};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// // A data event from a new thread on every line, two more threads than the limit.
/// let text: String = (0..MAX_TRACKS + 2)
///     .map(|i| format!(
///         "{{\"event\":\"data\",\"sid\":\"S-P1\",\"thread\":\"th{i}\",\"time\":\"1970-01-01T00:00:01.000000Z\",\"key\":\"k\",\"value\":\"v\"}}\n"
///     ))
///     .collect();
/// std::fs::write(&t2, text).unwrap();
/// let inputs = [TimelineInput { path: t2, names: Names::empty() }];
/// let mut json = Vec::new();
/// let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
/// // Every event is kept; the last two threads share the overflow track.
/// assert_eq!((report.events, report.instants), (MAX_TRACKS as u64 + 2, MAX_TRACKS as u64 + 2));
/// assert_eq!(report.tracks, MAX_TRACKS + 1);
/// // Counted, and said in the output's metadata.
/// assert_eq!(report.overflow_events, 2);
/// let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
/// assert_eq!(doc["metadata"]["flightrec"]["events-on-the-more-threads-track"], 2);
/// let overflow = doc["traceEvents"]
///     .as_array()
///     .unwrap()
///     .iter()
///     .filter(|e| e["name"] == "thread_name" && e["args"]["name"] == "(more threads)")
///     .count();
/// assert_eq!(overflow, 1);
/// ```
pub const MAX_TRACKS: usize = 10_000;

/// Counter tracks a timeline makes; values for further counters are left out
/// and counted ([`TimelineReport::counter_values_dropped`]).
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{TimelineInput, MAX_COUNTER_TRACKS};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// // A numeric data value under a new key on every line, two more keys than the limit.
/// let text: String = (0..MAX_COUNTER_TRACKS + 2)
///     .map(|i| format!(
///         "{{\"event\":\"data\",\"sid\":\"S-P1\",\"time\":\"1970-01-01T00:00:01.000000Z\",\"category\":\"c\",\"key\":\"k{i}\",\"value\":\"1\"}}\n"
///     ))
///     .collect();
/// std::fs::write(&t2, text).unwrap();
/// let inputs = [TimelineInput { path: t2, names: Names::empty() }];
/// let report = convert_timeline(&inputs, TimelineFormat::Perfetto, &mut Vec::new()).unwrap();
/// assert_eq!((report.counter_tracks, report.counter_values), (MAX_COUNTER_TRACKS, MAX_COUNTER_TRACKS as u64));
/// assert_eq!(report.counter_values_dropped, 2);
/// // Every event is still an instant.
/// assert_eq!(report.instants, MAX_COUNTER_TRACKS as u64 + 2);
/// ```
pub const MAX_COUNTER_TRACKS: usize = 10_000;

/// Trace2 processes (session ids) remembered per stream; beyond it, the
/// memory starts again (their `t_abs` anchors are found again from the next
/// event with a `time`).
const MAX_TRACE2_PROCS: usize = 4096;

/// Names cached per FDR input before the cache starts again.
const MAX_CACHED_NAMES: usize = 1 << 16;

/// One input of a timeline: a file or a `recv` directory. Example on
/// [`merge_timeline`].
#[derive(Clone, Debug)]
pub struct TimelineInput {
    /// The path given.
    pub path: PathBuf,
    /// Function names for its FDR files (for a directory, all of them).
    pub names: Names,
}

/// A problem with one input; the others were converted.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{InputProblem, TimelineInput};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// std::fs::write(&t2, concat!(
///     r#"{"event":"region_enter","sid":"S-P1","time":"1970-01-01T00:00:01.000000Z","label":"a"}"#, "\n",
///     "{oops\n",
/// )).unwrap();
/// let missing = dir.path().join("missing.xray");
/// let inputs: Vec<TimelineInput> = [&t2, &missing]
///     .iter()
///     .map(|p| TimelineInput { path: p.to_path_buf(), names: Names::empty() })
///     .collect();
/// let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut Vec::new()).unwrap();
/// // The missing file cannot be read: no offset; the bad line is damage at its offset.
/// let missing_problem: &InputProblem = report.problems.iter().find(|p| p.path == missing).unwrap();
/// assert!(missing_problem.unreadable);
/// assert_eq!(missing_problem.offset, None);
/// let line: &InputProblem = report.problems.iter().find(|p| p.path == t2).unwrap();
/// assert!(!line.unreadable);
/// assert_eq!(line.offset, Some(87));
/// assert!(line.to_string().contains("t2.json: at byte 87: line 2: not JSON"), "{line}");
/// assert_eq!(report.sources, 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputProblem {
    /// The file.
    pub path: PathBuf,
    /// Byte offset in the file, where there is one.
    pub offset: Option<u64>,
    /// What is wrong, and what was done (left out, line skipped).
    pub reason: String,
    /// The input could not be opened or read (rather than being damaged).
    pub unreadable: bool,
}

impl std::fmt::Display for InputProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(at) => write!(f, "{}: at byte {at}: {}", self.path.display(), self.reason),
            None => write!(f, "{}: {}", self.path.display(), self.reason),
        }
    }
}

/// What a timeline conversion did.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{TimelineInput, TimelineReport};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// let line = |event: &str, us: u32, label: &str| format!(
///     "{{\"event\":\"{event}\",\"sid\":\"S-P1\",\"time\":\"1970-01-01T00:00:01.{us:06}Z\",\"label\":\"{label}\"}}\n"
/// );
/// let text = [
///     line("region_enter", 1, "outer"),
///     line("region_enter", 2, "inner"),
///     line("region_leave", 3, "inner"),
///     line("region_leave", 4, "outer"),
///     line("region_leave", 5, "nothing open"),
///     line("region_enter", 6, "left open"),
///     line("atexit", 7, ""),
/// ]
/// .concat();
/// std::fs::write(&t2, &text).unwrap();
/// let inputs = [TimelineInput { path: t2, names: Names::empty() }];
/// let report: TimelineReport =
///     convert_timeline(&inputs, TimelineFormat::Perfetto, &mut Vec::new()).unwrap();
/// assert_eq!((report.sources, report.input_bytes), (1, text.len() as u64));
/// assert_eq!((report.events, report.tracks), (7, 1));
/// // Three regions (the one left open closed at the track's last time), one instant.
/// assert_eq!((report.slices, report.instants), (3, 1));
/// assert_eq!((report.unmatched_ends, report.unfinished), (1, 1));
/// assert!(report.problems.is_empty() && report.clock_notes.is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct TimelineReport {
    /// Files read (FDR files and Trace2 streams that were converted).
    pub sources: usize,
    /// Bytes of those files.
    pub input_bytes: u64,
    /// Events read from all of them.
    pub events: u64,
    /// Tracks written.
    pub tracks: usize,
    /// Slices written (calls and regions).
    pub slices: u64,
    /// Instant events written.
    pub instants: u64,
    /// Exits and `region_leave`s that closed nothing.
    pub unmatched_ends: u64,
    /// Times outside the nanoseconds since the Unix epoch a `u64` holds
    /// (before 1970, or past 2554), written at the nearest end.
    pub clamped_times: u64,
    /// Events of threads past [`MAX_TRACKS`], written on one
    /// `(more threads)` track where their calls nest as if one thread made
    /// them.
    pub overflow_events: u64,
    /// Trace2 regions merged into the FDR call of the same span (the
    /// `tracing` layer records each span both ways): shown once, as the call,
    /// with the region's fields as arguments.
    pub merged_regions: u64,
    /// Slices still open at the end, closed at their track's last time.
    pub unfinished: u64,
    /// Counter tracks written (Trace2 counters, timers and numeric `data`).
    pub counter_tracks: usize,
    /// Values written on counter tracks.
    pub counter_values: u64,
    /// Values left out because [`MAX_COUNTER_TRACKS`] counter tracks existed
    /// already and theirs was a new one.
    pub counter_values_dropped: u64,
    /// Inputs, or lines of them, left out.
    pub problems: Vec<InputProblem>,
    /// Inputs placed on the clock only roughly (warnings, nothing left out).
    pub clock_notes: Vec<InputProblem>,
    /// What the timeline shows that a reader should know (inputs with the
    /// same process id shown as different processes), one line each.
    pub notes: Vec<String>,
}

/// Which process a track belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ProcKey {
    /// A real process id, and the input it belongs to: the index of the FDR
    /// file (of the timeline's FDR files) it came from, or for a Trace2
    /// stream's process, of the first FDR file with that process id
    /// ([`NO_FDR`] when none has it). Two FDR files are two processes even
    /// when their ids are the same (two machines, two containers, an id
    /// used again).
    Pid(u32, u32),
    /// The device of the `recv` directory with this input index.
    Device(usize),
    /// A Trace2 stream whose session id names no process.
    Stream(usize),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum TrackKey {
    Thread(ProcKey, u32),
    Named(ProcKey, Rc<str>),
    /// An async task (by [`flightrec_core::tasks::key`]): its polls, what
    /// they call, its spawns, wake-ups and ends.
    Task(ProcKey, u32),
    /// An async executor: its passes over its run queue.
    Executor(ProcKey, u32),
}

impl TrackKey {
    fn proc(&self) -> &ProcKey {
        match self {
            TrackKey::Thread(p, _)
            | TrackKey::Named(p, _)
            | TrackKey::Task(p, _)
            | TrackKey::Executor(p, _) => p,
        }
    }
}

enum What {
    Enter(u32, Vec<u64>),
    Exit(u32),
    /// A Trace2 region: its name (`category:label`), arguments, and the name
    /// the `tracing` layer gives the FDR function of the same span
    /// (`category::label`).
    RegionEnter(Rc<str>, Vec<(ArgName, Arg)>, Rc<str>),
    RegionLeave,
    Instant(Rc<str>, Vec<(ArgName, Arg)>),
}

struct TEvent {
    ns: u64,
    track: TrackKey,
    /// The track's name when this event creates it (a Trace2 thread's name
    /// on its FDR thread's track).
    track_name: Option<Rc<str>>,
    what: What,
    /// The FDR input whose names apply (function names).
    names: usize,
    /// A value for a counter track as well (Trace2 counters, timers, numeric
    /// `data`).
    counter: Option<Sample>,
}

/// A counter value an event carries.
struct Sample {
    name: Rc<str>,
    /// Of the event's thread (`th_counter`, `th_timer`), else of its process.
    per_thread: bool,
    unit: CounterUnit,
    value: CounterValue,
}

/// The fixed argument names, shared.
struct ArgNames {
    func_id: ArgName,
    data: ArgName,
    cpu: ArgName,
    typ: ArgName,
    region: ArgName,
    executor: ArgName,
    task: ArgName,
    wake_to_poll: ArgName,
    args: Vec<ArgName>,
}

impl ArgNames {
    fn new() -> Self {
        Self {
            func_id: "func_id".into(),
            data: "data".into(),
            cpu: "cpu".into(),
            typ: "type".into(),
            region: "region".into(),
            executor: "executor".into(),
            task: "task".into(),
            wake_to_poll: WAKE_TO_POLL_ARG.into(),
            args: (0..8).map(|i| Rc::from(format!("arg{i}"))).collect(),
        }
    }
}

/// An FDR file, mapped and indexed, with its place on the clock.
struct FdrFile {
    path: PathBuf,
    file: TraceFile,
    index: Index,
    /// Ticks per second.
    freq: u64,
    /// Wall-clock ns minus TSC ns.
    offset: i128,
    proc: Option<ProcKey>,
    /// `source N` for a file of a `recv` directory.
    label: Option<Rc<str>>,
    names: usize,
}

struct Trace2File {
    path: PathBuf,
    reader: BufReader<File>,
    len: u64,
    /// The `recv` directory's device, for a device's `trace2.txt`.
    device: Option<usize>,
    /// The device's clock offset (ns) for lines without a wall time.
    input: usize,
}

/// How a name list resolves, per FDR input.
struct NameCache {
    names: Names,
    cache: HashMap<u32, Rc<str>>,
}

impl NameCache {
    fn get(&mut self, id: u32) -> Rc<str> {
        if self.cache.len() >= MAX_CACHED_NAMES && !self.cache.contains_key(&id) {
            self.cache.clear();
        }
        self.cache
            .entry(id)
            .or_insert_with(|| Rc::from(self.names.display(id)))
            .clone()
    }
}

/// The input of a Trace2 process no FDR file has.
const NO_FDR: u32 = u32::MAX;

/// A source of time-ordered events.
trait Source {
    fn next_event(&mut self, problems: &mut Vec<InputProblem>) -> Option<TEvent>;
}

struct FdrSource<'a> {
    fdr: &'a FdrFile,
    /// Times out of range, counted for the report.
    clamped: Rc<Cell<u64>>,
    /// Its index among the timeline's FDR files.
    input: u32,
    merged: Merged<'a>,
    count: u64,
    single_thread: bool,
    args: &'a ArgNames,
    /// Track names of a `recv` file's threads (when it has several).
    thread_labels: HashMap<u32, Rc<str>>,
    /// The async tasks whose polls are open, per thread: what a thread does
    /// inside a poll goes on the task's track.
    polls: HashMap<u32, Vec<u32>>,
}

fn tsc_ns(tsc: u64, freq: u64) -> i128 {
    (i128::from(tsc) * 1_000_000_000) / i128::from(freq.max(1))
}

/// `v` within nanoseconds since the Unix epoch that a `u64` holds; a time
/// outside them is counted in `clamped`.
fn clamp_ns(v: i128, clamped: &Cell<u64>) -> u64 {
    let c = v.clamp(0, i128::from(u64::MAX));
    if c != v {
        clamped.set(clamped.get() + 1);
    }
    c as u64
}

impl Source for FdrSource<'_> {
    fn next_event(&mut self, _: &mut Vec<InputProblem>) -> Option<TEvent> {
        let e: XEvent = self.merged.next_event()?;
        self.count += 1;
        if self.count % RELEASE_EVERY_EVENTS == 0 {
            self.fdr.file.consumed(self.merged.take_read());
        }
        let ns = clamp_ns(
            tsc_ns(e.tsc, self.fdr.freq) + self.fdr.offset,
            &self.clamped,
        );
        let proc = self
            .fdr
            .proc
            .clone()
            .unwrap_or(ProcKey::Pid(e.process, self.input));
        let track = match (&self.fdr.label, self.single_thread) {
            (Some(label), true) => TrackKey::Named(proc, label.clone()),
            (Some(label), false) => {
                if self.thread_labels.len() >= MAX_TRACKS
                    && !self.thread_labels.contains_key(&e.thread)
                {
                    self.thread_labels.clear();
                }
                let name = self
                    .thread_labels
                    .entry(e.thread)
                    .or_insert_with(|| format!("{label} thread {}", e.thread).into())
                    .clone();
                TrackKey::Named(proc, name)
            }
            (None, _) => TrackKey::Thread(proc, e.thread),
        };
        let a = self.args;
        let (track, task_event) = self.task_track(&e, track);
        if let Some((name, ev)) = task_event {
            let hex = |v: u32| Arg::S(format!("{v:#010x}"));
            let what = What::Instant(
                name.into(),
                vec![
                    (a.executor.clone(), hex(ev.executor)),
                    (a.task.clone(), hex(ev.task)),
                ],
            );
            return Some(TEvent {
                ns,
                track,
                track_name: None,
                what,
                names: self.fdr.names,
                counter: None,
            });
        }
        let what = match e.kind {
            k if k.is_enter() => What::Enter(e.func_id, e.args),
            k if k.is_exit() => What::Exit(e.func_id),
            kind => {
                let mut args = vec![
                    (
                        a.data.clone(),
                        Arg::S(String::from_utf8_lossy(&e.data).into_owned()),
                    ),
                    (a.cpu.clone(), Arg::U(u64::from(e.cpu))),
                ];
                let name = if kind == Kind::TypedEvent {
                    args.push((a.typ.clone(), Arg::U(u64::from(e.event_type))));
                    format!("typed event {}", e.event_type)
                } else {
                    "custom event".to_string()
                };
                What::Instant(name.into(), args)
            }
        };
        Some(TEvent {
            ns,
            track,
            track_name: None,
            what,
            names: self.fdr.names,
            counter: None,
        })
    }
}

impl FdrSource<'_> {
    /// The track of an event of an async executor ([`flightrec_core::tasks`]):
    /// a poll, and all its thread does until the poll returns, on the task's
    /// track; a pass on the executor's; a spawn, wake-up or end (a typed
    /// event, from any context) on the task's, as an instant of that name.
    /// Other events keep `track`.
    fn task_track(
        &mut self,
        e: &XEvent,
        track: TrackKey,
    ) -> (TrackKey, Option<(&'static str, TaskEvent)>) {
        let proc = track.proc().clone();
        if e.kind == Kind::TypedEvent {
            return match TaskEvent::parse(e.event_type, &e.data) {
                Some(ev) => {
                    let name = match ev.kind {
                        TaskEventKind::Spawn => "spawn",
                        TaskEventKind::Ready => READY_EVENT,
                        TaskEventKind::End => "end",
                    };
                    (TrackKey::Task(proc, key(ev.task)), Some((name, ev)))
                }
                None => (self.inside_poll(e.thread, proc).unwrap_or(track), None),
            };
        }
        let function = (e.kind.is_enter() || e.kind.is_exit())
            .then(|| FunctionId::new(e.func_id).ok().and_then(TaskFunction::of))
            .flatten();
        match function {
            Some(TaskFunction::Poll { key }) => {
                let open = self.polls.entry(e.thread).or_default();
                if e.kind.is_enter() {
                    open.push(key);
                } else if let Some(i) = open.iter().rposition(|k| *k == key) {
                    open.truncate(i);
                }
                (TrackKey::Task(proc, key), None)
            }
            Some(TaskFunction::Pass { key }) => (TrackKey::Executor(proc, key), None),
            None => (self.inside_poll(e.thread, proc).unwrap_or(track), None),
        }
    }

    fn inside_poll(&self, thread: u32, proc: ProcKey) -> Option<TrackKey> {
        let key = *self.polls.get(&thread)?.last()?;
        Some(TrackKey::Task(proc, key))
    }
}

/// The instant of a task's wake-up on its track (the start of its
/// wake-to-poll time).
const READY_EVENT: &str = "ready";

/// The name of a poll's argument: the time (ns) from the task's first
/// wake-up since its last poll to this poll's start.
const WAKE_TO_POLL_ARG: &str = "wake_to_poll_ns";

/// The counter of an executor's load: the share (%) of the time since the
/// last value it spent in passes, at the end of a pass at least
/// [`LOAD_WINDOW_NS`] after the last value.
const LOAD_COUNTER: &str = "load %";

/// The shortest time a load value covers.
const LOAD_WINDOW_NS: u64 = 1_000_000;

/// Custom events whose payload starts with this carry the wall-clock time (ns
/// since the Unix epoch, in decimal) read just before the event's TSC: a clock
/// anchor, exact to the event's cost. Example on [`anchor_payload`].
pub const ANCHOR_PREFIX: &[u8] = b"flightrec.walltime_ns=";

/// The payload of a clock anchor for wall time `ns`; record it as an XRay custom
/// event (`flightrec::xray::custom_event`) right after reading the clock.
///
/// ```
/// use flightrec_host::convert::{};
/// use flightrec_host::timeline::{anchor_payload, ANCHOR_PREFIX};
/// let p = anchor_payload(1_700_000_000_123_456_789);
/// assert_eq!(p, b"flightrec.walltime_ns=1700000000123456789");
/// assert!(p.starts_with(ANCHOR_PREFIX));
/// ```
pub fn anchor_payload(ns: u64) -> Vec<u8> {
    let mut p = ANCHOR_PREFIX.to_vec();
    p.extend_from_slice(ns.to_string().as_bytes());
    p
}

/// Wall-time markers before this (2001-09-09) count from boot, not from the
/// epoch: compiler-rt writes `CLOCK_MONOTONIC` (kept, to the microsecond), and
/// flightrec's writer on a firmware without a wall clock the TSC's own seconds
/// (then the time is the TSC itself).
const BOOT_CLOCK_BEFORE_SECS: i64 = 1_000_000_000;

/// Events per thread searched for a clock anchor.
const ANCHOR_SEARCH_EVENTS: usize = 4096;

/// A wall-time marker (seconds, microseconds) and the TSC after it, in ns.
type Marker = (i64, u32, i128);

/// What an FDR file says about its clock: the offset of wall-clock ns over TSC
/// ns lies in `lo..hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClockBounds {
    /// A clock anchor: this offset.
    Anchor(i128),
    /// Second-resolution markers counting from the device's boot: offset 0.
    Boot,
    /// From the wall-time markers.
    Markers { lo: i128, hi: i128 },
    /// Nothing to go by (no marker with a TSC).
    Unknown,
}

impl ClockBounds {
    /// Several files of one clock: the tightest of what they say.
    fn combine(self, other: ClockBounds) -> ClockBounds {
        use ClockBounds::*;
        match (self, other) {
            (Anchor(a), Anchor(b)) => Anchor(a.max(b)),
            (Anchor(a), _) | (_, Anchor(a)) => Anchor(a),
            (Boot, _) | (_, Boot) => Boot,
            (Markers { lo: a, hi: b }, Markers { lo: c, hi: d }) => Markers {
                lo: a.max(c),
                hi: b.min(d),
            },
            (Unknown, x) | (x, Unknown) => x,
        }
    }

    /// The offset to use: the anchor, 0 for a boot clock, else the middle of the
    /// bounds (their lower end when they disagree).
    fn offset(self) -> i128 {
        match self {
            ClockBounds::Anchor(a) => a,
            ClockBounds::Boot | ClockBounds::Unknown => 0,
            ClockBounds::Markers { lo, hi } if hi > lo => lo + (hi - lo) / 2,
            ClockBounds::Markers { lo, .. } => lo,
        }
    }

    /// How far the offset may be off, in ns (`None`: unknown).
    fn uncertainty(self) -> Option<i128> {
        match self {
            ClockBounds::Anchor(_) | ClockBounds::Boot => Some(0),
            ClockBounds::Markers { lo, hi } => Some((hi - lo).max(0) / 2),
            ClockBounds::Unknown => None,
        }
    }
}

/// The clock of an FDR file: the wall-clock time at TSC 0 in its header, else a
/// clock anchor in the first events of a thread, else the wall-time markers of
/// its first buffers.
///
/// A marker and the NewCPUId TSC after it were taken together at the start of
/// a buffer. Markers with microseconds (compiler-rt's) bound the offset to a
/// microsecond. flightrec's own writer keeps llvm-xray's buffer sort working by
/// writing the real wall-clock second of a thread's first buffer and then
/// `(second + k, k)` for its buffer `k`: only each thread's first marker is a
/// real time, and it bounds the offset to the second.
fn clock_bounds(bytes: &[u8], index: &Index, freq: u64) -> ClockBounds {
    // The writer knew the wall-clock time at TSC 0 (the desktop runtime does).
    if let Some(at) = FileHeader::parse(bytes)
        .ok()
        .and_then(|h| h.walltime_at_tsc0_ns)
    {
        return ClockBounds::Anchor(i128::from(at.get()));
    }
    let mut anchor: Option<i128> = None;
    for t in 0..index.threads() {
        let mut cursor = index.thread_events(bytes, t);
        for _ in 0..ANCHOR_SEARCH_EVENTS {
            let Some(e) = cursor.next_event() else { break };
            if e.kind != Kind::CustomEvent {
                continue;
            }
            let Some(digits) = e.data.strip_prefix(ANCHOR_PREFIX) else {
                continue;
            };
            let Some(ns) = std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse::<u64>().ok())
            else {
                continue;
            };
            let o = i128::from(ns) - tsc_ns(e.tsc, freq);
            anchor = Some(anchor.map_or(o, |a: i128| a.max(o)));
        }
    }
    if let Some(a) = anchor {
        return ClockBounds::Anchor(a);
    }
    let Ok(decoder) = Decoder::new(bytes) else {
        return ClockBounds::Unknown;
    };
    // Per thread: its markers (seconds, micros, TSC ns) in file order.
    let mut threads: Vec<(u64, Vec<Marker>)> = Vec::new();
    let mut boot = false;
    let mut wall: Option<(i64, u32)> = None;
    let mut tid = 0u64;
    let mut samples = 0;
    for d in decoder {
        let Ok(d) = d else { break };
        match d.record {
            Record::NewBuffer { tid: t } => {
                wall = None;
                tid = t as u64;
            }
            Record::Walltime { seconds, micros } => wall = Some((seconds, micros)),
            // An end block's "TSC" is a buffer count, not a time.
            Record::NewCpuId { cpu: END_CPU, .. } => wall = None,
            Record::NewCpuId { tsc, .. } => {
                let Some((seconds, micros)) = wall.take() else {
                    continue;
                };
                boot |= seconds < BOOT_CLOCK_BEFORE_SECS;
                let at = tsc_ns(tsc, freq);
                match threads.iter_mut().find(|(t, _)| *t == tid) {
                    Some((_, m)) => m.push((seconds, micros, at)),
                    None => threads.push((tid, vec![(seconds, micros, at)])),
                }
                samples += 1;
                if samples >= CLOCK_SAMPLES {
                    break;
                }
            }
            _ => {}
        }
    }
    let mut bounds = ClockBounds::Unknown;
    for (_, markers) in &threads {
        // flightrec's sequence: each marker one second and one microsecond
        // after the one before.
        let sequence = markers
            .windows(2)
            .any(|w| w[1].0 == w[0].0.saturating_add(1) && w[1].1 == w[0].1.wrapping_add(1));
        for (k, &(seconds, micros, at)) in markers.iter().enumerate() {
            let m = i128::from(seconds) * 1_000_000_000 + i128::from(micros) * 1000;
            let here = if k == 0 && micros == 0 {
                // A whole second: flightrec's first buffer (or a real marker
                // that fell on one): the time is within that second.
                ClockBounds::Markers {
                    lo: m - at,
                    hi: m + 1_000_000_000 - at,
                }
            } else if sequence || markers[0].1 == 0 {
                // The later markers of flightrec's sequence are not times.
                continue;
            } else {
                ClockBounds::Markers {
                    lo: m - at,
                    hi: m + 1000 - at,
                }
            };
            bounds = bounds.combine(here);
        }
    }
    // A boot clock known only to the second (flightrec's writer on a device
    // without a wall clock): the TSC counts from the same boot, exactly.
    if boot && bounds.uncertainty().is_none_or(|u| u > 1_000_000) {
        return ClockBounds::Boot;
    }
    bounds
}

/// Per process (session id) state of a Trace2 stream.
#[derive(Default)]
struct Trace2Proc {
    /// Wall ns at t_abs 0.
    anchor: Option<i128>,
    last: u64,
}

struct Trace2Source {
    file: Trace2File,
    line: Vec<u8>,
    lineno: u64,
    offset: u64,
    procs: HashMap<String, Trace2Proc>,
    /// For a device's lines: the device clock's offset (ns).
    device_offset: i128,
    arg_names: HashMap<String, ArgName>,
    /// Trace2 threads (session id, thread name) that said their thread id.
    thread_tids: HashMap<ThreadKey, u32>,
    /// `thread_start`s of threads that have not said their id yet, until
    /// their thread's next event (which then gives them its track).
    held: Vec<(ThreadKey, TEvent)>,
    /// Events to give out before reading on.
    ready: VecDeque<TEvent>,
    reported: u64,
    /// The FDR files of each process id (a Trace2 process joins the first).
    fdr_pids: Rc<HashMap<u32, PidOwners>>,
    /// Times out of range, counted for the report.
    clamped: Rc<Cell<u64>>,
}

/// The FDR files that hold a process id.
#[derive(Clone, Debug)]
struct PidOwners {
    /// The first of them (its index among the timeline's FDR files).
    first: u32,
    /// How many.
    files: u32,
}

/// (session id, thread name) of a Trace2 thread.
type ThreadKey = (String, String);

/// Category and key of the `data` event by which a Trace2 thread says its OS
/// thread id (the flightrec runtime writes it when the XRay runtime is on).
const THREAD_ID_CATEGORY: &str = "flightrec";
/// See [`THREAD_ID_CATEGORY`].
const THREAD_ID_KEY: &str = "tid";

/// `thread_start` events held at once per stream, waiting for their thread's
/// id; beyond this the oldest is written without it.
const MAX_HELD: usize = 64;

/// A Trace2 `data` value that is a decimal number (an integer, or a finite
/// number with a fraction or an exponent); `None` for any other text.
fn number(text: &str) -> Option<CounterValue> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.starts_with(|c: char| c.is_ascii_digit())
        || !digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
    {
        return None;
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(CounterValue::Int(i));
    }
    text.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(CounterValue::Float)
}

/// Problems reported per Trace2 stream before the rest are only counted.
const MAX_LINE_REPORTS: u64 = 20;

/// Parses git's event `time`, `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`, to ns since the
/// Unix epoch.
fn parse_time(s: &str) -> Option<i128> {
    let (date, rest) = s.split_once('T')?;
    let mut d = date.splitn(3, '-');
    let year: i64 = d.next()?.parse().ok()?;
    let month: u8 = d.next()?.parse().ok()?;
    let day: u8 = d.next()?.parse().ok()?;
    let (hms, us) = rest.strip_suffix('Z')?.split_once('.')?;
    let mut t = hms.splitn(3, ':');
    let h: i64 = t.next()?.parse().ok()?;
    let m: i64 = t.next()?.parse().ok()?;
    let sec: i64 = t.next()?.parse().ok()?;
    let micros: i64 = us.parse().ok()?;
    if us.len() != 6
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || h > 23
        || m > 59
        || sec > 60
    {
        return None;
    }
    let secs = i128::from(days_from_civil(year, month, day)) * 86_400
        + i128::from(h * 3600 + m * 60 + sec);
    Some(secs * 1_000_000_000 + i128::from(micros) * 1000)
}

/// The process id at the end of a Trace2 session id (`...-P0000abcd`, the last
/// of a parent/child chain).
fn sid_pid(sid: &str) -> Option<u32> {
    let own = sid.rsplit('/').next()?;
    let hex = own.rsplit_once("-P")?.1;
    u32::from_str_radix(hex, 16).ok()
}

/// Reads one line of at most `max` bytes (without its LF). `Ok(None)` at the
/// end; `Ok(Some(false))` when the line was longer (the rest is skipped).
fn read_line_capped(
    r: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<(bool, u64)>> {
    line.clear();
    let mut read = 0u64;
    let mut fits = true;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((read > 0).then_some((fits, read)));
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if fits {
            if line.len() + n > max + 1 {
                fits = false;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        r.consume(n);
        read += n as u64;
        if done {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            return Ok(Some((fits, read)));
        }
    }
}

/// Trace2 fields not shown as arguments.
const TRACE2_COMMON: [&str; 10] = [
    "event", "sid", "thread", "time", "file", "line", "t_abs", "t_rel", "nesting", "repo",
];

impl Trace2Source {
    fn problem(&mut self, problems: &mut Vec<InputProblem>, at: u64, reason: String) {
        self.reported += 1;
        if self.reported <= MAX_LINE_REPORTS {
            problems.push(InputProblem {
                path: self.file.path.clone(),
                offset: Some(at),
                reason,
                unreadable: false,
            });
        } else if self.reported == MAX_LINE_REPORTS + 1 {
            problems.push(InputProblem {
                path: self.file.path.clone(),
                offset: None,
                reason: "more bad lines skipped without a report".into(),
                unreadable: false,
            });
        }
    }

    fn thread_name(&mut self, t: &str) -> Rc<str> {
        if self.arg_names.len() >= MAX_CACHED_NAMES && !self.arg_names.contains_key(t) {
            self.arg_names.clear();
        }
        self.arg_names
            .entry(t.to_string())
            .or_insert_with(|| Rc::from(t))
            .clone()
    }

    fn arg_name(&mut self, k: &str) -> ArgName {
        if self.arg_names.len() >= MAX_CACHED_NAMES && !self.arg_names.contains_key(k) {
            self.arg_names.clear();
        }
        self.arg_names
            .entry(k.to_string())
            .or_insert_with(|| Rc::from(k))
            .clone()
    }

    /// The event of one line; with the (session id, thread name) of a
    /// process's worker thread (for a `thread_start`, or while one is held),
    /// and whether it is a `thread_start` whose thread has not said its id
    /// yet (held until the thread's next event, which may say it).
    fn event(&mut self, v: &Value) -> Result<(TEvent, Option<ThreadKey>, bool), String> {
        let obj = v.as_object().ok_or("not a JSON object")?;
        let str_field = |k: &str| obj.get(k).and_then(Value::as_str);
        let event = str_field("event").ok_or("no \"event\" field")?;
        let sid = str_field("sid").ok_or("no \"sid\" field")?;
        let thread = str_field("thread").unwrap_or("main");
        let time = str_field("time").and_then(parse_time).filter(|&t| t != 0);
        let t_abs = obj
            .get("t_abs")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| (t * 1e6).round() as i128 * 1000);
        if self.procs.len() >= MAX_TRACE2_PROCS && !self.procs.contains_key(sid) {
            self.procs.clear();
        }
        let proc = self.procs.entry(sid.to_string()).or_default();
        if let (Some(time), Some(t_abs), None) = (time, t_abs, proc.anchor) {
            proc.anchor = Some(time - t_abs);
        }
        let ns = match (time, t_abs) {
            (Some(t), _) => clamp_ns(t, &self.clamped),
            (None, Some(t)) => {
                clamp_ns(proc.anchor.unwrap_or(self.device_offset) + t, &self.clamped)
            }
            (None, None) => proc.last,
        };
        proc.last = proc.last.max(ns);

        let pkey = match (self.file.device, sid_pid(sid)) {
            (Some(dev), _) => ProcKey::Device(dev),
            (None, Some(pid)) => {
                ProcKey::Pid(pid, self.fdr_pids.get(&pid).map_or(NO_FDR, |o| o.first))
            }
            (None, None) => ProcKey::Stream(self.file.input),
        };
        if let (ProcKey::Pid(..), "data", Some(THREAD_ID_CATEGORY), Some(THREAD_ID_KEY)) =
            (&pkey, event, str_field("category"), str_field("key"))
        {
            if let Some(tid) = str_field("value").and_then(|v| v.trim().parse::<u32>().ok()) {
                if self.thread_tids.len() >= MAX_TRACE2_PROCS {
                    self.thread_tids.clear();
                }
                self.thread_tids
                    .insert((sid.to_string(), thread.to_string()), tid);
            }
        }
        // The key of a process's worker thread, where it is needed: for a
        // `thread_start`, or while one is held.
        let worker = match (&pkey, thread) {
            (ProcKey::Pid(..), t)
                if t != "main" && (event == "thread_start" || !self.held.is_empty()) =>
            {
                Some((sid.to_string(), t.to_string()))
            }
            _ => None,
        };
        let hold = event == "thread_start"
            && worker
                .as_ref()
                .is_some_and(|k| !self.thread_tids.contains_key(k));
        let mut track_name = None;
        let track = match (&pkey, thread) {
            (ProcKey::Pid(pid, _), "main") => TrackKey::Thread(pkey.clone(), *pid),
            (ProcKey::Pid(..), _) => {
                let name = self.thread_name(thread);
                match self.thread_tids.get(&(sid.to_string(), thread.to_string())) {
                    Some(&tid) => {
                        track_name = Some(name);
                        TrackKey::Thread(pkey.clone(), tid)
                    }
                    None => TrackKey::Named(pkey, name),
                }
            }
            _ => TrackKey::Named(pkey, self.thread_name(thread)),
        };
        let mut args = Vec::new();
        for (k, val) in obj {
            if TRACE2_COMMON.contains(&k.as_str())
                || (event == "data" && (k == "key" || k == "category"))
            {
                continue;
            }
            let text = match val {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let name = self.arg_name(k);
            args.push((name, Arg::S(text)));
        }
        let label = |obj: &serde_json::Map<String, Value>| {
            let l = obj.get("label").and_then(Value::as_str).unwrap_or("");
            match obj.get("category").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => format!("{c}:{l}"),
                _ => l.to_string(),
            }
        };
        let what = match event {
            "region_enter" => {
                args.retain(|(k, _)| &**k != "label" && &**k != "category");
                let l = obj.get("label").and_then(Value::as_str).unwrap_or("");
                let span = match obj.get("category").and_then(Value::as_str) {
                    Some(c) if !c.is_empty() => format!("{c}::{l}"),
                    _ => l.to_string(),
                };
                What::RegionEnter(label(obj).into(), args, span.into())
            }
            "region_leave" => What::RegionLeave,
            "data" | "data_json" => {
                let key = str_field("key").unwrap_or("");
                let name = match str_field("category") {
                    Some(c) => format!("data {c}/{key}"),
                    None => format!("data {key}"),
                };
                What::Instant(name.into(), args)
            }
            other => What::Instant(other.into(), args),
        };
        let counter = self.sample(event, obj);
        let e = TEvent {
            ns,
            track,
            track_name,
            what,
            names: usize::MAX,
            counter,
        };
        Ok((e, worker, hold))
    }

    /// The counter value a Trace2 event carries: a `counter`'s or
    /// `th_counter`'s count, a `timer`'s or `th_timer`'s total time, a `data`
    /// value that is a number (other than the thread id event), a
    /// `data_json` value that is a JSON number.
    fn sample(&mut self, event: &str, obj: &serde_json::Map<String, Value>) -> Option<Sample> {
        let str_field = |k: &str| obj.get(k).and_then(Value::as_str);
        let category = str_field("category").unwrap_or("");
        let (name, unit, value) = match event {
            "counter" | "th_counter" => {
                let count = obj.get("count")?.as_u64()?;
                let value = CounterValue::Int(i64::try_from(count).unwrap_or(i64::MAX));
                (str_field("name")?, CounterUnit::Count, value)
            }
            "timer" | "th_timer" => {
                let secs = obj.get("t_total")?.as_f64().filter(|t| t.is_finite())?;
                let ns = (secs * 1e9).round().clamp(i64::MIN as f64, i64::MAX as f64) as i64;
                (
                    str_field("name")?,
                    CounterUnit::TimeNs,
                    CounterValue::Int(ns),
                )
            }
            "data" | "data_json" => {
                let key = str_field("key")?;
                if (category, key) == (THREAD_ID_CATEGORY, THREAD_ID_KEY) {
                    return None;
                }
                let value = match obj.get("value")? {
                    Value::String(text) if event == "data" => number(text.trim())?,
                    Value::Number(n) if event == "data_json" => match n.as_i64() {
                        Some(i) => CounterValue::Int(i),
                        None => CounterValue::Float(n.as_f64().filter(|f| f.is_finite())?),
                    },
                    _ => return None,
                };
                (key, CounterUnit::Unspecified, value)
            }
            _ => return None,
        };
        let full = if category.is_empty() {
            format!("{event} {name}")
        } else {
            format!("{event} {category}/{name}")
        };
        Some(Sample {
            name: self.arg_name(&full),
            per_thread: event.starts_with("th_"),
            unit,
            value,
        })
    }
}

impl Source for Trace2Source {
    fn next_event(&mut self, problems: &mut Vec<InputProblem>) -> Option<TEvent> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some(e);
            }
            match self.next_line_event(problems) {
                Some((e, worker, hold)) => {
                    let held = worker
                        .as_ref()
                        .and_then(|k| self.held.iter().position(|(h, _)| h == k));
                    if let Some(at) = held {
                        // The thread's next event: its `thread_start` goes on
                        // the track this one is on (its FDR thread's, once it
                        // said its id).
                        let (_, mut start) = self.held.remove(at);
                        start.track = e.track.clone();
                        start.track_name = e.track_name.clone();
                        self.ready.push_back(start);
                        self.ready.push_back(e);
                    } else if let (true, Some(k)) = (hold, worker) {
                        if self.held.len() >= MAX_HELD {
                            let (_, oldest) = self.held.remove(0);
                            self.ready.push_back(oldest);
                        }
                        self.held.push((k, e));
                    } else {
                        return Some(e);
                    }
                }
                None if self.held.is_empty() => return None,
                None => self.ready.extend(self.held.drain(..).map(|(_, e)| e)),
            }
        }
    }
}

impl Trace2Source {
    /// The event of the next line that has one (bad lines reported and skipped).
    fn next_line_event(
        &mut self,
        problems: &mut Vec<InputProblem>,
    ) -> Option<(TEvent, Option<ThreadKey>, bool)> {
        loop {
            let at = self.offset;
            let mut line = std::mem::take(&mut self.line);
            let read = read_line_capped(&mut self.file.reader, &mut line, MAX_TRACE2_LINE);
            let result = match read {
                Err(e) => {
                    self.line = line;
                    self.problem(
                        problems,
                        at,
                        format!("read error: {e}; the rest is left out"),
                    );
                    return None;
                }
                Ok(None) => {
                    self.line = line;
                    return None;
                }
                Ok(Some((fits, n))) => {
                    self.offset += n;
                    self.lineno += 1;
                    if !fits {
                        Err(format!("longer than {MAX_TRACE2_LINE} bytes"))
                    } else if line.iter().all(u8::is_ascii_whitespace) {
                        self.line = line;
                        continue;
                    } else {
                        serde_json::from_slice::<Value>(&line)
                            .map_err(|e| format!("not JSON ({e})"))
                            .and_then(|v| self.event(&v))
                    }
                }
            };
            self.line = line;
            match result {
                Ok(e) => return Some(e),
                Err(reason) => {
                    let lineno = self.lineno;
                    self.problem(
                        problems,
                        at,
                        format!("line {lineno}: {}; skipped", escape(&reason)),
                    );
                }
            }
        }
    }
}

/// `s` with control characters escaped (a diagnostic stays one line).
fn escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// What is at `path`: a directory (a `recv` output), a Trace2 stream or an FDR file.
enum InputKind {
    Dir,
    Trace2,
    Fdr,
}

fn sniff(path: &Path) -> io::Result<InputKind> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Ok(InputKind::Dir);
    }
    if !meta.is_file() {
        return Err(io::Error::other(
            "not a regular file (a FIFO, socket or device cannot be converted; save it to a file first)",
        ));
    }
    let mut first = [0u8; 1];
    let n = File::open(path)?.read(&mut first)?;
    Ok(if n == 1 && first[0] == b'{' {
        InputKind::Trace2
    } else {
        InputKind::Fdr
    })
}

/// A source file of a `recv` directory: source id, trace number, path.
type RecvSource = (u64, u32, PathBuf);

/// The source files of a `recv` directory: `source-*.xray` in the order of their
/// source ids, then `trace2.txt` when it exists.
fn recv_files(dir: &Path) -> io::Result<(Vec<RecvSource>, Option<PathBuf>)> {
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name
            .strip_prefix("source-")
            .and_then(|n| n.strip_suffix(".xray"))
        else {
            continue;
        };
        let (id, generation) = match stem.split_once('.') {
            Some((id, g)) => (id.parse::<u64>(), g.parse::<u32>().unwrap_or(0)),
            None => (stem.parse::<u64>(), 1),
        };
        if let Ok(id) = id {
            sources.push((id, generation, entry.path()));
        }
    }
    sources.sort();
    let t2 = dir.join("trace2.txt");
    Ok((sources, t2.is_file().then_some(t2)))
}

/// Reads every input, places it on one clock and hands the merged timeline
/// to `sink` (one of the writers of [`crate::out`]): what
/// [`convert_timeline`](crate::convert::convert_timeline) runs. Inputs, or
/// lines of them, that cannot be read are left out and named in the report.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::out::perfetto::PerfettoSink;
/// use flightrec_host::timeline::{merge_timeline, TimelineInput};
///
/// let dir = tempfile::tempdir().unwrap();
/// let fdr = dir.path().join("t.xray");
/// std::fs::write(&fdr, include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// let input = TimelineInput { path: fdr, names: Names::empty() };
/// let mut trace = Vec::new();
/// let report = merge_timeline(&[input], &mut PerfettoSink::new(&mut trace)).unwrap();
/// assert_eq!((report.sources, report.tracks), (1, 2));
/// assert!(!trace.is_empty());
/// ```
pub fn merge_timeline(
    inputs: &[TimelineInput],
    sink: &mut dyn TimelineSink,
) -> io::Result<TimelineReport> {
    let mut report = TimelineReport::default();
    let quiet = Progress::new(true);
    let mut fdrs: Vec<FdrFile> = Vec::new();
    let mut trace2s: Vec<Trace2File> = Vec::new();
    let mut names: Vec<NameCache> = Vec::new();
    let bad = |report: &mut TimelineReport, path: &Path, offset: Option<u64>, reason: String| {
        report.problems.push(InputProblem {
            path: path.to_path_buf(),
            offset,
            reason,
            unreadable: true,
        })
    };
    let mut device_offsets: HashMap<usize, i128> = HashMap::new();
    let mut device_names: HashMap<usize, String> = HashMap::new();

    let open_fdr = |path: &Path, report: &mut TimelineReport| -> Option<(TraceFile, Index)> {
        let file = match TraceFile::open(path) {
            Ok(f) => f,
            Err(e) => {
                report.problems.push(InputProblem {
                    path: path.to_path_buf(),
                    offset: None,
                    reason: format!("{e}; left out"),
                    unreadable: true,
                });
                return None;
            }
        };
        match scan_file_cut_short(&file, &quiet) {
            Ok((index, cut)) => {
                if let Some(e) = cut {
                    // Cut short between two buffers (a crashed program): every
                    // buffer it holds is converted; the input is still
                    // incomplete, which the problem says.
                    report.problems.push(InputProblem {
                        path: path.to_path_buf(),
                        offset: Some(e.offset as u64),
                        reason: format!("{}; converted the buffers it holds", e.kind),
                        unreadable: false,
                    });
                }
                Some((file, index))
            }
            Err(e) => {
                report.problems.push(InputProblem {
                    path: path.to_path_buf(),
                    offset: Some(e.offset as u64),
                    reason: format!("{}; left out", e.kind),
                    unreadable: false,
                });
                None
            }
        }
    };
    let open_trace2 =
        |path: &Path, report: &mut TimelineReport| -> Option<(BufReader<File>, u64)> {
            match File::open(path).and_then(|f| Ok((f.metadata()?.len(), f))) {
                Ok((len, f)) => Some((BufReader::with_capacity(1 << 16, f), len)),
                Err(e) => {
                    report.problems.push(InputProblem {
                        path: path.to_path_buf(),
                        offset: None,
                        reason: format!("{e}; left out"),
                        unreadable: true,
                    });
                    None
                }
            }
        };

    for (i, input) in inputs.iter().enumerate() {
        let kind = match sniff(&input.path) {
            Ok(k) => k,
            Err(e) => {
                bad(&mut report, &input.path, None, format!("{e}; left out"));
                continue;
            }
        };
        let name_slot = names.len();
        names.push(NameCache {
            names: input.names.clone(),
            cache: HashMap::new(),
        });
        match kind {
            InputKind::Fdr => {
                if let Some((file, index)) = open_fdr(&input.path, &mut report) {
                    let freq = index.header().cycle_frequency.get();
                    let bounds = clock_bounds(file.bytes(), &index, freq);
                    note_clock(&mut report, &input.path, bounds);
                    let offset = bounds.offset();
                    fdrs.push(FdrFile {
                        path: input.path.clone(),
                        file,
                        index,
                        freq,
                        offset,
                        proc: None,
                        label: None,
                        names: name_slot,
                    });
                }
            }
            InputKind::Trace2 => {
                if let Some((reader, len)) = open_trace2(&input.path, &mut report) {
                    trace2s.push(Trace2File {
                        path: input.path.clone(),
                        reader,
                        len,
                        device: None,
                        input: i,
                    });
                }
            }
            InputKind::Dir => {
                let (sources, t2) = match recv_files(&input.path) {
                    Ok(found) => found,
                    Err(e) => {
                        bad(&mut report, &input.path, None, format!("{e}; left out"));
                        continue;
                    }
                };
                if sources.is_empty() && t2.is_none() {
                    bad(
                        &mut report,
                        &input.path,
                        None,
                        "is a directory, and not one `flightrec recv` wrote (no source-*.xray or trace2.txt); \
                         left out"
                            .into(),
                    );
                    continue;
                }
                let dir_name = input
                    .path
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| input.path.display().to_string());
                device_names.insert(i, dir_name);
                let mut shared = ClockBounds::Unknown;
                let first = fdrs.len();
                for (id, generation, path) in sources {
                    if let Some((file, index)) = open_fdr(&path, &mut report) {
                        let freq = index.header().cycle_frequency.get();
                        shared = shared.combine(clock_bounds(file.bytes(), &index, freq));
                        let label: Rc<str> = if generation > 1 {
                            format!("source {id} (trace {generation})").into()
                        } else {
                            format!("source {id}").into()
                        };
                        fdrs.push(FdrFile {
                            path: path.clone(),
                            file,
                            index,
                            freq,
                            offset: 0,
                            proc: Some(ProcKey::Device(i)),
                            label: Some(label),
                            names: name_slot,
                        });
                    }
                }
                note_clock(&mut report, &input.path, shared);
                let shared = shared.offset();
                for f in &mut fdrs[first..] {
                    f.offset = shared;
                }
                device_offsets.insert(i, shared);
                if let Some(path) = t2 {
                    if let Some((reader, len)) = open_trace2(&path, &mut report) {
                        trace2s.push(Trace2File {
                            path,
                            reader,
                            len,
                            device: Some(i),
                            input: i,
                        });
                    }
                }
            }
        }
    }

    if fdrs.is_empty() && trace2s.is_empty() {
        // Nothing to convert: nothing written.
        return Ok(report);
    }
    let args = ArgNames::new();
    // The FDR files share the page budget of one single-input conversion.
    for f in &fdrs {
        f.file.set_release_every((32 << 20) / fdrs.len().max(1));
    }
    // Which FDR files hold each process id: each file's processes are its
    // own, and a Trace2 process joins the first file with its id.
    let mut fdr_pids: HashMap<u32, PidOwners> = HashMap::new();
    for (i, f) in fdrs.iter().enumerate() {
        if f.proc.is_some() {
            continue; // a `recv` directory's file: the device's process
        }
        let mut pids: Vec<u32> = (0..f.index.threads())
            .map(|t| f.index.thread_key(t).0 as u32)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        for pid in pids {
            fdr_pids
                .entry(pid)
                .or_insert(PidOwners {
                    first: i as u32,
                    files: 0,
                })
                .files += 1;
        }
    }
    let fdr_labels: Vec<String> = fdrs.iter().map(|f| f.path.display().to_string()).collect();
    let mut shared: Vec<(&u32, &PidOwners)> =
        fdr_pids.iter().filter(|(_, o)| o.files > 1).collect();
    shared.sort_unstable_by_key(|(pid, _)| **pid);
    for (pid, o) in shared {
        report.notes.push(format!(
            "process {pid} is in {} FDR inputs: shown as {} processes (the first, {}, keeps the id and joins a Trace2 stream of it)",
            o.files, o.files, fdr_labels[o.first as usize]
        ));
    }
    let fdr_pids = Rc::new(fdr_pids);
    let clamped = Rc::new(Cell::new(0u64));
    let mut sources: Vec<Box<dyn Source + '_>> = Vec::new();
    for (input, f) in fdrs.iter().enumerate() {
        report.sources += 1;
        report.input_bytes += f.file.bytes().len() as u64;
        let single_thread = f.index.threads() == 1;
        let merged = f
            .index
            .merged_releasing(f.file.bytes(), &mut |n| f.file.consumed(n));
        sources.push(Box::new(FdrSource {
            fdr: f,
            clamped: clamped.clone(),
            input: input as u32,
            merged,
            count: 0,
            single_thread,
            args: &args,
            thread_labels: HashMap::new(),
            polls: HashMap::new(),
        }));
    }
    for t in trace2s {
        report.sources += 1;
        report.input_bytes += t.len;
        let device_offset = t
            .device
            .and_then(|d| device_offsets.get(&d).copied())
            .unwrap_or(0);
        sources.push(Box::new(Trace2Source {
            file: t,
            line: Vec::new(),
            lineno: 0,
            offset: 0,
            procs: HashMap::new(),
            device_offset,
            arg_names: HashMap::new(),
            thread_tids: HashMap::new(),
            held: Vec::new(),
            ready: VecDeque::new(),
            reported: 0,
            fdr_pids: fdr_pids.clone(),
            clamped: clamped.clone(),
        }));
    }

    if sources.len() == 1 {
        // One source is placed on no other's clock: a rough placement changes
        // nothing it shows.
        report.clock_notes.clear();
    }
    let mut problems = Vec::new();
    merge(
        &mut sources,
        &mut names,
        &device_names,
        (&fdr_pids, &fdr_labels, &clamped),
        &args,
        sink,
        &mut report,
        &mut problems,
    )?;
    // Problems of the opening first (in input order), then those found reading.
    report.problems.extend(problems);

    Ok(report)
}

/// Reports an input whose place on the clock is known only roughly.
fn note_clock(report: &mut TimelineReport, path: &Path, bounds: ClockBounds) {
    let reason = match bounds.uncertainty() {
        None => "no wall-time marker with a TSC: placed at its TSC".to_string(),
        Some(u) if u > 1_000_000 => format!(
            "placed on the wall clock within {:.3} s (its markers carry whole seconds; \
             record a clock anchor for more)",
            u as f64 / 1e9
        ),
        Some(_) => return,
    };
    report.clock_notes.push(InputProblem {
        path: path.to_path_buf(),
        offset: None,
        reason,
        unreadable: false,
    });
}

struct TrackState {
    id: usize,
    stack: Vec<Open>,
    last: u64,
    /// A Trace2 region that may be the same span as an FDR call about to
    /// begin (its time is whole microseconds, so it can come first): held
    /// until the track's next event.
    pending: VecDeque<PendingRegion>,
    /// The time of the last thing written on the track (before the event at
    /// hand): where a region held back may begin at the earliest.
    last_written: u64,
    /// Whether the track's name came from Trace2 (a `thread_start`).
    named: bool,
}

/// A slice open on a track.
enum Open {
    /// An FDR call. `region`: a Trace2 region of the same span was merged
    /// into it and its leave is still to come.
    Call {
        fid: u32,
        name: Rc<str>,
        start: u64,
        region: bool,
        /// A region was merged into it (its leave may have come).
        merged: bool,
    },
    /// A Trace2 region. `leaving`: its leave came while calls begun inside
    /// it were still open; it ends with the last of them.
    Region { leaving: bool },
}

struct PendingRegion {
    ns: u64,
    name: Rc<str>,
    args: Vec<(ArgName, Arg)>,
    span: Rc<str>,
    /// When its leave came, if it did while it was held.
    left: Option<u64>,
}

/// Regions held back on one track at most (the rest begin as regions).
const MAX_PENDING_REGIONS: usize = 64;

/// How far (ns) a region's time may lie from its span's FDR entry: Trace2
/// times are whole microseconds, cut down.
const SPAN_TOLERANCE_NS: u64 = 1_000;

/// A counter track: its process, its thread track (per-thread values) and
/// its name.
type CounterKey = (ProcKey, Option<usize>, Rc<str>);

/// An executor's time in passes since its last load value.
struct Load {
    /// When the last value was given.
    window: u64,
    /// Time in passes since then.
    busy: u64,
    /// The start of the pass under way (or the last one's end).
    pass: u64,
}

struct CounterState {
    id: usize,
    last: u64,
}

#[allow(clippy::too_many_arguments)]
fn merge(
    sources: &mut [Box<dyn Source + '_>],
    names: &mut [NameCache],
    device_names: &HashMap<usize, String>,
    (fdr_pids, fdr_labels, clamped): (&HashMap<u32, PidOwners>, &[String], &Cell<u64>),
    args: &ArgNames,
    sink: &mut dyn TimelineSink,
    report: &mut TimelineReport,
    problems: &mut Vec<InputProblem>,
) -> io::Result<()> {
    let mut heads: Vec<Option<TEvent>> = Vec::with_capacity(sources.len());
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    for (i, s) in sources.iter_mut().enumerate() {
        let e = s.next_event(problems);
        if let Some(e) = &e {
            heap.push(Reverse((e.ns, i)));
        }
        heads.push(e);
    }
    let origin = heap.peek().map_or(0, |Reverse((ns, _))| *ns);
    // The FDR functions' names: a Trace2 region `category:label` whose
    // `category::label` is one of them may be a span the `tracing` layer
    // recorded both ways.
    let function_names: std::collections::HashSet<Box<str>> = names
        .iter()
        .flat_map(|n| n.names.iter().map(|(_, name)| Box::from(name)))
        .collect();
    sink.start(origin)?;
    let mut tracks: HashMap<TrackKey, TrackState> = HashMap::new();
    let mut order: Vec<TrackKey> = Vec::new();
    let mut next_tid = 1u32 << 30;
    let mut fake_pids: HashMap<ProcKey, u32> = HashMap::new();
    let mut counters: HashMap<CounterKey, CounterState> = HashMap::new();
    // Each task's first wake-up since its last poll, and each executor's load.
    let mut ready: HashMap<TrackKey, u64> = HashMap::new();
    let mut load: HashMap<TrackKey, Load> = HashMap::new();
    let load_name: Rc<str> = Rc::from(LOAD_COUNTER);
    // A process's id and name.
    let mut process = |proc: &ProcKey| -> (u32, String) {
        let n = fake_pids.len() as u32;
        // The first input with a process id shows it; another input's
        // process of the same id is another process, with an id of its own.
        let own_id = |p: &u32, input: &u32| {
            fdr_pids
                .get(p)
                .is_none_or(|o| o.first == *input || *input == NO_FDR)
        };
        let pid = match proc {
            ProcKey::Pid(p, input) if own_id(p, input) => *p,
            other => *fake_pids
                .entry(other.clone())
                .or_insert((1 << 30) + (1 << 29) + n),
        };
        let name = match proc {
            ProcKey::Pid(p, input) if !own_id(p, input) => format!(
                "process {p} ({})",
                fdr_labels.get(*input as usize).map_or("", String::as_str)
            ),
            ProcKey::Pid(p, _) => format!("process {p}"),
            ProcKey::Device(d) => device_names.get(d).cloned().unwrap_or_default(),
            ProcKey::Stream(_) => "trace2".to_string(),
        };
        (pid, name)
    };

    while let Some(Reverse((_, i))) = heap.pop() {
        let Some(e) = heads[i].take() else { continue };
        if let Some(n) = sources[i].next_event(problems) {
            heap.push(Reverse((n.ns, i)));
            heads[i] = Some(n);
        }
        report.events += 1;
        let mut e = e;
        if tracks.len() >= MAX_TRACKS && !tracks.contains_key(&e.track) {
            report.overflow_events += 1;
            e.track = TrackKey::Named(ProcKey::Stream(usize::MAX), "(more threads)".into());
        }
        let state = match tracks.get_mut(&e.track) {
            Some(s) => s,
            None => {
                let id = order.len();
                let (pid, process_name) = process(e.track.proc());
                let (tid, thread_name) = match &e.track {
                    TrackKey::Thread(_, t) if e.track_name.is_some() => {
                        (*t, e.track_name.as_deref().unwrap_or_default().to_string())
                    }
                    TrackKey::Thread(ProcKey::Pid(p, _), t) if p == t => (*t, "main".to_string()),
                    TrackKey::Thread(_, t) => (*t, format!("thread {t}")),
                    TrackKey::Named(_, name) => {
                        next_tid += 1;
                        (next_tid, name.to_string())
                    }
                    TrackKey::Task(_, k) => {
                        next_tid += 1;
                        let name = names[e.names].get(POLL_KIND << KEY_BITS | k);
                        (next_tid, format!("task {name}"))
                    }
                    TrackKey::Executor(_, k) => {
                        next_tid += 1;
                        let name = names[e.names].get(PASS_KIND << KEY_BITS | k);
                        (next_tid, format!("executor {name}"))
                    }
                };
                sink.track(
                    id,
                    &Track {
                        pid,
                        tid,
                        process_name,
                        thread_name,
                    },
                )?;
                order.push(e.track.clone());
                tracks.entry(e.track.clone()).or_insert(TrackState {
                    id,
                    stack: Vec::new(),
                    last: origin,
                    pending: VecDeque::new(),
                    last_written: origin,
                    named: e.track_name.is_some(),
                })
            }
        };
        if let (Some(name), false, TrackKey::Thread(_, tid)) =
            (&e.track_name, state.named, &e.track)
        {
            // The Trace2 thread's name arrived after the track was made from
            // its FDR thread: the track takes it.
            state.named = true;
            let (pid, process_name) = process(e.track.proc());
            let tid = *tid;
            sink.rename(
                state.id,
                &Track {
                    pid,
                    tid,
                    process_name,
                    thread_name: name.to_string(),
                },
            )?;
        }
        let ns = e.ns.max(state.last);
        state.last = ns;
        // Regions held back longer than a span's entry can lie from them
        // begin now, as regions.
        let stale = state
            .pending
            .iter()
            .take_while(|p| p.ns + SPAN_TOLERANCE_NS < ns)
            .count();
        flush_pending(sink, state, stale, report)?;
        match e.what {
            What::Enter(fid, call_args) => {
                let name = names[e.names].get(fid);
                let mut a = vec![(args.func_id.clone(), Arg::U(u64::from(fid)))];
                for (k, v) in call_args.iter().take(args.args.len()).enumerate() {
                    a.push((args.args[k].clone(), Arg::U(*v)));
                }
                match &e.track {
                    TrackKey::Task(..) if fid >> KEY_BITS == POLL_KIND => {
                        if let Some(woken) = ready.remove(&e.track) {
                            a.push((args.wake_to_poll.clone(), Arg::U(ns - woken.min(ns))));
                        }
                    }
                    TrackKey::Executor(..) => {
                        load.entry(e.track.clone())
                            .or_insert(Load {
                                window: ns,
                                busy: 0,
                                pass: ns,
                            })
                            .pass = ns;
                    }
                    _ => {}
                }
                // A region held back, then its span's FDR call: one slice
                // (the regions held before it begin first, around it).
                let mut region = false;
                let mut merged = false;
                match state.pending.iter().position(|p| *p.span == *name) {
                    Some(at) => {
                        // The regions held before it begin first, around it.
                        flush_pending(sink, state, at, report)?;
                        if let Some(p) = state.pending.pop_front() {
                            a.extend(p.args);
                            a.push((args.region.clone(), Arg::S(p.name.to_string())));
                            // Its leave may have come already (a span shorter
                            // than the microsecond its region's times were
                            // cut to).
                            region = p.left.is_none();
                            merged = true;
                            report.merged_regions += 1;
                        }
                    }
                    None => {
                        // Regions of no span begin, around the call; those
                        // of spans wait for their own calls.
                        let held = std::mem::take(&mut state.pending);
                        for p in held {
                            if function_names.contains(&*p.span) {
                                state.pending.push_back(p);
                            } else {
                                let spans =
                                    std::mem::replace(&mut state.pending, VecDeque::from([p]));
                                flush_pending(sink, state, 1, report)?;
                                state.pending = spans;
                            }
                        }
                    }
                }
                sink.begin(state.id, ns, &name, &a)?;
                state.last_written = ns;
                state.stack.push(Open::Call {
                    fid,
                    name,
                    start: ns,
                    region,
                    merged: region || merged,
                });
                report.slices += 1;
            }
            What::RegionEnter(name, mut a, span) => {
                match state.stack.last_mut() {
                    Some(Open::Call {
                        name: call,
                        start,
                        region,
                        merged: merged @ false,
                        ..
                    }) if *call == span && ns - *start <= SPAN_TOLERANCE_NS => {
                        // The region of the FDR call just begun: its category,
                        // label and fields go on the call.
                        *region = true;
                        *merged = true;
                        a.push((args.region.clone(), Arg::S(name.to_string())));
                        sink.annotate(state.id, &a)?;
                        report.merged_regions += 1;
                    }
                    _ => {
                        if state.pending.len() >= MAX_PENDING_REGIONS {
                            flush_pending(sink, state, 1, report)?;
                        }
                        state.pending.push_back(PendingRegion {
                            ns,
                            name,
                            args: a,
                            span,
                            left: None,
                        });
                    }
                }
            }
            What::RegionLeave if state.pending.iter().any(|p| p.left.is_none()) => {
                // The innermost open region is one held back.
                if let Some(p) = state.pending.iter_mut().rev().find(|p| p.left.is_none()) {
                    p.left = Some(ns);
                }
            }
            What::Exit(fid) => {
                close_call(sink, state, ns, fid, report)?;
                state.last_written = ns;
                if let Some(l) = load.get_mut(&e.track) {
                    l.busy += ns.saturating_sub(l.pass);
                    l.pass = ns;
                    if ns - l.window.min(ns) >= LOAD_WINDOW_NS {
                        let share = 100.0 * l.busy as f64 / (ns - l.window) as f64;
                        e.counter = Some(Sample {
                            name: load_name.clone(),
                            per_thread: true,
                            unit: CounterUnit::Unspecified,
                            value: CounterValue::Float(share.min(100.0)),
                        });
                        (l.window, l.busy) = (ns, 0);
                    }
                }
            }
            What::RegionLeave => {
                leave_region(sink, state, ns, report)?;
                state.last_written = ns;
            }
            What::Instant(name, a) => {
                if matches!(e.track, TrackKey::Task(..)) && &*name == READY_EVENT {
                    ready.entry(e.track.clone()).or_insert(ns);
                }
                sink.instant(state.id, ns, &name, &a)?;
                state.last_written = ns;
                report.instants += 1;
            }
        }
        if let Some(sample) = e.counter {
            let thread_track = sample.per_thread.then_some(state.id);
            let key: CounterKey = (e.track.proc().clone(), thread_track, sample.name.clone());
            let made = counters.len();
            let counter = match counters.get_mut(&key) {
                Some(c) => c,
                None if made >= MAX_COUNTER_TRACKS => {
                    report.counter_values_dropped += 1;
                    continue;
                }
                None => {
                    let (pid, process_name) = process(&key.0);
                    let id = made;
                    sink.counter_track(
                        id,
                        &CounterTrack {
                            pid,
                            process_name,
                            thread_track,
                            name: sample.name.to_string(),
                            unit: sample.unit,
                        },
                    )?;
                    report.counter_tracks += 1;
                    counters
                        .entry(key)
                        .or_insert(CounterState { id, last: origin })
                }
            };
            let at = ns.max(counter.last);
            counter.last = at;
            sink.counter(counter.id, at, sample.value)?;
            report.counter_values += 1;
        }
    }
    for key in &order {
        if let Some(state) = tracks.get_mut(key) {
            let all = state.pending.len();
            flush_pending(sink, state, all, report)?;
            for open in state.stack.drain(..).rev() {
                sink.end(state.id, state.last)?;
                // A region whose leave came is not unfinished.
                if !matches!(open, Open::Region { leaving: true }) {
                    report.unfinished += 1;
                }
            }
        }
    }
    report.tracks = order.len();
    // What was left out or changed, in the output too.
    report.clamped_times = clamped.get();
    let end = tracks.values().map(|t| t.last).max().unwrap_or(origin);
    sink.summary(
        end,
        &[
            (
                "input-problems",
                (report.problems.len() + problems.len()) as u64,
            ),
            ("exits-without-a-call", report.unmatched_ends),
            ("calls-open-at-the-end", report.unfinished),
            ("times-out-of-range", report.clamped_times),
            ("events-on-the-more-threads-track", report.overflow_events),
            ("counter-values-left-out", report.counter_values_dropped),
        ],
    )?;
    sink.finish()
}

fn begin_region(
    sink: &mut dyn TimelineSink,
    state: &mut TrackState,
    ns: u64,
    name: &Rc<str>,
    args: &[(ArgName, Arg)],
    report: &mut TimelineReport,
) -> io::Result<()> {
    sink.begin(state.id, ns, name, args)?;
    state.stack.push(Open::Region { leaving: false });
    report.slices += 1;
    Ok(())
}

/// Begins the first `n` regions held back, as regions (at the track's last
/// time if that is later: a region's time is whole microseconds anyway), and
/// ends those whose leave came while they were held.
fn flush_pending(
    sink: &mut dyn TimelineSink,
    state: &mut TrackState,
    n: usize,
    report: &mut TimelineReport,
) -> io::Result<()> {
    for _ in 0..n {
        let Some(p) = state.pending.pop_front() else {
            break;
        };
        let at = p.ns.max(state.last_written);
        begin_region(sink, state, at, &p.name, &p.args, report)?;
        state.last_written = at;
        if let Some(left) = p.left {
            let end = left.max(at);
            state.last_written = end;
            leave_region(sink, state, end, report)?;
        }
    }
    Ok(())
}

/// Ends the innermost open call of `fid` and every slice begun inside it (a
/// tail call's, or a region not yet left), then the regions that were left
/// while it ran. The call's time is its own exit's: nothing else moves it.
fn close_call(
    sink: &mut dyn TimelineSink,
    state: &mut TrackState,
    ns: u64,
    fid: u32,
    report: &mut TimelineReport,
) -> io::Result<()> {
    let found = state
        .stack
        .iter()
        .rposition(|o| matches!(o, Open::Call { fid: f, .. } if *f == fid));
    let Some(at) = found else {
        report.unmatched_ends += 1;
        return Ok(());
    };
    for _ in at..state.stack.len() {
        sink.end(state.id, ns)?;
    }
    state.stack.truncate(at);
    end_left_regions(sink, state, ns)
}

/// A Trace2 region's leave: the innermost region (or call a region was
/// merged into) ends, unless FDR calls begun inside it are still open: then
/// it ends with the last of them, so that a region's whole-microsecond time
/// never cuts an FDR call short.
fn leave_region(
    sink: &mut dyn TimelineSink,
    state: &mut TrackState,
    ns: u64,
    report: &mut TimelineReport,
) -> io::Result<()> {
    let found = state.stack.iter().rposition(|o| {
        matches!(
            o,
            Open::Region { leaving: false } | Open::Call { region: true, .. }
        )
    });
    let Some(at) = found else {
        report.unmatched_ends += 1;
        return Ok(());
    };
    if let Open::Call { region, .. } = &mut state.stack[at] {
        // The span's FDR call ends at its own exit.
        *region = false;
        return Ok(());
    }
    let calls_inside = state.stack[at + 1..]
        .iter()
        .any(|o| matches!(o, Open::Call { .. }));
    if calls_inside {
        state.stack[at] = Open::Region { leaving: true };
        return Ok(());
    }
    // Regions begun inside it and not left end with it.
    for _ in at..state.stack.len() {
        sink.end(state.id, ns)?;
    }
    state.stack.truncate(at);
    end_left_regions(sink, state, ns)
}

/// Ends the regions on top of the stack whose leave already came.
fn end_left_regions(
    sink: &mut dyn TimelineSink,
    state: &mut TrackState,
    ns: u64,
) -> io::Result<()> {
    while let Some(Open::Region { leaving: true }) = state.stack.last() {
        sink.end(state.id, ns)?;
        state.stack.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    // The tests read the merged timeline back as the writers write it.
    use crate::convert::{convert_timeline, TimelineFormat};

    #[test]
    fn times_and_session_ids() {
        assert_eq!(
            parse_time("1970-01-01T00:00:01.000002Z"),
            Some(1_000_002_000)
        );
        assert_eq!(
            parse_time("2026-11-21T21:55:45.125553Z"),
            Some(1_795_298_145_125_553_000)
        );
        assert_eq!(parse_time("2026-11-21T21:55:45Z"), None);
        assert_eq!(parse_time("2026-13-21T21:55:45.125553Z"), None);
        assert_eq!(
            sid_pid("20261121T215545.125462Z-H0a7c9cdf-P00001e15"),
            Some(0x1e15)
        );
        assert_eq!(sid_pid("a-P00000001/b-P0000000a"), Some(10));
        assert_eq!(sid_pid("S"), None);
    }

    fn bounds_of(bytes: &[u8]) -> ClockBounds {
        let index = crate::read::index::scan(bytes, &mut |_| {}).unwrap();
        clock_bounds(bytes, &index, index.header().cycle_frequency.get())
    }

    #[test]
    fn clocks_from_markers_and_anchors() {
        // compiler-rt 14: CLOCK_MONOTONIC markers to the microsecond, kept.
        let real = bounds_of(include_bytes!(
            "../../../testdata/xray/real-v5-default.xray"
        ));
        assert!(matches!(real, ClockBounds::Markers { .. }), "{real:?}");
        assert!(real.uncertainty().unwrap() < 1000, "{real:?}");
        // Hand-made markers a microsecond apart while the TSC moves 0.7 µs:
        // the bounds disagree, and the lower end is used.
        let crafted = bounds_of(include_bytes!(
            "../../../testdata/xray/crafted-v5-2threads.xray"
        ));
        let ClockBounds::Markers { lo, hi } = crafted else {
            panic!("{crafted:?}")
        };
        assert!(lo > hi, "{crafted:?}");
        assert_eq!(crafted.offset(), lo);
        // Bounds that disagree: the lower end.
        assert_eq!(ClockBounds::Markers { lo: 5, hi: 3 }.offset(), 5);
        assert_eq!(
            ClockBounds::Markers { lo: 0, hi: 10 }.combine(ClockBounds::Markers { lo: 4, hi: 20 }),
            ClockBounds::Markers { lo: 4, hi: 10 }
        );
        assert_eq!(
            ClockBounds::Boot.combine(ClockBounds::Anchor(7)).offset(),
            7
        );
        assert_eq!(ClockBounds::Unknown.uncertainty(), None);
    }

    #[test]
    fn a_new_thread_on_every_line_stays_within_the_track_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t2.json");
        let mut text = String::new();
        for i in 0..MAX_TRACKS + 5 {
            text.push_str(&format!(
                "{{\"event\":\"data\",\"sid\":\"S-P00000001\",\"thread\":\"th{i}\",\"time\":\"2026-01-01T00:00:00.000001Z\",\"key\":\"k\",\"value\":\"v\"}}\n"
            ));
        }
        std::fs::write(&path, text).unwrap();
        let inputs = [TimelineInput {
            path,
            names: Names::empty(),
        }];
        let mut out = Vec::new();
        let report = convert_timeline(&inputs, TimelineFormat::Perfetto, &mut out).unwrap();
        assert_eq!(report.events, MAX_TRACKS as u64 + 5);
        assert_eq!(report.tracks, MAX_TRACKS + 1);
        assert_eq!(report.instants, MAX_TRACKS as u64 + 5);
    }

    /// Converts a Trace2 stream alone to Chrome JSON.
    fn chrome_of(text: &str) -> (TimelineReport, Value) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t2.json");
        std::fs::write(&path, text).unwrap();
        let inputs = [TimelineInput {
            path,
            names: Names::empty(),
        }];
        let mut out = Vec::new();
        let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut out).unwrap();
        (report, serde_json::from_slice(&out).unwrap())
    }

    fn line(thread: &str, us: u32, rest: &str) -> String {
        format!(
            "{{\"event\":{rest},\"sid\":\"S-P00000010\",\"thread\":\"{thread}\",\"time\":\"2026-01-01T00:00:00.{us:06}Z\"}}\n"
        )
    }

    #[test]
    fn a_thread_start_waits_for_its_thread_id() {
        let text = [
            line("main", 0, r#""cmd_name","name":"x""#),
            line("th01:w", 1, r#""thread_start""#),
            line("main", 2, r#""region_enter","label":"m""#),
            line(
                "th01:w",
                3,
                r#""data","category":"flightrec","key":"tid","value":"77""#,
            ),
            line("th01:w", 4, r#""region_enter","label":"r""#),
            line("th02:quiet", 5, r#""thread_start""#),
            line("th01:w", 6, r#""region_leave","label":"r""#),
            line("main", 7, r#""region_leave","label":"m""#),
            line("th01:w", 8, r#""thread_exit""#),
        ]
        .concat();
        let (report, doc) = chrome_of(&text);
        assert_eq!(report.events, 9);
        let events = doc["traceEvents"].as_array().unwrap();
        let tracks: Vec<(u64, &str)> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| {
                (
                    e["tid"].as_u64().unwrap(),
                    e["args"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        // Main, th01:w on thread 77 (its thread_start too), and th02:quiet,
        // which never said its id, on a track of its own at the end.
        assert_eq!(tracks.len(), 3, "{tracks:?}");
        assert_eq!(tracks[0], (16, "main"));
        assert_eq!(tracks[1], (77, "th01:w"));
        assert_eq!(tracks[2].1, "th02:quiet");
        let on = |name: &str| -> Vec<u64> {
            events
                .iter()
                .filter(|e| e["name"] == name && e["ph"] != "M")
                .map(|e| e["tid"].as_u64().unwrap())
                .collect()
        };
        assert_eq!(on("thread_start"), [77, tracks[2].0]);
        assert_eq!(on("r"), [77]);
        assert_eq!(on("thread_exit"), [77]);
        // Held for a moment, still at its own time.
        let start = events.iter().find(|e| e["name"] == "thread_start").unwrap();
        assert_eq!(start["ts"].as_f64(), Some(1.0));
    }

    #[test]
    fn counters_timers_and_numeric_data_are_counter_tracks() {
        let text = [
            line("main", 1, r#""data","category":"app","key":"n","value":"12""#),
            line("main", 2, r#""data","category":"app","key":"n","value":"-1.5""#),
            line("main", 3, r#""data","category":"app","key":"name","value":"12ab""#),
            line("main", 4, r#""data","category":"app","key":"hash","value":"inf""#),
            line("main", 5, r#""data_json","category":"app","key":"j","value":7"#),
            line("main", 6, r#""data_json","category":"app","key":"o","value":{"a":1}"#),
            line("th01:w", 7, r#""data","category":"flightrec","key":"tid","value":"77""#),
            line("th01:w", 8, r#""th_counter","category":"app","name":"items","count":3"#),
            line("th01:w", 9, r#""th_timer","category":"app","name":"step","intervals":2,"t_total":0.0025,"t_min":0.001,"t_max":0.0015"#),
            line("main", 10, r#""counter","category":"app","name":"items","count":3"#),
            line("main", 11, r#""timer","category":"app","name":"step","intervals":2,"t_total":0.0025,"t_min":0.001,"t_max":0.0015"#),
        ]
        .concat();
        let (report, doc) = chrome_of(&text);
        // Every event is still an instant with its fields.
        assert_eq!((report.events, report.instants), (11, 11));
        assert_eq!((report.counter_tracks, report.counter_values), (6, 7));
        assert_eq!(report.counter_values_dropped, 0);
        let counters: Vec<(&str, String, f64)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C")
            .map(|e| {
                let (k, v) = e["args"].as_object().unwrap().iter().next().unwrap();
                (e["name"].as_str().unwrap(), k.clone(), v.as_f64().unwrap())
            })
            .collect();
        let want: Vec<(&str, String, f64)> = vec![
            ("data app/n", "value".into(), 12.0),
            ("data app/n", "value".into(), -1.5),
            ("data_json app/j", "value".into(), 7.0),
            ("th_counter app/items (th01:w)", "count".into(), 3.0),
            ("th_timer app/step (th01:w)", "ns".into(), 2_500_000.0),
            ("counter app/items", "count".into(), 3.0),
            ("timer app/step", "ns".into(), 2_500_000.0),
        ];
        assert_eq!(counters, want);
    }

    #[test]
    fn numbers_in_data_values() {
        assert_eq!(number("42"), Some(CounterValue::Int(42)));
        assert_eq!(number("-7"), Some(CounterValue::Int(-7)));
        assert_eq!(number("+3"), Some(CounterValue::Int(3)));
        assert_eq!(number("0.25"), Some(CounterValue::Float(0.25)));
        assert_eq!(number("1e3"), Some(CounterValue::Float(1000.0)));
        assert_eq!(
            number("99999999999999999999"),
            Some(CounterValue::Float(1e20))
        );
        for text in [
            "", "-", "inf", "NaN", "infinity", "0x10", "12ab", "1.2.3", ".5", "1e999", " 1",
        ] {
            assert_eq!(number(text), None, "{text:?}");
        }
    }

    #[test]
    fn long_lines_are_cut_and_the_rest_read() {
        let text = format!("{}\nshort\nlast", "x".repeat(100));
        let mut r = io::BufReader::with_capacity(8, text.as_bytes());
        let mut line = Vec::new();
        assert_eq!(
            read_line_capped(&mut r, &mut line, 10).unwrap(),
            Some((false, 101))
        );
        assert_eq!(
            read_line_capped(&mut r, &mut line, 10).unwrap(),
            Some((true, 6))
        );
        assert_eq!(line, b"short");
        assert_eq!(
            read_line_capped(&mut r, &mut line, 10).unwrap(),
            Some((true, 4))
        );
        assert_eq!(line, b"last");
        assert_eq!(read_line_capped(&mut r, &mut line, 10).unwrap(), None);
    }
}
