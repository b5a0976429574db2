/* test_heartbeat.c -- src/heartbeat.c: the info JSON (docs/protocol.md, the union
 * of the generations' fields) built for a manager that was never started, and one real beat
 * against a private redis-server (atomicity: processes + hash + TTL in one
 * transaction, busy == HLEN work, counters flushed, one signal popped),
 * then the clean unregister. */
#include "unit_helpers.h"

#include <pthread.h>
#include "heartbeat.h"
#include "job.h"
#include <stdint.h>
#include "manager.h"
#include "util.h"

/* The view the manager gives its heartbeat thread, as of now. */
static const hh__heartbeat_env *env_of(struct hh_manager *m) {
    static hh__heartbeat_env e;
    hh__manager_heartbeat_env(m, &e);
    return &e;
}

static hh_manager *new_manager(const char *url, const hh_queue_weight *q, size_t nq, const char *const *labels) {
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = url ? url : "redis://127.0.0.1:1/0";
    o.queues = q;
    o.nqueues = nq;
    o.concurrency = 3;
    o.tag = "demo";
    o.labels = labels;
    o.version = "7.3.10";
    o.log_level = HH_LOG_ERROR + 1;
    int err = 99;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    assert_int_equal(err, HH_OK);
    return m;
}

static void check_common(json_t *o, struct hh_manager *m) {
    const char *want[] = {"hostname", "started_at", "pid",    "tag",      "concurrency", "queues",
                          "weights",  "capsules",   "labels", "identity", "version",     "embedded"};
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
        if (!json_object_get(o, want[i])) fail_msg("info lacks \"%s\"", want[i]);
    assert_string_equal(json_string_value(json_object_get(o, "hostname")), m->hostname);
    assert_true(json_is_real(json_object_get(o, "started_at")));
    assert_int_equal(json_integer_value(json_object_get(o, "pid")), getpid());
    assert_string_equal(json_string_value(json_object_get(o, "tag")), "demo");
    assert_int_equal(json_integer_value(json_object_get(o, "concurrency")), 3);
    /* identity == the key the heartbeat writes (hh__key_process of it) */
    const char *id = json_string_value(json_object_get(o, "identity"));
    assert_non_null(id);
    assert_string_equal(id, hh_manager_identity((hh_manager *)m));
    assert_string_equal(id, m->identity);
    assert_string_equal(json_string_value(json_object_get(o, "version")), "7.3.10");
    assert_true(json_is_false(json_object_get(o, "embedded")));
}

static void test_info_weighted(void **s) {
    (void)s;
    hh_queue_weight q[] = {{"default", 2}, {"low", 1}, {"critical", 0}};
    const char *labels[] = {"blue", "canary", NULL};
    hh_manager *mm = new_manager(NULL, q, 3, labels);
    struct hh_manager *m = (struct hh_manager *)mm;
    m->ctx.started_at = 1795962144.1420772;
    char *info = hh__heartbeat_info(env_of((struct hh_manager *)m));
    assert_non_null(info);
    json_t *o = json_loads(info, 0, NULL);
    assert_non_null(o);
    check_common(o, m);
    assert_string_equal(uh_token(info, "started_at"), "1795962144.1420772");
    /* the default identity: "<hostname>:<pid>:<12 hex>" */
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s:%d:", m->hostname, (int)getpid());
    const char *id = json_string_value(json_object_get(o, "identity"));
    assert_int_equal(strncmp(id, prefix, strlen(prefix)), 0);
    const char *nonce = id + strlen(prefix);
    assert_int_equal(strlen(nonce), 12);
    assert_int_equal(strspn(nonce, "0123456789abcdef"), 12);

    json_t *qs = json_object_get(o, "queues");
    assert_int_equal(json_array_size(qs), 3);
    assert_string_equal(json_string_value(json_array_get(qs, 0)), "default");
    assert_string_equal(json_string_value(json_array_get(qs, 2)), "critical");
    json_t *w = json_object_get(o, "weights");
    assert_true(json_is_array(w));
    assert_int_equal(json_array_size(w), 1);
    json_t *w0 = json_array_get(w, 0);
    assert_int_equal(json_integer_value(json_object_get(w0, "default")), 2);
    assert_int_equal(json_integer_value(json_object_get(w0, "low")), 1);
    assert_int_equal(json_integer_value(json_object_get(w0, "critical")), 0);
    json_t *cap = json_object_get(json_object_get(o, "capsules"), "default");
    assert_non_null(cap);
    assert_int_equal(json_integer_value(json_object_get(cap, "concurrency")), 3);
    assert_string_equal(json_string_value(json_object_get(cap, "mode")), "weighted");
    assert_true(json_equal(json_object_get(cap, "weights"), w0));
    json_t *l = json_object_get(o, "labels");
    assert_int_equal(json_array_size(l), 2);
    assert_string_equal(json_string_value(json_array_get(l, 1)), "canary");
    json_decref(o);
    free(info);
    hh_manager_free(mm);
}

