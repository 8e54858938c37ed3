//! Shared objects with sleds that this runtime leaves unpatched: it reads the
//! executable's instrumentation map only (`map`), so a library built with
//! `-fxray-instrument`, linked or loaded, runs untraced. One line names each
//! such object (compiler-rt 14 patches none either, and says nothing): those
//! loaded at initialisation then, and one loaded later with `dlopen` when the
//! sleds are patched, when the program finalises or flushes its log through
//! the C API, or at exit, whichever comes first after it was loaded.

use std::ffi::{c_int, c_void, CStr};
use std::os::unix::fs::FileExt;

/// The section that holds a module's sleds.
const SECTION: &[u8] = b"xray_instr_map";
/// Bounds on what is read of an object's section table and names.
const MAX_TABLE: u64 = 1 << 20;

/// The paths of the loaded objects other than the executable (and the vDSO)
/// that have a non-empty `xray_instr_map` section.
pub(crate) fn with_unpatched_sleds() -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `info` is glibc's for this object during the call; `data` is
        // the `Vec` passed below, borrowed for the call of `dl_iterate_phdr`.
        let (name, found) = unsafe { ((*info).dlpi_name, &mut *data.cast::<Vec<String>>()) };
        if name.is_null() {
            return 0;
        }
        // SAFETY: a NUL-terminated name owned by the dynamic linker.
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        // The executable comes with an empty name; the vDSO has no file.
        if !name.starts_with('/') && !name.starts_with('.') {
            return 0;
        }
        if has_sleds(&name) {
            found.push(name);
        }
        0
    }
    // SAFETY: `each` matches the callback's signature and only uses `found`,
    // which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut found as *mut Vec<String>).cast()) };
    found
}

/// Whether the ELF64 file at `path` has a non-empty `xray_instr_map`
/// section; `false` for anything it cannot read.
fn has_sleds(path: &str) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut eh = [0u8; 64];
    if file.read_exact_at(&mut eh, 0).is_err() || &eh[..5] != b"\x7fELF\x02" || eh[5] != 1 {
        return false;
    }
    let u16_at = |b: &[u8], at: usize| u64::from(u16::from_le_bytes([b[at], b[at + 1]]));
    let u32_at =
        |b: &[u8], at: usize| u64::from(u32::from_le_bytes(b[at..at + 4].try_into().unwrap()));
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(&eh, 0x28),
        u16_at(&eh, 0x3a),
        u16_at(&eh, 0x3c),
        u16_at(&eh, 0x3e),
    );
    if shentsize < 64 || shnum == 0 || shstrndx >= shnum || shentsize * shnum > MAX_TABLE {
        return false;
    }
    let mut table = vec![0u8; (shentsize * shnum) as usize];
    if file.read_exact_at(&mut table, shoff).is_err() {
        return false;
    }
    let header = |i: u64| &table[(i * shentsize) as usize..][..64];
    let names = header(shstrndx);
    let (names_at, names_len) = (u64_at(names, 0x18), u64_at(names, 0x20).min(MAX_TABLE));
    let mut strtab = vec![0u8; names_len as usize];
    if file.read_exact_at(&mut strtab, names_at).is_err() {
        return false;
    }
    (0..shnum).any(|i| {
        let h = header(i);
        let name = strtab.get(u32_at(h, 0) as usize..).unwrap_or(&[]);
        name.starts_with(SECTION) && name.get(SECTION.len()) == Some(&0) && u64_at(h, 0x20) > 0
    })
}

/// Says, once per object, that its sleds stay unpatched: every object loaded
/// now not named before. The first call also registers a last look at exit
/// (an object `dlopen`ed after the program's last patch or flush).
pub(crate) fn report() {
    static NAMED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        extern "C" fn at_exit() {
            report();
        }
        // SAFETY: `at_exit` is a plain `extern "C"` function that lives for
        // the whole program. Registered after the runtime's own exit hook, it
        // runs before it (exit runs them in reverse), so the names come before
        // the trace's line.
        unsafe { libc::atexit(at_exit) };
    });
    let found = with_unpatched_sleds();
    let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
    for path in found {
        if named.contains(&path) {
            continue;
        }
        eprintln!(
            "XRay: flightrec-sleds: '{path}' has XRay sleds, which stay unpatched (only the executable's are patched)"
        );
        named.push(path);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_test_program_and_its_libraries_have_no_sleds() {
        assert_eq!(super::with_unpatched_sleds(), Vec::<String>::new());
        assert!(!super::has_sleds("/nonexistent"));
        assert!(!super::has_sleds("/proc/self/status"));
    }
}
