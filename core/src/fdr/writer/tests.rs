use super::*;

proptest::proptest! {
    /// `function_without_calls` either writes exactly what `function` writes
    /// or declines and leaves the writer as it was, so the sleds' fast path
    /// followed by the full path on a decline writes the same trace as the
    /// full path alone. Steps: an action, an id, a time step (sometimes past
    /// 32 bits, sometimes backwards) and the CPU.
    #[test]
    fn function_without_calls_writes_what_function_writes(
        threshold in proptest::prop_oneof![proptest::strategy::Just(0u64), 1u64..400],
        extents in proptest::bool::ANY,
        steps in proptest::collection::vec(
            (0u8..4, 1u32..6, proptest::prop_oneof![
                8 => 0u64..300,
                1 => (1u64 << 32)..(1u64 << 33),
                1 => proptest::strategy::Just(u64::MAX - 5),
            ], proptest::prop_oneof![9 => proptest::strategy::Just(0u16), 1 => 0u16..3]),
            1..120,
        ),
    ) {
        let cfg = WriterConfig::new(1).with_threshold_ticks(threshold);
        let (mut a, mut b) = ([0u8; 512], [0u8; 512]);
        let mut full = BufferWriter::new(&mut a, &cfg, Walltime::default()).unwrap();
        let mut fast = BufferWriter::new(&mut b, &cfg, Walltime::default()).unwrap();
        if !extents {
            full.defer_extents();
            fast.defer_extents();
        }
        let mut tsc = 0u64;
        for (action, id, step, cpu) in steps {
            let action = [
                FunctionAction::Enter,
                FunctionAction::Exit,
                FunctionAction::TailExit,
                FunctionAction::EnterArg,
            ][usize::from(action)];
            tsc = tsc.wrapping_add(step);
            let t = Timestamp { tsc, cpu };
            let id = FunctionId::new(id).unwrap();
            let expected = full.function(action, id, t);
            let before = (fast.as_bytes().to_vec(), fast.pos(), fast.latest_tsc, fast.undo_start);
            let got = if fast.function_without_calls(action, id, t) {
                Ok(())
            } else {
                let after = (fast.as_bytes().to_vec(), fast.pos(), fast.latest_tsc, fast.undo_start);
                proptest::prop_assert_eq!(&before, &after, "a decline changed the writer");
                fast.function(action, id, t)
            };
            proptest::prop_assert_eq!(got, expected);
            proptest::prop_assert_eq!(fast.as_bytes(), full.as_bytes());
        }
    }
}

/// The word stores of strict-alignment targets write the same bytes as the
/// unaligned stores (run here on the host, where `put_word` uses the latter).
#[test]
fn aligned_stores_match_unaligned_ones() {
    #[repr(align(8))]
    struct Aligned([u8; 64]);
    let word = 0x0123_4567_89ab_cdef_u64;
    for extents in [false, true] {
        for pos in [16, 24, 48, 56] {
            let mut a = Aligned([0x55; 64]);
            // The preamble leaves the extents' high bytes zero.
            a.0[5..9].fill(0);
            let mut expected = a.0;
            expected[pos..pos + 8].copy_from_slice(&word.to_le_bytes());
            if extents {
                expected[1..9].copy_from_slice(&((pos + 8 - 16) as u64).to_le_bytes());
            }
            // SAFETY: `pos + 8 <= 64`, bytes 1..9 are inside the array, which is
            // 8-aligned and borrowed exclusively here; `pos` is a multiple of 4.
            unsafe { store_aligned(a.0.as_mut_ptr(), pos, word, extents) };
            assert_eq!(a.0, expected, "pos {pos}, extents {extents}");
        }
    }
}

const W0: Walltime = Walltime {
    seconds: 0,
    micros: 0,
};

fn ts(tsc: u64) -> Timestamp {
    Timestamp { tsc, cpu: 0 }
}

fn fid(n: u32) -> FunctionId {
    FunctionId::new(n).unwrap()
}

