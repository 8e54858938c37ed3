//! The GDB client's packet layer (`flightrec_host::link::gdb`) against a
//! scripted server: the input is what the server says, one response per chunk
//! the client sends, over a real TCP connection on 127.0.0.1.
//!
//! The first byte picks the client's calls after the handshake (memory reads
//! of 1 to 64 bytes, a write, resume and interrupt, detach); the rest is a list
//! of responses (`len:u8 bytes`), sent in order, each after the client's next
//! packet or interrupt byte (its acknowledgements do not count), or after 5 ms
//! of its silence; the server closes the connection after the last one. Anything goes: acks, noise, packets with good or bad
//! checksums, run-length encoding, console output, partial packets.
//!
//! Checked: no panic; every call ends (the whole input within 5 s: every wait
//! has a deadline); a read that succeeds returns exactly the bytes asked for;
//! every error message is short (the server's bytes quoted at most a few hundred)
//! and holds no control character of the server's.
#![no_main]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use flightrec_host::link::gdb::GdbClient;
use libfuzzer_sys::fuzz_target;

/// Each wait of the client: short, so that silence ends quickly.
const TIMEOUT: Duration = Duration::from_millis(100);

fn responses(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let len = usize::from(len).min(rest.len());
        out.push(rest[..len].to_vec());
        data = &rest[len..];
    }
    out
}

/// The end of the client's first packet (`$...#xx`) or interrupt (`0x03`) in
/// `heard`, if it is all there.
fn packet_end(heard: &[u8]) -> Option<usize> {
    heard.iter().enumerate().find_map(|(i, &b)| match b {
        0x03 => Some(i + 1),
        b'#' if i + 2 < heard.len() => Some(i + 3),
        _ => None,
    })
}

fn check(err: &std::io::Error) {
    let text = err.to_string();
    assert!(text.len() < 700, "{} bytes: {text:.700}", text.len());
    assert!(!text.chars().any(char::is_control), "{text:?}");
}

fuzz_target!(|data: &[u8]| {
    let Some((&ops, script)) = data.split_first() else {
        return;
    };
    let script = responses(script);
    let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
        return;
    };
    let Ok(address) = listener.local_addr().map(|a| a.to_string()) else {
        return;
    };
    let server = std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let _ = s.set_nodelay(true);
        let _ = s.set_read_timeout(Some(Duration::from_millis(5)));
        let mut buf = [0u8; 4096];
        let mut heard = Vec::new();
        for response in script {
            // The client's next packet (or its silence), then the response.
            loop {
                if let Some(end) = packet_end(&heard) {
                    heard.drain(..end);
                    break;
                }
                match s.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => heard.extend_from_slice(&buf[..n]),
                    Err(_) => break,
                }
            }
            if s.write_all(&response).is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let outcome = (|| -> std::io::Result<()> {
        let mut gdb = GdbClient::connect(&address, TIMEOUT)?;
        gdb.handshake()?;
        let len = usize::from(ops & 0x3f) + 1;
        let got = gdb.read_memory(0x2000_0000, len)?;
        assert_eq!(got.len(), len);
        if ops & 0x40 != 0 {
            gdb.write_memory(0x2000_0000, &[0xa5; 24])?;
        }
        if ops & 0x80 != 0 {
            gdb.resume()?;
            gdb.interrupt()?;
        }
        gdb.detach()
    })();
    // What a seed makes the client do, for whoever writes one.
    if std::env::var_os("GDB_CLIENT_SHOW").is_some() {
        eprintln!("gdb_client: {outcome:?}");
    }
    if let Err(e) = &outcome {
        check(e);
    }
    let _ = server.join();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
});
