//! The sled path taken apart: each piece a patched sled's fast path executes,
//! timed in one process, interleaved (every round runs every row in turn), so
//! that a change of the machine's state shows in all rows of the same round.
//!
//! `cargo bench -p flightrec-sleds --bench sled_parts -- [ROUNDS [CALLS]]`
//! (defaults 7, 200000). The "sled" rows call a function shaped like a patched
//! XRay function (`mov $id, %r10d; call <trampoline>` at its entry, `mov $id,
//! %r10d; jmp <trampoline>` in place of its `ret`), whose trampolines grow one
//! piece per row, up to this crate's own trampolines recording into
//! flightrec's runtime (FDR, no duration threshold, no file written), with
//! their record path in assembly and with it closed (the Rust fast path
//! records). The other
//! rows time single instructions the path has or could have (one call of a
//! function doing it, plus the loop). Prints per row the fastest round, the 10th percentile,
//! the median and the 90th percentile (and each round when there are few), ns
//! per call of thread CPU time.

use std::arch::global_asm;
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

// Sled-shaped functions: `x ^ 0x5a` with an entry and an exit sled calling the
// trampolines named.
macro_rules! sled_fn {
    ($name:literal, $entry:literal, $exit:literal) => {
        global_asm!(
            ".pushsection .text.sled_parts,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", $name),
            concat!(".hidden ", $name),
            concat!($name, ":"),
            "movl $1, %r10d",
            concat!("call ", $entry),
            "pushq %rbp",
            "movq %rsp, %rbp",
            "movq %rdi, %rax",
            "xorq $0x5a, %rax",
            "popq %rbp",
            "movl $1, %r10d",
            concat!("jmp ", $exit),
            ".popsection",
            options(att_syntax)
        );
    };
}

