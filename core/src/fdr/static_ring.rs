//! Rings that own their memory, made to be declared as `static`s.
//!
//! A [`StaticRing`] holds its buffers, its slots and its counters, and its
//! [`new`](StaticRing::new) is a `const fn`, so firmware declares one per recording
//! context as a plain `static` and takes its [`Recorder`] and [`Consumer`] from it,
//! each once, without `unsafe`, without `static mut` and without a critical section
//! on the recording path:
//!
//! ```
//! use flightrec_core::clock::Timestamp;
//! use flightrec_core::fdr::ring::{Policy, RecorderConfig};
//! use flightrec_core::fdr::static_ring::{AlreadyTaken, StaticRing};
//! use flightrec_core::fdr::writer::WriterConfig;
//! use flightrec_core::fdr::FunctionId;
//!
//! static MAIN: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
//!
//! let mut rec = MAIN.take_recorder(RecorderConfig::new(WriterConfig::new(1), 1_000)).unwrap();
//! let mut consumer = MAIN.take_consumer().unwrap();
//! assert_eq!(MAIN.take_consumer().err(), Some(AlreadyTaken)); // once only
//!
//! rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
//! rec.flush();
//! assert_eq!(consumer.pop().unwrap().len(), 72);
//! ```
//!
//! The ring's [`Policy`] is part of its type: `StaticRing<N, BUFFER_SIZE>` streams,
//! `StaticRing<N, BUFFER_SIZE, FlightRecorder>` keeps the newest buffers. So an
//! unused ring of either policy is all zero bytes and goes in `.bss`: nothing of it
//! (its storage is often KiBs) is copied from flash at boot.
//!
//! ```
//! use flightrec_core::fdr::ring::Policy;
//! use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
//!
//! static CRASH: StaticRing<4, 1024, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
//! assert_eq!(CRASH.policy(), Policy::FlightRecorder);
//! ```
//!
//! The buffers are aligned to 8 bytes and every buffer size is a multiple of 8, so
//! function records land on aligned words: targets without unaligned stores
//! (`thumbv6m`) write a record with two word stores instead of eight byte stores.
//!
//! # Taking once
//!
//! Taking a half is a read-modify-write of a flag word, which must be atomic since
//! any context may call it. Where the target has compare-and-swap it is a lock-free
//! compare-exchange. Targets without it (`thumbv6m-none-eabi`) do it inside a
//! [`critical_section`](https://docs.rs/critical-section) (as `defmt-rtt` does): the
//! firmware links an implementation, for example `cortex-m`'s
//! `critical-section-single-core` feature. Only taking uses it, once per half at
//! start-up; recording never does.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ptr::NonNull;

use super::ring::{
    Consumer, Policy, Recorder, RecorderConfig, RingState, RingStats, RingView, Slot,
};

/// The Rust blocks of `docs/firmware-guide.md`, compiled and run as doc tests so
/// that the guide's code stays right.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/firmware-guide.md")]
pub struct FirmwareGuide;

/// A half of a [`StaticRing`] was asked for a second time.
///
/// ```
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
/// use flightrec_core::fdr::static_ring::{AlreadyTaken, FlightRecorder, StaticRing};
/// use flightrec_core::fdr::writer::WriterConfig;
/// static RING: StaticRing<2, 256, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
/// assert!(RING.take_recorder(cfg).is_ok());
/// assert_eq!(RING.take_recorder(cfg).err(), Some(AlreadyTaken));
/// assert_eq!(AlreadyTaken.to_string(), "this half of the ring was already taken");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AlreadyTaken;

impl core::fmt::Display for AlreadyTaken {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("this half of the ring was already taken")
    }
}

/// The policy of a [`StaticRing`], as a type: [`Streaming`] (the default) or
/// [`FlightRecorder`]. Sealed: those two are all.
///
/// ```
/// use flightrec_core::fdr::ring::Policy;
/// use flightrec_core::fdr::static_ring::{FlightRecorder, RingPolicy, Streaming};
/// assert_eq!(Streaming::POLICY, Policy::Streaming);
/// assert_eq!(FlightRecorder::POLICY, Policy::FlightRecorder);
/// ```
pub trait RingPolicy: sealed::Sealed {
    /// The [`Policy`] of a ring of this type.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::Policy;
    /// use flightrec_core::fdr::static_ring::{FlightRecorder, RingPolicy};
    /// assert_eq!(FlightRecorder::POLICY, Policy::FlightRecorder);
    /// ```
    const POLICY: Policy;
}

