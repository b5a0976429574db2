/* handler.c -- a --serve handler in C with jansson: hiredhand's line
 * protocol, version 1. Build: cc -o handler handler.c -ljansson
 * Replace perform() with your jobs; return non-zero (and set *why) to fail. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int perform(const char *klass, json_t *job, const char **why) {
    (void)job; /* the payload as stored in Redis */
    if (!strcmp(klass, "FailJob")) return *why = "failed on purpose", 1;
    if (!strcmp(klass, "CrashJob")) exit(3);
    return 0;
}

static void answer(json_t *a) {
    char *s = json_dumps(a, JSON_COMPACT);
    printf("%s\n", s ? s : "garbage: out of memory");
    fflush(stdout);
    free(s);
    json_decref(a);
}

int main(void) {
    answer(json_pack("{s:i}", "hiredhand", 1));
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_t *msg = json_loads(line, 0, NULL);
        const char *klass = json_string_value(json_object_get(msg, "class")), *why = NULL;
        if (!klass) answer(json_pack("{s:b,s:s,s:s}", "ok", 0, "error_class", "ArgumentError", "error_message", "bad job line"));
        else if (perform(klass, json_object_get(msg, "job"), &why) == 0) answer(json_pack("{s:b}", "ok", 1));
        else answer(json_pack("{s:b,s:s,s:s,s:[s]}", "ok", 0, "error_class", "RuntimeError", "error_message", why,
                              "backtrace", "handler.c:perform"));
        json_decref(msg);
    }
    free(line);
    return 0;
}
