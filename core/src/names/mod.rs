//! The names file: function id to name, as a text table in an ELF section.
//!
//! One format serves every side. The desktop runtime writes a names file beside
//! each trace (`<trace>` + [`SUFFIX`]): a small ELF shared object that `llvm-xray`
//! reads as an instrumentation map, whose [`SECTION`] section holds the id-to-name
//! table ([`file`](mod@file)). Firmware puts the same table in a non-loaded section of its
//! own ELF image. The host finds the section in either ([`elf::find_section`]) and
//! reads the table ([`table::entries`]).
//!
//! The table is text: one `id<TAB>name<LF>` line per named id, `id` in decimal
//! (1 to `u32::MAX`), the name every byte after the first tab. A name may hold a
//! line feed: a line without a tab continues the name of the line before.
//!
//! ```
//! use flightrec_core::names::{elf, file, table, SECTION};
//!
//! // A names file for ids 1 to 3; id 2 has no name.
//! let names = [Some("main"), None, Some("uart::flush")];
//! let name_of = |id: u32| names.get(id as usize - 1).copied().flatten().map(str::as_bytes);
//! let mut image = [0u8; 1024];
//! let len = file::write_into(&mut image, 3, name_of).unwrap();
//!
//! let section = elf::find_section(&image[..len], SECTION).unwrap().unwrap();
//! let mut read = table::entries(section).map(|e| e.map(|e| (e.id, e.name)));
//! assert_eq!(read.next(), Some(Ok((1, "main"))));
//! assert_eq!(read.next(), Some(Ok((3, "uart::flush"))));
//! assert_eq!(read.next(), None);
//! ```

pub mod elf;
pub mod file;
pub mod table;

/// The ELF section that holds the id-to-name table.
///
/// ```
/// use flightrec_core::names::{elf, file, SECTION};
/// let mut image = [0u8; 1024];
/// let len = file::write_into(&mut image, 1, |_| Some(&b"main"[..])).unwrap();
/// assert_eq!(elf::find_section(&image[..len], SECTION), Ok(Some(&b"1\tmain\n"[..])));
/// ```
pub const SECTION: &str = "flightrec_names";

/// Appended to a trace's path to name its names file: `<trace>.names`.
///
/// ```
/// assert_eq!(flightrec_core::names::SUFFIX, ".names");
/// ```
pub const SUFFIX: &str = ".names";

/// The section `llvm-xray` reads function addresses from. An ELF file with this
/// section but no [`SECTION`] is most likely an instrumented program, not a names
/// file.
///
/// ```
/// use flightrec_core::names::{elf, file, INSTR_MAP_SECTION};
/// let mut image = [0u8; 1024];
/// let len = file::write_into(&mut image, 2, |_| None).unwrap();
/// // Two entries of 32 bytes: one per id.
/// let map = elf::find_section(&image[..len], INSTR_MAP_SECTION).unwrap().unwrap();
/// assert_eq!(map.len(), 64);
/// ```
pub const INSTR_MAP_SECTION: &str = "xray_instr_map";
