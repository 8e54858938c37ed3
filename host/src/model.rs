//! The one timeline model every input is read into and every timeline writer
//! takes: tracks (a process's thread), slices (calls and regions), instants
//! and counter tracks, on one clock of nanoseconds since the Unix epoch.
//! [`crate::timeline`] fills it; the writers of [`crate::out`] write it.

use std::io;
use std::rc::Rc;

/// The track on which a writer says what a conversion left out or changed
/// ([`TimelineSink::summary`], when a count is not 0): process `flightrec`,
/// thread `conversion`, with an id no process has.
///
/// ```
/// use std::rc::Rc;
///
/// use flightrec_host::model::{summary_track, Arg, TimelineSink, Track, SUMMARY_EVENT};
/// use flightrec_host::out::chrome::ChromeSink;
///
/// let mut json = Vec::new();
/// let mut sink = ChromeSink::new(&mut json);
/// sink.start(0).unwrap();
/// let t = Track { pid: 1, tid: 2, process_name: "app".into(), thread_name: "thread 2".into() };
/// sink.track(0, &t).unwrap();
/// sink.begin(0, 0, &Rc::from("work"), &[]).unwrap();
/// // A region's fields on the call begun just before (annotate), the
/// // thread's Trace2 name learnt later (rename), what was left out (summary).
/// sink.annotate(0, &[(Rc::from("msg"), Arg::S("n=1".into()))]).unwrap();
/// sink.end(0, 1_000).unwrap();
/// sink.rename(0, &Track { thread_name: "th01:worker".into(), ..t }).unwrap();
/// sink.summary(1_000, &[("exits-without-a-call", 1)]).unwrap();
/// sink.finish().unwrap();
///
/// let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
/// let events = doc["traceEvents"].as_array().unwrap();
/// let work = events.iter().find(|e| e["name"] == "work").unwrap();
/// assert_eq!(work["args"]["msg"], "n=1");
/// let names: Vec<&str> = events
///     .iter()
///     .filter(|e| e["name"] == "thread_name" && e["tid"] == 2)
///     .map(|e| e["args"]["name"].as_str().unwrap())
///     .collect();
/// assert_eq!(names, ["thread 2", "th01:worker"]);
/// let summary = events.iter().find(|e| e["name"] == SUMMARY_EVENT).unwrap();
/// assert_eq!(summary["pid"], summary_track().pid);
/// assert_eq!(summary["args"]["exits-without-a-call"], 1);
/// assert_eq!(doc["metadata"]["flightrec"]["exits-without-a-call"], 1);
/// ```
pub fn summary_track() -> Track {
    Track {
        pid: u32::MAX,
        tid: u32::MAX,
        process_name: "flightrec".into(),
        thread_name: "conversion".into(),
    }
}

/// The name of the instant that carries the counts on [`summary_track`].
/// Example on [`summary_track`].
pub const SUMMARY_EVENT: &str = "left out or changed";

/// A value attached to a slice or an instant. Example on [`TimelineSink`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A number.
    U(u64),
    /// Text.
    S(String),
}

/// Names of the values attached to events: a few fixed ones and any text.
/// Example on [`TimelineSink`].
pub type ArgName = Rc<str>;

/// One track of the timeline. Example on [`TimelineSink`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    /// Process id (a made-up one above 2^30 for a device or a stream without one).
    pub pid: u32,
    /// Thread id (a made-up one above 2^30 for a Trace2 thread of its own).
    pub tid: u32,
    /// The process's name.
    pub process_name: String,
    /// The track's name.
    pub thread_name: String,
}

/// What the values of a counter track measure. Example on [`TimelineSink`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterUnit {
    /// A count (Trace2 `counter` and `th_counter`).
    Count,
    /// Nanoseconds (the total time of a Trace2 `timer` or `th_timer`).
    TimeNs,
    /// Not known (a numeric Trace2 `data` value).
    Unspecified,
}

/// A value on a counter track. Example on [`TimelineSink`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CounterValue {
    /// An integer.
    Int(i64),
    /// A number with a fraction (finite).
    Float(f64),
}

/// A counter track: one named value over time, of a process or of one of its
/// thread tracks. Example on [`TimelineSink`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterTrack {
    /// Process id, as in [`Track::pid`].
    pub pid: u32,
    /// The process's name.
    pub process_name: String,
    /// The thread track (its id in [`TimelineSink::track`]) the value belongs
    /// to, or `None` for a value of the whole process.
    pub thread_track: Option<usize>,
    /// The counter's name (`counter CATEGORY/NAME`, `timer CATEGORY/NAME`,
    /// `data CATEGORY/KEY`, ...).
    pub name: String,
    /// What the values measure.
    pub unit: CounterUnit,
}

