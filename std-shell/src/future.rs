//! Tracing async code: futures that enter a Trace2 region or an FDR function
//! on every poll and leave it when the poll returns.
//!
//! Regions and FDR calls nest per thread, but a future that holds a guard
//! across an `.await` may resume on another thread of a multi-threaded
//! runtime, while other tasks run on the first one in between: the guard
//! would leave the wrong region on the wrong thread. So the guards of
//! [`region!`](crate::region), [`trace2::region`](crate::trace2::region),
//! [`xray_fn!`](crate::xray_fn), [`xray_scope!`](crate::xray_scope) and
//! [`xray::enter`](crate::xray::enter) are not `Send`: a future that holds one
//! across an `.await` is not `Send` either, and `tokio::spawn` refuses it at
//! compile time:
//!
//! ```compile_fail
//! async fn handle_connection() {
//!     let _r = flightrec::region!("net", "connection"); // held across the await
//!     tokio::task::yield_now().await;
//! }
//! tokio::spawn(handle_connection()); // error: the future is not `Send`
//! ```
//!
//! ```compile_fail
//! async fn read_frame() {
//!     let _f = flightrec::xray_fn!(); // held across the await
//!     tokio::task::yield_now().await;
//! }
//! tokio::spawn(read_frame()); // error: the future is not `Send`
//! ```
//!
//! A guard dropped before the next `.await` is fine (the same code with the
//! guard in a block compiles):
//!
//! ```
//! async fn handle_connection() {
//!     {
//!         let _r = flightrec::region!("net", "parse"); // no await inside
//!     }
//!     tokio::task::yield_now().await;
//! }
//! # let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build()?;
//! # rt.block_on(async {
//! tokio::spawn(handle_connection()).await.unwrap();
//! # });
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! To trace the whole of an async operation, wrap its future with
//! [`FutureExt::in_region`] or [`FutureExt::in_function`]: the region (or
//! function) is entered each time the future is polled and left when the poll
//! returns, on whichever thread polls it, so every thread's regions and call
//! stacks stay balanced. A future polled five times shows as five regions.

use std::future::Future;
#[cfg(feature = "trace2")]
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};

#[cfg(all(unix, feature = "xray"))]
use flightrec_core::fdr::FunctionId;

/// Adaptors that trace every poll of a future. Implemented for every future.
///
/// ```
/// use flightrec::future::FutureExt;
/// # let dir = tempfile::tempdir()?;
/// # let trace = dir.path().join("trace");
/// # std::env::set_var("MYAPP_TRACE2_EVENT", &trace);
/// // MYAPP_TRACE2_EVENT names the file `trace` (git's JSON lines).
/// let t2 = flightrec::trace2::Builder::new().prefix("MYAPP_TRACE2").init();
/// let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build()?;
/// rt.block_on(async {
///     let tasks: Vec<_> = (0..8)
///         .map(|_| {
///             tokio::spawn(
///                 async {
///                     tokio::task::yield_now().await; // may resume on another thread
///                 }
///                 .in_region("net", "connection"),
///             )
///         })
///         .collect();
///     for t in tasks {
///         t.await.unwrap();
///     }
/// });
/// drop(rt);
/// drop(t2);
/// let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)?
///     .lines()
///     .map(serde_json::from_str)
///     .collect::<Result<_, _>>()?;
/// let enters: Vec<_> = events.iter().filter(|e| e["event"] == "region_enter").collect();
/// let leaves = events.iter().filter(|e| e["event"] == "region_leave").count();
/// assert!(enters.len() >= 16); // at least two polls each
/// assert_eq!(enters.len(), leaves);
/// assert!(enters.iter().all(|e| e["nesting"] == 1 && e["label"] == "connection"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait FutureExt: Future + Sized {
    /// Enters Trace2 region `label` of `category` on each poll of this future
    /// and leaves it when the poll returns. The region's `file:line` is the
    /// caller's. Example on [`FutureExt`].
    #[cfg(feature = "trace2")]
    #[track_caller]
    fn in_region<'a>(self, category: &'a str, label: &'a str) -> InRegion<'a, Self> {
        InRegion {
            inner: self,
            category,
            label,
            loc: Location::caller(),
        }
    }

    /// Records an FDR entry of function `id` on each poll of this future and
    /// its exit when the poll returns.
    ///
    /// ```
    /// use flightrec::future::FutureExt;
    /// use flightrec::xray::{CallSite, Config};
    /// use flightrec::core::fdr::decoder::verify;
    /// static FETCH: CallSite = CallSite::new();
    /// # let dir = tempfile::tempdir()?;
    /// # let base = format!("{}/trace-", dir.path().display());
    /// // `base` is a file prefix in a temporary directory; 0 keeps even the shortest calls.
    /// let config = Config::builder().logfile_base(base).func_duration_threshold_us(0).build()?;
    /// flightrec::xray::init(config)?;
    /// let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let fetch = FETCH.id(|| "client::fetch"); // one id, named in the names file
    /// rt.block_on(async { tokio::task::yield_now().await }.in_function(fetch));
    /// let trace = std::fs::read(flightrec::xray::shutdown()?.path.unwrap())?;
    /// assert_eq!(verify(&trace)?.function_records, 4); // two polls: two calls
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(all(unix, feature = "xray"))]
    fn in_function(self, id: FunctionId) -> InFunction<Self> {
        InFunction { inner: self, id }
    }
}

