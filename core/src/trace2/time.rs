//! Wall-clock time and the calendar math Trace2 needs, without `std`.
//!
//! Trace2 prints the local time of day (`HH:MM:SS.uuuuuu`) in the normal and
//! perf targets and a UTC ISO-8601 timestamp in the event target. The core has no
//! time zone database, so the caller passes the UTC offset that applies to the
//! instant (what `localtime_r` would have used).

use super::line::{fixed_digits, pair, BufferTooSmall, LineBuf, Result};

/// An instant of the wall clock: seconds and microseconds since the Unix epoch (UTC).
///
/// ```
/// use flightrec_core::trace2::WallTime;
/// let t = WallTime::new(1_700_000_000, 123_456); // 2023-11-14T22:13:20.123456Z
/// let utc = t.civil_utc();
/// assert_eq!((utc.year, utc.month, utc.day, utc.hour), (2023, 11, 14, 22));
/// // Two hours east of UTC it is already the next day.
/// let east = t.civil_with_offset(2 * 3600);
/// assert_eq!((east.month, east.day, east.hour, east.minute), (11, 15, 0, 13));
/// // The time of day alone, as the normal and perf targets print it.
/// let west = t.time_of_day(-5 * 3600);
/// assert_eq!((west.hour, west.minute, west.second, west.micros), (17, 13, 20, 123_456));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WallTime {
    /// Whole seconds since 1970-01-01T00:00:00Z (negative before it).
    pub secs: i64,
    /// Microseconds within the second, `0..1_000_000` (larger values are reduced
    /// modulo one second when formatting).
    pub micros: u32,
}

/// A broken-down civil date and time (proleptic Gregorian calendar).
///
/// ```
/// use flightrec_core::trace2::{Civil, WallTime};
/// let expected = Civil { year: 1969, month: 12, day: 31, hour: 23, minute: 59, second: 59, micros: 500_000 };
/// assert_eq!(WallTime::new(-1, 500_000).civil_utc(), expected);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Civil {
    /// Year (astronomical: year 0 exists, negative years are BCE).
    pub year: i64,
    /// Month, 1..=12.
    pub month: u8,
    /// Day of month, 1..=31.
    pub day: u8,
    /// Hour, 0..=23.
    pub hour: u8,
    /// Minute, 0..=59.
    pub minute: u8,
    /// Second, 0..=59.
    pub second: u8,
    /// Microsecond, 0..=999_999.
    pub micros: u32,
}

impl WallTime {
    /// Builds an instant from seconds and microseconds since the epoch. Example on
    /// [`WallTime`].
    pub const fn new(secs: i64, micros: u32) -> Self {
        WallTime { secs, micros }
    }

    /// Local time of day at `utc_offset_secs` east of UTC, without the calendar
    /// (the normal and perf targets print only the time of day). The date fields
    /// are left at 0000-01-01. Example on [`WallTime`].
    pub fn time_of_day(self, utc_offset_secs: i32) -> Civil {
        let secs = self
            .secs
            .saturating_add(i64::from(self.micros / 1_000_000))
            .saturating_add(i64::from(utc_offset_secs));
        let sod = secs.rem_euclid(86_400) as u32;
        Civil {
            year: 0,
            month: 1,
            day: 1,
            hour: (sod / 3600) as u8,
            minute: (sod / 60 % 60) as u8,
            second: (sod % 60) as u8,
            micros: self.micros % 1_000_000,
        }
    }

    /// The UTC civil date and time of this instant. Example on [`WallTime`].
    #[inline]
    pub fn civil_utc(self) -> Civil {
        self.civil_with_offset(0)
    }

    /// The civil date and time at `utc_offset_secs` east of UTC. Example on
    /// [`WallTime`].
    #[inline]
    pub fn civil_with_offset(self, utc_offset_secs: i32) -> Civil {
        let secs = self
            .secs
            .saturating_add(i64::from(self.micros / 1_000_000))
            .saturating_add(i64::from(utc_offset_secs));
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: (sod / 3600) as u8,
            minute: (sod / 60 % 60) as u8,
            second: (sod % 60) as u8,
            micros: self.micros % 1_000_000,
        }
    }
}

