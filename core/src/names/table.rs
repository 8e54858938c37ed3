//! The id-to-name table: `id<TAB>name<LF>` lines.
//!
//! [`write_entry`] and [`encode_entry`] emit one line; [`entries`] reads a table
//! back, one [`Entry`] (or the first [`TableError`]) at a time, without copying:
//! names are slices of the table.

use core::fmt;

use crate::decimal::dec_u64;

/// The bytes [`write_entry`] writes for `id` and `name`: the id's digits, a tab,
/// the name and a line feed.
///
/// ```
/// use flightrec_core::names::table::entry_len;
/// assert_eq!(entry_len(12, b"main"), "12\tmain\n".len());
/// ```
pub fn entry_len(id: u32, name: &[u8]) -> usize {
    let mut digits = [0u8; 20];
    dec_u64(u64::from(id), &mut digits)
        .len()
        .saturating_add(name.len())
        .saturating_add(2)
}

/// Writes one table line, `id<TAB>name<LF>`, through `put`.
pub(super) fn put_entry<E, P: FnMut(&[u8]) -> Result<(), E>>(
    put: &mut P,
    id: u32,
    put_name: impl FnOnce(&mut P) -> Result<(), E>,
) -> Result<(), E> {
    let mut digits = [0u8; 20];
    put(dec_u64(u64::from(id), &mut digits))?;
    put(b"\t")?;
    put_name(put)?;
    put(b"\n")
}

/// Writes the table line of `id` and `name` to `out`.
///
/// The name is written as given; one holding a line feed followed by a tab would
/// read back as two entries.
///
/// ```
/// use flightrec_core::names::table::write_entry;
/// let mut out = Vec::new();
/// write_entry(&mut out, 3, b"parse").unwrap();
/// write_entry(&mut out, 10, b"two\nlines").unwrap();
/// assert_eq!(out, b"3\tparse\n10\ttwo\nlines\n");
/// ```
pub fn write_entry<W: embedded_io::Write>(
    out: &mut W,
    id: u32,
    name: &[u8],
) -> Result<(), W::Error> {
    put_entry(&mut |b: &[u8]| out.write_all(b), id, |put| put(name))
}

/// The caller's buffer is too small for the line.
///
/// ```
/// use flightrec_core::names::table::{encode_entry, BufferTooSmall};
/// let mut buf = [0u8; 4];
/// assert_eq!(encode_entry(1, b"main", &mut buf), Err(BufferTooSmall { needed: 7 }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTooSmall {
    /// Bytes the line needs ([`entry_len`]).
    pub needed: usize,
}

/// Writes the table line of `id` and `name` into the start of `buf`; returns its
/// length. Nothing is written when it does not fit.
///
/// ```
/// use flightrec_core::names::table::encode_entry;
/// let mut buf = [0u8; 32];
/// let n = encode_entry(42, b"uart::flush", &mut buf).unwrap();
/// assert_eq!(&buf[..n], b"42\tuart::flush\n");
/// ```
pub fn encode_entry(id: u32, name: &[u8], buf: &mut [u8]) -> Result<usize, BufferTooSmall> {
    let needed = entry_len(id, name);
    let Some(line) = buf.get_mut(..needed) else {
        return Err(BufferTooSmall { needed });
    };
    let mut at = 0usize;
    let mut put = |b: &[u8]| -> Result<(), BufferTooSmall> {
        let end = at.saturating_add(b.len());
        if let Some(dst) = line.get_mut(at..end) {
            dst.copy_from_slice(b);
        }
        at = end;
        Ok(())
    };
    put_entry(&mut put, id, |put| put(name))?;
    Ok(needed)
}

/// One entry of a table: an id and its name.
///
/// ```
/// use flightrec_core::names::table::{entries, Entry};
/// let first = entries(b"1\tmain\n").next().unwrap().unwrap();
/// assert_eq!(first, Entry { id: 1, name: "main", line: 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Entry<'a> {
    /// The function id (never 0).
    pub id: u32,
    /// Its name: every byte after the first tab, up to the next line with a tab
    /// (the line feeds between included). May be empty.
    pub name: &'a str,
    /// 1-based line of the table the entry starts on.
    pub line: usize,
}

/// What is wrong with a line of a table.
///
/// ```
/// use flightrec_core::names::table::TableErrorKind;
/// assert_eq!(TableErrorKind::NoTab.reason(), "no tab between id and name");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TableErrorKind {
    /// The table's first line has no tab (later lines without one continue a name).
    NoTab,
    /// The text before the tab is not a decimal number.
    IdNotDecimal,
    /// The id is 0 or does not fit 32 bits.
    IdOutOfRange,
    /// The name is not UTF-8.
    NameNotUtf8,
}

