//! The runtime's outputs: the destinations the settings name, opened in git's
//! order (normal, perf, event), each with the line format of its target.
//!
//! [`Destination::open`] lives here rather than in [`target`](super::target):
//! the settings ([`config`](super::config)) read the target grammar, so the
//! destinations must not import the settings back.

use std::sync::Arc;

use flightrec_core::trace2::{Format, Target as Kind};

use super::config::Trace2Config;
use super::target::{Destination, OpenOutcome, OpenParams};
use super::warning::warn;

/// One open destination with its line format.
#[derive(Debug)]
pub(crate) struct Output {
    /// Shared with the background writer, when there is one.
    pub dest: Arc<Destination>,
    pub format: Format,
}

/// Opens the destinations `cfg` names, in order normal, perf, event, printing
/// git's warning for each one that fails; the ones that are off or failed are
/// left out.
pub(crate) fn open_outputs(cfg: &Trace2Config, own_sid: &str) -> Vec<Output> {
    let mut outputs = Vec::new();
    for (kind, setting) in [
        (Kind::Normal, &cfg.normal),
        (Kind::Perf, &cfg.perf),
        (Kind::Event, &cfg.event),
    ] {
        match Destination::open(kind, cfg, own_sid) {
            Ok(dest) => outputs.push(Output {
                dest: Arc::new(dest),
                format: Format {
                    target: kind,
                    brief: setting.brief,
                    event_nesting: cfg.event_nesting,
                },
            }),
            Err(OpenOutcome::Failed { warning: Some(w) }) => warn(&w),
            Err(_) => {}
        }
    }
    outputs
}

impl Destination {
    /// Opens the destination of target `kind` from `cfg`. `own_sid` is this
    /// process's session id (its last `/` component names the file of a
    /// directory target; the whole id may be passed).
    ///
    /// ```
    /// use flightrec::core::trace2::Target;
    /// use flightrec::trace2::config::Trace2Config;
    /// use flightrec::trace2::target::{Destination, OpenOutcome, SocketType};
    /// use std::ffi::OsString;
    /// use std::os::unix::net::UnixDatagram;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let sock = dir.path().join("t2.sock");
    /// let server = UnixDatagram::bind(&sock).unwrap();
    /// let value = OsString::from(format!("af_unix:{}", sock.display()));
    /// let cfg = Trace2Config::load_from("MYAPP_TRACE2", |name| {
    ///     (name == "MYAPP_TRACE2_EVENT").then(|| value.clone())
    /// });
    /// // `af_unix:` tries a stream first, then a datagram socket.
    /// let dest = Destination::open(Target::Event, &cfg, "sid").unwrap();
    /// assert_eq!(dest.socket_type(), Some(SocketType::Dgram));
    /// assert_eq!(dest.var(), "MYAPP_TRACE2_EVENT");
    /// assert_eq!(dest.write_line(b"{}\n"), None);
    /// let mut got = [0u8; 8];
    /// assert_eq!(server.recv(&mut got).unwrap(), 3);
    /// assert_eq!(Destination::open(Target::Perf, &cfg, "sid").unwrap_err(), OpenOutcome::Off);
    /// ```
    pub fn open(kind: Kind, cfg: &Trace2Config, own_sid: &str) -> Result<Self, OpenOutcome> {
        let Some(value) = cfg.setting(kind).value.as_deref() else {
            return Err(OpenOutcome::Off);
        };
        let var = cfg.var_name(kind);
        Self::open_value(
            value,
            OpenParams {
                kind,
                var: &var,
                dst_debug: cfg.dst_debug,
                max_files: cfg.max_files,
                sid: own_sid,
            },
        )
    }
}
