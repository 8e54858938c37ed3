/*
 * What a trace keeps with a runtime's default buffers: `keep long N` makes N
 * calls of `leaf` on the main thread; `keep short T N` starts T threads one
 * after another, each making N calls of `leaf` and exiting. Uses FDR mode the
 * way compiler-rt 14 needs it (__xray_log_init_mode at the start of main,
 * __xray_log_finalize and __xray_log_flushLog at the end, which write the
 * trace), so the same source runs on either runtime. Prints the calls made.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int __xray_log_init_mode(const char *mode, const char *config);
extern int __xray_log_finalize(void);
extern int __xray_log_flushLog(void);

__attribute__((noinline)) long leaf(long x) {
    __asm__ volatile("" : "+r"(x));
    return x * 3 + 1;
}

static long calls_per_thread;

static void *worker(void *arg) {
    long acc = (long)arg;
    for (long i = 0; i < calls_per_thread; i++) acc += leaf(i);
    return (void *)acc;
}

static void finish(void) {
    int fin = __xray_log_finalize(), flush = __xray_log_flushLog();
    if (fin != 4 || flush != 2) fprintf(stderr, "finalize %d flush %d\n", fin, flush);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv) {
    int init = __xray_log_init_mode("xray-fdr", "");
    if (init != 2) fprintf(stderr, "__xray_log_init_mode returned %d\n", init);
    if (argc == 3 && strcmp(argv[1], "long") == 0) {
        long n = atol(argv[2]), acc = 0;
        for (long i = 0; i < n; i++) acc += leaf(i);
        finish();
        printf("calls %ld (%ld)\n", n, acc & 1);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "short") == 0) {
        long threads = atol(argv[2]);
        calls_per_thread = atol(argv[3]);
        for (long t = 0; t < threads; t++) {
            pthread_t th;
            if (pthread_create(&th, NULL, worker, (void *)t) != 0) return 2;
            pthread_join(th, NULL);
        }
        finish();
        printf("calls %ld\n", threads * calls_per_thread);
        return 0;
    }
    fprintf(stderr, "usage: keep long N | keep short THREADS N\n");
    return 2;
}
