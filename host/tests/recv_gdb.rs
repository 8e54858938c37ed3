//! `recv` over a GDB server: a simulated target writes a captured link into an RTT
//! up-channel a little at a time (wrapping around its small buffer many times),
//! the stub serves its memory, and `recv::run` must write the same files as from
//! the capture itself. Also the errors a user meets: no server, no ELF, a target
//! that exits before its control block is ready.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use flightrec_core::link::{FrameKind, LinkWriter};
use flightrec_host::link::collect::Collector;
use flightrec_host::link::recv::{run, Input, RecvOptions};
use flightrec_host::link::rtt::GdbSettings;
use flightrec_host::progress::Progress;
use flightrec_testkit::gdb_stub::{MemoryStub, StubConfig};
use flightrec_testkit::target_image::{control_block_image, elf_with_symbol, Layout};

const BASE: u64 = 0x2000_0000;
const SIZE: usize = 200;
const LAYOUT: Layout = Layout {
    pointer_size: 4,
    big_endian: false,
};
/// Offsets in the 32-bit control block.
const WRITE: usize = 36;
const READ: usize = 40;
const BUFFER: usize = 48;

fn word(mem: &[u8], at: usize) -> usize {
    u32::from_le_bytes(mem[at..at + 4].try_into().unwrap()) as usize
}

/// A link of `copies` FDR files' worth of frames from source 3, and the file one
/// copy makes.
fn captured_link(copies: usize) -> (Vec<u8>, Vec<u8>) {
    let trace = include_bytes!("../../testdata/xray/crafted-v5.xray");
    let mut buf = vec![0u8; 1 << 20];
    let mut link = LinkWriter::new(&mut buf[..]);
    link.send(FrameKind::FileHeader, 3, &trace[..32]).unwrap();
    for _ in 0..copies {
        link.send(FrameKind::FdrBuffer, 3, &trace[32..]).unwrap();
    }
    link.send_trace2_line(0, b"exit code:0\n").unwrap();
    let mut file = trace[..32].to_vec();
    for _ in 0..copies {
        file.extend_from_slice(&trace[32..]);
    }
    let unused = link.into_inner().len();
    let len = buf.len() - unused;
    buf.truncate(len);
    (buf, file)
}

/// A program that puts up to `per_run` bytes of `wire` into the channel at each
/// run (as much as fits), and exits once everything was written and read.
fn target(wire: Vec<u8>, per_run: usize) -> impl FnMut(&mut [u8]) -> bool + Send {
    let mut sent = 0;
    move |mem| {
        let (mut write, read) = (word(mem, WRITE), word(mem, READ));
        if sent == wire.len() && write == read {
            return false;
        }
        let mut n = 0;
        while n < per_run && sent < wire.len() && (write + 1) % SIZE != read {
            mem[BUFFER + write] = wire[sent];
            write = (write + 1) % SIZE;
            sent += 1;
            n += 1;
        }
        mem[WRITE..WRITE + 4].copy_from_slice(&(write as u32).to_le_bytes());
        true
    }
}

fn settings(address: &str, dir: &std::path::Path) -> GdbSettings {
    let elf = dir.join("fw.elf");
    std::fs::write(&elf, elf_with_symbol("_SEGGER_RTT", BASE as u32, 0)).unwrap();
    let mut s = GdbSettings::new(address, elf);
    s.poll_interval = Duration::from_millis(1);
    s.attach_timeout = Duration::from_secs(5);
    s
}

fn recv(
    input: Input,
    dir: &std::path::Path,
) -> std::io::Result<flightrec_host::link::recv::RecvReport> {
    let opts = RecvOptions {
        input,
        idle_timeout: Some(Duration::from_secs(20)),
        max_payload: 1 << 16,
    };
    let mut collector = Collector::new(dir, dir.join("trace2.txt"))?;
    let stop = Arc::new(AtomicBool::new(false));
    run(&opts, &mut collector, &stop, &Progress::new(true))
}

