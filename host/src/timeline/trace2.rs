//! Trace2 event streams as timeline sources: lines read with a cap, times
//! placed on the clock, threads joined to their FDR threads.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;
use std::rc::Rc;

use flightrec_core::trace2::days_from_civil;
use serde_json::Value;

use crate::model::{Arg, ArgName, CounterUnit, CounterValue};

use super::event::{
    clamp_ns, InputProblem, ProcKey, Sample, Source, TEvent, TrackKey, What, NO_FDR,
};
use super::limits::{MAX_CACHED_NAMES, MAX_TRACE2_LINE, MAX_TRACE2_PROCS};

pub(super) struct Trace2File {
    pub(super) path: PathBuf,
    pub(super) reader: BufReader<File>,
    pub(super) len: u64,
    /// The `recv` directory's device, for a device's `trace2.txt`.
    pub(super) device: Option<usize>,
    /// The device's clock offset (ns) for lines without a wall time.
    pub(super) input: usize,
}

/// Per process (session id) state of a Trace2 stream.
#[derive(Default)]
pub(super) struct Trace2Proc {
    /// Wall ns at t_abs 0.
    pub(super) anchor: Option<i128>,
    pub(super) last: u64,
}

pub(super) struct Trace2Source {
    pub(super) file: Trace2File,
    pub(super) line: Vec<u8>,
    pub(super) lineno: u64,
    pub(super) offset: u64,
    pub(super) procs: HashMap<String, Trace2Proc>,
    /// For a device's lines: the device clock's offset (ns).
    pub(super) device_offset: i128,
    pub(super) arg_names: HashMap<String, ArgName>,
    /// Trace2 threads (session id, thread name) that said their thread id.
    pub(super) thread_tids: HashMap<ThreadKey, u32>,
    /// `thread_start`s of threads that have not said their id yet, until
    /// their thread's next event (which then gives them its track).
    pub(super) held: Vec<(ThreadKey, TEvent)>,
    /// Events to give out before reading on.
    pub(super) ready: VecDeque<TEvent>,
    pub(super) reported: u64,
    /// The FDR files of each process id (a Trace2 process joins the first).
    pub(super) fdr_pids: Rc<HashMap<u32, PidOwners>>,
    /// Times out of range, counted for the report.
    pub(super) clamped: Rc<Cell<u64>>,
}

/// The FDR files that hold a process id.
#[derive(Clone, Debug)]
pub(super) struct PidOwners {
    /// The first of them (its index among the timeline's FDR files).
    pub(super) first: u32,
    /// How many.
    pub(super) files: u32,
}

/// (session id, thread name) of a Trace2 thread.
pub(super) type ThreadKey = (String, String);

/// Category and key of the `data` event by which a Trace2 thread says its OS
/// thread id (the flightrec runtime writes it when the XRay runtime is on).
pub(super) const THREAD_ID_CATEGORY: &str = "flightrec";
/// See [`THREAD_ID_CATEGORY`].
pub(super) const THREAD_ID_KEY: &str = "tid";

/// `thread_start` events held at once per stream, waiting for their thread's
/// id; beyond this the oldest is written without it.
pub(super) const MAX_HELD: usize = 64;

/// A Trace2 `data` value that is a decimal number (an integer, or a finite
/// number with a fraction or an exponent); `None` for any other text.
pub(super) fn number(text: &str) -> Option<CounterValue> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.starts_with(|c: char| c.is_ascii_digit())
        || !digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
    {
        return None;
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(CounterValue::Int(i));
    }
    text.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(CounterValue::Float)
}

/// Problems reported per Trace2 stream before the rest are only counted.
pub(super) const MAX_LINE_REPORTS: u64 = 20;

/// Parses git's event `time`, `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`, to ns since the
/// Unix epoch.
pub(super) fn parse_time(s: &str) -> Option<i128> {
    let (date, rest) = s.split_once('T')?;
    let mut d = date.splitn(3, '-');
    let year: i64 = d.next()?.parse().ok()?;
    let month: u8 = d.next()?.parse().ok()?;
    let day: u8 = d.next()?.parse().ok()?;
    let (hms, us) = rest.strip_suffix('Z')?.split_once('.')?;
    let mut t = hms.splitn(3, ':');
    let h: i64 = t.next()?.parse().ok()?;
    let m: i64 = t.next()?.parse().ok()?;
    let sec: i64 = t.next()?.parse().ok()?;
    let micros: i64 = us.parse().ok()?;
    if us.len() != 6
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || h > 23
        || m > 59
        || sec > 60
    {
        return None;
    }
    let secs = i128::from(days_from_civil(year, month, day)) * 86_400
        + i128::from(h * 3600 + m * 60 + sec);
    Some(secs * 1_000_000_000 + i128::from(micros) * 1000)
}