/// [`Policy::Streaming`] as a type: the default policy of a [`StaticRing`].
///
/// ```
/// use flightrec_core::fdr::ring::Policy;
/// use flightrec_core::fdr::static_ring::{StaticRing, Streaming};
/// static RING: StaticRing<2, 256, Streaming> = StaticRing::new(Policy::Streaming);
/// assert_eq!(RING.policy(), Policy::Streaming);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Streaming {}

/// [`Policy::FlightRecorder`] as a type: `StaticRing<N, BUFFER_SIZE, FlightRecorder>`.
///
/// ```
/// use flightrec_core::fdr::ring::Policy;
/// use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
/// static RING: StaticRing<2, 256, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
/// assert_eq!(RING.policy(), Policy::FlightRecorder);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlightRecorder {}

impl RingPolicy for Streaming {
    const POLICY: Policy = Policy::Streaming;
}

impl RingPolicy for FlightRecorder {
    const POLICY: Policy = Policy::FlightRecorder;
}

mod sealed {
    /// Keeps [`RingPolicy`](super::RingPolicy) to the two policies.
    ///
    /// ```
    /// use flightrec_core::fdr::static_ring::{RingPolicy, Streaming};
    /// fn policy_of<P: RingPolicy>() -> flightrec_core::fdr::ring::Policy {
    ///     P::POLICY
    /// }
    /// assert_eq!(policy_of::<Streaming>(), flightrec_core::fdr::ring::Policy::Streaming);
    /// ```
    pub trait Sealed {}
    impl Sealed for super::Streaming {}
    impl Sealed for super::FlightRecorder {}
}

/// `N` buffers of `BUFFER_SIZE` bytes, aligned to 8 bytes. With `BUFFER_SIZE` a
/// multiple of 8, every buffer starts 8-aligned.
#[repr(C, align(8))]
struct Buffers<const N: usize, const BUFFER_SIZE: usize>([[u8; BUFFER_SIZE]; N]);

const RECORDER: u8 = 1;
const CONSUMER: u8 = 2;

/// A ring of `N` buffers of `BUFFER_SIZE` bytes that owns its memory: declare it as a
/// `static` and take its [`Recorder`] and [`Consumer`] once each. See the
/// [module docs](self); the policies and the concurrency contract are those of
/// [`Ring`](super::ring::Ring).
///
/// `N` must be at least 1 and `BUFFER_SIZE` a multiple of 8 below 4 GiB; other
/// values fail to compile where the ring is made.
///
/// `P` is the policy: [`Streaming`] (the default) or [`FlightRecorder`]. Held in the
/// type, it takes no byte of the ring, so an unused ring of either policy is all
/// zero bytes and goes in `.bss`.
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
/// use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
///
/// static CRASH: StaticRing<3, 128, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
/// let (mut rec, _consumer) = CRASH.split(RecorderConfig::new(WriterConfig::new(1), 1_000)).unwrap();
/// let f = FunctionId::new(1).unwrap();
/// for t in 0..100 {
///     rec.enter(f, Timestamp { tsc: t, cpu: 0 }).unwrap();
/// }
/// let mut buffers = 0;
/// rec.for_each_buffer(|_| buffers += 1);
/// assert_eq!(buffers, 3);
/// assert!(CRASH.stats().buffers_overwritten > 0);
/// ```
pub struct StaticRing<const N: usize, const BUFFER_SIZE: usize, P: RingPolicy = Streaming> {
    buffers: UnsafeCell<Buffers<N, BUFFER_SIZE>>,
    slots: [Slot; N],
    state: RingState,
    /// `RECORDER` and `CONSUMER` bits: the halves taken so far.
    taken: TakenFlags,
    policy: PhantomData<P>,
}

// SAFETY: the buffers are only reached through the one recorder and the one consumer
// (`taken` hands each out at most once), which share them under the ring protocol
// (see `ring`'s module docs); every other field is an atomic or never changes, and
// `P` is a type without values.
unsafe impl<const N: usize, const BUFFER_SIZE: usize, P: RingPolicy> Sync
    for StaticRing<N, BUFFER_SIZE, P>
{
}

