//! A whole FDR file in memory, expanded: what the YAML writer and the tests
//! read. [`crate::read::index`] yields the same events one at a time for files
//! of any size.

use flightrec_core::fdr::decoder::DecodeError;
use flightrec_core::fdr::FileHeader;

use super::events::XEvent;
use super::index::scan;

/// A verified trace, expanded.
///
/// ```
/// use flightrec_host::read::trace::load;
///
/// // Two blocks of thread 101, then one of thread 202.
/// let trace = load(include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
/// assert_eq!(trace.header.version.number(), 5);
/// assert_eq!(trace.seconds_per_tick(), 1e-9); // 1 GHz
///
/// // In thread order...
/// let by_thread: Vec<(u32, u32)> = trace.events.iter().map(|e| (e.thread, e.func_id)).collect();
/// assert_eq!(by_thread, [(101, 1), (101, 2), (101, 2), (101, 1), (202, 5), (202, 5)]);
/// // ...and in time order, as `llvm-xray convert` prints them.
/// let tscs: Vec<u64> = trace.sorted_events().iter().map(|e| e.tsc).collect();
/// assert_eq!(tscs, [1_000_000, 1_000_050, 1_000_100, 1_000_650, 1_000_700, 1_000_900]);
///
/// // A file the verifier rejects is not expanded.
/// let bad = load(include_bytes!("../../../testdata/xray/bad-fn-action5.xray"));
/// assert_eq!(bad.unwrap_err().offset, 112);
/// ```
#[derive(Clone, Debug)]
pub struct Trace {
    /// The file header.
    pub header: FileHeader,
    /// Events in thread order (threads in llvm-xray's order, see
    /// [`llvm_thread_order`](super::order::llvm_thread_order); each thread's events in its block order).
    pub events: Vec<XEvent>,
}

impl Trace {
    /// Events sorted by TSC, stable (what `llvm-xray convert` prints). Example on
    /// [`Trace`].
    pub fn sorted_events(&self) -> Vec<&XEvent> {
        let mut v: Vec<&XEvent> = self.events.iter().collect();
        v.sort_by_key(|e| e.tsc);
        v
    }

    /// Seconds per TSC tick. Example on [`Trace`].
    pub fn seconds_per_tick(&self) -> f64 {
        1.0 / self.header.cycle_frequency.get() as f64
    }
}

/// Verifies a whole file with the core's verifier and expands it. Example on
/// [`Trace`].
///
/// The whole trace in memory: [`crate::read::index`] reads the same events one at a
/// time for files of any size.
pub fn load(bytes: &[u8]) -> Result<Trace, DecodeError> {
    let index = scan(bytes, &mut |_| {})?;
    let mut events = Vec::new();
    for t in 0..index.threads() {
        let mut cursor = index.thread_events(bytes, t);
        while let Some(e) = cursor.next_event() {
            events.push(e);
        }
    }
    Ok(Trace {
        header: *index.header(),
        events,
    })
}
