//! An LLVM XRay runtime for x86_64 Linux that patches the compiler's sleds and
//! records into flightrec's FDR rings.
//!
//! Programs built with `clang -fxray-instrument` or `rustc -Zinstrument-xray`
//! carry a patchable sled at every instrumented function's entry and exits, and a
//! map of them (the `xray_instr_map` section). This crate finds the map of the
//! running executable, gives each function the id `llvm-xray` gives it (so
//! `llvm-xray account -m ./program` names every function without a names file),
//! patches the sleds to call its own trampolines, and records each call with
//! [`flightrec::xray::record_enter`] and friends into the per-thread rings of
//! flightrec's desktop XRay runtime, which writes the FDR trace.
//!
//! Configured by `XRAY_OPTIONS` / `XRAY_FDR_OPTIONS` as compiler-rt and flightrec
//! are: `xray_mode=xray-fdr` starts flightrec's runtime, `patch_premain=true`
//! patches the sleds before `main` (the runtime initialises itself from the
//! executable's `.init_array`, for C programs that never call it).
//!
//! ```no_run
//! fn main() {
//!     // Built with RUSTFLAGS="-Zinstrument-xray=always" on nightly, run with
//!     // XRAY_OPTIONS="xray_mode=xray-fdr patch_premain=true".
//!     flightrec_sleds::init_from_env().expect("XRay sleds");
//!     work();
//!     // At exit the trace is written to xray-log.<program>.XXXXXX.
//! }
//! fn work() {}
//! ```
//!
//! C programs link the drop-in `libflightrec_sleds.a` that
//! `sleds/dropin/make.sh` makes from the `staticlib` in place of compiler-rt's
//! runtime, with no other flag; it exports compiler-rt's C API (`__xray_patch`,
//! `__xray_log_init_mode`, ...). See `docs/desktop-fdr.md`, "Automatic
//! instrumentation with XRay sleds".
//!
//! Only x86_64 Linux executables are handled: a shared library's sleds stay
//! unpatched, and at initialisation one line names each loaded library that
//! has some.

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!("flightrec-sleds supports x86_64 Linux only");

mod capi;
#[cfg(target_env = "gnu")]
#[cfg_attr(not(sleds_fast_path), allow(dead_code, unused_imports))]
mod layout;
pub mod map;
pub(crate) mod objects;
mod patch;
mod section;
mod trampoline;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

pub use map::{MapError, Sled, SledKind, SledMap};
pub use patch::PatchError;
pub use trampoline::{ArgHandler, CustomEventHandler, Handler, TypedEventHandler};

/// Why sleds could not be used or the runtime not started. Tracing stays off.
///
/// ```
/// use flightrec_sleds::{Error, MapError};
/// assert_eq!(flightrec_sleds::set_function_patched(-1, true).unwrap_err(), Error::Map(MapError::NoSleds));
/// assert_eq!(Error::NoSuchFunction(7).to_string(), "no instrumented function has id 7");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The executable's instrumentation map is missing or not understood.
    Map(MapError),
    /// Sleds could not be written.
    Patch(PatchError),
    /// flightrec's runtime refused to start.
    Runtime(flightrec::xray::Error),
    /// No function has this id.
    NoSuchFunction(i32),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Map(e) => write!(f, "{e}"),
            Error::Patch(e) => write!(f, "{e}"),
            Error::Runtime(e) => write!(f, "{e}"),
            Error::NoSuchFunction(id) => write!(f, "no instrumented function has id {id}"),
        }
    }
}

impl std::error::Error for Error {}

/// The executable's sleds, read once.
static MAP: OnceLock<Result<SledMap, MapError>> = OnceLock::new();
/// Whether the map's problem was reported on stderr (once per process).
static REPORTED: AtomicBool = AtomicBool::new(false);

/// The instrumentation map of the running executable, read on first use.
///
/// ```
/// // Test programs are built without sleds.
/// let err = flightrec_sleds::sleds().unwrap_err();
/// assert_eq!(err, flightrec_sleds::Error::Map(flightrec_sleds::MapError::NoSleds));
/// ```
pub fn sleds() -> Result<&'static SledMap, Error> {
    MAP.get_or_init(|| match section::instr_map() {
        None => Err(MapError::NoSleds),
        Some((bytes, base)) => SledMap::parse(bytes, base),
    })
    .as_ref()
    .map_err(|e| Error::Map(*e))
}

