//! The hot paths whose instructions are counted. Each runs `n` operations inside
//! one never-inlined function with an unmangled name, which callgrind collects
//! with `--toggle-collect=NAME`; setup happens outside it and is not counted.

use std::hint::black_box;

use flightrec_benches::ring_setup::{xray_config, BUFFER, BUFFERS};
use flightrec_core::clock::{Clock, Tsc};
use flightrec_core::fdr::ring::{Policy, Recorder, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;
use flightrec_core::trace2::{Event, Format, LineCtx, Target, WallTime};

/// One counted hot path.
pub struct HotPath {
    /// Name in the baseline file and on the command line.
    pub name: &'static str,
    /// The collected function's symbol.
    pub symbol: &'static str,
    /// Operations per run (the count is divided by this).
    pub ops: u64,
    /// What one operation is.
    pub what: &'static str,
    /// Sets up and runs the operations.
    pub run: fn(u64),
}

/// Every counted hot path.
pub const ALL: &[HotPath] = &[
    HotPath {
        name: "floor_pair",
        symbol: "ir_floor_pair",
        ops: 100_000,
        what: "2 × (rdtsc + 8-byte store)",
        run: floor_pair,
    },
    HotPath {
        name: "fdr_pair",
        symbol: "ir_fdr_pair",
        ops: 100_000,
        what: "core Recorder enter + exit, rdtsc clock, 8 × 64 KiB flight-recorder ring",
        run: fdr_pair,
    },
    HotPath {
        name: "fdr_enter_arg_exit",
        symbol: "ir_fdr_enter_arg_exit",
        ops: 100_000,
        what: "core Recorder enter with one argument + exit",
        run: fdr_enter_arg_exit,
    },
    HotPath {
        name: "xray_pair",
        symbol: "ir_xray_pair",
        ops: 100_000,
        what: "std shell `flightrec::xray` guard enter + exit (rdtsc clock, thread-local ring)",
        run: xray_pair,
    },
    HotPath {
        name: "span_registry",
        symbol: "ir_span_pair",
        ops: 100_000,
        what: "tracing span enter + exit on a bare `Registry` (the layer's baseline)",
        run: span_registry,
    },
    HotPath {
        name: "span_layer_fdr",
        symbol: "ir_span_pair",
        ops: 100_000,
        what: "tracing span enter + exit, `Registry` + flightrec layer, FDR on (Trace2 off)",
        run: span_layer_fdr,
    },
    HotPath {
        name: "span_layer_clock",
        symbol: "ir_span_pair",
        ops: 100_000,
        what: "tracing span enter + exit, `Registry` + a layer that only reads the clock (the floor of a timestamping layer)",
        run: span_layer_clock,
    },
    HotPath {
        name: "trace2_perf_region",
        symbol: "ir_trace2_perf_region",
        ops: 10_000,
        what: "perf region_enter + region_leave lines formatted into a buffer",
        run: trace2_perf_region,
    },
    HotPath {
        name: "trace2_event_region",
        symbol: "ir_trace2_event_region",
        ops: 10_000,
        what: "event region_enter + region_leave lines formatted into a buffer",
        run: trace2_event_region,
    },
    HotPath {
        name: "trace2_shell_perf_region",
        symbol: "ir_trace2_shell_perf_region",
        ops: 10_000,
        what: "std shell `flightrec::region!` to a perf target file (user-space part)",
        run: trace2_shell_perf_region,
    },
    HotPath {
        name: "trace2_event_data",
        symbol: "ir_trace2_event_data",
        ops: 10_000,
        what: "event data line formatted into a buffer",
        run: trace2_event_data,
    },
];

#[no_mangle]
#[inline(never)]
fn ir_floor_pair(area: &mut [u64], clock: &mut Tsc, n: u64) {
    let mask = area.len() - 1;
    for i in 0..n as usize {
        area[(2 * i) & mask] = clock.now().tsc;
        area[(2 * i + 1) & mask] = clock.now().tsc;
    }
}

fn floor_pair(n: u64) {
    let mut area = vec![0u64; BUFFER / 8];
    ir_floor_pair(&mut area, &mut Tsc::new(1), n);
    black_box(&area);
}

/// A recorder over a fresh flight-recorder ring, handed to `f`.
fn with_recorder(f: impl FnOnce(&mut Recorder<'_, '_>, &mut Tsc, FunctionId)) {
    let mut storage = vec![0u8; BUFFERS * BUFFER];
    let slots: Vec<Slot> = (0..BUFFERS).map(|_| Slot::NEW).collect();
    let mut ring = Ring::new(&mut storage, &slots, Policy::FlightRecorder).expect("ring");
    let config = RecorderConfig::new(WriterConfig::new(1).with_pid(1), 1_000_000_000);
    let (mut rec, _consumer) = ring.split(config);
    let id = FunctionId::new(1).expect("id");
    f(&mut rec, &mut Tsc::new(1_000_000_000), id);
    assert_eq!(rec.records_dropped(), 0);
}

#[no_mangle]
#[inline(never)]
fn ir_fdr_pair(rec: &mut Recorder<'_, '_>, clock: &mut Tsc, id: FunctionId, n: u64) {
    for _ in 0..n {
        let _ = rec.enter(black_box(id), clock.now());
        let _ = rec.exit(black_box(id), clock.now());
    }
}

fn fdr_pair(n: u64) {
    with_recorder(|rec, clock, id| ir_fdr_pair(rec, clock, id, n));
}

#[no_mangle]
#[inline(never)]
fn ir_fdr_enter_arg_exit(rec: &mut Recorder<'_, '_>, clock: &mut Tsc, id: FunctionId, n: u64) {
    for i in 0..n {
        let _ = rec.enter_with_args(black_box(id), clock.now(), &[black_box(i)]);
        let _ = rec.exit(black_box(id), clock.now());
    }
}

fn fdr_enter_arg_exit(n: u64) {
    with_recorder(|rec, clock, id| ir_fdr_enter_arg_exit(rec, clock, id, n));
}

#[no_mangle]
#[inline(never)]
fn ir_xray_pair(id: FunctionId, n: u64) {
    for _ in 0..n {
        let _guard = flightrec::xray::enter(black_box(id));
    }
}

/// The std shell runtime in flight-recorder mode with the comparison's buffers;
/// the trace goes to a temporary directory and is removed.
fn xray_pair(n: u64) {
    let dir = std::env::temp_dir().join(format!("flightrec-ir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut config = xray_config(&dir.join("xray-").to_string_lossy()).expect("config");
    // `Auto` times rdtscp against rdtsc at start-up, and under callgrind that timing
    // can go either way; pinning rdtsc keeps the count the same from run to run.
    config.cpu_ids = flightrec::xray::CpuIds::Never;
    flightrec::xray::init(config).expect("xray init");
    ir_xray_pair(FunctionId::new(1).expect("id"), n);
    let report = flightrec::xray::shutdown().expect("shutdown");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(report.stats.records_dropped, 0);
    assert!(report.stats.buffers_overwritten > 0, "{:?}", report.stats);
}

#[no_mangle]
#[inline(never)]
fn ir_span_pair(span: &tracing::Span, n: u64) {
    for _ in 0..n {
        let _entered = black_box(span).enter();
    }
}

/// The span of the layer bench (`benches/benches/layer.rs`), made once.
fn span_pair_on<S>(subscriber: S, n: u64)
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("work", id = 7);
        ir_span_pair(&span, n);
    });
}

