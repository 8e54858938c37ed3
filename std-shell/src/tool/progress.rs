//! A progress bar on stderr for long inputs, shown only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs shorter than this finish too fast for a bar to help.
const LONG_INPUT: u64 = 1 << 20;

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
