//! The recording behind the sleds: one streaming ring in static memory, filled by
//! the sled handler, flushed over the UART as link frames by the main loop.
//!
//! Two owners, two statics: the handler alone uses the recorder (the trampolines
//! never re-enter it), the main loop alone the consumer and the link, so neither
//! ever holds a reference to the other's state. This crate is built without
//! instrumentation, so flushing records nothing.

use core::num::NonZeroU64;

use flightrec_core::clock::{Clock, Timestamp};
use flightrec_core::context::{Context, ContextRecorders};
use flightrec_core::fdr::ring::{Policy, RecorderConfig};
use flightrec_core::fdr::static_ring::StaticRing;
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::{FunctionAction, FunctionId};
use flightrec_core::link::{LinkWriter, Outlet, Source};
use flightrec_sleds_aarch64::{MapError, PatchError};

use crate::uart::Uart;

/// Link source (and FDR thread id) of the one core.
pub const SOURCE: u32 = 1;
const BUFFERS: usize = 16;
const BUFFER_SIZE: usize = 4096;

/// The one core's ring: its recorder goes to `TRACE`, its consumer to the
/// [`Flusher`] that `start` returns.
static RING: StaticRing<BUFFERS, BUFFER_SIZE> = StaticRing::new(Policy::Streaming);
/// The sled handler's recorder: one context, the one core (the trampolines never
/// re-enter the handler).
static TRACE: ContextRecorders<1, fn() -> Context, Counter> =
    ContextRecorders::new(one_core, Counter);

/// The one context that records.
fn one_core() -> Context {
    Context::THREAD_MODE
}

/// The generic timer's virtual count (`CNTVCT_EL0`) as a clock.
#[derive(Clone, Copy)]
struct Counter;

impl Clock for Counter {
    fn now(&mut self) -> Timestamp {
        Timestamp {
            tsc: crate::ticks(),
            cpu: 0,
        }
    }

    fn ticks_per_second(&self) -> NonZeroU64 {
        NonZeroU64::new(crate::ticks_per_second()).unwrap_or(NonZeroU64::MIN)
    }
}

/// The main loop's half: the ring's outlet (source and consumer) and the link.
pub struct Flusher {
    outlet: Outlet<'static, 'static>,
    link: LinkWriter<Uart>,
}

/// Why tracing could not start; the firmware exits with [`Error::code`].
#[derive(Clone, Copy, Debug)]
pub enum Error {
    /// The ring was taken before, or its recorder not installed.
    Ring,
    /// The sled map is missing or not understood.
    Map(MapError),
    /// A sled could not be patched.
    Patch(PatchError),
}

impl Error {
    /// The exit status that says which.
    pub fn code(&self) -> u32 {
        match self {
            Error::Ring => 2,
            Error::Map(_) => 3,
            Error::Patch(_) => 4,
        }
    }
}

/// Sets up the ring and the link, installs the handler and patches every sled.
/// Returns how many sleds were patched and the main loop's [`Flusher`]. Call
/// once, first thing.
pub fn start() -> Result<(usize, Flusher), Error> {
    let config = RecorderConfig::new(
        WriterConfig::new(SOURCE).with_pid(1),
        crate::ticks_per_second(),
    );
    let (recorder, consumer) = RING.split(config).map_err(|_| Error::Ring)?;
    TRACE
        .install(one_core(), recorder)
        .map_err(|_| Error::Ring)?;
    let source = Source::new(SOURCE, config.file_header(RING.buffer_size()));
    let flusher = Flusher {
        outlet: Outlet::new(source, consumer),
        link: LinkWriter::new(Uart::take()),
    };
    // SAFETY: the linker script bounds the section with these symbols.
    let map = unsafe { flightrec_sleds_aarch64::map_from_linker() }.map_err(Error::Map)?;
    flightrec_sleds_aarch64::set_handler(Some(on_sled));
    // SAFETY: this program's own map; the MMU is off, so code is writable; one core.
    let patched = unsafe { flightrec_sleds_aarch64::patch(&map) }.map_err(Error::Patch)?;
    Ok((patched, flusher))
}

/// The sled handler: one record per sled.
extern "C" fn on_sled(id: u32, kind: u32) {
    let Ok(f) = FunctionId::new(id) else {
        return;
    };
    let action = match kind {
        0 => FunctionAction::Enter,
        1 => FunctionAction::Exit,
        2 => FunctionAction::TailExit,
        _ => return,
    };
    // A record that is lost is counted, and marked in the trace.
    let _ = TRACE.record_in(one_core(), action, f);
}

impl Flusher {
    /// Sends every buffer the recorder has finished: the main loop's flush step.
    pub fn flush_ready(&mut self) {
        let Outlet { source, consumer } = &mut self.outlet;
        while matches!(self.link.flush_one(source, consumer), Ok(true)) {}
    }

    /// At the end: restores the sleds, hands over the current buffer, drains the
    /// ring and sends the final counters.
    pub fn finish(mut self) {
        // SAFETY: the linker script bounds the section with these symbols.
        if let Ok(map) = unsafe { flightrec_sleds_aarch64::map_from_linker() } {
            // SAFETY: as in `start`.
            unsafe { flightrec_sleds_aarch64::unpatch(&map) };
        }
        flightrec_sleds_aarch64::set_handler(None);
        // The recorder's current buffer, every buffer, then the final counters.
        let _ = self
            .link
            .finish(core::slice::from_mut(&mut self.outlet), || {
                TRACE.flush_all()
            });
    }
}