fn span_registry(n: u64) {
    span_pair_on(tracing_subscriber::registry(), n);
}

/// The layer with FDR recording into a flight recorder, as in `xray_pair`.
fn span_layer_fdr(n: u64) {
    use tracing_subscriber::layer::SubscriberExt;
    let dir = std::env::temp_dir().join(format!("flightrec-ir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut config = xray_config(&dir.join("xray-").to_string_lossy()).expect("config");
    config.cpu_ids = flightrec::xray::CpuIds::Never;
    flightrec::xray::init(config).expect("xray init");
    span_pair_on(
        tracing_subscriber::registry().with(flightrec::layer::layer()),
        n,
    );
    let report = flightrec::xray::shutdown().expect("shutdown");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(report.stats.records_dropped, 0);
    assert!(report.stats.buffers_overwritten > 0, "{:?}", report.stats);
}

/// The floor of a layer that timestamps a span's enter and exit: each reads
/// the clock FDR records with and stores the reading (`ClockOnlyLayer` of
/// `benches/benches/layer.rs`).
struct ClockOnlyLayer;

static LAST_READING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ClockOnlyLayer {
    fn on_enter(&self, _: &tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
        LAST_READING.store(
            flightrec::xray::clock::now().tsc,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    fn on_exit(&self, _: &tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
        LAST_READING.store(
            flightrec::xray::clock::now().tsc,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

/// The clock-only layer with FDR recording, the clock chosen as in `span_layer_fdr`.
fn span_layer_clock(n: u64) {
    use tracing_subscriber::layer::SubscriberExt;
    let dir = std::env::temp_dir().join(format!("flightrec-ir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut config = xray_config(&dir.join("xray-").to_string_lossy()).expect("config");
    config.cpu_ids = flightrec::xray::CpuIds::Never;
    flightrec::xray::init(config).expect("xray init");
    span_pair_on(tracing_subscriber::registry().with(ClockOnlyLayer), n);
    let _ = flightrec::xray::shutdown();
    let _ = std::fs::remove_dir_all(&dir);
    assert_ne!(LAST_READING.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[no_mangle]
#[inline(never)]
fn ir_trace2_shell_perf_region(n: u64) {
    for _ in 0..n {
        let _region = flightrec::region!("unpack_trees", "unpack_trees");
    }
}

/// The std shell's Trace2 runtime with only the perf target, to a temporary file.
fn trace2_shell_perf_region(n: u64) {
    use flightrec::trace2::config::Trace2Config;
    let path = std::env::temp_dir().join(format!("flightrec-ir-{}.perf", std::process::id()));
    let cfg = Trace2Config::load_from("GIT_TRACE2", |name| match name {
        "GIT_TRACE2_PERF" => Some(path.clone().into_os_string()),
        "GIT_CONFIG_NOSYSTEM" => Some("1".into()),
        _ => None,
    });
    let session = flightrec::trace2::Builder::new()
        .config(cfg)
        .argv(["instructions"])
        .init();
    assert!(session.is_active());
    ir_trace2_shell_perf_region(n);
    drop(session);
    let text = std::fs::read_to_string(&path).expect("perf file");
    let _ = std::fs::remove_file(&path);
    assert_eq!(text.matches("region_enter").count() as u64, n);
}

const SID: &[u8] = b"20231114T221320.123456Z-H65cb7838-P00001234";

fn ctx(line: u32) -> LineCtx<'static> {
    LineCtx {
        time: WallTime::new(1_700_000_000, 123_456),
        file: b"unpack-trees.c",
        line,
        nesting: 2,
        repo: Some(1),
        t_abs: 20,
        ..LineCtx::new(SID, b"main")
    }
}

const ENTER: Event<'static> = Event::RegionEnter {
    category: Some(b"unpack_trees"),
    label: Some(b"unpack_trees"),
    msg: None,
};

const LEAVE: Event<'static> = Event::RegionLeave {
    t_rel: 3,
    category: Some(b"unpack_trees"),
    label: Some(b"unpack_trees"),
    msg: None,
};

#[no_mangle]
#[inline(never)]
fn ir_trace2_region(format: &Format, buf: &mut [u8], n: u64) -> usize {
    let (enter, leave) = (ctx(1902), ctx(2105));
    let mut total = 0;
    for _ in 0..n {
        total += format
            .write_line(black_box(&enter), black_box(&ENTER), buf)
            .unwrap_or(0);
        total += format
            .write_line(black_box(&leave), black_box(&LEAVE), buf)
            .unwrap_or(0);
    }
    total
}

/// Distinct symbols per target, so each is collected on its own.
#[no_mangle]
#[inline(never)]
fn ir_trace2_perf_region(buf: &mut [u8], n: u64) -> usize {
    ir_trace2_region(&Format::new(Target::Perf, false), buf, n)
}

#[no_mangle]
#[inline(never)]
fn ir_trace2_event_region(buf: &mut [u8], n: u64) -> usize {
    ir_trace2_region(&Format::new(Target::Event, false), buf, n)
}

fn trace2_perf_region(n: u64) {
    let mut buf = [0u8; 512];
    let total = ir_trace2_perf_region(&mut buf, n);
    assert!(total as u64 >= 2 * n * 100, "lines too short: {total}");
}

fn trace2_event_region(n: u64) {
    let mut buf = [0u8; 512];
    let total = ir_trace2_event_region(&mut buf, n);
    assert!(total as u64 >= 2 * n * 100, "lines too short: {total}");
}

#[no_mangle]
#[inline(never)]
fn ir_trace2_event_data(buf: &mut [u8], n: u64) -> usize {
    let format = Format::new(Target::Event, false);
    let ctx = ctx(2334);
    let ev = Event::Data {
        t_rel: 4,
        category: b"index",
        key: b"read/cache_nr",
        value: b"3",
    };
    let mut total = 0;
    for _ in 0..n {
        total += format
            .write_line(black_box(&ctx), black_box(&ev), buf)
            .unwrap_or(0);
    }
    total
}

fn trace2_event_data(n: u64) {
    let mut buf = [0u8; 512];
    let total = ir_trace2_event_data(&mut buf, n);
    assert!(total as u64 >= n * 100, "lines too short: {total}");
}

/// The hot path with this name.
pub fn find(name: &str) -> Option<&'static HotPath> {
    ALL.iter().find(|p| p.name == name)
}
