//! `recv`: reads a framed link from a serial device, a file or stdin, and writes what
//! it carries with a [`Collector`].
//!
//! A reader thread moves bytes from the input to the decoding loop, which checks
//! for Ctrl-C (every 50 ms) and the idle timeout between chunks. A GDB reader
//! is told to stop and given `READER_GRACE` to hand on what it still holds, leave
//! the target running and say how it ended (an error then is the run's error);
//! one that takes longer is left behind, so that a run always ends within a
//! second of Ctrl-C. The idle timeout counts from the moment the GDB reader is
//! attached: a connection that fails fails as it does without one. The queue between them holds
//! at most 16 chunks (`QUEUE_CHUNKS`): an input faster than the decoder (a file,
//! `/dev/zero`) waits for it instead of filling memory. A serial device that fails or
//! disappears is reopened (by path) until it is back: the partial frame it was in is
//! counted as skipped, and decoding goes on with the next frame.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flightrec_core::link::{DecoderStats, Event, FrameDecoder, FrameEncoder};

use super::collect::Collector;
use super::rtt::{GdbSettings, StreamEvent};
use crate::progress::Progress;

/// Serial line settings.
///
/// Reading a real device needs one attached; a device that cannot be opened
/// (and `reconnect` off) ends [`run`] with an error naming it:
///
/// ```
/// use std::sync::{atomic::AtomicBool, Arc};
/// use flightrec_host::link::collect::Collector;
/// use flightrec_host::progress::Progress;
/// use flightrec_host::link::recv::{run, Input, RecvOptions, SerialSettings};
///
/// let serial = SerialSettings {
///     path: "/dev/flightrec-no-such-tty".into(),
///     baud: 115_200,
///     data_bits: serialport::DataBits::Eight,
///     parity: serialport::Parity::None,
///     stop_bits: serialport::StopBits::One,
///     flow_control: serialport::FlowControl::None,
///     reconnect: false,
/// };
/// let opts = RecvOptions { input: Input::Serial(serial), idle_timeout: None, max_payload: 4096 };
/// let dir = tempfile::tempdir().unwrap();
/// let mut collector = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// let stop = Arc::new(AtomicBool::new(false));
/// let err = run(&opts, &mut collector, &stop, &Progress::new(true)).unwrap_err();
/// assert!(err.to_string().starts_with("/dev/flightrec-no-such-tty: "), "{err}");
/// ```
#[derive(Clone, Debug)]
pub struct SerialSettings {
    /// Device path (`/dev/ttyUSB0`, `/dev/ttyACM0`, a pseudo-terminal...).
    pub path: String,
    /// Baud rate.
    pub baud: u32,
    /// Data bits.
    pub data_bits: serialport::DataBits,
    /// Parity.
    pub parity: serialport::Parity,
    /// Stop bits.
    pub stop_bits: serialport::StopBits,
    /// Flow control.
    pub flow_control: serialport::FlowControl,
    /// Wait for the device to come back when it fails or disappears.
    pub reconnect: bool,
}

/// Where the link comes from. Example on [`run`] (a file) and on
/// [`SerialSettings`] (a device).
#[derive(Clone, Debug)]
pub enum Input {
    /// A file that was captured before.
    File(PathBuf),
    /// Standard input (a pipe from QEMU, `socat`, ...).
    Stdin,
    /// A serial device.
    Serial(SerialSettings),
    /// A target's RTT up-channel, read through a GDB server (see [`crate::link::rtt`]).
    Gdb(GdbSettings),
}

/// Chunks of input (up to 64 KiB each) queued between the reader thread and the
/// decoder: 1 MiB at most.
const QUEUE_CHUNKS: usize = 16;

/// How often the decoding loop looks at Ctrl-C and the idle timeout.
const TICK: Duration = Duration::from_millis(50);

/// How long a GDB reader that was told to stop has to hand on its last bytes,
/// leave the target running and end (its own wind-down takes 400 ms at most).
const READER_GRACE: Duration = Duration::from_millis(700);