/// [`sleds`], reporting a problem on stderr the first time.
fn sleds_or_report() -> Result<&'static SledMap, Error> {
    sleds().inspect_err(|e| {
        if !REPORTED.swap(true, Ordering::Relaxed) {
            eprintln!("XRay: flightrec-sleds: {e}; running untraced");
        }
    })
}

/// Patches every sled to record (entry, argument-logging entry, exit, tail exit,
/// custom and typed event), and starts flightrec's recording if its runtime was
/// initialised (compiler-rt: `__xray_patch`).
/// Returns how many sleds were written. Safe while other threads run the
/// instrumented code.
///
/// ```
/// // Without sleds: an error, reported once on stderr; the program runs untraced.
/// assert!(flightrec_sleds::patch().is_err());
/// assert!(flightrec_sleds::unpatch().is_err());
/// ```
pub fn patch() -> Result<usize, Error> {
    let map = sleds_or_report()?;
    let n = patch::set_patched(map.sleds().iter(), true).map_err(Error::Patch)?;
    flightrec::xray::start();
    // Objects `dlopen`ed since the last look.
    if flightrec::xray::frequency().is_some() {
        objects::report();
    }
    Ok(n)
}

/// Restores every sled to its unpatched form (compiler-rt: `__xray_unpatch`):
/// instrumented code then costs a jump over the sled. Example on [`patch()`].
pub fn unpatch() -> Result<usize, Error> {
    let map = sleds_or_report()?;
    patch::set_patched(map.sleds().iter(), false).map_err(Error::Patch)
}

/// Patches (`on`) or unpatches the sleds of one function
/// (compiler-rt: `__xray_patch_function` / `__xray_unpatch_function`).
///
/// ```
/// assert!(flightrec_sleds::set_function_patched(1, true).is_err()); // no sleds here
/// ```
pub fn set_function_patched(id: i32, on: bool) -> Result<usize, Error> {
    let map = sleds_or_report()?;
    let wanted = u32::try_from(id).map_err(|_| Error::NoSuchFunction(id))?;
    if map.function_address(wanted).is_none() {
        return Err(Error::NoSuchFunction(id));
    }
    let of_function = map.sleds().iter().filter(|s| s.function_id == wanted);
    patch::set_patched(of_function, on).map_err(Error::Patch)
}

/// Installs a handler that patched sleds call instead of recording (function id
/// and kind, compiler-rt's `XRayEntryType` numbering); `None` records again
/// (compiler-rt: `__xray_set_handler` / `__xray_remove_handler`). The handler
/// runs with sleds disabled on its thread, so it may call instrumented code.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// static CALLS: AtomicU32 = AtomicU32::new(0);
/// unsafe extern "C" fn count(_id: i32, _kind: u32) {
///     CALLS.fetch_add(1, Ordering::Relaxed);
/// }
/// flightrec_sleds::set_handler(Some(count));
/// // This test program has no sleds, so nothing calls the handler.
/// assert!(flightrec_sleds::patch().is_err());
/// assert_eq!(CALLS.load(Ordering::Relaxed), 0);
/// flightrec_sleds::set_handler(None);
/// ```
pub fn set_handler(handler: Option<Handler>) {
    trampoline::set_handler(handler);
}

/// Installs a handler that the entry sleds of functions built with
/// `xray_log_args(1)` call with their first argument instead of recording; `None`
/// removes it (compiler-rt: `__xray_set_handler_arg1` /
/// `__xray_remove_handler_arg1`). Without one, as in compiler-rt, those sleds call
/// the [`set_handler`] handler (kind 3, `LOG_ARGS_ENTRY`) if there is one, else
/// record an entry with its argument (an `EnterArg` record and a `CallArgument`
/// record, as compiler-rt's FDR mode writes them).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// static LAST: AtomicU64 = AtomicU64::new(0);
/// unsafe extern "C" fn log_arg(_id: i32, _kind: u32, arg: u64) {
///     LAST.store(arg, Ordering::Relaxed);
/// }
/// flightrec_sleds::set_arg_handler(Some(log_arg));
/// // This test program has no sleds, so nothing calls the handler.
/// assert!(flightrec_sleds::patch().is_err());
/// assert_eq!(LAST.load(Ordering::Relaxed), 0);
/// flightrec_sleds::set_arg_handler(None);
/// ```
pub fn set_arg_handler(handler: Option<ArgHandler>) {
    trampoline::set_arg_handler(handler);
}

