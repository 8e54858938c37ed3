//! A progress bar on stderr for long inputs, shown only when stderr is a terminal.
//!
//! `recv` counts bytes and frames as they arrive; `verify` and `convert` count the
//! bytes of the file as they read it ([`Progress::read_file`]), then name the step
//! they are in (verifying, decoding, writing) while the bar keeps ticking.

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
pub struct Progress {
    bar: ProgressBar,
    visible: bool,
}

impl Progress {
    /// A progress display that draws only when stderr is a terminal and `quiet` is off.
    pub fn new(quiet: bool) -> Self {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = ProgressBar::hidden();
        Self { bar, visible }
    }

    /// Starts: a bar when the length is known and long, a spinner for streams.
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

    /// Bytes read and frames decoded so far.
    pub fn update(&self, bytes: u64, frames: u64) {
        if self.visible {
            self.bar.set_position(bytes);
            self.bar.set_message(format!("{frames} frames"));
        }
    }

    /// Names the step under way after the reading (`verifying`, `writing`...): the
    /// bar becomes a spinner with the time spent, since these steps have no byte
    /// count to show.
    pub fn stage(&self, what: &'static str) {
        if self.visible && !self.bar.is_hidden() {
            self.bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            self.bar.set_message(what);
        }
    }

    /// Reads a whole file, showing the bytes read so far for a long one.
    ///
    /// ```no_run
    /// use flightrec::tool::progress::Progress;
    /// let progress = Progress::new(false);
    /// let bytes = progress.read_file("trace.xray".as_ref())?;
    /// progress.stage("verifying");
    /// // ...
    /// progress.finish();
    /// # Ok::<(), std::io::Error>(())
    /// ```
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

    /// A one-off message (device gone, device back), printed above the bar.
    pub fn note(&self, text: &str) {
        if self.visible && !self.bar.is_hidden() {
            self.bar.println(text);
        } else {
            eprintln!("flightrec: {text}");
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
