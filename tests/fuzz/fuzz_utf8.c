/* fuzz_utf8.c -- hh_utf8_valid and hh_utf8_scrub (util.c): the scrubbed
 * copy is valid UTF-8 of the same length, valid text is left alone, and
 * hh_utf8_valid agrees with jansson, which refuses to store invalid UTF-8
 * (what the scrub is for: error texts and names written into JSON). */
#include <jansson.h>
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    int valid = hh_utf8_valid(s, size);
    json_t *j = json_stringn(s, size);
    FUZZ_ASSERT(valid == (j != NULL), "hh_utf8_valid says %d, jansson %s", valid, j ? "valid" : "invalid");
    json_decref(j);

    char *f[1];
    fuzz_fields(data, size, f, 1);
    size_t n = strlen(f[0]);
    char *clean = hh_utf8_scrub(f[0]);
    FUZZ_ASSERT(clean != NULL, "out of memory");
    FUZZ_ASSERT(strlen(clean) == n, "the scrub keeps the length (%zu, %zu)", strlen(clean), n);
    FUZZ_ASSERT(hh_utf8_valid(clean, n), "the scrubbed copy is valid UTF-8");
    if (hh_utf8_valid(f[0], n)) FUZZ_ASSERT(!strcmp(clean, f[0]), "valid text is left alone");
    for (size_t i = 0; i < n; i++)
        FUZZ_ASSERT(clean[i] == f[0][i] || clean[i] == '?', "byte %zu: only '?' replaces", i);
    free(clean);
    fuzz_fields_free(f, 1);
    return 0;
}
