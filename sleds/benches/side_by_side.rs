//! compiler-rt's XRay FDR runtime and flightrec-sleds side by side on the same C
//! program (`benches/compare/xray-c/xray_loop.c`, one instrumented call per
//! iteration), compiled once with clang-14 and linked twice: with compiler-rt's
//! runtime, and with `-fnoxray-link-deps` and this crate's release staticlib.
//!
//! `cargo bench -p flightrec-sleds --bench side_by_side -- [ROUNDS [BATCHES [CALLS]]]`
//! (defaults 3, 10, 200000). Each round runs, in turn, each runtime with its sleds
//! patched (FDR mode, the FDR options of `benches/compare`: 8 buffers of 64 KiB,
//! no duration threshold) and unpatched, and the floor (the loop's `floor` mode
//! on the flightrec-sleds binary, sleds unpatched: the call and two `rdtsc`
//! reads and two 8-byte stores around it, the least any record of an entry and
//! an exit costs); each process does one warm-up batch and BATCHES timed batches
//! (thread CPU time per call). Prints every round's median and fastest batch per
//! row, the ratio compiler-rt / flightrec-sleds and the ratio flightrec-sleds /
//! floor, then each ratio's median round beside the goals (at least 8 times
//! cheaper than compiler-rt, at most 1.3 times the floor).

use std::path::{Path, PathBuf};
use std::process::Command;

const FDR_OPTIONS: &str =
    "func_duration_threshold_us=0 buffer_size=65536 buffer_max=8 grace_period_ms=0";

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = args.first().copied().unwrap_or(3);
    let batches = args.get(1).copied().unwrap_or(10);
    let calls = args.get(2).copied().unwrap_or(200_000);

    if !Command::new("clang-14")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: clang-14 not available (Debian: clang-14 libclang-rt-14-dev)");
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sleds-side-by-side");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/compare/xray-c/xray_loop.c");
    let object = dir.join("xray_loop.o");
    cc(&[
        "-O2",
        "-fxray-instrument",
        "-fno-omit-frame-pointer",
        "-c",
        source.to_str().unwrap(),
        "-o",
        object.to_str().unwrap(),
    ]);
    let compiler_rt = dir.join("loop-compiler-rt");
    cc(&[
        "-fxray-instrument",
        object.to_str().unwrap(),
        "-o",
        compiler_rt.to_str().unwrap(),
    ]);
    let sleds = dir.join("loop-flightrec-sleds");
    cc(&[
        "-fxray-instrument",
        "-fnoxray-link-deps",
        object.to_str().unwrap(),
        staticlib().to_str().unwrap(),
        "-lpthread",
        "-ldl",
        "-lm",
        "-o",
        sleds.to_str().unwrap(),
    ]);

    let rows: [(&str, &Path, &str); 5] = [
        ("compiler-rt FDR, sleds patched", &compiler_rt, "fdr"),
        ("flightrec-sleds FDR, sleds patched", &sleds, "fdr"),
        ("floor: 2 x (rdtsc + 8-byte store)", &sleds, "floor"),
        ("compiler-rt, sleds unpatched", &compiler_rt, "off"),
        ("flightrec-sleds, sleds unpatched", &sleds, "off"),
    ];
    // Per row and round: the median batch and the fastest batch of the process.
    let mut medians = vec![Vec::new(); rows.len()];
    let mut fastest = vec![Vec::new(); rows.len()];
    for _ in 0..rounds {
        for (i, (_, prog, mode)) in rows.iter().enumerate() {
            let (median, min) = run(prog, mode, calls, batches, &dir);
            medians[i].push(median);
            fastest[i].push(min);
        }
    }
    let ratio = |a: &[f64], b: &[f64]| -> String {
        let r: Vec<String> = a
            .iter()
            .zip(b)
            .map(|(a, b)| format!("{:.2}", a / b))
            .collect();
        r.join(" / ")
    };
    // The fastest batch is the one least disturbed by other processes on a shared
    // machine; both are printed.
    for (what, table) in [("median", &medians), ("fastest", &fastest)] {
        println!("ns per call, {what} of {batches} batches of {calls} calls, per round:");
        for ((name, _, _), m) in rows.iter().zip(table.iter()) {
            let v: Vec<String> = m.iter().map(|x| format!("{x:.1}")).collect();
            println!("  {name:<36} {}", v.join(" / "));
        }
        println!(
            "  {:<36} {}",
            "compiler-rt / flightrec-sleds",
            ratio(&table[0], &table[1])
        );
        println!(
            "  {:<36} {}",
            "flightrec-sleds / floor",
            ratio(&table[1], &table[2])
        );
    }
    // The goals against the middle round of each ratio (of the rounds'
    // medians): one round on a shared machine can land in a slow spell that
    // slows one process and not the next.
    let middle = |a: &[f64], b: &[f64]| -> f64 {
        let mut r: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    };
    let cheaper = middle(&medians[0], &medians[1]);
    let over_floor = middle(&medians[1], &medians[2]);
    let verdict = |met: bool| if met { "met" } else { "missed" };
    println!("median round of {rounds}:");
    println!(
        "  compiler-rt / flightrec-sleds {cheaper:.2} (goal at least 8: {})",
        verdict(cheaper >= 8.0)
    );
    println!(
        "  flightrec-sleds / floor {over_floor:.2} (goal at most 1.3: {})",
        verdict(over_floor <= 1.3)
    );
}

fn cc(args: &[&str]) {
    let o = Command::new("clang-14").args(args).output().unwrap();
    assert!(
        o.status.success(),
        "clang-14 {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The release staticlib, built into this bench's target directory.
fn staticlib() -> PathBuf {
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "--release", "--lib", "--manifest-path"])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .unwrap();
    assert!(status.success());
    target_dir.join("release/libflightrec_sleds.a")
}

/// Median and least ns per call of the batches of one process; `mode` is the
/// loop's (`fdr`, `off`, `floor`).
fn run(prog: &Path, mode: &str, calls: u64, batches: u64, dir: &Path) -> (f64, f64) {
    let mut cmd = Command::new(prog);
    let base = dir.join("trace-");
    let fdr = mode == "fdr";
    if fdr {
        cmd.args(["fdr", &calls.to_string(), &batches.to_string()])
            .env(
                "XRAY_OPTIONS",
                format!(
                    "patch_premain=true xray_mode=xray-fdr verbosity=0 xray_logfile_base={}",
                    base.display()
                ),
            )
            .env("XRAY_FDR_OPTIONS", FDR_OPTIONS);
    } else {
        cmd.args([mode, &calls.to_string(), &batches.to_string()])
            .env("XRAY_OPTIONS", "patch_premain=false")
            .env_remove("XRAY_FDR_OPTIONS");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        prog.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut ns: Vec<f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(ns.len() as u64, batches);
    ns.sort_by(f64::total_cmp);
    // A runtime that silently recorded nothing would look fast: the FDR runs
    // must leave a trace of at least one full buffer.
    let mut trace_bytes = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("trace-") {
            if !name.ends_with(".names") {
                trace_bytes = trace_bytes.max(std::fs::metadata(&p).unwrap().len());
            }
            std::fs::remove_file(p).unwrap();
        }
    }
    assert_eq!(
        fdr,
        trace_bytes > 65536,
        "{}: trace of {trace_bytes} bytes",
        prog.display()
    );
    (ns[ns.len() / 2], ns[0])
}
