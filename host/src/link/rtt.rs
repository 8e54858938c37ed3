//! Reading a target's SEGGER RTT up-channel through a GDB server: what
//! `flightrec recv --gdb HOST:PORT --elf fw.elf` does.
//!
//! 1. The control block's address is the ELF symbol `_SEGGER_RTT`
//!    ([`find_symbol`]), which `flightrec-core`'s `rtt` feature defines; the ELF's
//!    class gives the pointer size of the block's layout.
//! 2. [`RttReader::attach`] connects ([`crate::link::gdb`]), lets the target run and
//!    waits until the block's id reads `"SEGGER RTT"` (the firmware writes it at
//!    run time, when it takes its writer).
//! 3. Each [`poll`](RttReader::poll) stops the target (all-stop mode: every GDB
//!    server allows memory access on a halted target), reads the channel's
//!    offsets and the new bytes, moves the read offset on, and resumes it. The
//!    target is halted for a few packet round trips per poll.
//!
//! The bytes are the same framed link the UART carries, and [`crate::link::recv`]
//! decodes them the same way. Example on [`RttReader`].

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::link::gdb::{GdbClient, Stop};
use crate::read::file::TraceFile;

/// The name of the control block's symbol.
///
/// ```
/// assert_eq!(flightrec_host::link::rtt::SYMBOL, "_SEGGER_RTT");
/// ```
pub const SYMBOL: &str = "_SEGGER_RTT";

/// The id at the start of a ready control block.
///
/// ```
/// assert_eq!(flightrec_host::link::rtt::ID, b"SEGGER RTT");
/// ```
pub const ID: &[u8; 10] = b"SEGGER RTT";

/// Largest up-channel read (1 GiB, the largest buffer `flightrec-core`'s
/// `FLIGHTREC_RTT_BUFFER_SIZE` builds): a control block claiming more is refused,
/// not read.
///
/// ```
/// assert_eq!(flightrec_host::link::rtt::MAX_CHANNEL_SIZE, 1 << 30);
/// ```
pub const MAX_CHANNEL_SIZE: u64 = 1 << 30;

/// Bytes read from the channel in one poll at most (the target stays halted
/// while they are read); the rest waits for the next poll.
///
/// ```
/// assert_eq!(flightrec_host::link::rtt::MAX_POLL_BYTES, 64 * 1024);
/// ```
pub const MAX_POLL_BYTES: u64 = 64 * 1024;

/// How long a cancelled reader takes at most to leave the target running.
const WIND_DOWN: Duration = Duration::from_millis(400);

/// A symbol's value and size from an ELF symbol table. Example on
/// [`find_symbol`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Its address.
    pub address: u64,
    /// Its size in bytes (0 when the ELF does not say).
    pub size: u64,
}

/// The target's word layout, from the ELF's class and byte order. Example on
/// [`find_symbol`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes in a pointer: 4 (ELF32) or 8 (ELF64).
    pub pointer_size: u8,
    /// Big-endian target.
    pub big_endian: bool,
}

impl Layout {
    fn uint(&self, bytes: &[u8]) -> u64 {
        let mut v = 0u64;
        if self.big_endian {
            for &b in bytes {
                v = (v << 8) | u64::from(b);
            }
        } else {
            for &b in bytes.iter().rev() {
                v = (v << 8) | u64::from(b);
            }
        }
        v
    }

    fn u32_bytes(&self, v: u32) -> [u8; 4] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    /// Offset of the up-channel array in the control block.
    const fn up_channels(&self) -> u64 {
        24
    }

    /// Offset of a channel's `size` field (after its name and buffer pointers).
    const fn size_field(&self) -> u64 {
        2 * self.pointer_size as u64
    }
}

