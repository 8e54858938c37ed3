//! The GDB/RTT client against a hostile server (`gdb_stub::Hostile`): endless
//! console output, noise instead of acknowledgements, silence, trickled replies,
//! bad checksums, a reply without end, and control blocks that claim a huge
//! channel or one past the end of the address space. Each case must end with an
//! error that names what happened, quoting at most a few hundred escaped bytes,
//! within its time limit (a regression fails instead of hanging).

use std::io;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use flightrec_host::link::gdb::GdbClient;
use flightrec_host::link::rtt::{Layout, RttReader, Symbol, MAX_POLL_BYTES};
use flightrec_testkit::gdb_stub::{Hostile, MemoryStub, StubConfig};
use flightrec_testkit::target_image::{
    control_block_image, elf_with_symbols, Layout as ImageLayout,
};

const BASE: u64 = 0x2000_0000;
const LAYOUT: Layout = Layout {
    pointer_size: 4,
    big_endian: false,
};
const IMAGE_LAYOUT: ImageLayout = ImageLayout {
    pointer_size: 4,
    big_endian: false,
};
/// Offsets in the 32-bit control block.
const BUFFER_PTR: usize = 28;
const SIZE: usize = 32;
const WRITE: usize = 36;
const READ: usize = 40;
/// The client's timeout for each reply in these cases.
const TIMEOUT: Duration = Duration::from_secs(2);

/// Runs `f` on a thread and fails when it takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the case ended without a result"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("took longer than {limit:?}"),
    }
}

/// A diagnostic a user can read: short, and no control byte of the server's.
fn assert_readable(err: &io::Error) {
    let text = err.to_string();
    assert!(text.len() < 600, "{} bytes: {text:.600}", text.len());
    assert!(!text.chars().any(char::is_control), "{text:?}");
}

/// Connects, handshakes, then reads 64 bytes at BASE through a stub misbehaving
/// as `how` from the first `m` packet on; returns the error and how long it took.
fn read_through(config: StubConfig) -> (io::Error, Duration) {
    let stub = MemoryStub::spawn_with(config).unwrap();
    let mut gdb = GdbClient::connect(&stub.address(), TIMEOUT).unwrap();
    gdb.handshake().unwrap();
    let started = Instant::now();
    let err = gdb.read_memory(BASE, 64).unwrap_err();
    let took = started.elapsed();
    assert_readable(&err);
    // The figure for the record (`cargo test --test gdb_hostile -- --nocapture`).
    eprintln!("{:.0} ms to: {err}", took.as_secs_f64() * 1e3);
    (err, took)
}

fn ram() -> StubConfig {
    StubConfig::new(BASE, vec![0; 256])
}

#[test]
fn endless_console_output_ends_the_wait() {
    within(Duration::from_secs(10), || {
        let (err, took) = read_through(ram().hostile(b"m", Hostile::EndlessConsole));
        assert!(err.to_string().contains("console output"), "{err}");
        assert!(took <= TIMEOUT + Duration::from_millis(500), "{took:?}");
    });
}

#[test]
fn noise_instead_of_an_ack_ends_the_wait() {
    within(Duration::from_secs(10), || {
        let (err, took) = read_through(ram().hostile(b"m", Hostile::NoiseForAck));
        let text = err.to_string();
        assert!(
            text.contains("no acknowledgement") && text.contains("neither `+` nor `-`"),
            "{text}"
        );
        // The noise is quoted, escaped: its ESC shows as `\x1b`.
        assert!(text.contains("\\x1b[2J"), "{text}");
        assert!(took <= TIMEOUT + Duration::from_millis(500), "{took:?}");
    });
}

#[test]
fn silence_times_out() {
    within(Duration::from_secs(10), || {
        let (err, took) = read_through(ram().hostile(b"m", Hostile::Silent));
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(
            err.to_string().contains("no acknowledgement of a packet"),
            "{err}"
        );
        assert!(
            took >= TIMEOUT && took <= TIMEOUT + Duration::from_millis(500),
            "{took:?}"
        );
    });
}

