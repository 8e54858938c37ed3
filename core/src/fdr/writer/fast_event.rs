//! A typed event with an 8-byte payload on a straight path, as a function
//! record's: an async executor's hooks (`flightrec-embassy`: a task's spawn,
//! wake-up and end with the executor's and the task's ids) write one on most
//! polls, and the general event path (room checks, preamble, payload copy,
//! extents) costs several times a function record.

use super::{BufferWriter, META, SPLIT, STRICT_ALIGNMENT};
use crate::clock::Timestamp;
use crate::fdr::records::MetadataKind;

/// The payload's bytes.
const EVENT8: usize = 8;

impl BufferWriter<'_> {
    /// Stores a typed event of `event_type` whose 8-byte payload is `words`
    /// (two little-endian words) when that needs nothing but its stores: the
    /// last record's CPU, a time on the last record's high word at most
    /// `i32::MAX` ticks after it, room before the buffer's limit, and nothing
    /// else to keep (the fast end is set: extents deferred, and on
    /// strict-alignment targets the position 4-aligned, which 24 bytes keep).
    /// Otherwise it writes nothing and returns `false`: record the event with
    /// [`typed_event`](Self::typed_event), which writes the same bytes where
    /// this path would have (this module's test).
    #[inline(always)]
    pub(crate) fn try_typed_event8(
        &mut self,
        ts: Timestamp,
        event_type: u16,
        words: [u32; 2],
    ) -> bool {
        let end = self.cur.addr().wrapping_add(META + EVENT8);
        let delta = if SPLIT {
            // As the split record path: the reading's high word is `epoch`
            // (the last record's, on CPU 0), and its fast end is set only when
            // `fast_end` is; then a delta of the low words below 2^31 is the
            // delta.
            let delta = (ts.tsc as u32).wrapping_sub(self.latest_tsc as u32);
            if (ts.tsc >> 32) as u32 != self.epoch
                || ts.cpu != 0
                || end > self.fast_end_epoch
                || delta > i32::MAX as u32
            {
                return false;
            }
            delta
        } else {
            let delta = ts.tsc.wrapping_sub(self.latest_tsc);
            if self.fast_end == 0
                || end > self.fast_end
                || u32::from(ts.cpu) != self.latest_cpu
                || delta > i32::MAX as u64
                || (ts.tsc ^ self.latest_tsc) >> 32 != 0
            {
                return false;
            }
            delta as u32
        };
        // TypedEventMarker { size: 8, delta, event_type } as words: the tag,
        // the size in bytes 1 to 4, the delta in 5 to 8, the type in 9 and 10.
        let tag = u32::from(MetadataKind::TypedEventMarker.tag());
        let record: [u32; 6] = [
            (tag | (EVENT8 as u32) << 8).to_le(),
            (delta << 8).to_le(),
            (delta >> 24 | u32::from(event_type) << 8).to_le(),
            0,
            words[0].to_le(),
            words[1].to_le(),
        ];
        let at = self.cur.cast::<[u32; 6]>();
        // SAFETY: `cur .. end` is inside the buffer, before the limit (tested
        // above against the fast end, `base + limit`), which `&mut self` borrows
        // exclusively; `cur` is 4-aligned where the target needs it (the fast
        // end is 0 otherwise).
        unsafe {
            if STRICT_ALIGNMENT {
                at.write(record);
            } else {
                at.write_unaligned(record);
            }
        }
        self.cur = self.cur.wrapping_add(META + EVENT8);
        // The high word and the CPU are the same: the epoch and the fast ends
        // stay, and only the low word of the time changes.
        self.set_latest_low(ts.tsc as u32);
        // Metadata cannot be erased, nor anything before it (only short-call
        // elision reads this).
        if cfg!(feature = "short-call-elision") {
            self.undo_start = self.pos();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::clock::Timestamp;
    use crate::fdr::decoder::verify;
    use crate::fdr::writer::{BufferWriter, Walltime, WriterConfig};

    /// The straight path writes what the general path writes, and declines
    /// where the general path needs more than its stores.
    #[test]
    fn writes_what_the_general_path_writes() {
        let at = |tsc| Timestamp { tsc, cpu: 0 };
        let payload = [1, 2, 3, 4, 5, 6, 7, 8];
        let words = [0x0403_0201, 0x0807_0605];
        let (mut a, mut b) = ([0u8; 256], [0u8; 256]);
        let cfg = WriterConfig::new(1);
        let mut fast = BufferWriter::new(&mut a, &cfg, Walltime::default()).unwrap();
        let mut general = BufferWriter::new(&mut b, &cfg, Walltime::default()).unwrap();
        // As a ring's recorder writes: the extents brought up to date when the
        // buffer is handed out, not after every record.
        fast.defer_extents();
        // The first event needs a NewCPUId: declined.
        assert!(!fast.try_typed_event8(at(10), 7, words));
        fast.typed_event(at(10), 7, &payload).unwrap();
        general.typed_event(at(10), 7, &payload).unwrap();
        for tsc in [10, 11, 500, 0x7FFF_FFFF] {
            assert!(fast.try_typed_event8(at(tsc), 0xE5A1, words), "{tsc}");
            general.typed_event(at(tsc), 0xE5A1, &payload).unwrap();
        }
        // Another high word, backwards, too far on: declined.
        for tsc in [1 << 32, 5, 0x7FFF_FFFF + (1 << 31)] {
            assert!(!fast.try_typed_event8(at(tsc), 1, words), "{tsc}");
        }
        fast.sync_extents();
        general.sync_extents();
        assert_eq!(fast.as_bytes(), general.as_bytes());
        // Until the buffer is full.
        let mut n = 0;
        while fast.try_typed_event8(at(0x7FFF_FFFF), 2, words) {
            n += 1;
        }
        assert!(n > 0 && fast.as_bytes().len() + 24 > 256);
        fast.sync_extents();
        let header = crate::fdr::FileHeader::new(core::num::NonZeroU64::MIN, 256);
        let mut file = header.to_bytes().to_vec();
        file.extend_from_slice(fast.as_bytes());
        verify(&file).unwrap();
    }
}
