//! FDR inputs as timeline sources: a file's place on the clock (wall-time
//! markers, clock anchors) and its events, an async executor's on tracks of
//! their own.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use flightrec_core::fdr::decoder::Decoder;
use flightrec_core::fdr::end::END_CPU;
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::{FileHeader, FunctionId};
use flightrec_core::tasks::{key, TaskEvent, TaskEventKind, TaskFunction};

use crate::model::Arg;
use crate::read::events::{Kind, XEvent};
use crate::read::file::TraceFile;
use crate::read::index::{Index, Merged};

use super::event::{
    clamp_ns, tsc_ns, ArgNames, InputProblem, ProcKey, Source, TEvent, TrackKey, What, READY_EVENT,
};
use super::limits::{CLOCK_SAMPLES, MAX_TRACKS, RELEASE_EVERY_EVENTS};

/// An FDR file, mapped and indexed, with its place on the clock.
pub(super) struct FdrFile {
    pub(super) path: PathBuf,
    pub(super) file: TraceFile,
    pub(super) index: Index,
    /// Ticks per second.
    pub(super) freq: u64,
    /// Wall-clock ns minus TSC ns.
    pub(super) offset: i128,
    pub(super) proc: Option<ProcKey>,
    /// `source N` for a file of a `recv` directory.
    pub(super) label: Option<Rc<str>>,
    pub(super) names: usize,
}

pub(super) struct FdrSource<'a> {
    pub(super) fdr: &'a FdrFile,
    /// Times out of range, counted for the report.
    pub(super) clamped: Rc<Cell<u64>>,
    /// Its index among the timeline's FDR files.
    pub(super) input: u32,
    pub(super) merged: Merged<'a>,
    pub(super) count: u64,
    pub(super) single_thread: bool,
    pub(super) args: &'a ArgNames,
    /// Track names of a `recv` file's threads (when it has several).
    pub(super) thread_labels: HashMap<u32, Rc<str>>,
    /// The async tasks whose polls are open, per thread: what a thread does
    /// inside a poll goes on the task's track.
    pub(super) polls: HashMap<u32, Vec<u32>>,
}

impl Source for FdrSource<'_> {
    fn next_event(&mut self, _: &mut Vec<InputProblem>) -> Option<TEvent> {
        let e: XEvent = self.merged.next_event()?;
        self.count += 1;
        if self.count % RELEASE_EVERY_EVENTS == 0 {
            self.fdr.file.consumed(self.merged.take_read());
        }
        let ns = clamp_ns(
            tsc_ns(e.tsc, self.fdr.freq) + self.fdr.offset,
            &self.clamped,
        );
        let proc = self
            .fdr
            .proc
            .clone()
            .unwrap_or(ProcKey::Pid(e.process, self.input));
        let track = match (&self.fdr.label, self.single_thread) {
            (Some(label), true) => TrackKey::Named(proc, label.clone()),
            (Some(label), false) => {
                if self.thread_labels.len() >= MAX_TRACKS
                    && !self.thread_labels.contains_key(&e.thread)
                {
                    self.thread_labels.clear();
                }
                let name = self
                    .thread_labels
                    .entry(e.thread)
                    .or_insert_with(|| format!("{label} thread {}", e.thread).into())
                    .clone();
                TrackKey::Named(proc, name)
            }
            (None, _) => TrackKey::Thread(proc, e.thread),
        };
        let a = self.args;
        let (track, task_event) = self.task_track(&e, track);
        if let Some((name, ev)) = task_event {
            let hex = |v: u32| Arg::S(format!("{v:#010x}"));
            let what = What::Instant(
                name.into(),
                vec![
                    (a.executor.clone(), hex(ev.executor)),
                    (a.task.clone(), hex(ev.task)),
                ],
            );
            return Some(TEvent {
                ns,
                track,
                track_name: None,
                what,
                names: self.fdr.names,
                counter: None,
            });
        }
        let what = match e.kind {
            k if k.is_enter() => What::Enter(e.func_id, e.args),
            k if k.is_exit() => What::Exit(e.func_id),
            kind => {
                let mut args = vec![
                    (
                        a.data.clone(),
                        Arg::S(String::from_utf8_lossy(&e.data).into_owned()),
                    ),
                    (a.cpu.clone(), Arg::U(u64::from(e.cpu))),
                ];
                let name = if kind == Kind::TypedEvent {
                    args.push((a.typ.clone(), Arg::U(u64::from(e.event_type))));
                    format!("typed event {}", e.event_type)
                } else {
                    "custom event".to_string()
                };
                What::Instant(name.into(), args)
            }
        };
        Some(TEvent {
            ns,
            track,
            track_name: None,
            what,
            names: self.fdr.names,
            counter: None,
        })
    }
}

