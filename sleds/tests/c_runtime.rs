//! C programs built with `clang-14 -fxray-instrument -fnoxray-link-deps` and
//! linked with this crate's staticlib in place of compiler-rt's runtime: their
//! traces pass `llvm-xray fdr-dump --verify`, `convert`, `account -m ./binary`
//! and `stack`; custom and typed events and logged first arguments reach the
//! trace (and the program's handlers, when it installs them); patching is safe
//! while threads run the sleds; a program without sleds, or with sleds of an
//! unknown version, says so once and runs untraced; the trampolines' fast paths
//! (the record path in assembly, the Rust fast path) keep their promise (no
//! vector register, no call, nothing locked or serialising) in an optimised
//! program, and the one in assembly writes the bytes the Rust path writes.
//!
//! Needs clang-14 and llvm-xray: without them the tests are skipped with a
//! message, except under `CI=true`, where they fail (`.ci/steps/sleds.sh`
//! installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use flightrec::core::clock::Timestamp;
use flightrec::core::fdr::decoder::Decoder;
use flightrec::core::fdr::records::Record;
use flightrec::core::fdr::writer::{BufferWriter, Walltime, WriterConfig};
use flightrec::core::fdr::{FunctionAction, FunctionId};
use flightrec_testkit::xray_tool::{llvm_xray, traces_in, xray_ok};

const CLANG: &str = "clang-14";

fn tools_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn work_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sleds-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// clang-14 and llvm-xray, or `None` (skip) outside CI.
fn tools() -> Option<PathBuf> {
    let clang = Command::new(CLANG).arg("--version").output();
    if !clang.is_ok_and(|o| o.status.success()) {
        assert!(
            !tools_required(),
            "{CLANG} is not installed; CI must run these tests"
        );
        eprintln!("skipped: {CLANG} not available");
        return None;
    }
    llvm_xray()
}

/// Makes the drop-in `libflightrec_sleds.a` (`sleds/dropin/make.sh`) with the
/// running test's profile and target directory (cargo does not build a
/// staticlib for integration tests).
fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    staticlib_in(release)
}

/// Makes the drop-in `libflightrec_sleds.a`, optimised or not, in the running
/// test's target directory: one relocatable object that the linker takes
/// whole, with no flag.
fn staticlib_in(release: bool) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target_dir = exe.ancestors().nth(3).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("dropin/make.sh");
    let mut make = Command::new("bash");
    make.arg(script)
        .env("CARGO", env!("CARGO"))
        .env("CARGO_TARGET_DIR", target_dir);
    if !release {
        make.arg("--debug");
    }
    let out = make.output().expect("bash runs");
    assert!(
        out.status.success(),
        "make.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = target_dir
        .join(if release { "release" } else { "debug" })
        .join("dropin/libflightrec_sleds.a");
    assert!(lib.is_file(), "{}", lib.display());
    lib
}

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

/// Compiles `src` into `out` with clang-14, `xray` selecting instrumentation,
/// linked with the drop-in runtime and no other flag.
fn build(src: &Path, out: &Path, xray: bool) {
    build_with(src, out, xray, &[]);
}

/// [`build`] with more compiler flags.
fn build_with(src: &Path, out: &Path, xray: bool, flags: &[&str]) {
    build_against(src, out, xray, flags, &staticlib());
}

