/* test_admin.c -- src/admin.c, the job management API: every argument check
 * answers HH_ERR_INVALID and writes nothing; a jid nowhere is
 * HH_ERR_NOTFOUND; an entry that is not a job is refused for a push and
 * stays where it was; namespaces are applied; the filter and the limit;
 * the move of one entry happens once; the queue with the empty name is
 * shown and cleared. Against a private redis-server. */
#include "unit_helpers.h"

#include <jansson.h>
#include <math.h>
#include <time.h>
#include "hiredhand.h"

UH_REDIS_GROUP()

static hh_client *client_ns(const char *ns) {
    uh_flushall(&srv);
    return uh_client(srv.url, ns);
}

static long long dbsize(void) { return uh_int(&srv, "DBSIZE"); }

static int count_cb(const hh_jobset_entry *e, void *udata) {
    (void)e;
    (*(int *)udata)++;
    return 0;
}

static void add_retry(const char *key, double score, const char *jid, const char *klass, int rc) {
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"retry\":true,\"queue\":\"default\",\"class\":\"%s\",\"args\":[1],\"jid\":\"%s\","
             "\"created_at\":1.5,\"enqueued_at\":1.5,\"error_class\":\"E\",\"error_message\":\"boom %s\","
             "\"failed_at\":2.5,\"retry_count\":%d}",
             klass, jid, jid, rc);
    freeReplyObject(uh_cmd(&srv, "ZADD %s %f %s", key, score, buf));
}

static void test_argument_checks(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    add_retry("retry", 100, "a1", "K", 1);
    long long before = dbsize(), n;
    char *out = (char *)1;
    size_t done = 7, skipped = 7;
    int cnt = 0;
    assert_int_equal(hh_jobset_size(NULL, HH_JOBSET_RETRY, &n), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_size(c, (hh_jobset)9, &n), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_size(c, HH_JOBSET_RETRY, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_each(NULL, HH_JOBSET_RETRY, NULL, count_cb, &cnt), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_each(c, HH_JOBSET_RETRY, NULL, NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_each(c, (hh_jobset)-1, NULL, count_cb, &cnt), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, "", count_cb, &cnt), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, NULL, count_cb, &cnt), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, "a1", NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_act(NULL, HH_JOBSET_RETRY, "a1", HH_JOBSET_DELETE, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "", HH_JOBSET_DELETE, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_DEAD, "a1", HH_JOBSET_KILL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "a1", (hh_jobset_action)42, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_DEAD, NULL, HH_JOBSET_KILL, NULL, &done, &skipped), HH_ERR_INVALID);
    assert_int_equal(done, 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(hh_jobset_act_all(NULL, HH_JOBSET_RETRY, NULL, HH_JOBSET_DELETE, NULL, NULL, NULL),
                     HH_ERR_INVALID);
    /* an empty error text would match every entry: refused, never a delete of all */
    hh_jobset_filter empty_error = {.error = ""};
    assert_int_equal(hh_jobset_each(c, HH_JOBSET_RETRY, &empty_error, count_cb, &cnt), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_RETRY, &empty_error, HH_JOBSET_DELETE, NULL, NULL, NULL),
                     HH_ERR_INVALID);
    empty_error.limit = 1;
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_RETRY, &empty_error, HH_JOBSET_DELETE, NULL, NULL, NULL),
                     HH_ERR_INVALID);
    assert_int_equal(hh_jobset_clear(NULL, HH_JOBSET_RETRY, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_clear(c, (hh_jobset)3, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_queues_list(c, NULL), HH_ERR_INVALID);
    char longq[HH_NAME_QUEUE_MAX + 2]; /* existing queues may hold '|' or a newline, not be this long */
    memset(longq, 'q', sizeof(longq) - 1);
    longq[sizeof(longq) - 1] = '\0';
    assert_int_equal(hh_queue_show(c, longq, 10, &out), HH_ERR_INVALID);
    assert_int_equal(hh_queue_show(c, NULL, 10, &out), HH_ERR_INVALID);
    assert_int_equal(hh_queue_clear(c, longq, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_busy(NULL, &out), HH_ERR_INVALID);
    assert_int_equal(hh_busy(c, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_jobs_find(c, "", &out), HH_ERR_INVALID);
    assert_int_equal(hh_jobs_find(c, NULL, &out), HH_ERR_INVALID);
    assert_int_equal(cnt, 0);
    assert_int_equal(dbsize(), before);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 1);
    hh_client_free(c);
}

static void test_not_found(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    add_retry("retry", 100, "a1", "K", 1);
    int cnt = 0;
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, "zz", count_cb, &cnt), HH_ERR_NOTFOUND);
    /* a jid is matched whole, and glob characters in it are literal */
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, "a", count_cb, &cnt), HH_ERR_NOTFOUND);
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, "a*", count_cb, &cnt), HH_ERR_NOTFOUND);
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "a?", HH_JOBSET_DELETE, NULL), HH_ERR_NOTFOUND);
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_SCHEDULED, "a1", HH_JOBSET_ENQUEUE, NULL), HH_ERR_NOTFOUND);
    assert_int_equal(cnt, 0);
    assert_int_equal(hh_jobset_find(c, HH_JOBSET_RETRY, "a1", count_cb, &cnt), HH_OK);
    assert_int_equal(cnt, 1);
    /* the second of two identical moves finds nothing */
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "a1", HH_JOBSET_RETRY_NOW, NULL), HH_OK);
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "a1", HH_JOBSET_RETRY_NOW, NULL), HH_ERR_NOTFOUND);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 1);
    char *out = NULL;
    assert_int_equal(hh_jobs_find(c, "nowhere", &out), HH_OK);
    assert_string_equal(out, "[]");
    free(out);
    hh_client_free(c);
}

