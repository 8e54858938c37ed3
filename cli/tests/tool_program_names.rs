//! A sleds trace named from the program itself: a C++ program built with
//! `clang++-14 -fxray-instrument` on the flightrec-sleds runtime, its trace
//! converted with `--names ./program` (and `-m`, as llvm-xray takes it)
//! with no names file beside it. The YAML is byte for byte what
//! `llvm-xray convert --symbolize --instr_map=./program` writes (ids
//! numbered from the map as llvm-xray numbers them, C++ names demangled);
//! `dump` names the same functions, `verify -m` checks the trace against it.
//!
//! Needs clang++-14 and llvm-xray: without them the test says so and passes,
//! unless `CI` is set.

use std::path::{Path, PathBuf};
use std::process::Command;

const CXX: &str = "clang++-14";

const PROGRAM: &str = r#"
#include <cstdio>
namespace ns {
[[clang::xray_always_instrument]] __attribute__((noinline)) int work(int x) { return x * 2 + 1; }
struct S {
  [[clang::xray_always_instrument]] __attribute__((noinline)) int get(int y) { return y + work(y); }
};
}  // namespace ns
extern "C" [[clang::xray_always_instrument]] __attribute__((noinline)) int leaf(int a) { return a + 3; }
int main() {
  ns::S s;
  int t = 0;
  for (int i = 0; i < 3; i++) t += s.get(i) + leaf(i);
  printf("%d\n", t);
  return 0;
}
"#;

fn tools() -> bool {
    let ok = |cmd: &str| {
        Command::new(cmd)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ok(CXX) && ok("llvm-xray") {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{CXX} and llvm-xray are needed in CI"
    );
    eprintln!("skipped: {CXX} or llvm-xray missing");
    false
}

/// `libflightrec_sleds.a`, built in this test's target directory.
fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target_dir = exe.ancestors().nth(3).unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "--lib",
            "-p",
            "flightrec-sleds",
            "--manifest-path",
        ])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .expect("cargo runs");
    assert!(status.success());
    let lib = target_dir.join("debug/libflightrec_sleds.a");
    assert!(lib.is_file(), "{}", lib.display());
    lib
}

fn flightrec(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_sleds_trace_is_named_from_its_program_as_llvm_xray_names_it() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("p.cc");
    let prog = dir.path().join("prog");
    std::fs::write(&src, PROGRAM).unwrap();
    let o = Command::new(CXX)
        .args([
            "-O2",
            "-fxray-instrument",
            "-fxray-instruction-threshold=1",
            "-fnoxray-link-deps",
        ])
        .arg(&src)
        .arg(staticlib())
        .args(["-Wl,-u,__xray_init", "-lpthread", "-ldl", "-lm", "-o"])
        .arg(&prog)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(&prog)
        .env(
            "XRAY_OPTIONS",
            format!(
                "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
                dir.path().display()
            ),
        )
        .env("XRAY_FDR_OPTIONS", "func_duration_threshold_us=0")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let trace = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("x-prog.") && !name.ends_with(".names")
        })
        .expect("a trace");
    // Whatever the runtime wrote beside it, the names come from the program.
    let _ = std::fs::remove_file(flightrec_host::names::names_beside(&trace));
    let (prog_s, trace_s) = (prog.to_str().unwrap(), trace.to_str().unwrap());

    let theirs = Command::new("llvm-xray")
        .args(["convert", "--output-format=yaml", "--symbolize"])
        .arg(format!("--instr_map={prog_s}"))
        .arg(trace_s)
        .output()
        .unwrap();
    assert!(theirs.status.success());
    for flag in ["--names", "-m"] {
        let ours = flightrec(&["convert", "--format", "yaml", "-q", flag, prog_s, trace_s]);
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout)
        );
    }
    let yaml = String::from_utf8_lossy(&theirs.stdout);
    for name in [
        "function: main",
        "'ns::S::get(int)'",
        "'ns::work(int)'",
        "function: leaf",
    ] {
        assert!(yaml.contains(name), "{name} in {yaml}");
    }

    // verify checks the trace against the program: every id named.
    let verify = flightrec(&["verify", "-q", "-m", prog_s, trace_s]);
    assert!(verify.status.success());
    assert!(
        verify.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    // Names of another program: said, with the ids.
    let other = dir.path().join("other.names");
    std::fs::write(&other, "1 x\n").unwrap();
    let verify = flightrec(&["verify", "-q", "--names", other.to_str().unwrap(), trace_s]);
    let err = String::from_utf8_lossy(&verify.stderr);
    assert!(
        err.contains("3 of its 4 function ids have no name in")
            && err.contains("a trace of another program?"),
        "{err}"
    );

    let dump = flightrec(&["dump", "-m", prog_s, trace_s]);
    assert!(dump.status.success());
    let listing = String::from_utf8_lossy(&dump.stdout);
    assert!(listing.contains("(ns::S::get(int))"), "{listing}");
    assert!(listing.contains("(leaf)"), "{listing}");
}