/// Where a timeline's tracks, slices and instants go (the Chrome and Perfetto
/// writers [`crate::out::chrome`] and [`crate::out::perfetto`]). Times are nanoseconds since the Unix
/// epoch, never going back within a track; slices are balanced per track.
///
/// ```
/// use std::rc::Rc;
///
/// use flightrec_host::model::{
///     Arg, ArgName, CounterTrack, CounterUnit, CounterValue, TimelineSink, Track,
/// };
/// use flightrec_host::out::chrome::ChromeSink;
///
/// /// A call of `work` on the main thread of process 7, with a tick inside it,
/// /// and the thread's count of items at its end.
/// fn write(sink: &mut dyn TimelineSink) -> std::io::Result<()> {
///     let main = Track { pid: 7, tid: 7, process_name: "demo".into(), thread_name: "main".into() };
///     let items = CounterTrack {
///         pid: 7,
///         process_name: "demo".into(),
///         thread_track: Some(0),
///         name: "th_counter app/items".into(),
///         unit: CounterUnit::Count,
///     };
///     let n: ArgName = Rc::from("n");
///     sink.start(1_000_000)?;
///     sink.track(0, &main)?;
///     sink.begin(0, 1_000_000, &Rc::from("work"), &[(n.clone(), Arg::U(3))])?;
///     sink.instant(0, 1_500_000, &Rc::from("tick"), &[(n, Arg::S("x".into()))])?;
///     sink.end(0, 3_000_000)?;
///     sink.counter_track(0, &items)?;
///     sink.counter(0, 3_000_000, CounterValue::Int(12))?;
///     sink.finish()
/// }
///
/// let mut json = Vec::new();
/// write(&mut ChromeSink::new(&mut json)).unwrap();
/// let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
/// assert_eq!(doc["otherData"]["origin-ns"], 1_000_000);
/// let events = doc["traceEvents"].as_array().unwrap();
/// // Process and thread names, then the instant, then the slice (written at its
/// // end), then the counter.
/// let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
/// assert_eq!(names, ["process_name", "thread_name", "tick", "work", "th_counter app/items (main)"]);
/// assert_eq!(events[1]["args"]["name"], "main");
/// // Microseconds from the origin.
/// assert_eq!((events[2]["ts"].as_f64(), events[2]["args"]["n"].as_str()), (Some(500.0), Some("x")));
/// let work = &events[3];
/// assert_eq!((work["ph"].as_str(), work["pid"].as_u64(), work["tid"].as_u64()), (Some("X"), Some(7), Some(7)));
/// assert_eq!((work["ts"].as_f64(), work["dur"].as_f64()), (Some(0.0), Some(2000.0)));
/// assert_eq!(work["args"]["n"], 3);
/// // A counter event of the process (Chrome's counters are), named after the
/// // thread it counts for.
/// let items = &events[4];
/// assert_eq!((items["ph"].as_str(), items["pid"].as_u64()), (Some("C"), Some(7)));
/// assert_eq!((items["ts"].as_f64(), items["args"]["count"].as_i64()), (Some(2000.0), Some(12)));
/// ```
pub trait TimelineSink {
    /// Called once, before anything else, with the earliest time. Example on
    /// [`TimelineSink`].
    fn start(&mut self, origin_ns: u64) -> io::Result<()>;
    /// A new track, before its first event; `id` counts from 0. Example on
    /// [`TimelineSink`].
    fn track(&mut self, id: usize, track: &Track) -> io::Result<()>;
    /// A slice begins. Example on [`TimelineSink`].
    fn begin(
        &mut self,
        track: usize,
        ns: u64,
        name: &Rc<str>,
        args: &[(ArgName, Arg)],
    ) -> io::Result<()>;
    /// More arguments for the innermost open slice of `track` (a Trace2
    /// region's fields on the FDR call of the same span). Example on
    /// [`summary_track`].
    fn annotate(&mut self, track: usize, args: &[(ArgName, Arg)]) -> io::Result<()>;
    /// Track `id` takes a new name (a Trace2 thread's name, learnt after the
    /// track's first event). Example on [`summary_track`].
    fn rename(&mut self, id: usize, track: &Track) -> io::Result<()>;
    /// The innermost open slice of `track` ends. Example on [`TimelineSink`].
    fn end(&mut self, track: usize, ns: u64) -> io::Result<()>;
    /// An instant event. Example on [`TimelineSink`].
    fn instant(
        &mut self,
        track: usize,
        ns: u64,
        name: &Rc<str>,
        args: &[(ArgName, Arg)],
    ) -> io::Result<()>;
    /// A new counter track, before its first value; `id` counts from 0 (apart
    /// from the ids of [`TimelineSink::track`]). Example on [`TimelineSink`].
    fn counter_track(&mut self, id: usize, track: &CounterTrack) -> io::Result<()>;
    /// The value of counter track `id` from time `ns` on (never going back
    /// within the counter track). Example on [`TimelineSink`].
    fn counter(&mut self, id: usize, ns: u64, value: CounterValue) -> io::Result<()>;
    /// Before [`finish`](TimelineSink::finish): what the conversion left
    /// out or changed (name, count), for the output's metadata; `ns` is the
    /// timeline's last time. Example on [`summary_track`].
    fn summary(&mut self, ns: u64, counts: &[(&str, u64)]) -> io::Result<()>;
    /// After the last event. Example on [`TimelineSink`].
    fn finish(&mut self) -> io::Result<()>;
}
