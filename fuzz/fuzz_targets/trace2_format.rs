//! Arbitrary Trace2 events with arbitrary field values through all three
//! formatters, full and brief: the generator and the promises checked are
//! `flightrec_testkit::trace2_gen` and `flightrec_testkit::trace2_check`, the
//! same as the property tests' (`core/tests/trace2_props.rs`).
#![no_main]

use flightrec_testkit::{trace2_check, trace2_gen};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(input) = trace2_gen::from_bytes(data) {
        trace2_check::check(&input);
    }
});
