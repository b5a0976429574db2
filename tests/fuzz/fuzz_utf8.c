/* fuzz_utf8.c -- hh__utf8_valid and hh__utf8_escape_len (util.c): the escaped
 * copy is valid UTF-8, valid text is left alone, every other byte becomes
 * its \xNN, and hh__utf8_valid agrees with jansson, which refuses to store
 * invalid UTF-8 (what the escape is for: error texts written into JSON). */
#include <jansson.h>
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    int valid = hh__utf8_valid(s, size);
    json_t *j = json_stringn(s, size);
    FUZZ_ASSERT(valid == (j != NULL), "hh__utf8_valid says %d, jansson %s", valid, j ? "valid" : "invalid");
    json_decref(j);

    char *f[1];
    fuzz_fields(data, size, f, 1);
    size_t n = strlen(f[0]);
    size_t m = 0;
    char *clean = hh__utf8_escape_len(f[0], n, &m);
    FUZZ_ASSERT(clean != NULL, "out of memory");
    FUZZ_ASSERT(strlen(clean) == m, "the escaped copy's length (%zu, %zu)", strlen(clean), m);
    FUZZ_ASSERT(hh__utf8_valid(clean, m), "the escaped copy is valid UTF-8");
    if (hh__utf8_valid(f[0], n)) FUZZ_ASSERT(m == n && !strcmp(clean, f[0]), "valid text is left alone");
    /* read back: every byte is itself or, when it is not UTF-8, \xNN */
    size_t i = 0, o = 0;
    while (i < n) {
        if (clean[o] == f[0][i]) {
            i++, o++;
            continue;
        }
        char hex[5];
        snprintf(hex, sizeof(hex), "\\x%02x", (unsigned char)f[0][i]);
        FUZZ_ASSERT(o + 4 <= m && !memcmp(clean + o, hex, 4), "byte %zu: itself or its \\xNN", i);
        i++, o += 4;
    }
    FUZZ_ASSERT(o == m, "nothing added after the last byte");
    free(clean);
    fuzz_fields_free(f, 1);
    return 0;
}
