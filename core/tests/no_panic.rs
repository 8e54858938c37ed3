//! The core's public functions on extreme caller input: values at the ends of
//! their types, fields outside their documented range, arguments in the wrong
//! order. Tests build with overflow checks, so an overflow here is a panic.
//!
//! Each `regression_*` test is an input that panicked before its fix; the
//! property tests then sweep the same functions over their whole input range
//! and check the results, not only the absence of a panic.

use core::num::NonZeroU64;

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::{decode_record, verify};
use flightrec_core::fdr::header::HEADER_SIZE;
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::{Walltime, WriterConfig};
use flightrec_core::fdr::{FunctionId, Version};
use flightrec_core::link::{FrameEncoder, FrameHead, FrameKind, CRC_LEN, HEAD_LEN};
use flightrec_core::trace2::{BufferTooSmall, LineBuf};
use proptest::prelude::*;

/// `advanced_by_ticks` computed in `i128`, clamped like the API promises.
fn walltime_reference(start: Walltime, ticks: u64, tps: u64) -> Walltime {
    let secs = u128::from(ticks / tps);
    let extra = u128::from(ticks % tps) * 1_000_000 / u128::from(tps);
    let micros = u128::from(start.micros) + extra;
    let seconds = i128::from(start.seconds) + (secs + micros / 1_000_000) as i128;
    Walltime {
        seconds: seconds.min(i128::from(i64::MAX)) as i64,
        micros: (micros % 1_000_000) as u32,
    }
}

#[test]
fn regression_walltime_micros_past_a_second_at_the_last_tick() {
    // `micros` is a public field; at one tick a second the whole-second count of
    // u64::MAX ticks is u64::MAX, and adding the carried seconds overflowed.
    let start = Walltime {
        seconds: 0,
        micros: u32::MAX,
    };
    let end = start.advanced_by_ticks(u64::MAX, NonZeroU64::MIN);
    assert_eq!(end.seconds, i64::MAX);
    assert_eq!(end.micros, u32::MAX % 1_000_000);
}

#[test]
fn walltime_micros_past_a_second_carry_into_the_seconds() {
    let start = Walltime {
        seconds: 7,
        micros: 2_500_000,
    };
    let khz = NonZeroU64::new(1_000).unwrap();
    assert_eq!(
        start.advanced_by_ticks(600, khz),
        Walltime {
            seconds: 10,
            micros: 100_000
        }
    );
}

#[test]
fn regression_recorder_epoch_with_micros_past_a_second() {
    // The same overflow, reached through a ring: the first buffer's wall time is
    // derived from the configured epoch and the record's timestamp.
    let epoch = Walltime {
        seconds: 0,
        micros: u32::MAX,
    };
    let cfg = RecorderConfig::new(WriterConfig::new(1), 1).with_epoch(epoch, 0);
    const BUFFER: usize = 128;
    let mut storage = [0u8; 2 * BUFFER];
    let slots = [Slot::NEW; 2];
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let (mut rec, mut consumer) = ring.split(cfg);
    let last = Timestamp {
        tsc: u64::MAX,
        cpu: 0,
    };
    rec.enter(FunctionId::new(1).unwrap(), last).unwrap();
    rec.flush();
    let buffer = consumer.pop().unwrap();
    let (walltime, _) = decode_record(Version::V5, &buffer[32..]).unwrap();
    assert_eq!(
        walltime,
        Record::Walltime {
            seconds: i64::MAX,
            micros: 0
        }
    );
    let mut file = cfg.file_header(BUFFER).to_bytes().to_vec();
    file.extend_from_slice(&buffer);
    verify(&file).unwrap();
}

#[test]
fn regression_pad_to_with_a_start_past_the_end() {
    // `self.pos - start` underflowed; such a start now counts as an empty field.
    let mut buf = [0u8; 16];
    let mut l = LineBuf::new(&mut buf);
    l.put(b"ab").unwrap();
    l.pad_to(usize::MAX, 4).unwrap();
    assert_eq!(l.as_bytes(), b"ab    ");
    // And the padding is still checked against the buffer.
    assert_eq!(l.pad_to(100, 11), Err(BufferTooSmall));
    assert_eq!(l.as_bytes(), b"ab    ");
}

#[test]
fn regression_max_encoded_len_of_a_huge_payload() {
    // `HEAD_LEN + payload_len + CRC_LEN` overflowed for lengths near usize::MAX.
    assert_eq!(FrameEncoder::max_encoded_len(usize::MAX), usize::MAX);
    assert_eq!(
        FrameEncoder::max_encoded_len(usize::MAX - HEAD_LEN - CRC_LEN),
        usize::MAX
    );
}

#[test]
fn max_encoded_len_is_unchanged_for_real_payloads() {
    // The formula the saturating one replaced: lead, frame, one code byte per
    // 254 bytes and the first, and the closing delimiter.
    for len in 0..4_000 {
        let frame = HEAD_LEN + len + CRC_LEN;
        assert_eq!(
            FrameEncoder::max_encoded_len(len),
            1 + frame + frame / 254 + 2
        );
    }
}

