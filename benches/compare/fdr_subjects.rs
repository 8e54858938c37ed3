//! The Rust subjects of the FDR table, each run in a process of its own.
//!
//! Every subject times the same loop: `calls` calls of a function that is never
//! inlined, whose body is a `black_box`ed xor and whose result is summed, with
//! the subject's tracing around the body. After the timed batches each subject
//! checks that it really recorded (so a silently disabled tracer cannot look
//! fast).

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flightrec_core::clock::{Clock, Tsc, TscP};
use flightrec_core::fdr::ring::{Policy, Recorder, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;

use flightrec_benches::ring_setup::{xray_config, BUFFER, BUFFERS};

use crate::timing::measure;

/// The traced function's body, shared by every subject.
#[inline(always)]
pub fn body(x: u64) -> u64 {
    black_box(x) ^ 0x5a
}

/// Sum of `calls` calls of `f`, so no call can be removed.
#[inline(always)]
pub fn call_loop(calls: u64, mut f: impl FnMut(u64) -> u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..calls {
        acc = acc.wrapping_add(f(black_box(i)));
    }
    black_box(acc)
}

#[inline(never)]
fn plain_call(x: u64) -> u64 {
    body(x)
}

/// The call alone: the baseline of every Rust row.
pub fn call(calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    Ok(measure(calls, batches, |n| call_loop(n, plain_call)))
}

/// A clock read plus an 8-byte store into a 64 KiB area, as the FDR criterion
/// bench's floor (`rdtsc`), or with `rdtscp` (which also reads the CPU id, as
/// compiler-rt and the std shell do).
struct Floor<C: Clock> {
    clock: C,
    area: Vec<u64>,
    i: usize,
}

impl<C: Clock> Floor<C> {
    #[inline(always)]
    fn stamp(&mut self) {
        let t = self.clock.now().tsc;
        // Masking keeps the index in bounds without a branch.
        self.area[self.i & (BUFFER / 8 - 1)] = t;
        self.i = self.i.wrapping_add(1);
    }
}

#[inline(never)]
fn floor_call<C: Clock>(f: &mut Floor<C>, x: u64) -> u64 {
    f.stamp();
    let r = body(x);
    f.stamp();
    r
}

/// The floor: two `rdtsc` reads and two stores per call.
pub fn floor(calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    floor_with(Tsc::new(1), calls, batches)
}

/// The floor with `rdtscp` instead of `rdtsc`.
pub fn floor_rdtscp(calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    floor_with(TscP::new(1), calls, batches)
}

fn floor_with<C: Clock>(clock: C, calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    let mut f = Floor {
        clock,
        area: vec![0; BUFFER / 8],
        i: 0,
    };
    let ns = measure(calls, batches, |n| call_loop(n, |x| floor_call(&mut f, x)));
    let written = f.area.iter().filter(|&&t| t != 0).count() as u64;
    let expected = (2 * calls * (u64::from(batches) + 1)).min((BUFFER / 8) as u64);
    if written != expected {
        return Err(format!(
            "floor stored {written} stamps, expected {expected}"
        ));
    }
    Ok(ns)
}

#[inline(never)]
fn recorder_call(rec: &mut Recorder<'_, '_>, clock: &mut Tsc, id: FunctionId, x: u64) -> u64 {
    let _ = rec.enter(id, clock.now());
    let r = body(x);
    let _ = rec.exit(id, clock.now());
    r
}

/// flightrec's core recorder over a flight-recorder ring, `rdtsc` clock.
pub fn flightrec_core(calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    let mut storage = vec![0u8; BUFFERS * BUFFER];
    let slots: Vec<Slot> = (0..BUFFERS).map(|_| Slot::NEW).collect();
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder)
        .map_err(|e| format!("ring: {e}"))?;
    let config = RecorderConfig::new(WriterConfig::new(1).with_pid(1), 1_000_000_000);
    let (mut rec, _consumer) = ring.split(config);
    let mut clock = Tsc::new(1_000_000_000);
    let id = FunctionId::new(1).map_err(|e| format!("{e:?}"))?;
    let ns = measure(calls, batches, |n| {
        call_loop(n, |x| recorder_call(&mut rec, &mut clock, id, x))
    });
    let stats = rec.stats();
    let records = 2 * calls * (u64::from(batches) + 1);
    if rec.records_dropped() != 0 {
        return Err(format!("{} records dropped", rec.records_dropped()));
    }
    // 8-byte records: the ring must have wrapped when more than it holds were written.
    if records * 8 > (BUFFERS * BUFFER) as u64 && stats.buffers_overwritten == 0 {
        return Err(format!(
            "{records} records but no buffer overwritten: {stats:?}"
        ));
    }
    Ok(ns)
}

#[inline(never)]
fn xray_shell_call(x: u64) -> u64 {
    let _f = flightrec::xray_fn!();
    body(x)
}

