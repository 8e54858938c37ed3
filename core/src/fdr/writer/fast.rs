//! The fast path of a function record: its one store when the record needs
//! nothing else (no NewCPUId or TSCWrap first, no short-call elision, room left),
//! the time taken as two 32-bit halves on 32-bit targets (the split path) or as one
//! word (the wide path), and the fast ends that decide it with one compare.

use super::*;

impl<'b> BufferWriter<'b> {
    /// Stores `raw` as the low word of `latest_tsc`, whose high word is
    /// already the time's: one store where a `u64` is two. Not the safe
    /// `(latest & !0xFFFF_FFFF) | raw`: the Cortex-M bench's record rows
    /// measure it slower on both cores.
    #[inline(always)]
    pub(super) fn set_latest_low(&mut self, raw: u32) {
        if cfg!(target_endian = "little") {
            let latest: *mut u64 = &mut self.latest_tsc;
            // SAFETY: on a little-endian target the low word of the `u64` is its
            // first four bytes, inside the field, which `&mut self` borrows
            // exclusively, and aligned (a `u64` is at least 4-aligned).
            unsafe { latest.cast::<u32>().write(raw) };
        } else {
            self.latest_tsc = (self.latest_tsc & !u64::from(u32::MAX)) | u64::from(raw);
        }
    }

    /// Sets `epoch` from `latest_tsc` and `latest_cpu` (see the field), and the
    /// fast ends that depend on it; nothing where the split path is not used.
    #[inline(always)]
    pub(super) fn refresh_epoch(&mut self) {
        if SPLIT {
            self.refresh_epoch_split();
        }
    }

    /// [`refresh_epoch`](Self::refresh_epoch) where [`SPLIT`], out of line: every
    /// slow path that moves the time calls it, and one copy of it is less
    /// flash than one in each.
    #[inline(never)]
    pub(super) fn refresh_epoch_split(&mut self) {
        self.epoch = epoch_of(self.latest_cpu, self.latest_tsc);
        self.refresh_fast_end_zero();
    }

    /// Sets the split path's fast ends ([`fast_end_epoch`](Self::fast_end_epoch),
    /// [`fast_end_zero`](Self::fast_end_zero) and their exit twins) from `epoch`,
    /// the threshold and `fast_end`.
    ///
    /// Without [`SPLIT`] only `fast_end_exit` is kept, as `fast_end` without a
    /// short-call threshold and 0 with one: the x86_64 sled trampolines of
    /// `flightrec-sleds` compare an exit's end with it (see [`layout`]), and
    /// with 0 there every exit would leave their path for the slower one.
    #[inline]
    pub(super) fn refresh_fast_end_zero(&mut self) {
        self.refresh_fast_ends_valid(false);
    }

    /// [`refresh_fast_end_zero`](Self::refresh_fast_end_zero), where `valid`
    /// says that `epoch` is known not to be `NO_EPOCH` (no test of it).
    #[inline(always)]
    pub(super) fn refresh_fast_ends_valid(&mut self, valid: bool) {
        let exit = if self.elision_threshold() != 0 {
            0
        } else {
            self.fast_end
        };
        if SPLIT {
            // Masks rather than selects: Thumb-1 made each select a branch.
            let valid = usize::from(valid || self.epoch != NO_EPOCH).wrapping_neg();
            let zero = usize::from(self.epoch == 0).wrapping_neg();
            self.fast_end_epoch = self.fast_end & valid;
            self.fast_end_exit = exit & valid;
            self.fast_end_zero = self.fast_end & zero;
            self.fast_end_zero_exit = exit & zero;
        } else {
            self.fast_end_exit = exit;
        }
    }

    /// Sets [`fast_end`](Self::fast_end) (and the fast ends derived from it) from
    /// the state it depends on: whether each record updates the extents, and on
    /// [`STRICT_ALIGNMENT`] targets whether the write position is 4-aligned (only
    /// a payload, whose length is arbitrary, moves it off a multiple of 4 in a
    /// buffer that starts on one; every record after it takes the general path,
    /// with byte stores, until the buffer ends or the position is aligned again).
    #[inline]
    pub(super) fn refresh_fast_end(&mut self) {
        let aligned = !STRICT_ALIGNMENT || self.cur.addr() & 3 == 0;
        self.fast_end = if self.extents_every_record || !aligned {
            0
        } else {
            self.limit_addr()
        };
        self.refresh_fast_end_zero();
    }

