//! A GDB remote serial protocol client over TCP: just enough to read and write a
//! target's memory through a debugger's GDB server (QEMU's `-gdb`, OpenOCD, pyOCD,
//! J-Link's and probe-rs's GDB servers), which is how `recv --gdb` reads RTT.
//!
//! Packets are `$body#xx` (`xx` the modulo-256 sum of the body in hex), each
//! acknowledged with `+` (or `-`: send again) unless the server offered
//! `QStartNoAckMode` and it was switched on. Replies may be run-length encoded
//! (`x*n`). The client speaks all-stop mode: memory is read while the target is
//! halted, so a running target is stopped with an interrupt (the byte `0x03`) and its
//! stop reply, then resumed with `c`. QEMU's stub stops the machine at any byte it
//! receives while running and answers with a stop reply, dropping the packet: the
//! interrupt is the only way in.
//!
//! Nothing the server does keeps the client waiting past its timeout: each
//! acknowledgement and each reply is awaited within one deadline, however the
//! bytes trickle; a reply longer than [`MAX_PACKET`], 64 KiB of bytes that are
//! neither an acknowledgement nor a packet, 1 MiB of console output (`O`
//! packets) without a reply, and four bad checksums in a row are errors that say
//! so, and a cancel flag ([`GdbClient::set_cancel`]) ends any wait within 20 ms.
//! Diagnostics [`quote`] at most [`QUOTE_BYTES`] of what the server sent,
//! escaped.
//!
//! Example on [`GdbClient`].

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why the target stopped (a stop reply), or that it is gone. Example on
/// [`GdbClient`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Halted with this signal (`S`/`T` replies: 5 for a trap, 2 for an
    /// interrupt).
    Signal(u8),
    /// The program exited with this status (`W`): the target is gone.
    Exited(u8),
    /// The program was ended by this signal (`X`): the target is gone.
    Terminated(u8),
}

impl Stop {
    /// Parses a stop reply; `None` for anything else.
    ///
    /// ```
    /// use flightrec_host::link::gdb::Stop;
    /// assert_eq!(Stop::parse(b"T05thread:p01.01;"), Some(Stop::Signal(5)));
    /// assert_eq!(Stop::parse(b"S02"), Some(Stop::Signal(2)));
    /// assert_eq!(Stop::parse(b"W00"), Some(Stop::Exited(0)));
    /// assert_eq!(Stop::parse(b"X0b;process:1"), Some(Stop::Terminated(11)));
    /// assert_eq!(Stop::parse(b"OK"), None);
    /// ```
    pub fn parse(reply: &[u8]) -> Option<Stop> {
        let (&kind, rest) = reply.split_first()?;
        let code = rest.get(..2).and_then(hex_byte)?;
        match kind {
            b'S' | b'T' => Some(Stop::Signal(code)),
            b'W' => Some(Stop::Exited(code)),
            b'X' => Some(Stop::Terminated(code)),
            _ => None,
        }
    }

    /// Whether the target is gone (exited or ended).
    ///
    /// ```
    /// use flightrec_host::link::gdb::Stop;
    /// assert!(Stop::Exited(0).is_gone());
    /// assert!(!Stop::Signal(2).is_gone());
    /// ```
    pub fn is_gone(self) -> bool {
        !matches!(self, Stop::Signal(_))
    }
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    let s = std::str::from_utf8(two).ok()?;
    u8::from_str_radix(s, 16).ok()
}

fn hex_encode(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
}

fn hex_decode(text: &[u8]) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    text.chunks(2).map(hex_byte).collect()
}

