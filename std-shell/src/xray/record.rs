//! Recording: function guards, call sites and events.
//!
//! Every call first loads the runtime state once (relaxed) and returns unless the
//! runtime is recording, so instrumentation left in a program costs one load and a
//! branch while XRay is off. When recording, a call reads the thread's ring pointer
//! from a thread-local (taking a ring on the thread's first record), marks the ring
//! busy, reads the clock and calls the core's [`Recorder`] directly.

use std::marker::PhantomData;
use std::sync::atomic::{compiler_fence, Ordering};
use std::sync::OnceLock;

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::ring::Recorder;
use flightrec_core::fdr::{FunctionAction, FunctionId};

use super::claim::{claim_ring, current, note_paused_drop};
use super::clock;
use super::state::{PAUSED, RECORDING, STATE};

/// Runs `f` on this thread's recorder with the current time, if recording.
#[inline(always)]
fn with_recorder(f: impl FnOnce(&mut Recorder<'static, 'static>, Timestamp)) {
    let s = STATE.load(Ordering::Relaxed);
    if s != RECORDING {
        if s == PAUSED {
            note_paused_drop();
        }
        return;
    }
    record_on_ring(f);
}

#[inline(always)]
fn record_on_ring(f: impl FnOnce(&mut Recorder<'static, 'static>, Timestamp)) {
    let ring = match current() {
        Some(r) => r,
        None => match claim_ring() {
            Some(r) => r,
            None => return,
        },
    };
    if ring.busy.load(Ordering::Relaxed) {
        // A signal handler interrupted a record of this thread and records itself.
        note_paused_drop();
        return;
    }
    ring.busy.store(true, Ordering::Relaxed);
    // The store of `busy` must stay before the second state load (pause protocol in
    // `state`); readers make it visible to themselves with a process-wide barrier.
    compiler_fence(Ordering::SeqCst);
    if STATE.load(Ordering::Relaxed) == RECORDING {
        // SAFETY: this thread owns the ring and recording is not paused, so no one
        // else touches the recorder until `busy` is cleared.
        if let Some(rec) = unsafe { ring.recorder() } {
            f(rec, clock::now());
        }
    } else {
        note_paused_drop();
    }
    ring.busy.store(false, Ordering::Release);
}

