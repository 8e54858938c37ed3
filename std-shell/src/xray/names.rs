//! Function names: a process-wide table from function id to name, and the names
//! file written beside every trace.
//!
//! Ids come from [`function_id`] (and the [`xray_fn!`](crate::xray_fn) /
//! [`xray_scope!`](crate::xray_scope) macros, one id per call site), which count up
//! from 1, or are chosen by the program and named with [`set_function_name`]. Names
//! are kept for the life of the process. Ids from 1 to [`MAX_NAMED_ID`] can have a
//! name.
//!
//! The table is written and read without locks on the reading side, so a fatal
//! signal handler can write the names file (see [`write_names_elf`]).
//!
//! ```
//! use flightrec::xray::names::{function_id, function_name};
//! let id = function_id("parse_config");
//! assert_eq!(function_name(id.get()), Some("parse_config"));
//! ```

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Mutex;

use flightrec_core::fdr::FunctionId;

/// The highest id that can carry a name.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{function_name, set_function_name, MAX_NAMED_ID};
/// assert!(set_function_name(FunctionId::new(MAX_NAMED_ID).unwrap(), "last"));
/// assert!(!set_function_name(FunctionId::new(MAX_NAMED_ID + 1).unwrap(), "too far"));
/// assert_eq!(function_name(MAX_NAMED_ID + 1), None);
/// ```
pub const MAX_NAMED_ID: u32 = (1 << 20) - 1;

const CHUNK: usize = 256;
const CHUNKS: usize = (MAX_NAMED_ID as usize + 1) / CHUNK;

/// One chunk of the table: names of ids `k * CHUNK ..`, each a leaked `&'static str`.
type Chunk = [AtomicPtr<&'static str>; CHUNK];

/// Chunk pointers; a chunk is allocated on its first name and never freed.
static TABLE: [AtomicPtr<Chunk>; CHUNKS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS];
/// The highest id with a name (0: none).
static MAX_ID: AtomicU32 = AtomicU32::new(0);
/// The next id [`function_id`] considers.
static NEXT_ID: AtomicU32 = AtomicU32::new(1);
/// Serialises writers (readers never take it).
static WRITER: Mutex<()> = Mutex::new(());

/// The name of `id`, if it has one. Lock-free; safe in a signal handler.
///
/// ```
/// use flightrec::xray::names::{function_id, function_name};
/// let id = function_id("load_index");
/// assert_eq!(function_name(id.get()), Some("load_index"));
/// assert_eq!(function_name(id.get() + 1), None); // not handed out yet
/// assert_eq!(function_name(0), None); // 0 is never a function id
/// ```
pub fn function_name(id: u32) -> Option<&'static str> {
    if id == 0 || id > MAX_NAMED_ID {
        return None;
    }
    let chunk = TABLE[id as usize / CHUNK].load(Ordering::Acquire);
    if chunk.is_null() {
        return None;
    }
    // SAFETY: chunks are leaked `Box<Chunk>`s, published with release after being
    // fully initialised, and never freed.
    let chunk: &Chunk = unsafe { &*chunk };
    let entry = chunk[id as usize % CHUNK].load(Ordering::Acquire);
    if entry.is_null() {
        return None;
    }
    // SAFETY: entries are leaked `Box<&'static str>`s published with release, never
    // freed or changed in place.
    Some(unsafe { *entry })
}

/// The highest id that has a name, 0 if none: what the names file covers.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{max_named_id, set_function_name};
/// assert_eq!(max_named_id(), 0);
/// set_function_name(FunctionId::new(500).unwrap(), "chosen");
/// set_function_name(FunctionId::new(20).unwrap(), "lower");
/// assert_eq!(max_named_id(), 500);
/// ```
pub fn max_named_id() -> u32 {
    MAX_ID.load(Ordering::Acquire)
}