#[test]
fn a_trickled_reply_is_bounded_by_one_timeout() {
    within(Duration::from_secs(10), || {
        // 132 bytes 50 ms apart: 6.6 s, more than the 2 s a reply may take,
        // though a byte comes every 50 ms.
        let (err, took) =
            read_through(ram().hostile(b"m", Hostile::Trickle(Duration::from_millis(50))));
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(err.to_string().contains("no reply"), "{err}");
        assert!(took <= TIMEOUT + Duration::from_millis(500), "{took:?}");
    });
    within(Duration::from_secs(10), || {
        // A short reply trickled fast enough is taken.
        let stub = MemoryStub::spawn_with(
            StubConfig::new(BASE, b"abcd".to_vec())
                .hostile(b"m", Hostile::Trickle(Duration::from_millis(20))),
        )
        .unwrap();
        let mut gdb = GdbClient::connect(&stub.address(), TIMEOUT).unwrap();
        gdb.handshake().unwrap();
        assert_eq!(gdb.read_memory(BASE, 4).unwrap(), b"abcd");
    });
}

#[test]
fn bad_checksums_are_named() {
    for terse in [false, true] {
        within(Duration::from_secs(10), move || {
            let mut config = ram().hostile(b"m", Hostile::BadChecksum);
            if terse {
                config = config.terse();
            }
            let (err, took) = read_through(config);
            let text = err.to_string();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{text}");
            assert!(
                text.contains("with a bad checksum"),
                "terse {terse}: {text}"
            );
            assert!(!text.contains("no reply"), "{text}");
            assert!(took < TIMEOUT, "{took:?}");
        });
    }
    // A server that answers the very first packet with a bad checksum.
    within(Duration::from_secs(10), || {
        let stub = MemoryStub::spawn_with(ram().hostile(b"", Hostile::BadChecksum)).unwrap();
        let mut gdb = GdbClient::connect(&stub.address(), TIMEOUT).unwrap();
        let err = gdb.handshake().unwrap_err();
        assert!(err.to_string().contains("bad checksum"), "{err}");
        assert_readable(&err);
    });
}

#[test]
fn a_reply_without_end_is_refused() {
    within(Duration::from_secs(10), || {
        let (err, took) = read_through(ram().hostile(b"m", Hostile::EndlessReply));
        assert!(
            err.to_string().contains("a reply longer than 65536 bytes"),
            "{err}"
        );
        assert!(took < TIMEOUT, "{took:?}");
    });
}

/// A ready control block at BASE whose channel descriptor is changed by `edit`.
fn block_stub(size: u32, edit: impl FnOnce(&mut Vec<u8>)) -> MemoryStub {
    let mut ram = control_block_image(BASE, size, IMAGE_LAYOUT);
    edit(&mut ram);
    MemoryStub::spawn(BASE, ram).unwrap()
}

fn attach(stub: &MemoryStub, symbol_size: u64) -> io::Result<RttReader> {
    let symbol = Symbol {
        address: BASE,
        size: symbol_size,
    };
    RttReader::attach(&stub.address(), symbol, LAYOUT, TIMEOUT)
}

