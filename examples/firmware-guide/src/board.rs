//! Board support for the nRF51822 of the BBC micro:bit, as QEMU's `microbit`
//! machine models it: the interrupt vectors (what a PAC such as `nrf51-pac`
//! provides), UART0 as an `embedded_io::Write` sink, TIMER1 as a free-running
//! 16-bit counter at 1 MHz (the trace clock).
//! None of it is tracing code: the register accesses live here, behind safe
//! functions, so that `trace.rs` and `main.rs` need no `unsafe`.

use core::ptr::{read_volatile, write_volatile};

/// The nRF51's interrupts (IRQ numbers of the reference manual; 5 is reserved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms, dead_code)]
#[repr(u16)]
pub enum Interrupt {
    POWER_CLOCK = 0,
    RADIO = 1,
    UART0 = 2,
    SPI0_TWI0 = 3,
    SPI1_TWI1 = 4,
    GPIOTE = 6,
    ADC = 7,
    TIMER0 = 8,
    TIMER1 = 9,
    TIMER2 = 10,
    RTC0 = 11,
    TEMP = 12,
    RNG = 13,
    ECB = 14,
    CCM_AAR = 15,
    WDT = 16,
    RTC1 = 17,
    QDEC = 18,
    LPCOMP = 19,
    SWI0 = 20,
    SWI1 = 21,
    SWI2 = 22,
    SWI3 = 23,
    SWI4 = 24,
    SWI5 = 25,
}

// SAFETY: `number` returns the variant's IRQ number, an interrupt the nRF51 has
// (below its 26 vectors), as the trait requires.
unsafe impl cortex_m::interrupt::InterruptNumber for Interrupt {
    #[inline]
    fn number(self) -> u16 {
        self as u16
    }
}

extern "C" {
    fn POWER_CLOCK();
    fn RADIO();
    fn UART0();
    fn SPI0_TWI0();
    fn SPI1_TWI1();
    fn GPIOTE();
    fn ADC();
    fn TIMER0();
    fn TIMER1();
    fn TIMER2();
    fn RTC0();
    fn TEMP();
    fn RNG();
    fn ECB();
    fn CCM_AAR();
    fn WDT();
    fn RTC1();
    fn QDEC();
    fn LPCOMP();
    fn SWI0();
    fn SWI1();
    fn SWI2();
    fn SWI3();
    fn SWI4();
    fn SWI5();
}

/// An entry of the interrupt vector table: a handler or a reserved word.
#[doc(hidden)]
pub union Vector {
    handler: unsafe extern "C" fn(),
    reserved: u32,
}

/// The device part of the vector table, after cortex-m-rt's exceptions; every
/// handler the firmware does not define is `DefaultHandler` (`device.x`).
#[doc(hidden)]
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
pub static __INTERRUPTS: [Vector; 26] = [
    Vector {
        handler: POWER_CLOCK,
    },
    Vector { handler: RADIO },
    Vector { handler: UART0 },
    Vector { handler: SPI0_TWI0 },
    Vector { handler: SPI1_TWI1 },
    Vector { reserved: 0 },
    Vector { handler: GPIOTE },
    Vector { handler: ADC },
    Vector { handler: TIMER0 },
    Vector { handler: TIMER1 },
    Vector { handler: TIMER2 },
    Vector { handler: RTC0 },
    Vector { handler: TEMP },
    Vector { handler: RNG },
    Vector { handler: ECB },
    Vector { handler: CCM_AAR },
    Vector { handler: WDT },
    Vector { handler: RTC1 },
    Vector { handler: QDEC },
    Vector { handler: LPCOMP },
    Vector { handler: SWI0 },
    Vector { handler: SWI1 },
    Vector { handler: SWI2 },
    Vector { handler: SWI3 },
    Vector { handler: SWI4 },
    Vector { handler: SWI5 },
];

