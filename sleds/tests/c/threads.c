/*
 * Patching while other threads run the sleds: 4 threads call instrumented
 * functions in a loop and check every result while the main thread patches and
 * unpatches all sleds (and one function's) again and again, custom event sleds
 * included. A half-written sled crashes; a trampoline that loses a register
 * gives a wrong result.
 *
 * The main thread patches only once every worker runs, and stops them only after
 * each has run two more rounds of calls after its last __xray_patch, so that a
 * loaded machine that schedules the workers late still has them run while the
 * sleds change and record afterwards.
 *
 * Usage: threads ROUNDS. Exit status 0 when every result was right.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern int __xray_patch(void);
extern int __xray_unpatch(void);
extern int __xray_patch_function(int32_t id);
extern int __xray_unpatch_function(int32_t id);
extern size_t __xray_max_function_id(void);
extern int __xray_set_handler(void (*handler)(int32_t id, int kind));
extern int __xray_remove_handler(void);

static atomic_int done;
static atomic_long wrong;
static atomic_long calls;
/* Rounds of 1000 calls each worker finished. */
static atomic_long rounds_of[4];

__attribute__((noinline)) double blend(double x, double y, int64_t k) {
    __asm__ volatile("" : "+x"(x));
    return x * (double)k - y;
}

__attribute__((noinline)) int64_t sum6(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e,
                                       int64_t f) {
    __asm__ volatile("" : "+r"(a));
    return a + b + c + d + e + f;
}

__attribute__((noinline)) int64_t relay(int64_t a, int64_t b) {
    __asm__ volatile("" : "+r"(a));
    return sum6(a, b, a, b, a, b);
}

/* A custom event sled (patched with one 2-byte store) between values that must
 * survive it. */
__attribute__((noinline)) int64_t noted(const char *p, size_t n) {
    int64_t h = (int64_t)n * 7;
    __xray_customevent(p, n);
    return h + (int64_t)n + p[0];
}

/* Waits until every worker has finished `more` rounds past `from`. */
__attribute__((xray_never_instrument)) static void wait_rounds(const long from[4], long more) {
    for (int i = 0; i < 4; i++)
        while (atomic_load(&rounds_of[i]) < from[i] + more) sched_yield();
}

/* Kinds seen by the program's own handler: enter, exit, tail exit. */
static atomic_long seen[3];

__attribute__((xray_never_instrument)) static void count(int32_t id, int kind) {
    (void)id;
    if (kind >= 0 && kind < 3) atomic_fetch_add(&seen[kind], 1);
}

__attribute__((xray_never_instrument)) static void *worker(void *arg) {
    intptr_t me = (intptr_t)arg;
    int64_t base = (int64_t)me * 1000;
    long n = 0;
    while (!atomic_load(&done)) {
        for (int64_t i = 0; i < 1000; i++) {
            int64_t a = base + i;
            if (relay(a, 7) != 3 * a + 21) atomic_fetch_add(&wrong, 1);
            if (blend(1.5, 0.5, a) != 1.5 * (double)a - 0.5) atomic_fetch_add(&wrong, 1);
            if (noted("ab", 2) != 14 + 2 + 'a') atomic_fetch_add(&wrong, 1);
            n++;
        }
        atomic_fetch_add(&rounds_of[me], 1);
    }
    atomic_fetch_add(&calls, n);
    return NULL;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv) {
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 200;
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    int32_t max_id = (int32_t)__xray_max_function_id();
    const long none[4] = {0, 0, 0, 0};
    wait_rounds(none, 1);
    for (long r = 0; r < rounds; r++) {
        if (__xray_patch() != 1 || __xray_unpatch() != 1) {
            fprintf(stderr, "patching failed in round %ld\n", r);
            return 2;
        }
        int32_t id = (int32_t)(r % max_id) + 1;
        if (__xray_patch_function(id) != 1 || __xray_unpatch_function(id) != 1) {
            fprintf(stderr, "patching function %d failed\n", id);
            return 2;
        }
    }
    __xray_patch();
    /* A round under way may have begun before the patch: two more. */
    long now[4];
    for (int i = 0; i < 4; i++) now[i] = atomic_load(&rounds_of[i]);
    wait_rounds(now, 2);
    atomic_store(&done, 1);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    /* A handler of the program's own replaces recording: relay's entry and tail
     * exit, sum6's entry and exit. */
    if (__xray_set_handler(count) != 1) return 3;
    int64_t r = relay(1, 2);
    __xray_remove_handler();
    printf("calls %ld wrong %ld max_id %d handler %ld %ld %ld\n", atomic_load(&calls),
           atomic_load(&wrong), max_id, atomic_load(&seen[0]), atomic_load(&seen[1]),
           atomic_load(&seen[2]));
    if (r != 9) return 1;
    return atomic_load(&wrong) == 0 ? 0 : 1;
}
