//! Threads: [`thread_start`] names the calling thread's context and emits
//! `thread_start`; its guard emits `thread_exit` (after the thread's
//! `th_timer`/`th_counter`) and ends the context.

use std::marker::PhantomData;
use std::panic::Location;

use flightrec_core::trace2::{Event, Msg};

use super::emit::{emit_at, say_thread_id};
use super::region::{enter_raw, leave_raw};
use super::runtime::{runtime, Loc};
use super::stats::report_thread;
use super::tls::{end_thread, start_worker, with_ctx, with_existing_ctx};

/// Marks a thread's Trace2 lifetime: created by [`thread_start`], emits
/// `thread_exit` (after the thread's `th_timer`/`th_counter`) when dropped.
/// It stays on the thread that made it (it is not `Send`). Example on
/// [`thread_start`].
#[must_use = "the thread's Trace2 context ends when this guard is dropped"]
#[derive(Debug)]
pub struct ThreadGuard {
    kind: GuardKind,
    loc: &'static Location<'static>,
    _not_send: PhantomData<*const ()>,
}

#[derive(Debug, PartialEq, Eq)]
enum GuardKind {
    Inactive,
    /// `thread_start` on the main thread became a region.
    MainRegion,
    Worker,
}

/// Starts a thread's Trace2 context named `th<NN>:<base>` (git's
/// `trace2_thread_start`) and emits `thread_start`; the returned guard emits
/// `thread_exit` when dropped. On the main thread this becomes a region with
/// the message `thread-proc on main: <base>`, as in git.
///
/// ```
/// use flightrec::trace2::ThreadGuard;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let worker = std::thread::spawn(|| {
///     let _th: ThreadGuard = flightrec::trace2::thread_start("preload");
///     flightrec::trace2::data("index", "preloaded", "12"); // from th01:preload
/// }); // thread_exit when `_th` is dropped
/// worker.join().unwrap();
/// {
///     let _on_main = flightrec::trace2::thread_start("inline"); // a region on main
/// }
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let seen: Vec<String> = events
///     .iter()
///     .filter(|e| e["event"] != "version" && e["event"] != "start" && e["event"] != "cmd_ancestry")
///     .map(|e| format!("{} {}", e["thread"].as_str().unwrap(), e["event"].as_str().unwrap()))
///     .collect();
/// assert_eq!(
///     seen[..5],
///     [
///         "th01:preload thread_start",
///         "th01:preload data",
///         "th01:preload thread_exit",
///         "main region_enter",
///         "main region_leave",
///     ]
/// );
/// let enter = events.iter().find(|e| e["event"] == "region_enter").unwrap();
/// assert_eq!(enter["msg"], "thread-proc on main: inline");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn thread_start(base: &str) -> ThreadGuard {
    let loc = Location::caller();
    let inactive = ThreadGuard {
        kind: GuardKind::Inactive,
        loc,
        _not_send: PhantomData,
    };
    let Some(rt) = runtime() else { return inactive };
    let on_main = with_existing_ctx(|c| c.id == 0).unwrap_or(false);
    if on_main {
        let msg = format!("thread-proc on main: {base}");
        enter_raw(
            rt,
            Loc::from(loc),
            None,
            None,
            Some(Msg::Bytes(msg.as_bytes())),
            None,
        );
        return ThreadGuard {
            kind: GuardKind::MainRegion,
            ..inactive
        };
    }
    if !start_worker(rt, base.as_bytes()) {
        return inactive;
    }
    with_ctx(rt, |c| {
        let t = c.state.start;
        // `thread_start` first, as in git; then the thread's OS id when the
        // XRay runtime is on, before anything else of the thread.
        c.tid_unsaid = false;
        emit_at(rt, c, Loc::from(loc), 1, None, t, &Event::ThreadStart);
        say_thread_id(rt, c, Loc::from(loc));
    });
    ThreadGuard {
        kind: GuardKind::Worker,
        ..inactive
    }
}

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        let Some(rt) = runtime() else { return };
        let loc = Loc::from(self.loc);
        match self.kind {
            GuardKind::Inactive => {}
            GuardKind::MainRegion => {
                leave_raw(
                    rt,
                    loc,
                    None,
                    None,
                    Some(Msg::Bytes(b"thread-proc on main")),
                    None,
                );
            }
            GuardKind::Worker => {
                let ended = with_existing_ctx(|c| {
                    let now = rt.now();
                    c.state.regions.unwind();
                    report_thread(rt, c);
                    let t_rel = c.state.run_time(now);
                    emit_at(
                        rt,
                        c,
                        loc,
                        c.state.nesting(),
                        None,
                        now,
                        &Event::ThreadExit { t_rel },
                    );
                });
                if ended.is_some() {
                    end_thread(rt);
                }
            }
        }
    }
}
