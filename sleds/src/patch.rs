//! Writing sleds: turning them into calls of the trampolines and back.
//!
//! An unpatched entry or tail-exit sled is `jmp +9` over 9 bytes of padding; an
//! unpatched exit sled is `ret` followed by 10 bytes of padding. Patched, each is
//! `mov r10d, <function id>` (6 bytes) then a `call` (entry, tail exit) or `jmp`
//! (exit) to a trampoline (5 bytes). Entry sleds of functions that log their
//! first argument (`xray_log_args(1)`) call a trampoline of their own.
//!
//! Other threads may run a sled while it is written, so the order is the one
//! compiler-rt uses: first the last 9 bytes, which the first two bytes still skip
//! (`jmp +9`) or never reach (`ret`); then the first two bytes (the `mov`'s
//! opcode) in one atomic 2-byte store, sleds being 2-byte aligned. A thread sees
//! the old sled or the new one, never half of one. Unpatching is the single
//! atomic store of the first two bytes (or of the `ret`).
//!
//! Custom and typed event sleds already hold the call of their trampoline
//! (`__xray_CustomEvent`, `__xray_TypedEvent`), behind a `jmp` over it: patching
//! is one atomic 2-byte store of a 2-byte `nop` in its place, unpatching the
//! store of the `jmp` back (`jmp +15` for custom events of map version 1 and 2,
//! `jmp +20` for version 0 and for typed events, as compiler-rt writes them).
//!
//! The pages are made writable (and kept executable, since other threads may run
//! them) only while writing, then back to read and execute.

use std::sync::atomic::{AtomicU16, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::map::{Sled, SledKind};
use crate::trampoline;

/// Serialises patching: two writers of one sled would mix their bytes.
static PATCHING: Mutex<()> = Mutex::new(());

/// Length of a sled on x86_64.
const SLED_LEN: usize = 11;
/// `mov r10d, imm32` opcode bytes, in memory order.
const MOV_R10D: [u8; 2] = [0x41, 0xba];
/// `jmp +9`, in memory order.
const JMP_OVER_SLED: [u8; 2] = [0xeb, 0x09];
/// `xchg %ax, %ax`, the 2-byte `nop` of a patched event sled.
const NOP2: [u8; 2] = [0x66, 0x90];
/// `jmp +15`: over a custom event sled of map version 1 or 2.
const JMP_OVER_CUSTOM_EVENT: [u8; 2] = [0xeb, 0x0f];
/// `jmp +20`: over a typed event sled, or a custom one of map version 0.
const JMP_OVER_LONG_EVENT: [u8; 2] = [0xeb, 0x14];
const RET: u8 = 0xc3;
const CALL_REL32: u8 = 0xe8;
const JMP_REL32: u8 = 0xe9;

/// Why sleds could not be written.
///
/// ```
/// use flightrec_sleds::PatchError;
/// let err = PatchError::OutOfRange { sled: 0x1000, trampoline: 0x9_0000_0000 };
/// assert_eq!(
///     err.to_string(),
///     "trampoline 0x900000000 is too far from the sled at 0x1000"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchError {
    /// `mprotect` refused (the message says why).
    Protect(String),
    /// A trampoline is more than ±2 GiB from a sled (a 32-bit displacement).
    OutOfRange {
        /// The sled's address.
        sled: usize,
        /// The trampoline's address.
        trampoline: usize,
    },
}

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchError::Protect(e) => write!(f, "cannot make the code writable: {e}"),
            PatchError::OutOfRange { sled, trampoline } => write!(
                f,
                "trampoline {trampoline:#x} is too far from the sled at {sled:#x}"
            ),
        }
    }
}

impl std::error::Error for PatchError {}

