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

use super::*;
use crate::link::compact::{pack_metadata, PACKED_MAX};
use crate::link::fast_stuffer::{GATHER, OUT};
use crate::link::frame::{FrameHead, FrameKind};

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
    for n in 0..runs(4_000) {
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
    for n in 0..runs(20_000) {
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

/// Both ways of making a packed metadata record (the one a target does not
/// use is built and checked here) make what `pack_metadata` makes.
#[test]
fn packed_by_words_and_by_bytes_agree() {
    let mut next = xorshift32(0x9E37_79B9);
    for n in 0..runs(20_000) {
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

/// Room for the longest frame and payload the property test makes.
const ROOM: usize = 4096;

/// An FDR buffer of `size` bytes from the core's writer: function records
/// whose ids and gaps `steps` give (varints of one to five bytes, gaps of 0),
/// and a custom event of 1 to 3 bytes where a step says; its length.
fn writer_buffer(steps: &[(u32, u32, bool)], size: usize, out: &mut [u8; 1024]) -> usize {
    use crate::clock::Timestamp;
    use crate::fdr::writer::{BufferWriter, Walltime, WriterConfig};
    use crate::fdr::FunctionId;
    let cfg = WriterConfig::new(3);
    let Ok(mut w) = BufferWriter::new(&mut out[..size], &cfg, Walltime::default()) else {
        return 0;
    };
    let mut tsc = 0u64;
    for (i, &(id, gap, event)) in steps.iter().enumerate() {
        tsc += u64::from(gap);
        let ts = Timestamp { tsc, cpu: 0 };
        let Ok(f) = FunctionId::new(id) else {
            continue;
        };
        let r = if i % 2 == 0 {
            w.enter(f, ts)
        } else {
            w.exit(f, ts)
        };
        if r.is_err() || (event && w.custom_event(ts, &[1, 0, 2][..1 + i % 3]).is_err()) {
            break;
        }
    }
    w.finish().len()
}

/// The reference's frame: the payload [`compact`](crate::link::compact::compact)
/// or [`pack`](crate::link::compact::pack) makes, through the
/// [`FrameEncoder`](crate::link::FrameEncoder) with a leading delimiter (a
/// [`LinkWriter`](crate::link::LinkWriter)'s first frame); its length.
fn reference_frame(buffer: &[u8], packed: bool, head: FrameHead, frame: &mut [u8; ROOM]) -> usize {
    let mut payload = [0u8; ROOM];
    let mut len = 0;
    let mut put = |part: &[u8]| {
        payload[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    };
    if packed {
        crate::link::compact::pack(buffer, &mut put);
    } else {
        crate::link::compact::compact(buffer, &mut put);
    }
    let mut e = crate::link::FrameEncoder::new(head, &payload[..len]).with_leading_delimiter(true);
    let mut n = 0;
    while !e.is_done() {
        n += e.fill(&mut frame[n..]);
    }
    n
}

/// The property test's longest script and byte input; shorter under Miri,
/// which runs it a thousand times slower (its runs still cross the word loads'
/// alignments and every varint width).
const STEPS: usize = if cfg!(miri) { 60 } else { 200 };
const BYTES: usize = if cfg!(miri) { 200 } else { 700 };

proptest::proptest! {
    /// The twin makes the reference's frame: a [`LinkWriter`]'s compact and
    /// packed frames of a writer's buffer (every varint width, gaps of 0,
    /// events between records, runs across block ends), or of any bytes, sent
    /// from any alignment, are what `compact` or `pack` and the frame encoder
    /// make of it.
    #[test]
    fn compact_frames_are_the_reference_s(
        steps in proptest::collection::vec(
            (
                proptest::prop_oneof![
                    4 => 1u32..64,
                    4 => 64u32..8192,
                    1 => 8192u32..(1 << 28),
                ],
                proptest::prop_oneof![
                    1 => proptest::strategy::Just(0u32),
                    4 => 1u32..128,
                    3 => 128u32..16384,
                    1 => 16384u32..u32::MAX,
                ],
                proptest::bool::weighted(0.05),
            ),
            0..STEPS,
        ),
        any_bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..BYTES),
        raw in proptest::bool::weighted(0.2),
        size in 72usize..1024,
        packed in proptest::bool::ANY,
        offset in 0usize..4,
        source in proptest::num::u32::ANY,
    ) {
        let mut buffer = [0u8; 1024];
        let len = if raw {
            buffer[..any_bytes.len()].copy_from_slice(&any_bytes);
            any_bytes.len()
        } else {
            writer_buffer(&steps, size, &mut buffer)
        };
        // The buffer at `offset` from 4-byte alignment.
        #[repr(align(4))]
        struct Aligned([u8; 1028]);
        let mut shifted = Aligned([0xAA; 1028]);
        shifted.0[offset..offset + len].copy_from_slice(&buffer[..len]);
        let buffer = &shifted.0[offset..offset + len];

        let mut twin = [0u8; ROOM];
        let mut to: &mut [u8] = &mut twin;
        let mut link = crate::link::LinkWriter::new(&mut to);
        if packed {
            link.send_buffer_packed(source, buffer).unwrap();
        } else {
            link.send_buffer_compact(source, buffer).unwrap();
        }
        let _ = link.into_inner();
        let n = ROOM - to.len();
        let kind = if packed { FrameKind::FdrPacked } else { FrameKind::FdrCompact };
        let mut reference = [0u8; ROOM];
        let m = reference_frame(buffer, packed, FrameHead { kind, source, seq: 0 }, &mut reference);
        proptest::prop_assert_eq!(&twin[..n], &reference[..m]);
    }
}

/// `n` runs of a loop of checks, or a few dozen under Miri, which runs each
/// a thousand times slower.
fn runs(n: u32) -> u32 {
    if cfg!(miri) {
        n.min(40)
    } else {
        n
    }
}
