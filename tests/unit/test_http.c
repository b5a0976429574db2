/* test_http.c -- src/http.c without a socket: the bearer token compare,
 * the routing, what /healthz tells, and the http_token option of
 * hh_manager_new (refused when malformed; the caller's strings are never
 * freed when it fails). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "hiredhand.h"
#include "http.h"

static void test_token_compare(void **s) {
    (void)s;
    assert_true(hh__http_token_ok(NULL, NULL));
    assert_true(hh__http_token_ok("anything", NULL));
    assert_true(hh__http_token_ok("Bearer abc123", "abc123"));
    assert_true(hh__http_token_ok("bearer  abc123 ", "abc123"));
    assert_true(hh__http_token_ok("BEARER\tabc123", "abc123"));
    assert_false(hh__http_token_ok(NULL, "abc123"));
    assert_false(hh__http_token_ok("", "abc123"));
    assert_false(hh__http_token_ok("Bearer", "abc123"));
    assert_false(hh__http_token_ok("Bearer ", "abc123"));
    assert_false(hh__http_token_ok("Bearerabc123", "abc123"));
    assert_false(hh__http_token_ok("Basic abc123", "abc123"));
    assert_false(hh__http_token_ok("Bearer abc12", "abc123"));
    assert_false(hh__http_token_ok("Bearer abc1234", "abc123"));
    assert_false(hh__http_token_ok("Bearer abc124", "abc123"));
    assert_false(hh__http_token_ok("Bearer bbc123", "abc123"));
    assert_false(hh__http_token_ok("Bearer abc123 x", "abc123"));
}

static void test_token_valid(void **s) {
    (void)s;
    char big[4098];
    assert_true(hh__http_token_valid("abc-._~+/="));
    assert_false(hh__http_token_valid(NULL));
    assert_false(hh__http_token_valid(""));
    assert_false(hh__http_token_valid("two words"));
    assert_false(hh__http_token_valid("tab\there"));
    assert_false(hh__http_token_valid("caf\xc3\xa9"));
    memset(big, 'a', 4096);
    big[4096] = '\0';
    assert_true(hh__http_token_valid(big));
    big[4096] = 'a';
    big[4097] = '\0';
    assert_false(hh__http_token_valid(big));
}

static void test_routes(void **s) {
    (void)s;
    assert_int_equal(hh__http_route_of("GET", "/healthz", NULL, "t0k3n"), HH_HTTP_ROUTE_HEALTHZ);
    assert_int_equal(hh__http_route_of("HEAD", "/healthz", "Bearer wrong", "t0k3n"), HH_HTTP_ROUTE_HEALTHZ);
    assert_int_equal(hh__http_route_of("GET", "/stats", NULL, "t0k3n"), HH_HTTP_ROUTE_UNAUTHORIZED);
    assert_int_equal(hh__http_route_of("GET", "/metrics", "Bearer wrong", "t0k3n"), HH_HTTP_ROUTE_UNAUTHORIZED);
    assert_int_equal(hh__http_route_of("GET", "/stats", "Bearer t0k3n", "t0k3n"), HH_HTTP_ROUTE_STATS);
    assert_int_equal(hh__http_route_of("GET", "/metrics", "Bearer t0k3n", "t0k3n"), HH_HTTP_ROUTE_METRICS);
    assert_int_equal(hh__http_route_of("GET", "/stats", NULL, NULL), HH_HTTP_ROUTE_STATS);
    assert_int_equal(hh__http_route_of("GET", "/nope", NULL, "t0k3n"), HH_HTTP_ROUTE_NOT_FOUND);
    assert_int_equal(hh__http_route_of("POST", "/stats", "Bearer t0k3n", "t0k3n"), HH_HTTP_ROUTE_METHOD);
}

static void test_readyz_wants_redis_and_fetching(void **s) {
    (void)s;
    char why[128];
    hh_manager_stats *st = calloc(1, sizeof(*st));
    assert_non_null(st);
    assert_int_equal(hh__http_route_of("GET", "/readyz", NULL, "t0k3n"), HH_HTTP_ROUTE_READYZ);
    assert_false(hh__http_ready(st, why, sizeof(why))); /* not started */
    st->started_at = 1000;
    st->redis_connected = 1;
    st->heartbeat_last_pushed_at = 1001;
    assert_false(hh__http_ready(st, why, sizeof(why))); /* a call failed to reach Redis */
    assert_non_null(strstr(why, "Redis"));
    st->redis_reachable = 1;
    assert_true(hh__http_ready(st, why, sizeof(why)));
    assert_string_equal(why, "");
    hh__http_reply r;
    hh__http_reply_for(HH_HTTP_ROUTE_READYZ, st, 1002, 30, &r);
    assert_int_equal(r.status, 200);
    free(r.body);
    /* the beat failed with its connection during an outage, and calls go
     * through again: ready without waiting for the next beat */
    st->redis_connected = 0;
    snprintf(st->heartbeat_last_error, sizeof(st->heartbeat_last_error), "Connection refused");
    assert_true(hh__http_ready(st, why, sizeof(why)));
    st->redis_reachable = 0;
    assert_false(hh__http_ready(st, why, sizeof(why)));
    assert_non_null(strstr(why, "Redis"));
    st->redis_reachable = 1;
    /* the beat reached Redis and was refused */
    st->redis_connected = 1;
    snprintf(st->heartbeat_last_error, sizeof(st->heartbeat_last_error), "OOM command not allowed");
    assert_false(hh__http_ready(st, why, sizeof(why)));
    assert_non_null(strstr(why, "heartbeat"));
    st->heartbeat_last_error[0] = '\0';
    st->quiet = 1;
    assert_false(hh__http_ready(st, why, sizeof(why)));
    assert_non_null(strstr(why, "quiet"));
    hh__http_reply_for(HH_HTTP_ROUTE_READYZ, st, 1002, 30, &r);
    assert_int_equal(r.status, 503);
    assert_non_null(strstr(r.body, "quiet"));
    free(r.body);
    st->stopping = 1;
    assert_false(hh__http_ready(st, why, sizeof(why)));
    assert_string_equal(why, "stopping");
    free(st);
}

