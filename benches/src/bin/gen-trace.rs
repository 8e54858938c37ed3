//! Writes a large FDR trace with flightrec-core's own writer, for the
//! conversion measurements of `benches/convert-big.sh` (docs/performance.md).
//!
//! ```text
//! cargo run --release -p flightrec-benches --bin gen-trace -- OUT.xray SIZE_MB [THREADS [BUFFER_BYTES]]
//! ```
//!
//! Threads (4 by default, process 4242) take turns filling buffers (64 KiB by
//! default; small ones make a trace of millions of buffers) with
//! nested calls (depth 1 to 8 over 64 functions, one in 16 entries with two
//! arguments) and the occasional custom event; time goes forward by 10 to 400
//! ticks per record at 1 GHz. Deterministic: the same arguments give the same file.

use std::fs::File;
use std::io::{BufWriter, Write};

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::ring::RecorderConfig;
use flightrec_core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec_core::fdr::FunctionId;

const BUFFER: usize = 64 * 1024;

struct Thread {
    cfg: RecorderConfig,
    tsc: u64,
    stack: Vec<u32>,
    rng: u64,
}

impl Thread {
    fn rand(&mut self) -> u64 {
        // xorshift64
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Fills one buffer; returns its length.
    fn fill(&mut self, buf: &mut [u8]) -> usize {
        let ts = |tsc| Timestamp { tsc, cpu: 0 };
        let mut w = BufferWriter::new(buf, &self.cfg.writer, Walltime::default()).expect("buffer");
        loop {
            let r = self.rand();
            self.tsc += 10 + r % 391;
            let ok = if self.stack.is_empty() || (self.stack.len() < 8 && r & 0x100 != 0) {
                let f = 1 + (r >> 20) as u32 % 64;
                let id = FunctionId::new(f).expect("id");
                let done = if r & 0xf000 == 0 {
                    w.enter_with_args(id, ts(self.tsc), &[r >> 32, 7]).is_ok()
                } else if r & 0xff_0000 == 0 {
                    w.custom_event(ts(self.tsc), b"checkpoint").is_ok()
                        && w.enter(id, ts(self.tsc)).is_ok()
                } else {
                    w.enter(id, ts(self.tsc)).is_ok()
                };
                if done {
                    self.stack.push(f);
                }
                done
            } else {
                let f = *self.stack.last().expect("open call");
                let ok = w
                    .exit(FunctionId::new(f).expect("id"), ts(self.tsc))
                    .is_ok();
                if ok {
                    self.stack.pop();
                }
                ok
            };
            if !ok {
                return w.len();
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: gen-trace OUT.xray SIZE_MB [THREADS [BUFFER_BYTES]]");
        std::process::exit(2);
    }
    let size: u64 = args[2].parse::<u64>().expect("SIZE_MB") << 20;
    let threads: u32 = args.get(3).map_or(4, |t| t.parse().expect("THREADS"));
    let buffer: usize = args
        .get(4)
        .map_or(BUFFER, |b| b.parse().expect("BUFFER_BYTES"));
    let mut ts: Vec<Thread> = (0..threads)
        .map(|t| Thread {
            cfg: RecorderConfig::new(WriterConfig::new(1000 + t).with_pid(4242), 1_000_000_000),
            tsc: 1_000_000,
            stack: Vec::new(),
            rng: 0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1),
        })
        .collect();
    let mut out = BufWriter::new(File::create(&args[1]).expect("create"));
    out.write_all(&ts[0].cfg.file_header(buffer).to_bytes())
        .expect("write");
    let mut written = 0u64;
    let mut buf = vec![0u8; buffer];
    let mut i = 0;
    while written < size {
        let t = &mut ts[i % threads as usize];
        let n = t.fill(&mut buf);
        out.write_all(&buf[..n]).expect("write");
        written += n as u64;
        i += 1;
    }
    out.flush().expect("flush");
}