global_asm!(
    ".pushsection .text.sled_parts,\"ax\",@progbits",
    ".p2align 4",
    ".globl parts_plain",
    ".hidden parts_plain",
    "parts_plain:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "movq %rdi, %rax",
    "xorq $0x5a, %rax",
    "popq %rbp",
    "retq",
    // Trampolines that only return.
    ".p2align 4",
    "parts_t_ret:",
    "retq",
    // Entry: the frame and the 7 argument registers; exit: the frame, rax, rdx.
    ".p2align 4",
    "parts_t_save_entry:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $208, %rsp",
    "andq $-16, %rsp",
    "movq %rdi, 0(%rsp)",
    "movq %rsi, 8(%rsp)",
    "movq %rdx, 16(%rsp)",
    "movq %rcx, 24(%rsp)",
    "movq %r8, 32(%rsp)",
    "movq %r9, 40(%rsp)",
    "movq %rax, 48(%rsp)",
    "movq 0(%rsp), %rdi",
    "movq 8(%rsp), %rsi",
    "movq 16(%rsp), %rdx",
    "movq 24(%rsp), %rcx",
    "movq 32(%rsp), %r8",
    "movq 40(%rsp), %r9",
    "movq 48(%rsp), %rax",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_save_exit:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $64, %rsp",
    "andq $-16, %rsp",
    "movq %rax, 0(%rsp)",
    "movq %rdx, 8(%rsp)",
    "movq 0(%rsp), %rax",
    "movq 8(%rsp), %rdx",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    // The same and the thread-local re-entry flag (initial-exec TLS, as the
    // crate's trampolines), set and cleared around nothing.
    ".p2align 4",
    "parts_t_tls_entry:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $208, %rsp",
    "andq $-16, %rsp",
    "movq %rdi, 0(%rsp)",
    "movq %rsi, 8(%rsp)",
    "movq %rdx, 16(%rsp)",
    "movq %rcx, 24(%rsp)",
    "movq %r8, 32(%rsp)",
    "movq %r9, 40(%rsp)",
    "movq %rax, 48(%rsp)",
    "movq parts_busy@GOTTPOFF(%rip), %r11",
    "cmpb $0, %fs:(%r11)",
    "jne 2f",
    "movb $1, %fs:(%r11)",
    "movl %r10d, 192(%rsp)",
    "movl %r10d, %edi",
    "movq parts_busy@GOTTPOFF(%rip), %r11",
    "movb $0, %fs:(%r11)",
    "2:",
    "movq 0(%rsp), %rdi",
    "movq 8(%rsp), %rsi",
    "movq 16(%rsp), %rdx",
    "movq 24(%rsp), %rcx",
    "movq 32(%rsp), %r8",
    "movq 40(%rsp), %r9",
    "movq 48(%rsp), %rax",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_tls_exit:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $64, %rsp",
    "andq $-16, %rsp",
    "movq %rax, 0(%rsp)",
    "movq %rdx, 8(%rsp)",
    "movq parts_busy@GOTTPOFF(%rip), %r11",
    "cmpb $0, %fs:(%r11)",
    "jne 2f",
    "movb $1, %fs:(%r11)",
    "movl %r10d, 48(%rsp)",
    "movl %r10d, %edi",
    "movq parts_busy@GOTTPOFF(%rip), %r11",
    "movb $0, %fs:(%r11)",
    "2:",
    "movq 0(%rsp), %rax",
    "movq 8(%rsp), %rdx",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_gflag_entry:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $208, %rsp",
    "andq $-16, %rsp",
    "movq %rdi, 0(%rsp)",
    "movq %rsi, 8(%rsp)",
    "movq %rdx, 16(%rsp)",
    "movq %rcx, 24(%rsp)",
    "movq %r8, 32(%rsp)",
    "movq %r9, 40(%rsp)",
    "movq %rax, 48(%rsp)",
    "leaq parts_gflag(%rip), %r11",
    "cmpb $0, (%r11)",
    "jne 2f",
    "movb $1, (%r11)",
    "movl %r10d, 192(%rsp)",
    "movl %r10d, %edi",
    "leaq parts_gflag(%rip), %r11",
    "movb $0, (%r11)",
    "2:",
    "movq 0(%rsp), %rdi",
    "movq 8(%rsp), %rsi",
    "movq 16(%rsp), %rdx",
    "movq 24(%rsp), %rcx",
    "movq 32(%rsp), %r8",
    "movq 40(%rsp), %r9",
    "movq 48(%rsp), %rax",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_gflag_exit:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $64, %rsp",
    "andq $-16, %rsp",
    "movq %rax, 0(%rsp)",
    "movq %rdx, 8(%rsp)",
    "leaq parts_gflag(%rip), %r11",
    "cmpb $0, (%r11)",
    "jne 2f",
    "movb $1, (%r11)",
    "movl %r10d, 48(%rsp)",
    "movl %r10d, %edi",
    "leaq parts_gflag(%rip), %r11",
    "movb $0, (%r11)",
    "2:",
    "movq 0(%rsp), %rax",
    "movq 8(%rsp), %rdx",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_tpflag_entry:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $208, %rsp",
    "andq $-16, %rsp",
    "movq %rdi, 0(%rsp)",
    "movq %rsi, 8(%rsp)",
    "movq %rdx, 16(%rsp)",
    "movq %rcx, 24(%rsp)",
    "movq %r8, 32(%rsp)",
    "movq %r9, 40(%rsp)",
    "movq %rax, 48(%rsp)",
    "movq %fs:0, %r11",
    "addq parts_busy@GOTTPOFF(%rip), %r11",
    "cmpb $0, (%r11)",
    "jne 2f",
    "movb $1, (%r11)",
    "movl %r10d, 192(%rsp)",
    "movl %r10d, %edi",
    "movq %fs:0, %r11",
    "addq parts_busy@GOTTPOFF(%rip), %r11",
    "movb $0, (%r11)",
    "2:",
    "movq 0(%rsp), %rdi",
    "movq 8(%rsp), %rsi",
    "movq 16(%rsp), %rdx",
    "movq 24(%rsp), %rcx",
    "movq 32(%rsp), %r8",
    "movq 40(%rsp), %r9",
    "movq 48(%rsp), %rax",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_tpflag_exit:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $64, %rsp",
    "andq $-16, %rsp",
    "movq %rax, 0(%rsp)",
    "movq %rdx, 8(%rsp)",
    "movq %fs:0, %r11",
    "addq parts_busy@GOTTPOFF(%rip), %r11",
    "cmpb $0, (%r11)",
    "jne 2f",
    "movb $1, (%r11)",
    "movl %r10d, 48(%rsp)",
    "movl %r10d, %edi",
    "movq %fs:0, %r11",
    "addq parts_busy@GOTTPOFF(%rip), %r11",
    "movb $0, (%r11)",
    "2:",
    "movq 0(%rsp), %rax",
    "movq 8(%rsp), %rdx",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_tlscheck_entry:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $208, %rsp",
    "andq $-16, %rsp",
    "movq %rdi, 0(%rsp)",
    "movq %rsi, 8(%rsp)",
    "movq %rdx, 16(%rsp)",
    "movq %rcx, 24(%rsp)",
    "movq %r8, 32(%rsp)",
    "movq %r9, 40(%rsp)",
    "movq %rax, 48(%rsp)",
    "movq parts_busy@GOTTPOFF(%rip), %r11",
    "cmpb $0, %fs:(%r11)",
    "jne 2f",
    "movl %r10d, 192(%rsp)",
    "movl %r10d, %edi",
    "2:",
    "movq 0(%rsp), %rdi",
    "movq 8(%rsp), %rsi",
    "movq 16(%rsp), %rdx",
    "movq 24(%rsp), %rcx",
    "movq 32(%rsp), %r8",
    "movq 40(%rsp), %r9",
    "movq 48(%rsp), %rax",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".p2align 4",
    "parts_t_tlscheck_exit:",
    "pushq %rbp",
    "movq %rsp, %rbp",
    "subq $64, %rsp",
    "andq $-16, %rsp",
    "movq %rax, 0(%rsp)",
    "movq %rdx, 8(%rsp)",
    "movq parts_busy@GOTTPOFF(%rip), %r11",
    "cmpb $0, %fs:(%r11)",
    "jne 2f",
    "movl %r10d, 48(%rsp)",
    "movl %r10d, %edi",
    "2:",
    "movq 0(%rsp), %rax",
    "movq 8(%rsp), %rdx",
    "movq %rbp, %rsp",
    "popq %rbp",
    "retq",
    ".popsection",
    ".pushsection .tbss.parts_busy,\"awT\",@nobits",
    ".hidden parts_busy",
    ".type parts_busy,@object",
    ".size parts_busy, 1",
    "parts_busy:",
    ".zero 1",
    ".popsection",
    options(att_syntax)
);

