//! Finding a named section in an ELF image, 32 or 64 bits, either byte order.
//!
//! Only what is needed to find a section's bytes is read: the file header, the
//! section header table and the section name table. Every offset and size is
//! checked against the image, so a damaged or foreign file is an [`ElfError`],
//! never a panic, and nothing is allocated.

use core::fmt;

/// `SHT_NOBITS`: a section that occupies no bytes of the file.
const NOBITS: u32 = 8;
/// `SHN_XINDEX`: the section name table's index is in section 0's `sh_link`.
const XINDEX: u32 = 0xffff;

/// Why an image gave no sections.
///
/// ```
/// use flightrec_core::names::elf::{find_section, ElfError};
/// assert_eq!(find_section(b"1\tmain\n", "x"), Err(ElfError::NotElf));
/// assert_eq!(find_section(b"\x7fELF\x02\x01\x01", "x"), Err(ElfError::Truncated));
/// assert_eq!(ElfError::Truncated.to_string(), "the file header is cut short");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ElfError {
    /// The image does not start with the ELF magic number.
    NotElf,
    /// Neither 32 nor 64 bits (`EI_CLASS`).
    UnknownClass(u8),
    /// Neither little nor big endian (`EI_DATA`).
    UnknownByteOrder(u8),
    /// The file header is cut short.
    Truncated,
    /// The section header table lies outside the image or its entries are too small.
    SectionHeadersOutOfBounds,
    /// The section name table is missing or lies outside the image.
    SectionNamesOutOfBounds,
    /// A section's name lies outside the section name table.
    SectionNameOutOfBounds {
        /// Index of the section.
        section: u32,
    },
    /// The found section's bytes lie outside the image.
    SectionOutOfBounds {
        /// Index of the section.
        section: u32,
    },
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::NotElf => f.write_str("not an ELF file"),
            ElfError::UnknownClass(c) => write!(f, "unknown ELF class {c}"),
            ElfError::UnknownByteOrder(d) => write!(f, "unknown ELF byte order {d}"),
            ElfError::Truncated => f.write_str("the file header is cut short"),
            ElfError::SectionHeadersOutOfBounds => {
                f.write_str("the section header table lies outside the file")
            }
            ElfError::SectionNamesOutOfBounds => {
                f.write_str("the section name table lies outside the file")
            }
            ElfError::SectionNameOutOfBounds { section } => {
                write!(
                    f,
                    "the name of section {section} lies outside the section name table"
                )
            }
            ElfError::SectionOutOfBounds { section } => {
                write!(f, "section {section} lies outside the file")
            }
        }
    }
}

impl core::error::Error for ElfError {}

/// Whether `image` starts with the ELF magic number.
///
/// ```
/// use flightrec_core::names::elf::is_elf;
/// assert!(is_elf(b"\x7fELF\x02\x01\x01\x00"));
/// assert!(!is_elf(b"\x7fEL"));
/// assert!(!is_elf(b"1 main\n"));
/// ```
pub fn is_elf(image: &[u8]) -> bool {
    image.starts_with(b"\x7fELF")
}

/// The image's layout: word size and byte order.
#[derive(Clone, Copy)]
struct Layout<'a> {
    image: &'a [u8],
    wide: bool,
    big: bool,
}

impl<'a> Layout<'a> {
    fn bytes<const N: usize>(&self, at: u64) -> Option<[u8; N]> {
        let at = usize::try_from(at).ok()?;
        self.image.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    fn u16(&self, at: u64) -> Option<u64> {
        let b = self.bytes::<2>(at)?;
        Some(u64::from(if self.big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }))
    }

    fn u32(&self, at: u64) -> Option<u64> {
        let b = self.bytes::<4>(at)?;
        Some(u64::from(if self.big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }))
    }

    fn u64(&self, at: u64) -> Option<u64> {
        let b = self.bytes::<8>(at)?;
        Some(if self.big {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    }

    /// An address-sized field: 4 bytes in ELF32, 8 in ELF64.
    fn word(&self, at: u64) -> Option<u64> {
        if self.wide {
            self.u64(at)
        } else {
            self.u32(at)
        }
    }

    /// `len` bytes of the image from `offset`.
    fn range(&self, offset: u64, len: u64) -> Option<&'a [u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.image.get(start..end)
    }
}

/// One section header's fields that matter here.
struct SectionHeader {
    name: u64,
    kind: u64,
    offset: u64,
    size: u64,
    link: u64,
}

/// The section header table.
struct Sections<'a> {
    layout: Layout<'a>,
    offset: u64,
    entry_size: u64,
    count: u64,
}

