//! The sending side: frames onto an [`embedded_io::Write`] sink, and the flushing of
//! a streaming ring one buffer at a time.

use core::fmt;

use embedded_io::Write;

use super::compact::{compact_to, one_function, put_varint, Tokens, META, VARINT_MAX};
use super::crc;
use super::encoder::MAX_RUN;
use super::frame::{FrameHead, FrameKind, LinkStats};
use super::trace2::{emit, Put, Trace2Event};
use crate::fdr::header::FileHeader;
use crate::fdr::ring::Consumer;

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
    /// The compact form with metadata packed.
    packed: bool,
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
            packed: true,
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

    /// Whether the compact form of a buffer has its metadata records packed
    /// ([`FrameKind::FdrPacked`]: a buffer's first metadata records, 80 bytes of
    /// mostly zeros, in about 25): yes by default. `false` sends [`FrameKind::FdrCompact`],
    /// for receivers older than the packed form. Has no effect with
    /// [`with_compact(false)`](Self::with_compact).
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// use flightrec_core::link::Source;
    /// let header = FileHeader::new(NonZeroU64::new(1_000).unwrap(), 256);
    /// assert!(Source::new(1, header).packed());
    /// assert!(!Source::new(1, header).with_packed(false).packed());
    /// ```
    pub const fn with_packed(mut self, packed: bool) -> Self {
        self.packed = packed;
        self
    }

    /// Whether the compact form has its metadata packed. Example on
    /// [`with_packed`](Self::with_packed).
    pub const fn packed(&self) -> bool {
        self.packed
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
/// heard before. A sink's error does not say how much it took: when it took all
/// of a frame but its closing delimiter, the next frame's delimiter ends that
/// frame whole, and the receiver has it although it was counted as failed (the
/// count errs on the side of loss, never the other way).
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
pub struct LinkWriter<W> {
    sink: W,
    seq: u16,
    resync: bool,
    frames_sent: u32,
    frames_failed: u32,
    /// Where a frame is stuffed before it goes to the sink. Kept here, not made
    /// for each frame: a new one would be zeroed every time (385 bytes, about 5
    /// Cortex-M4 cycles per function record sent), and the stuffer writes every
    /// byte it sends before it sends it, so what an earlier frame left is never read.
    out: [u8; OUT],
}

impl<W: fmt::Debug> fmt::Debug for LinkWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkWriter")
            .field("sink", &self.sink)
            .field("seq", &self.seq)
            .field("resync", &self.resync)
            .field("frames_sent", &self.frames_sent)
            .field("frames_failed", &self.frames_failed)
            .finish_non_exhaustive()
    }
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
            out: [0; OUT],
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
        self.send_frame(kind, source, Body::Bytes(payload))
    }

    /// Every frame but the compact Trace2 events: one copy in a firmware, stuffed
    /// in place by the same [`Stuffer`] (one COBS encoder linked, not two).
    #[inline(never)]
    fn send_frame(&mut self, kind: FrameKind, source: u32, body: Body<'_>) -> Result<(), W::Error> {
        let head = FrameHead {
            kind,
            source,
            seq: self.seq,
        };
        // Counted even when it fails, so the receiver sees the gap.
        self.seq = self.seq.wrapping_add(1);
        let mut frame = Stuffer::with_head(&mut self.sink, &mut self.out, self.resync, &head);
        match body {
            Body::Bytes(payload) => frame.push(payload),
            Body::Compact { buffer, packed } => compact_to(buffer, packed, &mut frame),
        }
        let result = frame.finish();
        self.count(result)
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
        self.send_frame(
            FrameKind::FdrCompact,
            source,
            Body::Compact {
                buffer,
                packed: false,
            },
        )
    }

    /// Sends one finished FDR buffer in its packed form ([`FrameKind::FdrPacked`]:
    /// the compact form with metadata records packed), produced and stuffed as it
    /// goes.
    ///
    /// ```
    /// use flightrec_core::clock::Timestamp;
    /// use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    /// use flightrec_core::fdr::FunctionId;
    /// use flightrec_core::link::compact::unpack;
    /// use flightrec_core::link::{Event, FrameDecoder, FrameKind, LinkWriter};
    ///
    /// let mut buf = [0u8; 256];
    /// let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), Walltime::default()).unwrap();
    /// w.enter(FunctionId::new(3).unwrap(), Timestamp { tsc: 10, cpu: 0 }).unwrap();
    /// let fdr = w.finish();
    ///
    /// let mut wire = Vec::new();
    /// LinkWriter::new(&mut wire).send_buffer_packed(1, fdr).unwrap();
    /// let mut frame = [0u8; 256];
    /// let mut dec = FrameDecoder::new(&mut frame);
    /// let (_, ev) = dec.feed(&wire[1..]); // after the leading delimiter
    /// let Some(Event::Frame(f)) = ev else { panic!() };
    /// assert_eq!(f.head.kind, FrameKind::FdrPacked);
    /// let mut back = [0u8; 256];
    /// let n = unpack(f.payload, &mut back).unwrap();
    /// assert_eq!(&back[..n], fdr);
    /// ```
    pub fn send_buffer_packed(&mut self, source: u32, buffer: &[u8]) -> Result<(), W::Error> {
        self.send_frame(
            FrameKind::FdrPacked,
            source,
            Body::Compact {
                buffer,
                packed: true,
            },
        )
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
        let mut frame = Stuffer::with_head(&mut self.sink, &mut self.out, self.resync, &head);
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
            self.send_source_status(source, consumer)?;
        }
        let Some(buffer) = consumer.pop() else {
            return Ok(false);
        };
        let (kind, body) = if source.compact {
            let packed = source.packed;
            let kind = if packed {
                FrameKind::FdrPacked
            } else {
                FrameKind::FdrCompact
            };
            let buffer = &buffer[..];
            (kind, Body::Compact { buffer, packed })
        } else {
            (FrameKind::FdrBuffer, Body::Bytes(&buffer))
        };
        let sent = self.send_frame(kind, source.id, body);
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
    #[inline(never)]
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
    /// A function record's varints, byte-wise: on ARMv6-M, the step of
    /// [`functions_one_by_one`](Self::functions_one_by_one).
    #[inline(always)]
    fn function(&mut self, word: u32, delta: u32) {
        let mut bytes = [0u8; 2 * VARINT_MAX];
        let n = put_varint(word, &mut bytes, 0);
        let n = put_varint(delta, &mut bytes, n);
        self.push(bytes.get(..n).unwrap_or(&[]));
    }

    /// The run of function records at the start of `records`, in one loop with
    /// the block's end and the check in registers: what almost every byte of a
    /// buffer is. It stops at a record whose varints could hold a zero byte (a
    /// word or delta of 0) or might not fit the current block;
    /// [`functions_one_by_one`](Self::functions_one_by_one) takes that one.
    #[inline(never)]
    fn functions(&mut self, records: &[u8]) -> usize {
        self.aligned_functions(records)
    }

    #[inline(always)]
    fn bytes(&mut self, bytes: &[u8]) {
        self.push(bytes);
    }

    /// The records the loops do not take: a record with a varint of 0 (the
    /// first of a buffer, whose delta from the preamble's clock is 0), or the
    /// records from where the loops stop near a block's end (the room for two
    /// longest varints) up to the one that ends the block or runs past it.
    /// Record by record, back through [`compact_to`] each time, a block's end
    /// took about three rounds of 200 Cortex-M4 cycles. Thumb-2 and wider cores
    /// stuff the varints with the block's end and the check in registers.
    /// ARMv6-M takes one record, `push`ed, as the trait's default does: a loop
    /// of `push`ed records measured 148 bytes more flash on thumbv6m for 1.4
    /// Cortex-M0 cycles a record less on the example's row and 0.9 more on the
    /// one-byte rows; stuffed in line, 496 bytes more.
    #[inline(never)]
    fn functions_one_by_one(&mut self, records: &[u8]) -> usize {
        if !BY_WORDS {
            return one_function(self, records);
        }
        self.records_one_by_one(records)
    }

    /// Packs the record straight into the frame: its first byte and its mask
    /// through the stuffing loop (either byte of the mask may be 0), then its
    /// non-zero bytes, which need no stuffing, each checked and stored as it is
    /// found, the block's end in a register. No copy of the packed record. In
    /// line at its one call, in the frame's token loop: out of line it cost a
    /// frame of registers saved and restored per metadata record (0.6
    /// Cortex-M4 and 0.5 Cortex-M0 cycles a function record on the DMA row;
    /// 24 bytes less flash on thumbv6m, 36 more on thumbv7m).
    #[inline(always)]
    fn packed_metadata(&mut self, record: &[u8; META]) {
        let mask = packed_mask(record, BY_WORDS);
        let [lo, hi, ..] = mask.to_le_bytes();
        if BY_WORDS {
            // In line: 2.5 Cortex-M4 cycles a function record less than `push`.
            let (mut w, mut crc) = (self.w, self.crc);
            // The first byte has bit 0 set: not 0. Either byte of the mask may
            // be (written out: over an array of the two, 20 more Cortex-M4
            // cycles a record).
            crc.byte(record[0]);
            w = self.put_nonzero(w, record[0]);
            crc.byte(lo);
            w = if lo == 0 {
                self.end_at(w, false)
            } else {
                self.put_nonzero(w, lo)
            };
            crc.byte(hi);
            w = if hi == 0 {
                self.end_at(w, false)
            } else {
                self.put_nonzero(w, hi)
            };
            // The non-zero bytes, found from the mask's set bits: a metadata
            // record has few (1.2 a record in a buffer's preamble), so this
            // skips its zeros at no cost each (a word at a time, each word's
            // bytes up to its last that is not 0, took about twice the cycles).
            let mut bits = mask;
            while bits != 0 {
                // Bit i is byte 1 + i, i < 15.
                let b = record[(bits.trailing_zeros() as usize + 1) % META];
                crc.byte(b);
                w = self.put_nonzero(w, b);
                bits &= bits - 1;
            }
            self.w = w;
            self.crc = crc;
        } else {
            self.push(&[record[0], lo, hi]);
            let (mut w, mut crc) = (self.w, self.crc);
            packed_bytes(record, BY_WORDS, |b| {
                crc.byte(b);
                w = self.put_nonzero(w, b);
            });
            self.w = w;
            self.crc = crc;
        }
    }
}

