//! The sending side: frames onto an [`embedded_io::Write`] sink, and the flushing of
//! a streaming ring one buffer at a time.

use embedded_io::Write;

use super::encoder::FrameEncoder;
use super::frame::{FrameHead, FrameKind, LinkStats};
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
        }
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
        let sent = self.send_buffer(source.id, &buffer);
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
