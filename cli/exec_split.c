/* exec_split.c -- splits the COMMAND of `--exec CLASS=COMMAND` (and
 * `--serve`) into argv: words separated by spaces and tabs, no quoting and
 * no shell (so a job can never inject arguments); and finds shell syntax
 * in those words, which would reach the program as literal characters.
 * Apart from exec_handler.c so that the fuzz harness
 * (tests/fuzz/fuzz_exec_split.c) and the unit test can call it alone. */
#include <stdio.h>
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

/* A word that is (or starts with) a shell operator: "|", "&&", ";", ">log",
 * "2>&1", "<in"; or ends with one: "hi;", "a|", "b&". */
static int operator_word(const char *w) {
    const char *p = w + strspn(w, "0123456789");
    size_t n = strlen(w);
    return (*p && strchr("<>|&;", *p)) || strchr(";|&", w[n - 1]);
}

int cli_exec_shell_syntax(char *const *argv, char *why, size_t whylen) {
    for (size_t i = 0; argv[i]; i++) {
        const char *w = argv[i], *c = w + strcspn(w, "'\"`$\\");
        const char *what = NULL;
        if (*c == '\'' || *c == '"') what = "a quote";
        else if (*c == '`' || *c == '$') what = "an expansion";
        else if (*c == '\\') what = "a backslash";
        else if (*w == '~') what = "a home directory (~)";
        else if (operator_word(w)) what = "an operator";
        if (!what) continue;
        snprintf(why, whylen,
                 "'%s' holds %s, but COMMAND is split on blanks and run without a shell, so the program would get "
                 "it as it is: put the command in a script (its first line #!/bin/sh) and give the script's path",
                 w, what);
        return 1;
    }
    return 0;
}