/// Converts days since 1970-01-01 to a (year, month, day) of the proleptic
/// Gregorian calendar, valid for every `i64` day count that `secs / 86400` can
/// produce.
///
/// ```
/// use flightrec_core::trace2::civil_from_days;
/// assert_eq!(civil_from_days(19_675), (2023, 11, 14));
/// assert_eq!(civil_from_days(-1), (1969, 12, 31));
/// ```
#[inline]
pub fn civil_from_days(days: i64) -> (i64, u8, u8) {
    match civil_from_days_fast(days) {
        Some(ymd) => ymd,
        None => civil_from_days_wide(days),
    }
}

/// Days added by [`civil_from_days_fast`] so that every day from year -32 800
/// on is a positive `u32`: 82 eras of 400 years plus the days from 0000-03-01
/// to the epoch.
const FAST_SHIFT_DAYS: i64 = 719_468 + 82 * 146_097;

/// Neri and Schneider's calendar algorithm ("Euclidean affine functions and
/// their application to calendar algorithms", 2022): a handful of 32-bit
/// multiplications and shifts instead of Hinnant's chain of divisions.
/// `None` outside the days it covers (years -32 800 to about 11 700 000).
#[inline]
fn civil_from_days_fast(days: i64) -> Option<(i64, u8, u8)> {
    let n = u32::try_from(days.checked_add(FAST_SHIFT_DAYS)?).ok()?;
    // Keeps 4 * n + 3 within u32.
    if n > (u32::MAX - 3) / 4 {
        return None;
    }
    // Century and day of the century.
    let n1 = 4 * n + 3;
    let century = n1 / 146_097;
    let n_c = n1 % 146_097 / 4;
    // Year of the century and day of the year (March-based).
    let n2 = 4 * n_c + 3;
    let p2 = 2_939_745u64 * u64::from(n2);
    let year_of_century = (p2 >> 32) as u32;
    let day_of_year = (p2 as u32) / 2_939_745 / 4;
    // Month and day (March = 3 .. February = 14).
    let n3 = 2141 * day_of_year + 197_913;
    let month = n3 >> 16;
    let day = (n3 & 0xffff) / 2141 + 1;
    let january_or_february = day_of_year >= 306;
    let year =
        i64::from(100 * century + year_of_century) - 82 * 400 + i64::from(january_or_february);
    let month = if january_or_february {
        month - 12
    } else {
        month
    };
    Some((year, month as u8, day as u8))
}

