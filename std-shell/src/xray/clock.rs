//! The host clock of desktop FDR traces and its measured frequency.
//!
//! On x86_64 every record reads the time-stamp counter. With `rdtscp` the reading
//! also carries the CPU number (Linux keeps it in `IA32_TSC_AUX`), so the trace
//! shows CPU migrations; with `rdtsc` the CPU is recorded as 0. Which one is a
//! measurement ([`CpuIds::Auto`], the default): some hypervisors trap `rdtscp`,
//! which then costs several times an `rdtsc` (19 ns against 9 ns back to back on
//! the virtual machines this project is built on), so `Auto` uses `rdtscp` only
//! when the CPU has it and it costs at most 1.25 times an `rdtsc` plus 5 ns.
//!
//! The file header needs the TSC's rate; [`measure_frequency`] finds it, in this
//! order:
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flightrec_core::clock::Timestamp;

/// Where a frequency came from.
///
/// ```
/// use flightrec::xray::clock::{measure_frequency, FrequencySource};
/// let source = measure_frequency().source;
/// if cfg!(target_arch = "x86_64") {
///     assert_ne!(source, FrequencySource::MonotonicNanos); // the TSC's rate
/// } else {
///     assert_eq!(source, FrequencySource::MonotonicNanos);
/// }
/// ```
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

/// The clock rate written in the file header. Example on [`measure_frequency`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frequency {
    /// Ticks per second; never zero.
    pub hz: NonZeroU64,
    /// How it was found.
    pub source: FrequencySource,
}

/// How long calibration counts ticks.
///
/// ```
/// # #[cfg(target_arch = "x86_64")]
/// # {
/// use flightrec::xray::clock::{calibrate, CALIBRATION_WINDOW};
/// let t = std::time::Instant::now();
/// calibrate(CALIBRATION_WINDOW);
/// assert!(t.elapsed() >= CALIBRATION_WINDOW);
/// # }
/// ```
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(20);

/// Whether CPU ids are recorded (x86_64: `rdtscp` instead of `rdtsc`).
///
/// ```
/// use flightrec::xray::clock::{has_rdtscp, now, select_cpu_ids, CpuIds};
/// assert!(!select_cpu_ids(CpuIds::Never));
/// assert_eq!(now().cpu, 0); // `rdtsc`: no CPU id
/// assert_eq!(select_cpu_ids(CpuIds::Always), has_rdtscp());
/// if !has_rdtscp() {
///     assert!(!select_cpu_ids(CpuIds::Auto)); // `Auto` needs the instruction too
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuIds {
    /// `rdtscp` when the CPU has it and it is cheap (see the module docs).
    Auto,
    /// `rdtscp` whenever the CPU has it.
    Always,
    /// `rdtsc`; every record says CPU 0.
    Never,
}

/// `now` reads `rdtscp` (else `rdtsc`); set by [`select_cpu_ids`].
#[doc(hidden)]
pub static USE_RDTSCP: AtomicBool = AtomicBool::new(false);

/// Chooses how [`now`] reads the clock; returns whether CPU ids are recorded.
/// [`init`](super::init) calls it with the configured [`CpuIds`]. Example on
/// [`CpuIds`].
pub fn select_cpu_ids(choice: CpuIds) -> bool {
    let on = match choice {
        CpuIds::Never => false,
        CpuIds::Always => has_rdtscp(),
        CpuIds::Auto => has_rdtscp() && rdtscp_is_cheap(),
    };
    USE_RDTSCP.store(on, Ordering::Relaxed);
    on
}

/// Whether the CPU has `rdtscp` (CPUID 0x8000_0001, EDX bit 27); `false` off
/// x86_64. Example on [`CpuIds`].
pub fn has_rdtscp() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: `cpuid` exists on every x86_64 CPU (newer compilers call it safe).
        #[allow(unused_unsafe)]
        let max = unsafe { __cpuid(0x8000_0000) }.eax;
        if max < 0x8000_0001 {
            return false;
        }
        // SAFETY: the leaf is supported, checked above.
        #[allow(unused_unsafe)]
        let edx = unsafe { __cpuid(0x8000_0001) }.edx;
        edx & (1 << 27) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Times 10,000 `rdtsc` against 10,000 `rdtscp` with `Instant` (best of 3 rounds;
/// under 1 ms). Wall time, not TSC ticks: a hypervisor that traps the instructions
/// can make the counter itself misreport their cost.
fn rdtscp_is_cheap() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__rdtscp, _rdtsc};
        use std::time::Instant;
        const N: u32 = 10_000;
        let mut best = (Duration::MAX, Duration::MAX);
        let mut aux = 0u32;
        for _ in 0..3 {
            // Each reading feeds a sum, as each feeds a record in a trace; independent
            // readings overlap and hide the cost.
            let mut sum = 0u64;
            let t0 = Instant::now();
            for _ in 0..N {
                // SAFETY: `rdtsc` is in the x86_64 baseline.
                sum = sum.wrapping_add(unsafe { _rdtsc() });
            }
            let t1 = Instant::now();
            for _ in 0..N {
                // SAFETY: the caller checked `has_rdtscp`; it only writes `aux`.
                sum = sum.wrapping_add(unsafe { __rdtscp(&mut aux) });
            }
            let t2 = Instant::now();
            std::hint::black_box(sum);
            best = (best.0.min(t1 - t0), best.1.min(t2 - t1));
        }
        // Per reading: rdtscp <= 1.25 x rdtsc + 5 ns.
        4 * best.1 <= 5 * best.0 + 4 * N * Duration::from_nanos(5)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Reads the clock: the TSC on x86_64 (with the CPU id when [`select_cpu_ids`]
/// chose `rdtscp`), monotonic nanoseconds elsewhere.
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
        use flightrec_core::clock::{Clock, Tsc, TscP};
        // The rate is not needed to read the counter.
        if USE_RDTSCP.load(Ordering::Relaxed) {
            TscP::new(1).now()
        } else {
            Tsc::new(1).now()
        }
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
///
/// ```
/// use flightrec::xray::clock::{measure_frequency, now, Frequency};
/// use std::time::{Duration, Instant};
/// let f: Frequency = measure_frequency();
/// // Ticks of `now` over a sleep, divided by the rate, give the time that passed.
/// let (t0, a) = (Instant::now(), now().tsc);
/// std::thread::sleep(Duration::from_millis(30));
/// let (b, real) = (now().tsc, t0.elapsed().as_secs_f64());
/// let measured = (b - a) as f64 / f.hz.get() as f64;
/// assert!((measured - real).abs() < 0.2 * real, "{measured} s by the clock, {real} s passed");
/// ```
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
/// Only on x86_64.
///
/// ```
/// # #[cfg(target_arch = "x86_64")]
/// # {
/// use flightrec::xray::clock::calibrate;
/// use std::time::Duration;
/// let a = calibrate(Duration::from_millis(10)).get() as f64;
/// let b = calibrate(Duration::from_millis(20)).get() as f64;
/// assert!((a - b).abs() < 0.05 * b, "{a} Hz against {b} Hz");
/// # }
/// ```
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
