//! Function names for `dump` and `convert`: id to name.
//!
//! Three formats are read, told apart by their content:
//!
//! * The names file the desktop runtime writes beside each trace
//!   (`<trace>.names`, an ELF file), or a firmware image carrying the same table:
//!   its `flightrec_names` section, read by [`elf`].
//! * `llvm-xray`'s instrumentation map in YAML (what `llvm-xray extract --symbolize`
//!   writes and `-m`/`--instr_map` reads): a list of `{ id: N, ..., function-name: X }`
//!   entries. Entries without a name are skipped.
//! * A plain text file: one `ID NAME` pair per line (`#` starts a comment; the name is
//!   the rest of the line).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

pub mod elf;
pub mod escape;
pub mod firmware;
pub mod program;
pub mod statics;

use elf::{is_elf, read_elf_names, ElfNamesError, FIRMWARE_SECTION};

use crate::read::file::TraceFile;

/// Appended to a trace's path to name the names file the desktop runtime writes
/// beside it (the core's [`SUFFIX`](flightrec_core::names::SUFFIX)).
///
/// ```
/// use flightrec_host::names::{names_beside, NAMES_SUFFIX};
/// use std::path::Path;
///
/// let beside = names_beside(Path::new("t.xray"));
/// assert_eq!(beside.to_str(), Some(&*format!("t.xray{NAMES_SUFFIX}")));
/// ```
pub const NAMES_SUFFIX: &str = flightrec_core::names::SUFFIX;

/// Where the desktop runtime puts the names file of `trace`: `<trace>.names`.
///
/// ```
/// use std::path::Path;
/// use flightrec_host::names::names_beside;
/// assert_eq!(
///     names_beside(Path::new("out/xray-log.app.Ab12Cd")),
///     Path::new("out/xray-log.app.Ab12Cd.names")
/// );
/// ```
pub fn names_beside(trace: &Path) -> PathBuf {
    let mut p = trace.as_os_str().to_owned();
    p.push(NAMES_SUFFIX);
    PathBuf::from(p)
}

/// Function names by id, and whether they came from a names file.
///
/// With a names file, an id it does not name displays as `#id`, as
/// `llvm-xray convert --symbolize --instr_map` prints it; without one, as the bare
/// number, as `llvm-xray convert` prints it.
///
/// ```
/// use flightrec_host::names::Names;
/// let n = Names::parse("1 main\n2 uart_flush\n# comment\n").unwrap();
/// assert_eq!(n.get(2), Some("uart_flush"));
/// assert_eq!(n.get(3), None);
///
/// let y = Names::parse("---\n- { id: 7, address: 0x10, function: 0x10, kind: function-enter, always-instrument: true, function-name: fib }\n...\n").unwrap();
/// assert_eq!(y.get(7), Some("fib"));
/// assert_eq!(y.display(7), "fib");
/// assert_eq!(y.display(8), "#8");
/// assert_eq!((y.len(), y.is_empty()), (1, false));
///
/// let none = Names::empty();
/// assert_eq!(none.display(8), "8");
/// assert!(none.is_empty());
///
/// let err = Names::parse("1 main\nx y\n").unwrap_err();
/// assert_eq!(err, "line 2: `x` is not a function id");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    map: HashMap<u32, String>,
    /// A names file was read (even one naming nothing).
    from_file: bool,
}

impl Names {
    /// No names: ids print as numbers. Example on [`Names`].
    pub fn empty() -> Self {
        Self::default()
    }

    /// Names from a map of id to name, displayed like a names file's (an id
    /// without a name as `#id`).
    ///
    /// ```
    /// use flightrec_host::names::Names;
    /// let n = Names::from_map([(3, "app::fib".to_string())].into_iter().collect());
    /// assert_eq!((n.display(3).as_str(), n.display(4).as_str()), ("app::fib", "#4"));
    /// ```
    pub fn from_map(map: HashMap<u32, String>) -> Self {
        Self {
            map,
            from_file: true,
        }
    }

