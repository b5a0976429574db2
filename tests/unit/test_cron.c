/* test_cron.c -- src/cron.c's pure parts: the guard member and score bytes
 * sidekiq-cron writes, the due-tick decision (previous_time within the
 * grace period, not already enqueued), last_enqueue_time both ways, the
 * jid_history entry of 2.x and 1.8, and the payloads pushed (plain,
 * date_as_argument, ActiveJob with a queue prefix). */
#include "unit_helpers.h"

#include <string.h>

#include "cron.h"

/* 2026-12-04 04:30:00 UTC */
#define T0 1796358600LL

static void test_member_and_score(void **state) {
    (void)state;
    char b[32];
    hh__cron_member(T0, b);
    assert_string_equal(b, "2026-12-04T04:30:00Z"); /* Time#iso8601 of a UTC time */
    hh__cron_score(T0, b);
    assert_string_equal(b, "1796358600.0"); /* Float#to_s */
    hh__cron_enqueue_time(T0 + 5.75, b);
    assert_string_equal(b, "2026-12-04 04:30:05 +0000");
}

static void test_parse_time(void **state) {
    (void)state;
    assert_int_equal(hh__cron_parse_time("2026-12-04 04:30:05 +0000"), T0 + 5);
    assert_int_equal(hh__cron_parse_time("2026-12-04 05:30:05 +0100"), T0 + 5);
    assert_int_equal(hh__cron_parse_time("2026-12-04T04:30:05Z"), T0 + 5);
    assert_int_equal(hh__cron_parse_time("2026-12-04 04:30:05 UTC"), T0 + 5);
    assert_int_equal(hh__cron_parse_time(""), -1);
    assert_int_equal(hh__cron_parse_time(NULL), -1);
    assert_int_equal(hh__cron_parse_time("yesterday"), -1);
}

static void test_due_tick(void **state) {
    (void)state;
    char err[128];
    hh__cron_expr *x = hh__cron_expr_parse("*/2 * * * * *", "UTC", err, sizeof(err));
    assert_non_null(x);
    /* fugit's previous_time(now) starts at floor(now) - 1 */
    assert_int_equal(hh__cron_due_tick(x, T0 + 0.5, -1, 60), T0 - 2);
    assert_int_equal(hh__cron_due_tick(x, T0 + 1.5, -1, 60), T0);
    /* enqueued at or after the tick: not again */
    assert_int_equal(hh__cron_due_tick(x, T0 + 1.5, T0, 60), -1);
    assert_int_equal(hh__cron_due_tick(x, T0 + 1.5, T0 - 1, 60), T0);
    hh__cron_expr_free(x);
    /* every second: tick T0 enqueued at T0 + 1.4 writes last_enqueue_time
     * T0 + 1 (whole seconds), so T0 + 1 is skipped and T0 + 2 runs: every
     * other second, as sidekiq-cron (docs/periodic-jobs.md says so) */
    x = hh__cron_expr_parse("* * * * * *", "UTC", err, sizeof(err));
    assert_non_null(x);
    assert_int_equal(hh__cron_due_tick(x, T0 + 1.4, -1, 60), T0);
    assert_int_equal(hh__cron_due_tick(x, T0 + 2.4, T0 + 1, 60), -1);
    assert_int_equal(hh__cron_due_tick(x, T0 + 3.4, T0 + 1, 60), T0 + 2);
    hh__cron_expr_free(x);
    x = hh__cron_expr_parse("0 * * * *", "UTC", err, sizeof(err)); /* hourly, T0 is :30 */
    assert_non_null(x);
    assert_int_equal(hh__cron_due_tick(x, T0 + 30 * 60 + 59, -1, 60), T0 + 30 * 60); /* within the grace */
    assert_int_equal(hh__cron_due_tick(x, T0 + 30 * 60 + 61, -1, 60), -1);           /* past it: skipped */
    hh__cron_expr_free(x);
}

