/* test_client.c -- src/client.c against a private redis-server: pushing as
 * Sidekiq::Client does (docs/protocol.md: key order, jid, SADD queues + LPUSH,
 * scheduling, bulk, raw items), argument validation with nothing written,
 * namespaces, the Stats JSON with latency in both timestamp encodings,
 * remote signals and the dead-set kill with Sidekiq's trims. */
#include "unit_helpers.h"

#include <ctype.h>
#include <math.h>
#include "client.h"
#include "hiredhand.h"
#include "util.h"

UH_REDIS_GROUP()

static hh_client *client_ns(const char *ns, hh_timestamps ts) {
    uh_flushall(&srv);
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = srv.url;
    o.ns = ns;
    o.timestamps = ts;
    int err = 99;
    hh_client *c = hh_client_new(&o, &err);
    assert_non_null(c);
    assert_int_equal(err, HH_OK);
    return c;
}

static hh_client *client(void) { return client_ns(NULL, HH_TS_FLOAT); }

static int is_jid(const char *j) {
    if (strlen(j) != 24) return 0;
    for (int i = 0; i < 24; i++)
        if (!isdigit((unsigned char)j[i]) && !(j[i] >= 'a' && j[i] <= 'f')) return 0;
    return 1;
}

static json_t *lindex(const char *key, long idx, char **raw) {
    char *s = uh_str(&srv, "LINDEX %s %ld", key, idx);
    if (!s) fail_msg("LINDEX %s %ld: nothing", key, idx);
    json_t *v = json_loads(s, 0, NULL);
    assert_non_null(v);
    if (raw) *raw = s;
    else free(s);
    return v;
}

static long long dbsize(void) { return uh_int(&srv, "DBSIZE"); }

