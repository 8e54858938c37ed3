//! Custom and typed events through the per-context recorders: the same choice of
//! ring and the same busy flag as a function record, for records that carry a
//! payload (an executor's and a task's ids, a state change).

use super::{word, ContextRecorders, ContextSource, Lost, READY};
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