/// The checksum of a packet body: the sum of its bytes, modulo 256.
///
/// ```
/// assert_eq!(flightrec_host::link::gdb::checksum(b"OK"), 0x9a);
/// ```
pub fn checksum(body: &[u8]) -> u8 {
    body.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// Bytes of memory asked for in one `m` packet at most, whatever the server's
/// packet size.
const MAX_READ: usize = 4096;
/// Times a packet is sent again after a `-`, and replies with a bad checksum
/// asked for again, before giving up.
const RETRIES: u32 = 3;
/// Longest packet body taken from the server (the reply to the largest `m` the
/// client sends, 4 KiB, is 8 KiB of hex): a longer one is refused, not buffered.
///
/// ```
/// use flightrec_host::link::gdb::{GdbClient, MAX_PACKET};
/// use flightrec_testkit::gdb_stub::{Hostile, MemoryStub, StubConfig};
/// use std::time::Duration;
/// // A server whose reply to `m` never ends.
/// let config = StubConfig::new(0, vec![0; 16]).hostile(b"m", Hostile::EndlessReply);
/// let stub = MemoryStub::spawn_with(config).unwrap();
/// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
/// gdb.handshake().unwrap();
/// let err = gdb.read_memory(0, 4).unwrap_err().to_string();
/// assert!(err.contains(&format!("a reply longer than {MAX_PACKET} bytes")), "{err}");
/// ```
pub const MAX_PACKET: usize = 64 * 1024;
/// Bytes that are neither an acknowledgement nor a packet taken while waiting
/// for one, before giving up.
const MAX_NOISE: usize = 64 * 1024;
/// Bytes of console output (`O` packets) taken while waiting for one reply
/// before giving up: a server relaying a chatty target still answers, one that
/// only relays never ends the wait.
const MAX_CONSOLE: usize = 1 << 20;
/// How often a wait looks at its deadline and at the cancel flag.
const SLICE: Duration = Duration::from_millis(20);
/// Bytes of a reply quoted in a diagnostic at most.
///
/// ```
/// use flightrec_host::link::gdb::{quote, QUOTE_BYTES};
/// assert_eq!(quote(&[b'a'; QUOTE_BYTES]), format!("\"{}\"", "a".repeat(QUOTE_BYTES)));
/// let cut = quote(&[b'a'; QUOTE_BYTES + 1]);
/// assert_eq!(cut, format!("\"{}\"... ({} bytes)", "a".repeat(QUOTE_BYTES), QUOTE_BYTES + 1));
/// ```
pub const QUOTE_BYTES: usize = 160;

/// `bytes` for a diagnostic: at most [`QUOTE_BYTES`] of them, escaped (no
/// control byte, no invalid UTF-8 reaches the terminal), in quotes, with the
/// full length when it was cut.
///
/// ```
/// use flightrec_host::link::gdb::quote;
/// assert_eq!(quote(b"E01"), "\"E01\"");
/// assert_eq!(quote(b"\x1b]0;title\x07\n"), "\"\\x1b]0;title\\x07\\n\"");
/// let long = quote(&[b'a'; 200_000]);
/// assert!(long.len() < 200 && long.ends_with("... (200000 bytes)"), "{long}");
/// ```
pub fn quote(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(QUOTE_BYTES)];
    let mut s = format!("\"{}\"", shown.escape_ascii());
    if shown.len() < bytes.len() {
        s.push_str(&format!("... ({} bytes)", bytes.len()));
    }
    s
}

/// Whether a reply is console output (`O` and hex: what a target printed, as
/// OpenOCD and J-Link relay it), not an answer.
fn is_console(reply: &[u8]) -> bool {
    reply.first() == Some(&b'O') && reply != b"OK"
}

/// A connection to a GDB server.
///
/// ```
/// use flightrec_host::link::gdb::{GdbClient, Stop};
/// use flightrec_testkit::gdb_stub::MemoryStub;
/// use std::time::Duration;
///
/// let stub = MemoryStub::spawn(0x2000_0000, vec![0u8; 256]).unwrap();
/// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
/// assert_eq!(gdb.handshake().unwrap(), Stop::Signal(5)); // halted on attach
/// gdb.write_memory(0x2000_0010, b"hello").unwrap();
/// assert_eq!(gdb.read_memory(0x2000_000e, 8).unwrap(), b"\0\0hello\0");
/// gdb.resume().unwrap();
/// assert_eq!(gdb.interrupt().unwrap(), Stop::Signal(2));
/// assert!(gdb.read_memory(0x1000_0000, 4).unwrap_err().to_string().contains("E01"));
/// gdb.detach().unwrap();
/// ```
#[derive(Debug)]
pub struct GdbClient {
    stream: TcpStream,
    /// Received bytes not yet parsed.
    pending: Vec<u8>,
    /// Packets are acknowledged (until no-ack mode is on).
    acks: bool,
    /// Largest packet the server takes (its `PacketSize`), bytes.
    packet_size: usize,
    /// How long to wait for a reply.
    timeout: Duration,
    address: String,
    /// Set by another thread to end every wait at once (Ctrl-C).
    cancel: Option<Arc<AtomicBool>>,
    /// No wait lasts past this (the short time left to leave the target
    /// running after a cancel), and how long that time was.
    hard_deadline: Option<(Instant, Duration)>,
}