/// [`build_with`] against the staticlib `lib`.
fn build_against(src: &Path, out: &Path, xray: bool, flags: &[&str], lib: &Path) {
    let mut cc = Command::new(CLANG);
    cc.args(["-O2", "-fno-omit-frame-pointer"]).args(flags);
    if xray {
        cc.args([
            "-fxray-instrument",
            "-fxray-instruction-threshold=1",
            "-fnoxray-link-deps",
        ]);
    }
    cc.arg(src).arg(lib).arg("-o").arg(out);
    let o = cc.output().expect("clang-14 runs");
    assert!(
        o.status.success(),
        "{CLANG} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn run(prog: &Path, args: &[&str], xray_options: &str) -> Output {
    Command::new(prog)
        .args(args)
        .env("XRAY_OPTIONS", xray_options)
        .env("XRAY_FDR_OPTIONS", "func_duration_threshold_us=0")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn only_trace(dir: &Path, prefix: &str) -> PathBuf {
    let traces = traces_in(dir, prefix);
    assert_eq!(traces.len(), 1, "{traces:?}");
    traces.into_iter().next().unwrap()
}

#[test]
fn benchmark_loop_links_unchanged_and_llvm_xray_accepts_its_trace() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("loop");
    let prog = dir.join("xray_loop");
    let loop_c =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/compare/xray-c/xray_loop.c");
    build(&loop_c, &prog, true);
    let opts = format!(
        "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
        dir.display()
    );
    let out = run(&prog, &["fdr", "1000", "2"], &opts);
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = only_trace(&dir, "x-");
    let t = trace.to_str().unwrap();
    let p = prog.to_str().unwrap();

    let dump = xray_ok(&xray, &["fdr-dump", "--verify", t]);
    // A warm-up batch and two measured batches of 1000 calls each.
    assert_eq!(dump.matches("<Function Enter: #1 ").count(), 3000);
    assert_eq!(dump.matches("<Function Exit: #1 ").count(), 3000);

    let account = xray_ok(&xray, &["account", "-m", p, t]);
    let row = account
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(
        row.contains(" 3000 ") && row.ends_with(" work"),
        "{account}"
    );

    let yaml = xray_ok(
        &xray,
        &["convert", "-m", p, "--symbolize", "--output-format=yaml", t],
    );
    assert_eq!(
        yaml.matches("function: work, ").count(),
        6000,
        "{yaml:.2000}"
    );
    let stack = xray_ok(&xray, &["stack", "-m", p, t]);
    assert!(stack.contains("work"), "{stack}");
}

#[test]
fn program_calling_no_xray_function_gets_entries_exits_and_tail_exits() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("plain");
    let prog = dir.join("plain");
    build(&source("plain.c"), &prog, true);
    let opts = format!(
        "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
        dir.display()
    );
    let out = run(&prog, &["500"], &opts);
    // The program checks its own results: registers survived the trampolines.
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = only_trace(&dir, "x-");
    let (t, p) = (trace.to_str().unwrap(), prog.to_str().unwrap());
    // The program is its own map (`-m ./plain` below): no names file that
    // would name nothing.
    let names = format!("{t}{}", flightrec::xray::NAMES_SUFFIX);
    assert!(!Path::new(&names).exists(), "{names}");
    let dump = xray_ok(&xray, &["fdr-dump", "--verify", t]);
    assert_eq!(
        dump.matches("<Function Enter: ").count(),
        1500,
        "{dump:.2000}"
    );
    // `forward` ends in a tail call of `mix`.
    assert_eq!(dump.matches("<Function Tail Exit: ").count(), 500);
    let account = xray_ok(&xray, &["account", "-m", p, t]);
    for name in ["scale", "mix", "forward"] {
        let row = account
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("{name} not named:\n{account}"));
        assert!(row.contains(" 500 "), "{row}");
    }
    xray_ok(&xray, &["stack", "-m", p, t]);

    // Unpatched (no patch_premain): no trace records, same results.
    let quiet = work_dir("plain-unpatched");
    let opts = format!(
        "xray_mode=xray-fdr xray_logfile_base={}/x-",
        quiet.display()
    );
    let out = run(&prog, &["500"], &opts);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(traces_in(&quiet, "x-").is_empty());
}

