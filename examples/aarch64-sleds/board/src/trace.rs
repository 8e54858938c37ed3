//! The recording behind the sleds: one streaming ring in static memory, filled by
//! the sled handler, flushed over the UART as link frames by the main loop.
//!
//! Two owners, two statics: the handler alone uses the recorder (the trampolines
//! never re-enter it), the main loop alone the consumer and the link, so neither
//! ever holds a reference to the other's state. This crate is built without
//! instrumentation, so flushing records nothing.

use core::ptr::addr_of_mut;

use flightrec_core::clock::Timestamp;
use flightrec_core::fdr::ring::{Consumer, Policy, Recorder, RecorderConfig, Ring, Slot};
use flightrec_core::fdr::writer::WriterConfig;
use flightrec_core::fdr::FunctionId;
use flightrec_core::link::{LinkWriter, Source};
use flightrec_sleds_aarch64::{MapError, PatchError, SledMap};

use crate::uart::Uart;

/// Link source (and FDR thread) id of the one core.
pub const SOURCE: u32 = 1;
const BUFFERS: usize = 16;
const BUFFER_SIZE: usize = 4096;

static mut STORAGE: [u8; BUFFERS * BUFFER_SIZE] = [0; BUFFERS * BUFFER_SIZE];
static SLOTS: [Slot; BUFFERS] = [Slot::NEW; BUFFERS];
static mut RING: Option<Ring<'static>> = None;
/// Used by the sled handler only.
static mut RECORDER: Option<Recorder<'static, 'static>> = None;
/// Used by the main loop only.
static mut FLUSHER: Option<Flusher> = None;

struct Flusher {
    consumer: Consumer<'static, 'static>,
    source: Source,
    link: LinkWriter<Uart>,
}

/// Why tracing could not start; the firmware exits with [`Error::code`].
#[derive(Clone, Copy, Debug)]
pub enum Error {
    /// The ring's storage was refused.
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
/// Returns how many sleds were patched. Call once, first thing.
pub fn start() -> Result<usize, Error> {
    let config = RecorderConfig::new(
        WriterConfig::new(SOURCE).with_pid(1),
        crate::ticks_per_second(),
    );
    // SAFETY: `start` runs once, before anything else uses these statics; the
    // references made here are the only ones ever made to them.
    let ring = unsafe {
        let storage = &mut *addr_of_mut!(STORAGE);
        let ring = Ring::new(storage, &SLOTS, Policy::Streaming).map_err(|_| Error::Ring)?;
        (*addr_of_mut!(RING)).insert(ring)
    };
    let source = Source::new(SOURCE, config.file_header(ring.buffer_size()));
    let (recorder, consumer) = ring.split(config);
    // SAFETY: as above; the handler is not installed yet.
    unsafe {
        *addr_of_mut!(RECORDER) = Some(recorder);
        *addr_of_mut!(FLUSHER) = Some(Flusher {
            consumer,
            source,
            link: LinkWriter::new(Uart::take()),
        });
    }
    // SAFETY: the linker script bounds the section with these symbols.
    let map = unsafe { flightrec_sleds_aarch64::map_from_linker() }.map_err(Error::Map)?;
    flightrec_sleds_aarch64::set_handler(Some(on_sled));
    // SAFETY: this program's own map; the MMU is off, so code is writable; one core.
    unsafe { flightrec_sleds_aarch64::patch(&map) }.map_err(Error::Patch)
}

/// The sled handler: one record per sled.
extern "C" fn on_sled(id: u32, kind: u32) {
    // SAFETY: only this handler uses RECORDER after `start`, and the trampolines
    // never re-enter it.
    let Some(rec) = (unsafe { (*addr_of_mut!(RECORDER)).as_mut() }) else {
        return;
    };
    let Ok(f) = FunctionId::new(id) else {
        return;
    };
    let ts = Timestamp {
        tsc: crate::ticks(),
        cpu: 0,
    };
    let _ = match kind {
        0 => rec.enter(f, ts),
        1 => rec.exit(f, ts),
        2 => rec.tail_exit(f, ts),
        _ => Ok(()),
    };
}

/// Sends every buffer the recorder has finished: the main loop's flush step.
pub fn flush_ready() {
    // SAFETY: only the main loop uses FLUSHER after `start`.
    if let Some(f) = unsafe { (*addr_of_mut!(FLUSHER)).as_mut() } {
        while matches!(f.link.flush_one(&mut f.source, &mut f.consumer), Ok(true)) {}
    }
}

/// At the end: restores the sleds, hands over the current buffer, drains the ring
/// and sends the final counters.
pub fn finish() {
    if let Ok(map) = unsafe { flightrec_sleds_aarch64::map_from_linker() } {
        // SAFETY: as in `start`.
        unsafe { flightrec_sleds_aarch64::unpatch(&map) };
    }
    flightrec_sleds_aarch64::set_handler(None);
    // SAFETY: the handler is gone and the sleds unpatched: nothing else uses it now.
    if let Some(rec) = unsafe { (*addr_of_mut!(RECORDER)).as_mut() } {
        rec.flush();
    }
    flush_ready();
    // SAFETY: only the main loop uses FLUSHER.
    if let Some(f) = unsafe { (*addr_of_mut!(FLUSHER)).as_mut() } {
        let _ = f.link.send_source_status(&mut f.source, &f.consumer);
    }
}
