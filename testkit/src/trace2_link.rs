//! The compact Trace2 event a property test's numbers describe, shared by the
//! core's round-trip test and the host's two-ways test so both cover the same
//! events.

use flightrec_core::link::trace2::{
    Atexit, Counter, Data, DataInt, DataJson, DefParam, Error, Exit, Printf, RegionEnter,
    RegionLeave, Session, Start, Str, StrList, Timer, Trace2, Version,
};

/// Calls `f` with the event of kind `code` (0 session, 1 version, 2 start, 3
/// exit, 4 atexit, 5 error, 6 region enter, 7 region leave, 8 data, 9 integer
/// data, 11 JSON data, 12 def_param, 13 timer, 14 counter, anything else
/// printf): string field `i` is `opt(i)` (a required one that is `None` is the
/// empty string), `int` gives the clock rate, exit code or integer value (and
/// [`timer_of`] a timer's numbers, a counter's value `int as u64`, per thread
/// when `int` is odd), and `argv` is a start event's arguments.
///
/// ```
/// use flightrec_core::link::trace2::{Str, Trace2};
/// let name = |i: usize| (i == 0).then_some(Str::Bytes(b"1.0"));
/// flightrec_testkit::trace2_link::with_event(1, 0, name, &[], |ev| {
///     assert!(matches!(ev, Trace2::Version(v) if v.exe == Str::Bytes(b"1.0")));
/// });
/// ```
pub fn with_event<'a, R>(
    code: u8,
    int: i64,
    opt: impl Fn(usize) -> Option<Str<'a>>,
    argv: &'a [Str<'a>],
    f: impl FnOnce(Trace2<'a>) -> R,
) -> R {
    let req = |i: usize| opt(i).unwrap_or(Str::Bytes(b""));
    let exit = int as i32;
    let ev = match code {
        0 => Trace2::Session(Session {
            hz: int as u64,
            sid: req(0),
            thread: req(1),
        }),
        1 => Trace2::Version(Version { exe: req(0) }),
        2 => Trace2::Start(Start {
            argv: StrList::Slice(argv),
        }),
        3 => Trace2::Exit(Exit { code: exit }),
        4 => Trace2::Atexit(Atexit { code: exit }),
        5 => Trace2::Error(Error {
            msg: req(0),
            fmt: req(1),
        }),
        6 => Trace2::RegionEnter(RegionEnter {
            category: opt(0),
            label: opt(1),
            msg: opt(2),
        }),
        7 => Trace2::RegionLeave(RegionLeave {
            category: opt(0),
            label: opt(1),
            msg: opt(2),
        }),
        8 => Trace2::Data(Data {
            category: req(0),
            key: req(1),
            value: req(2),
        }),
        9 => Trace2::DataInt(DataInt {
            category: req(0),
            key: req(1),
            value: int,
        }),
        11 => Trace2::DataJson(DataJson {
            category: req(0),
            key: req(1),
            value: req(2),
        }),
        12 => Trace2::DefParam(DefParam {
            scope: req(0),
            param: req(1),
            value: opt(2),
        }),
        13 => {
            let (intervals, total_ticks, min_ticks, max_ticks) = timer_of(int);
            Trace2::Timer(Timer {
                per_thread: int & 1 == 1,
                category: req(0),
                name: req(1),
                intervals,
                total_ticks,
                min_ticks,
                max_ticks,
            })
        }
        14 => Trace2::Counter(Counter {
            per_thread: int & 1 == 1,
            category: req(0),
            name: req(1),
            value: int as u64,
        }),
        _ => Trace2::Printf(Printf { msg: opt(0) }),
    };
    f(ev)
}

/// A timer's intervals, total, shortest and longest ticks made from one
/// generated number (each taking different bits of it).
///
/// ```
/// assert_eq!(flightrec_testkit::trace2_link::timer_of(0), (0, 0, 0, 0));
/// let (n, total, min, max) = flightrec_testkit::trace2_link::timer_of(-1);
/// assert_eq!((n, total, min, max), (0xffff, u64::MAX, u64::MAX >> 20, u64::MAX >> 4));
/// ```
pub fn timer_of(int: i64) -> (u64, u64, u64, u64) {
    let u = int as u64;
    (u & 0xffff, u, u >> 20, u >> 4)
}
