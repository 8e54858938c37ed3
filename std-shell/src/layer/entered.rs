//! The spans entered on each thread and not exited yet, innermost last: what
//! keeps every thread's regions and FDR calls balanced when guards are dropped
//! out of order.
//!
//! The first [`INLINE`] levels live in a thread-local array of `Cell`s with no
//! destructor, so a push or a pop is a few loads and stores with no lazy
//! thread-local registration, borrow flag or allocation on the span path.
//! Deeper levels go to a `Vec` that is touched only at that depth.

use std::cell::{Cell, RefCell};

use flightrec_core::fdr::FunctionId;
use tracing_core::Metadata;

/// Levels kept inline per thread; deeper spans use the overflow `Vec`.
pub(super) const INLINE: usize = 32;

/// One span entered on this thread and not exited yet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Entered {
    pub(super) span: u64,
    pub(super) function: Option<FunctionId>,
    /// The span's metadata if it is in a Trace2 region.
    pub(super) region: Option<&'static Metadata<'static>>,
}

impl Entered {
    const EMPTY: Entered = Entered {
        span: 0,
        function: None,
        region: None,
    };
}

struct Inline {
    /// Spans on this thread's stack (inline and overflow).
    len: Cell<usize>,
    slots: [Cell<Entered>; INLINE],
}

thread_local! {
    static INLINE_STACK: Inline = const {
        Inline {
            len: Cell::new(0),
            slots: [const { Cell::new(Entered::EMPTY) }; INLINE],
        }
    };
    /// Levels past `INLINE`, innermost last.
    static OVERFLOW: RefCell<Vec<Entered>> = const { RefCell::new(Vec::new()) };
}

/// Pushes `e` on this thread's stack; `false` if it cannot be kept (the thread
/// is ending), in which case the caller records nothing for it.
#[inline]
pub(super) fn push(e: Entered) -> bool {
    INLINE_STACK
        .try_with(|s| {
            let len = s.len.get();
            if let Some(slot) = s.slots.get(len) {
                slot.set(e);
            } else if !overflow_push(e) {
                return false;
            }
            s.len.set(len + 1);
            true
        })
        .unwrap_or(false)
}

#[cold]
fn overflow_push(e: Entered) -> bool {
    OVERFLOW
        .try_with(|o| o.try_borrow_mut().map(|mut o| o.push(e)).is_ok())
        .unwrap_or(false)
}

/// Pops this thread's stack down to and including the innermost entry of
/// `span`, innermost first, handing each entry to `leave`. Nothing happens if
/// `span` is not on the stack (its enter was not kept, or an earlier exit of
/// an outer span already left it).
#[inline(always)]
pub(super) fn pop_through(span: u64, leave: fn(Entered)) {
    let _ = INLINE_STACK.try_with(|s| {
        let len = s.len.get();
        // The usual case: the innermost span exits (`leave` inlined here).
        // One comparison for "not empty and the top is inline".
        let top = len.wrapping_sub(1);
        if let Some(slot) = s.slots.get(top) {
            let e = slot.get();
            if e.span == span {
                s.len.set(top);
                leave(e);
                return;
            }
        }
        // Nothing entered on this thread (tracing off, or the span's enter was
        // not kept): no search, no call.
        if len != 0 {
            pop_through_slow(s, span, leave);
        }
    });
}

#[cold]
#[inline(never)]
fn pop_through_slow(s: &Inline, span: u64, leave: fn(Entered)) {
    let len = s.len.get();
    let Some(depth) = (0..len)
        .rev()
        .find(|&i| entry(s, i).is_some_and(|e| e.span == span))
    else {
        return;
    };
    // Innermost first: what was entered after this span is left too.
    for i in (depth..len).rev() {
        let e = if i >= INLINE {
            OVERFLOW
                .try_with(|o| o.try_borrow_mut().ok().and_then(|mut o| o.pop()))
                .ok()
                .flatten()
        } else {
            Some(s.slots[i].get())
        };
        s.len.set(i);
        if let Some(e) = e {
            leave(e);
        }
    }
}

/// The entry at depth `i` of this thread's stack.
fn entry(s: &Inline, i: usize) -> Option<Entered> {
    if i < INLINE {
        return Some(s.slots[i].get());
    }
    OVERFLOW
        .try_with(|o| o.try_borrow().ok().and_then(|o| o.get(i - INLINE).copied()))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(span: u64) -> Entered {
        Entered {
            span,
            ..Entered::EMPTY
        }
    }

    thread_local! {
        static POPPED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    }

    fn popped(span: u64) -> Vec<u64> {
        pop_through(span, |e| POPPED.with(|p| p.borrow_mut().push(e.span)));
        POPPED.with(|p| p.take())
    }

    #[test]
    fn innermost_exit_pops_one() {
        assert!(push(e(1)) && push(e(2)));
        assert_eq!(popped(2), [2]);
        assert_eq!(popped(1), [1]);
        assert_eq!(popped(1), Vec::<u64>::new());
    }

    #[test]
    fn an_outer_exit_leaves_what_was_entered_after_it_first() {
        for s in 1..=4 {
            assert!(push(e(s)));
        }
        assert_eq!(popped(2), [4, 3, 2]);
        // Their own exits later find nothing.
        assert_eq!(popped(3), Vec::<u64>::new());
        assert_eq!(popped(1), [1]);
    }

    #[test]
    fn deep_stacks_overflow_and_come_back_in_order() {
        let depth = 3 * INLINE as u64;
        for s in 1..=depth {
            assert!(push(e(s)));
        }
        // The innermost exits one by one through the overflow.
        assert_eq!(popped(depth), [depth]);
        // An exit in the inline part leaves everything above it, innermost first.
        let expected: Vec<u64> = (5..depth).rev().collect();
        assert_eq!(popped(5), expected);
        assert_eq!(popped(4), [4]);
        assert_eq!(popped(1), [3, 2, 1]);
        assert!(OVERFLOW.with(|o| o.borrow().is_empty()));
        assert_eq!(INLINE_STACK.with(|s| s.len.get()), 0);
    }

    #[test]
    fn the_same_span_entered_twice_pops_its_innermost_entry() {
        assert!(push(e(7)) && push(e(8)) && push(e(7)));
        assert_eq!(popped(7), [7]);
        assert_eq!(popped(7), [8, 7]);
    }
}
