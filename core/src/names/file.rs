//! Writing a names file: a small ELF64 shared object that `llvm-xray` 14 reads as an
//! instrumentation map, with the id-to-name table in its [`SECTION`] section.
//!
//! `llvm-xray` takes names without the traced binary only from an instrumentation
//! map in ELF (`-m FILE` / `--instr_map=FILE`; a YAML map's names are ignored), so
//! the file is one:
//!
//! * `.text` holds one byte per id, function `id` at address
//!   [`TEXT_ADDR`]` + id - 1`;
//! * `xray_instr_map` holds one version-2 entry (32 bytes, PC-relative addresses)
//!   per id in id order; `llvm-xray` numbers distinct functions 1, 2, 3... in that
//!   order, so entry `k` is function id `k`;
//! * `.symtab`/`.strtab` name each byte (`#id` for ids without a name);
//! * [`SECTION`] holds the same names as the table of [`super::table`], one line
//!   per named id, for readers that do not read ELF symbols.
//!
//! Names are written with the bytes readers choke on replaced: NUL (it ends a
//! string table entry) as `_`, and `"` (`llvm-xray`'s trace_event output does not
//! escape it) as `'`.
//!
//! The writer allocates nothing and asks for each name as it needs it (several
//! times per id), so a signal handler can write the file from a lock-free table.

use super::table::put_entry;
use super::SECTION;
use crate::decimal::dec_u64;

/// Base address (and file offset) of `.text`: function `id` is the byte at
/// `TEXT_ADDR + id - 1`.
///
/// ```
/// use flightrec_core::names::elf::find_section;
/// use flightrec_core::names::file::{write_into, TEXT_ADDR};
/// let mut image = [0u8; 1024];
/// let len = write_into(&mut image, 2, |_| None).unwrap();
/// let text = find_section(&image[..len], ".text").unwrap().unwrap();
/// assert_eq!(text.len(), 2); // one byte per id...
/// let start = TEXT_ADDR as usize; // ...at TEXT_ADDR in the file too
/// assert_eq!(text.as_ptr(), image[start..].as_ptr());
/// ```
pub const TEXT_ADDR: u64 = 64;

const SLED: u64 = 32;
const SYM: u64 = 24;
const SHDR: u64 = 64;
/// Names of the sections, in section order after the null section.
const SECTION_NAMES: [&[u8]; 6] = [
    b".text",
    b"xray_instr_map",
    b".symtab",
    b".strtab",
    SECTION.as_bytes(),
    b".shstrtab",
];

/// The section name table: a NUL, then each name of [`SECTION_NAMES`] and a NUL.
const SHSTRTAB_LEN: u64 = {
    let mut len = 1;
    let mut i = 0;
    while i < SECTION_NAMES.len() {
        len += SECTION_NAMES[i].len() + 1;
        i += 1;
    }
    len as u64
};

/// Offset of section `index`'s name (1-based, as in the section header table) in
/// the section name table.
fn shstr_offset(index: usize) -> u32 {
    let mut at = 1;
    for name in SECTION_NAMES.iter().take(index.saturating_sub(1)) {
        at += name.len() + 1;
    }
    at as u32
}

fn align8(x: u64) -> u64 {
    x.saturating_add(7) & !7
}

/// Bytes of the name written for `id`: its name, or `#id`.
fn name_len(id: u32, name: Option<&[u8]>) -> u64 {
    match name {
        Some(n) => n.len() as u64,
        None => {
            let mut digits = [0u8; 20];
            1 + dec_u64(u64::from(id), &mut digits).len() as u64
        }
    }
}

/// Writes the name of `id` (or `#id`) with NUL as `_` and `"` as `'`.
fn put_name<E>(
    put: &mut impl FnMut(&[u8]) -> Result<(), E>,
    id: u32,
    name: Option<&[u8]>,
) -> Result<(), E> {
    let Some(name) = name else {
        let mut digits = [0u8; 20];
        put(b"#")?;
        return put(dec_u64(u64::from(id), &mut digits));
    };
    for piece in name.split_inclusive(|&c| c == 0 || c == b'"') {
        match piece.split_last() {
            Some((&0, head)) => {
                put(head)?;
                put(b"_")?;
            }
            Some((&b'"', head)) => {
                put(head)?;
                put(b"'")?;
            }
            _ => put(piece)?,
        }
    }
    Ok(())
}

