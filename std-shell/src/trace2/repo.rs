//! Repositories: the [`Repo`] id that `def_repo`, regions and data carry,
//! and [`def_repo`], which hands the ids out.

use std::os::unix::ffi::OsStrExt;

use flightrec_core::trace2::Event;

use super::emit::emit_at;
use super::runtime::{runtime, Loc};
use super::tls::with_ctx;

/// A repository id for the events that carry one (`def_repo`, regions and
/// data). Git's `the_repository` before `def_repo` is id 0.
///
/// [`def_repo`] hands out ids 1, 2, ... while Trace2 is on, and
/// [`Repo::THE_REPOSITORY`] while it is off (every call is a no-op then).
///
/// ```
/// use flightrec::trace2::Repo;
/// assert_eq!(Repo::THE_REPOSITORY.id(), 0);
/// assert_eq!(Repo::new(2).id(), 2);
/// assert_eq!(Repo::new(0), Repo::THE_REPOSITORY);
/// // No target is set in this example's environment: Trace2 is off.
/// let repo = flightrec::trace2::def_repo(std::path::Path::new("/src/app"));
/// assert_eq!(repo, Repo::THE_REPOSITORY);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repo(i32);

impl Repo {
    /// Git's `the_repository` before it is defined: id 0 (`r0`). Example on
    /// [`Repo`].
    pub const THE_REPOSITORY: Repo = Repo(0);

    /// A repository with an explicit id. Example on [`Repo`].
    pub const fn new(id: i32) -> Self {
        Repo(id)
    }

    /// The id. Example on [`Repo`].
    pub const fn id(self) -> i32 {
        self.0
    }
}

/// `def_repo`: defines a repository by its worktree and returns its id
/// (1, 2, ... in order), for [`region_in`](super::region_in) and
/// [`data_in`](super::data_in). While Trace2 is off it returns [`Repo::THE_REPOSITORY`].
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let repo = flightrec::trace2::def_repo(std::path::Path::new("/src/app"));
/// let other = flightrec::trace2::def_repo(std::path::Path::new("/src/lib"));
/// assert_eq!((repo.id(), other.id()), (1, 2));
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// assert!(events.iter().any(|e| e["event"] == "def_repo" && e["repo"] == 1 && e["worktree"] == "/src/app"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn def_repo(worktree: &std::path::Path) -> Repo {
    let Some(rt) = runtime() else { return Repo(0) };
    let id = rt.shared().repo_ids.next_id() as i32;
    let loc = Loc::caller();
    with_ctx(rt, |c| {
        let n = c.state.nesting();
        emit_at(
            rt,
            c,
            loc,
            n,
            Some(id),
            rt.now(),
            &Event::DefRepo {
                worktree: worktree.as_os_str().as_bytes(),
            },
        )
    });
    Repo(id)
}