impl<W: Write> Stuffer<'_, W> {
    /// Stuffs `b`, which is not 0, at `w`, the current block's end; returns the
    /// new end. `push`'s step for a byte that cannot end a block early.
    #[inline(always)]
    fn put_nonzero(&mut self, mut w: usize, b: u8) -> usize {
        if let Some(slot) = self.out.get_mut(w) {
            *slot = b;
        }
        w += 1;
        if w - self.code_at < 255 {
            return w;
        }
        // The block is full (a code of 255).
        self.end_at(w, true)
    }

    /// [`Tokens::functions_one_by_one`] on Thumb-2 and wider cores
    /// ([`BY_WORDS`]): the records' varints stuffed in line, up to the one
    /// after which the block has room for the loops again.
    #[inline(always)]
    fn records_one_by_one(&mut self, records: &[u8]) -> usize {
        let (mut w, mut crc) = (self.w, self.crc);
        let mut rest = records;
        while let Some((record, after)) = rest.split_first_chunk::<FUNC>() {
            let [w0, w1, w2, w3, d0, d1, d2, d3] = *record;
            let word = u32::from_le_bytes([w0, w1, w2, w3]);
            let delta = u32::from_le_bytes([d0, d1, d2, d3]);
            if word & 1 != 0 {
                break;
            }
            w = self.put_varint_stuffed(w, &mut crc, word);
            w = self.put_varint_stuffed(w, &mut crc, delta);
            rest = after;
            // Until the block has room for the loops again (it has ended,
            // or the record had a zero).
            if w - self.code_at <= LAST_RECORD_AT + 1 {
                break;
            }
        }
        let taken = records.len() - rest.len();
        self.w = w;
        self.crc = crc;
        taken
    }

    /// Stuffs `v` as a varint at `w`, the current block's end, adding its bytes
    /// to `crc`; returns the new end. Only its last byte may be 0 (for a `v`
    /// of 0), which ends the block.
    #[inline(always)]
    fn put_varint_stuffed(&mut self, mut w: usize, crc: &mut crc::Crc32c, mut v: u32) -> usize {
        while v >= 0x80 {
            let b = v as u8 | 0x80;
            crc.byte(b);
            w = self.put_nonzero(w, b);
            v >>= 7;
        }
        let b = v as u8;
        crc.byte(b);
        if b == 0 {
            self.end_at(w, false)
        } else {
            self.put_nonzero(w, b)
        }
    }

    /// Ends the current block at `w`, `full` or at a zero (which `w` is the place
    /// of): its code is its length with the code byte, 1..=255. Returns the next
    /// block's first byte's place. `end_block`'s body, in line for callers that
    /// keep the block's end in a register.
    #[inline(always)]
    fn end_at(&mut self, w: usize, full: bool) -> usize {
        self.after_full = full;
        if let Some(code) = self.out.get_mut(self.code_at) {
            *code = (w - self.code_at) as u8;
        }
        self.code_at = w;
        if w > GATHER {
            self.write_finished(w);
            self.code_at = 0;
        }
        self.code_at + 1
    }
}

