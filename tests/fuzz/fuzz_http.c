/* fuzz_http.c -- the HTTP request handler without a socket: routing and
 * the bearer token (hh__http_route_of), and every reply (hh__http_reply_for)
 * for a snapshot holding hostile names and errors. /stats and /metrics are
 * served only with the exact token; /healthz shows no name or error; JSON
 * bodies parse; /metrics lines stay lines (labels escaped).
 * Input: method NUL url NUL authorization NUL token NUL identity NUL
 * queue NUL last error NUL, then up to 24 bytes of numbers. */
#include <jansson.h>
#include <math.h>
#include "fuzz.h"
#include "hiredhand.h"
#include "http.h"
#include "manager.h"
#include "util.h"

static double num(const uint8_t *p, size_t avail) {
    double d = 0;
    if (avail >= sizeof(d)) memcpy(&d, p, sizeof(d));
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *f[8];
    fuzz_fields(data, size, f, 8);
    const char *method = f[0], *url = f[1], *auth = *f[2] ? f[2] : NULL, *token = *f[3] ? f[3] : NULL;
    size_t tail = strlen(f[7]);
    const uint8_t *nums = (const uint8_t *)f[7];

    hh__http_route r = hh__http_route_of(method, url, auth, token);
    if ((r == HH_HTTP_ROUTE_STATS || r == HH_HTTP_ROUTE_METRICS) && token)
        FUZZ_ASSERT(auth && strstr(auth, token), "served %s without the token", url);
    if (token && hh__http_token_valid(token)) {
        size_t n = strlen(token) + 16;
        char *good = malloc(n), *bad = malloc(n);
        if (!good || !bad) abort();
        snprintf(good, n, "Bearer %s", token);
        snprintf(bad, n, "Bearer %sx", token);
        FUZZ_ASSERT(hh__http_token_ok(good, token), "the exact token is refused");
        FUZZ_ASSERT(!hh__http_token_ok(bad, token), "a longer token is taken");
        bad[strlen(bad) - 2] ^= 1;
        bad[strlen(bad) - 1] = '\0';
        FUZZ_ASSERT(!hh__http_token_ok(bad, token), "a token differing in its last byte is taken");
        free(good);
        free(bad);
    }

    hh_manager_stats *st = calloc(1, sizeof(*st));
    hh_queue_stats *qs = calloc(HH_MAX_QUEUES, sizeof(*qs));
    if (!st || !qs) abort();
    st->queues = qs;
    st->queues_cap = HH_MAX_QUEUES;
    hh__strlcpy(st->identity, f[4], sizeof(st->identity));
    hh__strlcpy(st->heartbeat_last_error, f[6], sizeof(st->heartbeat_last_error));
    st->nqueues = tail && (nums[0] & 1) ? 1 : 70; /* more than HH_MAX_QUEUES */
    for (size_t i = 0; i < HH_MAX_QUEUES; i++) {
        st->queues[i].name = f[5];
        st->queues[i].size = i % 2 ? -1 : (int64_t)i;
        st->queues[i].latency = num(nums + 1, tail > 1 ? tail - 1 : 0);
    }
    st->started_at = num(nums + 9, tail > 9 ? tail - 9 : 0);
    st->heartbeat_last_pushed_at = num(nums + 17, tail > 17 ? tail - 17 : 0);
    st->processed = UINT64_MAX;
    st->busy = -1;
    double now = 1700000000.0, max_age = 30;

    for (int route = HH_HTTP_ROUTE_HEALTHZ; route <= HH_HTTP_ROUTE_UNAUTHORIZED; route++) {
        hh__http_reply rep;
        hh__http_reply_for((hh__http_route)route, st, now, max_age, &rep);
        FUZZ_ASSERT(rep.status >= 200 && rep.status < 600, "status %u", rep.status);
        if (!rep.body) continue; /* out of memory: a 500 */
        if (strstr(rep.type, "json")) {
            json_error_t e;
            json_t *j = json_loads(rep.body, 0, &e);
            FUZZ_ASSERT(j != NULL, "route %d: invalid JSON (%s): %s", route, e.text, rep.body);
            if (route == HH_HTTP_ROUTE_HEALTHZ) {
                const char *k;
                json_t *v;
                json_object_foreach(j, k, v) {
                    (void)v;
                    FUZZ_ASSERT(!strcmp(k, "status") || !strcmp(k, "reason") || !strcmp(k, "heartbeat_age") ||
                                    !strcmp(k, "liveness_max_age"),
                                "/healthz tells \"%s\"", k);
                }
            }
            json_decref(j);
        } else {
            /* Prometheus text: every line a comment or "name[{labels}] value" */
            for (char *line = rep.body; *line;) {
                char *end = strchr(line, '\n');
                FUZZ_ASSERT(end != NULL, "/metrics ends with a newline");
                if (*line != '#') {
                    FUZZ_ASSERT(!strncmp(line, "hiredhand_", 10), "a sample line starts with its name: %.*s",
                                (int)(end - line), line);
                    int quoted = 0;
                    for (char *p = line; p < end; p++) {
                        if (quoted && *p == '\\') p++;
                        else if (*p == '"') quoted = !quoted;
                    }
                    FUZZ_ASSERT(!quoted, "a label value runs past its line: %.*s", (int)(end - line), line);
                }
                line = end + 1;
            }
        }
        free(rep.body);
    }
    free(qs);
    free(st);
    fuzz_fields_free(f, 8);
    return 0;
}
