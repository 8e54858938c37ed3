//! The names file the desktop runtime writes beside each trace (`<trace>.names`,
//! see `flightrec::xray::names` in the runtime library), and firmware images that carry the same
//! table: an ELF file whose [`SECTION`] section is the id-to-name table, one
//! `id<TAB>name<LF>` line per named id.
//!
//! Only that section is read. A names file's `xray_instr_map` and symbols are what
//! `llvm-xray` reads; they carry the same names (with placeholders `#id` for ids
//! without a name), so reading the text table is enough and does not depend on the
//! symbol layout.
//!
//! The format, the ELF section finder and the table reader are the core's
//! ([`flightrec_core::names`]); this module collects the table into a map, checks
//! that no id is named twice and words the errors.

use std::collections::HashMap;
use std::fmt;

use flightrec_core::names::elf::{find_section, ElfError};
use flightrec_core::names::table::{entries, TableErrorKind};
use flightrec_core::names::INSTR_MAP_SECTION;

/// The section that holds the text table (the core's).
///
/// ```
/// use flightrec_host::names::elf::SECTION;
///
/// let id = flightrec::xray::names::function_id("example::section");
/// let mut elf = Vec::new();
/// assert!(flightrec::xray::names::write_names_elf(&mut elf, id.get()));
/// // The section's name is in the file's section name table.
/// assert!(elf.windows(SECTION.len()).any(|w| w == SECTION.as_bytes()));
/// // ...and the table itself: `id<TAB>name<LF>`.
/// let line = format!("{}\texample::section\n", id.get());
/// assert!(elf.windows(line.len()).any(|w| w == line.as_bytes()));
/// ```
pub const SECTION: &str = flightrec_core::names::SECTION;

/// Why an ELF file gave no names.
///
/// ```
/// use flightrec_host::names::elf::{parse_table, read_elf_names, ElfNamesError};
///
/// // This example's own program is an ELF file, but not a names file.
/// let program = std::fs::read(std::env::current_exe().unwrap()).unwrap();
/// let err = read_elf_names(&program).unwrap_err();
/// assert_eq!(err, ElfNamesError::NoSection { has_instr_map: false });
/// assert_eq!(
///     err.to_string(),
///     "an ELF file without a flightrec_names section: not a flightrec names file"
/// );
///
/// // A damaged container.
/// assert!(matches!(read_elf_names(b"\x7fELF\x02\x01\x01"), Err(ElfNamesError::Malformed(_))));
///
/// // A table line without a tab, an id named twice.
/// let err = parse_table(b"1 main\n").unwrap_err();
/// assert_eq!(err, ElfNamesError::BadLine { line: 1, reason: "no tab between id and name" });
/// let err = parse_table(b"1\tmain\n1\tidle\n").unwrap_err();
/// assert_eq!(err, ElfNamesError::DuplicateId { line: 2, id: 1 });
/// assert_eq!(err.to_string(), "flightrec_names section, line 2: id 1 named twice");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElfNamesError {
    /// The ELF container is damaged (truncated, offsets out of range...).
    Malformed(ElfError),
    /// A well-formed ELF file without the names section.
    NoSection {
        /// The file has an XRay instrumentation map (an instrumented program).
        has_instr_map: bool,
    },
    /// A line of the table is not `id<TAB>name`.
    BadLine {
        /// 1-based line number inside the section.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An id appears twice.
    DuplicateId {
        /// 1-based line number of the second occurrence.
        line: usize,
        /// The id.
        id: u32,
    },
}

impl fmt::Display for ElfNamesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfNamesError::Malformed(e) => write!(f, "damaged ELF file: {e}"),
            ElfNamesError::NoSection {
                has_instr_map: true,
            } => write!(
                f,
                "an ELF file with an XRay instrumentation map but no {SECTION} section \
                 (an instrumented program?); give `llvm-xray extract --symbolize` output instead"
            ),
            ElfNamesError::NoSection {
                has_instr_map: false,
            } => write!(
                f,
                "an ELF file without a {SECTION} section: not a flightrec names file"
            ),
            ElfNamesError::BadLine { line, reason } => {
                write!(f, "{SECTION} section, line {line}: {reason}")
            }
            ElfNamesError::DuplicateId { line, id } => {
                write!(f, "{SECTION} section, line {line}: id {id} named twice")
            }
        }
    }
}

impl std::error::Error for ElfNamesError {}

