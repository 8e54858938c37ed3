//! `convert --format chrome`: the timeline ([`crate::model`]) as Chrome
//! trace-event JSON, which Perfetto and `chrome://tracing` open, streamed.
//!
//! A `process_name` and a `thread_name` metadata event per track as it
//! appears, each slice a complete event (`"ph": "X"`, written when it ends),
//! each instant a thread-scoped instant event, each counter value a counter
//! event (`"ph": "C"`, of the process: a thread's counter has the thread's name
//! in brackets after its own; the value's name says its unit: `count`, `ns` or
//! `value`); times in microseconds from the earliest event
//! (`otherData.origin-ns`, nanoseconds since the Unix epoch).

use std::io::{self, Write};
use std::rc::Rc;

use crate::model::{
    summary_track, Arg, ArgName, CounterTrack, CounterUnit, CounterValue, TimelineSink, Track,
    SUMMARY_EVENT,
};

/// A slice begun and not yet ended: name, start (ns), its arguments' JSON.
type OpenSlice = (Rc<str>, u64, Vec<u8>);

/// Writes a timeline as Chrome trace-event JSON.
///
/// ```
/// use std::rc::Rc;
///
/// use flightrec_host::model::{TimelineSink, Track};
/// use flightrec_host::out::chrome::ChromeSink;
///
/// let track = |tid: u32, name: &str| Track {
///     pid: 1,
///     tid,
///     process_name: "app".into(),
///     thread_name: name.into(),
/// };
/// let (outer, inner): (Rc<str>, Rc<str>) = (Rc::from("outer"), Rc::from("inner"));
/// let mut json = Vec::new();
/// let mut sink = ChromeSink::new(&mut json);
/// sink.start(5_000).unwrap();
/// sink.track(0, &track(1, "main")).unwrap();
/// sink.track(1, &track(2, "worker")).unwrap();
/// sink.begin(1, 5_000, &outer, &[]).unwrap();
/// sink.begin(1, 6_000, &inner, &[]).unwrap();
/// sink.end(1, 7_000).unwrap();
/// sink.end(1, 9_000).unwrap();
/// sink.end(0, 9_000).unwrap(); // nothing open on track 0: nothing written
/// sink.finish().unwrap();
/// let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
/// let events = doc["traceEvents"].as_array().unwrap();
/// // One process name for the two tracks of process 1.
/// let meta: Vec<(&str, &str)> = events[..3]
///     .iter()
///     .map(|e| (e["name"].as_str().unwrap(), e["args"]["name"].as_str().unwrap()))
///     .collect();
/// assert_eq!(meta, [("process_name", "app"), ("thread_name", "main"), ("thread_name", "worker")]);
/// // Slices are complete events, the inner one first (it ends first), on thread 2.
/// let slices: Vec<(&str, u64, f64, f64)> = events[3..]
///     .iter()
///     .map(|e| {
///         let name = e["name"].as_str().unwrap();
///         (name, e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap())
///     })
///     .collect();
/// assert_eq!(slices, [("inner", 2, 1.0, 1.0), ("outer", 2, 0.0, 4.0)]);
/// ```
pub struct ChromeSink<'w, W: Write> {
    out: &'w mut W,
    origin: u64,
    first: bool,
    tracks: Vec<(u32, u32, Vec<OpenSlice>)>,
    /// The name of each track, for the names of its counters.
    track_names: Vec<String>,
    /// Each counter track's process, name (with its thread's) and value name.
    counters: Vec<(u32, String, &'static str)>,
    processes: Vec<u32>,
    line: Vec<u8>,
    /// The `metadata` member, written by `finish`.
    summary: Vec<u8>,
}

impl<'w, W: Write> ChromeSink<'w, W> {
    /// A writer to `out`. Example on [`ChromeSink`].
    pub fn new(out: &'w mut W) -> Self {
        Self {
            out,
            origin: 0,
            first: true,
            tracks: Vec::new(),
            track_names: Vec::new(),
            counters: Vec::new(),
            processes: Vec::new(),
            line: Vec::with_capacity(512),
            summary: Vec::new(),
        }
    }

