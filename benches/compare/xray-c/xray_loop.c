/*
 * The compiler-rt side of `cargo bench -p flightrec-benches --bench compare`:
 * the same loop as the Rust subjects (one call of a tiny function per
 * iteration, its result summed so the call cannot be removed), with that
 * function instrumented by LLVM XRay.
 *
 * Build: clang-14 -O2 -fxray-instrument -fno-omit-frame-pointer xray_loop.c
 * (the comparison harness does this itself; Debian: clang-14, libclang-rt-14-dev).
 *
 * Usage: xray_loop MODE CALLS BATCHES
 *   MODE off: sleds left unpatched (run with XRAY_OPTIONS=patch_premain=false):
 *             the cost of the call itself, the baseline of the fdr rows.
 *   MODE fdr: FDR mode initialised with __xray_log_init_mode("xray-fdr", "")
 *             (run with XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr ..."),
 *             finalised and flushed at the end as LLVM 14 requires.
 *   MODE floor: sleds unpatched, as `off`, and around each call what any record
 *             of its entry and exit must do at least: two `rdtsc` reads and two
 *             8-byte stores (into a 64 KiB buffer, the size of an FDR buffer).
 * Prints one line per batch: nanoseconds of thread CPU time per call. One
 * warm-up batch first.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

/* The XRay headers are C++ only; these are their extern "C" entry points
 * (compiler-rt/include/xray/xray_log_interface.h). */
enum { XRAY_LOG_INITIALIZED = 2, XRAY_LOG_FINALIZED = 4 };
enum { XRAY_LOG_FLUSHED = 2 };
extern int __xray_log_init_mode(const char *mode, const char *config);
extern int __xray_log_finalize(void);
extern int __xray_log_flushLog(void);

/* The instrumented call: enter and exit handlers run around this body. */
__attribute__((xray_always_instrument, noinline)) uint64_t work(uint64_t x) {
    /* An empty asm keeps the value opaque, like Rust's black_box. */
    __asm__ volatile("" : "+r"(x));
    return x ^ 0x5a;
}

/* Thread CPU time, as the Rust subjects measure it (preempted time slices of a
 * shared machine do not count). */
__attribute__((xray_never_instrument)) static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((xray_never_instrument, noinline)) static uint64_t batch(uint64_t calls) {
    uint64_t acc = 0;
    for (uint64_t i = 0; i < calls; i++) {
        uint64_t x = i;
        __asm__ volatile("" : "+r"(x));
        acc += work(x);
    }
    return acc;
}

/* Time stamps of the floor, two per call. */
static uint64_t floor_stamps[8192];

__attribute__((xray_never_instrument, noinline)) static uint64_t batch_floor(uint64_t calls) {
    uint64_t acc = 0;
    for (uint64_t i = 0; i < calls; i++) {
        uint64_t x = i;
        __asm__ volatile("" : "+r"(x));
        floor_stamps[(2 * i) & 8191] = __rdtsc();
        acc += work(x);
        floor_stamps[(2 * i + 1) & 8191] = __rdtsc();
    }
    return acc;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "off") != 0 && strcmp(argv[1], "fdr") != 0 &&
                      strcmp(argv[1], "floor") != 0)) {
        fprintf(stderr, "usage: %s off|fdr|floor CALLS BATCHES\n", argv[0]);
        return 2;
    }
    int fdr = strcmp(argv[1], "fdr") == 0;
    uint64_t (*run)(uint64_t) = strcmp(argv[1], "floor") == 0 ? batch_floor : batch;
    uint64_t calls = strtoull(argv[2], NULL, 10);
    long batches = strtol(argv[3], NULL, 10);
    if (calls == 0 || batches <= 0) {
        fprintf(stderr, "CALLS and BATCHES must be positive\n");
        return 2;
    }
    if (fdr) {
        int status = __xray_log_init_mode("xray-fdr", "");
        if (status != XRAY_LOG_INITIALIZED) {
            fprintf(stderr, "__xray_log_init_mode returned %d\n", status);
            return 1;
        }
    }
    uint64_t sink = run(calls); /* warm-up */
    for (long b = 0; b < batches; b++) {
        double t0 = now_ns();
        sink += run(calls);
        double t1 = now_ns();
        printf("%.3f\n", (t1 - t0) / (double)calls);
    }
    if (fdr) {
        int fin = __xray_log_finalize();
        int flush = __xray_log_flushLog();
        if (fin != XRAY_LOG_FINALIZED || flush != XRAY_LOG_FLUSHED) {
            fprintf(stderr, "finalize returned %d, flush returned %d\n", fin, flush);
            return 1;
        }
    }
    for (int i = 0; i < 8192; i++) sink += floor_stamps[i];
    fprintf(stderr, "checksum %llu\n", (unsigned long long)sink);
    return 0;
}
