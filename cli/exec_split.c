/* exec_split.c -- splits the COMMAND of `--exec CLASS=COMMAND` into argv:
 * words separated by spaces and tabs, no quoting and no shell (so a job can
 * never inject arguments). Apart from exec_handler.c so that the fuzz
 * harness (tests/fuzz/fuzz_exec_split.c) can call it alone. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"

char **cli_exec_split(const char *command, size_t *argc) {
    size_t cap = 8, n = 0;
    char **argv = calloc(cap, sizeof(char *));
    *argc = 0;
    for (const char *p = command; argv && *p;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        size_t l = strcspn(p, " \t");
        if (n + 2 > cap) {
            char **v = realloc(argv, (cap *= 2) * sizeof(char *));
            if (!v) goto nomem;
            argv = v;
        }
        if (!(argv[n] = strndup(p, l))) goto nomem;
        argv[++n] = NULL;
        p += l;
    }
    *argc = n;
    return argv;
nomem:
    cli_exec_split_free(argv);
    return NULL;
}

void cli_exec_split_free(char **argv) {
    for (size_t i = 0; argv && argv[i]; i++) free(argv[i]);
    free(argv);
}
