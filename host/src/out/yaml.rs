//! `convert --format yaml`: the YAML `llvm-xray convert --output-format=yaml` writes.

use std::io::{self, Write};

use std::collections::HashMap;

use flightrec_core::fdr::FileHeader;

use super::yaml_unicode::is_printable;
use crate::names::Names;
use crate::read::events::XEvent;
use crate::read::trace::Trace;

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
        // LLVM 14's `isBool`: only these (later versions add yes/no/on/off).
        || matches!(&*text, "true" | "True" | "TRUE" | "false" | "False" | "FALSE")
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
            // LLVM 14 double-quotes a line feed or carriage return (later versions
            // single-quote them).
            b'\n' | b'\r' => return Quoting::Double,
            b'/' => q = q.max(Quoting::Single),
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
            escape(out, s)?;
            out.write_all(b"\"")
        }
    }
}

/// The first character of `s` when `s` starts with a whole, valid UTF-8
/// sequence: what LLVM's `decodeUTF8` accepts (no overlong form, no surrogate,
/// nothing past U+10FFFF).
fn first_char(s: &[u8]) -> Option<char> {
    s.utf8_chunks().next()?.valid().chars().next()
}

/// LLVM 14's `yaml::escape(S, /*EscapePrintable=*/false)`, the text of a
/// double-quoted scalar: `\\`, `\"`, the short escapes (`\0 \a \b \t \n \v
/// \f \r \e`), other C0 controls as `\xNN`; a UTF-8 character as it is when
/// printable, else `\N`, `\_`, `\L`, `\P` or its code point (`\xNN`, `\uNNNN`,
/// `\UNNNNNNNN`). At the first byte that does not start a valid UTF-8
/// character, LLVM writes U+FFFD and stops: the rest of the payload is not
/// printed. DEL (0x7F) is written as it is.
fn escape(out: &mut impl Write, s: &[u8]) -> io::Result<()> {
    let mut i = 0;
    while let Some(&c) = s.get(i) {
        let short: &[u8] = match c {
            b'\\' => b"\\\\",
            b'"' => b"\\\"",
            0 => b"\\0",
            0x07 => b"\\a",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0A => b"\\n",
            0x0B => b"\\v",
            0x0C => b"\\f",
            0x0D => b"\\r",
            0x1B => b"\\e",
            c if c < 0x20 => {
                write!(out, "\\x{c:02X}")?;
                i += 1;
                continue;
            }
            c if c & 0x80 != 0 => {
                let Some(ch) = first_char(&s[i..]) else {
                    return out.write_all("\u{FFFD}".as_bytes());
                };
                let len = ch.len_utf8();
                match u32::from(ch) {
                    0x85 => out.write_all(b"\\N")?,
                    0xA0 => out.write_all(b"\\_")?,
                    0x2028 => out.write_all(b"\\L")?,
                    0x2029 => out.write_all(b"\\P")?,
                    cp if is_printable(cp) => out.write_all(&s[i..i + len])?,
                    cp @ ..=0xFF => write!(out, "\\x{cp:02X}")?,
                    cp @ ..=0xFFFF => write!(out, "\\u{cp:04X}")?,
                    cp => write!(out, "\\U{cp:08X}")?,
                }
                i += len;
                continue;
            }
            _ => {
                out.write_all(&[c])?;
                i += 1;
                continue;
            }
        };
        out.write_all(short)?;
        i += 1;
    }
    Ok(())
}

/// Writes the whole trace as YAML, records sorted by TSC.
///
/// ```
/// use flightrec_host::read::trace::load;
/// use flightrec_host::names::Names;
/// use flightrec_host::out::yaml::write_yaml;
///
/// let trace = load(include_bytes!("../../../testdata/xray/crafted-v5.xray")).unwrap();
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
    let mut events = trace.sorted_events().into_iter();
    write_yaml_events(&trace.header, || events.next().cloned(), names, out).map(|_| ())
}

