//! The timing every subject shares: one untimed warm-up batch, then `batches`
//! timed batches of `calls` calls.

use std::hint::black_box;
use std::time::Instant;

/// Nanoseconds per call of each timed batch. `batch(n)` makes `n` calls and
/// returns a value derived from them (kept with `black_box`).
pub fn measure(calls: u64, batches: u32, mut batch: impl FnMut(u64) -> u64) -> Vec<f64> {
    black_box(batch(calls));
    (0..batches)
        .map(|_| {
            let start = Instant::now();
            black_box(batch(calls));
            start.elapsed().as_nanos() as f64 / calls as f64
        })
        .collect()
}