/// The fast path of a function record (extents deferred) and the general one
/// (extents with every record) write the same bytes, whatever comes between the
/// records: payloads of every length mod 4 (which move the position off a
/// word), CPU changes, long gaps, threshold elision, a full buffer.
#[test]
fn fast_and_general_paths_write_the_same_bytes() {
    #[repr(align(8))]
    struct Aligned([u8; 512]);
    for threshold in [0, 5] {
        for payload_len in 1..=8 {
            let cfg = WriterConfig::new(1)
                .with_pid(2)
                .with_threshold_ticks(threshold);
            let mut fast_buf = Aligned([0; 512]);
            let mut general_buf = Aligned([0; 512]);
            let mut fast = BufferWriter::new(&mut fast_buf.0, &cfg, W0).unwrap();
            fast.defer_extents();
            let mut general = BufferWriter::new(&mut general_buf.0, &cfg, W0).unwrap();
            let payload = [0x5a; 8];
            let mut tsc = 100u64;
            for i in 0..64u32 {
                let t = Timestamp {
                    tsc,
                    cpu: if i % 23 == 22 { 1 } else { 0 },
                };
                let action = FunctionAction::from_bits((i % 4) as u8).unwrap();
                let a = fast.function(action, fid(i % 3 + 1), t);
                let b = general.function(action, fid(i % 3 + 1), t);
                assert_eq!(a, b, "record {i}");
                if i % 9 == 4 {
                    let a = fast.custom_event(t, &payload[..payload_len]);
                    let b = general.custom_event(t, &payload[..payload_len]);
                    assert_eq!(a, b);
                }
                tsc += if i % 17 == 16 {
                    1 << 33
                } else {
                    u64::from(i % 7)
                };
            }
            fast.sync_extents();
            assert_eq!(
                fast.as_bytes(),
                general.as_bytes(),
                "payloads of {payload_len}"
            );
        }
    }
}