/// The section names of an ELF file, or of each member of an archive.
fn section_names(file: &Path) -> String {
    let o = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(file)
        .output()
        .expect("readelf runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What a build system that only adds a library does (`-L DIR -lflightrec_sleds`)
/// traces with no other flag, like the path on the command line; the program
/// grows by at most 1.5 MB (compiler-rt's runtime: printed beside it); neither
/// the drop-in nor the release rlib carries debug info.
#[test]
fn drop_in_links_by_name_with_no_flag_and_adds_at_most_1_5_mb() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("drop-in");
    let lib = staticlib_in(true);
    let flags = ["-O2", "-fxray-instrument", "-fxray-instruction-threshold=1"];
    let clang = |extra: &[&str], out: &Path| {
        let o = Command::new(CLANG)
            .args(flags)
            .arg(source("plain.c"))
            .args(extra)
            .arg("-o")
            .arg(out)
            .output()
            .expect("clang-14 runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::metadata(out).unwrap().len()
    };
    let libdir = lib.parent().unwrap().to_str().unwrap();
    let ours = clang(
        &["-fnoxray-link-deps", "-L", libdir, "-lflightrec_sleds"],
        &dir.join("ours"),
    );
    let none = clang(&["-fnoxray-link-deps"], &dir.join("none"));
    let compiler_rt = clang(&[], &dir.join("compiler-rt"));
    let (growth, crt_growth) = (ours - none, compiler_rt - none);
    eprintln!(
        "program growth: flightrec-sleds {growth} B, compiler-rt {crt_growth} B (plain.c, clang-14 -O2; without a runtime {none} B)"
    );
    assert!(growth <= 1_500_000, "{growth} B");

    let opts = format!(
        "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
        dir.display()
    );
    let out = run(&dir.join("ours"), &["50"], &opts);
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = only_trace(&dir, "x-");
    let dump = xray_ok(&xray, &["fdr-dump", "--verify", trace.to_str().unwrap()]);
    assert_eq!(
        dump.matches("<Function Enter: ").count(),
        150,
        "{dump:.2000}"
    );

    assert!(
        !section_names(&lib).contains(".debug_"),
        "debug info in the drop-in"
    );
    let rlib = lib
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("libflightrec_sleds.rlib");
    let rlib_sections = section_names(&rlib);
    assert!(rlib_sections.contains(".text"), "{rlib_sections:.2000}");
    assert!(
        !rlib_sections.contains(".debug_info"),
        "debug info in {}",
        rlib.display()
    );
}

/// A C program (a constructor) and a C++ program (a static object's
/// constructor) written for compiler-rt start FDR mode with
/// `__xray_log_init_mode` and patch before the runtime's own hook runs: with
/// `XRAY_OPTIONS` selecting `xray-fdr` too (the hook then finds the runtime
/// running and keeps it) or not, every call of `square` is traced, from the
/// constructor's on. (The hook used to say "already initialised; tracing
/// stays off" and nothing was traced.)
#[test]
fn c_api_called_from_static_initialisers_traces_before_and_after_the_hook() {
    let Some(xray) = tools() else { return };
    let lib = staticlib();
    for (src, compiler) in [("ctor.c", CLANG), ("ctor.cc", "clang++-14")] {
        let dir = work_dir(&format!("init-order-{src}"));
        let prog = dir.join("ctor");
        let o = Command::new(compiler)
            .args([
                "-O2",
                "-fxray-instrument",
                "-fxray-instruction-threshold=1",
                "-fnoxray-link-deps",
            ])
            .arg(source(src))
            .arg(&lib)
            .arg("-o")
            .arg(&prog)
            .output()
            .expect("clang runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for (k, selected) in ["xray_mode=xray-fdr patch_premain=true ", ""]
            .into_iter()
            .enumerate()
        {
            let base = format!("{}/x{k}-", dir.display());
            let opts = format!("{selected}xray_logfile_base={base}");
            let out = run(&prog, &["10"], &opts);
            let (stdout, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
            assert!(out.status.success(), "{src} {opts}: {err}");
            // XRAY_LOG_INITIALIZED; 9 + the squares of 0..10.
            assert_eq!(stdout, "init 2 sum 294\n", "{src} {opts}: {err}");
            assert!(!err.contains("tracing stays off"), "{src} {opts}: {err}");
            let trace = only_trace(&dir, &format!("x{k}-"));
            let t = trace.to_str().unwrap();
            xray_ok(&xray, &["fdr-dump", "--verify", t]);
            // -k: the constructor's exit has no entry (it patched the sleds itself).
            let account = xray_ok(&xray, &["account", "-k", "-m", prog.to_str().unwrap(), t]);
            let row = account
                .lines()
                .find(|l| l.contains(" square"))
                .unwrap_or_else(|| panic!("{src} {opts}: square not traced:\n{account}"));
            // The constructor's call and main's ten.
            assert!(row.contains(" 11 "), "{src} {opts}: {row}");
        }
    }
}

/// compiler-rt 14 reads the TSC frequency only from
/// `/sys/devices/system/cpu/cpu0/tsc_freq_khz` and refuses FDR mode without it
/// ("Unable to determine CPU frequency"); no `XRAY_OPTIONS` or
/// `XRAY_FDR_OPTIONS` flag replaces it. Where the file is missing (many
/// virtual machines), the program runs in a mount namespace of its own
/// (`unshare -m`, needs root) with a tmpfs over that directory holding the
/// file; the value only scales times, not what is kept. `None` when neither
/// works.
fn run_compiler_rt(prog: &Path, args: &[&str], xray_options: &str) -> Option<Output> {
    const FREQ: &str = "/sys/devices/system/cpu/cpu0/tsc_freq_khz";
    let mut cmd = if Path::new(FREQ).exists() {
        Command::new(prog)
    } else {
        let mut c = Command::new("unshare");
        c.args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs none /sys/devices/system/cpu/cpu0 && \
             echo 2000000 > /sys/devices/system/cpu/cpu0/tsc_freq_khz && exec \"$0\" \"$@\"",
        ])
        .arg(prog);
        c
    };
    let out = cmd
        .args(args)
        .env("XRAY_OPTIONS", xray_options)
        .env("XRAY_FDR_OPTIONS", "func_duration_threshold_us=0")
        .output()
        .ok()?;
    let err = stderr(&out);
    if !out.status.success() || err.contains("Unable to determine CPU frequency") {
        eprintln!("compiler-rt's FDR mode did not start: {err}");
        return None;
    }
    Some(out)
}

/// Function records (entries and exits) in `trace`, as llvm-xray reads them.
fn function_records(xray: &Path, trace: &Path) -> usize {
    xray_ok(
        xray,
        &["convert", "--output-format=yaml", trace.to_str().unwrap()],
    )
    .lines()
    .filter(|l| l.contains("kind: function-"))
    .count()
}

/// With the default buffers (`buffer_size`, `buffer_max`,
/// `flightrec_thread_buffers`; no duration threshold in either runtime, so
/// that every call is a record), a program keeps at least the records
/// compiler-rt's defaults (100 shared buffers of 16 KiB, reused oldest first)
/// keep in the same program: one thread making 200,000 calls, and 8 threads
/// one after another making 15,000 calls each and exiting.
#[test]
fn default_buffers_keep_at_least_what_compiler_rt_keeps() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("defaults");
    let ours = dir.join("keep");
    build(&source("keep.c"), &ours, true);
    let theirs = dir.join("keep-compiler-rt");
    let o = Command::new(CLANG)
        .args(["-O2", "-fxray-instrument", "-fxray-instruction-threshold=1"])
        .arg(source("keep.c"))
        .arg("-o")
        .arg(&theirs)
        .output()
        .expect("clang runs");
    assert!(o.status.success(), "{}", stderr(&o));
    for (name, args) in [
        ("long", &["long", "200000"][..]),
        ("short", &["short", "8", "15000"][..]),
    ] {
        let opts = |who: &str| {
            format!(
                "xray_mode=xray-fdr patch_premain=true xray_logfile_base={}/{who}-{name}-",
                dir.display()
            )
        };
        let Some(crt) = run_compiler_rt(&theirs, args, &opts("crt")) else {
            assert!(
                !tools_required(),
                "compiler-rt's FDR mode must run in CI (as root for unshare)"
            );
            return;
        };
        assert!(stderr(&crt).is_empty(), "{name}: {}", stderr(&crt));
        let out = run(&ours, args, &opts("ours"));
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_eq!(out.stdout, crt.stdout, "{name}");
        let kept_crt = function_records(&xray, &only_trace(&dir, &format!("crt-{name}-")));
        let kept = function_records(&xray, &only_trace(&dir, &format!("ours-{name}-")));
        eprintln!("{name}: flightrec-sleds kept {kept} function records, compiler-rt {kept_crt}");
        assert!(kept_crt > 10_000, "{name}: compiler-rt kept {kept_crt}");
        // The same 100 buffers of 16 KiB hold the same calls up to the metadata
        // records a run writes into them (a TSC wrap or a CPU change takes the
        // room of two function records, and how many there are depends on the
        // run): "at least" is checked up to two records a buffer.
        let slack = 2 * 100;
        assert!(
            kept + slack >= kept_crt,
            "{name}: flightrec-sleds kept {kept} records, compiler-rt {kept_crt}"
        );
    }
}

/// Where the system refuses the default pool's address space (`ulimit -v`),
/// the runtime takes fewer rings, says so in one line, and still traces.
#[test]
fn a_refused_reservation_gets_fewer_rings_and_says_so() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("ulimit");
    let prog = dir.join("keep");
    build(&source("keep.c"), &prog, true);
    let out = Command::new("sh")
        .args(["-c", "ulimit -v 120000 && exec \"$0\" long 20000"])
        .arg(&prog)
        .env(
            "XRAY_OPTIONS",
            format!(
                "xray_mode=xray-fdr patch_premain=true xray_logfile_base={}/u-",
                dir.display()
            ),
        )
        .env("XRAY_FDR_OPTIONS", "func_duration_threshold_us=0")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("thread rings")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("instead of 100: the system refused 163840000 bytes"),
        "{err}"
    );
    let kept = function_records(&xray, &only_trace(&dir, "u-"));
    assert_eq!(kept, 2 * 20_000, "every call's entry and exit: {err}");
}