/// Whether a packed metadata record is made from the record's words (loaded in
/// one instruction each where the core loads unaligned words) or its bytes (on
/// cores without, where assembling the words from bytes measured 370 more bytes
/// of flash on thumbv6m than the byte loops). ARMv6-M is told apart by what
/// stable `cfg` shows of it: no 32-bit compare-and-swap (it has neither that
/// nor unaligned loads; ARMv7-M has both). Both ways make the same bytes
/// (`tests::packed_by_words_and_by_bytes_agree`).
const BY_WORDS: bool = !cfg!(all(target_arch = "arm", not(target_has_atomic = "32")));

/// Bit i: byte 1 + i of `record` is not 0 (the mask of its packed form).
#[inline(always)]
fn packed_mask(record: &[u8; META], by_words: bool) -> u32 {
    if by_words {
        let [w0, w1, w2, w3] = le_words(record);
        // The first byte is not in the mask. Most records have all their
        // non-zero bytes in their first word (a buffer's preamble: 4 of 5).
        let mut mask = nonzero_bytes(w0 & !0xFF);
        if w1 | w2 | w3 != 0 {
            mask |= nonzero_bytes(w1) << 4 | nonzero_bytes(w2) << 8 | nonzero_bytes(w3) << 12;
        }
        mask >> 1
    } else {
        let mut mask = 0;
        // An index over the array (its bound a constant): see `pack_metadata`.
        #[allow(clippy::needless_range_loop)]
        for i in 1..META {
            mask |= u32::from(record[i] != 0) << (i - 1);
        }
        mask
    }
}

/// Calls `f` with each byte of `record` after the first that is not 0, in order
/// (the data of its packed form): a word at a time, a word of zeros skipped, or a
/// byte at a time.
#[inline(always)]
fn packed_bytes(record: &[u8; META], by_words: bool, mut f: impl FnMut(u8)) {
    if by_words {
        let [w0, w1, w2, w3] = le_words(record);
        for mut x in [w0 & !0xFF, w1, w2, w3] {
            // Up to the word's last byte that is not 0.
            while x != 0 {
                if x as u8 != 0 {
                    f(x as u8);
                }
                x >>= 8;
            }
        }
    } else {
        for &b in &record[1..] {
            if b != 0 {
                f(b);
            }
        }
    }
}

/// The record's four words, little-endian.
#[inline(always)]
fn le_words(record: &[u8; META]) -> [u32; 4] {
    let word =
        |i: usize| u32::from_le_bytes([record[i], record[i + 1], record[i + 2], record[i + 3]]);
    [word(0), word(4), word(8), word(12)]
}

/// Bit i: byte i of `x` (little-endian) is not 0. Without a branch: bit 7 of
/// each byte of `t` is set when the byte is not 0 (its low seven bits plus 0x7F
/// carry into bit 7 when they are not 0, and no byte carries into the next),
/// and the multiplication gathers those four bits, each to a place of its own
/// (bits 21 to 24; no two partial products overlap, so nothing carries).
#[inline(always)]
fn nonzero_bytes(x: u32) -> u32 {
    let t = (((x & 0x7F7F_7F7F) + 0x7F7F_7F7F) | x) & 0x8080_8080;
    ((t >> 7).wrapping_mul(0x0020_4081) >> 21) & 0xF
}

