//! `convert --format yaml`: the YAML `llvm-xray convert --output-format=yaml` writes.

use std::io::{self, Write};

use super::expand::Trace;
use super::names::Names;

/// How LLVM's YAML writer quotes a plain string (its `needsQuotes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Quoting {
    None,
    Single,
    Double,
}

fn is_number(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    if t.is_empty() {
        return false;
    }
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0o")) {
        return !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if matches!(t, ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    t.parse::<f64>().is_ok()
        && t.bytes()
            .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
}

fn quoting(s: &[u8]) -> Quoting {
    let (Some(&first), Some(&last)) = (s.first(), s.last()) else {
        return Quoting::Single;
    };
    let mut q = Quoting::None;
    let text = String::from_utf8_lossy(s);
    if first.is_ascii_whitespace() || last.is_ascii_whitespace() {
        q = Quoting::Single;
    }
    if matches!(&*text, "null" | "Null" | "NULL" | "~")
        || matches!(
            &*text,
            "true"
                | "True"
                | "TRUE"
                | "false"
                | "False"
                | "FALSE"
                | "y"
                | "Y"
                | "yes"
                | "Yes"
                | "YES"
                | "n"
                | "N"
                | "no"
                | "No"
                | "NO"
                | "on"
                | "On"
                | "ON"
                | "off"
                | "Off"
                | "OFF"
        )
        || is_number(&text)
        || br#"-?:\,[]{}#&*!|>'"%@`"#.contains(&first)
    {
        q = Quoting::Single;
    }
    for &c in s {
        if c.is_ascii_alphanumeric() || b"_-^., \t".contains(&c) {
            continue;
        }
        match c {
            b'\n' | b'\r' | b'/' => q = q.max(Quoting::Single),
            0x7f => return Quoting::Double,
            c if c <= 0x1f || c & 0x80 != 0 => return Quoting::Double,
            _ => q = q.max(Quoting::Single),
        }
    }
    q
}

/// Writes `s` as a YAML scalar the way LLVM does.
fn scalar(out: &mut impl Write, s: &[u8]) -> io::Result<()> {
    match quoting(s) {
        Quoting::None => out.write_all(s),
        Quoting::Single => {
            out.write_all(b"'")?;
            for &c in s {
                if c == b'\'' {
                    out.write_all(b"''")?;
                } else {
                    out.write_all(&[c])?;
                }
            }
            out.write_all(b"'")
        }
        Quoting::Double => {
            out.write_all(b"\"")?;
            for &c in s {
                match c {
                    b'"' => out.write_all(b"\\\"")?,
                    b'\\' => out.write_all(b"\\\\")?,
                    0x20..=0x7e => out.write_all(&[c])?,
                    _ => write!(out, "\\x{c:02X}")?,
                }
            }
            out.write_all(b"\"")
        }
    }
}

/// Writes the whole trace as YAML, records sorted by TSC.
///
/// ```
/// use flightrec_host::expand::load;
/// use flightrec_host::names::Names;
/// use flightrec_host::yaml::write_yaml;
///
/// let trace = load(include_bytes!("../../testdata/xray/crafted-v5.xray")).unwrap();
/// let mut out = Vec::new();
/// write_yaml(&trace, &Names::empty(), &mut out).unwrap();
/// let yaml = String::from_utf8(out).unwrap();
/// // What `llvm-xray convert --output-format=yaml crafted-v5.xray` writes.
/// let lines: Vec<&str> = yaml.lines().collect();
/// assert_eq!(
///     lines[..9],
///     [
///         "---",
///         "header:",
///         "  version:         5",
///         "  type:            1",
///         "  constant-tsc:    true",
///         "  nonstop-tsc:     true",
///         "  cycle-frequency: 1000000000",
///         "records:",
///         "  - { type: 0, func-id: 1, function: '1', cpu: 0, thread: 101, process: 4242, \
///          kind: function-enter, tsc: 1000000, data: '' }",
///     ]
/// );
/// assert_eq!(
///     lines[12],
///     "  - { type: 0, func-id: 3, function: '3', cpu: 0, thread: 101, process: 4242, \
///      kind: custom-event, tsc: 1002600, data: hello }"
/// );
/// assert_eq!((lines.len(), lines[19]), (20, "..."));
///
/// // With names, as with `--symbolize --instr_map`.
/// let names = Names::parse("1 main\n").unwrap();
/// let mut out = Vec::new();
/// write_yaml(&trace, &names, &mut out).unwrap();
/// let yaml = String::from_utf8(out).unwrap();
/// assert!(yaml.contains("func-id: 1, function: main, "));
/// assert!(yaml.contains("func-id: 2, function: '#2', "));
/// ```
pub fn write_yaml(trace: &Trace, names: &Names, out: &mut impl Write) -> io::Result<()> {
    let h = &trace.header;
    writeln!(out, "---")?;
    writeln!(out, "header:")?;
    writeln!(out, "  version:         {}", h.version.number())?;
    writeln!(out, "  type:            1")?;
    let flag = |b: bool| if b { "true" } else { "false" };
    use flightrec_core::fdr::HeaderFlags;
    writeln!(
        out,
        "  constant-tsc:    {}",
        flag(h.flags.contains(HeaderFlags::CONSTANT_TSC))
    )?;
    writeln!(
        out,
        "  nonstop-tsc:     {}",
        flag(h.flags.contains(HeaderFlags::NONSTOP_TSC))
    )?;
    writeln!(out, "  cycle-frequency: {}", h.cycle_frequency.get())?;
    let events = trace.sorted_events();
    if events.is_empty() {
        writeln!(out, "records:         []")?;
    } else {
        writeln!(out, "records:")?;
    }
    for e in events {
        write!(
            out,
            "  - {{ type: {}, func-id: {}, function: ",
            e.event_type, e.func_id
        )?;
        scalar(out, names.display(e.func_id).as_bytes())?;
        if !e.args.is_empty() {
            let args: Vec<String> = e.args.iter().map(u64::to_string).collect();
            write!(out, ", args: [ {} ]", args.join(", "))?;
        }
        write!(out, ", cpu: {}, thread: {}", e.cpu, e.thread)?;
        if e.process != 0 {
            write!(out, ", process: {}", e.process)?;
        }
        write!(
            out,
            ", kind: {}, tsc: {}, data: ",
            e.kind.yaml_name(),
            e.tsc
        )?;
        scalar(out, &e.data)?;
        writeln!(out, " }}")?;
    }
    writeln!(out, "...")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> String {
        let mut v = Vec::new();
        scalar(&mut v, s.as_bytes()).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn quoting_follows_llvm() {
        assert_eq!(q(""), "''");
        assert_eq!(q("hello"), "hello");
        assert_eq!(q("typed!"), "'typed!'");
        assert_eq!(q("1"), "'1'");
        assert_eq!(q("main"), "main");
        assert_eq!(q("a/b"), "'a/b'");
        assert_eq!(q("it's"), "'it''s'");
        assert_eq!(
            q("flightrec: lost 3 records"),
            "'flightrec: lost 3 records'"
        );
        assert_eq!(q("\u{1}"), "\"\\x01\"");
    }
}
