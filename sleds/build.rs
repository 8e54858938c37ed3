//! Whether the trampolines get their fast path (`cfg(sleds_fast_path)`).
//!
//! The fast path calls a Rust function while the sled's vector argument
//! registers are still live, so that function must not touch a vector register.
//! Optimised, it is a few loads and stores around `rdtsc` (the `c_runtime` test
//! checks the machine code of a linked release program); unoptimised code moves
//! 16-byte values through `xmm` registers, so without optimisation every
//! trampoline saves them before any call.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(sleds_fast_path)");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("OPT_LEVEL").is_ok_and(|o| o != "0") {
        println!("cargo::rustc-cfg=sleds_fast_path");
    }
}