static void test_healthz_tells_status_and_ages_only(void **s) {
    (void)s;
    hh_manager_stats *st = calloc(1, sizeof(*st));
    assert_non_null(st);
    strcpy(st->identity, "secret-host:42:abc");
    strcpy(st->heartbeat_last_error, "Connection refused to redis.internal:6379");
    hh_queue_stats q = {.name = "payroll"};
    st->queues = &q;
    st->queues_cap = 1;
    st->nqueues = 1;
    st->started_at = 1000;
    st->heartbeat_last_pushed_at = 1000;
    for (int healthy = 1; healthy >= 0; healthy--) {
        hh__http_reply r;
        hh__http_reply_for(HH_HTTP_ROUTE_HEALTHZ, st, healthy ? 1001 : 1100, 30, &r);
        assert_int_equal(r.status, healthy ? 200 : 503);
        assert_non_null(r.body);
        assert_null(strstr(r.body, "secret-host"));
        assert_null(strstr(r.body, "redis.internal"));
        assert_null(strstr(r.body, "payroll"));
        json_t *j = json_loads(r.body, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_object_size(j), healthy ? 3 : 4); /* status, heartbeat_age, liveness_max_age[, reason] */
        json_decref(j);
        free(r.body);
    }
    hh__http_reply r;
    hh__http_reply_for(HH_HTTP_ROUTE_UNAUTHORIZED, NULL, 0, 30, &r);
    assert_int_equal(r.status, 401);
    assert_string_equal(r.header, "WWW-Authenticate");
    free(r.body);
    free(st);
}

/* Queue sizes and latencies describe Redis, the same on every process:
 * labelled scope="cluster" so a fleet aggregates them with max(); the
 * per-process counters are not. Label values stay escaped. */
static void test_metrics_queue_scope(void **s) {
    (void)s;
    hh_manager_stats *st = calloc(1, sizeof(*st));
    assert_non_null(st);
    hh_queue_stats q = {.name = "a\"b\\c\nd", .size = 5, .latency = 1.5, .fetched = 7};
    st->queues = &q;
    st->queues_cap = 1;
    st->nqueues = 1;
    st->started_at = 1000;
    char *t = hh__http_metrics_text(st, 1001);
    assert_non_null(t);
    assert_non_null(strstr(t, "\nhiredhand_queue_size{queue=\"a\\\"b\\\\c\\nd\",scope=\"cluster\"} 5\n"));
    assert_non_null(strstr(t, "\nhiredhand_queue_latency_seconds{queue=\"a\\\"b\\\\c\\nd\",scope=\"cluster\"} 1.5\n"));
    assert_non_null(strstr(t, "\nhiredhand_queue_fetched_total{queue=\"a\\\"b\\\\c\\nd\"} 7\n"));
    assert_non_null(strstr(t, "max()"));
    free(t);
    free(st);
}

static void quiet(hh_log_level level, const char *msg, void *udata) { (void)level, (void)msg, (void)udata; }

