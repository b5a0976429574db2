/* test_cron_admin.c -- src/cron_admin.c against a private redis-server:
 * a retry Sidekiq would read otherwise than it reads is refused and
 * nothing is saved; a set member that names no job's hash lists as broken
 * beside the other jobs. */
#include "unit_helpers.h"

#include <jansson.h>
#include "hiredhand.h"

UH_REDIS_GROUP()

static hh_client *client_url(const char *url, const char *ns) {
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    o.ns = ns;
    int err = 99;
    hh_client *c = hh_client_new(&o, &err);
    assert_non_null(c);
    assert_int_equal(err, HH_OK);
    return c;
}

static hh_client *client_ns(const char *ns) {
    uh_flushall(&srv);
    return client_url(srv.url, ns);
}

static int save(hh_client *c, const char *name, const char *ns, const char *retry) {
    hh_cron_spec s = {.struct_size = sizeof(s),
                      .name = name,
                      .cron = "0 3 * * *",
                      .klass = "NightlyJob",
                      .cron_namespace = ns,
                      .retry_json = retry};
    return hh_cron_save(c, &s);
}

/* The listing as JSON (decref it). */
static json_t *list(hh_client *c, const char *ns) {
    char *out = NULL;
    int rc = hh_cron_list(c, ns, &out);
    if (rc != HH_OK) fail_msg("hh_cron_list: %s", hh_last_error());
    json_t *a = json_loads(out, 0, NULL);
    free(out);
    assert_true(json_is_array(a));
    return a;
}

static const char *get(json_t *a, size_t i, const char *k) {
    return json_string_value(json_object_get(json_array_get(a, i), k));
}

static void test_retry_checked(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    /* Sidekiq reads "abc" (any string) and 2.5 as 25 retries, -5 as none:
     * refused, with the reason, and nothing written */
    const char *bad[] = {"\"abc\"", "-5", "2.5", "\"3\"", "[1]", "{}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        assert_int_equal(save(c, "j", NULL, bad[i]), HH_ERR_INVALID);
        assert_non_null(strstr(hh_last_error(), "want true, false or a count"));
        assert_int_equal(uh_int(&srv, "DBSIZE"), 0);
    }
    /* what Sidekiq takes: stored in the message as given, the field as
     * Job#to_hash writes it; null is Sidekiq's default (no key) */
    const char *good[][3] = {{"true", "true", "true"}, {"false", "false", "false"}, {"0", "0", "0"},
                             {"7", "7", "7"},          {"null", NULL, ""}};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        assert_int_equal(save(c, "j", NULL, good[i][0]), HH_OK);
        char *msg = uh_str(&srv, "HGET cron_job:default:j message"), *field = uh_str(&srv, "HGET cron_job:default:j retry");
        json_t *m = json_loads(msg, 0, NULL);
        json_t *r = json_object_get(m, "retry");
        if (good[i][1]) {
            char *d = json_dumps(r, JSON_ENCODE_ANY);
            assert_string_equal(d, good[i][1]);
            free(d);
        } else {
            assert_null(r);
        }
        assert_string_equal(field, good[i][2]);
        json_decref(m);
        free(msg), free(field);
    }
    hh_client_free(c);
}

static void test_broken_members_listed(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    assert_int_equal(save(c, "good", NULL, NULL), HH_OK);
    freeReplyObject(uh_cmd(&srv, "SET cron_job:default:str x"));
    freeReplyObject(uh_cmd(&srv, "SADD cron_jobs:default cron_job:default:str cron_job:default:gone"));
    json_t *a = list(c, NULL);
    assert_int_equal(json_array_size(a), 3);
    assert_string_equal(get(a, 0, "name"), "gone");
    assert_non_null(strstr(get(a, 0, "error"), "cron_job:default:gone of cron_jobs:default names no key"));
    assert_string_equal(get(a, 1, "name"), "good");
    assert_null(get(a, 1, "error"));
    assert_string_equal(get(a, 2, "name"), "str");
    assert_non_null(strstr(get(a, 2, "error"), "is a string, not a job's hash"));
    assert_true(json_is_null(json_object_get(json_array_get(a, 2), "cron")));
    json_decref(a);
    hh_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_checked),
        cmocka_unit_test(test_broken_members_listed),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