static void test_client_new_errors(void **s) {
    (void)s;
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = "http://nope";
    int err = 0;
    assert_null(hh_client_new(&o, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", uh_pick_port());
    o.url = url;
    o.connect_timeout = 0.5;
    double t0 = uh_mono();
    assert_null(hh_client_new(&o, &err));
    assert_int_equal(err, HH_ERR_REDIS);
    assert_true(uh_mono() - t0 < 3);
    hh_client_free(NULL);
}

static void test_push_payload(void **s) {
    (void)s;
    hh_client *c = client();
    char jid[HH_JID_SIZE];
    double before = hh__now();
    assert_int_equal(hh_client_push(c, "HardWorker", "[1,\"two\",{\"b\":1,\"a\":2.0}]", NULL, jid), HH_OK);
    double after = hh__now();
    assert_true(is_jid(jid));
    char *raw;
    json_t *v = lindex("queue:default", 0, &raw);
    assert_string_equal(uh_keys_csv(raw), "retry,queue,class,args,jid,created_at,enqueued_at");
    assert_true(json_is_true(json_object_get(v, "retry")));
    assert_string_equal(json_string_value(json_object_get(v, "queue")), "default");
    assert_string_equal(json_string_value(json_object_get(v, "class")), "HardWorker");
    assert_non_null(strstr(raw, "\"args\":[1,\"two\",{\"b\":1,\"a\":2.0}]"));
    assert_string_equal(json_string_value(json_object_get(v, "jid")), jid);
    json_t *ca = json_object_get(v, "created_at"), *ea = json_object_get(v, "enqueued_at");
    assert_true(json_is_real(ca) && json_is_real(ea));
    UH_ASSERT_DBL_IN(json_real_value(ca), before, after);
    UH_ASSERT_DBL_IN(json_real_value(ea), json_real_value(ca), after);
    assert_int_equal(uh_int(&srv, "SISMEMBER queues default"), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 1);
    assert_int_equal(uh_int(&srv, "EXISTS schedule"), 0);
    assert_int_equal(dbsize(), 2); /* queues, queue:default */
    json_decref(v);
    free(raw);

    /* options: queue, retry false / N, extra keys; jids differ */
    hh_push_options o;
    hh_push_options_init(&o);
    o.queue = "critical";
    o.retry = HH_RETRY_COUNT;
    o.retry_max = 2;
    o.extra_json = "{\"backtrace\":3,\"tags\":[\"t1\"],\"class\":\"Ignored\",\"at\":5}";
    char jid2[HH_JID_SIZE];
    assert_int_equal(hh_client_push(c, "K", NULL, &o, jid2), HH_OK);
    assert_string_not_equal(jid, jid2);
    v = lindex("queue:critical", 0, &raw);
    assert_string_equal(uh_keys_csv(raw), "retry,queue,class,args,backtrace,tags,jid,created_at,enqueued_at");
    assert_true(json_is_integer(json_object_get(v, "retry")));
    assert_int_equal(json_integer_value(json_object_get(v, "retry")), 2);
    assert_string_equal(json_string_value(json_object_get(v, "class")), "K");
    assert_non_null(strstr(raw, "\"args\":[]"));
    json_decref(v);
    free(raw);
    assert_int_equal(uh_int(&srv, "SISMEMBER queues critical"), 1);

    o.retry = HH_RETRY_FALSE;
    o.extra_json = NULL;
    assert_int_equal(hh_client_push(c, "K", "[]", &o, NULL), HH_OK);
    v = lindex("queue:critical", 0, NULL);
    assert_true(json_is_false(json_object_get(v, "retry")));
    json_decref(v);
    o.retry = HH_RETRY_COUNT;
    o.retry_max = 0;
    assert_int_equal(hh_client_push(c, "K", "[]", &o, NULL), HH_OK);
    v = lindex("queue:critical", 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(v, "retry")), 0);
    json_decref(v);
    /* FIFO: LPUSH at the head */
    v = lindex("queue:critical", -1, NULL);
    assert_string_equal(json_string_value(json_object_get(v, "jid")), jid2);
    json_decref(v);
    hh_client_free(c);
}

static void test_push_millis_and_namespace(void **s) {
    (void)s;
    hh_client *c = client_ns("ns", HH_TS_MILLIS);
    double before = hh__now();
    assert_int_equal(hh_client_push(c, "K", "[]", NULL, NULL), HH_OK);
    double after = hh__now();
    assert_int_equal(uh_int(&srv, "EXISTS queue:default"), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER ns:queues default"), 1); /* bare name */
    json_t *v = lindex("ns:queue:default", 0, NULL);
    json_t *ca = json_object_get(v, "created_at"), *ea = json_object_get(v, "enqueued_at");
    assert_true(json_is_integer(ca) && json_is_integer(ea));
    UH_ASSERT_DBL_IN((double)json_integer_value(ca), floor(before * 1000) - 1, ceil(after * 1000) + 1);
    json_decref(v);
    /* every key written carries the prefix exactly once */
    redisReply *r = uh_cmd(&srv, "KEYS *");
    for (size_t i = 0; i < r->elements; i++) {
        assert_int_equal(strncmp(r->element[i]->str, "ns:", 3), 0);
        assert_int_not_equal(strncmp(r->element[i]->str, "ns:ns:", 6), 0);
    }
    assert_int_equal(r->elements, 2);
    freeReplyObject(r);
    hh_client_free(c);
}

static void test_push_scheduled(void **s) {
    (void)s;
    hh_client *c = client();
    hh_push_options o;
    hh_push_options_init(&o);
    double at = floor(hh__now()) + 3600.25;
    o.at = at;
    char jid[HH_JID_SIZE];
    assert_int_equal(hh_client_push(c, "Later", "[1]", &o, jid), HH_OK);
    assert_int_equal(uh_int(&srv, "EXISTS queue:default"), 0);
    assert_int_equal(uh_int(&srv, "EXISTS queues"), 0);
    redisReply *r = uh_cmd(&srv, "ZRANGE schedule 0 -1 WITHSCORES");
    assert_int_equal(r->elements, 2);
    assert_true(strtod(r->element[1]->str, NULL) == at);
    json_t *v = json_loads(r->element[0]->str, 0, NULL);
    assert_string_equal(uh_keys_csv(r->element[0]->str), "retry,queue,class,args,jid,created_at");
    assert_null(json_object_get(v, "enqueued_at"));
    assert_null(json_object_get(v, "at"));
    assert_string_equal(json_string_value(json_object_get(v, "jid")), jid);
    json_decref(v);
    freeReplyObject(r);

    /* a time in the past: pushed now, as perform_at does */
    o.at = hh__now() - 100;
    assert_int_equal(hh_client_push(c, "Late", "[]", &o, NULL), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCARD schedule"), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 1);
    v = lindex("queue:default", 0, NULL);
    assert_non_null(json_object_get(v, "enqueued_at"));
    json_decref(v);
    hh_client_free(c);
}

static long long cmdstat_calls(const char *cmd) {
    char *info = uh_str(&srv, "INFO commandstats");
    assert_non_null(info);
    char pat[64];
    snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", cmd);
    char *p = strstr(info, pat);
    long long n = p ? strtoll(p + strlen(pat), NULL, 10) : 0;
    free(info);
    return n;
}

static void test_push_bulk(void **s) {
    (void)s;
    hh_client *c = client();
    const char *args[] = {"[1]", "[2]", "[3,\"x\"]", NULL, "[5]"};
    char jids[5][HH_JID_SIZE];
    redisReply *x = uh_cmd(&srv, "CONFIG RESETSTAT");
    freeReplyObject(x);
    assert_int_equal(hh_client_push_bulk(c, "Bulk", args, 5, NULL, jids), HH_OK);
    assert_int_equal(cmdstat_calls("lpush"), 1); /* one LPUSH for the batch */
    assert_int_equal(cmdstat_calls("sadd"), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 5);
    char first_ea[64] = "";
    for (int i = 0; i < 5; i++) {
        char *raw;
        json_t *v = lindex("queue:default", -1 - i, &raw); /* oldest first */
        assert_true(is_jid(jids[i]));
        assert_string_equal(json_string_value(json_object_get(v, "jid")), jids[i]);
        for (int k = 0; k < i; k++) assert_string_not_equal(jids[k], jids[i]);
        char *a = json_dumps(json_object_get(v, "args"), JSON_COMPACT);
        assert_string_equal(a, args[i] ? args[i] : "[]");
        free(a);
        const char *ea = uh_token(raw, "enqueued_at");
        if (!i) snprintf(first_ea, sizeof(first_ea), "%s", ea);
        assert_string_equal(ea, first_ea); /* one enqueued_at for all */
        json_decref(v);
        free(raw);
    }

    /* one bad element: nothing at all is pushed */
    uh_flushall(&srv);
    const char *bad[] = {"[1]", "{\"not\":\"array\"}", "[3]"};
    assert_int_equal(hh_client_push_bulk(c, "Bulk", bad, 3, NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(dbsize(), 0);
    assert_int_equal(hh_client_push_bulk(c, "Bulk", bad, 0, NULL, NULL), HH_ERR_INVALID);

    /* scheduled bulk: all in schedule with the same score */
    hh_push_options o;
    hh_push_options_init(&o);
    o.at = hh__now() + 600;
    const char *two[] = {"[1]", "[2]"};
    assert_int_equal(hh_client_push_bulk(c, "Bulk", two, 2, &o, NULL), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCOUNT schedule %.17g %.17g", o.at, o.at), 2);
    assert_int_equal(uh_int(&srv, "EXISTS queue:default"), 0);
    hh_client_free(c);
}

static void test_push_item(void **s) {
    (void)s;
    hh_client *c = client();
    char jid[HH_JID_SIZE];
    const char *item = "{\"class\":\"OkWorker\",\"args\":[5,\"custom\"],\"custom_key\":{\"x\":1},"
                       "\"tags\":[\"t1\"],\"bid\":\"b-1\"}";
    assert_int_equal(hh_client_push_item(c, item, jid), HH_OK);
    char *raw;
    json_t *v = lindex("queue:default", 0, &raw);
    /* the "unknown keys survive" example (docs/protocol.md), in that order */
    assert_string_equal(uh_keys_csv(raw), "retry,queue,class,args,custom_key,tags,bid,jid,created_at,enqueued_at");
    assert_non_null(strstr(raw, "\"custom_key\":{\"x\":1},\"tags\":[\"t1\"],\"bid\":\"b-1\""));
    assert_string_equal(json_string_value(json_object_get(v, "jid")), jid);
    json_decref(v);
    free(raw);

    /* given keys win and keep their place; jid and created_at kept */
    item = "{\"queue\":\"low\",\"retry\":false,\"class\":\"K\",\"args\":[],"
           "\"jid\":\"0123456789abcdef01234567\",\"created_at\":1795962147.0172818,"
           "\"enqueued_at\":1.5}";
    assert_int_equal(hh_client_push_item(c, item, jid), HH_OK);
    assert_string_equal(jid, "0123456789abcdef01234567");
    v = lindex("queue:low", 0, &raw);
    assert_string_equal(uh_keys_csv(raw), "retry,queue,class,args,jid,created_at,enqueued_at");
    assert_true(json_is_false(json_object_get(v, "retry")));
    assert_string_equal(uh_token(raw, "created_at"), "1795962147.0172818");
    assert_true(json_real_value(json_object_get(v, "enqueued_at")) > 1.7e9); /* refreshed */
    json_decref(v);
    free(raw);

    /* "at" in the future: schedule, key removed, score = at */
    double at = floor(hh__now()) + 1000.5;
    char buf[256];
    snprintf(buf, sizeof(buf), "{\"class\":\"K\",\"at\":%.17g,\"args\":[1],\"x\":true}", at);
    assert_int_equal(hh_client_push_item(c, buf, jid), HH_OK);
    redisReply *r = uh_cmd(&srv, "ZRANGE schedule 0 -1 WITHSCORES");
    assert_int_equal(r->elements, 2);
    assert_true(strtod(r->element[1]->str, NULL) == at);
    assert_string_equal(uh_keys_csv(r->element[0]->str), "retry,queue,class,args,x,jid,created_at");
    freeReplyObject(r);
    /* a raw item with "at" in the past still goes to schedule (docs/protocol.md) */
    snprintf(buf, sizeof(buf), "{\"class\":\"K\",\"args\":[],\"at\":%.17g}", hh__now() - 50);
    assert_int_equal(hh_client_push_item(c, buf, NULL), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCARD schedule"), 2);
    hh_client_free(c);
}

static void test_invalid_arguments_write_nothing(void **s) {
    (void)s;
    hh_client *c = client();
    hh_push_options o;
    hh_push_options_init(&o);
    assert_int_equal(hh_client_push(c, "K", "{}", NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_client_push(c, "K", "\"[]\"", NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_client_push(c, "K", "[1,", NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_client_push(c, "K", "not json", NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_client_push(c, "", "[]", NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(hh_client_push(c, NULL, "[]", NULL, NULL), HH_ERR_INVALID);
    o.extra_json = "[1]";
    assert_int_equal(hh_client_push(c, "K", "[]", &o, NULL), HH_ERR_INVALID);
    o.extra_json = "{bad";
    assert_int_equal(hh_client_push(c, "K", "[]", &o, NULL), HH_ERR_INVALID);
    o.extra_json = NULL;
    o.queue = "";
    assert_int_equal(hh_client_push(c, "K", "[]", &o, NULL), HH_ERR_INVALID);
    o.queue = "a|b";
    assert_int_equal(hh_client_push(c, "K", "[]", &o, NULL), HH_ERR_INVALID);
    o.queue = NULL;
    o.retry = HH_RETRY_COUNT;
    o.retry_max = -1;
    assert_int_equal(hh_client_push(c, "K", "[]", &o, NULL), HH_ERR_INVALID);

    const char *items[] = {"[1]",
                           "not json",
                           "{\"args\":[]}",
                           "{\"class\":\"\",\"args\":[]}",
                           "{\"class\":7,\"args\":[]}",
                           "{\"class\":\"K\"}",
                           "{\"class\":\"K\",\"args\":{}}",
                           "{\"class\":\"K\",\"args\":[],\"at\":\"soon\"}",
                           "{\"class\":\"K\",\"args\":[],\"tags\":\"t1\"}",
                           "{\"class\":\"K\",\"args\":[],\"queue\":\"\"}",
                           "{\"class\":\"K\",\"args\":[],\"queue\":5}"};
    for (size_t i = 0; i < sizeof(items) / sizeof(*items); i++)
        if (hh_client_push_item(c, items[i], NULL) != HH_ERR_INVALID) fail_msg("push_item accepted %s", items[i]);
    assert_int_equal(hh_client_push_item(c, NULL, NULL), HH_ERR_INVALID);
    assert_int_equal(dbsize(), 0);
    hh_client_free(c);
}

static void test_stats(void **s) {
    (void)s;
    hh_client *c = client();
    double now = hh__now();
    char buf[256];
    redisContext *rc = uh_connect(srv.port);
    redisReply *x;
#define RC(...) (x = redisCommand(rc, __VA_ARGS__), assert_non_null(x), freeReplyObject(x))
    RC("SET stat:processed 10");
    RC("SET stat:failed 3");
    RC("ZADD schedule 1 a 2 b");
    RC("ZADD retry 1 a");
    RC("ZADD dead 1 a 2 b 3 c 4 d");
    RC("SADD processes p1 p2");
    RC("HSET p1 busy 2");
    RC("HSET p2 busy 1");
    RC("SADD queues default low empty");
    /* default: oldest (tail) enqueued 10 s ago as float seconds */
    snprintf(buf, sizeof(buf), "{\"class\":\"K\",\"args\":[],\"enqueued_at\":%.7f}", now - 10);
    RC("LPUSH queue:default %s", buf);
    snprintf(buf, sizeof(buf), "{\"class\":\"K\",\"args\":[],\"enqueued_at\":%.7f}", now - 1);
    RC("LPUSH queue:default %s", buf);
    /* low: 20 s ago as integer milliseconds (8.x) */
    snprintf(buf, sizeof(buf), "{\"class\":\"K\",\"args\":[],\"enqueued_at\":%lld}",
             (long long)llround((now - 20) * 1000));
    RC("LPUSH queue:low %s", buf);
    redisFree(rc);

    char *out = NULL;
    assert_int_equal(hh_client_stats(c, &out), HH_OK);
    json_t *o = json_loads(out, 0, NULL);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "processed")), 10);
    assert_int_equal(json_integer_value(json_object_get(o, "failed")), 3);
    assert_int_equal(json_integer_value(json_object_get(o, "scheduled_size")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "retry_size")), 1);
    assert_int_equal(json_integer_value(json_object_get(o, "dead_size")), 4);
    assert_int_equal(json_integer_value(json_object_get(o, "processes_size")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "workers_size")), 3);
    assert_int_equal(json_integer_value(json_object_get(o, "enqueued")), 3);
    UH_ASSERT_DBL_IN(json_number_value(json_object_get(o, "default_queue_latency")), 9.5, 12);
    json_t *qs = json_object_get(o, "queues");
    assert_int_equal(json_array_size(qs), 3);
    const char *names[] = {"default", "empty", "low"};
    long long sizes[] = {2, 0, 1};
    double lat[][2] = {{9.5, 12}, {0, 0}, {19.5, 22}};
    for (size_t i = 0; i < 3; i++) {
        json_t *q = json_array_get(qs, i);
        assert_string_equal(json_string_value(json_object_get(q, "name")), names[i]);
        assert_int_equal(json_integer_value(json_object_get(q, "size")), sizes[i]);
        UH_ASSERT_DBL_IN(json_number_value(json_object_get(q, "latency")), lat[i][0], lat[i][1]);
    }
    json_decref(o);
    free(out);
    hh_client_free(c);
}

/* An empty database (no queues, no processes): zeros, no crash. Kept last
 * in the list: under UBSan a failure here aborts the binary. */
static void test_stats_empty_database(void **s) {
    (void)s;
    hh_client *c = client();
    char *out = NULL;
    assert_int_equal(hh_client_stats(c, &out), HH_OK);
    json_t *o = json_loads(out, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(o, "processed")), 0);
    assert_int_equal(json_integer_value(json_object_get(o, "processes_size")), 0);
    assert_int_equal(json_array_size(json_object_get(o, "queues")), 0);
    assert_true(json_number_value(json_object_get(o, "default_queue_latency")) == 0);
    json_decref(o);
    free(out);
    assert_int_equal(hh_client_processes(c, &out), HH_OK);
    assert_string_equal(out, "[]");
    free(out);
    hh_client_free(c);
}

static void test_signal(void **s) {
    (void)s;
    hh_client *c = client();
    const char *id = "host:123:abcdefabcdef";
    assert_int_equal(hh_client_signal(c, id, "TSTP"), HH_ERR_NOTFOUND);
    /* in processes but the hash expired: not live */
    redisReply *x = uh_cmd(&srv, "SADD processes %s", id);
    freeReplyObject(x);
    assert_int_equal(hh_client_signal(c, id, "TSTP"), HH_ERR_NOTFOUND);
    /* a hash but not in processes: not live either */
    x = uh_cmd(&srv, "HSET other:1:2 info {}");
    freeReplyObject(x);
    assert_int_equal(hh_client_signal(c, "other:1:2", "TERM"), HH_ERR_NOTFOUND);
    char key[128];
    snprintf(key, sizeof(key), "%s-signals", id);
    assert_int_equal(uh_int(&srv, "EXISTS %s", key), 0);
    assert_int_equal(uh_int(&srv, "EXISTS other:1:2-signals"), 0);

    x = uh_cmd(&srv, "HSET %s info {} beat 1", id);
    freeReplyObject(x);
    x = uh_cmd(&srv, "EXPIRE %s 60", id);
    freeReplyObject(x);
    assert_int_equal(hh_client_signal(c, id, "TSTP"), HH_OK);
    assert_int_equal(hh_client_signal(c, id, "TTIN"), HH_OK);
    assert_int_equal(hh_client_signal(c, id, "TERM"), HH_OK);
    assert_int_equal(hh_client_signal(c, id, "KILL"), HH_ERR_INVALID);
    assert_int_equal(hh_client_signal(c, id, "tstp"), HH_ERR_INVALID);
    assert_int_equal(uh_int(&srv, "LLEN %s", key), 3);
    char *first = uh_str(&srv, "RPOP %s", key); /* oldest at the tail */
    assert_string_equal(first, "TSTP");
    free(first);
    long long ttl = uh_int(&srv, "TTL %s", key);
    assert_true(ttl > 0 && ttl <= 60);
    hh_client_free(c);
}

/* The dead set's size trim: 10,000 entries + one 200 days old, one kill -> 9,999 left. */
static void test_kill_trims_dead_set(void **s) {
    (void)s;
    hh_client *c = client();
    double now = hh__now();
    redisContext *rc = uh_connect(srv.port);
    for (int i = 1; i <= 10000; i++) redisAppendCommand(rc, "ZADD dead %.6f job-%d", now - i, i);
    redisAppendCommand(rc, "ZADD dead %.6f ancient", now - 200 * 86400.0);
    for (int i = 0; i < 10001; i++) {
        void *r;
        assert_int_equal(redisGetReply(rc, &r), REDIS_OK);
        freeReplyObject(r);
    }
    redisFree(rc);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 10001);
    const char payload[] = "{\"class\":\"K\",\"args\":[\"\xc3\xa9\"],\"x\":1.0}";
    assert_int_equal(hh_client_kill(c, payload, sizeof(payload) - 1, 0, 0), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 9999);
    assert_int_equal(uh_int(&srv, "ZRANK dead ancient"), -1000); /* gone */
    assert_int_equal(uh_int(&srv, "ZRANK dead job-10000"), -1000);
    assert_int_equal(uh_int(&srv, "ZRANK dead job-9999"), -1000);
    assert_int_equal(uh_int(&srv, "ZRANK dead job-9998"), 0);
    /* stored byte for byte, scored now */
    redisReply *r = uh_cmd(&srv, "ZREVRANGE dead 0 0 WITHSCORES");
    assert_int_equal(r->element[0]->len, sizeof(payload) - 1);
    assert_memory_equal(r->element[0]->str, payload, sizeof(payload) - 1);
    UH_ASSERT_DBL_IN(strtod(r->element[1]->str, NULL), now, hh__now());
    freeReplyObject(r);

    /* configured limits */
    uh_flushall(&srv);
    now = hh__now();
    for (int i = 1; i <= 10; i++) {
        redisReply *x = uh_cmd(&srv, "ZADD dead %.6f j%d", now - i * 100, i);
        freeReplyObject(x);
    }
    /* timeout 450 s drops j5..j10; max 5 keeps 4 newest */
    assert_int_equal(hh_client_kill(c, "new", 3, 450, 5), HH_OK);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 4);
    assert_int_equal(uh_int(&srv, "ZRANK dead new"), 3);
    assert_int_equal(uh_int(&srv, "ZRANK dead j1"), 2);
    assert_int_equal(uh_int(&srv, "ZRANK dead j4"), -1000);
    assert_int_equal(hh_client_kill(c, NULL, 0, 0, 0), HH_ERR_INVALID);
    hh_client_free(c);
}

/* ProcessSet semantics: live ones listed, expired members pruned. */
static void test_processes(void **s) {
    (void)s;
    hh_client *c = client();
    redisReply *x = uh_cmd(&srv, "SADD processes live:1:aa gone:2:bb");
    freeReplyObject(x);
    double beat = hh__now() - 2;
    x = uh_cmd(&srv, "HSET live:1:aa info %s busy 1 beat %.7f quiet true rss 1234 rtt_us 77 concurrency 5",
               "{\"hostname\":\"live\",\"started_at\":1795962144.1420772,\"pid\":1,\"tag\":\"t\","
               "\"concurrency\":3,\"queues\":[\"default\"],\"labels\":[],"
               "\"identity\":\"live:1:aa\",\"version\":\"6.4.1\"}",
               beat);
    freeReplyObject(x);
    char *out = NULL;
    assert_int_equal(hh_client_processes(c, &out), HH_OK);
    json_t *a = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(a), 1);
    json_t *p = json_array_get(a, 0);
    assert_string_equal(json_string_value(json_object_get(p, "identity")), "live:1:aa");
    assert_int_equal(json_integer_value(json_object_get(p, "busy")), 1);
    assert_int_equal(json_integer_value(json_object_get(p, "concurrency")), 5); /* hash wins */
    assert_true(json_is_true(json_object_get(p, "quiet")));
    assert_int_equal(json_integer_value(json_object_get(p, "rss")), 1234);
    UH_ASSERT_DBL_IN(json_number_value(json_object_get(p, "beat_age")), 1.5, 5);
    json_decref(a);
    free(out);
    assert_int_equal(uh_int(&srv, "SISMEMBER processes gone:2:bb"), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER processes live:1:aa"), 1);
    hh_client_free(c);
}

/* Large payloads: a push over Redis' proto-max-bulk-len fails with Redis' own message,
 * writes nothing, and the client stays usable. */
static void test_push_over_proto_max_bulk_len(void **st) {
    (void)st;
    freeReplyObject(uh_cmd(&srv, "FLUSHALL"));
    freeReplyObject(uh_cmd(&srv, "CONFIG SET proto-max-bulk-len 1mb"));
    hh_client *c = client();
    size_t n = 1536 * 1024;
    char *a = malloc(n + 8);
    assert_non_null(a);
    a[0] = '[', a[1] = '"';
    memset(a + 2, 'x', n);
    memcpy(a + 2 + n, "\"]", 3);
    char jid[HH_JID_SIZE];
    assert_int_equal(hh_client_push(c, "Big", a, NULL, jid), HH_ERR_REDIS);
    assert_non_null(strstr(hh_client_last_error(c), "bulk length"));
    free(a);
    freeReplyObject(uh_cmd(&srv, "CONFIG SET proto-max-bulk-len 512mb"));
    assert_int_equal(hh_client_push(c, "Small", "[1]", NULL, jid), HH_OK);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 1);
    hh_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_new_errors),
        cmocka_unit_test(test_push_payload),
        cmocka_unit_test(test_push_millis_and_namespace),
        cmocka_unit_test(test_push_scheduled),
        cmocka_unit_test(test_push_bulk),
        cmocka_unit_test(test_push_item),
        cmocka_unit_test(test_invalid_arguments_write_nothing),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_kill_trims_dead_set),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_push_over_proto_max_bulk_len),
        cmocka_unit_test(test_stats_empty_database),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
