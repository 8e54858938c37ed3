//! One recorder per preemption context, chosen on each record.
//!
//! A [`Recorder`] is written by one context at a time: it takes `&mut self`. On a
//! microcontroller the code that records runs in thread mode and in interrupt
//! handlers that preempt it and each other, so each preemption context needs a
//! ring of its own. [`ContextRecorders`] holds the recorders of those contexts
//! in a `static`, asks a [`ContextSource`] which context is running on each
//! record (on Cortex-M: thread mode, or the priority of the running exception,
//! as SEGGER SystemView does; or a context id you supply, such as an RTOS task
//! or a core), and writes into that context's recorder.
//!
//! Why this is sound without a critical section: handlers of the same priority
//! never preempt each other, and a handler that preempts another runs to its end
//! before the one it preempted goes on. So a context's recorder is only ever used
//! by one execution at a time, and a preempting execution has finished with it
//! before the preempted one continues. Each slot still carries a busy flag, taken
//! with a compare-and-swap where the target has one and with a load and a store
//! on single-core targets without it (thumbv6m) or with the feature
//! `unsafe-assume-single-core`, by which the program promises it runs on one
//! core (no load-exclusive loop on the record path): if a source maps two contexts
//! that preempt each other to one recorder, or a record is made while the
//! recorder is in use (an instrumented clock), the second record is refused and
//! counted instead of corrupting the ring.
//!
//! Nothing is lost silently. A record for a context that has no recorder (or
//! before its recorder is installed) is counted per context
//! ([`ContextRecorders::no_ring`]), and the counters frame of every source made
//! by [`ContextRecorders::install_ring`] carries those counts, so the receiver
//! names the context that had no ring with the ordinary drain. A refused record
//! is counted ([`ContextRecorders::stats`]), and [`ContextRecorders::flush_all`]
//! hands that count to a recorder, which writes it into the trace as a loss
//! marker, like its own drops.
//!
//! ```
//! use core::sync::atomic::{AtomicU16, Ordering};
//! use flightrec_core::clock::TimerClock;
//! use flightrec_core::context::{Context, ContextRecorders, ContextSource};
//! use flightrec_core::fdr::ring::{Policy, RecorderConfig};
//! use flightrec_core::fdr::static_ring::StaticRing;
//! use flightrec_core::fdr::writer::WriterConfig;
//! use flightrec_core::fdr::{FunctionAction, FunctionId};
//! use flightrec_core::global::GlobalRecorder;
//!
//! /// The running context, as a scheduler would publish it.
//! struct Running(AtomicU16);
//! impl ContextSource for Running {
//!     fn current(&self) -> Context {
//!         Context::new(self.0.load(Ordering::Relaxed))
//!     }
//! }
//!
//! static RUNNING: Running = Running(AtomicU16::new(0));
//! static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
//! static TRACE: ContextRecorders<2, &Running, &TimerClock> =
//!     ContextRecorders::new(&RUNNING, &CLOCK);
//! static TASK_A: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
//! static TASK_B: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
//!
//! let cfg = |tid| RecorderConfig::new(WriterConfig::new(tid), 1_000);
//! TRACE.install(Context::new(0), TASK_A.take_recorder(cfg(1)).unwrap()).unwrap();
//! TRACE.install(Context::new(1), TASK_B.take_recorder(cfg(2)).unwrap()).unwrap();
//!
//! let f = FunctionId::new(1).unwrap();
//! TRACE.record_function(FunctionAction::Enter, f); // into TASK_A
//! RUNNING.0.store(1, Ordering::Relaxed);
//! TRACE.record_function(FunctionAction::Enter, f); // into TASK_B
//! RUNNING.0.store(7, Ordering::Relaxed);
//! TRACE.record_function(FunctionAction::Enter, f); // no recorder: counted
//! assert_eq!(TRACE.stats().unrouted, 1);
//!
//! TRACE.flush_all(); // not charged to another context's trace
//! assert_eq!(TRACE.stats().unrouted, 1);
//! let mut counts = [0u8; flightrec_core::link::NoRing::WIRE_MAX];
//! let n = TRACE.no_ring().emit(&mut counts); // what the counters frames carry
//! let got: Vec<_> = flightrec_core::link::NoRingCount::parse_all(&counts[..n]).unwrap().collect();
//! assert_eq!((got[0].context, got[0].records), (Some(Context::new(7)), 1));
//! let mut a = TASK_A.take_consumer().unwrap();
//! let mut b = TASK_B.take_consumer().unwrap();
//! assert!(a.pop().is_some() && b.pop().is_some());
//! ```

#[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
mod cortex_m;
#[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
pub use cortex_m::CortexMContexts;
mod events;