static void test_not_a_job_stays(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    freeReplyObject(uh_cmd(&srv, "ZADD retry 5 %s", "{\"jid\":\"nojob\",\"class\":\"K\"}"));
    freeReplyObject(
        uh_cmd(&srv, "ZADD retry 6 %s", "{\"jid\":\"badq\",\"class\":\"K\",\"args\":[],\"queue\":\"a\\u0000b\"}"));
    freeReplyObject(uh_cmd(&srv, "ZADD retry 7 %s", "not json at all"));
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "nojob", HH_JOBSET_RETRY_NOW, NULL), HH_ERR_INVALID);
    assert_non_null(strstr(hh_client_last_error(c), "args"));
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "badq", HH_JOBSET_RETRY_NOW, NULL), HH_ERR_INVALID);
    size_t done = 9, skipped = 9;
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_RETRY, NULL, HH_JOBSET_RETRY_NOW, NULL, &done, &skipped), HH_OK);
    assert_int_equal(done, 0);
    assert_int_equal(skipped, 3);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 3);
    assert_int_equal(uh_int(&srv, "EXISTS queue:default"), 0);
    /* kill and delete take any member */
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_RETRY, NULL, HH_JOBSET_KILL, NULL, &done, &skipped), HH_OK);
    assert_int_equal(done, 3);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 3);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 0);
    hh_client_free(c);
}

