//! `#[flightrec::instrument]` on `#![no_std]` firmware: sixteen small functions,
//! a method, an `async fn`, a scope and a cortex-m-rt exception handler with a
//! `static mut` resource, recorded through a global recorder that counts.
//!
//! `.ci/steps/firmware-instrument.sh` builds it for thumbv6m-none-eabi and
//! thumbv7em-none-eabihf, checks the `.flightrec` section of the ELF with
//! `flightrec names --elf`, and measures the flash per instrumented function
//! (with and without the `instrument` feature, llvm-size).
#![no_std]
#![no_main]

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m_rt::{entry, exception};
use flightrec::core::fdr::{FunctionAction, FunctionId};
use flightrec::core::global::GlobalRecorder;

/// Counts entries and exits, and keeps the last id (loads and stores only: the
/// M0 has no read-modify-write atomics; each context here records alone).
struct Counter {
    enters: AtomicU32,
    exits: AtomicU32,
    last: AtomicU32,
}

impl GlobalRecorder for Counter {
    fn record_function(&'static self, action: FunctionAction, id: FunctionId) {
        let n = if action == FunctionAction::Enter {
            &self.enters
        } else {
            &self.exits
        };
        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.last.store(id.get(), Ordering::Relaxed);
    }
}

static TRACE: Counter = Counter {
    enters: AtomicU32::new(0),
    exits: AtomicU32::new(0),
    last: AtomicU32::new(0),
};
flightrec::core::global_recorder!(TRACE);

/// Sixteen functions (different, so that none are folded into one), instrumented
/// with the `instrument` feature.
macro_rules! functions {
    ($($name:ident = $k:literal),*) => {
        $(
            #[cfg_attr(feature = "instrument", flightrec::instrument)]
            #[inline(never)]
            fn $name(x: u32) -> u32 {
                black_box(x).wrapping_mul(2_654_435_761).rotate_left($k)
            }
        )*
        fn all(x: u32) -> u32 {
            let mut acc = x;
            $( acc = acc.wrapping_add($name(acc)); )*
            acc
        }
    };
}
functions!(
    f0 = 1,
    f1 = 2,
    f2 = 3,
    f3 = 4,
    f4 = 5,
    f5 = 6,
    f6 = 7,
    f7 = 8,
    f8 = 9,
    f9 = 10,
    f10 = 11,
    f11 = 12,
    f12 = 13,
    f13 = 14,
    f14 = 15,
    f15 = 16
);

struct Filter {
    state: u32,
}

impl Filter {
    #[flightrec::instrument]
    fn step(&mut self, x: u32) -> Option<u32> {
        if x == 0 {
            return None;
        }
        self.state = (self.state * 7 + x) / 8;
        Some(self.state)
    }
}

#[flightrec::instrument]
fn checked(x: u32) -> Option<u32> {
    let mut f = Filter { state: 0 };
    let v = f.step(x)?;
    Some(v + 1)
}

#[flightrec::instrument]
async fn sample(x: u32) -> u32 {
    x + 1
}

/// Polls a future that is ready at once (no executor on this firmware).
fn poll_once<F: core::future::Future>(f: F) -> Option<F::Output> {
    use core::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(core::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: the vtable's functions do nothing and never read the data pointer.
    let waker = unsafe { Waker::from_raw(RawWaker::new(core::ptr::null(), &VTABLE)) };
    let mut cx = Context::from_waker(&waker);
    let mut f = core::pin::pin!(f);
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

#[entry]
fn main() -> ! {
    let mut acc = all(1);
    acc = acc.wrapping_add(checked(black_box(3)).unwrap_or(0));
    acc = acc.wrapping_add(checked(black_box(0)).unwrap_or(0));
    acc = acc.wrapping_add(poll_once(sample(black_box(4))).unwrap_or(0));
    {
        let _s = flightrec::scope!("tail");
        acc = black_box(acc);
    }
    // The baseline build links the recorder too.
    flightrec::core::global::record_function(FunctionAction::Enter, FunctionId::new(1).unwrap());
    black_box((
        acc,
        TRACE.enters.load(Ordering::Relaxed),
        TRACE.exits.load(Ordering::Relaxed),
    ));
    loop {
        cortex_m::asm::wfi();
    }
}

#[flightrec::instrument]
#[exception]
fn SysTick() {
    // cortex-m-rt turns this into a `&mut` (it must stay the handler's first item).
    static mut TICKS: u32 = 0;
    *TICKS += 1;
    black_box(*TICKS);
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}
