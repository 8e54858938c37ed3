//! `XRAY_OPTIONS` / `XRAY_FDR_OPTIONS` parsing: every option, compiler-rt's grammar
//! and defaults, bad values refused.

use flightrec::xray::options::FlagError;
use flightrec::xray::{Config, ConfigError, CpuIds, Mode};

fn parse(x: &str, f: &str) -> Result<flightrec::xray::ParsedOptions, ConfigError> {
    Config::from_options(x, f)
}

#[test]
fn defaults_are_compiler_rt_defaults() {
    let p = parse("", "").unwrap();
    assert!(!p.selected, "no mode selected without xray_mode");
    let c = p.config;
    assert_eq!(c.mode, Mode::FlightRecorder);
    assert_eq!(c.logfile_base, "xray-log.");
    assert!(!c.patch_premain);
    assert_eq!(c.verbosity, 0);
    assert_eq!(c.buffer_size, 16384);
    assert_eq!(c.buffer_max, 100);
    assert_eq!(c.func_duration_threshold_us, 5);
    assert_eq!(c.grace_period_ms, 100);
    assert!(!c.no_file_flush);
    assert_eq!(c.thread_buffers, 0);
    assert_eq!(
        c.rings(),
        (100, 100),
        "a ring of buffer_max buffers per thread"
    );
    assert_eq!(c.flush_interval_ms, 10);
    assert!(c.fatal_signals);
    assert_eq!(c.cpu_ids, CpuIds::Auto);
    assert!(p.unknown_flags.is_empty());
}

#[test]
fn every_xray_option() {
    let p = parse(
        "xray_mode=xray-fdr patch_premain=true verbosity=2 xray_logfile_base=/tmp/out/t- \
         xray_page_size_override=8192 xray_naive_log=false \
         xray_naive_log_func_duration_threshold_us=1 xray_naive_log_max_stack_depth=2 \
         xray_naive_log_thread_buffer_size=3 xray_fdr_log_grace_period_us=4",
        "",
    )
    .unwrap();
    assert!(p.selected);
    assert!(p.config.patch_premain);
    assert_eq!(p.config.verbosity, 2);
    assert_eq!(p.config.logfile_base, "/tmp/out/t-");
    assert!(p.unknown_flags.is_empty(), "{:?}", p.unknown_flags);
}

#[test]
fn every_fdr_option() {
    let p = parse(
        "xray_mode=xray-fdr",
        "buffer_size=4096 buffer_max=10 func_duration_threshold_us=0 grace_period_ms=7 \
         no_file_flush=1 flightrec_mode=streaming flightrec_thread_buffers=5 \
         flightrec_flush_interval_ms=3 flightrec_fatal_signals=no flightrec_cpu_ids=yes",
    )
    .unwrap();
    let c = p.config;
    assert_eq!(c.cpu_ids, CpuIds::Always);
    assert_eq!(c.buffer_size, 4096);
    assert_eq!(c.buffer_max, 10);
    assert_eq!(c.func_duration_threshold_us, 0);
    assert_eq!(c.grace_period_ms, 7);
    assert!(c.no_file_flush);
    assert_eq!(c.mode, Mode::Streaming);
    assert_eq!(c.thread_buffers, 5);
    assert_eq!(c.flush_interval_ms, 3);
    assert!(!c.fatal_signals);
}

#[test]
fn separators_quotes_and_overrides() {
    // Colons, commas, tabs and newlines separate; quotes keep separators in values;
    // the last occurrence wins.
    let p = parse(
        "xray_mode=xray-fdr,verbosity=1:xray_logfile_base='/tmp/a b:c/x-'\tverbosity=3",
        "buffer_max=5\nbuffer_max=\"6\"",
    )
    .unwrap();
    assert_eq!(p.config.logfile_base, "/tmp/a b:c/x-");
    assert_eq!(p.config.verbosity, 3);
    assert_eq!(p.config.buffer_max, 6);
}

#[test]
fn deprecated_flags() {
    // xray_fdr_log=true selects FDR mode.
    assert!(parse("xray_fdr_log=true", "").unwrap().selected);
    assert!(!parse("xray_fdr_log=false", "").unwrap().selected);
    // With XRAY_FDR_OPTIONS empty, the deprecated threshold and grace period apply...
    let p = parse(
        "xray_mode=xray-fdr xray_fdr_log_func_duration_threshold_us=9 xray_fdr_log_grace_period_ms=11",
        "",
    )
    .unwrap();
    assert_eq!(p.config.func_duration_threshold_us, 9);
    assert_eq!(p.config.grace_period_ms, 11);
    // ...and when it is set, they do not (compiler-rt's rule).
    let p = parse(
        "xray_mode=xray-fdr xray_fdr_log_func_duration_threshold_us=9 xray_fdr_log_grace_period_ms=11",
        "buffer_max=4",
    )
    .unwrap();
    assert_eq!(p.config.func_duration_threshold_us, 5);
    assert_eq!(p.config.grace_period_ms, 100);
}

