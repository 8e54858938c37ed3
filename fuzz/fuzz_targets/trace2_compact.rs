//! Any bytes as a compact Trace2 event payload (`link::trace2::parse`): no panic;
//! an event that parses is written again by `emit` and parses back to the same
//! record. Then the receiver's side: the payload, after a session, through the
//! host's renderer in git's three formats (no panic, and a session-less or
//! malformed event is counted, never written).
#![no_main]

use flightrec_core::link::trace2::{parse, Put, Session, Str, Trace2};
use flightrec_core::trace2::{Format, Target};
use flightrec_host::link::trace2::{Trace2Renderer, Trace2Strings};
use libfuzzer_sys::fuzz_target;

struct V(Vec<u8>);

impl Put for V {
    fn put(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
}

fuzz_target!(|data: &[u8]| {
    let is_session = matches!(parse(data), Ok(r) if matches!(r.event, Trace2::Session(_)));
    if let Ok(rec) = parse(data) {
        let mut again = V(Vec::new());
        rec.event.emit(rec.ticks, &mut again);
        assert_eq!(parse(&again.0), Ok(rec));
        // Varints are minimal when written, so never longer than what was read.
        assert!(again.0.len() <= data.len());
    }
    let strings = Trace2Strings::from_section(0, b"\0firmware\0workload\0main\0");
    for target in [Target::Event, Target::Perf, Target::Normal] {
        let mut r = Trace2Renderer::new(strings.clone(), Format::new(target, false));
        let mut out = Vec::new();
        // Before any session: counted (or it is the session), not written.
        assert_eq!(r.event(0, data, &mut out), 0);
        let session = Session {
            hz: 12_500_000,
            sid: Str::Bytes(b"sid"),
            thread: Str::Id(19),
        };
        let mut p = V(Vec::new());
        Trace2::Session(session).emit(0, &mut p);
        r.event(0, &p.0, &mut out);
        let n = r.event(0, data, &mut out);
        assert_eq!(n, out.len());
        let s = r.stats();
        assert_eq!(s.events, 3);
        assert!(is_session || s.without_session + s.malformed >= 1);
        if n > 0 {
            assert_eq!(out.last(), Some(&b'\n'));
        }
    }
});
