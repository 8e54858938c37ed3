//! A streaming ring flushed over the link, a buffer at a time: the receiver rebuilds
//! FDR files that the core's verifier and `llvm-xray` accept, also when the sink
//! fails now and then (the ring is never corrupted; only the failed buffers are lost).

mod common;

use std::collections::BTreeMap;

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::ring::{Policy, Recorder, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;
use flightrec_core::link::{FrameKind, LinkStats, LinkWriter, Outlet, Source};
use flightrec_testkit::link_wire::{buffer_of, decode_frames, TestSink};

struct Received {
    files: BTreeMap<u32, Vec<u8>>,
    buffers: BTreeMap<u32, usize>,
    stats: BTreeMap<u32, LinkStats>,
    lines: Vec<Vec<u8>>,
}

fn receive(wire: &[u8]) -> Received {
    let mut r = Received {
        files: BTreeMap::new(),
        buffers: BTreeMap::new(),
        stats: BTreeMap::new(),
        lines: Vec::new(),
    };
    for (head, payload) in decode_frames(wire).0 {
        if let Some(buffer) = buffer_of(head.kind, &payload) {
            let file = r.files.get_mut(&head.source).expect("header first");
            file.extend_from_slice(&buffer);
            *r.buffers.entry(head.source).or_default() += 1;
            continue;
        }
        match head.kind {
            FrameKind::FileHeader => {
                r.files.entry(head.source).or_insert(payload);
            }
            FrameKind::Stats => {
                r.stats
                    .insert(head.source, LinkStats::parse(&payload).unwrap());
            }
            FrameKind::Trace2Line => r.lines.push(payload),
            kind => panic!("these tests send no {kind:?} frames"),
        }
    }
    r
}

/// Records `calls` nested calls into two streaming rings (two sources), flushing
/// one buffer per source after every few records, as a main loop would.
fn run(fail_every: usize, calls: u64) -> (Received, TestSink, [LinkStats; 2]) {
    let mut storage_a = vec![0u8; 4 * 512];
    let mut storage_b = vec![0u8; 4 * 512];
    let slots_a = [Slot::NEW; 4];
    let slots_b = [Slot::NEW; 4];
    let mut ring_a = Ring::new(&mut storage_a, &slots_a, Policy::Streaming).unwrap();
    let mut ring_b = Ring::new(&mut storage_b, &slots_b, Policy::Streaming).unwrap();
    let cfg_a = RecorderConfig::new(WriterConfig::new(1).with_pid(7), 1_000_000);
    let cfg_b = RecorderConfig::new(WriterConfig::new(2).with_pid(7), 1_000_000);
    let mut src_a = Source::new(1, cfg_a.file_header(ring_a.buffer_size())).with_header_every(4);
    let mut src_b = Source::new(2, cfg_b.file_header(ring_b.buffer_size()));
    let (mut rec_a, mut con_a) = ring_a.split(cfg_a);
    let (mut rec_b, mut con_b) = ring_b.split(cfg_b);
    let mut link = LinkWriter::new(TestSink::flaky(fail_every));
    link.send_trace2_line(0, b"start\n").unwrap_or(());
    let outer = FunctionId::new(1).unwrap();
    let inner = FunctionId::new(2).unwrap();
    let irq = FunctionId::new(9).unwrap();
    for i in 0..calls {
        let t = i * 100;
        let ts = |d| Timestamp { tsc: t + d, cpu: 0 };
        let _ = rec_a.enter(outer, ts(0));
        let _ = rec_a.enter(inner, ts(10));
        let _ = rec_b.enter(irq, ts(20));
        let _ = rec_b.exit(irq, ts(25));
        let _ = rec_a.exit(inner, ts(40));
        let _ = rec_a.exit(outer, ts(60));
        if i % 7 == 0 {
            let _ = link.flush_one(&mut src_a, &mut con_a);
            let _ = link.flush_one(&mut src_b, &mut con_b);
        }
    }
    rec_a.flush();
    rec_b.flush();
    while matches!(link.flush_one(&mut src_a, &mut con_a), Ok(true) | Err(_)) {}
    while matches!(link.flush_one(&mut src_b, &mut con_b), Ok(true) | Err(_)) {}
    let _ = link.send_source_status(&mut src_a, &con_a);
    let _ = link.send_source_status(&mut src_b, &con_b);
    let failed = link.frames_failed();
    let stats = [
        LinkStats {
            ring: con_a.stats(),
            frames_failed: failed,
        },
        LinkStats {
            ring: con_b.stats(),
            frames_failed: failed,
        },
    ];
    let sink = link.into_inner();
    (receive(&sink.out), sink, stats)
}

#[test]
fn clean_link_delivers_every_buffer_as_valid_files() {
    let (r, _, stats) = run(0, 400);
    assert_eq!(r.lines, vec![b"start\n".to_vec()]);
    assert_eq!(r.files.len(), 2);
    for (source, file) in &r.files {
        let summary = verify(file).unwrap_or_else(|e| panic!("source {source}: {e}"));
        let idx = (*source - 1) as usize;
        assert_eq!(summary.buffers as u32, stats[idx].ring.buffers_finished);
        assert_eq!(r.buffers[source] as u32, stats[idx].ring.buffers_finished);
        // The last counters frame carries the final counters.
        assert_eq!(r.stats[source], stats[idx]);
    }
    // Source 1 never dropped (flushed often enough)? Either way the counts agree
    // with what the files hold: 4 records per call on source 1.
    let a = verify(&r.files[&1]).unwrap();
    let dropped = u64::from(stats[0].ring.records_dropped);
    assert_eq!(a.function_records as u64 + dropped, 400 * 4);

    if let Some(tool) = common::llvm_xray() {
        let dir = common::scratch_dir("link-ring");
        for (source, file) in &r.files {
            let path = dir.join(format!("source-{source}.xray"));
            std::fs::write(&path, file).unwrap();
            let p = path.to_str().unwrap();
            let (ok, _, err) = common::run(&tool, &["fdr-dump", "--verify", p]);
            assert!(ok, "fdr-dump --verify {p}: {err}");
            let (ok, yaml, err) = common::run(&tool, &["convert", "--output-format=yaml", p]);
            assert!(ok, "convert {p}: {err}");
            let records = common::parse_yaml_records(&yaml);
            assert_eq!(records.len(), summary_records(file));
        }
    }
}

fn summary_records(file: &[u8]) -> usize {
    let s = verify(file).unwrap();
    s.function_records + s.custom_events + s.typed_events
}

#[test]
fn failing_sink_loses_only_the_failed_frames() {
    let (r, sink, stats) = run(23, 400);
    assert!(sink.calls() > 0);
    let failed = stats[0].frames_failed;
    assert!(failed > 0, "the sink was meant to fail");
    // Every file that got buffers is valid, whatever was lost around them.
    for (source, file) in &r.files {
        if r.buffers.get(source).is_some_and(|&n| n > 0) {
            verify(file).unwrap_or_else(|e| panic!("source {source}: {e}"));
        }
    }
    // Buffers delivered + buffers lost to failed frames = buffers consumed.
    let delivered: usize = r.buffers.values().sum();
    assert!(delivered > 0);
    let consumed: u32 = stats.iter().map(|s| s.ring.buffers_consumed).sum();
    assert!(delivered as u32 <= consumed);
    assert!(consumed - delivered as u32 <= failed);
}

/// `ring`'s recorder (source 1) after `records` entries, one a tick, with
/// nothing sent, and its outlet.
fn recorded_outlet<'r, 'a>(
    ring: &'r mut Ring<'a>,
    records: u64,
) -> (Recorder<'r, 'a>, [Outlet<'r, 'a>; 1]) {
    let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000_000);
    let source = Source::new(1, cfg.file_header(ring.buffer_size()));
    let (mut rec, consumer) = ring.split(cfg);
    let f = FunctionId::new(4).unwrap();
    for t in 0..records {
        let _ = rec.enter(f, Timestamp { tsc: t, cpu: 0 });
    }
    (rec, [Outlet::new(source, consumer)])
}

