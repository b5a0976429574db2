/* test_cron_admin.c -- src/cron_admin.c and the namespace discovery of
 * src/cron.c, against a private redis-server: a retry Sidekiq would read
 * otherwise than it reads is refused and nothing is saved; a set member
 * that names no job's hash lists as broken beside the other jobs, and so
 * does a namespace's set of another type; the
 * namespace '*' lists every namespace found in Redis (under a key prefix
 * too) and names no single job; a Redis error during add's layout check
 * (the rule's, or a chosen layout's check of the other layout's key) is an
 * error and saves nothing; the namespace "" is refused; a name saved in
 * both layouts is marked and refused until a layout is chosen. */
#include "unit_helpers.h"

#include <jansson.h>
#include "cron.h"
#include "hiredhand.h"
#include "keys.h"
#include "redis.h"
#include "conn_fixture.h"

UH_REDIS_GROUP()

static hh_client *client_ns(const char *ns) {
    uh_flushall(&srv);
    return uh_client(srv.url, ns);
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

static int save_layout(hh_client *c, const char *name, const char *ns, int layout, size_t struct_size) {
    hh_cron_spec s = {.struct_size = struct_size,
                      .name = name,
                      .cron = "0 3 * * *",
                      .klass = "NightlyJob",
                      .cron_namespace = ns,
                      .layout = layout};
    return hh_cron_save(c, &s);
}

/* layout 1 saves sidekiq-cron 1.x's keys on a Redis that holds no job (a
 * fleet on 1.8 reads nothing else), layout 2 2.x's; a layout that would
 * leave two hashes of one name (both run each tick) is refused, and so are
 * layout 1 outside "default" and a layout that is no layout. A caller
 * built before the field (a shorter struct) gets the rule, whatever the
 * bytes after its struct hold. */
static void test_layout_chosen(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    assert_int_equal(save_layout(c, "old", NULL, 1, sizeof(hh_cron_spec)), HH_OK);
    assert_int_equal(uh_int(&srv, "SISMEMBER cron_jobs cron_job:old"), 1);
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:old"), 1);
    assert_int_equal(uh_int(&srv, "HEXISTS cron_job:old namespace"), 0);
    assert_int_equal(uh_int(&srv, "EXISTS cron_jobs:default"), 0);
    /* the rule would now pick 1.x for a new name: layout 2 picks 2.x */
    assert_int_equal(save_layout(c, "new", NULL, 2, sizeof(hh_cron_spec)), HH_OK);
    assert_int_equal(uh_int(&srv, "SISMEMBER cron_jobs:default cron_job:default:new"), 1);
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:new"), 0);
    /* the other layout holds the name: refused, nothing written */
    assert_int_equal(save_layout(c, "old", NULL, 2, sizeof(hh_cron_spec)), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "both would run"));
    assert_int_equal(save_layout(c, "new", NULL, 1, sizeof(hh_cron_spec)), HH_ERR_INVALID);
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:default:old"), 0);
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:new"), 0);
    assert_int_equal(save_layout(c, "x", "nsb", 1, sizeof(hh_cron_spec)), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "no namespace nsb"));
    assert_int_equal(save_layout(c, "x", NULL, 3, sizeof(hh_cron_spec)), HH_ERR_INVALID);
    assert_int_equal(save_layout(c, "x", NULL, -1, sizeof(hh_cron_spec)), HH_ERR_INVALID);
    /* a struct that ends before layout: its 1 is not read, the rule is
     * (an empty Redis: 2.x's) */
    uh_flushall(&srv);
    assert_int_equal(save_layout(c, "short", NULL, 1, offsetof(hh_cron_spec, layout)), HH_OK);
    assert_int_equal(uh_int(&srv, "SISMEMBER cron_jobs:default cron_job:default:short"), 1);
    hh_client_free(c);
}

static json_t *list(hh_client *c, const char *ns);

/* A name saved in both layouts (sidekiq-cron 1.8 saves its own copy of a
 * job it cannot see in 2.x's keys): listed twice, each copy naming the
 * other; a one-job call refuses it until hh_cron_use_layout picks one. */
