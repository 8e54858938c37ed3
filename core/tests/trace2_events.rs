//! Events the captures do not show, checked against the formats the spec gives
//! (git 2.47.3 sources), plus the library's own rules (region-stack overflow,
//! thread names, timers and counters).

use flightrec_core::trace2::{
    json::parse_event_nesting, Args, Event, Format, LineCtx, Msg, ProcessStats, RegionStack,
    StatDef, Target, ThreadCounters, ThreadName, ThreadState, ThreadTimers, WallTime,
};

const SID: &[u8] = b"20231114T221320.123456Z-H65cb7838-P00001234";

fn line(target: Target, brief: bool, ctx: &LineCtx<'_>, ev: &Event<'_>) -> String {
    let mut buf = [0u8; 1024];
    let n = Format::new(target, brief)
        .write_line(ctx, ev, &mut buf)
        .unwrap();
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

fn perf_brief(ctx: &LineCtx<'_>, ev: &Event<'_>) -> String {
    line(Target::Perf, true, ctx, ev)
}

fn thread_ctx(name: &ThreadName) -> LineCtx<'_> {
    LineCtx::new(SID, name.as_bytes())
}

#[test]
fn valueless_def_param_follows_newer_git() {
    // §16.21: git 2.47.3 crashes; newer git omits `=`, `:` and "value".
    let ctx = LineCtx {
        file: b"trace2.c",
        line: 437,
        ..LineCtx::new(SID, b"main")
    };
    let ev = Event::DefParam {
        scope: b"command",
        param: b"foo.true",
        value: None,
    };
    assert_eq!(
        line(Target::Normal, true, &ctx, &ev),
        "def_param scope:command foo.true\n"
    );
    assert_eq!(
        perf_brief(&ctx, &ev),
        "d0 | main                     | def_param    |     |           |           | scope:comman | foo.true\n"
    );
    assert_eq!(
        line(Target::Event, true, &ctx, &ev),
        format!(
            "{{\"event\":\"def_param\",\"sid\":\"{}\",\"thread\":\"main\",\"scope\":\"command\",\"param\":\"foo.true\"}}\n",
            String::from_utf8_lossy(SID)
        )
    );
}

#[test]
fn threads_timers_and_counters() {
    const TIMERS: [StatDef; 2] = [
        StatDef {
            category: b"test",
            name: b"test1",
            per_thread: false,
        },
        StatDef {
            category: b"test",
            name: b"test2",
            per_thread: true,
        },
    ];
    let name = ThreadName::worker(1, b"preload");
    let mut th = ThreadState::<8>::new(name, 100);
    let ctx = LineCtx {
        t_abs: 100,
        ..thread_ctx(&name)
    };
    // Empty payload: the perf line ends in "| " (§16.3).
    assert_eq!(
        perf_brief(&ctx, &Event::ThreadStart),
        "d0 | th01:preload             | thread_start |     |  0.000100 |           |              | \n"
    );
    assert_eq!(line(Target::Normal, true, &ctx, &Event::ThreadStart), "");
    th.region_enter(150); // left open: thread_exit unwinds it silently
    th.regions.unwind();
    let mut timers = ThreadTimers::<2>::new();
    timers.start(1, 0);
    timers.stop(1, 7_812_500);
    timers.start(1, 10_000_000);
    timers.stop(1, 25_625_000);
    let evs: Vec<Event<'_>> = timers.thread_events(&TIMERS).collect();
    assert_eq!(evs.len(), 1, "only per-thread timers with intervals");
    let ctx = LineCtx {
        nesting: th.nesting(),
        ..ctx
    };
    // total 23437500 ns -> 0.023438, min 7812500 ns -> 0.007812 (printf's rounding).
    assert_eq!(
        line(Target::Normal, true, &ctx, &evs[0]),
        "th_timer test/test2 intervals:2 total:0.023438 min:0.007812 max:0.015625\n"
    );
    assert_eq!(
        perf_brief(&ctx, &evs[0]),
        "d0 | th01:preload             | th_timer     |     |           |           | test         | name:test2 intervals:2 total:0.023438 min:0.007812 max:0.015625\n"
    );
    assert!(line(Target::Event, true, &ctx, &evs[0]).ends_with(
        "\"thread\":\"th01:preload\",\"category\":\"test\",\"name\":\"test2\",\"intervals\":2,\"t_total\":0.023438,\"t_min\":0.007812,\"t_max\":0.015625}\n"
    ));
    let exit = Event::ThreadExit {
        t_rel: th.run_time(350),
    };
    assert_eq!(
        perf_brief(&LineCtx { t_abs: 350, ..ctx }, &exit),
        "d0 | th01:preload             | thread_exit  |     |  0.000350 |  0.000250 |              | \n"
    );

    // Process totals merge per-thread values: counters summed.
    let mut counters = ThreadCounters::<2>::new();
    counters.add(0, 5);
    let mut main_counters = ThreadCounters::<2>::new();
    main_counters.add(0, 2);
    let mut total = ProcessStats::<2, 2>::new();
    total.merge_thread(&timers, &counters);
    total.merge_thread(&ThreadTimers::new(), &main_counters);
    let c: Vec<Event<'_>> = total.counter_events(&TIMERS).collect();
    assert_eq!(
        line(Target::Normal, true, &ctx, &c[0]),
        "counter test/test1 value:7\n"
    );
    let t: Vec<Event<'_>> = total.timer_events(&TIMERS).collect();
    assert_eq!(t.len(), 1);
    assert_eq!(
        line(Target::Normal, true, &ctx, &t[0]),
        "timer test/test2 intervals:2 total:0.023438 min:0.007812 max:0.015625\n"
    );
}

