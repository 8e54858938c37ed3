//! The writers of a merged timeline ([`crate::timeline`]): Chrome trace-event
//! JSON and Perfetto's protobuf trace, both streamed.
//!
//! Chrome: a `process_name` and a `thread_name` metadata event per track as it
//! appears, each slice a complete event (`"ph": "X"`, written when it ends),
//! each instant a thread-scoped instant event, each counter value a counter
//! event (`"ph": "C"`, of the process: a thread's counter has the thread's name
//! in brackets after its own; the value's name says its unit: `count`, `ns` or
//! `value`); times in microseconds from the earliest event
//! (`otherData.origin-ns`, nanoseconds since the Unix epoch).
//!
//! Perfetto: a `TrackDescriptor` per process and per track (with its
//! `ThreadDescriptor`), each track on its own packet sequence with interned
//! event and argument names, slices as begin/end `TrackEvent`s, instants as
//! instant events, arguments as debug annotations; a counter track is a
//! `TrackDescriptor` with a `CounterDescriptor` (unit count or time in ns)
//! under its thread's or its process's track, its values `TYPE_COUNTER`
//! events (`counter_value`, or `double_counter_value` for a fraction) on a
//! sequence of its own; timestamps in nanoseconds since the Unix epoch.

use std::collections::HashMap;
use std::io::{self, Write};
use std::rc::Rc;

use crate::model::{Arg, ArgName, CounterTrack, CounterUnit, CounterValue, TimelineSink, Track};
use crate::out::perfetto::field::*;
use crate::out::perfetto::{bytes_field, double_field, message, uint_field};

/// A slice begun and not yet ended: name, start (ns), its arguments' JSON.
type OpenSlice = (Rc<str>, u64, Vec<u8>);

/// Writes a timeline as Chrome trace-event JSON.
///
/// ```
/// use std::rc::Rc;
///
/// use flightrec_host::model::{TimelineSink, Track};
/// use flightrec_host::out::timeline_sinks::ChromeSink;
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

    fn end(&mut self, track: usize, ns: u64) -> io::Result<()> {
        let (pid, tid, stack) = &mut self.tracks[track];
        let (pid, tid) = (*pid, *tid);
        let Some((name, start, args)) = stack.pop() else {
            return Ok(());
        };
        self.line.clear();
        self.sep();
        let (ts, dur) = (self.us(start), self.us(ns) - self.us(start));
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

    fn finish(&mut self) -> io::Result<()> {
        self.out.write_all(b"]}\n")
    }
}

/// The packet sequence of counter track `id` is this plus `id` (those of the
/// other tracks count from 1, and there are at most
/// [`crate::timeline::MAX_TRACKS`] + 1 of them).
const COUNTER_SEQUENCES: u64 = 1 << 30;

/// Distinct names a sequence interns before it clears its state.
const MAX_INTERNED: usize = 1 << 16;

struct Seq {
    track_uuid: u64,
    cleared: bool,
    names: HashMap<Rc<str>, u64>,
    arg_names: HashMap<Rc<str>, u64>,
}

/// Writes a timeline as Perfetto's protobuf trace.
///
/// ```
/// use std::rc::Rc;
///
/// use flightrec_host::model::{Arg, TimelineSink, Track};
/// use flightrec_host::out::timeline_sinks::PerfettoSink;
///
/// let main = Track { pid: 3, tid: 3, process_name: "app".into(), thread_name: "main".into() };
/// let mut trace = Vec::new();
/// let mut sink = PerfettoSink::new(&mut trace);
/// sink.start(0).unwrap();
/// sink.track(0, &main).unwrap();
/// let work: Rc<str> = Rc::from("work");
/// sink.begin(0, 1_000, &work, &[(Rc::from("n"), Arg::U(1))]).unwrap();
/// sink.end(0, 2_000).unwrap();
/// sink.begin(0, 3_000, &work, &[]).unwrap();
/// sink.end(0, 4_000).unwrap();
/// sink.finish().unwrap();
///
/// // The trace is a sequence of `TracePacket`s (field 1, length-delimited).
/// fn varint(b: &[u8], at: &mut usize) -> u64 {
///     let mut v = 0;
///     for shift in (0..64).step_by(7) {
///         let byte = b[*at];
///         *at += 1;
///         v |= u64::from(byte & 0x7f) << shift;
///         if byte < 0x80 {
///             break;
///         }
///     }
///     v
/// }
/// let mut packets = Vec::new();
/// let mut at = 0;
/// while at < trace.len() {
///     assert_eq!(varint(&trace, &mut at), 1 << 3 | 2);
///     let len = varint(&trace, &mut at) as usize;
///     packets.push(&trace[at..at + len]);
///     at += len;
/// }
/// assert_eq!(at, trace.len());
/// // The process's and the thread's descriptors, then two begins and two ends.
/// assert_eq!(packets.len(), 6);
/// let has = |p: &[u8], s: &[u8]| p.windows(s.len()).any(|w| w == s);
/// assert!(has(packets[0], b"app") && has(packets[1], b"main"));
/// // The event name is interned once per track: only the first slice carries it.
/// let carrying: Vec<bool> = packets[2..].iter().map(|p| has(p, b"work")).collect();
/// assert_eq!(carrying, [true, false, false, false]);
/// ```
pub struct PerfettoSink<'w, W: Write> {
    out: &'w mut W,
    processes: HashMap<u32, u64>,
    seqs: Vec<Seq>,
    /// Each counter track's uuid, and whether its sequence has started.
    counters: Vec<(u64, bool)>,
    next_uuid: u64,
    packet: Vec<u8>,
    event: Vec<u8>,
    interned: Vec<u8>,
    frame: Vec<u8>,
}