static void test_job_in_both_layouts(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    assert_int_equal(save_layout(c, "twin", NULL, 2, sizeof(hh_cron_spec)), HH_OK);
    freeReplyObject(uh_cmd(&srv, "HSET cron_job:twin name twin cron @daily klass X status enabled message {}"));
    freeReplyObject(uh_cmd(&srv, "SADD cron_jobs cron_job:twin"));
    json_t *a = list(c, NULL);
    assert_int_equal(json_array_size(a), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *j = json_array_get(a, i);
        json_int_t l = json_integer_value(json_object_get(j, "layout"));
        assert_true(l == 1 || l == 2);
        assert_int_equal(json_integer_value(json_object_get(j, "also_in_layout")), 3 - l);
    }
    json_decref(a);
    assert_int_equal(hh_cron_set_enabled(c, NULL, "twin", 0), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "both sidekiq-cron layouts"));
    assert_int_equal(hh_cron_delete(c, NULL, "twin"), HH_ERR_INVALID);
    assert_int_equal(hh_cron_enqueue_now(c, NULL, "twin", NULL), HH_ERR_INVALID);
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:twin cron_job:default:twin"), 2);
    assert_int_equal(hh_cron_use_layout(c, 3), HH_ERR_INVALID);
    assert_int_equal(hh_cron_use_layout(c, 1), HH_OK);
    assert_int_equal(hh_cron_set_enabled(c, NULL, "twin", 0), HH_OK);
    char *v1 = uh_str(&srv, "HGET cron_job:twin status"), *v2 = uh_str(&srv, "HGET cron_job:default:twin status");
    assert_string_equal(v1, "disabled"); /* the 1.x copy only */
    assert_string_equal(v2, "enabled");
    free(v1), free(v2);
    assert_int_equal(hh_cron_set_enabled(c, "nsb", "twin", 0), HH_ERR_INVALID); /* 1.x: default only */
    assert_int_equal(hh_cron_delete(c, NULL, "twin"), HH_OK);
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:twin"), 0);
    assert_int_equal(hh_cron_delete(c, NULL, "twin"), HH_ERR_NOTFOUND);
    assert_int_equal(hh_cron_use_layout(c, 0), HH_OK);
    assert_int_equal(hh_cron_delete(c, NULL, "twin"), HH_OK); /* one copy left */
    hh_client_free(c);
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
    /* not JSON at all: the reason names retry, not the args given right */
    const char *not_json[] = {"abc", "", "TRUE", "03"};
    for (size_t i = 0; i < sizeof(not_json) / sizeof(*not_json); i++) {
        assert_int_equal(save(c, "j", NULL, not_json[i]), HH_ERR_INVALID);
        if (!strstr(hh_last_error(), "is not JSON") || strncmp(hh_last_error(), "retry", 5))
            fail_msg("retry '%s': the reason '%s' does not name retry", not_json[i], hh_last_error());
        assert_int_equal(uh_int(&srv, "DBSIZE"), 0);
    }
    /* what Sidekiq takes: stored in the message as given, the field as
     * Job#to_hash writes it; null is Sidekiq's default (no key) */
    const char *good[][3] = {
        {"true", "true", "true"}, {"false", "false", "false"}, {"0", "0", "0"}, {"7", "7", "7"}, {"null", NULL, ""}};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        assert_int_equal(save(c, "j", NULL, good[i][0]), HH_OK);
        char *msg = uh_str(&srv, "HGET cron_job:default:j message"),
             *field = uh_str(&srv, "HGET cron_job:default:j retry");
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
    /* delete takes the broken members out of the set by the names listed,
     * and leaves the string key (no job's hash) alone; a name that is
     * neither a job nor a member is still not found */
    assert_int_equal(hh_cron_delete(c, NULL, "str"), HH_OK);
    assert_int_equal(hh_cron_delete(c, NULL, "gone"), HH_OK);
    assert_int_equal(hh_cron_delete(c, NULL, "nosuch"), HH_ERR_NOTFOUND);
    assert_non_null(strstr(hh_last_error(), "no periodic job nosuch"));
    assert_int_equal(uh_int(&srv, "SCARD cron_jobs:default"), 1);
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:default:str"), 1);
    /* sidekiq-cron 1.x's set in the default namespace too */
    freeReplyObject(uh_cmd(&srv, "SET cron_job:old1 x"));
    freeReplyObject(uh_cmd(&srv, "SADD cron_jobs cron_job:old1"));
    assert_int_equal(hh_cron_delete(c, NULL, "old1"), HH_OK);
    assert_int_equal(uh_int(&srv, "EXISTS cron_jobs"), 0);
    a = list(c, NULL);
    assert_int_equal(json_array_size(a), 1);
    assert_string_equal(get(a, 0, "name"), "good");
    json_decref(a);
    /* a namespace's set (2.x's, 1.x's) whose key is of another type lists
     * as one entry naming the key and its type, the other jobs as they are */
    freeReplyObject(uh_cmd(&srv, "SET cron_jobs x"));
    freeReplyObject(uh_cmd(&srv, "RPUSH cron_jobs:nsl m"));
    a = list(c, NULL);
    assert_int_equal(json_array_size(a), 2);
    assert_string_equal(get(a, 0, "key"), "cron_jobs");
    assert_non_null(strstr(get(a, 0, "error"), "key cron_jobs is a string, not a set"));
    assert_string_equal(get(a, 1, "name"), "good");
    assert_null(get(a, 1, "key"));
    json_decref(a);
    a = list(c, "nsl");
    assert_int_equal(json_array_size(a), 1);
    assert_non_null(strstr(get(a, 0, "error"), "key cron_jobs:nsl is a list, not a set"));
    json_decref(a);
    hh_client_free(c);
}