impl Sections<'_> {
    fn header(&self, index: u64) -> Option<SectionHeader> {
        let l = &self.layout;
        let at = self
            .offset
            .checked_add(index.checked_mul(self.entry_size)?)?;
        let (offset_at, size_at, link_at) = if l.wide {
            (0x18, 0x20, 0x28)
        } else {
            (0x10, 0x14, 0x18)
        };
        Some(SectionHeader {
            name: l.u32(at)?,
            kind: l.u32(at + 4)?,
            offset: l.word(at + offset_at)?,
            size: l.word(at + size_at)?,
            link: l.u32(at + link_at)?,
        })
    }
}

/// The bytes of the first section called `name` in the ELF `image`; `Ok(None)` when
/// the image has no section of that name. A section that occupies no file bytes
/// (`SHT_NOBITS`) reads as empty.
///
/// ```
/// use flightrec_core::names::elf::{find_section, ElfError};
/// use flightrec_core::names::{file, SECTION};
/// let mut image = [0u8; 1024];
/// let len = file::write_into(&mut image, 1, |_| Some(&b"main"[..])).unwrap();
/// let image = &image[..len];
/// assert_eq!(find_section(image, SECTION), Ok(Some(&b"1\tmain\n"[..])));
/// assert_eq!(find_section(image, "no_such_section"), Ok(None));
/// // The section headers come last: cut short, they are out of bounds.
/// assert_eq!(find_section(&image[..len - 1], SECTION), Err(ElfError::SectionHeadersOutOfBounds));
/// ```
pub fn find_section<'a>(image: &'a [u8], name: &str) -> Result<Option<&'a [u8]>, ElfError> {
    if !is_elf(image) {
        return Err(ElfError::NotElf);
    }
    let ident = |i: usize| image.get(i).copied().ok_or(ElfError::Truncated);
    let wide = match ident(4)? {
        1 => false,
        2 => true,
        c => return Err(ElfError::UnknownClass(c)),
    };
    let big = match ident(5)? {
        1 => false,
        2 => true,
        d => return Err(ElfError::UnknownByteOrder(d)),
    };
    let layout = Layout { image, wide, big };
    let header_size: usize = if wide { 64 } else { 52 };
    if image.len() < header_size {
        return Err(ElfError::Truncated);
    }
    let truncated = ElfError::Truncated;
    let (shoff_at, shentsize_at, min_entry) = if wide {
        (0x28, 0x3a, 64)
    } else {
        (0x20, 0x2e, 40)
    };
    let offset = layout.word(shoff_at).ok_or(truncated)?;
    let entry_size = layout.u16(shentsize_at).ok_or(truncated)?;
    let mut count = layout.u16(shentsize_at + 2).ok_or(truncated)?;
    let mut names_index = layout.u16(shentsize_at + 4).ok_or(truncated)?;
    if offset == 0 {
        return Ok(None);
    }
    if entry_size < min_entry {
        return Err(ElfError::SectionHeadersOutOfBounds);
    }
    let mut sections = Sections {
        layout,
        offset,
        entry_size,
        count: 1,
    };
    let first = sections
        .header(0)
        .ok_or(ElfError::SectionHeadersOutOfBounds)?;
    // Extended numbering: counts that do not fit the file header are in section 0.
    if count == 0 {
        count = first.size;
    }
    if names_index == u64::from(XINDEX) {
        names_index = first.link;
    }
    let table_len = count.checked_mul(entry_size);
    if table_len
        .and_then(|len| layout.range(offset, len))
        .is_none()
    {
        return Err(ElfError::SectionHeadersOutOfBounds);
    }
    sections.count = count;
    if names_index == 0 {
        return Ok(None);
    }
    let names = (names_index < count)
        .then(|| sections.header(names_index))
        .flatten()
        .and_then(|h| layout.range(h.offset, h.size))
        .ok_or(ElfError::SectionNamesOutOfBounds)?;
    for index in 0..sections.count {
        let section = u32::try_from(index).unwrap_or(u32::MAX);
        let h = sections
            .header(index)
            .ok_or(ElfError::SectionHeadersOutOfBounds)?;
        let this_name = usize::try_from(h.name)
            .ok()
            .and_then(|at| names.get(at..))
            .and_then(|tail| tail.split(|&b| b == 0).next().filter(|_| tail.contains(&0)))
            .ok_or(ElfError::SectionNameOutOfBounds { section })?;
        if this_name != name.as_bytes() {
            continue;
        }
        if h.kind == u64::from(NOBITS) {
            return Ok(Some(&[]));
        }
        return layout
            .range(h.offset, h.size)
            .map(Some)
            .ok_or(ElfError::SectionOutOfBounds { section });
    }
    Ok(None)
}