/// Whether `bytes` start like an ELF file.
///
/// ```
/// use flightrec_host::names::elf::is_elf;
/// let program = std::fs::read(std::env::current_exe().unwrap()).unwrap();
/// assert!(is_elf(&program));
/// assert!(!is_elf(b"1 main\n"));
/// assert!(!is_elf(b"\x7fEL"));
/// ```
pub fn is_elf(bytes: &[u8]) -> bool {
    flightrec_core::names::elf::is_elf(bytes)
}

/// The names of an ELF names file (or of a firmware image with the section).
///
/// ```
/// use flightrec_host::names::elf::{read_elf_names, ElfNamesError};
/// // A file written by the desktop runtime's names writer.
/// let id = flightrec::xray::names::function_id("example::parse");
/// let mut elf = Vec::new();
/// assert!(flightrec::xray::names::write_names_elf(&mut elf, id.get()));
/// let names = read_elf_names(&elf).unwrap();
/// assert_eq!(names[&id.get()], "example::parse");
///
/// // Cut short: an error, not a panic.
/// assert!(matches!(read_elf_names(&elf[..100]), Err(ElfNamesError::Malformed(_))));
/// ```
pub fn read_elf_names(bytes: &[u8]) -> Result<HashMap<u32, String>, ElfNamesError> {
    let section = |name| find_section(bytes, name).map_err(ElfNamesError::Malformed);
    let Some(table) = section(SECTION)? else {
        return Err(ElfNamesError::NoSection {
            has_instr_map: section(INSTR_MAP_SECTION)?.is_some(),
        });
    };
    parse_table(table)
}

/// Parses the text table: `id<TAB>name<LF>` lines, the name being every byte
/// after the first tab (it may hold spaces and further tabs).
///
/// The runtime writes names as the program gave them, so a name holding a line
/// feed spans lines: a line without a tab continues the name before it. Empty
/// names are skipped (the id stays unnamed), as in a YAML map; an id named twice
/// is an error.
///
/// ```
/// use flightrec_host::names::elf::parse_table;
/// let names = parse_table(b"1\tworker\n3\tcrate::f  (x)\n4\ttwo\nlines\n").unwrap();
/// assert_eq!(names[&3], "crate::f  (x)");
/// assert_eq!(names[&4], "two\nlines");
/// assert!(parse_table(b"1 worker\n").is_err());
/// ```
pub fn parse_table(table: &[u8]) -> Result<HashMap<u32, String>, ElfNamesError> {
    let mut map: HashMap<u32, String> = HashMap::new();
    for entry in entries(table) {
        let entry = entry.map_err(|e| ElfNamesError::BadLine {
            line: e.line,
            reason: TableErrorKind::reason(e.kind),
        })?;
        if map.insert(entry.id, entry.name.to_owned()).is_some() {
            return Err(ElfNamesError::DuplicateId {
                line: entry.line,
                id: entry.id,
            });
        }
    }
    map.retain(|_, name| !name.is_empty());
    Ok(map)
}

/// The section of a firmware ELF that holds `#[flightrec::instrument]`'s names
/// (read by [`super::firmware`]): an ELF with it is a firmware image, not a
/// desktop names file.
///
/// ```
/// use flightrec_host::names::{elf::FIRMWARE_SECTION, firmware::SECTION};
/// assert_eq!((FIRMWARE_SECTION, SECTION), (".flightrec", ".flightrec"));
/// ```
pub const FIRMWARE_SECTION: &str = ".flightrec";