static void test_history_entry(void **state) {
    (void)state;
    char *s = hh__cron_history_entry("abc", T0 + 1, 0);
    assert_string_equal(s, "{\"jid\":\"abc\",\"enqueued\":\"2026-12-04 04:30:01 UTC\"}");
    free(s);
    s = hh__cron_history_entry("abc", T0 + 1, 1);
    assert_string_equal(s, "{\"jid\":\"abc\",\"enqueued\":\"2026-12-04 04:30:01 +0000\"}");
    free(s);
    assert_true(hh__cron_truthy("1") && hh__cron_truthy("TRUE") && hh__cron_truthy("y"));
    assert_false(hh__cron_truthy("0") || hh__cron_truthy("false") || hh__cron_truthy("") || hh__cron_truthy(NULL));
}

static json_t *fields(const char *json) {
    json_t *f = json_loads(json, 0, NULL);
    assert_non_null(f);
    return f;
}

static void test_payload_plain(void **state) {
    (void)state;
    json_t *f = fields(
        "{\"name\":\"t\",\"klass\":\"Tick\",\"args\":\"[1,\\\"a\\\"]\",\"date_as_argument\":\"1\","
        "\"message\":\"{\\\"retry\\\":3,\\\"queue\\\":\\\"low\\\",\\\"class\\\":\\\"Tick\\\",\\\"args\\\":[]}\"}");
    char *q = NULL, why[128];
    char *p = hh__cron_payload(f, T0 + 0.25, HH_TS_FLOAT, "0123456789abcdef01234567", &q, why, sizeof(why));
    assert_non_null(p);
    assert_string_equal(q, "low");
    json_t *j = json_loads(p, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "class")), "Tick");
    assert_int_equal(json_integer_value(json_object_get(j, "retry")), 3);
    assert_string_equal(json_string_value(json_object_get(j, "jid")), "0123456789abcdef01234567");
    json_t *a = json_object_get(j, "args");
    assert_int_equal(json_array_size(a), 3);
    assert_true(json_real_value(json_array_get(a, 2)) == (double)T0 + 0.25); /* the tick time as a float */
    assert_true(json_is_number(json_object_get(j, "enqueued_at")));
    json_decref(j), free(p), free(q), json_decref(f);

    f = fields("{\"name\":\"t\",\"message\":\"not json\"}");
    assert_null(hh__cron_payload(f, T0, HH_TS_FLOAT, "x", &q, why, sizeof(why)));
    assert_non_null(strstr(why, "message"));
    json_decref(f);
}

static void test_payload_active_job(void **state) {
    (void)state;
    json_t *f = fields("{\"name\":\"t\",\"klass\":\"CleanupJob\",\"args\":\"[]\",\"active_job\":\"true\","
                       "\"queue_name_prefix\":\"prod\",\"description\":\"nightly\","
                       "\"message\":\"{\\\"class\\\":\\\"CleanupJob\\\",\\\"args\\\":[],\\\"queue\\\":\\\"low\\\"}\"}");
    char *q = NULL, why[128];
    char *p = hh__cron_payload(f, T0, HH_TS_FLOAT, "0123456789abcdef01234567", &q, why, sizeof(why));
    assert_non_null(p);
    assert_string_equal(q, "prod_low");
    json_t *j = json_loads(p, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "class")),
                        "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper");
    assert_string_equal(json_string_value(json_object_get(j, "wrapped")), "CleanupJob");
    assert_string_equal(json_string_value(json_object_get(j, "description")), "nightly");
    json_t *env = json_array_get(json_object_get(j, "args"), 0);
    assert_string_equal(json_string_value(json_object_get(env, "job_class")), "CleanupJob");
    assert_string_equal(json_string_value(json_object_get(env, "queue_name")), "prod_low");
    assert_int_equal(strlen(json_string_value(json_object_get(env, "job_id"))), 36);
    assert_true(json_is_array(json_object_get(env, "arguments")));
    json_decref(j), free(p), free(q), json_decref(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_member_and_score), cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_due_tick),         cmocka_unit_test(test_history_entry),
        cmocka_unit_test(test_payload_plain),    cmocka_unit_test(test_payload_active_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