static void test_namespace_filter_limit(void **s) {
    (void)s;
    hh_client *c = client_ns("ns");
    add_retry("ns:retry", 10, "n1", "A", 3);
    add_retry("ns:retry", 11, "n2", "B", 3);
    add_retry("ns:retry", 12, "n3", "A", 3);
    add_retry("retry", 13, "x1", "A", 3); /* outside the namespace */
    int cnt = 0;
    hh_jobset_filter f = {0};
    f.klass = "A";
    assert_int_equal(hh_jobset_each(c, HH_JOBSET_RETRY, &f, count_cb, &cnt), HH_OK);
    assert_int_equal(cnt, 2);
    f.limit = 1;
    cnt = 0;
    assert_int_equal(hh_jobset_each(c, HH_JOBSET_RETRY, &f, count_cb, &cnt), HH_OK);
    assert_int_equal(cnt, 1);
    f.klass = NULL;
    f.limit = 0;
    f.error = "boom n2";
    cnt = 0;
    assert_int_equal(hh_jobset_each(c, HH_JOBSET_RETRY, &f, count_cb, &cnt), HH_OK);
    assert_int_equal(cnt, 1);
    hh_jobset_filter g = {0};
    g.klass = "A";
    g.limit = 1;
    size_t done = 0;
    assert_int_equal(hh_jobset_act_all(c, HH_JOBSET_RETRY, &g, HH_JOBSET_RETRY_NOW, NULL, &done, NULL), HH_OK);
    assert_int_equal(done, 1);
    assert_int_equal(uh_int(&srv, "LLEN ns:queue:default"), 1);
    assert_int_equal(uh_int(&srv, "SISMEMBER ns:queues default"), 1);
    char *v = uh_str(&srv, "LINDEX ns:queue:default 0");
    assert_non_null(strstr(v, "\"retry_count\":2")); /* SortedEntry#retry: 3 - 1 */
    free(v);
    long long removed = 0;
    assert_int_equal(hh_jobset_clear(c, HH_JOBSET_RETRY, &removed), HH_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 1);
    assert_int_equal(hh_queue_clear(c, "default", &removed), HH_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(uh_int(&srv, "EXISTS ns:queue:default"), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER ns:queues default"), 0);
    /* the queue with the empty name (a job whose "queue" is ""): `queue:` */
    freeReplyObject(uh_cmd(&srv, "LPUSH ns:queue: %s", "{\"queue\":\"\",\"class\":\"K\",\"args\":[],\"jid\":\"e1\"}"));
    freeReplyObject(uh_cmd(&srv, "SADD ns:queues %s", ""));
    char *out = NULL;
    assert_int_equal(hh_queue_show(c, "", 10, &out), HH_OK);
    assert_non_null(strstr(out, "\"size\":1"));
    assert_non_null(strstr(out, "\"jid\":\"e1\""));
    free(out);
    assert_int_equal(hh_queue_clear(c, "", &removed), HH_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(uh_int(&srv, "EXISTS ns:queue:"), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER ns:queues %s", ""), 0);
    hh_client_free(c);
}

static void test_dead_trims_on_kill(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    add_retry("dead", 1, "old", "K", 1); /* older than the timeout given below */
    add_retry("retry", 100, "k1", "K", 1);
    hh_jobset_options o = {3600, 0};
    assert_int_equal(hh_jobset_act(c, HH_JOBSET_RETRY, "k1", HH_JOBSET_KILL, &o), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 1);
    char *sc = uh_str(&srv, "ZSCORE dead %s",
                      "{\"retry\":true,\"queue\":\"default\",\"class\":\"K\",\"args\":[1],\"jid\":\"k1\","
                      "\"created_at\":1.5,\"enqueued_at\":1.5,\"error_class\":\"E\",\"error_message\":\"boom k1\","
                      "\"failed_at\":2.5,\"retry_count\":1}");
    assert_non_null(sc); /* the member byte for byte */
    assert_true(fabs(atof(sc) - (double)time(NULL)) < 60);
    free(sc);
    hh_client_free(c);
}

/* hh_jobset_page: a page by rank in the Web UI's order (the dead set
 * newest first), reversed on demand, bounded; arguments checked. */
static int jid_cb(const hh_jobset_entry *e, void *udata) {
    strcat((char *)udata, e->jid);
    return 0;
}

static void test_jobset_page(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    const char *jids[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        add_retry("retry", 100 + i, jids[i], "K", 1);
        add_retry("dead", 100 + i, jids[i], "K", 1);
    }
    char got[64] = "";
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, 1, 3, 0, jid_cb, got), HH_OK);
    assert_string_equal(got, "bcd");
    got[0] = '\0';
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, 0, 2, 1, jid_cb, got), HH_OK);
    assert_string_equal(got, "ed");
    got[0] = '\0';
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_DEAD, 0, 2, 0, jid_cb, got), HH_OK);
    assert_string_equal(got, "ed"); /* the dead set: newest first */
    got[0] = '\0';
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, 4, 100, 0, jid_cb, got), HH_OK);
    assert_string_equal(got, "e");
    got[0] = '\0';
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, 9, 10, 0, jid_cb, got), HH_OK);
    assert_string_equal(got, "");
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, -1, 10, 0, jid_cb, got), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, 0, 0, 0, jid_cb, got), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, 0, 1001, 0, jid_cb, got), HH_ERR_INVALID);
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_RETRY, 0, 10, 0, NULL, NULL), HH_ERR_INVALID);
    freeReplyObject(uh_cmd(&srv, "SET schedule x"));
    assert_int_equal(hh_jobset_page(c, HH_JOBSET_SCHEDULED, 0, 10, 0, jid_cb, got), HH_ERR_REDIS);
    hh_client_free(c);
}

