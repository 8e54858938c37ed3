//! The Cortex-M context source: thread mode, or the priority of the exception
//! that is running (read from IPSR and the exception's priority register, as SEGGER
//! SystemView does).
//!
//! Built with the `cortex-m` feature on `target_arch = "arm"`, `target_os = "none"`
//! only; the firmware examples run it under QEMU.

use core::arch::asm;
use core::ptr;

use super::{Context, ContextSource};
use crate::hint::cold_path;

/// System handler priority registers: SHPR1 at 0xE000ED18 holds exceptions 4-7,
/// SHPR2 8-11, SHPR3 12-15, a byte each.
const SHPR_BASE: usize = 0xE000_ED18;
/// NVIC interrupt priority registers: a byte per interrupt, from interrupt 0.
const NVIC_IPR_BASE: usize = 0xE000_E400;

/// Picks the recorder by the running exception's priority: [`Context::THREAD_MODE`]
/// in thread mode, [`Context::priority`] of the handler's priority in an
/// exception or interrupt handler, [`Context::NMI`] and [`Context::HARD_FAULT`]
/// for the two of fixed priority. Handlers of one priority cannot preempt each
/// other, so they share a recorder; give each priority level you trace one.
///
/// ```
/// # #[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
/// # fn firmware() {
/// use flightrec_core::clock::SysTickClock;
/// use flightrec_core::context::{ContextRecorders, CortexMContexts};
/// static CLOCK: SysTickClock = SysTickClock::new(12_000_000);
/// flightrec_core::static_clock!(Time = CLOCK); // zero-sized: TRACE stays in .bss
/// static TRACE: ContextRecorders<2, CortexMContexts, Time> =
///     ContextRecorders::new(CortexMContexts::new(), Time);
/// flightrec_core::global_recorder!(TRACE);
/// assert_eq!(TRACE.capacity(), 2);
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct CortexMContexts(());

impl CortexMContexts {
    /// The source; a `const fn`, for `static`s. Example on [`CortexMContexts`].
    pub const fn new() -> Self {
        CortexMContexts(())
    }
}

/// The priority byte of exception `n` (4 to 511): SHPR1-3 hold exceptions 4 to
/// 15 a byte each from [`SHPR_BASE`], the NVIC's IPR interrupts 0 and up
/// (exceptions 16 and up) from [`NVIC_IPR_BASE`]. Read as a word: ARMv6-M allows
/// only word accesses to these registers. Both blocks start on a word, so the
/// byte's place in its word is `n`'s low two bits either way: one address to
/// choose, and one read.
#[inline(always)]
fn priority_byte(n: usize) -> u8 {
    let addr = priority_word(n);
    // SAFETY: `addr` is a word of the System Control Block's SHPR or the NVIC's IPR
    // block, which every Cortex-M core maps at these fixed addresses (the
    // `cortex-m` feature is for Cortex-M targets only); `n` comes from IPSR, so it
    // names an exception that exists. Reading them has no side effect.
    let word = unsafe { ptr::read_volatile(addr as *const u32) };
    (word >> ((n & 3) * 8)) as u8
}

/// The address of the word that holds exception `n`'s priority byte (4 to 511),
/// the byte `n & 3` of it.
#[inline(always)]
const fn priority_word(n: usize) -> usize {
    let first = if n >= 16 {
        NVIC_IPR_BASE - 16
    } else {
        SHPR_BASE - 4
    };
    first + (n & !3)
}

// The byte of exception `n` is at SHPR_BASE + n - 4 (4 to 15) or NVIC_IPR_BASE +
// n - 16 (16 and up): checked where the module builds.
const _: () = {
    let mut n = 4;
    while n < 512 {
        let byte = if n < 16 {
            SHPR_BASE + n - 4
        } else {
            NVIC_IPR_BASE + n - 16
        };
        assert!(priority_word(n) == byte & !3 && byte & 3 == n & 3);
        n += 1;
    }
};

impl ContextSource for CortexMContexts {
    #[inline]
    fn current(&self) -> Context {
        let ipsr: u32;
        // SAFETY: reading IPSR has no side effect and touches no memory.
        unsafe { asm!("mrs {}, IPSR", out(reg) ipsr, options(nomem, nostack, preserves_flags)) };
        // `MRS` of IPSR gives the exception number in bits 8:0 and zeros above
        // (ARMv6-M and ARMv7-M; bits 31:9 are reserved, read as zero), so thread
        // mode is a test for zero with no mask to build first, and a number from
        // 4 is 511 at most.
        let exception = ipsr as usize;
        if exception == 0 {
            return Context::THREAD_MODE;
        }
        // Thread mode falls through; the handlers' path is laid out apart (a
        // taken branch there and one back, for the register it reads).
        cold_path();
        // Handlers of configurable priority (every interrupt, SVCall, PendSV,
        // SysTick): one test, then the register to read.
        if exception >= 4 {
            return Context::priority(priority_byte(exception));
        }
        // NMI and HardFault, rarer still: out of the handlers' way.
        cold_path();
        match exception {
            2 => Context::NMI,
            3 => Context::HARD_FAULT,
            // 1 (Reset) never runs as an exception; a context with no recorder.
            _ => Context::new(0x2ff),
        }
    }
}
