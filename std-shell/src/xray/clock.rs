//! The host clock of desktop FDR traces and its measured frequency.
//!
//! On x86_64 every record reads the time-stamp counter with `rdtscp`, which also
//! returns the CPU number (Linux keeps it in `IA32_TSC_AUX`). The file header needs
//! the TSC's rate; [`measure_frequency`] finds it, in this order:
//!
//! 1. `/sys/devices/system/cpu/cpu0/tsc_freq_khz`, where the kernel exports it (what
//!    compiler-rt reads);
//! 2. CPUID leaf 0x15 (TSC/crystal ratio and crystal frequency), when the CPU fills
//!    in all three values (recent Intel parts; usually not AMD or virtual machines);
//! 3. calibration: TSC ticks counted across a 20 ms sleep measured with
//!    `CLOCK_MONOTONIC` (`Instant`), each end taken as the middle of the tightest of
//!    several `rdtsc`/`Instant::now`/`rdtsc` brackets.
//!
//! compiler-rt falls back to 1 GHz when the sysfs file is missing while still
//! recording raw TSC values, which makes every duration wrong; flightrec never does.
//!
//! On other architectures the clock is `CLOCK_MONOTONIC` in nanoseconds (through
//! `Instant`) and the frequency is exactly 10^9; the CPU id is 0.
//!
//! ```
//! let f = flightrec::xray::clock::measure_frequency();
//! assert!(f.hz.get() >= 1_000_000);
//! ```

use std::num::NonZeroU64;
use std::time::Duration;

use flightrec_core::clock::Timestamp;

/// Where a frequency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrequencySource {
    /// `/sys/devices/system/cpu/cpu0/tsc_freq_khz`.
    Sysfs,
    /// CPUID leaf 0x15.
    Cpuid,
    /// Counted against `CLOCK_MONOTONIC`.
    Calibrated,
    /// The clock is `CLOCK_MONOTONIC` in nanoseconds.
    MonotonicNanos,
}

/// The clock rate written in the file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frequency {
    /// Ticks per second; never zero.
    pub hz: NonZeroU64,
    /// How it was found.
    pub source: FrequencySource,
}

/// How long calibration counts ticks.
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(20);

/// Reads the clock: `rdtscp` on x86_64 (TSC and CPU), monotonic nanoseconds elsewhere.
///
/// ```
/// let a = flightrec::xray::clock::now();
/// let b = flightrec::xray::clock::now();
/// assert!(b.tsc >= a.tsc || b.cpu != a.cpu);
/// ```
#[inline(always)]
pub fn now() -> Timestamp {
    #[cfg(target_arch = "x86_64")]
    {
        use flightrec_core::clock::{Clock, TscP};
        // The rate is not needed to read the counter.
        TscP::new(1).now()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Timestamp {
            tsc: monotonic_nanos(),
            cpu: 0,
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn monotonic_nanos() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    // Starts at 1 so that no reading is 0.
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// Finds the rate of [`now`] (see the module docs for the order of sources).
pub fn measure_frequency() -> Frequency {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(hz) = sysfs_khz().and_then(|k| NonZeroU64::new(k.saturating_mul(1000))) {
            return Frequency {
                hz,
                source: FrequencySource::Sysfs,
            };
        }
        if let Some(hz) = cpuid_hz().and_then(NonZeroU64::new) {
            return Frequency {
                hz,
                source: FrequencySource::Cpuid,
            };
        }
        Frequency {
            hz: calibrate(CALIBRATION_WINDOW),
            source: FrequencySource::Calibrated,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Frequency {
            hz: NonZeroU64::new(1_000_000_000).unwrap_or(NonZeroU64::MIN),
            source: FrequencySource::MonotonicNanos,
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn sysfs_khz() -> Option<u64> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/tsc_freq_khz").ok()?;
    text.trim().parse().ok()
}

/// CPUID leaf 0x15: TSC = crystal * EBX / EAX, when EAX, EBX and ECX are all set.
#[cfg(target_arch = "x86_64")]
fn cpuid_hz() -> Option<u64> {
    use std::arch::x86_64::__cpuid;
    // SAFETY: `cpuid` exists on every x86_64 CPU (newer compilers call it safe);
    // leaf 0 reports the highest leaf.
    #[allow(unused_unsafe)]
    let max_leaf = unsafe { __cpuid(0) }.eax;
    if max_leaf < 0x15 {
        return None;
    }
    // SAFETY: leaf 0x15 is at most the highest leaf, checked above.
    #[allow(unused_unsafe)]
    let r = unsafe { __cpuid(0x15) };
    if r.eax == 0 || r.ebx == 0 || r.ecx == 0 {
        return None;
    }
    Some(u64::from(r.ecx) * u64::from(r.ebx) / u64::from(r.eax))
}

/// Counts TSC ticks over `window` of `CLOCK_MONOTONIC`. Never returns less than 1.
#[cfg(target_arch = "x86_64")]
pub fn calibrate(window: Duration) -> NonZeroU64 {
    use std::time::Instant;

    /// One `Instant` and the TSC at the same moment: the middle of the tightest
    /// `rdtsc`/`now`/`rdtsc` bracket of a few tries (preemption widens a bracket).
    fn paired() -> (Instant, u64) {
        let mut best: Option<(u64, Instant, u64)> = None;
        for _ in 0..16 {
            // SAFETY: `rdtsc` is in the x86_64 baseline and has no preconditions.
            let a = unsafe { std::arch::x86_64::_rdtsc() };
            let t = Instant::now();
            // SAFETY: as above.
            let b = unsafe { std::arch::x86_64::_rdtsc() };
            let width = b.wrapping_sub(a);
            if best.is_none_or(|(w, _, _)| width < w) {
                best = Some((width, t, a + width / 2));
            }
        }
        let (_, t, tsc) = best.unwrap_or((0, Instant::now(), 0));
        (t, tsc)
    }

    let (t0, c0) = paired();
    std::thread::sleep(window);
    let (t1, c1) = paired();
    let nanos = t1.duration_since(t0).as_nanos().max(1);
    let ticks = u128::from(c1.wrapping_sub(c0));
    let hz = (ticks * 1_000_000_000 / nanos).min(u128::from(u64::MAX)) as u64;
    NonZeroU64::new(hz).unwrap_or(NonZeroU64::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn cpuid_is_consistent() {
        // Either absent or a plausible rate.
        if let Some(hz) = cpuid_hz() {
            assert!((1_000_000..100_000_000_000).contains(&hz), "{hz}");
        }
    }
}
