//! Records a multi-threaded workload with flightrec-core and writes one version-5
//! LLVM XRay FDR file that `llvm-xray` reads.
//!
//! ```text
//! cargo run -q --release -p flightrec-core --example fdr-demo -- OUT_DIR
//! llvm-xray stack OUT_DIR/fdr-demo.xray
//! ```
//!
//! Each of the worker threads owns a streaming ring of small buffers and drains it
//! as it goes, like a firmware main loop flushing to a serial link; the main thread
//! then writes the file header and every thread's buffers.

use std::num::NonZeroU64;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use flightrec_core::clock::{Clock, Timestamp};
use flightrec_core::fdr::ring::{Consumer, Policy, Recorder, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::{Walltime, WriterConfig};
use flightrec_core::fdr::FunctionId;

const THREADS: usize = 4;
const BUFFER_SIZE: usize = 4096;
const BUFFERS: usize = 8;
/// Function ids: 1 = `worker`, 2..=7 = `step` at depth 1..=6, 8 = `checksum` (with
/// arguments), 9 = `tail_target`.
const WORKER: u32 = 1;
const CHECKSUM: u32 = 8;
const TAIL_TARGET: u32 = 9;

/// The host's monotonic clock in nanoseconds (portable; the std shell uses the TSC).
#[derive(Clone, Copy)]
struct MonotonicNanos(Instant);

impl Clock for MonotonicNanos {
    fn now(&mut self) -> Timestamp {
        Timestamp {
            tsc: self.0.elapsed().as_nanos() as u64 + 1,
            cpu: 0,
        }
    }
    fn ticks_per_second(&self) -> NonZeroU64 {
        NonZeroU64::new(1_000_000_000).unwrap()
    }
}

struct Tracer<'r, 'a> {
    rec: Recorder<'r, 'a>,
    cons: Consumer<'r, 'a>,
    clock: MonotonicNanos,
    out: Vec<u8>,
}

impl Tracer<'_, '_> {
    fn drain(&mut self) {
        while let Some(buf) = self.cons.pop() {
            self.out.extend_from_slice(&buf);
        }
    }
    fn enter(&mut self, id: u32) {
        let ts = self.clock.now();
        self.rec
            .enter(FunctionId::new(id).unwrap(), ts)
            .expect("consumer keeps up");
    }
    fn exit(&mut self, id: u32) {
        let ts = self.clock.now();
        self.rec
            .exit(FunctionId::new(id).unwrap(), ts)
            .expect("consumer keeps up");
        self.drain();
    }
}

fn step(t: &mut Tracer, depth: u32, seed: u64) -> u64 {
    let id = 1 + depth;
    t.enter(id);
    let mut acc = seed;
    if depth < 6 {
        for i in 0..2 {
            acc = acc.wrapping_add(step(t, depth + 1, seed.wrapping_mul(31).wrapping_add(i)));
        }
    } else {
        // The leaf: a call with arguments, then a tail call.
        let ts = t.clock.now();
        t.rec
            .enter_with_args(FunctionId::new(CHECKSUM).unwrap(), ts, &[seed, acc])
            .unwrap();
        acc = acc.rotate_left(7) ^ 0x9e37_79b9_7f4a_7c15;
        let ts = t.clock.now();
        t.rec
            .tail_exit(FunctionId::new(CHECKSUM).unwrap(), ts)
            .unwrap();
        t.enter(TAIL_TARGET);
        std::hint::black_box(&mut acc);
        t.exit(TAIL_TARGET);
    }
    if seed % 5 == 0 {
        let ts = t.clock.now();
        t.rec
            .custom_event(ts, format!("depth={depth} acc={acc:x}").as_bytes())
            .unwrap();
    }
    if seed % 7 == 0 {
        let ts = t.clock.now();
        t.rec.typed_event(ts, 42, &acc.to_le_bytes()).unwrap();
    }
    t.exit(id);
    acc
}

fn run_thread(tid: u32, pid: u32, clock: MonotonicNanos, epoch: Walltime) -> (Vec<u8>, usize) {
    let mut storage = vec![0u8; BUFFERS * BUFFER_SIZE];
    let slots: Vec<Slot> = (0..BUFFERS).map(|_| Slot::NEW).collect();
    let mut ring = Ring::new(&mut storage, &slots, Policy::Streaming).unwrap();
    let cfg = RecorderConfig::new(WriterConfig::new(tid).with_pid(pid), 1_000_000_000)
        .with_epoch(epoch, 0);
    let (rec, cons) = ring.split(cfg);
    let mut t = Tracer {
        rec,
        cons,
        clock,
        out: Vec::new(),
    };
    for round in 0..20u64 {
        t.enter(WORKER);
        step(&mut t, 1, round + tid as u64 * 1000);
        t.exit(WORKER);
    }
    t.rec.flush();
    t.drain();
    assert_eq!(t.rec.records_dropped(), 0);
    let buffers = t.rec.stats().buffers_finished as usize;
    (t.out, buffers)
}

fn main() {
    let out_dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "out".into()));
    std::fs::create_dir_all(&out_dir).expect("create OUT_DIR");
    let clock = MonotonicNanos(Instant::now());
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let epoch = Walltime {
        seconds: now.as_secs() as i64,
        micros: now.subsec_micros(),
    };
    let pid = std::process::id();

    let results: Vec<(Vec<u8>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| s.spawn(move || run_thread(100 + i as u32, pid, clock, epoch)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let header = RecorderConfig::new(WriterConfig::new(0), clock.ticks_per_second().get())
        .file_header(BUFFER_SIZE);
    let mut file = header.to_bytes().to_vec();
    let mut total_buffers = 0;
    for (bytes, buffers) in &results {
        file.extend_from_slice(bytes);
        total_buffers += buffers;
    }
    let path = out_dir.join("fdr-demo.xray");
    std::fs::write(&path, &file).expect("write trace");
    eprintln!(
        "{THREADS} threads, {total_buffers} buffers of {BUFFER_SIZE} bytes, {} bytes",
        file.len()
    );
    eprintln!(
        "look at it with: llvm-xray stack {0}  or  llvm-xray convert --output-format=trace_event {0}",
        path.display()
    );
    println!("{}", path.display());
}