/// Looks `name` up in the symbol table of the ELF `image`; also returns the
/// image's [`Layout`]. `Ok((None, layout))` when there is no such symbol; `Err` for
/// a file that is not an ELF or whose tables are out of bounds.
///
/// ```
/// use flightrec_host::link::rtt::{find_symbol, Symbol, Layout};
/// use flightrec_testkit::target_image::elf_with_symbol;
/// let elf = elf_with_symbol("_SEGGER_RTT", 0x2000_0100, 88);
/// let (sym, layout) = find_symbol(&elf, "_SEGGER_RTT").unwrap();
/// assert_eq!(sym, Some(Symbol { address: 0x2000_0100, size: 88 }));
/// assert_eq!(layout, Layout { pointer_size: 4, big_endian: false });
/// assert_eq!(find_symbol(&elf, "main").unwrap().0, None);
/// assert!(find_symbol(b"not an elf", "x").is_err());
/// ```
pub fn find_symbol(image: &[u8], name: &str) -> Result<(Option<Symbol>, Layout), String> {
    let mut found = None;
    let layout = each_symbol(image, &mut |sym_name, sym| {
        if sym_name == name.as_bytes() {
            found = Some(sym);
            return false;
        }
        true
    })?;
    Ok((found, layout))
}

/// The symbol of the ELF `image` (with a size) whose bytes hold `address`, if
/// any: where the up-channel's buffer lives, which bounds its size.
///
/// ```
/// use flightrec_host::link::rtt::{symbol_at, Symbol};
/// use flightrec_testkit::target_image::elf_with_symbol;
/// let elf = elf_with_symbol("rtt_buffer", 0x2000_0100, 1024);
/// let buffer = Symbol { address: 0x2000_0100, size: 1024 };
/// assert_eq!(symbol_at(&elf, 0x2000_0100).unwrap(), Some(buffer));
/// assert_eq!(symbol_at(&elf, 0x2000_04ff).unwrap(), Some(buffer));
/// assert_eq!(symbol_at(&elf, 0x2000_0500).unwrap(), None);
/// ```
pub fn symbol_at(image: &[u8], address: u64) -> Result<Option<Symbol>, String> {
    let mut found = None;
    each_symbol(image, &mut |_, sym| {
        let holds = sym.size > 0 && address >= sym.address && address - sym.address < sym.size;
        if holds {
            found = Some(sym);
        }
        !holds
    })?;
    Ok(found)
}

/// Calls `visit` with each symbol's name and value of the ELF `image` until it
/// returns `false`; returns the image's layout.
fn each_symbol(
    image: &[u8],
    visit: &mut dyn FnMut(&[u8], Symbol) -> bool,
) -> Result<Layout, String> {
    if !image.starts_with(b"\x7fELF") {
        return Err("not an ELF file".into());
    }
    let bad = || "damaged ELF file (a table is out of bounds)".to_string();
    let wide = match image.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("unknown ELF class".into()),
    };
    let big = match image.get(5) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("unknown ELF byte order".into()),
    };
    let layout = Layout {
        pointer_size: if wide { 8 } else { 4 },
        big_endian: big,
    };
    let field = |at: u64, len: u64| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        let end = at.checked_add(usize::try_from(len).ok()?)?;
        Some(layout.uint(image.get(at..end)?))
    };
    let word = if wide { 8 } else { 4 };
    let (shoff, shentsize_at) = if wide { (0x28, 0x3a) } else { (0x20, 0x2e) };
    let shoff = field(shoff, word).ok_or_else(bad)?;
    let entsize = field(shentsize_at, 2).ok_or_else(bad)?;
    let count = field(shentsize_at + 2, 2).ok_or_else(bad)?;
    // Section header fields: type, offset, size, link, entry size.
    let (off_at, size_at, link_at, ent_at) = if wide {
        (0x18, 0x20, 0x28, 0x38)
    } else {
        (0x10, 0x14, 0x18, 0x24)
    };
    let section = |i: u64| -> Option<(u64, u64, u64, u64, u64)> {
        let at = shoff.checked_add(i.checked_mul(entsize)?)?;
        Some((
            field(at + 4, 4)?,
            field(at + off_at, word)?,
            field(at + size_at, word)?,
            field(at + link_at, 4)?,
            field(at + ent_at, word)?,
        ))
    };
    const SHT_SYMTAB: u64 = 2;
    for i in 0..count {
        let (kind, offset, size, link, sym_size) = section(i).ok_or_else(bad)?;
        if kind != SHT_SYMTAB {
            continue;
        }
        let (_, str_off, str_size, _, _) = section(link).ok_or_else(bad)?;
        let strings = usize::try_from(str_off)
            .ok()
            .zip(usize::try_from(str_size).ok())
            .and_then(|(o, s)| image.get(o..o.checked_add(s)?))
            .ok_or_else(bad)?;
        let sym_size = if sym_size == 0 {
            if wide {
                24
            } else {
                16
            }
        } else {
            sym_size
        };
        let (value_at, size_field_at) = if wide { (8, 16) } else { (4, 8) };
        let end = offset.checked_add(size).ok_or_else(bad)?;
        let mut at = offset;
        while at.checked_add(sym_size).is_some_and(|e| e <= end) {
            let name_off = field(at, 4).ok_or_else(bad)?;
            let sym_name = usize::try_from(name_off)
                .ok()
                .and_then(|o| strings.get(o..))
                .and_then(|s| s.split(|&b| b == 0).next())
                .unwrap_or_default();
            let address = field(at + value_at, word).ok_or_else(bad)?;
            let size = field(at + size_field_at, word).ok_or_else(bad)?;
            if !visit(sym_name, Symbol { address, size }) {
                return Ok(layout);
            }
            at += sym_size;
        }
    }
    Ok(layout)
}

