/*
 * Short-call elision through the sleds: every round calls ten short functions
 * (one of them through a tail call) and one that lasts about 3 us, so with a
 * 1 us threshold the short pairs are erased and the long ones kept, buffer
 * after buffer.
 *
 * Build: clang-14 -O2 -fxray-instrument -fxray-instruction-threshold=1
 *        -fnoxray-link-deps elision.c dropin/libflightrec_sleds.a
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) int64_t leaf(int64_t x) {
    __asm__ volatile("" : "+r"(x));
    return 3 * x + 1;
}

/* Ends in a tail call of `leaf`: a tail-exit sled. */
__attribute__((noinline)) int64_t forward(int64_t x) {
    __asm__ volatile("" : "+r"(x));
    return leaf(x + 1);
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Lasts about 3 us, with a short call inside it. */
__attribute__((noinline)) int64_t slow(int64_t x) {
    int64_t end = now_ns() + 3000;
    int64_t acc = leaf(x);
    while (now_ns() < end) {
        acc++;
    }
    return acc;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv) {
    int64_t n = argc > 1 ? strtoll(argv[1], NULL, 10) : 1000;
    int64_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < 9; j++) {
            acc += leaf(i + j);
        }
        acc += forward(i);
        acc += slow(i) > 0;
    }
    printf("%lld\n", (long long)acc);
    return 0;
}
