/* test_scheduler.c -- src/scheduler.c: Sidekiq's wait between polls
 * (docs/design.md) for fewer and for ten or more processes, and one poll against a
 * private redis-server: due members of retry and schedule moved to
 * their queue once with a fresh enqueued_at, future ones left,
 * malformed ones buried in the dead set, namespaced keys. */
#include "unit_helpers.h"

#include <math.h>
#include "manager.h"
#include "scheduler.h"
#include "util.h"

static void test_wait_formula_few_processes(void **s) {
    (void)s;
    /* P < 10: A*r + A/2, so in [A/2, 3A/2) */
    for (long p = 1; p < 10; p++) {
        double a = 5.0 * (double)p;
        assert_true(hh__scheduler_wait(a, p, 0.0) == a / 2);
        assert_true(hh__scheduler_wait(a, p, 0.5) == a);
        double top = hh__scheduler_wait(a, p, nextafter(1.0, 0.0));
        assert_true(top <= 1.5 * a && top > 1.5 * a - 1e-9);
    }
    /* one process, A = 5 s: polls every 2.5-7.5 s */
    hh__rng rng;
    hh__rng_seed(&rng);
    double lo = 1e9, hi = 0, sum = 0;
    for (int i = 0; i < 100000; i++) {
        double w = hh__scheduler_wait(5.0, 1, hh__rng_double(&rng));
        lo = fmin(lo, w), hi = fmax(hi, w), sum += w;
    }
    UH_ASSERT_DBL_IN(lo, 2.5, 2.51);
    UH_ASSERT_DBL_IN(hi, 7.49, 7.5);
    assert_true(hi < 7.5);
    UH_ASSERT_DBL_IN(sum / 100000, 4.95, 5.05);
    /* a fixed poll_interval_average works the same way */
    assert_true(hh__scheduler_wait(2.0, 1, 0.25) == 1.5);
}

/* Sidekiq's average: poll_interval_average as it is, else
 * average_scheduled_poll_interval (5 s) times the processes. */
static void test_average_scaled_by_processes(void **s) {
    (void)s;
    assert_true(hh__scheduler_average(0, 0, 1) == 5.0);
    assert_true(hh__scheduler_average(0, 0, 4) == 20.0);
    assert_true(hh__scheduler_average(0, 2.0, 3) == 6.0);   /* :average_scheduled_poll_interval: 2 */
    assert_true(hh__scheduler_average(4.0, 2.0, 3) == 4.0); /* :poll_interval_average: wins */
    assert_true(hh__scheduler_average(0, 2.0, 0) == 2.0);   /* SCARD 0: ourselves */
}

static void test_wait_formula_many_processes(void **s) {
    (void)s;
    /* P >= 10: A*r, so in [0, A) */
    long ps[] = {10, 11, 50, 1000};
    for (size_t i = 0; i < sizeof(ps) / sizeof(*ps); i++) {
        double a = 5.0 * (double)ps[i];
        assert_true(hh__scheduler_wait(a, ps[i], 0.0) == 0.0);
        assert_true(hh__scheduler_wait(a, ps[i], 0.5) == a / 2);
        assert_true(hh__scheduler_wait(a, ps[i], nextafter(1.0, 0.0)) < a);
    }
    /* the boundary: 9 processes still get the A/2 floor, 10 do not */
    assert_true(hh__scheduler_wait(45.0, 9, 0.0) == 22.5);
    assert_true(hh__scheduler_wait(50.0, 10, 0.0) == 0.0);
}

/* ------------------------------------------------------------- polling */

UH_REDIS_GROUP()

static struct hh_manager *manager(const char *ns, hh_timestamps ts) {
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = srv.url;
    o.redis.ns = ns;
    o.redis.timestamps = ts;
    o.concurrency = 1;
    o.log_level = HH_LOG_ERROR + 1;
    int err;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    return (struct hh_manager *)m;
}

/* What the manager gives its scheduler thread: its context. */
static const hh__ctx *env_of(struct hh_manager *m) { return &m->ctx; }

