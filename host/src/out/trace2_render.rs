//! Converts a git Trace2 event stream (JSON lines) to the normal, perf or event
//! format through the core's formatters.
//!
//! The event stream does not carry everything the other targets print; what is
//! reconstructed and what cannot be is documented in `docs/trace2-render.md`.
//! In short: region depth comes from the events' `nesting` (tracked per process
//! and thread), `t_abs` of events that do not carry it is the last `t_abs` of
//! that process advanced by the wall-clock time since, the wall time is the event's UTC `time` shifted by a
//! caller-given offset, and git's own target-internal source locations are
//! mapped from the event target's to the chosen target's.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use flightrec_core::trace2::{
    days_from_civil, sid_depth, Args, BufferTooSmall, Event, Format, LineCtx, Msg, Target, WallTime,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Settings of one conversion.
///
/// ```
/// use flightrec_host::out::trace2_render::{render, RenderOptions};
/// use flightrec_host::core::trace2::Target;
/// let input = br#"{"event":"version","sid":"S","thread":"main","evt":"4","exe":"2.47.3"}"#;
/// let mut out = Vec::new();
/// let mut diag = Vec::new();
/// let opts = RenderOptions::new(Target::Perf, true);
/// let report = render(&input[..], &mut out, &mut diag, &opts).unwrap();
/// assert_eq!(report.events, 1);
/// assert!(out.ends_with(b"| version      |     |           |           |              | 2.47.3\n"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// Output format and brief setting.
    pub format: Format,
    /// Offset of local time from UTC, seconds east (the stream carries UTC only).
    pub utc_offset_secs: i32,
}

impl RenderOptions {
    /// Output in `target`'s format, UTC, with no extra nesting filter for the
    /// event target (the input was already filtered by git).
    ///
    /// ```
    /// use flightrec_host::core::trace2::Target;
    /// use flightrec_host::out::trace2_render::{render, RenderOptions};
    /// let mut opts = RenderOptions::new(Target::Normal, false);
    /// assert_eq!((opts.format.brief, opts.format.event_nesting, opts.utc_offset_secs), (false, u32::MAX, 0));
    /// let input = br#"{"event":"cmd_mode","sid":"S","thread":"main","time":"2023-11-14T22:13:20.123456Z","file":"git.c","line":480,"name":"write"}"#;
    /// let mut out = Vec::new();
    /// render(&input[..], &mut out, std::io::sink(), &opts)?;
    /// assert_eq!(out, b"22:13:20.123456 git.c:480                         cmd_mode write\n");
    /// opts.utc_offset_secs = 3600; // local time one hour east of UTC
    /// out.clear();
    /// render(&input[..], &mut out, std::io::sink(), &opts)?;
    /// assert!(out.starts_with(b"23:13:20.123456 git.c:480 "));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(target: Target, brief: bool) -> Self {
        RenderOptions {
            format: Format {
                target,
                brief,
                event_nesting: u32::MAX,
            },
            utc_offset_secs: 0,
        }
    }
}

/// What a conversion did. Example on [`render`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RenderReport {
    /// Input lines read.
    pub lines: usize,
    /// Events converted (whether or not the target prints them).
    pub events: usize,
    /// Input lines skipped because they are not valid Trace2 JSON (1-based).
    pub skipped: Vec<usize>,
    /// Perf lines whose region padding was capped at [`MAX_PAD_NESTING`]
    /// levels (the first one is reported on `diag` as a warning).
    pub nesting_capped: usize,
}

