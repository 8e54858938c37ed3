//! `convert --format chrome`: Chrome trace-event JSON, which Perfetto and
//! `chrome://tracing` open.
//!
//! Each function call becomes a complete event (`"ph": "X"`) on its thread's track,
//! matched per thread with a call stack: an exit closes the innermost open call of the
//! same function and every call opened inside it (what a tail call leaves open). An
//! exit without an open call is left out and counted; calls still open at the end of
//! a thread end at that thread's last event. Custom and typed events become
//! thread-scoped instant events (`"ph": "i"`). Times are microseconds from the first
//! event of the trace, computed with the header's cycle frequency.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{json, Value};

use flightrec_core::fdr::FileHeader;

use crate::names::Names;
use crate::read::events::{Kind, XEvent};
use crate::read::trace::Trace;

/// What the conversion wrote and left out.
///
/// ```
/// use flightrec_host::out::chrome::{to_chrome, ChromeReport};
/// use flightrec_host::read::trace::load;
/// use flightrec_host::names::Names;
///
/// // Exit #2, then enter and exit #1: the first exit has no call to close.
/// let trace = load(include_bytes!("../../../testdata/xray/ok-exit-before-enter.xray")).unwrap();
/// let (_, report) = to_chrome(&trace, &Names::empty());
/// assert_eq!(report, ChromeReport { calls: 1, unmatched_exits: 1, ..ChromeReport::default() });
///
/// // A trace cut short after three entries: the calls end with the thread.
/// let mut trace = load(include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
/// trace.events.truncate(3);
/// let (_, report) = to_chrome(&trace, &Names::empty());
/// assert_eq!((report.calls, report.unfinished_calls), (3, 3));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChromeReport {
    /// Complete events written.
    pub calls: usize,
    /// Instant events written.
    pub instants: usize,
    /// Exits that matched no open call.
    pub unmatched_exits: usize,
    /// Calls closed at the end of their thread.
    pub unfinished_calls: usize,
}

struct Open {
    func_id: u32,
    tsc: u64,
    args: Vec<u64>,
}

