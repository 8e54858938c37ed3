//! The few protobuf primitives Perfetto's trace format needs (varints and
//! length-delimited fields), and the field numbers of Perfetto's
//! `protos/perfetto/trace/` schema that [`super::perfetto`] writes (checked
//! against the `perfetto` PyPI package's `perfetto_trace_pb2` descriptors).

/// Field numbers of Perfetto's trace protos used here.
pub(super) mod field {
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

pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field) << 3 | u64::from(wire));
}

pub(super) fn uint_field(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, 0);
    varint(out, v);
}

pub(super) fn bytes_field(out: &mut Vec<u8>, field: u32, v: &[u8]) {
    tag(out, field, 2);
    varint(out, v.len() as u64);
    out.extend_from_slice(v);
}

pub(super) fn double_field(out: &mut Vec<u8>, field: u32, v: f64) {
    tag(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// A nested message: written to `scratch` by `body`, then length-prefixed.
pub(super) fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    body(&mut inner);
    bytes_field(out, field, &inner);
}
