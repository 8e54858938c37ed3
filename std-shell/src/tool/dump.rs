//! `dump`: one line per record, as `llvm-xray fdr-dump` prints them.
//!
//! Without names (`flightrec dump --no-names`, or no `<trace>.names` beside the
//! trace) the output is byte for byte `llvm-xray fdr-dump`'s (including its
//! typed-event line, which lacks the closing `>`); with names each function id is
//! followed by its name in parentheses: `#3 (uart_flush)`.

use std::io::{self, Write};

use flightrec_core::fdr::decoder::{DecodeError, Decoder};
use flightrec_core::fdr::records::{CustomEventTime, Record};
use flightrec_core::fdr::FunctionAction;

use super::names::Names;

/// Why a dump stopped.
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
/// returns it, after printing what came before.
pub fn dump(bytes: &[u8], names: &Names, out: &mut impl Write) -> Result<usize, DumpError> {
    let decoder = Decoder::new(bytes).map_err(DumpError::Decode)?;
    let mut n = 0;
    for item in decoder {
        let d = item.map_err(DumpError::Decode)?;
        write_record(&d.record, names, out)?;
        n += 1;
    }
    Ok(n)
}

fn function_id(id: u32, names: &Names) -> String {
    match names.get(id) {
        Some(name) => format!("#{id} ({name})"),
        None => format!("#{id}"),
    }
}

/// One record as `llvm-xray fdr-dump` prints it, with its newline.
pub fn write_record(record: &Record<'_>, names: &Names, out: &mut impl Write) -> io::Result<()> {
    match *record {
        Record::BufferExtents { size } => writeln!(out, "<Buffer: size = {size} bytes>"),
        Record::NewBuffer { tid } => writeln!(out, "<Thread ID: {tid}>"),
        Record::EndOfBuffer => writeln!(out, "<End of Buffer>"),
        Record::Walltime { seconds, micros } => {
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
