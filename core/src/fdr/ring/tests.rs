use super::loss::{loss_text, loss_text_len};
use super::*;

/// Compile-time checks of what the module docs promise: a recorder can be moved to
/// the context that records (`Send`) and shared for reading (`Sync`); this test
/// stops compiling if either goes away.
#[test]
fn recorder_is_send_and_sync() {
    fn assert_send<T: Send>() {}
    fn assert_sync<T: Sync>() {}
    assert_send::<Recorder<'static, 'static>>();
    assert_sync::<Recorder<'static, 'static>>();
}

fn ts(tsc: u64) -> Timestamp {
    Timestamp { tsc, cpu: 0 }
}
fn fid(n: u32) -> FunctionId {
    FunctionId::new(n).unwrap()
}

/// Streaming: one call per buffer handed over, none after the consumer says
/// `None` (the stored `fn()` comes back through `*mut ()`: Miri runs this).
#[test]
fn streaming_calls_buffer_ready_once_per_buffer() {
    use core::sync::atomic::AtomicU32;
    static CALLS: AtomicU32 = AtomicU32::new(0);
    fn ready() {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }
    let mut storage = [0u8; 4 * 128];
    let slots = [Slot::NEW; 4];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let (mut rec, mut consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    consumer.set_buffer_ready(Some(ready));
    let mut t = 0;
    while consumer.pending() < 2 {
        rec.enter(fid(1), ts(t)).unwrap();
        t += 1;
    }
    assert_eq!(CALLS.load(Ordering::Relaxed), 2);
    consumer.set_buffer_ready(None);
    while consumer.pop().is_some() {}
    while consumer.pending() < 2 {
        rec.enter(fid(1), ts(t)).unwrap();
        t += 1;
    }
    assert_eq!(CALLS.load(Ordering::Relaxed), 2);
}

/// A flight recorder has no consumer to wake: filling and overwriting its
/// buffers never calls `buffer_ready`.
#[test]
fn flight_recorder_never_calls_buffer_ready() {
    use core::sync::atomic::AtomicU32;
    static CALLS: AtomicU32 = AtomicU32::new(0);
    fn ready() {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }
    let mut storage = [0u8; 2 * 128];
    let slots = [Slot::NEW; 2];
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
    let (mut rec, consumer) = ring.split(cfg);
    consumer.set_buffer_ready(Some(ready));
    for t in 0..200 {
        rec.enter(fid(1), ts(t)).unwrap();
    }
    rec.flush();
    assert!(rec.stats().buffers_overwritten > 0);
    assert_eq!(CALLS.load(Ordering::Relaxed), 0);
}

fn format_loss(n: u32) -> ([u8; 48], usize) {
    let mut out = [0u8; 48];
    let len = loss_text_len(u64::from(n));
    loss_text(u64::from(n), &mut out[..len]);
    (out, len)
}

/// `loss_text` of `n` beside the same text made by `core::fmt`.
fn loss_texts(n: u64) -> (([u8; 48], usize), ([u8; 48], usize)) {
    struct Text([u8; 48], usize);
    impl core::fmt::Write for Text {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let end = self.1 + s.len();
            self.0
                .get_mut(self.1..end)
                .ok_or(core::fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.1 = end;
            Ok(())
        }
    }
    let mut expected = Text([0; 48], 0);
    core::fmt::Write::write_fmt(&mut expected, format_args!("flightrec: lost {n} records"))
        .unwrap();
    let mut out = [0u8; 48];
    let len = loss_text_len(n);
    loss_text(n, &mut out[..len]);
    ((out, len), (expected.0, expected.1))
}

#[test]
fn loss_text_formats() {
    let ((out, len), _) = loss_texts(0);
    assert_eq!(&out[..len], b"flightrec: lost 0 records");
    let ((out, len), _) = loss_texts(u64::MAX);
    assert_eq!(&out[..len], b"flightrec: lost 18446744073709551615 records");
    // Every length of count, and both sides of each power of ten.
    let mut p = 1u64;
    for _ in 0..20 {
        for n in [p - 1, p, p + 1, p.saturating_mul(10) - 1] {
            let ((out, len), (expected, expected_len)) = loss_texts(n);
            assert_eq!(&out[..len], &expected[..expected_len], "{n}");
        }
        p = p.saturating_mul(10);
    }
    // An output of any shorter length gets part of the text, never a panic.
    for len in 0..loss_text_len(12345) {
        let mut short = [0u8; 48];
        loss_text(12345, &mut short[..len]);
        assert!(short[len..].iter().all(|&b| b == 0));
    }
}

#[test]
fn ring_rejects_bad_shapes() {
    let mut storage = [0u8; 64];
    assert_eq!(
        Ring::new(&mut storage, &[], Policy::Streaming).err(),
        Some(RingError::NoSlots)
    );
    let slots = [Slot::NEW; 2];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let (mut rec, _) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1));
    assert_eq!(rec.enter(fid(1), ts(1)), Err(Dropped::TooLarge));
    assert_eq!(rec.records_dropped(), 1);
}

