//! The timeline's limits: what bounds its memory whatever the inputs say.

/// Longest Trace2 line read (1 MiB); a longer one is reported and skipped.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{TimelineInput, MAX_TRACE2_LINE};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// let long = format!(
///     r#"{{"event":"data","sid":"S-P1","key":"k","value":"{}"}}"#,
///     "x".repeat(MAX_TRACE2_LINE)
/// );
/// let short = r#"{"event":"exit","sid":"S-P1","time":"1970-01-01T00:00:02.000000Z","code":0}"#;
/// std::fs::write(&t2, format!("{long}\n{short}\n")).unwrap();
/// let inputs = [TimelineInput { path: t2, names: Names::empty() }];
/// let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut Vec::new()).unwrap();
/// // The long line is reported at its offset and skipped; the next one is read.
/// assert_eq!(report.problems.len(), 1);
/// assert_eq!(report.problems[0].offset, Some(0));
/// assert!(report.problems[0].reason.contains(&format!("longer than {MAX_TRACE2_LINE} bytes")));
/// assert_eq!((report.events, report.instants), (1, 1));
/// ```
pub const MAX_TRACE2_LINE: usize = 1 << 20;

/// Buffers of an FDR file looked at for its clock offset.
pub(super) const CLOCK_SAMPLES: usize = 64;

/// Events between two page releases of an FDR input.
pub(super) const RELEASE_EVERY_EVENTS: u64 = 1 << 12;

/// Tracks a timeline makes; events of further threads go to one track named
/// `(more threads)` (a hostile stream naming a new thread on every line must not
/// grow memory without bound).
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{TimelineInput, MAX_TRACKS};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// // A data event from a new thread on every line, two more threads than the limit.
/// let text: String = (0..MAX_TRACKS + 2)
///     .map(|i| format!(
///         "{{\"event\":\"data\",\"sid\":\"S-P1\",\"thread\":\"th{i}\",\"time\":\"1970-01-01T00:00:01.000000Z\",\"key\":\"k\",\"value\":\"v\"}}\n"
///     ))
///     .collect();
/// std::fs::write(&t2, text).unwrap();
/// let inputs = [TimelineInput { path: t2, names: Names::empty() }];
/// let mut json = Vec::new();
/// let report = convert_timeline(&inputs, TimelineFormat::Chrome, &mut json).unwrap();
/// // Every event is kept; the last two threads share the overflow track.
/// assert_eq!((report.events, report.instants), (MAX_TRACKS as u64 + 2, MAX_TRACKS as u64 + 2));
/// assert_eq!(report.tracks, MAX_TRACKS + 1);
/// // Counted, and said in the output's metadata.
/// assert_eq!(report.overflow_events, 2);
/// let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
/// assert_eq!(doc["metadata"]["flightrec"]["events-on-the-more-threads-track"], 2);
/// let overflow = doc["traceEvents"]
///     .as_array()
///     .unwrap()
///     .iter()
///     .filter(|e| e["name"] == "thread_name" && e["args"]["name"] == "(more threads)")
///     .count();
/// assert_eq!(overflow, 1);
/// ```
pub const MAX_TRACKS: usize = 10_000;

/// Counter tracks a timeline makes; values for further counters are left out
/// and counted ([`TimelineReport::counter_values_dropped`](super::TimelineReport::counter_values_dropped)).
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::convert::{convert_timeline, TimelineFormat};
/// use flightrec_host::timeline::{TimelineInput, MAX_COUNTER_TRACKS};
///
/// let dir = tempfile::tempdir().unwrap();
/// let t2 = dir.path().join("t2.json");
/// // A numeric data value under a new key on every line, two more keys than the limit.
/// let text: String = (0..MAX_COUNTER_TRACKS + 2)
///     .map(|i| format!(
///         "{{\"event\":\"data\",\"sid\":\"S-P1\",\"time\":\"1970-01-01T00:00:01.000000Z\",\"category\":\"c\",\"key\":\"k{i}\",\"value\":\"1\"}}\n"
///     ))
///     .collect();
/// std::fs::write(&t2, text).unwrap();
/// let inputs = [TimelineInput { path: t2, names: Names::empty() }];
/// let report = convert_timeline(&inputs, TimelineFormat::Perfetto, &mut Vec::new()).unwrap();
/// assert_eq!((report.counter_tracks, report.counter_values), (MAX_COUNTER_TRACKS, MAX_COUNTER_TRACKS as u64));
/// assert_eq!(report.counter_values_dropped, 2);
/// // Every event is still an instant.
/// assert_eq!(report.instants, MAX_COUNTER_TRACKS as u64 + 2);
/// ```
pub const MAX_COUNTER_TRACKS: usize = 10_000;

/// Trace2 processes (session ids) remembered per stream; beyond it, the
/// memory starts again (their `t_abs` anchors are found again from the next
/// event with a `time`).
pub(super) const MAX_TRACE2_PROCS: usize = 4096;

/// Names cached per FDR input before the cache starts again.
pub(super) const MAX_CACHED_NAMES: usize = 1 << 16;
