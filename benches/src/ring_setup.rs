//! The ring geometry every FDR subject of the comparison and of the instruction
//! counts uses, so that compiler-rt, the core and the std shell keep the same
//! buffers.

/// Bytes per buffer.
pub const BUFFER: usize = 64 * 1024;
/// Buffers per ring, reused oldest first.
pub const BUFFERS: usize = 8;

/// The std shell's FDR runtime in flight-recorder mode with [`BUFFERS`] buffers of
/// [`BUFFER`] bytes per thread, no duration threshold and no grace period,
/// writing its trace under `logfile_base`.
///
/// ```
/// let config = flightrec_benches::ring_setup::xray_config("/tmp/x-").unwrap();
/// assert_eq!(config.buffer_size, flightrec_benches::ring_setup::BUFFER);
/// assert_eq!(config.func_duration_threshold_us, 0);
/// ```
pub fn xray_config(logfile_base: &str) -> Result<flightrec::xray::Config, String> {
    use flightrec::xray::{Config, Mode};
    Config::builder()
        .mode(Mode::FlightRecorder)
        .logfile_base(logfile_base)
        .patch_premain(true)
        .verbosity(0)
        .buffer_size(BUFFER)
        .buffer_max(BUFFERS)
        .thread_buffers(BUFFERS)
        .func_duration_threshold_us(0)
        .grace_period_ms(0)
        .build()
        .map_err(|e| e.to_string())
}
