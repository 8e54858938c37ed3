//! Custom and typed events through the per-context recorders: the same choice of
//! ring and the same busy flag as a function record, for records that carry a
//! payload (an executor's and a task's ids, a state change).

use super::{word, Context, ContextRecorders, ContextSource, Lost, Slot, READY};
use crate::clock::Clock;
use core::sync::atomic::Ordering;

impl<const N: usize, S, C> ContextRecorders<N, S, C>
where
    S: ContextSource,
    C: Clock + Copy + Sync,
{
    /// Records a typed event (FDR version 5) of `event_type` with `payload` in
    /// the running context's recorder, at the shared clock's time. Like a
    /// function record it takes no critical section: a context without a
    /// recorder, or whose recorder is in use, has it counted in
    /// [`stats`](Self::stats).
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextRecorders};
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// # use flightrec_core::fdr::static_ring::StaticRing;
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::Version;
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// # static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// # let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// # let (recorder, mut consumer) = RING.split(cfg).unwrap();
    /// TRACE.install(Context::THREAD_MODE, recorder).unwrap();
    /// assert_eq!(TRACE.typed_event(0xE5A1, &[1, 2, 3, 4]), Ok(()));
    /// TRACE.flush_all();
    /// let buffer = consumer.pop().unwrap();
    /// let (event, _) = decode_record(Version::V5, &buffer[64..]).unwrap();
    /// assert_eq!(event, Record::TypedEvent { delta: 0, event_type: 0xE5A1, payload: &[1, 2, 3, 4] });
    /// ```
    #[inline]
    pub fn typed_event(&'static self, event_type: u16, payload: &[u8]) -> Result<(), Lost> {
        if let Ok(&[a, b, c, d, e, f, g, h]) = <&[u8; 8]>::try_from(payload) {
            let words = [
                u32::from_le_bytes([a, b, c, d]),
                u32::from_le_bytes([e, f, g, h]),
            ];
            return self.typed_event8(event_type, words);
        }
        self.typed_event_general(event_type, payload)
    }

    /// [`typed_event`](Self::typed_event) with a payload of 8 bytes given as two
    /// little-endian words (two 32-bit ids, as an async executor's task events
    /// carry): stored on a straight
    /// path like a function record's where it needs nothing else (the slot's
    /// claim, the clock, two stores), the general way otherwise.
    ///
    /// ```
    /// # use flightrec_core::clock::TimerClock;
    /// # use flightrec_core::context::{Context, ContextRecorders};
    /// # use flightrec_core::fdr::ring::{Policy, RecorderConfig};
    /// # use flightrec_core::fdr::static_ring::StaticRing;
    /// # use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::decoder::{decode_record, verify};
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::Version;
    /// # fn src() -> Context { Context::THREAD_MODE }
    /// # static CLOCK: TimerClock = TimerClock::new(|| 0, 32, 1_000);
    /// static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
    ///     ContextRecorders::new(src, &CLOCK);
    /// # static RING: StaticRing<2, 256> = StaticRing::new(Policy::Streaming);
    /// # let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    /// # let (recorder, mut consumer) = RING.split(cfg).unwrap();
    /// TRACE.install(Context::THREAD_MODE, recorder).unwrap();
    /// for i in 0..3 {
    ///     assert_eq!(TRACE.typed_event8(0xE5A1, [i, 0x0101_0101]), Ok(()));
    /// }
    /// TRACE.flush_all();
    /// let buffer = consumer.pop().unwrap();
    /// let (event, _) = decode_record(Version::V5, &buffer[64 + 24..]).unwrap();
    /// assert_eq!(event, Record::TypedEvent { delta: 0, event_type: 0xE5A1, payload: &[1, 0, 0, 0, 1, 1, 1, 1] });
    /// let mut file = cfg.file_header(256).to_bytes().to_vec();
    /// file.extend_from_slice(&buffer);
    /// assert_eq!(verify(&file).unwrap().typed_events, 3);
    /// ```
    #[inline(always)]
    pub fn typed_event8(&'static self, event_type: u16, words: [u32; 2]) -> Result<(), Lost> {
        let context = self.source.current();
        let ready = if context == Context::THREAD_MODE {
            READY
        } else {
            word(context, READY)
        };
        for slot in &self.slots {
            if slot.word.load(Ordering::Relaxed) != ready {
                continue;
            }
            if !slot.claim_seen(ready) {
                return Err(self.refuse());
            }
            let mut clock = self.clock;
            if let Some(ts) = clock.now_if_unshared() {
                // SAFETY: claimed just above, released below or by `event8_claimed`.
                let recorder = unsafe { slot.claimed_recorder() };
                if recorder.try_typed_event8(ts, event_type, words) {
                    slot.release_after_record(ready);
                    return Ok(());
                }
            }
            // SAFETY: claimed above, not released.
            return unsafe { self.event8_claimed(slot, event_type, words[0], words[1]) };
        }
        Err(self.no_ready_slot(context))
    }

    /// The general way of an event whose slot this execution claimed; releases it.
    ///
    /// # Safety
    /// This execution claimed `slot` and has not released it.
    #[cold]
    #[inline(never)]
    unsafe fn event8_claimed(
        &'static self,
        slot: &Slot,
        event_type: u16,
        first: u32,
        second: u32,
    ) -> Result<(), Lost> {
        let ready = slot.claimed_ready();
        let [a, b] = [first, second].map(u32::to_le_bytes);
        let payload = [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]];
        let mut clock = self.clock;
        // SAFETY: the caller claimed the slot and has not released it.
        let result = unsafe {
            slot.use_claimed(ready, |r| r.typed_event(clock.now(), event_type, &payload))
        };
        result.map_err(Lost::Dropped)
    }

    /// [`typed_event`](Self::typed_event) for any payload: the general way.
    fn typed_event_general(&'static self, event_type: u16, payload: &[u8]) -> Result<(), Lost> {
        let context = self.source.current();
        let ready = word(context, READY);
        for slot in &self.slots {
            if slot.word.load(Ordering::Relaxed) == ready {
                let mut clock = self.clock;
                let Some(result) =
                    slot.with(ready, |r| r.typed_event(clock.now(), event_type, payload))
                else {
                    return Err(self.refuse());
                };
                return result.map_err(Lost::Dropped);
            }
        }
        Err(self.no_ready_slot(context))
    }
}