/// `LinkWriter::finish` over outlets, after a loss with every buffer waiting for
/// the link: the first flush cannot write the loss marker (no free buffer), the
/// second does, so the receiver's file says how many records went missing.
#[test]
fn finish_sends_the_loss_marker_that_found_every_buffer_waiting() {
    use flightrec_core::fdr::decoder::Decoder;
    use flightrec_core::fdr::records::Record;
    use flightrec_core::fdr::ring::LOSS_EVENT_TYPE;

    let mut storage = vec![0u8; 3 * 256];
    let slots = [Slot::NEW; 3];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    // Nothing is sent while recording: the ring fills and drops.
    let (mut rec, mut outlets) = recorded_outlet(&mut ring, 200);
    assert!(rec.records_dropped() > 0);
    let mut link = LinkWriter::new(Vec::new());
    link.finish(&mut outlets, || rec.flush()).unwrap();

    let got = receive(&link.into_inner());
    let file = &got.files[&1];
    verify(file).unwrap();
    let marked: u64 = Decoder::new(file)
        .unwrap()
        .filter_map(|d| match d.unwrap().record {
            Record::TypedEvent {
                event_type,
                payload,
                ..
            } if event_type == LOSS_EVENT_TYPE => {
                let text = std::str::from_utf8(payload).unwrap();
                let n = text.strip_prefix("flightrec: lost ").unwrap();
                Some(n.strip_suffix(" records").unwrap().parse::<u64>().unwrap())
            }
            _ => None,
        })
        .sum();
    assert_eq!(marked, rec.records_dropped());
    // The last frame carries the final counters: everything consumed.
    assert_eq!(got.stats[&1].ring.buffers_finished, got.buffers[&1] as u32);
}