/// The id of the first function record in an FDR buffer.
fn first_function_id(buffer: &[u8]) -> Option<u32> {
    let mut pos = 0;
    while pos < buffer.len() {
        let (record, len) =
            crate::fdr::decoder::decode_record(crate::fdr::Version::V5, &buffer[pos..]).ok()?;
        if let crate::fdr::records::Record::Function { id, .. } = record {
            return Some(id.get());
        }
        pos += len;
    }
    None
}

/// Moves a freshly split ring's sequence numbers to `start`, as if `start`
/// buffers had gone through it (the slots stay at 0, like a ring that has seen a
/// multiple of N buffers).
fn start_sequence_at(rec: &mut Recorder<'_, '_>, cons: &mut Consumer<'_, '_>, start: u32) {
    rec.seq = start;
    cons.tail = start;
    rec.ring.state.head.store(start, Ordering::Relaxed);
    rec.ring.state.tail.store(start, Ordering::Relaxed);
}

#[test]
fn streaming_keeps_buffers_apart_when_the_sequence_number_wraps() {
    // N = 3 does not divide 2^32: with `seq % N` the buffers numbered u32::MAX and
    // 0 both landed in slot 0, so the recorder overwrote a buffer the consumer had
    // not read yet.
    let mut storage = [0u8; 3 * 128];
    let slots = [Slot::NEW; 3];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let (mut rec, mut cons) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
    start_sequence_at(&mut rec, &mut cons, u32::MAX - 4);
    let mut next_read = 1;
    for buffer in 1..=12u32 {
        // One buffer per function id; the consumer stays two buffers behind.
        rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
        rec.flush();
        while cons.pending() > 2 {
            let b = cons.pop().unwrap();
            assert_eq!(first_function_id(&b), Some(next_read));
            next_read += 1;
        }
    }
    while let Some(b) = cons.pop() {
        assert_eq!(first_function_id(&b), Some(next_read));
        next_read += 1;
    }
    assert_eq!(next_read, 13);
    assert_eq!(rec.records_dropped(), 0);
}

/// Checks buffer `k` of the recorder in `buffers_keep_their_preambles_across_laps`:
/// its preamble, a NewCPUId at `t0` (any, with `None`) and function records 10
/// ticks apart; returns the time after its last record.
fn check_lap_buffer(b: &[u8], seconds: i64, k: i64, t0: Option<u64>) -> u64 {
    use crate::fdr::decoder::decode_record;
    use crate::fdr::records::Record;
    use crate::fdr::Version;
    let mut at = 0;
    let mut next = || {
        let (r, n) = decode_record(Version::V5, &b[at..]).unwrap();
        at += n;
        (r, at == b.len())
    };
    assert_eq!(
        next().0,
        Record::BufferExtents {
            size: b.len() as u64 - 16
        }
    );
    assert_eq!(next().0, Record::NewBuffer { tid: 7 });
    let walltime = Record::Walltime {
        seconds: seconds + k,
        micros: k as u32,
    };
    assert_eq!(next().0, walltime, "buffer {k}");
    assert_eq!(next().0, Record::Pid { pid: 42 });
    let (Record::NewCpuId { cpu: 0, tsc }, _) = next() else {
        panic!("no NewCPUId in buffer {k}");
    };
    assert_eq!(t0.unwrap_or(tsc), tsc, "buffer {k}");
    let (mut now, mut expected) = (tsc, tsc);
    loop {
        let (Record::Function { delta, .. }, last) = next() else {
            panic!("not a function record in buffer {k}");
        };
        // Each delta counts from the record before.
        now += u64::from(delta);
        assert_eq!(now, expected, "buffer {k}");
        expected += 10;
        if last {
            return expected;
        }
    }
}

