//! Records other than function records: entries with arguments, custom and
//! typed events, and the metadata and payload stores they share.

use super::*;

impl BufferWriter<'_> {
    /// Records a function entry with its arguments: an EnterArg record followed by one
    /// CallArgument per argument. All of it is written, or nothing.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, WriteError, Walltime, WriterConfig};
    /// use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// let id = FunctionId::new(3).unwrap();
    /// w.enter_with_args(id, Timestamp::default(), &[10, 20]).unwrap();
    /// let b = w.as_bytes();
    /// let n = b.len();
    /// assert_eq!(
    ///     decode_record(Version::V5, &b[n - 40..]).unwrap().0,
    ///     Record::Function { action: FunctionAction::EnterArg, id, delta: 0 }
    /// );
    /// assert_eq!(decode_record(Version::V5, &b[n - 32..]).unwrap().0, Record::CallArgument { value: 10 });
    /// assert_eq!(decode_record(Version::V5, &b[n - 16..]).unwrap().0, Record::CallArgument { value: 20 });
    /// // More arguments than a whole buffer holds.
    /// assert!(matches!(
    ///     w.enter_with_args(id, Timestamp::default(), &[0; 64]),
    ///     Err(WriteError::TooLarge { .. })
    /// ));
    /// ```
    pub fn enter_with_args(
        &mut self,
        id: FunctionId,
        ts: Timestamp,
        args: &[u64],
    ) -> Result<(), WriteError> {
        let body = args.len().saturating_mul(META).saturating_add(META + FUNC);
        if body > self.limit - self.body_start {
            return Err(WriteError::TooLarge { needed: body });
        }
        if self.pos() + body > self.limit {
            return Err(WriteError::Full);
        }
        let p = self.preamble_for(ts, u64::from(u32::MAX));
        self.write_preamble(p, ts);
        self.put_function(FunctionAction::EnterArg, id, ts.tsc);
        let at = self.cur;
        for (i, &value) in args.iter().enumerate() {
            // SAFETY: `pos + body <= limit <= len` (tested above, before the
            // NewCPUId or TSCWrap and the EnterArg, which `body` counts), so
            // every argument's 16 bytes are inside the buffer, which `&mut self`
            // borrows exclusively.
            unsafe {
                store_meta(
                    at.wrapping_add(i * META),
                    CallArgument { value }.to_le_u128(),
                )
            };
        }
        self.cur = at.wrapping_add(args.len() * META);
        self.undo_start = self.pos();
        self.sync_extents();
        Ok(())
    }

    /// Checks an event payload and the room for marker, payload and a possible
    /// NewCPUId/TSCWrap.
    pub(super) fn check_event(&self, len: usize) -> Result<(), WriteError> {
        if len == 0 {
            return Err(WriteError::EmptyPayload);
        }
        let body = len.saturating_add(2 * META);
        if body > self.limit - self.body_start || i32::try_from(len).is_err() {
            return Err(WriteError::TooLarge { needed: body });
        }
        if self.pos() + body > self.limit {
            return Err(WriteError::Full);
        }
        Ok(())
    }

    /// Records a custom event with a payload (1 byte at least).
    ///
    /// Version 5 writes a TSC delta; versions 1 to 4 write the absolute TSC (and, in
    /// version 4, the CPU).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::{CustomEventTime, Record};
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::Version;
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// w.custom_event(Timestamp { tsc: 70, cpu: 0 }, b"reset").unwrap();
    /// let b = w.as_bytes();
    /// let (record, len) = decode_record(Version::V5, &b[64..]).unwrap();
    /// assert_eq!(record, Record::CustomEvent { time: CustomEventTime::Delta(0), payload: b"reset" });
    /// assert_eq!(64 + len, b.len());
    ///
    /// let v4 = WriterConfig::new(1).with_version(Version::V4);
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &v4, Walltime::default()).unwrap();
    /// w.custom_event(Timestamp { tsc: 70, cpu: 1 }, b"reset").unwrap();
    /// let (record, _) = decode_record(Version::V4, &w.as_bytes()[64..]).unwrap();
    /// let time = CustomEventTime::Absolute { tsc: 70, cpu: 1 };
    /// assert_eq!(record, Record::CustomEvent { time, payload: b"reset" });
    /// ```
    pub fn custom_event(&mut self, ts: Timestamp, payload: &[u8]) -> Result<(), WriteError> {
        self.custom_event_with(ts, payload.len(), |out| copy_bytes(out, payload))
    }

    /// [`custom_event`](Self::custom_event) with a payload of `len` bytes that
    /// `fill` writes in place (given exactly `len` bytes; called only when the
    /// event is written): a loss marker's text needs no buffer of its own.
    #[inline(always)]
    pub(crate) fn custom_event_with(
        &mut self,
        ts: Timestamp,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), WriteError> {
        self.check_event(len)?;
        let time = if self.fdr_version().events_use_delta() {
            let p = self.preamble_for(ts, i32::MAX as u64);
            self.write_preamble(p, ts);
            let delta = ts.tsc.wrapping_sub(self.latest_tsc) as i32;
            self.latest_tsc = ts.tsc;
            self.refresh_epoch();
            CustomEventTime::Delta(delta)
        } else {
            // The absolute form does not move the base TSC, so only a CPU change (or
            // the first event) needs a record first.
            if u32::from(ts.cpu) != self.latest_cpu {
                self.write_new_cpu(ts.cpu, ts.tsc);
            }
            CustomEventTime::Absolute {
                tsc: ts.tsc,
                cpu: ts.cpu,
            }
        };
        // `check_event` has made sure the size fits an i32.
        let marker = CustomEventMarker {
            size: len as i32,
            time,
        };
        let version = self.fdr_version();
        let pos = self.pos();
        let pos = put_marker(self.buf_mut(), pos, |out| marker.emit(version, out));
        self.set_pos(pos);
        self.put_payload_with(len, fill);
        Ok(())
    }

    /// Records a typed event: an event type and a payload (1 byte at least). Typed
    /// events carry a TSC delta in every version.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::decoder::decode_record;
    /// use flightrec_core::fdr::records::Record;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::Version;
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// w.typed_event(Timestamp { tsc: 10, cpu: 0 }, 1, b"a").unwrap();
    /// w.typed_event(Timestamp { tsc: 35, cpu: 0 }, 2, b"bc").unwrap();
    /// let b = w.as_bytes();
    /// let (record, _) = decode_record(Version::V5, &b[b.len() - 18..]).unwrap();
    /// assert_eq!(record, Record::TypedEvent { delta: 25, event_type: 2, payload: b"bc" });
    /// ```
    pub fn typed_event(
        &mut self,
        ts: Timestamp,
        event_type: u16,
        payload: &[u8],
    ) -> Result<(), WriteError> {
        self.typed_event_with(ts, event_type, payload.len(), |out| {
            copy_bytes(out, payload)
        })
    }

    /// [`typed_event`](Self::typed_event) with a payload of `len` bytes that
    /// `fill` writes in place, as in [`custom_event_with`](Self::custom_event_with).
    #[inline(always)]
    pub(crate) fn typed_event_with(
        &mut self,
        ts: Timestamp,
        event_type: u16,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), WriteError> {
        self.check_event(len)?;
        let p = self.preamble_for(ts, i32::MAX as u64);
        self.write_preamble(p, ts);
        let delta = ts.tsc.wrapping_sub(self.latest_tsc) as i32;
        let marker = TypedEventMarker {
            // `check_event` has made sure the size fits an i32.
            size: len as i32,
            delta,
            event_type,
        };
        self.put_meta(&marker);
        self.latest_tsc = ts.tsc;
        self.refresh_epoch();
        self.put_payload_with(len, fill);
        Ok(())
    }

    /// Writes a metadata record at the write position and moves past it; the
    /// caller has checked the room (without it nothing is written).
    #[inline(always)]
    pub(super) fn put_meta(&mut self, record: &impl MetadataRecord) {
        if self.pos() + META > self.len {
            return;
        }
        // SAFETY: the 16 bytes at `cur` are inside the buffer (just tested), which
        // `&mut self` borrows exclusively.
        unsafe { store_meta(self.cur, record.to_le_u128()) };
        self.cur = self.cur.wrapping_add(META);
    }

    /// Writes an event's payload of `len` bytes with `fill` at the write
    /// position and moves past it; the caller has checked the room.
    #[inline(always)]
    pub(super) fn put_payload_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) {
        let pos = self.pos();
        let end = pos + len;
        if let Some(dst) = self.buf_mut().get_mut(pos..end) {
            fill(dst);
            self.set_pos(end);
        }
        self.undo_start = self.pos();
        self.sync_extents();
        self.refresh_fast_end();
    }
}
