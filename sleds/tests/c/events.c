/*
 * Custom events, typed events and argument-logging entries through the
 * flightrec-sleds runtime, with compiler-rt's C API for their handlers.
 *
 * Build: clang-14 -O2 -fxray-instrument -fxray-instruction-threshold=1
 *        -fxray-always-emit-customevents -fxray-always-emit-typedevents
 *        -fnoxray-link-deps events.c dropin/libflightrec_sleds.a
 * Run with XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr ...".
 *
 * Usage: events N. Four phases of N rounds, each round one custom event
 * ("tick <i>"), one typed event ("load <i>", type "load") and one call of
 * `scaled(i)`, whose first argument is logged:
 *   1. recorded into the trace;
 *   2. the program's own handlers installed: they count, nothing is recorded;
 *   3. handlers removed: recorded again;
 *   4. sleds unpatched: nothing is recorded.
 * Prints the event types, what the handlers saw and the number of wrong results
 * (values live across an event sled must survive it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* compiler-rt/include/xray/xray_interface.h is C++ only. */
extern int __xray_set_handler_arg1(void (*handler)(int32_t id, int kind, uint64_t arg));
extern int __xray_remove_handler_arg1(void);
extern int __xray_set_customevent_handler(void (*handler)(void *data, size_t size));
extern int __xray_remove_customevent_handler(void);
extern int __xray_set_typedevent_handler(void (*handler)(uint16_t type, const void *data,
                                                         size_t size));
extern int __xray_remove_typedevent_handler(void);
extern uint16_t __xray_register_event_type(const char *name);
extern int __xray_patch(void);
extern int __xray_unpatch(void);

/* The event's arguments arrive in the registers the sled passes them in
 * (clang-14 moves them into place in an order that can overwrite one with
 * another otherwise). Values computed before the sled are used after it. */
__attribute__((noinline)) uint64_t emit_custom(const char *data, size_t size) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++) h = (h ^ (unsigned char)data[i]) * 1099511628211ull;
    __xray_customevent(data, size);
    return h ^ size ^ (uint64_t)(uintptr_t)data;
}

__attribute__((noinline)) uint64_t emit_typed(size_t type, const char *data, size_t size) {
    double d = (double)size * 0.5;
    __xray_typedevent(type, data, size);
    return (uint64_t)(d * 4.0) + type + (uint64_t)(uintptr_t)data;
}

__attribute__((noinline, xray_always_instrument, xray_log_args(1))) int64_t scaled(int64_t x) {
    __asm__ volatile("" : "+r"(x));
    return 3 * x + 1;
}

static long handled_custom, handled_typed, handled_args, bad_handler;
static uint16_t load_type;

__attribute__((xray_never_instrument)) static void on_custom(void *data, size_t size) {
    if (size < 5 || memcmp(data, "tick ", 5) != 0) bad_handler++;
    handled_custom++;
}

__attribute__((xray_never_instrument)) static void on_typed(uint16_t type, const void *data,
                                                            size_t size) {
    if (type != load_type || size < 5 || memcmp(data, "load ", 5) != 0) bad_handler++;
    handled_typed++;
}

__attribute__((xray_never_instrument)) static void on_arg(int32_t id, int kind, uint64_t arg) {
    (void)id;
    if (kind != 3 || arg >= 1000000) bad_handler++;
    handled_args++;
}

static long wrong;

__attribute__((xray_never_instrument)) static uint64_t fnv(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

__attribute__((xray_never_instrument)) static void round_of(long i) {
    char tick[32], load[32];
    int nt = snprintf(tick, sizeof tick, "tick %ld", i);
    int nl = snprintf(load, sizeof load, "load %ld", i);
    if (emit_custom(tick, (size_t)nt) != (fnv(tick, (size_t)nt) ^ (size_t)nt ^ (uintptr_t)tick))
        wrong++;
    if (emit_typed(load_type, load, (size_t)nl) != (uint64_t)(2 * nl) + load_type + (uintptr_t)load)
        wrong++;
    if (scaled(i) != 3 * i + 1) wrong++;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10;
    static const char first[] = "first";
    static const char load_name[] = "load";
    uint16_t t_first = __xray_register_event_type(first);
    load_type = __xray_register_event_type(load_name);
    uint16_t t_again = __xray_register_event_type(first);
    printf("types %u %u %u\n", t_first, load_type, t_again);

    long i = 0;
    for (long r = 0; r < n; r++) round_of(i++);

    if (__xray_set_customevent_handler(on_custom) != 1 ||
        __xray_set_typedevent_handler(on_typed) != 1 || __xray_set_handler_arg1(on_arg) != 1) {
        fprintf(stderr, "installing handlers failed\n");
        return 2;
    }
    for (long r = 0; r < n; r++) round_of(i++);
    if (__xray_remove_customevent_handler() != 1 || __xray_remove_typedevent_handler() != 1 ||
        __xray_remove_handler_arg1() != 1) {
        fprintf(stderr, "removing handlers failed\n");
        return 2;
    }

    for (long r = 0; r < n; r++) round_of(i++);
    if (__xray_unpatch() != 1) {
        fprintf(stderr, "unpatching failed\n");
        return 2;
    }
    for (long r = 0; r < n; r++) round_of(i++);

    printf("handled %ld %ld %ld bad %ld\n", handled_custom, handled_typed, handled_args,
           bad_handler);
    printf("wrong %ld\n", wrong);
    return wrong == 0 && bad_handler == 0 ? 0 : 1;
}
