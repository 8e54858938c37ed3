//! The writer's configuration ([`WriterConfig`], [`Walltime`]) and its errors
//! ([`Full`], [`WriteError`], [`BufferTooSmall`]).

use super::*;

/// A wall-clock time: seconds and microseconds (what WalltimeMarker records carry).
///
/// ```
/// use flightrec_core::fdr::writer::Walltime;
/// let w = Walltime { seconds: 1_700_000_000, micros: 123_456 };
/// assert_eq!(w.advanced_by_ticks(1_500_000, core::num::NonZeroU64::new(1_000_000).unwrap()),
///            Walltime { seconds: 1_700_000_001, micros: 623_456 });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Walltime {
    /// Whole seconds.
    pub seconds: i64,
    /// Microseconds, below 1,000,000.
    pub micros: u32,
}

impl Walltime {
    /// This time moved forward by `ticks` of a clock counting `ticks_per_second`.
    ///
    /// Firmware rarely has a wall clock, so a ring derives each buffer's wall time from
    /// one reference point and the TSC; all that readers use it for is ordering a
    /// thread's buffers. Seconds saturate at `i64::MAX` instead of overflowing.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::writer::Walltime;
    /// let start = Walltime { seconds: 10, micros: 900_000 };
    /// let khz = NonZeroU64::new(1_000).unwrap();
    /// assert_eq!(start.advanced_by_ticks(250, khz), Walltime { seconds: 11, micros: 150_000 });
    /// assert_eq!(start.advanced_by_ticks(u64::MAX, NonZeroU64::MIN).seconds, i64::MAX);
    /// ```
    pub fn advanced_by_ticks(self, ticks: u64, ticks_per_second: NonZeroU64) -> Self {
        // No `/` or `%` on 64 bits: on a 32-bit core each is a library call that
        // would be linked into every firmware that records (`divide`).
        let (secs, rem) = crate::divide::div_rem(ticks, ticks_per_second);
        // rem < tps, so rem * 1e6 / tps < 1e6, exact for any rate.
        let extra_micros = u64::from(crate::divide::micros_of(rem, ticks_per_second));
        let micros = u64::from(self.micros) + extra_micros;
        // `micros` is a public field, so a value past one second carries over; in
        // 128 bits neither sum can overflow (`secs` is u64::MAX at one tick a second),
        // and a sum below i64::MIN is impossible, so only the top saturates.
        // `micros` is below 2 * 10^6 here unless the field was set past a second:
        // subtract whole seconds rather than divide.
        let (carry, micros) = if micros < 1_000_000 {
            (0, micros)
        } else {
            crate::divide::div_rem(micros, crate::divide::MILLION)
        };
        let whole = u128::from(secs) + u128::from(carry);
        let seconds = i128::from(self.seconds) + whole as i128;
        Self {
            seconds: i64::try_from(seconds).unwrap_or(i64::MAX),
            micros: micros as u32,
        }
    }
}

/// How a [`BufferWriter`] writes: version, thread and process ids, and the short-call
/// threshold. A [`RecorderConfig`](crate::fdr::ring::RecorderConfig) holds one for a ring.
///
/// ```
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::Version;
/// let cfg = WriterConfig::new(101).with_pid(4242).with_version(Version::V3);
/// assert_eq!(cfg.tid, 101);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WriterConfig {
    /// Format version; version 5 by default (feature `fdr-all-versions`;
    /// without it every buffer is version 5, and the code for the others is not
    /// linked).
    #[cfg(feature = "fdr-all-versions")]
    pub version: Version,
    /// The thread id written in NewBuffer (a task, core or interrupt-level id on bare
    /// metal). Readers group buffers by (pid, tid).
    ///
    /// Thread, process and link source ids are all `u32` in this crate: the record
    /// field is 4 bytes (`int32_t` in LLVM's FDR record types, which
    /// [`Record::NewBuffer`](crate::fdr::records::Record::NewBuffer) mirrors), and
    /// `llvm-xray` hands them on as `uint32_t` (`XRayRecord::TId`, `PId`) and prints
    /// them unsigned, as the link's [`Source`](crate::link::Source) ids are. The
    /// bits are written as they are: ids above `i32::MAX` read back unchanged.
    pub tid: u32,
    /// The process id written in a Pid record, or `None` to write none (bare metal).
    /// Keep it the same for every buffer of a process.
    pub pid: Option<u32>,
    /// Entry/exit pairs shorter than this many ticks are erased; 0 keeps everything
    /// (feature `short-call-elision`; without it nothing is erased, and the code
    /// that erases is not linked).
    #[cfg(feature = "short-call-elision")]
    pub threshold_ticks: u64,
}