/// What a frame carries after its head.
enum Body<'b> {
    /// These bytes as they are.
    Bytes(&'b [u8]),
    /// An FDR buffer in its compact form, with its metadata packed if `packed`.
    Compact { buffer: &'b [u8], packed: bool },
}

/// Bytes of a [`Stuffer`]'s output: room for a whole block (code, 254 data bytes
/// and the delimiter; and a [`WINDOW`] after the code) after at most [`GATHER`]
/// bytes of finished blocks, so that the current block never has to move.
const OUT: usize = GATHER + 1 + WINDOW;

/// What the record loop sees of the current block: 256 bytes from its first data
/// byte, so that an index masked to a byte is within it.
const WINDOW: usize = 256;

/// Finished blocks a [`Stuffer`] gathers before writing them to the sink: few
/// calls per frame.
const GATHER: usize = 128;

/// A frame stuffed (COBS) as its bytes come, for payloads made on the fly, in
/// place: the current block's code byte is reserved at `code_at` in `out` and
/// written when the block ends (at a zero, or full at 254 bytes); its bytes follow
/// it. Once more than [`GATHER`] bytes of finished blocks are in `out`, they go to
/// the sink and the next block starts at the front. The CRC follows the bytes. The
/// first sink error ends the frame (nothing more is written). Nothing is copied
/// or moved within `out`, which would link a `memmove` (1.5 KiB on Cortex-M).
struct Stuffer<'w, W: Write> {
    sink: &'w mut W,
    /// Finished blocks, then the current block: its code byte at `code_at`, its
    /// bytes at `code_at + 1..w`. Always `code_at <= GATHER` (so
    /// `code_at + 256 <= OUT`) and `code_at < w <= code_at + 255`. The caller's,
    /// so that making a `Stuffer` copies none of it.
    out: &'w mut [u8; OUT],
    code_at: usize,
    w: usize,
    /// The last block ended full and nothing came after it.
    after_full: bool,
    crc: crc::Crc32c,
    result: Result<(), W::Error>,
}

/// Bytes of a function record.
const FUNC: usize = 8;

impl<W: Write> Stuffer<'_, W> {
    /// [`Tokens::functions`], one copy of the record loop: word loads of a run
    /// that starts 4-byte aligned (buffers do; only an event payload whose
    /// length is not a multiple of 4 shifts what follows), one instruction a
    /// word on a core without unaligned access too; 0 for an unaligned run, which
    /// then goes a record at a time the byte-wise way. A second copy of the loop
    /// for unaligned runs was 350 bytes of flash on thumbv6m.
    #[inline(always)]
    fn aligned_functions(&mut self, records: &[u8]) -> usize {
        // SAFETY: every bit pattern is a `u32`, so viewing the aligned middle of
        // `records` as words is sound; `align_to` gives the prefix before it.
        let (before, words, _) = unsafe { records.align_to::<u32>() };
        if !before.is_empty() {
            return 0;
        }
        self.function_run::<BY_SHAPE>(words.chunks_exact(2).map(|record| match *record {
            [word, delta] => (u32::from_le(word), u32::from_le(delta)),
            _ => (1, 0),
        }))
    }

    /// The loop of [`Tokens::functions`] over the records' words, in order: (1, 0),
    /// which is no function record, ends the run. `BY_SHAPE` chooses the loops
    /// ([`BY_SHAPE`]; the tests run both).
    #[inline(always)]
    fn function_run<const BY_SHAPE: bool>(
        &mut self,
        mut records: impl ExactSizeIterator<Item = (u32, u32)>,
    ) -> usize {
        // A 256-byte window from the current block's first data byte: an index
        // masked to a byte needs no check (the block's 254 bytes are within it).
        let start = self.code_at + 1;
        let Some(block) = self
            .out
            .get_mut(start..start + WINDOW)
            .and_then(|b| <&mut [u8; WINDOW]>::try_from(b).ok())
        else {
            return 0;
        };
        // Bytes of the block used so far.
        let mut at = self.w - start;
        let mut crc = self.crc;
        let total = records.len();
        let mut stopped = false;
        if BY_SHAPE {
            (at, crc, stopped) = run_by_shape(block, at, crc, &mut records);
        } else {
            loop {
                // The common record in a loop of its own (a record with one-byte
                // varints, none of them 0, with room in the block), so that its
                // way is the straight one; any other leaves it.
                let mut other = None;
                for (word, delta) in records.by_ref() {
                    // A word that is even and 2..=126 and a delta of 1..=127
                    // (`word_of_one_byte`, `delta_of_one_byte`, written out: the
                    // negated calls made other Cortex-M0 code, 3 % slower).
                    if at > LAST_RECORD_AT
                        || word.wrapping_sub(2).rotate_right(1) > 62
                        || delta.wrapping_sub(1) >= 0x7F
                    {
                        other = Some((word, delta));
                        break;
                    }
                    block[at % WINDOW] = word as u8;
                    block[(at + 1) % WINDOW] = delta as u8;
                    crc.byte(word as u8);
                    crc.byte(delta as u8);
                    at += 2;
                }
                let Some((word, delta)) = other else {
                    break;
                };
                if at > LAST_RECORD_AT || word & 1 != 0 || word == 0 || delta == 0 {
                    stopped = true;
                    break;
                }
                at = put_varint_checked(block, at, word, &mut crc);
                at = put_varint_checked(block, at, delta, &mut crc);
            }
        }
        self.w = start + at;
        self.crc = crc;
        if at == MAX_RUN {
            // A full block (ends no zero).
            self.end_block(true);
        }
        (total - records.len() - usize::from(stopped)) * FUNC
    }
}

/// Whether [`Stuffer::function_run`] takes each common shape of function record
/// in a loop of its own ([`run_by_shape`]) or only records of one-byte varints.
/// ARMv6-M takes the second (told apart as for [`BY_WORDS`]): its eight low
/// registers hold no more loops than one, and the shape loops measured more
/// Cortex-M0 cycles on three of the bench's four link rows and 556 bytes more
/// flash on thumbv6m.
const BY_SHAPE: bool = BY_WORDS;

