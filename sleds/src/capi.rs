//! compiler-rt's XRay C API, for C programs that link this runtime in place of
//! compiler-rt's (`clang -fxray-instrument -fnoxray-link-deps`), and the
//! `.init_array` hook that starts it from `XRAY_OPTIONS` before `main`.
//!
//! Same names, arguments and status values as compiler-rt's `xray_interface.h`
//! and `xray_log_interface.h`; the only logging mode is `xray-fdr`, flightrec's.

use std::ffi::{c_char, c_int, CStr};

use crate::{ArgHandler, CustomEventHandler, Handler, TypedEventHandler};

// XRayPatchingStatus
const NOT_INITIALIZED: c_int = 0;
const SUCCESS: c_int = 1;
const FAILED: c_int = 3;
// XRayLogInitStatus
const LOG_UNINITIALIZED: c_int = 0;
const LOG_INITIALIZED: c_int = 2;
const LOG_FINALIZED: c_int = 4;
// XRayLogFlushStatus
const LOG_NOT_FLUSHING: c_int = 0;
const LOG_FLUSHED: c_int = 2;
// XRayLogRegisterStatus
const LOG_REGISTER_OK: c_int = 0;
const LOG_REGISTER_NOT_FOUND: c_int = 1;

const FDR_MODE: &CStr = c"xray-fdr";

/// Runs [`crate::init_from_env`] before `main`, as compiler-rt's `__xray_init`
/// does from `.preinit_array`. Here from `.init_array`, after the Rust standard
/// library's own hooks (which use numbered, earlier sections), so the program's
/// arguments are known when the trace file is named.
#[used]
#[link_section = ".init_array"]
static INIT_HOOK: extern "C" fn() = __xray_init;

/// Reads `XRAY_OPTIONS` and starts the runtime (once; also run before `main`).
/// The drop-in library (`sleds/dropin/make.sh`) is linked whole; cargo's
/// staticlib needs `-Wl,-u,__xray_init` to be linked into a program that calls
/// none of its functions.
#[no_mangle]
pub extern "C" fn __xray_init() {
    // Keeps the hook's section in the link with this function's object.
    std::hint::black_box(&INIT_HOOK);
    let _ = crate::init_from_env();
}

fn status(r: Result<usize, crate::Error>) -> c_int {
    match r {
        Ok(_) => SUCCESS,
        Err(crate::Error::Map(_)) => NOT_INITIALIZED,
        Err(_) => FAILED,
    }
}

/// Patches every sled; `XRayPatchingStatus`.
#[no_mangle]
pub extern "C" fn __xray_patch() -> c_int {
    status(crate::patch())
}

/// Unpatches every sled; `XRayPatchingStatus`.
#[no_mangle]
pub extern "C" fn __xray_unpatch() -> c_int {
    status(crate::unpatch())
}

/// Patches one function's sleds; `XRayPatchingStatus`.
#[no_mangle]
pub extern "C" fn __xray_patch_function(id: i32) -> c_int {
    status(crate::set_function_patched(id, true))
}

/// Unpatches one function's sleds; `XRayPatchingStatus`.
#[no_mangle]
pub extern "C" fn __xray_unpatch_function(id: i32) -> c_int {
    status(crate::set_function_patched(id, false))
}

/// Installs the handler patched sleds call; 1 on success, 0 without sleds.
#[no_mangle]
pub extern "C" fn __xray_set_handler(handler: Option<Handler>) -> c_int {
    if crate::sleds().is_err() {
        return 0;
    }
    crate::set_handler(handler);
    1
}

/// Records into flightrec's rings again; 1 on success, 0 without sleds.
#[no_mangle]
pub extern "C" fn __xray_remove_handler() -> c_int {
    __xray_set_handler(None)
}

/// Installs the handler of argument-logging entries; 1 on success, 0 without
/// sleds.
#[no_mangle]
pub extern "C" fn __xray_set_handler_arg1(handler: Option<ArgHandler>) -> c_int {
    if crate::sleds().is_err() {
        return 0;
    }
    crate::set_arg_handler(handler);
    1
}

/// Removes the handler of argument-logging entries; 1 on success, 0 without
/// sleds.
#[no_mangle]
pub extern "C" fn __xray_remove_handler_arg1() -> c_int {
    __xray_set_handler_arg1(None)
}

/// Installs the custom events' handler; 1 on success, 0 without sleds.
#[no_mangle]
pub extern "C" fn __xray_set_customevent_handler(handler: Option<CustomEventHandler>) -> c_int {
    if crate::sleds().is_err() {
        return 0;
    }
    crate::set_custom_event_handler(handler);
    1
}

/// Records custom events into flightrec's rings again; 1 on success, 0 without
/// sleds.
#[no_mangle]
pub extern "C" fn __xray_remove_customevent_handler() -> c_int {
    __xray_set_customevent_handler(None)
}