#[test]
fn children_hooks_exec_and_signals() {
    let ctx = LineCtx {
        t_abs: 3216,
        nesting: 2,
        ..LineCtx::new(SID, b"main")
    };
    let argv = [".git/hooks/pre-commit"];
    let hook = Event::ChildStart {
        child_id: 0,
        child_class: Some(b"ignored"),
        hook_name: Some(b"pre-commit"),
        cd: Some(b"sub dir"),
        use_shell: false,
        is_git: false,
        argv: Args::Str(&argv),
    };
    assert_eq!(
        line(Target::Normal, true, &ctx, &hook),
        "child_start[0] cd 'sub dir'; .git/hooks/pre-commit\n"
    );
    assert_eq!(
        perf_brief(&ctx, &hook),
        "d0 | main                     | child_start  |     |  0.003216 |           |              | ..[ch0] class:hook hook:pre-commit cd:'sub dir' argv:[.git/hooks/pre-commit]\n"
    );
    assert!(line(Target::Event, true, &ctx, &hook).ends_with(
        "\"child_id\":0,\"child_class\":\"hook\",\"hook_name\":\"pre-commit\",\"cd\":\"sub dir\",\"use_shell\":false,\"argv\":[\".git/hooks/pre-commit\"]}\n"
    ));
    let git = Event::ChildStart {
        child_id: 2,
        child_class: None,
        hook_name: None,
        cd: None,
        use_shell: true,
        is_git: true,
        argv: Args::EMPTY,
    };
    assert_eq!(
        line(Target::Normal, true, &ctx, &git),
        "child_start[2] git \n"
    );
    assert!(perf_brief(&ctx, &git).ends_with("..[ch2] class:? argv:[git]\n"));
    assert!(line(Target::Event, true, &ctx, &git)
        .ends_with("\"child_class\":\"?\",\"use_shell\":true,\"argv\":[\"git\"]}\n"));

    let exec = Event::Exec {
        exec_id: 0,
        exe: Some(b"/bin/git"),
        argv: Args::Str(&["x y"]),
    };
    assert_eq!(
        line(Target::Normal, true, &ctx, &exec),
        "exec[0] /bin/git 'x y'\n"
    );
    assert!(perf_brief(&ctx, &exec).ends_with("| ..id:0 argv:[/bin/git 'x y']\n"));
    let res = Event::ExecResult {
        exec_id: 0,
        code: 2,
        err: b"No such file or directory",
    };
    assert_eq!(
        line(Target::Normal, true, &ctx, &res),
        "exec_result[0] code:2 err:No such file or directory\n"
    );
    let ok = Event::ExecResult {
        exec_id: 0,
        code: 0,
        err: b"unused",
    };
    assert!(line(Target::Event, true, &ctx, &ok).ends_with("\"exec_id\":0,\"code\":0}\n"));

    let ready = Event::ChildReady {
        child_id: 4,
        pid: 77,
        ready: b"timeout",
        t_rel: 1_500_000,
    };
    assert_eq!(
        line(Target::Normal, true, &ctx, &ready),
        "child_ready[4] pid:77 ready:timeout elapsed:1.500000\n"
    );

    let sig = Event::Signal { signo: 13 };
    assert_eq!(
        line(Target::Normal, true, &ctx, &sig),
        "signal elapsed:0.003216 code:13\n"
    );
    assert!(
        perf_brief(&ctx, &sig).ends_with("|  0.003216 |           |              | ..signo:13\n")
    );
}