    /// Whether the buffer cannot take a function record of low word `low` in any
    /// form: no room for its 8 bytes (nor, then, for a NewCPUId or TSCWrap
    /// before it), and not a record that short-call elision could write by
    /// erasing its entry. The detached writer has no room.
    #[inline(always)]
    pub(crate) fn lacks_room_for_function(&self, low: u32) -> bool {
        self.cur.addr() + FUNC > self.limit_addr() && !self.elision_applies(low)
    }

    /// [`function`](Self::function) with the action and id as the record's low
    /// word ([`FunctionRecord::low_word`]): one value instead of two on the record
    /// path, where registers are few (eight low ones on a Cortex-M0).
    ///
    /// On 32-bit targets it takes the split path: the time's high word compared
    /// with `epoch` (the last record's high word, on CPU 0) and the delta taken
    /// from the low words, a 32-bit subtraction whose borrow says the clock went
    /// backwards; only the low word of the time is stored. No 64-bit arithmetic,
    /// and the bytes are those of the 64-bit path: a record whose high word
    /// differs from the last one's (once per 2^32 ticks, and at a buffer's
    /// first record) takes the 64-bit path, out of line, which writes a TSCWrap
    /// when the gap does not fit 32 bits, as before.
    #[inline(always)]
    pub(crate) fn function_word(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        if cfg!(target_pointer_width = "32") {
            self.function_word_split(low, ts)
        } else {
            self.function_word_wide(low, ts)
        }
    }

    /// [`function_word`](Self::function_word) with the time's halves apart: the
    /// fast path of 32-bit targets (see there).
    #[inline(always)]
    pub(super) fn function_word_split(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        self.split_store_or(
            low,
            ts,
            true,
            Ok(()),
            |w| w.function_word_across(low, ts),
            |w, fast_end| {
                // A fast end that is not 0 is the buffer's limit with nothing
                // else to do first (no new high word, no elision, which make it
                // 0): the record that finds its buffer full, the common way
                // here. Said here, without the call and frame of the slow path
                // that would find it out, on every switch of a recorder.
                if fast_end != 0 {
                    return Err(Full);
                }
                w.function_split_slow(low, ts, fast_end)
            },
        )
    }

    /// Stores a function record only when that needs no call: what
    /// [`function_word`](Self::function_word) stores on its straight path, with
    /// the same bytes and state. Otherwise nothing was written, and it says
    /// whether the buffer [`lacks_room_for_function`](Self::lacks_room_for_function)
    /// ([`Tried::Full`]: the record needs the next buffer) or the record needs
    /// more than its store ([`Tried::Declined`]); record it with
    /// `function_word`. For callers that want no call between their own steps,
    /// such as a context's recorder, whose slot is claimed around the record.
    #[inline(always)]
    pub(crate) fn try_function_word(&mut self, low: u32, ts: Timestamp) -> Tried {
        if cfg!(target_pointer_width = "32") {
            self.try_split_store(low, ts)
        } else {
            let (action, id) = FunctionRecord::from_low_word(low);
            if self.function_without_calls(action, id, ts) {
                return Tried::Stored;
            }
            // Full as the split path says it: a reading after the last
            // record's on its CPU, less than 2^32 ticks on (`time_of_full`
            // gives it back from its low word).
            let delta = ts.tsc.wrapping_sub(self.latest_tsc);
            let on_time = delta >> 32 == 0 && u32::from(ts.cpu) == self.latest_cpu;
            if on_time && self.lacks_room_for_function(low) {
                Tried::Full
            } else {
                Tried::Declined
            }
        }
    }

    /// The time of a record that [`try_function_word`](Self::try_function_word)
    /// found [`Tried::Full`], from its low word: the record path then passes
    /// the switch one word, not the time's two and its CPU (on Thumb, two more
    /// registers held through the whole record path).
    /// `Full` says that the reading was on the last record's CPU, and less than
    /// 2^32 ticks after its time: on 32-bit targets on `epoch`, the last
    /// record's high word, on CPU 0.
    #[inline(always)]
    pub(crate) fn time_of_full(&self, raw: u32) -> Timestamp {
        if cfg!(target_pointer_width = "32") {
            debug_assert!(self.epoch != NO_EPOCH && self.latest_cpu == 0);
            Timestamp {
                tsc: (u64::from(self.epoch) << 32) | u64::from(raw),
                cpu: 0,
            }
        } else {
            let delta = raw.wrapping_sub(self.latest_tsc as u32);
            Timestamp {
                tsc: self.latest_tsc.wrapping_add(u64::from(delta)),
                cpu: self.latest_cpu as u16,
            }
        }
    }