/// Where `recv --gdb` reads from. Example on [`new`](GdbSettings::new).
#[derive(Clone, Debug)]
pub struct GdbSettings {
    /// The GDB server, `HOST:PORT`.
    pub address: String,
    /// The firmware ELF (for the `_SEGGER_RTT` symbol).
    pub elf: PathBuf,
    /// How long to wait for the control block to be ready after the target
    /// starts, and for each reply.
    pub attach_timeout: Duration,
    /// Longest pause between two polls while the channel is empty (the pause
    /// halves while data comes, down to nothing).
    pub poll_interval: Duration,
}

impl GdbSettings {
    /// Settings with a 10 s attach timeout and a 10 ms poll interval.
    ///
    /// ```
    /// use flightrec_host::link::rtt::GdbSettings;
    /// let s = GdbSettings::new("localhost:1234", "fw.elf");
    /// assert_eq!(s.poll_interval.as_millis(), 10);
    /// ```
    pub fn new(address: &str, elf: impl Into<PathBuf>) -> Self {
        GdbSettings {
            address: address.to_string(),
            elf: elf.into(),
            attach_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_millis(10),
        }
    }

    /// Reads the ELF and finds the control block's symbol, with errors naming the
    /// file.
    ///
    /// ```
    /// use flightrec_host::link::rtt::GdbSettings;
    /// use flightrec_testkit::target_image::elf_with_symbol;
    /// let dir = tempfile::tempdir().unwrap();
    /// let elf = dir.path().join("fw.elf");
    /// std::fs::write(&elf, elf_with_symbol("main", 0x100, 4)).unwrap();
    /// let err = GdbSettings::new("localhost:1234", &elf).control_block().unwrap_err();
    /// assert!(err.to_string().contains("fw.elf: no symbol _SEGGER_RTT"), "{err}");
    /// ```
    pub fn control_block(&self) -> io::Result<(Symbol, Layout)> {
        let name = self.elf.display();
        // Mapped, not read whole: the symbol table's pages only.
        let file = TraceFile::open(&self.elf)
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        match find_symbol(file.bytes(), SYMBOL) {
            Ok((Some(sym), layout)) => Ok((sym, layout)),
            Ok((None, _)) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{name}: no symbol {SYMBOL} (build the firmware with flightrec-core's `rtt` feature, and do not strip it)"
                ),
            )),
            Err(e) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{name}: {e}"),
            )),
        }
    }
}

impl GdbSettings {
    /// The ELF's symbol (with a size) that holds `address`, if any.
    ///
    /// ```
    /// use flightrec_host::link::rtt::{GdbSettings, Symbol};
    /// use flightrec_testkit::target_image::elf_with_symbol;
    /// let dir = tempfile::tempdir().unwrap();
    /// let elf = dir.path().join("fw.elf");
    /// std::fs::write(&elf, elf_with_symbol("buf", 0x100, 16)).unwrap();
    /// let s = GdbSettings::new("localhost:1234", &elf);
    /// assert_eq!(s.symbol_at(0x108).unwrap(), Some(Symbol { address: 0x100, size: 16 }));
    /// ```
    pub fn symbol_at(&self, address: u64) -> io::Result<Option<Symbol>> {
        let name = self.elf.display();
        let file = TraceFile::open(&self.elf)
            .map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
        symbol_at(file.bytes(), address)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{name}: {e}")))
    }
}

