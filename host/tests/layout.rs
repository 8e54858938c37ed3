//! The layout of `host/src`: the stages of the pipeline import in one
//! direction (each only from the stages before it), and no two files import
//! each other, directly or round a longer circle. Test code (`#[cfg(test)]`
//! modules) may read back through later stages and is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The stages, in the order they may import from each other.
const STAGES: [&str; 9] = [
    "progress", "read", "names", "link", "model", "timeline", "out", "convert", "verify",
];

fn rank(stage: &str) -> usize {
    match stage {
        // The two commands sit side by side at the end.
        "verify" => STAGES.len() - 2,
        _ => STAGES
            .iter()
            .position(|s| *s == stage)
            .unwrap_or_else(|| panic!("host/src/{stage}: not a stage of the layout")),
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path: `read/index.rs` is `read::index`, `names/mod.rs` is
/// `names`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The code of a file before its test module, without comments.
fn code(text: &str) -> String {
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a file's code names (`crate::a::b`, `super::c`), resolved to
/// the longest known module.
fn imports(module: &[String], text: &str, known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    let bytes = text.as_bytes();
    // `super` is the parent module, for `a/b.rs` as for `a/b/mod.rs`.
    let parent = module[..module.len() - 1].to_vec();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent)] {
        let mut at = 0;
        while let Some(i) = text[at..].find(prefix) {
            let start = at + i;
            at = start + prefix.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            let path: Vec<String> = text[at..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap()
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let mut full = base.clone();
            full.extend(path);
            while !full.is_empty() && !known.contains(&full) {
                full.pop();
            }
            if !full.is_empty() && full != module {
                found.insert(full);
            }
        }
    }
    found
}

#[test]
fn stages_import_in_one_direction_and_no_file_imports_round_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let known: BTreeSet<Vec<String>> = all.iter().map(|f| module_of(&src, f)).collect();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for file in &all {
        let module = module_of(&src, file);
        if module.is_empty() {
            continue; // lib.rs declares the stages
        }
        let text = code(&std::fs::read_to_string(file).unwrap());
        let deps = imports(&module, &text, &known);
        for d in &deps {
            // A stage's folder may use its own files; other stages only earlier.
            if d[0] != module[0] && rank(&d[0]) >= rank(&module[0]) {
                wrong.push(format!("{} imports {}", module.join("::"), d.join("::")));
            }
        }
        graph.insert(module, deps);
    }
    assert!(
        wrong.is_empty(),
        "imports against the stage order: {wrong:#?}"
    );

    // No circle between files (a parent module naming its children is not an
    // import of them unless it uses them, which the walk below counts).
    fn visit(
        m: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let from = stack.iter().position(|s| s == m).unwrap();
                return Some(stack[from..].iter().map(|s| s.join("::")).collect());
            }
            _ => {}
        }
        state.insert(m.clone(), 1);
        stack.push(m.clone());
        for d in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, graph, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        let circle = visit(m, &graph, &mut state, &mut Vec::new());
        assert!(circle.is_none(), "an import circle: {circle:?}");
    }
}

#[test]
fn no_test_server_or_image_builder_in_the_public_api() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    for file in all {
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for banned in [
            "gdb_stub",
            "MemoryStub",
            "fn elf_with_symbol",
            "fn control_block_image",
        ] {
            assert!(!text.contains(banned), "{}: {banned}", file.display());
        }
    }
}