    /// [`try_function_word`](Self::try_function_word) on the split path, with
    /// no high-word-0 shortcut (its callers read extended clocks). A fast end
    /// that is not 0 is the buffer's limit with nothing else to do first (as in
    /// `function_word_split`): past it, the buffer is full.
    #[inline(always)]
    pub(super) fn try_split_store(&mut self, low: u32, ts: Timestamp) -> Tried {
        self.split_store_or(
            low,
            ts,
            false,
            Tried::Stored,
            |_| Tried::Declined,
            |_, fast_end| {
                if fast_end != 0 {
                    Tried::Full
                } else {
                    Tried::Declined
                }
            },
        )
    }

    /// The split path: stores the record and gives `stored`, or gives what
    /// `across` (a record on another high word, another CPU, or backwards in
    /// time) or `slow` (the record's end past `fast_end`, the fast end it
    /// compared with) give, having written nothing.
    ///
    /// `zero_shortcut`: a high word of 0 takes `fast_end_zero*` and no test of
    /// `epoch`. It pays where the high word is known to be 0 when compiled (a
    /// 32-bit counter read directly: the test and the other case fold away);
    /// where it is not known (an extended clock), testing it is a branch and
    /// two more registers on the record path, so those callers pass `false`
    /// and compare every high word with `epoch`.
    #[inline(always)]
    pub(super) fn split_store_or<R>(
        &mut self,
        low: u32,
        ts: Timestamp,
        zero_shortcut: bool,
        stored: R,
        across: impl FnOnce(&mut Self) -> R,
        slow: impl FnOnce(&mut Self, usize) -> R,
    ) -> R {
        let high = (ts.tsc >> 32) as u32;
        let raw = ts.tsc as u32;
        let (delta, backwards) = raw.overflowing_sub(self.latest_tsc as u32);
        // The fast ends for a reading on the last record's high word: a high word
        // of 0 compares with `fast_end_zero`, which is 0 unless `epoch` is 0, so
        // that `epoch` is not loaded (a 32-bit counter's high word is always 0);
        // another compares with `epoch` (NO_EPOCH after a buffer's start or on
        // another CPU, which no high word matches here; `fast_end_epoch` is 0
        // then, so a high word of NO_EPOCH fails the room test).
        let (end, end_exit) = if zero_shortcut && high == 0 {
            (self.fast_end_zero, self.fast_end_zero_exit)
        } else {
            if high != self.epoch {
                return across(self);
            }
            (self.fast_end_epoch, self.fast_end_exit)
        };
        // On CPU 0, and a clock that did not go backwards: the delta is exact and
        // fits.
        if ts.cpu != 0 || backwards {
            return across(self);
        }
        // Only an entry (action bits 0) is a plain store with a short-call
        // threshold; every other action compares with the exit's fast end, which
        // is 0 then. Without elision compiled in, an exit's fast ends are the
        // entry's (`refresh_fast_end_zero`; `split_and_wide_paths_write_the_same_bytes`
        // checks it after every record with a threshold of 0): no choice to make.
        let fast_end = if cfg!(feature = "short-call-elision") && low & 0b1110 != 0 {
            end_exit
        } else {
            end
        };
        let word = (u64::from(delta) << 32) | u64::from(low);
        let cur = self.cur;
        if cur.addr() + FUNC > fast_end {
            return slow(self, fast_end);
        }
        // SAFETY: as in `function_word_wide`: `cur + FUNC <= fast_end`, a non-zero
        // fast end is `base + limit`, `limit <= len`, and on `STRICT_ALIGNMENT`
        // targets a non-zero fast end means `cur` is 4-aligned.
        unsafe { store_fast(cur, word) };
        self.cur = cur.wrapping_add(FUNC);
        // The high word is `high` already: only the low word changes, one store.
        if cfg!(target_endian = "little") {
            self.set_latest_low(raw);
        } else {
            self.latest_tsc = (u64::from(high) << 32) | u64::from(raw);
        }
        stored
    }

