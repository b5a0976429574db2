/* test_locale.c -- numbers the library writes and reads are locale-
 * independent: an embedding program that calls setlocale(LC_ALL,
 * "de_DE.UTF-8") (a decimal comma) still gets "[1.5,2]" in payloads and
 * "1700000020.5" as ZADD scores, not "[1,5.0,2]" and "1700000020,5".
 *
 * The locale is generated with localedef (Debian package `locales`) into a
 * private LOCPATH directory when the system lacks it, so no root change is
 * needed; without localedef the test fails, saying so. */
#include "unit_helpers.h"

#include <locale.h>
#include <math.h>
#include "client.h"
#include "hiredhand.h"
#include "job.h"
#include "redis.h"
#include "retry.h"
#include "util.h"

UH_REDIS_GROUP()

static char locdir[] = "/tmp/hh-locale-XXXXXX";

static int decimal_comma_locale(void **s) {
    (void)s;
    if (group_setup(s) != 0) return -1;
    if (setlocale(LC_ALL, "de_DE.UTF-8")) return 0;
    if (!mkdtemp(locdir)) return -1;
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", locdir);
    int rc = system(cmd);
    setenv("LOCPATH", locdir, 1);
    if (!setlocale(LC_ALL, "de_DE.UTF-8")) {
        fprintf(stderr,
                "test_locale: cannot make a de_DE.UTF-8 locale (localedef exit %d): "
                "install the Debian package `locales`\n",
                rc);
        return -1;
    }
    return 0;
}

static int teardown(void **s) {
    setlocale(LC_ALL, "C");
    if (strcmp(locdir + strlen(locdir) - 6, "XXXXXX") != 0) {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", locdir);
        if (system(cmd) != 0) fprintf(stderr, "test_locale: could not remove %s\n", locdir);
    }
    return group_teardown(s);
}

/* the locale is really a decimal-comma one: what the fixes are up against */
static void test_locale_in_effect(void **s) {
    (void)s;
    char buf[32];
    snprintf(buf, sizeof(buf), "%.1f", 1.5);
    assert_string_equal(buf, "1,5");
    assert_true(strtod("1,5", NULL) == 1.5);
}

static void test_json_dump(void **s) {
    (void)s;
    json_t *v = json_loads("[1.5,2,{\"t\":1795962157.061338,\"x\":0.1,\"one\":1.0}]", 0, NULL);
    assert_non_null(v);
    char *out = hh__json_dump(v);
    assert_string_equal(out, "[1.5,2,{\"t\":1795962157.061338,\"x\":0.1,\"one\":1.0}]");
    free(out);
    json_decref(v);
    char num[64];
    hh__fmt_double(num, sizeof(num), 1700000020.5);
    assert_string_equal(num, "1700000020.5");
    assert_true(hh__strtod_c("1700000020.5", NULL) == 1700000020.5);
    hh__snprintf_c(num, sizeof(num), "%.3f", 0.25);
    assert_string_equal(num, "0.250");
}

/* a failed job's retry entry: the payload's reals keep their tokens */
static void test_retry_payload(void **s) {
    (void)s;
    const char *p = "{\"class\":\"K\",\"args\":[1.5,2],\"jid\":\"aaaaaaaaaaaaaaaaaaaaaaaa\","
                    "\"retry\":true,\"created_at\":1795962147.0172818}";
    hh_job *j = hh__job_new(p, strlen(p), "default", NULL, 0);
    assert_non_null(j);
    hh_job_fail(j, "E", "boom");
    hh__retry_config cfg = {25, HH_TS_FLOAT, 1};
    hh__rng rng;
    hh__rng_seed(&rng);
    hh__failure_plan plan;
    assert_int_equal(hh__retry_plan(j, &cfg, 1795962150.25, &rng, &plan), 0);
    assert_int_equal(plan.kind, HH_FAIL_RETRY);
    assert_non_null(strstr(plan.payload, "\"args\":[1.5,2]"));
    assert_string_equal(uh_token(plan.payload, "created_at"), "1795962147.0172818");
    assert_string_equal(uh_token(plan.payload, "failed_at"), "1795962150.25");
    json_t *v = json_loads(plan.payload, 0, NULL);
    assert_non_null(v); /* valid JSON */
    json_decref(v);
    free(plan.payload);
    hh__job_free(j);
}

/* through Redis: the pushed payload and the schedule score */
static void test_push_and_score(void **s) {
    (void)s;
    uh_flushall(&srv);
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = srv.url;
    int err;
    hh_client *c = hh_client_new(&o, &err);
    assert_non_null(c);
    hh_push_options po;
    hh_push_options_init(&po);
    po.at = floor(hh__now()) + 1000.5;
    char jid[HH_JID_SIZE];
    assert_int_equal(hh_client_push(c, "K", "[1.5,2]", &po, jid), HH_OK);
    char *raw = uh_str(&srv, "EVAL %s 0", "return redis.call('zrange', 'schedule', 0, 0)[1]");
    assert_non_null(raw);
    assert_non_null(strstr(raw, "\"args\":[1.5,2]"));
    json_t *v = json_loads(raw, 0, NULL);
    assert_non_null(v);
    assert_true(json_is_real(json_object_get(v, "created_at")));
    json_decref(v);
    char *score = uh_str(&srv, "EVAL %s 0", "return redis.call('zrange', 'schedule', 0, 0, 'WITHSCORES')[2]");
    char want[64];
    hh__snprintf_c(want, sizeof(want), "%.1f", po.at);
    assert_string_equal(score, want);
    free(score);
    free(raw);
    /* now, not scheduled: LPUSH with enqueued_at a real */
    po.at = 0;
    assert_int_equal(hh_client_push(c, "K", "[0.5]", &po, jid), HH_OK);
    raw = uh_str(&srv, "LINDEX queue:default 0");
    v = json_loads(raw, 0, NULL);
    assert_non_null(v);
    UH_ASSERT_DBL_IN(json_real_value(json_object_get(v, "enqueued_at")), hh__now() - 60, hh__now() + 1);
    assert_non_null(strstr(raw, "\"args\":[0.5]"));
    json_decref(v);
    free(raw);
    hh_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_locale_in_effect),
        cmocka_unit_test(test_json_dump),
        cmocka_unit_test(test_retry_payload),
        cmocka_unit_test(test_push_and_score),
    };
    return cmocka_run_group_tests(tests, decimal_comma_locale, teardown);
}
