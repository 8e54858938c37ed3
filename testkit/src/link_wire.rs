//! The link's wire in tests: the frames a receiver decodes from captured bytes,
//! the FDR buffer a frame carries, and a sink that misbehaves as a serial line
//! or a full buffer does.

use flightrec_core::link::compact::{expand, expanded_len, unpack, unpacked_len};
use flightrec_core::link::{DecoderStats, Event, FrameDecoder, FrameHead, FrameKind};

/// The frames a receiver decodes from `wire` (head and payload, in order) and
/// the decoder's counters. Every call of the decoder consumes something.
///
/// ```
/// use flightrec_core::link::{FrameKind, LinkWriter};
/// use flightrec_testkit::link_wire::{decode_frames, TestSink};
/// let mut link = LinkWriter::new(TestSink::new());
/// link.send_trace2_line(7, b"a\n").unwrap();
/// let (frames, stats) = decode_frames(&link.into_inner().out);
/// assert_eq!((frames[0].0.kind, frames[0].0.source), (FrameKind::Trace2Line, 7));
/// assert_eq!((frames[0].1.as_slice(), stats.frames), (&b"a\n"[..], 1));
/// ```
pub fn decode_frames(wire: &[u8]) -> (Vec<(FrameHead, Vec<u8>)>, DecoderStats) {
    let mut buf = vec![0u8; 70_000];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut rest = wire;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (used, ev) = dec.feed(rest);
        assert!(
            used > 0 && used <= rest.len(),
            "the decoder took {used} bytes"
        );
        rest = &rest[used..];
        if let Some(Event::Frame(f)) = ev {
            out.push((f.head, f.payload.to_vec()));
        }
    }
    (out, dec.stats())
}

/// The FDR buffer a frame of `kind` carries: its payload as it is
/// ([`FrameKind::FdrBuffer`]), its compact form expanded or its packed form
/// unpacked, each filling exactly the length it says; `None` for a frame that
/// carries no buffer. Panics on a compact or packed payload that does not
/// rebuild.
///
/// ```
/// use flightrec_core::link::compact::pack;
/// use flightrec_core::link::FrameKind;
/// use flightrec_testkit::link_wire::buffer_of;
/// let buffer = [0x10, 0, 0, 0, 7, 0, 0, 0];
/// let mut packed = Vec::new();
/// pack(&buffer, |part| packed.extend_from_slice(part));
/// assert_eq!(buffer_of(FrameKind::FdrPacked, &packed), Some(buffer.to_vec()));
/// assert_eq!(buffer_of(FrameKind::Stats, &packed), None);
/// ```
pub fn buffer_of(kind: FrameKind, payload: &[u8]) -> Option<Vec<u8>> {
    let packed = match kind {
        FrameKind::FdrBuffer => return Some(payload.to_vec()),
        FrameKind::FdrCompact => false,
        FrameKind::FdrPacked => true,
        _ => return None,
    };
    let len = if packed {
        unpacked_len(payload)
    } else {
        expanded_len(payload)
    };
    let mut buffer = vec![0u8; len.expect("a buffer's length")];
    let rebuilt = if packed {
        unpack(payload, &mut buffer)
    } else {
        expand(payload, &mut buffer)
    };
    assert_eq!(rebuilt, Ok(buffer.len()), "{kind:?}");
    Some(buffer)
}

/// A link sink over a `Vec`: it takes every byte ([`new`](Self::new)), or at
/// most `per_call` bytes a write and `cap` in all, then fails
/// ([`limited`](Self::limited)), or fails every `fail_every`-th write after
/// taking half of it ([`flaky`](Self::flaky)).
///
/// ```
/// use embedded_io::Write;
/// use flightrec_testkit::link_wire::TestSink;
/// let mut sink = TestSink::limited(2, 3);
/// assert_eq!(sink.write(b"abc").unwrap(), 2);
/// assert_eq!(sink.write(b"c").unwrap(), 1);
/// assert!(sink.write(b"d").is_err());
/// assert_eq!(sink.out, b"abc");
/// ```
#[derive(Debug, Default)]
pub struct TestSink {
    /// What it took.
    pub out: Vec<u8>,
    per_call: Option<usize>,
    cap: Option<usize>,
    fail_every: Option<usize>,
    max_calls: Option<usize>,
    calls: usize,
}

impl TestSink {
    /// A sink that takes every byte.
    pub fn new() -> Self {
        Self::default()
    }

    /// A sink that takes at most `per_call` bytes (at least 1) a write and `cap`
    /// in all, and then fails.
    pub fn limited(per_call: usize, cap: usize) -> Self {
        Self {
            per_call: Some(per_call.max(1)),
            cap: Some(cap),
            ..Self::default()
        }
    }

    /// A sink whose every `fail_every`-th write (0: none) takes half its bytes
    /// and fails: a line that breaks.
    pub fn flaky(fail_every: usize) -> Self {
        Self {
            fail_every: Some(fail_every).filter(|&n| n > 0),
            ..Self::default()
        }
    }

    /// The same sink, panicking at write `max_calls + 1`: a writer that keeps
    /// calling a failed sink fails the test instead of hanging it.
    pub fn with_max_calls(mut self, max_calls: usize) -> Self {
        self.max_calls = Some(max_calls);
        self
    }

    /// The writes of a non-empty buffer it was asked for.
    pub fn calls(&self) -> usize {
        self.calls
    }
}

/// [`TestSink`]'s failure.
#[derive(Debug)]
pub struct SinkFailed;

impl std::fmt::Display for SinkFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the test sink failed")
    }
}

impl std::error::Error for SinkFailed {}

impl embedded_io::Error for SinkFailed {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::ErrorKind::BrokenPipe
    }
}

impl embedded_io::ErrorType for TestSink {
    type Error = SinkFailed;
}

impl embedded_io::Write for TestSink {
    fn write(&mut self, buf: &[u8]) -> Result<usize, SinkFailed> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.calls += 1;
        if let Some(max) = self.max_calls {
            assert!(
                self.calls <= max,
                "{} writes: the writer does not give up",
                self.calls
            );
        }
        if self.fail_every.is_some_and(|n| self.calls % n == 0) {
            self.out.extend_from_slice(&buf[..buf.len() / 2]);
            return Err(SinkFailed);
        }
        let room = self.cap.map_or(usize::MAX, |cap| cap - self.out.len());
        let n = buf.len().min(self.per_call.unwrap_or(usize::MAX)).min(room);
        if n == 0 {
            return Err(SinkFailed);
        }
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), SinkFailed> {
        Ok(())
    }
}
