//! `convert --format perfetto`: Perfetto's own protobuf trace format, which
//! ui.perfetto.dev and `trace_processor` open without a JSON import, several
//! times smaller than the Chrome JSON of the same trace.
//!
//! The file is a `Trace` message: a run of `TracePacket`s (field 1), each
//! length-delimited. Every process and thread gets a `TrackDescriptor`; each
//! thread writes its events on its own packet sequence, where event names are
//! interned (`InternedData`, valid until the sequence clears its incremental
//! state). A function call is a `TrackEvent` slice: begin at the entry, end at
//! the exit, matched per thread with a call stack exactly as the Chrome writer
//! does (an exit closes the innermost open call of its function and every call
//! opened inside it; an exit without an open call is left out and counted; calls
//! still open at the end of the trace end at their thread's last event). Custom
//! and typed events are instants with their payload, CPU and type as debug
//! annotations. Timestamps are nanoseconds, the TSC divided by the header's
//! cycle frequency, held at the thread's last time where its clock goes back.
//!
//! The encoder is the few protobuf primitives the format needs (varints and
//! length-delimited fields); field numbers are those of Perfetto's
//! `protos/perfetto/trace/` schema (checked against the `perfetto` PyPI
//! package's `perfetto_trace_pb2` descriptors), named in the private `field`
//! module.

use std::collections::HashMap;
use std::io::{self, Write};

use flightrec_core::fdr::FileHeader;

use crate::names::Names;
use crate::out::chrome::ChromeReport;
use crate::read::events::{Kind, XEvent};

/// Field numbers of Perfetto's trace protos used here.
pub(crate) mod field {
    /// `Trace.packet`.
    pub(crate) const TRACE_PACKET: u32 = 1;
    /// `TracePacket.timestamp` (ns).
    pub(crate) const PACKET_TIMESTAMP: u32 = 8;
    /// `TracePacket.trusted_packet_sequence_id`.
    pub(crate) const PACKET_SEQUENCE_ID: u32 = 10;
    /// `TracePacket.track_event`.
    pub(crate) const PACKET_TRACK_EVENT: u32 = 11;
    /// `TracePacket.interned_data`.
    pub(crate) const PACKET_INTERNED_DATA: u32 = 12;
    /// `TracePacket.sequence_flags`.
    pub(crate) const PACKET_SEQUENCE_FLAGS: u32 = 13;
    /// `TracePacket.track_descriptor`.
    pub(crate) const PACKET_TRACK_DESCRIPTOR: u32 = 60;
    /// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
    pub(crate) const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    /// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`.
    pub(crate) const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
    /// `TrackDescriptor.uuid`.
    pub(crate) const TRACK_UUID: u32 = 1;
    /// `TrackDescriptor.name`.
    pub(crate) const TRACK_NAME: u32 = 2;
    /// `TrackDescriptor.process`.
    pub(crate) const TRACK_PROCESS: u32 = 3;
    /// `TrackDescriptor.thread`.
    pub(crate) const TRACK_THREAD: u32 = 4;
    /// `TrackDescriptor.parent_uuid`.
    pub(crate) const TRACK_PARENT_UUID: u32 = 5;
    /// `TrackDescriptor.counter`.
    pub(crate) const TRACK_COUNTER: u32 = 8;
    /// `CounterDescriptor.unit`.
    pub(crate) const COUNTER_UNIT: u32 = 3;
    /// `CounterDescriptor.Unit.UNIT_TIME_NS`.
    pub(crate) const UNIT_TIME_NS: u64 = 1;
    /// `CounterDescriptor.Unit.UNIT_COUNT`.
    pub(crate) const UNIT_COUNT: u64 = 2;
    /// `TrackEvent.counter_value` (int64).
    pub(crate) const EVENT_COUNTER_VALUE: u32 = 30;
    /// `TrackEvent.double_counter_value`.
    pub(crate) const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;
    /// `TrackEvent.Type.TYPE_COUNTER`.
    pub(crate) const TYPE_COUNTER: u64 = 4;
    /// `ProcessDescriptor.pid`.
    pub(crate) const PROCESS_PID: u32 = 1;
    /// `ProcessDescriptor.process_name`.
    pub(crate) const PROCESS_NAME: u32 = 6;
    /// `ThreadDescriptor.pid`.
    pub(crate) const THREAD_PID: u32 = 1;
    /// `ThreadDescriptor.tid`.
    pub(crate) const THREAD_TID: u32 = 2;
    /// `ThreadDescriptor.thread_name`.
    pub(crate) const THREAD_NAME: u32 = 5;
    /// `TrackEvent.debug_annotations`.
    pub(crate) const EVENT_DEBUG_ANNOTATIONS: u32 = 4;
    /// `TrackEvent.type`.
    pub(crate) const EVENT_TYPE: u32 = 9;
    /// `TrackEvent.name_iid`.
    pub(crate) const EVENT_NAME_IID: u32 = 10;
    /// `TrackEvent.track_uuid`.
    pub(crate) const EVENT_TRACK_UUID: u32 = 11;
    /// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
    pub(crate) const TYPE_SLICE_BEGIN: u64 = 1;
    /// `TrackEvent.Type.TYPE_SLICE_END`.
    pub(crate) const TYPE_SLICE_END: u64 = 2;
    /// `TrackEvent.Type.TYPE_INSTANT`.
    pub(crate) const TYPE_INSTANT: u64 = 3;
    /// `DebugAnnotation.name_iid`.
    pub(crate) const ANNOTATION_NAME_IID: u32 = 1;
    /// `DebugAnnotation.uint_value`.
    pub(crate) const ANNOTATION_UINT: u32 = 3;
    /// `DebugAnnotation.string_value`.
    pub(crate) const ANNOTATION_STRING: u32 = 6;
    /// `InternedData.event_names`.
    pub(crate) const INTERNED_EVENT_NAMES: u32 = 2;
    /// `InternedData.debug_annotation_names`.
    pub(crate) const INTERNED_ANNOTATION_NAMES: u32 = 3;
    /// `EventName.iid` and `DebugAnnotationName.iid`.
    pub(crate) const INTERNED_IID: u32 = 1;
    /// `EventName.name` and `DebugAnnotationName.name`.
    pub(crate) const INTERNED_NAME: u32 = 2;
}

