//! What the timeline's sources give the merge: events keyed by track, the
//! shared argument names and name caches, and what a merge reports.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use crate::model::{Arg, ArgName, CounterUnit, CounterValue};
use crate::names::Names;

use super::limits::MAX_CACHED_NAMES;

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
    /// Events of threads past [`MAX_TRACKS`](super::MAX_TRACKS), written on one
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
    /// Values left out because [`MAX_COUNTER_TRACKS`](super::MAX_COUNTER_TRACKS) counter tracks existed
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
pub(super) enum ProcKey {
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
pub(super) enum TrackKey {
    Thread(ProcKey, u32),
    Named(ProcKey, Rc<str>),
    /// An async task (by [`flightrec_core::tasks::key`]): its polls, what
    /// they call, its spawns, wake-ups and ends.
    Task(ProcKey, u32),
    /// An async executor: its passes over its run queue.
    Executor(ProcKey, u32),
}

impl TrackKey {
    pub(super) fn proc(&self) -> &ProcKey {
        match self {
            TrackKey::Thread(p, _)
            | TrackKey::Named(p, _)
            | TrackKey::Task(p, _)
            | TrackKey::Executor(p, _) => p,
        }
    }
}

pub(super) enum What {
    Enter(u32, Vec<u64>),
    Exit(u32),
    /// A Trace2 region: its name (`category:label`), arguments, and the name
    /// the `tracing` layer gives the FDR function of the same span
    /// (`category::label`).
    RegionEnter(Rc<str>, Vec<(ArgName, Arg)>, Rc<str>),
    RegionLeave,
    Instant(Rc<str>, Vec<(ArgName, Arg)>),
}

pub(super) struct TEvent {
    pub(super) ns: u64,
    pub(super) track: TrackKey,
    /// The track's name when this event creates it (a Trace2 thread's name
    /// on its FDR thread's track).
    pub(super) track_name: Option<Rc<str>>,
    pub(super) what: What,
    /// The FDR input whose names apply (function names).
    pub(super) names: usize,
    /// A value for a counter track as well (Trace2 counters, timers, numeric
    /// `data`).
    pub(super) counter: Option<Sample>,
}

/// A counter value an event carries.
pub(super) struct Sample {
    pub(super) name: Rc<str>,
    /// Of the event's thread (`th_counter`, `th_timer`), else of its process.
    pub(super) per_thread: bool,
    pub(super) unit: CounterUnit,
    pub(super) value: CounterValue,
}

/// The fixed argument names, shared.
pub(super) struct ArgNames {
    pub(super) func_id: ArgName,
    pub(super) data: ArgName,
    pub(super) cpu: ArgName,
    pub(super) typ: ArgName,
    pub(super) region: ArgName,
    pub(super) executor: ArgName,
    pub(super) task: ArgName,
    pub(super) wake_to_poll: ArgName,
    pub(super) args: Vec<ArgName>,
}

impl ArgNames {
    pub(super) fn new() -> Self {
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

/// How a name list resolves, per FDR input.
pub(super) struct NameCache {
    pub(super) names: Names,
    pub(super) cache: HashMap<u32, Rc<str>>,
}

impl NameCache {
    pub(super) fn get(&mut self, id: u32) -> Rc<str> {
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
pub(super) const NO_FDR: u32 = u32::MAX;

/// A source of time-ordered events.
pub(super) trait Source {
    fn next_event(&mut self, problems: &mut Vec<InputProblem>) -> Option<TEvent>;
}

pub(super) fn tsc_ns(tsc: u64, freq: u64) -> i128 {
    let freq = freq.max(1);
    // A clock of a whole number of ns per tick (1 GHz, 1 MHz, ...): a
    // multiplication, not a 128-bit division per event. The same value.
    if NS_PER_S % freq == 0 {
        return i128::from(tsc) * i128::from(NS_PER_S / freq);
    }
    (i128::from(tsc) * i128::from(NS_PER_S)) / i128::from(freq)
}

const NS_PER_S: u64 = 1_000_000_000;

/// `v` within nanoseconds since the Unix epoch that a `u64` holds; a time
/// outside them is counted in `clamped`.
pub(super) fn clamp_ns(v: i128, clamped: &Cell<u64>) -> u64 {
    let c = v.clamp(0, i128::from(u64::MAX));
    if c != v {
        clamped.set(clamped.get() + 1);
    }
    c as u64
}

/// The instant of a task's wake-up on its track (the start of its
/// wake-to-poll time).
pub(super) const READY_EVENT: &str = "ready";

/// The name of a poll's argument: the time (ns) from the task's first
/// wake-up since its last poll to this poll's start.
pub(super) const WAKE_TO_POLL_ARG: &str = "wake_to_poll_ns";

/// The counter of an executor's load: the share (%) of the time since the
/// last value it spent in passes, at the end of a pass at least
/// [`LOAD_WINDOW_NS`] after the last value.
pub(super) const LOAD_COUNTER: &str = "load %";

/// The shortest time a load value covers.
pub(super) const LOAD_WINDOW_NS: u64 = 1_000_000;

#[cfg(test)]
mod tests {
    #[test]
    fn ticks_to_ns_whole_and_not() {
        use super::tsc_ns;
        for (tsc, freq) in [
            (u64::MAX, 1_000_000_000),
            (u64::MAX, 1_000_000),
            (12_345, 1),
            (7, 0),
        ] {
            let slow = (i128::from(tsc) * 1_000_000_000) / i128::from(freq.max(1));
            assert_eq!(tsc_ns(tsc, freq), slow);
        }
        assert_eq!(tsc_ns(3, 3_000_000_000), 1);
        assert_eq!(tsc_ns(10, 48_000_000), 208);
    }
}