impl<'w, W: Write> PerfettoSink<'w, W> {
    /// A writer to `out`. Example on [`PerfettoSink`].
    pub fn new(out: &'w mut W) -> Self {
        Self {
            out,
            processes: HashMap::new(),
            seqs: Vec::new(),
            counters: Vec::new(),
            next_uuid: 1,
            packet: Vec::with_capacity(256),
            event: Vec::with_capacity(256),
            interned: Vec::with_capacity(256),
            frame: Vec::with_capacity(512),
        }
    }

    /// The uuid of process `pid`'s track, described the first time.
    fn process_uuid(&mut self, pid: u32, name: &str) -> io::Result<u64> {
        if let Some(&u) = self.processes.get(&pid) {
            return Ok(u);
        }
        let u = self.next_uuid;
        self.next_uuid += 1;
        self.processes.insert(pid, u);
        self.packet.clear();
        message(&mut self.packet, PACKET_TRACK_DESCRIPTOR, |d| {
            uint_field(d, TRACK_UUID, u);
            message(d, TRACK_PROCESS, |p| {
                uint_field(p, PROCESS_PID, u64::from(pid));
                bytes_field(p, PROCESS_NAME, name.as_bytes());
            });
        });
        self.emit_packet()?;
        Ok(u)
    }

    fn emit_packet(&mut self) -> io::Result<()> {
        self.frame.clear();
        bytes_field(&mut self.frame, TRACE_PACKET, &self.packet);
        self.out.write_all(&self.frame)
    }

    /// Starts the event of `track` (type and track uuid) in `self.event`, with
    /// `name` interned when given; returns the sequence index.
    fn event_head(&mut self, track: usize, kind: u64, name: Option<&Rc<str>>) {
        self.event.clear();
        let seq = &mut self.seqs[track];
        if seq.names.len() + seq.arg_names.len() >= MAX_INTERNED {
            seq.names.clear();
            seq.arg_names.clear();
            seq.cleared = false;
            self.interned.clear();
        }
        uint_field(&mut self.event, EVENT_TYPE, kind);
        uint_field(&mut self.event, EVENT_TRACK_UUID, seq.track_uuid);
        if let Some(name) = name {
            let fresh = seq.names.len() as u64 + 1;
            let iid = *seq.names.entry(name.clone()).or_insert(fresh);
            if iid == fresh {
                message(&mut self.interned, INTERNED_EVENT_NAMES, |n| {
                    uint_field(n, INTERNED_IID, iid);
                    bytes_field(n, INTERNED_NAME, name.as_bytes());
                });
            }
            uint_field(&mut self.event, EVENT_NAME_IID, iid);
        }
    }

    fn event_args(&mut self, track: usize, args: &[(ArgName, Arg)]) {
        let seq = &mut self.seqs[track];
        for (k, v) in args {
            let fresh = seq.arg_names.len() as u64 + 1;
            let iid = *seq.arg_names.entry(k.clone()).or_insert(fresh);
            if iid == fresh {
                message(&mut self.interned, INTERNED_ANNOTATION_NAMES, |n| {
                    uint_field(n, INTERNED_IID, iid);
                    bytes_field(n, INTERNED_NAME, k.as_bytes());
                });
            }
            message(&mut self.event, EVENT_DEBUG_ANNOTATIONS, |a| {
                uint_field(a, ANNOTATION_NAME_IID, iid);
                match v {
                    Arg::U(n) => uint_field(a, ANNOTATION_UINT, *n),
                    Arg::S(s) => bytes_field(a, ANNOTATION_STRING, s.as_bytes()),
                }
            });
        }
    }

    fn write_event(&mut self, track: usize, ns: u64) -> io::Result<()> {
        self.packet.clear();
        uint_field(&mut self.packet, PACKET_TIMESTAMP, ns);
        uint_field(&mut self.packet, PACKET_SEQUENCE_ID, track as u64 + 1);
        let seq = &mut self.seqs[track];
        let flags = if seq.cleared {
            SEQ_NEEDS_INCREMENTAL_STATE
        } else {
            seq.cleared = true;
            SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
        };
        uint_field(&mut self.packet, PACKET_SEQUENCE_FLAGS, flags);
        if !self.interned.is_empty() {
            bytes_field(&mut self.packet, PACKET_INTERNED_DATA, &self.interned);
            self.interned.clear();
        }
        bytes_field(&mut self.packet, PACKET_TRACK_EVENT, &self.event);
        self.emit_packet()
    }
}

