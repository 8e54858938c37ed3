//! Puts `memory.x` and `device.x` where cortex-m-rt's `link.x` finds them, and
//! links `flightrec.x` (the function names' section) only when tracing is on:
//! a build without flightrec has no such script to find.
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    for file in ["memory.x", "device.x"] {
        std::fs::copy(file, out.join(file)).expect("copy linker script");
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rustc-link-search={}", out.display());
    if std::env::var_os("CARGO_FEATURE_TRACE").is_some() {
        println!("cargo:rustc-link-arg=-Tflightrec.x");
    }
}