// The same and a call of a function taking the id in edi (as the crate's fast
// paths do): `$entry_fn` / `$exit_fn`.
macro_rules! calling_trampolines {
    ($entry:literal, $exit:literal, $entry_fn:path, $exit_fn:path) => {
        global_asm!(
            ".pushsection .text.sled_parts,\"ax\",@progbits",
            ".p2align 4",
            concat!($entry, ":"),
            "pushq %rbp",
            "movq %rsp, %rbp",
            "subq $208, %rsp",
            "andq $-16, %rsp",
            "movq %rdi, 0(%rsp)",
            "movq %rsi, 8(%rsp)",
            "movq %rdx, 16(%rsp)",
            "movq %rcx, 24(%rsp)",
            "movq %r8, 32(%rsp)",
            "movq %r9, 40(%rsp)",
            "movq %rax, 48(%rsp)",
            "movq parts_busy@GOTTPOFF(%rip), %r11",
            "cmpb $0, %fs:(%r11)",
            "jne 2f",
            "movb $1, %fs:(%r11)",
            "movl %r10d, 192(%rsp)",
            "movl %r10d, %edi",
            "call {entry_fn}",
            "movq parts_busy@GOTTPOFF(%rip), %r11",
            "movb $0, %fs:(%r11)",
            "2:",
            "movq 0(%rsp), %rdi",
            "movq 8(%rsp), %rsi",
            "movq 16(%rsp), %rdx",
            "movq 24(%rsp), %rcx",
            "movq 32(%rsp), %r8",
            "movq 40(%rsp), %r9",
            "movq 48(%rsp), %rax",
            "movq %rbp, %rsp",
            "popq %rbp",
            "retq",
            ".p2align 4",
            concat!($exit, ":"),
            "pushq %rbp",
            "movq %rsp, %rbp",
            "subq $64, %rsp",
            "andq $-16, %rsp",
            "movq %rax, 0(%rsp)",
            "movq %rdx, 8(%rsp)",
            "movq parts_busy@GOTTPOFF(%rip), %r11",
            "cmpb $0, %fs:(%r11)",
            "jne 2f",
            "movb $1, %fs:(%r11)",
            "movl %r10d, 48(%rsp)",
            "movl %r10d, %edi",
            "call {exit_fn}",
            "movq parts_busy@GOTTPOFF(%rip), %r11",
            "movb $0, %fs:(%r11)",
            "2:",
            "movq 0(%rsp), %rax",
            "movq 8(%rsp), %rdx",
            "movq %rbp, %rsp",
            "popq %rbp",
            "retq",
            ".popsection",
            entry_fn = sym $entry_fn,
            exit_fn = sym $exit_fn,
            options(att_syntax)
        );
    };
}

#[no_mangle]
extern "C" fn parts_empty_fast(id: u32) -> bool {
    black_box(id) != 0
}