/// Installs a handler that patched custom event sleds
/// (`__xray_customevent(data, size)`) call instead of recording; `None` records
/// them again (compiler-rt: `__xray_set_customevent_handler` /
/// `__xray_remove_customevent_handler`, except that removing it in compiler-rt
/// drops the events).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// static BYTES: AtomicUsize = AtomicUsize::new(0);
/// unsafe extern "C" fn count(_data: *mut std::ffi::c_void, size: usize) {
///     BYTES.fetch_add(size, Ordering::Relaxed);
/// }
/// flightrec_sleds::set_custom_event_handler(Some(count));
/// // This test program has no sleds, so nothing calls the handler.
/// assert!(flightrec_sleds::patch().is_err());
/// assert_eq!(BYTES.load(Ordering::Relaxed), 0);
/// flightrec_sleds::set_custom_event_handler(None);
/// ```
pub fn set_custom_event_handler(handler: Option<CustomEventHandler>) {
    trampoline::set_custom_event_handler(handler);
}

/// Installs a handler that patched typed event sleds
/// (`__xray_typedevent(type, data, size)`) call instead of recording; `None`
/// records them again (compiler-rt: `__xray_set_typedevent_handler` /
/// `__xray_remove_typedevent_handler`).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// static BYTES: AtomicUsize = AtomicUsize::new(0);
/// unsafe extern "C" fn count(_type: u16, _data: *const std::ffi::c_void, size: usize) {
///     BYTES.fetch_add(size, Ordering::Relaxed);
/// }
/// flightrec_sleds::set_typed_event_handler(Some(count));
/// // This test program has no sleds, so nothing calls the handler.
/// assert!(flightrec_sleds::patch().is_err());
/// assert_eq!(BYTES.load(Ordering::Relaxed), 0);
/// flightrec_sleds::set_typed_event_handler(None);
/// ```
pub fn set_typed_event_handler(handler: Option<TypedEventHandler>) {
    trampoline::set_typed_event_handler(handler);
}

/// Event types handed out so far, by the address of their name (as compiler-rt
/// keys them: the same string at another address is another type), and how many.
static EVENT_TYPES: Mutex<Option<(HashMap<usize, u16>, u32)>> = Mutex::new(None);

/// The typed event type for the name at `name` (compiler-rt:
/// `__xray_register_event_type`): types count from 0 in the order of first
/// registration, and registering the same address again gives the same type.
/// As in compiler-rt the key is the address, not the text, and the 65 537th
/// address gets type 0 again (types are 16 bits).
///
/// ```
/// static CACHE: &std::ffi::CStr = c"cache";
/// static QUEUE: &std::ffi::CStr = c"queue";
/// let cache = flightrec_sleds::register_event_type(CACHE.as_ptr() as usize);
/// let queue = flightrec_sleds::register_event_type(QUEUE.as_ptr() as usize);
/// assert_eq!(queue, cache + 1);
/// assert_eq!(flightrec_sleds::register_event_type(CACHE.as_ptr() as usize), cache);
/// ```
pub fn register_event_type(name: usize) -> u16 {
    let mut guard = EVENT_TYPES.lock().unwrap_or_else(|e| e.into_inner());
    let (types, count) = guard.get_or_insert_with(Default::default);
    *types.entry(name).or_insert_with(|| {
        let t = *count as u16;
        *count = count.wrapping_add(1);
        t
    })
}

/// Starts flightrec's XRay runtime with `config` and, if `config.patch_premain`
/// is set, patches the sleds. If patching fails, the runtime keeps running (the
/// program's own `xray_fn!` guards still record) and the error is returned.
///
/// ```
/// use flightrec::xray::Config;
/// let config = Config::builder().no_file_flush(true).build()?;
/// // No sleds in this test program: the runtime starts, patching fails.
/// let err = flightrec_sleds::init(config).unwrap_err();
/// assert!(matches!(err, flightrec_sleds::Error::Map(_)));
/// assert!(flightrec::xray::is_recording());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn init(config: flightrec::xray::Config) -> Result<(), Error> {
    let patch_now = config.patch_premain;
    // The program is its own instrumentation map (`llvm-xray -m ./program`).
    flightrec::xray::names::names_file_only_when_named();
    flightrec::xray::init(config).map_err(Error::Runtime)?;
    objects::report();
    if patch_now {
        patch()?;
    }
    Ok(())
}