/// The up-channel as the control block describes it.
#[derive(Clone, Copy, Debug)]
struct Channel {
    /// Address of the channel descriptor's `write` field.
    offsets: u64,
    buffer: u64,
    size: u64,
}

/// A connection reading one RTT up-channel.
///
/// ```
/// use flightrec_testkit::gdb_stub::MemoryStub;
/// use flightrec_host::link::rtt::{RttReader, Symbol, Layout};
/// use flightrec_testkit::target_image::{control_block_image, Layout as ImageLayout};
/// use std::time::Duration;
///
/// // A target whose RAM at 0x2000_0000 holds a ready control block with 64 bytes
/// // of channel buffer, 5 of them written.
/// let layout = Layout { pointer_size: 4, big_endian: false };
/// let mut ram = control_block_image(0x2000_0000, 64, ImageLayout { pointer_size: 4, big_endian: false });
/// let buffer = ram.len() - 64;
/// ram[buffer..buffer + 5].copy_from_slice(b"hello");
/// ram[24 + 12..24 + 16].copy_from_slice(&5u32.to_le_bytes()); // write offset
/// let stub = MemoryStub::spawn(0x2000_0000, ram).unwrap();
///
/// let symbol = Symbol { address: 0x2000_0000, size: 0 };
/// let mut rtt = RttReader::attach(&stub.address(), symbol, layout, Duration::from_secs(5)).unwrap();
/// let mut got = Vec::new();
/// rtt.poll(&mut got).unwrap();
/// assert_eq!(got, b"hello");
/// rtt.detach().unwrap();
/// let ram = stub.join();
/// assert_eq!(&ram[24 + 16..24 + 20], &5u32.to_le_bytes()); // the read offset moved on
/// ```
#[derive(Debug)]
pub struct RttReader {
    gdb: GdbClient,
    layout: Layout,
    channel: Channel,
    /// The target is halted (between a stop reply and the next `c`).
    halted: bool,
    bytes: u64,
}

/// What one [`RttReader::poll`] found. Example on
/// [`bytes_read`](RttReader::bytes_read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// The bytes appended (possibly none); the target runs on.
    Data(usize),
    /// The target is gone (exited with this status, or ended by a signal); bytes
    /// still appended.
    Gone(Stop, usize),
}

impl RttReader {
    /// Connects to the GDB server at `address` (waiting for it to listen), lets the
    /// target run until the control block at `symbol` is ready, all within
    /// `timeout`, and reads its up-channel 0. Example on [`RttReader`].
    ///
    /// ```
    /// use flightrec_testkit::gdb_stub::MemoryStub;
    /// use flightrec_host::link::rtt::{RttReader, Symbol, Layout};
    /// use std::time::Duration;
    /// // RAM that never holds a control block.
    /// let stub = MemoryStub::spawn(0x2000_0000, vec![0; 256]).unwrap();
    /// let sym = Symbol { address: 0x2000_0000, size: 0 };
    /// let layout = Layout { pointer_size: 4, big_endian: false };
    /// let err = RttReader::attach(&stub.address(), sym, layout, Duration::from_millis(300)).unwrap_err();
    /// assert!(err.to_string().contains("no RTT control block id at 0x20000000"), "{err}");
    /// ```
    pub fn attach(
        address: &str,
        symbol: Symbol,
        layout: Layout,
        timeout: Duration,
    ) -> io::Result<RttReader> {
        Self::attach_until(address, symbol, layout, timeout, None)
    }

