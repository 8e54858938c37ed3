//! The sending side: frames onto an [`embedded_io::Write`] sink, and the flushing of
//! a streaming ring one buffer at a time.

use embedded_io::Write;

use super::compact::{compact_to, put_varint, Tokens, VARINT_MAX};
use super::crc;
use super::encoder::FrameEncoder;
use super::frame::{FrameHead, FrameKind, LinkStats};
use super::trace2::{emit, Put, Trace2Event};
use crate::fdr::header::FileHeader;
use crate::fdr::ring::Consumer;

/// Bytes encoded per call to the sink: small enough for any stack, large enough
/// that the call overhead does not matter.
const CHUNK: usize = 64;

/// One recording context as the link names it: its source id, its file header, and
/// when to repeat that header.
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::FileHeader;
/// use flightrec_core::link::Source;
/// let header = FileHeader::new(NonZeroU64::new(12_000_000).unwrap(), 1024);
/// let main = Source::new(1, header).with_header_every(8);
/// assert_eq!(main.id(), 1);
/// assert_eq!(main.header(), &header);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Source {
    id: u32,
    header: FileHeader,
    header_every: u32,
    /// Buffers sent since the header was last sent; `None` before the first.
    since_header: Option<u32>,
    /// Send buffers in their compact form.
    compact: bool,
}

impl Source {
    /// A source with id `id` (the FDR thread id is a good choice) whose trace has
    /// `header`. The header (with the ring's counters) is repeated every 16
    /// buffers, so a receiver that starts late still gets a file. Example on
    /// [`Source`].
    pub const fn new(id: u32, header: FileHeader) -> Self {
        Self {
            id,
            header,
            header_every: 16,
            since_header: None,
            compact: true,
        }
    }

    /// Whether [`LinkWriter::flush_one`] sends a buffer in its compact form
    /// ([`FrameKind::FdrCompact`], about half the bytes): yes by default. `false`
    /// sends every buffer as it is ([`FrameKind::FdrBuffer`]), for receivers older
    /// than the compact form, or for traces whose function ids are above 2^24
    /// (the compact form of their records is longer than the records). The choice
    /// is not made per buffer: measuring the compact form first walked every
    /// buffer twice.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// use flightrec_core::link::Source;
    /// let header = FileHeader::new(NonZeroU64::new(1_000).unwrap(), 256);
    /// assert!(Source::new(1, header).compact());
    /// assert!(!Source::new(1, header).with_compact(false).compact());
    /// ```
    pub const fn with_compact(mut self, compact: bool) -> Self {
        self.compact = compact;
        self
    }

    /// Whether buffers go out in their compact form. Example on
    /// [`with_compact`](Self::with_compact).
    pub const fn compact(&self) -> bool {
        self.compact
    }

    /// Repeats the header (and the counters) every `n` buffers (at least 1).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    /// use flightrec_core::link::{LinkWriter, Source};
    ///
    /// let mut storage = [0u8; 4 * 128];
    /// let slots = [Slot::NEW; 4];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
    /// let mut source = Source::new(1, cfg.file_header(ring.buffer_size())).with_header_every(2);
    /// let (mut rec, mut consumer) = ring.split(cfg);
    /// let mut link = LinkWriter::new(Vec::new());
    /// for t in 0..3 {
    ///     rec.enter(FunctionId::new(1).unwrap(), Timestamp { tsc: t, cpu: 0 }).unwrap();
    ///     rec.flush();
    ///     assert_eq!(link.flush_one(&mut source, &mut consumer), Ok(true));
    /// }
    /// // Header and counters before buffers 1 and 3: 2 + 1 + 1 + 2 + 1 frames.
    /// assert_eq!(link.frames_sent(), 7);
    /// ```
    pub const fn with_header_every(mut self, n: u32) -> Self {
        self.header_every = if n == 0 { 1 } else { n };
        self
    }

    /// The source id frames carry. Example on [`Source`].
    pub const fn id(&self) -> u32 {
        self.id
    }

    /// The file header. Example on [`Source`].
    pub const fn header(&self) -> &FileHeader {
        &self.header
    }

    fn header_due(&self) -> bool {
        match self.since_header {
            None => true,
            Some(n) => n >= self.header_every,
        }
    }
}

