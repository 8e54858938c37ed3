//! Thread names and per-thread region stacks (the state git keeps in its
//! thread-local `tr2tls` context), in fixed-size storage.

use super::event::Micros;
use super::line::{dec_u64, LineBuf};

/// Longest thread name git prints (`TR2_MAX_THREAD_NAME`).
///
/// ```
/// use flightrec_core::trace2::{ThreadName, MAX_THREAD_NAME};
/// let name = ThreadName::worker(1, b"a base name far longer than git keeps");
/// assert_eq!(name.as_bytes().len(), MAX_THREAD_NAME);
/// assert_eq!(name.as_bytes(), b"th01:a base name far lon");
/// ```
pub const MAX_THREAD_NAME: usize = 24;

/// A thread name: `main`, or `th%02d:<base>` cut to 24 bytes.
///
/// ```
/// use flightrec_core::trace2::ThreadName;
/// assert_eq!(ThreadName::main().as_bytes(), b"main");
/// assert_eq!(ThreadName::worker(3, b"preload").as_bytes(), b"th03:preload");
/// let long = ThreadName::worker(7, b"a-very-long-thread-base-name");
/// assert_eq!(long.as_bytes(), b"th07:a-very-long-thread-");
/// assert_eq!(ThreadName::worker(123, b"x").as_bytes(), b"th123:x");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ThreadName {
    bytes: [u8; MAX_THREAD_NAME],
    len: u8,
}

impl ThreadName {
    /// The main thread's name. Example on [`ThreadName`].
    pub const fn main() -> Self {
        let mut bytes = [0u8; MAX_THREAD_NAME];
        bytes[0] = b'm';
        bytes[1] = b'a';
        bytes[2] = b'i';
        bytes[3] = b'n';
        ThreadName { bytes, len: 4 }
    }

    /// The name of thread `id` started with `base`: `th%02d:<base>`, truncated
    /// to [`MAX_THREAD_NAME`] bytes (possibly inside a UTF-8 sequence, like git).
    /// Example on [`ThreadName`].
    pub fn worker(id: u32, base: &[u8]) -> Self {
        let mut bytes = [0u8; MAX_THREAD_NAME];
        let mut tmp = [0u8; 20];
        let digits = dec_u64(u64::from(id), &mut tmp);
        let mut l = LineBuf::new(&mut bytes);
        // Every write below may hit the end of the 24 bytes; stopping there is
        // exactly the truncation git applies, so errors are ignored on purpose.
        let _ = l.put(b"th");
        if digits.len() < 2 {
            let _ = l.byte(b'0');
        }
        let _ = l.put(digits).and_then(|_| l.byte(b':'));
        let room = MAX_THREAD_NAME - l.len();
        let _ = l.put(&base[..base.len().min(room)]);
        let len = l.len() as u8;
        ThreadName { bytes, len }
    }

    /// The name's bytes. Example on [`ThreadName`].
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Reason a region could not be left.
///
/// ```
/// use flightrec_core::trace2::{RegionError, RegionStack};
/// let mut s = RegionStack::<4>::new(0);
/// assert_eq!(s.leave(5), Ok(5)); // the base level may be left once
/// assert_eq!(s.leave(6), Err(RegionError::NoOpenRegion));
/// assert_eq!(RegionError::NoOpenRegion.to_string(), "no open regions in thread");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RegionError {
    /// No level is open, not even the thread's base level (git calls `BUG()`).
    NoOpenRegion,
}

impl core::fmt::Display for RegionError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("no open regions in thread")
    }
}

/// A thread's stack of open regions, with the start time of each level, in `N`
/// fixed slots (no heap).
///
/// Like git, the stack starts with one level (the thread start), so `nesting()`
/// is 1 at top level. `region_enter` is formatted at `nesting()` before
/// [`enter`](Self::enter); `region_leave` after [`leave`](Self::leave).
///
/// **Past `N` levels** the depth keeps counting (so nesting, perf dots and the
/// event filter stay exact and every leave matches its enter) but no start time
/// is stored for the extra levels: `t_rel` of a region or data event inside them
/// is measured from the innermost stored level, i.e. it over-estimates.
///
/// ```
/// use flightrec_core::trace2::RegionStack;
/// let mut s = RegionStack::<4>::new(0);
/// assert_eq!(s.nesting(), 1);
/// s.enter(10);
/// assert_eq!((s.nesting(), s.t_rel(15)), (2, 5));
/// assert_eq!(s.leave(17), Ok(7));
/// assert_eq!(s.nesting(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegionStack<const N: usize> {
    starts: [Micros; N],
    depth: u32,
}

impl<const N: usize> RegionStack<N> {
    /// A stack whose base level started at `start` (the thread/process start). Example on
    /// [`RegionStack`].
    pub const fn new(start: Micros) -> Self {
        let mut starts = [0; N];
        if N > 0 {
            starts[0] = start;
        }
        RegionStack { starts, depth: 1 }
    }

    /// Open levels (`nr_open_regions`), base level included. Example on
    /// [`RegionStack`].
    #[inline]
    pub fn nesting(&self) -> u32 {
        self.depth
    }

