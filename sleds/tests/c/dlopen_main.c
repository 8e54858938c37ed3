/*
 * Loads an instrumented shared library with dlopen after the runtime's init
 * (argv[1]: its path) and calls it; with argv[2] = "patch", patches the sleds
 * again afterwards (compiler-rt's __xray_patch), which names the library then.
 *
 * Build: clang-14 -O2 -fxray-instrument -fxray-instruction-threshold=1
 *        -fnoxray-link-deps dlopen_main.c dropin/libflightrec_sleds.a -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int __xray_patch(void);

__attribute__((noinline)) long local_add(long x) {
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: dlopen_main LIBRARY [patch]\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    long (*twice)(long) = (long (*)(long))dlsym(lib, "shared_twice");
    if (!twice) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    if (argc > 2 && strcmp(argv[2], "patch") == 0) {
        fprintf(stderr, "patch: %d\n", __xray_patch());
    }
    printf("%ld\n", local_add(twice(20)));
    fflush(stdout);
    return 0;
}