#[cfg(test)]
mod tests {
    use crate::clock::TimerClock;
    use crate::context::{Context, ContextRecorders};
    use crate::fdr::decoder::verify;
    use crate::fdr::ring::{Policy, RecorderConfig};
    use crate::fdr::static_ring::StaticRing;
    use crate::fdr::writer::WriterConfig;
    use crate::fdr::{FunctionAction, FunctionId};
    use crate::global::GlobalRecorder;
    use core::sync::atomic::{AtomicU32, Ordering};

    static NOW: AtomicU32 = AtomicU32::new(0);
    fn now() -> u32 {
        NOW.fetch_add(3, Ordering::Relaxed)
    }
    fn thread() -> Context {
        Context::THREAD_MODE
    }
    static CLOCK: TimerClock = TimerClock::new(now, 32, 1_000);
    static TRACE: ContextRecorders<1, fn() -> Context, &TimerClock> =
        ContextRecorders::new(thread, &CLOCK);
    static RING: StaticRing<4, 256> = StaticRing::new(Policy::Streaming);

    /// Events and function records mixed, across buffer switches (the straight
    /// path and the general one): every one kept, every buffer valid.
    #[test]
    fn events_across_buffers_verify() {
        let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
        let (recorder, mut consumer) = RING.split(cfg).unwrap();
        TRACE.install(Context::THREAD_MODE, recorder).unwrap();
        let f = FunctionId::new(3).unwrap();
        let (mut events, mut functions) = (0, 0);
        let mut file = cfg.file_header(256).to_bytes().to_vec();
        for i in 0..40u32 {
            TRACE.record_function(FunctionAction::Enter, f);
            assert_eq!(TRACE.typed_event8(0xE5A1, [i, !i]), Ok(()));
            assert_eq!(TRACE.typed_event(0xE5A2, &[1, 2, 3]), Ok(()));
            TRACE.record_function(FunctionAction::Exit, f);
            (events, functions) = (events + 2, functions + 2);
            while let Some(b) = consumer.pop() {
                file.extend_from_slice(b.bytes());
            }
        }
        TRACE.flush_all();
        while let Some(b) = consumer.pop() {
            file.extend_from_slice(b.bytes());
        }
        let summary = verify(&file).unwrap();
        assert!(summary.buffers > 4, "{}", summary.buffers);
        assert_eq!(
            (summary.typed_events, summary.function_records),
            (events, functions)
        );
        assert_eq!(TRACE.stats().refused + TRACE.stats().unrouted, 0);
    }
}