/// flightrec's std shell runtime (`flightrec::xray`): thread-local recorders from
/// a pool, set up like the compiler-rt run (flight recorder, 8 buffers of 64 KiB
/// for this thread, no duration threshold); the trace is written at shutdown.
pub fn flightrec_xray(calls: u64, batches: u32, dir: &Path) -> Result<Vec<f64>, String> {
    let config = xray_config(&dir.join("xray-shell-").to_string_lossy())?;
    flightrec::xray::init(config).map_err(|e| e.to_string())?;
    let ns = measure(calls, batches, |n| call_loop(n, xray_shell_call));
    let report = flightrec::xray::shutdown().map_err(|e| e.to_string())?;
    for p in [&report.path, &report.names_path].into_iter().flatten() {
        let _ = std::fs::remove_file(p);
    }
    let stats = report.stats;
    let records = 2 * calls * (u64::from(batches) + 1);
    // Like the core row: the ring must have wrapped when it got more than it holds.
    let wrapped_if_needed =
        records * 8 <= (BUFFERS * BUFFER) as u64 || stats.buffers_overwritten > 0;
    if stats.records_dropped != 0 || !wrapped_if_needed || report.path.is_none() {
        return Err(format!(
            "no complete recording: {stats:?}, trace {:?}",
            report.path
        ));
    }
    Ok(ns)
}

/// Spans per fastrace root: its local span queue holds at most 10240, beyond
/// which local spans are silently not recorded.
const SPANS_PER_ROOT: u64 = 1000;

/// A fastrace reporter that counts and drops the spans (nothing is printed or
/// sent; the span collection itself runs on fastrace's collector thread).
struct CountingReporter(Arc<AtomicU64>);

impl fastrace::collector::Reporter for CountingReporter {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        self.0.fetch_add(spans.len() as u64, Ordering::Relaxed);
    }
}

#[inline(never)]
fn fastrace_call(x: u64) -> u64 {
    let _span = fastrace::local::LocalSpan::enter_with_local_parent("work");
    body(x)
}

/// fastrace local spans under a root span per 1000 calls, as its docs set them up.
pub fn fastrace(calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    use fastrace::prelude::{Span, SpanContext};
    let reported = Arc::new(AtomicU64::new(0));
    fastrace::set_reporter(
        CountingReporter(reported.clone()),
        fastrace::collector::Config::default(),
    );
    let ns = measure(calls, batches, |n| {
        let mut acc = 0u64;
        let mut done = 0;
        while done < n {
            let chunk = SPANS_PER_ROOT.min(n - done);
            let root = Span::root("batch", SpanContext::random());
            let _parent = root.set_local_parent();
            acc = acc.wrapping_add(call_loop(chunk, |x| fastrace_call(x + done)));
            done += chunk;
        }
        acc
    });
    fastrace::flush();
    let spans = reported.load(Ordering::Relaxed);
    let expected = calls * (u64::from(batches) + 1);
    if spans < expected {
        return Err(format!(
            "fastrace reported {spans} spans, expected at least {expected}"
        ));
    }
    Ok(ns)
}

#[inline(never)]
fn tracing_call(x: u64) -> u64 {
    let _span = tracing::info_span!("work").entered();
    body(x)
}

fn tracing_loop(calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    if tracing::info_span!("work").is_disabled() {
        return Err("the span is disabled".to_owned());
    }
    Ok(measure(calls, batches, |n| call_loop(n, tracing_call)))
}

/// `tracing` spans with a bare `Registry` as the global subscriber.
pub fn tracing_registry(calls: u64, batches: u32) -> Result<Vec<f64>, String> {
    tracing::subscriber::set_global_default(tracing_subscriber::registry())
        .map_err(|e| e.to_string())?;
    tracing_loop(calls, batches)
}

/// `tracing` spans through the fmt layer, which writes a line at every span
/// enter and exit to a file (one `write` per line, as it does by default).
pub fn tracing_fmt(calls: u64, batches: u32, dir: &Path) -> Result<Vec<f64>, String> {
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::layer::SubscriberExt;
    let path = dir.join("tracing-fmt.log");
    let file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(file)
        .with_span_events(FmtSpan::ENTER | FmtSpan::EXIT);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .map_err(|e| e.to_string())?;
    let ns = tracing_loop(calls, batches)?;
    let lines = count_lines(&path)?;
    let expected = 2 * calls * (u64::from(batches) + 1);
    if lines != expected {
        return Err(format!(
            "fmt layer wrote {lines} lines, expected {expected}"
        ));
    }
    Ok(ns)
}

/// Lines in a file.
pub fn count_lines(path: &Path) -> Result<u64, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut n = 0;
    for line in BufReader::new(f).split(b'\n') {
        line.map_err(|e| e.to_string())?;
        n += 1;
    }
    Ok(n)
}
