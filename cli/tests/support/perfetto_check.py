"""Checks a `flightrec convert --format perfetto` file with Perfetto's own schema.

Usage: perfetto_check.py TRACE.pftrace
Prints one JSON line: packets, tracks, slices, instants, names seen; exits 1 with
the reason on stderr when a check fails:
  * the file parses as perfetto.protos.Trace;
  * every TrackEvent names an existing track (a TrackDescriptor with that uuid);
  * every name_iid and debug annotation name_iid resolves in the interned data of
    its packet sequence (incremental state cleared where the sequence starts);
  * slices are balanced per track (no end without a begin, none left open) and
    their timestamps never go back within a track;
  * counter values are on counter tracks (a CounterDescriptor) and only there,
    each with a value.
The JSON line also lists every track: uuid, name, parent, pid and tid of a
thread, the unit of a counter, the distinct names of the slices begun on it, its counter
values as [timestamp, value, "int" or "double"], how many slices of each name
begin on it (counts) and how many of them carry each debug annotation (args).
"""
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    tracks = {}
    seqs = {}
    depth = {}
    last_ts = {}
    slices = instants = counters = 0
    names = set()
    on_track = {}
    for i, p in enumerate(trace.packet):
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in tracks:
                fail(f"packet {i}: track {d.uuid} described twice")
            if d.HasField("parent_uuid") and d.parent_uuid not in tracks:
                fail(f"packet {i}: parent track {d.parent_uuid} not described before")
            tracks[d.uuid] = d
            continue
        if not p.HasField("track_event"):
            fail(f"packet {i}: neither a track descriptor nor a track event")
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            seqs[seq] = {"names": {}, "ann": {}}
        if seq not in seqs:
            fail(f"packet {i}: sequence {seq} used before its state was cleared")
        state = seqs[seq]
        if p.HasField("interned_data"):
            for n in p.interned_data.event_names:
                state["names"][n.iid] = n.name
            for n in p.interned_data.debug_annotation_names:
                state["ann"][n.iid] = n.name
        e = p.track_event
        if e.track_uuid not in tracks:
            fail(f"packet {i}: event on undescribed track {e.track_uuid}")
        for a in e.debug_annotations:
            if a.name_iid not in state["ann"]:
                fail(f"packet {i}: annotation name iid {a.name_iid} not interned")
        if e.type in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_INSTANT):
            if e.name_iid not in state["names"]:
                fail(f"packet {i}: name iid {e.name_iid} not interned on sequence {seq}")
            names.add(state["names"][e.name_iid])
        t = e.track_uuid
        is_counter = tracks[t].HasField("counter")
        if is_counter != (e.type == pb.TrackEvent.TYPE_COUNTER):
            fail(f"packet {i}: event type {e.type} on track {t} (a counter track: {is_counter})")
        seen = on_track.setdefault(t, {"slices": set(), "values": [], "counts": {}, "args": {}})
        if p.timestamp < last_ts.get(t, 0):
            fail(f"packet {i}: time goes back on track {t}")
        last_ts[t] = p.timestamp
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            depth[t] = depth.get(t, 0) + 1
            slices += 1
            name = state["names"][e.name_iid]
            seen["slices"].add(name)
            seen["counts"][name] = seen["counts"].get(name, 0) + 1
            for a in e.debug_annotations:
                key = state["ann"][a.name_iid]
                seen["args"][key] = seen["args"].get(key, 0) + 1
        elif e.type == pb.TrackEvent.TYPE_COUNTER:
            if e.HasField("counter_value"):
                value, kind = e.counter_value, "int"
            elif e.HasField("double_counter_value"):
                value, kind = e.double_counter_value, "double"
            else:
                fail(f"packet {i}: counter event without a value")
            seen["values"].append([p.timestamp, value, kind])
            counters += 1
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            if depth.get(t, 0) == 0:
                fail(f"packet {i}: slice end without a begin on track {t}")
            depth[t] -= 1
        elif e.type == pb.TrackEvent.TYPE_INSTANT:
            instants += 1
        else:
            fail(f"packet {i}: unexpected event type {e.type}")
    open_ = {t: d for t, d in depth.items() if d}
    if open_:
        fail(f"slices left open: {open_}")
    threads = sorted(
        (d.thread.pid, d.thread.tid) for d in tracks.values() if d.HasField("thread")
    )
    listed = []
    for uuid, d in tracks.items():
        seen = on_track.get(uuid, {"slices": set(), "values": [], "counts": {}, "args": {}})
        listed.append({
            "uuid": uuid,
            "name": d.name,
            "parent": d.parent_uuid if d.HasField("parent_uuid") else None,
            "pid": d.thread.pid if d.HasField("thread") else (d.process.pid if d.HasField("process") else None),
            "tid": d.thread.tid if d.HasField("thread") else None,
            "unit": pb.CounterDescriptor.Unit.Name(d.counter.unit) if d.HasField("counter") else None,
            "slices": sorted(seen["slices"]),
            "values": seen["values"],
            "counts": seen["counts"],
            "args": seen["args"],
        })
    print(json.dumps({
        "packets": len(trace.packet),
        "threads": threads,
        "slices": slices,
        "instants": instants,
        "counters": counters,
        "names": sorted(names),
        "tracks": listed,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
