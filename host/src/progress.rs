//! A progress bar on stderr for long inputs, shown only when stderr is a terminal.
//!
//! `recv` counts bytes and frames as they arrive; `verify` and `convert` count the
//! bytes of the file as they read it ([`Progress::read_file`]), then name the step
//! they are in (verifying, decoding, writing) while the bar keeps ticking. The
//! streaming readers read files in place and show one bar per pass over them
//! ([`Progress::pass`], [`Progress::advance`]).

use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs shorter than this finish too fast for a bar to help.
const LONG_INPUT: u64 = 1 << 20;

/// Bytes read at a time by [`Progress::read_file`].
const READ_CHUNK: u64 = 1 << 20;

/// Progress of a long run; silent unless stderr is a terminal.
///
/// Examples run without a terminal, so here every call draws nothing and the
/// file is read whole; the bar itself is checked on a pseudo-terminal by the
/// `progress_bar_only_on_a_terminal_for_long_files` test of `tests/tool_streams.rs`.
///
/// ```
/// use flightrec_host::progress::Progress;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("trace.xray");
/// let data = vec![7u8; 3 << 20]; // 3 MiB: long enough for a bar on a terminal
/// std::fs::write(&path, &data).unwrap();
///
/// // verify and convert: the reading, then the step under way.
/// let progress = Progress::new(false);
/// assert_eq!(progress.read_file(&path).unwrap(), data);
/// progress.stage("verifying");
/// progress.finish();
/// assert!(progress.read_file(&dir.path().join("missing")).is_err());
///
/// // Streaming verify and convert: one bar per pass over the file.
/// progress.pass(3 << 20, "verifying");
/// progress.advance(1 << 20);
/// progress.finish();
///
/// // recv: a stream of unknown length, counted as it arrives.
/// let progress = Progress::new(true); // --quiet
/// progress.start(None);
/// progress.update(4096, 12);
/// progress.note("device is back"); // without a bar: "flightrec: device is back" on stderr
/// progress.finish();
/// ```
pub struct Progress {
    bar: ProgressBar,
    visible: bool,
}

impl Progress {
    /// A progress display that draws only when stderr is a terminal and `quiet` is off.
    /// Example on [`Progress`].
    pub fn new(quiet: bool) -> Self {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = ProgressBar::hidden();
        Self { bar, visible }
    }

    /// Starts: a bar when the length is known and long, a spinner for streams.
    /// Example on [`Progress`].
    pub fn start(&self, len: Option<u64>) {
        if !self.visible {
            return;
        }
        match len {
            Some(n) if n < LONG_INPUT => return,
            Some(n) => {
                self.bar.set_length(n);
                self.bar.set_style(
                    ProgressStyle::with_template(
                        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                // Keeps redrawing while a step after the reading runs.
                self.bar.enable_steady_tick(Duration::from_millis(200));
            }
            None => {
                self.bar.set_style(
                    ProgressStyle::with_template("{spinner} {bytes} {bytes_per_sec} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                self.bar.enable_steady_tick(Duration::from_millis(200));
            }
        }
        self.bar.set_draw_target(ProgressDrawTarget::stderr());
    }

    /// Bytes read and frames decoded so far. Example on [`Progress`].
    pub fn update(&self, bytes: u64, frames: u64) {
        if self.visible {
            self.bar.set_position(bytes);
            self.bar.set_message(format!("{frames} frames"));
        }
    }

    /// Names the step under way after the reading (`verifying`, `writing`...): the
    /// bar becomes a spinner with the time spent, since these steps have no byte
    /// count to show. Example on [`Progress`].
    pub fn stage(&self, what: &'static str) {
        if self.visible && !self.bar.is_hidden() {
            self.bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            self.bar.set_message(what);
        }
    }

    /// Reads a whole file, showing the bytes read so far for a long one. Example
    /// on [`Progress`].
    pub fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut bytes = Vec::new();
        if !self.visible || len < LONG_INPUT {
            // No bar: one read of the whole file, as `std::fs::read` does.
            file.read_to_end(&mut bytes)?;
            return Ok(bytes);
        }
        bytes.reserve_exact(usize::try_from(len).unwrap_or(0));
        self.start(Some(len));
        self.bar.set_message("reading");
        // In chunks straight into the result, so the bar moves between them.
        while (&mut file).take(READ_CHUNK).read_to_end(&mut bytes)? > 0 {
            self.bar.set_position(bytes.len() as u64);
        }
        Ok(bytes)
    }

    /// Starts a pass over a file of `len` bytes read in place (streaming readers):
    /// a bar named `what`, moved with [`Progress::advance`]. Each pass starts the
    /// bar again. Example on [`Progress`].
    pub fn pass(&self, len: u64, what: &'static str) {
        if !self.visible || len < LONG_INPUT {
            return;
        }
        if self.bar.is_hidden() {
            self.start(Some(len));
        } else {
            self.bar.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            self.bar.set_length(len);
        }
        self.bar.reset();
        self.bar.set_message(what);
    }

    /// Moves the bar of the current pass to `bytes` read. Example on [`Progress`].
    pub fn advance(&self, bytes: u64) {
        if self.visible {
            self.bar.set_position(bytes);
        }
    }

    /// A one-off message (device gone, device back), printed above the bar, or
    /// as a `flightrec: ` line on stderr without one. Example on [`Progress`].
    pub fn note(&self, text: &str) {
        if self.visible && !self.bar.is_hidden() {
            self.bar.println(text);
        } else {
            eprintln!("flightrec: {text}");
        }
    }

    /// Removes the bar. Example on [`Progress`].
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