#[test]
fn recv_over_gdb_writes_what_the_capture_gives() {
    for terse in [false, true] {
        let (wire, file) = captured_link(40);
        let wire_len = wire.len();
        let mut config = StubConfig::new(BASE, control_block_image(BASE, SIZE as u32, LAYOUT))
            .running(target(wire, 150));
        if terse {
            config = config.terse();
        }
        let stub = MemoryStub::spawn_with(config).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let report = recv(
            Input::Gdb(settings(&stub.address(), dir.path())),
            dir.path(),
        )
        .unwrap();
        assert_eq!(report.bytes_read, wire_len as u64, "terse: {terse}");
        assert!(wire_len > 20 * SIZE, "the channel wraps many times");
        let l = report.link;
        assert_eq!(
            (l.crc_failures, l.malformed, l.frames_lost, l.bytes_skipped),
            (0, 0, 0, 0)
        );
        assert_eq!(
            std::fs::read(dir.path().join("source-3.xray")).unwrap(),
            file
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("trace2.txt")).unwrap(),
            "exit code:0\n"
        );
        let mem = stub.join();
        assert_eq!(word(&mem, READ), word(&mem, WRITE));
    }
}

#[test]
fn errors_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();

    // No GDB server listening: refused until the attach timeout, then an error.
    let mut s = settings("127.0.0.1:1", dir.path());
    s.attach_timeout = Duration::from_millis(200);
    let err = recv(Input::Gdb(s), dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("127.0.0.1:1: cannot connect to the GDB server"),
        "{err}"
    );

    // No ELF.
    let stub = MemoryStub::spawn(BASE, vec![0; 64]).unwrap();
    let mut s = settings(&stub.address(), dir.path());
    s.elf = dir.path().join("missing.elf");
    let err = recv(Input::Gdb(s), dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}: ", dir.path().join("missing.elf").display())),
        "{err}"
    );

    // A target that exits before taking its RTT writer.
    let stub =
        MemoryStub::spawn_with(StubConfig::new(BASE, vec![0; 64]).running(|_| false)).unwrap();
    let err = recv(
        Input::Gdb(settings(&stub.address(), dir.path())),
        dir.path(),
    )
    .unwrap_err();
    assert!(
        err.to_string().ends_with("the target exited (status 0)"),
        "{err}"
    );

    // A control block whose offsets are out of range.
    let mut ram = control_block_image(BASE, SIZE as u32, LAYOUT);
    ram[WRITE..WRITE + 4].copy_from_slice(&9999u32.to_le_bytes());
    let stub = MemoryStub::spawn(BASE, ram).unwrap();
    let err = recv(
        Input::Gdb(settings(&stub.address(), dir.path())),
        dir.path(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("offsets are out of range"),
        "{err}"
    );
}

/// The client's side of acknowledgements, against a scripted server: a packet the
/// server refuses (`-`) is sent again, and a reply with a bad checksum is refused
/// and taken when it comes again.
#[test]
fn refused_packets_are_sent_again_and_bad_replies_refused() {
    use flightrec_host::link::gdb::{checksum, GdbClient, Stop};
    use std::io::{Read, Write};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        // One byte at a time, so that an ack and the packet after it are told apart.
        let read_until = |s: &mut std::net::TcpStream, pred: &dyn Fn(&[u8]) -> bool| {
            let mut got = Vec::new();
            let mut byte = [0u8; 1];
            while !pred(&got) {
                s.read_exact(&mut byte).unwrap();
                got.push(byte[0]);
            }
            got
        };
        let packet =
            |body: &[u8]| format!("${}#{:02x}", String::from_utf8_lossy(body), checksum(body));
        let ends_packet = |b: &[u8]| b.len() >= 3 && b[b.len() - 3] == b'#';
        // qSupported, refused: the client sends it again.
        let first = read_until(&mut s, &ends_packet);
        s.write_all(b"-").unwrap();
        let again = read_until(&mut s, &ends_packet);
        assert_eq!(first, again);
        // Accepted; the reply goes out with a bad checksum first.
        s.write_all(b"+$PacketSize=1000#00").unwrap();
        assert_eq!(read_until(&mut s, &|b| !b.is_empty()), b"-");
        s.write_all(packet(b"PacketSize=1000").as_bytes()).unwrap();
        assert_eq!(read_until(&mut s, &|b| !b.is_empty()), b"+");
        // `?`.
        let q = read_until(&mut s, &ends_packet);
        assert_eq!(q, packet(b"?").as_bytes());
        s.write_all(b"+").unwrap();
        s.write_all(packet(b"S05").as_bytes()).unwrap();
        assert_eq!(read_until(&mut s, &|b| !b.is_empty()), b"+");
    });
    let mut gdb = GdbClient::connect(&address, Duration::from_secs(5)).unwrap();
    assert_eq!(gdb.handshake().unwrap(), Stop::Signal(5));
    server.join().unwrap();
}
