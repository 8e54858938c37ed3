//! The clocks Trace2 reads: the UTC wall clock, the local UTC offset for the
//! `HH:MM:SS.uuuuuu` prefix, and a monotonic clock for `t_abs`/`t_rel`.

use std::cell::Cell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use flightrec_core::trace2::{Micros, WallTime};

/// The wall clock now (UTC).
pub(crate) fn wall_now() -> WallTime {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => WallTime::new(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_micros(),
        ),
        Err(e) => {
            // Before 1970: negative seconds, micros counted forwards.
            let d = e.duration();
            let mut secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            let mut micros = d.subsec_micros();
            if micros > 0 {
                secs -= 1;
                micros = 1_000_000 - micros;
            }
            WallTime::new(secs, micros)
        }
    }
}

/// Microseconds on a monotonic clock since `origin`.
pub(crate) fn micros_since(origin: Instant) -> Micros {
    u64::try_from(origin.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Offset of local time from UTC (seconds east) at `secs`, as `localtime_r`
/// sees it (so `TZ` is honoured).
pub(crate) fn utc_offset_at(secs: i64) -> i32 {
    let t = secs as libc::time_t;
    // SAFETY: `tm` is plain data that localtime_r fully initialises on success;
    // both pointers are valid for the duration of the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        tm.tm_gmtoff as i32
    } else {
        0
    }
}

/// Length of the window for which one UTC offset is reused. Offsets change at
/// most at quarter-hour boundaries in every zone in use, so a per-window
/// cache gives what `localtime_r` per event would, at a fraction of its cost.
const OFFSET_WINDOW_SECS: i64 = 900;

thread_local! {
    static OFFSET_CACHE: Cell<(i64, i32)> = const { Cell::new((i64::MIN, 0)) };
}

/// [`utc_offset_at`], cached per thread for each quarter hour.
pub(crate) fn utc_offset_cached(secs: i64) -> i32 {
    let window = secs.div_euclid(OFFSET_WINDOW_SECS);
    OFFSET_CACHE.with(|c| {
        let (w, off) = c.get();
        if w == window {
            off
        } else {
            let off = utc_offset_at(secs);
            c.set((window, off));
            off
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_is_after_2020() {
        assert!(wall_now().secs > 1_577_836_800);
    }

    #[test]
    fn cached_offset_matches_localtime() {
        let now = wall_now().secs;
        assert_eq!(utc_offset_cached(now), utc_offset_at(now));
        assert_eq!(utc_offset_cached(now), utc_offset_at(now));
    }
}