/// Opens (`true`, the default) or closes the record path written in assembly
/// inside the entry, exit and tail-exit trampolines. Closed, every sled takes
/// the Rust fast path the trampolines fall back to (and the full path after
/// it), which writes the same records at about 3 ns more per call (entry
/// and exit; 8 when the machine is slow, see `docs/performance.md`): a
/// switch for comparing the two (the tests check that both write the same
/// bytes) and for ruling the inline path out when hunting a problem. Also set
/// by `FLIGHTREC_SLEDS_INLINE_RECORD=0` in the environment, read by
/// [`init_from_env`]. Returns whether the path is now open: a [`Handler`]
/// installed with [`set_handler`] closes it too. (Builds without optimisation,
/// and builds for other C libraries than glibc, have no such path: their
/// trampolines always take the full path.)
///
/// ```
/// assert!(!flightrec_sleds::set_inline_record_path(false));
/// assert!(flightrec_sleds::set_inline_record_path(true));
/// ```
pub fn set_inline_record_path(on: bool) -> bool {
    trampoline::set_inline_record(on);
    trampoline::inline_record()
}

/// What [`init_from_env`] did, once per process (the `.init_array` hook and the
/// program may both call it).
static FROM_ENV: Mutex<Option<Result<bool, Error>>> = Mutex::new(None);

/// Reads `XRAY_OPTIONS` and `XRAY_FDR_OPTIONS` as compiler-rt does: starts
/// flightrec's runtime if they select `xray-fdr` (recording from then on if
/// `patch_premain=true`, else from [`patch()`]), and patches the sleds if
/// `patch_premain=true`. `Ok(true)` if the runtime runs. Runs once; later calls
/// return the first result. Errors are also reported on stderr.
///
/// ```
/// // Without XRAY_OPTIONS nothing happens.
/// std::env::remove_var("XRAY_OPTIONS");
/// assert_eq!(flightrec_sleds::init_from_env(), Ok(false));
/// ```
pub fn init_from_env() -> Result<bool, Error> {
    let mut done = FROM_ENV.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = &*done {
        return r.clone();
    }
    let r = init_from_env_once();
    *done = Some(r.clone());
    r
}

fn init_from_env_once() -> Result<bool, Error> {
    if std::env::var_os("FLIGHTREC_SLEDS_INLINE_RECORD").is_some_and(|v| v == "0") {
        trampoline::set_inline_record(false);
    }
    let parsed = match flightrec::xray::Config::from_env() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("XRay: flightrec-sleds: {e}; tracing stays off");
            return Err(Error::Runtime(flightrec::xray::Error::Config(e)));
        }
    };
    if !parsed.unknown_flags.is_empty() {
        eprintln!(
            "WARNING: found {} unrecognized flag(s):",
            parsed.unknown_flags.len()
        );
        for name in &parsed.unknown_flags {
            eprintln!("    {name}");
        }
    }
    let patch_now = parsed.config.patch_premain;
    if parsed.selected {
        // As in `init`.
        flightrec::xray::names::names_file_only_when_named();
        match flightrec::xray::init(parsed.config) {
            // The program started the runtime first, through the C API from a
            // static initialiser (compiler-rt's hook runs from
            // `.preinit_array`, before any, and the program's call then finds
            // it running): the runtime runs, with the program's settings.
            Ok(()) | Err(flightrec::xray::Error::AlreadyInitialized) => objects::report(),
            Err(e) => {
                eprintln!("XRay: flightrec-sleds: {e}; tracing stays off");
                return Err(Error::Runtime(e));
            }
        }
    }
    if patch_now {
        patch()?;
    }
    Ok(parsed.selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_count_from_the_first_and_wrap_at_16_bits() {
        // Addresses nothing else in this test binary registers.
        let name = |i: usize| 0x7777_0000_0000 + i;
        let first = register_event_type(name(0));
        for i in 1..=0xffff {
            assert_eq!(register_event_type(name(i)), first.wrapping_add(i as u16));
        }
        assert_eq!(register_event_type(name(0x1_0000)), first);
        assert_eq!(register_event_type(name(5)), first.wrapping_add(5));
    }
}