/// Writes frames to a sink.
///
/// Each frame goes out whole or, when the sink fails, is abandoned: the error is
/// returned, counted in [`frames_failed`](Self::frames_failed), and the next frame
/// starts with an extra delimiter so that the receiver drops only the broken one. The
/// first frame of a writer starts with a delimiter too, ending whatever a receiver
/// heard before.
///
/// ```
/// use core::num::NonZeroU64;
/// use flightrec_core::fdr::FileHeader;
/// use flightrec_core::link::{Event, FrameDecoder, FrameKind, LinkStats, LinkWriter};
///
/// let header = FileHeader::new(NonZeroU64::new(1_000_000).unwrap(), 64);
/// let mut wire = Vec::new();
/// let mut link = LinkWriter::new(&mut wire);
/// link.send_file_header(1, &header).unwrap();
/// link.send_buffer(1, &[0xab; 64]).unwrap();
/// link.send_trace2_line(1, b"version 2.47.3\n").unwrap();
/// link.send_stats(1, &LinkStats::default()).unwrap();
/// link.send(FrameKind::Trace2Line, 2, b"exit elapsed:0.001 code:0\n").unwrap();
/// assert_eq!(link.frames_sent(), 5);
///
/// let mut buf = [0u8; 128];
/// let mut dec = FrameDecoder::new(&mut buf);
/// let mut rest = &wire[..];
/// let mut got = Vec::new();
/// while !rest.is_empty() {
///     let (used, ev) = dec.feed(rest);
///     rest = &rest[used..];
///     if let Some(Event::Frame(f)) = ev {
///         got.push((f.head.seq, f.head.kind, f.head.source, f.payload.to_vec()));
///     }
/// }
/// assert_eq!(got, [
///     (0, FrameKind::FileHeader, 1, header.to_bytes().to_vec()),
///     (1, FrameKind::FdrBuffer, 1, vec![0xab; 64]),
///     (2, FrameKind::Trace2Line, 1, b"version 2.47.3\n".to_vec()),
///     (3, FrameKind::Stats, 1, LinkStats::default().to_bytes().to_vec()),
///     (4, FrameKind::Trace2Line, 2, b"exit elapsed:0.001 code:0\n".to_vec()),
/// ]);
/// ```
#[derive(Debug)]
pub struct LinkWriter<W> {
    sink: W,
    seq: u16,
    resync: bool,
    frames_sent: u32,
    frames_failed: u32,
}

impl<W: Write> LinkWriter<W> {
    /// A writer onto `sink`. Example on [`LinkWriter`].
    pub const fn new(sink: W) -> Self {
        Self {
            sink,
            seq: 0,
            resync: true,
            frames_sent: 0,
            frames_failed: 0,
        }
    }

    /// Frames sent whole. Example on [`LinkWriter`].
    pub fn frames_sent(&self) -> u32 {
        self.frames_sent
    }

    /// Frames abandoned because the sink failed.
    ///
    /// ```
    /// use flightrec_core::link::{FrameDecoder, LinkWriter};
    /// let mut mem = [0u8; 48];
    /// let mut link = LinkWriter::new(&mut mem[..]);
    /// link.send_trace2_line(1, b"a\n").unwrap();
    /// assert!(link.send_trace2_line(1, &[b'x'; 100]).is_err()); // does not fit
    /// link.send_trace2_line(1, b"b\n").unwrap();
    /// assert_eq!((link.frames_sent(), link.frames_failed()), (2, 1));
    /// let unwritten = link.into_inner().len(); // a slice sink gives back its rest
    /// let used = mem.len() - unwritten;
    ///
    /// // The receiver sees two frames and the gap in their sequence numbers.
    /// let mut buf = [0u8; 64];
    /// let mut dec = FrameDecoder::new(&mut buf);
    /// let mut rest = &mem[..used];
    /// while !rest.is_empty() {
    ///     let (n, _) = dec.feed(rest);
    ///     rest = &rest[n..];
    /// }
    /// assert_eq!((dec.stats().frames, dec.stats().frames_lost), (2, 1));
    /// ```
    pub fn frames_failed(&self) -> u32 {
        self.frames_failed
    }