/// Stores a name; the caller holds `WRITER`.
fn store(id: u32, name: &'static str) {
    let slot = &TABLE[id as usize / CHUNK];
    let mut chunk = slot.load(Ordering::Acquire);
    if chunk.is_null() {
        let fresh: Box<Chunk> = Box::new([const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNK]);
        chunk = Box::into_raw(fresh);
        slot.store(chunk, Ordering::Release);
    }
    let entry = Box::into_raw(Box::new(name));
    // SAFETY: `chunk` is a leaked chunk (above or earlier); never freed.
    let chunk: &Chunk = unsafe { &*chunk };
    chunk[id as usize % CHUNK].store(entry, Ordering::Release);
    if id > MAX_ID.load(Ordering::Relaxed) {
        MAX_ID.store(id, Ordering::Release);
    }
}

/// A new function id named `name`: the lowest id from 1 up that this table has not
/// handed out or named yet.
///
/// Past [`MAX_NAMED_ID`] the id is still new but has no name.
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{function_id, set_function_name};
/// assert!(set_function_name(FunctionId::new(2).unwrap(), "chosen by the program"));
/// assert_eq!(function_id("a").get(), 1);
/// assert_eq!(function_id("b").get(), 3); // 2 is taken
/// assert_eq!(function_id("a").get(), 4); // a new id for every call
/// ```
pub fn function_id(name: &'static str) -> FunctionId {
    let _w = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let mut id = NEXT_ID.load(Ordering::Relaxed);
    while function_name(id).is_some() {
        id += 1;
    }
    NEXT_ID.store(id + 1, Ordering::Relaxed);
    if id <= MAX_NAMED_ID {
        store(id, name);
    }
    FunctionId::new(id & FunctionId::MAX).expect("masked to 28 bits")
}

/// Names an id the program chose itself. A later name for the same id replaces the
/// earlier one. Ids above [`MAX_NAMED_ID`] are ignored (returns `false`).
///
/// ```
/// use flightrec::core::fdr::FunctionId;
/// use flightrec::xray::names::{function_name, set_function_name};
/// assert!(set_function_name(FunctionId::new(900_000).unwrap(), "decode_frame"));
/// assert_eq!(function_name(900_000), Some("decode_frame"));
/// ```
pub fn set_function_name(id: FunctionId, name: &str) -> bool {
    let id = id.get();
    if id == 0 || id > MAX_NAMED_ID {
        return false;
    }
    let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
    let _w = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    store(id, name);
    true
}

/// A byte sink that may fail; the names and trace writers use it so that the same
/// code writes to memory, to a file, or to a raw descriptor from a signal handler.
///
/// ```
/// use flightrec::xray::names::{function_id, write_names_elf, Sink};
/// /// Keeps at most `limit` bytes, then refuses everything (like a full disk).
/// struct Limited {
///     bytes: Vec<u8>,
///     limit: usize,
///     failed: bool,
/// }
/// impl Sink for Limited {
///     fn put(&mut self, bytes: &[u8]) -> bool {
///         self.failed |= self.bytes.len() + bytes.len() > self.limit;
///         if !self.failed {
///             self.bytes.extend_from_slice(bytes);
///         }
///         !self.failed
///     }
/// }
/// let id = function_id("work").get();
/// let mut whole = Vec::new(); // `Vec<u8>` is a sink that never fails
/// assert!(write_names_elf(&mut whole, id));
/// let mut short = Limited { bytes: Vec::new(), limit: 100, failed: false };
/// assert!(!write_names_elf(&mut short, id)); // the failure is reported
/// assert_eq!(short.bytes, whole[..short.bytes.len()]);
/// ```
pub trait Sink {
    /// Writes all of `bytes`; `false` if that failed. The writer then returns
    /// `false` too, but may call `put` again before it does, so a sink that
    /// failed should keep failing. Example on [`Sink`].
    fn put(&mut self, bytes: &[u8]) -> bool;
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> bool {
        self.extend_from_slice(bytes);
        true
    }
}

