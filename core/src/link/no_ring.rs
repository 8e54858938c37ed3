//! [`NoRing`]: the records made in contexts that have no ring, counted per
//! context, and their form on the wire, after a counters frame's
//! [`LinkStats`](super::LinkStats) ([`NoRingCount`]).
//!
//! A record for a context without a ring (a ring installed for the wrong
//! interrupt priority, or none at all) reaches no buffer, so no buffer can say
//! it was lost. `ContextRecorders` counts it here, by context, and every
//! counters frame of a source made by `ContextRecorders::install_ring` carries
//! the counts: the ordinary drain brings them to the receiver, which names the
//! context.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::context::Context;

/// How many contexts [`NoRing`] tells apart; records of any further context are
/// counted together.
///
/// ```
/// use flightrec_core::context::Context;
/// use flightrec_core::link::{NoRing, NoRingCount, NO_RING_CONTEXTS};
/// let lost = NoRing::new();
/// // One record in each of two more contexts than the table names.
/// for p in 0..NO_RING_CONTEXTS as u8 + 2 {
///     lost.count(Context::priority(p * 0x20));
/// }
/// let mut bytes = [0u8; NoRing::WIRE_MAX];
/// let n = lost.emit(&mut bytes);
/// let counts: Vec<_> = NoRingCount::parse_all(&bytes[..n]).unwrap().collect();
/// // The first NO_RING_CONTEXTS by name, the other two together.
/// assert_eq!(counts.len(), NO_RING_CONTEXTS + 1);
/// assert!(counts[..NO_RING_CONTEXTS].iter().all(|c| c.context.is_some() && c.records == 1));
/// assert_eq!(counts[NO_RING_CONTEXTS], NoRingCount { context: None, records: 2 });
/// ```
pub const NO_RING_CONTEXTS: usize = 4;

/// The context field of the entry that counts the contexts beyond the first
/// [`NO_RING_CONTEXTS`].
const OTHERS: u32 = u32::MAX;

/// Records made in contexts without a ring, per context: a `static` (inside
/// `ContextRecorders`), all zeros until a record finds no ring. The counts only
/// grow (wrapping), so a receiver keeps the latest it heard.
///
/// ```
/// use flightrec_core::context::Context;
/// use flightrec_core::link::{NoRing, NoRingCount};
/// static LOST: NoRing = NoRing::new();
/// LOST.count(Context::priority(0x40));
/// LOST.count(Context::priority(0x40));
/// LOST.count(Context::NMI);
/// let mut bytes = [0u8; NoRing::WIRE_MAX];
/// let n = LOST.emit(&mut bytes);
/// let counts: Vec<_> = NoRingCount::parse_all(&bytes[..n]).unwrap().collect();
/// assert_eq!(counts, [
///     NoRingCount { context: Some(Context::priority(0x40)), records: 2 },
///     NoRingCount { context: Some(Context::NMI), records: 1 },
/// ]);
/// assert_eq!(LOST.total(), 3);
/// ```
pub struct NoRing {
    /// 0 for a free entry, else the context's number plus one.
    contexts: [AtomicU32; NO_RING_CONTEXTS],
    records: [AtomicU32; NO_RING_CONTEXTS],
    others: AtomicU32,
}

impl Default for NoRing {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for NoRing {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NoRing")
            .field("total", &self.total())
            .finish_non_exhaustive()
    }
}

/// Two tables are equal when they are the same table (a [`Source`](super::Source)
/// compares the table it carries by address).
impl PartialEq for NoRing {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self, other)
    }
}

impl Eq for NoRing {}

#[cfg(feature = "defmt")]
impl defmt::Format for NoRing {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "NoRing {{ total: {=u32} }}", self.total());
    }
}

impl NoRing {
    /// The most bytes [`emit`](Self::emit) writes: an entry per context and one
    /// for the others.
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// use flightrec_core::link::{NoRing, NoRingCount, NO_RING_CONTEXTS};
    /// assert_eq!(NoRing::WIRE_MAX, (NO_RING_CONTEXTS + 1) * NoRingCount::LEN);
    /// // Every entry in use, and the others: the table fills WIRE_MAX bytes.
    /// let lost = NoRing::new();
    /// for p in 0..=NO_RING_CONTEXTS as u8 {
    ///     lost.count(Context::priority(p * 0x20));
    /// }
    /// let mut bytes = [0u8; NoRing::WIRE_MAX + 8];
    /// assert_eq!(lost.emit(&mut bytes), NoRing::WIRE_MAX);
    /// ```
    pub const WIRE_MAX: usize = (NO_RING_CONTEXTS + 1) * NoRingCount::LEN;