use core::cell::UnsafeCell;
use core::fmt;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::clock::Clock;
use crate::fdr::records::FunctionRecord;
use crate::fdr::ring::{Dropped, Recorder, RecorderConfig};
use crate::fdr::static_ring::{RingPolicy, StaticRing};
use crate::fdr::writer::Tried;
use crate::fdr::writer::WriterConfig;
use crate::fdr::{FunctionAction, FunctionId};
use crate::global::GlobalRecorder;
use crate::link::{NoRing, Outlet, Source};
use crate::one_core::{after_load, before_store, ONE_CORE, STORE};

/// A preemption context: what a [`ContextSource`] says is running, and what a
/// recorder is installed for.
///
/// Any 16-bit value names a context (an RTOS task, a core); the Cortex-M source
/// uses [`THREAD_MODE`](Context::THREAD_MODE), [`priority`](Context::priority),
/// [`NMI`](Context::NMI) and [`HARD_FAULT`](Context::HARD_FAULT).
///
/// ```
/// use flightrec_core::context::Context;
/// assert_eq!(Context::priority(0x40), Context::new(0x140));
/// assert_ne!(Context::THREAD_MODE, Context::priority(0));
/// assert_eq!(Context::new(3).get(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Context(u16);

impl Context {
    /// Cortex-M thread mode (no exception active).
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// assert_eq!(Context::THREAD_MODE, Context::new(0));
    /// ```
    pub const THREAD_MODE: Context = Context(0);
    /// The non-maskable interrupt (fixed priority -2).
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// assert_ne!(Context::NMI, Context::priority(0));
    /// ```
    pub const NMI: Context = Context(0x200);
    /// HardFault (fixed priority -1).
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// assert_ne!(Context::HARD_FAULT, Context::NMI);
    /// ```
    pub const HARD_FAULT: Context = Context(0x201);

    /// A context by number.
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// let task = Context::new(12);
    /// assert_eq!(task.get(), 12);
    /// ```
    pub const fn new(raw: u16) -> Context {
        Context(raw)
    }

    /// The Cortex-M exceptions and interrupts of priority `priority`, as the
    /// hardware reads it back (what `cortex_m::peripheral::NVIC::get_priority`
    /// returns: the unimplemented low bits are zero). Handlers of one priority
    /// never preempt each other, so they share a recorder.
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// assert_eq!(Context::priority(0x80).get(), 0x180);
    /// ```
    pub const fn priority(priority: u8) -> Context {
        Context(0x100 | priority as u16)
    }

    /// The context's number.
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// assert_eq!(Context::THREAD_MODE.get(), 0);
    /// ```
    pub const fn get(self) -> u16 {
        self.0
    }
}

/// The context as a person reads it, in the Cortex-M source's numbering:
/// thread mode, an interrupt priority, NMI, HardFault, or the number of any
/// other context.
///
/// ```
/// use flightrec_core::context::Context;
/// assert_eq!(Context::priority(0x40).to_string(), "interrupt priority 0x40");
/// assert_eq!(Context::THREAD_MODE.to_string(), "thread mode");
/// assert_eq!(Context::NMI.to_string(), "NMI");
/// assert_eq!(Context::new(0x1234).to_string(), "context 0x1234");
/// ```
impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Context::THREAD_MODE => f.write_str("thread mode"),
            Context::NMI => f.write_str("NMI"),
            Context::HARD_FAULT => f.write_str("HardFault"),
            Context(raw) if raw >> 8 == 1 => write!(f, "interrupt priority {:#04x}", raw & 0xff),
            Context(raw) => write!(f, "context {raw:#x}"),
        }
    }
}

/// Says which context is running.
///
/// Two executions that get the same context may preempt each other (the second is
/// refused and counted), but on a target without compare-and-swap (thumbv6m) they
/// must not run in parallel on two cores: on a multi-core part without it (such as
/// an RP2040), include the core in the context.
///
/// A `fn() -> Context` is a source:
///
/// ```
/// use flightrec_core::context::{Context, ContextSource};
/// fn current_task() -> Context {
///     Context::new(3) // the scheduler's running task
/// }
/// let source: fn() -> Context = current_task;
/// assert_eq!(source.current(), Context::new(3));
/// ```
pub trait ContextSource: Sync {
    /// The context running now.
    ///
    /// ```
    /// use flightrec_core::context::{Context, ContextSource};
    /// struct OnlyOne;
    /// impl ContextSource for OnlyOne {
    ///     fn current(&self) -> Context {
    ///         Context::THREAD_MODE
    ///     }
    /// }
    /// assert_eq!(OnlyOne.current(), Context::THREAD_MODE);
    /// ```
    fn current(&self) -> Context;
}

impl ContextSource for fn() -> Context {
    #[inline]
    fn current(&self) -> Context {
        self()
    }
}

impl<S: ContextSource + ?Sized> ContextSource for &S {
    #[inline]
    fn current(&self) -> Context {
        (**self).current()
    }
}

