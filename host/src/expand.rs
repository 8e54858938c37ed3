//! From FDR records to timed events, the way `llvm-xray` 14's loader does it.
//!
//! Blocks (a NewBuffer and what follows it) are grouped per thread, keyed by
//! (process, thread). Threads come in the order llvm-xray lists them, the iteration
//! order of its block index (an LLVM `DenseMap`, see [`llvm_thread_order`]); a
//! thread's blocks come in file order. Each thread is expanded with a fresh state:
//! NewCPUId sets the CPU and the base TSC, TSCWrap the base TSC, every function
//! record and version-5 event adds its delta. CallArgument records attach to the
//! record before them and make it an `function-enter-arg`.
//!
//! Two cosmetic quirks of LLVM's expander are kept so that `convert --format yaml`
//! matches `llvm-xray convert` byte for byte: an event shows the function id of the
//! record before it in its thread, and a typed event's type stays in the `type`
//! field of the thread's records after it.

use flightrec_core::fdr::decoder::DecodeError;
use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::{FileHeader, FunctionAction, Version};

/// What an expanded event is (LLVM's `RecordTypes`).
///
/// ```
/// use flightrec_host::expand::Kind;
///
/// assert_eq!(Kind::EnterArg.yaml_name(), "function-enter-arg");
/// assert_eq!(Kind::TailExit.yaml_name(), "function-tail-exit");
/// assert!(Kind::Enter.is_enter() && Kind::EnterArg.is_enter());
/// assert!(Kind::Exit.is_exit() && Kind::TailExit.is_exit());
/// assert!(!Kind::CustomEvent.is_enter() && !Kind::TypedEvent.is_exit());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Function entry.
    Enter,
    /// Function exit.
    Exit,
    /// Exit through a tail call.
    TailExit,
    /// Function entry with arguments.
    EnterArg,
    /// Custom event.
    CustomEvent,
    /// Typed event.
    TypedEvent,
}

impl Kind {
    /// LLVM's YAML name for the kind. Example on [`Kind`].
    pub const fn yaml_name(self) -> &'static str {
        match self {
            Kind::Enter => "function-enter",
            Kind::Exit => "function-exit",
            Kind::TailExit => "function-tail-exit",
            Kind::EnterArg => "function-enter-arg",
            Kind::CustomEvent => "custom-event",
            Kind::TypedEvent => "typed-event",
        }
    }

    /// Whether it is an entry (with or without arguments). Example on [`Kind`].
    pub const fn is_enter(self) -> bool {
        matches!(self, Kind::Enter | Kind::EnterArg)
    }

    /// Whether it is an exit (plain or tail). Example on [`Kind`].
    pub const fn is_exit(self) -> bool {
        matches!(self, Kind::Exit | Kind::TailExit)
    }
}

/// One event of a trace, with absolute time.
///
/// ```
/// use flightrec_host::expand::{load, Kind, XEvent};
///
/// let trace = load(include_bytes!("../../testdata/xray/crafted-v5.xray")).unwrap();
/// // llvm-xray convert: { type: 0, func-id: 3, function: '3', args: [ 42, 3735928559 ],
/// //   cpu: 0, thread: 101, process: 4242, kind: function-enter-arg, tsc: 1001500, data: '' }
/// assert_eq!(
///     trace.events[2],
///     XEvent {
///         event_type: 0,
///         func_id: 3,
///         args: vec![42, 0xdead_beef],
///         cpu: 0,
///         thread: 101,
///         process: 4242,
///         kind: Kind::EnterArg,
///         tsc: 1_001_500,
///         data: Vec::new(),
///     }
/// );
/// // A custom event keeps the function id of the record before it, as in LLVM.
/// let custom = &trace.events[4];
/// assert_eq!((custom.kind, custom.func_id, custom.tsc), (Kind::CustomEvent, 3, 1_002_600));
/// assert_eq!(custom.data, b"hello");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XEvent {
    /// The typed-event type field (sticky, as in LLVM).
    pub event_type: u16,
    /// The function id.
    pub func_id: u32,
    /// Call arguments.
    pub args: Vec<u64>,
    /// CPU.
    pub cpu: u16,
    /// Thread id.
    pub thread: u32,
    /// Process id (0 when the trace has none).
    pub process: u32,
    /// What happened.
    pub kind: Kind,
    /// Absolute TSC.
    pub tsc: u64,
    /// Event payload.
    pub data: Vec<u8>,
}

