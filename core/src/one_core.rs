//! How the core orders a value shared between contexts with the accesses around
//! it: one home for the choice between barriers and compiler fences.
//!
//! On one core an execution sees its own accesses in program order, and one that
//! preempts another finishes before the preempted one goes on, so a compiler
//! fence orders what a `dmb` would, for no cycles. That holds on thumbv6m
//! (Cortex-M0 and M0+: single in-order cores, and no compare-and-swap), and in
//! a program built with the feature `unsafe-assume-single-core`, by its
//! promise. Elsewhere acquire loads and release stores order them (a `dmb` each
//! on Cortex-M).

use core::sync::atomic::{compiler_fence, Ordering};

/// Whether the program runs on one core (see the module docs).
pub(crate) const ONE_CORE: bool = cfg!(any(
    not(target_has_atomic = "32"),
    feature = "unsafe-assume-single-core"
));

/// The ordering of a load that later accesses must not pass; follow it with
/// [`after_load`].
pub(crate) const LOAD: Ordering = if ONE_CORE {
    Ordering::Relaxed
} else {
    Ordering::Acquire
};

/// The ordering of a store that earlier accesses must not pass; precede it with
/// [`before_store`].
pub(crate) const STORE: Ordering = if ONE_CORE {
    Ordering::Relaxed
} else {
    Ordering::Release
};

/// After a [`LOAD`] (or a claim made by a plain store, on one core): a compiler
/// fence on one core, nothing where the load itself acquires.
#[inline(always)]
pub(crate) fn after_load() {
    if ONE_CORE {
        compiler_fence(Ordering::Acquire);
    }
}

/// Before a [`STORE`]: a compiler fence on one core, nothing where the store
/// itself releases.
#[inline(always)]
pub(crate) fn before_store() {
    if ONE_CORE {
        compiler_fence(Ordering::Release);
    }
}