calling_trampolines!(
    "parts_t_call_entry",
    "parts_t_call_exit",
    parts_empty_fast,
    parts_empty_fast
);
/// A record's bare minimum: `rdtsc` and an 8-byte store into a 64 KiB buffer.
#[no_mangle]
extern "C" fn parts_rdtsc_store(id: u32) -> bool {
    static POS: AtomicUsize = AtomicUsize::new(0);
    let pos = POS.load(Ordering::Relaxed);
    // SAFETY: `rdtsc` is in the x86_64 baseline.
    let t = unsafe { std::arch::x86_64::_rdtsc() };
    // SAFETY: the index is masked into the array; only this thread writes it.
    unsafe {
        std::ptr::addr_of_mut!(RECORDS)
            .cast::<u64>()
            .add(pos & 8191)
            .write_volatile(t << 32 | u64::from(id) << 4)
    };
    POS.store(pos + 1, Ordering::Relaxed);
    true
}

/// `rdtsc` alone.
#[no_mangle]
extern "C" fn parts_rdtsc_only(id: u32) -> bool {
    // SAFETY: `rdtsc` is in the x86_64 baseline.
    black_box(unsafe { std::arch::x86_64::_rdtsc() }) != u64::from(id)
}

/// A ring as the record path sees it, for [`mimic`].
struct FakeRing {
    busy: AtomicBool,
    buf: *mut u8,
    pos: usize,
    limit: usize,
    latest_tsc: u64,
    latest_cpu: u32,
    extents: bool,
}

static mut FAKE: FakeRing = FakeRing {
    busy: AtomicBool::new(false),
    buf: std::ptr::null_mut(),
    pos: 64,
    limit: 65536,
    latest_tsc: 0,
    latest_cpu: 0,
    extents: true,
};
static FAKE_STATE: AtomicU8 = AtomicU8::new(2);
static FAKE_HANDLER: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
std::thread_local! {
    static FAKE_CURRENT: Cell<*mut FakeRing> = const { Cell::new(std::ptr::null_mut()) };
}
const STATE: u32 = 1;
const TLS: u32 = 2;
const BUSY: u32 = 4;
const DELTA: u32 = 8;
const LIMIT: u32 = 16;
const EXTENTS: u32 = 32;
const HANDLER: u32 = 64;

/// The record path rebuilt piece by piece (`F`: which pieces): `rdtsc` and an
/// 8-byte store into a 64 KiB buffer, and optionally the runtime state checks
/// around a busy flag, the ring found through a thread-local, the busy flag,
/// the delta test on the time, the room test, the extents store, the handler
/// test.
#[inline(never)]
extern "C" fn mimic<const F: u32>(id: u32) -> bool {
    if F & HANDLER != 0 && !FAKE_HANDLER.load(Ordering::Relaxed).is_null() {
        return false;
    }
    if F & STATE != 0 && FAKE_STATE.load(Ordering::Relaxed) != 2 {
        return false;
    }
    let r = if F & TLS != 0 {
        let p = FAKE_CURRENT.with(Cell::get);
        if p.is_null() {
            return false;
        }
        p
    } else {
        std::ptr::addr_of_mut!(FAKE)
    };
    // SAFETY: only this thread uses `FAKE`, through `r`.
    let r = unsafe { &mut *r };
    if F & BUSY != 0 {
        if r.busy.load(Ordering::Relaxed) {
            return false;
        }
        r.busy.store(true, Ordering::Relaxed);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    }
    let done = (F & STATE == 0 || FAKE_STATE.load(Ordering::Relaxed) == 2) && {
        // SAFETY: `rdtsc` is in the x86_64 baseline.
        let t = unsafe { std::arch::x86_64::_rdtsc() };
        let delta = t.wrapping_sub(r.latest_tsc);
        if F & DELTA != 0 && (delta >> 32) | u64::from(r.latest_cpu) != 0 {
            false
        } else {
            let mut pos = r.pos;
            if F & LIMIT != 0 {
                if pos + 8 > r.limit {
                    pos = 64;
                }
            } else {
                pos = 64 + (pos & 0xfff8) % (65536 - 64);
            }
            // SAFETY: `buf` is a 64 KiB buffer and `pos + 8 <= 65536`.
            unsafe {
                r.buf
                    .add(pos)
                    .cast::<u64>()
                    .write_unaligned(delta << 32 | u64::from(id) << 4)
            };
            if F & EXTENTS != 0 && r.extents {
                // SAFETY: as above, bytes 1..9.
                unsafe { r.buf.add(1).cast::<u64>().write_unaligned(pos as u64) };
            }
            r.pos = pos + 8;
            r.latest_tsc = t;
            true
        }
    };
    if F & BUSY != 0 {
        r.busy.store(false, Ordering::Release);
    }
    done
}

/// Records written by `parts_rdtsc_store`.
static mut RECORDS: [u64; 8192] = [0; 8192];