impl<W: Write> TimelineSink for PerfettoSink<'_, W> {
    fn start(&mut self, _origin_ns: u64) -> io::Result<()> {
        Ok(())
    }

    fn track(&mut self, id: usize, t: &Track) -> io::Result<()> {
        debug_assert_eq!(id, self.seqs.len());
        let process_uuid = self.process_uuid(t.pid, &t.process_name)?;
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        self.packet.clear();
        message(&mut self.packet, PACKET_TRACK_DESCRIPTOR, |d| {
            uint_field(d, TRACK_UUID, uuid);
            uint_field(d, TRACK_PARENT_UUID, process_uuid);
            bytes_field(d, TRACK_NAME, t.thread_name.as_bytes());
            message(d, TRACK_THREAD, |th| {
                uint_field(th, THREAD_PID, u64::from(t.pid));
                uint_field(th, THREAD_TID, u64::from(t.tid));
                bytes_field(th, THREAD_NAME, t.thread_name.as_bytes());
            });
        });
        self.emit_packet()?;
        self.seqs.push(Seq {
            track_uuid: uuid,
            cleared: false,
            names: HashMap::new(),
            arg_names: HashMap::new(),
        });
        Ok(())
    }

    fn begin(
        &mut self,
        track: usize,
        ns: u64,
        name: &Rc<str>,
        args: &[(ArgName, Arg)],
    ) -> io::Result<()> {
        self.event_head(track, TYPE_SLICE_BEGIN, Some(name));
        self.event_args(track, args);
        self.write_event(track, ns)
    }

    fn end(&mut self, track: usize, ns: u64) -> io::Result<()> {
        self.event_head(track, TYPE_SLICE_END, None);
        self.write_event(track, ns)
    }

    fn instant(
        &mut self,
        track: usize,
        ns: u64,
        name: &Rc<str>,
        args: &[(ArgName, Arg)],
    ) -> io::Result<()> {
        self.event_head(track, TYPE_INSTANT, Some(name));
        self.event_args(track, args);
        self.write_event(track, ns)
    }

    fn counter_track(&mut self, id: usize, t: &CounterTrack) -> io::Result<()> {
        debug_assert_eq!(id, self.counters.len());
        let parent = match t.thread_track.and_then(|i| self.seqs.get(i)) {
            Some(thread) => thread.track_uuid,
            None => self.process_uuid(t.pid, &t.process_name)?,
        };
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        self.packet.clear();
        message(&mut self.packet, PACKET_TRACK_DESCRIPTOR, |d| {
            uint_field(d, TRACK_UUID, uuid);
            uint_field(d, TRACK_PARENT_UUID, parent);
            bytes_field(d, TRACK_NAME, t.name.as_bytes());
            message(d, TRACK_COUNTER, |c| match t.unit {
                CounterUnit::Count => uint_field(c, COUNTER_UNIT, UNIT_COUNT),
                CounterUnit::TimeNs => uint_field(c, COUNTER_UNIT, UNIT_TIME_NS),
                CounterUnit::Unspecified => {}
            });
        });
        self.counters.push((uuid, false));
        self.emit_packet()
    }

    fn counter(&mut self, id: usize, ns: u64, value: CounterValue) -> io::Result<()> {
        let (uuid, started) = &mut self.counters[id];
        let flags = if std::mem::replace(started, true) {
            0
        } else {
            SEQ_INCREMENTAL_STATE_CLEARED
        };
        let uuid = *uuid;
        self.event.clear();
        uint_field(&mut self.event, EVENT_TYPE, TYPE_COUNTER);
        uint_field(&mut self.event, EVENT_TRACK_UUID, uuid);
        match value {
            // int64: a negative value is its two's complement, as protobuf has it.
            CounterValue::Int(i) => uint_field(&mut self.event, EVENT_COUNTER_VALUE, i as u64),
            CounterValue::Float(f) => double_field(&mut self.event, EVENT_DOUBLE_COUNTER_VALUE, f),
        }
        self.packet.clear();
        uint_field(&mut self.packet, PACKET_TIMESTAMP, ns);
        uint_field(
            &mut self.packet,
            PACKET_SEQUENCE_ID,
            COUNTER_SEQUENCES + id as u64,
        );
        if flags != 0 {
            uint_field(&mut self.packet, PACKET_SEQUENCE_FLAGS, flags);
        }
        bytes_field(&mut self.packet, PACKET_TRACK_EVENT, &self.event);
        self.emit_packet()
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
