//! Events at a source location given by the caller rather than taken from
//! `#[track_caller]`: what an adaptor from another instrumentation API (the
//! `tracing` layer, whose spans and events carry their own `file:line`), or a
//! future that enters a region on each poll at the place it was made.
// The future adaptors use only the regions; the `tracing` layer uses all.
#![cfg_attr(not(feature = "tracing"), allow(dead_code))]

use flightrec_core::trace2::{Event, Msg};

use super::emit::{data_written_in, emit, emit_at};
use super::region::{enter_raw, leave_raw};
use super::runtime::{runtime, source_path, Loc};
use super::tls::with_ctx;

/// A source location: the file as the compiler names it and the line (0 when
/// unknown; Trace2 then prints the file alone, as git does).
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a> {
    pub file: Option<&'a str>,
    pub line: Option<u32>,
}

impl<'a> At<'a> {
    fn loc(self) -> Loc<'a> {
        Loc {
            file: self.file.map_or("", source_path),
            line: self.line.unwrap_or(0),
        }
    }
}

/// `region_enter` (one nesting level deeper on this thread); `false` when
/// Trace2 is off (nothing to leave then).
pub(crate) fn region_enter(at: At<'_>, category: &str, label: &str, msg: Option<&[u8]>) -> bool {
    let Some(rt) = runtime() else { return false };
    enter_raw(
        rt,
        at.loc(),
        Some(category.as_bytes()),
        Some(label.as_bytes()),
        msg.map(Msg::Bytes),
        None,
    );
    true
}

/// `region_leave` of this thread's innermost region.
pub(crate) fn region_leave(at: At<'_>, category: &str, label: &str) {
    let Some(rt) = runtime() else { return };
    leave_raw(
        rt,
        at.loc(),
        Some(category.as_bytes()),
        Some(label.as_bytes()),
        None,
        None,
    );
}

/// Whether a [`data`] event on this thread now may be written (`false` when
/// Trace2 is off, or every target skips data at this thread's nesting: the
/// caller need not build its value).
pub(crate) fn data_written_here() -> bool {
    let Some(rt) = runtime() else { return false };
    with_ctx(rt, |c| data_written_in(rt, c)).unwrap_or(false)
}

/// `data` (`json == false`) or `data_json` (`value` is compact JSON text).
pub(crate) fn data(at: At<'_>, category: &str, key: &str, value: &[u8], json: bool) {
    let Some(rt) = runtime() else { return };
    with_ctx(rt, |c| {
        let now = rt.now();
        let t_rel = c.state.data_t_rel(now);
        let n = c.state.nesting();
        let (category, key) = (category.as_bytes(), key.as_bytes());
        let ev = if json {
            Event::DataJson {
                t_rel,
                category,
                key,
                value,
            }
        } else {
            Event::Data {
                t_rel,
                category,
                key,
                value,
            }
        };
        emit_at(rt, c, at.loc(), n, None, now, &ev);
    });
}

/// `printf`.
pub(crate) fn printf(at: At<'_>, msg: &[u8]) {
    let Some(rt) = runtime() else { return };
    emit(
        rt,
        at.loc(),
        &Event::Printf {
            msg: Some(Msg::Bytes(msg)),
        },
    );
}

/// `error` with its format (the event target's `fmt`).
pub(crate) fn error(at: At<'_>, fmt: &[u8], msg: &[u8]) {
    let Some(rt) = runtime() else { return };
    emit(
        rt,
        at.loc(),
        &Event::Error {
            msg: Msg::Bytes(msg),
            fmt,
        },
    );
}