/// Why [`ContextRecorders::install`] or [`ContextRecorders::with_recorder`]
/// refused.
///
/// ```
/// use flightrec_core::context::ContextError;
/// assert_eq!(ContextError::Full.to_string(), "every recorder slot is in use");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ContextError {
    /// All `N` slots hold a recorder.
    Full,
    /// The context already has a recorder.
    AlreadyInstalled,
    /// Another install is under way (installs do not wait).
    Busy,
    /// The context has no recorder.
    NotInstalled,
    /// The context's recorder is in use by the context that was preempted.
    InUse,
    /// The ring's recorder and consumer were taken before
    /// ([`install_ring`](ContextRecorders::install_ring)).
    RingTaken,
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContextError::Full => "every recorder slot is in use",
            ContextError::AlreadyInstalled => "the context already has a recorder",
            ContextError::Busy => "another recorder is being installed",
            ContextError::NotInstalled => "the context has no recorder",
            ContextError::InUse => "the context's recorder is in use",
            ContextError::RingTaken => "the ring's recorder and consumer were taken before",
        })
    }
}

/// Records lost before they reached a recorder: those of contexts without a
/// recorder since the start (per context in [`ContextRecorders::no_ring`]), and
/// those refused since the last [`flush_all`](ContextRecorders::flush_all)
/// handed them over.
///
/// ```
/// use flightrec_core::context::ContextStats;
/// assert_eq!(ContextStats::default(), ContextStats { unrouted: 0, refused: 0 });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ContextStats {
    /// Records made in a context that has no recorder, since the start.
    pub unrouted: u32,
    /// Records refused because the context's recorder was in use.
    pub refused: u32,
}

// A slot's word: the context in the high 16 bits, the state in the low 8.
const FREE: u32 = 0;
const INSTALLING: u32 = 1;
const READY: u32 = 2;
const BUSY: u32 = 3;
const STATE_MASK: u32 = 0xff;

const fn word(context: Context, state: u32) -> u32 {
    (context.0 as u32) << 16 | state
}

// `repr(C)`, the word first: the record path reaches the word and the recorder's
// fields from one base register.
#[repr(C)]
struct RecorderSlot {
    /// `FREE`, or the context and `INSTALLING`, `READY` or `BUSY`.
    word: AtomicU32,
    /// Written once while `INSTALLING`; used by whoever moved the word from
    /// `READY` to `BUSY`.
    recorder: UnsafeCell<MaybeUninit<Recorder<'static, 'static>>>,
}

impl RecorderSlot {
    #[allow(clippy::declare_interior_mutable_const)] // the point: a fresh slot per use
    const NEW: RecorderSlot = RecorderSlot {
        word: AtomicU32::new(FREE),
        recorder: UnsafeCell::new(MaybeUninit::uninit()),
    };