/// The last place in a block where a function record's two varints (of up to
/// [`VARINT_MAX`] bytes each) may start.
const LAST_RECORD_AT: usize = MAX_RUN - 2 * VARINT_MAX;

/// Stuffs function records from `records` into `block` at `at`, adding their
/// bytes to the check `crc`, while the block has room for one, with a loop for
/// each common shape of record (its varints of one or two bytes, none of them
/// 0), so that a run of one shape goes straight and a record of another shape
/// moves to that shape's loop; any other record goes alone. Returns the
/// block's new end and the check, and whether it stopped at a record it did
/// not take (no room, or a record the caller takes: a zero varint or no
/// function record), which `records` has already given.
///
/// Two-byte words are the common case (a function id of 8 to 1 023, most of a
/// firmware's), one- and two-byte deltas both (gaps below and above 128
/// ticks). The bench's link rows on the Cortex-M4, against the one-byte loop:
/// the QEMU example's records 85.2 -> 70.7 cycles a record, two-byte words and
/// deltas 100.9 -> 76.6, one-byte varints 53.7 -> 53.8.
#[inline(always)]
fn run_by_shape(
    block: &mut [u8; WINDOW],
    mut at: usize,
    mut crc: crc::Crc32c,
    records: &mut impl Iterator<Item = (u32, u32)>,
) -> (usize, crc::Crc32c, bool) {
    // The block's place and the check as locals, returned at the end: through
    // references they cost 1 to 2 Cortex-M4 cycles a record more.
    let stopped = 'run: {
        let Some((mut word, mut delta)) = records.next() else {
            break 'run false;
        };
        loop {
            if at > LAST_RECORD_AT {
                break 'run true;
            }
            // Each shape's loop stores the record it starts with, then takes the
            // next while it has the same shape and room. Their bytes are written
            // out: through a helper that loops over a shape's bytes, which
            // opt-level "s" does not unroll, the Cortex-M4 link rows took 70 to
            // 95 % more cycles.
            if word_of_one_byte(word) && delta_of_one_byte(delta) {
                loop {
                    block[at % WINDOW] = word as u8;
                    block[(at + 1) % WINDOW] = delta as u8;
                    crc.byte(word as u8);
                    crc.byte(delta as u8);
                    at += 2;
                    let Some(next) = records.next() else {
                        break 'run false;
                    };
                    (word, delta) = next;
                    if at > LAST_RECORD_AT || !word_of_one_byte(word) || !delta_of_one_byte(delta) {
                        break;
                    }
                }
            } else if word_of_two_bytes(word) && delta_of_one_byte(delta) {
                loop {
                    let (low, high) = two_varint_bytes(word);
                    block[at % WINDOW] = low;
                    block[(at + 1) % WINDOW] = high;
                    block[(at + 2) % WINDOW] = delta as u8;
                    crc.byte(low);
                    crc.byte(high);
                    crc.byte(delta as u8);
                    at += 3;
                    let Some(next) = records.next() else {
                        break 'run false;
                    };
                    (word, delta) = next;
                    if at > LAST_RECORD_AT || !word_of_two_bytes(word) || !delta_of_one_byte(delta)
                    {
                        break;
                    }
                }
            } else if word_of_two_bytes(word) && delta_of_two_bytes(delta) {
                loop {
                    let (low, high) = two_varint_bytes(word);
                    let (delta_low, delta_high) = two_varint_bytes(delta);
                    block[at % WINDOW] = low;
                    block[(at + 1) % WINDOW] = high;
                    block[(at + 2) % WINDOW] = delta_low;
                    block[(at + 3) % WINDOW] = delta_high;
                    crc.byte(low);
                    crc.byte(high);
                    crc.byte(delta_low);
                    crc.byte(delta_high);
                    at += 4;
                    let Some(next) = records.next() else {
                        break 'run false;
                    };
                    (word, delta) = next;
                    if at > LAST_RECORD_AT || !word_of_two_bytes(word) || !delta_of_two_bytes(delta)
                    {
                        break;
                    }
                }
            } else {
                if word & 1 != 0 || word == 0 || delta == 0 {
                    break 'run true;
                }
                at = put_varint_checked(block, at, word, &mut crc);
                at = put_varint_checked(block, at, delta, &mut crc);
                let Some(next) = records.next() else {
                    break 'run false;
                };
                (word, delta) = next;
            }
        }
    };
    (at, crc, stopped)
}

/// A function record's word (even: bit 0 set is a metadata record) of 2..=126,
/// one varint byte. Rotated right by one after the subtraction, a word outside
/// the range, or an odd one, is above the bound.
#[inline(always)]
fn word_of_one_byte(word: u32) -> bool {
    word.wrapping_sub(2).rotate_right(1) <= 62
}

/// A function record's word of 128..=16 382 (even), two varint bytes.
#[inline(always)]
fn word_of_two_bytes(word: u32) -> bool {
    word.wrapping_sub(0x80).rotate_right(1) <= 8127
}

/// A delta of 1..=127, one varint byte.
#[inline(always)]
fn delta_of_one_byte(delta: u32) -> bool {
    delta.wrapping_sub(1) < 0x7F
}

/// A delta of 128..=16 383, two varint bytes.
#[inline(always)]
fn delta_of_two_bytes(delta: u32) -> bool {
    delta.wrapping_sub(0x80) < 0x3F80
}

/// The varint bytes of `v`, 128..=16 383 (neither of them 0).
#[inline(always)]
fn two_varint_bytes(v: u32) -> (u8, u8) {
    (v as u8 | 0x80, (v >> 7) as u8)
}