    /// Nothing counted. Example on [`NoRing`].
    pub const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)] // a fresh atomic per entry
        const ZERO: AtomicU32 = AtomicU32::new(0);
        Self {
            contexts: [ZERO; NO_RING_CONTEXTS],
            records: [ZERO; NO_RING_CONTEXTS],
            others: ZERO,
        }
    }

    /// Counts one record of `context`, which has no ring. Out of the record
    /// path (only a lost record comes here). Example on [`NoRing`].
    #[cold]
    #[inline(never)]
    pub fn count(&self, context: Context) {
        let key = u32::from(context.get()) + 1;
        #[cfg(target_has_atomic = "32")]
        {
            for (c, n) in self.contexts.iter().zip(&self.records) {
                match c.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => {}
                    Err(k) if k == key => {}
                    Err(_) => continue,
                }
                n.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.others.fetch_add(1, Ordering::Relaxed);
        }
        #[cfg(not(target_has_atomic = "32"))]
        critical_section::with(|_| {
            let add = |n: &AtomicU32| {
                n.store(n.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed)
            };
            for (c, n) in self.contexts.iter().zip(&self.records) {
                let k = c.load(Ordering::Relaxed);
                if k == 0 {
                    c.store(key, Ordering::Relaxed);
                } else if k != key {
                    continue;
                }
                add(n);
                return;
            }
            add(&self.others);
        });
    }

    /// Every record counted, whatever its context. Example on [`NoRing`].
    pub fn total(&self) -> u32 {
        self.records
            .iter()
            .chain(core::iter::once(&self.others))
            .fold(0u32, |t, n| t.wrapping_add(n.load(Ordering::Relaxed)))
    }

    /// Writes the non-zero counts into `out` (at least [`WIRE_MAX`](Self::WIRE_MAX)
    /// bytes, else what fits) and returns the bytes written. Example on
    /// [`NoRing`].
    pub fn emit(&self, out: &mut [u8]) -> usize {
        let mut at = 0;
        self.each(|entry| {
            if let Some(slot) = out.get_mut(at..at + NoRingCount::LEN) {
                slot.copy_from_slice(entry);
                at += NoRingCount::LEN;
            }
        });
        at
    }

    /// Calls `f` with each non-zero count in its wire form, so that a frame
    /// takes them one at a time (8 bytes on the stack, not the whole table).
    pub(super) fn each(&self, mut f: impl FnMut(&[u8; NoRingCount::LEN])) {
        let named = self
            .contexts
            .iter()
            .zip(&self.records)
            .map(|(c, n)| (c.load(Ordering::Relaxed), n.load(Ordering::Relaxed)))
            .filter(|&(c, _)| c != 0)
            .map(|(c, n)| (c - 1, n));
        let others = (OTHERS, self.others.load(Ordering::Relaxed));
        for (context, records) in named.chain(core::iter::once(others)) {
            if records == 0 {
                continue;
            }
            let mut entry = [0u8; NoRingCount::LEN];
            entry[..4].copy_from_slice(&context.to_le_bytes());
            entry[4..].copy_from_slice(&records.to_le_bytes());
            f(&entry);
        }
    }
}

/// One context's count on the wire: the context's number (`u32::MAX` for the
/// contexts beyond [`NO_RING_CONTEXTS`]) and the records it made without a ring,
/// two little-endian `u32`s. Example on [`NoRing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NoRingCount {
    /// The context, or `None` for the contexts the table had no room to name.
    pub context: Option<Context>,
    /// Records made in it since the start, wrapping.
    pub records: u32,
}

impl NoRingCount {
    /// Bytes of one count on the wire.
    ///
    /// ```
    /// use flightrec_core::context::Context;
    /// use flightrec_core::link::{NoRing, NoRingCount};
    /// assert_eq!(NoRingCount::LEN, 8);
    /// let lost = NoRing::new();
    /// lost.count(Context::NMI);
    /// let mut bytes = [0u8; NoRing::WIRE_MAX];
    /// let n = lost.emit(&mut bytes);
    /// // One count: the context's number, then its records, little-endian.
    /// assert_eq!(n, NoRingCount::LEN);
    /// assert_eq!(bytes[..4], u32::from(Context::NMI.get()).to_le_bytes());
    /// assert_eq!(bytes[4..n], 1u32.to_le_bytes());
    /// // A partial entry is refused.
    /// assert!(NoRingCount::parse_all(&bytes[..NoRingCount::LEN - 1]).is_none());
    /// ```
    pub const LEN: usize = 8;

    /// The counts in `bytes` (what follows a counters frame's
    /// [`LinkStats`](super::LinkStats)); `None` unless it is whole entries with
    /// valid contexts. Example on [`NoRing`].
    pub fn parse_all(bytes: &[u8]) -> Option<impl Iterator<Item = NoRingCount> + '_> {
        if bytes.len() % Self::LEN != 0 {
            return None;
        }
        let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let valid = bytes.chunks_exact(Self::LEN).all(|e| {
            let c = word(&e[..4]);
            c == OTHERS || c <= u32::from(u16::MAX)
        });
        if !valid {
            return None;
        }
        Some(bytes.chunks_exact(Self::LEN).map(move |e| {
            let c = word(&e[..4]);
            NoRingCount {
                context: u16::try_from(c).ok().map(Context::new),
                records: word(&e[4..]),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_beyond_the_table_are_counted_together() {
        let lost = NoRing::new();
        for p in 0..(NO_RING_CONTEXTS as u8 + 2) {
            lost.count(Context::priority(p * 0x20));
        }
        lost.count(Context::priority(0));
        let mut bytes = [0u8; NoRing::WIRE_MAX];
        let n = lost.emit(&mut bytes);
        assert_eq!(n, NoRing::WIRE_MAX);
        let mut counts = NoRingCount::parse_all(&bytes[..n]).unwrap();
        assert_eq!(counts.next().unwrap().records, 2);
        assert_eq!(
            counts.nth(NO_RING_CONTEXTS - 1).unwrap(),
            NoRingCount {
                context: None,
                records: 2
            }
        );
        assert_eq!(lost.total(), NO_RING_CONTEXTS as u32 + 3);
        // A short buffer takes whole entries only.
        assert_eq!(
            lost.emit(&mut [0u8; NoRingCount::LEN + 3]),
            NoRingCount::LEN
        );
    }

    #[test]
    fn parse_refuses_partial_entries_and_bad_contexts() {
        assert!(NoRingCount::parse_all(&[0; 7]).is_none());
        let mut e = [0u8; 8];
        e[..4].copy_from_slice(&0x1_0000u32.to_le_bytes());
        assert!(NoRingCount::parse_all(&e).is_none());
        assert_eq!(NoRingCount::parse_all(&[]).unwrap().count(), 0);
    }
}