/// Copies `bytes` into `buf` at `at` (nothing if they do not fit).
fn set(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at.saturating_add(bytes.len())) {
        dst.copy_from_slice(bytes);
    }
}

/// Where everything goes in the file, from the ids' names.
///
/// The writer is split into one small function per part so that each stack frame
/// stays small even without optimisation: a signal handler runs it on the small
/// alternate signal stack.
struct Layout {
    /// Ids 1 to `n`.
    n: u64,
    map_off: u64,
    sym_off: u64,
    str_off: u64,
    str_size: u64,
    table_off: u64,
    table_size: u64,
    shs_off: u64,
    sh_off: u64,
}

impl Layout {
    #[inline(never)]
    fn new<'n>(max_id: u32, name_of: &impl Fn(u32) -> Option<&'n [u8]>) -> Self {
        let n = u64::from(max_id);
        let map_off = align8(TEXT_ADDR + n);
        let sym_off = map_off + SLED * n;
        let str_off = sym_off + SYM * (n + 1);
        let mut str_size = 1u64;
        let mut table_size = 0u64;
        for id in 1..=max_id {
            let name = name_of(id);
            str_size = str_size.saturating_add(name_len(id, name) + 1);
            if let Some(name) = name {
                let line = super::table::entry_len(id, name) as u64;
                table_size = table_size.saturating_add(line);
            }
        }
        let table_off = str_off.saturating_add(str_size);
        let shs_off = table_off.saturating_add(table_size);
        let sh_off = align8(shs_off.saturating_add(SHSTRTAB_LEN));
        Self {
            n,
            map_off,
            sym_off,
            str_off,
            str_size,
            table_off,
            table_size,
            shs_off,
            sh_off,
        }
    }
}

/// The ELF header: 64-bit, little-endian, ET_DYN, x86_64 (any machine llvm-xray
/// knows will do; the names are the same on every host).
#[inline(never)]
fn put_elf_header<E>(put: &mut impl FnMut(&[u8]) -> Result<(), E>, l: &Layout) -> Result<(), E> {
    let mut eh = [0u8; 64];
    set(&mut eh, 0, b"\x7fELF\x02\x01\x01\x00");
    set(&mut eh, 16, &3u16.to_le_bytes()); // ET_DYN
    set(&mut eh, 18, &62u16.to_le_bytes()); // EM_X86_64
    set(&mut eh, 20, &1u32.to_le_bytes()); // EV_CURRENT
    set(&mut eh, 40, &l.sh_off.to_le_bytes());
    set(&mut eh, 52, &64u16.to_le_bytes()); // e_ehsize
    set(&mut eh, 58, &(SHDR as u16).to_le_bytes());
    set(&mut eh, 60, &(SECTION_NAMES.len() as u16 + 1).to_le_bytes());
    set(&mut eh, 62, &(SECTION_NAMES.len() as u16).to_le_bytes()); // .shstrtab is last
    put(&eh)
}

/// `.text`: one `nop` per function, then padding to the map.
#[inline(never)]
fn put_text<E>(put: &mut impl FnMut(&[u8]) -> Result<(), E>, l: &Layout) -> Result<(), E> {
    const NOPS: [u8; 64] = [0x90; 64];
    let mut left = l.n;
    while left > 0 {
        let k = left.min(64);
        put(NOPS.get(..k as usize).unwrap_or_default())?;
        left -= k;
    }
    let pad = (l.map_off - TEXT_ADDR - l.n) as usize;
    put([0u8; 8].get(..pad).unwrap_or_default())
}

/// `xray_instr_map`: entry k describes function k; both addresses are relative to
/// the field that holds them (entry version 2).
#[inline(never)]
fn put_instr_map<E>(put: &mut impl FnMut(&[u8]) -> Result<(), E>, l: &Layout) -> Result<(), E> {
    for i in 0..l.n {
        let func = TEXT_ADDR + i;
        let entry_addr = l.map_off + SLED * i;
        let mut e = [0u8; SLED as usize];
        set(&mut e, 0, &func.wrapping_sub(entry_addr).to_le_bytes());
        set(&mut e, 8, &func.wrapping_sub(entry_addr + 8).to_le_bytes());
        // Kind: function entry; always instrument; entry version 2.
        set(&mut e, 16, &[0, 1, 2]);
        put(&e)?;
    }
    Ok(())
}