/// `straight_switch` stays what it sums up through every path that changes
/// one of its parts: the first buffers, switches, drops with the consumer
/// behind, losses counted from outside, loss markers, flushes, a record
/// too large, and a ring too small for any record.
#[test]
fn straight_switch_follows_its_conditions() {
    #[repr(align(8))]
    struct Storage([u8; 3 * 160]);
    let enter = FunctionRecord::low_word(FunctionAction::Enter, fid(2));
    let exit = FunctionRecord::low_word(FunctionAction::Exit, fid(2));
    for policy in [Policy::Streaming, Policy::FlightRecorder] {
        let mut storage = Storage([0; 3 * 160]);
        let slots = [Slot::NEW; 3];
        let mut ring = Ring::new(&mut storage.0, &slots, policy).unwrap();
        let cfg = RecorderConfig::new(WriterConfig::new(1), 1_000);
        let (mut rec, mut consumer) = ring.split(cfg);
        let mut straight = 0;
        let mut check = |rec: &Recorder, step: &str| {
            assert_eq!(
                rec.straight_switch,
                rec.straight_switch_now(),
                "{policy:?}: {step}"
            );
            straight += u32::from(rec.straight_switch);
        };
        check(&rec, "new");
        for i in 0..400u64 {
            let low = if i % 2 == 0 { enter } else { exit };
            // Both ways to the switch: the direct path for every third
            // record, the declined path (the attribute's) for the others.
            let t = ts(10 * i);
            let _ = if i % 3 == 0 {
                rec.function_word(low, t)
            } else {
                rec.function_word_tried(low, t)
            };
            check(&rec, "record");
            match i % 100 {
                30 => {
                    rec.count_lost(2, t);
                    check(&rec, "count_lost");
                }
                50 => {
                    rec.flush();
                    check(&rec, "flush");
                }
                70 => {
                    assert!(rec.custom_event(t, &[0; 200]).is_err());
                    check(&rec, "too large");
                }
                _ => {}
            }
            // Streaming: the consumer takes buffers only in the second half,
            // so the first half drops records (the consumer is behind).
            if policy == Policy::Streaming && i >= 200 {
                while consumer.pop().is_some() {}
            }
        }
        rec.flush();
        check(&rec, "last flush");
        assert!(
            straight > 100,
            "{policy:?}: the straight switch was ready {straight} times"
        );
        assert!(rec.records_dropped() > 0, "{policy:?}");
    }
    // Buffers too small for one record: broken from the start.
    let mut storage = Storage([0; 3 * 160]);
    let slots = [Slot::NEW; 3];
    let mut ring = Ring::new(&mut storage.0[..3 * 40], &slots, Policy::FlightRecorder).unwrap();
    let (mut rec, _consumer) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1_000));
    assert_eq!(
        rec.function_word_tried(enter, ts(1)),
        Err(Dropped::TooLarge)
    );
    assert!(!rec.straight_switch && !rec.straight_switch_now());
}

/// Records `low` every `step` ticks from 0 the direct way into `direct` and
/// the context's way into `tried`, each with `Ok`, until `direct`'s buffer
/// has no room for another (a recorder has no buffer, so no room, before
/// its first record); returns the time after the last record.
fn fill_both(direct: &mut Recorder, tried: &mut Recorder, low: u32, step: u64) -> u64 {
    let mut tsc = 0;
    loop {
        assert_eq!(direct.function_word(low, ts(tsc)), Ok(()));
        assert_eq!(tried.function_word_tried(low, ts(tsc)), Ok(()));
        tsc += step;
        if direct.writer.lacks_room_for_function(low) {
            return tsc;
        }
    }
}