/// A verified trace, expanded.
///
/// ```
/// use flightrec_host::expand::load;
///
/// // Two blocks of thread 101, then one of thread 202.
/// let trace = load(include_bytes!("../../testdata/xray/crafted-v5-2threads.xray")).unwrap();
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
/// let bad = load(include_bytes!("../../testdata/xray/bad-fn-action5.xray"));
/// assert_eq!(bad.unwrap_err().offset, 112);
/// ```
#[derive(Clone, Debug)]
pub struct Trace {
    /// The file header.
    pub header: FileHeader,
    /// Events in thread order (threads in llvm-xray's order, see
    /// [`llvm_thread_order`]; each thread's events in its block order).
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

/// The state of LLVM's `TraceExpander` for one thread.
#[derive(Clone)]
pub(crate) struct Expander {
    version: Version,
    current: XEvent,
    building: bool,
    ignoring: bool,
    base_tsc: u64,
    cpu: u16,
    tid: u32,
    pid: u32,
    pub(crate) out: Vec<XEvent>,
}

impl Expander {
    pub(crate) fn new(version: Version) -> Self {
        Self {
            version,
            current: XEvent {
                event_type: 0,
                func_id: 0,
                args: Vec::new(),
                cpu: 0,
                thread: 0,
                process: 0,
                kind: Kind::Enter,
                tsc: 0,
                data: Vec::new(),
            },
            building: false,
            ignoring: false,
            base_tsc: 0,
            cpu: 0,
            tid: 0,
            pid: 0,
            out: Vec::new(),
        }
    }

    pub(crate) fn reset_current(&mut self) {
        if self.building {
            self.out.push(self.current.clone());
        }
        self.building = false;
        self.current.args.clear();
        self.current.data.clear();
    }

    fn stamp(&mut self, tsc: u64, cpu: u16, kind: Kind) {
        self.current.tsc = tsc;
        self.current.cpu = cpu;
        self.current.process = self.pid;
        self.current.thread = self.tid;
        self.current.kind = kind;
        self.building = true;
    }

