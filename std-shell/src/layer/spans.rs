//! The FDR function id of each live span by its id, so that entering a span
//! while recording needs no registry lookup (the lookup is two atomic
//! read-modify-writes on the span's slab entry and most of the layer's cost).
//!
//! One table per subscriber the layer is part of (span ids are unique only
//! within one registry). Each slot belongs to at most one live span: claimed
//! when the span is made, released when it closes. A span whose slot is taken
//! is not cached and is looked up in the registry as before.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use flightrec_core::fdr::FunctionId;

/// Slots of a table: 2^SLOT_BITS (16 KiB).
const SLOT_BITS: u32 = 10;
const SLOTS: usize = 1 << SLOT_BITS;
/// A slot being filled in. Span ids are never `u64::MAX` in practice; one that
/// is is not cached.
const CLAIMED: u64 = u64::MAX;

struct Slot {
    /// The span's id (0: free).
    span: AtomicU64,
    /// Its function id, stored before `span` is published.
    function: AtomicU32,
}

/// Span id → function id for the live spans of one registry: a fixed array,
/// so that a lookup is one load from the table's address and no bounds check.
pub(crate) struct SpanFunctions {
    slots: [Slot; SLOTS],
}

impl std::fmt::Debug for SpanFunctions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanFunctions").finish_non_exhaustive()
    }
}

impl SpanFunctions {
    /// A table with every slot free, on the heap (16 KiB).
    pub(crate) fn new() -> Box<Self> {
        Box::new(SpanFunctions {
            slots: [const {
                Slot {
                    span: AtomicU64::new(0),
                    function: AtomicU32::new(0),
                }
            }; SLOTS],
        })
    }

    fn slot(&self, span: u64) -> &Slot {
        // Registry ids are close together: a multiplicative hash spreads them.
        let i = (span.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOT_BITS)) as usize;
        &self.slots[i % SLOTS]
    }

    /// Remembers `function` for the new span `span`, if its slot is free.
    pub(crate) fn insert(&self, span: u64, function: FunctionId) {
        if span == 0 || span == CLAIMED {
            return;
        }
        let slot = self.slot(span);
        if slot
            .span
            .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            slot.function.store(function.get(), Ordering::Relaxed);
            // Release: a reader that sees the id sees the function id.
            slot.span.store(span, Ordering::Release);
        }
    }

    /// The function id of the live span `span`, if it was remembered.
    #[inline]
    pub(crate) fn get(&self, span: u64) -> Option<FunctionId> {
        if span == 0 || span == CLAIMED {
            return None; // a free or claimed slot's own value
        }
        let slot = self.slot(span);
        // The slot stays the span's until it closes, and a span being entered
        // is live: what is read here cannot be another span's.
        if slot.span.load(Ordering::Acquire) == span {
            FunctionId::new(slot.function.load(Ordering::Relaxed)).ok()
        } else {
            None
        }
    }

    /// Frees the slot of `span`, which is closing.
    pub(crate) fn remove(&self, span: u64) {
        let _ =
            self.slot(span)
                .span
                .compare_exchange(span, 0, Ordering::Relaxed, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(n: u32) -> FunctionId {
        FunctionId::new(n).unwrap()
    }

    #[test]
    fn live_spans_are_found_closed_ones_are_not() {
        let t = SpanFunctions::new();
        for span in 1..=100u64 {
            t.insert(span, f(span as u32 + 7));
        }
        let found = (1..=100u64)
            .filter(|&s| t.get(s) == Some(f(s as u32 + 7)))
            .count();
        // Close ids spread over the table: few share a slot.
        assert!(found >= 95, "{found}");
        assert!((1..=100u64).all(|s| t.get(s).is_none_or(|g| g == f(s as u32 + 7))));
        for span in 1..=100u64 {
            t.remove(span);
        }
        assert!((1..=100u64).all(|s| t.get(s).is_none()));
        // A freed slot takes a new span.
        t.insert(5, f(1));
        assert_eq!(t.get(5), Some(f(1)));
    }

    #[test]
    fn a_taken_slot_is_not_overwritten_and_never_answers_for_another_span() {
        let t = SpanFunctions::new();
        t.insert(3, f(30));
        // Another id that lands in the same slot.
        let other = (4..u64::MAX)
            .find(|&s| std::ptr::eq(t.slot(s), t.slot(3)))
            .unwrap();
        t.insert(other, f(40));
        assert_eq!(t.get(3), Some(f(30)));
        assert_eq!(t.get(other), None);
        t.remove(other); // not its slot: nothing happens
        assert_eq!(t.get(3), Some(f(30)));
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(CLAIMED), None);
    }

    #[test]
    fn threads_that_make_and_close_spans_at_once_never_see_a_wrong_id() {
        let t = SpanFunctions::new();
        std::thread::scope(|s| {
            for w in 0..4u64 {
                let t = &t;
                s.spawn(move || {
                    for i in 0..2_000u64 {
                        let span = 1 + w * 1_000_000 + i;
                        let id = f((span % 1_000_003) as u32 + 1);
                        t.insert(span, id);
                        assert!(t.get(span).is_none_or(|g| g == id));
                        t.remove(span);
                        assert_eq!(t.get(span), None);
                    }
                });
            }
        });
    }
}