impl<const N: usize, const BUFFER_SIZE: usize, P: RingPolicy> StaticRing<N, BUFFER_SIZE, P> {
    /// An unused ring, all zero bytes (`.bss`); a `const fn`, for `static`s.
    ///
    /// `policy` must be the type's (`P`): [`Policy::Streaming`] for
    /// `StaticRing<N, BUFFER_SIZE>`, [`Policy::FlightRecorder`] for
    /// `StaticRing<N, BUFFER_SIZE, FlightRecorder>`.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::Policy;
    /// use flightrec_core::fdr::static_ring::StaticRing;
    /// static MAIN: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
    /// assert_eq!((MAIN.buffer_count(), MAIN.buffer_size()), (4, 1024));
    /// ```
    ///
    /// # Panics
    ///
    /// When `policy` is not the type's. In a `static` (or a `const`) that is an
    /// error at compile time, never a panic on the device:
    ///
    /// ```compile_fail,E0080
    /// use flightrec_core::fdr::ring::Policy;
    /// use flightrec_core::fdr::static_ring::StaticRing;
    /// // A flight-recorder ring is `StaticRing<3, 128, FlightRecorder>`.
    /// static CRASH: StaticRing<3, 128> = StaticRing::new(Policy::FlightRecorder);
    /// # let _ = &CRASH;
    /// ```
    pub const fn new(policy: Policy) -> Self {
        const {
            assert!(N > 0, "a ring needs at least one buffer");
            assert!(
                N as u64 <= u32::MAX as u64,
                "a ring has at most u32::MAX buffers"
            );
            assert!(
                BUFFER_SIZE % 8 == 0,
                "the buffer size must be a multiple of 8"
            );
            assert!(
                BUFFER_SIZE as u64 <= u32::MAX as u64,
                "buffers must be under 4 GiB"
            );
        }
        let same = matches!(
            (policy, P::POLICY),
            (Policy::Streaming, Policy::Streaming)
                | (Policy::FlightRecorder, Policy::FlightRecorder)
        );
        assert!(
            same,
            "the policy is the ring type's: StaticRing<N, BUFFER_SIZE> streams, \
             StaticRing<N, BUFFER_SIZE, FlightRecorder> keeps the newest buffers"
        );
        Self {
            buffers: UnsafeCell::new(Buffers([[0; BUFFER_SIZE]; N])),
            slots: [Slot::NEW; N],
            state: RingState::new(),
            taken: TakenFlags::new(),
            policy: PhantomData,
        }
    }

    /// Size of each buffer in bytes: `BUFFER_SIZE`.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// use flightrec_core::fdr::static_ring::StaticRing;
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// static RING: StaticRing<2, 512> = StaticRing::new(Policy::Streaming);
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// assert_eq!(cfg.file_header(RING.buffer_size()).buffer_size, 512);
    /// ```
    pub const fn buffer_size(&self) -> usize {
        BUFFER_SIZE
    }

    /// Number of buffers: `N`.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::Policy;
    /// use flightrec_core::fdr::static_ring::StaticRing;
    /// static RING: StaticRing<3, 256> = StaticRing::new(Policy::Streaming);
    /// assert_eq!(RING.buffer_count(), 3);
    /// ```
    pub const fn buffer_count(&self) -> usize {
        N
    }

    /// The ring's policy: `P`'s.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::Policy;
    /// use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};
    /// static RING: StaticRing<1, 256, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
    /// assert_eq!(RING.policy(), Policy::FlightRecorder);
    /// ```
    pub const fn policy(&self) -> Policy {
        P::POLICY
    }

    /// The counters; safe from any context at any time.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// use flightrec_core::fdr::static_ring::StaticRing;
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    /// static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// let mut rec = RING.take_recorder(RecorderConfig::new(WriterConfig::new(1), 1_000)).unwrap();
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// rec.flush();
    /// assert_eq!(RING.stats().buffers_finished, 1);
    /// ```
    pub fn stats(&self) -> RingStats {
        self.state.stats()
    }

    /// Takes the recorder, once. Hand it to the context that records into this ring
    /// (see [`Recorder`] for what it may do there).
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// use flightrec_core::fdr::static_ring::{AlreadyTaken, StaticRing};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// let cfg = RecorderConfig::new(WriterConfig::new(5), 1_000);
    /// let rec = RING.take_recorder(cfg).unwrap();
    /// assert_eq!(rec.config().writer.tid, 5);
    /// assert_eq!(RING.take_recorder(cfg).err(), Some(AlreadyTaken));
    /// ```
    pub fn take_recorder(
        &'static self,
        config: RecorderConfig,
    ) -> Result<Recorder<'static, 'static>, AlreadyTaken> {
        self.taken.take(RECORDER)?;
        Ok(Recorder::new(self.view(), config))
    }