    /// Reads a names file in any of the three formats; errors name the file.
    ///
    /// ```
    /// use flightrec_host::names::Names;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let map = dir.path().join("crafted.instrmap.yaml");
    /// std::fs::write(&map, include_str!("../../../testdata/xray/crafted.instrmap.yaml")).unwrap();
    /// let names = Names::load(&map).unwrap();
    /// assert_eq!(names.get(1), Some("main"));
    /// assert_eq!(names.len(), 5);
    ///
    /// let missing = dir.path().join("none.names");
    /// let err = Names::load(&missing).unwrap_err();
    /// assert!(err.starts_with(&format!("{}: ", missing.display())), "{err}");
    /// ```
    pub fn load(path: &Path) -> Result<Self, String> {
        // Mapped, not read: a program of any size costs the pages of its
        // tables only.
        let file = TraceFile::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_bytes(file.bytes()).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the bytes of a names file in any of the three formats.
    ///
    /// ```
    /// use flightrec_host::names::Names;
    /// assert_eq!(Names::from_bytes(b"3 leaf\n").unwrap().get(3), Some("leaf"));
    /// let err = Names::from_bytes(b"\x7fELF\x02\x01\x01").unwrap_err();
    /// assert!(err.starts_with("damaged ELF file"), "{err}");
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        if is_elf(bytes) {
            let firmware = flightrec_core::names::elf::find_section(bytes, FIRMWARE_SECTION)
                .is_ok_and(|s| s.is_some());
            if firmware {
                return Err(
                    "a firmware ELF with a .flightrec section: give it with --elf".to_string(),
                );
            }
            let map = match read_elf_names(bytes) {
                Ok(map) => map,
                // An instrumented program: its own map and symbols.
                Err(ElfNamesError::NoSection {
                    has_instr_map: true,
                }) => program::program_names(bytes)?.unwrap_or_default(),
                Err(e) => return Err(e.to_string()),
            };
            return Ok(Self {
                map,
                from_file: true,
            });
        }
        let text = std::str::from_utf8(bytes).map_err(|_| {
            "not a names file: neither an ELF names file nor text (YAML or `ID NAME` lines)"
                .to_string()
        })?;
        Self::parse(text)
    }

    /// Parses the text of a names file (YAML or `ID NAME` lines). Example on
    /// [`Names`].
    pub fn parse(text: &str) -> Result<Self, String> {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'));
        match first {
            Some(l) if l == "---" || l.starts_with("- ") || l.starts_with("-{") => {
                Self::parse_yaml(text)
            }
            _ => Self::parse_text(text),
        }
    }

    fn parse_text(text: &str) -> Result<Self, String> {
        let mut map = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (id, name) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("line {}: expected `ID NAME`", n + 1))?;
            let id: u32 = id
                .parse()
                .map_err(|_| format!("line {}: `{id}` is not a function id", n + 1))?;
            map.insert(id, name.trim().to_string());
        }
        Ok(Self {
            map,
            from_file: true,
        })
    }

    fn parse_yaml(text: &str) -> Result<Self, String> {
        let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
        let mut map = HashMap::new();
        for doc in docs {
            let Some(entries) = doc.as_vec() else {
                return Err("expected a list of instrumentation map entries".into());
            };
            for entry in entries {
                let id = match &entry["id"] {
                    Yaml::Integer(i) => u32::try_from(*i).ok(),
                    _ => None,
                }
                .ok_or("an entry has no valid `id`")?;
                let name = match &entry["function-name"] {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    _ => continue,
                };
                if !name.is_empty() {
                    map.insert(id, name);
                }
            }
        }
        Ok(Self {
            map,
            from_file: true,
        })
    }

    /// The name of function `id`, if known. Example on [`Names`].
    pub fn get(&self, id: u32) -> Option<&str> {
        self.map.get(&id).map(String::as_str)
    }

    /// The name; for an id without one, `#id` when a names file was read, else the
    /// id in decimal (what `llvm-xray convert` prints with and without
    /// `--symbolize --instr_map`). Example on [`Names`].
    pub fn display(&self, id: u32) -> String {
        match self.get(id) {
            Some(name) => name.to_string(),
            None if self.from_file => format!("#{id}"),
            None => id.to_string(),
        }
    }

    /// Every (id, name) pair, in no order.
    ///
    /// ```
    /// use flightrec_host::names::Names;
    /// let n = Names::parse("1 main\n").unwrap();
    /// assert_eq!(n.iter().collect::<Vec<_>>(), [(1, "main")]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str)> {
        self.map.iter().map(|(id, name)| (*id, name.as_str()))
    }

    /// Number of names. Example on [`Names`].
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no names. Example on [`Names`].
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_that_is_not_elf_is_refused() {
        let err = Names::from_bytes(b"\x01\x00\x00\x00\xff\xfe").unwrap_err();
        assert!(err.starts_with("not a names file"), "{err}");
    }
}