static void test_info_strict_defaults(void **s) {
    (void)s;
    char *saved = getenv("DYNO") ? strdup(getenv("DYNO")) : NULL;
    setenv("DYNO", "web.1", 1);
    hh_manager *mm = new_manager(NULL, NULL, 0, NULL);
    struct hh_manager *m = (struct hh_manager *)mm;
    char *info = hh__heartbeat_info(env_of((struct hh_manager *)m));
    json_t *o = json_loads(info, 0, NULL);
    check_common(o, m);
    /* never started: started_at 0.0, but still a real */
    assert_string_equal(json_string_value(json_object_get(o, "hostname")), "web.1");
    assert_int_equal(strncmp(m->identity, "web.1:", 6), 0);
    json_t *qs = json_object_get(o, "queues");
    assert_int_equal(json_array_size(qs), 1);
    assert_string_equal(json_string_value(json_array_get(qs, 0)), "default");
    assert_int_equal(json_array_size(json_object_get(o, "labels")), 0);
    json_t *cap = json_object_get(json_object_get(o, "capsules"), "default");
    assert_string_equal(json_string_value(json_object_get(cap, "mode")), "strict");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(cap, "weights"), "default")), 0);
    json_decref(o);
    free(info);
    hh_manager_free(mm);
    if (saved) {
        setenv("DYNO", saved, 1);
        free(saved);
    } else {
        unsetenv("DYNO");
    }
}

/* capsules.mode (docs/protocol.md) is "strict" | "random" | "weighted"; Sidekiq 7/8
 * call equal weights of 1 "random". */
static void test_info_random_mode(void **s) {
    (void)s;
    hh_queue_weight q[] = {{"a", 1}, {"b", 1}, {"c", 1}};
    hh_manager *mm = new_manager(NULL, q, 3, NULL);
    char *info = hh__heartbeat_info(env_of((struct hh_manager *)mm));
    json_t *o = json_loads(info, 0, NULL);
    json_t *cap = json_object_get(json_object_get(o, "capsules"), "default");
    char mode[32];
    snprintf(mode, sizeof(mode), "%s", json_string_value(json_object_get(cap, "mode")));
    json_decref(o);
    free(info);
    hh_manager_free(mm);
    assert_string_equal(mode, "random");
}

static void test_info_fixed_identity(void **s) {
    (void)s;
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = "redis://127.0.0.1:1/0";
    o.identity = "billing-worker-1";
    o.log_level = HH_LOG_ERROR + 1;
    int err;
    hh_manager *mm = hh_manager_new(&o, &err);
    assert_non_null(mm);
    char *info = hh__heartbeat_info(env_of((struct hh_manager *)mm));
    json_t *j = json_loads(info, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "identity")), "billing-worker-1");
    assert_string_equal(json_string_value(json_object_get(j, "version")), "6.4.1"); /* default */
    assert_string_equal(json_string_value(json_object_get(j, "tag")), "");
    json_decref(j);
    free(info);
    hh_manager_free(mm);
    o.identity = "bad|identity";
    assert_null(hh_manager_new(&o, &err));
    assert_int_equal(err, HH_ERR_INVALID);
}

