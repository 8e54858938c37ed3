//! Statics that firmware declares start as zero bytes, so the linker puts them in
//! `.bss` (zeroed at boot) rather than `.data` (copied from flash at boot, which
//! for a ring means KiBs of flash). Checked here on the host's own ELF: the
//! statics' addresses lie between the linker's `__bss_start` and `_end`. The
//! Cortex-M builds are checked the same way by `.ci/steps/cortex-m-cost.sh`.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use core::ptr::addr_of;

use flightrec_core::clock::TimerClock;
use flightrec_core::context::{Context, ContextRecorders};
use flightrec_core::fdr::ring::Policy;
use flightrec_core::fdr::static_ring::{FlightRecorder, StaticRing};

extern "C" {
    // Defined by the GNU and LLVM linkers' default scripts for Linux executables.
    static __bss_start: u8;
    static _end: u8;
}

/// Whether `len` bytes at `p` lie in the executable's `.bss`.
fn in_bss<T>(p: *const T) -> bool {
    // Only the addresses of the linker's symbols are taken, never their bytes.
    let (start, end) = (addr_of!(__bss_start) as usize, addr_of!(_end) as usize);
    let (a, len) = (p as usize, core::mem::size_of::<T>());
    start <= a && a + len <= end
}

static STREAMING: StaticRing<4, 1024> = StaticRing::new(Policy::Streaming);
static CRASH: StaticRing<4, 1024, FlightRecorder> = StaticRing::new(Policy::FlightRecorder);
/// Something that must be in `.data`, so that the check can fail.
static NOT_ZERO: [u8; 64] = [1; 64];

fn read_timer() -> u32 {
    7
}
static CLOCK: TimerClock = TimerClock::new(read_timer, 32, 1_000_000);
flightrec_core::static_clock!(Time = CLOCK);
/// The source as a zero-sized type too (a `fn()` pointer would not be zero).
#[derive(Clone, Copy)]
struct ThreadMode;
impl flightrec_core::context::ContextSource for ThreadMode {
    fn current(&self) -> Context {
        Context::THREAD_MODE
    }
}
static TRACE: ContextRecorders<2, ThreadMode, Time> = ContextRecorders::new(ThreadMode, Time);
/// The same with `&CLOCK`: a pointer, so it is in `.data`.
static TRACE_BY_REF: ContextRecorders<2, ThreadMode, &TimerClock> =
    ContextRecorders::new(ThreadMode, &CLOCK);

#[test]
fn static_rings_of_both_policies_are_in_bss() {
    assert!(in_bss(addr_of!(STREAMING)));
    assert!(in_bss(addr_of!(CRASH)));
    assert!(!in_bss(addr_of!(NOT_ZERO)));
    assert_eq!(CRASH.policy(), Policy::FlightRecorder);
}

#[test]
fn context_recorders_with_a_clock_handle_are_in_bss() {
    assert!(in_bss(addr_of!(TRACE)));
    assert!(!in_bss(addr_of!(TRACE_BY_REF)));
    assert_eq!(TRACE.capacity(), TRACE_BY_REF.capacity());
}