calling_trampolines!(
    "parts_t_rdtsc_entry",
    "parts_t_rdtsc_exit",
    parts_rdtsc_only,
    parts_rdtsc_only
);
calling_trampolines!(
    "parts_t_record_entry",
    "parts_t_record_exit",
    parts_rdtsc_store,
    parts_rdtsc_store
);
calling_trampolines!(
    "parts_t_real_fast_entry",
    "parts_t_real_fast_exit",
    __flightrec_sleds_entry_fast,
    __flightrec_sleds_exit_fast
);

calling_trampolines!(
    "parts_t_m0_entry",
    "parts_t_m0_exit",
    mimic::<0>,
    mimic::<0>
);
sled_fn!("parts_sled_m0", "parts_t_m0_entry", "parts_t_m0_exit");
calling_trampolines!(
    "parts_t_m1_entry",
    "parts_t_m1_exit",
    mimic::<1>,
    mimic::<1>
);
sled_fn!("parts_sled_m1", "parts_t_m1_entry", "parts_t_m1_exit");
calling_trampolines!(
    "parts_t_m3_entry",
    "parts_t_m3_exit",
    mimic::<3>,
    mimic::<3>
);
sled_fn!("parts_sled_m3", "parts_t_m3_entry", "parts_t_m3_exit");
calling_trampolines!(
    "parts_t_m7_entry",
    "parts_t_m7_exit",
    mimic::<7>,
    mimic::<7>
);
sled_fn!("parts_sled_m7", "parts_t_m7_entry", "parts_t_m7_exit");
calling_trampolines!(
    "parts_t_m15_entry",
    "parts_t_m15_exit",
    mimic::<15>,
    mimic::<15>
);
sled_fn!("parts_sled_m15", "parts_t_m15_entry", "parts_t_m15_exit");
calling_trampolines!(
    "parts_t_m31_entry",
    "parts_t_m31_exit",
    mimic::<31>,
    mimic::<31>
);
sled_fn!("parts_sled_m31", "parts_t_m31_entry", "parts_t_m31_exit");
calling_trampolines!(
    "parts_t_m63_entry",
    "parts_t_m63_exit",
    mimic::<63>,
    mimic::<63>
);
sled_fn!("parts_sled_m63", "parts_t_m63_entry", "parts_t_m63_exit");
calling_trampolines!(
    "parts_t_m127_entry",
    "parts_t_m127_exit",
    mimic::<127>,
    mimic::<127>
);
sled_fn!("parts_sled_m127", "parts_t_m127_entry", "parts_t_m127_exit");
sled_fn!("parts_sled_ret", "parts_t_ret", "parts_t_ret");
sled_fn!("parts_sled_save", "parts_t_save_entry", "parts_t_save_exit");
sled_fn!("parts_sled_tls", "parts_t_tls_entry", "parts_t_tls_exit");
sled_fn!(
    "parts_sled_gflag",
    "parts_t_gflag_entry",
    "parts_t_gflag_exit"
);
sled_fn!(
    "parts_sled_tpflag",
    "parts_t_tpflag_entry",
    "parts_t_tpflag_exit"
);
sled_fn!(
    "parts_sled_tlscheck",
    "parts_t_tlscheck_entry",
    "parts_t_tlscheck_exit"
);
sled_fn!("parts_sled_call", "parts_t_call_entry", "parts_t_call_exit");
sled_fn!(
    "parts_sled_rdtsc",
    "parts_t_rdtsc_entry",
    "parts_t_rdtsc_exit"
);
sled_fn!(
    "parts_sled_record",
    "parts_t_record_entry",
    "parts_t_record_exit"
);
sled_fn!(
    "parts_sled_real_fast",
    "parts_t_real_fast_entry",
    "parts_t_real_fast_exit"
);
sled_fn!(
    "parts_sled_real",
    "__flightrec_sleds_entry",
    "__flightrec_sleds_exit"
);

