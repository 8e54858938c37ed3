//! The RTT control block and writer with threads and a growing model: a writer
//! moved to the thread that flushes, random writes and reads in every mode, and a
//! blocking writer that waits for a reader thread. Kept out of `core/src` (they
//! need `std`) so the core stays `no_std` under test; Miri runs them (`.ci/run`).
#![cfg(feature = "rtt")]

use embedded_io::Write;
use flightrec_core::link::rtt::{ControlBlock, Mode, RttError};

#[test]
fn the_writer_can_move_to_the_context_that_flushes() {
    fn send<T: Send>(_: &T) {}
    static CB: ControlBlock<16> = ControlBlock::new();
    let w = CB.take_writer(Mode::NonBlocking).unwrap();
    send(&w);
    let got = std::thread::spawn(move || {
        let mut w = w;
        w.write(b"abc")
    })
    .join()
    .unwrap();
    assert_eq!(got, Ok(3));
    let mut out = [0u8; 4];
    assert_eq!(CB.host_read(&mut out), 3);
}

/// Random writes and reads, in every mode, against a model queue: every byte
/// written is read back in order, every refused byte is counted, the offsets
/// never leave the buffer.
#[test]
fn writes_and_reads_match_a_model() {
    let mut seed = 0x1234_5678u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for mode in [Mode::NonBlocking, Mode::Trim] {
        let cb: ControlBlock<37> = ControlBlock::new();
        let mut w = cb.take_writer(mode).unwrap();
        let mut model: Vec<u8> = Vec::new();
        let mut got: Vec<u8> = Vec::new();
        let mut refused = 0usize;
        let mut counter = 0u8;
        for _ in 0..if cfg!(miri) { 120 } else { 5000 } {
            if next() % 2 == 0 {
                let len = (next() % 50) as usize;
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        counter = counter.wrapping_add(1);
                        counter
                    })
                    .collect();
                let free = w.free();
                match w.write(&bytes) {
                    Ok(n) => {
                        assert!(n == len || (mode == Mode::Trim && n == free));
                        model.extend_from_slice(&bytes[..n]);
                        refused += len - n;
                    }
                    Err(RttError::Full) => {
                        assert!(free < len);
                        assert!(mode == Mode::NonBlocking || free == 0);
                        refused += len;
                    }
                    Err(e) => panic!("{e}"),
                }
                assert_eq!(w.bytes_dropped() as usize, refused);
            } else {
                let mut out = [0u8; 23];
                let take = (next() % 24) as usize;
                let n = cb.host_read(&mut out[..take]);
                got.extend_from_slice(&out[..n]);
            }
            assert!(w.pending() <= 36);
            assert_eq!(w.pending() + w.free(), 36);
        }
        let mut out = [0u8; 64];
        let n = cb.host_read(&mut out);
        got.extend_from_slice(&out[..n]);
        assert_eq!(got, model);
    }
}

#[test]
fn blocking_writes_wait_for_the_reader() {
    static CB: ControlBlock<64> = ControlBlock::new();
    let mut w = CB.take_writer(Mode::Blocking).unwrap();
    let len = if cfg!(miri) { 200 } else { 10_000u32 };
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let expect = data.clone();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut out = [0u8; 17];
        while got.len() < expect.len() {
            let n = CB.host_read(&mut out);
            got.extend_from_slice(&out[..n]);
            std::thread::yield_now();
        }
        assert_eq!(got, expect);
    });
    w.write_all(&data).unwrap();
    w.flush().unwrap();
    assert_eq!(w.pending(), 0);
    assert_eq!(w.bytes_dropped(), 0);
    reader.join().unwrap();
}