/// The split path of 32-bit targets writes the bytes of the 64-bit path, and
/// leaves the writer in the same state, for times that cross high words with
/// small steps, jump far, go backwards, start near `u64::MAX` (high word
/// `NO_EPOCH`), change CPU, interleave events and fill the buffer.
#[test]
fn split_and_wide_paths_write_the_same_bytes() {
    #[repr(align(8))]
    struct Aligned([u8; 640]);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut fulls = 0;
    // Fewer rounds under Miri, which runs each a thousand times slower.
    let rounds: u32 = if cfg!(miri) { 48 } else { 400 };
    for round in 0..rounds {
        let threshold = [0, 5, 40][(round % 3) as usize];
        let cfg = WriterConfig::new(1)
            .with_pid(2)
            .with_threshold_ticks(threshold);
        let mut split_buf = Aligned([0; 640]);
        let mut wide_buf = Aligned([0; 640]);
        let mut tried_buf = Aligned([0; 640]);
        let mut split = BufferWriter::new(&mut split_buf.0, &cfg, W0).unwrap();
        let mut wide = BufferWriter::new(&mut wide_buf.0, &cfg, W0).unwrap();
        // The call-free split store first, `function_word_split` when it declines.
        let mut tried = BufferWriter::new(&mut tried_buf.0, &cfg, W0).unwrap();
        if round % 2 == 0 {
            split.defer_extents();
            wide.defer_extents();
            tried.defer_extents();
        }
        let start = [0, (1 << 32) - 300, u64::MAX - 2_000, next()][(round % 4) as usize];
        let mut tsc = start;
        for i in 0..90u32 {
            let r = next();
            let cpu = if r % 29 == 0 { (r >> 8) as u16 % 3 } else { 0 };
            let t = Timestamp { tsc, cpu };
            let action = FunctionAction::from_bits(((r >> 16) % 4) as u8).unwrap();
            let id = fid(((r >> 20) % 3) as u32 + 1);
            let low = FunctionRecord::low_word(action, id);
            let a = split.function_word_split(low, t);
            let b = wide.function_word_wide(low, t);
            assert_eq!(a, b, "round {round}, record {i}");
            let state = |w: &BufferWriter| (w.pos(), w.latest_tsc, w.latest_cpu, w.undo_start);
            let before = state(&tried);
            let c = match tried.try_split_store(low, t) {
                Tried::Stored => Ok(()),
                declined => {
                    assert_eq!(state(&tried), before, "a decline changed the writer");
                    if declined == Tried::Full {
                        // No room, and the time comes back from its low
                        // word, on either target's way.
                        assert!(tried.lacks_room_for_function(low));
                        assert_eq!(tried.time_of_full(t.tsc as u32), t);
                        let on_epoch = (u64::from(tried.epoch) << 32) | (t.tsc & 0xFFFF_FFFF);
                        assert_eq!((on_epoch, t.cpu), (t.tsc, 0));
                        fulls += 1;
                    }
                    tried.function_word_split(low, t)
                }
            };
            assert_eq!(c, a, "round {round}, record {i}");
            assert_eq!(state(&tried), state(&split), "round {round}, record {i}");
            if r % 31 == 1 {
                let len = ((r >> 24) % 9) as usize;
                let payload = [0x5a; 8];
                let a = split.custom_event(t, &payload[..len]);
                let b = wide.custom_event(t, &payload[..len]);
                let c = tried.custom_event(t, &payload[..len]);
                assert_eq!(a, b);
                assert_eq!(a, c);
            }
            assert_eq!(
                (
                    split.pos(),
                    split.latest_tsc,
                    split.latest_cpu,
                    split.undo_start
                ),
                (
                    wide.pos(),
                    wide.latest_tsc,
                    wide.latest_cpu,
                    wide.undo_start
                ),
                "round {round}, record {i}"
            );
            // The split path's fast ends follow `epoch`.
            let exit = if threshold != 0 { 0 } else { split.fast_end };
            let (valid, zero) = (split.epoch != NO_EPOCH, split.epoch == 0);
            let ends = |on: bool| if on { (split.fast_end, exit) } else { (0, 0) };
            assert_eq!(
                (
                    (split.fast_end_epoch, split.fast_end_exit),
                    (split.fast_end_zero, split.fast_end_zero_exit)
                ),
                (ends(valid), ends(zero)),
                "round {round}, record {i}"
            );
            tsc = match (r >> 32) % 16 {
                0 => tsc.wrapping_add(1 << 32),
                1 => tsc.wrapping_add(u64::from(u32::MAX)),
                2 => tsc.wrapping_sub((r >> 40) % 100),
                3 => tsc.wrapping_add((r >> 36) % (1 << 28)),
                _ => tsc.wrapping_add((r >> 40) % 60),
            };
        }
        split.sync_extents();
        wide.sync_extents();
        tried.sync_extents();
        assert_eq!(split.as_bytes(), wide.as_bytes(), "round {round}");
        assert_eq!(tried.as_bytes(), split.as_bytes(), "round {round}");
    }
    assert!(fulls > rounds / 4, "{fulls} full buffers");
}