static void test_rss(void **s) {
    (void)s;
    long kb = hh__rss_kb();
    assert_true(kb > 100 && kb < 10L * 1024 * 1024);
}

/* ------------------------------------------------------ one real beat */

UH_REDIS_GROUP()

static double last_pushed(struct hh_manager *m) {
    pthread_mutex_lock(&m->board.mu);
    double v = m->board.last_pushed_at;
    pthread_mutex_unlock(&m->board.mu);
    return v;
}

static void test_one_beat_and_unregister(void **s) {
    (void)s;
    uh_flushall(&srv);
    hh_queue_weight q[] = {{"default", 0}};
    hh_manager *mm = new_manager(srv.url, q, 1, NULL);
    struct hh_manager *m = (struct hh_manager *)mm;
    const char *id = m->identity;
    m->ctx.started_at = hh__now();
    atomic_store(&m->counters.unflushed_processed, 7);
    atomic_store(&m->counters.unflushed_failed, 3);
    redisReply *x = uh_cmd(&srv, "LPUSH %s-signals TSTP", id);
    freeReplyObject(x);

    /* The heartbeat waits for the identity checks of a start: once the
     * thread is seen waiting for boot, no beat may have been pushed. */
    hh__heartbeat_env e;
    hh__manager_heartbeat_env(m, &e);
    atomic_int boot_waits = 0;
    e.boot_waits = &boot_waits;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hh__heartbeat_main, &e), 0);
    double until = uh_mono() + 10;
    while (atomic_load(&boot_waits) == 0 && uh_mono() < until) uh_sleep(0.01);
    assert_true(atomic_load(&boot_waits) > 0);
    assert_int_equal(last_pushed(m), 0);
    atomic_store(&m->flags.booted, 1);
    hh__wake_all(&m->wake); /* whoever sets a flag wakes the waiters (wake.h) */
    until = uh_mono() + 5;
    while (last_pushed(m) == 0 && uh_mono() < until) uh_sleep(0.02);
    atomic_store(&m->flags.beats_off, 1);
    hh__wake_all(&m->wake);
    pthread_join(t, NULL);
    assert_true(last_pushed(m) > 0);

    assert_int_equal(uh_int(&srv, "SISMEMBER processes %s", id), 1);
    long long ttl = uh_int(&srv, "TTL %s", id);
    assert_true(ttl >= 1 && ttl <= 60);
    char *info = uh_str(&srv, "HGET %s info", id);
    assert_non_null(info);
    char *mine = hh__heartbeat_info(env_of((struct hh_manager *)m));
    assert_string_equal(info, mine);
    free(mine);
    free(info);
    char *busy = uh_str(&srv, "HGET %s busy", id);
    assert_string_equal(busy, "0");
    free(busy);
    assert_int_equal(uh_int(&srv, "HLEN %s:work", id), 0);
    char *conc = uh_str(&srv, "HGET %s concurrency", id);
    assert_string_equal(conc, "3");
    free(conc);
    char *beat = uh_str(&srv, "HGET %s beat", id);
    UH_ASSERT_DBL_IN(strtod(beat, NULL), m->ctx.started_at, hh__now());
    free(beat);
    char *rss = uh_str(&srv, "HGET %s rss", id);
    assert_true(rss && atol(rss) > 0);
    free(rss);
    /* counters flushed, daily keys with a TTL */
    assert_int_equal(uh_int(&srv, "GET stat:processed"), 7);
    assert_int_equal(uh_int(&srv, "GET stat:failed"), 3);
    assert_int_equal(atomic_load(&m->counters.unflushed_processed), 0);
    char day[16];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(day, sizeof(day), "%Y-%m-%d", &tm);
    assert_int_equal(uh_int(&srv, "GET stat:processed:%s", day), 7);
    assert_true(uh_int(&srv, "TTL stat:processed:%s", day) > 0);
    /* the signal was popped and acted on */
    assert_int_equal(uh_int(&srv, "LLEN %s-signals", id), 0);
    assert_int_equal(atomic_load(&m->flags.quiet), 1);
    /* no key without a TTL except the counters and the processes set */
    redisReply *keys = uh_cmd(&srv, "KEYS *");
    for (size_t i = 0; i < keys->elements; i++) {
        const char *k = keys->element[i]->str;
        if (!strcmp(k, "processes") || !strcmp(k, "stat:processed") || !strcmp(k, "stat:failed")) continue;
        if (uh_int(&srv, "TTL %s", k) < 0) fail_msg("key %s has no TTL", k);
    }
    freeReplyObject(keys);

    /* clean stop: out of processes, work hashes gone */
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    atomic_store(&m->counters.unflushed_processed, 2);
    assert_int_equal(hh__heartbeat_unregister(env_of(m), &c), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER processes %s", id), 0);
    assert_int_equal(uh_int(&srv, "EXISTS %s:work %s:workers", id, id), 0);
    assert_int_equal(uh_int(&srv, "GET stat:processed"), 9);
    hh__conn_close(&c);
    hh_manager_free(mm);
}