/// Writes `v` as a varint at `at` (at most 249) in a block window, adding its
/// bytes to `crc` as they are made; returns the position after it.
#[inline(always)]
fn put_varint_checked(
    block: &mut [u8; WINDOW],
    mut at: usize,
    mut v: u32,
    crc: &mut crc::Crc32c,
) -> usize {
    while v >= 0x80 {
        let b = v as u8 | 0x80;
        block[at % WINDOW] = b;
        crc.byte(b);
        v >>= 7;
        at += 1;
    }
    let b = v as u8;
    block[at % WINDOW] = b;
    crc.byte(b);
    at + 1
}

impl<'w, W: Write> Stuffer<'w, W> {
    /// A frame into `out`, with a leading delimiter if `lead`.
    fn new(sink: &'w mut W, out: &'w mut [u8; OUT], lead: bool) -> Self {
        // With `lead`, `out[0]` is the leading 0x00.
        out[0] = 0;
        let code_at = usize::from(lead);
        Self {
            sink,
            out,
            code_at,
            w: code_at + 1,
            after_full: false,
            crc: crc::Crc32c::new(),
            result: Ok(()),
        }
    }

    /// A frame into `out` that starts with `head` (after a leading delimiter if
    /// `lead`): its seven bytes stuffed from the empty frame, where no block can
    /// fill up and none is gathered yet, so without `push`'s tests (about 100
    /// Cortex-M4 cycles a frame less).
    #[inline(always)]
    fn with_head(sink: &'w mut W, out: &'w mut [u8; OUT], lead: bool, head: &FrameHead) -> Self {
        let mut frame = Self::new(sink, out, lead);
        if !BY_WORDS {
            // ARMv6-M: through `push`, in 64 bytes less flash on thumbv6m (1.1
            // Cortex-M0 cycles a record more on the example's row).
            frame.push(&head.to_bytes());
            return frame;
        }
        let (mut w, mut code_at, mut crc) = (frame.w, frame.code_at, frame.crc);
        for b in head.to_bytes() {
            crc.byte(b);
            if b != 0 {
                if let Some(slot) = frame.out.get_mut(w) {
                    *slot = b;
                }
            } else {
                // The block ends at the zero, whose place is the next one's
                // code (1..=8: fits a byte).
                if let Some(code) = frame.out.get_mut(code_at) {
                    *code = (w - code_at) as u8;
                }
                code_at = w;
            }
            w += 1;
        }
        (frame.w, frame.code_at, frame.crc) = (w, code_at, crc);
        frame
    }

    /// Adds `bytes` to the frame and to the check. One copy, called a few times
    /// a frame (a payload of bytes; on ARMv6-M also the head, metadata records'
    /// first bytes and the check), its loop with registers to itself.
    #[inline(never)]
    fn push(&mut self, bytes: &[u8]) {
        // In one pass with the block in registers.
        let mut w = self.w;
        let mut code_at = self.code_at;
        let mut crc = self.crc;
        for &b in bytes {
            crc.byte(b);
            if b != 0 {
                if let Some(slot) = self.out.get_mut(w) {
                    *slot = b;
                }
                w += 1;
                if w - code_at < 255 {
                    continue;
                }
            }
            // The block ends: at a zero (dropped), or full (a code of 255).
            self.after_full = b != 0;
            if let Some(code) = self.out.get_mut(code_at) {
                // 1..=255: fits a byte.
                *code = (w - code_at) as u8;
            }
            code_at = w;
            if code_at > GATHER {
                self.write_finished(code_at);
                code_at = 0;
            }
            w = code_at + 1;
        }
        self.w = w;
        self.code_at = code_at;
        self.crc = crc;
    }

    /// Ends the current block: its code is its length with the code byte (255 for
    /// a `full` block, which implies no zero; below, the zero that ended it).
    #[inline(never)]
    fn end_block(&mut self, full: bool) {
        self.w = self.end_at(self.w, full);
    }

    /// Writes the finished blocks, `out[..end]`, to the sink; the next block
    /// starts at the front.
    #[inline(never)]
    fn write_finished(&mut self, end: usize) {
        if self.result.is_ok() {
            self.result = self.sink.write_all(self.out.get(..end).unwrap_or(&[]));
        }
    }

