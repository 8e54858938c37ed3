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