/// A program that links an instrumented shared library: its own sleds are
/// traced, and one line names the library, whose sleds stay unpatched (they
/// were left so in silence).
#[test]
fn shared_library_sleds_left_unpatched_are_named_at_init() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("shared");
    let lib = instrumented_shared_lib(&dir);
    let prog = dir.join("shared_main");
    let libdir = format!("-L{}", dir.display());
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    build_with(
        &source("shared_main.c"),
        &prog,
        true,
        &[&libdir, "-lshared_lib", &rpath],
    );
    let opts = format!(
        "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
        dir.display()
    );
    let out = run(&prog, &[], &opts);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "41\n");
    let line = format!(
        "XRay: flightrec-sleds: '{}' has XRay sleds, which stay unpatched (only the executable's are patched)",
        lib.display()
    );
    assert_eq!(err.lines().filter(|l| *l == line).count(), 1, "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("stay unpatched")).count(),
        1,
        "{err}"
    );
    let trace = only_trace(&dir, "x-");
    let t = trace.to_str().unwrap();
    let account = xray_ok(&xray, &["account", "-m", prog.to_str().unwrap(), t]);
    assert!(
        account.lines().any(|l| l.ends_with(" local_add")),
        "{account}"
    );
}

/// Builds `shared_lib.c` into `dir` as an instrumented shared library.
fn instrumented_shared_lib(dir: &Path) -> PathBuf {
    let lib = dir.join("libshared_lib.so");
    let o = Command::new(CLANG)
        .args([
            "-O2",
            "-fPIC",
            "-shared",
            "-fxray-instrument",
            "-fxray-instruction-threshold=1",
        ])
        .arg(source("shared_lib.c"))
        .arg("-o")
        .arg(&lib)
        .output()
        .expect("clang-14 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    lib
}

/// A library `dlopen`ed after init, whose sleds stay unpatched, is named
/// once: when the program patches again (before `__xray_patch` returns), or
/// else at exit; the executable's own sleds are traced either way.
#[test]
fn a_dlopened_library_with_unpatched_sleds_is_named_once() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("dlopen");
    let lib = instrumented_shared_lib(&dir);
    let prog = dir.join("dlopen_main");
    build(&source("dlopen_main.c"), &prog, true);
    let line = format!(
        "XRay: flightrec-sleds: '{}' has XRay sleds, which stay unpatched (only the executable's are patched)",
        lib.display()
    );
    for (i, patch) in [false, true].into_iter().enumerate() {
        let base = format!("d{i}-");
        let opts = format!(
            "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/{base}",
            dir.display()
        );
        let mut args = vec![lib.to_str().unwrap()];
        if patch {
            args.push("patch");
        }
        let out = run(&prog, &args, &opts);
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "41\n");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.iter().filter(|l| **l == line).count(), 1, "{err}");
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("stay unpatched"))
                .count(),
            1,
            "{err}"
        );
        if patch {
            let named = lines.iter().position(|l| *l == line).unwrap();
            let patched = lines.iter().position(|l| l.starts_with("patch: "));
            assert!(patched.is_some_and(|p| named < p), "{err}");
        }
        let trace = only_trace(&dir, &base);
        let t = trace.to_str().unwrap();
        let account = xray_ok(&xray, &["account", "-m", prog.to_str().unwrap(), t]);
        assert!(
            account.lines().any(|l| l.ends_with(" local_add")),
            "{account}"
        );
    }
}