/// Records a function record only when that needs no call out of line: the
/// runtime is recording, this thread already has its ring, and the record fits
/// the current buffer with no metadata record first (the steady state). `false`:
/// nothing was recorded or counted; record it with [`record_enter`],
/// [`record_exit`] or [`record_tail_exit`], which handle every other case.
///
/// For callers that must not call anything on their fast path: the XRay sled
/// trampolines of `flightrec-sleds` call this first and save the vector
/// registers only when it returns `false`.
///
/// ```
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::{record_enter, try_record, Config};
/// let f = FunctionId::new(3).unwrap();
/// // Not recording: nothing to do on the fast path.
/// assert!(!try_record(FunctionAction::Enter, f));
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// // The thread's first record takes a ring: the full path.
/// if !try_record(FunctionAction::Enter, f) {
///     record_enter(f);
/// }
/// // Then the fast path records.
/// assert!(try_record(FunctionAction::Exit, f));
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// assert_eq!(flightrec::core::fdr::decoder::verify(&trace)?.function_records, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[inline(always)]
pub fn try_record(action: FunctionAction, id: FunctionId) -> bool {
    if STATE.load(Ordering::Relaxed) != RECORDING {
        return false;
    }
    let Some(ring) = current() else {
        return false;
    };
    if ring.busy.load(Ordering::Relaxed) {
        return false;
    }
    // The pause protocol of `record_on_ring`: busy, then the state again.
    ring.busy.store(true, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    let done = STATE.load(Ordering::Relaxed) == RECORDING
        // SAFETY: as in `record_on_ring`: this thread owns the ring and recording
        // is not paused, so no one else touches the recorder until `busy` is cleared.
        && unsafe { ring.recorder() }.is_some_and(|rec| rec.try_function(action, id, clock::now()));
    ring.busy.store(false, Ordering::Release);
    done
}

/// `true` while the runtime records: one relaxed load.
///
/// ```
/// // Nothing initialised the runtime in this doctest.
/// assert!(!flightrec::xray::is_recording());
/// ```
#[inline(always)]
pub fn is_recording() -> bool {
    STATE.load(Ordering::Relaxed) == RECORDING
}

/// Records a function entry (no guard: pair it with [`record_exit`]).
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::{record_enter, record_exit, record_tail_exit, Config};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// let (outer, inner) = (FunctionId::new(1).unwrap(), FunctionId::new(2).unwrap());
/// record_enter(outer);
/// record_enter(inner);
/// record_tail_exit(inner); // `inner` ended by tail-calling another function
/// record_exit(outer);
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let functions: Vec<(FunctionAction, u32)> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// use FunctionAction::*;
/// assert_eq!(functions, [(Enter, 1), (Enter, 2), (TailExit, 2), (Exit, 1)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[inline]
pub fn record_enter(id: FunctionId) {
    with_recorder(|r, ts| {
        let _ = r.function(FunctionAction::Enter, id, ts);
    });
}

/// Records a function exit. Example on [`record_enter`].
#[inline]
pub fn record_exit(id: FunctionId) {
    with_recorder(|r, ts| {
        let _ = r.function(FunctionAction::Exit, id, ts);
    });
}

/// Records an exit through a tail call (the caller's frame ends by calling another
/// function). Example on [`record_enter`].
#[inline]
pub fn record_tail_exit(id: FunctionId) {
    with_recorder(|r, ts| {
        let _ = r.function(FunctionAction::TailExit, id, ts);
    });
}

/// Records a function entry with one argument (an "enter with arg" record and a
/// call-argument record; no guard: pair it with [`record_exit`]). What an XRay
/// sled of a `xray_log_args(1)` function records.
///
/// ```
/// use flightrec::core::fdr::decoder::Decoder;
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::{record_enter_with_arg, record_exit, Config};
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// let f = FunctionId::new(5).unwrap();
/// record_enter_with_arg(f, 99);
/// record_exit(f);
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let records: Vec<Record> = Decoder::new(&trace)?.map(|d| d.unwrap().record).collect();
/// let at = records
///     .iter()
///     .position(|r| matches!(r, Record::Function { action: FunctionAction::EnterArg, .. }))
///     .unwrap();
/// assert_eq!(records[at + 1], Record::CallArgument { value: 99 });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[inline]
pub fn record_enter_with_arg(id: FunctionId, arg: u64) {
    with_recorder(|r, ts| {
        let _ = r.enter_with_args(id, ts, &[arg]);
    });
}

/// Sentinel id of an inactive guard (outside the 28-bit id range).
const INACTIVE: u32 = u32::MAX;

/// Records the function's exit when dropped. Made by [`enter`], [`enter_with_arg`],
/// [`CallSite::enter`] and the macros.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::{Config, FunctionGuard};
/// let f = FunctionId::new(7).unwrap();
/// // While the runtime is not recording, guards are inactive and record nothing.
/// let idle: FunctionGuard = flightrec::xray::enter(f);
/// assert!(!idle.is_active());
/// assert!(!FunctionGuard::INACTIVE.is_active());
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// let guard = flightrec::xray::enter(f);
/// assert!(guard.is_active());
/// drop(guard); // records the exit
/// drop(idle); // records nothing
/// let late = flightrec::xray::enter(f);
/// flightrec::xray::stop();
/// drop(late); // recording stopped since its entry: no exit, and no loss counted
/// let report = flightrec::xray::shutdown()?;
/// assert_eq!(report.stats.records_dropped, 0);
/// let trace = std::fs::read(report.path.unwrap())?;
/// assert_eq!(flightrec::core::fdr::decoder::verify(&trace)?.function_records, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the function exit is recorded when the guard is dropped"]
#[derive(Debug)]
pub struct FunctionGuard {
    id: u32,
    /// Calls nest per thread: the guard stays on the thread that entered
    /// (held across an `.await` it would make a future `!Send`).
    _not_send: PhantomData<*const ()>,
}

impl FunctionGuard {
    /// A guard that records nothing. Example on [`FunctionGuard`].
    pub const INACTIVE: FunctionGuard = FunctionGuard {
        id: INACTIVE,
        _not_send: PhantomData,
    };

    /// Whether dropping the guard records an exit. Example on [`FunctionGuard`].
    pub fn is_active(&self) -> bool {
        self.id != INACTIVE
    }
}

impl Drop for FunctionGuard {
    #[inline]
    fn drop(&mut self) {
        if self.id != INACTIVE {
            if let Ok(id) = FunctionId::new(self.id) {
                record_guard_exit(id);
            }
        }
    }
}

/// The exit of an active guard. Its entry was recorded (or attempted) while
/// recording, so this thread almost always has a ring already.
#[inline(always)]
fn record_guard_exit(id: FunctionId) {
    record_function_on_ring(FunctionAction::Exit, id);
}

/// A function record for a caller that found the runtime recording already
/// (a guard's exit, the `tracing` layer's span enter and exit): the thread's
/// ring is looked up first and the state read only once, after setting `busy`,
/// which the pause protocol needs anyway; the record is written inline. Only
/// a thread without a ring takes [`with_recorder`]'s path, out of line. A
/// pause drops the record and counts it; a runtime that stopped recording
/// since the caller's check records nothing and counts nothing. Written out
/// rather than as `record_on_ring`'s protocol with a closure: that measured 14
/// more instructions per span enter+exit in the layer (`cargo bench -p
/// flightrec-benches --bench instructions`, `span_layer_fdr` 356 -> 370).
#[inline(always)]
pub(crate) fn record_function_on_ring(action: FunctionAction, id: FunctionId) {
    let Some(ring) = current() else {
        record_function_first(action, id);
        return;
    };
    if ring.busy.load(Ordering::Relaxed) {
        // A signal handler interrupted a record of this thread and records itself.
        note_paused_drop();
        return;
    }
    ring.busy.store(true, Ordering::Relaxed);
    // As in `record_on_ring`: the store of `busy` stays before the state load.
    compiler_fence(Ordering::SeqCst);
    match STATE.load(Ordering::Relaxed) {
        RECORDING => {
            // SAFETY: this thread owns the ring and recording is not paused, so no
            // one else touches the recorder until `busy` is cleared.
            if let Some(rec) = unsafe { ring.recorder() } {
                let _ = rec.function(action, id, clock::now());
            }
        }
        // Counted like `with_recorder` counts it: a pause drops the record, a
        // runtime that stopped recording does not count it.
        PAUSED => note_paused_drop(),
        _ => {}
    }
    ring.busy.store(false, Ordering::Release);
}

/// [`record_function_on_ring`] on a thread without a ring yet: takes one.
#[cold]
#[inline(never)]
fn record_function_first(action: FunctionAction, id: FunctionId) {
    with_recorder(|r, ts| {
        let _ = r.function(action, id, ts);
    });
}

/// Records a function entry; the returned guard records the exit.
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::Config;
/// fn parse(depth: u32) {
///     let _f = flightrec::xray::enter(FunctionId::new(10 + depth).unwrap());
///     if depth < 2 {
///         parse(depth + 1);
///     }
/// }
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// parse(0);
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let functions: Vec<(FunctionAction, u32)> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// use FunctionAction::*;
/// assert_eq!(functions, [(Enter, 10), (Enter, 11), (Enter, 12), (Exit, 12), (Exit, 11), (Exit, 10)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[inline]
pub fn enter(id: FunctionId) -> FunctionGuard {
    if STATE.load(Ordering::Relaxed) != RECORDING {
        return FunctionGuard::INACTIVE;
    }
    enter_while_recording(id)
}

/// [`enter`] after its state test (callers that made it already skip a second
/// load of the state).
#[inline(always)]
fn enter_while_recording(id: FunctionId) -> FunctionGuard {
    record_on_ring(|r, ts| {
        let _ = r.function(FunctionAction::Enter, id, ts);
    });
    FunctionGuard {
        id: id.get(),
        _not_send: PhantomData,
    }
}

/// Records a function entry with one argument (XRay's "enter with arg" record and a
/// call-argument record); the returned guard records the exit.
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::Config;
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// drop(flightrec::xray::enter_with_arg(FunctionId::new(3).unwrap(), 42));
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let records: Vec<Record> = Decoder::new(&trace)?.map(|d| d.unwrap().record).collect();
/// let f = FunctionId::new(3).unwrap();
/// let at = records
///     .iter()
///     .position(|r| matches!(r, Record::Function { action: FunctionAction::EnterArg, id, .. } if *id == f))
///     .unwrap();
/// assert_eq!(records[at + 1], Record::CallArgument { value: 42 });
/// assert!(matches!(records[at + 2], Record::Function { action: FunctionAction::Exit, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[inline]
pub fn enter_with_arg(id: FunctionId, arg: u64) -> FunctionGuard {
    if STATE.load(Ordering::Relaxed) != RECORDING {
        return FunctionGuard::INACTIVE;
    }
    record_on_ring(|r, ts| {
        let _ = r.enter_with_args(id, ts, &[arg]);
    });
    FunctionGuard {
        id: id.get(),
        _not_send: PhantomData,
    }
}

/// Records a custom event: raw bytes that `llvm-xray` shows as the event's data.
/// Empty payloads are ignored (readers reject them).
///
/// ```
/// use flightrec::core::fdr::decoder::Decoder;
/// use flightrec::core::fdr::records::Record;
/// use flightrec::xray::Config;
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// flightrec::xray::custom_event(b"cache miss");
/// flightrec::xray::custom_event(b""); // ignored
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let payloads: Vec<&[u8]> = Decoder::new(&trace)?
///     .filter_map(|d| match d.unwrap().record {
///         Record::CustomEvent { payload, .. } => Some(payload),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(payloads, [b"cache miss"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[inline]
pub fn custom_event(payload: &[u8]) {
    with_recorder(|r, ts| {
        let _ = r.custom_event(ts, payload);
    });
}

/// Records a typed event: a 16-bit type and raw bytes.
///
/// ```
/// use flightrec::core::fdr::decoder::Decoder;
/// use flightrec::core::fdr::records::Record;
/// use flightrec::xray::Config;
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// flightrec::xray::typed_event(7, &42u32.to_le_bytes());
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let typed: Vec<(u16, &[u8])> = Decoder::new(&trace)?
///     .filter_map(|d| match d.unwrap().record {
///         Record::TypedEvent { event_type, payload, .. } => Some((event_type, payload)),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(typed, [(7, &42u32.to_le_bytes()[..])]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[inline]
pub fn typed_event(event_type: u16, payload: &[u8]) {
    with_recorder(|r, ts| {
        let _ = r.typed_event(ts, event_type, payload);
    });
}

/// A call site with a function id assigned on first use and a name in the names
/// table. The macros [`xray_fn!`](crate::xray_fn) and
/// [`xray_scope!`](crate::xray_scope) put one in a `static` per call site.
///
/// ```
/// use flightrec::xray::names::function_name;
/// use flightrec::xray::{CallSite, Config};
/// static SITE: CallSite = CallSite::new();
/// fn parse() {
///     let _f = SITE.enter(|| "parse");
/// }
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// parse();
/// parse();
/// let id = SITE.id(|| "parse"); // registered on the first call, the same since
/// assert_eq!(function_name(id.get()), Some("parse"));
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// assert_eq!(flightrec::core::fdr::decoder::verify(&trace)?.function_records, 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CallSite {
    /// Set once: threads that reach a new site at once must agree on one id, since
    /// a second id would split the site's calls into two functions in every tool
    /// and add a duplicate name.
    id: OnceLock<FunctionId>,
}