/// Writes the YAML of events that `next` yields in TSC order, one at a time:
/// what `convert --format yaml` runs over [`crate::read::index::Index::merged`].
/// Returns the number of records written.
///
/// ```
/// use flightrec_host::names::Names;
/// use flightrec_host::read::index::scan;
/// use flightrec_host::out::yaml::{write_yaml, write_yaml_events};
///
/// let bytes = include_bytes!("../../../testdata/xray/crafted-v5-2threads.xray");
/// let index = scan(bytes, &mut |_| {}).unwrap();
/// let mut merged = index.merged(bytes);
/// let mut streamed = Vec::new();
/// let n = write_yaml_events(index.header(), || merged.next_event(), &Names::empty(), &mut streamed)
///     .unwrap();
/// assert_eq!(n, 6);
///
/// // The same bytes as from the trace in memory.
/// let trace = flightrec_host::read::trace::load(bytes).unwrap();
/// let mut whole = Vec::new();
/// write_yaml(&trace, &Names::empty(), &mut whole).unwrap();
/// assert_eq!(streamed, whole);
/// ```
pub fn write_yaml_events(
    header: &FileHeader,
    mut next: impl FnMut() -> Option<XEvent>,
    names: &Names,
    out: &mut impl Write,
) -> io::Result<u64> {
    let h = header;
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
    let mut event = next();
    if event.is_none() {
        writeln!(out, "records:         []")?;
    } else {
        writeln!(out, "records:")?;
    }
    let mut functions = FunctionNames::new(names);
    let mut line = Vec::with_capacity(256);
    let mut count = 0u64;
    let mut num = itoa::Buffer::new();
    while let Some(e) = event {
        line.clear();
        line.extend_from_slice(b"  - { type: ");
        line.extend_from_slice(num.format(e.event_type).as_bytes());
        line.extend_from_slice(b", func-id: ");
        line.extend_from_slice(num.format(e.func_id).as_bytes());
        line.extend_from_slice(b", function: ");
        line.extend_from_slice(functions.yaml(e.func_id));
        if !e.args.is_empty() {
            line.extend_from_slice(b", args: [ ");
            for (i, a) in e.args.iter().enumerate() {
                if i > 0 {
                    line.extend_from_slice(b", ");
                }
                line.extend_from_slice(num.format(*a).as_bytes());
            }
            line.extend_from_slice(b" ]");
        }
        line.extend_from_slice(b", cpu: ");
        line.extend_from_slice(num.format(e.cpu).as_bytes());
        line.extend_from_slice(b", thread: ");
        line.extend_from_slice(num.format(e.thread).as_bytes());
        if e.process != 0 {
            line.extend_from_slice(b", process: ");
            line.extend_from_slice(num.format(e.process).as_bytes());
        }
        line.extend_from_slice(b", kind: ");
        line.extend_from_slice(e.kind.yaml_name().as_bytes());
        line.extend_from_slice(b", tsc: ");
        line.extend_from_slice(num.format(e.tsc).as_bytes());
        line.extend_from_slice(b", data: ");
        scalar(&mut line, &e.data)?;
        line.extend_from_slice(b" }\n");
        out.write_all(&line)?;
        count += 1;
        event = next();
    }
    writeln!(out, "...")?;
    Ok(count)
}

/// Most distinct function ids kept quoted in [`FunctionNames`].
const NAME_CACHE: usize = 1 << 16;

/// Function names as YAML scalars, quoted once per id.
struct FunctionNames<'a> {
    names: &'a Names,
    cache: HashMap<u32, Vec<u8>>,
    scratch: Vec<u8>,
}

impl<'a> FunctionNames<'a> {
    fn new(names: &'a Names) -> Self {
        Self {
            names,
            cache: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    fn yaml(&mut self, id: u32) -> &[u8] {
        let quote = |names: &Names, v: &mut Vec<u8>| {
            v.clear();
            // Writing to a Vec cannot fail.
            let _ = scalar(v, names.display(id).as_bytes());
        };
        if self.cache.len() < NAME_CACHE || self.cache.contains_key(&id) {
            return self.cache.entry(id).or_insert_with(|| {
                let mut v = Vec::new();
                quote(self.names, &mut v);
                v
            });
        }
        quote(self.names, &mut self.scratch);
        &self.scratch
    }
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
        assert_eq!(q("a\0b"), "\"a\\0b\"");
        assert_eq!(q("é\u{85}\u{200b}\u{10ffff}"), "\"é\\N\\u200B\\U0010FFFF\"");
        let mut v = Vec::new();
        scalar(&mut v, b"x\xffy").unwrap();
        assert_eq!(v, "\"x\u{FFFD}\"".as_bytes());
    }
}