/// The `data` of every YAML record of `kind` (llvm-xray prints it unquoted
/// when it is plain text), with the record's `type`.
fn yaml_data(yaml: &str, kind: &str) -> Vec<(String, String)> {
    let tag = format!("kind: {kind}, ");
    yaml.lines()
        .filter(|l| l.contains(&tag))
        .map(|l| {
            let ty = l.split("type: ").nth(1).unwrap().split(',').next().unwrap();
            let data = l.rsplit("data: ").next().unwrap().trim_end_matches(" }");
            (ty.to_string(), data.to_string())
        })
        .collect()
}

#[test]
fn custom_and_typed_events_and_logged_arguments_reach_the_trace_and_the_handlers() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("events");
    let prog = dir.join("events");
    build_with(
        &source("events.c"),
        &prog,
        true,
        &[
            "-fxray-always-emit-customevents",
            "-fxray-always-emit-typedevents",
        ],
    );
    let opts = format!(
        "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
        dir.display()
    );
    let n = 20;
    let out = run(&prog, &[&n.to_string()], &opts);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    // Types count from 0 by name address; the program's handlers saw the second
    // phase's events and arguments, and only those.
    assert_eq!(
        stdout,
        format!("types 0 1 0\nhandled {n} {n} {n} bad 0\nwrong 0\n")
    );
    let trace = only_trace(&dir, "x-");
    let t = trace.to_str().unwrap();
    xray_ok(&xray, &["fdr-dump", "--verify", t]);
    // No `-m`: llvm-xray 14 cannot read an instrumentation map that has typed
    // event sleds (kind 5 is unknown to it) and says "Exec format error".
    let yaml = xray_ok(&xray, &["convert", "--output-format=yaml", t]);
    // Recorded: rounds 0..n (patched) and 2n..3n (handlers removed); not the
    // handlers' phase, nor the unpatched one.
    let recorded: Vec<i64> = (0..n).chain(2 * n..3 * n).collect();
    let custom = yaml_data(&yaml, "custom-event");
    let want: Vec<String> = recorded.iter().map(|i| format!("tick {i}")).collect();
    assert_eq!(
        custom.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>(),
        want,
        "{yaml:.3000}"
    );
    let typed = yaml_data(&yaml, "typed-event");
    let want: Vec<(String, String)> = recorded
        .iter()
        .map(|i| ("1".to_string(), format!("load {i}")))
        .collect();
    assert_eq!(typed, want, "{yaml:.3000}");
    let args: Vec<String> = yaml
        .lines()
        .filter(|l| l.contains("kind: function-enter-arg, "))
        .map(|l| {
            l.split("args: [ ")
                .nth(1)
                .unwrap()
                .split(" ]")
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let want: Vec<String> = recorded.iter().map(i64::to_string).collect();
    assert_eq!(args, want, "{yaml:.3000}");
}

/// The disassembly of `name` in `prog`, one instruction per line.
fn disassembly(prog: &Path, name: &str) -> Vec<String> {
    let o = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "--no-addresses"])
        .arg(format!("--disassemble={name}"))
        .arg(prog)
        .output()
        .expect("objdump runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let body: Vec<String> = text
        .lines()
        .skip_while(|l| !l.ends_with(&format!("<{name}>:")))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
        .collect();
    assert!(!body.is_empty(), "{name} not found:\n{text}");
    body
}

/// What every instruction of a fast path's code `body` (of the function `name`)
/// must not do: touch a vector register, call or jump out, load the thread
/// pointer, or run a locked or serialising instruction (its atomics are plain
/// loads and stores: `Relaxed`, `Release`).
fn check_fast_code(name: &str, body: &[String]) {
    for insn in body {
        let op = insn.split_whitespace().next().unwrap_or("");
        assert!(
            !["%xmm", "%ymm", "%zmm", "%mm", "%st"]
                .iter()
                .any(|r| insn.contains(r)),
            "{name} touches a vector register: {insn}\n{body:#?}"
        );
        assert!(
            !op.starts_with("call") && !insn.contains('*'),
            "{name} calls out: {insn}\n{body:#?}"
        );
        if op.starts_with('j') {
            assert!(
                insn.contains(&format!("<{name}+")),
                "{name} jumps out: {insn}\n{body:#?}"
            );
        }
        assert!(
            !insn.contains("%fs:0x0"),
            "{name} loads the thread pointer: {insn}\n{body:#?}"
        );
        assert!(
            ![
                "lock", "xchg", "cmpxchg", "xadd", "mfence", "lfence", "sfence", "pushf", "popf",
                "cpuid",
            ]
            .iter()
            .any(|s| op.starts_with(s)),
            "{name} has a locked or serialising instruction: {insn}\n{body:#?}"
        );
    }
}