/// `.symtab`: the null symbol, then one global function symbol of size 1 per id.
#[inline(never)]
fn put_symtab<'n, E>(
    put: &mut impl FnMut(&[u8]) -> Result<(), E>,
    max_id: u32,
    name_of: &impl Fn(u32) -> Option<&'n [u8]>,
) -> Result<(), E> {
    put(&[0u8; SYM as usize])?;
    let mut name_off = 1u64;
    for id in 1..=max_id {
        let mut s = [0u8; SYM as usize];
        set(&mut s, 0, &(name_off as u32).to_le_bytes());
        set(&mut s, 4, &[0x12, 0, 1, 0]); // STB_GLOBAL | STT_FUNC, section 1 (.text)
        set(&mut s, 8, &(TEXT_ADDR + u64::from(id) - 1).to_le_bytes());
        set(&mut s, 16, &1u64.to_le_bytes());
        put(&s)?;
        name_off = name_off.saturating_add(name_len(id, name_of(id)) + 1);
    }
    Ok(())
}

/// `.strtab`: every id's name (or `#id`).
#[inline(never)]
fn put_strtab<'n, E>(
    put: &mut impl FnMut(&[u8]) -> Result<(), E>,
    max_id: u32,
    name_of: &impl Fn(u32) -> Option<&'n [u8]>,
) -> Result<(), E> {
    put(b"\0")?;
    for id in 1..=max_id {
        put_name(put, id, name_of(id))?;
        put(b"\0")?;
    }
    Ok(())
}

/// The names table: one line per named id.
#[inline(never)]
fn put_table<'n, E>(
    put: &mut impl FnMut(&[u8]) -> Result<(), E>,
    max_id: u32,
    name_of: &impl Fn(u32) -> Option<&'n [u8]>,
) -> Result<(), E> {
    for id in 1..=max_id {
        if let Some(name) = name_of(id) {
            put_entry(put, id, |put| put_name(put, id, Some(name)))?;
        }
    }
    Ok(())
}

/// `.shstrtab`, then padding to the section headers.
#[inline(never)]
fn put_shstrtab<E>(put: &mut impl FnMut(&[u8]) -> Result<(), E>, l: &Layout) -> Result<(), E> {
    put(b"\0")?;
    for name in SECTION_NAMES {
        put(name)?;
        put(b"\0")?;
    }
    let pad = (l.sh_off - l.shs_off - SHSTRTAB_LEN) as usize;
    put([0u8; 8].get(..pad).unwrap_or_default())
}

/// The section headers: the null one, then those of [`SECTION_NAMES`].
#[inline(never)]
fn put_section_headers<E>(
    put: &mut impl FnMut(&[u8]) -> Result<(), E>,
    l: &Layout,
) -> Result<(), E> {
    const PROGBITS: u32 = 1;
    const SYMTAB: u32 = 2;
    const STRTAB: u32 = 3;
    const ALLOC: u64 = 2;
    const EXEC: u64 = 4;
    put(&[0u8; SHDR as usize])?;
    for index in 1..=SECTION_NAMES.len() {
        // Kind, flags, address, offset, size, link, info, alignment, entry size.
        let (kind, flags, addr, offset, size, link, info, align, entry_size) = match index {
            1 => (
                PROGBITS,
                ALLOC | EXEC,
                TEXT_ADDR,
                TEXT_ADDR,
                l.n,
                0,
                0,
                1,
                0,
            ),
            2 => (
                PROGBITS,
                ALLOC,
                l.map_off,
                l.map_off,
                SLED * l.n,
                0,
                0,
                8,
                0,
            ),
            3 => (SYMTAB, 0, 0, l.sym_off, SYM * (l.n + 1), 4, 1, 8, SYM),
            4 => (STRTAB, 0, 0, l.str_off, l.str_size, 0, 0, 1, 0),
            5 => (PROGBITS, 0, 0, l.table_off, l.table_size, 0, 0, 1, 0),
            _ => (STRTAB, 0, 0, l.shs_off, SHSTRTAB_LEN, 0, 0, 1, 0),
        };
        let mut h = [0u8; SHDR as usize];
        set(&mut h, 0, &shstr_offset(index).to_le_bytes());
        set(&mut h, 4, &u32::to_le_bytes(kind));
        set(&mut h, 8, &u64::to_le_bytes(flags));
        set(&mut h, 16, &u64::to_le_bytes(addr));
        set(&mut h, 24, &offset.to_le_bytes());
        set(&mut h, 32, &size.to_le_bytes());
        set(&mut h, 40, &u32::to_le_bytes(link));
        set(&mut h, 44, &u32::to_le_bytes(info));
        set(&mut h, 48, &u64::to_le_bytes(align));
        set(&mut h, 56, &u64::to_le_bytes(entry_size));
        put(&h)?;
    }
    Ok(())
}

