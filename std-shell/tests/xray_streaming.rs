//! Streaming mode end to end: multi-threaded programs configured through
//! `XRAY_OPTIONS`/`XRAY_FDR_OPTIONS`, their files judged by `llvm-xray`.

mod xray_common;

use std::path::Path;

use xray_common::*;

const THREADS: u64 = 4;
const ROUNDS: u64 = 300;

/// Scenario entry point of the child processes the tests below start (with
/// `XRAY_TEST_CHILD` naming the scenario); not a test by itself.
#[test]
#[ignore = "entry point of child processes, run by the other tests"]
fn scenario_child() {
    let Ok(name) = std::env::var(CHILD_VAR) else {
        return;
    };
    if name == "refused" {
        // A configuration or output error: an error value, and tracing stays off.
        let err = flightrec::xray::init_from_env().unwrap_err();
        println!(
            "ERROR_KIND={}",
            if matches!(err, flightrec::xray::Error::Config(_)) {
                "config"
            } else {
                "other"
            }
        );
        workload(0, 5);
        println!("RECORDING={}", flightrec::xray::is_recording());
        println!("DUMP={:?}", flightrec::xray::dump().is_err());
        return;
    }
    assert_eq!(flightrec::xray::init_from_env(), Ok(true));
    println!("PID={}", std::process::id());
    println!("FREQ={}", flightrec::xray::frequency().unwrap().hz.get());
    match name.as_str() {
        "workload" => {
            let _m = flightrec::xray_scope!("main scope");
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    s.spawn(move || workload(t, ROUNDS));
                }
            });
            println!("LEAF={}", leaf_id_in_this_process());
        }
        "pressure" => {
            // Phase 1: every thread records far more than its two small buffers hold
            // while the writer sleeps. Then a dump writes and frees every buffer.
            // Phase 2: one more pair per thread lands in a fresh buffer, which starts
            // with the loss event of phase 1.
            let phase = std::sync::Barrier::new(THREADS as usize + 1);
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let phase = &phase;
                    s.spawn(move || {
                        let id = flightrec::core::fdr::FunctionId::new(5 + t as u32).unwrap();
                        for _ in 0..PRESSURE_PAIRS {
                            flightrec::xray::record_enter(id);
                            flightrec::xray::record_exit(id);
                        }
                        phase.wait();
                        phase.wait();
                        flightrec::xray::record_enter(id);
                        flightrec::xray::record_exit(id);
                    });
                }
                phase.wait();
                flightrec::xray::dump().unwrap();
                phase.wait();
            });
            let report = flightrec::xray::shutdown().unwrap();
            println!("DROPPED={}", report.stats.records_dropped);
            println!("WRITTEN={}", report.stats.buffers_written);
            println!("TRACE={}", report.path.unwrap().display());
        }
        "paced" => {
            // One thread fills half a buffer, rests, and so on, for 15 times what its
            // ring holds. The writer's interval (10 minutes) never comes: only the
            // recorder waking it when a buffer is full can keep the ring free.
            let id = flightrec::core::fdr::FunctionId::new(9).unwrap();
            for _ in 0..PACED_CHUNKS {
                for _ in 0..PACED_PAIRS {
                    flightrec::xray::record_enter(id);
                    flightrec::xray::record_exit(id);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let report = flightrec::xray::shutdown().unwrap();
            println!("DROPPED={}", report.stats.records_dropped);
            println!("WRITTEN={}", report.stats.buffers_written);
            println!("TRACE={}", report.path.unwrap().display());
        }
        "broken-output" => {
            // The trace may not grow past 4 KiB: writes fail with EFBIG (SIGXFSZ is
            // ignored) and the runtime must turn itself off with one warning.
            // SAFETY: plain libc calls with valid arguments, before any thread runs.
            unsafe {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: 4096,
                    rlim_max: 4096,
                };
                assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
            }
            workload(0, 2000);
            let _ = flightrec::xray::dump();
            workload(0, 10);
            println!("RECORDING={}", flightrec::xray::is_recording());
        }
        "abort" => {
            workload(0, 50);
            println!("LEAF={}", leaf_id_in_this_process());
            std::process::abort();
        }
        other => panic!("unknown scenario {other}"),
    }
}

const PRESSURE_PAIRS: u64 = 20_000;
/// 512-byte buffers hold about 60 function records: 15 pairs is half a buffer.
const PACED_PAIRS: u64 = 15;
const PACED_CHUNKS: u64 = 60;

fn options(dir: &Path, fdr: &str) -> [(String, String); 2] {
    [
        (
            "XRAY_OPTIONS".into(),
            format!(
                "xray_mode=xray-fdr patch_premain=true verbosity=1 xray_logfile_base={}/s-",
                dir.display()
            ),
        ),
        ("XRAY_FDR_OPTIONS".into(), fdr.into()),
    ]
}

fn run(scenario: &str, env: &[(String, String)]) -> std::process::Output {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    run_child("scenario_child", scenario, &env)
}

#[test]
fn streaming_workload_matches_what_was_recorded() {
    let dir = scratch_dir("stream-workload");
    // CPU ids on (`rdtscp`), whatever the machine's default: CPU changes appear as
    // NewCPUId records that llvm-xray must accept. Eight 16 KiB buffers per thread
    // hold a worker's whole run, so nothing is dropped however late the writer is.
    let out = run(
        "workload",
        &options(
            &dir,
            "flightrec_mode=streaming func_duration_threshold_us=0 flightrec_cpu_ids=yes \
             flightrec_thread_buffers=8",
        ),
    );
    assert_child_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let traces = traces_in(&dir, "s-");
    assert_eq!(traces.len(), 1, "{traces:?}");
    let trace = &traces[0];
    assert!(
        stderr.contains(&format!("XRay: Log file in '{}'", trace.display())),
        "{stderr}"
    );
    check_workload(&out, trace, THREADS, ROUNDS);
}