/// The trampolines' fast path calls `__flightrec_sleds_*_fast` with the
/// function's vector argument registers live and unsaved (saving them costs
/// about 3 ns of the 27 a sled costs): in an optimised, linked program those
/// functions must touch no vector register, call nothing and jump only inside
/// themselves, with no locked or serialising instruction. They read the
/// thread's ring with a single `%fs`-relative load
/// (flightrec's initial-exec slot), with no load of the thread pointer
/// (`%fs:0x0`): the general-dynamic `thread_local!` that did cost the entry
/// path 3 pushes and pops besides. Then the same program runs with its sleds
/// patched, with and without short-call elision, and its float results survive.
#[test]
fn fast_paths_touch_no_vector_register_and_call_nothing() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("fast-path");
    let prog = dir.join("plain");
    build_against(&source("plain.c"), &prog, true, &[], &staticlib_in(true));
    for kind in ["entry", "exit", "tail_exit"] {
        let name = format!("__flightrec_sleds_{kind}_fast");
        let body = disassembly(&prog, &name);
        check_fast_code(&name, &body);
        let tls = body.iter().filter(|i| i.contains("%fs:")).count();
        assert_eq!(tls, 1, "{name}: {tls} thread-local accesses\n{body:#?}");
    }
    // The record path written in assembly at the top of each trampoline (up to
    // the frame push where its declines go on into the Rust fast path): the
    // same promises; on its straight line, up to its `ret`, one `rdtsc`;
    // `rdtscp` once, out of that line (when the runtime chose it); two
    // thread-local accesses (the trampolines' re-entry flag, the ring slot).
    for kind in ["entry", "exit", "tail_exit"] {
        let name = format!("__flightrec_sleds_{kind}");
        let all = disassembly(&prog, &name);
        let end = all.iter().position(|i| i == "push   %rbp");
        let body = &all[..end.unwrap_or_else(|| panic!("{name}: no frame\n{all:#?}"))];
        let ret = body.iter().position(|i| i.starts_with("ret"));
        let line = &body[..ret.unwrap_or_else(|| panic!("{name}: no ret\n{body:#?}"))];
        check_fast_code(&name, body);
        let count = |insns: &[String], what: &str| {
            insns
                .iter()
                .filter(|i| i.split_whitespace().next() == Some(what))
                .count()
        };
        assert_eq!(count(line, "rdtsc"), 1, "{name}\n{body:#?}");
        assert_eq!(count(line, "rdtscp"), 0, "{name}\n{body:#?}");
        assert_eq!(count(body, "rdtscp"), 1, "{name}\n{body:#?}");
        let tls = body.iter().filter(|i| i.contains("%fs:")).count();
        assert_eq!(tls, 2, "{name}\n{body:#?}");
        assert!(
            line.len() < 70,
            "{name}: {} instructions\n{line:#?}",
            line.len()
        );
    }
    for threshold in ["0", "5"] {
        let opts = format!(
            "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/t{threshold}-",
            dir.display()
        );
        let out = Command::new(&prog)
            .arg("2000")
            .env("XRAY_OPTIONS", opts)
            .env(
                "XRAY_FDR_OPTIONS",
                format!("func_duration_threshold_us={threshold} buffer_size=65536"),
            )
            .output()
            .unwrap();
        // The program checks its own integer and double results.
        assert!(out.status.success(), "{}", stderr(&out));
        let trace = only_trace(&dir, &format!("t{threshold}-"));
        let dump = xray_ok(&xray, &["fdr-dump", "--verify", trace.to_str().unwrap()]);
        if threshold == "0" {
            assert_eq!(dump.matches("<Function Enter: ").count(), 6000);
        }
    }
}

/// Both builds of the staticlib: the optimised one records through the
/// trampolines' record path in assembly, which an installed handler closes.
#[test]
fn patching_while_four_threads_run_the_sleds() {
    let Some(xray) = tools() else { return };
    for release in [false, true] {
        let dir = work_dir(&format!("threads-{release}"));
        let prog = dir.join("threads");
        build_against(
            &source("threads.c"),
            &prog,
            true,
            &[],
            &staticlib_in(release),
        );
        let opts = format!("xray_mode=xray-fdr xray_logfile_base={}/x-", dir.display());
        let out = run(&prog, &["300"], &opts);
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("wrong 0"), "{stdout}");
        // The program's own handler (__xray_set_handler) saw 2 entries, 1 exit, 1 tail exit.
        assert!(stdout.ends_with("handler 2 1 1\n"), "{stdout}");
        let trace = only_trace(&dir, "x-");
        let dump = xray_ok(&xray, &["fdr-dump", "--verify", trace.to_str().unwrap()]);
        assert!(dump.contains("<Function Enter: "), "{dump:.2000}");
        // The workers' last rounds run after the final __xray_patch.
        assert!(
            dump.contains("<Custom Event: ") && dump.contains("data = 'ab'"),
            "{dump:.2000}"
        );
    }
}