impl WriterConfig {
    /// Version 5, no Pid record, no elision.
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// let cfg = WriterConfig::new(3);
    /// assert_eq!((cfg.version(), cfg.tid, cfg.pid, cfg.threshold()), (Version::V5, 3, None, 0));
    /// ```
    pub const fn new(tid: u32) -> Self {
        Self {
            #[cfg(feature = "fdr-all-versions")]
            version: Version::V5,
            tid,
            pid: None,
            #[cfg(feature = "short-call-elision")]
            threshold_ticks: 0,
        }
    }

    /// The format version: version 5, or the one set with
    /// `with_version` (feature `fdr-all-versions`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(WriterConfig::new(1).version(), Version::V5);
    /// ```
    #[inline(always)]
    pub const fn version(&self) -> Version {
        #[cfg(feature = "fdr-all-versions")]
        return self.version;
        #[cfg(not(feature = "fdr-all-versions"))]
        return Version::V5;
    }

    /// The short-call threshold in ticks: 0 (keep every call), or the one set
    /// with `with_threshold_ticks` (feature `short-call-elision`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// assert_eq!(WriterConfig::new(1).threshold(), 0);
    /// ```
    #[inline(always)]
    pub const fn threshold(&self) -> u64 {
        #[cfg(feature = "short-call-elision")]
        return self.threshold_ticks;
        #[cfg(not(feature = "short-call-elision"))]
        return 0;
    }

    /// Sets the version, for readers older than LLVM's current one (feature
    /// `fdr-all-versions`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(WriterConfig::new(1).with_version(Version::V1).version, Version::V1);
    /// ```
    #[cfg(feature = "fdr-all-versions")]
    pub const fn with_version(mut self, version: Version) -> Self {
        self.version = version;
        self
    }

    /// Sets the process id: each buffer then carries a Pid record.
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// let cfg = WriterConfig::new(1).with_pid(4242);
    /// assert_eq!(cfg.pid, Some(4242));
    /// assert_eq!(cfg.preamble_len(), WriterConfig::new(1).preamble_len() + 16);
    /// ```
    pub const fn with_pid(mut self, pid: u32) -> Self {
        self.pid = Some(pid);
        self
    }

    /// Sets the short-call threshold in ticks (see the [module docs](crate::fdr::writer) for what is
    /// erased); 0 keeps every call (feature `short-call-elision`).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// assert_eq!(WriterConfig::new(1).with_threshold_ticks(1_000).threshold_ticks, 1_000);
    /// ```
    #[cfg(feature = "short-call-elision")]
    pub const fn with_threshold_ticks(mut self, ticks: u64) -> Self {
        self.threshold_ticks = ticks;
        self
    }

    /// Bytes of the buffer preamble (BufferExtents, NewBuffer, WalltimeMarker, Pid).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::Version;
    /// assert_eq!(WriterConfig::new(1).preamble_len(), 48);
    /// assert_eq!(WriterConfig::new(1).with_pid(1).preamble_len(), 64);
    /// assert_eq!(WriterConfig::new(1).with_version(Version::V1).preamble_len(), 32);
    /// ```
    pub const fn preamble_len(&self) -> usize {
        let extents = if self.version().has_extents() {
            META
        } else {
            0
        };
        let pid = if self.pid.is_some() { META } else { 0 };
        extents + 2 * META + pid
    }

