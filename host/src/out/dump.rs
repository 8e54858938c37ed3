//! `dump`: one line per record, as `llvm-xray fdr-dump` prints them.
//!
//! Without names (`flightrec dump --no-names`, or no `<trace>.names` beside the
//! trace) the output is byte for byte `llvm-xray fdr-dump`'s (including its
//! typed-event line, which lacks the closing `>`); with names each function id is
//! followed by its name in parentheses: `#3 (uart_flush)`, its control bytes
//! escaped ([`crate::names::escape`]) so that a name cannot forge a line or
//! reach the terminal as an escape sequence.

use std::io::{self, Write};

use flightrec_core::fdr::decoder::{DecodeError, Decoder};
use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::FunctionAction;

use crate::names::escape::escape;
use crate::names::Names;

/// Why a dump stopped.
///
/// ```
/// use flightrec_host::out::dump::{dump, DumpError};
/// use flightrec_host::names::Names;
///
/// // llvm-xray: "Unknown function record type '5' at offset 112."
/// let bad = include_bytes!("../../../testdata/xray/bad-fn-action5.xray");
/// let mut out = Vec::new();
/// let Err(DumpError::Decode(e)) = dump(bad, &Names::empty(), &mut out) else { panic!() };
/// assert_eq!(e.offset, 112);
/// // The records before the error are printed.
/// assert!(String::from_utf8(out).unwrap().starts_with("<Buffer: size = "));
///
/// // A closed output is an I/O error.
/// let good = include_bytes!("../../../testdata/xray/crafted-v5.xray");
/// let mut full = &mut [0u8; 10][..];
/// assert!(matches!(dump(good, &Names::empty(), &mut full), Err(DumpError::Io(_))));
/// ```
#[derive(Debug)]
pub enum DumpError {
    /// Writing the output failed.
    Io(io::Error),
    /// The file is not a readable FDR file from this offset on.
    Decode(DecodeError),
}

impl From<io::Error> for DumpError {
    fn from(e: io::Error) -> Self {
        DumpError::Io(e)
    }
}

/// Prints every record of `bytes` to `out`; stops at the first decoding error and
/// returns it, after printing what came before. Returns the number of records
/// printed.
///
/// ```
/// use flightrec_host::out::dump::dump;
/// use flightrec_host::names::Names;
///
/// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
/// let mut out = Vec::new();
/// assert_eq!(dump(trace, &Names::empty(), &mut out).unwrap(), 20);
/// let text = String::from_utf8(out).unwrap();
/// // What `llvm-xray fdr-dump crafted-v5.xray` prints.
/// let lines: Vec<&str> = text.lines().collect();
/// assert_eq!(
///     lines[..7],
///     [
///         "<Buffer: size = 229 bytes>",
///         "<Thread ID: 101>",
///         "<Wall Time: seconds = 1700000000.123456>",
///         "<PID: 4242>",
///         "<CPU: id = 0, tsc = 1000000>",
///         "<Function Enter: #1 delta = +0>",
///         "<Function Enter: #2 delta = +1000>",
///     ]
/// );
/// assert_eq!(lines[19], "<Function Exit: #1 delta = +500>");
///
/// // With names, each id is followed by its name.
/// let names = Names::parse("1 main\n2 uart_flush\n").unwrap();
/// let mut out = Vec::new();
/// dump(trace, &names, &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("<Function Enter: #2 (uart_flush) delta = +1000>\n"));
/// assert!(text.contains("<Function Exit: #3 delta = +1000>\n"));
/// ```
pub fn dump(bytes: &[u8], names: &Names, out: &mut impl Write) -> Result<usize, DumpError> {
    dump_reading(bytes, names, out, &mut |_| {})
}

/// [`dump`], calling `reached` with the offset read so far every few
/// thousand records (and at the end): where a mapped file releases the pages
/// behind it, so that a file of any size is dumped in bounded memory.
///
/// ```
/// use flightrec_host::out::dump::dump_reading;
/// use flightrec_host::names::Names;
/// let bytes = include_bytes!("../../../testdata/xray/crafted-v5.xray");
/// let mut reached = Vec::new();
/// let n = dump_reading(bytes, &Names::empty(), &mut Vec::new(), &mut |at| reached.push(at)).unwrap();
/// assert!(n > 0);
/// assert_eq!(reached.last(), Some(&bytes.len()));
/// ```
pub fn dump_reading(
    bytes: &[u8],
    names: &Names,
    out: &mut impl Write,
    reached: &mut dyn FnMut(usize),
) -> Result<usize, DumpError> {
    const EVERY: usize = 1 << 12;
    let decoder = Decoder::new(bytes).map_err(DumpError::Decode)?;
    let mut n = 0;
    for item in decoder {
        let d = item.map_err(DumpError::Decode)?;
        write_record(&d.record, names, out)?;
        n += 1;
        if n % EVERY == 0 {
            reached(d.offset);
        }
    }
    reached(bytes.len());
    Ok(n)
}