/// A record that the context's straight store declines for another reason
/// than a full buffer (another CPU, a new high word of the time) and that
/// then finds the buffer full switches the slow path's way
/// (`function_word_general`), and writes what the direct path writes.
#[test]
fn declined_records_on_a_full_buffer_write_what_the_direct_path_writes() {
    #[repr(align(8))]
    struct Storage([u8; 3 * 160]);
    let enter = FunctionRecord::low_word(FunctionAction::Enter, fid(5));
    let others = [
        Timestamp { tsc: 1_000, cpu: 1 },
        ts(1_000 + (1 << 32)),
        Timestamp {
            tsc: 5 << 32,
            cpu: 2,
        },
    ];
    for policy in [Policy::Streaming, Policy::FlightRecorder] {
        for other in others {
            let mut a = Storage([0; 3 * 160]);
            let mut b = Storage([0; 3 * 160]);
            let (slots_a, slots_b) = ([Slot::NEW; 3], [Slot::NEW; 3]);
            let mut ring_a = Ring::new(&mut a.0, &slots_a, policy).unwrap();
            let mut ring_b = Ring::new(&mut b.0, &slots_b, policy).unwrap();
            let cfg = RecorderConfig::new(WriterConfig::new(3), 1_000);
            let (mut direct, mut cons_a) = ring_a.split(cfg);
            let (mut tried, mut cons_b) = ring_b.split(cfg);
            fill_both(&mut direct, &mut tried, enter, 10);
            assert!(tried.writer.lacks_room_for_function(enter));
            // Declined: the call-free store does not say `Full` for it.
            assert_eq!(tried.try_function_word(enter, other), Tried::Declined);
            assert_eq!(direct.function_word(enter, other), Ok(()));
            assert_eq!(tried.function_word_tried(enter, other), Ok(()));
            assert_eq!(direct.stats(), tried.stats(), "{policy:?} {other:?}");
            assert_eq!(direct.stats().buffers_finished, 1, "{policy:?} {other:?}");
            direct.flush();
            tried.flush();
            if policy == Policy::Streaming {
                while let Some(x) = cons_a.pop() {
                    assert_eq!(&*x, &*cons_b.pop().unwrap(), "{other:?}");
                }
                assert!(cons_b.pop().is_none());
            } else {
                let (mut p, mut q) = (0, 0);
                direct.for_each_buffer(|_| p += 1);
                tried.for_each_buffer(|_| q += 1);
                assert_eq!((p, q), (2, 2), "{other:?}");
            }
            assert!(a.0 == b.0, "{policy:?} {other:?}: storage");
        }
    }
}

/// The context path's way for a record (`function_word_tried`: the
/// straight store, a buffer with no room straight to the switch at the
/// time given by its low word, the rest the general way) writes the bytes
/// and keeps the counts that the direct path writes: on both policies,
/// with and without a short-call threshold (an exit that elision erases
/// needs no room), across buffer switches, flushes, the clock's high word
/// and a second CPU.
#[test]
fn declined_records_write_what_the_direct_path_writes() {
    #[repr(align(8))]
    struct Storage([u8; 3 * 160]);
    let actions = [
        FunctionAction::Enter,
        FunctionAction::Exit,
        FunctionAction::Enter,
        FunctionAction::TailExit,
        FunctionAction::Enter,
        FunctionAction::Exit,
    ];
    for policy in [Policy::Streaming, Policy::FlightRecorder] {
        for threshold in [0, 5] {
            let mut a = Storage([0; 3 * 160]);
            let mut b = Storage([0; 3 * 160]);
            let (slots_a, slots_b) = ([Slot::NEW; 3], [Slot::NEW; 3]);
            {
                let mut ring_a = Ring::new(&mut a.0, &slots_a, policy).unwrap();
                let mut ring_b = Ring::new(&mut b.0, &slots_b, policy).unwrap();
                let writer = WriterConfig::new(3).with_threshold_ticks(threshold);
                let cfg = RecorderConfig::new(writer, 1_000);
                let (mut direct, mut cons_a) = ring_a.split(cfg);
                let (mut declined, mut cons_b) = ring_b.split(cfg);
                // First a buffer filled to its last byte by entries, then a
                // short call's exit: a threshold erases the entry, which needs
                // no room.
                let enter = FunctionRecord::low_word(FunctionAction::Enter, fid(9));
                let exit = FunctionRecord::low_word(FunctionAction::Exit, fid(9));
                // Before its first record a recorder has no buffer: no room.
                assert!(direct.writer.lacks_room_for_function(enter));
                let tsc = fill_both(&mut direct, &mut declined, enter, 20);
                let exit_at = ts(tsc - 20 + 3);
                assert_eq!(direct.function_word(exit, exit_at), Ok(()));
                assert_eq!(declined.function_word_tried(exit, exit_at), Ok(()));
                let switched = u32::from(threshold == 0);
                assert_eq!(direct.stats().buffers_finished, switched);
                assert_eq!(declined.stats(), direct.stats());
                let mut buffers = 0;
                for i in 0..600u64 {
                    let action = actions[(i % 6) as usize];
                    let low = FunctionRecord::low_word(action, fid(1 + (i % 3) as u32));
                    // Short calls (3 ticks, under the threshold) and long ones;
                    // the high word changes at i = 300; CPU 1 for a stretch.
                    let call = if (i / 2) % 3 == 0 { 3 } else { 11 };
                    let high = if i < 300 { 0 } else { 1 << 32 };
                    let tsc = 10_000 + (i / 2) * 20 + (i % 2) * call + high;
                    let t = Timestamp {
                        tsc,
                        cpu: u16::from((400..420).contains(&i)),
                    };
                    let (x, y) = (
                        direct.function_word(low, t),
                        declined.function_word_tried(low, t),
                    );
                    assert_eq!(x, y, "{policy:?} {threshold}: record {i}");
                    if i % 97 == 96 {
                        direct.flush();
                        declined.flush();
                    }
                    if policy == Policy::Streaming && cons_a.pending() > 1 {
                        let (p, q) = (cons_a.pop().unwrap(), cons_b.pop().unwrap());
                        assert_eq!(&*p, &*q, "{policy:?} {threshold}: buffer {buffers}");
                        buffers += 1;
                    }
                }
                direct.flush();
                declined.flush();
                assert_eq!(direct.stats(), declined.stats());
                assert_eq!(direct.records_dropped(), declined.records_dropped());
                assert!(
                    direct.stats().buffers_finished > 12,
                    "{policy:?} {threshold}: switches"
                );
                if policy == Policy::Streaming {
                    while let Some(p) = cons_a.pop() {
                        assert_eq!(&*p, &*cons_b.pop().unwrap());
                        buffers += 1;
                    }
                    assert!(cons_b.pop().is_none());
                    assert!(buffers > 12);
                } else {
                    let (mut p, mut q) = (0, 0);
                    direct.for_each_buffer(|_| p += 1);
                    declined.for_each_buffer(|_| q += 1);
                    assert_eq!(p, q);
                }
            }
            // Every byte of both rings, the flight recorder's kept buffers too.
            assert!(a.0 == b.0, "{policy:?} {threshold}: storage");
        }
    }
}

