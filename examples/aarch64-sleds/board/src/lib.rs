//! QEMU `virt` (Cortex-A53) support for the sleds example: the PL011 UART, the
//! exit through semihosting, and the flightrec recording the sleds call.
#![no_std]

pub mod trace;
pub mod uart;

/// Ends the QEMU run with `code` as its exit status (semihosting `SYS_EXIT`,
/// QEMU run with `-semihosting`).
pub fn exit(code: u32) -> ! {
    // ADP_Stopped_ApplicationExit and the status.
    let block: [u64; 2] = [0x20026, u64::from(code)];
    loop {
        // SAFETY: the semihosting call reads the two words of `block`.
        unsafe {
            core::arch::asm!(
                "hlt #0xf000",
                in("x0") 0x18u64,
                in("x1") block.as_ptr(),
                options(nostack)
            )
        };
    }
}

/// The generic timer's count: the FDR records' time stamp.
#[inline]
pub fn ticks() -> u64 {
    let t: u64;
    // SAFETY: reading CNTVCT_EL0 has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) t, options(nomem, nostack)) };
    t
}

/// Ticks per second of [`ticks`].
pub fn ticks_per_second() -> u64 {
    let f: u64;
    // SAFETY: reading CNTFRQ_EL0 has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) f, options(nomem, nostack)) };
    f
}
