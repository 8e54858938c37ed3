//! flightrec's hot paths on Cortex-M, as entry functions for an instruction-level
//! emulator (`run.py` next to this crate loads the ELF, calls each entry with the
//! number of operations in r0 and counts what executes).
//!
//! The hardware is six memory-mapped registers the emulator provides:
//! [`COUNTER`], a free-running 32-bit counter that is the clock (every record reads
//! it, as firmware reads SysTick or a timer); [`MARK`], written 1 and 0 around the
//! part of an entry that is counted when the runner counts between marks; and
//! [`UART_DATA`], a transmit register with no wait, the link's sink; and
//! [`DMA_ADDR`] and [`DMA_LEN`], a transmit DMA channel that takes a whole block
//! (its address, then its length, which starts the transfer; no wait), the other
//! sink; and [`COUNTER_SET`], which sets the counter (an entry's setup takes the
//! clock past a wrap with it).
//! Nothing else: no vector table, no startup code (the runner loads `.data`).
#![no_std]
#![no_main]

#[cfg(all(feature = "flightrec", not(feature = "user-path")))]
mod embassy;
#[cfg(all(feature = "flightrec", not(feature = "user-path")))]
mod paths;
// The user's path replaces the library's paths: a firmware has one global recorder.
#[cfg(feature = "user-path")]
#[path = "user.rs"]
mod paths;

use core::ptr::{addr_of_mut, read_volatile, write_volatile};

/// The clock: a free-running counter (the emulator returns increasing values).
pub const COUNTER: usize = 0x4000_0000;
/// Counting mark: 1 starts, 0 stops the count of a marked entry.
pub const MARK: usize = 0x4000_0004;
/// The link's transmit register.
pub const UART_DATA: usize = 0x4000_0008;
/// The transmit DMA channel's source address.
pub const DMA_ADDR: usize = 0x4000_000C;
/// The transmit DMA channel's length: writing it sends `DMA_LEN` bytes from
/// `DMA_ADDR` (the emulator copies them at once).
pub const DMA_LEN: usize = 0x4000_0010;
/// Writing it sets the counter: the next reading of [`COUNTER`] is the value
/// written plus the counter's step.
pub const COUNTER_SET: usize = 0x4000_0014;

/// One reading of the clock, zero-extended as firmware does with a 32-bit counter.
#[inline(always)]
pub fn now() -> u64 {
    // SAFETY: COUNTER is a readable 32-bit register on the emulated machine.
    u64::from(unsafe { read_volatile(COUNTER as *const u32) })
}

/// Starts (`true`) or stops the count of a marked entry.
#[inline(always)]
pub fn mark(on: bool) {
    // SAFETY: MARK is a writable 32-bit register on the emulated machine.
    unsafe { write_volatile(MARK as *mut u32, u32::from(on)) }
}

/// Where the floor stores: 2 KiB, indexed with a mask like a ring.
static mut FLOOR_AREA: [u64; 256] = [0; 256];

/// The floor of one enter + exit: 2 × (clock read + 8-byte store), `n` times.
#[no_mangle]
pub extern "C" fn bench_floor(n: u32) -> u32 {
    // SAFETY: entries run one at a time on one core, so this is the only reference.
    let area = unsafe { &mut *addr_of_mut!(FLOOR_AREA) };
    let mask = area.len() - 1;
    for i in 0..n as usize {
        area[(2 * i) & mask] = now();
        area[(2 * i + 1) & mask] = now();
    }
    // The stores are the point: keep them (nothing reads the area).
    core::hint::black_box(area);
    0
}

/// The entries, kept by the linker script even though nothing calls them.
#[used]
#[link_section = ".bench_entries"]
static ENTRIES: [extern "C" fn(u32) -> u32; paths::COUNT + 1] = {
    let mut all: [extern "C" fn(u32) -> u32; paths::COUNT + 1] = [bench_floor; paths::COUNT + 1];
    let mut i = 0;
    while i < paths::COUNT {
        all[i + 1] = paths::ENTRIES[i];
        i += 1;
    }
    all
};

#[cfg(not(feature = "flightrec"))]
mod paths {
    pub const COUNT: usize = 0;
    pub const ENTRIES: [extern "C" fn(u32) -> u32; 0] = [];
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // The runner stops at its instruction limit; a panic never returns.
    loop {}
}