/// The process id at the end of a Trace2 session id (`...-P0000abcd`, the last
/// of a parent/child chain).
pub(super) fn sid_pid(sid: &str) -> Option<u32> {
    let own = sid.rsplit('/').next()?;
    let hex = own.rsplit_once("-P")?.1;
    u32::from_str_radix(hex, 16).ok()
}

/// Reads one line of at most `max` bytes (without its LF). `Ok(None)` at the
/// end; `Ok(Some(false))` when the line was longer (the rest is skipped).
pub(super) fn read_line_capped(
    r: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<(bool, u64)>> {
    line.clear();
    let mut read = 0u64;
    let mut fits = true;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((read > 0).then_some((fits, read)));
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if fits {
            if line.len() + n > max + 1 {
                fits = false;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        r.consume(n);
        read += n as u64;
        if done {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            return Ok(Some((fits, read)));
        }
    }
}

/// Trace2 fields not shown as arguments.
pub(super) const TRACE2_COMMON: [&str; 10] = [
    "event", "sid", "thread", "time", "file", "line", "t_abs", "t_rel", "nesting", "repo",
];

impl Trace2Source {
    pub(super) fn problem(&mut self, problems: &mut Vec<InputProblem>, at: u64, reason: String) {
        self.reported += 1;
        if self.reported <= MAX_LINE_REPORTS {
            problems.push(InputProblem {
                path: self.file.path.clone(),
                offset: Some(at),
                reason,
                unreadable: false,
            });
        } else if self.reported == MAX_LINE_REPORTS + 1 {
            problems.push(InputProblem {
                path: self.file.path.clone(),
                offset: None,
                reason: "more bad lines skipped without a report".into(),
                unreadable: false,
            });
        }
    }

    pub(super) fn thread_name(&mut self, t: &str) -> Rc<str> {
        if self.arg_names.len() >= MAX_CACHED_NAMES && !self.arg_names.contains_key(t) {
            self.arg_names.clear();
        }
        self.arg_names
            .entry(t.to_string())
            .or_insert_with(|| Rc::from(t))
            .clone()
    }

    pub(super) fn arg_name(&mut self, k: &str) -> ArgName {
        if self.arg_names.len() >= MAX_CACHED_NAMES && !self.arg_names.contains_key(k) {
            self.arg_names.clear();
        }
        self.arg_names
            .entry(k.to_string())
            .or_insert_with(|| Rc::from(k))
            .clone()
    }

    /// The event of one line; with the (session id, thread name) of a
    /// process's worker thread (for a `thread_start`, or while one is held),
    /// and whether it is a `thread_start` whose thread has not said its id
    /// yet (held until the thread's next event, which may say it).
    pub(super) fn event(&mut self, v: &Value) -> Result<(TEvent, Option<ThreadKey>, bool), String> {
        let obj = v.as_object().ok_or("not a JSON object")?;
        let str_field = |k: &str| obj.get(k).and_then(Value::as_str);
        let event = str_field("event").ok_or("no \"event\" field")?;
        let sid = str_field("sid").ok_or("no \"sid\" field")?;
        let thread = str_field("thread").unwrap_or("main");
        let time = str_field("time").and_then(parse_time).filter(|&t| t != 0);
        let t_abs = obj
            .get("t_abs")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| (t * 1e6).round() as i128 * 1000);
        if self.procs.len() >= MAX_TRACE2_PROCS && !self.procs.contains_key(sid) {
            self.procs.clear();
        }
        let proc = self.procs.entry(sid.to_string()).or_default();
        if let (Some(time), Some(t_abs), None) = (time, t_abs, proc.anchor) {
            proc.anchor = Some(time - t_abs);
        }
        let ns = match (time, t_abs) {
            (Some(t), _) => clamp_ns(t, &self.clamped),
            (None, Some(t)) => {
                clamp_ns(proc.anchor.unwrap_or(self.device_offset) + t, &self.clamped)
            }
            (None, None) => proc.last,
        };
        proc.last = proc.last.max(ns);

        let pkey = match (self.file.device, sid_pid(sid)) {
            (Some(dev), _) => ProcKey::Device(dev),
            (None, Some(pid)) => {
                ProcKey::Pid(pid, self.fdr_pids.get(&pid).map_or(NO_FDR, |o| o.first))
            }
            (None, None) => ProcKey::Stream(self.file.input),
        };
        if let (ProcKey::Pid(..), "data", Some(THREAD_ID_CATEGORY), Some(THREAD_ID_KEY)) =
            (&pkey, event, str_field("category"), str_field("key"))
        {
            if let Some(tid) = str_field("value").and_then(|v| v.trim().parse::<u32>().ok()) {
                if self.thread_tids.len() >= MAX_TRACE2_PROCS {
                    self.thread_tids.clear();
                }
                self.thread_tids
                    .insert((sid.to_string(), thread.to_string()), tid);
            }
        }
        // The key of a process's worker thread, where it is needed: for a
        // `thread_start`, or while one is held.
        let worker = match (&pkey, thread) {
            (ProcKey::Pid(..), t)
                if t != "main" && (event == "thread_start" || !self.held.is_empty()) =>
            {
                Some((sid.to_string(), t.to_string()))
            }
            _ => None,
        };
        let hold = event == "thread_start"
            && worker
                .as_ref()
                .is_some_and(|k| !self.thread_tids.contains_key(k));
        let mut track_name = None;
        let track = match (&pkey, thread) {
            (ProcKey::Pid(pid, _), "main") => TrackKey::Thread(pkey.clone(), *pid),
            (ProcKey::Pid(..), _) => {
                let name = self.thread_name(thread);
                match self.thread_tids.get(&(sid.to_string(), thread.to_string())) {
                    Some(&tid) => {
                        track_name = Some(name);
                        TrackKey::Thread(pkey.clone(), tid)
                    }
                    None => TrackKey::Named(pkey, name),
                }
            }
            _ => TrackKey::Named(pkey, self.thread_name(thread)),
        };
        let mut args = Vec::new();
        for (k, val) in obj {
            if TRACE2_COMMON.contains(&k.as_str())
                || (event == "data" && (k == "key" || k == "category"))
            {
                continue;
            }
            let text = match val {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let name = self.arg_name(k);
            args.push((name, Arg::S(text)));
        }
        let label = |obj: &serde_json::Map<String, Value>| {
            let l = obj.get("label").and_then(Value::as_str).unwrap_or("");
            match obj.get("category").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => format!("{c}:{l}"),
                _ => l.to_string(),
            }
        };
        let what = match event {
            "region_enter" => {
                args.retain(|(k, _)| &**k != "label" && &**k != "category");
                let l = obj.get("label").and_then(Value::as_str).unwrap_or("");
                let span = match obj.get("category").and_then(Value::as_str) {
                    Some(c) if !c.is_empty() => format!("{c}::{l}"),
                    _ => l.to_string(),
                };
                What::RegionEnter(label(obj).into(), args, span.into())
            }
            "region_leave" => What::RegionLeave,
            "data" | "data_json" => {
                let key = str_field("key").unwrap_or("");
                let name = match str_field("category") {
                    Some(c) => format!("data {c}/{key}"),
                    None => format!("data {key}"),
                };
                What::Instant(name.into(), args)
            }
            other => What::Instant(other.into(), args),
        };
        let counter = self.sample(event, obj);
        let e = TEvent {
            ns,
            track,
            track_name,
            what,
            names: usize::MAX,
            counter,
        };
        Ok((e, worker, hold))
    }

    /// The counter value a Trace2 event carries: a `counter`'s or
    /// `th_counter`'s count, a `timer`'s or `th_timer`'s total time, a `data`
    /// value that is a number (other than the thread id event), a
    /// `data_json` value that is a JSON number.
    pub(super) fn sample(
        &mut self,
        event: &str,
        obj: &serde_json::Map<String, Value>,
    ) -> Option<Sample> {
        let str_field = |k: &str| obj.get(k).and_then(Value::as_str);
        let category = str_field("category").unwrap_or("");
        let (name, unit, value) = match event {
            "counter" | "th_counter" => {
                let count = obj.get("count")?.as_u64()?;
                let value = CounterValue::Int(i64::try_from(count).unwrap_or(i64::MAX));
                (str_field("name")?, CounterUnit::Count, value)
            }
            "timer" | "th_timer" => {
                let secs = obj.get("t_total")?.as_f64().filter(|t| t.is_finite())?;
                let ns = (secs * 1e9).round().clamp(i64::MIN as f64, i64::MAX as f64) as i64;
                (
                    str_field("name")?,
                    CounterUnit::TimeNs,
                    CounterValue::Int(ns),
                )
            }
            "data" | "data_json" => {
                let key = str_field("key")?;
                if (category, key) == (THREAD_ID_CATEGORY, THREAD_ID_KEY) {
                    return None;
                }
                let value = match obj.get("value")? {
                    Value::String(text) if event == "data" => number(text.trim())?,
                    Value::Number(n) if event == "data_json" => match n.as_i64() {
                        Some(i) => CounterValue::Int(i),
                        None => CounterValue::Float(n.as_f64().filter(|f| f.is_finite())?),
                    },
                    _ => return None,
                };
                (key, CounterUnit::Unspecified, value)
            }
            _ => return None,
        };
        let full = if category.is_empty() {
            format!("{event} {name}")
        } else {
            format!("{event} {category}/{name}")
        };
        Some(Sample {
            name: self.arg_name(&full),
            per_thread: event.starts_with("th_"),
            unit,
            value,
        })
    }
}

impl Source for Trace2Source {
    fn next_event(&mut self, problems: &mut Vec<InputProblem>) -> Option<TEvent> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some(e);
            }
            match self.next_line_event(problems) {
                Some((e, worker, hold)) => {
                    let held = worker
                        .as_ref()
                        .and_then(|k| self.held.iter().position(|(h, _)| h == k));
                    if let Some(at) = held {
                        // The thread's next event: its `thread_start` goes on
                        // the track this one is on (its FDR thread's, once it
                        // said its id).
                        let (_, mut start) = self.held.remove(at);
                        start.track = e.track.clone();
                        start.track_name = e.track_name.clone();
                        self.ready.push_back(start);
                        self.ready.push_back(e);
                    } else if let (true, Some(k)) = (hold, worker) {
                        if self.held.len() >= MAX_HELD {
                            let (_, oldest) = self.held.remove(0);
                            self.ready.push_back(oldest);
                        }
                        self.held.push((k, e));
                    } else {
                        return Some(e);
                    }
                }
                None if self.held.is_empty() => return None,
                None => self.ready.extend(self.held.drain(..).map(|(_, e)| e)),
            }
        }
    }
}