    /// The sink, for example to take the bytes sent so far.
    ///
    /// ```
    /// use flightrec_core::link::LinkWriter;
    /// let mut link = LinkWriter::new(Vec::new());
    /// link.send_trace2_line(1, b"a\n").unwrap();
    /// let first = std::mem::take(link.sink_mut());
    /// assert_eq!((first[0], first.last()), (0, Some(&0)));
    /// link.send_trace2_line(1, b"b\n").unwrap();
    /// // Only a writer's first frame (or one after a failure) has a leading 0x00.
    /// assert_eq!(link.sink_mut().len(), first.len() - 1);
    /// ```
    pub fn sink_mut(&mut self) -> &mut W {
        &mut self.sink
    }

    /// Gives the sink back. Example on [`LinkWriter::frames_failed`].
    pub fn into_inner(self) -> W {
        self.sink
    }

    /// Sends one frame. Blocks as long as the sink's `write` blocks. Example on
    /// [`LinkWriter`].
    pub fn send(&mut self, kind: FrameKind, source: u32, payload: &[u8]) -> Result<(), W::Error> {
        let head = FrameHead {
            kind,
            source,
            seq: self.seq,
        };
        // Counted even when it fails, so the receiver sees the gap.
        self.seq = self.seq.wrapping_add(1);
        let mut enc = FrameEncoder::new(head, payload).with_leading_delimiter(self.resync);
        let mut chunk = [0u8; CHUNK];
        loop {
            let n = enc.fill(&mut chunk);
            if n == 0 {
                break;
            }
            if let Err(e) = self.sink.write_all(chunk.get(..n).unwrap_or(&[])) {
                self.frames_failed = self.frames_failed.wrapping_add(1);
                self.resync = true;
                return Err(e);
            }
        }
        self.resync = false;
        self.frames_sent = self.frames_sent.wrapping_add(1);
        Ok(())
    }

    /// Sends a source's file header. Example on [`LinkWriter`].
    pub fn send_file_header(&mut self, source: u32, header: &FileHeader) -> Result<(), W::Error> {
        self.send(FrameKind::FileHeader, source, &header.to_bytes())
    }

    /// Sends one finished FDR buffer. Example on [`LinkWriter`].
    pub fn send_buffer(&mut self, source: u32, buffer: &[u8]) -> Result<(), W::Error> {
        self.send(FrameKind::FdrBuffer, source, buffer)
    }

    /// Sends one finished FDR buffer in its compact form ([`FrameKind::FdrCompact`]),
    /// produced and stuffed as it goes (no copy of the buffer is made).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    /// use flightrec_core::link::compact::expand;
    /// use flightrec_core::link::{Event, FrameDecoder, FrameKind, LinkWriter};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// w.enter(FunctionId::new(3).unwrap(), Timestamp { tsc: 10, cpu: 0 }).unwrap();
    /// let fdr = w.finish();
    ///
    /// let mut wire = Vec::new();
    /// LinkWriter::new(&mut wire).send_buffer_compact(1, fdr).unwrap();
    /// let mut frame = [0u8; 256];
    /// let mut dec = FrameDecoder::new(&mut frame);
    /// let (_, ev) = dec.feed(&wire[1..]); // after the leading delimiter
    /// let Some(Event::Frame(f)) = ev else { panic!() };
    /// assert_eq!(f.head.kind, FrameKind::FdrCompact);
    /// let mut back = [0u8; 256];
    /// let n = expand(f.payload, &mut back).unwrap();
    /// assert_eq!(&back[..n], fdr);
    /// ```
    pub fn send_buffer_compact(&mut self, source: u32, buffer: &[u8]) -> Result<(), W::Error> {
        let head = FrameHead {
            kind: FrameKind::FdrCompact,
            source,
            seq: self.seq,
        };
        self.seq = self.seq.wrapping_add(1);
        let mut frame = Stuffer::new(&mut self.sink, self.resync);
        frame.push(&head.to_bytes());
        compact_to(buffer, &mut frame);
        let result = frame.finish();
        self.count(result)
    }