/// Largest [`RecvOptions::max_payload`] accepted (64 MiB): the decoder's frame
/// buffer is allocated at this size, so a larger setting is refused.
///
/// ```
/// use std::sync::{atomic::AtomicBool, Arc};
/// use flightrec_host::link::collect::Collector;
/// use flightrec_host::progress::Progress;
/// use flightrec_host::link::recv::{run, Input, RecvOptions, MAX_PAYLOAD_LIMIT};
///
/// let dir = tempfile::tempdir().unwrap();
/// let opts = RecvOptions {
///     input: Input::File(dir.path().join("capture.bin")),
///     idle_timeout: None,
///     max_payload: MAX_PAYLOAD_LIMIT + 1,
/// };
/// let mut collector = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// let stop = Arc::new(AtomicBool::new(false));
/// let err = run(&opts, &mut collector, &stop, &Progress::new(true)).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// assert!(err.to_string().contains("67108864"), "{err}");
/// ```
pub const MAX_PAYLOAD_LIMIT: usize = 64 << 20;

/// How `recv` runs. Example on [`run`].
#[derive(Clone, Debug)]
pub struct RecvOptions {
    /// The input.
    pub input: Input,
    /// Stop after this long without a byte (None: wait until the input ends).
    pub idle_timeout: Option<Duration>,
    /// Largest payload accepted (frames beyond it are skipped); at most
    /// [`MAX_PAYLOAD_LIMIT`].
    pub max_payload: usize,
}

/// Counts of a finished `recv` run. Example on [`run`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RecvReport {
    /// Link-layer counters.
    pub link: DecoderStats,
    /// Bytes read from the input.
    pub bytes_read: u64,
    /// Times the serial device went away.
    pub disconnects: u64,
    /// The run ended on Ctrl-C.
    pub interrupted: bool,
}

enum Msg {
    /// The input is there (a GDB reader attached): the idle timeout runs from now.
    Ready,
    Data(Vec<u8>),
    /// The device went away: what was half-received is lost.
    Gone(String),
    Back,
    /// Something to tell the user (a GDB target went away).
    Note(String),
    End,
    Failed(io::Error),
}