impl<F: Future> FutureExt for F {}

/// A future in a Trace2 region on each poll. Made by [`FutureExt::in_region`].
///
/// ```
/// use flightrec::future::{FutureExt, InRegion};
/// let fut: InRegion<'_, _> = async { 7 }.in_region("app", "compute");
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// assert_eq!(rt.block_on(fut), 7); // the inner future's output
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg(feature = "trace2")]
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct InRegion<'a, F> {
    inner: F,
    category: &'a str,
    label: &'a str,
    loc: &'static Location<'static>,
}

#[cfg(feature = "trace2")]
impl<F: Future> Future for InRegion<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        use crate::trace2::at;
        // SAFETY: `inner` is pinned structurally: it is never moved out of
        // `self` (no method hands it out by value or by `&mut`, `InRegion` has
        // no `Drop` impl and implements `Unpin` only when `F` does, through the
        // auto trait); the other fields are not pinned and only read.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above, `inner` stays where it is for as long as `self` is
        // pinned.
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let at = at::At {
            file: Some(this.loc.file()),
            line: Some(this.loc.line()),
        };
        // Left also when the poll unwinds, so the thread's regions stay balanced.
        struct Leave<'a>(at::At<'a>, &'a str, &'a str);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                at::region_leave(self.0, self.1, self.2);
            }
        }
        let _leave = at::region_enter(at, this.category, this.label, None)
            .then(|| Leave(at, this.category, this.label));
        inner.poll(cx)
    }
}

/// A future in an FDR function on each poll. Made by
/// [`FutureExt::in_function`].
///
/// ```
/// use flightrec::future::{FutureExt, InFunction};
/// let id = flightrec::xray::function_id("app::compute");
/// let fut: InFunction<_> = async { 7 }.in_function(id);
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// assert_eq!(rt.block_on(fut), 7); // the inner future's output
/// # Ok::<(), std::io::Error>(())
/// ```
#[cfg(all(unix, feature = "xray"))]
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct InFunction<F> {
    inner: F,
    id: FunctionId,
}

#[cfg(all(unix, feature = "xray"))]
impl<F: Future> Future for InFunction<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is pinned structurally, as in `InRegion::poll`: never
        // moved out, no `Drop` impl, `Unpin` only through the auto trait.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let _call = crate::xray::enter(this.id); // exit when the poll returns
        inner.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    /// A future that is not `Unpin` and checks that it never moved between
    /// polls (the adaptors' structural pinning).
    struct Pinned {
        at: Option<usize>,
        polls: usize,
        _pin: std::marker::PhantomPinned,
    }

    impl Future for Pinned {
        type Output = usize;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            // SAFETY: only fields are updated in place; nothing moves.
            let this = unsafe { self.get_unchecked_mut() };
            let here = std::ptr::from_ref(this) as usize;
            assert_eq!(*this.at.get_or_insert(here), here, "moved while pinned");
            this.polls += 1;
            if this.polls < 3 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(this.polls)
            }
        }
    }

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn run<F: Future>(f: F) -> F::Output {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count);
        let mut cx = Context::from_waker(&waker);
        let mut f = Box::pin(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    fn pinned() -> Pinned {
        Pinned {
            at: None,
            polls: 0,
            _pin: std::marker::PhantomPinned,
        }
    }

    #[cfg(feature = "trace2")]
    #[test]
    fn in_region_polls_the_pinned_future_in_place() {
        assert_eq!(run(pinned().in_region("test", "pinned")), 3);
    }

    #[cfg(all(unix, feature = "xray"))]
    #[test]
    fn in_function_polls_the_pinned_future_in_place() {
        let id = FunctionId::new(1).unwrap();
        assert_eq!(run(pinned().in_function(id)), 3);
    }
}
