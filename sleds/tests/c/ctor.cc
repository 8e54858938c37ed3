/*
 * ctor.c's C++ twin: a static object's constructor starts XRay's FDR mode and
 * patches the sleds before the runtime's own hook runs.
 *
 * Build: clang++-14 -O2 -fxray-instrument -fxray-instruction-threshold=1
 *        -fnoxray-link-deps ctor.cc dropin/libflightrec_sleds.a
 */
#include <cstdio>
#include <cstdlib>

extern "C" int __xray_log_select_mode(const char *mode);
extern "C" int __xray_log_init_mode(const char *mode, const char *config);
extern "C" int __xray_patch();

__attribute__((noinline)) long square(long x) {
    __asm__ volatile("" : "+r"(x));
    return x * x;
}

struct Tracing {
    int status = -1;
    long early = 0;
    Tracing() {
        if (__xray_log_select_mode("xray-fdr") != 0) {
            return;
        }
        status = __xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0");
        __xray_patch();
        early = square(3);
    }
};

static Tracing tracing;

int main(int argc, char **argv) {
    long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 10;
    long sum = tracing.early;
    for (long i = 0; i < n; i++) {
        sum += square(i);
    }
    std::printf("init %d sum %ld\n", tracing.status, sum);
    return 0;
}
