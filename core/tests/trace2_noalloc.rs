//! The formatting path never allocates: a counting global allocator sees no
//! allocation while every event is formatted in every format (including
//! messages rendered from `format_args!`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use flightrec_core::trace2::{
    Args, Event, Format, LineCtx, Msg, ProcessStats, StatDef, Target, ThreadCounters, ThreadName,
    ThreadState, ThreadTimers, WallTime,
};

struct Counting;

thread_local! {
    // Counted per thread so the test harness's own threads do not interfere.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCS.with(Cell::get)
}

const ARGV: [&str; 3] = ["git", "it's", "a!b"];
const RAW: [&[u8]; 2] = [b"\xff\xfe", b""];
const DEFS: [StatDef; 1] = [StatDef {
    category: b"test",
    name: b"test2",
    per_thread: true,
}];

#[test]
fn formatting_does_not_allocate() {
    // Sanity check that the counter works at all.
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 16]);
    drop(v);
    assert!(allocations() > before, "allocator is not counting");

    let answer = 42;
    let mut out = [0u8; 1024];
    let start = allocations();

    let mut thread = ThreadState::<4>::new(ThreadName::worker(7, b"preload-index-worker"), 5);
    let mut timers = ThreadTimers::<1>::new();
    let mut counters = ThreadCounters::<1>::new();
    let mut total = ProcessStats::<1, 1>::new();
    timers.start(0, 1_000);
    timers.stop(0, 8_812_500);
    counters.add(0, 3);
    total.merge_thread(&timers, &counters);
    let nesting = thread.region_enter(10);
    for _ in 0..6 {
        thread.region_enter(11); // past the 4 stored levels
    }
    for _ in 0..6 {
        let _ = thread.region_leave(12);
    }
    let (t_rel, after) = thread.region_leave(20).unwrap();
    let sid = b"20231114T221320.123456Z-H65cb7838-P00001234/child";
    let ctx = LineCtx {
        time: WallTime::new(1_700_000_000, 123_456),
        utc_offset_secs: 3600,
        file: b"builtin/multi-pack-index.c",
        line: 149,
        nesting,
        repo: Some(1),
        t_abs: 1_234_567,
        ..LineCtx::new(sid, thread.name.as_bytes())
    };
    let events: [Event<'_>; 26] = [
        Event::Version { exe: b"2.47.3" },
        Event::TooManyFiles,
        Event::Start {
            argv: Args::Str(&ARGV),
        },
        Event::Exit { code: 0 },
        Event::Atexit { code: 0 },
        Event::Signal { signo: 13 },
        Event::Error {
            msg: Msg::Bytes(b"unknown option `bogus'"),
            fmt: b"unknown option `%s'",
        },
        Event::CmdPath {
            path: b"/usr/bin/git",
        },
        Event::CmdAncestry {
            ancestry: Args::Bytes(&RAW),
        },
        Event::CmdName {
            name: b"status",
            hierarchy: b"status",
        },
        Event::CmdMode { mode: b"write" },
        Event::Alias {
            alias: b"st",
            argv: Args::Str(&ARGV),
        },
        Event::ChildStart {
            child_id: 1,
            child_class: None,
            hook_name: Some(b"pre-commit"),
            cd: Some(b"sub dir"),
            use_shell: true,
            is_git: true,
            argv: Args::Str(&ARGV),
        },
        Event::ChildExit {
            child_id: 1,
            pid: -1,
            code: -1,
            t_rel: 1,
        },
        Event::ChildReady {
            child_id: 1,
            pid: 9,
            ready: b"ready",
            t_rel: 2,
        },
        Event::Exec {
            exec_id: 0,
            exe: Some(b"git"),
            argv: Args::Str(&ARGV),
        },
        Event::ExecResult {
            exec_id: 0,
            code: 2,
            err: b"No such file or directory",
        },
        Event::ThreadStart,
        Event::ThreadExit {
            t_rel: thread.run_time(30),
        },
        Event::DefParam {
            scope: b"command",
            param: b"foo.true",
            value: None,
        },
        Event::DefRepo {
            worktree: b"/scratch/repo",
        },
        Event::RegionEnter {
            category: Some(b"index"),
            label: Some(b"do_read_index"),
            msg: None,
        },
        Event::RegionLeave {
            t_rel,
            category: None,
            label: None,
            msg: Some(Msg::Bytes(b"x")),
        },
        Event::Data {
            t_rel: thread.data_t_rel(25),
            category: b"read_directory",
            key: b"path",
            value: b"",
        },
        Event::DataJson {
            t_rel: 3,
            category: b"traverse_trees",
            key: b"statistics",
            value: b"{\n  \"a\": 1\n}",
        },
        Event::Printf { msg: None },
    ];
    let mut written = 0;
    for target in [Target::Normal, Target::Perf, Target::Event] {
        for brief in [false, true] {
            let f = Format::new(target, brief);
            let stats = timers
                .thread_events(&DEFS)
                .chain(counters.thread_events(&DEFS))
                .chain(total.timer_events(&DEFS))
                .chain(total.counter_events(&DEFS));
            for ev in events.iter().copied().chain(stats) {
                written += f
                    .write_line(
                        &LineCtx {
                            nesting: after,
                            ..ctx
                        },
                        &ev,
                        &mut out,
                    )
                    .unwrap();
                written += f.write_line(&ctx, &ev, &mut out).unwrap();
                // The error path does not allocate either.
                let _ = f.write_line(&ctx, &ev, &mut out[..10]);
            }
            // Messages rendered from format_args! while the line is written.
            let fmt_events = [
                f.write_line(
                    &ctx,
                    &Event::Error {
                        msg: Msg::Fmt(format_args!("unknown option `{}'", "bogus")),
                        fmt: b"unknown option `%s'",
                    },
                    &mut out,
                ),
                f.write_line(
                    &ctx,
                    &Event::RegionEnter {
                        category: Some(b"index"),
                        label: None,
                        msg: Some(Msg::Fmt(format_args!("{answer}"))),
                    },
                    &mut out,
                ),
                f.write_line(
                    &ctx,
                    &Event::Printf {
                        msg: Some(Msg::Fmt(format_args!("{:>8}|{:x}", "right", 255u32))),
                    },
                    &mut out,
                ),
            ];
            for r in fmt_events {
                written += r.unwrap();
            }
        }
    }
    let end = allocations();
    assert!(written > 10_000, "formatted {written} bytes");
    assert_eq!(end - start, 0, "allocations while formatting");
}
