/*
 * Calls an instrumented function of an instrumented shared library.
 *
 * Build: clang-14 -O2 -fxray-instrument -fxray-instruction-threshold=1
 *        -fnoxray-link-deps shared_main.c dropin/libflightrec_sleds.a
 *        -L. -lshared_lib -Wl,-rpath,'$ORIGIN'
 */
#include <stdio.h>

long shared_twice(long x);

__attribute__((noinline)) long local_add(long x) {
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

int main(void) {
    printf("%ld\n", local_add(shared_twice(20)));
    return 0;
}