    fn sep(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.line.push(b',');
        }
    }

    fn us(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.origin) as f64 / 1000.0
    }

    /// The `process_name` metadata event of `pid`, the first time it is seen,
    /// into `self.line`.
    fn process_meta(&mut self, pid: u32, name: &str) -> io::Result<()> {
        if self.processes.contains(&pid) {
            return Ok(());
        }
        self.processes.push(pid);
        self.sep();
        let line = &mut self.line;
        line.extend_from_slice(b"{\"args\":{\"name\":");
        json_str(line, name);
        write!(
            line,
            "}},\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0}}"
        )
    }
}

fn json_str(line: &mut Vec<u8>, s: &str) {
    // Serializing a str to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *line, s);
}

fn json_args(line: &mut Vec<u8>, args: &[(ArgName, Arg)]) {
    line.push(b'{');
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        json_str(line, k);
        line.push(b':');
        match v {
            Arg::U(n) => line.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            Arg::S(s) => json_str(line, s),
        }
    }
    line.push(b'}');
}

fn json_f64(line: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        line.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    } else {
        line.extend_from_slice(b"null");
    }
}

impl<W: Write> TimelineSink for ChromeSink<'_, W> {
    fn start(&mut self, origin_ns: u64) -> io::Result<()> {
        self.origin = origin_ns;
        write!(
            self.out,
            "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"origin-ns\":{origin_ns},\"source\":\"flightrec\"}},\"traceEvents\":["
        )
    }

    fn track(&mut self, id: usize, t: &Track) -> io::Result<()> {
        debug_assert_eq!(id, self.tracks.len());
        self.line.clear();
        self.process_meta(t.pid, &t.process_name)?;
        self.sep();
        let line = &mut self.line;
        line.extend_from_slice(b"{\"args\":{\"name\":");
        json_str(line, &t.thread_name);
        write!(
            line,
            "}},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{}}}",
            t.pid, t.tid
        )?;
        self.tracks.push((t.pid, t.tid, Vec::new()));
        self.track_names.push(t.thread_name.clone());
        self.out.write_all(&self.line)
    }

    fn begin(
        &mut self,
        track: usize,
        ns: u64,
        name: &Rc<str>,
        args: &[(ArgName, Arg)],
    ) -> io::Result<()> {
        let mut a = Vec::new();
        json_args(&mut a, args);
        self.tracks[track].2.push((name.clone(), ns, a));
        Ok(())
    }

    fn annotate(&mut self, track: usize, args: &[(ArgName, Arg)]) -> io::Result<()> {
        if let Some((_, _, json)) = self.tracks[track].2.last_mut() {
            // `{...}` grows by the new pairs.
            let mut more = Vec::new();
            json_args(&mut more, args);
            if more.len() > 2 {
                json.pop();
                if json.len() > 1 {
                    json.push(b',');
                }
                json.extend_from_slice(&more[1..]);
            }
        }
        Ok(())
    }

    fn rename(&mut self, id: usize, t: &Track) -> io::Result<()> {
        // A second `thread_name` event: the last one names the thread.
        self.line.clear();
        self.sep();
        let line = &mut self.line;
        line.extend_from_slice(b"{\"args\":{\"name\":");
        json_str(line, &t.thread_name);
        write!(
            line,
            "}},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{}}}",
            self.tracks[id].0, self.tracks[id].1
        )?;
        self.track_names[id] = t.thread_name.clone();
        self.out.write_all(&self.line)
    }

    fn end(&mut self, track: usize, ns: u64) -> io::Result<()> {
        let (pid, tid, stack) = &mut self.tracks[track];
        let (pid, tid) = (*pid, *tid);
        let Some((name, start, args)) = stack.pop() else {
            return Ok(());
        };
        self.line.clear();
        self.sep();
        // The duration from the nanoseconds, not from two rounded times.
        let (ts, dur) = (self.us(start), ns.saturating_sub(start) as f64 / 1000.0);
        let line = &mut self.line;
        line.extend_from_slice(b"{\"args\":");
        line.extend_from_slice(&args);
        line.extend_from_slice(b",\"dur\":");
        json_f64(line, dur);
        line.extend_from_slice(b",\"name\":");
        json_str(line, &name);
        write!(line, ",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":")?;
        json_f64(line, ts);
        line.push(b'}');
        self.out.write_all(&self.line)
    }

    fn instant(
        &mut self,
        track: usize,
        ns: u64,
        name: &Rc<str>,
        args: &[(ArgName, Arg)],
    ) -> io::Result<()> {
        let (pid, tid) = (self.tracks[track].0, self.tracks[track].1);
        self.line.clear();
        self.sep();
        let ts = self.us(ns);
        let line = &mut self.line;
        line.extend_from_slice(b"{\"args\":");
        json_args(line, args);
        line.extend_from_slice(b",\"name\":");
        json_str(line, name);
        write!(
            line,
            ",\"ph\":\"i\",\"pid\":{pid},\"s\":\"t\",\"tid\":{tid},\"ts\":"
        )?;
        json_f64(line, ts);
        line.push(b'}');
        self.out.write_all(&self.line)
    }

    fn counter_track(&mut self, id: usize, t: &CounterTrack) -> io::Result<()> {
        debug_assert_eq!(id, self.counters.len());
        // Chrome's counters belong to processes: a thread's carry its name.
        let name = match t.thread_track.and_then(|i| self.track_names.get(i)) {
            Some(thread) => format!("{} ({thread})", t.name),
            None => t.name.clone(),
        };
        let value_name = match t.unit {
            CounterUnit::Count => "count",
            CounterUnit::TimeNs => "ns",
            CounterUnit::Unspecified => "value",
        };
        self.counters.push((t.pid, name, value_name));
        self.line.clear();
        self.process_meta(t.pid, &t.process_name)?;
        self.out.write_all(&self.line)
    }

    fn counter(&mut self, id: usize, ns: u64, value: CounterValue) -> io::Result<()> {
        self.line.clear();
        self.sep();
        let ts = self.us(ns);
        let (pid, name, value_name) = &self.counters[id];
        let line = &mut self.line;
        line.extend_from_slice(b"{\"args\":{");
        json_str(line, value_name);
        line.push(b':');
        match value {
            CounterValue::Int(i) => {
                line.extend_from_slice(itoa::Buffer::new().format(i).as_bytes())
            }
            CounterValue::Float(f) => json_f64(line, f),
        }
        line.extend_from_slice(b"},\"name\":");
        json_str(line, name);
        write!(line, ",\"ph\":\"C\",\"pid\":{pid},\"ts\":")?;
        json_f64(line, ts);
        line.push(b'}');
        self.out.write_all(&self.line)
    }

    fn summary(&mut self, ns: u64, counts: &[(&str, u64)]) -> io::Result<()> {
        // As Perfetto's writer: an instant on a track of its own when
        // something was left out or changed...
        if counts.iter().any(|(_, v)| *v > 0) {
            let id = self.tracks.len();
            self.track(id, &summary_track())?;
            let args: Vec<(ArgName, Arg)> = counts
                .iter()
                .map(|(k, v)| (Rc::from(*k), Arg::U(*v)))
                .collect();
            self.instant(id, ns, &Rc::from(SUMMARY_EVENT), &args)?;
        }
        // ...and always in the trace's `metadata`.
        // The trace's `metadata` dictionary, after the events.
        self.summary.clear();
        self.summary
            .extend_from_slice(b",\"metadata\":{\"flightrec\":{");
        for (i, (k, v)) in counts.iter().enumerate() {
            if i > 0 {
                self.summary.push(b',');
            }
            json_str(&mut self.summary, k);
            self.summary.push(b':');
            self.summary
                .extend_from_slice(itoa::Buffer::new().format(*v).as_bytes());
        }
        self.summary.extend_from_slice(b"}}");
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.write_all(b"]")?;
        self.out.write_all(&self.summary)?;
        self.out.write_all(b"}\n")
    }
}
