//! `convert` with several inputs: one timeline, on one clock, from FDR files,
//! `flightrec recv` output directories and Trace2 event streams.
//!
//! # Inputs
//!
//! * An FDR file (any file that does not start with `{`): verified and indexed
//!   like a single-input conversion ([`crate::read::index::scan`]), then read in TSC
//!   order over its threads ([`crate::read::index::Index::merged`]).
//! * A Trace2 event stream (JSON lines, what `GIT_TRACE2_EVENT` writes): read a
//!   line at a time.
//! * A directory written by `flightrec recv`: its `source-*.xray` files and its
//!   `trace2.txt`, all from one device.
//!
//! # One clock
//!
//! Every event is placed in nanoseconds since the Unix epoch:
//!
//! * FDR: each buffer starts with a wall-time marker and the TSC of the same
//!   moment (NewCPUId); the file's offset between the two clocks is taken from
//!   its first buffers (the largest `wall - tsc / frequency` over them: the marker
//!   is truncated to the microsecond, so the largest is the closest), and each
//!   event's TSC is converted with the header's cycle frequency and shifted by it.
//! * Trace2: the absolute `time` field. Events without one (`_BRIEF` streams,
//!   or a firmware's lines, whose `time` is the epoch itself) are placed by their
//!   `t_abs` from the process start, which is known from any event that carries
//!   both; without one either, at the last time of their process.
//! * The sources of one `recv` directory share their clock: one offset, the
//!   largest of theirs, for all of them. A firmware without a wall clock writes
//!   markers counted from its boot (offset zero) and `t_abs` from the same boot,
//!   so its FDR files and its Trace2 lines line up with each other.
//!
//! # Tracks
//!
//! A track per thread: FDR threads by process and thread id (`main` for the
//! thread whose id is the process id, as on Linux, else `thread N`); Trace2
//! threads by their name within the process whose id ends the session id
//! (`-P<hex>`), and the Trace2 `main` thread on the process's main thread track,
//! so regions and the functions called in them share one track; the sources of a
//! `recv` directory as `source N` under a process named after the directory.
//! Trace2 has no thread id for other threads; a thread that says its own with a
//! `data` event of category `flightrec` and key `tid` (value: the thread id, as
//! `gettid` gives it; flightrec's runtime writes it while XRay is on) has its
//! later events on that FDR thread's track. A `thread_start` whose thread has
//! not said its id yet is held until that thread's next event and goes on the
//! same track (the runtime says the id right after it).
//!
//! # Counter tracks
//!
//! Trace2 `counter` and `th_counter` (the count), `timer` and `th_timer` (the
//! total time, in ns), and `data` whose value is a decimal number (`data_json`:
//! a JSON number) are also values on a counter track named after the event,
//! category and name (`counter app/items`, `data index/entries`): of the
//! thread for `th_*` events, else of the process. They stay instants too, with
//! all their fields. At most [`MAX_COUNTER_TRACKS`]; values of further
//! counters are left out and counted.
//!
//! # Streaming
//!
//! The inputs are merged by time with a heap holding one event per input; each
//! track keeps its open slices (a stack). Memory depends on the number of inputs,
//! threads and the call depth, not on the trace sizes. Within a track time never
//! goes back (an event earlier than the track's last is held at it), so slices
//! nest. Calls and regions share a track's stack: an FDR exit closes the
//! innermost open call of its function and everything opened inside it, a
//! `region_leave` the innermost open region and everything inside it.
//!
//! # Bad inputs
//!
//! An input that cannot be read or does not verify is reported with its path and
//! the first error's byte offset and left out; a Trace2 line that is not valid
//! JSON is reported with its line number and byte offset and skipped. The rest
//! is converted.

mod event;
mod fdr;
mod limits;
mod merge;
pub mod tasks;
mod trace2;

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::model::TimelineSink;
use crate::names::Names;
use crate::progress::Progress;
use crate::read::file::TraceFile;
use crate::read::index::{scan_file_cut_short, Index};

