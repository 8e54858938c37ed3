//! Function names from a firmware ELF: the `.flightrec` section that
//! `#[flightrec::instrument]` fills on `#![no_std]` firmware.
//!
//! Each instrumented function (or `scope!`) has one static in the section,
//! `module::path::name<TAB>file.rs:line<NUL>`; the function's id is the static's
//! address. The section is not loaded (the firmware carries no names), and the
//! linker fragment `flightrec.x` puts it at address 1 (GNU ld) or at 0 behind one
//! NUL byte (LLD), so ids start at 1.
//!
//! An entry starts at each address that is the section's start or follows a NUL,
//! and runs to the next NUL. Problems are warnings, never failures: the trace is
//! written with numeric ids for whatever cannot be named.
//!
//! With the `flightrec` feature `small-ids` a site's id is instead the address
//! of a byte of its own in `.flightrec.id` (below 256), and `.flightrec.map`
//! pairs each id with its name: for each site two addresses (words of the ELF's
//! class and byte order), its id's, then its name static's.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use flightrec_core::fdr::decoder::{Decoded, Decoder};
use flightrec_core::fdr::records::Record;
use flightrec_core::fdr::FunctionId;
use flightrec_core::names::elf::{find_section, is_elf, ElfError};
use flightrec_core::tasks::{poll_id, TaskFunction, KEY_BITS};

use super::elf::section_addr;
use super::escape::escape;
use super::statics::object_symbols;
use super::Names;
use crate::read::file::TraceFile;

/// The ELF section that holds the names. Example on [`FirmwareNames`].
pub const SECTION: &str = super::elf::FIRMWARE_SECTION;

/// How many poll ids [`FirmwareNames::names`] names at most (the words of
/// the task pools).
///
/// ```
/// use flightrec_host::names::firmware::{FirmwareNames, MAX_POLL_NAMES};
/// // A pool of more four-byte words than that: the first ones are named.
/// let words = MAX_POLL_NAMES as u64 + 16;
/// let fw = FirmwareNames {
///     statics: vec![(0x2000_0000, 4 * words, "app::big::POOL".into())],
///     ..FirmwareNames::default()
/// };
/// assert_eq!(fw.names().len(), MAX_POLL_NAMES);
/// ```
pub const MAX_POLL_NAMES: usize = 1 << 16;

/// The ELF section that pairs small ids with names (feature `small-ids`).
/// Example on [`FirmwareNames::with_id_map`].
pub const MAP_SECTION: &str = ".flightrec.map";

/// One instrumented function of the firmware. Example on [`FirmwareNames`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `module::path::function`.
    pub name: String,
    /// `file.rs:line` (empty when the entry has no tab).
    pub location: String,
}

/// The names of a firmware ELF, by id, and what was wrong with the section.
///
/// ```
/// use flightrec_host::names::firmware::{Entry, FirmwareNames, SECTION};
///
/// // The section at address 0 behind LLD's leading NUL: ids 1 and 25.
/// assert_eq!(SECTION, ".flightrec");
/// let section = b"\0app::main\tsrc/main.rs:9\0app::fib\tsrc/main.rs:20\0";
/// let fw = FirmwareNames::from_section(0, section);
/// let main = Entry { name: "app::main".into(), location: "src/main.rs:9".into() };
/// assert_eq!(fw.entries[&1], main);
/// assert_eq!(fw.entries[&1].name, "app::main");
/// assert_eq!(fw.entries[&25].location, "src/main.rs:20");
/// assert!(fw.warnings.is_empty());
/// assert_eq!(fw.names().get(25), Some("app::fib"));
///
/// // No trailing NUL: the last entry is kept, with a warning.
/// let fw = FirmwareNames::from_section(1, b"app::main\tsrc/main.rs:9");
/// assert_eq!(fw.entries[&1].name, "app::main");
/// assert!(fw.warnings[0].contains("does not end with a NUL"), "{:?}", fw.warnings);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirmwareNames {
    /// Entries by id.
    pub entries: BTreeMap<u32, Entry>,
    /// What was wrong with the section (each a sentence).
    pub warnings: Vec<String>,
    /// The ELF's `static`s (address, size, name), sorted: they name an async
    /// executor's poll and pass ids ([`flightrec_core::tasks`]), which are
    /// addresses, not entries of the section. Example on
    /// [`FirmwareNames::task_name`].
    pub statics: Vec<(u64, u64, String)>,
}