static void test_all_namespaces(void **s) {
    (void)s;
    const char *prefixes[] = {NULL, "a*b"}; /* a key prefix with a glob character stays literal */
    for (size_t p = 0; p < 2; p++) {
        hh_client *c = client_ns(prefixes[p]);
        assert_int_equal(save(c, "x", NULL, NULL), HH_OK);
        assert_int_equal(save(c, "x", "nsb", NULL), HH_OK);
        assert_int_equal(save(c, "y", "nsc", NULL), HH_OK);
        /* keys that are no namespace's set: another prefix, a ':' in the rest */
        freeReplyObject(uh_cmd(&srv, "SADD other:cron_jobs:nsd m"));
        freeReplyObject(uh_cmd(&srv, "SADD %scron_jobs:a:b m", prefixes[p] ? "a*b:" : ""));
        json_t *a = list(c, "*");
        assert_int_equal(json_array_size(a), 3);
        assert_string_equal(get(a, 0, "name"), "x");
        assert_string_equal(get(a, 0, "namespace"), "default");
        assert_string_equal(get(a, 1, "name"), "x");
        assert_string_equal(get(a, 1, "namespace"), "nsb");
        assert_string_equal(get(a, 2, "name"), "y");
        assert_string_equal(get(a, 2, "namespace"), "nsc");
        json_decref(a);
        a = list(c, "nsb");
        assert_int_equal(json_array_size(a), 1);
        json_decref(a);
        /* '*' is no one job's namespace */
        assert_int_equal(hh_cron_set_enabled(c, "*", "x", 0), HH_ERR_INVALID);
        assert_int_equal(hh_cron_delete(c, "*", "x"), HH_ERR_INVALID);
        assert_int_equal(hh_cron_enqueue_now(c, "*", "x", NULL), HH_ERR_INVALID);
        assert_int_equal(save(c, "z", "*", NULL), HH_ERR_INVALID);
        hh_client_free(c);
    }
}

/* The namespace "" is refused by every call, with its reason, and
 * nothing is written: it is not read as "default" (sidekiq-cron would key
 * a namespace "" of its own). */