/// Writes the names file for ids 1 to `max_id` through `put`, asking `name_of` for
/// each id's name (`None`: the id has none). `put` gets the file in order, in
/// pieces; the first error it returns ends the writing and is returned.
///
/// `name_of` is asked several times per id and must answer the same each time.
///
/// ```
/// use flightrec_core::names::file::write;
/// let mut elf = Vec::new();
/// write(2, |id| (id == 1).then_some(&b"main"[..]), |b: &[u8]| {
///     elf.extend_from_slice(b);
///     Ok::<(), ()>(())
/// })
/// .unwrap();
/// assert_eq!(&elf[..4], b"\x7fELF");
/// assert!(elf.windows(6).any(|w| w == b"main\0#"), "symbol names: main, #2");
/// ```
pub fn write<'n, E>(
    max_id: u32,
    name_of: impl Fn(u32) -> Option<&'n [u8]>,
    mut put: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let put = &mut put;
    let layout = Layout::new(max_id, &name_of);
    put_elf_header(put, &layout)?;
    put_text(put, &layout)?;
    put_instr_map(put, &layout)?;
    put_symtab(put, max_id, &name_of)?;
    put_strtab(put, max_id, &name_of)?;
    put_table(put, max_id, &name_of)?;
    put_shstrtab(put, &layout)?;
    put_section_headers(put, &layout)
}

/// [`write`](fn@write) to an [`embedded_io::Write`].
///
/// ```
/// use flightrec_core::names::{elf, file, table, SECTION};
/// let mut elf = Vec::new();
/// file::write_to(&mut elf, 1, |_| Some(&b"say \"hi\"\0"[..])).unwrap();
/// let section = elf::find_section(&elf, SECTION).unwrap().unwrap();
/// let entry = table::entries(section).next().unwrap().unwrap();
/// assert_eq!(entry.name, "say 'hi'_");
/// ```
pub fn write_to<'n, W: embedded_io::Write>(
    out: &mut W,
    max_id: u32,
    name_of: impl Fn(u32) -> Option<&'n [u8]>,
) -> Result<(), W::Error> {
    write(max_id, name_of, |b: &[u8]| out.write_all(b))
}

/// The caller's buffer is too small for the names file.
///
/// ```
/// use flightrec_core::names::file::{write_into, FileTooLarge};
/// let mut small = [0u8; 100];
/// assert_eq!(write_into(&mut small, 1, |_| None), Err(FileTooLarge));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FileTooLarge;

/// [`write`](fn@write) into the start of `buf`; returns the file's length.
///
/// ```
/// use flightrec_core::names::file::write_into;
/// let mut buf = [0u8; 1024];
/// let len = write_into(&mut buf, 3, |id| (id == 2).then_some(&b"two"[..])).unwrap();
/// assert_eq!(&buf[..4], b"\x7fELF");
/// assert!(len > 64 && len < 1024);
/// ```
pub fn write_into<'n>(
    buf: &mut [u8],
    max_id: u32,
    name_of: impl Fn(u32) -> Option<&'n [u8]>,
) -> Result<usize, FileTooLarge> {
    let mut at = 0usize;
    write(max_id, name_of, |b: &[u8]| {
        let end = at.checked_add(b.len()).ok_or(FileTooLarge)?;
        buf.get_mut(at..end).ok_or(FileTooLarge)?.copy_from_slice(b);
        at = end;
        Ok(())
    })?;
    Ok(at)
}
