//! `dump` prints what `llvm-xray fdr-dump` 14 prints, on crafted files whose
//! values sit at the edges of their fields. Without `llvm-xray` the comparison is
//! skipped with a message, except under `CI=true`, where it fails.

use flightrec_testkit::xray_tool;

use flightrec_host::names::Names;
use flightrec_host::out::dump::dump;

const TRACE: &[u8] = include_bytes!("../../testdata/xray/crafted-v5.xray");
/// Where the first WalltimeMarker's seconds are: after the 32-byte file header,
/// the BufferExtents and NewBuffer records, and the record's type byte.
const WALLTIME_SECONDS: usize = 32 + 16 + 16 + 1;

fn with_walltime(seconds: i64, micros: u32) -> Vec<u8> {
    let mut file = TRACE.to_vec();
    assert_eq!(file[WALLTIME_SECONDS - 1], 0x09, "a WalltimeMarker");
    file[WALLTIME_SECONDS..WALLTIME_SECONDS + 8].copy_from_slice(&seconds.to_le_bytes());
    file[WALLTIME_SECONDS + 8..WALLTIME_SECONDS + 12].copy_from_slice(&micros.to_le_bytes());
    file
}

fn ours(file: &[u8]) -> String {
    let mut out = Vec::new();
    dump(file, &Names::empty(), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

const EDGES: [(i64, u32, &str); 4] = [
    (i64::MIN + 1, 2, "9223372036854775809.000002"),
    (-1, 999_999, "18446744073709551615.999999"),
    (i64::MIN, 0, "9223372036854775808.000000"),
    (i64::MAX, 1, "9223372036854775807.000001"),
];

#[test]
fn walltime_seconds_print_unsigned() {
    for (seconds, micros, text) in EDGES {
        let dumped = ours(&with_walltime(seconds, micros));
        let line = dumped.lines().nth(2).unwrap();
        assert_eq!(line, format!("<Wall Time: seconds = {text}>"));
    }
}

#[test]
fn walltime_edges_match_llvm_xray() {
    let Some(tool) = xray_tool::llvm_xray() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (seconds, micros, _) in EDGES {
        let file = with_walltime(seconds, micros);
        let path = dir.path().join(format!("walltime{seconds}.xray"));
        std::fs::write(&path, &file).unwrap();
        let (ok, theirs, err) = xray_tool::xray(&tool, &["fdr-dump", path.to_str().unwrap()]);
        assert!(ok, "llvm-xray fdr-dump: {err}");
        assert_eq!(ours(&file), theirs, "seconds {seconds}");
    }
}