/// The largest `m` the client asked the stub for, in bytes.
fn largest_read(stub: &MemoryStub) -> u64 {
    stub.packets()
        .iter()
        .filter_map(|p| {
            let text = std::str::from_utf8(p.strip_prefix(b"m")?).ok()?;
            u64::from_str_radix(text.split_once(',')?.1, 16).ok()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_huge_channel_is_refused_not_read() {
    within(Duration::from_secs(10), || {
        let stub = block_stub(64, |ram| {
            ram[SIZE..SIZE + 4].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
            ram[WRITE..WRITE + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        });
        let err = attach(&stub, 0).unwrap_err();
        assert_readable(&err);
        assert!(
            err.to_string()
                .contains("claims an up-channel of 4294967295 bytes, more than"),
            "{err}"
        );
        // Only the control block's header was read.
        assert!(largest_read(&stub) <= 64, "{}", largest_read(&stub));
    });
}

#[test]
fn a_channel_larger_than_its_symbol_is_refused() {
    within(Duration::from_secs(10), || {
        // The ELF says the control block (and its buffer) takes 72 bytes; the
        // block claims a 64-byte buffer starting at byte 48.
        let stub = block_stub(64, |_| {});
        let err = attach(&stub, 72).unwrap_err();
        assert!(
            err.to_string()
                .contains("claims an up-channel of 64 bytes, more than 24 (what the ELF's _SEGGER_RTT (72 bytes) holds"),
            "{err}"
        );
        // With the right size, it is read.
        let stub = block_stub(64, |_| {});
        attach(&stub, 48 + 64).unwrap();
    });
}

#[test]
fn a_channel_past_the_address_space_is_refused() {
    within(Duration::from_secs(10), || {
        let stub = block_stub(64, |ram| {
            ram[BUFFER_PTR..BUFFER_PTR + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        });
        let err = attach(&stub, 0).unwrap_err();
        assert!(
            err.to_string()
                .contains("more than 16 (the end of the 32-bit address space)"),
            "{err}"
        );
    });
}

#[test]
fn one_poll_reads_at_most_its_cap() {
    within(Duration::from_secs(30), || {
        // A full 200 KiB channel that wraps: read 1000, write 999.
        let size = 200 * 1024u32;
        let mut ram = control_block_image(BASE, size, IMAGE_LAYOUT);
        let data = ram.len() - size as usize;
        for (i, b) in ram[data..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        ram[WRITE..WRITE + 4].copy_from_slice(&999u32.to_le_bytes());
        ram[READ..READ + 4].copy_from_slice(&1000u32.to_le_bytes());
        let stub = MemoryStub::spawn_with(StubConfig::new(BASE, ram).terse()).unwrap();
        let mut rtt = attach(&stub, 0).unwrap();
        let mut got = Vec::new();
        let mut polls = 0;
        loop {
            let before = got.len();
            rtt.poll(&mut got).unwrap();
            let n = (got.len() - before) as u64;
            assert!(n <= MAX_POLL_BYTES, "{n}");
            polls += 1;
            if n == 0 {
                break;
            }
        }
        assert_eq!(got.len(), size as usize - 1);
        assert_eq!(polls, 5); // 64 + 64 + 64 + 8 KiB - 1, then nothing
        let expected: Vec<u8> = (1000..size as usize)
            .chain(0..999)
            .map(|i| (i % 251) as u8)
            .collect();
        assert!(got == expected, "the bytes differ");
        assert!(largest_read(&stub) <= 4096);
    });
}

#[test]
fn a_channel_larger_than_its_buffer_symbol_is_refused() {
    use flightrec_host::link::rtt::{stream, GdbSettings, StreamEvent};
    use std::sync::{atomic::AtomicBool, Arc};

    within(Duration::from_secs(10), || {
        // SEGGER's layout: the buffer is a static of its own (here at byte 48
        // of the image, 32 bytes by the ELF), the channel claims 64.
        let dir = tempfile::tempdir().unwrap();
        let elf = dir.path().join("fw.elf");
        let buffer = BASE as u32 + 48;
        for (buffer_size, refused) in [(32, true), (64, false)] {
            std::fs::write(
                &elf,
                elf_with_symbols(&[
                    ("_SEGGER_RTT", BASE as u32, 48),
                    ("_SEGGER_RTT_up_buffer", buffer, buffer_size),
                ]),
            )
            .unwrap();
            let stub = MemoryStub::spawn_with(
                StubConfig::new(BASE, control_block_image(BASE, 64, IMAGE_LAYOUT))
                    .running(|_| false),
            )
            .unwrap();
            let settings = GdbSettings::new(&stub.address(), &elf);
            let cancel = Arc::new(AtomicBool::new(false));
            let mut ready = false;
            let result = stream(&settings, &cancel, &mut |ev| {
                ready |= matches!(ev, StreamEvent::Ready);
                true
            });
            if refused {
                let err = result.unwrap_err();
                assert!(
                    err.to_string().contains(
                        "claims an up-channel of 64 bytes, more than 32 (what the ELF's symbol at 0x20000030 (32 bytes) holds"
                    ),
                    "{err}"
                );
                assert!(!ready);
                assert!(largest_read(&stub) <= 64);
            } else {
                result.unwrap();
                assert!(ready);
            }
        }
    });
}

#[test]
fn a_huge_unparsable_reply_is_quoted_short_and_escaped() {
    use std::io::{Read, Write};
    within(Duration::from_secs(10), || {
        // A server answering every packet with 56,000 bytes of text and colour
        // escapes: the handshake's `?` cannot parse it.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let body = b"zz\x1b[31m".repeat(8_000);
            let sum = body.iter().fold(0u8, |s, &b| s.wrapping_add(b));
            let mut reply = b"+$".to_vec();
            reply.extend_from_slice(&body);
            reply.extend_from_slice(format!("#{sum:02x}").as_bytes());
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 || (buf[..n].contains(&b'#') && s.write_all(&reply).is_err()) {
                    return;
                }
            }
        });
        let mut gdb = GdbClient::connect(&address, TIMEOUT).unwrap();
        let err = gdb.handshake().unwrap_err();
        assert_readable(&err);
        let text = err.to_string();
        assert!(
            text.contains("unexpected reply to ?: \"zz\\x1b[31mzz")
                && text.ends_with("... (56000 bytes)"),
            "{text}"
        );
    });
}
