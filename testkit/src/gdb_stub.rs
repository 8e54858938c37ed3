//! A small GDB server over a memory image, for testing tools that read a target
//! through the GDB remote protocol (`flightrec_host::link::gdb`, `recv --gdb`) without a board or
//! an emulator. It behaves as QEMU's stub does where that matters: the target is
//! halted on attach, `c` lets it run, a `0x03` stops it with a stop reply, and a
//! packet sent while it runs stops it too and is dropped. While "running", a
//! closure given by the test stands in for the program: it is called on every stop
//! with the memory, and ends the program by returning `false` (the stub then sends
//! `W00` and closes the connection, as QEMU does when the program exits).
//!
//! It can also be hostile ([`Hostile`]): from a given packet on it floods the
//! client with console output, sends noise instead of acknowledgements, says
//! nothing, trickles its replies, sends bad checksums or a reply without end, as
//! broken or unusual servers and links do. A client must end each of these with
//! a clear error within its timeout.
//!
//! Example on [`StubConfig`].

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The GDB remote protocol's packet checksum: the sum of the body's bytes
/// modulo 256.
fn checksum(body: &[u8]) -> u8 {
    body.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// What the program does while it runs: called with the memory at every stop;
/// `false` ends the program.
///
/// ```
/// use flightrec_testkit::gdb_stub::Program;
/// let mut p: Program = Box::new(|mem| { mem[0] += 1; mem[0] < 2 });
/// let mut mem = [0u8; 4];
/// assert!(p(&mut mem));
/// assert!(!p(&mut mem));
/// ```
pub type Program = Box<dyn FnMut(&mut [u8]) -> bool + Send>;

/// How a hostile [`MemoryStub`] misbehaves, from the first packet its trigger
/// names on (see [`StubConfig::hostile`]). Each endless behaviour ends when the
/// client closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hostile {
    /// Acknowledges the packet, then sends console output (`O` packets) without
    /// end instead of its reply (a relayed target that never stops printing).
    EndlessConsole,
    /// Sends bytes that are neither `+` nor `-`, without end, instead of the
    /// acknowledgement.
    NoiseForAck,
    /// Says nothing at all: no acknowledgement, no reply.
    Silent,
    /// Acknowledges the packet, then sends its reply one byte at a time, this far
    /// apart.
    Trickle(Duration),
    /// Acknowledges the packet, then sends its reply with a bad checksum (again
    /// on every `-`).
    BadChecksum,
    /// Acknowledges the packet, then sends a reply that never ends (`$` and hex
    /// digits, no `#`).
    EndlessReply,
}

/// How a [`MemoryStub`] behaves.
///
/// ```
/// use flightrec_host::link::gdb::{GdbClient, Stop};
/// use flightrec_testkit::gdb_stub::{MemoryStub, StubConfig};
/// use std::time::Duration;
///
/// let mut runs = 0;
/// let config = StubConfig::new(0x100, vec![0; 8]).running(move |mem| {
///     runs += 1;
///     mem[0] = runs; // what the program did while it ran
///     runs < 2
/// });
/// let stub = MemoryStub::spawn_with(config).unwrap();
/// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
/// gdb.handshake().unwrap();
/// gdb.resume().unwrap();
/// assert_eq!(gdb.interrupt().unwrap(), Stop::Signal(2));
/// assert_eq!(gdb.read_memory(0x100, 1).unwrap(), [1]);
/// gdb.resume().unwrap();
/// assert_eq!(gdb.interrupt().unwrap(), Stop::Exited(0)); // the program ended
/// assert_eq!(stub.join()[0], 2);
/// ```
pub struct StubConfig {
    base: u64,
    memory: Vec<u8>,
    no_ack: bool,
    rle: bool,
    program: Option<Program>,
    hostile: Option<(Vec<u8>, Hostile)>,
}

impl StubConfig {
    /// `memory` at address `base`, acknowledged mode, no program. Example on
    /// [`StubConfig`].
    pub fn new(base: u64, memory: Vec<u8>) -> Self {
        StubConfig {
            base,
            memory,
            no_ack: false,
            rle: false,
            program: None,
            hostile: None,
        }
    }

