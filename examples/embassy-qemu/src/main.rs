//! An embassy application traced by `flightrec-embassy`, under QEMU
//! (lm3s6965evb, a Cortex-M3): a thread-mode executor with a periodic ticker, a
//! producer and a consumer over a channel, a task that blocks its executor for
//! 3 ms at a time, and a short task that ends and is spawned again; an
//! interrupt executor with one task the ticker signals. Time from SysTick.
//!
//! The application counts each task's polls, spawns and ends itself and prints
//! the counts on semihosting's stderr, for CI to compare with the trace
//! (`flightrec tasks`); the UART carries the trace.

#![no_std]
#![no_main]

mod driver;
#[cfg(feature = "link")]
mod trace;
mod uart;

use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicU32, Ordering};
use core::task::{Context, Poll};

use cortex_m::peripheral::{Peripherals, NVIC};
use cortex_m_rt::entry;
use cortex_m_semihosting::debug::{exit, EXIT_FAILURE, EXIT_SUCCESS};
use cortex_m_semihosting::heprintln;
use embassy_executor::{raw, InterruptExecutor, Spawner};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::channel::Channel;
use embassy_sync::signal::Signal;
use embassy_time::Timer;
use lm3s6965::{interrupt, Interrupt};
use static_cell::StaticCell;

/// Ticks of the ticker, 2 ms apart.
const TICKS: u32 = 100;
/// The ticker spawns `blink` on every `BLINK_EVERY`th tick.
const BLINK_EVERY: u32 = 10;
/// Messages from the producer to the consumer.
const MESSAGES: u32 = 64;
/// Times the hog blocks its executor, for `HOG_MS` ms each.
const HOGS: u32 = 5;
const HOG_MS: u32 = 3;

/// One task's own counts: polls (each poll of the task's future), spawns, ends.
struct Counts {
    name: &'static str,
    polls: AtomicU32,
    spawns: AtomicU32,
    ends: AtomicU32,
}

impl Counts {
    const fn new(name: &'static str) -> Self {
        Counts {
            name,
            polls: AtomicU32::new(0),
            spawns: AtomicU32::new(0),
            ends: AtomicU32::new(0),
        }
    }

    /// A load and a store: each task's counts are written by its own executor's
    /// context only (thread mode or the interrupt executor's).
    fn add(counter: &AtomicU32) {
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

static TICKER: Counts = Counts::new("ticker");
static PRODUCER: Counts = Counts::new("producer");
static CONSUMER: Counts = Counts::new("consumer");
static HOG: Counts = Counts::new("hog");
static BLINK: Counts = Counts::new("blink");
static FAST: Counts = Counts::new("fast");
static ALL: [&Counts; 6] = [&TICKER, &PRODUCER, &CONSUMER, &HOG, &BLINK, &FAST];

/// A task's body, counting its polls: the task's future polls it once per poll.
struct Counted<F> {
    counts: &'static Counts,
    inner: F,
}

impl<F: Future<Output = ()>> Future for Counted<F> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `inner` is structurally pinned: never moved out of `self`.
        let this = unsafe { self.get_unchecked_mut() };
        Counts::add(&this.counts.polls);
        // SAFETY: as above.
        let done = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        if done.is_ready() {
            Counts::add(&this.counts.ends);
        }
        done
    }
}

fn counted<F: Future<Output = ()>>(counts: &'static Counts, inner: F) -> Counted<F> {
    Counted { counts, inner }
}

static CHANNEL: Channel<CriticalSectionRawMutex, u32, 4> = Channel::new();
static TICK_SIGNAL: Signal<CriticalSectionRawMutex, u32> = Signal::new();
/// Tasks (of the five that end) that have ended: the main loop stops at five.
static DONE: AtomicU32 = AtomicU32::new(0);
static CHECKSUM: AtomicU32 = AtomicU32::new(0);

fn done() {
    cortex_m::interrupt::free(|_| DONE.store(DONE.load(Ordering::Relaxed) + 1, Ordering::Relaxed));
}

/// Work done inside a poll: an instrumented call nests under the task's slice.
#[cfg_attr(feature = "link", flightrec::instrument)]
fn crunch(x: u32) -> u32 {
    (0..8).fold(x, |h, i| (h ^ i).wrapping_mul(0x0100_0193))
}

#[embassy_executor::task]
async fn ticker(spawner: Spawner) {
    counted(&TICKER, async move {
        for i in 1..=TICKS {
            Timer::after_millis(2).await;
            TICK_SIGNAL.signal(i);
            if i % BLINK_EVERY == 0 {
                match blink() {
                    Ok(token) => {
                        Counts::add(&BLINK.spawns);
                        spawner.spawn(token);
                    }
                    Err(_) => fail("blink still running"),
                }
            }
        }
        done();
    })
    .await
}

#[embassy_executor::task]
async fn blink() {
    counted(&BLINK, Timer::after_millis(1)).await
}

