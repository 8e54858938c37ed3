//! What the comparison measures: every subject with its label, its table, its
//! baseline row and how it runs.

/// Which table a subject belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Binary records in memory, per instrumented call (enter + exit).
    Fdr,
    /// Text lines written to a file, per region enter + leave.
    Trace2,
}

/// How a subject is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// This benchmark binary, started again with `--subject KEY`.
    Rust,
    /// The C program with the XRay sleds left unpatched.
    CompilerRtBaseline,
    /// The C program in compiler-rt's FDR mode.
    CompilerRtFdr,
}

/// One row of a table.
#[derive(Clone, Copy, Debug)]
pub struct Subject {
    /// Key for `--subject` and for goals.
    pub key: &'static str,
    /// Row label.
    pub label: &'static str,
    /// The table it is shown in.
    pub section: Section,
    /// The row subtracted to get the net cost (same language, same loop).
    pub baseline: Option<&'static str>,
    /// How it runs.
    pub runner: Runner,
}

/// Every subject, in table order.
pub const ALL: &[Subject] = &[
    Subject {
        key: "call",
        label: "call only, no tracing (Rust)",
        section: Section::Fdr,
        baseline: None,
        runner: Runner::Rust,
    },
    Subject {
        key: "floor",
        label: "floor: 2 × (`rdtsc` + 8-byte store)",
        section: Section::Fdr,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "floor-rdtscp",
        label: "floor with `rdtscp` (reads the CPU id too): 2 × (`rdtscp` + store)",
        section: Section::Fdr,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "flightrec-core",
        label: "flightrec core `Recorder`, flight recorder ring",
        section: Section::Fdr,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "flightrec-xray",
        label: "flightrec std shell `flightrec::xray` (`xray_fn!`)",
        section: Section::Fdr,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "fastrace",
        label: "fastrace `LocalSpan`",
        section: Section::Fdr,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "tracing-registry",
        label: "tracing span, bare `Registry`",
        section: Section::Fdr,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "tracing-fmt",
        label: "tracing span, fmt layer (enter/exit lines to a file)",
        section: Section::Fdr,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "c-call",
        label: "call only, XRay sleds unpatched (C, clang-14)",
        section: Section::Fdr,
        baseline: None,
        runner: Runner::CompilerRtBaseline,
    },
    Subject {
        key: "compiler-rt",
        label: "compiler-rt XRay FDR mode (C, clang-14)",
        section: Section::Fdr,
        baseline: Some("c-call"),
        runner: Runner::CompilerRtFdr,
    },
    Subject {
        key: "t2-core-perf",
        label: "flightrec core perf formatter + one `write` per line",
        section: Section::Trace2,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "t2-core-event",
        label: "flightrec core event formatter + one `write` per line",
        section: Section::Trace2,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "t2-shell-perf",
        label: "flightrec std shell perf target (`region!`)",
        section: Section::Trace2,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
    Subject {
        key: "t2-shell-event",
        label: "flightrec std shell event target (`region!`)",
        section: Section::Trace2,
        baseline: Some("call"),
        runner: Runner::Rust,
    },
];

/// The subject with this key.
pub fn find(key: &str) -> Option<&'static Subject> {
    ALL.iter().find(|s| s.key == key)
}
