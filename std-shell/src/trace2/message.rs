//! Messages: `printf` (free-form text) and `error` (a message with the format
//! it came from).

use std::fmt;

use flightrec_core::trace2::{Event, Msg};

use super::emit::emit;
use super::runtime::{runtime, Loc, Runtime};

/// `printf`: a free-form message (what [`printf!`](crate::printf) calls).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::printf(format_args!("refreshed {} entries", 12));
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\nrefreshed 12 entries\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn printf(msg: fmt::Arguments<'_>) {
    let Some(rt) = runtime() else { return };
    emit(
        rt,
        Loc::caller(),
        &Event::Printf {
            msg: Some(Msg::Fmt(msg)),
        },
    );
}

/// `error`: an error message with the format it came from (the event
/// target's `fmt`; what [`error!`](crate::error) calls).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::error_fmt("unknown option `{}'", format_args!("unknown option `{}'", "--bogus"));
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let error = events.iter().find(|e| e["event"] == "error").unwrap();
/// assert_eq!(error["msg"], "unknown option `--bogus'");
/// assert_eq!(error["fmt"], "unknown option `{}'");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn error_fmt(fmt: &str, msg: fmt::Arguments<'_>) {
    let Some(rt) = runtime() else { return };
    error_event(rt, Loc::caller(), fmt.as_bytes(), Msg::Fmt(msg));
}

/// `error` with a plain message (its format is the message itself).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2", &trace);
/// # std::env::set_var("MYAPP_TRACE2_BRIEF", "1");
/// // MYAPP_TRACE2 names the file `trace`; MYAPP_TRACE2_BRIEF=1 leaves out time and file:line.
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// flightrec::trace2::error("not a repository");
/// drop(t2);
/// let normal = std::fs::read_to_string(&trace)?;
/// assert!(normal.contains("\nerror not a repository\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn error(msg: &str) {
    let Some(rt) = runtime() else { return };
    error_event(
        rt,
        Loc::caller(),
        msg.as_bytes(),
        Msg::Bytes(msg.as_bytes()),
    );
}

pub(crate) fn error_event(rt: &Runtime, loc: Loc<'_>, fmt: &[u8], msg: Msg<'_>) {
    emit(rt, loc, &Event::Error { msg, fmt });
}