/* hh_queue_page and hh_queue_delete_job: pages from the next to run, the
 * exact bytes deleted once. */
static void test_queue_page_delete(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    const char *jobs[] = {"{\"class\":\"K\",\"args\":[0],\"jid\":\"j0\"}",
                          "{\"class\":\"K\",\"args\":[1],\"jid\":\"j1\"}",
                          "{\"class\":\"K\",\"args\":[2],\"jid\":\"j2\"}"};
    for (int i = 0; i < 3; i++) freeReplyObject(uh_cmd(&srv, "LPUSH queue:q %s", jobs[i])); /* j0 runs first */
    char *out = NULL;
    assert_int_equal(hh_queue_page(c, "q", 1, 5, &out), HH_OK);
    json_t *o = json_loads(out, 0, NULL);
    free(out);
    assert_int_equal(json_integer_value(json_object_get(o, "size")), 3);
    json_t *js = json_object_get(o, "jobs");
    assert_int_equal(json_array_size(js), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(js, 0), "jid")), "j1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(js, 0), "payload")), jobs[1]);
    json_decref(o);
    assert_int_equal(hh_queue_delete_job(c, "q", jobs[1], strlen(jobs[1])), HH_OK);
    assert_int_equal(hh_queue_delete_job(c, "q", jobs[1], strlen(jobs[1])), HH_ERR_NOTFOUND);
    assert_int_equal(uh_int(&srv, "LLEN queue:q"), 2);
    assert_int_equal(hh_queue_delete_job(c, "q", "", 0), HH_ERR_INVALID);
    assert_int_equal(hh_queue_page(c, "q", 0, 0, &out), HH_ERR_INVALID);
    assert_int_equal(hh_queue_page(c, "q", -1, 5, &out), HH_ERR_INVALID);
    /* bytes that are not UTF-8: U+FFFD in the text, the exact bytes in base64 */
    freeReplyObject(uh_cmd(&srv, "DEL queue:q"));
    freeReplyObject(uh_cmd(&srv, "LPUSH queue:q %b", "{\"class\":\"K\",\"jid\":\"j\xff\"}", (size_t)24));
    assert_int_equal(hh_queue_page(c, "q", 0, 5, &out), HH_OK);
    o = json_loads(out, 0, NULL);
    free(out);
    json_t *j = json_array_get(json_object_get(o, "jobs"), 0);
    assert_string_equal(json_string_value(json_object_get(j, "jid")), "j\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(j, "class")), "K");
    assert_string_equal(json_string_value(json_object_get(j, "payload_base64")), "eyJjbGFzcyI6IksiLCJqaWQiOiJq/yJ9");
    assert_int_equal(json_integer_value(json_object_get(j, "bytes")), 24);
    assert_true(json_is_false(json_object_get(j, "valid")));
    json_decref(o);
    hh_client_free(c);
}

/* hh_stats_history: today's daily counters, a non-integer as 0, INFO's
 * version. */
