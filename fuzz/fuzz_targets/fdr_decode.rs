//! Any bytes through the FDR decoder and verifier: no panic, and a file the
//! verifier accepts decodes to the end without an error.
#![no_main]

use flightrec_core::fdr::decoder::{verify, Decoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let verdict = verify(data);
    if let Ok(decoder) = Decoder::new(data) {
        let mut errors = 0;
        for d in decoder {
            errors += usize::from(d.is_err());
        }
        if verdict.is_ok() {
            assert_eq!(errors, 0, "verified file has a decode error");
        }
    }
});
