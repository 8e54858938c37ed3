//! Flight-recorder mode end to end: files written at exit, on demand and on fatal
//! signals, newest data kept, the pool's limits; judged by `llvm-xray`.

mod xray_common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use flightrec::core::fdr::FunctionId;
use xray_common::*;

const THREADS: u64 = 4;
const ROUNDS: u64 = 200;
const NEWEST_CALLS: u64 = 3000;
const SEQ_ID: u32 = 900;

/// Scenario entry point of the child processes the tests below start (with
/// `XRAY_TEST_CHILD` naming the scenario); not a test by itself.
#[test]
#[ignore = "entry point of child processes, run by the other tests"]
fn scenario_child() {
    let Ok(name) = std::env::var(CHILD_VAR) else {
        return;
    };
    assert_eq!(flightrec::xray::init_from_env(), Ok(true));
    println!("PID={}", std::process::id());
    println!("FREQ={}", flightrec::xray::frequency().unwrap().hz.get());
    let seq = FunctionId::new(SEQ_ID).unwrap();
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
        "newest" => {
            for i in 0..NEWEST_CALLS {
                let _f = flightrec::xray::enter_with_arg(seq, i);
            }
            let report = flightrec::xray::shutdown().unwrap();
            println!("OVERWRITTEN={}", report.stats.buffers_overwritten);
            println!("TRACE={}", report.path.unwrap().display());
        }
        "dump" => {
            for i in 0..100 {
                let _f = flightrec::xray::enter_with_arg(seq, i);
            }
            let first = flightrec::xray::dump().unwrap().unwrap();
            for i in 100..150 {
                let _f = flightrec::xray::enter_with_arg(seq, i);
            }
            let second = flightrec::xray::dump().unwrap().unwrap();
            println!("FIRST={}", first.display());
            println!("SECOND={}", second.display());
        }
        "recycle" => {
            // Two rings; five threads one after the other: the last two keep theirs.
            for t in 0..5u64 {
                std::thread::spawn(move || {
                    for i in 0..10 {
                        let _f = flightrec::xray::enter_with_arg(seq, t * 100 + i);
                    }
                })
                .join()
                .unwrap();
            }
            let report = flightrec::xray::shutdown().unwrap();
            println!("RECYCLED={}", report.stats.rings_recycled);
            println!("TRACE={}", report.path.unwrap().display());
        }
        "pool-empty" => {
            // Two rings, three threads alive at once: one records nothing.
            let start = std::sync::Barrier::new(3);
            let done = std::sync::Barrier::new(3);
            std::thread::scope(|s| {
                for t in 0..3u64 {
                    let (start, done) = (&start, &done);
                    s.spawn(move || {
                        start.wait();
                        for i in 0..50 {
                            let _f = flightrec::xray::enter_with_arg(seq, t * 100 + i);
                        }
                        done.wait();
                    });
                }
            });
            let report = flightrec::xray::shutdown().unwrap();
            println!("WITHOUT_RING={}", report.stats.threads_without_ring);
            println!("RECORDS_WITHOUT_RING={}", report.stats.records_without_ring);
            println!("TRACE={}", report.path.unwrap().display());
        }
        "abort" | "segv" | "abort-small-altstack" => {
            if name == "abort-small-altstack" {
                small_alternate_stack();
            }
            std::thread::scope(|s| {
                for t in 0..2 {
                    s.spawn(move || workload(t, 20));
                }
            });
            workload(9, 20);
            println!("LEAF={}", leaf_id_in_this_process());
            if name != "segv" {
                std::process::abort();
            }
            // SAFETY: none; this deliberately writes through a null pointer to die
            // of SIGSEGV.
            unsafe { std::ptr::null_mut::<u64>().write_volatile(1) };
        }
        "fork" => {
            // Before the fork: the parent's main thread and one more thread.
            std::thread::spawn(move || {
                for i in 0..20 {
                    let _f = flightrec::xray::enter_with_arg(seq, 500 + i);
                }
            })
            .join()
            .unwrap();
            for i in 0..50 {
                let _f = flightrec::xray::enter_with_arg(seq, i);
            }
            // SAFETY: fork; the child only records, writes its trace and exits.
            let child = unsafe { libc::fork() };
            assert!(child >= 0);
            if child == 0 {
                for i in 1000..1010 {
                    let _f = flightrec::xray::enter_with_arg(seq, i);
                }
                let report = flightrec::xray::shutdown().unwrap();
                println!("CHILD_PID={}", std::process::id());
                println!("CHILD_THREADS={}", report.stats.threads);
                println!("CHILD_TRACE={}", report.path.unwrap().display());
                // SAFETY: ends the child without running the test harness's exit.
                unsafe { libc::_exit(0) };
            }
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
            assert_eq!(status, 0);
            for i in 50..60 {
                let _f = flightrec::xray::enter_with_arg(seq, i);
            }
            let report = flightrec::xray::shutdown().unwrap();
            println!("TRACE={}", report.path.unwrap().display());
        }
        other => panic!("unknown scenario {other}"),
    }
}