/// A recorder's straight buffer switch, `restart_with_function` from a full
/// buffer, leaves the next buffer's bytes and the writer's whole state as
/// `start` and the general path (`function_word_across`) do, for every
/// version, with and without a Pid and a threshold, on every action and on
/// times across the high word.
#[test]
fn restart_writes_what_start_and_the_first_record_write() {
    #[repr(align(8))]
    struct Aligned([u8; 400]);
    let versions = [
        Version::V1,
        Version::V2,
        Version::V3,
        Version::V4,
        Version::V5,
    ];
    let times = [0, 7, (1 << 32) - 1, 1 << 32, u64::MAX - 3, u64::MAX];
    let walltime = Walltime {
        seconds: 1_700_000_123,
        micros: 999_999,
    };
    let early_at = |tsc| Timestamp { tsc, cpu: 1 };
    let mut on_epochs = 0;
    for (round, (((&version, pid), action), &tsc)) in versions
        .iter()
        .flat_map(|v| [(v, None), (v, Some(9))])
        .flat_map(|x| (0..4u8).map(move |a| (x, a)))
        .flat_map(|x| times.iter().map(move |t| (x, t)))
        .enumerate()
    {
        let cpu = [0, 0, 3][round % 3];
        let mut cfg = WriterConfig::new(7)
            .with_version(version)
            .with_threshold_ticks([0, 5][round % 2]);
        if let Some(pid) = pid {
            cfg = cfg.with_pid(pid);
        }
        let action = FunctionAction::from_bits(action).unwrap();
        let low = FunctionRecord::low_word(action, fid(round as u32 % 5 + 1));
        let t = Timestamp { tsc, cpu };
        let mut a_buf = Aligned([0xEE; 400]);
        let mut b_buf = Aligned([0x11; 400]);
        let (a_old, a_next) = a_buf.0.split_at_mut(200);
        let (_, b_next) = b_buf.0.split_at_mut(200);
        // `a` fills a buffer, then restarts on the next.
        let mut a = BufferWriter::detached();
        // The next buffer had its preamble written by an earlier start
        // (with another wall time) and then records.
        let next = a_next.as_mut_ptr();
        // SAFETY: `next` is `a_next`'s 200 bytes, used only through `a`.
        a.start(
            unsafe { core::slice::from_raw_parts_mut(next, 200) },
            &cfg,
            W0,
            true,
        )
        .unwrap();
        while a
            .function(FunctionAction::Enter, fid(3), early_at(9))
            .is_ok()
        {}
        a.finish_with_events();
        a.start(a_old, &cfg, W0, true).unwrap();
        // Every other round on CPU 0, the last records on `t`'s high word
        // (not `NO_EPOCH`): the restart `on_epoch`, as a context's recorder
        // makes it with the time of a record that found its buffer full.
        let on_epoch = cpu == 0 && (tsc >> 32) as u32 != NO_EPOCH && round % 4 < 2;
        let early = if on_epoch {
            Timestamp {
                tsc: tsc & !u64::from(u32::MAX),
                cpu: 0,
            }
        } else {
            Timestamp { tsc: 3, cpu: 1 }
        };
        a.function(FunctionAction::Enter, fid(2), early).unwrap();
        while a.function(FunctionAction::Exit, fid(2), early).is_ok() {}
        assert!(a.restarts_on(200) && a.has_events(), "round {round}");
        if on_epoch {
            assert_eq!(a.epoch, (tsc >> 32) as u32, "round {round}");
        }
        on_epochs += usize::from(on_epoch);
        // SAFETY: `a_next` is 200 bytes, as `a`'s buffer, is not used while
        // `a` lives, and holds the preamble of `a`'s start with `cfg`.
        unsafe { a.restart_with_function(next, walltime, low, t, on_epoch) };
        // `b` starts there and writes the record.
        let mut b = BufferWriter::detached();
        b.start(b_next, &cfg, walltime, true).unwrap();
        b.function_word_across(low, t).unwrap();
        let state = |w: &BufferWriter| {
            (
                (w.pos(), w.len, w.limit, w.body_start, w.undo_start),
                (w.version, w.extents_every_record, w.threshold),
                (w.latest_tsc, w.latest_cpu, w.epoch),
                (
                    w.fast_end.saturating_sub(w.base.addr()),
                    w.fast_end_epoch.saturating_sub(w.base.addr()),
                    w.fast_end_exit.saturating_sub(w.base.addr()),
                    w.fast_end_zero.saturating_sub(w.base.addr()),
                    w.fast_end_zero_exit.saturating_sub(w.base.addr()),
                ),
            )
        };
        assert_eq!(state(&a), state(&b), "round {round}");
        // The extents are deferred: the count is exact once synced (the
        // general path writes it with the NewCPUId, the restart at the end).
        a.sync_extents();
        b.sync_extents();
        assert_eq!(a.as_bytes(), b.as_bytes(), "round {round}");
        // And both go on alike.
        let later = Timestamp {
            tsc: tsc.wrapping_add(9),
            cpu,
        };
        assert_eq!(
            a.exit(fid(4), later),
            b.exit(fid(4), later),
            "round {round}"
        );
        a.sync_extents();
        b.sync_extents();
        assert_eq!(a.as_bytes(), b.as_bytes(), "round {round}");
    }
    assert!(on_epochs > 20, "{on_epochs} restarts on the epoch");
}

/// The byte stores that keep bare-metal payload copies off `memcpy`
/// store what a plain copy does (run under Miri too).
#[test]
fn byte_stores_copy_what_a_copy_copies() {
    let src: [u8; 7] = [1, 2, 3, 0xFF, 0, 9, 8];
    let mut a = [0xEEu8; 9];
    let mut b = [0xEEu8; 9];
    copy_bytes(&mut a[1..], &src);
    b[1..8].copy_from_slice(&src);
    assert_eq!(a, b);
    let mut c = [0xEEu8; 9];
    for (d, &v) in c[1..].iter_mut().zip(&src) {
        put_byte_volatile(d, v);
    }
    assert_eq!(c, b);
}