    /// Moves the slot from `READY` to `BUSY` for `context`.
    #[inline(always)]
    fn claim(&self, ready: u32) -> bool {
        #[cfg(target_has_atomic = "32")]
        if !ONE_CORE {
            return self
                .word
                .compare_exchange(
                    ready,
                    ready - READY + BUSY,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok();
        }
        // One core (thumbv6m, which has no compare-and-swap, or the promise of
        // feature `unsafe-assume-single-core`, see `one_core`): an execution
        // that preempts us between the load and the store finishes (and puts the
        // word back) before we store, so the load and the store act as one step.
        if self.word.load(Ordering::Relaxed) != ready {
            return false;
        }
        self.mark_busy(ready);
        true
    }

    /// [`claim`](Self::claim) for a slot whose word this execution has just
    /// loaded and found `ready`.
    #[inline(always)]
    fn claim_seen(&self, ready: u32) -> bool {
        if !ONE_CORE {
            return self.claim(ready);
        }
        // One core (see `claim`): `claim` without its load. The word was `ready`
        // at our load; an execution that preempted us since then has finished
        // and put back what it claimed, and only an install changes a word for
        // good, from FREE. So it is still `ready`.
        self.mark_busy(ready);
        true
    }

    /// One core's claim: BUSY stored over `ready`, and the recorder's accesses
    /// kept after it by a compiler fence.
    #[inline(always)]
    fn mark_busy(&self, ready: u32) {
        self.word.store(ready - READY + BUSY, Ordering::Relaxed);
        after_load();
    }

    /// Uses the recorder of a slot whose word is `ready`, if it is not in use.
    #[inline(always)]
    fn with<R>(
        &self,
        ready: u32,
        f: impl FnOnce(&mut Recorder<'static, 'static>) -> R,
    ) -> Option<R> {
        if !self.claim(ready) {
            return None;
        }
        // SAFETY: claimed just above.
        Some(unsafe { self.use_claimed(ready, f) })
    }

    /// The recorder of a slot this execution claimed.
    ///
    /// # Safety
    /// This execution moved the word from READY to BUSY (`claim` or `claim_seen`
    /// returned `true`), has not released it since, and drops the reference
    /// before it does.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)] // the claim makes the access exclusive
    unsafe fn claimed_recorder(&self) -> &mut Recorder<'static, 'static> {
        // SAFETY: as in `use_claimed`: the claim gives this execution the recorder
        // alone, and READY was stored only after `install` wrote it.
        unsafe { (*self.recorder.get()).assume_init_mut() }
    }

    /// Runs `f` on the recorder of a slot this execution claimed, then releases it.
    ///
    /// # Safety
    /// This execution moved the word from `ready` to BUSY (`claim` or
    /// `claim_seen` returned `true`) and has not released it since.
    #[inline(always)]
    unsafe fn use_claimed<R>(
        &self,
        ready: u32,
        f: impl FnOnce(&mut Recorder<'static, 'static>) -> R,
    ) -> R {
        // SAFETY: the caller moved the word from READY to BUSY, so this execution
        // alone uses the recorder until it stores READY again below (any other
        // execution finds BUSY and leaves it alone); READY is stored (with release
        // ordering) only after `install` wrote the recorder, and the claim's
        // acquire ordering makes that write visible.
        let recorder = unsafe { (*self.recorder.get()).assume_init_mut() };
        let result = f(recorder);
        self.release(ready);
        result
    }

    /// Puts the word back to `ready` after the recorder was used.
    #[inline(always)]
    fn release(&self, ready: u32) {
        before_store();
        self.word.store(ready, STORE);
    }

    /// [`release`](Self::release) at the end of a record's straight path. On
    /// a core without compare-and-swap (thumbv6m: Thumb-1's eight low
    /// registers) the word is loaded again rather than `ready` kept in a
    /// register across the record: kept, it cost a spill of the record's word
    /// and the pairing of the record's two stores. The word is still this execution's BUSY: an execution that
    /// preempted it since the claim found BUSY and left the slot alone. Where
    /// the core has compare-and-swap, registers are not short and the load
    /// would only cost, so `ready` stays in its register.
    #[inline(always)]
    fn release_after_record(&self, ready: u32) {
        let ready = if cfg!(target_has_atomic = "32") {
            ready
        } else {
            self.claimed_ready()
        };
        self.release(ready);
    }

    /// The READY word of a slot this execution claimed, from its word: BUSY,
    /// which only this execution changes until it puts the slot back.
    #[inline(always)]
    fn claimed_ready(&self) -> u32 {
        self.word.load(Ordering::Relaxed) - BUSY + READY
    }
}

/// Counts lost records: a read-modify-write where the target has one, a critical
/// section on targets without (only the error paths count, never a good record).
struct LossCounter(AtomicU32);

impl LossCounter {
    const fn new() -> Self {
        LossCounter(AtomicU32::new(0))
    }

