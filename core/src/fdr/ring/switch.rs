//! The buffer switch: when the current buffer is full, the recorder finishes it,
//! hands it on (streaming) or overwrites the oldest (flight recorder), and starts
//! the next; the straight switch rewrites only the preamble's changing records.

use super::recorder::{micros_after, seconds_fit_a_word, WALLTIME_NOT_STARTED};
use super::*;

impl<'r> Recorder<'r, '_> {
    /// [`function_word`](Self::function_word) for a record that
    /// [`try_function_word`](Self::try_function_word) found
    /// [`Tried::Full`], at the time whose low word is `raw`: the straight
    /// switch, else the slow path's.
    #[inline(always)]
    pub(crate) fn function_word_full(&mut self, low: u32, raw: u32) -> Result<(), Dropped> {
        debug_assert!(self.writer.lacks_room_for_function(low));
        let ts = self.writer.time_of_full(raw);
        // On a 32-bit target that time is on CPU 0 and `epoch`.
        if self.switch_for_function(low, ts, cfg!(target_pointer_width = "32")) {
            return Ok(());
        }
        self.function_switch_slow(low, ts)
    }

    /// The record that a context's recorder's straight store declined for
    /// another reason than a full buffer ([`Tried::Declined`]), which the
    /// buffer may have room for: the writer's general path, then, if the
    /// buffer is full after all (a NewCPUId or TSCWrap must come first and does
    /// not fit), the slow path's switch rather than the straight one, which
    /// would be a third copy of it for a rare case.
    #[cold]
    #[inline(never)]
    pub(crate) fn function_word_general(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        if self.writer.function_word_across(low, ts).is_ok() {
            return Ok(());
        }
        self.function_switch_slow(low, ts)
    }

    /// The buffer switch (or the drop) of a function record, out of line: only the
    /// low word and the time go in, so the record path keeps few registers.
    #[cold]
    #[inline(never)]
    pub(super) fn function_slow(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        self.switch_or_slow(low, ts)
    }

    /// The straight switch, else the slow path's: the body of
    /// [`function_slow`](Self::function_slow), and in line in
    /// [`function_word_full`](Self::function_word_full).
    #[inline(always)]
    pub(super) fn switch_or_slow(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        if self.switch_for_function(low, ts, false) {
            return Ok(());
        }
        self.function_switch_slow(low, ts)
    }

    /// The buffer switch that [`switch_for_function`](Self::switch_for_function)
    /// leaves (the first buffer, one after a loss marker or a flush, no free
    /// buffer), or the drop: the writer's general path after the slow path's
    /// switch, out of line.
    #[cold]
    #[inline(never)]
    pub(super) fn function_switch_slow(&mut self, low: u32, ts: Timestamp) -> Result<(), Dropped> {
        self.slow_path(ts, move |w| {
            w.function_word_across(low, ts).map_err(WriteError::from)
        })
    }

    /// No current buffer, or it is full: finish it, get the next, write there.
    #[cold]
    pub(super) fn slow_path(
        &mut self,
        ts: Timestamp,
        mut op: impl FnMut(&mut BufferWriter<'r>) -> Result<(), WriteError>,
    ) -> Result<(), Dropped> {
        if self.broken {
            self.count_drop(ts);
            return Err(Dropped::TooLarge);
        }
        // The finished writer stays on its buffer until `acquire` replaces it
        // with the next buffer's (no detaching in between), or fails and it is
        // detached: nothing records in between.
        self.publish_current();
        if !self.acquire(ts) {
            self.writer.detach();
            self.count_drop(ts);
            return Err(Dropped::ConsumerBehind);
        }
        if self.writer.is_detached() {
            self.count_drop(ts);
            return Err(Dropped::ConsumerBehind);
        }
        match op(&mut self.writer) {
            Ok(()) => Ok(()),
            // An empty buffer could not take it: it never fits.
            Err(e) => Err(self.reject(e, ts)),
        }
    }

    /// What [`straight_switch`](Self::straight_switch) sums up, from the state.
    pub(super) fn straight_switch_now(&self) -> bool {
        self.walltime.micros != WALLTIME_NOT_STARTED
            && self.unmarked_loss == 0
            && self.writer.restarts_on(self.ring.buffer_size)
            && self.prepared == self.ring.slots.len()
            && !self.broken
            && seconds_fit_a_word(self.walltime.seconds)
    }

    /// Whether the policy lets the recorder take buffer `seq` (in streaming
    /// mode: the consumer has released the buffer `n` before it).
    #[inline(always)]
    pub(super) fn may_take(&self, seq: u32, policy: Policy) -> bool {
        match policy {
            Policy::Streaming => {
                let tail = self.ring.state.tail.load(Ordering::Acquire);
                seq.wrapping_sub(tail) < self.ring.slots.len() as u32
            }
            Policy::FlightRecorder => true,
        }
    }

    /// Flight recorder: the current slot's buffer from `n` buffers ago, if it
    /// was finished, is overwritten now: counted, and its length cleared.
    #[inline(always)]
    pub(super) fn overwrite_slot(&mut self, policy: Policy) {
        if policy != Policy::FlightRecorder {
            return;
        }
        // Slot indexes are below N (`next_slot`): `get` only spares a panic path.
        let slot = self.ring.slots.get(self.slot);
        if let Some(slot) = slot.filter(|s| s.len.load(Ordering::Relaxed) > 0) {
            self.count_overwritten(slot);
        }
    }

    /// Counts the finished buffer in `slot` as overwritten and clears its
    /// length: the slot is being taken. Only the recorder writes the counter,
    /// so a load and a store suffice (thumbv6m has no read-modify-write).
    #[inline(always)]
    pub(super) fn count_overwritten(&self, slot: &Slot) {
        let lost = self.ring.state.buffers_overwritten.load(Ordering::Relaxed);
        self.ring
            .state
            .buffers_overwritten
            .store(lost.wrapping_add(1), Ordering::Relaxed);
        slot.len.store(0, Ordering::Relaxed);
    }

    /// [`overwrite_slot`](Self::overwrite_slot) on the straight switch, where
    /// a flight recorder's next slot always holds a finished buffer, so it is
    /// counted without a test of its length (a load, a branch and the registers
    /// around them on every switch). Why it
    /// always does: the straight switch needs `prepared == N`, so this recorder
    /// has taken every slot once, in turn, and buffer `seq + 1 - N` in the next
    /// slot was published since (`seq` only moves on with a publish, which stores a
    /// length above 0: a published buffer has events). Nothing has cleared that
    /// length since: `overwrite_slot` clears a slot when it is taken, and a
    /// flight recorder's consumer takes no buffers ([`Consumer::pop`]).
    #[inline(always)]
    pub(super) fn overwrite_taken_slot(&mut self, policy: Policy) {
        if policy != Policy::FlightRecorder {
            return;
        }
        // SAFETY: the recorder's `slot` (`slot_at`).
        let slot = unsafe { self.ring.slot_at(self.slot) };
        debug_assert!(slot.len.load(Ordering::Relaxed) > 0);
        self.count_overwritten(slot);
    }

    /// The common buffer switch, straight: a function record found its buffer
    /// full, nothing was lost, every slot holds a preamble
    /// ([`straight_switch`](Self::straight_switch)), and the policy lets the
    /// recorder take the next buffer. Finishes the buffer, and starts the next
    /// with the record as its first event
    /// ([`BufferWriter::restart_with_function`]), with none of
    /// [`slow_path`](Self::slow_path)'s tests for the first buffer, a lost
    /// record, a loss marker or a broken ring. `false`: nothing changed, the
    /// slow path does it.
    #[inline(always)]
    pub(super) fn switch_for_function(&mut self, low: u32, ts: Timestamp, on_epoch: bool) -> bool {
        // The policy loaded once: three tests of it below.
        let policy = self.ring.policy;
        if !self.straight_switch || !self.may_take(self.seq.wrapping_add(1), policy) {
            return false;
        }
        // A record comes here when its buffer has no room for it; a buffer
        // without events has room for its first NewCPUId and record
        // (`min_buffer_len`), so this one has events: asserted, not tested,
        // since the switch would pay for the test every time.
        debug_assert!(self.writer.has_events());
        // The buffer has events: published, and `seq` and `slot` advance.
        // SAFETY: `straight_switch` includes `restarts_on` with the ring's
        // buffer length (see below).
        let len = unsafe { self.writer.finish_restartable() };
        self.publish_finished(len, policy);
        self.overwrite_taken_slot(policy);
        // The wall time stepped just before the new buffer's preamble takes
        // it, so that it is not held in registers (or on the stack, on
        // thumbv6m) across the publishing. Its seconds and the next buffer's
        // fit a word (`straight_switch`), so they are stepped in their low
        // word and the WalltimeMarker's words are built from it alone (on
        // thumbv6m a 64-bit step and the high word's shifts held five more
        // values across the restart). When the next
        // but one's would not fit, that one switches the slow way (in the year
        // 2106 of a Unix epoch): tested here, where the seconds are loaded
        // anyway, rather than with the flag.
        let seconds = (self.walltime.seconds as u32).wrapping_add(1);
        if seconds == u32::MAX {
            cold_path();
            self.straight_switch = false;
        }
        let walltime = Walltime {
            seconds: i64::from(seconds),
            micros: micros_after(self.walltime.micros),
        };
        self.walltime = walltime;
        // SAFETY: buffer `seq` is free (`may_take`, as in `acquire`); its slot's
        // buffer has the current one's length (every buffer of a ring does).
        // The writer's `restart_with_function` contract holds: `has_events` (see
        // above), and `restarts_on` with that length is part of
        // `straight_switch`, set after the `start` in `acquire` (the only
        // `start` of this writer), cleared with every `detach`, and kept by a
        // restart. The buffer holds a preamble this recorder's `start` wrote
        // with its one configuration (`straight_switch`: every slot is
        // `prepared`; only this recorder writes the ring's buffers).
        unsafe {
            let buf = self.ring.buffer_mut(self.slot);
            self.writer
                .restart_with_function(buf.as_mut_ptr(), walltime, low, ts, on_epoch);
        }
        true
    }

    /// Takes the next buffer if the policy allows and writes its preamble, then
    /// the loss marker of records lost since the last one.
    ///
    /// The marker is written from this small frame, not from
    /// [`take_buffer`](Self::take_buffer)'s: the preamble's 64-bit work (the
    /// first buffer's wall-clock second) and the marker with its decimal count
    /// each take a large frame on thumbv6m; one on top of the other, they would
    /// be the deepest way of a record (`benches/cortex-m/stack.py` bounds it).
    #[inline(never)]
    pub(super) fn acquire(&mut self, ts: Timestamp) -> bool {
        if !self.take_buffer(ts) {
            return false;
        }
        if self.unmarked_loss > 0 {
            self.mark_loss(ts);
        }
        self.straight_switch = self.straight_switch_now();
        true
    }

    /// [`acquire`](Self::acquire)'s buffer and preamble.
    #[inline(never)]
    pub(super) fn take_buffer(&mut self, ts: Timestamp) -> bool {
        if !self.may_take(self.seq, self.ring.policy) {
            return false;
        }
        self.overwrite_slot(self.ring.policy);
        // SAFETY: buffer `seq` is free: in streaming mode the consumer has released it
        // (checked above with acquire ordering against its release store of `tail`); in
        // flight-recorder mode no consumer reads buffers, and `for_each_buffer` needs
        // `&mut self`, so no shared borrow of this buffer is alive.
        let buf = unsafe { self.ring.buffer_mut(self.slot) };
        let walltime = self.next_walltime(ts.tsc);
        // The count is brought up to date when the buffer is handed out
        // (deferred extents).
        if self
            .writer
            .start(buf, &self.config.writer, walltime, true)
            .is_err()
        {
            self.broken = true;
            return false;
        }
        self.prepared = self.prepared.max(self.slot + 1);
        true
    }

    /// Finishes the current buffer and publishes it; the recorder then has no
    /// current buffer.
    pub(super) fn finish_current(&mut self) {
        self.publish_current();
        self.writer.detach();
        self.straight_switch = false;
    }

    /// [`finish_current`](Self::finish_current) without detaching the writer,
    /// which stays on the finished buffer: the caller detaches it or replaces
    /// it before anything records.
    pub(super) fn publish_current(&mut self) {
        // Without events the buffer is kept for the next acquire (an empty
        // buffer is invalid).
        if self.writer.is_detached() || !self.writer.has_events() {
            return;
        }
        let len = self.writer.finish_with_events();
        self.publish_finished(len, self.ring.policy);
    }

    /// Hands the current buffer, finished with `len` bytes, to the consumer:
    /// its slot's length, `seq` and `slot` on, `head` released. In line: the
    /// straight switch would otherwise make a call here besides the writer's
    /// finish, with the registers it saves and restores.
    #[inline(always)]
    pub(super) fn publish_finished(&mut self, len: usize, policy: Policy) {
        // SAFETY: the recorder's `slot` (`slot_at`).
        let slot = unsafe { self.ring.slot_at(self.slot) };
        slot.len.store(len as u32, Ordering::Relaxed);
        self.seq = self.seq.wrapping_add(1);
        self.slot = self.ring.next_slot(self.slot);
        // Publishes the bytes and the length to the consumer.
        self.ring.state.head.store(self.seq, Ordering::Release);
        // Only a streaming ring has a consumer to tell (the policy first: a
        // flight recorder's switch then loads no callback).
        if policy != Policy::Streaming {
            return;
        }
        let ready = self.ring.state.buffer_ready.load(Ordering::Relaxed);
        if !ready.is_null() {
            // SAFETY: `set_buffer_ready` stores nothing but `fn()` pointers (cast to
            // `*mut ()`), so a non-null value is one, with its provenance.
            let ready = unsafe { core::mem::transmute::<*mut (), fn()>(ready) };
            ready();
        }
    }
}