/// Past the first lap the recorder rewrites only the changing records of a
/// slot's preamble (`switch_for_function`): every buffer still decodes to its
/// own extents, thread, wall time, process, NewCPUId and records, across
/// laps, after flushes (which start the next buffer the slow way) and on
/// both policies; with wall-clock seconds in a word (the straight switch's
/// own step), crossing 2^32 (where the switch goes the slow way), and
/// outside a word.
#[test]
fn buffers_keep_their_preambles_across_laps() {
    #[repr(align(8))]
    struct Storage([u8; 3 * 160]);
    let epochs = [1_700_000_000, i64::from(u32::MAX) - 6, 1 << 40, -100];
    for (policy, seconds) in [Policy::Streaming, Policy::FlightRecorder]
        .into_iter()
        .flat_map(|p| epochs.map(|s| (p, s)))
    {
        let mut storage = Storage([0; 3 * 160]);
        let slots = [Slot::NEW; 3];
        let mut ring = Ring::new(&mut storage.0, &slots, policy).unwrap();
        let epoch = Walltime { seconds, micros: 0 };
        let cfg =
            RecorderConfig::new(WriterConfig::new(7).with_pid(42), 1_000).with_epoch(epoch, 0);
        let (mut rec, mut cons) = ring.split(cfg);
        let mut t = 0;
        let mut k = 0;
        for round in 0..200u64 {
            // Entries only: no delta 0 pair that a threshold could touch.
            rec.enter(fid(1), ts(round * 10)).unwrap();
            if round % 37 == 36 {
                rec.flush();
            }
            while policy == Policy::Streaming && cons.pending() > 1 {
                t = check_lap_buffer(&cons.pop().unwrap(), seconds, k, Some(t));
                k += 1;
            }
        }
        rec.flush();
        assert_eq!(rec.records_dropped(), 0);
        let finished = i64::from(rec.stats().buffers_finished);
        assert!(finished > 9, "{policy:?}: several laps");
        if policy == Policy::Streaming {
            while let Some(b) = cons.pop() {
                t = check_lap_buffer(&b, seconds, k, Some(t));
                k += 1;
            }
            assert_eq!((t, k), (2_000, finished));
        } else {
            // The newest buffers, in order.
            let mut kept = 0;
            rec.for_each_buffer(|_| kept += 1);
            // Every buffer finished is kept or counted as overwritten
            // once, whether the straight switch or a flush took its slot.
            let overwritten = i64::from(rec.stats().buffers_overwritten);
            assert_eq!(overwritten, finished - kept);
            let mut k = finished - kept;
            let mut t = None;
            rec.for_each_buffer(|b| {
                t = Some(check_lap_buffer(b, seconds, k, t));
                k += 1;
            });
            assert_eq!((t, k), (Some(2_000), finished));
        }
    }
}

