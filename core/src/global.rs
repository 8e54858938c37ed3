//! The one global recorder a firmware program links, the way `defmt` has one
//! `#[global_logger]`.
//!
//! Instrumented code (the `#[flightrec::instrument]` attribute, the statement
//! macros) does not hold a recorder: it calls [`record_function`], which calls
//! the recorder the program registered with [`global_recorder!`](crate::global_recorder).
//! The registration is a symbol resolved by the linker, so the record path is one
//! direct call with no pointer to load and no check that a recorder was set; a
//! program that instruments code but registers no recorder fails to link, naming
//! `_flightrec_record_function`.
//!
//! ```
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use flightrec_core::fdr::{FunctionAction, FunctionId};
//! use flightrec_core::global::{record_function, GlobalRecorder};
//!
//! /// Counts entries; a real recorder writes FDR records into the calling
//! /// context's ring.
//! struct CountEntries(AtomicU32);
//!
//! impl GlobalRecorder for CountEntries {
//!     fn record_function(&'static self, action: FunctionAction, _id: FunctionId) {
//!         if action == FunctionAction::Enter {
//!             self.0.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! static TRACE: CountEntries = CountEntries(AtomicU32::new(0));
//! flightrec_core::global_recorder!(TRACE);
//!
//! let id = FunctionId::new(7).unwrap();
//! record_function(FunctionAction::Enter, id);
//! record_function(FunctionAction::Exit, id);
//! assert_eq!(TRACE.0.load(Ordering::Relaxed), 1);
//! ```

use crate::fdr::records::FunctionRecord;
use crate::fdr::{FunctionAction, FunctionId};

/// What a program's global recorder does with a function record: write it into
/// the ring of the context that is running (thread mode, the interrupt priority
/// level, the task), with that recorder's clock. It must never block and never
/// panic; a record it cannot keep is counted as lost.
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use flightrec_core::fdr::{FunctionAction, FunctionId};
/// use flightrec_core::global::GlobalRecorder;
///
/// /// Keeps the id of the last function entered.
/// struct LastEntered(AtomicU32);
/// impl GlobalRecorder for LastEntered {
///     fn record_function(&'static self, action: FunctionAction, id: FunctionId) {
///         if action == FunctionAction::Enter {
///             self.0.store(id.get(), Ordering::Relaxed);
///         }
///     }
/// }
/// static LAST: LastEntered = LastEntered(AtomicU32::new(0));
/// LAST.record_function(FunctionAction::Enter, FunctionId::new(9).unwrap());
/// assert_eq!(LAST.0.load(Ordering::Relaxed), 9);
/// ```
pub trait GlobalRecorder: Sync {
    /// Records `action` of function `id` in the calling context.
    ///
    /// ```
    /// use core::sync::atomic::{AtomicU32, Ordering};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId};
    /// use flightrec_core::global::GlobalRecorder;
    ///
    /// struct CountExits(AtomicU32);
    /// impl GlobalRecorder for CountExits {
    ///     fn record_function(&'static self, action: FunctionAction, _: FunctionId) {
    ///         if action == FunctionAction::Exit {
    ///             self.0.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    /// }
    /// static EXITS: CountExits = CountExits(AtomicU32::new(0));
    /// EXITS.record_function(FunctionAction::Exit, FunctionId::new(2).unwrap());
    /// assert_eq!(EXITS.0.load(Ordering::Relaxed), 1);
    /// ```
    fn record_function(&'static self, action: FunctionAction, id: FunctionId);

    /// [`record_function`](Self::record_function) with the action and id as the
    /// function record's low word, as [`record_function`](crate::global::record_function)
    /// passes them through the link-time symbol. Not public API: a recorder of
    /// the core's overrides it to keep the one value.
    #[doc(hidden)]
    #[inline(always)]
    fn __record_low_word(&'static self, low: u32) {
        let (action, id) = FunctionRecord::from_low_word(low);
        self.record_function(action, id);
    }
}

extern "Rust" {
    // Defined by `global_recorder!` in the program. It takes the action and the
    // id as the function record's low word (`FunctionRecord::low_word`): one
    // register, which the recorder's path keeps as it is until it stores it.
    fn _flightrec_record_function(low: u32);
}

/// Records `action` of function `id` through the program's global recorder.
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use flightrec_core::fdr::{FunctionAction, FunctionId};
/// use flightrec_core::global::{record_function, GlobalRecorder};
///
/// struct CountRecords(AtomicU32);
/// impl GlobalRecorder for CountRecords {
///     fn record_function(&'static self, _: FunctionAction, _: FunctionId) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// static TRACE: CountRecords = CountRecords(AtomicU32::new(0));
/// flightrec_core::global_recorder!(TRACE);
///
/// let id = FunctionId::new(3).unwrap();
/// record_function(FunctionAction::Enter, id);
/// record_function(FunctionAction::Exit, id);
/// assert_eq!(TRACE.0.load(Ordering::Relaxed), 2);
/// ```
#[inline]
pub fn record_function(action: FunctionAction, id: FunctionId) {
    // SAFETY: the symbol is defined by `global_recorder!` with exactly this
    // signature (a safe Rust function); without it the program does not link.
    unsafe { _flightrec_record_function(FunctionRecord::low_word(action, id)) }
}

/// Registers a `static` implementing [`GlobalRecorder`] as the program's global
/// recorder. Use it once per program.
///
/// ```
/// use flightrec_core::fdr::{FunctionAction, FunctionId};
/// use flightrec_core::global::GlobalRecorder;
///
/// struct Discard;
/// impl GlobalRecorder for Discard {
///     fn record_function(&'static self, _: FunctionAction, _: FunctionId) {}
/// }
/// static TRACE: Discard = Discard;
/// flightrec_core::global_recorder!(TRACE);
/// # flightrec_core::global::record_function(FunctionAction::Enter, FunctionId::new(1).unwrap());
/// ```
#[macro_export]
macro_rules! global_recorder {
    ($recorder:path) => {
        #[export_name = "_flightrec_record_function"]
        fn __flightrec_record_function(low: u32) {
            $crate::global::GlobalRecorder::__record_low_word(&$recorder, low)
        }
    };
}