    #[cold]
    fn add_one(&self) {
        #[cfg(target_has_atomic = "32")]
        {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        #[cfg(not(target_has_atomic = "32"))]
        critical_section::with(|_| {
            let n = self.0.load(Ordering::Relaxed);
            self.0.store(n.wrapping_add(1), Ordering::Relaxed);
        });
    }

    fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    fn take(&self) -> u32 {
        #[cfg(target_has_atomic = "32")]
        {
            self.0.swap(0, Ordering::Relaxed)
        }
        #[cfg(not(target_has_atomic = "32"))]
        {
            critical_section::with(|_| {
                let n = self.0.load(Ordering::Relaxed);
                self.0.store(0, Ordering::Relaxed);
                n
            })
        }
    }

    /// Gives back what `take` took but could not hand over.
    fn give_back(&self, n: u32) {
        if n == 0 {
            return;
        }
        #[cfg(target_has_atomic = "32")]
        {
            self.0.fetch_add(n, Ordering::Relaxed);
        }
        #[cfg(not(target_has_atomic = "32"))]
        critical_section::with(|_| {
            let m = self.0.load(Ordering::Relaxed);
            self.0.store(m.wrapping_add(n), Ordering::Relaxed);
        });
    }
}

/// The recorders of up to `N` contexts, the [`ContextSource`] that picks one on
/// each record, and the clock they share: a `static`, and a [`GlobalRecorder`] for
/// [`global_recorder!`](crate::global_recorder). See the [module docs](self) for
/// why no critical section is needed.
///
/// ```
/// use flightrec_core::clock::TimerClock;
/// use flightrec_core::context::{Context, ContextRecorders};
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
/// use flightrec_core::fdr::static_ring::StaticRing;
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::{FunctionAction, FunctionId};
/// use flightrec_core::global::GlobalRecorder;
///
/// fn running() -> Context {
///     Context::THREAD_MODE
/// }
/// static CLOCK: TimerClock = TimerClock::new(|| 7, 32, 1_000);
/// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
///     ContextRecorders::new(running, &CLOCK);
/// static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
///
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
/// TRACE.install(Context::THREAD_MODE, RING.take_recorder(cfg).unwrap()).unwrap();
/// TRACE.record_function(FunctionAction::Enter, FunctionId::new(1).unwrap());
/// TRACE.flush_all();
/// assert_eq!(RING.take_consumer().unwrap().pending(), 1);
/// ```
pub struct ContextRecorders<const N: usize, S, C> {
    source: S,
    clock: C,
    slots: [RecorderSlot; N],
    /// 1 while an install is under way.
    installing: AtomicU32,
    /// Records of contexts without a recorder, per context: every counters
    /// frame of a source from `install_ring` carries them.
    no_ring: NoRing,
    refused: LossCounter,
}

// SAFETY: a slot's recorder is used only by the execution that moved its word from
// READY to BUSY (see `RecorderSlot::with`) or, once, by `install` while the word is
// INSTALLING; everything else is atomics, the source (`Sync`) and the clock (`Sync`).
unsafe impl<const N: usize, S: Sync, C: Sync> Sync for ContextRecorders<N, S, C> {}

impl<const N: usize, S, C> ContextRecorders<N, S, C>
where
    S: ContextSource,
    C: Clock + Copy + Sync,
{
    /// No recorders yet; a `const fn`, for `static`s. `clock` is shared by every
    /// context: one of the core's shared clocks (`SysTickClock`, `DwtClock`,
    /// `TimerClock`) as a [`static_clock!`](crate::static_clock) handle, or a
    /// `&'static` of one. With a zero-sized clock and source (the handle,
    /// `CortexMContexts`) the `static` is all zero bytes and goes in `.bss`; a
    /// reference or a `fn` pointer puts all of it in `.data` (copied from flash).
    ///
    /// ```
    /// use flightrec_core::clock::TimerClock;
    /// use flightrec_core::context::{Context, ContextRecorders};
    /// fn only_thread_mode() -> Context {
    ///     Context::THREAD_MODE
    /// }
    /// static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000_000);
    /// static TRACE: ContextRecorders<3, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(only_thread_mode, &CLOCK);
    /// assert_eq!(TRACE.capacity(), 3);
    /// ```
    pub const fn new(source: S, clock: C) -> Self {
        const { assert!(N > 0, "room for at least one recorder") };
        Self {
            source,
            clock,
            slots: [RecorderSlot::NEW; N],
            installing: AtomicU32::new(0),
            no_ring: NoRing::new(),
            refused: LossCounter::new(),
        }
    }

    /// `N`: how many contexts can have a recorder.
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextRecorders};
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1);
    /// static TRACE: ContextRecorders<4, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// assert_eq!(TRACE.capacity(), 4);
    /// ```
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Gives `context` its recorder: records made in `context` from now on go
    /// into it. Refused (the recorder is dropped) when the context has one, when
    /// all `N` slots are used, or while another install is under way.
    ///
    /// ```
    /// use flightrec_core::clock::TimerClock;
    /// use flightrec_core::context::{Context, ContextError, ContextRecorders};
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// use flightrec_core::fdr::static_ring::StaticRing;
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// static A: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// static B: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// assert_eq!(TRACE.install(Context::THREAD_MODE, A.take_recorder(cfg).unwrap()), Ok(()));
    /// let again = TRACE.install(Context::THREAD_MODE, B.take_recorder(cfg).unwrap());
    /// assert_eq!(again, Err(ContextError::AlreadyInstalled));
    /// ```
    pub fn install(
        &'static self,
        context: Context,
        recorder: Recorder<'static, 'static>,
    ) -> Result<(), ContextError> {
        if !self.lock_installs() {
            return Err(ContextError::Busy);
        }
        let result = self.install_locked(context, recorder);
        self.installing.store(0, Ordering::Release);
        result
    }