/// Gives this thread an alternate signal stack with room for the kernel's
/// signal frame (measured: large with AVX-512) and 1 KiB more: what a
/// program's own `sigaltstack`, or a machine whose signal frame nearly fills
/// the stack Rust gives each thread, leaves the handler.
fn small_alternate_stack() {
    let frame = signal_frame_size();
    let size = ((frame + 1024).max(libc::MINSIGSTKSZ) + 15) & !15;
    install_alternate_stack(size);
    println!("ALTSTACK={size} FRAME={frame}");
}

/// Installs an alternate signal stack of `size` bytes on this thread, with a
/// guard page below it as Rust's own (an overflow faults instead of writing
/// over the heap); returns its top. Never freed.
fn install_alternate_stack(size: usize) -> usize {
    let page = 4096;
    // SAFETY: a fresh anonymous private mapping; nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size.next_multiple_of(page) + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED);
    // SAFETY: the first page of the mapping just made.
    assert_eq!(unsafe { libc::mprotect(base, page, libc::PROT_NONE) }, 0);
    let ss = libc::stack_t {
        // SAFETY: inside the mapping.
        ss_sp: unsafe { base.cast::<u8>().add(page) }.cast(),
        ss_flags: 0,
        ss_size: size,
    };
    // SAFETY: `ss` describes a mapping that lives as long as the process.
    assert_eq!(unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) }, 0);
    base as usize + page + size
}

/// The bytes the kernel's signal frame takes on an alternate stack: the top of
/// a roomy one minus where a handler's first local lands (`SIGUSR1` is
/// borrowed for a moment).
fn signal_frame_size() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static LOCAL: AtomicUsize = AtomicUsize::new(0);
    extern "C" fn probe(_: libc::c_int) {
        let here = 0u8;
        LOCAL.store(std::ptr::addr_of!(here) as usize, Ordering::SeqCst);
    }
    let top = install_alternate_stack(256 * 1024);
    // SAFETY: a zeroed sigaction is valid; the probe only stores an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = probe as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
        libc::raise(libc::SIGUSR1);
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut());
    }
    top - LOCAL.load(Ordering::SeqCst)
}

fn run(scenario: &str, dir: &Path, fdr: &str) -> std::process::Output {
    let x = format!(
        "xray_mode=xray-fdr patch_premain=true verbosity=1 xray_logfile_base={}/f-",
        dir.display()
    );
    run_child(
        "scenario_child",
        scenario,
        &[("XRAY_OPTIONS", &x), ("XRAY_FDR_OPTIONS", fdr)],
    )
}

/// The arguments of the `SEQ_ID` entries of a trace, per thread, in order.
fn seq_args(trace: &Path) -> Option<Vec<Vec<u64>>> {
    let parsed = judge(trace)?;
    Some(
        by_thread(&parsed.records)
            .values()
            .map(|recs| {
                recs.iter()
                    .filter(|r| r.kind == "function-enter-arg" && r.func_id == SEQ_ID)
                    .map(|r| r.args[0])
                    .collect()
            })
            .collect(),
    )
}

#[test]
fn flight_recorder_workload_written_at_exit() {
    let dir = scratch_dir("fr-workload");
    let out = run("workload", &dir, "func_duration_threshold_us=0");
    assert_child_ok(&out);
    let traces = traces_in(&dir, "f-");
    assert_eq!(traces.len(), 1, "{traces:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("wrote '{}'", traces[0].display())),
        "{stderr}"
    );
    // Exited threads' rings are part of the trace.
    check_workload(&out, &traces[0], THREADS, ROUNDS);
}

#[test]
fn flight_recorder_keeps_the_newest_buffers() {
    let dir = scratch_dir("fr-newest");
    let out = run(
        "newest",
        &dir,
        "func_duration_threshold_us=0 buffer_size=512 buffer_max=4 flightrec_thread_buffers=4",
    );
    assert_child_ok(&out);
    let v = child_values(&out);
    assert!(v["OVERWRITTEN"].parse::<u64>().unwrap() > 0);
    let Some(args) = seq_args(Path::new(&v["TRACE"])) else {
        return;
    };
    assert_eq!(args.len(), 1);
    let args = &args[0];
    // A contiguous run of the newest calls, ending with the last one.
    assert_eq!(*args.last().unwrap(), NEWEST_CALLS - 1);
    assert!(args[0] > 0, "the oldest calls must have been overwritten");
    let want: Vec<u64> = (args[0]..NEWEST_CALLS).collect();
    assert_eq!(args, &want);
}

