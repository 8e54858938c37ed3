//! Whether the trampolines get their fast path (`cfg(sleds_fast_path)`).
//!
//! The fast path calls a Rust function while the sled's vector argument
//! registers are still live, so that function must not touch a vector register.
//! Optimised, it is a few loads and stores around `rdtsc` (the `c_runtime` test
//! checks the machine code of a linked release program); unoptimised code moves
//! 16-byte values through `xmm` registers, so without optimisation every
//! trampoline saves them before any call.
//!
//! The fast path starts with the record path written in assembly, which reads
//! flightrec's initial-exec ring slot: glibc targets only (musl builds keep
//! the ring pointer in a `thread_local!`), so elsewhere no fast path either.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(sleds_fast_path)");
    println!("cargo::rerun-if-changed=build.rs");
    let optimised = std::env::var("OPT_LEVEL").is_ok_and(|o| o != "0");
    let glibc = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "gnu");
    if optimised && glibc {
        println!("cargo::rustc-cfg=sleds_fast_path");
    }
}
