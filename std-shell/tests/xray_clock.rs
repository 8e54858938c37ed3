//! The host clock's measured frequency: never zero, and it converts ticks to the
//! time `CLOCK_MONOTONIC` measured.

use std::time::{Duration, Instant};

use flightrec::xray::clock::{self, FrequencySource};

#[test]
fn frequency_is_nonzero_and_sane() {
    let f = clock::measure_frequency();
    #[cfg(target_arch = "x86_64")]
    {
        assert_ne!(f.source, FrequencySource::MonotonicNanos);
        // Every x86_64 TSC of the last 20 years runs between 100 MHz and 10 GHz.
        assert!((100_000_000..10_000_000_000).contains(&f.hz.get()), "{f:?}");
    }
    #[cfg(not(target_arch = "x86_64"))]
    assert_eq!(f.hz.get(), 1_000_000_000);
}

#[test]
fn ticks_divided_by_frequency_give_elapsed_time() {
    let f = clock::measure_frequency().hz.get() as f64;
    // Several tries: a busy shared machine can preempt between the two readings.
    let mut errors = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let a = clock::now().tsc;
        std::thread::sleep(Duration::from_millis(50));
        let b = clock::now().tsc;
        let real = t0.elapsed().as_secs_f64();
        let measured = (b - a) as f64 / f;
        let error = (measured - real).abs() / real;
        if error < 0.02 {
            return;
        }
        errors.push(error);
    }
    panic!("TSC time differs from CLOCK_MONOTONIC by {errors:?}");
}

#[test]
#[cfg(target_arch = "x86_64")]
fn calibration_agrees_with_itself() {
    let a = clock::calibrate(Duration::from_millis(20)).get() as f64;
    let b = clock::calibrate(Duration::from_millis(40)).get() as f64;
    assert!((a - b).abs() / b < 0.01, "{a} vs {b}");
}
