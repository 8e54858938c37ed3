//! UART0 of the LM3S6965 (a PL011): polled transmit, as an `embedded_io::Write` sink.
// The untraced build only enables the UART (the size baseline).
#![cfg_attr(not(feature = "link"), allow(dead_code))]

use core::ptr::{read_volatile, write_volatile};

const UART0: usize = 0x4000_C000;
const DR: usize = UART0;
const FR: usize = UART0 + 0x18;
const CTL: usize = UART0 + 0x30;
/// Flag register: transmit FIFO full.
const FR_TXFF: u32 = 1 << 5;
/// Control: UART enable, transmit enable.
const CTL_ENABLE_TX: u32 = (1 << 0) | (1 << 8);

/// The transmit side of UART0.
pub struct Uart0 {
    _private: (),
}

impl Uart0 {
    /// Enables the UART for transmission. Call once.
    pub fn take() -> Self {
        // SAFETY: UART0's control register at its documented address; this is the
        // only code that touches UART0.
        unsafe { write_volatile(CTL as *mut u32, CTL_ENABLE_TX) };
        Uart0 { _private: () }
    }

    /// Sends one byte, waiting while the transmit FIFO is full.
    #[inline]
    pub fn put(&mut self, byte: u8) {
        // SAFETY: reads UART0's flag register and writes its data register, both at
        // their documented addresses; `&mut self` makes this the only writer.
        unsafe {
            while read_volatile(FR as *const u32) & FR_TXFF != 0 {}
            write_volatile(DR as *mut u32, u32::from(byte));
        }
    }
}

#[cfg(feature = "link")]
impl embedded_io::ErrorType for Uart0 {
    type Error = core::convert::Infallible;
}

#[cfg(feature = "link")]
impl embedded_io::Write for Uart0 {
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