#[test]
fn unknown_flags_are_reported_not_fatal() {
    let p = parse(
        "xray_mode=xray-fdr colour=blue",
        "buffer_sise=1 flightrec_x=2",
    )
    .unwrap();
    assert!(p.selected);
    assert_eq!(
        p.unknown_flags,
        [
            "XRAY_OPTIONS: colour",
            "XRAY_FDR_OPTIONS: buffer_sise",
            "XRAY_FDR_OPTIONS: flightrec_x"
        ]
    );
}

#[test]
fn bad_values_are_errors() {
    let invalid = |x: &str, f: &str, flag: &str| match parse(x, f) {
        Err(ConfigError::Flags(FlagError::InvalidValue { flag: got, .. })) => {
            assert_eq!(got, flag, "{x} / {f}")
        }
        other => panic!("{x} / {f}: {other:?}"),
    };
    invalid("patch_premain=maybe", "", "patch_premain");
    invalid("verbosity=high", "", "verbosity");
    invalid("verbosity=", "", "verbosity");
    invalid("xray_page_size_override=-1", "", "xray_page_size_override");
    invalid("xray_fdr_log=2", "", "xray_fdr_log");
    invalid("", "buffer_size=16k", "buffer_size");
    invalid("", "buffer_max=99999999999", "buffer_max");
    invalid(
        "",
        "func_duration_threshold_us=1.5",
        "func_duration_threshold_us",
    );
    invalid("", "grace_period_ms=", "grace_period_ms");
    invalid("", "no_file_flush=on", "no_file_flush");
    invalid("", "flightrec_fatal_signals=y", "flightrec_fatal_signals");

    let range = |x: &str, f: &str, option: &str| match parse(x, f) {
        Err(ConfigError::OutOfRange { option: got, .. }) => assert_eq!(got, option, "{f}"),
        other => panic!("{f}: {other:?}"),
    };
    range("", "buffer_size=0", "buffer_size");
    range("", "buffer_size=100", "buffer_size");
    range("", "buffer_max=-3", "buffer_max");
    range(
        "",
        "func_duration_threshold_us=-1",
        "func_duration_threshold_us",
    );
    range("", "grace_period_ms=-5", "grace_period_ms");
    range(
        "",
        "flightrec_thread_buffers=-1",
        "flightrec_thread_buffers",
    );
    range(
        "",
        "buffer_max=2 flightrec_thread_buffers=3",
        "flightrec_thread_buffers",
    );
    range(
        "",
        "flightrec_flush_interval_ms=0",
        "flightrec_flush_interval_ms",
    );

    assert_eq!(
        parse("", "flightrec_cpu_ids=sometimes"),
        Err(ConfigError::UnknownCpuIds("sometimes".into()))
    );
    assert_eq!(
        parse("", "flightrec_mode=fast"),
        Err(ConfigError::UnknownMode("fast".into()))
    );
    assert_eq!(
        parse("xray_mode=xray-basic", ""),
        Err(ConfigError::UnsupportedMode("xray-basic".into()))
    );
    assert!(matches!(
        parse("xray_logfile_base=''", ""),
        Err(ConfigError::BadLogfileBase(_))
    ));
    assert!(matches!(
        parse("xray_mode", ""),
        Err(ConfigError::Flags(FlagError::ExpectedEquals { .. }))
    ));
    assert!(matches!(
        parse("", "buffer_size='12"),
        Err(ConfigError::Flags(FlagError::UnterminatedString { .. }))
    ));
}

#[test]
fn errors_say_what_is_wrong() {
    let e = parse("", "buffer_size=16k").unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid value '16k' for buffer_size in XRAY_FDR_OPTIONS: expected a decimal integer that fits 32 bits"
    );
    let e = parse("xray_mode", "").unwrap_err().to_string();
    assert_eq!(e, "expected '=' in XRAY_OPTIONS near 'xray_mode'");
}

#[test]
fn builder_matches_flags_and_checks() {
    let built = Config::builder()
        .mode(Mode::Streaming)
        .logfile_base("/tmp/x-")
        .patch_premain(false)
        .verbosity(1)
        .buffer_size(4096)
        .buffer_max(10)
        .thread_buffers(5)
        .func_duration_threshold_us(0)
        .grace_period_ms(7)
        .no_file_flush(true)
        .flush_interval_ms(3)
        .fatal_signals(false)
        .cpu_ids(CpuIds::Never)
        .build()
        .unwrap();
    let parsed = parse(
        "xray_mode=xray-fdr verbosity=1 xray_logfile_base=/tmp/x-",
        "buffer_size=4096 buffer_max=10 func_duration_threshold_us=0 grace_period_ms=7 \
         no_file_flush=1 flightrec_mode=streaming flightrec_thread_buffers=5 \
         flightrec_flush_interval_ms=3 flightrec_fatal_signals=0 flightrec_cpu_ids=0",
    )
    .unwrap()
    .config;
    assert_eq!(built, parsed);
    assert!(Config::builder().buffer_max(0).build().is_err());
    assert!(Config::builder().logfile_base("").build().is_err());
    assert!(Config::builder()
        .buffer_max(3)
        .thread_buffers(4)
        .build()
        .is_err());
}