/// Deepest region nesting the perf output pads for: `(MAX_PAD_NESTING - 1) * 2`
/// = 198 dots at most. Lines nested deeper are written with that padding (their
/// other columns unchanged), and the first one is reported once as a warning.
///
/// Git has no limit of its own (2.47.3 keeps `nr_open_regions` in a C `int`
/// and grows the region stack as needed), but its event target drops regions
/// deeper than `trace2.eventNesting` (default 2), and git's own code nests a few
/// levels (3 in every capture under `testdata/trace2`). Without a cap, one
/// 145-byte line with `"nesting":100000000` would render to 200 MB, and each
/// `region_enter` without a `nesting` field would add two dots to every later
/// line (100,000 of them: 10 GB).
///
/// ```
/// use flightrec_host::core::trace2::Target;
/// use flightrec_host::out::trace2_render::{render, RenderOptions, MAX_PAD_NESTING};
/// let input = br#"{"event":"region_enter","sid":"S","thread":"main","nesting":100000000,"label":"deep"}"#;
/// let (mut out, mut diag) = (Vec::new(), Vec::new());
/// let report = render(&input[..], &mut out, &mut diag, &RenderOptions::new(Target::Perf, true)).unwrap();
/// assert_eq!(report.nesting_capped, 1);
/// let text = String::from_utf8(out).unwrap();
/// let payload = text.rsplit(" | ").next().unwrap();
/// assert_eq!(payload, format!("{}label:deep\n", ".".repeat((MAX_PAD_NESTING as usize - 1) * 2)));
/// assert!(String::from_utf8(diag).unwrap().starts_with("line 1: warning: region nesting 100000000 "));
/// ```
pub use flightrec_core::trace2::perf::MAX_PAD_NESTING;

/// Reads Trace2 JSON lines from `input`, writes them in `opts`' format to `output`
/// and reports every line it cannot convert on `diag` as `line N: reason`.
///
/// Only I/O errors abort; a bad line is reported and skipped.
///
/// ```
/// use flightrec_host::core::trace2::Target;
/// use flightrec_host::out::trace2_render::{render, RenderOptions, RenderReport};
/// let input = concat!(
///     r#"{"event":"version","sid":"S","thread":"main","evt":"4","exe":"2.47.3"}"#, "\n",
///     "not json\n",
///     "\n",
///     r#"{"event":"cmd_name","sid":"S","thread":"main","name":"status","hierarchy":"status"}"#, "\n",
/// );
/// let (mut out, mut diag) = (Vec::new(), Vec::new());
/// let report: RenderReport = render(input.as_bytes(), &mut out, &mut diag, &RenderOptions::new(Target::Normal, true))?;
/// assert_eq!(out, b"version 2.47.3\ncmd_name status (status)\n");
/// assert_eq!((report.lines, report.events, report.skipped), (4, 2, vec![2]));
/// assert!(String::from_utf8_lossy(&diag).starts_with("line 2: "));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn render<R: BufRead, W: Write, D: Write>(
    mut input: R,
    mut output: W,
    mut diag: D,
    opts: &RenderOptions,
) -> io::Result<RenderReport> {
    let mut report = RenderReport::default();
    let mut state = StreamState::default();
    let mut raw = Vec::new();
    let mut out = vec![0u8; 64 * 1024];
    loop {
        raw.clear();
        if input.read_until(b'\n', &mut raw)? == 0 {
            break;
        }
        report.lines += 1;
        let text = strip_eol(&raw);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match convert_line(text, &mut state, opts, &mut out) {
            Ok(Converted { len, capped_from }) => {
                report.events += 1;
                if let Some(nesting) = capped_from {
                    if report.nesting_capped == 0 {
                        writeln!(
                            diag,
                            "line {}: warning: region nesting {nesting} is deeper than {MAX_PAD_NESTING}; \
                             perf lines are padded for at most {MAX_PAD_NESTING} levels from here on",
                            report.lines
                        )?;
                    }
                    report.nesting_capped += 1;
                }
                output.write_all(&out[..len])?;
            }
            Err(reason) => {
                report.skipped.push(report.lines);
                writeln!(
                    diag,
                    "line {}: {}",
                    report.lines,
                    escape_controls(&reason, false)
                )?;
            }
        }
    }
    output.flush()?;
    Ok(report)
}