/// Builds the trace-event JSON object.
///
/// ```
/// use flightrec_host::out::chrome::{to_chrome, ChromeReport};
/// use flightrec_host::read::trace::load;
/// use flightrec_host::names::Names;
///
/// let trace = load(include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
/// let names = Names::parse("3 leaf\n").unwrap();
/// let (doc, report) = to_chrome(&trace, &names);
/// assert_eq!(report, ChromeReport { calls: 5, instants: 1, ..ChromeReport::default() });
///
/// let events = doc["traceEvents"].as_array().unwrap();
/// // The first call of leaf (#3, with two arguments): 1.5 µs after the first
/// // event at 1 GHz, for 1 µs.
/// let leaf = events.iter().find(|e| e["name"] == "leaf").unwrap();
/// assert_eq!((leaf["ph"].as_str(), leaf["tid"].as_u64()), (Some("X"), Some(101)));
/// assert_eq!((leaf["ts"].as_f64(), leaf["dur"].as_f64()), (Some(1.5), Some(1.0)));
/// assert_eq!(leaf["args"]["args"], serde_json::json!([42, 3735928559u64]));
/// // The custom event is an instant event.
/// let custom = events.iter().find(|e| e["ph"] == "i").unwrap();
/// assert_eq!(custom["args"]["data"], "hello");
/// ```
pub fn to_chrome(trace: &Trace, names: &Names) -> (Value, ChromeReport) {
    let origin = trace.events.iter().map(|e| e.tsc).min().unwrap_or(0);
    let per_us = trace.header.cycle_frequency.get() as f64 / 1e6;
    let us = |tsc: u64| tsc.saturating_sub(origin) as f64 / per_us;
    let mut report = ChromeReport::default();
    let mut out: Vec<Value> = Vec::new();
    let mut stacks: HashMap<(u32, u32), Vec<Open>> = HashMap::new();
    let mut last_tsc: HashMap<(u32, u32), u64> = HashMap::new();
    let mut threads: Vec<(u32, u32)> = Vec::new();

    let call = |o: &Open, end: u64, key: (u32, u32)| {
        let mut args = json!({ "func_id": o.func_id });
        if !o.args.is_empty() {
            args["args"] = json!(o.args);
        }
        json!({
            "name": names.display(o.func_id),
            "cat": "function",
            "ph": "X",
            "ts": us(o.tsc),
            "dur": us(end) - us(o.tsc),
            "pid": key.0,
            "tid": key.1,
            "args": args,
        })
    };

    for e in &trace.events {
        let key = (e.process, e.thread);
        if !threads.contains(&key) {
            threads.push(key);
        }
        last_tsc.insert(key, e.tsc);
        let stack = stacks.entry(key).or_default();
        match e.kind {
            k if k.is_enter() => stack.push(Open {
                func_id: e.func_id,
                tsc: e.tsc,
                args: e.args.clone(),
            }),
            k if k.is_exit() => match stack.iter().rposition(|o| o.func_id == e.func_id) {
                Some(at) => {
                    for o in stack.drain(at..).rev() {
                        out.push(call(&o, e.tsc, key));
                        report.calls += 1;
                    }
                }
                None => report.unmatched_exits += 1,
            },
            _ => {
                out.push(instant(e, us(e.tsc), key));
                report.instants += 1;
            }
        }
    }
    for key in &threads {
        let end = last_tsc.get(key).copied().unwrap_or(origin);
        if let Some(stack) = stacks.get_mut(key) {
            for o in stack.drain(..).rev() {
                out.push(call(&o, end, *key));
                report.calls += 1;
                report.unfinished_calls += 1;
            }
        }
    }
    let mut meta = Vec::new();
    let mut processes: Vec<u32> = threads.iter().map(|k| k.0).collect();
    processes.dedup();
    for pid in processes {
        meta.push(json!({
            "name": "process_name", "ph": "M", "pid": pid, "tid": 0,
            "args": { "name": format!("process {pid}") },
        }));
    }
    for (pid, tid) in &threads {
        meta.push(json!({
            "name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
            "args": { "name": format!("thread {tid}") },
        }));
    }
    meta.extend(out);
    let h = &trace.header;
    let doc = json!({
        "traceEvents": meta,
        "displayTimeUnit": "ns",
        "otherData": {
            "source": "flightrec",
            "fdr-version": h.version.number(),
            "cycle-frequency": h.cycle_frequency.get(),
            "origin-tsc": origin,
        },
    });
    (doc, report)
}

fn instant(e: &XEvent, ts: f64, key: (u32, u32)) -> Value {
    let (name, mut args) = match e.kind {
        Kind::TypedEvent => (
            format!("typed event {}", e.event_type),
            json!({ "type": e.event_type }),
        ),
        _ => ("custom event".to_string(), json!({})),
    };
    args["data"] = json!(String::from_utf8_lossy(&e.data));
    args["cpu"] = json!(e.cpu);
    json!({
        "name": name, "cat": "event", "ph": "i", "s": "t",
        "ts": ts, "pid": key.0, "tid": key.1, "args": args,
    })
}

/// Writes the JSON document, one line. The same bytes as serializing
/// [`to_chrome`]'s document, written as the events go: see
/// [`write_chrome_events`].
///
/// ```
/// use flightrec_host::out::chrome::write_chrome;
/// use flightrec_host::read::trace::load;
/// use flightrec_host::names::Names;
///
/// let trace = load(include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// let mut out = Vec::new();
/// let report = write_chrome(&trace, &Names::empty(), &mut out).unwrap();
/// assert_eq!(report.calls, 3);
///
/// assert!(out.ends_with(b"}\n"));
/// let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
/// assert_eq!(doc["otherData"]["cycle-frequency"], 1_000_000_000);
/// let threads: Vec<&str> = doc["traceEvents"]
///     .as_array()
///     .unwrap()
///     .iter()
///     .filter(|e| e["name"] == "thread_name")
///     .map(|e| e["args"]["name"].as_str().unwrap())
///     .collect();
/// assert_eq!(threads, ["thread 101", "thread 202"]);
///
/// // Byte for byte what serde_json writes for the document in memory.
/// let (doc, _) = flightrec_host::out::chrome::to_chrome(&trace, &Names::empty());
/// let mut whole = serde_json::to_vec(&doc).unwrap();
/// whole.push(b'\n');
/// assert_eq!(out, whole);
/// ```
pub fn write_chrome(
    trace: &Trace,
    names: &Names,
    out: &mut impl Write,
) -> io::Result<ChromeReport> {
    let layout = ChromeLayout::survey(trace.events.iter().cloned());
    let mut events = trace.events.iter();
    write_chrome_events(
        &trace.header,
        &layout,
        || events.next().cloned(),
        names,
        out,
    )
}