fn gone(address: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("{address}: the GDB server closed the connection (target gone)"),
    )
}

impl GdbClient {
    /// Connects to `address` (`HOST:PORT`), waiting at most `timeout` for the
    /// connection and for each reply. Example on [`GdbClient`].
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use std::time::Duration;
    /// let err = GdbClient::connect("127.0.0.1:1", Duration::from_secs(1)).unwrap_err();
    /// assert!(err.to_string().starts_with("127.0.0.1:1: cannot connect to the GDB server: "), "{err}");
    /// ```
    pub fn connect(address: &str, timeout: Duration) -> io::Result<Self> {
        let named = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("{address}: cannot connect to the GDB server: {e}"),
            )
        };
        let addrs: Vec<_> = address.to_socket_addrs().map_err(named)?.collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true).map_err(named)?;
                    stream.set_read_timeout(Some(timeout)).map_err(named)?;
                    // A server that stops reading cannot hold a send for ever.
                    stream.set_write_timeout(Some(timeout)).map_err(named)?;
                    return Ok(GdbClient {
                        stream,
                        pending: Vec::new(),
                        acks: true,
                        packet_size: 400,
                        timeout,
                        address: address.to_string(),
                        cancel: None,
                        hard_deadline: None,
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(named(last))
    }

    /// The address connected to. Example on [`connect`](Self::connect).
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use flightrec_testkit::gdb_stub::MemoryStub;
    /// use std::time::Duration;
    /// let stub = MemoryStub::spawn(0, vec![0; 16]).unwrap();
    /// let gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
    /// assert_eq!(gdb.address(), stub.address());
    /// ```
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Ends every wait of this client with an [`io::ErrorKind::Interrupted`]
    /// error, within a few milliseconds, once `flag` is set (by a Ctrl-C
    /// handler, another thread).
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use std::net::TcpListener;
    /// use std::sync::{atomic::{AtomicBool, Ordering}, Arc};
    /// use std::time::{Duration, Instant};
    /// // A server that accepts and never answers.
    /// let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let address = silent.local_addr().unwrap().to_string();
    /// let mut gdb = GdbClient::connect(&address, Duration::from_secs(30)).unwrap();
    /// let flag = Arc::new(AtomicBool::new(false));
    /// gdb.set_cancel(Some(Arc::clone(&flag)));
    /// let setter = std::thread::spawn(move || {
    ///     std::thread::sleep(Duration::from_millis(100));
    ///     flag.store(true, Ordering::Relaxed);
    /// });
    /// let started = Instant::now();
    /// let err = gdb.handshake().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::Interrupted, "{err}");
    /// assert!(started.elapsed() < Duration::from_secs(1));
    /// setter.join().unwrap();
    /// ```
    pub fn set_cancel(&mut self, flag: Option<Arc<AtomicBool>>) {
        self.cancel = flag;
    }

    /// From now on, every wait ends by `budget` from now, and the cancel flag is
    /// no longer looked at: the time to leave the target running after a
    /// cancel.
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use std::net::TcpListener;
    /// use std::time::{Duration, Instant};
    /// // A server that accepts and never answers.
    /// let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let address = silent.local_addr().unwrap().to_string();
    /// let mut gdb = GdbClient::connect(&address, Duration::from_secs(30)).unwrap();
    /// gdb.wind_down(Duration::from_millis(100));
    /// let started = Instant::now();
    /// let err = gdb.request(b"?").unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    /// assert!(err.to_string().contains("in the 0.1 s given to leave"), "{err}");
    /// assert!(started.elapsed() < Duration::from_secs(5));
    /// ```
    pub fn wind_down(&mut self, budget: Duration) {
        self.cancel = None;
        self.hard_deadline = Some((Instant::now() + budget, budget));
    }

    fn deadline(&self) -> Instant {
        let d = Instant::now() + self.timeout;
        self.hard_deadline.map_or(d, |(h, _)| h.min(d))
    }

    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Reads what the server sent next into `pending`, waiting until `deadline`
    /// at most (in slices, so that a cancel is seen at once); `waiting_for` names
    /// what a timeout was waiting for.
    fn fill(&mut self, deadline: Instant, waiting_for: &str) -> io::Result<()> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            if self.cancelled() {
                return Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    format!("{}: interrupted", self.address),
                ));
            }
            let now = Instant::now();
            if now >= deadline {
                let within = match self.hard_deadline {
                    Some((h, budget)) if h <= deadline => {
                        format!("in the {:.1} s given to leave", budget.as_secs_f64())
                    }
                    _ => format!("in {:.1} s", self.timeout.as_secs_f64()),
                };
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{}: no {waiting_for} from the GDB server {within}",
                        self.address
                    ),
                ));
            }
            let slice = (deadline - now).clamp(Duration::from_millis(1), SLICE);
            self.stream
                .set_read_timeout(Some(slice))
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.address)))?;
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(gone(&self.address)),
                Ok(n) => {
                    self.pending.extend_from_slice(&buf[..n]);
                    return Ok(());
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionReset
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::BrokenPipe
                    ) =>
                {
                    return Err(gone(&self.address))
                }
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", self.address))),
            }
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.stream.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::BrokenPipe
                ) =>
            {
                Err(gone(&self.address))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{}: the GDB server took nothing sent to it for {:.1} s",
                        self.address,
                        self.timeout.as_secs_f64()
                    ),
                ))
            }
            Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", self.address))),
        }
    }

    /// Sends one packet; in acknowledged mode, waits for its `+` (sends it again on
    /// `-`), all within one timeout: bytes that are neither, however many and
    /// however fast, do not keep the wait going.
    fn send_packet(&mut self, body: &[u8]) -> io::Result<()> {
        let mut packet = Vec::with_capacity(body.len() + 4);
        packet.push(b'$');
        packet.extend_from_slice(body);
        packet.push(b'#');
        packet.extend_from_slice(format!("{:02x}", checksum(body)).as_bytes());
        let deadline = self.deadline();
        // Bytes before the ack (a stray byte) are dropped; a sample is kept
        // for the diagnostic.
        let mut noise = 0usize;
        let mut sample = Vec::new();
        for _ in 0..=RETRIES {
            self.send_raw(&packet)?;
            if !self.acks {
                return Ok(());
            }
            loop {
                let found = self.pending.iter().position(|&b| b == b'+' || b == b'-');
                let skipped = found.unwrap_or(self.pending.len());
                noise += skipped;
                let room = QUOTE_BYTES.saturating_sub(sample.len()).min(skipped);
                sample.extend_from_slice(&self.pending[..room]);
                if let Some(pos) = found {
                    let ack = self.pending[pos];
                    self.pending.drain(..=pos);
                    if ack == b'+' {
                        return Ok(());
                    }
                    break;
                }
                self.pending.clear();
                let noisy = |what: String| {
                    format!(
                        "{what} ({noise} bytes that are neither `+` nor `-` came instead: {})",
                        quote(&sample)
                    )
                };
                if noise > MAX_NOISE {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        noisy(format!(
                            "{}: no acknowledgement of a packet from the GDB server",
                            self.address
                        )),
                    ));
                }
                if let Err(e) = self.fill(deadline, "acknowledgement of a packet") {
                    if noise > 0 && e.kind() == io::ErrorKind::TimedOut {
                        return Err(io::Error::new(e.kind(), noisy(e.to_string())));
                    }
                    return Err(e);
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: the GDB server refused a packet {} times (`-`: what it received had a bad checksum)",
                self.address,
                RETRIES + 1
            ),
        ))
    }

    /// Receives one packet's body (checksum checked, run-length encoding expanded),
    /// acknowledging it in acknowledged mode; waits until `deadline` at most. A
    /// body longer than [`MAX_PACKET`], more than `MAX_NOISE` bytes outside
    /// packets, and more than `RETRIES + 1` bad checksums in a row are errors
    /// that say so.
    fn read_packet(&mut self, deadline: Instant) -> io::Result<Vec<u8>> {
        let mut noise = 0usize;
        let mut bad: u32 = 0;
        let mut last_bad = String::new();
        loop {
            match self.pending.iter().position(|&b| b == b'$') {
                Some(start) => {
                    noise += start;
                    self.pending.drain(..start);
                    let hash = self.pending.iter().position(|&b| b == b'#');
                    let body_len = hash.unwrap_or(self.pending.len()).saturating_sub(1);
                    if body_len > MAX_PACKET {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "{}: a reply longer than {MAX_PACKET} bytes from the GDB server: {}",
                                self.address,
                                quote(&self.pending[1..])
                            ),
                        ));
                    }
                    if let Some(hash) = hash.filter(|&h| self.pending.len() >= h + 3) {
                        let body = self.pending[1..hash].to_vec();
                        let sent = self.pending[hash + 1..hash + 3].to_vec();
                        self.pending.drain(..hash + 3);
                        let sum = checksum(&body);
                        if hex_byte(&sent) != Some(sum) {
                            bad += 1;
                            last_bad = format!(
                                "checksum {} where its body sums to {sum:02x}: {}",
                                quote(&sent),
                                quote(&body)
                            );
                            if !self.acks || bad > RETRIES {
                                let what = if bad == 1 {
                                    format!("a reply with a bad checksum from the GDB server ({last_bad})")
                                } else {
                                    format!("{bad} replies in a row with a bad checksum from the GDB server (the last: {last_bad})")
                                };
                                return Err(io::Error::new(
                                    io::ErrorKind::InvalidData,
                                    format!("{}: {what}", self.address),
                                ));
                            }
                            self.send_raw(b"-")?;
                            continue;
                        }
                        if self.acks {
                            self.send_raw(b"+")?;
                        }
                        return Ok(expand_rle(&body));
                    }
                }
                None => {
                    // Acks and noise before a packet.
                    noise += self.pending.len();
                    self.pending.clear();
                }
            }
            if noise > MAX_NOISE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: {noise} bytes from the GDB server that are not a packet, and no reply",
                        self.address
                    ),
                ));
            }
            if let Err(e) = self.fill(deadline, "reply") {
                if bad > 0 && e.kind() == io::ErrorKind::TimedOut {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "{}: a reply with a bad checksum ({last_bad}), and no good one in {:.1} s",
                            self.address,
                            self.timeout.as_secs_f64()
                        ),
                    ));
                }
                return Err(e);
            }
        }
    }

    /// Reads replies until one that is not console output (`O`), within one
    /// timeout and at most `MAX_CONSOLE` bytes of console output.
    fn read_reply(&mut self, deadline: Instant) -> io::Result<Vec<u8>> {
        let mut console = 0usize;
        loop {
            let reply = match self.read_packet(deadline) {
                Ok(r) => r,
                Err(e) if console > 0 && e.kind() == io::ErrorKind::TimedOut => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{e} (only {console} bytes of console output, `O` packets)"),
                    ))
                }
                Err(e) => return Err(e),
            };
            if !is_console(&reply) {
                return Ok(reply);
            }
            console += reply.len();
            if console > MAX_CONSOLE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: more than {MAX_CONSOLE} bytes of console output (`O` packets) from the GDB server, and no reply",
                        self.address
                    ),
                ));
            }
        }
    }

    /// Sends a packet and returns the reply, skipping console output (`O`) packets.
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use flightrec_testkit::gdb_stub::MemoryStub;
    /// use std::time::Duration;
    /// let stub = MemoryStub::spawn(0, vec![0; 16]).unwrap();
    /// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
    /// assert_eq!(gdb.request(b"?").unwrap(), b"S05");
    /// assert_eq!(gdb.request(b"vNoSuchThing").unwrap(), b""); // not supported
    /// ```
    pub fn request(&mut self, body: &[u8]) -> io::Result<Vec<u8>> {
        self.send_packet(body)?;
        let deadline = self.deadline();
        self.read_reply(deadline)
    }

    /// Starts a session: `qSupported` (taking the server's packet size), no-ack
    /// mode when offered, then `?`: why the target is stopped. Example on
    /// [`GdbClient`].
    pub fn handshake(&mut self) -> io::Result<Stop> {
        let features = self.request(b"qSupported:swbreak+;hwbreak+")?;
        for feature in features.split(|&b| b == b';') {
            if let Some(size) = feature.strip_prefix(b"PacketSize=") {
                let size = std::str::from_utf8(size)
                    .ok()
                    .and_then(|s| usize::from_str_radix(s, 16).ok());
                if let Some(size) = size.filter(|&s| s >= 64) {
                    self.packet_size = size;
                }
            }
            if feature == b"QStartNoAckMode+" && self.request(b"QStartNoAckMode")? == b"OK" {
                self.acks = false;
            }
        }
        let reply = self.request(b"?")?;
        Stop::parse(&reply).ok_or_else(|| self.unexpected("?", &reply))
    }

    fn unexpected(&self, what: &str, reply: &[u8]) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: unexpected reply to {what}: {}",
                self.address,
                quote(reply)
            ),
        )
    }

    /// Reads `len` bytes at `address` (target halted), in as many `m` packets as
    /// the server's packet size needs. Example on [`GdbClient`].
    pub fn read_memory(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>> {
        let chunk = ((self.packet_size.saturating_sub(8)) / 2).clamp(16, MAX_READ);
        let mut out = Vec::with_capacity(len.min(1 << 20));
        while out.len() < len {
            let n = chunk.min(len - out.len());
            let at = address + out.len() as u64;
            let reply = self.request(format!("m{at:x},{n:x}").as_bytes())?;
            if reply.first() == Some(&b'E') || reply.is_empty() {
                return Err(io::Error::other(format!(
                    "{}: cannot read {n} bytes at {at:#x}: {}",
                    self.address,
                    if reply.is_empty() {
                        "not supported".to_string()
                    } else {
                        quote(&reply)
                    }
                )));
            }
            let bytes = hex_decode(&reply).ok_or_else(|| self.unexpected("m", &reply))?;
            if bytes.is_empty() {
                return Err(self.unexpected("m", &reply));
            }
            // A server may return fewer bytes than asked for: ask again for the rest.
            out.extend_from_slice(&bytes[..bytes.len().min(n)]);
        }
        Ok(out)
    }

    /// Writes `bytes` at `address` (target halted) with `M` packets. Example on
    /// [`GdbClient`].
    pub fn write_memory(&mut self, address: u64, bytes: &[u8]) -> io::Result<()> {
        let chunk = ((self.packet_size.saturating_sub(40)) / 2).clamp(16, MAX_READ);
        for (i, part) in bytes.chunks(chunk).enumerate() {
            let at = address + (i * chunk) as u64;
            let mut body = format!("M{at:x},{:x}:", part.len()).into_bytes();
            hex_encode(part, &mut body);
            let reply = self.request(&body)?;
            if reply != b"OK" {
                return Err(io::Error::other(format!(
                    "{}: cannot write {} bytes at {at:#x}: {}",
                    self.address,
                    part.len(),
                    quote(&reply)
                )));
            }
        }
        Ok(())
    }

    /// Lets the target run (`c`); its stop reply comes later (see
    /// [`interrupt`](Self::interrupt)). Example on [`GdbClient`].
    pub fn resume(&mut self) -> io::Result<()> {
        self.send_packet(b"c")
    }

    /// A stop reply that arrived while the target ran (it stopped by itself: a
    /// breakpoint, an exit), if any, without waiting.
    fn stop_arrived(&mut self) -> io::Result<Option<Stop>> {
        self.stream.set_nonblocking(true)?;
        let mut buf = [0u8; 4096];
        let read = self.stream.read(&mut buf);
        self.stream.set_nonblocking(false)?;
        match read {
            Ok(0) => return Err(gone(&self.address)),
            Ok(n) => self.pending.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", self.address))),
        }
        if !self.pending.contains(&b'#') {
            return Ok(None);
        }
        let deadline = self.deadline();
        let reply = self.read_reply(deadline)?;
        Ok(Stop::parse(&reply))
    }

    /// Stops a running target (the byte `0x03`) and returns its stop reply; when the
    /// target already stopped by itself, returns that reply instead. Example on
    /// [`GdbClient`].
    pub fn interrupt(&mut self) -> io::Result<Stop> {
        if let Some(stop) = self.stop_arrived()? {
            return Ok(stop);
        }
        self.send_raw(&[0x03])?;
        let deadline = self.deadline();
        let reply = self.read_reply(deadline)?;
        Stop::parse(&reply).ok_or_else(|| self.unexpected("an interrupt", &reply))
    }

    /// Leaves the target running and ends the session (`D`). Example on
    /// [`GdbClient`].
    pub fn detach(&mut self) -> io::Result<()> {
        let reply = self.request(b"D")?;
        if reply == b"OK" || reply.is_empty() {
            Ok(())
        } else {
            Err(self.unexpected("D", &reply))
        }
    }

    /// Detaches from a connection in an unknown state (a wait was cut short by a
    /// cancel): sends `D` and takes the first `OK` among the replies, skipping
    /// the late replies of the cut request; a stop reply (the target was running
    /// and `D` stopped it, as QEMU does) gets `D` again. Each wait is bounded by
    /// the timeout and [`wind_down`](Self::wind_down).
    ///
    /// ```
    /// use flightrec_host::link::gdb::GdbClient;
    /// use flightrec_testkit::gdb_stub::{MemoryStub, StubConfig};
    /// use std::time::Duration;
    /// // No-ack mode, as OpenOCD and probe-rs offer it.
    /// let stub = MemoryStub::spawn_with(StubConfig::new(0, vec![0; 16]).terse()).unwrap();
    /// let mut gdb = GdbClient::connect(&stub.address(), Duration::from_secs(5)).unwrap();
    /// gdb.handshake().unwrap();
    /// // Running: the first `D` stops the target (a stop reply; the stub, as
    /// // QEMU, drops that packet), the second detaches.
    /// gdb.resume().unwrap();
    /// gdb.detach_any().unwrap();
    /// let packets = stub.packets();
    /// assert!(packets.ends_with(&[b"c".to_vec(), b"D".to_vec()]), "{packets:?}");
    /// ```
    pub fn detach_any(&mut self) -> io::Result<()> {
        let deadline = self.deadline();
        for _ in 0..2 {
            self.send_packet(b"D")?;
            loop {
                let reply = self.read_reply(deadline)?;
                if reply == b"OK" || reply.is_empty() {
                    return Ok(());
                }
                if Stop::parse(&reply).is_some_and(|s| !s.is_gone()) {
                    break;
                }
                if Stop::parse(&reply).is_some() {
                    return Ok(());
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: the GDB server did not take `D` (detach)", self.address),
        ))
    }
}

/// Expands GDB's run-length encoding: `x*n` is `x` followed by `n - 29` more
/// copies of it.
///
/// ```
/// use flightrec_host::link::gdb::expand_rle;
/// assert_eq!(expand_rle(b"0* "), b"0000"); // ' ' is 32: three more
/// assert_eq!(expand_rle(b"ab"), b"ab");
/// ```
pub fn expand_rle(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if b == b'*' && i + 1 < body.len() {
            if let Some(&last) = out.last() {
                let n = usize::from(body[i + 1].saturating_sub(29));
                out.extend(std::iter::repeat_n(last, n));
                i += 2;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    out
}
