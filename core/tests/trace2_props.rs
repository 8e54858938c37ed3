//! Property tests of the Trace2 formatters over arbitrary inputs: every line is
//! exactly one line, event lines are valid JSON that round-trips the strings
//! (including control characters, quotes and non-UTF-8 bytes), short buffers
//! give an error and never a partial line, nothing panics.
//!
//! The arbitrary events and the promises checked on them are the fuzz
//! target's (`fuzz/fuzz_targets/trace2_format.rs`), from `flightrec-testkit`.

use flightrec_core::trace2::{Event, Format, LineCtx, Msg, RegionError, RegionStack, Target};
use flightrec_testkit::trace2_check::{check, raw_string_field, unescape_git_json};
use flightrec_testkit::trace2_gen::trace2_inputs;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_event_keeps_the_formatters_promises(input in trace2_inputs()) {
        check(&input);
    }

    #[test]
    fn json_lines_parse_and_round_trip_strings(
        key in proptest::collection::vec(any::<u8>(), 0..40),
        value in proptest::collection::vec(any::<u8>(), 0..40),
        thread in proptest::collection::vec(any::<u8>(), 0..30),
        t in any::<u64>(),
    ) {
        let ev = Event::Data { t_rel: t, category: b"cat\"\\\x01", key: &key, value: &value };
        let c = LineCtx { t_abs: t, file: b"f\n.c", line: 7, ..LineCtx::new(b"s\x7f\xff", &thread) };
        let mut buf = [0u8; 2048];
        let n = Format::new(Target::Event, false).write_line(&c, &ev, &mut buf).unwrap();
        let line = &buf[..n];
        prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let body = &line[..n - 1];

        // Exact, structural: git's escaping reversed gives the bytes back.
        prop_assert_eq!(unescape_git_json(raw_string_field(body, "key")), key.clone());
        prop_assert_eq!(unescape_git_json(raw_string_field(body, "value")), value.clone());
        prop_assert_eq!(unescape_git_json(raw_string_field(body, "thread")), thread.clone());

        // Valid JSON: bytes >= 0x80 are copied raw, so a non-UTF-8 input is
        // compared after the same lossy mapping of line and input (escapes only
        // touch ASCII, which ends any broken UTF-8 sequence in both alike).
        let text = String::from_utf8_lossy(body);
        let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        prop_assert_eq!(v["key"].as_str().unwrap(), lossy(&key));
        prop_assert_eq!(v["value"].as_str().unwrap(), lossy(&value));
        prop_assert_eq!(v["thread"].as_str().unwrap(), lossy(&thread));
        prop_assert_eq!(v["sid"].as_str().unwrap(), lossy(b"s\x7f\xff"));
        prop_assert_eq!(v["file"].as_str().unwrap(), "f\n.c");
        prop_assert_eq!(v["category"].as_str().unwrap(), "cat\"\\\x01");
        // %.6f of integer microseconds, as a JSON number.
        let want = format!("\"t_rel\":{}.{:06},", t / 1_000_000, t % 1_000_000);
        prop_assert!(body.windows(want.len()).any(|w| w == want.as_bytes()), "{}", want);
        prop_assert!(v["t_rel"].is_number());
    }

    #[test]
    fn json_messages_from_format_args_escape_like_bytes(s in ".*") {
        let c = LineCtx::new(b"s", b"main");
        let fmt = Format::new(Target::Event, true);
        let (mut a, mut b) = ([0u8; 1024], [0u8; 1024]);
        let na = fmt.write_line(&c, &Event::Printf { msg: Some(Msg::Fmt(format_args!("<{s}>"))) }, &mut a).unwrap();
        let owned = format!("<{s}>");
        let nb = fmt.write_line(&c, &Event::Printf { msg: Some(Msg::Bytes(owned.as_bytes())) }, &mut b).unwrap();
        prop_assert_eq!(&a[..na], &b[..nb]);
        let v: serde_json::Value = serde_json::from_slice(&a[..na]).unwrap();
        prop_assert_eq!(v["msg"].as_str().unwrap(), owned);
    }

    #[test]
    fn region_stack_matches_a_counter_model(ops in proptest::collection::vec(any::<bool>(), 0..64), now in 0u64..1_000_000) {
        let mut s = RegionStack::<4>::new(0);
        let mut model: u32 = 1;
        for (i, enter) in ops.into_iter().enumerate() {
            let t = now + i as u64;
            if enter {
                s.enter(t);
                model += 1;
            } else if model == 0 {
                prop_assert_eq!(s.leave(t), Err(RegionError::NoOpenRegion));
            } else {
                let rel = s.leave(t).unwrap();
                prop_assert!(rel <= t);
                model -= 1;
            }
            prop_assert_eq!(s.nesting(), model);
            prop_assert_eq!(s.is_overflowed(), model > 4);
        }
    }
}
