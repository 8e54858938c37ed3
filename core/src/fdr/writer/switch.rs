//! The buffer switch: a writer started on a buffer, moved to the next one of its
//! ring with a function record (`restart_with_function`), finished and detached;
//! the BufferExtents count brought up to date.

use super::*;

impl<'b> BufferWriter<'b> {
    /// [`new`](Self::new) in place: this writer (detached, or on a finished
    /// buffer) moves to `buf` and writes its preamble there.
    ///
    /// `deferred` stops updating the BufferExtents count with every function
    /// record: the [`Recorder`](crate::fdr::ring::Recorder) does, since it alone hands
    /// buffers out and brings the count up to date first (on finishing a buffer,
    /// in `for_each_buffer`). It saves a store (on x86) or three (on Cortex-M0)
    /// per record. Until [`sync_extents`](Self::sync_extents),
    /// [`as_bytes`](Self::as_bytes) may end at an earlier record;
    /// [`finish`](Self::finish) is always exact.
    ///
    /// A recorder starts each buffer this way: building a new writer and moving
    /// it over the old one would store and copy every field twice. On error
    /// nothing changed.
    pub(crate) fn start(
        &mut self,
        buf: &'b mut [u8],
        config: &WriterConfig,
        walltime: Walltime,
        deferred: bool,
    ) -> Result<(), BufferTooSmall> {
        let needed = config.min_buffer_len();
        if buf.len() < needed {
            return Err(BufferTooSmall {
                len: buf.len(),
                needed,
            });
        }
        let len = buf.len();
        let base = buf.as_mut_ptr();
        let preamble = config.preamble_len();
        // SAFETY: the preamble fits in `buf` (`min_buffer_len` is more than
        // `preamble_len`), which this function holds exclusively.
        let at = unsafe { store_preamble(base, config, walltime) };
        self.base = base;
        self.cur = at;
        self.len = len;
        self.limit = len - config.tail_reserve();
        self.version = config.version();
        self.extents_every_record = config.version().has_extents() && !deferred;
        self.body_start = preamble;
        self.latest_cpu = NO_CPU;
        self.latest_tsc = 0;
        self.threshold = config.threshold();
        self.undo_start = preamble;
        // No event yet: the split path's high word matches nothing.
        self.epoch = NO_EPOCH;
        self.refresh_fast_end();
        Ok(())
    }

    /// Whether [`restart_with_function`](Self::restart_with_function) may move
    /// this writer, once its buffer [`has_events`](Self::has_events), to another
    /// buffer of `len` bytes: it is on a buffer of that length, its extents are
    /// deferred, and (on [`STRICT_ALIGNMENT`] targets) its buffer and `len` are
    /// multiples of 4, so that every buffer of the ring starts aligned. Only
    /// [`start`](Self::start) and [`detach`](Self::detach) change this, and a
    /// restart keeps it, so a recorder tests it once per buffer it starts
    /// rather than on every switch.
    #[inline(always)]
    pub(crate) fn restarts_on(&self, len: usize) -> bool {
        let aligned = !STRICT_ALIGNMENT || (self.base.addr() | len) & 3 == 0;
        self.len == len && !self.extents_every_record && aligned && len <= MAX_RESTARTABLE
    }

    /// A recorder's buffer switch for a function record: this writer moves to
    /// the buffer at `base`, whose preamble an earlier [`start`](Self::start)
    /// with the same configuration wrote (a ring's recorder uses its slots in
    /// turn, and nothing else writes them). It rewrites the two records of the
    /// preamble that change (the BufferExtents count and the WalltimeMarker),
    /// then a NewCPUId and the record, which leaves the bytes and state of
    /// `start` and then [`function_word_across`](Self::function_word_across); of
    /// the fields it sets only those that differ from buffer to buffer (the
    /// length, the limit, the version and the threshold stay).
    ///
    /// `on_epoch`: the caller knows that `ts` is on CPU 0 and on `epoch`, the
    /// last record's high word, which is not `NO_EPOCH` (a time that
    /// [`time_of_full`](Self::time_of_full) gave on a 32-bit target): the
    /// CPU, `epoch`, the time's high word and the fast ends' validity then
    /// stay as they are, three stores and a test fewer.
    ///
    /// # Safety
    /// [`restarts_on`](Self::restarts_on) with the length of the buffer at
    /// `base`, and [`has_events`](Self::has_events); that buffer is borrowed
    /// exclusively for `'b`, and holds the preamble of a `start` with the
    /// configuration this writer was started with. (`walltime.micros` is below
    /// 10^6, as a recorder counts them; `start` reduces others.)
    #[inline(always)]
    pub(crate) unsafe fn restart_with_function(
        &mut self,
        base: *mut u8,
        walltime: Walltime,
        low: u32,
        ts: Timestamp,
        on_epoch: bool,
    ) {
        let preamble = self.body_start;
        let extents = self.fdr_version().has_extents();
        let wall_at = if extents { 2 * META } else { META };
        let walltime = WalltimeMarker {
            seconds: walltime.seconds,
            micros: walltime.micros,
        };
        let new_cpu = NewCpuId {
            cpu: ts.cpu,
            tsc: ts.tsc,
        };
        let at = base.wrapping_add(preamble);
        // SAFETY: the buffer at `base` has this writer's length (the caller's
        // contract), which holds the preamble, a NewCPUId and a record
        // (`min_buffer_len`); on `STRICT_ALIGNMENT` targets `base`, and so every
        // record here (at multiples of 16 bytes from it, the record too), is
        // 4-aligned.
        unsafe {
            // Of the BufferExtents and the WalltimeMarker, only the words that
            // change: the rest of each holds the zeros its `start` wrote (a
            // restartable buffer's count is below 2^24, `MAX_RESTARTABLE`, and
            // a recorder's micros below 10^6, so their top bytes are 0).
            if extents {
                store_extents_count(base, preamble);
            }
            let [w0, w1, w2, _] = meta_words(walltime.to_le_u128());
            let wall = base.wrapping_add(wall_at);
            store_word_aligned(wall, w0);
            store_word_aligned(wall.wrapping_add(4), w1);
            store_word_aligned(wall.wrapping_add(8), w2);
            store_meta_aligned(at, new_cpu.to_le_u128());
            store_fast(at.wrapping_add(META), u64::from(low));
        }
        self.base = base;
        self.cur = at.wrapping_add(META + FUNC);
        let on_epoch = SPLIT && on_epoch;
        if on_epoch {
            debug_assert!(
                ts.cpu == 0
                    && self.latest_cpu == 0
                    && self.epoch != NO_EPOCH
                    && (ts.tsc >> 32) as u32 == self.epoch
            );
            self.set_latest_low(ts.tsc as u32);
        } else {
            self.latest_cpu = u32::from(ts.cpu);
            self.latest_tsc = ts.tsc;
        }
        // Nothing before the NewCPUId can be erased; nor can a kept exit or an
        // EnterArg become erasable (as in `function_after_metadata`).
        self.undo_start = if low & 0b1110 == 0 || low & 0b1110 == 0b0100 {
            preamble + META
        } else {
            preamble + META + FUNC
        };
        self.fast_end = self.limit_addr();
        // `refresh_epoch` in line: a call would spill what the switch holds,
        // and the new time and end are in registers here.
        if SPLIT && !on_epoch {
            self.epoch = epoch_of(u32::from(ts.cpu), ts.tsc);
        }
        self.refresh_fast_ends_valid(on_epoch);
    }

