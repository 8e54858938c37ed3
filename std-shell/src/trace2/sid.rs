//! Session ids in git's format (spec §7):
//! `[<parent sid>/]YYYYMMDDTHHMMSS.uuuuuuZ-H<8 hex of SHA-1(hostname)>-P<8 hex pid>`.

use flightrec_core::trace2::{write_sid_timestamp, LineBuf, WallTime};

/// A process's session id: its own component and the full id with the
/// inherited parent part.
///
/// ```
/// use flightrec::trace2::sid::SessionId;
/// let sid = SessionId::for_this_process(Some("20231114T221320.123456Z-H65cb7838-P00001234"));
/// assert_eq!(sid.own.len(), 43);
/// assert!(sid.own.ends_with(&format!("-P{:08x}", std::process::id())));
/// assert_eq!(sid.full, format!("20231114T221320.123456Z-H65cb7838-P00001234/{}", sid.own));
/// assert_eq!(sid.depth(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionId {
    /// This process's own component (43 bytes), the name of its file in a
    /// directory target.
    pub own: String,
    /// `<parent>/<own>`, or `own` without a parent.
    pub full: String,
}

impl SessionId {
    /// Builds the id from its inputs: the wall time, the host part
    /// ([`host_part`]), the pid and the inherited parent SID (used verbatim
    /// when non-empty, as git does).
    ///
    /// ```
    /// use flightrec::trace2::sid::{host_part, SessionId};
    /// use flightrec::core::trace2::WallTime;
    /// let host = host_part(Some(b"trace2-host"));
    /// let s = SessionId::new(WallTime::new(1_700_000_000, 123_456), &host, 0x1234, Some("outer/middle"));
    /// assert_eq!(s.own, "20231114T221320.123456Z-H65cb7838-P00001234");
    /// assert_eq!(s.full, format!("outer/middle/{}", s.own));
    /// assert_eq!(s.depth(), 2);
    /// ```
    pub fn new(time: WallTime, host: &str, pid: u32, parent: Option<&str>) -> Self {
        let mut ts = [0u8; 40];
        let mut l = LineBuf::new(&mut ts);
        // 40 bytes hold any timestamp write_sid_timestamp produces for an i64 year.
        let stamp = match write_sid_timestamp(&mut l, time) {
            Ok(()) => String::from_utf8_lossy(l.as_bytes()).into_owned(),
            Err(_) => String::from("00000000T000000.000000Z"),
        };
        let own = format!("{stamp}-{host}-P{pid:08x}");
        let full = match parent {
            Some(p) if !p.is_empty() => format!("{p}/{own}"),
            _ => own.clone(),
        };
        SessionId { own, full }
    }

    /// This process's id now: UTC wall clock, `gethostname()`, `getpid()` and
    /// the parent SID of the settings. Example on [`SessionId`].
    pub fn for_this_process(parent: Option<&str>) -> Self {
        SessionId::new(
            super::clock::wall_now(),
            &host_part(hostname().as_deref()),
            std::process::id(),
            parent,
        )
    }

    /// The process depth (`d<N>` in perf): the number of `/` in the full id.
    /// Example on [`SessionId::new`].
    pub fn depth(&self) -> u32 {
        flightrec_core::trace2::sid_depth(self.full.as_bytes())
    }
}

/// `H` + the first 8 lowercase hex digits of SHA-1 of `hostname`, or
/// `Localhost` when the host name is unknown.
///
/// ```
/// use flightrec::trace2::sid::host_part;
/// assert_eq!(host_part(Some(b"trace2-host")), "H65cb7838");
/// assert_eq!(host_part(None), "Localhost");
/// ```
pub fn host_part(hostname: Option<&[u8]>) -> String {
    match hostname {
        Some(h) => {
            let digest = sha1_smol::Sha1::from(h).digest().bytes();
            let mut s = String::with_capacity(9);
            s.push('H');
            for b in &digest[..4] {
                s.push_str(&format!("{b:02x}"));
            }
            s
        }
        None => String::from("Localhost"),
    }
}

/// The kernel host name (`gethostname()`), `None` when the call fails.
///
/// ```
/// use flightrec::trace2::sid::{host_part, hostname, SessionId};
/// let name = hostname().unwrap();
/// assert!(!name.is_empty() && !name.contains(&0));
/// // The `H` part of this process's session id comes from it.
/// let own = SessionId::for_this_process(None).own;
/// assert_eq!(own[24..33], host_part(Some(&name)));
/// ```
pub fn hostname() -> Option<Vec<u8>> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for `buf.len()` bytes; gethostname writes at
    // most that many and we read only up to the first NUL inside it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(buf[..len].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_component_has_git_shape() {
        let s = SessionId::for_this_process(None);
        assert_eq!(s.own.len(), 43, "{}", s.own);
        assert_eq!(s.full, s.own);
        assert_eq!(s.depth(), 0);
        assert!(s.own.ends_with(&format!("-P{:08x}", std::process::id())));
        let host = hostname().expect("gethostname works here");
        assert_eq!(&s.own[24..33], host_part(Some(&host)));
    }

    #[test]
    fn empty_parent_is_no_parent() {
        let s = SessionId::new(WallTime::new(0, 0), "Localhost", 1, Some(""));
        assert_eq!(s.full, "19700101T000000.000000Z-Localhost-P00000001");
    }
}