/// `text` with every control character (C0, DEL, C1) written as an escape, so
/// that a diagnostic stays one line and no terminal sequence of the input
/// reaches the terminal. With `quoted`, `\\` and `"` are escaped too and the
/// stand-ins for raw non-UTF-8 bytes are written as `\xNN` (for text from the
/// input shown between quotes).
fn escape_controls(text: &str, quoted: bool) -> std::borrow::Cow<'_, str> {
    use std::fmt::Write as _;
    let needs =
        |c: char| c.is_control() || (quoted && (c == '\\' || c == '"' || raw_byte(c).is_some()));
    if !text.chars().any(needs) {
        return text.into();
    }
    let mut s = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x80 => {
                let _ = write!(s, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(s, "\\u{{{:x}}}", c as u32);
            }
            '\\' | '"' if quoted => {
                s.push('\\');
                s.push(c);
            }
            c => match raw_byte(c) {
                Some(b) if quoted => {
                    let _ = write!(s, "\\x{b:02x}");
                }
                _ => s.push(c),
            },
        }
    }
    s.into()
}

fn strip_eol(raw: &[u8]) -> &[u8] {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw.strip_suffix(b"\r").unwrap_or(raw)
}

/// Per process (`sid`) and thread: what the stream lets us track.
#[derive(Default)]
struct StreamState {
    /// Open regions (`nr_open_regions`) per (sid, thread).
    nesting: HashMap<(Vec<u8>, Vec<u8>), u32>,
    /// Per sid: the last event that had both `t_abs` and `time`, and the last
    /// wall time seen.
    clocks: HashMap<Vec<u8>, ProcessClock>,
}

/// What the stream told us about one process's clocks.
#[derive(Clone, Copy, Default)]
struct ProcessClock {
    /// `t_abs` of the last event that carried one, and its wall time.
    t_abs_ref: u64,
    wall_ref: Option<WallTime>,
    /// Wall time of the last event that carried one.
    wall: WallTime,
}

impl ProcessClock {
    /// `t_abs` for an event at wall time `now` that does not carry it: the last
    /// known `t_abs` advanced by the wall-clock time since (the two clocks run
    /// at the same rate; with a frozen or absent wall clock this is the last
    /// `t_abs` itself).
    fn estimate(&self, now: WallTime) -> u64 {
        let Some(r) = self.wall_ref else {
            return self.t_abs_ref;
        };
        let delta =
            (now.secs - r.secs) as i128 * 1_000_000 + i128::from(now.micros) - i128::from(r.micros);
        let delta = u64::try_from(delta.max(0)).unwrap_or(u64::MAX);
        self.t_abs_ref.saturating_add(delta)
    }
}

/// First code point of the private-use block that stands for raw bytes which are
/// not UTF-8 (git writes them unvalidated): byte `b` <-> `U+10FF00 + b`.
const RAW_BYTE_BASE: u32 = 0x10_FF00;

/// Makes a line parseable as JSON without losing bytes: every byte that is not
/// part of valid UTF-8 becomes the private-use character `U+10FF00 + byte`.
fn to_lossless_str(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        s.push_str(chunk.valid());
        for &b in chunk.invalid() {
            s.push(char::from_u32(RAW_BYTE_BASE + u32::from(b)).unwrap_or('\u{FFFD}'));
        }
    }
    s
}

/// The raw byte a stand-in character of [`to_lossless_str`] stands for.
fn raw_byte(c: char) -> Option<u8> {
    let u = c as u32;
    (RAW_BYTE_BASE..=RAW_BYTE_BASE + 0xff)
        .contains(&u)
        .then(|| (u - RAW_BYTE_BASE) as u8)
}

/// Inverse of [`to_lossless_str`] for one string value.
fn to_raw_bytes(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len());
    for c in s.chars() {
        if let Some(b) = raw_byte(c) {
            v.push(b);
        } else {
            let mut b = [0u8; 4];
            v.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        }
    }
    v
}

/// Accessors over one parsed event object, with errors that name the field.
struct Obj<'a>(&'a Map<String, Value>);