/// The first function ids of the buffers `for_each_buffer` gives, in order.
fn buffer_ids(rec: &mut Recorder<'_, '_>) -> ([u32; 8], usize) {
    let mut seen = [0u32; 8];
    let mut count = 0;
    rec.for_each_buffer(|b| {
        seen[count] = first_function_id(b).unwrap();
        count += 1;
    });
    (seen, count)
}

#[test]
fn flight_recorder_gives_only_its_own_buffers_before_its_first_lap() {
    let mut storage = [0u8; 4 * 128];
    let slots = [Slot::NEW; 4];
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    {
        let (mut rec, _) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
        assert_eq!(buffer_ids(&mut rec).1, 0);
        for buffer in 1..=2u32 {
            rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
            rec.flush();
        }
        // Two finished, detached: the two, oldest first.
        let (seen, count) = buffer_ids(&mut rec);
        assert_eq!(&seen[..count], [1, 2]);
        // And the current buffer last.
        rec.enter(fid(3), ts(3)).unwrap();
        let (seen, count) = buffer_ids(&mut rec);
        assert_eq!(&seen[..count], [1, 2, 3]);
        for buffer in 4..=6u32 {
            rec.flush();
            rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
        }
        let (seen, count) = buffer_ids(&mut rec);
        assert_eq!(&seen[..count], [3, 4, 5, 6]);
    }
    // A new recorder of the same ring: none of the old one's buffers.
    let (mut rec, _) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
    assert_eq!(buffer_ids(&mut rec).1, 0);
    rec.enter(fid(7), ts(7)).unwrap();
    rec.flush();
    let (seen, count) = buffer_ids(&mut rec);
    assert_eq!(&seen[..count], [7]);
    // The ring's counters run on (the first recorder overwrote two
    // buffers); the old buffers the new one wrote over are not counted.
    assert_eq!(rec.stats().buffers_overwritten, 2);
}

#[test]
fn flight_recorder_keeps_the_newest_buffers_across_the_wrap() {
    let mut storage = [0u8; 3 * 128];
    let slots = [Slot::NEW; 3];
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).unwrap();
    let (mut rec, mut cons) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
    start_sequence_at(&mut rec, &mut cons, u32::MAX - 4);
    for buffer in 1..=7u32 {
        rec.enter(fid(buffer), ts(u64::from(buffer))).unwrap();
        rec.flush();
    }
    let mut seen = [0u32; 4];
    let mut count = 0;
    rec.for_each_buffer(|b| {
        seen[count] = first_function_id(b).unwrap();
        count += 1;
    });
    assert_eq!(&seen[..count], [5, 6, 7]);
    assert_eq!(rec.stats().buffers_overwritten, 4);
}

#[test]
fn streaming_drops_when_consumer_is_behind_and_marks_the_loss() {
    let mut storage = [0u8; 2 * 128];
    let slots = [Slot::NEW; 2];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let (mut rec, mut cons) = ring.split(RecorderConfig::new(WriterConfig::new(1), 1000));
    let mut t = 0;
    let mut dropped = 0;
    for _ in 0..40 {
        t += 1;
        if rec.enter(fid(1), ts(t)).is_err() {
            dropped += 1;
        }
    }
    assert!(dropped > 0);
    assert_eq!(rec.stats().records_dropped, dropped);
    assert_eq!(cons.pending(), 2);
    // Free one buffer: the next record lands in a buffer that starts with the loss.
    drop(cons.pop().unwrap());
    rec.enter(fid(1), ts(t + 1)).unwrap();
    rec.flush();
    let older = cons.pop().unwrap();
    assert!(!older.windows(16).any(|w| w == b"flightrec: lost "));
    drop(older);
    let b = cons.pop().unwrap();
    let text = format_loss(dropped);
    assert!(b.windows(text.1).any(|w| w == &text.0[..text.1]));
    drop(b);
    assert!(cons.pop().is_none());
}