static void test_empty_namespace_refused(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    assert_int_equal(save(c, "x", NULL, NULL), HH_OK);
    assert_int_equal(save(c, "x", "", NULL), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "namespace is empty"));
    char *out = NULL;
    assert_int_equal(hh_cron_list(c, "", &out), HH_ERR_INVALID);
    assert_null(out);
    assert_int_equal(hh_cron_set_enabled(c, "", "x", 0), HH_ERR_INVALID);
    assert_int_equal(hh_cron_delete(c, "", "x"), HH_ERR_INVALID);
    assert_int_equal(hh_cron_enqueue_now(c, "", "x", NULL), HH_ERR_INVALID);
    assert_int_equal(hh_cron_history(c, "", "x", &out), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "namespace is empty"));
    char *status = uh_str(&srv, "HGET cron_job:default:x status");
    assert_string_equal(status, "enabled");
    free(status);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 0);
    /* an empty queue is refused too, not read as default */
    hh_cron_spec q = {.struct_size = sizeof(q), .name = "q", .cron = "@daily", .klass = "X", .queue = ""};
    assert_int_equal(hh_cron_save(c, &q), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "'queue' is empty"));
    assert_int_equal(uh_int(&srv, "EXISTS cron_job:default:q"), 0);
    hh_client_free(c);
}

static void test_namespaces_found(void **s) {
    (void)s;
    uh_flushall(&srv);
    uh_conn_fixture f;
    assert_int_equal(uh_conn_fixture_open(&f, srv.url, NULL), 0);
    sds *ns = NULL, err = NULL;
    size_t n = 0;
    /* nothing in Redis: "default" alone, as sidekiq-cron's namespaces | [default] */
    assert_int_equal(hh__cron_namespaces_found(&f.conn, &f.keys, &ns, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(ns[0], "default");
    freeReplyObject(uh_cmd(&srv, "SADD cron_jobs:default m"));
    freeReplyObject(uh_cmd(&srv, "SADD cron_jobs:nsb m"));
    freeReplyObject(uh_cmd(&srv, "SADD cron_jobs m")); /* 1.x: no namespace */
    freeReplyObject(uh_cmd(&srv, "SET cron_jobs:x:y 1"));
    size_t before = n;
    assert_int_equal(hh__cron_namespaces_found(&f.conn, &f.keys, &ns, &n, &err), 0);
    assert_int_equal(n - before, 1); /* appended: nsb; default once */
    assert_string_equal(ns[1], "nsb");
    for (size_t i = 0; i < n; i++) sdsfree(ns[i]);
    free(ns);
    assert_null(err);
    uh_conn_fixture_close(&f);
}

/* A Redis error in add's check of the 1.x/2.x layout, and in a listing:
 * an ACL user that may not run EXISTS nor SMEMBERS. */
static void test_redis_errors(void **s) {
    (void)s;
    uh_flushall(&srv);
    redisReply *r = uh_cmd(&srv, "ACL SETUSER nocron on >pw ~* &* +@all -exists -smembers");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    char url[128];
    snprintf(url, sizeof(url), "redis://nocron:pw@127.0.0.1:%d", srv.port);
    hh_client *c = uh_client(url, NULL);
    assert_int_equal(save(c, "j", NULL, NULL), HH_ERR_REDIS);
    assert_non_null(strstr(hh_last_error(), "EXISTS"));
    /* with a layout chosen: the check of the other layout's key */
    for (int l = 1; l <= 2; l++) {
        assert_int_equal(save_layout(c, "j", NULL, l, sizeof(hh_cron_spec)), HH_ERR_REDIS);
        assert_non_null(strstr(hh_last_error(), "EXISTS"));
    }
    assert_int_equal(uh_int(&srv, "DBSIZE"), 0); /* nothing saved */
    char *out = (char *)1;
    assert_int_equal(hh_cron_list(c, NULL, &out), HH_ERR_REDIS);
    assert_null(out);
    assert_int_equal(hh_cron_list(c, "*", &out), HH_ERR_REDIS);
    hh_client_free(c);
    freeReplyObject(uh_cmd(&srv, "ACL DELUSER nocron"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_checked),       cmocka_unit_test(test_broken_members_listed),
        cmocka_unit_test(test_all_namespaces),      cmocka_unit_test(test_namespaces_found),
        cmocka_unit_test(test_redis_errors),        cmocka_unit_test(test_layout_chosen),
        cmocka_unit_test(test_job_in_both_layouts), cmocka_unit_test(test_empty_namespace_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
