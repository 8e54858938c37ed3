//! The general path of a function record: a NewCPUId or TSCWrap first when the
//! CPU or the time's high bits changed, and short-call elision. Every fast path
//! falls back here and must write what this writes.

use super::*;

impl BufferWriter<'_> {
    #[inline(always)]
    pub(super) fn preamble_for(&self, ts: Timestamp, max_delta: u64) -> Preamble {
        if u32::from(ts.cpu) != self.latest_cpu {
            Preamble::NewCpu
        } else if ts.tsc.wrapping_sub(self.latest_tsc) > max_delta {
            // Covers both a delta too large and a clock that went backwards (the
            // wrapping difference is then huge).
            Preamble::Wrap
        } else {
            Preamble::None
        }
    }

    /// Writes NewCPUId or TSCWrap; the caller has checked the room.
    pub(super) fn write_preamble(&mut self, p: Preamble, ts: Timestamp) {
        match p {
            Preamble::None => return,
            Preamble::NewCpu => self.write_new_cpu(ts.cpu, ts.tsc),
            Preamble::Wrap => {
                self.put_meta(&TscWrap { tsc: ts.tsc });
                self.latest_tsc = ts.tsc;
                self.refresh_epoch();
            }
        }
        // Metadata cannot be erased, nor can anything before it.
        self.undo_start = self.pos();
    }

    pub(super) fn write_new_cpu(&mut self, cpu: u16, tsc: u64) {
        self.put_meta(&NewCpuId { cpu, tsc });
        self.latest_cpu = u32::from(cpu);
        self.latest_tsc = tsc;
        self.refresh_epoch();
        self.undo_start = self.pos();
    }

    /// Stores one function record at the write position; the caller has checked room.
    #[inline(always)]
    pub(super) fn put_function(&mut self, action: FunctionAction, id: FunctionId, tsc: u64) {
        let delta = tsc.wrapping_sub(self.latest_tsc) as u32;
        let word = FunctionRecord { action, id, delta }.to_u64();
        if self.pos() + FUNC <= self.len {
            // SAFETY: the 8 bytes at `cur` are inside the buffer (just tested),
            // which `&mut self` borrows exclusively.
            unsafe {
                self.cur
                    .cast::<[u8; FUNC]>()
                    .write_unaligned(word.to_le_bytes())
            };
            self.cur = self.cur.wrapping_add(FUNC);
            self.latest_tsc = tsc;
            self.refresh_epoch();
        }
    }

    /// A function record's word that [`function`](Self::function) cannot store
    /// alone: the extents updated with each record, an unaligned position on a
    /// [`STRICT_ALIGNMENT`] target, or a full buffer.
    #[cold]
    #[inline(never)]
    pub(super) fn function_general(&mut self, word: u64, tsc: u64) -> Result<(), Full> {
        self.put_word(word, tsc)
    }

    /// [`function`](Self::function) for an exit, tail exit or EnterArg with a
    /// short-call threshold: an exit may erase its entry, and a kept exit or
    /// EnterArg ends the erasable run.
    #[inline(never)]
    pub(super) fn function_elidable(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let (action, id) = FunctionRecord::from_low_word(low);
        let is_exit = matches!(action, FunctionAction::Exit | FunctionAction::TailExit);
        if is_exit && self.try_elide(id, ts.tsc) {
            self.sync_extents();
            return Ok(());
        }
        let record = FunctionRecord {
            action,
            id,
            delta: ts.tsc.wrapping_sub(self.latest_tsc) as u32,
        };
        self.put_word(record.to_u64(), ts.tsc)?;
        // A kept exit ends every undoable run before it; an EnterArg is never erased.
        if matches!(action, FunctionAction::Exit | FunctionAction::EnterArg) {
            self.undo_start = self.pos();
        }
        Ok(())
    }

    /// [`function`](Self::function) when a NewCPUId or TSCWrap must come first: the
    /// first record of a buffer, a CPU change, a long gap. Out of line so that the
    /// common path stays short.
    #[cold]
    #[inline(never)]
    pub(super) fn function_after_metadata(&mut self, low: u32, ts: Timestamp) -> Result<(), Full> {
        let (action, id) = FunctionRecord::from_low_word(low);
        if self.pos() + META + FUNC > self.limit {
            return Err(Full);
        }
        let p = self.preamble_for(ts, u64::from(u32::MAX));
        self.write_preamble(p, ts);
        self.put_function(action, id, ts.tsc);
        // Metadata was just written, so nothing before this record is erasable; a
        // kept exit or an EnterArg must not become erasable either.
        if matches!(action, FunctionAction::Exit | FunctionAction::EnterArg) {
            self.undo_start = self.pos();
        }
        self.sync_extents();
        Ok(())
    }

    /// Stores a function record's word at the write position, moves the base TSC to
    /// `tsc` and updates the BufferExtents value; [`Full`] (nothing written) when
    /// the record does not fit.
    ///
    /// The hot path of every record, so it writes through a raw pointer after its
    /// one room test: the slice bounds checks this replaces (the record's and the
    /// extents') are a large share of a record's instructions (the instructions
    /// bench's `fdr_pair` measures it).
    #[inline(always)]
    pub(super) fn put_word(&mut self, word: u64, tsc: u64) -> Result<(), Full> {
        let pos = self.pos();
        let end = pos + FUNC;
        if end > self.limit {
            return Err(Full);
        }
        debug_assert!(self.limit <= self.len && pos >= self.body_start);
        let base = self.base;
        if STRICT_ALIGNMENT && (base as usize | pos) & 3 == 0 {
            // SAFETY: as below, and `base` and `pos` are multiples of 4 (just tested).
            unsafe { store_aligned(base, pos, word, self.extents_every_record) };
            self.set_pos(end);
            self.latest_tsc = tsc;
            self.refresh_epoch();
            return Ok(());
        }
        // SAFETY: `end <= limit <= len` (the struct's invariants), so the 8
        // bytes at `pos` are inside the buffer, which `&mut self` borrows exclusively.
        // `pos + FUNC` cannot overflow: `pos <= limit <= len <= isize::MAX`.
        unsafe {
            base.add(pos)
                .cast::<[u8; FUNC]>()
                .write_unaligned(word.to_le_bytes())
        };
        if self.extents_every_record {
            let extents = (end - META) as u64;
            // SAFETY: with extents the preamble is at least 3 metadata records, so
            // `9 <= body_start <= pos < end <= len`: bytes 1..9 (the extents'
            // value, as in `sync_extents`) are inside the buffer.
            unsafe {
                base.add(1)
                    .cast::<[u8; 8]>()
                    .write_unaligned(extents.to_le_bytes())
            };
        }
        self.set_pos(end);
        self.latest_tsc = tsc;
        self.refresh_epoch();
        Ok(())
    }

    /// Reads the function record at `at` (which the caller knows holds one).
    #[inline(always)]
    pub(super) fn function_at(&self, at: usize) -> Option<(FunctionAction, u32, u32)> {
        let bytes = self.buf().get(at..at + FUNC)?;
        let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let delta = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let action = FunctionAction::from_bits(((word >> 1) & 7) as u8)?;
        Some((action, word >> 4, delta))
    }

    /// Short-call elision: erases the entry that `id`'s exit at `tsc` closes when the
    /// call was shorter than the threshold, and returns whether the exit was absorbed.
    ///
    /// Only the record right before the write position can be that entry, because a
    /// shorter nested call was erased when it returned and any longer one was kept
    /// (and a kept exit ends the undoable run). A tail exit is treated like an exit, so
    /// a short frame that tail-calls another vanishes at once; compiler-rt's extra
    /// pass over earlier `Enter TailExit` pairs can never erase anything under this
    /// rule, so there is none.
    pub(super) fn try_elide(&mut self, id: FunctionId, tsc: u64) -> bool {
        self.elide(id, tsc)
    }

    /// [`try_elide`](Self::try_elide), inlined where it is called.
    #[inline(always)]
    pub(super) fn elide(&mut self, id: FunctionId, tsc: u64) -> bool {
        if self.pos() < self.undo_start + FUNC {
            return false;
        }
        let Some((action, fid, delta)) = self.function_at(self.pos() - FUNC) else {
            return false;
        };
        // `latest_tsc` is the entry's own time: it is the last record written.
        if action != FunctionAction::Enter
            || fid != id.get()
            || tsc.wrapping_sub(self.latest_tsc) >= self.elision_threshold()
        {
            return false;
        }
        self.set_pos(self.pos() - FUNC);
        self.latest_tsc = self.latest_tsc.wrapping_sub(u64::from(delta));
        self.refresh_epoch();
        true
    }
}