impl FdrSource<'_> {
    /// The track of an event of an async executor ([`flightrec_core::tasks`]):
    /// a poll, and all its thread does until the poll returns, on the task's
    /// track; a pass on the executor's; a spawn, wake-up or end (a typed
    /// event, from any context) on the task's, as an instant of that name.
    /// Other events keep `track`.
    pub(super) fn task_track(
        &mut self,
        e: &XEvent,
        track: TrackKey,
    ) -> (TrackKey, Option<(&'static str, TaskEvent)>) {
        let proc = track.proc().clone();
        if e.kind == Kind::TypedEvent {
            return match TaskEvent::parse(e.event_type, &e.data) {
                Some(ev) => {
                    let name = match ev.kind {
                        TaskEventKind::Spawn => "spawn",
                        TaskEventKind::Ready => READY_EVENT,
                        TaskEventKind::End => "end",
                    };
                    (TrackKey::Task(proc, key(ev.task)), Some((name, ev)))
                }
                None => (self.inside_poll(e.thread, proc).unwrap_or(track), None),
            };
        }
        let function = (e.kind.is_enter() || e.kind.is_exit())
            .then(|| FunctionId::new(e.func_id).ok().and_then(TaskFunction::of))
            .flatten();
        match function {
            Some(TaskFunction::Poll { key }) => {
                let open = self.polls.entry(e.thread).or_default();
                if e.kind.is_enter() {
                    open.push(key);
                } else if let Some(i) = open.iter().rposition(|k| *k == key) {
                    open.truncate(i);
                }
                if open.is_empty() {
                    self.polls.remove(&e.thread);
                }
                (TrackKey::Task(proc, key), None)
            }
            Some(TaskFunction::Pass { key }) => (TrackKey::Executor(proc, key), None),
            None => (self.inside_poll(e.thread, proc).unwrap_or(track), None),
        }
    }

    pub(super) fn inside_poll(&self, thread: u32, proc: ProcKey) -> Option<TrackKey> {
        let key = *self.polls.get(&thread)?.last()?;
        Some(TrackKey::Task(proc, key))
    }
}

/// Custom events whose payload starts with this carry the wall-clock time (ns
/// since the Unix epoch, in decimal) read just before the event's TSC: a clock
/// anchor, exact to the event's cost. Example on [`anchor_payload`].
pub const ANCHOR_PREFIX: &[u8] = b"flightrec.walltime_ns=";

/// The payload of a clock anchor for wall time `ns`; record it as an XRay custom
/// event (`flightrec::xray::custom_event`) right after reading the clock.
///
/// ```
/// use flightrec_host::convert::{};
/// use flightrec_host::timeline::{anchor_payload, ANCHOR_PREFIX};
/// let p = anchor_payload(1_700_000_000_123_456_789);
/// assert_eq!(p, b"flightrec.walltime_ns=1700000000123456789");
/// assert!(p.starts_with(ANCHOR_PREFIX));
/// ```
pub fn anchor_payload(ns: u64) -> Vec<u8> {
    let mut p = ANCHOR_PREFIX.to_vec();
    p.extend_from_slice(ns.to_string().as_bytes());
    p
}

/// Wall-time markers before this (2001-09-09) count from boot, not from the
/// epoch: compiler-rt writes `CLOCK_MONOTONIC` (kept, to the microsecond), and
/// flightrec's writer on a firmware without a wall clock the TSC's own seconds
/// (then the time is the TSC itself).
pub(super) const BOOT_CLOCK_BEFORE_SECS: i64 = 1_000_000_000;

/// Events per thread searched for a clock anchor.
pub(super) const ANCHOR_SEARCH_EVENTS: usize = 4096;

/// A wall-time marker (seconds, microseconds) and the TSC after it, in ns.
pub(super) type Marker = (i64, u32, i128);

/// What an FDR file says about its clock: the offset of wall-clock ns over TSC
/// ns lies in `lo..hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClockBounds {
    /// A clock anchor: this offset.
    Anchor(i128),
    /// Second-resolution markers counting from the device's boot: offset 0.
    Boot,
    /// From the wall-time markers.
    Markers { lo: i128, hi: i128 },
    /// Nothing to go by (no marker with a TSC).
    Unknown,
}

impl ClockBounds {
    /// Several files of one clock: the tightest of what they say.
    pub(super) fn combine(self, other: ClockBounds) -> ClockBounds {
        use ClockBounds::*;
        match (self, other) {
            (Anchor(a), Anchor(b)) => Anchor(a.max(b)),
            (Anchor(a), _) | (_, Anchor(a)) => Anchor(a),
            (Boot, _) | (_, Boot) => Boot,
            (Markers { lo: a, hi: b }, Markers { lo: c, hi: d }) => Markers {
                lo: a.max(c),
                hi: b.min(d),
            },
            (Unknown, x) | (x, Unknown) => x,
        }
    }

    /// The offset to use: the anchor, 0 for a boot clock, else the middle of the
    /// bounds (their lower end when they disagree).
    pub(super) fn offset(self) -> i128 {
        match self {
            ClockBounds::Anchor(a) => a,
            ClockBounds::Boot | ClockBounds::Unknown => 0,
            ClockBounds::Markers { lo, hi } if hi > lo => lo + (hi - lo) / 2,
            ClockBounds::Markers { lo, .. } => lo,
        }
    }