    /// Misbehaves as `how` says from the first packet whose body starts with
    /// `trigger` on (every packet after it too; `b""`: from the first).
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use flightrec_testkit::gdb_stub::{Hostile, MemoryStub, StubConfig};
    /// use std::time::Duration;
    /// let config = StubConfig::new(0, vec![0; 16]).hostile(b"m", Hostile::BadChecksum);
    /// let stub = MemoryStub::spawn_with(config).unwrap();
    /// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
    /// gdb.handshake().unwrap();
    /// let err = gdb.read_memory(0, 4).unwrap_err().to_string();
    /// assert!(err.contains("bad checksum"), "{err}");
    /// ```
    pub fn hostile(mut self, trigger: &[u8], how: Hostile) -> Self {
        self.hostile = Some((trigger.to_vec(), how));
        self
    }

    /// Offers `QStartNoAckMode` (as OpenOCD and probe-rs do) and run-length
    /// encodes replies.
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use flightrec_testkit::gdb_stub::{MemoryStub, StubConfig};
    /// use std::time::Duration;
    /// let stub = MemoryStub::spawn_with(StubConfig::new(0, vec![0; 64]).terse()).unwrap();
    /// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
    /// gdb.handshake().unwrap();
    /// assert_eq!(gdb.read_memory(0, 64).unwrap(), vec![0; 64]);
    /// ```
    pub fn terse(mut self) -> Self {
        self.no_ack = true;
        self.rle = true;
        self
    }

    /// The program that runs between stops. Example on [`StubConfig`].
    pub fn running(mut self, program: impl FnMut(&mut [u8]) -> bool + Send + 'static) -> Self {
        self.program = Some(Box::new(program));
        self
    }
}

/// A GDB server on `127.0.0.1` serving one connection. Example on
/// [`StubConfig`].
#[derive(Debug)]
pub struct MemoryStub {
    address: String,
    memory: Arc<Mutex<Vec<u8>>>,
    packets: Arc<Mutex<Vec<Vec<u8>>>>,
    thread: Option<JoinHandle<()>>,
}

impl MemoryStub {
    /// A stub over `memory` at `base` with no program.
    ///
    /// ```
    /// use flightrec_testkit::gdb_stub::MemoryStub;
    /// let stub = MemoryStub::spawn(0x2000_0000, vec![0; 16]).unwrap();
    /// assert!(stub.address().starts_with("127.0.0.1:"));
    /// ```
    pub fn spawn(base: u64, memory: Vec<u8>) -> io::Result<MemoryStub> {
        Self::spawn_with(StubConfig::new(base, memory))
    }