// Single instructions, each in a function of its own.
global_asm!(
    ".pushsection .text.sled_parts,\"ax\",@progbits",
    ".p2align 4",
    "parts_rdtsc:",
    "rdtsc",
    "shlq $32, %rdx",
    "orq %rdx, %rax",
    "retq",
    ".p2align 4",
    "parts_stores_rdtsc:",
    "subq $72, %rsp",
    "movq %rdi, 0(%rsp)",
    "movq %rsi, 8(%rsp)",
    "movq %rdx, 16(%rsp)",
    "movq %rcx, 24(%rsp)",
    "movq %r8, 32(%rsp)",
    "movq %r9, 40(%rsp)",
    "movq %rax, 48(%rsp)",
    "movq %rdi, 56(%rsp)",
    "rdtsc",
    "shlq $32, %rdx",
    "orq %rdx, %rax",
    "addq $72, %rsp",
    "retq",
    ".p2align 4",
    "parts_rdtsc_stores:",
    "subq $72, %rsp",
    "rdtsc",
    "movq %rdi, 0(%rsp)",
    "movq %rsi, 8(%rsp)",
    "movq %rdx, 16(%rsp)",
    "movq %rcx, 24(%rsp)",
    "movq %r8, 32(%rsp)",
    "movq %r9, 40(%rsp)",
    "movq %rax, 48(%rsp)",
    "movq %rdi, 56(%rsp)",
    "shlq $32, %rdx",
    "orq %rdx, %rax",
    "addq $72, %rsp",
    "retq",
    ".p2align 4",
    "parts_rdtsc_2:",
    "rdtsc",
    "movq %rax, %rcx",
    "rdtsc",
    "addq %rcx, %rax",
    "retq",
    ".p2align 4",
    "parts_adds:",
    "movq %rdi, %rax",
    ".rept 64",
    "addq $1, %rax",
    ".endr",
    "retq",
    ".p2align 4",
    "parts_chase:",
    "leaq parts_lines(%rip), %rax",
    "movq (%rax), %rax",
    "movq (%rax), %rax",
    "movq (%rax), %rax",
    "movq (%rax), %rax",
    "addq %rdi, %rax",
    "retq",
    ".p2align 4",
    "parts_lines_12:",
    "movq %rdi, %rax",
    "addq parts_lines+0(%rip), %rax",
    "addq parts_lines+64(%rip), %rax",
    "addq parts_lines+128(%rip), %rax",
    "addq parts_lines+192(%rip), %rax",
    "addq parts_lines+256(%rip), %rax",
    "addq parts_lines+320(%rip), %rax",
    "addq parts_lines+384(%rip), %rax",
    "addq parts_lines+448(%rip), %rax",
    "addq parts_lines+512(%rip), %rax",
    "addq parts_lines+576(%rip), %rax",
    "addq parts_lines+640(%rip), %rax",
    "addq parts_lines+704(%rip), %rax",
    "retq",
    ".p2align 4",
    "parts_rdtscp:",
    "rdtscp",
    "shlq $32, %rdx",
    "orq %rdx, %rax",
    "retq",
    ".p2align 4",
    "parts_pushf_popf:",
    "pushfq",
    "popfq",
    "movq %rdi, %rax",
    "retq",
    ".p2align 4",
    "parts_lock_add:",
    "lock addq $1, parts_word(%rip)",
    "movq %rdi, %rax",
    "retq",
    ".p2align 4",
    "parts_xchg:",
    "movq %rdi, %rax",
    "xchgq %rax, parts_word(%rip)",
    "retq",
    ".p2align 4",
    "parts_mfence:",
    "mfence",
    "movq %rdi, %rax",
    "retq",
    ".p2align 4",
    "parts_lfence:",
    "lfence",
    "movq %rdi, %rax",
    "retq",
    ".p2align 4",
    "parts_tls_load:",
    "movq parts_busy@GOTTPOFF(%rip), %r11",
    "movzbq %fs:(%r11), %rax",
    "addq %rdi, %rax",
    "retq",
    ".popsection",
    // Four lines, each holding the address of the next (the last its own).
    ".pushsection .data.parts_lines,\"aw\",@progbits",
    ".p2align 6",
    "parts_lines:",
    ".quad parts_lines + 64",
    ".zero 56",
    ".quad parts_lines + 128",
    ".zero 56",
    ".quad parts_lines + 192",
    ".zero 56",
    ".quad parts_lines + 192",
    ".zero 56",
    ".zero 512",
    ".popsection",
    ".pushsection .bss.parts_gflag,\"aw\",@nobits",
    "parts_gflag:",
    ".zero 64",
    ".popsection",
    ".pushsection .bss.parts_word,\"aw\",@nobits",
    ".p2align 6",
    "parts_word:",
    ".zero 64",
    ".popsection",
    options(att_syntax)
);