/// Base address (and file offset) of `.text`: function `id` is the byte at
/// `TEXT_ADDR + id - 1`.
///
/// ```
/// use flightrec::xray::names::{function_id, write_names_elf, TEXT_ADDR};
/// function_id("one");
/// let max = function_id("two").get();
/// let mut elf = Vec::new();
/// assert!(write_names_elf(&mut elf, max));
/// // Find `.text` in the ELF64 section headers.
/// let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
/// let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
/// let (shoff, shentsize, shnum) = (u64_at(0x28) as usize, u16_at(0x3a), u16_at(0x3c));
/// let header = |i: usize| shoff + i * shentsize;
/// let names_at = u64_at(header(u16_at(0x3e)) + 24) as usize; // .shstrtab's offset
/// let text = (0..shnum)
///     .map(header)
///     .find(|&h| {
///         let name = names_at + u32::from_le_bytes(elf[h..h + 4].try_into().unwrap()) as usize;
///         elf[name..].starts_with(b".text\0")
///     })
///     .unwrap();
/// let (addr, offset, size) = (u64_at(text + 16), u64_at(text + 24), u64_at(text + 32));
/// assert_eq!((addr, offset, size), (TEXT_ADDR, TEXT_ADDR, u64::from(max)));
/// ```
pub const TEXT_ADDR: u64 = 64;
const SLED: u64 = 32;
const SYM: u64 = 24;
const SHDR: u64 = 64;
const SHSTRTAB: &[u8] = b"\0.text\0xray_instr_map\0.symtab\0.strtab\0flightrec_names\0.shstrtab\0";

fn align8(x: u64) -> u64 {
    (x + 7) & !7
}

fn shstr(name: &[u8]) -> u32 {
    SHSTRTAB
        .windows(name.len())
        .position(|w| w == name)
        .unwrap_or(0) as u32
}

/// Digits of `n` into the end of `buf`; returns the start index.
fn digits(mut n: u32, buf: &mut [u8; 10]) -> usize {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return i;
        }
    }
}

/// The byte length of the name written for `id` (placeholders read `#id`).
fn name_len(id: u32) -> u64 {
    match function_name(id) {
        Some(n) => n.len() as u64,
        None => {
            let mut b = [0u8; 10];
            1 + (10 - digits(id, &mut b)) as u64
        }
    }
}

/// Writes the name of `id` with bytes readers choke on replaced: NUL ends a string
/// table entry and `"` is not escaped by `llvm-xray`'s trace_event output.
fn put_name(out: &mut dyn Sink, id: u32) -> bool {
    match function_name(id) {
        Some(n) => {
            let mut ok = true;
            for piece in n.as_bytes().split_inclusive(|&c| c == 0 || c == b'"') {
                match piece.split_last() {
                    Some((&last, head)) if last == 0 || last == b'"' => {
                        ok &= out.put(head) && out.put(if last == 0 { b"_" } else { b"'" });
                    }
                    _ => ok &= out.put(piece),
                }
            }
            ok
        }
        None => {
            let mut b = [0u8; 10];
            let s = digits(id, &mut b);
            out.put(b"#") && out.put(&b[s..])
        }
    }
}