impl Obj<'_> {
    fn str(&self, k: &str) -> Result<Vec<u8>, String> {
        self.opt_str(k)?
            .ok_or_else(|| format!("missing string field \"{k}\""))
    }
    fn opt_str(&self, k: &str) -> Result<Option<Vec<u8>>, String> {
        match self.0.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(to_raw_bytes(s))),
            Some(_) => Err(format!("field \"{k}\" is not a string")),
        }
    }
    fn int(&self, k: &str) -> Result<i64, String> {
        self.opt_int(k)?
            .ok_or_else(|| format!("missing integer field \"{k}\""))
    }
    fn opt_int(&self, k: &str) -> Result<Option<i64>, String> {
        match self.0.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| format!("field \"{k}\" is not an integer")),
        }
    }
    fn u64(&self, k: &str) -> Result<u64, String> {
        self.0
            .get(k)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("missing unsigned integer field \"{k}\""))
    }
    fn i32(&self, k: &str) -> Result<i32, String> {
        i32::try_from(self.int(k)?).map_err(|_| format!("field \"{k}\" is out of range"))
    }
    /// A `%.6f` seconds field as microseconds.
    fn micros(&self, k: &str) -> Result<u64, String> {
        self.opt_micros(k)?
            .ok_or_else(|| format!("missing time field \"{k}\""))
    }
    fn opt_micros(&self, k: &str) -> Result<Option<u64>, String> {
        match self.0.get(k) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x >= 0.0 && x.is_finite() => Ok(Some((x * 1e6).round() as u64)),
                _ => Err(format!("field \"{k}\" is not a non-negative number")),
            },
        }
    }
    fn bool(&self, k: &str) -> Result<bool, String> {
        self.0
            .get(k)
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("missing boolean field \"{k}\""))
    }
    fn list(&self, k: &str) -> Result<Vec<Vec<u8>>, String> {
        match self.0.get(k) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(to_raw_bytes)
                        .ok_or_else(|| format!("\"{k}\" holds a non-string"))
                })
                .collect(),
            _ => Err(format!("missing array field \"{k}\"")),
        }
    }
}

/// Parses git's event `time`, `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`.
fn parse_time(s: &[u8]) -> Option<WallTime> {
    let s = std::str::from_utf8(s).ok()?.trim_start();
    let (date, rest) = s.split_once('T')?;
    let mut d = date.rsplitn(3, '-');
    let day: u8 = d.next()?.parse().ok()?;
    let month: u8 = d.next()?.parse().ok()?;
    let year: i64 = d.next()?.trim().parse().ok()?;
    let rest = rest.strip_suffix('Z')?;
    let (hms, us) = rest.split_once('.')?;
    let mut t = hms.split(':');
    let h: i64 = t.next()?.parse().ok()?;
    let m: i64 = t.next()?.parse().ok()?;
    let sec: i64 = t.next()?.parse().ok()?;
    if us.len() != 6
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || !(0..=23).contains(&h)
        || !(0..=59).contains(&m)
        || !(0..=60).contains(&sec)
    {
        return None;
    }
    let micros: u32 = us.parse().ok()?;
    let days = days_from_civil(year, month, day);
    // A year of many digits makes seconds past i64: not a time git writes.
    let seconds = days
        .checked_mul(86_400)?
        .checked_add(h * 3600 + m * 60 + sec)?;
    Some(WallTime::new(seconds, micros))
}

/// The source location git 2.47.3's own targets use for events raised inside
/// Trace2 (spec §10.6): the event target's location mapped to `target`'s.
fn map_internal_location(
    event: &str,
    file: &[u8],
    line: u32,
    target: Target,
) -> Option<(&'static [u8], u32)> {
    if file != b"trace2/tr2_tgt_event.c" {
        return None;
    }
    let (normal, perf, ev) = match event {
        "signal" => (118, 205, 189),
        "atexit" => (128, 217, 205),
        "timer" | "th_timer" => (356, 577, 654),
        "counter" | "th_counter" => (371, 593, 675),
        _ => return None,
    };
    if line != ev {
        return None;
    }
    Some(match target {
        Target::Normal => (b"trace2/tr2_tgt_normal.c", normal),
        Target::Perf => (b"trace2/tr2_tgt_perf.c", perf),
        Target::Event => (b"trace2/tr2_tgt_event.c", ev),
    })
}