extern "C" {
    fn __flightrec_sleds_entry_fast(id: u32) -> bool;
    fn __flightrec_sleds_exit_fast(id: u32) -> bool;
    fn parts_plain(x: u64) -> u64;
    fn parts_sled_ret(x: u64) -> u64;
    fn parts_sled_save(x: u64) -> u64;
    fn parts_sled_tls(x: u64) -> u64;
    fn parts_sled_gflag(x: u64) -> u64;
    fn parts_sled_tpflag(x: u64) -> u64;
    fn parts_sled_tlscheck(x: u64) -> u64;
    fn parts_sled_call(x: u64) -> u64;
    fn parts_sled_real_fast(x: u64) -> u64;
    fn parts_sled_rdtsc(x: u64) -> u64;
    fn parts_sled_record(x: u64) -> u64;
    fn parts_adds(x: u64) -> u64;
    fn parts_sled_m0(x: u64) -> u64;
    fn parts_sled_m1(x: u64) -> u64;
    fn parts_sled_m3(x: u64) -> u64;
    fn parts_sled_m7(x: u64) -> u64;
    fn parts_sled_m15(x: u64) -> u64;
    fn parts_sled_m31(x: u64) -> u64;
    fn parts_sled_m63(x: u64) -> u64;
    fn parts_sled_m127(x: u64) -> u64;

    fn parts_chase(x: u64) -> u64;
    fn parts_lines_12(x: u64) -> u64;
    fn parts_sled_real(x: u64) -> u64;
    fn parts_rdtsc(x: u64) -> u64;
    fn parts_rdtscp(x: u64) -> u64;
    fn parts_stores_rdtsc(x: u64) -> u64;
    fn parts_rdtsc_stores(x: u64) -> u64;
    fn parts_rdtsc_2(x: u64) -> u64;
    fn parts_pushf_popf(x: u64) -> u64;
    fn parts_lock_add(x: u64) -> u64;
    fn parts_xchg(x: u64) -> u64;
    fn parts_mfence(x: u64) -> u64;
    fn parts_lfence(x: u64) -> u64;
    fn parts_tls_load(x: u64) -> u64;
}

/// Time stamps of the floor row, two per call (a 64 KiB buffer, as an FDR buffer).
static mut STAMPS: [u64; 8192] = [0; 8192];

#[inline(never)]
fn run_fn(f: unsafe extern "C" fn(u64) -> u64, calls: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..calls {
        // SAFETY: every `parts_*` function follows the C ABI: one integer
        // argument, one result, and keeps every callee-saved register.
        acc = acc.wrapping_add(unsafe { f(black_box(i)) });
    }
    acc
}

/// The loop's floor: the call and two `rdtsc` reads and 8-byte stores around it.
#[inline(never)]
fn run_floor(calls: u64) -> u64 {
    let mut acc = 0u64;
    let stamps = std::ptr::addr_of_mut!(STAMPS).cast::<u64>();
    for i in 0..calls {
        let x = black_box(i);
        // SAFETY: indices are masked into the 8192-entry array, which only this
        // thread writes; `rdtsc` is in the x86_64 baseline; `parts_plain` as in
        // `run_fn`.
        unsafe {
            stamps
                .add((2 * i as usize) & 8191)
                .write_volatile(std::arch::x86_64::_rdtsc());
            acc = acc.wrapping_add(parts_plain(x));
            stamps
                .add((2 * i as usize + 1) & 8191)
                .write_volatile(std::arch::x86_64::_rdtsc());
        }
    }
    acc
}

fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

enum Row {
    Fn(unsafe extern "C" fn(u64) -> u64),
    /// As `Fn`, with the trampolines' record path in assembly closed.
    InlineClosed(unsafe extern "C" fn(u64) -> u64),
    Floor,
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = args.first().copied().unwrap_or(7).max(1);
    let calls = args.get(1).copied().unwrap_or(200_000).max(1);

    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sled-parts");
    std::fs::create_dir_all(&dir).unwrap();
    let config = flightrec::xray::Config::builder()
        .logfile_base(format!("{}/trace-", dir.display()))
        .func_duration_threshold_us(0)
        .buffer_size(65536)
        .buffer_max(8)
        .no_file_flush(true)
        .build()
        .unwrap();
    flightrec::xray::init(config).unwrap();
    // The recording handler (and this crate linked, for its trampolines).
    flightrec_sleds::set_handler(None);