impl Trace2Source {
    /// The event of the next line that has one (bad lines reported and skipped).
    pub(super) fn next_line_event(
        &mut self,
        problems: &mut Vec<InputProblem>,
    ) -> Option<(TEvent, Option<ThreadKey>, bool)> {
        loop {
            let at = self.offset;
            let mut line = std::mem::take(&mut self.line);
            let read = read_line_capped(&mut self.file.reader, &mut line, MAX_TRACE2_LINE);
            let result = match read {
                Err(e) => {
                    self.line = line;
                    self.problem(
                        problems,
                        at,
                        format!("read error: {e}; the rest is left out"),
                    );
                    return None;
                }
                Ok(None) => {
                    self.line = line;
                    return None;
                }
                Ok(Some((fits, n))) => {
                    self.offset += n;
                    self.lineno += 1;
                    if !fits {
                        Err(format!("longer than {MAX_TRACE2_LINE} bytes"))
                    } else if line.iter().all(u8::is_ascii_whitespace) {
                        self.line = line;
                        continue;
                    } else {
                        serde_json::from_slice::<Value>(&line)
                            .map_err(|e| format!("not JSON ({e})"))
                            .and_then(|v| self.event(&v))
                    }
                }
            };
            self.line = line;
            match result {
                Ok(e) => return Some(e),
                Err(reason) => {
                    let lineno = self.lineno;
                    self.problem(
                        problems,
                        at,
                        format!("line {lineno}: {}; skipped", escape(&reason)),
                    );
                }
            }
        }
    }
}

/// `s` with control characters escaped (a diagnostic stays one line).
pub(super) fn escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}
