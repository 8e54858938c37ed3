//! Function names from an instrumented program itself (`--names ./program`,
//! `-m ./program` as llvm-xray takes it): ids from its `xray_instr_map`,
//! numbered as llvm-xray numbers them (the core's
//! [`flightrec_core::sled_map::SledMap`]), names from its symbol
//! table, demangled (Rust's legacy and v0 manglings, C++'s Itanium ABI).
//!
//! What a sled runtime's trace needs: the runtime writes no names file, the
//! program holds every name.

use std::collections::{BTreeMap, HashMap};

use flightrec_core::names::elf::find_section;
use flightrec_core::names::INSTR_MAP_SECTION;
use flightrec_core::sled_map::SledMap;

use super::elf::section_addr;

/// `SHT_SYMTAB` and `SHT_DYNSYM`.
const SYMTAB: u32 = 2;
const DYNSYM: u32 = 11;
/// `STT_FUNC`.
const FUNC: u8 = 2;

/// The names of the instrumented functions of the ELF program `image`, by
/// llvm-xray's function id. `Ok(None)` when it has no `xray_instr_map`.
/// Functions the symbol table does not name stay unnamed.
///
/// ```
/// use flightrec_host::names::program::program_names;
/// // Not an instrumented program: no map, no names.
/// assert_eq!(program_names(b"\x7fELF").unwrap_or(None), None);
/// ```
pub fn program_names(image: &[u8]) -> Result<Option<HashMap<u32, String>>, String> {
    let map = match find_section(image, INSTR_MAP_SECTION) {
        Ok(Some(map)) => map,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("damaged ELF file: {e}")),
    };
    let base = section_addr(image, map).ok_or("damaged ELF file: no xray_instr_map header")?;
    let sleds =
        SledMap::parse(map, base as usize).map_err(|e| format!("{INSTR_MAP_SECTION}: {e}"))?;
    let symbols = function_symbols(image)?;
    let mut names = HashMap::new();
    for sled in sleds.iter() {
        if names.contains_key(&sled.function_id) {
            continue;
        }
        if let Some(name) = symbols.get(&(sled.function as u64)) {
            names.insert(sled.function_id, demangle(name));
        }
    }
    if names.is_empty() {
        // Not silently unnamed: a stripped program, or not a program.
        return Err(format!(
            "an XRay instrumentation map of {} functions, but no symbol names any of them \
             (a stripped program?)",
            sleds.max_function_id()
        ));
    }
    Ok(Some(names))
}

/// A symbol's name as a reader wants it: Rust's without the hash, C++'s
/// Itanium names demangled, any other as it is.
///
/// ```
/// use flightrec_host::names::program::demangle;
/// assert_eq!(demangle("_ZN3app4work17h0123456789abcdefE"), "app::work");
/// assert_eq!(demangle("_ZN2ns4workEi"), "ns::work(int)");
/// assert_eq!(demangle("main"), "main");
/// ```
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return d;
            }
        }
    }
    name.to_string()
}

/// The function symbols of `image` by address (the symbol table, else the
/// dynamic one; the first name at an address).
fn function_symbols(image: &[u8]) -> Result<BTreeMap<u64, &str>, String> {
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
    let read = |at: u64, n: usize| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        let b = image.get(at..at.checked_add(n)?)?;
        let mut v = 0u64;
        for i in 0..n {
            let byte = if big { b[i] } else { b[n - 1 - i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    };
    let word = if wide { 8 } else { 4 };
    let (shoff, shentsize_at) = if wide { (0x28, 0x3a) } else { (0x20, 0x2e) };
    let table = read(shoff, word).ok_or_else(bad)?;
    let entsize = read(shentsize_at, 2).ok_or_else(bad)?;
    let count = read(shentsize_at + 2, 2).ok_or_else(bad)?;
    // Within a section header: type, offset, size, link, entsize.
    let (type_at, offset_at, size_at, link_at, entsize_at) = if wide {
        (0x4, 0x18, 0x20, 0x28, 0x38)
    } else {
        (0x4, 0x10, 0x14, 0x18, 0x24)
    };
    let header = |i: u64| table.checked_add(i.checked_mul(entsize)?);
    let field = |i: u64, at: u64, n: usize| read(header(i)?.checked_add(at)?, n);
    let mut symtab = None;
    for i in 0..count {
        match field(i, type_at, 4).ok_or_else(bad)? as u32 {
            SYMTAB => {
                symtab = Some(i);
                break;
            }
            DYNSYM if symtab.is_none() => symtab = Some(i),
            _ => {}
        }
    }
    let mut symbols = BTreeMap::new();
    let Some(s) = symtab else {
        return Ok(symbols);
    };
    let (off, size, link) = (
        field(s, offset_at, word).ok_or_else(bad)?,
        field(s, size_at, word).ok_or_else(bad)?,
        field(s, link_at, 4).ok_or_else(bad)?,
    );
    let sym_size = field(s, entsize_at, word).ok_or_else(bad)?.max(1);
    let (str_off, str_size) = (
        field(link, offset_at, word).ok_or_else(bad)?,
        field(link, size_at, word).ok_or_else(bad)?,
    );
    let strings = usize::try_from(str_off)
        .ok()
        .zip(usize::try_from(str_size).ok())
        .and_then(|(o, n)| image.get(o..o.checked_add(n)?))
        .ok_or_else(bad)?;
    // Within a symbol: name, info, value.
    let (name_at, info_at, value_at) = if wide { (0, 4, 8) } else { (0, 12, 4) };
    for k in 0..size / sym_size {
        let at = off + k * sym_size;
        let info = read(at + info_at, 1).ok_or_else(bad)? as u8;
        let value = read(at + value_at, word).ok_or_else(bad)?;
        if info & 0xf != FUNC || value == 0 {
            continue;
        }
        let name_off = read(at + name_at, 4).ok_or_else(bad)? as usize;
        let Some(rest) = strings.get(name_off..) else {
            continue;
        };
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        if let Ok(name) = std::str::from_utf8(&rest[..end]) {
            if !name.is_empty() {
                symbols.entry(value).or_insert(name);
            }
        }
    }
    Ok(symbols)
}