static void test_manager_option(void **s) {
    (void)s;
    hh_manager_options o;
    hh_manager_options_init(&o);
    assert_null(o.http_token);
    o.log = quiet;
    o.redis.url = "redis://127.0.0.1:1/0";
    char *bind = strdup("127.0.0.1:1"), *token = strdup("two words");
    o.http_bind = bind;
    o.http_token = token;
    int err = 0;
    assert_null(hh_manager_new(&o, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    o.concurrency = 0; /* fails before any copy is made */
    assert_null(hh_manager_new(&o, &err));
    o.concurrency = 1;
    strcpy(token, "s3cr3t");
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    memset(token, 'x', strlen(token)); /* the manager holds its own copy */
    hh_manager_free(m);
    free(bind); /* still ours: ASan reports a double free if it was not */
    free(token);
}

/* hh_manager_set_unready: one problem per source, the oldest shown in the
 * stats and by /readyz, cleared by the same source, 16 sources at most. */
static void test_set_unready(void **s) {
    (void)s;
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.log = quiet;
    o.redis.url = "redis://127.0.0.1:1/0";
    int err = 0;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    hh_manager_stats *st = calloc(1, sizeof(*st));
    assert_non_null(st);
    st->struct_size = sizeof(*st);
    assert_int_equal(hh_manager_set_unready(NULL, "db", "down"), HH_ERR_INVALID);
    assert_int_equal(hh_manager_set_unready(m, NULL, "down"), HH_ERR_INVALID);
    assert_int_equal(hh_manager_set_unready(m, "", "down"), HH_ERR_INVALID);
    assert_int_equal(hh_manager_set_unready(m, "db", NULL), HH_OK); /* nothing to clear */
    assert_int_equal(hh_manager_get_stats(m, st), HH_OK);
    assert_string_equal(st->unready, "");
    assert_int_equal(hh_manager_set_unready(m, "db", "connection refused"), HH_OK);
    assert_int_equal(hh_manager_set_unready(m, "cache", "timeout"), HH_OK);
    assert_int_equal(hh_manager_get_stats(m, st), HH_OK);
    assert_string_equal(st->unready, "db: connection refused"); /* the oldest */
    assert_int_equal(hh_manager_set_unready(m, "db", "auth failed"), HH_OK);
    assert_int_equal(hh_manager_get_stats(m, st), HH_OK);
    assert_string_equal(st->unready, "db: auth failed"); /* replaced, still the oldest */
    /* /readyz gives it once everything Redis-side is fine */
    st->started_at = 1000, st->redis_connected = 1, st->redis_reachable = 1, st->heartbeat_last_pushed_at = 1001;
    st->quiet = st->stopping = 0;
    char why[300];
    assert_false(hh__http_ready(st, why, sizeof(why)));
    assert_string_equal(why, "db: auth failed");
    assert_int_equal(hh_manager_set_unready(m, "db", NULL), HH_OK);
    assert_int_equal(hh_manager_get_stats(m, st), HH_OK);
    assert_string_equal(st->unready, "cache: timeout");
    assert_int_equal(hh_manager_set_unready(m, "cache", NULL), HH_OK);
    assert_int_equal(hh_manager_get_stats(m, st), HH_OK);
    assert_string_equal(st->unready, "");
    st->started_at = 1000, st->redis_connected = 1, st->redis_reachable = 1, st->heartbeat_last_pushed_at = 1001;
    assert_true(hh__http_ready(st, why, sizeof(why)));
    /* 16 sources at once; a 17th is refused with a reason, an old one may change */
    char src[16];
    for (int i = 0; i < 16; i++) {
        snprintf(src, sizeof(src), "s%d", i);
        assert_int_equal(hh_manager_set_unready(m, src, "x"), HH_OK);
    }
    assert_int_equal(hh_manager_set_unready(m, "s16", "x"), HH_ERR_NOMEM);
    assert_non_null(strstr(hh_last_error(), "s16"));
    assert_int_equal(hh_manager_set_unready(m, "s3", "y"), HH_OK);
    assert_int_equal(hh_manager_set_unready(m, "s0", NULL), HH_OK);
    assert_int_equal(hh_manager_set_unready(m, "s16", "x"), HH_OK); /* a free slot again */
    assert_int_equal(hh_manager_get_stats(m, st), HH_OK);
    assert_string_equal(st->unready, "s1: x");
    free(st);
    hh_manager_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_compare),
        cmocka_unit_test(test_token_valid),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_readyz_wants_redis_and_fetching),
        cmocka_unit_test(test_healthz_tells_status_and_ages_only),
        cmocka_unit_test(test_metrics_queue_scope),
        cmocka_unit_test(test_manager_option),
        cmocka_unit_test(test_set_unready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
