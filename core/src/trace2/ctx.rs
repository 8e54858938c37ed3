//! The per-line inputs every formatter needs besides the event itself.

use super::event::Micros;
use super::time::WallTime;

/// Common inputs of one Trace2 line: when, where, which thread/process, at which
/// region nesting and repository.
///
/// Building one is cheap (it only borrows); a caller typically keeps the
/// process-wide parts (`sid`, `sid_depth`, `utc_offset_secs`) and fills in the
/// rest per event.
///
/// ```
/// use flightrec_core::trace2::{LineCtx, WallTime};
/// let ctx = LineCtx {
///     time: WallTime::new(1_700_000_000, 123_456),
///     file: b"git.c",
///     line: 480,
///     ..LineCtx::new(b"20231114T221320.123456Z-H65cb7838-P00001234", b"main")
/// };
/// assert_eq!(ctx.nesting, 1);
/// assert_eq!(ctx.sid_depth, 0);
///
/// // A child process's worker thread: one `/` in the sid, depth 1.
/// let child = LineCtx::new(b"parent-sid/child-sid", b"th01:preload");
/// assert_eq!((child.sid_depth, child.nesting, child.repo, child.t_abs), (1, 1, None, 0));
/// assert_eq!((child.time, child.utc_offset_secs, child.file), (WallTime::new(0, 0), 0, &b""[..]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LineCtx<'a> {
    /// Wall-clock time of the event (UTC).
    pub time: WallTime,
    /// Offset of local time from UTC in seconds (east positive), for the
    /// `HH:MM:SS.uuuuuu` prefix of the normal and perf targets.
    pub utc_offset_secs: i32,
    /// Source file of the call site; empty for none.
    pub file: &'a [u8],
    /// Source line of the call site.
    pub line: u32,
    /// Thread name (`main`, `th01:worker`; see [`ThreadName`](super::ThreadName)).
    pub thread: &'a [u8],
    /// Full session id, parents included.
    pub sid: &'a [u8],
    /// Process depth (`d<N>` in perf): the number of `/` in `sid`.
    pub sid_depth: u32,
    /// Open regions of the thread at format time (`nr_open_regions`, 1 at top level).
    pub nesting: u32,
    /// Repository id, for the events that carry one (`def_repo`, regions, data).
    pub repo: Option<i32>,
    /// Time since process start (`t_abs`).
    pub t_abs: Micros,
}

impl<'a> LineCtx<'a> {
    /// A context for `sid` and `thread` at the epoch, top level, no file, no repo,
    /// UTC, `sid_depth` computed from `sid`. Example on [`LineCtx`].
    pub fn new(sid: &'a [u8], thread: &'a [u8]) -> Self {
        LineCtx {
            time: WallTime::new(0, 0),
            utc_offset_secs: 0,
            file: b"",
            line: 0,
            thread,
            sid,
            sid_depth: sid_depth(sid),
            nesting: 1,
            repo: None,
            t_abs: 0,
        }
    }
}

/// The process depth of a session id: one more than the number of `/` in the
/// inherited parent SID, i.e. the number of `/` in the full SID.
///
/// ```
/// use flightrec_core::trace2::sid_depth;
/// assert_eq!(sid_depth(b"outer-sid/middle-sid/own"), 2);
/// assert_eq!(sid_depth(b"own"), 0);
/// ```
pub fn sid_depth(sid: &[u8]) -> u32 {
    sid.iter().filter(|&&b| b == b'/').count() as u32
}