    /// Gives `context` the recorder of `ring` and returns the ring's
    /// [`Outlet`] (its link source and consumer) for the loop that flushes it:
    /// firmware's start-up in one call. `id` names the ring's records twice over,
    /// as their FDR thread id and as their link source; the tick rate is this
    /// recorder set's clock's. For another configuration (a pid, another
    /// version), [`split`](StaticRing::split) the ring and
    /// [`install`](Self::install) its recorder.
    ///
    /// A ring taken before is [`ContextError::RingTaken`]; an install that fails
    /// ([`install`](Self::install)'s errors) leaves the ring taken, its halves
    /// dropped (a start-up that installs each ring once never sees either).
    ///
    /// ```
    /// use flightrec_core::clock::TimerClock;
    /// use flightrec_core::context::{Context, ContextError, ContextRecorders};
    /// use flightrec_core::fdr::ring::Policy;
    /// use flightrec_core::fdr::static_ring::StaticRing;
    /// fn only_thread_mode() -> Context {
    ///     Context::THREAD_MODE
    /// }
    /// static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000_000);
    /// static MAIN: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(only_thread_mode, &CLOCK);
    ///
    /// let outlet = TRACE.install_ring(Context::THREAD_MODE, 7, &MAIN).unwrap();
    /// assert_eq!(outlet.source.id(), 7);
    /// assert_eq!(outlet.source.header().cycle_frequency.get(), 1_000_000);
    /// assert_eq!(outlet.source.header().buffer_size, 256);
    /// let again = TRACE.install_ring(Context::THREAD_MODE, 7, &MAIN);
    /// assert_eq!(again.err(), Some(ContextError::RingTaken));
    /// ```
    pub fn install_ring<const B: usize, const SIZE: usize, P: RingPolicy>(
        &'static self,
        context: Context,
        id: u32,
        ring: &'static StaticRing<B, SIZE, P>,
    ) -> Result<Outlet<'static, 'static>, ContextError> {
        let ticks_per_second = self.clock.ticks_per_second().get();
        let config = RecorderConfig::new(WriterConfig::new(id), ticks_per_second);
        let (recorder, consumer) = ring.split(config).map_err(|_| ContextError::RingTaken)?;
        self.install(context, recorder)?;
        let source =
            Source::new(id, config.file_header(ring.buffer_size())).with_no_ring(&self.no_ring);
        Ok(Outlet::new(source, consumer))
    }

    fn lock_installs(&self) -> bool {
        #[cfg(target_has_atomic = "32")]
        {
            self.installing
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        }
        #[cfg(not(target_has_atomic = "32"))]
        {
            critical_section::with(|_| {
                if self.installing.load(Ordering::Relaxed) != 0 {
                    return false;
                }
                self.installing.store(1, Ordering::Relaxed);
                true
            })
        }
    }

    fn install_locked(
        &'static self,
        context: Context,
        recorder: Recorder<'static, 'static>,
    ) -> Result<(), ContextError> {
        // Installs are serialised by `installing`, and only installs change a FREE
        // word, so the scan below sees every slot as it will be when we write it.
        let mut free = None;
        for slot in &self.slots {
            let w = slot.word.load(Ordering::Acquire);
            if w == FREE {
                free = free.or(Some(slot));
            } else if w >> 16 == context.0 as u32 {
                return Err(ContextError::AlreadyInstalled);
            }
        }
        let slot = free.ok_or(ContextError::Full)?;
        slot.word
            .store(word(context, INSTALLING), Ordering::Relaxed);
        // SAFETY: the word is INSTALLING, which no record path claims and no other
        // install touches (they are serialised), so nothing else reaches the
        // recorder; it was FREE, so there is no recorder to overwrite.
        unsafe { (*slot.recorder.get()).write(recorder) };
        slot.word.store(word(context, READY), Ordering::Release);
        Ok(())
    }

