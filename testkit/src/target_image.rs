//! Target images for tests of the host's link readers: an ELF file with one
//! symbol and the memory of a SEGGER RTT control block, built byte by byte so
//! that a test needs no toolchain and no board.

/// The word size and byte order of a target (the host's
/// `flightrec_host::link::rtt::Layout`, spelled out here so that the
/// builders need nothing of the host crate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// 4 or 8.
    pub pointer_size: u8,
    /// Big-endian words.
    pub big_endian: bool,
}

/// The memory image of a ready control block at `address` with one up-channel of
/// `size` bytes right after it (the channel name pointer left null): for tests
/// and examples of readers. Example in `flightrec_host::link::rtt::RttReader`.
pub fn control_block_image(address: u64, size: u32, layout: Layout) -> Vec<u8> {
    let u32_bytes = |v: u32| {
        if layout.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let p = usize::from(layout.pointer_size);
    let header = 24 + 2 * p + 16;
    let mut image = vec![0u8; header + size as usize];
    image[..10].copy_from_slice(b"SEGGER RTT");
    image[16..20].copy_from_slice(&u32_bytes(1));
    let buffer = address + header as u64;
    let ptr = if p == 8 {
        if layout.big_endian {
            buffer.to_be_bytes().to_vec()
        } else {
            buffer.to_le_bytes().to_vec()
        }
    } else {
        u32_bytes(buffer as u32).to_vec()
    };
    image[24 + p..24 + 2 * p].copy_from_slice(&ptr);
    image[24 + 2 * p..24 + 2 * p + 4].copy_from_slice(&u32_bytes(size));
    image
}

/// A minimal little-endian ELF32 file whose symbol table holds one symbol: for
/// tests and examples of `flightrec_host::link::rtt::find_symbol` and `recv --gdb`.
pub fn elf_with_symbol(name: &str, address: u32, size: u32) -> Vec<u8> {
    elf_with_symbols(&[(name, address, size)])
}

/// [`elf_with_symbol`] with several symbols, each `(name, address, size)`: a
/// control block and the buffer of its channel, for example.
pub fn elf_with_symbols(symbols: &[(&str, u32, u32)]) -> Vec<u8> {
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 16]; // the null symbol
    for (name, address, size) in symbols {
        symtab.extend_from_slice(&(strtab.len() as u32).to_le_bytes()); // name
        symtab.extend_from_slice(&address.to_le_bytes());
        symtab.extend_from_slice(&size.to_le_bytes());
        symtab.extend_from_slice(&[0x11, 0, 1, 0]); // global object, section 1
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
    }
    let symtab_off = 52u32;
    let strtab_off = symtab_off + symtab.len() as u32;
    let shoff = strtab_off + strtab.len() as u32;
    let mut elf = vec![0u8; 52];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 1; // ELF32
    elf[5] = 1; // little-endian
    elf[6] = 1;
    elf[16..18].copy_from_slice(&2u16.to_le_bytes()); // executable
    elf[18..20].copy_from_slice(&40u16.to_le_bytes()); // ARM
    elf[32..36].copy_from_slice(&shoff.to_le_bytes());
    elf[40..42].copy_from_slice(&52u16.to_le_bytes());
    elf[46..48].copy_from_slice(&40u16.to_le_bytes());
    elf[48..50].copy_from_slice(&3u16.to_le_bytes());
    elf.extend_from_slice(&symtab);
    elf.extend_from_slice(&strtab);
    let section = |kind: u32, off: u32, len: u32, link: u32, entsize: u32| {
        let mut s = vec![0u8; 40];
        s[4..8].copy_from_slice(&kind.to_le_bytes());
        s[16..20].copy_from_slice(&off.to_le_bytes());
        s[20..24].copy_from_slice(&len.to_le_bytes());
        s[24..28].copy_from_slice(&link.to_le_bytes());
        s[36..40].copy_from_slice(&entsize.to_le_bytes());
        s
    };
    elf.extend(section(0, 0, 0, 0, 0));
    elf.extend(section(2, symtab_off, symtab.len() as u32, 2, 16));
    elf.extend(section(3, strtab_off, strtab.len() as u32, 0, 0));
    elf
}

/// A minimal little-endian ELF32 file with one section, `name`, at address 0
/// holding `data`: a firmware image's `.flightrec` names for tests of `names`
/// and `dump`.
pub fn elf_with_section(name: &str, data: &[u8]) -> Vec<u8> {
    let mut shstrtab = vec![0u8];
    shstrtab.extend_from_slice(name.as_bytes());
    shstrtab.push(0);
    let shstrtab_name = shstrtab.len() as u32;
    shstrtab.extend_from_slice(b".shstrtab\0");
    let data_off = 52u32;
    let shstrtab_off = data_off + data.len() as u32;
    let shoff = shstrtab_off + shstrtab.len() as u32;
    let mut elf = vec![0u8; 52];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 1; // ELF32
    elf[5] = 1; // little-endian
    elf[6] = 1;
    elf[16..18].copy_from_slice(&2u16.to_le_bytes()); // executable
    elf[18..20].copy_from_slice(&40u16.to_le_bytes()); // ARM
    elf[32..36].copy_from_slice(&shoff.to_le_bytes());
    elf[40..42].copy_from_slice(&52u16.to_le_bytes());
    elf[46..48].copy_from_slice(&40u16.to_le_bytes());
    elf[48..50].copy_from_slice(&3u16.to_le_bytes()); // sections
    elf[50..52].copy_from_slice(&2u16.to_le_bytes()); // .shstrtab
    elf.extend_from_slice(data);
    elf.extend_from_slice(&shstrtab);
    let section = |name: u32, kind: u32, off: u32, len: u32| {
        let mut s = vec![0u8; 40];
        s[..4].copy_from_slice(&name.to_le_bytes());
        s[4..8].copy_from_slice(&kind.to_le_bytes());
        s[16..20].copy_from_slice(&off.to_le_bytes());
        s[20..24].copy_from_slice(&len.to_le_bytes());
        s
    };
    elf.extend(section(0, 0, 0, 0));
    elf.extend(section(1, 1, data_off, data.len() as u32));
    elf.extend(section(
        shstrtab_name,
        3,
        shstrtab_off,
        shstrtab.len() as u32,
    ));
    elf
}