/* The work-hash command is built by hand (one buffer for a payload of any
 * size): its value must be exactly what jansson writes for the same object. */
static void test_work_hset_matches_jansson(void **s) {
    (void)s;
    char ctl[40];
    for (int i = 0; i < 32; i++) ctl[i] = (char)(i + 1 == 32 ? 0x7f : i + 1);
    ctl[32] = 0;
    const char *payloads[] = {
        "{\"class\":\"K\",\"args\":[\"a\\\"b\\\\c\\/d\"],\"jid\":\"j\"}",
        "{\"class\":\"K\",\"args\":[\"h\u00e9llo \u2028 \xf0\x9f\x98\x80\"]}",
        ctl,
        "",
        "plain",
    };
    const char *queues[] = {"default", "q\"u\\e\n", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof(payloads) / sizeof(*payloads); i++)
        for (size_t q = 0; q < sizeof(queues) / sizeof(*queues); q++) {
            hh_job job;
            memset(&job, 0, sizeof(job));
            job.payload = (char *)payloads[i];
            job.len = strlen(payloads[i]);
            job.queue = (char *)queues[q];
            job.run_at = 1795962147.75;
            sds cmd = hh__heartbeat_work_hset("ns:host:1:abc:work", "tid9", &job);
            assert_non_null(cmd);
            json_t *w = json_object();
            json_object_set_new(w, "queue", json_string(job.queue));
            json_object_set_new(w, "payload", json_stringn(job.payload, job.len));
            json_object_set_new(w, "run_at", json_integer((json_int_t)job.run_at));
            char *v = hh__json_dump(w);
            json_decref(w);
            assert_non_null(v);
            char want[2048];
            snprintf(want, sizeof(want),
                     "*4\r\n$4\r\nHSET\r\n$18\r\nns:host:1:abc:work\r\n$4\r\ntid9\r\n$%zu\r\n%s\r\n", strlen(v), v);
            if (sdslen(cmd) != strlen(want) || memcmp(cmd, want, sdslen(cmd)) != 0)
                fail_msg("payload %zu queue %zu:\n got  %s\n want %s", i, q, cmd, want);
            free(v);
            sdsfree(cmd);
        }
    /* not UTF-8: a JSON string cannot hold it, no command (as before) */
    hh_job bad;
    memset(&bad, 0, sizeof(bad));
    bad.payload = (char *)"{\"a\":\"\xff\"}";
    bad.len = strlen(bad.payload);
    bad.queue = (char *)"default";
    assert_null(hh__heartbeat_work_hset("k", "t", &bad));
}

int main(void) {
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_info_weighted),
        cmocka_unit_test(test_info_strict_defaults),
        cmocka_unit_test(test_info_random_mode),
        cmocka_unit_test(test_info_fixed_identity),
        cmocka_unit_test(test_rss),
        cmocka_unit_test(test_work_hset_matches_jansson),
    };
    const struct CMUnitTest live[] = {
        cmocka_unit_test(test_one_beat_and_unregister),
    };
    int failed = cmocka_run_group_tests_name("heartbeat_info", pure, NULL, NULL);
    failed += cmocka_run_group_tests_name("heartbeat_beat", live, group_setup, group_teardown);
    return failed;
}
