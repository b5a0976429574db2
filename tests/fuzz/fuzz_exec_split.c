/* fuzz_exec_split.c -- the --exec COMMAND split (cli/exec_split.c): words
 * are the maximal runs of bytes other than space and tab, in order, none
 * empty, nothing added or lost. */
#include "fuzz.h"
#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *f[1];
    fuzz_fields(data, size, f, 1);
    size_t argc = 99;
    char **argv = cli_exec_split(f[0], &argc);
    FUZZ_ASSERT(argv != NULL, "out of memory");
    /* the reference split */
    size_t words = 0, i = 0, len = strlen(f[0]);
    while (i < len) {
        while (i < len && (f[0][i] == ' ' || f[0][i] == '\t')) i++;
        if (i == len) break;
        size_t l = strcspn(f[0] + i, " \t");
        FUZZ_ASSERT(words < argc, "word %zu missing", words);
        FUZZ_ASSERT(strlen(argv[words]) == l && !memcmp(argv[words], f[0] + i, l), "word %zu differs", words);
        words++;
        i += l;
    }
    FUZZ_ASSERT(words == argc, "%zu words, argc %zu", words, argc);
    FUZZ_ASSERT(argv[argc] == NULL, "argv is NULL-terminated");
    cli_exec_split_free(argv);
    fuzz_fields_free(f, 1);
    return 0;
}