static void zadd(const char *key, double score, const char *member) {
    redisReply *r = uh_cmd(&srv, "ZADD %s %.17g %s", key, score, member);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

static void test_poll_moves_due_jobs(void **s) {
    (void)s;
    uh_flushall(&srv);
    struct hh_manager *m = manager(NULL, HH_TS_FLOAT);
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    double now = hh__now();
    const char *due_sched = "{\"retry\":true,\"queue\":\"low\",\"class\":\"K\",\"args\":[1],"
                            "\"jid\":\"aaaaaaaaaaaaaaaaaaaaaaaa\",\"created_at\":1795962147.0172818,"
                            "\"custom\":{\"k\":[1.0]}}";
    const char *due_retry = "{\"retry\":true,\"queue\":\"default\",\"class\":\"F\",\"args\":[],"
                            "\"jid\":\"bbbbbbbbbbbbbbbbbbbbbbbb\",\"created_at\":1795962147.0172818,"
                            "\"enqueued_at\":1795962147.0173023,\"error_message\":\"boom\","
                            "\"error_class\":\"E\",\"failed_at\":1795962147.2214,\"retry_count\":0}";
    const char *future = "{\"retry\":true,\"queue\":\"low\",\"class\":\"K\",\"args\":[2],"
                         "\"jid\":\"cccccccccccccccccccccccc\"}";
    zadd("schedule", now - 5, due_sched);
    zadd("schedule", now + 3600, future);
    zadd("retry", now - 1, due_retry);
    zadd("schedule", now - 2, "not a job");
    zadd("retry", now - 3, "[1,2]");
    /* objects the fetch would bury (one rule for both): no args, an empty
     * class, a class that is not a string */
    zadd("schedule", now - 4, "{\"class\":\"K\",\"queue\":\"low\",\"jid\":\"dddddddddddddddddddddddd\"}");
    zadd("schedule", now - 4, "{\"class\":\"\",\"args\":[],\"queue\":\"low\"}");
    zadd("retry", now - 4, "{\"class\":7,\"args\":[],\"queue\":\"low\",\"retry_count\":1}");

    double t0 = hh__now();
    assert_int_equal(hh__scheduler_poll(env_of(m), &c), 2);
    double t1 = hh__now();
    assert_int_equal(uh_int(&srv, "ZCARD schedule"), 1);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER queues low"), 1);
    assert_int_equal(uh_int(&srv, "SISMEMBER queues default"), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:low"), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 1);

    /* the scheduled job: everything kept, enqueued_at appended */
    char *raw = uh_str(&srv, "LINDEX queue:low 0");
    assert_string_equal(uh_keys_csv(raw), "retry,queue,class,args,jid,created_at,custom,enqueued_at");
    assert_non_null(strstr(raw, "\"custom\":{\"k\":[1.0]}"));
    assert_string_equal(uh_token(raw, "created_at"), "1795962147.0172818");
    json_t *v = json_loads(raw, 0, NULL);
    json_t *ea = json_object_get(v, "enqueued_at");
    assert_true(json_is_real(ea));
    UH_ASSERT_DBL_IN(json_real_value(ea), t0 - 1, t1);
    json_decref(v);
    free(raw);

    /* the retry: enqueued_at refreshed in place, error fields kept */
    raw = uh_str(&srv, "LINDEX queue:default 0");
    assert_string_equal(uh_keys_csv(raw),
                        "retry,queue,class,args,jid,created_at,enqueued_at,error_message,"
                        "error_class,failed_at,retry_count");
    v = json_loads(raw, 0, NULL);
    UH_ASSERT_DBL_IN(json_real_value(json_object_get(v, "enqueued_at")), t0 - 1, t1);
    assert_int_equal(json_integer_value(json_object_get(v, "retry_count")), 0);
    assert_string_equal(uh_token(raw, "failed_at"), "1795962147.2214");
    json_decref(v);
    free(raw);

    /* the malformed members went to the dead set once: not JSON verbatim,
     * other JSON wrapped with its exact text as the arg */
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 5);
    /* each with the fetch's reason, where the Dead page shows it */
    char *reasons = uh_str(&srv, "EVAL %s 0",
                           "local r = {} for _,m in ipairs(redis.call('zrange','dead',0,-1)) do "
                           "local ok, j = pcall(cjson.decode, m) "
                           "if ok and type(j) == 'table' and j.class ~= 'hiredhand::InvalidJob' then "
                           "r[#r + 1] = j.error_class .. ': ' .. j.error_message end end "
                           "table.sort(r) return table.concat(r, '; ')");
    assert_string_equal(reasons,
                        "hiredhand::InvalidJob: payload has an empty \"class\"; "
                        "hiredhand::InvalidJob: payload has no \"args\" array; "
                        "hiredhand::InvalidJob: payload has no \"class\" string");
    free(reasons);
    assert_int_equal(uh_int(&srv, "ZRANK dead %s", "not a job") >= 0, 1);
    assert_int_equal(
        uh_int(
            &srv, "EVAL %s 0",
            "for _,m in ipairs(redis.call('zrange','dead',0,-1)) do if string.find(m, 'hiredhand::InvalidJob', 1, true) and string.find(m, '\"[1,2]\"', 1, true) then return 1 end end return 0"),
        1);

    /* nothing due: a second poll moves nothing */
    assert_int_equal(hh__scheduler_poll(env_of(m), &c), 0);
    assert_int_equal(uh_int(&srv, "LLEN queue:low"), 1);
    hh__conn_close(&c);
    hh_manager_free((hh_manager *)m);
}

/* Due entries holding integers beyond 64 bits (Ruby writes them) go to
 * their queue, not the dead set, with every byte kept but enqueued_at's. */
static void test_poll_moves_bignum_entries(void **s) {
    (void)s;
    uh_flushall(&srv);
    struct hh_manager *m = manager(NULL, HH_TS_FLOAT);
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    const char *sched = "{\"class\":\"T\",\"args\":[123456789012345678901234567890],\"jid\":\"bigsched\","
                        "\"retry\":true,\"queue\":\"default\",\"created_at\":1700000000.1}";
    const char *retry = "{\"class\":\"T\",\"args\":[-123456789012345678901234567890,1.10],\"jid\":\"bigretry\","
                        "\"queue\":\"low\",\"enqueued_at\":1700000000.25,\"retry_count\":0,\"failed_at\":1700000001}";
    zadd("schedule", 1, sched);
    zadd("retry", 2, retry);
    double t0 = hh__now();
    assert_int_equal(hh__scheduler_poll(env_of(m), &c), 2);
    double t1 = hh__now();
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 0);
    assert_int_equal(uh_int(&srv, "ZCARD schedule") + uh_int(&srv, "ZCARD retry"), 0);

    char *raw = uh_str(&srv, "LINDEX queue:default 0");
    assert_non_null(raw);
    size_t n = strlen(sched) - 1; /* all but the closing brace, then enqueued_at */
    assert_memory_equal(raw, sched, n);
    assert_memory_equal(raw + n, ",\"enqueued_at\":", 15);
    assert_string_equal(raw + strlen(raw) - 1, "}");
    json_t *v = json_loads(raw, JSON_DECODE_INT_AS_REAL, NULL);
    UH_ASSERT_DBL_IN(json_real_value(json_object_get(v, "enqueued_at")), t0 - 1, t1);
    json_decref(v);
    free(raw);

    raw = uh_str(&srv, "LINDEX queue:low 0");
    assert_non_null(raw);
    const char *ea = strstr(retry, "1700000000.25");
    size_t pre = (size_t)(ea - retry), post = strlen(ea + 13);
    assert_memory_equal(raw, retry, pre);                   /* bytes before the value */
    assert_string_equal(raw + strlen(raw) - post, ea + 13); /* and after it */
    v = json_loads(raw, JSON_DECODE_INT_AS_REAL, NULL);
    UH_ASSERT_DBL_IN(json_real_value(json_object_get(v, "enqueued_at")), t0 - 1, t1);
    json_decref(v);
    free(raw);
    hh__conn_close(&c);
    hh_manager_free((hh_manager *)m);
}