    pub(crate) fn visit(&mut self, record: &Record<'_>) {
        match *record {
            Record::NewBuffer { tid } => {
                self.ignoring = false;
                self.tid = tid as u32;
                if self.version == Version::V2 {
                    self.pid = tid as u32;
                }
            }
            Record::Pid { pid } => self.pid = pid as u32,
            Record::EndOfBuffer => self.ignoring = true,
            Record::NewCpuId { cpu, tsc } => {
                self.cpu = cpu;
                self.base_tsc = tsc;
            }
            Record::TscWrap { tsc } => self.base_tsc = tsc,
            Record::Walltime { .. } | Record::BufferExtents { .. } => {}
            Record::CallArgument { value } => {
                self.current.args.push(value);
                self.current.kind = Kind::EnterArg;
            }
            Record::Function { action, id, delta } => {
                self.reset_current();
                if !self.ignoring {
                    self.base_tsc = self.base_tsc.wrapping_add(u64::from(delta));
                    self.current.func_id = id.get();
                    let kind = match action {
                        FunctionAction::Enter => Kind::Enter,
                        FunctionAction::Exit => Kind::Exit,
                        FunctionAction::TailExit => Kind::TailExit,
                        FunctionAction::EnterArg => Kind::EnterArg,
                    };
                    self.stamp(self.base_tsc, self.cpu, kind);
                }
            }
            Record::CustomEvent { time, payload } => {
                self.reset_current();
                if !self.ignoring {
                    let (tsc, cpu) = match time {
                        CustomEventTime::Absolute { tsc, cpu } => (tsc, cpu),
                        CustomEventTime::Delta(d) => {
                            self.base_tsc = self.base_tsc.wrapping_add(d as i64 as u64);
                            (self.base_tsc, self.cpu)
                        }
                    };
                    self.stamp(tsc, cpu, Kind::CustomEvent);
                    self.current.data = payload.to_vec();
                }
            }
            Record::TypedEvent {
                delta,
                event_type,
                payload,
            } => {
                self.reset_current();
                if !self.ignoring {
                    self.base_tsc = self.base_tsc.wrapping_add(delta as i64 as u64);
                    self.current.event_type = event_type;
                    self.stamp(self.base_tsc, self.cpu, Kind::TypedEvent);
                    self.current.data = payload.to_vec();
                }
            }
        }
    }
}

/// Verifies a whole file with the core's verifier and expands it. Example on
/// [`Trace`].
///
/// The whole trace in memory: [`crate::stream`] reads the same events one at a
/// time for files of any size.
pub fn load(bytes: &[u8]) -> Result<Trace, DecodeError> {
    let index = crate::stream::scan(bytes, &mut |_| {})?;
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

/// The order in which llvm-xray 14 walks its block index: `keys` are (process,
/// thread) pairs in insertion order, the result indexes `keys` in the iteration
/// order of an LLVM `DenseMap<std::pair<uint64_t, int32_t>, _>` built by inserting
/// them in that order.
///
/// The map is an open-addressing table: 64 buckets at first, doubled when an
/// insertion would make it three quarters full, quadratic probing from the key's
/// hash, and iteration in bucket order. The hash combines `DenseMapInfo`'s hashes of
/// the two halves (`value * 37`) with `combineHashValue`.
///
/// ```
/// use flightrec_host::expand::llvm_thread_order;
///
/// // Threads 1, 2, 3 of process 100, inserted in that order:
/// assert_eq!(llvm_thread_order(&[(100, 1), (100, 2), (100, 3)]).len(), 3);
/// // The order does not follow the thread ids: it is the table's bucket order.
/// let keys: Vec<(u64, i32)> = (1..=8).map(|t| (4242, t)).collect();
/// let order = llvm_thread_order(&keys);
/// let mut sorted = order.clone();
/// sorted.sort();
/// assert_eq!(sorted, (0..8).collect::<Vec<_>>());
/// ```
pub fn llvm_thread_order(keys: &[(u64, i32)]) -> Vec<usize> {
    fn hash(&(pid, tid): &(u64, i32)) -> u32 {
        let a = pid.wrapping_mul(37) as u32;
        let b = (tid as u32).wrapping_mul(37);
        // llvm::detail::combineHashValue
        let mut key = (u64::from(a) << 32) | u64::from(b);
        key = key.wrapping_add(!(key << 32));
        key ^= key >> 22;
        key = key.wrapping_add(!(key << 13));
        key ^= key >> 8;
        key = key.wrapping_add(key << 3);
        key ^= key >> 15;
        key = key.wrapping_add(!(key << 27));
        key ^= key >> 31;
        key as u32
    }
    fn place(buckets: &mut [Option<usize>], keys: &[(u64, i32)], i: usize) {
        let mask = buckets.len() - 1;
        let mut bucket = hash(&keys[i]) as usize & mask;
        let mut probe = 1;
        while buckets[bucket].is_some() {
            bucket = (bucket + probe) & mask;
            probe += 1;
        }
        buckets[bucket] = Some(i);
    }
    let mut buckets: Vec<Option<usize>> = Vec::new();
    for i in 0..keys.len() {
        if (i + 1) * 4 >= buckets.len() * 3 {
            // grow(NumBuckets * 2): at least 64 buckets, old entries re-placed in
            // bucket order.
            let size = (buckets.len() * 2).max(64);
            let old = std::mem::replace(&mut buckets, vec![None; size]);
            for j in old.into_iter().flatten() {
                place(&mut buckets, keys, j);
            }
        }
        place(&mut buckets, keys, i);
    }
    buckets.into_iter().flatten().collect()
}

/// The order in which llvm-xray 14 expands one thread's blocks: `walls` are the
/// blocks' WalltimeMarkers (seconds, microseconds) in file order, the result
/// indexes `walls` in the order `llvm::sort` leaves them with LLVM's comparator
/// `a.seconds < b.seconds && a.micros < b.micros`.
///
/// That comparator is not a strict weak order, so the result depends on the sort
/// algorithm: this is libstdc++'s `std::sort` (what `llvm::sort` calls in a
/// release build), step for step: introsort with a median-of-three pivot down to
/// runs of 16, heap sort past the depth limit, then insertion sort. Where
/// libstdc++'s unguarded loops would run past the first block with such a
/// comparator, this stops at it. The order matters beyond time: the expander is
/// one per thread and a custom event keeps the func-id of the record before it.
///
/// ```
/// use flightrec_host::expand::llvm_block_order;
///
/// // Ordered when both fields grow.
/// assert_eq!(llvm_block_order(&[(101, 2), (100, 1)]), [1, 0]);
/// // Not reordered when only the seconds grow: neither is "less".
/// assert_eq!(llvm_block_order(&[(101, 1), (100, 2)]), [0, 1]);
/// // flightrec's markers (second S + k, microsecond k) keep the file order.
/// let walls: Vec<(u64, u32)> = (0..40).map(|k| (1_000 + k, k as u32)).collect();
/// assert_eq!(llvm_block_order(&walls), (0..40).collect::<Vec<_>>());
/// ```
pub fn llvm_block_order(walls: &[(u64, u32)]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..walls.len()).collect();
    let less = |a: usize, b: usize| {
        let (x, y) = (walls[a], walls[b]);
        x.0 < y.0 && x.1 < y.1
    };
    libstdcxx_sort(&mut v, &less);
    v
}

/// libstdc++'s `std::sort` over `v` with the comparator `less`.
fn libstdcxx_sort(v: &mut [usize], less: &dyn Fn(usize, usize) -> bool) {
    const THRESHOLD: usize = 16;
    if v.len() < 2 {
        return;
    }
    let depth = 2 * (usize::BITS - 1 - v.len().leading_zeros()) as usize;
    introsort_loop(v, depth, less);
    // __final_insertion_sort
    if v.len() > THRESHOLD {
        insertion_sort(&mut v[..THRESHOLD], less);
        for i in THRESHOLD..v.len() {
            linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, less);
    }

    fn introsort_loop(v: &mut [usize], mut depth: usize, less: &dyn Fn(usize, usize) -> bool) {
        let mut last = v.len();
        while last > THRESHOLD {
            if depth == 0 {
                heap_sort(&mut v[..last], less);
                return;
            }
            depth -= 1;
            let cut = partition_pivot(&mut v[..last], less);
            introsort_loop(&mut v[cut..last], depth, less);
            last = cut;
        }
    }

    fn partition_pivot(v: &mut [usize], less: &dyn Fn(usize, usize) -> bool) -> usize {
        let n = v.len();
        let mid = n / 2;
        // __move_median_to_first(first, first + 1, mid, last - 1)
        let (a, b, c) = (1, mid, n - 1);
        let pick = if less(v[a], v[b]) {
            if less(v[b], v[c]) {
                b
            } else if less(v[a], v[c]) {
                c
            } else {
                a
            }
        } else if less(v[a], v[c]) {
            a
        } else if less(v[b], v[c]) {
            c
        } else {
            b
        };
        v.swap(0, pick);
        // __unguarded_partition(first + 1, last, first)
        let (mut first, mut last) = (1, n);
        loop {
            while first < n && less(v[first], v[0]) {
                first += 1;
            }
            last -= 1;
            while last > 0 && less(v[0], v[last]) {
                last -= 1;
            }
            if first >= last {
                return first;
            }
            v.swap(first, last);
            first += 1;
        }
    }

    fn insertion_sort(v: &mut [usize], less: &dyn Fn(usize, usize) -> bool) {
        for i in 1..v.len() {
            if less(v[i], v[0]) {
                v[..=i].rotate_right(1);
            } else {
                linear_insert(v, i, less);
            }
        }
    }

    /// __unguarded_linear_insert, stopped at the first element.
    fn linear_insert(v: &mut [usize], mut at: usize, less: &dyn Fn(usize, usize) -> bool) {
        let val = v[at];
        while at > 0 && less(val, v[at - 1]) {
            v[at] = v[at - 1];
            at -= 1;
        }
        v[at] = val;
    }

    /// __partial_sort(first, last, last): make_heap, then sort_heap.
    fn heap_sort(v: &mut [usize], less: &dyn Fn(usize, usize) -> bool) {
        let len = v.len();
        if len >= 2 {
            let mut parent = (len - 2) / 2;
            loop {
                let value = v[parent];
                adjust_heap(v, parent, len, value, less);
                if parent == 0 {
                    break;
                }
                parent -= 1;
            }
        }
        let mut last = len;
        while last > 1 {
            last -= 1;
            // __pop_heap(first, last, last)
            let value = v[last];
            v[last] = v[0];
            adjust_heap(&mut v[..last], 0, last, value, less);
        }
    }

    fn adjust_heap(
        v: &mut [usize],
        mut hole: usize,
        len: usize,
        value: usize,
        less: &dyn Fn(usize, usize) -> bool,
    ) {
        let top = hole;
        let mut second = hole;
        while second < (len.saturating_sub(1)) / 2 {
            second = 2 * (second + 1);
            if less(v[second], v[second - 1]) {
                second -= 1;
            }
            v[hole] = v[second];
            hole = second;
        }
        if len & 1 == 0 && len >= 2 && second == (len - 2) / 2 {
            second = 2 * (second + 1);
            v[hole] = v[second - 1];
            hole = second - 1;
        }
        // __push_heap(first, hole, top, value)
        while hole > top {
            let parent = (hole - 1) / 2;
            if !less(v[parent], value) {
                break;
            }
            v[hole] = v[parent];
            hole = parent;
        }
        v[hole] = value;
    }
}