#[test]
fn flight_recorder_dumps_on_demand() {
    let dir = scratch_dir("fr-dump");
    let out = run("dump", &dir, "func_duration_threshold_us=0");
    assert_child_ok(&out);
    let v = child_values(&out);
    let (first, second) = (Path::new(&v["FIRST"]), Path::new(&v["SECOND"]));
    assert_ne!(first, second);
    // Two dumps and the one at exit.
    assert_eq!(traces_in(&dir, "f-").len(), 3);
    let Some(a) = seq_args(first) else { return };
    let b = seq_args(second).unwrap();
    assert_eq!(a, [(0..100).collect::<Vec<u64>>()]);
    assert_eq!(b, [(0..150).collect::<Vec<u64>>()]);
}

#[test]
fn flight_recorder_recycles_rings_of_exited_threads() {
    let dir = scratch_dir("fr-recycle");
    let out = run(
        "recycle",
        &dir,
        "func_duration_threshold_us=0 buffer_size=4096 buffer_max=2 flightrec_thread_buffers=1",
    );
    assert_child_ok(&out);
    let v = child_values(&out);
    assert_eq!(v["RECYCLED"], "3");
    let Some(mut args) = seq_args(Path::new(&v["TRACE"])) else {
        return;
    };
    args.sort();
    let want: Vec<Vec<u64>> = [3u64, 4]
        .iter()
        .map(|t| (t * 100..t * 100 + 10).collect())
        .collect();
    assert_eq!(args, want, "the two threads that ran last");
}

#[test]
fn threads_beyond_the_pool_are_counted_not_blocked() {
    let dir = scratch_dir("fr-pool");
    let out = run(
        "pool-empty",
        &dir,
        "func_duration_threshold_us=0 buffer_size=4096 buffer_max=2 flightrec_thread_buffers=1",
    );
    assert_child_ok(&out);
    let v = child_values(&out);
    assert_eq!(v["WITHOUT_RING"], "1");
    // 50 entries and 50 exits of the thread without a ring.
    assert_eq!(v["RECORDS_WITHOUT_RING"], "100");
    let Some(args) = seq_args(Path::new(&v["TRACE"])) else {
        return;
    };
    assert_eq!(args.len(), 2);
    assert!(args.iter().all(|a| a.len() == 50));
}

fn check_signal_dump(scenario: &str, signal: i32) {
    let dir = scratch_dir(&format!("fr-{scenario}"));
    let out = run(scenario, &dir, "func_duration_threshold_us=0");
    assert_eq!(out.status.signal(), Some(signal), "{out:?}");
    let traces = traces_in(&dir, "f-");
    assert_eq!(traces.len(), 1, "{traces:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
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
    let threads = by_thread(&parsed.records);
    assert_eq!(threads.len(), 3);
    for recs in threads.values() {
        let t = recs[1].args[0] / 1000;
        let got: Vec<_> = recs.iter().map(shape).collect();
        assert_same_seq(&got, &expected_workload(t, 20, leaf_id), scenario);
    }
}

#[test]
fn abort_writes_the_trace() {
    check_signal_dump("abort", libc::SIGABRT);
}

/// The handler runs on whatever alternate stack the thread has, however small
/// (the kernel's frame plus 1 KiB here), in this debug build: the dump runs on
/// a stack of its own, and the program still dies of its own signal.
#[test]
fn abort_on_a_small_alternate_stack_writes_the_trace() {
    check_signal_dump("abort-small-altstack", libc::SIGABRT);
}

#[test]
fn segfault_writes_the_trace() {
    check_signal_dump("segv", libc::SIGSEGV);
}

/// After `fork`, the child's trace holds only the child's records, labelled
/// with its own process and thread ids; the parent's is unchanged by the fork.
#[test]
fn a_forked_child_traces_only_its_own_records_under_its_own_ids() {
    let dir = scratch_dir("fr-fork");
    let out = run("fork", &dir, "func_duration_threshold_us=0");
    assert!(out.status.success(), "{out:?}");
    let values = child_values(&out);
    let pid: u32 = values["PID"].parse().unwrap();
    let child_pid: u32 = values["CHILD_PID"].parse().unwrap();
    assert_eq!(values["CHILD_THREADS"], "1");
    let child = Path::new(&values["CHILD_TRACE"]);
    let parent = Path::new(&values["TRACE"]);
    assert_ne!(child, parent);
    let Some(child_args) = seq_args(child) else {
        return;
    };
    assert_eq!(child_args, [(1000..1010).collect::<Vec<u64>>()]);
    let records = judge(child).unwrap().records;
    assert!(records
        .iter()
        .all(|r| r.process == Some(child_pid) && r.thread == child_pid));

    let mut parent_args = seq_args(parent).unwrap();
    parent_args.sort();
    assert_eq!(
        parent_args,
        [(0..60).collect::<Vec<u64>>(), (500..520).collect()]
    );
    assert!(judge(parent)
        .unwrap()
        .records
        .iter()
        .all(|r| r.process == Some(pid)));
}
