//! The PL011 UART of QEMU `virt` at 0x0900_0000: polled transmit, as an
//! `embedded_io::Write` sink.

use core::ptr::{read_volatile, write_volatile};

const BASE: usize = 0x0900_0000;
const DR: usize = BASE;
const FR: usize = BASE + 0x18;
/// Flag register: transmit FIFO full.
const FR_TXFF: u32 = 1 << 5;

/// The UART's transmit side.
pub struct Uart {
    _private: (),
}

impl Uart {
    /// The UART. Call once: this is its only writer.
    pub fn take() -> Self {
        Uart { _private: () }
    }

    fn put(&mut self, byte: u8) {
        // SAFETY: the PL011's flag and data registers at their documented
        // addresses; `&mut self` makes this the only writer.
        unsafe {
            while read_volatile(FR as *const u32) & FR_TXFF != 0 {}
            write_volatile(DR as *mut u32, u32::from(byte));
        }
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
