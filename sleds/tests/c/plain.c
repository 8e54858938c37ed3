/*
 * A program that calls no XRay function: the runtime starts from XRAY_OPTIONS
 * before main and writes the trace at exit. Its instrumented functions take and
 * return integers and doubles, and one ends in a tail call, so a trampoline that
 * lost a register or a sled patched wrongly shows in the printed result.
 *
 * Build: clang-14 -O2 -fxray-instrument -fxray-instruction-threshold=1
 *        -fnoxray-link-deps plain.c dropin/libflightrec_sleds.a
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) double scale(double x, int64_t k, double y) {
    __asm__ volatile("" : "+x"(x));
    return x * (double)k + y;
}

__attribute__((noinline)) int64_t mix(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e,
                                      int64_t f) {
    __asm__ volatile("" : "+r"(a));
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

/* Ends in a tail call of `mix`: a tail-exit sled. */
__attribute__((noinline)) int64_t forward(int64_t a, int64_t b) {
    __asm__ volatile("" : "+r"(a));
    return mix(a, b, a, b, a, b);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv) {
    int64_t n = argc > 1 ? strtoll(argv[1], NULL, 10) : 1000;
    int64_t acc = 0;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += forward(i, i + 1);
        sum += scale(0.5, i, 0.25);
    }
    /* acc = sum of 9i + 12(i+1) = 21 n(n-1)/2 + 12 n; sum = 0.5 n(n-1)/2 + 0.25 n */
    printf("%lld %.2f\n", (long long)acc, sum);
    int64_t want_acc = 21 * n * (n - 1) / 2 + 12 * n;
    double want_sum = 0.5 * (double)(n * (n - 1) / 2) + 0.25 * (double)n;
    return acc == want_acc && sum == want_sum ? 0 : 1;
}