/// Why a file gave no firmware names.
///
/// ```
/// use flightrec_host::names::firmware::{FirmwareNames, FirmwareNamesError};
/// assert_eq!(FirmwareNames::from_elf(b"1 main\n"), Err(FirmwareNamesError::NotElf));
/// // This example's own program is an ELF file without the section.
/// let program = std::fs::read(std::env::current_exe().unwrap()).unwrap();
/// let err = FirmwareNames::from_elf(&program).unwrap_err();
/// assert_eq!(err, FirmwareNamesError::NoSection);
/// assert!(err.to_string().contains("-Tflightrec.x"), "{err}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirmwareNamesError {
    /// Not an ELF file.
    NotElf,
    /// A damaged ELF file.
    Malformed(ElfError),
    /// An ELF file without the `.flightrec` section.
    NoSection,
}

impl fmt::Display for FirmwareNamesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotElf => f.write_str("not an ELF file"),
            Self::Malformed(e) => write!(f, "damaged ELF file: {e}"),
            Self::NoSection => write!(
                f,
                "no {SECTION} section: not a firmware built with #[flightrec::instrument] \
                 and `-C link-arg=-Tflightrec.x`"
            ),
        }
    }
}

impl std::error::Error for FirmwareNamesError {}

impl FirmwareNames {
    /// Reads the `.flightrec` section of a firmware ELF image.
    ///
    /// ```
    /// use flightrec_host::names::firmware::{FirmwareNames, FirmwareNamesError};
    /// // Cut short: an error, not a panic.
    /// assert!(matches!(
    ///     FirmwareNames::from_elf(b"\x7fELF\x01\x01\x01"),
    ///     Err(FirmwareNamesError::Malformed(_))
    /// ));
    /// ```
    pub fn from_elf(image: &[u8]) -> Result<Self, FirmwareNamesError> {
        if !is_elf(image) {
            return Err(FirmwareNamesError::NotElf);
        }
        let data = find_section(image, SECTION)
            .map_err(FirmwareNamesError::Malformed)?
            .ok_or(FirmwareNamesError::NoSection)?;
        let addr = section_addr(image, data).ok_or(FirmwareNamesError::Malformed(
            ElfError::SectionHeadersOutOfBounds,
        ))?;
        let mut names = Self::from_section(addr, data);
        // A firmware without a symbol table names no tasks; its section still
        // names its functions.
        names.statics = object_symbols(image).unwrap_or_default();
        match find_section(image, MAP_SECTION).map_err(FirmwareNamesError::Malformed)? {
            // `is_elf` held: bytes 4 and 5 are there.
            Some(map) => Ok(names.with_id_map(map, image[4] == 2, image[5] == 2)),
            None => Ok(names),
        }
    }