    /// The split path's record that is not its store alone (`fast_end`, the
    /// fast end it compared with, was too low): a record on a high word other
    /// than `epoch` (the high-word-0 fast end is 0 then), an exit with a
    /// short-call threshold, a full buffer, or a record the general path writes.
    /// Out of line, so that the store is the straight path for exits too.
    #[cold]
    #[inline(never)]
    pub(super) fn function_split_slow(
        &mut self,
        low: u32,
        ts: Timestamp,
        fast_end: usize,
    ) -> Result<(), Full> {
        let high = (ts.tsc >> 32) as u32;
        if high != self.epoch || high == NO_EPOCH {
            return self.function_word_across(low, ts);
        }
        if self.elision_applies(low) {
            return self.function_elidable(low, ts);
        }
        // A full buffer (or the detached writer) needs no general path.
        if fast_end == self.limit_addr() {
            return Err(Full);
        }
        let delta = (ts.tsc as u32).wrapping_sub(self.latest_tsc as u32);
        self.function_general((u64::from(delta) << 32) | u64::from(low), ts.tsc)
    }

    /// The split path's way out: a record on another high word, another CPU or
    /// backwards in time goes through the 64-bit path, which leaves `epoch` up
    /// to date for the next.
    #[cold]
    #[inline(never)]
    pub(crate) fn function_word_across(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let result = self.function_word_wide(low, ts);
        self.refresh_epoch();
        result
    }

    /// [`function_word`](Self::function_word) on a 64-bit time: the fast path of
    /// 64-bit targets.
    #[inline(always)]
    pub(super) fn function_word_wide(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let delta = ts.tsc.wrapping_sub(self.latest_tsc);
        // One test for the common case, same CPU and a delta that fits 32 bits: a
        // clock that went backwards makes the wrapping delta huge, so it fails too.
        let other_cpu = u32::from(ts.cpu) ^ self.latest_cpu;
        // The slow paths take `low` as it is (decoding it here would keep the
        // action and the id alive beside it).
        if (delta >> 32) | u64::from(other_cpu) != 0 {
            return self.function_after_metadata(low, ts);
        }
        // With a short-call threshold an exit may erase its entry, and an exit or
        // an EnterArg ends the run that may be erased: only an entry (action bits
        // 0) is a plain store.
        if self.elision_applies(low) {
            return self.function_elidable(low, ts);
        }
        let word = (u64::from(delta as u32) << 32) | u64::from(low);
        let cur = self.cur;
        if cur.addr() + FUNC > self.fast_end {
            // A full buffer (or the detached writer) needs no general path.
            if self.fast_end == self.limit_addr() {
                return Err(Full);
            }
            return self.function_general(word, ts.tsc);
        }
        // SAFETY: `cur + FUNC <= fast_end`, and a non-zero `fast_end` is `base +
        // limit`, with `limit <= len` (the struct's invariants), so the 8 bytes at
        // `cur` are inside the buffer, which `&mut self` borrows exclusively; the
        // sum cannot overflow (`cur <= base + len`, an allocation's end). On
        // `STRICT_ALIGNMENT` targets a non-zero `fast_end` means `cur` is a
        // multiple of 4.
        unsafe { store_fast(cur, word) };
        self.cur = cur.wrapping_add(FUNC);
        self.latest_tsc = ts.tsc;
        Ok(())
    }

    /// [`function`](Self::function) when it needs nothing out of line: no
    /// NewCPUId or TSCWrap due and room in the buffer; `false` (nothing written)
    /// otherwise. Everything it does is inlined, the short-call elision included,
    /// so it calls nothing: a sled trampoline's fast path relies on that (it runs
    /// with the vector registers unsaved). Writes the same bytes as `function`
    /// (`function_without_calls_writes_what_function_writes` below).
    #[inline(always)]
    pub(crate) fn function_without_calls(
        &mut self,
        action: FunctionAction,
        id: FunctionId,
        ts: Timestamp,
    ) -> bool {
        let delta = ts.tsc.wrapping_sub(self.latest_tsc);
        let other_cpu = u32::from(ts.cpu) ^ self.latest_cpu;
        if (delta >> 32) | u64::from(other_cpu) != 0 {
            return false;
        }
        let is_exit = matches!(action, FunctionAction::Exit | FunctionAction::TailExit);
        if self.elision_threshold() != 0 && is_exit && self.elide(id, ts.tsc) {
            self.sync_extents();
            return true;
        }
        let record = FunctionRecord {
            action,
            id,
            delta: delta as u32,
        };
        if self.put_word(record.to_u64(), ts.tsc).is_err() {
            return false;
        }
        if matches!(action, FunctionAction::Exit | FunctionAction::EnterArg) {
            self.undo_start = self.pos();
        }
        true
    }
}
