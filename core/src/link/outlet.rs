//! [`Outlet`]: one ring's way out over a link (its [`Source`] and the ring's
//! [`Consumer`]), and the two calls a firmware makes with its outlets: the idle
//! loop's [`LinkWriter::flush_each`] and the end of a run's
//! [`LinkWriter::finish`].

use embedded_io::Write;

use super::writer::{LinkWriter, Source};
use crate::fdr::ring::Consumer;

/// One ring's way out over a link: the [`Source`] its frames carry and the
/// ring's [`Consumer`].
///
/// ```
/// use flightrec_core::clock::Timestamp;
/// use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
/// use flightrec_core::fdr::writer::WriterConfig;
/// use flightrec_core::fdr::FunctionId;
/// use flightrec_core::link::{LinkWriter, Outlet, Source};
///
/// let mut storage = [0u8; 2 * 256];
/// let slots = [Slot::NEW; 2];
/// let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
/// let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
/// let source = Source::new(1, cfg.file_header(ring.buffer_size()));
/// let (mut rec, consumer) = ring.split(cfg);
/// let mut outlets = [Outlet::new(source, consumer)];
///
/// let mut wire = Vec::new();
/// let mut link = LinkWriter::new(&mut wire);
/// rec.enter(FunctionId::new(3).unwrap(), Timestamp { tsc: 10, cpu: 0 }).unwrap();
/// assert_eq!(link.flush_each(&mut outlets), 0); // nothing finished yet
/// assert_eq!(link.finish(&mut outlets, || rec.flush()), Ok(0)); // the end of the run: nothing left
/// // Header, counters, the buffer, then the final header and counters.
/// assert_eq!(link.frames_sent(), 5);
/// ```
pub struct Outlet<'r, 's> {
    /// What the ring's frames carry.
    pub source: Source,
    /// The ring's consuming half.
    pub consumer: Consumer<'r, 's>,
}

impl<'r, 's> Outlet<'r, 's> {
    /// The outlet of the ring `consumer` takes from. Example on [`Outlet`].
    pub const fn new(source: Source, consumer: Consumer<'r, 's>) -> Self {
        Self { source, consumer }
    }
}

impl<W: Write> LinkWriter<W> {
    /// Sends at most one finished buffer of each outlet (the idle loop's call, so
    /// that it never stalls for long) and returns how many were sent. A failed
    /// frame is counted by the writer ([`LinkWriter::frames_failed`]) and its
    /// buffer's records are lost, as with [`LinkWriter::flush_one`]. Example on
    /// [`Outlet`].
    pub fn flush_each(&mut self, outlets: &mut [Outlet<'_, '_>]) -> usize {
        let mut sent = 0;
        for o in outlets {
            if let Ok(true) = self.flush_one(&mut o.source, &mut o.consumer) {
                sent += 1;
            }
        }
        sent
    }

    /// The end of a run: `flush_recorders` hands each recorder's current buffer
    /// over (e.g. `ContextRecorders::flush_all` or `Recorder::flush`), the
    /// buffers waiting then are sent, and then each outlet's final header and
    /// counters. The recorders are flushed twice: a loss marker that found every
    /// buffer waiting for the link the first time goes out the second.
    ///
    /// It ends whatever the contexts do meanwhile: each round sends at most the
    /// buffers an outlet had waiting when the round began (at most the ring's
    /// buffer count), so a context that keeps recording faster than the link
    /// drains (an interrupt left running) cannot hold the program here. What it
    /// leaves is counted: `Ok` carries the buffers still waiting in the rings,
    /// and the final counters carry them too (finished but not consumed), so
    /// the receiver knows how many never came.
    ///
    /// Returns the first error of the sink (every outlet is still tried). A
    /// failed buffer frame loses that buffer (counted) and the next one goes on;
    /// a failure that took no buffer (the header and counters frames before it)
    /// ends that outlet's round, since the same frame would fail again.
    /// Example on [`Outlet`].
    pub fn finish(
        &mut self,
        outlets: &mut [Outlet<'_, '_>],
        mut flush_recorders: impl FnMut(),
    ) -> Result<u32, W::Error> {
        let mut result = Ok(());
        for _ in 0..2 {
            flush_recorders();
            for o in outlets.iter_mut() {
                self.drain_waiting(o, &mut result);
            }
        }
        let mut left = 0u32;
        for o in outlets.iter_mut() {
            left = left.saturating_add(o.consumer.pending());
            if let Err(e) = self.send_source_status(&mut o.source, &o.consumer) {
                result = result.and(Err(e));
            }
        }
        result.map(|()| left)
    }

    /// Sends at most the buffers `o` has waiting now; keeps the first error in
    /// `result`.
    fn drain_waiting(&mut self, o: &mut Outlet<'_, '_>, result: &mut Result<(), W::Error>) {
        let mut budget = o.consumer.pending();
        while budget > 0 {
            budget -= 1;
            let consumed = o.consumer.stats().buffers_consumed;
            match self.flush_one(&mut o.source, &mut o.consumer) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    if result.is_ok() {
                        *result = Err(e);
                    }
                    // A lost buffer (counted): go on with the next. No buffer
                    // taken: the same frame would fail again.
                    if o.consumer.stats().buffers_consumed == consumed {
                        break;
                    }
                }
            }
        }
    }
}