    /// Takes the consumer, once. Hand it to the context that drains the ring.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::Policy;
    /// use flightrec_core::fdr::static_ring::{AlreadyTaken, StaticRing};
    /// static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// let consumer = RING.take_consumer().unwrap();
    /// assert_eq!(consumer.pending(), 0);
    /// assert_eq!(RING.take_consumer().err(), Some(AlreadyTaken));
    /// ```
    pub fn take_consumer(&'static self) -> Result<Consumer<'static, 'static>, AlreadyTaken> {
        self.taken.take(CONSUMER)?;
        Ok(Consumer::new(self.view()))
    }

    /// Takes both halves at once, or neither if either was taken.
    ///
    /// ```
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// use flightrec_core::fdr::static_ring::{AlreadyTaken, StaticRing};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// let consumer = RING.take_consumer().unwrap();
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// assert_eq!(RING.split(cfg).err(), Some(AlreadyTaken));
    /// assert!(RING.take_recorder(cfg).is_ok()); // `split` took nothing
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn split(
        &'static self,
        config: RecorderConfig,
    ) -> Result<(Recorder<'static, 'static>, Consumer<'static, 'static>), AlreadyTaken> {
        self.taken.take(RECORDER | CONSUMER)?;
        let view = self.view();
        Ok((Recorder::new(view, config), Consumer::new(view)))
    }

    fn view(&'static self) -> RingView<'static> {
        RingView {
            // `UnsafeCell::get` never returns null; the cast keeps the provenance of
            // the whole buffer array, which the ring's slices index into.
            storage: NonNull::new(self.buffers.get().cast::<u8>()).unwrap_or(NonNull::dangling()),
            buffer_size: BUFFER_SIZE,
            slots: &self.slots,
            policy: P::POLICY,
            state: &self.state,
        }
    }
}

/// Which halves of a ring were taken, set with an atomic read-modify-write.
struct TakenFlags(TakenCell);

#[cfg(target_has_atomic = "8")]
type TakenCell = core::sync::atomic::AtomicU8;
#[cfg(not(target_has_atomic = "8"))]
type TakenCell = critical_section::Mutex<core::cell::Cell<u8>>;

impl TakenFlags {
    const fn new() -> Self {
        #[cfg(target_has_atomic = "8")]
        {
            TakenFlags(core::sync::atomic::AtomicU8::new(0))
        }
        #[cfg(not(target_has_atomic = "8"))]
        {
            TakenFlags(critical_section::Mutex::new(core::cell::Cell::new(0)))
        }
    }

    /// Sets the bits of `mask` if none of them is set yet.
    fn take(&self, mask: u8) -> Result<(), AlreadyTaken> {
        #[cfg(target_has_atomic = "8")]
        {
            use core::sync::atomic::Ordering;
            self.0
                .fetch_update(Ordering::Acquire, Ordering::Relaxed, |taken| {
                    (taken & mask == 0).then_some(taken | mask)
                })
                .map(drop)
                .map_err(|_| AlreadyTaken)
        }
        #[cfg(not(target_has_atomic = "8"))]
        {
            critical_section::with(|cs| {
                let taken = self.0.borrow(cs);
                if taken.get() & mask != 0 {
                    return Err(AlreadyTaken);
                }
                taken.set(taken.get() | mask);
                Ok(())
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fdr::writer::WriterConfig;

    fn cfg() -> RecorderConfig {
        RecorderConfig::new(WriterConfig::new(1), 1_000)
    }

    #[test]
    fn each_half_is_taken_once() {
        static RING: StaticRing<2, 128> = StaticRing::new(Policy::Streaming);
        let rec = RING.take_recorder(cfg());
        assert!(rec.is_ok());
        assert_eq!(RING.take_recorder(cfg()).err(), Some(AlreadyTaken));
        assert_eq!(RING.split(cfg()).err(), Some(AlreadyTaken));
        assert!(RING.take_consumer().is_ok());
        assert_eq!(RING.take_consumer().err(), Some(AlreadyTaken));
    }

    #[test]
    fn buffers_are_aligned_to_8_bytes() {
        static RING: StaticRing<3, 64> = StaticRing::new(Policy::Streaming);
        assert_eq!(core::mem::align_of::<StaticRing<3, 64>>() % 8, 0);
        let view = RING.view();
        assert_eq!(view.storage.as_ptr() as usize % 8, 0);
    }
}