/// What must be known before the first event is written: the first event's time
/// (the origin of every timestamp) and the tracks, in order of first appearance.
///
/// ```
/// use flightrec_host::out::chrome::ChromeLayout;
/// use flightrec_host::read::trace::load;
///
/// let trace = load(include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// let layout = ChromeLayout::survey(trace.events.iter().cloned());
/// assert_eq!(layout.origin, 1_000_000);
/// assert_eq!(layout.tracks, [(4242, 101), (4242, 202)]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChromeLayout {
    /// The smallest TSC of the trace (0 without events).
    pub origin: u64,
    /// (process, thread) pairs in order of first appearance.
    pub tracks: Vec<(u32, u32)>,
}

impl ChromeLayout {
    /// Reads the events once (in thread order) to find the layout. Example on
    /// [`ChromeLayout`].
    pub fn survey(events: impl IntoIterator<Item = XEvent>) -> Self {
        let mut layout = Self::default();
        let mut origin: Option<u64> = None;
        for e in events {
            layout.add(&e, &mut origin);
        }
        layout.origin = origin.unwrap_or(0);
        layout
    }

    fn add(&mut self, e: &XEvent, origin: &mut Option<u64>) {
        *origin = Some(origin.map_or(e.tsc, |o| o.min(e.tsc)));
        let key = (e.process, e.thread);
        if self.tracks.last() != Some(&key) && !self.tracks.contains(&key) {
            self.tracks.push(key);
        }
    }

    /// Like [`ChromeLayout::survey`], one event at a time from `next`. Example
    /// on [`write_chrome_events`].
    pub fn survey_with(mut next: impl FnMut() -> Option<XEvent>) -> Self {
        let mut layout = Self::default();
        let mut origin: Option<u64> = None;
        while let Some(e) = next() {
            layout.add(&e, &mut origin);
        }
        layout.origin = origin.unwrap_or(0);
        layout
    }
}