static void test_stats_history(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    char key[64], date[16];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    snprintf(key, sizeof key, "stat:processed:%s", date);
    freeReplyObject(uh_cmd(&srv, "SET %s 42", key));
    snprintf(key, sizeof key, "stat:failed:%s", date);
    freeReplyObject(uh_cmd(&srv, "SET %s notanumber", key));
    char *out = NULL;
    assert_int_equal(hh_stats_history(c, 3, &out), HH_OK);
    json_t *o = json_loads(out, 0, NULL);
    free(out);
    json_t *h = json_object_get(o, "history");
    assert_int_equal(json_array_size(h), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "date")), date);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 0), "processed")), 42);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 0), "failed")), 0);
    assert_non_null(json_string_value(json_object_get(json_object_get(o, "redis"), "redis_version")));
    json_decref(o);
    assert_int_equal(hh_stats_history(c, 0, &out), HH_ERR_INVALID);
    assert_int_equal(hh_stats_history(c, 181, &out), HH_ERR_INVALID);
    hh_client_free(c);
}

/* hh_backtrace_decode: Sidekiq 6.x's Base64.encode64 (with line ends) of
 * zlib of a JSON array; anything else is NULL. */
static void test_backtrace_decode(void **s) {
    (void)s;
    /* Ruby: Base64.encode64(Zlib::Deflate.deflate('["a.rb:1","b.rb:2"]')) */
    const char *enc = "eJyLVkrUK0qyMlTSUUoCMYyUYgEzOAUL\n";
    char *dec = hh_backtrace_decode(enc, strlen(enc));
    assert_non_null(dec);
    assert_string_equal(dec, "[\"a.rb:1\",\"b.rb:2\"]");
    free(dec);
    assert_null(hh_backtrace_decode("!!!!", 4));
    assert_null(hh_backtrace_decode("", 0));
    assert_null(hh_backtrace_decode("YWJj", 4)); /* base64 of "abc": not zlib */
}

/* hh_job_metrics_summary: per class over the minutes, 8.x's hash of a
 * minute preferred to 7.x's (a worker writing both is counted once). */
static void test_job_metrics_summary(void **s) {
    (void)s;
    hh_client *c = client_ns(NULL);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char k8[64], k7[64];
    snprintf(k8, sizeof k8, "j|%02d%02d%02d|%d:%02d", tm.tm_year % 100, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min);
    snprintf(k7, sizeof k7, "j|%04d%02d%02d|%d:%d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min);
    freeReplyObject(uh_cmd(&srv, "HSET %s A|p 4 A|f 1 A|ms 300 B|p 9 B|ms 90", k8));
    freeReplyObject(uh_cmd(&srv, "HSET %s A|p 4 A|f 1 A|ms 300", k7)); /* the same runs, 7.x's layout */
    char *out = NULL;
    assert_int_equal(hh_job_metrics_summary(c, 5, &out), HH_OK);
    json_t *o = json_loads(out, 0, NULL);
    free(out);
    json_t *cl = json_object_get(o, "classes");
    assert_int_equal(json_array_size(cl), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cl, 0), "class")), "B");
    json_t *a = json_array_get(cl, 1);
    assert_int_equal(json_integer_value(json_object_get(a, "processed")), 4);
    assert_int_equal(json_integer_value(json_object_get(a, "failed")), 1);
    assert_true(fabs(json_real_value(json_object_get(a, "avg_ms")) - 100.0) < 1e-9);
    json_decref(o);
    assert_int_equal(hh_job_metrics_summary(c, 0, &out), HH_ERR_INVALID);
    hh_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argument_checks),    cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_not_a_job_stays),    cmocka_unit_test(test_namespace_filter_limit),
        cmocka_unit_test(test_dead_trims_on_kill), cmocka_unit_test(test_jobset_page),
        cmocka_unit_test(test_queue_page_delete),  cmocka_unit_test(test_stats_history),
        cmocka_unit_test(test_backtrace_decode),   cmocka_unit_test(test_job_metrics_summary),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