    /// [`attach`](Self::attach), ended at once with an
    /// [`io::ErrorKind::Interrupted`] error when `cancel` is set (by a Ctrl-C
    /// handler); every later wait of the reader is too.
    ///
    /// ```
    /// use flightrec_host::link::rtt::{RttReader, Symbol, Layout};
    /// use std::sync::{atomic::AtomicBool, Arc};
    /// use std::time::Duration;
    /// // Nothing listens on port 1: the reader would wait 30 s for a server...
    /// let sym = Symbol { address: 0x2000_0000, size: 0 };
    /// let layout = Layout { pointer_size: 4, big_endian: false };
    /// let cancel = Arc::new(AtomicBool::new(true)); // ...but is cancelled
    /// let err = RttReader::attach_until("127.0.0.1:1", sym, layout, Duration::from_secs(30), Some(cancel)).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::Interrupted);
    /// ```
    pub fn attach_until(
        address: &str,
        symbol: Symbol,
        layout: Layout,
        timeout: Duration,
        cancel: Option<Arc<AtomicBool>>,
    ) -> io::Result<RttReader> {
        let deadline = Instant::now() + timeout;
        let cancelled = || cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
        let interrupted = || {
            io::Error::new(
                io::ErrorKind::Interrupted,
                format!("{address}: interrupted while connecting"),
            )
        };
        // A server that is not listening yet (a debugger started at the same
        // time) is waited for.
        let mut gdb = loop {
            if cancelled() {
                return Err(interrupted());
            }
            match GdbClient::connect(address, timeout.max(Duration::from_secs(1))) {
                Ok(gdb) => break gdb,
                Err(e)
                    if e.kind() == io::ErrorKind::ConnectionRefused
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        };
        gdb.set_cancel(cancel.clone());
        let stop = gdb.handshake()?;
        if stop.is_gone() {
            return Err(gone_error(address, stop));
        }
        let header_len = layout.up_channels() + u64::from(layout.pointer_size) * 2 + 16;
        let mut pause = Duration::from_millis(1);
        loop {
            let block = gdb.read_memory(symbol.address, header_len as usize)?;
            if block.starts_with(ID) {
                let max_up = layout.uint(&block[16..20]);
                let p = usize::from(layout.pointer_size);
                let ch = layout.up_channels() as usize;
                let buffer = layout.uint(&block[ch + p..ch + 2 * p]);
                let size = layout.uint(&block[ch + 2 * p..ch + 2 * p + 4]);
                if max_up == 0 || buffer == 0 || size < 2 {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "{address}: the RTT control block at {:#x} has no usable up-channel ({max_up} channels, buffer {buffer:#x}, {size} bytes)",
                            symbol.address
                        ),
                    ));
                }
                let channel = Channel {
                    offsets: symbol.address + layout.up_channels() + layout.size_field() + 4,
                    buffer,
                    size,
                };
                let mut reader = RttReader {
                    gdb,
                    layout,
                    channel,
                    halted: true,
                    bytes: 0,
                };
                let mut room = MAX_CHANNEL_SIZE;
                let mut why = format!("the most a channel can have, {MAX_CHANNEL_SIZE}");
                let space = 1u128 << (8 * layout.pointer_size);
                let left = u64::try_from(space - u128::from(buffer)).unwrap_or(u64::MAX);
                if left < room {
                    room = left;
                    why = format!(
                        "the end of the {}-bit address space",
                        8 * layout.pointer_size
                    );
                }
                // A buffer inside the control block's symbol (flightrec's own
                // layout) ends where the symbol ends.
                if symbol.size > 0
                    && buffer >= symbol.address
                    && buffer - symbol.address < symbol.size
                {
                    let left = symbol.size - (buffer - symbol.address);
                    if left < room {
                        room = left;
                        why = format!(
                            "what the ELF's {SYMBOL} ({} bytes) holds after the buffer's start",
                            symbol.size
                        );
                    }
                }
                reader.refuse_beyond(room, &why)?;
                return Ok(reader);
            }
            if Instant::now() >= deadline {
                let _ = gdb.detach();
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "{address}: no RTT control block id at {:#x} after {:.1} s (has the firmware taken its RTT writer? is the ELF the one running?)",
                        symbol.address,
                        timeout.as_secs_f64()
                    ),
                ));
            }
            // Not ready yet: let the firmware run on a little.
            gdb.resume()?;
            let wake = Instant::now() + pause;
            while Instant::now() < wake {
                if cancelled() {
                    let mut reader = RttReader {
                        gdb,
                        layout,
                        channel: Channel {
                            offsets: 0,
                            buffer: 0,
                            size: 0,
                        },
                        halted: false,
                        bytes: 0,
                    };
                    let _ = reader.release();
                    return Err(interrupted());
                }
                std::thread::sleep(Duration::from_millis(5).min(pause));
            }
            pause = (pause * 2).min(Duration::from_millis(50));
            let stop = gdb.interrupt()?;
            if stop.is_gone() {
                return Err(gone_error(address, stop));
            }
        }
    }

    /// Refuses a channel whose size is more than `room` bytes (`why` says what
    /// bounds it), before anything of it is read.
    ///
    /// ```
    /// use flightrec_testkit::gdb_stub::MemoryStub;
    /// use flightrec_host::link::rtt::{RttReader, Symbol, Layout};
    /// use flightrec_testkit::target_image::{control_block_image, Layout as ImageLayout};
    /// use std::time::Duration;
    /// let layout = Layout { pointer_size: 4, big_endian: false };
    /// let ram = control_block_image(0x2000_0000, 64, ImageLayout { pointer_size: 4, big_endian: false });
    /// let stub = MemoryStub::spawn(0x2000_0000, ram).unwrap();
    /// let symbol = Symbol { address: 0x2000_0000, size: 0 };
    /// let mut rtt = RttReader::attach(&stub.address(), symbol, layout, Duration::from_secs(5)).unwrap();
    /// rtt.refuse_beyond(64, "the buffer's symbol").unwrap();
    /// let err = rtt.refuse_beyond(32, "the buffer's symbol").unwrap_err();
    /// assert!(err.to_string().contains("claims an up-channel of 64 bytes, more than 32 (the buffer's symbol)"), "{err}");
    /// ```
    pub fn refuse_beyond(&mut self, room: u64, why: &str) -> io::Result<()> {
        if self.channel.size <= room {
            return Ok(());
        }
        let err = io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: the RTT control block claims an up-channel of {} bytes, more than {room} ({why}); not reading it (is the ELF the one running?)",
                self.gdb.address(),
                self.channel.size
            ),
        );
        Err(err)
    }

    /// The address of the up-channel's buffer (the control block's word).
    ///
    /// ```
    /// use flightrec_testkit::gdb_stub::MemoryStub;
    /// use flightrec_host::link::rtt::{RttReader, Symbol, Layout};
    /// use flightrec_testkit::target_image::{control_block_image, Layout as ImageLayout};
    /// use std::time::Duration;
    /// let layout = Layout { pointer_size: 4, big_endian: false };
    /// let ram = control_block_image(0x2000_0000, 64, ImageLayout { pointer_size: 4, big_endian: false });
    /// let stub = MemoryStub::spawn(0x2000_0000, ram).unwrap();
    /// let symbol = Symbol { address: 0x2000_0000, size: 0 };
    /// let rtt = RttReader::attach(&stub.address(), symbol, layout, Duration::from_secs(5)).unwrap();
    /// // Right after the control block (48 bytes with four-byte pointers).
    /// assert_eq!(rtt.buffer_address(), 0x2000_0030);
    /// ```
    pub fn buffer_address(&self) -> u64 {
        self.channel.buffer
    }

    /// Bytes read so far.
    ///
    /// ```
    /// # use flightrec_testkit::gdb_stub::MemoryStub;
    /// # use flightrec_host::link::rtt::{RttReader, Symbol, Layout};
    /// # use flightrec_testkit::target_image::{control_block_image, Layout as ImageLayout};
    /// # use std::time::Duration;
    /// # let layout = Layout { pointer_size: 4, big_endian: false };
    /// # let stub = MemoryStub::spawn(0x2000_0000, control_block_image(0x2000_0000, 16, ImageLayout { pointer_size: 4, big_endian: false })).unwrap();
    /// # let symbol = Symbol { address: 0x2000_0000, size: 0 };
    /// let mut rtt = RttReader::attach(&stub.address(), symbol, layout, Duration::from_secs(5)).unwrap();
    /// assert_eq!(rtt.poll(&mut Vec::new()).unwrap(), flightrec_host::link::rtt::Poll::Data(0));
    /// assert_eq!(rtt.bytes_read(), 0);
    /// ```
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// Halts the target if it runs, appends the channel's new bytes to `out`,
    /// frees them in the channel and lets the target run again. Example on
    /// [`RttReader`].
    pub fn poll(&mut self, out: &mut Vec<u8>) -> io::Result<Poll> {
        if !self.halted {
            let stop = self.gdb.interrupt()?;
            if stop.is_gone() {
                return Ok(Poll::Gone(stop, 0));
            }
            self.halted = true;
        }
        let ch = self.channel;
        let offsets = self.gdb.read_memory(ch.offsets, 8)?;
        let write = self.layout.uint(&offsets[..4]);
        let read = self.layout.uint(&offsets[4..8]);
        if write >= ch.size || read >= ch.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: the RTT channel's offsets are out of range (write {write}, read {read}, size {})",
                    self.gdb.address(),
                    ch.size
                ),
            ));
        }
        let before = out.len();
        if write != read {
            // What is waiting, at most MAX_POLL_BYTES of it: the rest is read
            // at the next poll.
            let waiting = if write > read {
                write - read
            } else {
                ch.size - read + write
            };
            let take = waiting.min(MAX_POLL_BYTES);
            let first = take.min(ch.size - read);
            out.extend(self.gdb.read_memory(ch.buffer + read, first as usize)?);
            if take > first {
                out.extend(self.gdb.read_memory(ch.buffer, (take - first) as usize)?);
            }
            let new_read = u32::try_from((read + take) % ch.size).unwrap_or(0);
            self.gdb
                .write_memory(ch.offsets + 4, &self.layout.u32_bytes(new_read))?;
        }
        let n = out.len() - before;
        self.bytes += n as u64;
        self.gdb.resume()?;
        self.halted = false;
        Ok(Poll::Data(n))
    }

    /// After a cancel: leaves the target running within a short time whatever
    /// state the connection was left in (a wait cut short), then ends the
    /// session.
    fn release(&mut self) -> io::Result<()> {
        self.gdb.wind_down(WIND_DOWN);
        if !self.halted {
            match self.gdb.interrupt() {
                Ok(stop) if stop.is_gone() => return Ok(()),
                Ok(_) => self.halted = true,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                // Perhaps a late reply in the way: `D` still has its chance.
                Err(_) => {}
            }
        }
        self.gdb.detach_any()
    }

    /// Ends the session, leaving the target running. Example on
    /// [`RttReader`].
    pub fn detach(mut self) -> io::Result<()> {
        if !self.halted {
            let stop = self.gdb.interrupt()?;
            if stop.is_gone() {
                return Ok(());
            }
        }
        self.gdb.detach()
    }
}