    /// Records `action` of `id` in `context`'s recorder, at the shared clock's time
    /// (what [`GlobalRecorder::record_function`] does with the source's context).
    /// A record for a context without a recorder or whose recorder is in use is
    /// counted in [`stats`](Self::stats).
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextRecorders};
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// # use flightrec_core::fdr::static_ring::StaticRing;
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// # static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// # let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// TRACE.install(Context::priority(0x40), RING.take_recorder(cfg).unwrap()).unwrap();
    /// let f = FunctionId::new(5).unwrap();
    /// assert!(TRACE.record_in(Context::priority(0x40), FunctionAction::Enter, f).is_ok());
    /// assert!(TRACE.record_in(Context::THREAD_MODE, FunctionAction::Enter, f).is_err());
    /// assert_eq!(TRACE.stats().unrouted, 1);
    /// ```
    #[inline]
    pub fn record_in(
        &'static self,
        context: Context,
        action: FunctionAction,
        id: FunctionId,
    ) -> Result<(), Lost> {
        self.record_low_word(context, FunctionRecord::low_word(action, id))
    }

    /// [`record_in`](Self::record_in) with the action and id as the record's low
    /// word: one value on the whole path (registers are few).
    #[inline(always)]
    fn record_low_word(&'static self, context: Context, low: u32) -> Result<(), Lost> {
        // Thread mode's word as a constant where the context source's own test
        // said thread mode (`CortexMContexts`): its path then builds no word
        // from a context that the handlers' path shares.
        const _: () = assert!(word(Context::THREAD_MODE, READY) == READY);
        let ready = if context == Context::THREAD_MODE {
            READY
        } else {
            word(context, READY)
        };
        // `N >= 1` (asserted in `new`): the loop tests for the end after a slot,
        // not before each, so the first slot, thread mode's in firmware that
        // installs it first, is one load and one compare away.
        let Some((mut slot, mut rest)) = self.slots.split_first() else {
            return Err(self.unroute(context));
        };
        loop {
            let w = slot.word.load(Ordering::Relaxed);
            if w == ready {
                if !slot.claim_seen(ready) {
                    return Err(self.refuse());
                }
                // A reading that must store (the shared clock's next half
                // period, twice per period of its counter) is read again by
                // `record_claimed`, out of line.
                let mut clock = self.clock;
                let Some(ts) = clock.now_if_unshared() else {
                    // SAFETY: claimed above, not released.
                    return unsafe { self.record_claimed(slot, low) };
                };
                // SAFETY: claimed just above, released below or by
                // `record_claimed`.
                let recorder = unsafe { slot.claimed_recorder() };
                // The straight path calls nothing, so it keeps its values in the
                // registers a call may clobber and saves few others; anything
                // more (a buffer switch, a new high word of the time, a
                // short-call exit) is one call at the end, out of line.
                match recorder.try_function_word(low, ts) {
                    Tried::Stored => {
                        slot.release_after_record(ready);
                        return Ok(());
                    }
                    // SAFETY: claimed above, not released.
                    Tried::Full => return unsafe { self.switch_claimed(slot, low, ts.tsc as u32) },
                    // SAFETY: claimed above, not released.
                    Tried::Declined => return unsafe { self.record_claimed(slot, low) },
                }
            }
            let Some((next, others)) = rest.split_first() else {
                return Err(self.no_ready_slot(context));
            };
            (slot, rest) = (next, others);
        }
    }

    /// Why the scan found no slot of `context` ready: the slot was in use
    /// (refused; it may be ready again by now, when its user has put it back),
    /// or there is none (not routed). Apart from the scan, which then compares
    /// each slot with one value only.
    #[cold]
    #[inline(never)]
    fn no_ready_slot(&self, context: Context) -> Lost {
        let (ready, busy) = (word(context, READY), word(context, BUSY));
        let ours = |slot: &RecorderSlot| matches!(slot.word.load(Ordering::Relaxed), w if w == busy || w == ready);
        if self.slots.iter().any(ours) {
            self.refuse()
        } else {
            self.unroute(context)
        }
    }

    /// A record whose slot this execution claimed and whose clock reading or
    /// recorder's call-free store declined for another reason than a full
    /// buffer: records it the general way and releases the slot. It reads the
    /// clock again rather than take the first reading, which may not be
    /// there (the shared clock's reading that must store); the record's time
    /// is then a few cycles later. A buffer that turns out full then switches
    /// the slow path's way, so that one copy of the straight switch is linked
    /// ([`switch_claimed`](Self::switch_claimed)'s).
    ///
    /// # Safety
    /// This execution claimed `slot` and has not released it.
    #[cold]
    #[inline(never)]
    unsafe fn record_claimed(&'static self, slot: &RecorderSlot, low: u32) -> Result<(), Lost> {
        let ready = slot.claimed_ready();
        let mut clock = self.clock;
        // SAFETY: the caller claimed the slot and has not released it.
        let result =
            unsafe { slot.use_claimed(ready, |r| r.function_word_general(low, clock.now())) };
        result.map_err(Lost::Dropped)
    }

    /// A record whose slot this execution claimed and whose buffer has no
    /// room for it ([`Tried::Full`]): the buffer switch at the time the record
    /// path read, given by its low word `raw` (`Recorder::function_word_full`),
    /// then the slot's release. No second clock reading or room test, and one word for the time: the record
    /// path holds no more registers for it.
    ///
    /// # Safety
    /// This execution claimed `slot` and has not released it, and its
    /// recorder's `try_function_word` found `Full` for `low` at `raw`.
    #[cold]
    #[inline(never)]
    unsafe fn switch_claimed(
        &'static self,
        slot: &RecorderSlot,
        low: u32,
        raw: u32,
    ) -> Result<(), Lost> {
        let ready = slot.claimed_ready();
        // SAFETY: the caller claimed the slot and has not released it.
        let result = unsafe { slot.use_claimed(ready, |r| r.function_word_full(low, raw)) };
        result.map_err(Lost::Dropped)
    }

    // The two losses are out of line: the record path then keeps its registers
    // for the record.
    #[cold]
    #[inline(never)]
    fn refuse(&self) -> Lost {
        self.refused.add_one();
        Lost::Refused
    }

    #[cold]
    #[inline(never)]
    fn unroute(&self, context: Context) -> Lost {
        self.no_ring.count(context);
        Lost::Unrouted
    }

    /// Runs `f` on `context`'s recorder from any context, e.g. to flush an
    /// interrupt's recorder from the idle loop. While `f` runs, records of
    /// `context` (an interrupt that fires meanwhile) are refused and counted.
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextError, ContextRecorders};
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// # use flightrec_core::fdr::static_ring::StaticRing;
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// # static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    /// #     ContextRecorders::new(src, &CLOCK);
    /// # static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// # let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// TRACE.install(Context::THREAD_MODE, RING.take_recorder(cfg).unwrap()).unwrap();
    /// let dropped = TRACE.with_recorder(Context::THREAD_MODE, |r| r.records_dropped());
    /// assert_eq!(dropped, Ok(0));
    /// let none = TRACE.with_recorder(Context::NMI, |r| r.records_dropped());
    /// assert_eq!(none, Err(ContextError::NotInstalled));
    /// ```
    pub fn with_recorder<R>(
        &'static self,
        context: Context,
        f: impl FnOnce(&mut Recorder<'static, 'static>) -> R,
    ) -> Result<R, ContextError> {
        let ready = word(context, READY);
        for slot in &self.slots {
            let w = slot.word.load(Ordering::Relaxed);
            if w >> 16 == context.0 as u32 && w != FREE {
                return slot.with(ready, f).ok_or(ContextError::InUse);
            }
        }
        Err(ContextError::NotInstalled)
    }

    /// Flushes every recorder (see [`Recorder::flush`]), after handing the
    /// refused records ([`stats`](Self::stats)) to the first recorder that is
    /// free, which marks them in its trace like its own drops. The records of a
    /// context without a ring are not charged to another context: the counters
    /// frames carry them by context ([`no_ring`](Self::no_ring)). Call it from the
    /// lowest-priority context (the idle loop): a recorder whose context it
    /// preempted is skipped.
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextRecorders};
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// # use flightrec_core::fdr::static_ring::StaticRing;
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// # static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// # let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// TRACE.install(Context::THREAD_MODE, RING.take_recorder(cfg).unwrap()).unwrap();
    /// let f = FunctionId::new(2).unwrap();
    /// let _ = TRACE.record_in(Context::NMI, FunctionAction::Enter, f); // no ring: counted
    /// TRACE.flush_all();
    /// // Counted for the NMI, not charged to thread mode's trace.
    /// assert_eq!(TRACE.stats().unrouted, 1);
    /// assert_eq!(TRACE.no_ring().total(), 1);
    /// assert_eq!(TRACE.with_recorder(Context::THREAD_MODE, |r| r.records_dropped()), Ok(0));
    /// ```
    pub fn flush_all(&'static self) {
        let mut lost = self.refused.take();
        for slot in &self.slots {
            let w = slot.word.load(Ordering::Relaxed);
            if w & STATE_MASK != READY {
                continue;
            }
            slot.with(w, |r| {
                if lost > 0 {
                    let mut clock = self.clock;
                    r.count_lost(u64::from(lost), clock.now());
                    lost = 0;
                }
                r.flush();
            });
        }
        // No recorder could take them: they stay counted for the next call.
        self.refused.give_back(lost);
    }

    /// Records lost outside the recorders (see [`ContextStats`]).
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextRecorders, ContextStats};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// let f = FunctionId::new(2).unwrap();
    /// let _ = TRACE.record_in(Context::THREAD_MODE, FunctionAction::Enter, f); // nothing installed
    /// assert_eq!(TRACE.stats(), ContextStats { unrouted: 1, refused: 0 });
    /// ```
    pub fn stats(&self) -> ContextStats {
        ContextStats {
            unrouted: self.no_ring.total(),
            refused: self.refused.get(),
        }
    }

    /// The records made in contexts without a recorder, per context, since the
    /// start: what the counters frames of the sources from
    /// [`install_ring`](Self::install_ring) carry. A source made by hand takes
    /// it with [`Source::with_no_ring`].
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextRecorders};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// let f = FunctionId::new(2).unwrap();
    /// let _ = TRACE.record_in(Context::priority(0x40), FunctionAction::Enter, f);
    /// assert_eq!(TRACE.no_ring().total(), 1);
    /// ```
    pub fn no_ring(&'static self) -> &'static NoRing {
        &self.no_ring
    }
}

/// Why a record did not reach a ring.
///
/// ```
/// use flightrec_core::context::Lost;
/// assert_eq!(Lost::Unrouted.to_string(), "no recorder for the running context");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Lost {
    /// The running context has no recorder.
    Unrouted,
    /// The context's recorder was in use.
    Refused,
    /// The recorder dropped it (and counted it).
    Dropped(Dropped),
}

impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lost::Unrouted => f.write_str("no recorder for the running context"),
            Lost::Refused => f.write_str("the running context's recorder was in use"),
            Lost::Dropped(d) => write!(f, "dropped by the recorder: {d}"),
        }
    }
}

impl<const N: usize, S, C> GlobalRecorder for ContextRecorders<N, S, C>
where
    S: ContextSource,
    C: Clock + Copy + Sync,
{
    #[inline]
    fn record_function(&'static self, action: FunctionAction, id: FunctionId) {
        let _ = self.record_in(self.source.current(), action, id);
    }

    #[inline(always)]
    fn __record_low_word(&'static self, low: u32) {
        let _ = self.record_low_word(self.source.current(), low);
    }
}