#[test]
fn without_sleds_or_with_an_unknown_version_one_message_and_no_trace() {
    if tools().is_none() {
        return;
    }
    let opts_in = |dir: &Path| {
        format!(
            "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/x-",
            dir.display()
        )
    };
    // Built without -fxray-instrument.
    let dir = work_dir("nosleds");
    let prog = dir.join("plain");
    build(&source("plain.c"), &prog, false);
    let out = run(&prog, &["100"], &opts_in(&dir));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("XRay: flightrec-sleds: ").count(), 1, "{err}");
    assert!(err.contains("has no XRay sleds"), "{err}");
    assert!(traces_in(&dir, "x-").is_empty());

    // Sleds whose map entries claim version 9.
    let dir = work_dir("badversion");
    let prog = dir.join("plain");
    build(&source("plain.c"), &prog, true);
    let map = dir.join("map.bin");
    let objcopy = |args: &[&std::ffi::OsStr]| {
        let s = Command::new("objcopy")
            .args(args)
            .status()
            .expect("objcopy runs");
        assert!(s.success());
    };
    objcopy(&[
        "--dump-section".as_ref(),
        format!("xray_instr_map={}", map.display()).as_ref(),
        prog.as_os_str(),
    ]);
    let mut bytes = std::fs::read(&map).unwrap();
    assert!(!bytes.is_empty() && bytes.len() % 32 == 0);
    for entry in bytes.chunks_exact_mut(32) {
        entry[18] = 9;
    }
    std::fs::write(&map, &bytes).unwrap();
    let bad = dir.join("plain-v9");
    objcopy(&[
        "--update-section".as_ref(),
        format!("xray_instr_map={}", map.display()).as_ref(),
        prog.as_os_str(),
        bad.as_os_str(),
    ]);
    let out = run(&bad, &["100"], &opts_in(&dir));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("XRay: flightrec-sleds: ").count(), 1, "{err}");
    assert!(err.contains("has version 9"), "{err}");
    assert!(traces_in(&dir, "x-").is_empty());
}

/// The function records of every buffer of `trace`, written again by the core's
/// `BufferWriter` (the Rust record path) from the times and CPUs the trace
/// carries, with the buffer's own preamble: `(buffers, function records)`; and
/// checks those times against the NewCPUId readings that start each buffer.
/// Panics at the first byte the two disagree on. Only function and metadata
/// records are expected (a program without events, nothing lost), and the
/// file's end block.
fn rewrite_with_the_rust_writer(
    trace: &[u8],
    threshold_us: u64,
) -> (usize, Vec<(FunctionAction, u32)>) {
    let mut decoder = Decoder::new(trace).unwrap();
    let buffer_size = decoder.header().buffer_size as usize;
    let hz = decoder.header().cycle_frequency.get();
    // As the runtime converts `func_duration_threshold_us`.
    let threshold_ticks = (u128::from(threshold_us) * u128::from(hz) / 1_000_000) as u64;
    assert!(buffer_size > 0);
    struct Buffer {
        start: usize,
        end: usize,
        tid: u32,
        pid: Option<u32>,
        walltime: Walltime,
        calls: Vec<(FunctionAction, FunctionId, Timestamp)>,
        /// The first NewCPUId's reading.
        anchor: Option<Timestamp>,
    }
    let mut buffers: Vec<Buffer> = Vec::new();
    let (mut base, mut cpu) = (0u64, 0u16);
    let mut all = Vec::new();
    for d in decoder.by_ref() {
        let d = d.unwrap();
        let cur = buffers.last_mut();
        match d.record {
            Record::BufferExtents { size } => buffers.push(Buffer {
                start: d.offset,
                end: d.offset + 16 + size as usize,
                tid: 0,
                pid: None,
                walltime: Walltime::default(),
                calls: Vec::new(),
                anchor: None,
            }),
            Record::NewBuffer { tid } => cur.unwrap().tid = tid as u32,
            Record::Walltime { seconds, micros } => {
                cur.unwrap().walltime = Walltime { seconds, micros }
            }
            Record::Pid { pid } => cur.unwrap().pid = Some(pid as u32),
            Record::NewCpuId { cpu: c, tsc } => {
                (base, cpu) = (tsc, c);
                let b = cur.unwrap();
                b.anchor = b.anchor.or(Some(Timestamp { tsc, cpu }));
            }
            Record::TscWrap { tsc } => base = tsc,
            Record::Function { action, id, delta } => {
                base = base.wrapping_add(u64::from(delta));
                all.push((action, id.get()));
                cur.unwrap()
                    .calls
                    .push((action, id, Timestamp { tsc: base, cpu }));
            }
            other => panic!("unexpected record {other:?} at {}", d.offset),
        }
    }
    // The file's end block (thread 0, counting the buffers) is not a record's.
    if buffers
        .last()
        .is_some_and(|b| b.tid == 0 && b.calls.is_empty())
    {
        buffers.pop();
    }
    // The deltas are the clock's: rebuilding the times from them, a buffer's last
    // record comes before the next buffer's NewCPUId (a fresh reading), and
    // shortly before it (one call of the loop, but for a rare preemption).
    let mut gaps: Vec<i64> = buffers
        .windows(2)
        .map(|w| {
            let last = w[0].calls.last().unwrap().2.tsc;
            let next = w[1].anchor.unwrap().tsc;
            next.wrapping_sub(last) as i64
        })
        .collect();
    assert!(
        gaps.iter().all(|&g| g >= 0),
        "{:?}",
        &gaps[..gaps.len().min(8)]
    );
    gaps.sort_unstable();
    let two_us = (hz / 500_000) as i64;
    assert!(
        gaps[gaps.len() / 2] < two_us,
        "median over 2 us ({two_us} ticks): {gaps:?}"
    );
    for b in &buffers {
        let mut storage = vec![0u8; buffer_size];
        let mut config = WriterConfig::new(b.tid).with_threshold_ticks(threshold_ticks);
        if let Some(pid) = b.pid {
            config = config.with_pid(pid);
        }
        let mut w = BufferWriter::new(&mut storage, &config, b.walltime).unwrap();
        // A NewCPUId whose record was erased (the buffer's first record was an
        // entry, elided with its exit): the same pair again, erased again.
        let anchor = b.anchor.unwrap();
        if b.calls.first().is_some_and(|c| c.2 != anchor) {
            assert!(threshold_ticks > 0, "buffer at {}", b.start);
            let any = FunctionId::new(1).unwrap();
            w.function(FunctionAction::Enter, any, anchor).unwrap();
            w.function(FunctionAction::Exit, any, anchor).unwrap();
        }
        for &(action, id, ts) in &b.calls {
            w.function(action, id, ts).unwrap();
        }
        let want = w.as_bytes();
        let got = &trace[b.start..b.end];
        if let Some(i) = (0..want.len().max(got.len())).find(|&i| want.get(i) != got.get(i)) {
            panic!(
                "buffer at {}: byte {i} differs from the Rust writer's ({} against {} bytes)",
                b.start,
                got.len(),
                want.len()
            );
        }
    }
    (buffers.len(), all)
}