    /// A stub as `config` says. Example on [`StubConfig`].
    pub fn spawn_with(config: StubConfig) -> io::Result<MemoryStub> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?.to_string();
        let memory = Arc::new(Mutex::new(config.memory.clone()));
        let packets = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&memory);
        let log = Arc::clone(&packets);
        let thread = std::thread::spawn(move || {
            if let Ok((stream, _)) = listener.accept() {
                let _ = stream.set_nodelay(true);
                let _ = serve(stream, config, &shared, &log);
            }
        });
        Ok(MemoryStub {
            address,
            memory,
            packets,
            thread: Some(thread),
        })
    }

    /// The bodies of the packets received so far, in order.
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use flightrec_testkit::gdb_stub::MemoryStub;
    /// use std::time::Duration;
    /// let stub = MemoryStub::spawn(0, vec![0; 16]).unwrap();
    /// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
    /// gdb.request(b"?").unwrap();
    /// assert_eq!(stub.packets(), [b"?".to_vec()]);
    /// ```
    pub fn packets(&self) -> Vec<Vec<u8>> {
        self.packets.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// `127.0.0.1:PORT`. Example on [`spawn`](Self::spawn).
    pub fn address(&self) -> String {
        self.address.clone()
    }

    /// Waits for the connection to end and returns the memory. Example on
    /// [`StubConfig`].
    pub fn join(mut self) -> Vec<u8> {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.memory.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

fn send(stream: &mut TcpStream, body: &[u8], rle: bool) -> io::Result<()> {
    let body = if rle { encode_rle(body) } else { body.to_vec() };
    let mut p = Vec::with_capacity(body.len() + 4);
    p.push(b'$');
    p.extend_from_slice(&body);
    p.extend_from_slice(format!("#{:02x}", checksum(&body)).as_bytes());
    stream.write_all(&p)
}

/// Run-length encodes runs of 4 to 97 bytes (the counts GDB allows: not `#`, `$`).
fn encode_rle(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        let mut run = 1;
        while i + run < body.len() && body[i + run] == b && run < 98 {
            run += 1;
        }
        let extra = run - 1;
        let code = (extra + 29) as u8;
        if extra >= 3 && code != b'#' && code != b'$' && code != b'+' && code != b'-' {
            out.push(b);
            out.push(b'*');
            out.push(code);
            i += run;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

fn hex(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .flat_map(|b| format!("{b:02x}").into_bytes())
        .collect()
}

/// A packet with this body and a checksum one off.
fn send_bad(stream: &mut TcpStream, body: &[u8]) -> io::Result<()> {
    let mut p = vec![b'$'];
    p.extend_from_slice(body);
    p.extend_from_slice(format!("#{:02x}", checksum(body).wrapping_add(1)).as_bytes());
    stream.write_all(&p)
}

/// Writes chunks from `next` until the client closes the connection.
fn flood(stream: &mut TcpStream, mut next: impl FnMut() -> Vec<u8>) -> io::Result<()> {
    loop {
        stream.write_all(&next())?;
    }
}

fn serve(
    mut stream: TcpStream,
    mut config: StubConfig,
    memory: &Mutex<Vec<u8>>,
    log: &Mutex<Vec<Vec<u8>>>,
) -> io::Result<()> {
    let mut acks = true;
    let mut running = false;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Misbehaving from now on, and the last reply (sent again, as bad, on `-`).
    let mut hostile = None;
    let mut last_reply = Vec::new();
    // `D` was answered: the session ends.
    let mut detached = false;
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        loop {
            if hostile == Some(Hostile::BadChecksum) {
                if let Some(at) = buf.iter().position(|&b| b == b'-') {
                    if !buf[..at].contains(&b'$') {
                        buf.drain(..=at);
                        send_bad(&mut stream, &last_reply)?;
                        continue;
                    }
                }
            }
            // An interrupt, or anything at all while running, stops the program.
            let first = buf.iter().position(|&b| b == 0x03 || b == b'$');
            let Some(at) = first else {
                buf.clear();
                break;
            };
            if running && (buf[at] == 0x03 || buf[at] == b'$') {
                running = false;
                let alive = match config.program.as_mut() {
                    Some(program) => {
                        let mut mem = memory.lock().map_err(|_| io::Error::other("poisoned"))?;
                        program(&mut mem)
                    }
                    None => true,
                };
                if buf[at] == 0x03 {
                    buf.drain(..=at);
                } else if let Some(end) = buf.iter().position(|&b| b == b'#') {
                    // QEMU drops the packet that stopped the machine.
                    buf.drain(..(end + 3).min(buf.len()));
                } else {
                    buf.clear();
                }
                if !alive {
                    send(&mut stream, b"W00", false)?;
                    return Ok(());
                }
                send(&mut stream, b"S02", false)?;
                continue;
            }
            if buf[at] == 0x03 {
                buf.drain(..=at);
                continue;
            }
            let Some(hash) = buf[at..].iter().position(|&b| b == b'#').map(|h| at + h) else {
                break;
            };
            if buf.len() < hash + 3 {
                break;
            }
            let body = buf[at + 1..hash].to_vec();
            let sum = std::str::from_utf8(&buf[hash + 1..hash + 3])
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok());
            buf.drain(..hash + 3);
            if let Ok(mut log) = log.lock() {
                log.push(body.clone());
            }
            if let Some((trigger, how)) = &config.hostile {
                if hostile.is_none() && body.starts_with(trigger) {
                    hostile = Some(*how);
                }
            }
            match hostile {
                Some(Hostile::Silent) => continue,
                Some(Hostile::NoiseForAck) => {
                    return flood(&mut stream, || b"x\x1b[2J~noise~".repeat(64));
                }
                _ => {}
            }
            if acks {
                if sum != Some(checksum(&body)) {
                    stream.write_all(b"-")?;
                    continue;
                }
                stream.write_all(b"+")?;
            }
            match hostile {
                Some(Hostile::EndlessConsole) => {
                    // "flightrec\n" in hex, as a target's printout.
                    let packet = {
                        let body = b"O666c696768747265630a";
                        let mut p = vec![b'$'];
                        p.extend_from_slice(body);
                        p.extend_from_slice(format!("#{:02x}", checksum(body)).as_bytes());
                        p
                    };
                    return flood(&mut stream, || packet.repeat(64));
                }
                Some(Hostile::EndlessReply) => {
                    stream.write_all(b"$")?;
                    return flood(&mut stream, || b"0123456789abcdef".repeat(256));
                }
                _ => {}
            }
            let mut mem = memory.lock().map_err(|_| io::Error::other("poisoned"))?;
            let range = |addr: u64, len: u64| -> Option<std::ops::Range<usize>> {
                let start = usize::try_from(addr.checked_sub(config.base)?).ok()?;
                let end = start.checked_add(usize::try_from(len).ok()?)?;
                (end <= mem.len()).then_some(start..end)
            };
            let args = |s: &[u8]| -> Option<(u64, u64)> {
                let s = std::str::from_utf8(s).ok()?;
                let (a, l) = s.split_once(',')?;
                Some((
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(l, 16).ok()?,
                ))
            };
            let reply: Vec<u8> = match body.first() {
                Some(b'q') if body.starts_with(b"qSupported") => {
                    if config.no_ack {
                        b"PacketSize=1000;QStartNoAckMode+".to_vec()
                    } else {
                        b"PacketSize=1000".to_vec()
                    }
                }
                Some(b'Q') if body == b"QStartNoAckMode" && config.no_ack => {
                    send(&mut stream, b"OK", false)?;
                    acks = false;
                    continue;
                }
                Some(b'?') => b"S05".to_vec(),
                Some(b'm') => match args(&body[1..]).and_then(|(a, l)| range(a, l)) {
                    Some(r) => hex(&mem[r]),
                    None => b"E01".to_vec(),
                },
                Some(b'M') => {
                    let parsed = body[1..].iter().position(|&b| b == b':').and_then(|colon| {
                        let (a, l) = args(&body[1..1 + colon])?;
                        let data = &body[2 + colon..];
                        Some((range(a, l)?, data))
                    });
                    match parsed {
                        Some((r, data)) if data.len() == 2 * r.len() => {
                            for (i, pair) in data.chunks(2).enumerate() {
                                let v = std::str::from_utf8(pair)
                                    .ok()
                                    .and_then(|s| u8::from_str_radix(s, 16).ok())
                                    .unwrap_or(0);
                                mem[r.start + i] = v;
                            }
                            b"OK".to_vec()
                        }
                        _ => b"E01".to_vec(),
                    }
                }
                Some(b'c') => {
                    running = true;
                    continue;
                }
                Some(b'D') => {
                    detached = true;
                    b"OK".to_vec()
                }
                _ => Vec::new(),
            };
            drop(mem);
            match hostile {
                Some(Hostile::BadChecksum) => {
                    send_bad(&mut stream, &reply)?;
                    last_reply = reply;
                }
                Some(Hostile::Trickle(delay)) => {
                    let mut packet = vec![b'$'];
                    packet.extend_from_slice(&reply);
                    packet.extend_from_slice(format!("#{:02x}", checksum(&reply)).as_bytes());
                    for b in packet {
                        std::thread::sleep(delay);
                        stream.write_all(&[b])?;
                    }
                }
                _ => send(&mut stream, &reply, config.rle)?,
            }
            if detached {
                return Ok(());
            }
        }
    }
}