#[test]
fn preamble_layout_v5() {
    let mut buf = [0xAAu8; 128];
    let cfg = WriterConfig::new(101).with_pid(4242);
    let w = BufferWriter::new(
        &mut buf,
        &cfg,
        Walltime {
            seconds: 7,
            micros: 8,
        },
    )
    .unwrap();
    assert_eq!(w.len(), 64);
    let b = w.as_bytes();
    assert_eq!(b[0], 0x0f);
    assert_eq!(u64::from_le_bytes(b[1..9].try_into().unwrap()), 48);
    assert_eq!(b[16], 0x01);
    assert_eq!(&b[17..21], &101i32.to_le_bytes());
    assert_eq!(b[32], 0x09);
    assert_eq!(b[48], 0x13);
}

#[test]
fn too_small_buffer_is_an_error() {
    let cfg = WriterConfig::new(1).with_pid(1);
    let mut buf = [0u8; 87];
    assert_eq!(
        BufferWriter::new(&mut buf, &cfg, W0).err(),
        Some(BufferTooSmall {
            len: 87,
            needed: 88
        })
    );
    let mut buf = [0u8; 88];
    assert!(BufferWriter::new(&mut buf, &cfg, W0).is_ok());
}

#[test]
fn first_event_writes_new_cpu_and_delta_zero() {
    let mut buf = [0u8; 256];
    let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), W0).unwrap();
    w.enter(fid(1), ts(1000)).unwrap();
    let b = w.as_bytes();
    assert_eq!(b[48], 0x05); // NewCPUId after the 48-byte preamble (no pid)
    assert_eq!(u64::from_le_bytes(b[51..59].try_into().unwrap()), 1000);
    assert_eq!(&b[64..72], &[0x10, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn full_leaves_buffer_unchanged() {
    let cfg = WriterConfig::new(1);
    let mut buf = [0u8; 100];
    let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
    let mut t = 0;
    while w.enter(fid(1), ts(t)).is_ok() {
        t += 1;
    }
    let mut before = [0u8; 100];
    let n = w.len();
    before[..n].copy_from_slice(w.as_bytes());
    assert_eq!(w.exit(fid(1), ts(t)), Err(Full));
    assert_eq!(w.custom_event(ts(t), b"x"), Err(WriteError::Full));
    assert_eq!(
        w.enter_with_args(fid(1), ts(t), &[1]),
        Err(WriteError::Full)
    );
    assert_eq!(w.as_bytes(), &before[..n]);
}

/// `put_word` stores without bounds checks: for every version, with and without
/// elision, buffer sizes around the minimum and every way to fill them, nothing
/// is written outside the buffer and each filled buffer reads back whole. (Miri
/// runs this too: `cargo +nightly miri test -p flightrec-core --lib fdr::writer`.)
#[test]
fn unchecked_stores_stay_inside_the_buffer() {
    use crate::fdr::decoder::decode_record;
    const GUARD: u8 = 0xA5;
    for version in [
        Version::V1,
        Version::V2,
        Version::V3,
        Version::V4,
        Version::V5,
    ] {
        for threshold in [0, 3] {
            let cfg = WriterConfig::new(1)
                .with_version(version)
                .with_threshold_ticks(threshold);
            let min = cfg.min_buffer_len();
            for len in min..min + 3 * FUNC + 1 {
                let mut area = [GUARD; 256];
                let mut records = 0;
                {
                    let mut w = BufferWriter::new(&mut area[8..8 + len], &cfg, W0).unwrap();
                    let mut t = 0;
                    loop {
                        t += 2;
                        let kept = if records % 2 == 0 {
                            w.enter(fid(1), ts(t))
                        } else {
                            w.exit(fid(1), ts(t + 5 * (records % 3)))
                        };
                        if kept.is_err() {
                            break;
                        }
                        records += 1;
                    }
                    let n = w.len();
                    let bytes = w.finish();
                    assert!(bytes.len() <= len && n <= len, "{version:?} len {len}");
                    // The buffer reads back record by record to its end.
                    let mut at = 0;
                    while at < bytes.len() {
                        let (_, size) = decode_record(version, &bytes[at..]).unwrap();
                        at += size;
                    }
                    assert_eq!(at, bytes.len());
                }
                assert!(records > 0);
                assert!(
                    area[..8].iter().all(|&b| b == GUARD),
                    "{version:?} len {len}"
                );
                assert!(
                    area[8 + len..].iter().all(|&b| b == GUARD),
                    "{version:?} len {len}: wrote past the buffer"
                );
            }
        }
    }
}

#[test]
fn oversized_records_are_errors() {
    let mut buf = [0u8; 256];
    let mut w = BufferWriter::new(&mut buf, &WriterConfig::new(1), W0).unwrap();
    assert_eq!(
        w.custom_event(ts(0), &[0u8; 200]),
        Err(WriteError::TooLarge { needed: 232 })
    );
    assert_eq!(w.custom_event(ts(0), &[]), Err(WriteError::EmptyPayload));
    assert!(matches!(
        w.enter_with_args(fid(1), ts(0), &[0; 20]),
        Err(WriteError::TooLarge { .. })
    ));
    assert!(!w.has_events());
}

#[test]
fn elides_short_calls_only() {
    let mut buf = [0u8; 512];
    let cfg = WriterConfig::new(1).with_threshold_ticks(100);
    let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
    w.enter(fid(1), ts(1000)).unwrap(); // NewCPUId + enter
    let after_outer = w.len();
    w.enter(fid(2), ts(1010)).unwrap();
    w.enter(fid(3), ts(1020)).unwrap();
    w.exit(fid(3), ts(1030)).unwrap(); // erases enter 3
    w.exit(fid(2), ts(1040)).unwrap(); // erases enter 2
    assert_eq!(w.len(), after_outer);
    // The NewCPUId before enter 1 stays; the entry itself is erasable.
    w.exit(fid(1), ts(1099)).unwrap();
    assert_eq!(w.len(), after_outer - 8);
    w.enter(fid(4), ts(2000)).unwrap();
    w.exit(fid(4), ts(2500)).unwrap(); // long: kept
    assert_eq!(w.len(), after_outer + 8);
    // An argument entry is never erased, nor is what precedes it.
    w.enter(fid(5), ts(2600)).unwrap();
    w.enter_with_args(fid(6), ts(2601), &[7]).unwrap();
    let n = w.len();
    w.exit(fid(6), ts(2602)).unwrap();
    w.exit(fid(5), ts(2603)).unwrap();
    assert_eq!(w.len(), n + 16);
}

#[test]
fn exit_of_other_function_does_not_elide() {
    let mut buf = [0u8; 512];
    let cfg = WriterConfig::new(1).with_threshold_ticks(100);
    let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
    w.enter(fid(9), ts(0)).unwrap();
    w.enter(fid(1), ts(10)).unwrap();
    let n = w.len();
    w.exit(fid(2), ts(20)).unwrap();
    assert_eq!(w.len(), n + 8);
}

#[test]
fn tail_called_short_frames_are_erased_together() {
    let mut buf = [0u8; 512];
    let cfg = WriterConfig::new(1).with_threshold_ticks(100);
    let mut w = BufferWriter::new(&mut buf, &cfg, W0).unwrap();
    w.enter(fid(9), ts(0)).unwrap();
    let base = w.len();
    w.enter(fid(1), ts(10)).unwrap();
    w.tail_exit(fid(1), ts(20)).unwrap(); // erases enter 1 at once (short)
    assert_eq!(w.len(), base);
    // A long first frame keeps its pair, the short tail-called one is erased.
    w.enter(fid(2), ts(100)).unwrap();
    w.enter(fid(5), ts(110)).unwrap();
    w.exit(fid(5), ts(300)).unwrap(); // long: kept, ends the undoable run
    w.tail_exit(fid(2), ts(310)).unwrap();
    w.enter(fid(3), ts(320)).unwrap();
    w.exit(fid(3), ts(330)).unwrap();
    assert_eq!(w.len(), base + 4 * 8);
}