#[embassy_executor::task]
async fn producer() {
    counted(&PRODUCER, async {
        for i in 0..MESSAGES {
            CHANNEL.send(i).await;
            if i % 8 == 7 {
                Timer::after_millis(1).await;
            }
        }
        done();
    })
    .await
}

#[embassy_executor::task]
async fn consumer() {
    counted(&CONSUMER, async {
        let mut sum = 0u32;
        for _ in 0..MESSAGES {
            sum = sum.wrapping_add(crunch(CHANNEL.receive().await));
        }
        CHECKSUM.store(sum, Ordering::Relaxed);
        done();
    })
    .await
}

/// Blocks its executor: busy for `HOG_MS` ms in one poll, `HOGS` times.
#[embassy_executor::task]
async fn hog() {
    counted(&HOG, async {
        for _ in 0..HOGS {
            Timer::after_millis(20).await;
            let until = driver::now() + HOG_MS;
            while driver::now() < until {
                core::hint::spin_loop();
            }
        }
        done();
    })
    .await
}

/// On the interrupt executor: waits for the ticker's signal.
#[embassy_executor::task]
async fn fast() {
    counted(&FAST, async {
        while TICK_SIGNAL.wait().await < TICKS {}
        done();
    })
    .await
}

fn fail(why: &str) -> ! {
    heprintln!("embassy-qemu: {}", why);
    exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

static EXECUTOR_FAST: InterruptExecutor = InterruptExecutor::new();
/// The thread-mode executor (its `static` names it in the trace).
static EXECUTOR: StaticCell<raw::Executor> = StaticCell::new();

#[interrupt]
fn GPIOA() {
    // SAFETY: the interrupt that `EXECUTOR_FAST` was started on.
    unsafe { EXECUTOR_FAST.on_interrupt() }
}

/// The interrupt executor's priority (three bits on the LM3S6965): below SysTick's 0.
const FAST_PRIORITY: u8 = 0x20;

/// Spawns a task, counting it.
fn spawn<S>(
    spawner: Spawner,
    counts: &Counts,
    token: Result<embassy_executor::SpawnToken<S>, embassy_executor::SpawnError>,
) {
    match token {
        Ok(token) => {
            Counts::add(&counts.spawns);
            spawner.spawn(token);
        }
        Err(_) => fail("spawn"),
    }
}

#[entry]
fn main() -> ! {
    let Some(mut p) = Peripherals::take() else {
        fail("peripherals taken");
    };
    let uart = uart::Uart0::take();
    #[cfg(feature = "link")]
    let mut link = flightrec_core::link::LinkWriter::new(uart);
    #[cfg(feature = "link")]
    let mut rings = trace::start(FAST_PRIORITY);
    #[cfg(not(feature = "link"))]
    let _ = uart;

    // SAFETY: no priority-based critical section depends on GPIOA's priority yet.
    unsafe { p.NVIC.set_priority(Interrupt::GPIOA, FAST_PRIORITY) };
    let fast_spawner = EXECUTOR_FAST.start(Interrupt::GPIOA);
    match fast() {
        Ok(token) => {
            Counts::add(&FAST.spawns);
            fast_spawner.spawn(token);
        }
        Err(_) => fail("spawn fast"),
    }

    // The thread-mode executor, polled by this loop (embassy's pender for thread
    // mode is a `sev`), so that the trace is flushed between its passes.
    let executor: &'static raw::Executor = EXECUTOR.init(raw::Executor::new(usize::MAX as *mut ()));
    let spawner = executor.spawner();
    spawn(spawner, &TICKER, ticker(spawner));
    spawn(spawner, &PRODUCER, producer());
    spawn(spawner, &CONSUMER, consumer());
    spawn(spawner, &HOG, hog());
    driver::start(&mut p.SYST);

    while DONE.load(Ordering::Relaxed) < 5
        || BLINK.ends.load(Ordering::Relaxed) < TICKS / BLINK_EVERY
    {
        // SAFETY: polled from thread mode only, the context it was made in.
        unsafe { executor.poll() };
        #[cfg(feature = "link")]
        trace::flush(&mut link, &mut rings);
        cortex_m::asm::wfe();
    }
    // Stop SysTick and the interrupt executor before the last records go out.
    p.SYST.disable_interrupt();
    NVIC::mask(Interrupt::GPIOA);
    #[cfg(feature = "link")]
    trace::finish(&mut link, &mut rings);

    for c in ALL {
        heprintln!(
            "task {} polls={} spawns={} ends={}",
            c.name,
            c.polls.load(Ordering::Relaxed),
            c.spawns.load(Ordering::Relaxed),
            c.ends.load(Ordering::Relaxed)
        );
    }
    heprintln!("checksum {}", CHECKSUM.load(Ordering::Relaxed));
    exit(EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    fail("panic")
}