    /// [`finish_with_events`](Self::finish_with_events) for a writer that
    /// [`restarts_on`](Self::restarts_on) its buffer's length: its buffer
    /// starts aligned on [`STRICT_ALIGNMENT`] targets and is at most
    /// [`MAX_RESTARTABLE`] bytes long, so the BufferExtents count goes in as
    /// one word, its record's tag and the count's three low bytes (before, a
    /// bounds test and four byte stores at an odd address on thumbv6m). The
    /// count's other bytes stay the zeros the preamble wrote, as in
    /// [`restart_with_function`](Self::restart_with_function).
    ///
    /// # Safety
    /// `restarts_on` holds for this writer's length.
    #[inline(always)]
    pub(crate) unsafe fn finish_restartable(&mut self) -> usize {
        if !self.fdr_version().has_extents() {
            return self.finish_with_events();
        }
        let pos = self.pos();
        // SAFETY: the writer's buffer has `len >= min_buffer_len` bytes (it
        // was started on it), four of which are written here, and `&mut self`
        // holds it exclusively; `restarts_on` (the caller's contract) makes
        // `base` 4-aligned on `STRICT_ALIGNMENT` targets and `pos` at most
        // `MAX_RESTARTABLE`.
        unsafe { store_extents_count(self.base, pos) };
        pos
    }

    /// [`finish`](Self::finish) for a recorder, in place, of a buffer that has
    /// events (the recorder publishes no other): ends the buffer and returns its
    /// length. The writer must not record again: the recorder
    /// [`detach`](Self::detach)es or replaces it.
    #[inline(always)]
    pub(crate) fn finish_with_events(&mut self) -> usize {
        if !self.fdr_version().has_extents() {
            self.put_meta(&EndOfBuffer);
        }
        self.sync_extents();
        self.pos()
    }

    /// Makes this writer [`detached`](Self::detached) (no buffer, every record
    /// refused) by setting only the fields that make it so, rather than storing
    /// a whole new writer: a buffer switch does it once per buffer.
    #[inline]
    pub(crate) fn detach(&mut self) {
        self.len = 0;
        self.limit = 0;
        self.cur = self.base;
        self.body_start = 0;
        self.undo_start = 0;
        self.extents_every_record = false;
        self.latest_cpu = NO_CPU;
        self.epoch = NO_EPOCH;
        self.fast_end = 0;
        self.fast_end_epoch = 0;
        self.fast_end_exit = 0;
        self.fast_end_zero = 0;
        self.fast_end_zero_exit = 0;
    }

    /// Keeps the BufferExtents value equal to the bytes that follow it.
    #[inline(always)]
    pub(crate) fn sync_extents(&mut self) {
        if self.fdr_version().has_extents() {
            let n = (self.pos() - META) as u64;
            // The first record is the BufferExtents; only its count changes. On
            // a 32-bit target a buffer is shorter than 2^32 bytes, so the count's
            // high half stays the zeros the preamble wrote: only the low half is
            // stored (on thumbv6m four byte stores fewer at every finish).
            let field = if cfg!(target_pointer_width = "32") {
                BufferExtents::SIZE_FIELD.start..BufferExtents::SIZE_FIELD.start + 4
            } else {
                BufferExtents::SIZE_FIELD
            };
            let count = n.to_le_bytes();
            if let (Some(dst), Some(src)) = (
                self.buf_mut().get_mut(field.clone()),
                count.get(..field.len()),
            ) {
                dst.copy_from_slice(src);
            }
        }
    }
}