/// Patches (`on`) or unpatches every sled of `sleds` (entry, argument-logging
/// entry, exit, tail exit, custom and typed events). Returns how many it wrote.
pub(crate) fn set_patched<'s>(
    sleds: impl Iterator<Item = &'s Sled> + Clone,
    on: bool,
) -> Result<usize, PatchError> {
    let handled = sleds.filter(|s| target(s).is_some());
    let Some(lo) = handled.clone().map(|s| s.address).min() else {
        return Ok(0);
    };
    let hi = handled
        .clone()
        .map(|s| s.address + SLED_LEN)
        .max()
        .unwrap_or(lo);
    let _g = PATCHING.lock().unwrap_or_else(|e| e.into_inner());
    let page = page_size();
    let start = lo & !(page - 1);
    let len = (hi - start).div_ceil(page) * page;
    protect(
        start,
        len,
        libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
    )?;
    let mut written = 0;
    let mut result = Ok(());
    for sled in handled {
        // SAFETY: the sled lies in [start, start + len), writable now; the map
        // says an 11-byte sled of this kind is there.
        match unsafe { write_sled(sled, on) } {
            Ok(()) => written += 1,
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    protect(start, len, libc::PROT_READ | libc::PROT_EXEC)?;
    result.map(|()| written)
}

/// What patching a sled writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Patched {
    /// `mov r10d, id; call trampoline`.
    Call(usize),
    /// `mov r10d, id; jmp trampoline`, in place of a `ret`.
    Jump(usize),
    /// A 2-byte `nop` in place of the `jmp` over an event sled (unpatched: that
    /// `jmp`).
    Event([u8; 2]),
}

/// What `sled` becomes when patched; `None` for kinds this runtime leaves alone
/// (none at present: every kind of [`SledKind`] is handled).
fn target(sled: &Sled) -> Option<Patched> {
    Some(match sled.kind {
        SledKind::Entry => Patched::Call(trampoline::entry_trampoline()),
        SledKind::LogArgsEntry => Patched::Call(trampoline::log_args_entry_trampoline()),
        SledKind::TailExit => Patched::Call(trampoline::tail_exit_trampoline()),
        SledKind::Exit => Patched::Jump(trampoline::exit_trampoline()),
        SledKind::CustomEvent if sled.version >= 1 => Patched::Event(JMP_OVER_CUSTOM_EVENT),
        SledKind::CustomEvent | SledKind::TypedEvent => Patched::Event(JMP_OVER_LONG_EVENT),
    })
}

/// Writes one sled in the order the module docs give.
///
/// # Safety
/// `sled.address` must be the start of a writable sled of `sled.kind`.
unsafe fn write_sled(sled: &Sled, on: bool) -> Result<(), PatchError> {
    let Some(patched) = target(sled) else {
        return Ok(());
    };
    let p = sled.address as *mut u8;
    // SAFETY (all the atomics below): sleds are 2-byte aligned and live as long as
    // the process; other threads only execute these bytes.
    let head = unsafe { AtomicU16::from_ptr(p.cast::<u16>()) };
    let (trampoline, is_call) = match (patched, on) {
        (Patched::Event(jmp), on) => {
            let bytes = if on { NOP2 } else { jmp };
            head.store(u16::from_le_bytes(bytes), Ordering::Release);
            return Ok(());
        }
        (Patched::Jump(_), false) => {
            // The `ret` alone (as compiler-rt): the byte after it is never run.
            unsafe { AtomicU8::from_ptr(p) }.store(RET, Ordering::Release);
            return Ok(());
        }
        (Patched::Call(_), false) => {
            head.store(u16::from_le_bytes(JMP_OVER_SLED), Ordering::Release);
            return Ok(());
        }
        (Patched::Call(t), true) => (t, true),
        (Patched::Jump(t), true) => (t, false),
    };
    let displacement = (trampoline as i64) - (sled.address as i64 + SLED_LEN as i64);
    let rel = i32::try_from(displacement).map_err(|_| PatchError::OutOfRange {
        sled: sled.address,
        trampoline,
    })?;
    let mut tail = [0u8; SLED_LEN - 2];
    tail[0..4].copy_from_slice(&sled.function_id.to_le_bytes());
    tail[4] = if is_call { CALL_REL32 } else { JMP_REL32 };
    tail[5..9].copy_from_slice(&rel.to_le_bytes());
    for (i, b) in tail.into_iter().enumerate() {
        // SAFETY: within the sled. Byte stores: a patched sled being re-patched
        // gets the same bytes, and an unpatched one does not run them.
        unsafe { AtomicU8::from_ptr(p.add(2 + i)) }.store(b, Ordering::Relaxed);
    }
    head.store(u16::from_le_bytes(MOV_R10D), Ordering::Release);
    Ok(())
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

fn protect(start: usize, len: usize, prot: libc::c_int) -> Result<(), PatchError> {
    // SAFETY: the range covers only pages of the executable's own code, which
    // stays mapped; the protections keep it executable throughout.
    if unsafe { libc::mprotect(start as *mut libc::c_void, len, prot) } != 0 {
        return Err(PatchError::Protect(
            std::io::Error::last_os_error().to_string(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A 9-byte `nopw 0(%rax,%rax,1)` with a 32-bit displacement.
    const NOP9: [u8; 9] = [0x66, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0];

    /// Two hand-assembled functions with an entry and an exit sled each, laid out
    /// as the compiler lays them out:
    /// `sum(a, b) = a + b` (`lea (%rdi,%rsi),%rax`) at 0 and
    /// `add(x, y) = x + y` (`addsd %xmm1,%xmm0`) at 32.
    fn code() -> Vec<u8> {
        let mut c = Vec::new();
        let mut function = |body: &[u8], at: usize| {
            c.resize(at, 0xcc);
            c.extend_from_slice(&JMP_OVER_SLED);
            c.extend_from_slice(&NOP9);
            c.push(0x90); // the exit sled stays 2-byte aligned
            c.extend_from_slice(body);
            c.push(RET);
            c.extend_from_slice(&NOP9);
            c.push(0x90);
        };
        function(&[0x48, 0x8d, 0x04, 0x37], 0);
        function(&[0xf2, 0x0f, 0x58, 0xc1], 32);
        c
    }

    /// Maps `code` executable within ±2 GiB of the trampolines (a sled's `call`
    /// has a 32-bit displacement).
    fn map_near_trampolines(code: &[u8]) -> usize {
        let page = page_size();
        let near = trampoline::entry_trampoline() & !(page - 1);
        for step in 1..64usize {
            let hint = near - step * (16 << 20);
            // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
            let p = unsafe {
                libc::mmap(
                    hint as *mut libc::c_void,
                    page,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            if p as usize == hint {
                // SAFETY: a fresh writable page of our own, larger than `code`.
                unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), p.cast(), code.len()) };
                protect(hint, page, libc::PROT_READ | libc::PROT_EXEC).unwrap();
                return hint;
            }
        }
        panic!("no free page near the trampolines");
    }

    static ENTRIES: AtomicUsize = AtomicUsize::new(0);
    static EXITS: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn count(id: i32, kind: u32) {
        assert!(id == 7 || id == 8);
        match kind {
            0 => ENTRIES.fetch_add(1, Ordering::Relaxed),
            1 => EXITS.fetch_add(1, Ordering::Relaxed),
            _ => panic!("kind {kind}"),
        };
    }

    /// The tests install process-wide handlers: one at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn patched_sleds_call_the_handler_and_keep_arguments_and_results() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let base = map_near_trampolines(&code());
        let sled = |address, kind, function_id| Sled {
            address,
            function: base,
            kind,
            function_id,
            version: 2,
        };
        let sleds = [
            sled(base, SledKind::Entry, 7),
            sled(base + 16, SledKind::Exit, 7),
            sled(base + 32, SledKind::Entry, 8),
            sled(base + 48, SledKind::Exit, 8),
        ];
        // SAFETY: the code above follows the SysV ABI for these signatures.
        let sum: extern "C" fn(u64, u64) -> u64 = unsafe { std::mem::transmute(base) };
        // SAFETY: as above.
        let add: extern "C" fn(f64, f64) -> f64 = unsafe { std::mem::transmute(base + 32) };
        assert_eq!((sum(40, 2), add(1.5, 2.25)), (42, 3.75));

        trampoline::set_handler(Some(count));
        assert_eq!(set_patched(sleds.iter(), true), Ok(4));
        // SAFETY: the page is mapped and readable.
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, 64) };
        assert_eq!(&bytes[..6], &[0x41, 0xba, 7, 0, 0, 0]); // mov $7, %r10d
        assert_eq!(bytes[6], CALL_REL32);
        assert_eq!(&bytes[16..18], &MOV_R10D);
        assert_eq!(bytes[22], JMP_REL32);
        for i in 0..100u64 {
            assert_eq!(sum(i, 2 * i), 3 * i);
            assert_eq!(add(i as f64, 0.5), i as f64 + 0.5);
        }
        assert_eq!(ENTRIES.load(Ordering::Relaxed), 200);
        assert_eq!(EXITS.load(Ordering::Relaxed), 200);

        assert_eq!(set_patched(sleds.iter(), false), Ok(4));
        assert_eq!(&bytes[..2], &JMP_OVER_SLED);
        assert_eq!(bytes[16], RET);
        assert_eq!((sum(1, 2), add(0.25, 0.5)), (3, 0.75));
        assert_eq!(ENTRIES.load(Ordering::Relaxed), 200);
        trampoline::set_handler(None);
        // SAFETY: the page is ours and nothing runs it any more.
        unsafe { libc::munmap(base as *mut libc::c_void, page_size()) };
    }

    extern "C" {
        fn __xray_CustomEvent();
        fn __xray_TypedEvent();
    }

    /// `call` from `at` (5 bytes) to `to`.
    fn call(at: usize, to: usize) -> [u8; 5] {
        let rel = i32::try_from(to as i64 - (at as i64 + 5)).unwrap();
        let mut c = [CALL_REL32, 0, 0, 0, 0];
        c[1..].copy_from_slice(&rel.to_le_bytes());
        c
    }

    /// A 4-byte `nopl 8(%rax)`, what clang puts in an event sled in place of a
    /// `push` when an argument is in its register already.
    const NOP4: [u8; 4] = [0x0f, 0x1f, 0x40, 0x08];

    /// Hand-assembled as clang-14 lays them out, at `base` (where they will run):
    /// - at 0, `triple(x) = 3 * x` with an argument-logging entry sled;
    /// - at 32, `custom(p, n, _, _, c) = p + n + c` that first runs
    ///   `__xray_customevent(p, n)` (a version-2 sled: `jmp +15`);
    /// - at 64, `typed(t, p, n) = p + n` that first runs `__xray_typedevent(t, p, n)`
    ///   (`jmp +20`).
    fn event_code(base: usize) -> Vec<u8> {
        let mut c = Vec::new();
        c.extend_from_slice(&JMP_OVER_SLED);
        c.extend_from_slice(&NOP9);
        c.extend_from_slice(&[0x48, 0x8d, 0x04, 0x7f, RET]); // lea (%rdi,%rdi,2),%rax
        c.resize(32, 0xcc);
        c.extend_from_slice(&JMP_OVER_CUSTOM_EVENT);
        c.extend_from_slice(&NOP4);
        c.extend_from_slice(&NOP4);
        c.extend_from_slice(&call(
            base + c.len(),
            __xray_CustomEvent as *const () as usize,
        ));
        c.extend_from_slice(&[0x90, 0x90]);
        assert_eq!(c.len(), 32 + 2 + 15);
        // lea (%rdi,%rsi),%rax; add %r8,%rax
        c.extend_from_slice(&[0x48, 0x8d, 0x04, 0x37, 0x4c, 0x01, 0xc0, RET]);
        c.resize(64, 0xcc);
        c.extend_from_slice(&JMP_OVER_LONG_EVENT);
        for _ in 0..3 {
            c.extend_from_slice(&NOP4);
        }
        c.extend_from_slice(&call(
            base + c.len(),
            __xray_TypedEvent as *const () as usize,
        ));
        c.extend_from_slice(&[0x90, 0x90, 0x90]);
        assert_eq!(c.len(), 64 + 2 + 20);
        c.extend_from_slice(&[0x48, 0x8d, 0x04, 0x32, RET]); // lea (%rdx,%rsi),%rax
        c
    }

    static ARGS: std::sync::Mutex<Vec<(i32, u32, u64)>> = std::sync::Mutex::new(Vec::new());
    static CUSTOM: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    static TYPED: std::sync::Mutex<Vec<(u16, Vec<u8>)>> = std::sync::Mutex::new(Vec::new());

    unsafe extern "C" fn keep_arg(id: i32, kind: u32, arg: u64) {
        ARGS.lock().unwrap().push((id, kind, arg));
    }
    static KINDS: std::sync::Mutex<Vec<(i32, u32)>> = std::sync::Mutex::new(Vec::new());

    unsafe extern "C" fn keep_kind(id: i32, kind: u32) {
        KINDS.lock().unwrap().push((id, kind));
    }
    unsafe extern "C" fn keep_custom(data: *mut libc::c_void, size: usize) {
        // SAFETY: the sled passes the program's event.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        CUSTOM.lock().unwrap().push(bytes.to_vec());
    }
    unsafe extern "C" fn keep_typed(t: u16, data: *const libc::c_void, size: usize) {
        // SAFETY: the sled passes the program's event.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        TYPED.lock().unwrap().push((t, bytes.to_vec()));
    }

    #[test]
    fn argument_and_event_sleds_reach_their_handlers_and_keep_registers() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // The code's `call`s need its address: map a page, then fill it.
        let base = map_near_trampolines(&[]);
        let code = event_code(base);
        protect(base, page_size(), libc::PROT_READ | libc::PROT_WRITE).unwrap();
        // SAFETY: our own page, writable, larger than the code.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), base as *mut u8, code.len()) };
        protect(base, page_size(), libc::PROT_READ | libc::PROT_EXEC).unwrap();
        let sled = |address, kind, function_id| Sled {
            address,
            function: address,
            kind,
            function_id,
            version: 2,
        };
        let sleds = [
            sled(base, SledKind::LogArgsEntry, 4),
            sled(base + 32, SledKind::CustomEvent, 5),
            sled(base + 64, SledKind::TypedEvent, 6),
        ];
        // SAFETY: the code above follows the SysV ABI for these signatures.
        let triple: extern "C" fn(u64) -> u64 = unsafe { std::mem::transmute(base) };
        // SAFETY: as above.
        let custom: extern "C" fn(*const u8, usize, u64, u64, usize) -> usize =
            unsafe { std::mem::transmute(base + 32) };
        // SAFETY: as above.
        let typed: extern "C" fn(u64, *const u8, usize) -> usize =
            unsafe { std::mem::transmute(base + 64) };
        let event = b"cache miss";
        let run = || {
            assert_eq!(triple(14), 42);
            let p = event.as_ptr();
            assert_eq!(custom(p, 5, 0, 0, 1000), p as usize + 1005);
            // The type's register carries junk above its 16 bits, as it may.
            assert_eq!(typed(0xdead_0007, p, 10), p as usize + 10);
        };
        trampoline::set_arg_handler(Some(keep_arg));
        trampoline::set_custom_event_handler(Some(keep_custom));
        trampoline::set_typed_event_handler(Some(keep_typed));
        run(); // unpatched: nothing reaches the handlers
        assert_eq!(set_patched(sleds.iter(), true), Ok(3));
        // SAFETY: the page is mapped and readable.
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, 96) };
        assert_eq!(&bytes[..6], &[0x41, 0xba, 4, 0, 0, 0]);
        assert_eq!((&bytes[32..34], &bytes[64..66]), (&NOP2[..], &NOP2[..]));
        run();
        run();
        // Without an argument handler, argument-logging entries go to the plain
        // handler with kind 3 (LOG_ARGS_ENTRY), as compiler-rt's trampoline does.
        trampoline::set_arg_handler(None);
        trampoline::set_handler(Some(keep_kind));
        assert_eq!(triple(5), 15);
        trampoline::set_handler(None);
        trampoline::set_arg_handler(Some(keep_arg));
        assert_eq!(*KINDS.lock().unwrap(), [(4, 3)]);
        assert_eq!(set_patched(sleds.iter(), false), Ok(3));
        assert_eq!(&bytes[32..34], &JMP_OVER_CUSTOM_EVENT);
        assert_eq!(&bytes[64..66], &JMP_OVER_LONG_EVENT);
        run();
        trampoline::set_arg_handler(None);
        trampoline::set_custom_event_handler(None);
        trampoline::set_typed_event_handler(None);

        assert_eq!(*ARGS.lock().unwrap(), [(4, 3, 14), (4, 3, 14)]);
        assert_eq!(
            *CUSTOM.lock().unwrap(),
            [b"cache".to_vec(), b"cache".to_vec()]
        );
        let t = (7u16, event.to_vec());
        assert_eq!(*TYPED.lock().unwrap(), [t.clone(), t]);
        // SAFETY: the page is ours and nothing runs it any more.
        unsafe { libc::munmap(base as *mut libc::c_void, page_size()) };
    }

    #[test]
    fn custom_event_sleds_of_version_0_jump_further() {
        let s = |kind, version| Sled {
            address: 0x1000,
            function: 0x1000,
            kind,
            function_id: 1,
            version,
        };
        let jmp = |sled| match target(&sled) {
            Some(Patched::Event(j)) => j,
            other => panic!("{other:?}"),
        };
        assert_eq!(jmp(s(SledKind::CustomEvent, 0)), JMP_OVER_LONG_EVENT);
        assert_eq!(jmp(s(SledKind::CustomEvent, 2)), JMP_OVER_CUSTOM_EVENT);
        assert_eq!(jmp(s(SledKind::TypedEvent, 2)), JMP_OVER_LONG_EVENT);
    }
}
