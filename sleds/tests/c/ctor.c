/*
 * A program written for compiler-rt that starts XRay's FDR mode itself from a
 * static initialiser (a constructor), before the runtime's own hook runs
 * (constructors of objects linked first run first), then patches the sleds.
 * `square` is traced from then on, in the constructor and in main.
 *
 * Build: clang-14 -O2 -fxray-instrument -fxray-instruction-threshold=1
 *        -fnoxray-link-deps ctor.c dropin/libflightrec_sleds.a
 */
#include <stdio.h>
#include <stdlib.h>

/* compiler-rt/include/xray/xray_log_interface.h is C++ only. */
extern int __xray_log_select_mode(const char *mode);
extern int __xray_log_init_mode(const char *mode, const char *config);
extern int __xray_patch(void);

__attribute__((noinline)) long square(long x) {
    __asm__ volatile("" : "+r"(x));
    return x * x;
}

static int init_status = -1;
static long early;

__attribute__((constructor)) static void start_tracing(void) {
    if (__xray_log_select_mode("xray-fdr") != 0) {
        return;
    }
    init_status = __xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0");
    __xray_patch();
    early = square(3);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10;
    long sum = early;
    for (long i = 0; i < n; i++) {
        sum += square(i);
    }
    /* XRAY_LOG_INITIALIZED is 2. */
    printf("init %d sum %ld\n", init_status, sum);
    return 0;
}
