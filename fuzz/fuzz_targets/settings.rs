//! The environment and config parsers: arbitrary git config file text, arbitrary
//! `GIT_TRACE2*` values and arbitrary `XRAY_OPTIONS`/`XRAY_FDR_OPTIONS` strings.
//! Nothing panics; every accepted result keeps the invariants tracing relies on.
//!
//! Input layout: fields separated by 0xFF bytes: config file text, then one value
//! per Trace2 environment variable, then the two XRay option strings.
#![no_main]

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use flightrec::trace2::config::{ConfigFiles, Trace2Config};
use flightrec::trace2::target::{TargetValue, UnixSocketSpec};
use flightrec::xray::Config as XrayConfig;
use libfuzzer_sys::fuzz_target;

const VARS: [&str; 14] = [
    "GIT_TRACE2",
    "GIT_TRACE2_BRIEF",
    "GIT_TRACE2_PERF",
    "GIT_TRACE2_PERF_BRIEF",
    "GIT_TRACE2_EVENT",
    "GIT_TRACE2_EVENT_BRIEF",
    "GIT_TRACE2_EVENT_NESTING",
    "GIT_TRACE2_CONFIG_PARAMS",
    "GIT_TRACE2_ENV_VARS",
    "GIT_TRACE2_DST_DEBUG",
    "GIT_TRACE2_MAX_FILES",
    "GIT_TRACE2_REDACT",
    "GIT_TRACE2_PARENT_SID",
    "GIT_TRACE2_PARENT_NAME",
];

/// The config file one input is read from, removed when the input is done with
/// (on every return path), so a run leaves nothing behind in the temporary
/// directory.
struct ConfigFile(PathBuf);

impl ConfigFile {
    fn write(text: &[u8]) -> Option<Self> {
        let path = std::env::temp_dir().join(format!(
            "flightrec-fuzz-settings-{}.gitconfig",
            std::process::id()
        ));
        // Owned before the write, so a failed (partial) write is removed too.
        let file = ConfigFile(path);
        std::fs::write(&file.0, text).ok()?;
        Some(file)
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut fields = data.split(|&b| b == 0xFF);
    let file_text = fields.next().unwrap_or_default();
    let values: Vec<Option<OsString>> = VARS
        .iter()
        .map(|_| fields.next().map(|v| OsString::from_vec(v.to_vec())))
        .collect();
    let xray = fields.next().unwrap_or_default();
    let xray_fdr = fields.next().unwrap_or_default();

    // Trace2 settings: environment over one global config file.
    let Some(config_file) = ConfigFile::write(file_text) else {
        return;
    };
    let env = |name: &str| {
        VARS.iter()
            .position(|v| *v == name)
            .and_then(|i| values[i].clone())
    };
    let files = ConfigFiles {
        global: vec![config_file.0.clone()],
        ..ConfigFiles::none()
    };
    match Trace2Config::load_with("GIT_TRACE2", Some("trace2"), env, &files) {
        Ok(cfg) => {
            assert!(cfg.event_nesting >= 1, "nesting filter below 1");
            // Whatever the target values are, classifying them never panics, and an
            // af_unix value either parses or says why.
            for setting in [&cfg.normal, &cfg.perf, &cfg.event] {
                if let Some(v) = setting.value.as_deref() {
                    assert!(!v.is_empty(), "an empty value must read as unset");
                    if let TargetValue::UnixSocket(s) = TargetValue::parse(v) {
                        let _ = UnixSocketSpec::parse(s);
                    }
                }
            }
            for p in &cfg.config_params {
                // Trimmed of what git's `strbuf_trim` removes (its isspace: space,
                // TAB, LF, CR); `str::trim` would also want VT and Unicode spaces,
                // which git keeps.
                let trimmed = p.trim_matches([' ', '\t', '\n', '\r']);
                assert!(
                    !p.is_empty() && trimmed == p,
                    "untrimmed or empty pattern {p:?}"
                );
            }
        }
        Err(e) => {
            // git's two-line message, never empty.
            assert!(!e.git_messages().is_empty());
        }
    }
    for v in values.iter().flatten() {
        let _ = TargetValue::parse(OsStr::from_bytes(v.as_bytes()));
    }

    // XRay options, as compiler-rt reads them.
    let (Ok(x), Ok(f)) = (std::str::from_utf8(xray), std::str::from_utf8(xray_fdr)) else {
        return;
    };
    if let Ok(parsed) = XrayConfig::from_options(x, f) {
        // What the parser accepts, the runtime's own check accepts too.
        assert_eq!(parsed.config.validate(), Ok(()), "parsed {x:?} / {f:?}");
    }
});
