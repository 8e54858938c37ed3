//! The `static`s of a firmware's ELF by address: what names an async
//! executor's tasks (the task pool that holds a task, `POOL` inside the task
//! function, whose path names the task) and executors (the `static` that
//! holds one). The records themselves are [`flightrec_core::tasks`].
//!
//! Example on [`object_symbols`].

use flightrec_core::names::elf::find_section;

use super::program::demangle;

/// The object symbols (`STT_OBJECT`) of an ELF image: (address, size,
/// demangled name), sorted by address.
///
/// ```
/// use flightrec_host::names::statics::object_symbols;
/// // This example's own program has statics, with names demangled.
/// let image = std::fs::read(std::env::current_exe().unwrap()).unwrap();
/// let symbols = object_symbols(&image).unwrap();
/// assert!(!symbols.is_empty());
/// assert!(symbols.windows(2).all(|w| w[0].0 <= w[1].0));
/// assert!(object_symbols(b"not an ELF").is_err());
/// ```
pub fn object_symbols(image: &[u8]) -> Result<Vec<(u64, u64, String)>, String> {
    let symtab = find_section(image, ".symtab")
        .map_err(|e| format!("not a readable ELF: {e:?}"))?
        .ok_or("the ELF has no symbol table (.symtab): stripped?")?;
    let strtab = find_section(image, ".strtab")
        .map_err(|e| format!("not a readable ELF: {e:?}"))?
        .ok_or("the ELF has no .strtab")?;
    let wide = image.get(4) == Some(&2);
    let big = image.get(5) == Some(&2);
    let u = |b: &[u8]| -> u64 {
        let mut v = 0u64;
        for i in 0..b.len() {
            let byte = if big { b[i] } else { b[b.len() - 1 - i] };
            v = v << 8 | u64::from(byte);
        }
        v
    };
    let size = if wide { 24 } else { 16 };
    let mut out = Vec::new();
    for s in symtab.chunks_exact(size) {
        let (name, info, value, len) = if wide {
            (u(&s[0..4]), s[4], u(&s[8..16]), u(&s[16..24]))
        } else {
            (u(&s[0..4]), s[12], u(&s[4..8]), u(&s[8..12]))
        };
        // STT_OBJECT: the task pools and executors are statics.
        if info & 0xf != 1 {
            continue;
        }
        let Some(raw) = strtab.get(name as usize..) else {
            continue;
        };
        let raw = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
        out.push((value, len, demangle(&String::from_utf8_lossy(raw))));
    }
    out.sort_by_key(|s| s.0);
    Ok(out)
}
