//! ns per formatted Trace2 line (region_enter, region_leave, data) in each
//! format, beside `core::fmt::write` of comparable text into a buffer.
//!
//! Run: `cargo bench -p flightrec-benches --bench trace2 -- --warm-up-time 1 --measurement-time 3`

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flightrec_core::trace2::{Event, Format, LineCtx, Target, WallTime};

const SID: &[u8] = b"20231114T221320.123456Z-H65cb7838-P00001234";

fn ctx(file: &'static [u8], line: u32, nesting: u32) -> LineCtx<'static> {
    LineCtx {
        time: WallTime::new(1_700_000_000, 123_456),
        file,
        line,
        nesting,
        repo: Some(1),
        t_abs: 20,
        ..LineCtx::new(SID, b"main")
    }
}

/// A `core::fmt` writer over a byte buffer, for the comparison.
struct Cursor<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl std::fmt::Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.pos + s.len();
        self.buf
            .get_mut(self.pos..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.pos = end;
        Ok(())
    }
}

fn bench(c: &mut Criterion) {
    let enter = Event::RegionEnter {
        category: Some(b"unpack_trees"),
        label: Some(b"unpack_trees"),
        msg: None,
    };
    let leave = Event::RegionLeave {
        t_rel: 3,
        category: Some(b"unpack_trees"),
        label: Some(b"unpack_trees"),
        msg: None,
    };
    let data = Event::Data {
        t_rel: 4,
        category: b"index",
        key: b"read/cache_nr",
        value: b"3",
    };
    let cases: [(&str, LineCtx<'static>, Event<'static>); 3] = [
        ("region_enter", ctx(b"unpack-trees.c", 1902, 2), enter),
        ("region_leave", ctx(b"unpack-trees.c", 2105, 2), leave),
        ("data", ctx(b"read-cache.c", 2334, 2), data),
    ];
    let formats = [
        ("perf", Format::new(Target::Perf, false)),
        ("perf-brief", Format::new(Target::Perf, true)),
        ("event", Format::new(Target::Event, false)),
        ("event-brief", Format::new(Target::Event, true)),
    ];
    let mut g = c.benchmark_group("trace2");
    g.throughput(Throughput::Elements(1));
    let mut buf = [0u8; 512];
    for (ev_name, ctx, ev) in &cases {
        for (fmt_name, fmt) in &formats {
            if fmt.target == Target::Normal {
                // The normal target prints no region or data lines.
                continue;
            }
            g.bench_function(format!("{ev_name}/{fmt_name}"), |b| {
                b.iter(|| {
                    fmt.write_line(black_box(ctx), black_box(ev), black_box(&mut buf))
                        .unwrap()
                })
            });
        }
    }
    // Comparable text through core::fmt (values black-boxed so nothing is folded
    // at compile time): a perf region_leave line and an event data line.
    g.bench_function("core_fmt/perf_region_leave_like", |b| {
        b.iter(|| {
            let mut w = Cursor { buf: &mut buf, pos: 0 };
            let (t_abs, t_rel, depth) = black_box((20u64, 3u64, 2usize));
            let (fl, thread, name, cat, label) =
                black_box(("unpack-trees.c:2105", "main", "region_leave", "unpack_trees", "unpack_trees"));
            let (h, m, sec, us, repo) = black_box((22u32, 13u32, 20u32, 123_456u32, 1i32));
            writeln!(
                w,
                "{h:02}:{m:02}:{sec:02}.{us:06} {fl:<28} | d{} | {thread:<24} | {name:<12} | r{repo:<2} | {:>2}.{:06} | {:>2}.{:06} | {cat:<12.12} | {:.<width$}label:{label}",
                0,
                t_abs / 1_000_000,
                t_abs % 1_000_000,
                t_rel / 1_000_000,
                t_rel % 1_000_000,
                black_box(""),
                width = depth * 2 - 2
            )
            .unwrap();
            w.pos
        })
    });
    g.bench_function("core_fmt/event_data_like", |b| {
        b.iter(|| {
            let mut w = Cursor { buf: &mut buf, pos: 0 };
            let (t_abs, t_rel) = black_box((20u64, 4u64));
            let (sid, thread, file, cat, key, value) = black_box((
                "20231114T221320.123456Z-H65cb7838-P00001234",
                "main",
                "read-cache.c",
                "index",
                "read/cache_nr",
                "3",
            ));
            let (y, mo, d, h, mi, sec, us, line, repo, nesting) =
                black_box((2023, 11u32, 14u32, 22u32, 13u32, 20u32, 123_456u32, 2334u32, 1i32, 2u32));
            writeln!(
                w,
                "{{\"event\":\"data\",\"sid\":\"{sid}\",\"thread\":\"{thread}\",\"time\":\"{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{us:06}Z\",\"file\":\"{file}\",\"line\":{line},\"repo\":{repo},\"t_abs\":{}.{:06},\"t_rel\":{}.{:06},\"nesting\":{nesting},\"category\":\"{cat}\",\"key\":\"{key}\",\"value\":\"{value}\"}}",
                t_abs / 1_000_000,
                t_abs % 1_000_000,
                t_rel / 1_000_000,
                t_rel % 1_000_000
            )
            .unwrap();
            w.pos
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
