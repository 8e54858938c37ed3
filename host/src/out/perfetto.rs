//! `convert --format perfetto`: the timeline ([`crate::model`]) as
//! Perfetto's own protobuf trace format, which ui.perfetto.dev and
//! `trace_processor` open without a JSON import, several times smaller than
//! the Chrome JSON of the same timeline.
//!
//! The file is a `Trace` message: a run of `TracePacket`s (field 1), each
//! length-delimited. A `TrackDescriptor` per process and per track (with its
//! `ThreadDescriptor`), each track on its own packet sequence with interned
//! event and argument names (valid until the sequence clears its incremental
//! state), slices as begin/end `TrackEvent`s, instants as instant events,
//! arguments as debug annotations; a counter track is a `TrackDescriptor`
//! with a `CounterDescriptor` (unit count or time in ns) under its thread's
//! or its process's track, its values `TYPE_COUNTER` events (`counter_value`,
//! or `double_counter_value` for a fraction) on a sequence of its own;
//! timestamps in nanoseconds since the Unix epoch.

use std::collections::HashMap;
use std::io::{self, Write};
use std::rc::Rc;

use crate::model::{
    summary_track, Arg, ArgName, CounterTrack, CounterUnit, CounterValue, TimelineSink, Track,
    SUMMARY_EVENT,
};

use super::proto::field::*;
use super::proto::{bytes_field, double_field, message, uint_field};

/// The packet sequence of counter track `id` is this plus `id` (those of the
/// other tracks count from 1, and there are at most
/// `MAX_TRACKS` + 1 of them: the timeline's bound on tracks).
const COUNTER_SEQUENCES: u64 = 1 << 30;

/// Distinct names a sequence interns before it clears its state.
const MAX_INTERNED: usize = 1 << 16;

struct Seq {
    track_uuid: u64,
    /// The process's track.
    parent_uuid: u64,
    /// Slices open on the track.
    depth: usize,
    /// Arguments given to an open slice after its begin (at that depth),
    /// written on its end, whose annotations Perfetto adds to the slice.
    late_args: Vec<(usize, Vec<(ArgName, Arg)>)>,
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
/// use flightrec_host::out::perfetto::PerfettoSink;
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
            parent_uuid: process_uuid,
            depth: 0,
            late_args: Vec::new(),
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
        self.seqs[track].depth += 1;
        self.event_head(track, TYPE_SLICE_BEGIN, Some(name));
        self.event_args(track, args);
        self.write_event(track, ns)
    }

    fn annotate(&mut self, track: usize, args: &[(ArgName, Arg)]) -> io::Result<()> {
        let seq = &mut self.seqs[track];
        if seq.depth > 0 {
            match seq.late_args.last_mut() {
                Some((d, more)) if *d == seq.depth => more.extend_from_slice(args),
                _ => seq.late_args.push((seq.depth, args.to_vec())),
            }
        }
        Ok(())
    }

    fn rename(&mut self, id: usize, t: &Track) -> io::Result<()> {
        // The track's descriptor again, with its new name.
        let (uuid, parent) = (self.seqs[id].track_uuid, self.seqs[id].parent_uuid);
        self.packet.clear();
        message(&mut self.packet, PACKET_TRACK_DESCRIPTOR, |d| {
            uint_field(d, TRACK_UUID, uuid);
            uint_field(d, TRACK_PARENT_UUID, parent);
            bytes_field(d, TRACK_NAME, t.thread_name.as_bytes());
            message(d, TRACK_THREAD, |th| {
                uint_field(th, THREAD_PID, u64::from(t.pid));
                uint_field(th, THREAD_TID, u64::from(t.tid));
                bytes_field(th, THREAD_NAME, t.thread_name.as_bytes());
            });
        });
        self.emit_packet()
    }

    fn end(&mut self, track: usize, ns: u64) -> io::Result<()> {
        self.event_head(track, TYPE_SLICE_END, None);
        let seq = &mut self.seqs[track];
        let late = match seq.late_args.last() {
            Some((d, _)) if *d == seq.depth => seq.late_args.pop().map(|(_, a)| a),
            _ => None,
        };
        seq.depth = seq.depth.saturating_sub(1);
        if let Some(args) = late {
            self.event_args(track, &args);
        }
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

    fn summary(&mut self, ns: u64, counts: &[(&str, u64)]) -> io::Result<()> {
        // Only when something was left out or changed: an instant on a
        // track of its own, the counts as its arguments.
        if counts.iter().all(|(_, v)| *v == 0) {
            return Ok(());
        }
        let id = self.seqs.len();
        self.track(id, &summary_track())?;
        let args: Vec<(ArgName, Arg)> = counts
            .iter()
            .map(|(k, v)| (Rc::from(*k), Arg::U(*v)))
            .collect();
        self.instant(id, ns, &Rc::from(SUMMARY_EVENT), &args)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