/// Writes `value` to the peripheral register at `addr`.
///
/// Private: every caller passes one of the register addresses below.
#[inline(always)]
fn write(addr: usize, value: u32) {
    // SAFETY: `addr` is a word-aligned register of UART0, TIMER0 or TIMER1 at the
    // address the nRF51 reference manual gives (the constants below, the only
    // values passed); writing it has no effect on memory Rust owns.
    unsafe { write_volatile(addr as *mut u32, value) }
}

/// Reads the peripheral register at `addr` (one of the addresses below).
#[inline(always)]
fn read(addr: usize) -> u32 {
    // SAFETY: as in `write`: a register of the nRF51 at its documented address.
    unsafe { read_volatile(addr as *const u32) }
}

// TIMER registers (offsets from a timer's base).
const TASKS_START: usize = 0x000;
const TASKS_STOP: usize = 0x004;
const TASKS_CLEAR: usize = 0x00C;
const TASKS_CAPTURE0: usize = 0x040;
const SHORTS: usize = 0x200;
const MODE: usize = 0x504;
const BITMODE: usize = 0x508;
const PRESCALER: usize = 0x510;
const CC0: usize = 0x540;
/// PRESCALER 4: the 16 MHz timer clock divided by 2^4.
const PRESCALE_1MHZ: u32 = 4;

const TIMER1_BASE: usize = 0x4000_9000;

/// Starts TIMER1 counting at 1 MHz, free-running over 16 bits (it wraps every
/// 65.5 ms; the main loop's records read the clock far more often than the
/// half period `TimerClock` needs).
pub fn start_clock() {
    let t = TIMER1_BASE;
    write(t + TASKS_STOP, 1);
    write(t + MODE, 0); // timer, not counter
    write(t + BITMODE, 0); // 16 bits
    write(t + PRESCALER, PRESCALE_1MHZ);
    write(t + SHORTS, 0);
    write(t + TASKS_CLEAR, 1);
    write(t + TASKS_START, 1);
}

/// TIMER1's count now: captured into CC[0], then read. Safe from every context
/// at once: a context that preempts between another's capture and its read
/// captures again, so the preempted read returns a count taken while it was
/// running (after its own capture, before its read), which is a right reading
/// of that moment.
pub fn clock_now() -> u32 {
    write(TIMER1_BASE + TASKS_CAPTURE0, 1);
    read(TIMER1_BASE + CC0)
}

// UART0 registers.
const UART0_BASE: usize = 0x4000_2000;
const UART_STARTTX: usize = UART0_BASE + 0x008;
const UART_TXDRDY: usize = UART0_BASE + 0x11C;
const UART_ENABLE: usize = UART0_BASE + 0x500;
const UART_PSELTXD: usize = UART0_BASE + 0x50C;
const UART_TXD: usize = UART0_BASE + 0x51C;
const UART_BAUDRATE: usize = UART0_BASE + 0x524;
/// ENABLE: the UART on.
const UART_ENABLED: u32 = 4;
/// The micro:bit's TX pin to the interface chip (P0.24).
const TX_PIN: u32 = 24;
/// BAUDRATE: 115 200 baud (QEMU's model sends at the emulator's speed).
const BAUD_115200: u32 = 0x01D7_E000;

/// The transmit side of UART0, polled.
pub struct Uart {
    _private: (),
}

impl Uart {
    /// Enables UART0 for transmission. Call once.
    pub fn take() -> Self {
        write(UART_PSELTXD, TX_PIN);
        write(UART_BAUDRATE, BAUD_115200);
        write(UART_ENABLE, UART_ENABLED);
        write(UART_STARTTX, 1);
        Uart { _private: () }
    }

    /// Sends one byte and waits until it is out.
    #[inline]
    pub fn put(&mut self, byte: u8) {
        write(UART_TXD, u32::from(byte));
        while read(UART_TXDRDY) == 0 {}
        write(UART_TXDRDY, 0);
    }
}

impl embedded_io::ErrorType for Uart {
    type Error = core::convert::Infallible;
}

impl embedded_io::Write for Uart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        for &b in buf {
            self.put(b);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
