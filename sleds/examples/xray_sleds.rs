//! A Rust program traced through XRay sleds (nightly only):
//!
//! ```text
//! RUSTFLAGS="-Zinstrument-xray=always" cargo +nightly build -p flightrec-sleds --example xray_sleds
//! XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr" target/debug/examples/xray_sleds
//! llvm-xray account -m target/debug/examples/xray_sleds xray-log.xray_sleds.*
//! ```
//!
//! Built without `-Zinstrument-xray` it runs untraced and says why once.

#[inline(never)]
fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[inline(never)]
fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

#[inline(never)]
fn tail(n: u64) -> u64 {
    fib(std::hint::black_box(n))
}

fn main() {
    // The runtime also starts itself before `main` (an `.init_array` hook);
    // this returns what that did.
    if let Err(e) = flightrec_sleds::init_from_env() {
        eprintln!("untraced: {e}");
    }
    let f = fib(12);
    let m = mean(&[1.0, 2.5, 4.0]);
    let t = tail(5);
    println!("fib(12)={f} mean={m} tail={t}");
    assert_eq!(
        (f, m, t),
        (144, 2.5, 5),
        "registers survived the trampolines"
    );
}