    /// Sends one Trace2 event in its compact form ([`FrameKind::Trace2Compact`]):
    /// its code, `ticks` (the firmware clock at the event) and its fields, stuffed
    /// as they are written (no buffer, whatever the length of a run-time string).
    /// Generic over the event, so a firmware links the code of the events it sends
    /// and no formatter; the receiver writes git's line.
    ///
    /// ```
    /// use flightrec_core::link::trace2::{parse, RegionEnter, Str, Trace2};
    /// use flightrec_core::link::{Event, FrameDecoder, FrameKind, LinkWriter};
    ///
    /// let ev = RegionEnter { category: Some(Str::Bytes(b"fw")), label: Some(Str::Id(40)), msg: None };
    /// let mut wire = Vec::new();
    /// LinkWriter::new(&mut wire).send_trace2(0, 12_500, &ev).unwrap();
    /// let mut buf = [0u8; 64];
    /// let mut dec = FrameDecoder::new(&mut buf);
    /// let (_, got) = dec.feed(&wire[1..]); // after the leading delimiter
    /// let Some(Event::Frame(f)) = got else { panic!() };
    /// assert_eq!(f.head.kind, FrameKind::Trace2Compact);
    /// let rec = parse(f.payload).unwrap();
    /// assert_eq!((rec.ticks, rec.event), (12_500, Trace2::RegionEnter(ev)));
    /// ```
    #[inline]
    pub fn send_trace2<E: Trace2Event>(
        &mut self,
        source: u32,
        ticks: u64,
        ev: &E,
    ) -> Result<(), W::Error> {
        self.send_trace2_dyn(source, ticks, ev)
    }

    /// [`send_trace2`](Self::send_trace2) for any event: one copy in a firmware.
    #[inline(never)]
    fn send_trace2_dyn(
        &mut self,
        source: u32,
        ticks: u64,
        ev: &dyn Trace2Event,
    ) -> Result<(), W::Error> {
        let head = FrameHead {
            kind: FrameKind::Trace2Compact,
            source,
            seq: self.seq,
        };
        self.seq = self.seq.wrapping_add(1);
        let mut frame = Stuffer::new(&mut self.sink, self.resync);
        frame.push(&head.to_bytes());
        emit(ev, ticks, &mut frame);
        let result = frame.finish();
        self.count(result)
    }

    /// Counts a stuffed frame's result.
    fn count(&mut self, result: Result<(), W::Error>) -> Result<(), W::Error> {
        match result {
            Ok(()) => {
                self.resync = false;
                self.frames_sent = self.frames_sent.wrapping_add(1);
                Ok(())
            }
            Err(e) => {
                self.frames_failed = self.frames_failed.wrapping_add(1);
                self.resync = true;
                Err(e)
            }
        }
    }

    /// Sends one Trace2 line. Example on [`LinkWriter`].
    pub fn send_trace2_line(&mut self, source: u32, line: &[u8]) -> Result<(), W::Error> {
        self.send(FrameKind::Trace2Line, source, line)
    }

    /// Sends a source's counters. Example on [`LinkWriter`].
    pub fn send_stats(&mut self, source: u32, stats: &LinkStats) -> Result<(), W::Error> {
        self.send(FrameKind::Stats, source, &stats.to_bytes())
    }

    /// Sends at most one finished buffer of a streaming ring, preceded by the
    /// source's header and counters when they are due. Returns whether a buffer
    /// was taken from the ring.
    ///
    /// Call it from the main loop or an idle task. The buffer stays the consumer's
    /// until it has been written (or the sink failed), so the recorder never writes
    /// into bytes on their way out; while the link is slow the ring fills up and the
    /// recorder drops (and counts) records instead. A buffer whose frame failed is
    /// not retried: its records are lost, and the receiver sees a missing sequence
    /// number.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    /// use flightrec_core::link::{LinkWriter, Source};
    ///
    /// let mut storage = [0u8; 2 * 256];
    /// let slots = [Slot::NEW; 2];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
    /// let mut source = Source::new(1, cfg.file_header(ring.buffer_size()));
    /// let (mut rec, mut consumer) = ring.split(cfg);
    /// let f = FunctionId::new(3).unwrap();
    /// rec.enter(f, Timestamp { tsc: 10, cpu: 0 }).unwrap();
    /// rec.exit(f, Timestamp { tsc: 20, cpu: 0 }).unwrap();
    /// rec.flush();
    ///
    /// let mut wire = Vec::new();
    /// let mut link = LinkWriter::new(&mut wire);
    /// assert_eq!(link.flush_one(&mut source, &mut consumer), Ok(true));
    /// assert_eq!(link.flush_one(&mut source, &mut consumer), Ok(false));
    /// assert_eq!(link.frames_sent(), 3); // header, counters, buffer
    /// ```
    pub fn flush_one(
        &mut self,
        source: &mut Source,
        consumer: &mut Consumer<'_, '_>,
    ) -> Result<bool, W::Error> {
        if consumer.pending() == 0 {
            return Ok(false);
        }
        if source.header_due() {
            self.send_file_header(source.id, &source.header)?;
            let stats = LinkStats {
                ring: consumer.stats(),
                frames_failed: self.frames_failed,
            };
            self.send_stats(source.id, &stats)?;
            source.since_header = Some(0);
        }
        let Some(buffer) = consumer.pop() else {
            return Ok(false);
        };
        let sent = if source.compact {
            self.send_buffer_compact(source.id, &buffer)
        } else {
            self.send_buffer(source.id, &buffer)
        };
        drop(buffer);
        source.since_header = source.since_header.map(|n| n.saturating_add(1));
        sent.map(|()| true)
    }