/// The address of the section whose bytes are `data` (a slice of `image` that
/// [`find_section`] returned): the `sh_addr` of the section header whose file
/// offset and size are `data`'s.
pub(crate) fn section_addr(image: &[u8], data: &[u8]) -> Option<u64> {
    let offset = (data.as_ptr() as usize).checked_sub(image.as_ptr() as usize)? as u64;
    let wide = *image.get(4)? == 2;
    let big = *image.get(5)? == 2;
    let read = |at: usize, n: usize| -> Option<u64> {
        let b = image.get(at..at.checked_add(n)?)?;
        let mut v = 0u64;
        for i in 0..n {
            let byte = if big { b[i] } else { b[n - 1 - i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    };
    let word = if wide { 8 } else { 4 };
    let (shoff, shentsize) = if wide { (0x28, 0x3a) } else { (0x20, 0x2e) };
    let table = usize::try_from(read(shoff, word)?).ok()?;
    let entry = usize::try_from(read(shentsize, 2)?).ok()?;
    let mut count = usize::try_from(read(shentsize + 2, 2)?).ok()?;
    if count == 0 {
        // Extended numbering: the count is section 0's size.
        count = usize::try_from(read(table + if wide { 0x20 } else { 0x14 }, word)?).ok()?;
    }
    // sh_addr, sh_offset, sh_size within a section header.
    let (addr_at, offset_at, size_at) = if wide {
        (0x10, 0x18, 0x20)
    } else {
        (0x0c, 0x10, 0x14)
    };
    (0..count).find_map(|i| {
        let h = table.checked_add(i.checked_mul(entry)?)?;
        (read(h + offset_at, word)? == offset && read(h + size_at, word)? == data.len() as u64)
            .then(|| read(h + addr_at, word))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lines_are_checked() {
        assert_eq!(parse_table(b"").unwrap().len(), 0);
        assert_eq!(parse_table(b"7\tx").unwrap()[&7], "x");
        let names = parse_table(b"1\ta\n2\t\n3\tb\n\nc\n").unwrap();
        assert_eq!(names.get(&2), None, "empty names are skipped");
        assert_eq!(names[&3], "b\n\nc");
        let err = |t: &[u8]| parse_table(t).unwrap_err().to_string();
        assert_eq!(
            err(b"zz\n1\ta\n"),
            "flightrec_names section, line 1: no tab between id and name"
        );
        assert!(err(b"-1\ta\n").contains("not a decimal number"));
        assert!(err(b"0\ta\n").contains("0 or too large"));
        assert!(err(b"99999999999\ta\n").contains("0 or too large"));
        assert!(err(b"1\t\xff\n").contains("not UTF-8"));
        assert!(err(b"1\ta\n\xff\n").contains("line 2: the name is not UTF-8"));
        assert_eq!(
            parse_table(b"1\ta\n1\tb\n").unwrap_err(),
            ElfNamesError::DuplicateId { line: 2, id: 1 }
        );
    }

    #[cfg(unix)]
    #[test]
    fn odd_names_from_the_runtime_read_back() {
        use flightrec::xray::names::{set_function_name, write_names_elf};
        use flightrec_core::fdr::FunctionId;
        // Ids far from those `function_id` hands out in other tests.
        let odd = [
            (20_001, "two\nlines"),
            (20_002, ""),
            (20_003, "tab\there"),
            (20_004, "quote \" and nul \0"),
        ];
        for (id, name) in odd {
            assert!(set_function_name(FunctionId::new(id).unwrap(), name));
        }
        let mut elf = Vec::new();
        assert!(write_names_elf(&mut elf, 20_004));
        let names = read_elf_names(&elf).unwrap();
        assert_eq!(names[&20_001], "two\nlines");
        assert_eq!(names.get(&20_002), None);
        assert_eq!(names[&20_003], "tab\there");
        // The runtime writes `"` as `'` and NUL as `_`.
        assert_eq!(names[&20_004], "quote ' and nul _");
    }

    #[cfg(unix)]
    #[test]
    fn every_truncation_and_byte_flip_of_a_names_file_is_an_error_or_names() {
        use flightrec::xray::names::{function_id, write_names_elf};
        let a = function_id("tool::names_elf::a");
        let b = function_id("tool::names_elf::b");
        let mut elf = Vec::new();
        assert!(write_names_elf(&mut elf, b.get()));
        let names = read_elf_names(&elf).unwrap();
        assert_eq!(names[&a.get()], "tool::names_elf::a");
        assert_eq!(names[&b.get()], "tool::names_elf::b");
        // The section headers come last, so every truncation loses them.
        for len in 0..elf.len() {
            assert!(read_elf_names(&elf[..len]).is_err(), "cut at {len}");
        }
        for at in 0..elf.len() {
            for bit in [0x01, 0x80, 0xff] {
                let mut bad = elf.clone();
                bad[at] ^= bit;
                let _ = read_elf_names(&bad);
            }
        }
    }

    proptest::proptest! {
        /// Any bytes after an ELF64 identification: names or an error, no panic.
        #[test]
        fn arbitrary_elf_bodies_never_panic(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1024)) {
            let mut bytes = b"\x7fELF\x02\x01\x01\x00".to_vec();
            bytes.extend_from_slice(&body);
            let _ = read_elf_names(&bytes);
        }
    }
}
