//! The timing every subject shares: one untimed warm-up batch, then `batches`
//! timed batches of `calls` calls.
//!
//! Time is the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time: on
//! a shared machine a batch that is preempted would otherwise count the other
//! programs' time slices. System calls made by the subject (the rows that write
//! files) still count, as kernel time of the thread. The C program times its
//! batches the same way.

use std::hint::black_box;

use cpu_time::ThreadTime;

/// Nanoseconds of thread CPU time per call of each timed batch. `batch(n)`
/// makes `n` calls and returns a value derived from them (kept with `black_box`).
pub fn measure(calls: u64, batches: u32, mut batch: impl FnMut(u64) -> u64) -> Vec<f64> {
    black_box(batch(calls));
    (0..batches)
        .map(|_| {
            let start = ThreadTime::now();
            black_box(batch(calls));
            start.elapsed().as_nanos() as f64 / calls as f64
        })
        .collect()
}
