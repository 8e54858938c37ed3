//! What the expansions of `#[flightrec::instrument]` and [`scope!`](crate::scope)
//! call. Not an API: its items may change in any release.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

/// The body of an instrumented `async fn`: `enter` runs before each poll of the
/// body and its guards drop when the poll returns, so the function's enter and
/// exit records (and region) stay balanced on the thread that polled it.
#[doc(hidden)]
#[derive(Debug)]
pub struct PerPoll<F, E> {
    fut: F,
    enter: E,
}

impl<F, E> PerPoll<F, E> {
    /// Wraps `fut`.
    #[doc(hidden)]
    pub fn new(fut: F, enter: E) -> Self {
        Self { fut, enter }
    }
}

impl<F: Future, E: Fn() -> G, G> Future for PerPoll<F, E> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is pinned structurally: it is never moved out of `self`
        // (no method hands it out by value and there is no `Drop` impl), and
        // `PerPoll` is `Unpin` only when `F` is (the auto trait). `enter` is
        // only called through a shared reference.
        let this = unsafe { self.get_unchecked_mut() };
        let _guards = (this.enter)();
        // SAFETY: see above; `this.fut` stays where it is until `self` drops.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        fut.poll(cx)
    }
}

/// The function's path from the type name of a marker function nested in it,
/// without the marker and without the `{{closure}}` segments that an `async
/// fn`'s body and the per-poll closure add: `app::Db::get::{{closure}}::{{closure}}::__here`
/// becomes `app::Db::get`. Called once per instrumented function (the name is
/// registered on first use).
#[cfg(all(unix, feature = "xray"))]
#[doc(hidden)]
pub fn function_name(marker_type_name: &'static str) -> &'static str {
    let path = crate::xray::enclosing_function_name(marker_type_name);
    if !path.contains("::{{closure}}") {
        return path;
    }
    let cleaned: String = path.replace("::{{closure}}", "");
    // One small string per instrumented function, for the program's lifetime
    // (the names table keeps it too).
    Box::leak(cleaned.into_boxed_str())
}

/// The bytes of a name static (FORMAT: `name<TAB>file:line<NUL>`), in a const.
#[cfg(not(feature = "std"))]
#[doc(hidden)]
pub const fn name_bytes<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N && i < b.len() {
        out[i] = b[i];
        i += 1;
    }
    out
}

/// One pair of `.flightrec.map` (feature `small-ids`): a site's id static (its
/// address is the id) and its name static, both addresses, so that the host
/// names the id.
#[cfg(not(feature = "std"))]
#[doc(hidden)]
#[repr(C)]
#[derive(Debug)]
pub struct IdName(pub *const u8, pub *const u8);

// SAFETY: the pointers are only addresses for the host to read from the ELF; the
// firmware never dereferences them (the section is not loaded).
#[cfg(not(feature = "std"))]
unsafe impl Sync for IdName {}

/// On firmware: records the entry of the function or scope whose id (the address
/// of its name static, see `__site_id!`) is `id`. One call per instrumented
/// entry, not inlined: a few bytes at each site.
#[cfg(not(feature = "std"))]
#[doc(hidden)]
#[inline(never)]
pub fn enter_id(id: usize) {
    record(flightrec_core::fdr::FunctionAction::Enter, id);
}

/// On firmware: records the exit of the function or scope `id`; called by the
/// drop of the site's guard.
#[cfg(not(feature = "std"))]
#[doc(hidden)]
#[inline(never)]
pub fn exit_id(id: usize) {
    record(flightrec_core::fdr::FunctionAction::Exit, id);
}

#[cfg(not(feature = "std"))]
#[inline(always)]
fn record(action: flightrec_core::fdr::FunctionAction, id: usize) {
    // `flightrec.x` places the name statics from address 1 on, far below 2^28;
    // an address outside that range means the linker script is missing, and
    // such an id cannot be written in a function record.
    if let Ok(id) = u32::try_from(id) {
        if let Ok(id) = flightrec_core::fdr::FunctionId::new(id) {
            flightrec_core::global::record_function(action, id);
        }
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn per_poll_enters_around_each_poll() {
        use std::cell::Cell;
        use std::sync::Arc;
        use std::task::{Wake, Waker};
        thread_local!(static DEPTH: Cell<u32> = const { Cell::new(0) });
        thread_local!(static ENTERS: Cell<u32> = const { Cell::new(0) });
        struct Guard;
        impl Drop for Guard {
            fn drop(&mut self) {
                DEPTH.with(|d| d.set(d.get() - 1));
            }
        }
        fn enter() -> Guard {
            DEPTH.with(|d| d.set(d.get() + 1));
            ENTERS.with(|e| e.set(e.get() + 1));
            Guard
        }
        /// Pending twice, then ready; checks the guard is held while polled.
        struct TwoPendings(u32);
        impl Future for TwoPendings {
            type Output = u32;
            fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
                assert_eq!(DEPTH.with(Cell::get), 1);
                self.0 += 1;
                if self.0 < 3 {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                } else {
                    Poll::Ready(self.0)
                }
            }
        }
        struct Noop;
        impl Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(PerPoll::new(TwoPendings(0), enter));
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
        assert_eq!(DEPTH.with(Cell::get), 0);
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(3));
        assert_eq!(DEPTH.with(Cell::get), 0);
        assert_eq!(ENTERS.with(Cell::get), 3);
    }

    #[cfg(all(unix, feature = "xray"))]
    #[test]
    fn names_without_closures() {
        assert_eq!(
            function_name("app::Db::get::{{closure}}::{{closure}}::__here"),
            "app::Db::get"
        );
        assert_eq!(function_name("app::parse::__here"), "app::parse");
    }
}