    /// Whether levels beyond the `N` slots are open (their times are not stored).
    ///
    /// ```
    /// use flightrec_core::trace2::RegionStack;
    /// let mut s = RegionStack::<2>::new(0); // the base level and one region
    /// s.enter(10);
    /// assert!(!s.is_overflowed());
    /// s.enter(20); // a third level: counted, its start not stored
    /// assert!(s.is_overflowed());
    /// assert_eq!((s.nesting(), s.t_rel(25)), (3, 15)); // measured from the second level
    /// assert_eq!(s.leave(30), Ok(20));
    /// assert!(!s.is_overflowed());
    /// ```
    #[inline]
    pub fn is_overflowed(&self) -> bool {
        self.depth as usize > N
    }

    /// Start of the innermost level whose time is stored.
    #[inline]
    fn innermost_start(&self) -> Option<Micros> {
        let stored = (self.depth as usize).min(N);
        stored.checked_sub(1).map(|i| self.starts[i])
    }

    /// Time since the innermost open level started (0 when none is open), for
    /// `data` and `region_leave`. Example on [`RegionStack`].
    #[inline]
    pub fn t_rel(&self, now: Micros) -> Micros {
        self.innermost_start().map_or(0, |s| now.saturating_sub(s))
    }

    /// Opens a level that starts at `now`. Example on
    /// [`RegionStack`].
    #[inline]
    pub fn enter(&mut self, now: Micros) {
        if let Some(slot) = self.starts.get_mut(self.depth as usize) {
            *slot = now;
        }
        self.depth = self.depth.saturating_add(1);
    }

    /// Closes the innermost level and returns its `t_rel`. Leaving the base
    /// level is allowed once (nesting becomes 0, as in git); leaving again is
    /// [`RegionError::NoOpenRegion`] and changes nothing. Example on
    /// [`RegionStack`].
    #[inline]
    pub fn leave(&mut self, now: Micros) -> Result<Micros, RegionError> {
        if self.depth == 0 {
            return Err(RegionError::NoOpenRegion);
        }
        let t = self.t_rel(now);
        self.depth -= 1;
        Ok(t)
    }

    /// Closes every level above the base (git does this silently at `atexit`
    /// and `thread_exit`), without events.
    ///
    /// ```
    /// use flightrec_core::trace2::RegionStack;
    /// let mut s = RegionStack::<8>::new(0);
    /// s.enter(1);
    /// s.enter(2);
    /// s.unwind();
    /// assert_eq!(s.nesting(), 1);
    /// ```
    pub fn unwind(&mut self) {
        self.depth = self.depth.min(1);
    }
}

/// One thread's Trace2 state: its name, start time and region stack.
///
/// ```
/// use flightrec_core::trace2::{ThreadName, ThreadState};
/// let mut t = ThreadState::<8>::new(ThreadName::worker(1, b"preload"), 100);
/// assert_eq!(t.region_enter(110), 1); // formatted at nesting 1
/// assert_eq!(t.region_leave(130), Ok((20, 1)));
/// assert_eq!(t.run_time(150), 50);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ThreadState<const N: usize> {
    /// Thread name.
    pub name: ThreadName,
    /// When the thread started (µs since process start).
    pub start: Micros,
    /// Open regions.
    pub regions: RegionStack<N>,
}

impl<const N: usize> ThreadState<N> {
    /// A thread started at `start`. Example on [`ThreadState`].
    pub const fn new(name: ThreadName, start: Micros) -> Self {
        ThreadState {
            name,
            start,
            regions: RegionStack::new(start),
        }
    }

    /// Current nesting (for events formatted now).
    ///
    /// ```
    /// use flightrec_core::trace2::{ThreadName, ThreadState};
    /// let mut t = ThreadState::<8>::new(ThreadName::main(), 0);
    /// assert_eq!(t.nesting(), 1);
    /// t.region_enter(5);
    /// assert_eq!(t.nesting(), 2);
    /// ```
    pub fn nesting(&self) -> u32 {
        self.regions.nesting()
    }

    /// Enters a region at `now`; returns the nesting to format `region_enter` at.
    /// Example on [`ThreadState`].
    pub fn region_enter(&mut self, now: Micros) -> u32 {
        let nesting = self.regions.nesting();
        self.regions.enter(now);
        nesting
    }

    /// Leaves a region at `now`; returns its `t_rel` and the nesting to format
    /// `region_leave` at. Example on [`ThreadState`].
    pub fn region_leave(&mut self, now: Micros) -> Result<(Micros, u32), RegionError> {
        let t = self.regions.leave(now)?;
        Ok((t, self.regions.nesting()))
    }

    /// `t_rel` for a `data`/`data_json` event at `now`: the time since the
    /// innermost open region (or the thread) started.
    ///
    /// ```
    /// use flightrec_core::trace2::{ThreadName, ThreadState};
    /// let mut t = ThreadState::<8>::new(ThreadName::main(), 100);
    /// assert_eq!(t.data_t_rel(130), 30);
    /// t.region_enter(140);
    /// assert_eq!(t.data_t_rel(150), 10);
    /// ```
    pub fn data_t_rel(&self, now: Micros) -> Micros {
        self.regions.t_rel(now)
    }

    /// Thread run time at `now` (for `thread_exit`). Example on [`ThreadState`].
    pub fn run_time(&self, now: Micros) -> Micros {
        now.saturating_sub(self.start)
    }
}
