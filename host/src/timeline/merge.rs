//! The merge: sources' events by time onto tracks, FDR calls and Trace2
//! regions of one span made one slice, counters, into a [`TimelineSink`].

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io;
use std::rc::Rc;

use flightrec_core::tasks::{KEY_BITS, PASS_KIND, POLL_KIND};

use crate::model::{Arg, ArgName, CounterTrack, CounterUnit, CounterValue, TimelineSink, Track};

use super::event::{
    ArgNames, InputProblem, NameCache, ProcKey, Sample, Source, TEvent, TimelineReport, TrackKey,
    What, LOAD_COUNTER, LOAD_WINDOW_NS, NO_FDR, READY_EVENT,
};
use super::limits::{MAX_COUNTER_TRACKS, MAX_TRACKS};
use super::trace2::PidOwners;

pub(super) struct TrackState {
    pub(super) id: usize,
    pub(super) stack: Vec<Open>,
    pub(super) last: u64,
    /// A Trace2 region that may be the same span as an FDR call about to
    /// begin (its time is whole microseconds, so it can come first): held
    /// until the track's next event.
    pub(super) pending: VecDeque<PendingRegion>,
    /// The time of the last thing written on the track (before the event at
    /// hand): where a region held back may begin at the earliest.
    pub(super) last_written: u64,
    /// Whether the track's name came from Trace2 (a `thread_start`).
    pub(super) named: bool,
}

/// A slice open on a track.
pub(super) enum Open {
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

pub(super) struct PendingRegion {
    pub(super) ns: u64,
    pub(super) name: Rc<str>,
    pub(super) args: Vec<(ArgName, Arg)>,
    pub(super) span: Rc<str>,
    /// When its leave came, if it did while it was held.
    pub(super) left: Option<u64>,
}

/// Regions held back on one track at most (the rest begin as regions).
pub(super) const MAX_PENDING_REGIONS: usize = 64;

/// How far (ns) a region's time may lie from its span's FDR entry: Trace2
/// times are whole microseconds, cut down.
pub(super) const SPAN_TOLERANCE_NS: u64 = 1_000;

/// A counter track: its process, its thread track (per-thread values) and
/// its name.
pub(super) type CounterKey = (ProcKey, Option<usize>, Rc<str>);

/// An executor's time in passes since its last load value.
pub(super) struct Load {
    /// When the last value was given.
    pub(super) window: u64,
    /// Time in passes since then.
    pub(super) busy: u64,
    /// The start of the pass under way (or the last one's end).
    pub(super) pass: u64,
}

pub(super) struct CounterState {
    pub(super) id: usize,
    pub(super) last: u64,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn merge(
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
            .take_while(|p| p.ns.saturating_add(SPAN_TOLERANCE_NS) < ns)
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
                let pass_end = match &e.track {
                    TrackKey::Executor(..) => load.get_mut(&e.track),
                    _ => None,
                };
                if let Some(l) = pass_end {
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

pub(super) fn begin_region(
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
pub(super) fn flush_pending(
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
pub(super) fn close_call(
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
pub(super) fn leave_region(
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
pub(super) fn end_left_regions(
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