    /// The same names keyed by the ids that `map` (the bytes of
    /// [`MAP_SECTION`]: pairs of addresses, 8-byte words if `wide`, big-endian
    /// if `big`) gives them instead of by their addresses. A pair whose name is
    /// not an entry, an id that is not a function id or is given twice, a name
    /// without an id and a map cut short are warnings.
    ///
    /// ```
    /// use flightrec_host::names::firmware::{FirmwareNames, MAP_SECTION};
    /// assert_eq!(MAP_SECTION, ".flightrec.map");
    /// let fw = FirmwareNames::from_section(0, b"\0app::main\tsrc/main.rs:9\0app::fib\tsrc/main.rs:20\0");
    /// // Id 1 names the entry at 25, id 2 the one at 1.
    /// let map = [1u32, 25, 2, 1].map(u32::to_le_bytes).concat();
    /// let fw = fw.with_id_map(&map, false, false);
    /// assert_eq!(fw.entries[&1].name, "app::fib");
    /// assert_eq!(fw.entries[&2].name, "app::main");
    /// assert!(fw.warnings.is_empty(), "{:?}", fw.warnings);
    /// ```
    pub fn with_id_map(mut self, map: &[u8], wide: bool, big: bool) -> Self {
        let word = if wide { 8 } else { 4 };
        let read = |b: &[u8]| {
            let mut v = 0u64;
            for i in 0..b.len() {
                v = (v << 8) | u64::from(if big { b[i] } else { b[b.len() - 1 - i] });
            }
            v
        };
        let by_addr = std::mem::take(&mut self.entries);
        let mut named = std::collections::BTreeSet::new();
        let mut problems = Vec::new();
        let pairs = map.chunks_exact(2 * word);
        if !pairs.remainder().is_empty() {
            problems.push(format!(
                "the {MAP_SECTION} section is {} bytes, not a whole number of pairs of \
                 {word}-byte addresses (its last {} bytes are ignored)",
                map.len(),
                pairs.remainder().len()
            ));
        }
        for pair in pairs {
            let (id, name) = (read(&pair[..word]), read(&pair[word..]));
            let entry = u32::try_from(name).ok().and_then(|n| by_addr.get(&n));
            let valid = u32::try_from(id)
                .ok()
                .and_then(|id| FunctionId::new(id).ok());
            match (valid, entry) {
                (Some(id), Some(entry)) => {
                    named.insert(name);
                    if self.entries.insert(id.get(), entry.clone()).is_some() {
                        problems.push(format!(
                            "id {} is given to more than one function",
                            id.get()
                        ));
                    }
                }
                (None, _) => problems.push(format!(
                    "{MAP_SECTION} gives an id that is no function id ({id:#x})"
                )),
                (_, None) => problems.push(format!(
                    "{MAP_SECTION} gives id {id} a name at {name:#x}, where {SECTION} has none"
                )),
            }
        }
        let unnamed: Vec<&str> = by_addr
            .iter()
            .filter(|(addr, _)| !named.contains(&u64::from(**addr)))
            .map(|(_, e)| e.name.as_str())
            .collect();
        if !unnamed.is_empty() {
            problems.push(format!(
                "{} functions in {SECTION} have no id in {MAP_SECTION} (the first: `{}`)",
                unnamed.len(),
                escape(unnamed[0])
            ));
        }
        self.warnings.extend(problems);
        self
    }

    /// Reads a firmware ELF file; errors name the file.
    ///
    /// ```
    /// use flightrec_host::names::firmware::FirmwareNames;
    /// let err = FirmwareNames::load(std::path::Path::new("/nonexistent/fw.elf")).unwrap_err();
    /// assert!(err.starts_with("/nonexistent/fw.elf: "), "{err}");
    /// ```
    pub fn load(path: &Path) -> Result<Self, String> {
        // Mapped, not read: a firmware image of any size costs the pages of
        // its headers and sections only.
        let file = TraceFile::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_elf(file.bytes()).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the section's bytes, which start at address `addr`. Example on
    /// [`FirmwareNames`].
    pub fn from_section(addr: u64, data: &[u8]) -> Self {
        let mut fw = Self::default();
        let mut at = 0usize;
        let mut too_large = 0usize;
        let mut first_too_large = None;
        while at < data.len() {
            let (text, next) = match data[at..].iter().position(|&b| b == 0) {
                Some(n) => (&data[at..at + n], at + n + 1),
                None => {
                    fw.warnings.push(format!(
                        "the {SECTION} section does not end with a NUL (its last entry, at \
                         offset {at}, is cut short or the section is not flightrec's)"
                    ));
                    (&data[at..], data.len())
                }
            };
            let id = addr.saturating_add(at as u64);
            at = next;
            if text.is_empty() {
                continue; // LLD's leading NUL
            }
            let Ok(id) = u32::try_from(id)
                .map_err(|_| ())
                .and_then(|id| FunctionId::new(id).map_err(|_| ()))
            else {
                too_large += 1;
                first_too_large.get_or_insert(id);
                continue;
            };
            let text = super::escape::text_of(text);
            let (name, location) = text.split_once('\t').unwrap_or((&text, ""));
            fw.entries.insert(
                id.get(),
                Entry {
                    name: name.to_owned(),
                    location: location.to_owned(),
                },
            );
        }
        if let Some(first) = first_too_large {
            fw.warnings.push(format!(
                "{too_large} entries lie at addresses over 2^28 (the first at {first:#x}): \
                 function records cannot carry such ids; is `flightrec.x` linked?"
            ));
        }
        let mut by_name: HashMap<&str, Vec<(u32, &str)>> = HashMap::new();
        for (id, e) in &fw.entries {
            by_name.entry(&e.name).or_default().push((*id, &e.location));
        }
        let mut dups: Vec<String> = by_name
            .into_iter()
            .filter(|(_, ids)| ids.len() > 1)
            .map(|(name, ids)| {
                let at: Vec<String> = ids
                    .iter()
                    .map(|(id, loc)| format!("{id} ({})", escape(loc)))
                    .collect();
                format!(
                    "`{}` names several functions: ids {}",
                    escape(name),
                    at.join(", ")
                )
            })
            .collect();
        dups.sort();
        fw.warnings.extend(dups);
        fw
    }

    /// The names, by id (an id without one displays as `#id`). Example on
    /// [`FirmwareNames`].
    pub fn names(&self) -> Names {
        let mut map: HashMap<u32, String> = self
            .entries
            .iter()
            .map(|(id, e)| (*id, e.name.clone()))
            .collect();
        map.extend(self.poll_names());
        Names::from_map(map)
    }

    /// The poll ids of every task a task pool (`...::POOL`) can hold, named by
    /// the task (every four-byte word of the pool: a task's id is the address
    /// of its header, somewhere in its pool), at most [`MAX_POLL_NAMES`].
    fn poll_names(&self) -> impl Iterator<Item = (u32, String)> + '_ {
        self.statics
            .iter()
            .filter_map(|(start, size, name)| Some((*start, *size, name.strip_suffix("::POOL")?)))
            .flat_map(|(start, size, task)| {
                (start..start + size).step_by(4).filter_map(move |a| {
                    Some((poll_id(u32::try_from(a).ok()?).get(), task.to_owned()))
                })
            })
            .take(MAX_POLL_NAMES)
    }