fn read_loop(mut r: impl Read, tx: &SyncSender<Msg>) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                if tx.send(Msg::Data(buf[..n].to_vec())).is_err() {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn open_serial(s: &SerialSettings) -> serialport::Result<Box<dyn serialport::SerialPort>> {
    serialport::new(&s.path, s.baud)
        .data_bits(s.data_bits)
        .parity(s.parity)
        .stop_bits(s.stop_bits)
        .flow_control(s.flow_control)
        .timeout(Duration::from_millis(100))
        .open()
}

fn serial_loop(s: &SerialSettings, tx: &SyncSender<Msg>) {
    let mut port = match open_serial(s) {
        Ok(p) => p,
        Err(e) => {
            let _ = tx.send(Msg::Failed(io::Error::other(format!("{}: {e}", s.path))));
            return;
        }
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match port.read(&mut buf) {
            Ok(n) if n > 0 => {
                if tx.send(Msg::Data(buf[..n].to_vec())).is_err() {
                    return;
                }
                continue;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            // End of file or an error: the device is gone (unplugged, closed).
            Ok(_) | Err(_) => {}
        }
        if !s.reconnect {
            let _ = tx.send(Msg::End);
            return;
        }
        if tx
            .send(Msg::Gone(format!(
                "{}: device gone, waiting for it",
                s.path
            )))
            .is_err()
        {
            return;
        }
        drop(port);
        port = loop {
            std::thread::sleep(Duration::from_millis(200));
            if let Ok(p) = open_serial(s) {
                break p;
            }
        };
        if tx.send(Msg::Back).is_err() {
            return;
        }
    }
}

/// The reader thread of a GDB input, joined at the end so that the target is
/// detached (left running) before `run` returns.
type ReaderThread = Option<std::thread::JoinHandle<()>>;

fn spawn_reader(
    input: &Input,
    done: &Arc<AtomicBool>,
) -> io::Result<(Receiver<Msg>, Option<u64>, ReaderThread)> {
    let (tx, rx) = mpsc::sync_channel::<Msg>(QUEUE_CHUNKS);
    let len = match input {
        Input::File(path) => {
            let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
            let f = std::fs::File::open(path).map_err(named)?;
            let meta = f.metadata().map_err(named)?;
            if meta.is_dir() {
                return Err(named(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory, not a captured link",
                )));
            }
            let len = meta.is_file().then_some(meta.len());
            let path = path.clone();
            std::thread::spawn(move || {
                let m = match read_loop(f, &tx) {
                    Ok(()) => Msg::End,
                    Err(e) => {
                        Msg::Failed(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
                    }
                };
                let _ = tx.send(m);
            });
            len
        }
        Input::Stdin => {
            std::thread::spawn(move || {
                let m = match read_loop(io::stdin().lock(), &tx) {
                    Ok(()) => Msg::End,
                    Err(e) => Msg::Failed(io::Error::new(e.kind(), format!("stdin: {e}"))),
                };
                let _ = tx.send(m);
            });
            None
        }
        Input::Serial(s) => {
            let s = s.clone();
            std::thread::spawn(move || serial_loop(&s, &tx));
            None
        }
        Input::Gdb(g) => {
            let g = g.clone();
            let done = Arc::clone(done);
            let thread = std::thread::spawn(move || {
                let mut sink = |ev| match ev {
                    StreamEvent::Ready => tx.send(Msg::Ready).is_ok(),
                    StreamEvent::Data(bytes) => tx.send(Msg::Data(bytes)).is_ok(),
                    StreamEvent::Note(note) => tx.send(Msg::Note(note)).is_ok(),
                };
                let m = match super::rtt::stream(&g, &done, &mut sink) {
                    Ok(()) => Msg::End,
                    Err(e) => Msg::Failed(e),
                };
                let _ = tx.send(m);
            });
            return Ok((rx, None, Some(thread)));
        }
    };
    Ok((rx, len, None))
}

/// Runs `recv` until the input ends, the idle timeout passes or `stop` is set.
///
/// ```
/// use std::sync::{atomic::AtomicBool, Arc};
/// use std::time::Duration;
/// use flightrec_host::core::link::{FrameKind, LinkWriter};
/// use flightrec_host::link::collect::Collector;
/// use flightrec_host::progress::Progress;
/// use flightrec_host::link::recv::{run, Input, RecvOptions, RecvReport};
///
/// // A captured link: a file header, a buffer and a Trace2 line from source 1.
/// let trace = include_bytes!("../../../testdata/xray/crafted-v5.xray");
/// let mut buf = [0u8; 1024];
/// let mut link = LinkWriter::new(&mut buf[..]);
/// link.send(FrameKind::FileHeader, 1, &trace[..32]).unwrap();
/// link.send(FrameKind::FdrBuffer, 1, &trace[32..]).unwrap();
/// link.send(FrameKind::Trace2Line, 1, b"version 2.47.3\n").unwrap();
/// let unused = link.into_inner().len();
/// let wire = &buf[..buf.len() - unused];
/// let dir = tempfile::tempdir().unwrap();
/// let capture = dir.path().join("capture.bin");
/// std::fs::write(&capture, wire).unwrap();
///
/// let opts = RecvOptions {
///     input: Input::File(capture),
///     idle_timeout: Some(Duration::from_secs(10)),
///     max_payload: 4096,
/// };
/// let mut collector = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// let stop = Arc::new(AtomicBool::new(false));
/// let report: RecvReport = run(&opts, &mut collector, &stop, &Progress::new(true)).unwrap();
/// assert_eq!(report.bytes_read, wire.len() as u64);
/// assert_eq!((report.link.frames, report.link.crc_failures), (3, 0));
/// assert!(!report.interrupted);
/// assert_eq!(std::fs::read(dir.path().join("source-1.xray")).unwrap(), trace);
///
/// // With `stop` already set (Ctrl-C), the run ends at once.
/// stop.store(true, std::sync::atomic::Ordering::Relaxed);
/// let mut collector = Collector::new(dir.path(), dir.path().join("trace2.txt")).unwrap();
/// let report = run(&opts, &mut collector, &stop, &Progress::new(true)).unwrap();
/// assert!(report.interrupted);
/// ```
pub fn run(
    opts: &RecvOptions,
    collector: &mut Collector,
    stop: &Arc<AtomicBool>,
    progress: &Progress,
) -> io::Result<RecvReport> {
    if opts.max_payload > MAX_PAYLOAD_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a maximum payload of {} bytes is more than the limit of {MAX_PAYLOAD_LIMIT}",
                opts.max_payload
            ),
        ));
    }
    let done = Arc::new(AtomicBool::new(false));
    let (rx, len, reader) = spawn_reader(&opts.input, &done)?;
    progress.start(len);
    let mut buf = vec![0u8; FrameEncoder::max_encoded_len(opts.max_payload)];
    let mut dec = FrameDecoder::new(&mut buf);
    let mut report = RecvReport::default();
    // A GDB input is there once attached; the others at once.
    let mut ready = reader.is_none();
    let mut last_data = Instant::now();
    // The reader said how it ended (or went away).
    let mut ended = false;
    let mut failure = None;
    let take = |msg: Msg,
                dec: &mut FrameDecoder<'_>,
                report: &mut RecvReport,
                collector: &mut Collector|
     -> io::Result<()> {
        match msg {
            Msg::Data(bytes) => {
                report.bytes_read += bytes.len() as u64;
                let mut rest = &bytes[..];
                while !rest.is_empty() {
                    let (used, ev) = dec.feed(rest);
                    rest = &rest[used..];
                    if let Some(Event::Frame(f)) = ev {
                        collector.frame(&f)?;
                    }
                }
                progress.update(report.bytes_read, dec.stats().frames);
            }
            Msg::Gone(note) => {
                report.disconnects += 1;
                dec.finish();
                progress.note(&note);
            }
            Msg::Back => progress.note("device is back"),
            Msg::Note(note) => progress.note(&note),
            Msg::Ready | Msg::End | Msg::Failed(_) => {}
        }
        Ok(())
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            report.interrupted = true;
            break;
        }
        let msg = match rx.recv_timeout(TICK) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                if ready && opts.idle_timeout.is_some_and(|t| last_data.elapsed() >= t) {
                    break;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => {
                ended = true;
                break;
            }
        };
        match msg {
            Msg::Ready => {
                ready = true;
                last_data = Instant::now();
            }
            Msg::Data(_) | Msg::Back => last_data = Instant::now(),
            Msg::End => {
                ended = true;
                break;
            }
            Msg::Failed(e) => {
                ended = true;
                failure = Some(e);
                break;
            }
            Msg::Gone(_) | Msg::Note(_) => {}
        }
        take(msg, &mut dec, &mut report, collector)?;
    }
    done.store(true, Ordering::Relaxed);
    if let Some(thread) = reader {
        // The GDB reader's last bytes and how it ended, within the grace.
        let grace = Instant::now() + READER_GRACE;
        while !ended {
            let left = grace.saturating_duration_since(Instant::now());
            let msg = match rx.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    progress
                        .note("the GDB reader did not stop in time: the target may be left halted");
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            match msg {
                Msg::End => ended = true,
                Msg::Failed(e) => {
                    ended = true;
                    failure = Some(e);
                }
                other => take(other, &mut dec, &mut report, collector)?,
            }
        }
        drop(rx);
        if ended || thread.is_finished() {
            let _ = thread.join();
        }
    }
    dec.finish();
    progress.finish();
    if let Some(e) = failure {
        // What was received is written; the error is the run's.
        let _ = collector.finish();
        return Err(e);
    }
    collector.finish()?;
    report.link = dec.stats();
    Ok(report)
}
