//! Any bytes through the FDR decoder and verifier: no panic, a file the verifier
//! accepts decodes to the end without an error, and every decoded record encodes
//! back to bytes that decode to the same record (with the CPU of a custom event
//! before version 4 zeroed: that field is only defined from version 4 on, and the
//! encoder writes it as zero).
#![no_main]

use flightrec_core::fdr::decoder::{decode_record, verify, Decoder};
use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::{FileHeader, Version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let verdict = verify(data);
    let Ok(decoder) = Decoder::new(data) else {
        assert!(verdict.is_err(), "verified a file without a header");
        return;
    };
    let header = *decoder.header();
    let version = decoder.version();
    assert_eq!(FileHeader::parse(&header.to_bytes()), Ok(header));
    let mut errors = 0;
    let mut out = Vec::new();
    for d in decoder {
        let d = match d {
            Ok(d) => d,
            Err(_) => {
                errors += 1;
                continue;
            }
        };
        // A BufferExtents cut short by the end of the file is read from its size
        // field alone; it is not a whole record.
        let whole = decode_record(version, &data[d.offset..]);
        if !matches!(d.record, Record::BufferExtents { .. }) || whole.is_ok() {
            assert_eq!(whole.map(|(r, _)| r), Ok(d.record), "at {}", d.offset);
        }
        let len = d.record.encoded_len();
        out.clear();
        out.resize(len, 0xAA);
        assert_eq!(
            d.record.encode(version, &mut out),
            Ok(len),
            "{:?}",
            d.record
        );
        let want = match d.record {
            Record::CustomEvent {
                time: CustomEventTime::Absolute { tsc, .. },
                payload,
            } if version != Version::V4 => Record::CustomEvent {
                time: CustomEventTime::Absolute { tsc, cpu: 0 },
                payload,
            },
            r => r,
        };
        assert_eq!(decode_record(version, &out), Ok((want, len)));
    }
    assert!(errors <= 1, "the decoder went on after an error");
    if verdict.is_ok() {
        assert_eq!(errors, 0, "verified file has a decode error");
    }
});