/// Howard Hinnant's `civil_from_days` for the whole `i64` range.
///
/// The day count is first moved up by a whole number of 400-year eras so that
/// all the divisions are unsigned.
fn civil_from_days_wide(days: i64) -> (i64, u8, u8) {
    // 10^9 eras of 146 097 days keep every `i64::MIN / 86400`-sized input positive.
    const SHIFT_ERAS: i64 = 1_000_000_000;
    let shifted =
        days.clamp(-100_000_000_000_000, 100_000_000_000_000) + 719_468 + SHIFT_ERAS * 146_097;
    let z = shifted as u64;
    let era = z / 146_097;
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400) as i64 - SHIFT_ERAS * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Converts a proleptic Gregorian (year, month, day) to days since 1970-01-01;
/// the inverse of [`civil_from_days`]. Out-of-range months/days are not
/// validated (the arithmetic stays defined and never panics for years within
/// +-10^12).
///
/// ```
/// use flightrec_core::trace2::{civil_from_days, days_from_civil};
/// assert_eq!(days_from_civil(2023, 11, 14), 19_675);
/// assert_eq!(civil_from_days(days_from_civil(1900, 3, 1)), (1900, 3, 1));
/// ```
pub fn days_from_civil(year: i64, month: u8, day: u8) -> i64 {
    let m = i64::from(month.clamp(1, 12));
    let y = year.clamp(-1_000_000_000_000, 1_000_000_000_000) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let mp = (m + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `HH:MM:SS.uuuuuu` (git's `%02d:%02d:%02d.%06ld` of `localtime_r`).
#[inline]
pub(crate) fn write_time_of_day(out: &mut LineBuf<'_>, c: &Civil) -> Result {
    let Some(d) = out.spare().first_chunk_mut::<15>() else {
        return Err(BufferTooSmall);
    };
    *d = *b"00:00:00.000000";
    time_of_day_digits(d, c);
    out.advance(15)
}

/// Fills the digits of `HH:MM:SS.uuuuuu` (separators already in place).
///
/// The digits are stored straight into the line: building them in a local
/// array and copying that would read back bytes just stored in small pieces,
/// which the CPU cannot forward (a stall of about a dozen cycles).
#[inline(always)]
fn time_of_day_digits(d: &mut [u8; 15], c: &Civil) {
    d[0..2].copy_from_slice(&pair(u32::from(c.hour)));
    d[3..5].copy_from_slice(&pair(u32::from(c.minute)));
    d[6..8].copy_from_slice(&pair(u32::from(c.second)));
    fixed_digits(&mut d[9..15], u64::from(c.micros));
}

/// The event target's `time`: `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` of `t` in UTC.
///
/// Years 1000 to 9999 are written straight into the line (one capacity
/// check); other years take the general path of [`write_iso8601_utc`].
#[inline(always)]
pub(crate) fn write_iso8601(out: &mut LineBuf<'_>, t: WallTime) -> Result {
    let secs = t.secs.saturating_add(i64::from(t.micros / 1_000_000));
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u32;
    match civil_from_days_fast(days) {
        Some((year, month, day)) if (1000..=9999).contains(&year) => {
            let Some(b) = out.spare().first_chunk_mut::<27>() else {
                return Err(BufferTooSmall);
            };
            *b = *b"0000-00-00T00:00:00.000000Z";
            let year = year as u32;
            b[0..2].copy_from_slice(&pair(year / 100));
            b[2..4].copy_from_slice(&pair(year));
            b[5..7].copy_from_slice(&pair(u32::from(month)));
            b[8..10].copy_from_slice(&pair(u32::from(day)));
            let c = Civil {
                year: 0,
                month: 1,
                day: 1,
                hour: (sod / 3600) as u8,
                minute: (sod / 60 % 60) as u8,
                second: (sod % 60) as u8,
                micros: t.micros % 1_000_000,
            };
            if let Some(tod) = b
                .get_mut(11..26)
                .and_then(|d| <&mut [u8; 15]>::try_from(d).ok())
            {
                time_of_day_digits(tod, &c);
            }
            out.advance(27)
        }
        _ => write_iso8601_utc(out, &t.civil_utc()),
    }
}

/// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` (git's `%4d-%02d-%02dT%02d:%02d:%02d.%06ldZ`).
pub(crate) fn write_iso8601_utc(out: &mut LineBuf<'_>, c: &Civil) -> Result {
    if (1000..=9999).contains(&c.year) {
        out.digits::<4>(c.year as u64)?;
    } else {
        out.i64_right(c.year, 4)?;
    }
    out.byte(b'-')?;
    two(out, c.month)?;
    out.byte(b'-')?;
    two(out, c.day)?;
    out.byte(b'T')?;
    write_time_of_day(out, c)?;
    out.byte(b'Z')
}

/// The timestamp part of a session id: `YYYYMMDDTHHMMSS.uuuuuuZ`
/// (git's `%4d%02d%02dT%02d%02d%02d.%06ldZ`, UTC).
///
/// ```
/// use flightrec_core::trace2::{write_sid_timestamp, LineBuf, WallTime};
/// let mut b = [0u8; 32];
/// let mut l = LineBuf::new(&mut b);
/// write_sid_timestamp(&mut l, WallTime::new(1_700_000_000, 123_456)).unwrap();
/// assert_eq!(l.as_bytes(), b"20231114T221320.123456Z");
/// ```
pub fn write_sid_timestamp(out: &mut LineBuf<'_>, t: WallTime) -> Result {
    let c = t.civil_utc();
    out.i64_right(c.year, 4)?;
    two(out, c.month)?;
    two(out, c.day)?;
    out.byte(b'T')?;
    two(out, c.hour)?;
    two(out, c.minute)?;
    two(out, c.second)?;
    out.byte(b'.')?;
    out.u64_zero_padded(u64::from(c.micros), 6)?;
    out.byte(b'Z')
}

#[inline]
fn two(out: &mut LineBuf<'_>, v: u8) -> Result {
    out.digits::<2>(u64::from(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_675), (2023, 11, 14));
        for d in (-800_000..800_000).step_by(97) {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
        let c = WallTime::new(1_700_000_000, 123_456).civil_with_offset(3600);
        assert_eq!((c.hour, c.minute, c.second), (23, 13, 20));
        let c = WallTime::new(0, 0).civil_with_offset(-1);
        assert_eq!((c.year, c.month, c.day, c.hour), (1969, 12, 31, 23));
    }

    #[test]
    fn fast_calendar_agrees_with_the_wide_one() {
        let lowest = -FAST_SHIFT_DAYS;
        let highest = i64::from((u32::MAX - 3) / 4) - FAST_SHIFT_DAYS;
        // Every day of the years around today and the epoch, then a sparse
        // walk over the whole range the fast path covers, and its edges.
        let dense = (-800_000..800_000).chain((10_950..80_000).step_by(1));
        let sparse = (lowest..=highest).step_by(7_919);
        let edges = [lowest, lowest + 1, highest - 1, highest];
        for days in dense.chain(sparse).chain(edges) {
            assert_eq!(
                civil_from_days_fast(days),
                Some(civil_from_days_wide(days)),
                "day {days}"
            );
        }
        assert_eq!(civil_from_days_fast(lowest - 1), None);
        assert_eq!(civil_from_days_fast(highest + 1), None);
        assert_eq!(civil_from_days_fast(i64::MIN), None);
        assert_eq!(civil_from_days_fast(i64::MAX), None);
        assert_eq!(
            civil_from_days(i64::MIN / 86_400),
            civil_from_days_wide(i64::MIN / 86_400)
        );
    }

    #[test]
    fn iso_time_of_an_instant_matches_the_civil_path() {
        let mut fast = [0u8; 64];
        let mut general = [0u8; 64];
        let secs = (-70_000_000_000i64..300_000_000_000)
            .step_by(86_413 * 997)
            .chain([
                i64::MIN,
                i64::MAX,
                -1,
                0,
                1_700_000_000,
                253_402_300_799,
                253_402_300_800,
            ])
            .chain([-30_610_224_000, -30_610_224_001]);
        for secs in secs {
            for micros in [0, 7, 999_999, 1_000_000, u32::MAX] {
                let t = WallTime::new(secs, micros);
                let mut a = LineBuf::new(&mut fast);
                write_iso8601(&mut a, t).unwrap();
                let mut b = LineBuf::new(&mut general);
                write_iso8601_utc(&mut b, &t.civil_utc()).unwrap();
                assert_eq!(a.as_bytes(), b.as_bytes(), "{secs}.{micros}");
            }
        }
        let mut l = LineBuf::new(&mut fast);
        write_iso8601(&mut l, WallTime::new(1_700_000_000, 123_456)).unwrap();
        assert_eq!(l.as_bytes(), b"2023-11-14T22:13:20.123456Z");
        let mut short = [0u8; 26];
        let mut l = LineBuf::new(&mut short);
        assert!(write_iso8601(&mut l, WallTime::new(1_700_000_000, 0)).is_err());
    }

    #[test]
    fn iso_years_are_printf_width_4() {
        let mut b = [0u8; 64];
        for (days, want) in [
            (days_from_civil(999, 1, 2), " 999-01-02T00:00:00.000000Z"),
            (days_from_civil(2023, 11, 14), "2023-11-14T00:00:00.000000Z"),
            (
                days_from_civil(12_345, 6, 7),
                "12345-06-07T00:00:00.000000Z",
            ),
            (days_from_civil(-5, 3, 1), "  -5-03-01T00:00:00.000000Z"),
        ] {
            let mut l = LineBuf::new(&mut b);
            write_iso8601_utc(&mut l, &WallTime::new(days * 86_400, 0).civil_utc()).unwrap();
            assert_eq!(l.as_bytes(), want.as_bytes());
        }
    }

    #[test]
    fn extremes_do_not_panic() {
        for secs in [i64::MIN, i64::MAX, -1, 0] {
            let c = WallTime::new(secs, u32::MAX).civil_with_offset(i32::MIN);
            let mut b = [0u8; 64];
            let mut l = LineBuf::new(&mut b);
            write_iso8601_utc(&mut l, &c).unwrap();
            let c = WallTime::new(secs, 0).civil_utc();
            let mut l = LineBuf::new(&mut b);
            write_iso8601_utc(&mut l, &c).unwrap();
            let t = WallTime::new(secs, 999_999).time_of_day(-3600);
            let c = WallTime::new(secs, 999_999).civil_with_offset(-3600);
            assert_eq!(
                (t.hour, t.minute, t.second, t.micros),
                (c.hour, c.minute, c.second, c.micros)
            );
        }
    }
}
