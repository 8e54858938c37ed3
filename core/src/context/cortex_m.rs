//! The Cortex-M context source: thread mode, or the priority of the exception
//! that is running (read from IPSR and the exception's priority register, as SEGGER
//! SystemView does).
//!
//! Built with the `cortex-m` feature on `target_arch = "arm"`, `target_os = "none"`
//! only; the firmware examples run it under QEMU.

use core::arch::asm;
use core::ptr;

use super::{Context, ContextSource};

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

/// The priority byte of exception `n` (4 and up) in the register block at `base`
/// (exception or interrupt 0 of the block at `base`), read as a word: ARMv6-M
/// allows only word accesses to these registers.
#[inline(always)]
fn priority_byte(base: usize, n: usize) -> u8 {
    let addr = base + (n & !3);
    // SAFETY: `addr` is a word of the System Control Block's SHPR or the NVIC's IPR
    // block, which every Cortex-M core maps at these fixed addresses (the
    // `cortex-m` feature is for Cortex-M targets only); `n` comes from IPSR, so it
    // names an exception that exists. Reading them has no side effect.
    let word = unsafe { ptr::read_volatile(addr as *const u32) };
    (word >> ((n & 3) * 8)) as u8
}

impl ContextSource for CortexMContexts {
    #[inline]
    fn current(&self) -> Context {
        let ipsr: u32;
        // SAFETY: reading IPSR has no side effect and touches no memory.
        unsafe { asm!("mrs {}, IPSR", out(reg) ipsr, options(nomem, nostack, preserves_flags)) };
        // `MRS` of IPSR gives the exception number in bits 8:0 and zeros above
        // (ARMv6-M and ARMv7-M), so thread mode is a test for zero, with no mask
        // to build first; the last arm keeps any other value off the registers.
        let exception = ipsr as usize;
        match exception {
            0 => Context::THREAD_MODE,
            2 => Context::NMI,
            3 => Context::HARD_FAULT,
            4..=15 => Context::priority(priority_byte(SHPR_BASE, exception - 4)),
            16..=511 => Context::priority(priority_byte(NVIC_IPR_BASE, exception - 16)),
            // 1 (Reset) never runs as an exception; a context with no recorder.
            _ => Context::new(0x2ff),
        }
    }
}