use field::*;

/// Distinct names one sequence interns before it clears its state and starts
/// again (bounds memory on traces with very many functions).
const MAX_INTERNED: usize = 1 << 16;

/// The debug annotation names every sequence interns first: iids 1 to 4, then
/// `arg0`... for call arguments.
const ANNOTATIONS: [&str; 4] = ["func_id", "data", "cpu", "type"];
/// Call arguments given interned names; later ones are left out of the slice.
const MAX_ARGS: usize = 8;

pub(crate) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field) << 3 | u64::from(wire));
}

pub(crate) fn uint_field(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, 0);
    varint(out, v);
}

pub(crate) fn bytes_field(out: &mut Vec<u8>, field: u32, v: &[u8]) {
    tag(out, field, 2);
    varint(out, v.len() as u64);
    out.extend_from_slice(v);
}

pub(crate) fn double_field(out: &mut Vec<u8>, field: u32, v: f64) {
    tag(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// A nested message: written to `scratch` by `body`, then length-prefixed.
pub(crate) fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    body(&mut inner);
    bytes_field(out, field, &inner);
}

/// A thread's packet sequence: its id and the names it has interned.
struct Sequence {
    id: u64,
    track: u64,
    names: HashMap<NameKey, u64>,
    stack: Vec<u32>,
    last_ns: u64,
    cleared: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum NameKey {
    Function(u32),
    Custom,
    Typed(u16),
}

/// Writes the Perfetto trace of the events `next` yields, threads one after the
/// other (see [`crate::read::index::Index::thread_events`]), as they come. Returns the
/// same call matching report as the Chrome writer (`calls` are slices,
/// `instants` instant events).
///
/// ```
/// use flightrec_host::out::chrome::ChromeReport;
/// use flightrec_host::read::trace::load;
/// use flightrec_host::names::Names;
/// use flightrec_host::out::perfetto::write_perfetto_events;
///
/// let trace = load(include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
/// let mut events = trace.events.iter().cloned();
/// let mut out = Vec::new();
/// let names = Names::parse("1 main\n").unwrap();
/// let report = write_perfetto_events(&trace.header, || events.next(), &names, &mut out).unwrap();
/// assert_eq!(report, ChromeReport { calls: 5, instants: 1, ..ChromeReport::default() });
/// // A run of `packet` fields (tag 0x0a), with the names in them.
/// assert_eq!(out[0], 0x0a);
/// assert!(out.windows(4).any(|w| w == b"main"));
/// ```
pub fn write_perfetto_events(
    header: &FileHeader,
    mut next: impl FnMut() -> Option<XEvent>,
    names: &Names,
    out: &mut impl Write,
) -> io::Result<ChromeReport> {
    let freq = u128::from(header.cycle_frequency.get().max(1));
    let ns = |tsc: u64| (u128::from(tsc) * 1_000_000_000 / freq).min(u128::from(u64::MAX)) as u64;
    let mut report = ChromeReport::default();
    let mut processes: HashMap<u32, u64> = HashMap::new();
    let mut threads: HashMap<(u32, u32), Sequence> = HashMap::new();
    let mut order: Vec<(u32, u32)> = Vec::new();
    let mut next_uuid = 1u64;
    let mut packet = Vec::with_capacity(256);
    let mut event = Vec::with_capacity(128);
    let mut interned = Vec::with_capacity(128);
    let mut frame = Vec::with_capacity(512);

    let emit = |out: &mut dyn Write, frame: &mut Vec<u8>, packet: &[u8]| {
        frame.clear();
        bytes_field(frame, TRACE_PACKET, packet);
        out.write_all(frame)
    };

    while let Some(e) = next() {
        let key = (e.process, e.thread);
        #[allow(clippy::map_entry)] // the descriptor packets are written before the insert
        if !threads.contains_key(&key) {
            let process_uuid = match processes.get(&e.process) {
                Some(&u) => u,
                None => {
                    let u = next_uuid;
                    next_uuid += 1;
                    processes.insert(e.process, u);
                    packet.clear();
                    message(&mut packet, PACKET_TRACK_DESCRIPTOR, |d| {
                        uint_field(d, TRACK_UUID, u);
                        message(d, TRACK_PROCESS, |p| {
                            uint_field(p, PROCESS_PID, u64::from(e.process));
                            bytes_field(
                                p,
                                PROCESS_NAME,
                                format!("process {}", e.process).as_bytes(),
                            );
                        });
                    });
                    emit(out, &mut frame, &packet)?;
                    u
                }
            };
            let track = next_uuid;
            next_uuid += 1;
            packet.clear();
            message(&mut packet, PACKET_TRACK_DESCRIPTOR, |d| {
                uint_field(d, TRACK_UUID, track);
                uint_field(d, TRACK_PARENT_UUID, process_uuid);
                bytes_field(d, TRACK_NAME, format!("thread {}", e.thread).as_bytes());
                message(d, TRACK_THREAD, |t| {
                    uint_field(t, THREAD_PID, u64::from(e.process));
                    uint_field(t, THREAD_TID, u64::from(e.thread));
                    bytes_field(t, THREAD_NAME, format!("thread {}", e.thread).as_bytes());
                });
            });
            emit(out, &mut frame, &packet)?;
            threads.insert(
                key,
                Sequence {
                    id: order.len() as u64 + 1,
                    track,
                    names: HashMap::new(),
                    stack: Vec::new(),
                    last_ns: 0,
                    cleared: false,
                },
            );
            order.push(key);
        }
        let Some(seq) = threads.get_mut(&key) else {
            continue;
        };
        // Perfetto's slices must nest in time: a clock that goes back within a
        // thread (a CPU migration between unsynchronized TSCs) is held at the
        // thread's last time.
        let at = ns(e.tsc).max(seq.last_ns);
        seq.last_ns = at;
        match e.kind {
            k if k.is_enter() => {
                event.clear();
                let iid = intern(seq, NameKey::Function(e.func_id), names, &mut interned);
                uint_field(&mut event, EVENT_TYPE, TYPE_SLICE_BEGIN);
                uint_field(&mut event, EVENT_TRACK_UUID, seq.track);
                uint_field(&mut event, EVENT_NAME_IID, iid);
                annotation_uint(&mut event, 1, u64::from(e.func_id));
                for (i, a) in e.args.iter().take(MAX_ARGS).enumerate() {
                    annotation_uint(&mut event, (ANNOTATIONS.len() + 1 + i) as u64, *a);
                }
                seq.stack.push(e.func_id);
                write_event(out, &mut frame, &mut packet, seq, at, &event, &mut interned)?;
            }
            k if k.is_exit() => match seq.stack.iter().rposition(|&f| f == e.func_id) {
                Some(pos) => {
                    for _ in pos..seq.stack.len() {
                        end_slice(out, &mut frame, &mut packet, &mut event, seq, at)?;
                        report.calls += 1;
                    }
                    seq.stack.truncate(pos);
                }
                None => report.unmatched_exits += 1,
            },
            kind => {
                event.clear();
                let name = if kind == Kind::TypedEvent {
                    NameKey::Typed(e.event_type)
                } else {
                    NameKey::Custom
                };
                let iid = intern(seq, name, names, &mut interned);
                uint_field(&mut event, EVENT_TYPE, TYPE_INSTANT);
                uint_field(&mut event, EVENT_TRACK_UUID, seq.track);
                uint_field(&mut event, EVENT_NAME_IID, iid);
                message(&mut event, EVENT_DEBUG_ANNOTATIONS, |a| {
                    uint_field(a, ANNOTATION_NAME_IID, 2);
                    bytes_field(
                        a,
                        ANNOTATION_STRING,
                        String::from_utf8_lossy(&e.data).as_bytes(),
                    );
                });
                annotation_uint(&mut event, 3, u64::from(e.cpu));
                if kind == Kind::TypedEvent {
                    annotation_uint(&mut event, 4, u64::from(e.event_type));
                }
                write_event(out, &mut frame, &mut packet, seq, at, &event, &mut interned)?;
                report.instants += 1;
            }
        }
    }
    for key in &order {
        if let Some(seq) = threads.get_mut(key) {
            let at = seq.last_ns;
            for _ in 0..seq.stack.len() {
                end_slice(out, &mut frame, &mut packet, &mut event, seq, at)?;
                report.calls += 1;
                report.unfinished_calls += 1;
            }
            seq.stack.clear();
        }
    }
    Ok(report)
}

fn annotation_uint(event: &mut Vec<u8>, name_iid: u64, v: u64) {
    message(event, EVENT_DEBUG_ANNOTATIONS, |a| {
        uint_field(a, ANNOTATION_NAME_IID, name_iid);
        uint_field(a, ANNOTATION_UINT, v);
    });
}

/// The iid of `name` on `seq`, adding it to `interned` (the `InternedData` of
/// the next packet) the first time.
fn intern(seq: &mut Sequence, name: NameKey, names: &Names, interned: &mut Vec<u8>) -> u64 {
    if seq.names.len() >= MAX_INTERNED && !seq.names.contains_key(&name) {
        // Start the sequence again: the next packet clears the state.
        seq.names.clear();
        seq.cleared = false;
        interned.clear();
    }
    let fresh = seq.names.len() as u64 + 1;
    let iid = *seq.names.entry(name).or_insert(fresh);
    if iid == fresh {
        let text = match name {
            NameKey::Function(id) => names.display(id),
            NameKey::Custom => "custom event".to_string(),
            NameKey::Typed(t) => format!("typed event {t}"),
        };
        message(interned, INTERNED_EVENT_NAMES, |n| {
            uint_field(n, INTERNED_IID, iid);
            bytes_field(n, INTERNED_NAME, text.as_bytes());
        });
    }
    iid
}

fn end_slice(
    out: &mut impl Write,
    frame: &mut Vec<u8>,
    packet: &mut Vec<u8>,
    event: &mut Vec<u8>,
    seq: &mut Sequence,
    at: u64,
) -> io::Result<()> {
    event.clear();
    uint_field(event, EVENT_TYPE, TYPE_SLICE_END);
    uint_field(event, EVENT_TRACK_UUID, seq.track);
    write_event(out, frame, packet, seq, at, event, &mut Vec::new())
}

fn write_event(
    out: &mut impl Write,
    frame: &mut Vec<u8>,
    packet: &mut Vec<u8>,
    seq: &mut Sequence,
    at: u64,
    event: &[u8],
    interned: &mut Vec<u8>,
) -> io::Result<()> {
    packet.clear();
    uint_field(packet, PACKET_TIMESTAMP, at);
    uint_field(packet, PACKET_SEQUENCE_ID, seq.id);
    if seq.cleared {
        uint_field(packet, PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    } else {
        // The sequence's first packet (or the first after a restart): fresh
        // incremental state, with the annotation names every event uses.
        uint_field(
            packet,
            PACKET_SEQUENCE_FLAGS,
            SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE,
        );
        let mut names = Vec::new();
        let args = (0..MAX_ARGS).map(|i| format!("arg{i}"));
        for (i, name) in ANNOTATIONS
            .iter()
            .map(|s| s.to_string())
            .chain(args)
            .enumerate()
        {
            message(&mut names, INTERNED_ANNOTATION_NAMES, |n| {
                uint_field(n, INTERNED_IID, i as u64 + 1);
                bytes_field(n, INTERNED_NAME, name.as_bytes());
            });
        }
        names.extend_from_slice(interned);
        std::mem::swap(interned, &mut names);
        seq.cleared = true;
    }
    if !interned.is_empty() {
        bytes_field(packet, PACKET_INTERNED_DATA, interned);
        interned.clear();
    }
    bytes_field(packet, PACKET_TRACK_EVENT, event);
    frame.clear();
    bytes_field(frame, TRACE_PACKET, packet);
    out.write_all(frame)
}