    /// The name of an async executor's poll or pass id: the task whose pool
    /// holds the address the id keeps (the pool's path without `::POOL`), or
    /// the `static` that holds the executor; `None` for other ids and for
    /// addresses no such `static` holds (a stream from another build).
    ///
    /// ```
    /// use flightrec_core::tasks::{pass_id, poll_id};
    /// use flightrec_host::names::firmware::FirmwareNames;
    /// let fw = FirmwareNames {
    ///     statics: vec![
    ///         (0x2000_0100, 16, "app::EXECUTOR".into()),
    ///         (0x2000_0a00, 256, "app::ticker::POOL".into()),
    ///     ],
    ///     ..FirmwareNames::default()
    /// };
    /// assert_eq!(fw.task_name(poll_id(0x2000_0a48).get()).as_deref(), Some("app::ticker"));
    /// assert_eq!(fw.task_name(pass_id(0x2000_0100).get()).as_deref(), Some("app::EXECUTOR"));
    /// // An executor is no task pool, a task is in one.
    /// assert_eq!(fw.task_name(pass_id(0x2000_0a48).get()), None);
    /// assert_eq!(fw.task_name(poll_id(0x2000_0100).get()), None);
    /// assert_eq!(fw.task_name(poll_id(0x2000_4000).get()), None);
    /// assert_eq!(fw.task_name(7), None);
    /// // Their ids are no mismatch; others are.
    /// assert_eq!(fw.names().get(poll_id(0x2000_0a48).get()), Some("app::ticker"));
    /// ```
    pub fn task_name(&self, id: u32) -> Option<String> {
        let f = TaskFunction::of(FunctionId::new(id).ok()?)?;
        let (key, pool) = match f {
            TaskFunction::Poll { key } => (key, true),
            TaskFunction::Pass { key } => (key, false),
        };
        let mask = (1u64 << KEY_BITS) - 1;
        self.statics.iter().find_map(|(start, size, name)| {
            // The key is bits 2 to 25 of the address: compared within the
            // static's range, cut the same way.
            let (lo, hi) = (start >> 2, (start + (*size).max(1) - 1) >> 2);
            let mut word = (lo & !mask) | u64::from(key);
            if word < lo {
                word += mask + 1;
            }
            let held = word <= hi;
            match (held, name.strip_suffix("::POOL")) {
                (true, Some(task)) if pool => Some(task.to_owned()),
                (true, None) if !pool => Some(name.clone()),
                _ => None,
            }
        })
    }