use event::{ArgNames, NameCache, ProcKey, Source};
pub use event::{InputProblem, TimelineReport};
pub use fdr::{anchor_payload, ANCHOR_PREFIX};
use fdr::{clock_bounds, ClockBounds, FdrFile, FdrSource};
pub use limits::{MAX_COUNTER_TRACKS, MAX_TRACE2_LINE, MAX_TRACKS};
use merge::merge;
use trace2::{PidOwners, Trace2File, Trace2Source};

/// One input of a timeline: a file or a `recv` directory. Example on
/// [`merge_timeline`].
#[derive(Clone, Debug)]
pub struct TimelineInput {
    /// The path given.
    pub path: PathBuf,
    /// Function names for its FDR files (for a directory, all of them).
    pub names: Names,
}

/// What is at `path`: a directory (a `recv` output), a Trace2 stream or an FDR file.
enum InputKind {
    Dir,
    Trace2,
    Fdr,
}

fn sniff(path: &Path) -> io::Result<InputKind> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Ok(InputKind::Dir);
    }
    if !meta.is_file() {
        return Err(io::Error::other(
            "not a regular file (a FIFO, socket or device cannot be converted; save it to a file first)",
        ));
    }
    let mut first = [0u8; 1];
    let n = File::open(path)?.read(&mut first)?;
    Ok(if n == 1 && first[0] == b'{' {
        InputKind::Trace2
    } else {
        InputKind::Fdr
    })
}

/// A source file of a `recv` directory: source id, trace number, path.
type RecvSource = (u64, u32, PathBuf);

/// The source files of a `recv` directory: `source-*.xray` in the order of their
/// source ids, then `trace2.txt` when it exists.
fn recv_files(dir: &Path) -> io::Result<(Vec<RecvSource>, Option<PathBuf>)> {
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name
            .strip_prefix("source-")
            .and_then(|n| n.strip_suffix(".xray"))
        else {
            continue;
        };
        let (id, generation) = match stem.split_once('.') {
            Some((id, g)) => (id.parse::<u64>(), g.parse::<u32>().unwrap_or(0)),
            None => (stem.parse::<u64>(), 1),
        };
        if let Ok(id) = id {
            sources.push((id, generation, entry.path()));
        }
    }
    sources.sort();
    let t2 = dir.join("trace2.txt");
    Ok((sources, t2.is_file().then_some(t2)))
}