impl CallSite {
    /// A call site without an id yet (a constant, for a `static`). Example on
    /// [`CallSite`].
    pub const fn new() -> Self {
        Self {
            id: OnceLock::new(),
        }
    }

    /// The site's id, registering `name()` on first use (also while not
    /// recording).
    ///
    /// ```
    /// use flightrec::xray::names::function_name;
    /// use flightrec::xray::CallSite;
    /// static SITE: CallSite = CallSite::new();
    /// let id = SITE.id(|| "decode");
    /// assert_eq!(SITE.id(|| "not asked again"), id);
    /// assert_eq!(function_name(id.get()), Some("decode"));
    /// ```
    #[inline]
    pub fn id(&'static self, name: fn() -> &'static str) -> FunctionId {
        match self.id.get() {
            Some(&id) => id,
            None => self.register(name),
        }
    }

    #[cold]
    #[inline(never)]
    fn register(&'static self, name: fn() -> &'static str) -> FunctionId {
        *self.id.get_or_init(|| super::names::function_id(name()))
    }

    /// Records the entry of this call site; the guard records the exit. Does nothing
    /// (and registers nothing) while the runtime is not recording.
    ///
    /// ```
    /// use flightrec::xray::names::max_named_id;
    /// use flightrec::xray::CallSite;
    /// static SITE: CallSite = CallSite::new();
    /// let guard = SITE.enter(|| "idle");
    /// assert!(!guard.is_active());
    /// assert_eq!(max_named_id(), 0); // no name was registered
    /// ```
    #[inline]
    pub fn enter(&'static self, name: fn() -> &'static str) -> FunctionGuard {
        if STATE.load(Ordering::Relaxed) != RECORDING {
            return FunctionGuard::INACTIVE;
        }
        enter_while_recording(self.id(name))
    }
}