    /// Appends the CRC, ends the last block (its implied zero dropped), and writes
    /// what is gathered with the delimiter.
    fn finish(mut self) -> Result<(), W::Error> {
        let crc = self.crc.finish().to_le_bytes();
        if BY_WORDS && self.w + crc.len() - self.code_at < 255 {
            // Room for the four: no block fills up, so only a zero of theirs
            // ends one (without `push`'s tests and check: about 50 Cortex-M4
            // cycles a frame less). ARMv6-M takes `push`: 80 bytes less flash
            // on thumbv6m, 1.3 Cortex-M0 cycles a record more.
            let mut w = self.w;
            for b in crc {
                w = if b == 0 {
                    self.end_at(w, false)
                } else {
                    if let Some(slot) = self.out.get_mut(w) {
                        *slot = b;
                    }
                    w + 1
                };
            }
            self.w = w;
        } else {
            // Through `push` (its one copy of the stuffing loop): it also adds
            // these bytes to the check, which nothing reads any more.
            self.push(&crc);
        }
        // A frame that ends with a full block needs no empty last block (as the
        // `cobs` crate encodes it).
        let end = if self.after_full && self.w == self.code_at + 1 {
            self.code_at
        } else {
            // 1..=255: fits a byte.
            let n = self.w - self.code_at;
            if let Some(code) = self.out.get_mut(self.code_at) {
                *code = n as u8;
            }
            self.w
        };
        // The delimiter: `end <= code_at + 255 < OUT`.
        if let Some(d) = self.out.get_mut(end) {
            *d = 0;
        }
        // The one out-of-line copy of the sink's write.
        self.write_finished(end + 1);
        self.result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::compact::{pack_metadata, PACKED_MAX};
    use crate::link::frame::HEAD_LEN;

    /// A xorshift generator of 32-bit values from `seed` (not 0): the tests'
    /// inputs, the same on every run.
    fn xorshift32(mut seed: u32) -> impl FnMut() -> u32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        }
    }

    /// Both record loops of `function_run` (the one a target does not use is
    /// built and checked here) stuff the same bytes, check and count, from any
    /// place in a block: records of every shape, the shapes' bounds and their
    /// neighbours, zero varints, metadata words, runs that fill the block.
    #[test]
    fn record_loops_by_shape_and_by_one_byte_varints_agree() {
        let mut next = xorshift32(0x2545_F491);
        // Values around the varints' one- and two-byte bounds.
        const EDGES: [u32; 12] = [
            0,
            1,
            2,
            126,
            127,
            128,
            129,
            16_382,
            16_383,
            16_384,
            16_385,
            u32::MAX,
        ];
        for n in 0..4_000 {
            let mut words = [0u32; 2 * 140];
            let records = 1 + next() as usize % 140;
            for record in words[..2 * records].chunks_exact_mut(2) {
                let r = next();
                let action = ((r >> 8) % 4) << 1;
                let word = match r % 10 {
                    0 | 1 => (next() % 8) << 4 | action,
                    2..=5 => (8 + next() % 1_016) << 4 | action,
                    6 => EDGES[(next() % 12) as usize] & !1,
                    7 => (next() % 1_100) << 4 | action,
                    8 if n % 3 == 0 => next() | 1,
                    _ => next() & !1,
                };
                let delta = match (r >> 4) % 8 {
                    0 | 1 => 1 + next() % 127,
                    2 | 3 => 128 + next() % 16_256,
                    4 => EDGES[(next() % 12) as usize],
                    5 if n % 5 == 0 => 0,
                    6 => next(),
                    _ => 20 + next() % 20,
                };
                record[0] = word;
                record[1] = delta;
            }
            let code_at = (next() as usize) % (GATHER + 1);
            // At most 253 data bytes: a block of 254 is ended as it fills.
            let w = code_at + 1 + (next() as usize) % MAX_RUN;
            let ran = [false, true].map(|by_shape| {
                let mut sink = [0u8; 4 * OUT];
                let mut out = [0x5Au8; OUT];
                let mut to: &mut [u8] = &mut sink;
                let mut s = Stuffer::new(&mut to, &mut out, false);
                (s.code_at, s.w) = (code_at, w);
                let records = words[..2 * records].chunks_exact(2).map(|r| (r[0], r[1]));
                let taken = if by_shape {
                    s.function_run::<true>(records)
                } else {
                    s.function_run::<false>(records)
                };
                let state = (taken, s.code_at, s.w, s.after_full, s.crc.finish());
                (state, out, sink)
            });
            assert_eq!(
                ran[0].0, ran[1].0,
                "run {n}: taken, code_at, w, after_full, check"
            );
            assert_eq!(ran[0].1, ran[1].1, "run {n}: the frame's bytes");
            assert_eq!(ran[0].2, ran[1].2, "run {n}: what went to the sink");
        }
    }

    /// Thumb-2's `functions_one_by_one` (built and checked on the host too)
    /// stuffs what `push` stuffs of the same records' varints, from any place in
    /// a block (most near its end), and takes the records up to the first after
    /// which the block has room for the loops again: one at least, none past a
    /// metadata record.
    #[test]
    fn records_one_by_one_are_pushed_varints() {
        let mut next = xorshift32(0x1B87_3593);
        const EDGES: [u32; 9] = [0, 1, 126, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152];
        for n in 0..20_000 {
            let mut buffer = [0u8; 8 * 12];
            let records = 1 + next() as usize % 12;
            for (i, record) in buffer[..8 * records].chunks_exact_mut(8).enumerate() {
                let r = next();
                let word = match r % 6 {
                    0 => EDGES[(next() % 9) as usize] & !1,
                    1 if i > 0 && n % 4 == 0 => next() | 1,
                    2 => next() & !1,
                    _ => (next() % 1_100) << 4 | ((r >> 8) % 4) << 1,
                };
                let delta = match (r >> 4) % 4 {
                    0 => EDGES[(next() % 9) as usize],
                    1 => next() >> (next() % 32),
                    _ => next() % 300,
                };
                record[..4].copy_from_slice(&word.to_le_bytes());
                record[4..].copy_from_slice(&delta.to_le_bytes());
            }
            let records = &buffer[..8 * records];
            let code_at = (next() as usize) % (GATHER + 1);
            // At most 253 data bytes: a block of 254 is ended as it fills.
            let used = if n % 4 == 0 {
                (next() as usize) % MAX_RUN
            } else {
                LAST_RECORD_AT + 1 + (next() as usize) % (MAX_RUN - LAST_RECORD_AT - 1)
            };
            let w = code_at + 1 + used;
            let mut sink = [0u8; 2 * OUT];
            let mut out = [0x5Au8; OUT];
            let mut to: &mut [u8] = &mut sink;
            let mut s = Stuffer::new(&mut to, &mut out, false);
            (s.code_at, s.w) = (code_at, w);
            let taken = s.records_one_by_one(records);
            let got = (s.code_at, s.w, s.after_full, s.crc.finish());
            let after = s.w - s.code_at;

            assert!(
                taken >= 8 && taken % 8 == 0 && taken <= records.len(),
                "run {n}: took {taken}"
            );
            // The reference: each record's varints through `push`, which must
            // leave the block out of the loops' reach after every record but
            // the last taken.
            let mut sink2 = [0u8; 2 * OUT];
            let mut out2 = [0x5Au8; OUT];
            let mut to2: &mut [u8] = &mut sink2;
            let mut r = Stuffer::new(&mut to2, &mut out2, false);
            (r.code_at, r.w) = (code_at, w);
            for (i, record) in records[..taken].chunks_exact(8).enumerate() {
                let word = u32::from_le_bytes(record[..4].try_into().unwrap());
                let delta = u32::from_le_bytes(record[4..].try_into().unwrap());
                assert_eq!(word & 1, 0, "run {n}: took a metadata record");
                let mut varints = [0u8; 2 * VARINT_MAX];
                let v = put_varint(word, &mut varints, 0);
                let v = put_varint(delta, &mut varints, v);
                r.push(&varints[..v]);
                if i + 1 < taken / 8 {
                    let used = r.w - r.code_at;
                    assert!(
                        used > LAST_RECORD_AT + 1,
                        "run {n}: went on with {used} bytes used"
                    );
                }
            }
            if let Some(record) = records.get(taken..taken + 8) {
                // Stopped before a function record: only with room for the loops.
                if record[0] & 1 == 0 {
                    assert!(
                        after <= LAST_RECORD_AT + 1,
                        "run {n}: stopped with {after} bytes used"
                    );
                }
            }
            let want = (r.code_at, r.w, r.after_full, r.crc.finish());
            assert_eq!(got, want, "run {n}: code_at, w, after_full, check");
            assert_eq!(out, out2, "run {n}: the frame's bytes");
            assert_eq!(sink, sink2, "run {n}: what went to the sink");
        }
    }

    /// A frame's head and end (its check, the last block and the delimiter)
    /// are the `cobs` crate's stuffing of the frame's bytes, whatever the
    /// head's and the check's bytes (zeros among them) and however full the
    /// last block is: the head's and the check's ways without `push`, and
    /// `push`'s way for a block too full for the check.
    #[test]
    fn frame_ends_are_standard_cobs() {
        let mut next = xorshift32(0x68E3_1DA4);
        for n in 0..20_000 {
            let mut payload = [0u8; 700];
            let len = next() as usize % payload.len();
            // Runs without a zero, of any length (blocks full or nearly so at
            // the end), or zeros now and then.
            let zeros = next() % 4;
            for b in &mut payload[..len] {
                *b = if zeros > 0 && next() % (8 << zeros) == 0 {
                    0
                } else {
                    1 + (next() % 255) as u8
                };
            }
            let payload = &payload[..len];
            let mut check = next();
            for i in 0..4 {
                if next() % 4 == 0 {
                    check &= !(0xFF << (8 * i));
                }
            }
            let lead = n % 2 == 0;
            let mut sink = [0u8; 1024];
            let mut to: &mut [u8] = &mut sink;
            let mut out = [0u8; OUT];
            // A head of any source and sequence number, zero bytes and all.
            let pick = |r: u32| match r % 4 {
                0 => 0,
                1 => r >> 24,
                2 => r & 0xFF00_FF00,
                _ => r,
            };
            let head = FrameHead {
                kind: FrameKind::FdrPacked,
                source: pick(next()),
                seq: pick(next()) as u16,
            };
            let mut s = Stuffer::with_head(&mut to, &mut out, lead, &head);
            s.push(payload);
            let mut frame_check = crc::Crc32c::new();
            frame_check.update(&head.to_bytes());
            frame_check.update(payload);
            assert_eq!(
                s.crc.finish(),
                frame_check.finish(),
                "run {n}: the check of head and payload"
            );
            s.crc = crc::Crc32c::finishing_as(check);
            s.finish().unwrap();
            let left = to.len();
            let written = &sink[..sink.len() - left];

            let mut frame = [0u8; HEAD_LEN + 704];
            frame[..HEAD_LEN].copy_from_slice(&head.to_bytes());
            frame[HEAD_LEN..HEAD_LEN + len].copy_from_slice(payload);
            frame[HEAD_LEN + len..HEAD_LEN + len + 4].copy_from_slice(&check.to_le_bytes());
            let len = HEAD_LEN + len;
            let mut want = [0u8; 1024];
            let start = usize::from(lead);
            let end = start + cobs::encode(&frame[..len + 4], &mut want[start..]);
            // The closing delimiter (`encode` may have put the code of an empty
            // last block there, which it does not count).
            want[end] = 0;
            assert_eq!(
                written,
                &want[..end + 1],
                "run {n}: {len} bytes, check {check:#010x}"
            );
        }
    }

    /// Both ways of making a packed metadata record (the one a target does not
    /// use is built and checked here) make what `pack_metadata` makes.
    #[test]
    fn packed_by_words_and_by_bytes_agree() {
        let mut next = xorshift32(0x9E37_79B9);
        for n in 0..20_000 {
            let mut record = [0u8; META];
            for (i, b) in record.iter_mut().enumerate() {
                let r = next();
                // Mostly zeros, as metadata records are; every pattern sometimes.
                *b = match n % 4 {
                    0 => r as u8,
                    1 => u8::from(r % 3 == 0) * (r >> 8) as u8,
                    2 => u8::from(r % 7 == 0) * 0x80,
                    _ => u8::from((n >> 2) & (1 << (i % 16)) != 0),
                };
            }
            record[0] |= 1;
            let mut want = [0u8; PACKED_MAX];
            let len = pack_metadata(&record, &mut want);
            for by_words in [true, false] {
                let mask = packed_mask(&record, by_words);
                assert_eq!(mask.to_le_bytes()[..2], want[1..3], "{record:?} {by_words}");
                let mut got = [0u8; META];
                let mut k = 0;
                packed_bytes(&record, by_words, |b| {
                    got[k] = b;
                    k += 1;
                });
                assert_eq!(got[..k], want[3..len], "{record:?} {by_words}");
            }
        }
    }
}