/// Installs the typed events' handler; 1 on success, 0 without sleds.
#[no_mangle]
pub extern "C" fn __xray_set_typedevent_handler(handler: Option<TypedEventHandler>) -> c_int {
    if crate::sleds().is_err() {
        return 0;
    }
    crate::set_typed_event_handler(handler);
    1
}

/// Records typed events into flightrec's rings again; 1 on success, 0 without
/// sleds.
#[no_mangle]
pub extern "C" fn __xray_remove_typedevent_handler() -> c_int {
    __xray_set_typedevent_handler(None)
}

/// The event type of the name at `event_type` (its address is the key).
#[no_mangle]
pub extern "C" fn __xray_register_event_type(event_type: *const c_char) -> u16 {
    crate::register_event_type(event_type as usize)
}

/// The address of function `id`, 0 if there is none.
#[no_mangle]
pub extern "C" fn __xray_function_address(id: i32) -> usize {
    let Ok(map) = crate::sleds() else { return 0 };
    u32::try_from(id)
        .ok()
        .and_then(|id| map.function_address(id))
        .unwrap_or(0)
}

/// The largest function id, 0 without sleds.
#[no_mangle]
pub extern "C" fn __xray_max_function_id() -> usize {
    crate::sleds().map_or(0, |m| m.max_function_id() as usize)
}

/// Selects a logging mode: only `xray-fdr` exists.
///
/// # Safety
/// `mode` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn __xray_log_select_mode(mode: *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    if !mode.is_null() && unsafe { CStr::from_ptr(mode) } == FDR_MODE {
        LOG_REGISTER_OK
    } else {
        LOG_REGISTER_NOT_FOUND
    }
}

/// The current mode's name (`xray-fdr` once the runtime runs), or null.
#[no_mangle]
pub extern "C" fn __xray_log_get_current_mode() -> *const c_char {
    if flightrec::xray::frequency().is_some() {
        FDR_MODE.as_ptr()
    } else {
        std::ptr::null()
    }
}

/// Starts flightrec's runtime in FDR mode, recording from now on:
/// `XRAY_OPTIONS` as always, and `config` (if not empty) in place of
/// `XRAY_FDR_OPTIONS`. If the runtime already runs (`XRAY_OPTIONS` selected
/// `xray-fdr`), returns `XRAY_LOG_INITIALIZED` as compiler-rt does.
///
/// # Safety
/// `mode` and `config` are null or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn __xray_log_init_mode(mode: *const c_char, config: *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    if mode.is_null() || unsafe { CStr::from_ptr(mode) } != FDR_MODE {
        return LOG_UNINITIALIZED;
    }
    if flightrec::xray::frequency().is_some() {
        return LOG_INITIALIZED;
    }
    let fdr_options = if config.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(config) }
            .to_string_lossy()
            .into_owned()
    };
    let fdr_options = if fdr_options.is_empty() {
        std::env::var("XRAY_FDR_OPTIONS").unwrap_or_default()
    } else {
        fdr_options
    };
    let xray_options = std::env::var("XRAY_OPTIONS").unwrap_or_default();
    let mut config = match flightrec::xray::Config::from_options(&xray_options, &fdr_options) {
        Ok(p) => p.config,
        Err(e) => {
            eprintln!("XRay: flightrec-sleds: {e}");
            return LOG_UNINITIALIZED;
        }
    };
    config.patch_premain = true; // logging is on once initialised
    match flightrec::xray::init(config) {
        Ok(()) | Err(flightrec::xray::Error::AlreadyInitialized) => {
            crate::objects::report();
            LOG_INITIALIZED
        }
        Err(e) => {
            eprintln!("XRay: flightrec-sleds: {e}");
            LOG_UNINITIALIZED
        }
    }
}

/// Stops recording; `XRAY_LOG_FINALIZED`, or `XRAY_LOG_UNINITIALIZED` if the
/// runtime does not run.
#[no_mangle]
pub extern "C" fn __xray_log_finalize() -> c_int {
    if flightrec::xray::frequency().is_none() {
        return LOG_UNINITIALIZED;
    }
    flightrec::xray::stop();
    crate::objects::report();
    LOG_FINALIZED
}

/// Writes the trace (flightrec's shutdown: the runtime ends for good);
/// `XRAY_LOG_FLUSHED`, or `XRAY_LOG_NOT_FLUSHING` if there was nothing to write.
#[no_mangle]
pub extern "C" fn __xray_log_flushLog() -> c_int {
    // flightrec reports the file's name itself (verbosity=1).
    if flightrec::xray::frequency().is_some() {
        crate::objects::report();
    }
    match flightrec::xray::shutdown() {
        Ok(_) => LOG_FLUSHED,
        Err(_) => LOG_NOT_FLUSHING,
    }
}