impl Default for CallSite {
    fn default() -> Self {
        Self::new()
    }
}

/// Turns the type name of a marker function nested in a function into that
/// function's path: `crate::module::func::__here` → `crate::module::func`.
#[doc(hidden)]
pub fn enclosing_function_name(marker_type_name: &'static str) -> &'static str {
    marker_type_name
        .rsplit_once("::")
        .map_or(marker_type_name, |(head, _)| head)
}

/// Traces the enclosing function: returns a guard whose drop records the exit. The
/// function gets one id (on first use) and its path as name, e.g.
/// `my_crate::parser::parse`.
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::names::function_name;
/// use flightrec::xray::Config;
/// fn parse() -> u32 {
///     let _f = flightrec::xray_fn!();
///     42
/// }
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// assert_eq!(parse(), 42);
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let functions: Vec<(FunctionAction, u32)> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// let (action, id) = functions[0];
/// assert_eq!(action, FunctionAction::Enter);
/// assert_eq!(functions[1], (FunctionAction::Exit, id));
/// assert!(function_name(id).unwrap().ends_with("::parse")); // the function's path
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! xray_fn {
    () => {{
        static SITE: $crate::xray::CallSite = $crate::xray::CallSite::new();
        fn __flightrec_xray_here() {}
        SITE.enter(|| {
            $crate::xray::enclosing_function_name(::core::any::type_name_of_val(
                &__flightrec_xray_here,
            ))
        })
    }};
}

/// Traces a scope under a given name: returns a guard whose drop records the exit.
/// Each call site gets its own id.
///
/// ```
/// use flightrec::core::fdr::decoder::{Decoded, Decoder};
/// use flightrec::core::fdr::records::Record;
/// use flightrec::core::fdr::{FunctionAction, FunctionId};
/// use flightrec::xray::names::function_name;
/// use flightrec::xray::Config;
/// # let dir = tempfile::tempdir()?;
/// # let base = format!("{}/trace-", dir.path().display());
/// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
/// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
/// flightrec::xray::init(config)?;
/// let total: u32 = {
///     let _s = flightrec::xray_scope!("sum loop");
///     (1..=10).sum()
/// };
/// assert_eq!(total, 55);
/// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
/// let functions: Vec<(FunctionAction, u32)> = Decoder::new(&trace)?
///     .filter_map(|d| match d {
///         Ok(Decoded { record: Record::Function { action, id, .. }, .. }) => Some((action, id.get())),
///         _ => None,
///     })
///     .collect();
/// let (_, id) = functions[0];
/// assert_eq!(functions, [(FunctionAction::Enter, id), (FunctionAction::Exit, id)]);
/// assert_eq!(function_name(id), Some("sum loop"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! xray_scope {
    ($name:expr) => {{
        static SITE: $crate::xray::CallSite = $crate::xray::CallSite::new();
        SITE.enter(|| $name)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xray::names;

    #[test]
    fn threads_reaching_a_new_site_at_once_share_one_id() {
        let _serial = names::counter_test_lock();
        const THREADS: usize = 8;
        static SITE: CallSite = CallSite::new();
        let start = std::sync::Barrier::new(THREADS);
        let ids: Vec<u32> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        SITE.id(|| "record::tests::raced_site").get()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert!(ids.iter().all(|&id| id == ids[0]), "{ids:?}");
        let named = (1..=names::max_named_id())
            .filter(|&id| names::function_name(id) == Some("record::tests::raced_site"))
            .count();
        assert_eq!(named, 1);
    }

    #[test]
    fn enclosing_name() {
        fn here() {}
        let n = enclosing_function_name(std::any::type_name_of_val(&here));
        assert!(n.ends_with("tests::enclosing_name"), "{n}");
    }

    #[test]
    fn off_by_default_and_inactive() {
        assert!(!is_recording());
        let g = enter(FunctionId::new(1).unwrap());
        assert!(!g.is_active());
        static SITE: CallSite = CallSite::new();
        let g = SITE.enter(|| "never registered");
        assert!(!g.is_active());
        assert_eq!(SITE.id.get(), None);
    }
}
