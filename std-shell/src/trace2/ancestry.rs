//! `cmd_ancestry` on Linux: the names of the parent processes, nearest first,
//! read from `/proc/<pid>/stat` as git's `compat/linux/procinfo.c` does.

/// The names (`comm`) of the parent, grandparent, ... up to the process
/// whose parent pid is 0. Empty where `/proc` is not available. [`init`](super::init)
/// reports them as `cmd_ancestry`.
///
/// ```
/// let names = flightrec::trace2::ancestry();
/// # #[cfg(target_os = "linux")]
/// # {
/// // The nearest first: this process's parent.
/// let ppid = std::os::unix::process::parent_id();
/// let comm = std::fs::read(format!("/proc/{ppid}/comm"))?;
/// assert_eq!(names[0], comm.strip_suffix(b"\n").unwrap_or(&comm));
/// # }
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn ancestry() -> Vec<Vec<u8>> {
    let mut names = Vec::new();
    if !cfg!(target_os = "linux") {
        return names;
    }
    // SAFETY: getppid has no preconditions and cannot fail.
    let mut pid = unsafe { libc::getppid() };
    // A cycle cannot occur in a process tree, but a bound keeps a corrupt
    // /proc from looping forever.
    for _ in 0..4096 {
        if pid <= 0 {
            break;
        }
        let Some((name, ppid)) = stat(pid) else { break };
        names.push(name);
        pid = ppid;
    }
    names
}

/// `comm` and parent pid from `/proc/<pid>/stat`.
fn stat(pid: libc::pid_t) -> Option<(Vec<u8>, libc::pid_t)> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `pid (comm) state ppid ...`; `comm` may hold spaces and `)`, so it
/// ends at the last `)`.
pub(crate) fn parse_stat(text: &[u8]) -> Option<(Vec<u8>, libc::pid_t)> {
    let open = text.iter().position(|&b| b == b'(')?;
    let close = text.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let name = text[open + 1..close].to_vec();
    let rest = std::str::from_utf8(&text[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((name, ppid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parens() {
        assert_eq!(
            parse_stat(b"42 (tmux: server (x)) S 7 42 42 0"),
            Some((b"tmux: server (x)".to_vec(), 7))
        );
        assert_eq!(parse_stat(b"garbage"), None);
    }

    #[test]
    fn first_entry_is_the_parent() {
        let names = ancestry();
        let ppid = unsafe { libc::getppid() };
        let comm = std::fs::read(format!("/proc/{ppid}/comm")).unwrap();
        assert_eq!(names[0], comm.strip_suffix(b"\n").unwrap_or(&comm));
    }
}