    /// The function ids of an FDR trace that the section does not name, in
    /// order (a stream from another build, or a damaged one).
    ///
    /// ```
    /// use flightrec_host::names::firmware::FirmwareNames;
    /// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
    /// let none = FirmwareNames::default();
    /// assert!(!none.unknown_ids(trace).is_empty());
    /// ```
    pub fn unknown_ids(&self, trace: &[u8]) -> Vec<u32> {
        let Ok(decoder) = Decoder::new(trace) else {
            return Vec::new();
        };
        let mut unknown: Vec<u32> = decoder
            .filter_map(|d| match d {
                Ok(Decoded {
                    record: Record::Function { id, .. },
                    ..
                }) => Some(id.get()),
                _ => None,
            })
            .filter(|id| !self.entries.contains_key(id))
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        // An async executor's poll and pass ids are addresses of its tasks
        // and of itself: known when a `static` of the ELF holds them.
        unknown.retain(|id| self.task_name(*id).is_none());
        unknown
    }

    /// A warning for `trace` naming `elf`, when the trace holds ids the ELF does
    /// not name.
    ///
    /// ```
    /// use flightrec_host::names::firmware::FirmwareNames;
    /// use std::path::Path;
    /// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
    /// let w = FirmwareNames::default()
    ///     .mismatch_warning(trace, Path::new("t.xray"), Path::new("fw.elf"))
    ///     .unwrap();
    /// assert!(w.starts_with("t.xray: "), "{w}");
    /// assert!(w.contains("fw.elf"), "{w}");
    /// ```
    pub fn mismatch_warning(&self, trace: &[u8], trace_path: &Path, elf: &Path) -> Option<String> {
        let unknown = self.unknown_ids(trace);
        let first: Vec<String> = unknown.iter().take(5).map(u32::to_string).collect();
        (!unknown.is_empty()).then(|| {
            format!(
                "{}: {} function ids are not in the {SECTION} section of {} (ids {}{}): \
                 a stream from another build? They stay numeric",
                trace_path.display(),
                unknown.len(),
                elf.display(),
                first.join(", "),
                if unknown.len() > 5 { ", ..." } else { "" }
            )
        })
    }

