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
//! Example on [`GdbClient`].

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
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
/// Times a packet is sent again after a `-`.
const RETRIES: u32 = 3;

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
                    return Ok(GdbClient {
                        stream,
                        pending: Vec::new(),
                        acks: true,
                        packet_size: 400,
                        timeout,
                        address: address.to_string(),
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

    fn fill(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 16 * 1024];
        match self.stream.read(&mut buf) {
            Ok(0) => Err(gone(&self.address)),
            Ok(n) => {
                self.pending.extend_from_slice(&buf[..n]);
                Ok(())
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
                        "{}: no answer from the GDB server in {:.1} s",
                        self.address,
                        self.timeout.as_secs_f64()
                    ),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
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
            Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", self.address))),
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
            Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", self.address))),
        }
    }

    /// Sends one packet; in acknowledged mode, waits for its `+` (sends it again on
    /// `-`).
    fn send_packet(&mut self, body: &[u8]) -> io::Result<()> {
        let mut packet = Vec::with_capacity(body.len() + 4);
        packet.push(b'$');
        packet.extend_from_slice(body);
        packet.push(b'#');
        packet.extend_from_slice(format!("{:02x}", checksum(body)).as_bytes());
        for _ in 0..=RETRIES {
            self.send_raw(&packet)?;
            if !self.acks {
                return Ok(());
            }
            loop {
                if let Some(pos) = self.pending.iter().position(|&b| b == b'+' || b == b'-') {
                    // Anything before the ack (a stray byte) is dropped with it.
                    let ack = self.pending[pos];
                    self.pending.drain(..=pos);
                    if ack == b'+' {
                        return Ok(());
                    }
                    break;
                }
                self.pending.clear();
                self.fill()?;
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: the GDB server refused a packet {} times",
                self.address,
                RETRIES + 1
            ),
        ))
    }

    /// Receives one packet's body (checksum checked, run-length encoding expanded),
    /// acknowledging it in acknowledged mode.
    fn read_packet(&mut self) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(start) = self.pending.iter().position(|&b| b == b'$') {
                if let Some(hash) = self.pending[start..].iter().position(|&b| b == b'#') {
                    let hash = start + hash;
                    if self.pending.len() >= hash + 3 {
                        let body = self.pending[start + 1..hash].to_vec();
                        let sum = hex_byte(&self.pending[hash + 1..hash + 3]);
                        self.pending.drain(..hash + 3);
                        if sum != Some(checksum(&body)) {
                            if self.acks {
                                self.send_raw(b"-")?;
                                continue;
                            }
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidData,
                                format!("{}: a reply with a bad checksum", self.address),
                            ));
                        }
                        if self.acks {
                            self.send_raw(b"+")?;
                        }
                        return Ok(expand_rle(&body));
                    }
                }
            } else {
                // Acks and noise before a packet.
                self.pending.clear();
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{}: no complete reply from the GDB server", self.address),
                ));
            }
            self.fill()?;
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
        loop {
            let reply = self.read_packet()?;
            if reply.first() == Some(&b'O') && reply != b"OK" {
                continue;
            }
            return Ok(reply);
        }
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
                "{}: unexpected reply to {what}: {:?}",
                self.address,
                String::from_utf8_lossy(reply)
            ),
        )
    }

    /// Reads `len` bytes at `address` (target halted), in as many `m` packets as
    /// the server's packet size needs. Example on [`GdbClient`].
    pub fn read_memory(&mut self, address: u64, len: usize) -> io::Result<Vec<u8>> {
        let chunk = ((self.packet_size.saturating_sub(8)) / 2).clamp(16, MAX_READ);
        let mut out = Vec::with_capacity(len);
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
                        String::from_utf8_lossy(&reply).into_owned()
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
                    String::from_utf8_lossy(&reply)
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
        let reply = self.read_packet()?;
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
        loop {
            let reply = self.read_packet()?;
            if let Some(stop) = Stop::parse(&reply) {
                return Ok(stop);
            }
            if reply.first() == Some(&b'O') {
                continue;
            }
            return Err(self.unexpected("an interrupt", &reply));
        }
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
