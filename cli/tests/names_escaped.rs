//! A firmware ELF whose `.flightrec` names hold terminal escapes and newlines:
//! `names --list`, `dump`, their diagnostics and the names file written show
//! them escaped, never as raw control bytes or as lines of their own.

use std::path::Path;
use std::process::Command;

use flightrec_host::names::Names;
use flightrec_testkit::target_image::elf_with_section;

/// Id 1 (behind LLD's leading NUL): a window-title escape, a BEL, a newline
/// that would forge a line, a C1 CSI and a byte that is not UTF-8. The same
/// name again further on (a duplicate: a warning that quotes it).
const EVIL: &[u8] = b"app::evil\x1b]0;title\x07\nFORGED LINE\xc2\x9b31m\xff";

fn section() -> Vec<u8> {
    let mut s = vec![0u8];
    for loc in [&b"src/a.rs:1"[..], b"src/b.rs:2\r\nFORGED"] {
        s.extend_from_slice(EVIL);
        s.push(b'\t');
        s.extend_from_slice(loc);
        s.push(0);
    }
    s
}

fn flightrec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
}

/// Every byte a terminal would act on, other than the lines' own `\n` (and,
/// with `tabs`, the columns' `\t`).
fn raw_controls(text: &str, tabs: bool) -> Vec<char> {
    text.chars()
        .filter(|&c| c.is_control() && c != '\n' && !(tabs && c == '\t'))
        .collect()
}

const ESCAPED: &str = "app::evil\\e]0;title\\a\\nFORGED LINE\\u{9b}31m\\xff";

#[test]
fn names_list_and_names_file_escape_control_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let elf = dir.path().join("fw.elf");
    std::fs::write(&elf, elf_with_section(".flightrec", &section())).unwrap();
    let names_file = dir.path().join("fw.names");
    let out = flightrec()
        .args(["names", "--list", "--elf"])
        .arg(&elf)
        .arg("-o")
        .arg(&names_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(raw_controls(&stdout, true), [], "{stdout:?}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout:?}");
    assert_eq!(lines[0], format!("1\t{ESCAPED}\tsrc/a.rs:1"));
    assert!(
        lines[1].ends_with(&format!("\t{ESCAPED}\tsrc/b.rs:2\\r\\nFORGED")),
        "{}",
        lines[1]
    );

    // The duplicate's warning quotes the name and the locations, escaped, on one line.
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(raw_controls(&stderr, false), [], "{stderr:?}");
    assert!(
        stderr.contains(&format!("`{ESCAPED}` names several functions")),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // The names file written (what llvm-xray prints as it is) holds the escaped name.
    let back = Names::load(&names_file).unwrap();
    assert_eq!(back.get(1), Some(ESCAPED));
}

#[test]
fn dump_escapes_names_from_the_elf() {
    let dir = tempfile::tempdir().unwrap();
    let elf = dir.path().join("fw.elf");
    std::fs::write(&elf, elf_with_section(".flightrec", &section())).unwrap();
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/xray/crafted-v5.xray");
    let plain = flightrec()
        .args(["dump", "--no-names"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    let out = flightrec()
        .args(["dump", "--elf"])
        .arg(&elf)
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(raw_controls(&stdout, false), [], "{stdout:?}");
    // One line per record, as without names: nothing forged.
    assert_eq!(
        stdout.lines().count(),
        plain.stdout.split(|&b| b == b'\n').count() - 1
    );
    assert!(
        stdout.contains(&format!("<Function Enter: #1 ({ESCAPED}) delta = +0>\n")),
        "{stdout}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(raw_controls(&stderr, false), [], "{stderr:?}");
}
