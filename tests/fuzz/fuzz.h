/* fuzz.h -- shared by the libFuzzer harnesses of tests/fuzz/. Each harness
 * defines LLVMFuzzerTestOneInput; built with clang -fsanitize=fuzzer it is
 * a fuzzer (`make fuzz`), linked with replay.c under any compiler it runs
 * a committed corpus once (ctest label "fuzz", part of `make test`).
 * A failed property aborts (a crash to libFuzzer, a failed test to ctest). */
#ifndef HH_FUZZ_H
#define HH_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond, ...)                                                      \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* Splits the input at NUL bytes into up to n malloc'd C strings (missing
 * ones are ""); returns how many fields the input had. free with
 * fuzz_fields_free. */
static inline size_t fuzz_fields(const uint8_t *data, size_t size, char **out, size_t n) {
    size_t k = 0, start = 0;
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    for (size_t i = 0; i <= size && k < n; i++) {
        if (i == size || data[i] == 0) {
            out[k] = malloc(i - start + 1);
            if (!out[k]) abort();
            memcpy(out[k], data + start, i - start);
            out[k][i - start] = '\0';
            k++;
            start = i + 1;
        }
    }
    size_t had = k;
    for (; k < n; k++) {
        out[k] = calloc(1, 1);
        if (!out[k]) abort();
    }
    return had;
}

static inline void fuzz_fields_free(char **f, size_t n) {
    for (size_t i = 0; i < n; i++) free(f[i]);
}

#endif
