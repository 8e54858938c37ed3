//! Function names for `dump` and `convert`: id to name.
//!
//! Two formats are read, told apart by their content:
//!
//! * `llvm-xray`'s instrumentation map in YAML (what `llvm-xray extract --symbolize`
//!   writes and `-m`/`--instr_map` reads): a list of `{ id: N, ..., function-name: X }`
//!   entries. Entries without a name are skipped.
//! * A plain text file: one `ID NAME` pair per line (`#` starts a comment; the name is
//!   the rest of the line).

use std::collections::HashMap;
use std::path::Path;

use yaml_rust2::{Yaml, YamlLoader};

/// Function names by id.
///
/// ```
/// use flightrec::tool::names::Names;
/// let n = Names::parse("1 main\n2 uart_flush\n# comment\n").unwrap();
/// assert_eq!(n.get(2), Some("uart_flush"));
/// assert_eq!(n.get(3), None);
///
/// let y = Names::parse("---\n- { id: 7, address: 0x10, function: 0x10, kind: function-enter, always-instrument: true, function-name: fib }\n...\n").unwrap();
/// assert_eq!(y.get(7), Some("fib"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    map: HashMap<u32, String>,
}

impl Names {
    /// No names: ids print as numbers.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Reads a names file in either format.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the text of a names file.
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
        Ok(Self { map })
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
        Ok(Self { map })
    }

    /// The name of function `id`, if known.
    pub fn get(&self, id: u32) -> Option<&str> {
        self.map.get(&id).map(String::as_str)
    }

    /// The name, or the id in decimal.
    pub fn display(&self, id: u32) -> String {
        self.get(id).map_or_else(|| id.to_string(), str::to_string)
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no names.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