    /// Sends the header and the counters of a source now (at the end of a run, so
    /// the receiver has the final counters).
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, RingStats, Slot};
    /// use flightrec_core::fdr::writer::WriterConfig;
    /// use flightrec_core::fdr::FunctionId;
    /// use flightrec_core::link::{Event, FrameDecoder, FrameKind, LinkStats, LinkWriter, Source};
    ///
    /// let mut storage = [0u8; 2 * 128];
    /// let slots = [Slot::NEW; 2];
    /// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    /// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
    /// let mut source = Source::new(1, cfg.file_header(ring.buffer_size()));
    /// let (mut rec, mut consumer) = ring.split(cfg);
    /// rec.enter(FunctionId::new(1).unwrap(), Timestamp::default()).unwrap();
    /// rec.flush();
    /// let mut wire = Vec::new();
    /// let mut link = LinkWriter::new(&mut wire);
    /// link.flush_one(&mut source, &mut consumer).unwrap();
    /// link.send_source_status(&mut source, &consumer).unwrap();
    ///
    /// // The last frame carries the counters after the buffer was consumed.
    /// let mut buf = [0u8; 256];
    /// let mut dec = FrameDecoder::new(&mut buf);
    /// let mut rest = &wire[..];
    /// let mut last = None;
    /// while !rest.is_empty() {
    ///     let (used, ev) = dec.feed(rest);
    ///     rest = &rest[used..];
    ///     if let Some(Event::Frame(f)) = ev {
    ///         last = Some((f.head.kind, LinkStats::parse(f.payload)));
    ///     }
    /// }
    /// let ring = RingStats { buffers_finished: 1, buffers_consumed: 1, records_dropped: 0, buffers_overwritten: 0 };
    /// assert_eq!(last, Some((FrameKind::Stats, Some(LinkStats { ring, frames_failed: 0 }))));
    /// ```
    pub fn send_source_status(
        &mut self,
        source: &mut Source,
        consumer: &Consumer<'_, '_>,
    ) -> Result<(), W::Error> {
        self.send_file_header(source.id, &source.header)?;
        let stats = LinkStats {
            ring: consumer.stats(),
            frames_failed: self.frames_failed,
        };
        self.send_stats(source.id, &stats)?;
        source.since_header = Some(0);
        Ok(())
    }
}

impl<W: Write> Put for Stuffer<'_, W> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.push(bytes);
    }
}

impl<W: Write> Tokens for Stuffer<'_, W> {
    /// A function record's varints go straight into the current block: none of
    /// their bytes is zero (the first word has an id, so it is not 0; a varint
    /// byte is 0 only for the value 0), so there is nothing to stuff. A zero
    /// delta, or a block too full for two varints, takes the byte-wise way.
    #[inline(always)]
    fn function(&mut self, word: u32, delta: u32) {
        let start = self.len + 1;
        if word == 0 || delta == 0 || start + 2 * VARINT_MAX > self.block.len() {
            self.push_function_bytes(word, delta);
            return;
        }
        let mid = put_varint(word, &mut self.block, start);
        let end = put_varint(delta, &mut self.block, mid);
        for &b in self.block.get(start..end).unwrap_or(&[]) {
            self.crc.byte(b);
        }
        self.len = end - 1;
        if self.len == 254 {
            self.end_block();
            self.after_full = true;
        }
    }

    #[inline(always)]
    fn bytes(&mut self, bytes: &[u8]) {
        self.push(bytes);
    }
}