/// The record path written in assembly inside the trampolines writes the bytes
/// the Rust path writes: the same program, with its inline path open (the
/// default) and closed (`FLIGHTREC_SLEDS_INLINE_RECORD=0`: the Rust fast path
/// records), traces the same calls, and every buffer of each trace is exactly
/// what the core's writer makes of the trace's own times (many buffers, so the
/// full-buffer fallback and the first record of each buffer are covered).
#[test]
fn inline_record_path_writes_what_the_rust_path_writes() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("inline-record");
    let prog = dir.join("plain");
    build_against(&source("plain.c"), &prog, true, &[], &staticlib_in(true));
    let mut calls = Vec::new();
    // The inline path with `rdtsc`, the Rust path, and (where the CPU has it)
    // the inline path with `rdtscp` and its CPU ids.
    let rdtscp = flightrec::xray::clock::has_rdtscp();
    let runs: &[(&str, &str)] = if rdtscp {
        &[("1", "false"), ("0", "false"), ("1", "true")]
    } else {
        &[("1", "false"), ("0", "false")]
    };
    for &(inline, cpu_ids) in runs {
        let opts = format!(
            "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/i{inline}{cpu_ids}-",
            dir.display()
        );
        let out = Command::new(&prog)
            .arg("20000")
            .env("XRAY_OPTIONS", opts)
            .env(
                "XRAY_FDR_OPTIONS",
                format!("func_duration_threshold_us=0 buffer_size=4096 buffer_max=1024 flightrec_thread_buffers=1024 flightrec_cpu_ids={cpu_ids}"),
            )
            .env("FLIGHTREC_SLEDS_INLINE_RECORD", inline)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let trace_path = only_trace(&dir, &format!("i{inline}{cpu_ids}-"));
        xray_ok(
            &xray,
            &["fdr-dump", "--verify", trace_path.to_str().unwrap()],
        );
        let trace = std::fs::read(&trace_path).unwrap();
        let (buffers, records) = rewrite_with_the_rust_writer(&trace, 0);
        assert!(buffers > 100, "{buffers} buffers");
        assert_eq!(records.len(), 120_000, "inline {inline}");
        calls.push(records);
    }
    assert!(
        calls.iter().all(|c| *c == calls[0]),
        "the paths traced different calls"
    );
}

/// Short-call elision on the inline path: with a 1 us threshold, the short
/// calls (exits and tail exits) are erased and the long ones kept; every
/// buffer is what the core's writer, with the same threshold, makes of the
/// trace's times (an elision that got the base time wrong would shift every
/// later time, which the NewCPUId readings show).
#[test]
fn inline_record_path_elides_as_the_rust_path_does() {
    let Some(xray) = tools() else { return };
    let dir = work_dir("inline-elision");
    let prog = dir.join("elision");
    build_against(&source("elision.c"), &prog, true, &[], &staticlib_in(true));
    let opts = format!(
        "patch_premain=true xray_mode=xray-fdr xray_logfile_base={}/e-",
        dir.display()
    );
    let out = Command::new(&prog)
        .arg("20000")
        .env("XRAY_OPTIONS", opts)
        .env(
            "XRAY_FDR_OPTIONS",
            "func_duration_threshold_us=1 buffer_size=4096 buffer_max=1024 flightrec_thread_buffers=1024",
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let trace_path = only_trace(&dir, "e-");
    xray_ok(
        &xray,
        &["fdr-dump", "--verify", trace_path.to_str().unwrap()],
    );
    let trace = std::fs::read(&trace_path).unwrap();
    let (buffers, records) = rewrite_with_the_rust_writer(&trace, 1);
    assert!(buffers > 20, "{buffers} buffers");
    // `slow` (id 3 in source order: leaf 1, forward 2) is kept in nearly every
    // round; most short calls are erased.
    let slow = records.iter().filter(|r| r.1 == 3).count();
    assert!(slow >= 2 * 19_000, "{slow} records of slow");
    assert!(records.len() < 2 * 20_000 * 3, "{} records", records.len());
}