#[test]
fn ancestry_printf_and_too_many_files() {
    let ctx = LineCtx::new(SID, b"main");
    let anc = Event::CmdAncestry {
        ancestry: Args::Str(&["bash", "sshd: me", "init"]),
    };
    assert_eq!(
        line(Target::Normal, true, &ctx, &anc),
        "cmd_ancestry bash <- sshd: me <- init\n"
    );
    assert!(perf_brief(&ctx, &anc).ends_with("| ancestry:[bash 'sshd: me' init]\n"));

    // Brief normal printf with an empty message writes nothing at all (§6).
    let empty = Event::Printf {
        msg: Some(Msg::Bytes(b"")),
    };
    assert_eq!(line(Target::Normal, true, &ctx, &empty), "");
    // A message ending in LF gets no second one.
    let lf = Event::Printf {
        msg: Some(Msg::Bytes(b"two\nlines\n")),
    };
    assert_eq!(line(Target::Normal, true, &ctx, &lf), "two\nlines\n");

    assert_eq!(line(Target::Normal, false, &ctx, &Event::TooManyFiles), "");
    assert_eq!(line(Target::Perf, false, &ctx, &Event::TooManyFiles), "");
    assert_eq!(
        line(Target::Event, true, &ctx, &Event::TooManyFiles),
        format!(
            "{{\"event\":\"too_many_files\",\"sid\":\"{}\",\"thread\":\"main\"}}\n",
            String::from_utf8_lossy(SID)
        )
    );
}

#[test]
fn local_time_prefix_uses_the_callers_offset() {
    let ctx = LineCtx {
        time: WallTime::new(1_700_000_000, 123_456),
        utc_offset_secs: -5 * 3600,
        file: b"a-very-long-directory-name/and-a-file.c",
        line: 12345,
        ..LineCtx::new(SID, b"main")
    };
    let ev = Event::CmdMode { mode: b"m" };
    // Longer than 33 bytes: the payload follows after one space.
    assert_eq!(
        line(Target::Normal, false, &ctx, &ev),
        "17:13:20.123456 a-very-long-directory-name/and-a-file.c:12345 cmd_mode m\n"
    );
    assert!(line(Target::Perf, false, &ctx, &ev)
        .starts_with("17:13:20.123456 ...y-name/and-a-file.c:12345 | d0 |"));
    // The event target is always UTC.
    assert!(
        line(Target::Event, false, &ctx, &ev).contains("\"time\":\"2023-11-14T22:13:20.123456Z\"")
    );
}

#[test]
fn event_nesting_filter_and_surplus_leave() {
    assert_eq!(parse_event_nesting(b"-3"), 2);
    let mut s = RegionStack::<4>::new(0);
    let ctx = |n| LineCtx {
        nesting: n,
        ..LineCtx::new(SID, b"main")
    };
    let data = Event::Data {
        t_rel: 0,
        category: b"c",
        key: b"k",
        value: b"v",
    };
    let mut buf = [0u8; 512];
    let f1 = Format {
        target: Target::Event,
        brief: true,
        event_nesting: 1,
    };
    assert!(f1.write_line(&ctx(1), &data, &mut buf).unwrap() > 0);
    assert_eq!(f1.write_line(&ctx(2), &data, &mut buf).unwrap(), 0);
    // Other events are never filtered.
    assert!(
        f1.write_line(&ctx(9), &Event::Exit { code: 0 }, &mut buf)
            .unwrap()
            > 0
    );

    // One surplus leave pops the base level: nesting 0, no dots, t_rel 0 after.
    assert_eq!(s.leave(10), Ok(10));
    assert_eq!(s.nesting(), 0);
    assert_eq!(s.t_rel(50), 0);
    assert!(perf_brief(&ctx(s.nesting()), &data).ends_with("| c            | k:v\n"));
    assert!(s.leave(11).is_err());
    assert_eq!(s.nesting(), 0);
}

#[test]
fn region_stack_overflow_keeps_depth_and_overestimates_t_rel() {
    let mut s = RegionStack::<2>::new(0);
    s.enter(10); // level 2, stored
    s.enter(20); // level 3, beyond the 2 slots: counted, time not stored
    s.enter(30); // level 4
    assert_eq!(s.nesting(), 4);
    assert!(s.is_overflowed());
    // Measured from the innermost stored level (entered at 10).
    assert_eq!(s.t_rel(35), 25);
    assert_eq!(s.leave(40), Ok(30));
    assert_eq!(s.leave(41), Ok(31));
    assert!(!s.is_overflowed());
    // Back within the slots: exact again.
    assert_eq!(s.leave(50), Ok(40));
    assert_eq!(s.nesting(), 1);
    s.enter(60);
    assert_eq!(s.leave(65), Ok(5));
}

#[test]
fn thread_names_are_cut_to_24_bytes() {
    let n = ThreadName::worker(5, "größenwahnsinnige-threads".as_bytes());
    assert_eq!(n.as_bytes().len(), 24);
    assert_eq!(&n.as_bytes()[..7], b"th05:gr");
    assert_eq!(ThreadName::worker(100, b"").as_bytes(), b"th100:");
    assert_eq!(
        ThreadName::worker(u32::MAX, b"abcdefghijklmnopqrstuvwxyz").as_bytes(),
        b"th4294967295:abcdefghijk"
    );
}