/// `LinkWriter::finish` with a sink that fails: it returns, never spinning on a
/// frame that cannot go. A sink that takes nothing fails each outlet's header
/// frame once a round (twice) and the final counters once, and no buffer is
/// taken; a sink that breaks every third write takes every buffer (each sent,
/// or lost with its frame), and some arrive.
#[test]
fn finish_gives_up_on_a_failing_sink() {
    for fail_every in [0, 3] {
        let mut storage = vec![0u8; 4 * 256];
        let slots = [Slot::NEW; 4];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let (mut rec, mut outlets) = recorded_outlet(&mut ring, 100);
        let sink = if fail_every == 0 {
            TestSink::limited(1, 0)
        } else {
            TestSink::flaky(fail_every)
        };
        let sink = sink.with_max_calls(1_000);
        let mut link = LinkWriter::new(sink);
        let result = link.finish(&mut outlets, || rec.flush());
        assert!(result.is_err(), "the sink failed");
        if fail_every == 0 {
            assert_eq!((link.frames_sent(), link.frames_failed()), (0, 3));
            assert_eq!(outlets[0].consumer.stats().buffers_consumed, 0);
            let pending = outlets[0].consumer.pending();
            assert!(pending > 0, "buffers were waiting");
            assert_eq!(pending, rec.stats().buffers_finished, "all still waiting");
        } else {
            // Every buffer was taken: sent, or lost with its frame.
            assert_eq!(outlets[0].consumer.pending(), 0);
            let got = receive(&link.into_inner().out);
            let received = got.buffers.get(&1).copied().unwrap_or(0);
            assert!(received > 0, "some buffers arrive");
            assert!(received as u32 <= rec.stats().buffers_finished);
        }
    }
}

/// A sink whose every write records more into the ring it drains: a context
/// recording faster than the link (an interrupt left running during `finish`).
struct RecordingSink<'r, 'a> {
    rec: std::rc::Rc<std::cell::RefCell<Recorder<'r, 'a>>>,
    tick: u64,
    writes: u64,
    bytes: Vec<u8>,
}

impl embedded_io::ErrorType for RecordingSink<'_, '_> {
    type Error = core::convert::Infallible;
}

impl embedded_io::Write for RecordingSink<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        let f = FunctionId::new(4).unwrap();
        // Enough to fill a 256-byte buffer on every write.
        for _ in 0..40 {
            self.tick += 1;
            let ts = Timestamp {
                tsc: self.tick,
                cpu: 0,
            };
            let _ = self.rec.borrow_mut().enter(f, ts);
        }
        self.writes += 1;
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// `LinkWriter::finish` while a context keeps recording faster than the sink
/// drains: it returns (within a time limit), having sent at most the buffers
/// waiting at the start of each of its two rounds, and says how many it left,
/// which the final counters carry too. Before the bound it never returned.
#[test]
fn finish_ends_while_a_context_records_faster_than_the_sink() {
    const BUFFERS: u32 = 4;
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut storage = vec![0u8; BUFFERS as usize * 256];
        let slots = [Slot::NEW; BUFFERS as usize];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let (rec, mut outlets) = recorded_outlet(&mut ring, 200);
        let rec = std::rc::Rc::new(std::cell::RefCell::new(rec));
        let sink = RecordingSink {
            rec: rec.clone(),
            tick: 1_000,
            writes: 0,
            bytes: Vec::new(),
        };
        let mut link = LinkWriter::new(sink);
        let left = link.finish(&mut outlets, || rec.borrow_mut().flush());
        let pending = outlets[0].consumer.pending();
        let sent = link.frames_sent();
        let sink = link.into_inner();
        let _ = done.send((left, pending, sent, sink.writes, sink.bytes));
    });
    let (left, pending, sent, writes, wire) = wait
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("finish returned within 20 s");
    assert!(writes > 0);
    // Still recording at the end: buffers were left, and said so (the sink
    // records on, so the ring may have finished more since).
    let left = left.unwrap();
    assert!(left > 0, "the context kept the ring full");
    assert!(left <= pending);
    // Two rounds of at most BUFFERS buffers, each after a header and counters
    // at most, then the final header and counters.
    let buffers = 2 * BUFFERS;
    assert!(sent <= 3 * buffers + 2, "{sent} frames sent");
    let got = receive(&wire);
    assert!(got.buffers[&1] as u32 <= buffers);
    let last = got.stats[&1].ring;
    let unsent = last.buffers_finished - last.buffers_consumed;
    assert!(
        (left..=pending).contains(&unsent),
        "{left} <= {unsent} <= {pending}"
    );
    verify(&got.files[&1]).unwrap();
}