proptest! {
    #[test]
    fn walltime_advances_exactly_or_saturates(
        seconds in prop_oneof![any::<i64>(), Just(i64::MAX), Just(i64::MIN)],
        micros in prop_oneof![0u32..1_000_000, any::<u32>()],
        ticks in prop_oneof![any::<u64>(), Just(u64::MAX), 0u64..1_000],
        tps in prop_oneof![Just(1u64), any::<u64>().prop_map(|t| t.max(1)), Just(u64::MAX)],
    ) {
        let start = Walltime { seconds, micros };
        let got = start.advanced_by_ticks(ticks, NonZeroU64::new(tps).unwrap());
        prop_assert_eq!(got, walltime_reference(start, ticks, tps));
        prop_assert!(got.micros < 1_000_000);
        prop_assert!(got.seconds >= seconds);
    }

    #[test]
    fn pad_to_pads_from_any_start(
        before in 0usize..20,
        start in prop_oneof![0usize..40, Just(usize::MAX)],
        width in prop_oneof![0usize..40, Just(usize::MAX)],
    ) {
        let mut buf = [0u8; 48];
        let mut l = LineBuf::new(&mut buf);
        l.fill(b'x', before).unwrap();
        let used = before.saturating_sub(start);
        let want = before.saturating_add(width.saturating_sub(used));
        match l.pad_to(start, width) {
            Ok(()) => {
                prop_assert_eq!(l.len(), want);
                prop_assert!(l.as_bytes()[before..].iter().all(|&b| b == b' '));
            }
            Err(BufferTooSmall) => {
                prop_assert!(want > 48);
                prop_assert_eq!(l.len(), before);
            }
        }
    }

    #[test]
    fn max_encoded_len_bounds_every_frame(len in 0usize..2_000, fill in any::<u8>()) {
        let payload = vec![fill; len];
        let head = FrameHead { kind: FrameKind::FdrBuffer, source: 1, seq: 2 };
        let bound = FrameEncoder::max_encoded_len(len);
        let mut out = vec![0u8; bound + 8];
        let mut enc = FrameEncoder::new(head, &payload).with_leading_delimiter(true);
        let n = enc.fill(&mut out);
        prop_assert!(enc.is_done());
        prop_assert!(n <= bound, "{} bytes for a bound of {}", n, bound);
    }

    /// Any configuration a caller can build (ids, thresholds, clock rates, epochs
    /// with out-of-range microseconds) and any timestamps: nothing panics and
    /// every buffer that comes out verifies.
    #[test]
    fn recorder_takes_any_config_and_timestamps(
        version in 1u16..=5,
        tid in any::<u32>(),
        pid in any::<Option<u32>>(),
        threshold in prop_oneof![Just(0u64), any::<u64>(), 0u64..100],
        tps in prop_oneof![Just(0u64), Just(1u64), any::<u64>()],
        epoch_seconds in any::<i64>(),
        epoch_micros in any::<u32>(),
        epoch_tsc in any::<u64>(),
        ops in prop::collection::vec((0u8..8, any::<u64>(), any::<u16>(), 1u32..64), 0..64),
    ) {
        let writer = WriterConfig {
            version: Version::from_number(version).unwrap(),
            tid,
            pid,
            threshold_ticks: threshold,
        };
        let epoch = Walltime { seconds: epoch_seconds, micros: epoch_micros };
        let cfg = RecorderConfig::new(writer, tps).with_epoch(epoch, epoch_tsc);
        let mut storage = vec![0u8; 3 * 160];
        let slots = [Slot::NEW; 3];
        let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
        let (mut rec, mut consumer) = ring.split(cfg);
        let mut file = rec.file_header().to_bytes().to_vec();
        for (op, tsc, cpu, id) in ops {
            let ts = Timestamp { tsc, cpu };
            let id = FunctionId::new(id).unwrap();
            let _ = match op {
                0 => rec.enter(id, ts),
                1 => rec.exit(id, ts),
                2 => rec.tail_exit(id, ts),
                3 => rec.enter_with_args(id, ts, &[tsc, u64::from(cpu)]),
                4 => rec.custom_event(ts, &tsc.to_le_bytes()),
                5 => rec.typed_event(ts, cpu, &tsc.to_le_bytes()),
                _ => {
                    rec.flush();
                    Ok(())
                }
            };
            while let Some(buffer) = consumer.pop() {
                file.extend_from_slice(&buffer);
            }
        }
        rec.flush();
        while let Some(buffer) = consumer.pop() {
            file.extend_from_slice(&buffer);
        }
        if file.len() > HEADER_SIZE {
            if let Err(e) = verify(&file) {
                return Err(TestCaseError::fail(format!("{e}")));
            }
        }
    }
}
