//! Bare-metal AArch64 firmware for QEMU `virt`, every function traced through
//! XRay sleds with no change to its source: built with
//! `cargo +nightly rustc --release -- -Zinstrument-xray=always`, the board crate
//! patches the sleds at start, records each entry and exit into a flightrec ring
//! and flushes it over the PL011 UART as link frames for `flightrec recv`.
#![no_std]
#![no_main]
// `become` in `scaled_sum`: a tail call even unoptimised, for a tail-exit sled.
#![feature(explicit_tail_calls)]
#![allow(incomplete_features)]

use core::hint::black_box;

use aarch64_sleds_board as board;

// Boot: one core, FP/SIMD on (Rust code uses the vector registers), a stack,
// .bss zeroed, then Rust.
core::arch::global_asm!(
    ".pushsection .text.boot,\"ax\",%progbits",
    ".globl _start",
    "_start:",
    "mrs x0, mpidr_el1",
    "and x0, x0, #0xff",
    "cbz x0, 2f",
    "1: wfe",
    "b 1b",
    "2: mov x0, #(3 << 20)",
    "msr cpacr_el1, x0",
    "isb",
    "ldr x0, =__stack_top",
    "mov sp, x0",
    "ldr x0, =__bss_start",
    "ldr x1, =__bss_end",
    "3: cmp x0, x1",
    "b.hs 4f",
    "str xzr, [x0], #8",
    "b 3b",
    "4: bl firmware_main",
    "b .",
    ".popsection",
);

/// Iterations of the workload.
const ITERATIONS: u32 = 300;

#[no_mangle]
extern "C" fn firmware_main() -> ! {
    let code = match board::trace::start() {
        Ok((_, mut flusher)) => {
            run(&mut flusher);
            flusher.finish();
            0
        }
        Err(e) => e.code(),
    };
    board::exit(code)
}

fn run(flusher: &mut board::trace::Flusher) {
    let mut samples = [0i32; 32];
    for i in 0..ITERATIONS {
        sensor_read(&mut samples, i);
        filter(&mut samples);
        black_box(checksum(&samples));
        black_box(fib(black_box(3 + i % 5)));
        black_box(scaled_sum(&samples, black_box(i)));
        flusher.flush_ready();
    }
}

fn sensor_read(samples: &mut [i32], seed: u32) {
    for (k, s) in samples.iter_mut().enumerate() {
        *s = (seed.wrapping_mul(2_654_435_761).rotate_left(k as u32) >> 20) as i32 - 2048;
    }
}

fn filter(samples: &mut [i32]) {
    let mut prev = 0;
    for s in samples.iter_mut() {
        prev = (prev * 3 + *s) / 4;
        *s = prev;
    }
}

fn checksum(samples: &[i32]) -> u32 {
    samples
        .iter()
        .fold(0u32, |acc, &s| acc.rotate_left(5) ^ s as u32)
}

/// Ends in a guaranteed tail call (`become`): its last sled is a tail-exit sled,
/// and `sum_from` returns straight to this function's caller.
fn scaled_sum(samples: &[i32], i: u32) -> u32 {
    let scale = i.wrapping_mul(3) | 1;
    become sum_from(samples, scale)
}

fn sum_from(samples: &[i32], scale: u32) -> u32 {
    samples.iter().fold(0u32, |acc, &s| {
        acc.wrapping_add((s as u32).wrapping_mul(scale))
    })
}

fn fib(n: u32) -> u32 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    board::exit(101)
}
