//! The sending side: frames onto an [`embedded_io::Write`] sink, and the flushing of
//! a streaming ring one buffer at a time.

use core::fmt;

use embedded_io::Write;

use super::compact::compact_to;
use super::fast_stuffer::{Stuffer, OUT};
use super::frame::{FrameHead, FrameKind, LinkStats};
use super::no_ring::NoRing;
use super::trace2::{emit, Trace2Event};
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
    /// The counts of records made in contexts without a ring, which the
    /// source's counters frames carry.
    no_ring: Option<&'static NoRing>,
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
            no_ring: None,
        }
    }

    /// Has the source's counters frames carry `counts`, the records made in
    /// contexts without a ring, so the receiver names each such context.
    /// `ContextRecorders::install_ring` does it for the sources it makes; a
    /// source made by hand beside `ContextRecorders::install` takes
    /// `TRACE.no_ring()`.
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use flightrec_core::fdr::FileHeader;
    /// use flightrec_core::link::{NoRing, Source};
    /// static LOST: NoRing = NoRing::new();
    /// let header = FileHeader::new(NonZeroU64::new(1_000).unwrap(), 256);
    /// let source = Source::new(1, header).with_no_ring(&LOST);
    /// assert!(source.no_ring().is_some());
    /// ```
    pub const fn with_no_ring(mut self, counts: &'static NoRing) -> Self {
        self.no_ring = Some(counts);
        self
    }

    /// The counts of records without a ring that the source's counters frames
    /// carry. Example on [`with_no_ring`](Self::with_no_ring).
    pub const fn no_ring(&self) -> Option<&'static NoRing> {
        self.no_ring
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
    /// for each frame: a new one would be zeroed every time, and the stuffer writes every
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
    // Out of line: the header's bytes then take no room in the frame of
    // `send_source_status`, which the idle loop's `flush_one` calls.
    #[inline(never)]
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
        self.send_counters(source, consumer)?;
        source.since_header = Some(0);
        Ok(())
    }

    /// A source's counters frame: the ring's and the writer's counters, then
    /// the records of contexts without a ring (none for a source without the
    /// table: the old payload), stuffed as they come. Out of line, for the
    /// stack of `flush_one`, as [`send_file_header`](Self::send_file_header).
    #[inline(never)]
    fn send_counters(
        &mut self,
        source: &Source,
        consumer: &Consumer<'_, '_>,
    ) -> Result<(), W::Error> {
        let stats = LinkStats {
            ring: consumer.stats(),
            frames_failed: self.frames_failed,
        };
        let head = FrameHead {
            kind: FrameKind::Stats,
            source: source.id,
            seq: self.seq,
        };
        self.seq = self.seq.wrapping_add(1);
        // Its own frame, not `send_frame`'s: one level less on the way to the
        // sink, so the counts add nothing to the stack of `flush_one`.
        let mut frame = Stuffer::with_head(&mut self.sink, &mut self.out, self.resync, &head);
        frame.push(&stats.to_bytes());
        if let Some(table) = source.no_ring {
            table.each(|entry| frame.push(entry));
        }
        let result = frame.finish();
        self.count(result)
    }
}

/// What a frame carries after its head.
enum Body<'b> {
    /// These bytes as they are.
    Bytes(&'b [u8]),
    /// An FDR buffer in its compact form, with its metadata packed if `packed`.
    Compact { buffer: &'b [u8], packed: bool },
}
