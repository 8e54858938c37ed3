//! Puts `bench.x` (the memory layout the emulator maps) on the linker's path.
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));
    println!("cargo:rustc-link-search={}", dir.display());
    println!("cargo:rustc-link-arg=-Tbench.x");
    println!("cargo:rerun-if-changed=bench.x");
    // The user's path gathers its function names as firmware does (flightrec's
    // linker script: the non-loaded .flightrec section).
    if std::env::var_os("CARGO_FEATURE_USER_PATH").is_some() {
        println!("cargo:rustc-link-arg=-Tflightrec.x");
    }
}
