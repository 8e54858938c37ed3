//! The Rust subjects of the Trace2 table: a region enter and leave around the
//! traced call, each written as one line to a file.
//!
//! Two kinds of rows: the std shell's runtime (`flightrec::trace2`, started
//! with one target pointing at the file, regions with `flightrec::region!`), and
//! the core formatters used directly: per event, read the wall clock and the
//! monotonic clock, update the thread's region stack, format the line into a
//! stack buffer and `write` it to the file (unbuffered, one system call per
//! line, as git does).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use flightrec_core::trace2::{
    Event, Format, LineCtx, Micros, ProcessClock, Target, ThreadName, ThreadState, WallTime,
};

use crate::fdr_subjects::{body, call_loop, count_lines};
use crate::timing::measure;

const SID: &[u8] = b"20231114T221320.123456Z-H65cb7838-P00001234";

/// One thread's Trace2 state writing to one file.
struct CoreTarget {
    format: Format,
    file: File,
    thread: ThreadState<16>,
    process: ProcessClock,
    start: Instant,
    buf: [u8; 512],
    /// Lines the formatter could not produce (must stay 0).
    failed: u64,
}

impl CoreTarget {
    fn new(format: Format, file: File) -> Self {
        CoreTarget {
            format,
            file,
            thread: ThreadState::new(ThreadName::main(), 0),
            process: ProcessClock::new(0),
            start: Instant::now(),
            buf: [0; 512],
            failed: 0,
        }
    }

    #[inline(always)]
    fn clocks(&self) -> (WallTime, Micros) {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let now = self.start.elapsed().as_micros() as Micros;
        (
            WallTime::new(wall.as_secs() as i64, wall.subsec_micros()),
            now,
        )
    }

    #[inline(always)]
    fn write(&mut self, time: WallTime, nesting: u32, t_abs: Micros, line: u32, ev: &Event<'_>) {
        let ctx = LineCtx {
            time,
            file: b"compare.rs",
            line,
            nesting,
            repo: Some(1),
            t_abs,
            ..LineCtx::new(SID, self.thread.name.as_bytes())
        };
        match self.format.write_line(&ctx, ev, &mut self.buf) {
            Ok(n) if (&self.file).write_all(&self.buf[..n]).is_ok() => {}
            _ => self.failed += 1,
        }
    }

    #[inline(always)]
    fn region_enter(&mut self) {
        let (time, now) = self.clocks();
        let nesting = self.thread.region_enter(now);
        let ev = Event::RegionEnter {
            category: Some(b"bench"),
            label: Some(b"work"),
            msg: None,
        };
        self.write(time, nesting, self.process.t_abs(now), 10, &ev);
    }

    #[inline(always)]
    fn region_leave(&mut self) {
        let (time, now) = self.clocks();
        let Ok((t_rel, nesting)) = self.thread.region_leave(now) else {
            self.failed += 1;
            return;
        };
        let ev = Event::RegionLeave {
            t_rel,
            category: Some(b"bench"),
            label: Some(b"work"),
            msg: None,
        };
        self.write(time, nesting, self.process.t_abs(now), 12, &ev);
    }
}

#[inline(never)]
fn region_call(t: &mut CoreTarget, x: u64) -> u64 {
    t.region_enter();
    let r = body(x);
    t.region_leave();
    r
}

/// The core formatter of `target` around each call, lines to a file in `dir`.
pub fn core_formatter(
    target: Target,
    calls: u64,
    batches: u32,
    dir: &Path,
) -> Result<Vec<f64>, String> {
    let path = dir.join(format!("trace2-{target:?}.log"));
    let file = File::create(&path).map_err(|e| e.to_string())?;
    let mut t = CoreTarget::new(Format::new(target, false), file);
    let ns = measure(calls, batches, |n| call_loop(n, |x| region_call(&mut t, x)));
    if t.failed != 0 {
        return Err(format!("{} lines not written", t.failed));
    }
    drop(t);
    let lines = count_lines(&path)?;
    let expected = 2 * calls * (u64::from(batches) + 1);
    if lines != expected {
        return Err(format!("{lines} lines written, expected {expected}"));
    }
    Ok(ns)
}

#[inline(never)]
fn shell_region_call(x: u64) -> u64 {
    let _region = flightrec::region!("bench", "work");
    body(x)
}

/// The std shell's Trace2 runtime with only `target` on, writing to a file in `dir`.
pub fn shell_target(
    target: Target,
    calls: u64,
    batches: u32,
    dir: &Path,
) -> Result<Vec<f64>, String> {
    use flightrec::trace2::config::Trace2Config;
    let path = dir.join(format!("trace2-shell-{target:?}.log"));
    let var = match target {
        Target::Normal => "GIT_TRACE2",
        Target::Perf => "GIT_TRACE2_PERF",
        Target::Event => "GIT_TRACE2_EVENT",
    };
    let cfg = Trace2Config::load_from("GIT_TRACE2", |name| match name {
        n if n == var => Some(path.clone().into_os_string()),
        "GIT_CONFIG_NOSYSTEM" => Some("1".into()),
        _ => None,
    });
    let session = flightrec::trace2::Builder::new()
        .config(cfg)
        .argv(["compare"])
        .init();
    if !session.is_active() {
        return Err(format!(
            "Trace2 did not start with {var}={}",
            path.display()
        ));
    }
    let ns = measure(calls, batches, |n| call_loop(n, shell_region_call));
    drop(session);
    let text = std::fs::read(&path).map_err(|e| e.to_string())?;
    let regions = text
        .split(|&b| b == b'\n')
        .filter(|l| l.windows(12).any(|w| w == b"region_enter"))
        .count() as u64;
    let expected = calls * (u64::from(batches) + 1);
    if regions != expected {
        return Err(format!("{regions} region_enter lines, expected {expected}"));
    }
    Ok(ns)
}