/// `strerror` text for an errno (the stream carries only the code).
fn strerror(code: i32) -> Vec<u8> {
    let text = io::Error::from_raw_os_error(code).to_string();
    let text = match text.rfind(" (os error ") {
        Some(i) => &text[..i],
        None => &text,
    };
    text.as_bytes().to_vec()
}

/// Largest output line the converter builds (a bound against absurd input).
const MAX_LINE: usize = 1 << 30;

/// One converted line: its length in the output buffer, and the nesting it had
/// when its perf padding was capped at [`MAX_PAD_NESTING`].
struct Converted {
    len: usize,
    capped_from: Option<u32>,
}

fn convert_line(
    text: &[u8],
    state: &mut StreamState,
    opts: &RenderOptions,
    out: &mut Vec<u8>,
) -> Result<Converted, String> {
    let json = to_lossless_str(text);
    let value: Value = serde_json::from_str(&json).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(map) = &value else {
        return Err("not a JSON object".into());
    };
    let o = Obj(map);
    let name = match map.get("event") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err("missing string field \"event\"".into()),
    };
    let sid = o.str("sid")?;
    let thread = o.str("thread")?;

    // Time and t_abs: from the event when present, else reconstructed.
    let clock = state.clocks.entry(sid.clone()).or_default();
    let given_time = match o.opt_str("time")? {
        Some(t) => Some(parse_time(&t).ok_or("field \"time\" is not an ISO-8601 UTC time")?),
        None => None,
    };
    let time = given_time.unwrap_or(clock.wall);
    let t_abs = match o.opt_micros("t_abs")? {
        Some(t) => {
            clock.t_abs_ref = t;
            clock.wall_ref = given_time;
            t
        }
        None => clock.estimate(time),
    };
    clock.wall = time;

    let mut file = o.opt_str("file")?.unwrap_or_default();
    let mut line = match o.opt_int("line")? {
        Some(l) => u32::try_from(l).map_err(|_| "field \"line\" is out of range")?,
        None => 0,
    };
    if let Some((f, l)) = map_internal_location(name, &file, line, opts.format.target) {
        file = f.to_vec();
        line = l;
    }
    let repo = match o.opt_int("repo")? {
        Some(r) => Some(i32::try_from(r).map_err(|_| "field \"repo\" is out of range")?),
        None => None,
    };

    // Region depth per (process, thread). The stream's own `nesting` wins where
    // it is given; other events use the tracked value.
    let key = (sid.clone(), thread.clone());
    let tracked = *state.nesting.get(&key).unwrap_or(&1);
    let given = match o.opt_int("nesting")? {
        Some(n) => Some(u32::try_from(n).map_err(|_| "field \"nesting\" is out of range")?),
        None => None,
    };
    let (nesting, after) = match name {
        "region_enter" => {
            let n = given.unwrap_or(tracked);
            (n, n.saturating_add(1))
        }
        "region_leave" => {
            let n = given.unwrap_or(tracked.saturating_sub(1));
            (n, n)
        }
        "data" | "data_json" => {
            let n = given.unwrap_or(tracked);
            (n, n)
        }
        "thread_start" => (1, 1),
        // Git unwinds the thread's regions before these (thread exit / atexit).
        "thread_exit" | "atexit" | "timer" | "th_timer" | "counter" | "th_counter" => (1, 1),
        _ => (tracked, tracked),
    };
    state.nesting.insert(key, after);
    // Only perf pads by nesting; the event target prints the number as it is.
    let (nesting, capped_from) = match opts.format.target {
        Target::Perf if nesting > MAX_PAD_NESTING => (MAX_PAD_NESTING, Some(nesting)),
        _ => (nesting, None),
    };

    // Owned copies of every field the event borrows from.
    let s = |k: &str| o.str(k);
    let os = |k: &str| o.opt_str(k);
    let (a, b, c, d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut strs: [Vec<u8>; 4] = [a, b, c, d];
    let mut opt: [Option<Vec<u8>>; 3] = [None, None, None];
    let mut list: Vec<Vec<u8>> = Vec::new();
    let mut raw_json = String::new();
    let mut msg_text: Option<Vec<u8>> = None;
    match name {
        "version" => strs[0] = s("exe")?,
        "start" | "alias" | "exec" | "child_start" => {
            list = o.list("argv")?;
            if name == "alias" {
                strs[0] = s("alias")?;
            }
            if name == "exec" {
                opt[0] = os("exe")?;
            }
            if name == "child_start" {
                opt[0] = os("child_class")?;
                opt[1] = os("hook_name")?;
                opt[2] = os("cd")?;
            }
        }
        "error" => {
            strs[0] = os("msg")?.unwrap_or_default();
            strs[1] = os("fmt")?.unwrap_or_default();
        }
        "cmd_path" => strs[0] = s("path")?,
        "cmd_ancestry" => list = o.list("ancestry")?,
        "cmd_name" => {
            strs[0] = s("name")?;
            strs[1] = os("hierarchy")?.unwrap_or_default();
        }
        "cmd_mode" => strs[0] = s("name")?,
        "child_ready" => strs[0] = s("ready")?,
        "exec_result" => strs[0] = strerror(o.i32("code")?),
        "def_param" => {
            strs[0] = s("scope")?;
            strs[1] = s("param")?;
            opt[0] = os("value")?;
        }
        "def_repo" => strs[0] = s("worktree")?,
        "region_enter" | "region_leave" | "printf" => {
            opt[0] = os("category")?;
            opt[1] = os("label")?;
            msg_text = os("msg")?;
        }
        "data" => {
            strs[0] = s("category")?;
            strs[1] = s("key")?;
            strs[2] = s("value")?;
        }
        "data_json" => {
            strs[0] = s("category")?;
            strs[1] = s("key")?;
            // The value's text exactly as git wrote it (key order, number spelling).
            let raw: HashMap<String, Box<RawValue>> =
                serde_json::from_str(&json).map_err(|e| format!("not JSON: {e}"))?;
            let raw = raw.get("value").ok_or("missing field \"value\"")?;
            raw_json = raw.get().to_owned();
        }
        "timer" | "th_timer" | "counter" | "th_counter" => {
            strs[0] = s("category")?;
            strs[1] = s("name")?;
        }
        _ => {}
    }
    let argv: Vec<&[u8]> = list.iter().map(Vec::as_slice).collect();
    let args = Args::Bytes(&argv);
    let raw_json_bytes = to_raw_bytes(&raw_json);
    let msg = Msg::Bytes(&strs[0]);
    let opt_msg = msg_text.as_deref().map(Msg::Bytes);

    let ev = match name {
        "version" => Event::Version { exe: &strs[0] },
        "too_many_files" => Event::TooManyFiles,
        "start" => Event::Start { argv: args },
        "exit" => Event::Exit {
            code: o.i32("code")?,
        },
        "atexit" => Event::Atexit {
            code: o.i32("code")?,
        },
        "signal" => Event::Signal {
            signo: o.i32("signo")?,
        },
        "error" => Event::Error { msg, fmt: &strs[1] },
        "cmd_path" => Event::CmdPath { path: &strs[0] },
        "cmd_ancestry" => Event::CmdAncestry { ancestry: args },
        "cmd_name" => Event::CmdName {
            name: &strs[0],
            hierarchy: &strs[1],
        },
        "cmd_mode" => Event::CmdMode { mode: &strs[0] },
        "alias" => Event::Alias {
            alias: &strs[0],
            argv: args,
        },
        "child_start" => {
            let hook_name = opt[1].as_deref();
            Event::ChildStart {
                child_id: o.int("child_id")?,
                child_class: opt[0].as_deref(),
                hook_name,
                cd: opt[2].as_deref(),
                use_shell: o.bool("use_shell")?,
                // The stream's argv already starts with "git" for git commands.
                is_git: false,
                argv: args,
            }
        }
        "child_exit" => Event::ChildExit {
            child_id: o.int("child_id")?,
            pid: o.int("pid")?,
            code: o.i32("code")?,
            t_rel: o.micros("t_rel")?,
        },
        "child_ready" => Event::ChildReady {
            child_id: o.int("child_id")?,
            pid: o.int("pid")?,
            ready: &strs[0],
            t_rel: o.micros("t_rel")?,
        },
        "exec" => Event::Exec {
            exec_id: o.int("exec_id")?,
            exe: opt[0].as_deref(),
            argv: args,
        },
        "exec_result" => Event::ExecResult {
            exec_id: o.int("exec_id")?,
            code: o.i32("code")?,
            err: &strs[0],
        },
        "thread_start" => Event::ThreadStart,
        "thread_exit" => Event::ThreadExit {
            t_rel: o.micros("t_rel")?,
        },
        "def_param" => Event::DefParam {
            scope: &strs[0],
            param: &strs[1],
            value: opt[0].as_deref(),
        },
        "def_repo" => Event::DefRepo { worktree: &strs[0] },
        "region_enter" => Event::RegionEnter {
            category: opt[0].as_deref(),
            label: opt[1].as_deref(),
            msg: opt_msg,
        },
        "region_leave" => Event::RegionLeave {
            t_rel: o.micros("t_rel")?,
            category: opt[0].as_deref(),
            label: opt[1].as_deref(),
            msg: opt_msg,
        },
        "data" => Event::Data {
            t_rel: o.micros("t_rel")?,
            category: &strs[0],
            key: &strs[1],
            value: &strs[2],
        },
        "data_json" => Event::DataJson {
            t_rel: o.micros("t_rel")?,
            category: &strs[0],
            key: &strs[1],
            value: &raw_json_bytes,
        },
        "printf" => Event::Printf { msg: opt_msg },
        "timer" | "th_timer" => Event::Timer {
            per_thread: name == "th_timer",
            category: &strs[0],
            name: &strs[1],
            intervals: o.u64("intervals")?,
            total_ns: o.micros("t_total")?.saturating_mul(1000),
            min_ns: o.micros("t_min")?.saturating_mul(1000),
            max_ns: o.micros("t_max")?.saturating_mul(1000),
        },
        "counter" | "th_counter" => Event::Counter {
            per_thread: name == "th_counter",
            category: &strs[0],
            name: &strs[1],
            value: o.u64("count")?,
        },
        other => {
            return Err(format!(
                "unknown Trace2 event \"{}\"",
                escape_controls(other, true)
            ))
        }
    };
    let ctx = LineCtx {
        time,
        utc_offset_secs: opts.utc_offset_secs,
        file: &file,
        line,
        thread: &thread,
        sid: &sid,
        sid_depth: sid_depth(&sid),
        nesting,
        repo,
        t_abs,
    };
    loop {
        match opts.format.write_line(&ctx, &ev, out) {
            Ok(len) => return Ok(Converted { len, capped_from }),
            Err(BufferTooSmall) if out.len() >= MAX_LINE => {
                return Err("line too long to render".into())
            }
            Err(BufferTooSmall) => {
                let grown = out.len().saturating_mul(2).min(MAX_LINE);
                out.resize(grown, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_git_cannot_write_are_rejected_not_overflowed() {
        assert!(parse_time(b"2026-11-21T21:55:43.554880Z").is_some());
        // Found by the trace2_render fuzz target: a 17-digit year overflowed the
        // seconds (a panic with overflow checks, a wrong time without).
        assert_eq!(
            parse_time(b"20111111111111126-11-21T21:55:43.554966Z"),
            None
        );
        assert_eq!(parse_time(b"2026-11-21T-1:55:43.554966Z"), None);
        assert_eq!(parse_time(b"2026-11-21T21:-5:43.554966Z"), None);
    }
}