/// Writes the names file for ids 1 to `max_id` (normally [`max_named_id`]).
///
/// The file is a small ELF64 shared object that `llvm-xray` 14 reads as an
/// instrumentation map (`-m FILE` / `--instr_map=FILE`), which is the only way it
/// takes names without the traced binary (a YAML map's names are ignored):
///
/// * `.text` holds one byte per id, function `id` at address `64 + id - 1`;
/// * `xray_instr_map` holds one version-2 entry (32 bytes, PC-relative addresses)
///   per id in id order; `llvm-xray` numbers distinct functions 1, 2, 3... in that
///   order, so entry `k` is function id `k`;
/// * `.symtab`/`.strtab` name each byte (`#id` for ids without a name);
/// * `flightrec_names` holds the same table as text, one `id<TAB>name<LF>` line per
///   named id, for tools that do not read ELF symbols.
///
/// Allocation-free and lock-free: safe in a signal handler with a raw-descriptor sink.
///
/// ```
/// use flightrec::xray::names::{function_id, write_names_elf};
/// let id = function_id("example::work");
/// let mut elf = Vec::new();
/// assert!(write_names_elf(&mut elf, id.get()));
/// assert_eq!(&elf[..4], b"\x7fELF");
/// ```
pub fn write_names_elf(out: &mut dyn Sink, max_id: u32) -> bool {
    let n = u64::from(max_id.min(MAX_NAMED_ID));
    let text_off = TEXT_ADDR;
    let map_off = align8(text_off + n);
    let sym_off = map_off + SLED * n;
    let str_off = sym_off + SYM * (n + 1);
    let mut str_size = 1;
    let mut list_size = 0;
    for id in 1..=n as u32 {
        let len = name_len(id);
        str_size += len + 1;
        if function_name(id).is_some() {
            let mut b = [0u8; 10];
            list_size += (10 - digits(id, &mut b)) as u64 + 1 + len + 1;
        }
    }
    let list_off = str_off + str_size;
    let shs_off = list_off + list_size;
    let sh_off = align8(shs_off + SHSTRTAB.len() as u64);

    let mut ok = true;
    // ELF header: 64-bit, little-endian, ET_DYN, x86_64 (any machine llvm-xray knows
    // will do; the names are the same on every host).
    let mut eh = [0u8; 64];
    eh[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
    eh[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    eh[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    eh[20..24].copy_from_slice(&1u32.to_le_bytes());
    eh[40..48].copy_from_slice(&sh_off.to_le_bytes());
    eh[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    eh[58..60].copy_from_slice(&(SHDR as u16).to_le_bytes());
    eh[60..62].copy_from_slice(&7u16.to_le_bytes()); // sections
    eh[62..64].copy_from_slice(&6u16.to_le_bytes()); // .shstrtab index
    ok &= out.put(&eh);

    // .text: one `nop` per function.
    const NOPS: [u8; 64] = [0x90; 64];
    let mut left = n;
    while left > 0 && ok {
        let k = left.min(64);
        ok &= out.put(&NOPS[..k as usize]);
        left -= k;
    }
    ok &= out.put(&[0u8; 8][..(map_off - text_off - n) as usize]);

    // xray_instr_map: entry k describes function k; both addresses are relative to
    // the field that holds them (entry version 2).
    for i in 0..n {
        let func = text_off + i;
        let entry_addr = map_off + SLED * i;
        let mut e = [0u8; 32];
        e[..8].copy_from_slice(&(func.wrapping_sub(entry_addr)).to_le_bytes());
        e[8..16].copy_from_slice(&(func.wrapping_sub(entry_addr + 8)).to_le_bytes());
        e[16] = 0; // kind: function entry
        e[17] = 1; // always instrument
        e[18] = 2; // entry version
        ok &= out.put(&e);
    }

    // .symtab: the null symbol, then one global function symbol of size 1 per id.
    ok &= out.put(&[0u8; 24]);
    let mut name_off = 1u64;
    for i in 0..n {
        let mut s = [0u8; 24];
        s[..4].copy_from_slice(&(name_off as u32).to_le_bytes());
        s[4] = 0x12; // STB_GLOBAL, STT_FUNC
        s[6..8].copy_from_slice(&1u16.to_le_bytes()); // section .text
        s[8..16].copy_from_slice(&(text_off + i).to_le_bytes());
        s[16..24].copy_from_slice(&1u64.to_le_bytes());
        ok &= out.put(&s);
        name_off += name_len(i as u32 + 1) + 1;
    }

    // .strtab
    ok &= out.put(b"\0");
    for id in 1..=n as u32 {
        ok &= put_name(out, id) && out.put(b"\0");
    }

    // flightrec_names
    for id in 1..=n as u32 {
        if function_name(id).is_some() {
            let mut b = [0u8; 10];
            let s = digits(id, &mut b);
            ok &= out.put(&b[s..]) && out.put(b"\t") && put_name(out, id) && out.put(b"\n");
        }
    }

    ok &= out.put(SHSTRTAB);
    ok &= out.put(&[0u8; 8][..(sh_off - shs_off - SHSTRTAB.len() as u64) as usize]);

    // Section headers.
    #[allow(clippy::too_many_arguments)]
    fn sh(
        out: &mut dyn Sink,
        name: u32,
        kind: u32,
        flags: u64,
        addr: u64,
        off: u64,
        size: u64,
        link: u32,
        info: u32,
        align: u64,
        entsize: u64,
    ) -> bool {
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        h[8..16].copy_from_slice(&flags.to_le_bytes());
        h[16..24].copy_from_slice(&addr.to_le_bytes());
        h[24..32].copy_from_slice(&off.to_le_bytes());
        h[32..40].copy_from_slice(&size.to_le_bytes());
        h[40..44].copy_from_slice(&link.to_le_bytes());
        h[44..48].copy_from_slice(&info.to_le_bytes());
        h[48..56].copy_from_slice(&align.to_le_bytes());
        h[56..64].copy_from_slice(&entsize.to_le_bytes());
        out.put(&h)
    }
    const PROGBITS: u32 = 1;
    const SYMTAB: u32 = 2;
    const STRTAB: u32 = 3;
    const ALLOC: u64 = 2;
    const EXEC: u64 = 4;
    ok &= out.put(&[0u8; 64]);
    ok &= sh(
        out,
        shstr(b".text\0"),
        PROGBITS,
        ALLOC | EXEC,
        text_off,
        text_off,
        n,
        0,
        0,
        1,
        0,
    );
    ok &= sh(
        out,
        shstr(b"xray_instr_map\0"),
        PROGBITS,
        ALLOC,
        map_off,
        map_off,
        SLED * n,
        0,
        0,
        8,
        0,
    );
    ok &= sh(
        out,
        shstr(b".symtab\0"),
        SYMTAB,
        0,
        0,
        sym_off,
        SYM * (n + 1),
        4,
        1,
        8,
        SYM,
    );
    ok &= sh(
        out,
        shstr(b".strtab\0"),
        STRTAB,
        0,
        0,
        str_off,
        str_size,
        0,
        0,
        1,
        0,
    );
    ok &= sh(
        out,
        shstr(b"flightrec_names\0"),
        PROGBITS,
        0,
        0,
        list_off,
        list_size,
        0,
        0,
        1,
        0,
    );
    ok &= sh(
        out,
        shstr(b".shstrtab\0"),
        STRTAB,
        0,
        0,
        shs_off,
        SHSTRTAB.len() as u64,
        0,
        0,
        1,
        0,
    );
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_and_skip_named_ones() {
        let a = function_id("a");
        assert!(set_function_name(
            FunctionId::new(a.get() + 1).unwrap(),
            "taken"
        ));
        let b = function_id("b");
        assert_eq!(b.get(), a.get() + 2);
        assert_eq!(function_name(a.get()), Some("a"));
        assert_eq!(function_name(b.get() + 1000), None);
        assert!(!set_function_name(
            FunctionId::new(MAX_NAMED_ID + 1).unwrap(),
            "x"
        ));
    }

    #[test]
    fn elf_layout_is_consistent() {
        let id = function_id("with \"quote\" and \0 nul");
        let mut elf = Vec::new();
        assert!(write_names_elf(&mut elf, id.get()));
        let sh_off = u64::from_le_bytes(elf[40..48].try_into().unwrap()) as usize;
        assert_eq!(elf.len(), sh_off + 7 * 64);
        let text = String::from_utf8_lossy(&elf);
        assert!(text.contains("with 'quote' and _ nul\0"));
        assert!(text.contains(&format!("{}\twith 'quote' and _ nul\n", id.get())));
    }
}