/// Reads every input, places it on one clock and hands the merged timeline
/// to `sink` (one of the writers of [`crate::out`]): what
/// [`convert_timeline`](crate::convert::convert_timeline) runs. Inputs, or
/// lines of them, that cannot be read are left out and named in the report.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::out::perfetto::PerfettoSink;
/// use flightrec_host::timeline::{merge_timeline, TimelineInput};
///
/// let dir = tempfile::tempdir().unwrap();
/// let fdr = dir.path().join("t.xray");
/// std::fs::write(&fdr, include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// let input = TimelineInput { path: fdr, names: Names::empty() };
/// let mut trace = Vec::new();
/// let report = merge_timeline(&[input], &mut PerfettoSink::new(&mut trace)).unwrap();
/// assert_eq!((report.sources, report.tracks), (1, 2));
/// assert!(!trace.is_empty());
/// ```
pub fn merge_timeline(
    inputs: &[TimelineInput],
    sink: &mut dyn TimelineSink,
) -> io::Result<TimelineReport> {
    let mut report = TimelineReport::default();
    let quiet = Progress::new(true);
    let mut fdrs: Vec<FdrFile> = Vec::new();
    let mut trace2s: Vec<Trace2File> = Vec::new();
    let mut names: Vec<NameCache> = Vec::new();
    let bad = |report: &mut TimelineReport, path: &Path, offset: Option<u64>, reason: String| {
        report.problems.push(InputProblem {
            path: path.to_path_buf(),
            offset,
            reason,
            unreadable: true,
        })
    };
    let mut device_offsets: HashMap<usize, i128> = HashMap::new();
    let mut device_names: HashMap<usize, String> = HashMap::new();

    let open_fdr = |path: &Path, report: &mut TimelineReport| -> Option<(TraceFile, Index)> {
        let file = match TraceFile::open(path) {
            Ok(f) => f,
            Err(e) => {
                report.problems.push(InputProblem {
                    path: path.to_path_buf(),
                    offset: None,
                    reason: format!("{e}; left out"),
                    unreadable: true,
                });
                return None;
            }
        };
        match scan_file_cut_short(&file, &quiet) {
            Ok((index, cut)) => {
                if let Some(e) = cut {
                    // Cut short between two buffers (a crashed program): every
                    // buffer it holds is converted; the input is still
                    // incomplete, which the problem says.
                    report.problems.push(InputProblem {
                        path: path.to_path_buf(),
                        offset: Some(e.offset as u64),
                        reason: format!("{}; converted the buffers it holds", e.kind),
                        unreadable: false,
                    });
                }
                Some((file, index))
            }
            Err(e) => {
                report.problems.push(InputProblem {
                    path: path.to_path_buf(),
                    offset: Some(e.offset as u64),
                    reason: format!("{}; left out", e.kind),
                    unreadable: false,
                });
                None
            }
        }
    };
    let open_trace2 =
        |path: &Path, report: &mut TimelineReport| -> Option<(BufReader<File>, u64)> {
            match File::open(path).and_then(|f| Ok((f.metadata()?.len(), f))) {
                Ok((len, f)) => Some((BufReader::with_capacity(1 << 16, f), len)),
                Err(e) => {
                    report.problems.push(InputProblem {
                        path: path.to_path_buf(),
                        offset: None,
                        reason: format!("{e}; left out"),
                        unreadable: true,
                    });
                    None
                }
            }
        };

    for (i, input) in inputs.iter().enumerate() {
        let kind = match sniff(&input.path) {
            Ok(k) => k,
            Err(e) => {
                bad(&mut report, &input.path, None, format!("{e}; left out"));
                continue;
            }
        };
        let name_slot = names.len();
        names.push(NameCache {
            names: input.names.clone(),
            cache: HashMap::new(),
        });
        match kind {
            InputKind::Fdr => {
                if let Some((file, index)) = open_fdr(&input.path, &mut report) {
                    let freq = index.header().cycle_frequency.get();
                    let bounds = clock_bounds(file.bytes(), &index, freq);
                    note_clock(&mut report, &input.path, bounds);
                    let offset = bounds.offset();
                    fdrs.push(FdrFile {
                        path: input.path.clone(),
                        file,
                        index,
                        freq,
                        offset,
                        proc: None,
                        label: None,
                        names: name_slot,
                    });
                }
            }
            InputKind::Trace2 => {
                if let Some((reader, len)) = open_trace2(&input.path, &mut report) {
                    trace2s.push(Trace2File {
                        path: input.path.clone(),
                        reader,
                        len,
                        device: None,
                        input: i,
                    });
                }
            }
            InputKind::Dir => {
                let (sources, t2) = match recv_files(&input.path) {
                    Ok(found) => found,
                    Err(e) => {
                        bad(&mut report, &input.path, None, format!("{e}; left out"));
                        continue;
                    }
                };
                if sources.is_empty() && t2.is_none() {
                    bad(
                        &mut report,
                        &input.path,
                        None,
                        "is a directory, and not one `flightrec recv` wrote (no source-*.xray or trace2.txt); \
                         left out"
                            .into(),
                    );
                    continue;
                }
                let dir_name = input
                    .path
                    .canonicalize()
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| input.path.display().to_string());
                device_names.insert(i, dir_name);
                let mut shared = ClockBounds::Unknown;
                let first = fdrs.len();
                for (id, generation, path) in sources {
                    if let Some((file, index)) = open_fdr(&path, &mut report) {
                        let freq = index.header().cycle_frequency.get();
                        shared = shared.combine(clock_bounds(file.bytes(), &index, freq));
                        let label: Rc<str> = if generation > 1 {
                            format!("source {id} (trace {generation})").into()
                        } else {
                            format!("source {id}").into()
                        };
                        fdrs.push(FdrFile {
                            path: path.clone(),
                            file,
                            index,
                            freq,
                            offset: 0,
                            proc: Some(ProcKey::Device(i)),
                            label: Some(label),
                            names: name_slot,
                        });
                    }
                }
                note_clock(&mut report, &input.path, shared);
                let shared = shared.offset();
                for f in &mut fdrs[first..] {
                    f.offset = shared;
                }
                device_offsets.insert(i, shared);
                if let Some(path) = t2 {
                    if let Some((reader, len)) = open_trace2(&path, &mut report) {
                        trace2s.push(Trace2File {
                            path,
                            reader,
                            len,
                            device: Some(i),
                            input: i,
                        });
                    }
                }
            }
        }
    }

    if fdrs.is_empty() && trace2s.is_empty() {
        // Nothing to convert: nothing written.
        return Ok(report);
    }
    let args = ArgNames::new();
    // The FDR files share the page budget of one single-input conversion.
    for f in &fdrs {
        f.file.set_release_every((32 << 20) / fdrs.len().max(1));
    }
    // Which FDR files hold each process id: each file's processes are its
    // own, and a Trace2 process joins the first file with its id.
    let mut fdr_pids: HashMap<u32, PidOwners> = HashMap::new();
    for (i, f) in fdrs.iter().enumerate() {
        if f.proc.is_some() {
            continue; // a `recv` directory's file: the device's process
        }
        let mut pids: Vec<u32> = (0..f.index.threads())
            .map(|t| f.index.thread_key(t).0 as u32)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        for pid in pids {
            fdr_pids
                .entry(pid)
                .or_insert(PidOwners {
                    first: i as u32,
                    files: 0,
                })
                .files += 1;
        }
    }
    let fdr_labels: Vec<String> = fdrs.iter().map(|f| f.path.display().to_string()).collect();
    let mut shared: Vec<(&u32, &PidOwners)> =
        fdr_pids.iter().filter(|(_, o)| o.files > 1).collect();
    shared.sort_unstable_by_key(|(pid, _)| **pid);
    for (pid, o) in shared {
        report.notes.push(format!(
            "process {pid} is in {} FDR inputs: shown as {} processes (the first, {}, keeps the id and joins a Trace2 stream of it)",
            o.files, o.files, fdr_labels[o.first as usize]
        ));
    }
    let fdr_pids = Rc::new(fdr_pids);
    let clamped = Rc::new(Cell::new(0u64));
    let mut sources: Vec<Box<dyn Source + '_>> = Vec::new();
    for (input, f) in fdrs.iter().enumerate() {
        report.sources += 1;
        report.input_bytes += f.file.bytes().len() as u64;
        let single_thread = f.index.threads() == 1;
        let merged = f
            .index
            .merged_in_file_order(f.file.bytes(), &mut |n| f.file.consumed(n));
        sources.push(Box::new(FdrSource {
            fdr: f,
            clamped: clamped.clone(),
            input: input as u32,
            merged,
            count: 0,
            single_thread,
            args: &args,
            thread_labels: HashMap::new(),
            polls: HashMap::new(),
        }));
    }
    for t in trace2s {
        report.sources += 1;
        report.input_bytes += t.len;
        let device_offset = t
            .device
            .and_then(|d| device_offsets.get(&d).copied())
            .unwrap_or(0);
        sources.push(Box::new(Trace2Source {
            file: t,
            line: Vec::new(),
            lineno: 0,
            offset: 0,
            procs: HashMap::new(),
            device_offset,
            arg_names: HashMap::new(),
            thread_tids: HashMap::new(),
            held: Vec::new(),
            ready: VecDeque::new(),
            reported: 0,
            fdr_pids: fdr_pids.clone(),
            clamped: clamped.clone(),
        }));
    }

    if sources.len() == 1 {
        // One source is placed on no other's clock: a rough placement changes
        // nothing it shows.
        report.clock_notes.clear();
    }
    let mut problems = Vec::new();
    merge(
        &mut sources,
        &mut names,
        &device_names,
        (&fdr_pids, &fdr_labels, &clamped),
        &args,
        sink,
        &mut report,
        &mut problems,
    )?;
    // Problems of the opening first (in input order), then those found reading.
    report.problems.extend(problems);

    Ok(report)
}

