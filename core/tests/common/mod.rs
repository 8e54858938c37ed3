//! Helpers shared by the integration tests: running the real `llvm-xray`, reading its
//! YAML output, and a deterministic workload model.
#![allow(dead_code)]

use std::path::PathBuf;

// Finding and running the real `llvm-xray` (under `CI=true` its absence fails the
// test) lives in the testkit, shared with the other crates' tests.
#[allow(unused_imports)] // each test binary uses some of them
pub use flightrec_testkit::xray_tool::{llvm_xray, xray as run};

/// A fresh scratch directory for one test.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flightrec-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One record of `llvm-xray convert --output-format=yaml`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct YamlRecord {
    pub thread: u64,
    pub tsc: u64,
    pub kind: String,
    pub func_id: u64,
    pub args: Vec<u64>,
    pub cpu: u64,
    pub process: Option<u64>,
    pub data: String,
}

/// Parses the `records:` list of `llvm-xray convert --output-format=yaml`.
pub fn parse_yaml_records(yaml: &str) -> Vec<YamlRecord> {
    let mut out = Vec::new();
    for line in yaml.lines() {
        let Some(body) = line.trim().strip_prefix("- {") else {
            continue;
        };
        let body = body.trim_end_matches('}').trim();
        let mut rec = YamlRecord {
            thread: 0,
            tsc: 0,
            kind: String::new(),
            func_id: 0,
            args: Vec::new(),
            cpu: 0,
            process: None,
            data: String::new(),
        };
        // Split on ", " outside brackets.
        let mut depth = 0;
        let mut start = 0;
        let bytes = body.as_bytes();
        let mut fields = Vec::new();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'[' => depth += 1,
                b']' => depth -= 1,
                b',' if depth == 0 => {
                    fields.push(&body[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        fields.push(&body[start..]);
        for f in fields {
            let Some((k, v)) = f.split_once(':') else {
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "thread" => rec.thread = v.parse().unwrap(),
                "tsc" => rec.tsc = v.parse().unwrap(),
                "kind" => rec.kind = v.to_string(),
                "func-id" => rec.func_id = v.parse().unwrap(),
                "cpu" => rec.cpu = v.parse().unwrap(),
                "process" => rec.process = Some(v.parse().unwrap()),
                "data" => rec.data = v.trim_matches('\'').to_string(),
                "args" => {
                    rec.args = v
                        .trim_matches(|c| c == '[' || c == ']')
                        .split(',')
                        .filter(|s| !s.trim().is_empty())
                        .map(|s| s.trim().parse().unwrap())
                        .collect()
                }
                _ => {}
            }
        }
        out.push(rec);
    }
    out
}

/// A small deterministic generator (xorshift), so workloads repeat exactly.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