/// Writes the Chrome JSON of the events `next` yields in thread order (each
/// thread's events together, as [`crate::read::index::Index::thread_events`] gives
/// them), as they come: memory holds only the open calls of each thread.
///
/// ```
/// use flightrec_host::out::chrome::{write_chrome_events, ChromeLayout};
/// use flightrec_host::names::Names;
/// use flightrec_host::read::index::scan;
///
/// let bytes = include_bytes!("../../../testdata/xray/crafted-v5.xray");
/// let index = scan(bytes, &mut |_| {}).unwrap();
/// let events = |t: usize| index.thread_events(bytes, t);
/// let mut cursor = events(0);
/// let layout = ChromeLayout::survey_with(|| cursor.next_event());
/// let mut cursor = events(0);
/// let mut out = Vec::new();
/// let report =
///     write_chrome_events(index.header(), &layout, || cursor.next_event(), &Names::empty(), &mut out)
///         .unwrap();
/// assert_eq!((report.calls, report.instants), (5, 1));
/// let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
/// assert_eq!(doc["otherData"]["origin-tsc"], 1_000_000);
/// ```
pub fn write_chrome_events(
    header: &FileHeader,
    layout: &ChromeLayout,
    mut next: impl FnMut() -> Option<XEvent>,
    names: &Names,
    out: &mut impl Write,
) -> io::Result<ChromeReport> {
    let origin = layout.origin;
    let per_us = header.cycle_frequency.get() as f64 / 1e6;
    let us = |tsc: u64| tsc.saturating_sub(origin) as f64 / per_us;
    let mut report = ChromeReport::default();
    let mut line: Vec<u8> = Vec::with_capacity(512);
    let mut num = itoa::Buffer::new();
    let mut float = ryu::Buffer::new();
    let mut names_json: HashMap<u32, Vec<u8>> = HashMap::new();

    write!(
        out,
        "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"cycle-frequency\":{},\"fdr-version\":{},\"origin-tsc\":{},\"source\":\"flightrec\"}},\"traceEvents\":[",
        header.cycle_frequency.get(),
        header.version.number(),
        origin
    )?;
    let mut first = true;
    let mut sep = |line: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            line.push(b',');
        }
    };
    let mut processes: Vec<u32> = layout.tracks.iter().map(|k| k.0).collect();
    processes.dedup();
    for pid in processes {
        line.clear();
        sep(&mut line);
        write!(
            line,
            "{{\"args\":{{\"name\":\"process {pid}\"}},\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0}}"
        )?;
        out.write_all(&line)?;
    }
    for (pid, tid) in &layout.tracks {
        line.clear();
        sep(&mut line);
        write!(
            line,
            "{{\"args\":{{\"name\":\"thread {tid}\"}},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid}}}"
        )?;
        out.write_all(&line)?;
    }

    let mut f64_json = |line: &mut Vec<u8>, v: f64| {
        if v.is_finite() {
            line.extend_from_slice(float.format_finite(v).as_bytes());
        } else {
            line.extend_from_slice(b"null");
        }
    };
    let mut call = |line: &mut Vec<u8>, o: &Open, end: u64, key: (u32, u32)| {
        line.extend_from_slice(b"{\"args\":{");
        if !o.args.is_empty() {
            line.extend_from_slice(b"\"args\":[");
            for (i, a) in o.args.iter().enumerate() {
                if i > 0 {
                    line.push(b',');
                }
                line.extend_from_slice(num.format(*a).as_bytes());
            }
            line.extend_from_slice(b"],");
        }
        line.extend_from_slice(b"\"func_id\":");
        line.extend_from_slice(num.format(o.func_id).as_bytes());
        line.extend_from_slice(b"},\"cat\":\"function\",\"dur\":");
        f64_json(line, us(end) - us(o.tsc));
        line.extend_from_slice(b",\"name\":");
        let name = names_json
            .entry(o.func_id)
            .or_insert_with(|| serde_json::to_vec(&names.display(o.func_id)).unwrap_or_default());
        line.extend_from_slice(name);
        if names_json.len() > 1 << 16 {
            names_json.clear();
        }
        line.extend_from_slice(b",\"ph\":\"X\",\"pid\":");
        line.extend_from_slice(num.format(key.0).as_bytes());
        line.extend_from_slice(b",\"tid\":");
        line.extend_from_slice(num.format(key.1).as_bytes());
        line.extend_from_slice(b",\"ts\":");
        f64_json(line, us(o.tsc));
        line.push(b'}');
    };

    let mut stacks: HashMap<(u32, u32), Vec<Open>> = HashMap::new();
    let mut last_tsc: HashMap<(u32, u32), u64> = HashMap::new();
    while let Some(e) = next() {
        let key = (e.process, e.thread);
        last_tsc.insert(key, e.tsc);
        let stack = stacks.entry(key).or_default();
        line.clear();
        match e.kind {
            k if k.is_enter() => stack.push(Open {
                func_id: e.func_id,
                tsc: e.tsc,
                args: e.args,
            }),
            k if k.is_exit() => match stack.iter().rposition(|o| o.func_id == e.func_id) {
                Some(at) => {
                    for o in stack.drain(at..).rev() {
                        sep(&mut line);
                        call(&mut line, &o, e.tsc, key);
                        report.calls += 1;
                    }
                }
                None => report.unmatched_exits += 1,
            },
            _ => {
                sep(&mut line);
                serde_json::to_writer(&mut line, &instant(&e, us(e.tsc), key))?;
                report.instants += 1;
            }
        }
        out.write_all(&line)?;
    }
    for key in &layout.tracks {
        let end = last_tsc.get(key).copied().unwrap_or(origin);
        if let Some(stack) = stacks.get_mut(key) {
            for o in stack.drain(..).rev() {
                line.clear();
                sep(&mut line);
                call(&mut line, &o, end, *key);
                out.write_all(&line)?;
                report.calls += 1;
                report.unfinished_calls += 1;
            }
        }
    }
    out.write_all(b"]}\n")?;
    Ok(report)
}