#[test]
fn streaming_under_pressure_reports_drops_exactly() {
    let dir = scratch_dir("stream-pressure");
    let out = run(
        "pressure",
        &options(
            &dir,
            "flightrec_mode=streaming func_duration_threshold_us=0 buffer_size=512 \
             buffer_max=8 flightrec_thread_buffers=2 flightrec_flush_interval_ms=1000",
        ),
    );
    assert_child_ok(&out);
    let values = child_values(&out);
    let dropped: u64 = values["DROPPED"].parse().unwrap();
    let trace = Path::new(&values["TRACE"]).to_owned();
    assert!(
        dropped > 0,
        "four threads recording back to back outrun a writer that drains 512-byte \
         buffers: records must be dropped"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{dropped} records dropped")),
        "{stderr}"
    );
    let Some(parsed) = judge(&trace) else { return };
    let kept = parsed.records.iter().filter(|r| is_function(r)).count() as u64;
    assert_eq!(kept + dropped, 2 * THREADS * (PRESSURE_PAIRS + 1));
    // The buffer that follows a loss starts with a loss event saying how many.
    let marked: u64 = parsed
        .records
        .iter()
        .filter(|r| r.kind == "typed-event")
        .map(|r| {
            let n = r.data.strip_prefix("flightrec: lost ").unwrap();
            n.strip_suffix(" records").unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(marked, dropped);
}

/// A full buffer wakes the writer: a thread that records in bursts with pauses
/// loses nothing though the writer's interval never comes.
#[test]
fn streaming_full_buffers_wake_the_writer() {
    let dir = scratch_dir("stream-paced");
    let out = run(
        "paced",
        &options(
            &dir,
            "flightrec_mode=streaming func_duration_threshold_us=0 buffer_size=512 \
             buffer_max=8 flightrec_thread_buffers=2 flightrec_flush_interval_ms=600000",
        ),
    );
    assert_child_ok(&out);
    let values = child_values(&out);
    assert_eq!(values["DROPPED"], "0", "{values:?}");
    let written: u64 = values["WRITTEN"].parse().unwrap();
    assert!(written >= PACED_CHUNKS / 2, "{written} buffers written");
    let trace = Path::new(&values["TRACE"]).to_owned();
    let Some(parsed) = judge(&trace) else { return };
    let kept = parsed.records.iter().filter(|r| is_function(r)).count() as u64;
    assert_eq!(kept, 2 * PACED_CHUNKS * PACED_PAIRS);
}

#[test]
fn streaming_abort_writes_what_was_recorded() {
    let dir = scratch_dir("stream-abort");
    let out = run(
        "abort",
        &options(
            &dir,
            "flightrec_mode=streaming func_duration_threshold_us=0",
        ),
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let traces = traces_in(&dir, "s-");
    assert_eq!(traces.len(), 1);
    assert!(
        stderr.contains(&format!(
            "fatal signal; trace written to '{}'",
            traces[0].display()
        )),
        "{stderr}"
    );
    let Some(parsed) = judge(&traces[0]) else {
        return;
    };
    let leaf_id: u32 = child_values(&out)["LEAF"].parse().unwrap();
    let got: Vec<_> = parsed.records.iter().map(shape).collect();
    assert_same_seq(&got, &expected_workload(0, 50, leaf_id), "aborted workload");
}

#[test]
fn bad_configuration_leaves_tracing_off() {
    let dir = scratch_dir("stream-refused");
    let env = options(&dir, "flightrec_mode=streaming buffer_size=16k");
    let out = run("refused", &env);
    assert_child_ok(&out);
    let v = child_values(&out);
    assert_eq!(v["ERROR_KIND"], "config");
    assert_eq!(v["RECORDING"], "false");
    assert_eq!(v["DUMP"], "true", "not initialised");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "invalid value '16k' for buffer_size in XRAY_FDR_OPTIONS: expected a decimal integer \
             that fits 32 bits; tracing stays off"
        ),
        "{stderr}"
    );
    assert!(traces_in(&dir, "s-").is_empty());
}

#[test]
fn unwritable_output_leaves_tracing_off() {
    let dir = scratch_dir("stream-unwritable");
    let missing = dir.join("no-such-dir");
    let env = options(&missing, "flightrec_mode=streaming");
    let out = run("refused", &env);
    assert_child_ok(&out);
    let v = child_values(&out);
    assert_eq!(v["ERROR_KIND"], "other");
    assert_eq!(v["RECORDING"], "false");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot create"), "{stderr}");
}

#[test]
fn failing_output_disables_tracing_with_one_warning() {
    let dir = scratch_dir("stream-broken");
    let out = run(
        "broken-output",
        &options(
            &dir,
            "flightrec_mode=streaming func_duration_threshold_us=0",
        ),
    );
    assert_child_ok(&out);
    assert_eq!(child_values(&out)["RECORDING"], "false");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("XRay: flightrec: tracing disabled: cannot write the trace file")
            .count(),
        1,
        "{stderr}"
    );
}
