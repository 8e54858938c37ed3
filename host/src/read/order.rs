//! The orders llvm-xray 14 walks an FDR file in: threads in the iteration
//! order of its block index, each thread's blocks as its sort leaves them.
//! Following them is what makes `convert --format yaml` byte-identical.

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
/// use flightrec_host::read::order::llvm_thread_order;
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
/// use flightrec_host::read::order::llvm_block_order;
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