fn function_id(id: u32, names: &Names) -> String {
    match names.get(id) {
        Some(name) => format!("#{id} ({})", escape(name)),
        None => format!("#{id}"),
    }
}

/// One record as `llvm-xray fdr-dump` prints it, with its newline.
///
/// ```
/// use flightrec_host::core::fdr::records::{CustomEventTime, Record};
/// use flightrec_host::core::fdr::{FunctionAction, FunctionId};
/// use flightrec_host::out::dump::write_record;
/// use flightrec_host::names::Names;
///
/// let names = Names::parse("3 uart_flush\n").unwrap();
/// let line = |r: Record<'_>| {
///     let mut out = Vec::new();
///     write_record(&r, &names, &mut out).unwrap();
///     String::from_utf8(out).unwrap()
/// };
/// let id = FunctionId::new(3).unwrap();
/// assert_eq!(
///     line(Record::Function { action: FunctionAction::TailExit, id, delta: 7 }),
///     "<Function Tail Exit: #3 (uart_flush) delta = +7>\n"
/// );
/// // The seconds are unsigned, as llvm-xray prints them.
/// assert_eq!(
///     line(Record::Walltime { seconds: i64::MIN + 1, micros: 2 }),
///     "<Wall Time: seconds = 9223372036854775809.000002>\n"
/// );
/// // A name's control bytes are escaped: still one line.
/// let names = Names::from_map([(3, "red\x1b[31m\nforged".to_string())].into_iter().collect());
/// let mut out = Vec::new();
/// write_record(&Record::Function { action: FunctionAction::Exit, id, delta: 1 }, &names, &mut out).unwrap();
/// assert_eq!(out, b"<Function Exit: #3 (red\\e[31m\\nforged) delta = +1>\n");
/// assert_eq!(
///     line(Record::CallArgument { value: 42 }),
///     "<Call Argument: data = 42 (hex = 0x2a)>\n"
/// );
/// assert_eq!(
///     line(Record::CustomEvent { time: CustomEventTime::Delta(100), payload: b"hello" }),
///     "<Custom Event: delta = +100, size = 5, data = 'hello'>\n"
/// );
/// ```
pub fn write_record(record: &Record<'_>, names: &Names, out: &mut impl Write) -> io::Result<()> {
    match *record {
        Record::BufferExtents { size } => writeln!(out, "<Buffer: size = {size} bytes>"),
        Record::NewBuffer { tid } => writeln!(out, "<Thread ID: {tid}>"),
        Record::EndOfBuffer => writeln!(out, "<End of Buffer>"),
        Record::Walltime { seconds, micros } => {
            // llvm-xray reads the field as unsigned (`uint64_t Seconds`).
            let seconds = seconds as u64;
            writeln!(out, "<Wall Time: seconds = {seconds}.{micros:06}>")
        }
        Record::Pid { pid } => writeln!(out, "<PID: {pid}>"),
        Record::NewCpuId { cpu, tsc } => writeln!(out, "<CPU: id = {cpu}, tsc = {tsc}>"),
        Record::TscWrap { tsc } => writeln!(out, "<TSC Wrap: base = {tsc}>"),
        Record::CallArgument { value } => {
            writeln!(out, "<Call Argument: data = {value} (hex = {value:#x})>")
        }
        Record::CustomEvent { time, payload } => {
            match time {
                CustomEventTime::Absolute { tsc, cpu } => write!(
                    out,
                    "<Custom Event: tsc = {tsc}, cpu = {cpu}, size = {}, data = '",
                    payload.len()
                )?,
                CustomEventTime::Delta(d) => write!(
                    out,
                    "<Custom Event: delta = +{d}, size = {}, data = '",
                    payload.len()
                )?,
            }
            out.write_all(payload)?;
            writeln!(out, "'>")
        }
        Record::TypedEvent {
            delta,
            event_type,
            payload,
        } => {
            write!(
                out,
                "<Typed Event: delta = +{delta}, type = {event_type}, size = {}, data = '",
                payload.len()
            )?;
            out.write_all(payload)?;
            // llvm-xray 14 prints no closing bracket here.
            writeln!(out, "'")
        }
        Record::Function { action, id, delta } => {
            let what = match action {
                FunctionAction::Enter => "Enter",
                FunctionAction::EnterArg => "Enter With Arg",
                FunctionAction::Exit => "Exit",
                FunctionAction::TailExit => "Tail Exit",
            };
            writeln!(
                out,
                "<Function {what}: {} delta = +{delta}>",
                function_id(id.get(), names)
            )
        }
    }
}
