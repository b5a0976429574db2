/* test_logfmt.c -- hh_log_format_line (src/util.c): Sidekiq 6.4's Pretty and
 * JSON layouts, the job context of the calling thread (class, jid,
 * elapsed rounded to ms and written as Ruby writes a Float), its end, and
 * control characters from a job escaped in the context too. */
#include "unit_helpers.h"

#include <jansson.h>
#include <regex.h>
#include <unistd.h>
#include "util.h"

static void assert_matches(const char *s, const char *re) {
    regex_t r;
    assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
    int rc = regexec(&r, s, 0, NULL, 0);
    regfree(&r);
    if (rc != 0) fail_msg("[%s] does not match [%s]", s, re);
}

#define TS "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "

static void test_text(void **s) {
    (void)s;
    char re[256];
    hh__log_job_end();
    char *l = hh_log_format_line(HH_LOG_WARN, "hello", HH_LOG_FORMAT_TEXT);
    snprintf(re, sizeof(re), TS "pid=%d tid=[0-9a-z]+ WARN: hello$", (int)getpid());
    assert_matches(l, re);
    free(l);
    hh__log_job_begin("abc", "HardJob", "0123");
    l = hh_log_format_line(HH_LOG_INFO, "start", HH_LOG_FORMAT_TEXT);
    snprintf(re, sizeof(re), TS "pid=%d tid=abc class=HardJob jid=0123 INFO: start$", (int)getpid());
    assert_matches(l, re);
    free(l);
    static const struct {
        double in;
        const char *out;
    } el[] = {{0.0123, "0.012"}, {1.0, "1.0"}, {2.5004, "2.5"}, {0.0004, "0.0"}, {12.3456, "12.346"}};
    for (size_t i = 0; i < sizeof(el) / sizeof(*el); i++) {
        hh__log_job_elapsed(el[i].in);
        l = hh_log_format_line(HH_LOG_INFO, "done", HH_LOG_FORMAT_TEXT);
        snprintf(re, sizeof(re), " tid=abc class=HardJob jid=0123 elapsed=%s INFO: done", el[i].out);
        char *at = strstr(l, " tid=");
        assert_non_null(at);
        assert_string_equal(at, re);
        free(l);
    }
    hh__log_job_end();
    l = hh_log_format_line(HH_LOG_ERROR, "after", HH_LOG_FORMAT_TEXT);
    assert_null(strstr(l, "class="));
    assert_null(strstr(l, "elapsed="));
    assert_non_null(strstr(l, "tid=abc ERROR: after"));
    free(l);
}

static void test_context_escaped(void **s) {
    (void)s;
    hh__log_job_begin("t1", "Evil\n2026-01-01T00:00:00.000Z pid=1 ERROR: x\x1b[31m", "j\nj");
    char *l = hh_log_format_line(HH_LOG_INFO, "start", HH_LOG_FORMAT_TEXT);
    assert_null(strchr(l, '\n'));
    assert_null(strchr(l, '\x1b'));
    assert_non_null(strstr(l, "class=Evil\\n2026"));
    assert_non_null(strstr(l, "jid=j\\nj INFO: start"));
    free(l);
    l = hh_log_format_line(HH_LOG_INFO, "start", HH_LOG_FORMAT_JSON);
    assert_null(strchr(l, '\n'));
    assert_null(strchr(l, '\x1b'));
    json_t *o = json_loads(l, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "ctx"), "jid")), "j\nj");
    json_decref(o);
    free(l);
    hh__log_job_end();
}

static void test_json(void **s) {
    (void)s;
    hh__log_job_end();
    char *l = hh_log_format_line(HH_LOG_DEBUG, "hi", HH_LOG_FORMAT_JSON);
    json_t *o = json_loads(l, 0, NULL);
    assert_non_null(o);
    assert_string_equal(uh_keys_csv(l), "ts,pid,tid,lvl,msg");
    assert_string_equal(json_string_value(json_object_get(o, "lvl")), "DEBUG");
    assert_int_equal(json_integer_value(json_object_get(o, "pid")), getpid());
    assert_null(json_object_get(o, "ctx"));
    json_decref(o);
    free(l);
    hh__log_job_begin("t2", "K", "J");
    hh__log_job_elapsed(0.25);
    l = hh_log_format_line(HH_LOG_INFO, "done", HH_LOG_FORMAT_JSON);
    o = json_loads(l, 0, NULL);
    assert_non_null(o);
    json_t *ctx = json_object_get(o, "ctx");
    assert_string_equal(json_string_value(json_object_get(ctx, "class")), "K");
    assert_string_equal(json_string_value(json_object_get(ctx, "jid")), "J");
    assert_true(json_is_real(json_object_get(ctx, "elapsed")));
    assert_true(json_real_value(json_object_get(ctx, "elapsed")) == 0.25);
    assert_string_equal(json_string_value(json_object_get(o, "tid")), "t2");
    json_decref(o);
    free(l);
    hh__log_job_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_context_escaped),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