    /// How far the offset may be off, in ns (`None`: unknown).
    pub(super) fn uncertainty(self) -> Option<i128> {
        match self {
            ClockBounds::Anchor(_) | ClockBounds::Boot => Some(0),
            ClockBounds::Markers { lo, hi } => Some((hi - lo).max(0) / 2),
            ClockBounds::Unknown => None,
        }
    }
}

/// The clock of an FDR file: the wall-clock time at TSC 0 in its header, else a
/// clock anchor in the first events of a thread, else the wall-time markers of
/// its first buffers.
///
/// A marker and the NewCPUId TSC after it were taken together at the start of
/// a buffer. Markers with microseconds (compiler-rt's) bound the offset to a
/// microsecond. flightrec's own writer keeps llvm-xray's buffer sort working by
/// writing the real wall-clock second of a thread's first buffer and then
/// `(second + k, k)` for its buffer `k`: only each thread's first marker is a
/// real time, and it bounds the offset to the second.
pub(super) fn clock_bounds(bytes: &[u8], index: &Index, freq: u64) -> ClockBounds {
    // The writer knew the wall-clock time at TSC 0 (the desktop runtime does).
    if let Some(at) = FileHeader::parse(bytes)
        .ok()
        .and_then(|h| h.walltime_at_tsc0_ns)
    {
        return ClockBounds::Anchor(i128::from(at.get()));
    }
    let mut anchor: Option<i128> = None;
    for t in 0..index.threads() {
        let mut cursor = index.thread_events(bytes, t);
        for _ in 0..ANCHOR_SEARCH_EVENTS {
            let Some(e) = cursor.next_event() else { break };
            if e.kind != Kind::CustomEvent {
                continue;
            }
            let Some(digits) = e.data.strip_prefix(ANCHOR_PREFIX) else {
                continue;
            };
            let Some(ns) = std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse::<u64>().ok())
            else {
                continue;
            };
            let o = i128::from(ns) - tsc_ns(e.tsc, freq);
            anchor = Some(anchor.map_or(o, |a: i128| a.max(o)));
        }
    }
    if let Some(a) = anchor {
        return ClockBounds::Anchor(a);
    }
    let Ok(decoder) = Decoder::new(bytes) else {
        return ClockBounds::Unknown;
    };
    // Per thread: its markers (seconds, micros, TSC ns) in file order.
    let mut threads: Vec<(u64, Vec<Marker>)> = Vec::new();
    let mut boot = false;
    let mut wall: Option<(i64, u32)> = None;
    let mut tid = 0u64;
    let mut samples = 0;
    for d in decoder {
        let Ok(d) = d else { break };
        match d.record {
            Record::NewBuffer { tid: t } => {
                wall = None;
                tid = t as u64;
            }
            Record::Walltime { seconds, micros } => wall = Some((seconds, micros)),
            // An end block's "TSC" is a buffer count, not a time.
            Record::NewCpuId { cpu: END_CPU, .. } => wall = None,
            Record::NewCpuId { tsc, .. } => {
                let Some((seconds, micros)) = wall.take() else {
                    continue;
                };
                boot |= seconds < BOOT_CLOCK_BEFORE_SECS;
                let at = tsc_ns(tsc, freq);
                match threads.iter_mut().find(|(t, _)| *t == tid) {
                    Some((_, m)) => m.push((seconds, micros, at)),
                    None => threads.push((tid, vec![(seconds, micros, at)])),
                }
                samples += 1;
                if samples >= CLOCK_SAMPLES {
                    break;
                }
            }
            _ => {}
        }
    }
    let mut bounds = ClockBounds::Unknown;
    for (_, markers) in &threads {
        // flightrec's sequence: each marker one second and one microsecond
        // after the one before.
        let sequence = markers
            .windows(2)
            .any(|w| w[1].0 == w[0].0.saturating_add(1) && w[1].1 == w[0].1.wrapping_add(1));
        for (k, &(seconds, micros, at)) in markers.iter().enumerate() {
            let m = i128::from(seconds) * 1_000_000_000 + i128::from(micros) * 1000;
            let here = if k == 0 && micros == 0 {
                // A whole second: flightrec's first buffer (or a real marker
                // that fell on one): the time is within that second.
                ClockBounds::Markers {
                    lo: m - at,
                    hi: m + 1_000_000_000 - at,
                }
            } else if sequence || markers[0].1 == 0 {
                // The later markers of flightrec's sequence are not times.
                continue;
            } else {
                ClockBounds::Markers {
                    lo: m - at,
                    hi: m + 1000 - at,
                }
            };
            bounds = bounds.combine(here);
        }
    }
    // A boot clock known only to the second (flightrec's writer on a device
    // without a wall clock): the TSC counts from the same boot, exactly.
    if boot && bounds.uncertainty().is_none_or(|u| u > 1_000_000) {
        return ClockBounds::Boot;
    }
    bounds
}
