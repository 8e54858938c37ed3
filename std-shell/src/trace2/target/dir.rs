//! Directory targets: one file per process, named after the last component of
//! its session id, with git's collision suffixes and the `maxFiles` limit.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The file that marks a directory as full; while it exists no process writes
/// a new trace file there.
///
/// ```
/// use flightrec::core::trace2::Target;
/// use flightrec::trace2::target::{Destination, OpenOutcome, OpenParams, DISCARD_SENTINEL};
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join(DISCARD_SENTINEL), "").unwrap();
/// let params = OpenParams {
///     kind: Target::Event,
///     var: "GIT_TRACE2_EVENT",
///     dst_debug: true,
///     max_files: 100,
///     sid: "sid",
/// };
/// let warning = format!(
///     "trace2: not opening GIT_TRACE2_EVENT trace file due to too many files in target directory {}",
///     dir.path().display()
/// );
/// assert_eq!(
///     Destination::open_value(dir.path().as_os_str(), params).unwrap_err(),
///     OpenOutcome::Failed { warning: Some(warning) }
/// );
/// ```
pub const DISCARD_SENTINEL: &str = "git-trace2-discard";

/// Attempts per process: `<sid>`, `<sid>.1` ... `<sid>.9`.
///
/// ```
/// use flightrec::core::trace2::Target;
/// use flightrec::trace2::target::{Destination, OpenParams, MAX_ATTEMPTS};
///
/// let dir = tempfile::tempdir().unwrap();
/// let params = OpenParams {
///     kind: Target::Normal,
///     var: "GIT_TRACE2",
///     dst_debug: false,
///     max_files: 0,
///     sid: "sid",
/// };
/// let open = || Destination::open_value(dir.path().as_os_str(), params);
/// let names: Vec<_> = (0..MAX_ATTEMPTS).map(|_| open().unwrap().path().unwrap().to_owned()).collect();
/// assert_eq!(names[0], dir.path().join("sid"));
/// assert_eq!(names[9], dir.path().join("sid.9"));
/// assert!(open().is_err()); // the eleventh process of this id gives up
/// ```
pub const MAX_ATTEMPTS: u32 = 10;

/// A file opened in a directory target.
#[derive(Debug)]
pub(crate) struct DirFile {
    pub(crate) file: File,
    pub(crate) path: PathBuf,
    /// The file is the discard sentinel: the event target must say
    /// `too_many_files` after `version`.
    pub(crate) discard: bool,
}

/// Why no file was opened.
#[derive(Debug)]
pub(crate) enum DirError {
    /// The discard sentinel exists already.
    TooManyFiles,
    /// No file could be created; `base` is the path without a `.N` suffix and
    /// `error` the last attempt's error.
    Open { base: PathBuf, error: io::Error },
}

/// `dir` + (`/` unless it ends in one) + `name`, byte for byte as git joins.
fn join(dir: &Path, name: &OsStr) -> PathBuf {
    let mut p = dir.as_os_str().as_bytes().to_vec();
    if p.last() != Some(&b'/') {
        p.push(b'/');
    }
    p.extend_from_slice(name.as_bytes());
    PathBuf::from(OsString::from_vec(p))
}

/// The last `/`-separated component of a session id (a process's own part).
pub(crate) fn own_component(sid: &str) -> &str {
    sid.rsplit('/').next().unwrap_or(sid)
}

/// Opens this process's file in `dir` (an existing directory), as git's
/// `tr2_dst_try_auto_path` does.
pub(crate) fn open_in(dir: &Path, own_sid: &str, max_files: u32) -> Result<DirFile, DirError> {
    let base = join(dir, OsStr::new(own_component(own_sid)));
    if max_files > 0 {
        let sentinel = join(dir, OsStr::new(DISCARD_SENTINEL));
        if std::fs::metadata(&sentinel).is_ok() {
            return Err(DirError::TooManyFiles);
        }
        if count_entries(dir, max_files) >= max_files {
            return match create_new(&sentinel) {
                Ok(file) => Ok(DirFile {
                    file,
                    path: sentinel,
                    discard: true,
                }),
                Err(error) => Err(DirError::Open { base, error }),
            };
        }
    }
    let mut last_error = None;
    for attempt in 0..MAX_ATTEMPTS {
        let path = if attempt == 0 {
            base.clone()
        } else {
            let mut p = base.clone().into_os_string();
            p.push(format!(".{attempt}"));
            PathBuf::from(p)
        };
        match create_new(&path) {
            Ok(file) => {
                return Ok(DirFile {
                    file,
                    path,
                    discard: false,
                })
            }
            Err(e) => last_error = Some(e),
        }
    }
    Err(DirError::Open {
        base,
        error: last_error.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)),
    })
}

/// `readdir()` entries counted as git counts them, `.` and `..` included,
/// stopping at `limit`. `read_dir` leaves out `.` and `..`, which every
/// directory has, so they are added; an unreadable directory counts 0.
fn count_entries(dir: &Path, limit: u32) -> u32 {
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let mut n = 2u32;
            for _ in entries {
                if n >= limit {
                    break;
                }
                n += 1;
            }
            n.min(limit)
        }
        Err(_) => 0,
    }
}

/// `open(O_WRONLY|O_CREAT|O_EXCL, 0666)`, plus `O_APPEND` so lines from
/// several threads (or a forked copy sharing the descriptor) never overlap.
fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o666)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_like_git() {
        assert_eq!(
            join(Path::new("/d"), OsStr::new("x")),
            PathBuf::from("/d/x")
        );
        assert_eq!(
            join(Path::new("/d/"), OsStr::new("x")),
            PathBuf::from("/d/x")
        );
        assert_eq!(own_component("a/b/c"), "c");
        assert_eq!(own_component("c"), "c");
    }

    #[test]
    fn counts_dot_and_dotdot() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(count_entries(d.path(), 100), 2);
        for i in 0..3 {
            File::create(d.path().join(format!("f{i}"))).unwrap();
        }
        assert_eq!(count_entries(d.path(), 100), 5);
        assert_eq!(count_entries(d.path(), 4), 4);
        assert_eq!(count_entries(&d.path().join("missing"), 5), 0);
    }
}