static void test_poll_many_and_quiet(void **s) {
    (void)s;
    uh_flushall(&srv);
    struct hh_manager *m = manager("ns", HH_TS_MILLIS);
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    double now = hh__now();
    /* more than one batch of 100 */
    redisContext *rc = uh_connect(srv.port);
    for (int i = 0; i < 250; i++)
        redisAppendCommand(rc, "ZADD ns:schedule %.6f {\"class\":\"K\",\"args\":[%d]}", now - 10 + i * 0.001, i);
    for (int i = 0; i < 250; i++) {
        void *r;
        assert_int_equal(redisGetReply(rc, &r), REDIS_OK);
        freeReplyObject(r);
    }
    redisFree(rc);
    assert_int_equal(hh__scheduler_poll(env_of(m), &c), 250);
    assert_int_equal(uh_int(&srv, "LLEN ns:queue:default"), 250); /* no queue: "default" */
    assert_int_equal(uh_int(&srv, "ZCARD ns:schedule"), 0);
    assert_int_equal(uh_int(&srv, "EXISTS queue:default"), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER ns:queues default"), 1);
    /* in score order: the first due is the oldest (tail) */
    char *raw = uh_str(&srv, "LINDEX ns:queue:default -1");
    assert_non_null(strstr(raw, "\"args\":[0]"));
    json_t *v = json_loads(raw, 0, NULL);
    assert_true(json_is_integer(json_object_get(v, "enqueued_at"))); /* ms layout */
    json_decref(v);
    free(raw);

    /* quiet: the scheduler stops moving jobs */
    redisReply *x = uh_cmd(&srv, "ZADD ns:schedule %.6f {\"class\":\"K\",\"args\":[]}", now - 1);
    freeReplyObject(x);
    atomic_store(&m->flags.quiet, 1);
    assert_int_equal(hh__scheduler_poll(env_of(m), &c), 0);
    assert_int_equal(uh_int(&srv, "ZCARD ns:schedule"), 1);
    hh__conn_close(&c);
    hh_manager_free((hh_manager *)m);
}

/* A member carrying its own "at" moves as Sidekiq's enqueuer moves it
 * (through its client's push): past, to its queue without "at" and with a
 * fresh enqueued_at last; ahead, back into schedule at that time without
 * "at" or enqueued_at. */
static void test_poll_member_with_at(void **s) {
    (void)s;
    uh_flushall(&srv);
    struct hh_manager *m = manager(NULL, HH_TS_FLOAT);
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    double now = hh__now();
    char past[256], ahead[256];
    snprintf(past, sizeof(past),
             "{\"class\":\"K\",\"args\":[1],\"queue\":\"default\",\"at\":%.3f,\"enqueued_at\":1.5,\"jid\":\"a\"}",
             now - 10);
    snprintf(ahead, sizeof(ahead),
             "{\"class\":\"K\",\"args\":[2],\"queue\":\"default\",\"jid\":\"b\",\"at\":%.3f,\"retry_count\":0}",
             now + 3600);
    zadd("schedule", now - 5, past);
    zadd("retry", now - 1, ahead);
    assert_int_equal(hh__scheduler_poll(env_of(m), &c), 1);
    char *q = uh_str(&srv, "LINDEX queue:default 0");
    assert_non_null(q);
    assert_string_equal(uh_keys_csv(q), "class,args,queue,jid,enqueued_at");
    json_t *o = json_loads(q, 0, NULL);
    UH_ASSERT_DBL_IN(json_real_value(json_object_get(o, "enqueued_at")), now - 1, hh__now() + 1);
    json_decref(o);
    free(q);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 0);
    assert_int_equal(uh_int(&srv, "ZCARD schedule"), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:default"), 1);
    redisReply *r = uh_cmd(&srv, "ZRANGE schedule 0 0 WITHSCORES");
    assert_int_equal(r->elements, 2);
    assert_string_equal(uh_keys_csv(r->element[0]->str), "class,args,queue,jid,retry_count");
    UH_ASSERT_DBL_IN(strtod(r->element[1]->str, NULL), now + 3599, now + 3601);
    freeReplyObject(r);
    hh__conn_close(&c);
    hh_manager_free((hh_manager *)m);
}

int main(void) {
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_wait_formula_few_processes),
        cmocka_unit_test(test_average_scaled_by_processes),
        cmocka_unit_test(test_wait_formula_many_processes),
    };
    const struct CMUnitTest live[] = {
        cmocka_unit_test(test_poll_moves_due_jobs),
        cmocka_unit_test(test_poll_many_and_quiet),
        cmocka_unit_test(test_poll_moves_bignum_entries),
        cmocka_unit_test(test_poll_member_with_at),
    };
    int failed = cmocka_run_group_tests_name("scheduler_wait", pure, NULL, NULL);
    failed += cmocka_run_group_tests_name("scheduler_poll", live, group_setup, group_teardown);
    return failed;
}