impl TableErrorKind {
    /// The problem in words. Example on [`TableErrorKind`].
    pub const fn reason(self) -> &'static str {
        match self {
            TableErrorKind::NoTab => "no tab between id and name",
            TableErrorKind::IdNotDecimal => "the id is not a decimal number",
            TableErrorKind::IdOutOfRange => "the id is 0 or too large",
            TableErrorKind::NameNotUtf8 => "the name is not UTF-8",
        }
    }
}

/// A table that cannot be read: where and why.
///
/// ```
/// use flightrec_core::names::table::{entries, TableError, TableErrorKind};
/// let err = entries(b"1\tmain\n0\tidle\n").nth(1).unwrap().unwrap_err();
/// assert_eq!(err, TableError { line: 2, kind: TableErrorKind::IdOutOfRange });
/// assert_eq!(err.to_string(), "line 2: the id is 0 or too large");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TableError {
    /// 1-based line of the table.
    pub line: usize,
    /// What is wrong with it.
    pub kind: TableErrorKind,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.kind.reason())
    }
}

impl core::error::Error for TableError {}

/// The entries of `table`, in order. After an error the iterator ends.
///
/// One line feed at the end of the table is optional; an empty table has no
/// entries. Entries are not checked against each other: an id may appear twice
/// and a name may be empty (the reader decides what that means).
///
/// ```
/// use flightrec_core::names::table::{entries, TableErrorKind};
/// let table = b"1\tworker\n3\tcrate::f  (x)\n4\ttwo\nlines\n";
/// let names: Vec<(u32, &str)> = entries(table).map(|e| e.map(|e| (e.id, e.name))).collect::<Result<_, _>>().unwrap();
/// assert_eq!(names, [(1, "worker"), (3, "crate::f  (x)"), (4, "two\nlines")]);
///
/// let err = entries(b"1 worker\n").next().unwrap().unwrap_err();
/// assert_eq!((err.line, err.kind), (1, TableErrorKind::NoTab));
/// assert_eq!(entries(b"").count(), 0);
/// ```
pub fn entries(table: &[u8]) -> Entries<'_> {
    let body = table.strip_suffix(b"\n").unwrap_or(table);
    Entries {
        rest: (!body.is_empty()).then_some(body),
        line: 1,
    }
}

/// Iterator over the entries of a table; made by [`entries`].
///
/// ```
/// use flightrec_core::names::table::{entries, Entries};
/// let mut it: Entries = entries(b"5\tfive");
/// assert_eq!(it.next().unwrap().unwrap().name, "five");
/// assert!(it.next().is_none());
/// ```
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    /// The lines not read yet; `None` at the end or after an error.
    rest: Option<&'a [u8]>,
    /// Line number of the first line of `rest`.
    line: usize,
}

/// The line at the start of `bytes` (without its line feed) and what follows the
/// line feed (`None` for the last line).
fn split_line(bytes: &[u8]) -> (&[u8], Option<&[u8]>) {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(lf) => (bytes.get(..lf).unwrap_or_default(), bytes.get(lf + 1..)),
        None => (bytes, None),
    }
}

fn parse_id(digits: &[u8]) -> Result<u32, TableErrorKind> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(TableErrorKind::IdNotDecimal);
    }
    let mut id = 0u32;
    for &d in digits {
        id = id
            .checked_mul(10)
            .and_then(|id| id.checked_add(u32::from(d - b'0')))
            .ok_or(TableErrorKind::IdOutOfRange)?;
    }
    if id == 0 {
        return Err(TableErrorKind::IdOutOfRange);
    }
    Ok(id)
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, TableError>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.rest.take()?;
        let line = self.line;
        let fail = |line, kind| Some(Err(TableError { line, kind }));
        let (first, mut after) = split_line(start);
        let Some(tab) = first.iter().position(|&b| b == b'\t') else {
            return fail(line, TableErrorKind::NoTab);
        };
        let id = match parse_id(first.get(..tab).unwrap_or_default()) {
            Ok(id) => id,
            Err(kind) => return fail(line, kind),
        };
        // The name runs on over the following lines without a tab.
        let mut end = first.len();
        let mut lines = 1;
        while let Some(next) = after {
            let (text, rest) = split_line(next);
            if text.contains(&b'\t') {
                break;
            }
            end = start.len() - next.len() + text.len();
            lines += 1;
            after = rest;
        }
        let name = start.get(tab + 1..end).unwrap_or_default();
        let name = match core::str::from_utf8(name) {
            Ok(name) => name,
            Err(e) => {
                let valid = name.get(..e.valid_up_to()).unwrap_or_default();
                let lfs = valid.iter().filter(|&&b| b == b'\n').count();
                return fail(line + lfs, TableErrorKind::NameNotUtf8);
            }
        };
        self.rest = after;
        self.line = line + lines;
        Some(Ok(Entry { id, name, line }))
    }
}

impl core::iter::FusedIterator for Entries<'_> {}