    let rows: Vec<(&str, Row)> = vec![
        ("call of x ^ 0x5a (no sleds)", Row::Fn(parts_plain)),
        ("floor: call + 2 x (rdtsc + store)", Row::Floor),
        (
            "sleds: call/ret of empty trampolines",
            Row::Fn(parts_sled_ret),
        ),
        (" + frame, register saves", Row::Fn(parts_sled_save)),
        (" + thread-local re-entry flag", Row::Fn(parts_sled_tls)),
        (
            "   (the flag in a global instead)",
            Row::Fn(parts_sled_gflag),
        ),
        (
            "   (the flag through the thread pointer)",
            Row::Fn(parts_sled_tpflag),
        ),
        (
            "   (the flag tested, not set)",
            Row::Fn(parts_sled_tlscheck),
        ),
        (" + call of an empty function", Row::Fn(parts_sled_call)),
        (" + a function reading rdtsc", Row::Fn(parts_sled_rdtsc)),
        (
            " + a function: rdtsc + 8-byte store",
            Row::Fn(parts_sled_record),
        ),
        (
            "mimic: rdtsc + store through a struct",
            Row::Fn(parts_sled_m0),
        ),
        (" + runtime state checks", Row::Fn(parts_sled_m1)),
        (" + ring through a thread-local", Row::Fn(parts_sled_m3)),
        (" + busy flag", Row::Fn(parts_sled_m7)),
        (" + delta test on the time", Row::Fn(parts_sled_m15)),
        (" + room test", Row::Fn(parts_sled_m31)),
        (" + extents store", Row::Fn(parts_sled_m63)),
        (" + handler test", Row::Fn(parts_sled_m127)),
        (
            " + the crate's fast paths (recording)",
            Row::Fn(parts_sled_real_fast),
        ),
        (
            "the crate's trampolines (recording)",
            Row::Fn(parts_sled_real),
        ),
        (
            " (their inline path closed)",
            Row::InlineClosed(parts_sled_real),
        ),
        ("clock gauge: 64 dependent adds", Row::Fn(parts_adds)),
        ("4 dependent loads", Row::Fn(parts_chase)),
        ("12 loads of 12 lines", Row::Fn(parts_lines_12)),
        ("rdtsc", Row::Fn(parts_rdtsc)),
        ("rdtscp", Row::Fn(parts_rdtscp)),
        ("8 stores, then rdtsc", Row::Fn(parts_stores_rdtsc)),
        ("rdtsc, then 8 stores", Row::Fn(parts_rdtsc_stores)),
        ("2 x rdtsc", Row::Fn(parts_rdtsc_2)),
        ("pushfq + popfq", Row::Fn(parts_pushf_popf)),
        ("lock add", Row::Fn(parts_lock_add)),
        ("xchg with memory", Row::Fn(parts_xchg)),
        ("mfence", Row::Fn(parts_mfence)),
        ("lfence", Row::Fn(parts_lfence)),
        ("initial-exec thread-local load", Row::Fn(parts_tls_load)),
    ];
    let fake_buffer: &'static mut [u8] = Box::leak(vec![0u8; 65536].into_boxed_slice());
    // SAFETY: nothing runs `mimic` yet.
    unsafe { (*std::ptr::addr_of_mut!(FAKE)).buf = fake_buffer.as_mut_ptr() };
    FAKE_CURRENT.with(|c| c.set(std::ptr::addr_of_mut!(FAKE)));
    // The thread's first record takes a ring (the full path).
    // SAFETY: as in `run_fn`.
    black_box(unsafe { parts_sled_real(1) });
    let mut times = vec![Vec::new(); rows.len()];
    let mut sink = 0u64;
    for _ in 0..rounds {
        for (i, (_, row)) in rows.iter().enumerate() {
            let run = |n| match row {
                Row::Fn(f) => run_fn(*f, n),
                Row::InlineClosed(f) => {
                    flightrec_sleds::set_inline_record_path(false);
                    let r = run_fn(*f, n);
                    flightrec_sleds::set_inline_record_path(true);
                    r
                }
                Row::Floor => run_floor(n),
            };
            sink = sink.wrapping_add(run(calls / 10));
            let t0 = thread_cpu_ns();
            sink = sink.wrapping_add(run(calls));
            times[i].push((thread_cpu_ns() - t0) / calls as f64);
        }
    }
    black_box(sink);
    let stats = flightrec::xray::shutdown().unwrap().stats;
    // The recording rows must have recorded (two records per call, 4 buffers
    // of 64 KiB overwritten again and again), and lost nothing.
    assert!(
        stats.threads == 1 && stats.buffers_overwritten > 0 && stats.records_dropped == 0,
        "{stats:?}"
    );
    // With many short rounds, the spread shows which rows a change of the
    // machine's state moves: the 90th percentile against the 10th.
    println!(
        "ns per call, {rounds} rounds of {calls} calls (rows interleaved): \
         fastest, 10th percentile, median, 90th percentile{}",
        if rounds <= 12 { ", each round" } else { "" }
    );
    for ((name, _), t) in rows.iter().zip(&times) {
        let mut sorted = t.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: usize| sorted[(sorted.len() - 1) * q / 100];
        let each: Vec<String> = t.iter().map(|x| format!("{x:.1}")).collect();
        println!(
            "  {name:<40} {:6.2} {:6.2} {:6.2} {:6.2}  {}",
            sorted[0],
            at(10),
            at(50),
            at(90),
            if rounds <= 12 {
                each.join(" ")
            } else {
                String::new()
            }
        );
    }
}