fn gone_error(address: &str, stop: Stop) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("{address}: {}", describe_gone(stop)),
    )
}

/// A sentence for a target that is gone.
///
/// ```
/// use flightrec_host::link::gdb::Stop;
/// use flightrec_host::link::rtt::describe_gone;
/// assert_eq!(describe_gone(Stop::Exited(0)), "the target exited (status 0)");
/// ```
pub fn describe_gone(stop: Stop) -> String {
    match stop {
        Stop::Exited(code) => format!("the target exited (status {code})"),
        Stop::Terminated(sig) => format!("the target was ended (signal {sig})"),
        Stop::Signal(sig) => format!("the target stopped (signal {sig})"),
    }
}

/// What [`stream`] hands on. Example on [`stream`].
#[derive(Debug)]
pub enum StreamEvent {
    /// Connected, the control block found: reading starts.
    Ready,
    /// Bytes of the link.
    Data(Vec<u8>),
    /// Something to tell the user (the target went away: the end of the input).
    Note(String),
}

/// Reads the RTT channel until the target is gone, `cancel` is set (looked at
/// in every wait: the reader stops within milliseconds, in any state) or an
/// error; each chunk goes to `sink`, which returns `false` to stop. The target
/// is left running at the end (detached) when it is still there. A connection
/// the server closes counts as the target gone.
///
/// The channel's size is checked before anything is read: at most
/// [`MAX_CHANNEL_SIZE`], inside the address space, and inside the ELF symbol
/// that holds its buffer (the control block `_SEGGER_RTT` itself for
/// flightrec's layout, another static for others) when the ELF gives its size.
///
/// ```
/// use flightrec_testkit::gdb_stub::{MemoryStub, StubConfig};
/// use flightrec_host::link::rtt::{stream, GdbSettings, StreamEvent};
/// use flightrec_testkit::target_image::{control_block_image, elf_with_symbol, Layout};
/// use std::sync::{atomic::AtomicBool, Arc};
/// use std::time::Duration;
///
/// // A program that writes one byte per run into the channel, then exits.
/// let layout = Layout { pointer_size: 4, big_endian: false };
/// let ram = control_block_image(0x2000_0000, 8, layout);
/// let buffer = ram.len() - 8;
/// let mut n = 0u8;
/// let stub = MemoryStub::spawn_with(StubConfig::new(0x2000_0000, ram).running(move |mem| {
///     let write = u32::from_le_bytes(mem[36..40].try_into().unwrap()) as usize;
///     mem[buffer + write] = b'a' + n;
///     mem[36..40].copy_from_slice(&(((write + 1) % 8) as u32).to_le_bytes());
///     n += 1;
///     n < 20
/// })).unwrap();
/// let dir = tempfile::tempdir().unwrap();
/// let elf = dir.path().join("fw.elf");
/// std::fs::write(&elf, elf_with_symbol("_SEGGER_RTT", 0x2000_0000, 0)).unwrap();
/// let mut settings = GdbSettings::new(&stub.address(), &elf);
/// settings.poll_interval = Duration::from_millis(1);
///
/// let mut got = Vec::new();
/// let mut notes = Vec::new();
/// let cancel = Arc::new(AtomicBool::new(false));
/// stream(&settings, &cancel, &mut |ev| {
///     match ev {
///         StreamEvent::Data(d) => got.extend(d),
///         StreamEvent::Note(n) => notes.push(n),
///         StreamEvent::Ready => {}
///     }
///     true
/// }).unwrap();
/// assert_eq!(got, b"abcdefghijklmnopqrs"); // the last run's byte came with its exit
/// assert!(notes[0].ends_with("the target exited (status 0)"), "{notes:?}");
/// ```
pub fn stream(
    settings: &GdbSettings,
    cancel: &Arc<AtomicBool>,
    sink: &mut dyn FnMut(StreamEvent) -> bool,
) -> io::Result<()> {
    let cancelled = || cancel.load(Ordering::Relaxed);
    let (symbol, layout) = settings.control_block()?;
    let attached = RttReader::attach_until(
        &settings.address,
        symbol,
        layout,
        settings.attach_timeout,
        Some(Arc::clone(cancel)),
    );
    let mut reader = match attached {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::Interrupted && cancelled() => return Ok(()),
        Err(e) => return Err(e),
    };
    // A buffer outside the control block: the ELF symbol that holds it bounds
    // it.
    let buffer = reader.buffer_address();
    let inside =
        symbol.size > 0 && buffer >= symbol.address && buffer - symbol.address < symbol.size;
    if !inside {
        if let Some(sym) = settings.symbol_at(buffer)? {
            let room = sym.size - (buffer - sym.address);
            let why = format!(
                "what the ELF's symbol at {:#x} ({} bytes) holds after the buffer's start",
                sym.address, sym.size
            );
            if let Err(e) = reader.refuse_beyond(room, &why) {
                let _ = reader.detach();
                return Err(e);
            }
        }
    }
    if !sink(StreamEvent::Ready) {
        return finish(reader, false);
    }
    let mut pause = settings.poll_interval;
    loop {
        if cancelled() {
            return finish(reader, true);
        }
        let mut data = Vec::new();
        let polled = reader.poll(&mut data);
        let gone = |what: String| sink_note(&settings.address, what);
        match polled {
            Ok(Poll::Data(n)) => {
                if n > 0 && !sink(StreamEvent::Data(data)) {
                    break;
                }
                // While data comes, poll again soon; back off when it does not.
                pause = if n > 0 {
                    pause / 2
                } else {
                    (pause * 2).clamp(Duration::from_micros(500), settings.poll_interval)
                };
            }
            Ok(Poll::Gone(stop, _)) => {
                sink(gone(describe_gone(stop)));
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                sink(gone(
                    "the GDB server closed the connection (target gone)".to_string(),
                ));
                return Ok(());
            }
            // Cut short by the cancel (what was read before is handed on).
            Err(e) if e.kind() == io::ErrorKind::Interrupted && cancelled() => {
                return finish(reader, true);
            }
            Err(e) => return Err(e),
        }
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    finish(reader, false)
}

/// Leaves the target running and ends the session (quickly and whatever state
/// it is in, after a cancel).
fn finish(mut reader: RttReader, cancelled: bool) -> io::Result<()> {
    let done = if cancelled {
        reader.release()
    } else {
        reader.detach()
    };
    match done {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("{e} (leaving the target: it may still be halted)"),
        )),
    }
}

fn sink_note(address: &str, what: String) -> StreamEvent {
    StreamEvent::Note(format!("{address}: {what}"))
}
