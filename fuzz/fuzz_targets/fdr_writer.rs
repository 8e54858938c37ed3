//! Arbitrary writer operations into small rings: no panic, and what comes out always
//! verifies.
#![no_main]

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::decoder::verify;
use flightrec_core::fdr::ring::{Policy, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId, Version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&setup, ops)) = data.split_first() else { return };
    let version = Version::from_number(u16::from(setup % 5) + 1).unwrap();
    let buffer_size = 64 + usize::from(setup / 5) * 8;
    let threshold = u64::from(setup & 3) * 7;
    let mut storage = vec![0u8; 2 * buffer_size];
    let slots = [Slot::NEW, Slot::NEW];
    let policy = if setup & 0x80 != 0 { Policy::Streaming } else { Policy::FlightRecorder };
    let Ok(mut ring) = Ring::new(&mut storage, &slots, policy) else { return };
    let cfg = RecorderConfig::new(
        WriterConfig::new(1).with_pid(2).with_version(version).with_threshold_ticks(threshold),
        1000,
    );
    let (mut rec, mut cons) = ring.split(cfg);
    let mut file = rec.file_header().to_bytes().to_vec();
    let mut tsc = 0u64;
    for chunk in ops.chunks(4) {
        let [op, a, b, c] = match *chunk {
            [op, a, b, c] => [op, a, b, c],
            _ => return,
        };
        tsc = match op >> 5 {
            0 => tsc.wrapping_sub(u64::from(a)),
            1 => tsc.wrapping_add(u64::from(a) << 30),
            _ => tsc.wrapping_add(u64::from(a)),
        };
        let ts = Timestamp { tsc, cpu: u16::from(b & 3) };
        let id = FunctionId::new(u32::from(c)).unwrap();
        let payload = &ops[..usize::from(b) % (ops.len() + 1)];
        let _ = match op & 7 {
            0 => rec.function(FunctionAction::Enter, id, ts),
            1 => rec.function(FunctionAction::Exit, id, ts),
            2 => rec.function(FunctionAction::TailExit, id, ts),
            3 => rec.function(FunctionAction::EnterArg, id, ts),
            4 => rec.enter_with_args(id, ts, &[u64::from(a); 3][..usize::from(b % 4)]),
            5 => rec.custom_event(ts, payload),
            6 => rec.typed_event(ts, u16::from(a), payload),
            _ => {
                rec.flush();
                Ok(())
            }
        };
        while let Some(buf) = cons.pop() {
            file.extend_from_slice(&buf);
        }
    }
    rec.for_each_buffer(|b| file.extend_from_slice(b));
    if file.len() > 32 {
        if let Err(e) = verify(&file) {
            panic!("writer output does not verify: {e}");
        }
    }
});