/// Reports an input whose place on the clock is known only roughly.
fn note_clock(report: &mut TimelineReport, path: &Path, bounds: ClockBounds) {
    let reason = match bounds.uncertainty() {
        None => "no wall-time marker with a TSC: placed at its TSC".to_string(),
        Some(u) if u > 1_000_000 => format!(
            "placed on the wall clock within {:.3} s (its markers carry whole seconds; \
             record a clock anchor for more)",
            u as f64 / 1e9
        ),
        Some(_) => return,
    };
    report.clock_notes.push(InputProblem {
        path: path.to_path_buf(),
        offset: None,
        reason,
        unreadable: false,
    });
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::trace2::{number, parse_time, read_line_capped, sid_pid};
    use super::*;
    use crate::model::CounterValue;
    // The tests read the merged timeline back as the writers write it.
    use crate::convert::{convert_timeline, TimelineFormat};

    #[test]
    fn times_and_session_ids() {
        assert_eq!(
            parse_time("1970-01-01T00:00:01.000002Z"),
            Some(1_000_002_000)
        );
        assert_eq!(
            parse_time("2026-11-21T21:55:45.125553Z"),
            Some(1_795_298_145_125_553_000)
        );
        assert_eq!(parse_time("2026-11-21T21:55:45Z"), None);
        assert_eq!(parse_time("2026-13-21T21:55:45.125553Z"), None);
        assert_eq!(
            sid_pid("20261121T215545.125462Z-H0a7c9cdf-P00001e15"),
            Some(0x1e15)
        );
        assert_eq!(sid_pid("a-P00000001/b-P0000000a"), Some(10));
        assert_eq!(sid_pid("S"), None);
    }

    fn bounds_of(bytes: &[u8]) -> ClockBounds {
        let index = crate::read::index::scan(bytes, &mut |_| {}).unwrap();
        clock_bounds(bytes, &index, index.header().cycle_frequency.get())
    }

    #[test]
    fn clocks_from_markers_and_anchors() {
        // compiler-rt 14: CLOCK_MONOTONIC markers to the microsecond, kept.
        let real = bounds_of(include_bytes!(
            "../../../testdata/xray/real-v5-default.xray"
        ));
        assert!(matches!(real, ClockBounds::Markers { .. }), "{real:?}");
        assert!(real.uncertainty().unwrap() < 1000, "{real:?}");
        // Hand-made markers a microsecond apart while the TSC moves 0.7 µs:
        // the bounds disagree, and the lower end is used.
        let crafted = bounds_of(include_bytes!(
            "../../../testdata/xray/crafted-v5-2threads.xray"
        ));
        let ClockBounds::Markers { lo, hi } = crafted else {
            panic!("{crafted:?}")
        };
        assert!(lo > hi, "{crafted:?}");
        assert_eq!(crafted.offset(), lo);
        // Bounds that disagree: the lower end.
        assert_eq!(ClockBounds::Markers { lo: 5, hi: 3 }.offset(), 5);
        assert_eq!(
            ClockBounds::Markers { lo: 0, hi: 10 }.combine(ClockBounds::Markers { lo: 4, hi: 20 }),
            ClockBounds::Markers { lo: 4, hi: 10 }
        );
        assert_eq!(
            ClockBounds::Boot.combine(ClockBounds::Anchor(7)).offset(),
            7
        );
        assert_eq!(ClockBounds::Unknown.uncertainty(), None);
    }

    #[test]
    fn a_new_thread_on_every_line_stays_within_the_track_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t2.json");
        let mut text = String::new();
        for i in 0..MAX_TRACKS + 5 {
            text.push_str(&format!(
                "{{\"event\":\"data\",\"sid\":\"S-P00000001\",\"thread\":\"th{i}\",\"time\":\"2026-01-01T00:00:00.000001Z\",\"key\":\"k\",\"value\":\"v\"}}\n"
            ));
        }
        std::fs::write(&path, text).unwrap();
        let inputs = [TimelineInput {
            path,
            names: Names::empty(),
        }];
        let mut out = Vec::new();
        let report = convert_timeline(&inputs, TimelineFormat::Perfetto, &mut out).unwrap();
        assert_eq!(report.events, MAX_TRACKS as u64 + 5);
        assert_eq!(report.tracks, MAX_TRACKS + 1);
        assert_eq!(report.instants, MAX_TRACKS as u64 + 5);
    }

    /// Converts a Trace2 stream alone to Chrome JSON.
    fn chrome_of(text: &str) -> (TimelineReport, Value) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t2.json");
        std::fs::write(&path, text).unwrap();
        let inputs = [TimelineInput {
            path,
            names: Names::empty(),
        }];
        let mut out = Vec::new();
        let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut out).unwrap();
        (report, serde_json::from_slice(&out).unwrap())
    }

    fn line(thread: &str, us: u32, rest: &str) -> String {
        format!(
            "{{\"event\":{rest},\"sid\":\"S-P00000010\",\"thread\":\"{thread}\",\"time\":\"2026-01-01T00:00:00.{us:06}Z\"}}\n"
        )
    }

    #[test]
    fn a_thread_start_waits_for_its_thread_id() {
        let text = [
            line("main", 0, r#""cmd_name","name":"x""#),
            line("th01:w", 1, r#""thread_start""#),
            line("main", 2, r#""region_enter","label":"m""#),
            line(
                "th01:w",
                3,
                r#""data","category":"flightrec","key":"tid","value":"77""#,
            ),
            line("th01:w", 4, r#""region_enter","label":"r""#),
            line("th02:quiet", 5, r#""thread_start""#),
            line("th01:w", 6, r#""region_leave","label":"r""#),
            line("main", 7, r#""region_leave","label":"m""#),
            line("th01:w", 8, r#""thread_exit""#),
        ]
        .concat();
        let (report, doc) = chrome_of(&text);
        assert_eq!(report.events, 9);
        let events = doc["traceEvents"].as_array().unwrap();
        let tracks: Vec<(u64, &str)> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| {
                (
                    e["tid"].as_u64().unwrap(),
                    e["args"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        // Main, th01:w on thread 77 (its thread_start too), and th02:quiet,
        // which never said its id, on a track of its own at the end.
        assert_eq!(tracks.len(), 3, "{tracks:?}");
        assert_eq!(tracks[0], (16, "main"));
        assert_eq!(tracks[1], (77, "th01:w"));
        assert_eq!(tracks[2].1, "th02:quiet");
        let on = |name: &str| -> Vec<u64> {
            events
                .iter()
                .filter(|e| e["name"] == name && e["ph"] != "M")
                .map(|e| e["tid"].as_u64().unwrap())
                .collect()
        };
        assert_eq!(on("thread_start"), [77, tracks[2].0]);
        assert_eq!(on("r"), [77]);
        assert_eq!(on("thread_exit"), [77]);
        // Held for a moment, still at its own time.
        let start = events.iter().find(|e| e["name"] == "thread_start").unwrap();
        assert_eq!(start["ts"].as_f64(), Some(1.0));
    }

    #[test]
    fn counters_timers_and_numeric_data_are_counter_tracks() {
        let text = [
            line("main", 1, r#""data","category":"app","key":"n","value":"12""#),
            line("main", 2, r#""data","category":"app","key":"n","value":"-1.5""#),
            line("main", 3, r#""data","category":"app","key":"name","value":"12ab""#),
            line("main", 4, r#""data","category":"app","key":"hash","value":"inf""#),
            line("main", 5, r#""data_json","category":"app","key":"j","value":7"#),
            line("main", 6, r#""data_json","category":"app","key":"o","value":{"a":1}"#),
            line("th01:w", 7, r#""data","category":"flightrec","key":"tid","value":"77""#),
            line("th01:w", 8, r#""th_counter","category":"app","name":"items","count":3"#),
            line("th01:w", 9, r#""th_timer","category":"app","name":"step","intervals":2,"t_total":0.0025,"t_min":0.001,"t_max":0.0015"#),
            line("main", 10, r#""counter","category":"app","name":"items","count":3"#),
            line("main", 11, r#""timer","category":"app","name":"step","intervals":2,"t_total":0.0025,"t_min":0.001,"t_max":0.0015"#),
        ]
        .concat();
        let (report, doc) = chrome_of(&text);
        // Every event is still an instant with its fields.
        assert_eq!((report.events, report.instants), (11, 11));
        assert_eq!((report.counter_tracks, report.counter_values), (6, 7));
        assert_eq!(report.counter_values_dropped, 0);
        let counters: Vec<(&str, String, f64)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C")
            .map(|e| {
                let (k, v) = e["args"].as_object().unwrap().iter().next().unwrap();
                (e["name"].as_str().unwrap(), k.clone(), v.as_f64().unwrap())
            })
            .collect();
        let want: Vec<(&str, String, f64)> = vec![
            ("data app/n", "value".into(), 12.0),
            ("data app/n", "value".into(), -1.5),
            ("data_json app/j", "value".into(), 7.0),
            ("th_counter app/items (th01:w)", "count".into(), 3.0),
            ("th_timer app/step (th01:w)", "ns".into(), 2_500_000.0),
            ("counter app/items", "count".into(), 3.0),
            ("timer app/step", "ns".into(), 2_500_000.0),
        ];
        assert_eq!(counters, want);
    }

    #[test]
    fn numbers_in_data_values() {
        assert_eq!(number("42"), Some(CounterValue::Int(42)));
        assert_eq!(number("-7"), Some(CounterValue::Int(-7)));
        assert_eq!(number("+3"), Some(CounterValue::Int(3)));
        assert_eq!(number("0.25"), Some(CounterValue::Float(0.25)));
        assert_eq!(number("1e3"), Some(CounterValue::Float(1000.0)));
        assert_eq!(
            number("99999999999999999999"),
            Some(CounterValue::Float(1e20))
        );
        for text in [
            "", "-", "inf", "NaN", "infinity", "0x10", "12ab", "1.2.3", ".5", "1e999", " 1",
        ] {
            assert_eq!(number(text), None, "{text:?}");
        }
    }

    #[test]
    fn long_lines_are_cut_and_the_rest_read() {
        let text = format!("{}\nshort\nlast", "x".repeat(100));
        let mut r = io::BufReader::with_capacity(8, text.as_bytes());
        let mut line = Vec::new();
        assert_eq!(
            read_line_capped(&mut r, &mut line, 10).unwrap(),
            Some((false, 101))
        );
        assert_eq!(
            read_line_capped(&mut r, &mut line, 10).unwrap(),
            Some((true, 6))
        );
        assert_eq!(line, b"short");
        assert_eq!(
            read_line_capped(&mut r, &mut line, 10).unwrap(),
            Some((true, 4))
        );
        assert_eq!(line, b"last");
        assert_eq!(read_line_capped(&mut r, &mut line, 10).unwrap(), None);
    }
}
