/*
 * A shared library built with XRay instrumentation: its sleds are not the
 * executable's, and the runtime says it leaves them unpatched.
 *
 * Build: clang-14 -O2 -fPIC -shared -fxray-instrument
 *        -fxray-instruction-threshold=1 shared_lib.c -o libshared_lib.so
 */
__attribute__((noinline)) long shared_twice(long x) {
    __asm__ volatile("" : "+r"(x));
    return 2 * x;
}