    /// Bytes kept free at the end of a version-1 buffer for its EndOfBuffer record.
    pub(super) const fn tail_reserve(&self) -> usize {
        if self.version().has_extents() {
            0
        } else {
            META
        }
    }

    /// The smallest buffer a writer accepts: the preamble, a NewCPUId and one function
    /// record (and EndOfBuffer in version 1).
    ///
    /// ```
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// let cfg = WriterConfig::new(1);
    /// assert_eq!(cfg.min_buffer_len(), 48 + 16 + 8);
    /// let mut buf = [0u8; 72];
    /// assert!(BufferWriter::new(&mut buf, &cfg, Walltime::default()).is_ok());
    /// assert!(BufferWriter::new(&mut buf[..71], &cfg, Walltime::default()).is_err());
    /// ```
    pub const fn min_buffer_len(&self) -> usize {
        self.preamble_len() + META + FUNC + self.tail_reserve()
    }
}

/// The record did not fit in the rest of the buffer. Nothing was written; switch to a
/// new buffer and write it again (a [`Recorder`](crate::fdr::ring::Recorder) does that).
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::writer::{BufferWriter, Full, Walltime, WriterConfig};
/// use flightrec_core::fdr::FunctionId;
/// let mut buf = [0u8; 80]; // preamble, NewCPUId and two function records
/// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
/// let f = FunctionId::new(1).unwrap();
/// w.enter(f, Timestamp { tsc: 1, cpu: 0 }).unwrap();
/// w.exit(f, Timestamp { tsc: 2, cpu: 0 }).unwrap();
/// assert_eq!(w.enter(f, Timestamp { tsc: 3, cpu: 0 }), Err(Full));
/// assert_eq!(w.len(), 80);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Full;

impl core::fmt::Display for Full {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("buffer full")
    }
}

/// Why a record with a variable size (arguments, event payloads) was not written.
/// Nothing was written in each case.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::writer::{BufferWriter, WriteError, Walltime, WriterConfig};
/// let mut buf = [0u8; 128];
/// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
/// let t = Timestamp { tsc: 0, cpu: 0 };
/// assert_eq!(w.custom_event(t, b""), Err(WriteError::EmptyPayload));
/// // 80 bytes are free after the preamble; marker, NewCPUId and payload need 132.
/// assert_eq!(w.custom_event(t, &[0; 100]), Err(WriteError::TooLarge { needed: 132 }));
/// w.custom_event(t, &[0; 40]).unwrap();
/// assert_eq!(w.custom_event(t, &[0; 40]), Err(WriteError::Full));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WriteError {
    /// It does not fit in the rest of this buffer; it would fit in an empty one.
    Full,
    /// It would not fit even in an empty buffer of this size; it needs `needed` bytes.
    TooLarge {
        /// Bytes the record needs after the preamble.
        needed: usize,
    },
    /// An event payload was empty (readers reject size 0).
    EmptyPayload,
}

impl From<Full> for WriteError {
    fn from(_: Full) -> Self {
        WriteError::Full
    }
}

impl core::fmt::Display for WriteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WriteError::Full => f.write_str("buffer full"),
            WriteError::TooLarge { needed } => {
                write!(f, "record of {needed} bytes is larger than a whole buffer")
            }
            WriteError::EmptyPayload => f.write_str("event payload is empty"),
        }
    }
}

/// The buffer cannot hold even the preamble, a NewCPUId and one record (see
/// [`WriterConfig::min_buffer_len`]).
///
/// ```
/// use flightrec_core::fdr::writer::{BufferTooSmall, BufferWriter, Walltime, WriterConfig};
/// let mut buf = [0u8; 64];
/// let err = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).err();
/// assert_eq!(err, Some(BufferTooSmall { len: 64, needed: 72 }));
/// assert_eq!(err.unwrap().to_string(), "buffer of 64 bytes is too small (at least 72 needed)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTooSmall {
    /// Bytes given.
    pub len: usize,
    /// Bytes needed at least.
    pub needed: usize,
}

impl core::fmt::Display for BufferTooSmall {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "buffer of {} bytes is too small (at least {} needed)",
            self.len, self.needed
        )
    }
}
