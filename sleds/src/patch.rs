//! Writing sleds: turning them into calls of the trampolines and back.
//!
//! An unpatched entry or tail-exit sled is `jmp +9` over 9 bytes of padding; an
//! unpatched exit sled is `ret` followed by 10 bytes of padding. Patched, each is
//! `mov r10d, <function id>` (6 bytes) then a `call` (entry, tail exit) or `jmp`
//! (exit) to a trampoline (5 bytes).
//!
//! Other threads may run a sled while it is written, so the order is the one
//! compiler-rt uses: first the last 9 bytes, which the first two bytes still skip
//! (`jmp +9`) or never reach (`ret`); then the first two bytes (the `mov`'s
//! opcode) in one atomic 2-byte store, sleds being 2-byte aligned. A thread sees
//! the old sled or the new one, never half of one. Unpatching is the single
//! atomic store of the first two bytes (or of the `ret`).
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

/// Patches (`on`) or unpatches every sled of `sleds` this runtime handles (entry,
/// exit, tail exit; event sleds are left alone). Returns how many it wrote.
pub(crate) fn set_patched<'s>(
    sleds: impl Iterator<Item = &'s Sled> + Clone,
    on: bool,
) -> Result<usize, PatchError> {
    let handled = sleds.filter(|s| target(s.kind).is_some());
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

/// The trampoline and whether the sled calls (else jumps to) it.
fn target(kind: SledKind) -> Option<(usize, bool)> {
    match kind {
        SledKind::Entry | SledKind::LogArgsEntry => Some((trampoline::entry_trampoline(), true)),
        SledKind::TailExit => Some((trampoline::tail_exit_trampoline(), true)),
        SledKind::Exit => Some((trampoline::exit_trampoline(), false)),
        SledKind::CustomEvent | SledKind::TypedEvent => None,
    }
}

/// Writes one sled in the order the module docs give.
///
/// # Safety
/// `sled.address` must be the start of a writable sled of `sled.kind`.
unsafe fn write_sled(sled: &Sled, on: bool) -> Result<(), PatchError> {
    let Some((trampoline, is_call)) = target(sled.kind) else {
        return Ok(());
    };
    let p = sled.address as *mut u8;
    // SAFETY (all the atomics below): sleds are 2-byte aligned and live as long as
    // the process; other threads only execute these bytes.
    let head = unsafe { AtomicU16::from_ptr(p.cast::<u16>()) };
    if !on {
        if sled.kind == SledKind::Exit {
            // The `ret` alone (as compiler-rt): the byte after it is never run.
            unsafe { AtomicU8::from_ptr(p) }.store(RET, Ordering::Release);
        } else {
            head.store(u16::from_le_bytes(JMP_OVER_SLED), Ordering::Release);
        }
        return Ok(());
    }
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

    #[test]
    fn patched_sleds_call_the_handler_and_keep_arguments_and_results() {
        let base = map_near_trampolines(&code());
        let sled = |address, kind, function_id| Sled {
            address,
            function: base,
            kind,
            function_id,
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

    #[test]
    fn event_sleds_are_left_alone() {
        let s = Sled {
            address: 0x1000,
            function: 0x1000,
            kind: SledKind::CustomEvent,
            function_id: 1,
        };
        assert_eq!(set_patched([s].iter(), true), Ok(0));
    }
}