/// Bytes of finished blocks a [`Stuffer`] gathers before writing them to the sink:
/// few calls per frame, as with [`CHUNK`].
const GATHER: usize = 128;

/// A frame stuffed (COBS) as its bytes come, for payloads made on the fly. The
/// current block waits in `block` after a reserved code byte, filled in when the
/// block ends (at a zero, or full at 254 bytes); finished blocks are gathered in
/// `done` and written [`GATHER`] bytes at a time (a longer block is written as it
/// is). The CRC follows the bytes. The first sink error ends the frame (nothing
/// more is written). Nothing is moved within a buffer, which would link a
/// `memmove` (1.5 KiB on Cortex-M).
struct Stuffer<'w, W: Write> {
    sink: &'w mut W,
    /// `block[0]` is the code byte, `block[1..=len]` the current block's bytes.
    block: [u8; 255],
    len: usize,
    done: [u8; GATHER],
    done_len: usize,
    /// The last block ended full and nothing came after it.
    after_full: bool,
    crc: crc::Crc32c,
    result: Result<(), W::Error>,
}

impl<'w, W: Write> Stuffer<'w, W> {
    /// A frame, with a leading delimiter if `lead`.
    fn new(sink: &'w mut W, lead: bool) -> Self {
        Self {
            sink,
            block: [0; 255],
            len: 0,
            // With `lead`, `done[0]` is the leading 0x00.
            done: [0; GATHER],
            done_len: usize::from(lead),
            after_full: false,
            crc: crc::Crc32c::new(),
            result: Ok(()),
        }
    }

    #[inline]
    fn push(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
        self.stuff(bytes);
    }

    #[inline]
    fn stuff(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == 0 {
                self.end_block();
                continue;
            }
            self.len += 1;
            if let Some(slot) = self.block.get_mut(self.len) {
                *slot = b;
            }
            if self.len == 254 {
                self.end_block();
                self.after_full = true;
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.result.is_ok() {
            self.result = self.sink.write_all(bytes);
        }
    }

    /// Writes the gathered blocks (borrowing the fields apart: no copy of them).
    fn write_done(&mut self) {
        if self.result.is_ok() {
            self.result = self
                .sink
                .write_all(self.done.get(..self.done_len).unwrap_or(&[]));
        }
        self.done_len = 0;
    }

    /// Ends the current block: its code is its length with the code byte (255 for
    /// a full block, which implies no zero; below, the zero that ended it).
    #[inline(never)]
    fn end_block(&mut self) {
        self.after_full = false;
        let n = self.len + 1;
        self.block[0] = n as u8;
        self.len = 0;
        if self.done_len + n > GATHER {
            self.write_done();
        }
        if n > GATHER {
            if self.result.is_ok() {
                self.result = self.sink.write_all(self.block.get(..n).unwrap_or(&[]));
            }
        } else if let (Some(dst), Some(src)) = (
            self.done.get_mut(self.done_len..self.done_len + n),
            self.block.get(..n),
        ) {
            dst.copy_from_slice(src);
            self.done_len += n;
        }
    }

    /// The slow way for a function record: its varints through [`Stuffer::push`].
    #[inline(never)]
    fn push_function_bytes(&mut self, word: u32, delta: u32) {
        let mut bytes = [0u8; 2 * VARINT_MAX];
        let n = put_varint(word, &mut bytes, 0);
        let n = put_varint(delta, &mut bytes, n);
        self.push(bytes.get(..n).unwrap_or(&[]));
    }

    /// Appends the CRC, ends the last block (its implied zero dropped), and writes
    /// what is gathered with the delimiter.
    fn finish(mut self) -> Result<(), W::Error> {
        let crc = self.crc.finish().to_le_bytes();
        self.stuff(&crc);
        // A frame that ends with a full block needs no empty last block (as the
        // `cobs` crate encodes it).
        if !(self.after_full && self.len == 0) {
            self.end_block();
        }
        self.write_done();
        self.write(&[0]);
        self.result
    }
}