    /// Writes the names file `llvm-xray -m` reads (the desktop runtime's format:
    /// `llvm-xray account|stack -m FILE`).
    ///
    /// ```
    /// use flightrec_host::names::Names;
    /// use flightrec_host::names::firmware::FirmwareNames;
    /// let fw = FirmwareNames::from_section(1, b"app::main\tsrc/main.rs:9\0app::fib\tsrc/main.rs:20\0");
    /// let dir = tempfile::tempdir().unwrap();
    /// let out = dir.path().join("fw.names");
    /// fw.write_names_file(&out).unwrap();
    /// let back = Names::load(&out).unwrap();
    /// assert_eq!(back.get(1), Some("app::main"));
    /// assert_eq!(back.get(25), Some("app::fib"));
    /// ```
    pub fn write_names_file(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let max_id = self.entries.keys().next_back().copied().unwrap_or(0);
        // llvm-xray prints these names as they are: escaped here, once.
        let escaped: BTreeMap<u32, std::borrow::Cow<'_, str>> = self
            .entries
            .iter()
            .map(|(id, e)| (*id, escape(&e.name)))
            .collect();
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        flightrec_core::names::file::write(
            max_id,
            |id| escaped.get(&id).map(|n| n.as_bytes()),
            |b: &[u8]| out.write_all(b),
        )?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_and_large_ids_are_warnings() {
        let fw = FirmwareNames::from_section(
            1,
            b"app::new\ta.rs:1\0app::new\tb.rs:2\0app::run\tc.rs:3\0",
        );
        assert_eq!(fw.entries.len(), 3);
        assert_eq!(fw.warnings.len(), 1, "{:?}", fw.warnings);
        assert!(fw.warnings[0]
            .contains("`app::new` names several functions: ids 1 (a.rs:1), 17 (b.rs:2)"));
        let fw = FirmwareNames::from_section(0x2000_0000, b"app::main\tm.rs:1\0");
        assert!(fw.entries.is_empty());
        assert!(fw.warnings[0].contains("over 2^28"), "{:?}", fw.warnings);
    }

    /// A minimal ELF32 (`big`: big-endian) with a `.flightrec` section at `addr`.
    fn elf32(addr: u32, section: &[u8], big: bool) -> Vec<u8> {
        let u16b = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let names = b"\0.flightrec\0.shstrtab\0";
        let data_at = 52u32;
        let names_at = data_at + section.len() as u32;
        let shoff = names_at + names.len() as u32;
        let mut e = vec![0x7f, b'E', b'L', b'F', 1, if big { 2 } else { 1 }, 1];
        e.resize(16, 0);
        e.extend_from_slice(&u16b(2)); // ET_EXEC
        e.extend_from_slice(&u16b(40)); // EM_ARM
        e.extend_from_slice(&u32b(1));
        e.extend_from_slice(&u32b(0)); // entry
        e.extend_from_slice(&u32b(0)); // phoff
        e.extend_from_slice(&u32b(shoff));
        e.extend_from_slice(&u32b(0)); // flags
        for v in [52, 0, 0, 40, 3, 2] {
            e.extend_from_slice(&u16b(v)); // ehsize, ph*, shentsize, shnum, shstrndx
        }
        e.extend_from_slice(section);
        e.extend_from_slice(names);
        let header = |name: u32, kind: u32, addr: u32, off: u32, size: u32| {
            let mut h = Vec::new();
            for v in [name, kind, 0, addr, off, size, 0, 0, 1, 0] {
                h.extend_from_slice(&u32b(v));
            }
            h
        };
        e.extend(header(0, 0, 0, 0, 0));
        e.extend(header(1, 1, addr, data_at, section.len() as u32));
        e.extend(header(12, 3, 0, names_at, names.len() as u32));
        e
    }

    #[test]
    fn an_id_map_renames_and_reports_what_does_not_fit() {
        let section = b"\0a\tm.rs:1\0b\tm.rs:2\0c\tm.rs:3\0";
        // Entries at 1 ("a"), 10 ("b"), 19 ("c").
        let fw = FirmwareNames::from_section(0, section);
        assert_eq!(fw.entries.keys().copied().collect::<Vec<_>>(), [1, 10, 19]);
        let be = |v: &[u64]| v.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
        // 64-bit big-endian words: id 3 names "b", 2^28 is no id, id 4 points
        // nowhere, id 3 again names "a"; "c" has none; three bytes left over.
        let mut map = be(&[3, 10, 1 << 28, 19, 4, 99, 3, 1]);
        map.extend_from_slice(&[1, 2, 3]);
        let fw = fw.with_id_map(&map, true, true);
        assert_eq!(fw.entries.len(), 1);
        assert_eq!(fw.entries[&3].name, "a");
        let w = fw.warnings.join("\n");
        for want in [
            "not a whole number of pairs of 8-byte addresses (its last 3 bytes",
            "no function id (0x10000000)",
            "id 4 a name at 0x63, where .flightrec has none",
            "id 3 is given to more than one function",
            "1 functions in .flightrec have no id in .flightrec.map (the first: `c`)",
        ] {
            assert!(w.contains(want), "{want:?} not in {w}");
        }
    }

    #[test]
    fn ids_are_addresses_in_either_byte_order() {
        let section = b"app::main\tm.rs:1\0app::tick\tm.rs:9\0";
        for big in [false, true] {
            // GNU ld: the section at 1, no leading NUL.
            let fw = FirmwareNames::from_elf(&elf32(1, section, big)).unwrap();
            let ids: Vec<u32> = fw.entries.keys().copied().collect();
            assert_eq!(ids, [1, 18], "big-endian: {big}");
            assert_eq!(fw.entries[&18].name, "app::tick");
            assert!(fw.warnings.is_empty());
        }
        let mut lld = vec![0u8];
        lld.extend_from_slice(section);
        let fw = FirmwareNames::from_elf(&elf32(0, &lld, false)).unwrap();
        assert_eq!(fw.entries.keys().copied().collect::<Vec<_>>(), [1, 18]);
        // Cut anywhere: an error or fewer names, never a panic.
        let whole = elf32(1, section, false);
        for len in 0..whole.len() {
            let _ = FirmwareNames::from_elf(&whole[..len]);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut x = 0x1234_5678u32;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (x % 5) as u8 // many NULs and tabs-free bytes
                })
                .collect();
            let _ = FirmwareNames::from_section(u64::from(x), &bytes);
            let mut elf = b"\x7fELF\x01\x01\x01".to_vec();
            elf.extend_from_slice(&bytes);
            let _ = FirmwareNames::from_elf(&elf);
        }
    }
}
