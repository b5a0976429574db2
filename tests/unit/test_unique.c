/* test_unique.c -- src/unique.c: sidekiq-unique-jobs' server side. The lock
 * names and what each kind does before and after a run (the rules table),
 * what is read from a payload (ttl, limit, timeout, the digests score, the
 * conflict strategy, the :RUN digest, jobs left alone), the key names; then,
 * on a private Redis, each kind's effects on the gem's keys after the client
 * left a lock as its queue_and_lock script leaves it: success, failure,
 * conflicts, and the death handler. */
#include "unit_helpers.h"

#include "job.h"
#include "keys.h"
#include "redis.h"
#include "unique.h"
#include "util.h"

#include "conn_fixture.h" /* after the library headers it uses */

UH_REDIS_GROUP()

#define D "uniquejobs:0123abcd"

static void test_kinds(void **s) {
    (void)s;
    assert_int_equal(hh__unique_kind("until_executed"), HH_LOCK_UNTIL_EXECUTED);
    assert_int_equal(hh__unique_kind("until_completed"), HH_LOCK_UNTIL_EXECUTED);
    assert_int_equal(hh__unique_kind("until_successfully_completed"), HH_LOCK_UNTIL_EXECUTED);
    assert_int_equal(hh__unique_kind("until_executing"), HH_LOCK_UNTIL_EXECUTING);
    assert_int_equal(hh__unique_kind("while_enqueued"), HH_LOCK_UNTIL_EXECUTING);
    assert_int_equal(hh__unique_kind("while_executing"), HH_LOCK_WHILE_EXECUTING);
    assert_int_equal(hh__unique_kind("while_executing_reject"), HH_LOCK_WHILE_EXECUTING);
    assert_int_equal(hh__unique_kind("around_perform"), HH_LOCK_WHILE_EXECUTING);
    assert_int_equal(hh__unique_kind("until_and_while_executing"), HH_LOCK_UNTIL_AND_WHILE_EXECUTING);
    assert_int_equal(hh__unique_kind("until_expired"), HH_LOCK_UNTIL_EXPIRED);
    assert_int_equal(hh__unique_kind("my_custom_lock"), HH_LOCK_UNKNOWN);
    assert_int_equal(hh__unique_kind(NULL), HH_LOCK_NONE);
}

/* The gem's Lock::*#execute, one row each. */
static void test_rules(void **s) {
    (void)s;
    const hh__unique_rules *r = hh__unique_rules_of(HH_LOCK_UNTIL_EXECUTED);
    assert_true(r->lock_whole && r->unlock_on_success && !r->unlock_before && !r->lock_run && !r->relock_on_failure);
    r = hh__unique_rules_of(HH_LOCK_UNTIL_EXPIRED);
    assert_true(r->lock_whole && !r->unlock_on_success && !r->unlock_before && !r->lock_run && !r->relock_on_failure);
    r = hh__unique_rules_of(HH_LOCK_UNTIL_EXECUTING);
    assert_true(r->unlock_before && !r->skip_if_not_freed && r->relock_on_failure && !r->lock_whole && !r->lock_run);
    r = hh__unique_rules_of(HH_LOCK_WHILE_EXECUTING);
    assert_true(r->lock_run && !r->unlock_before && !r->lock_whole && !r->unlock_on_success && !r->relock_on_failure);
    r = hh__unique_rules_of(HH_LOCK_UNTIL_AND_WHILE_EXECUTING);
    assert_true(r->unlock_before && r->skip_if_not_freed && r->lock_run && r->relock_on_failure && !r->lock_whole);
}

static json_t *item_of(const char *json) {
    json_error_t e;
    json_t *it = json_loads(json, 0, &e);
    assert_non_null(it);
    return it;
}

static void test_parse(void **s) {
    (void)s;
    hh__unique_lock u;
    json_t *it = item_of("{\"class\":\"J\",\"jid\":\"j1\",\"lock\":\"while_executing\",\"lock_digest\":\"" D
                         "\",\"lock_ttl\":30,\"lock_timeout\":2}");
    assert_int_equal(hh__unique_parse(it, 1700000000.0, &u), 1);
    assert_string_equal(u.digest, D);
    assert_string_equal(u.run_digest, D ":RUN");
    assert_int_equal(u.pttl, 30000);
    assert_int_equal(u.limit, 1);
    assert_int_equal(u.timeout, 2);
    assert_string_equal(u.score, "");
    assert_int_equal(u.conflict, HH_CONFLICT_NONE);
    hh__unique_lock_free(&u);
    json_decref(it);

    /* a digest already ending in :RUN keeps it; a due time ahead adds to the ttl (the gem's LockTTL) */
    it = item_of("{\"jid\":\"j\",\"lock\":\"until_expired\",\"lock_digest\":\"" D
                 ":RUN\",\"lock_expiration\":\"10\",\"lock_limit\":3,\"at\":1700000100.0}");
    assert_int_equal(hh__unique_parse(it, 1700000000.5, &u), 1);
    assert_string_equal(u.run_digest, D ":RUN");
    assert_int_equal(u.pttl, 110000);
    assert_int_equal(u.limit, 3);
    assert_string_equal(u.score, "1700000100.0"); /* Ruby's Float#to_s */
    hh__unique_lock_free(&u);
    json_decref(it);

    /* lock_limit: null is nil, which the gem passes as 0 */
    it = item_of("{\"jid\":\"j\",\"lock\":\"until_executed\",\"lock_digest\":\"" D
                 "\",\"lock_limit\":null,\"at\":1700000100.25}");
    assert_int_equal(hh__unique_parse(it, 1700000000.0, &u), 1);
    assert_int_equal(u.limit, 0);
    assert_int_equal(u.pttl, 0);
    assert_string_equal(u.score, "1700000100.25");
    hh__unique_lock_free(&u);
    json_decref(it);

    /* left alone: no lock, no digest, or rescheduled by the gem's reschedule strategy */
    const char *alone[] = {"{\"jid\":\"j\",\"lock_digest\":\"" D "\"}", "{\"jid\":\"j\",\"lock\":\"until_executed\"}",
                           "{\"jid\":\"j\",\"lock\":\"until_executed\",\"lock_digest\":\"" D
                           "\",\"rescheduled\":true}"};
    for (size_t i = 0; i < 3; i++) {
        it = item_of(alone[i]);
        assert_int_equal(hh__unique_parse(it, 0, &u), 0);
        assert_null(u.digest);
        json_decref(it);
    }
}

static void test_conflict_names(void **s) {
    (void)s;
    struct {
        const char *json;
        const char *type;
        hh__unique_conflict want;
    } cases[] = {
        {"{}", "while_executing", HH_CONFLICT_NONE},
        {"{\"on_conflict\":\"log\"}", "while_executing", HH_CONFLICT_LOG},
        {"{\"on_conflict\":\"raise\"}", "while_executing", HH_CONFLICT_RAISE},
        {"{\"on_conflict\":{\"client\":\"log\",\"server\":\"reject\"}}", "while_executing", HH_CONFLICT_REJECT},
        {"{\"on_conflict\":\"log\",\"on_server_conflict\":\"raise\"}", "while_executing", HH_CONFLICT_RAISE},
        {"{\"on_conflict\":\"reschedule\"}", "while_executing", HH_CONFLICT_RETRY},
        {"{\"on_conflict\":\"replace\"}", "while_executing", HH_CONFLICT_RETRY},
        {"{\"on_conflict\":\"mine\"}", "while_executing", HH_CONFLICT_NONE},
        {"{}", "while_executing_reject", HH_CONFLICT_REJECT},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *it = item_of(cases[i].json);
        assert_int_equal(hh__unique_conflict_of(it, cases[i].type), cases[i].want);
        json_decref(it);
    }
}

static void test_keys(void **s) {
    (void)s;
    sds k[HH_UNIQUE_NKEYS];
    assert_int_equal(hh__unique_keys(D, k), 0);
    const char *want[] = {D,
                          D ":QUEUED",
                          D ":PRIMED",
                          D ":LOCKED",
                          D ":INFO",
                          "uniquejobs:changelog",
                          "uniquejobs:digests",
                          "uniquejobs:expiring_digests"};
    for (int i = 0; i < HH_UNIQUE_NKEYS; i++) assert_string_equal(k[i], want[i]);
    hh__unique_keys_free(k);
    char buf[48];
    hh__unique_ruby_float(buf, sizeof(buf), 1700000000.0);
    assert_string_equal(buf, "1700000000.0");
    hh__unique_ruby_float(buf, sizeof(buf), 1700000000.125);
    assert_string_equal(buf, "1700000000.125");
}

/* ------------------------------------------------------------ on Redis */

#define run(...) freeReplyObject(uh_cmd(&srv, __VA_ARGS__))

typedef struct fixture {
    uh_conn_fixture c;
    hh__unique_env env;
} fixture;

static int setup(void **s) {
    fixture *f = calloc(1, sizeof(*f));
    if (uh_conn_fixture_open(&f->c, srv.url, NULL) != 0) return -1;
    f->env = (hh__unique_env){&f->c.conn, &f->c.log, &f->c.keys, 0, 0};
    uh_flushall(&srv);
    *s = f;
    return 0;
}

static int teardown(void **s) {
    fixture *f = *s;
    uh_conn_fixture_close(&f->c);
    free(f);
    return 0;
}

static hh_job *job_of(const char *type, const char *jid, const char *extra) {
    char buf[512], why[128];
    snprintf(buf, sizeof(buf),
             "{\"class\":\"J\",\"args\":[],\"queue\":\"default\",\"jid\":\"%s\",\"lock\":\"%s\",\"lock_digest\":\"" D
             "\"%s}",
             jid, type, extra ? extra : "");
    hh_job *j = hh__job_new(buf, strlen(buf), "default", why, sizeof(why));
    assert_non_null(j);
    assert_non_null(j->item);
    return j;
}

/* What the gem's client leaves after queue_and_lock.lua for a single lock. */
static void client_locked(const char *jid) {
    run("SET %s %s", D, jid);
    run("ZADD uniquejobs:digests 1700000000 %s", D);
    run("HSET %s:LOCKED %s 1700000000", D, jid);
}

static int locked_by(const char *digest, const char *jid) {
    return uh_int(&srv, "HEXISTS %s:LOCKED %s", digest, jid) == 1;
}

static void assert_freed(const char *digest) {
    assert_int_equal(uh_int(&srv, "EXISTS %s %s:LOCKED %s:PRIMED %s:INFO", digest, digest, digest, digest), 0);
    assert_int_equal(uh_int(&srv, "ZSCORE uniquejobs:digests %s", digest), -1000);
    /* unlock.lua leaves its token for waiters, for 5 s */
    char *tok = uh_str(&srv, "LINDEX %s:QUEUED 0", digest);
    assert_non_null(tok);
    assert_string_equal(tok, "1");
    free(tok);
    long long pttl = uh_int(&srv, "PTTL %s:QUEUED", digest);
    assert_true(pttl > 0 && pttl <= 5000);
}

static void test_until_executed(void **s) {
    fixture *f = *s;
    hh__unique_lock u;
    client_locked("a");
    hh_job *j = job_of("until_executed", "a", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    assert_true(locked_by(D, "a"));
    hh__unique_after(&f->env, &u, HH_UNIQUE_SUCCEEDED);
    assert_freed(D);
    hh__job_free(j);
    /* failure keeps it */
    uh_flushall(&srv);
    client_locked("b");
    j = job_of("until_executed", "b", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    hh__unique_after(&f->env, &u, HH_UNIQUE_FAILED);
    assert_true(locked_by(D, "b"));
    assert_int_equal(uh_int(&srv, "EXISTS %s", D), 1);
    hh__job_free(j);
    /* held by another job: not run, nothing changed */
    j = job_of("until_executed", "c", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_SKIP);
    hh__unique_after(&f->env, &u, HH_UNIQUE_SUCCEEDED);
    assert_true(locked_by(D, "b"));
    assert_false(locked_by(D, "c"));
    hh__job_free(j);
    /* a lock gone (deleted, expired) is taken for the run, then released */
    uh_flushall(&srv);
    j = job_of("until_executed", "d", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    assert_true(locked_by(D, "d"));
    hh__unique_after(&f->env, &u, HH_UNIQUE_SUCCEEDED);
    assert_freed(D);
    hh__job_free(j);
}

static void test_until_expired(void **s) {
    fixture *f = *s;
    hh__unique_lock u;
    client_locked("a");
    run("PEXPIRE %s:LOCKED 60000", D);
    hh_job *j = job_of("until_expired", "a", ",\"lock_ttl\":60");
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    hh__unique_after(&f->env, &u, HH_UNIQUE_SUCCEEDED);
    assert_true(locked_by(D, "a"));
    assert_true(uh_int(&srv, "PTTL %s:LOCKED", D) > 50000);
    hh__job_free(j);
}

static void test_until_executing(void **s) {
    fixture *f = *s;
    hh__unique_lock u;
    client_locked("a");
    hh_job *j = job_of("until_executing", "a", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    assert_freed(D); /* before the run */
    hh__unique_after(&f->env, &u, HH_UNIQUE_SUCCEEDED);
    assert_false(locked_by(D, "a"));
    hh__job_free(j);
    /* a failure takes it back */
    uh_flushall(&srv);
    client_locked("b");
    j = job_of("until_executing", "b", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    assert_false(locked_by(D, "b"));
    hh__unique_after(&f->env, &u, HH_UNIQUE_FAILED);
    assert_true(locked_by(D, "b"));
    hh__job_free(j);
}

static void test_while_executing(void **s) {
    fixture *f = *s;
    hh__unique_lock ua, ub;
    hh_job *a = job_of("while_executing", "a", NULL), *b = job_of("while_executing", "b", NULL);
    assert_int_equal(hh__unique_before(&f->env, a, &ua), HH_UNIQUE_RUN);
    assert_true(locked_by(D ":RUN", "a"));
    assert_int_equal(uh_int(&srv, "EXISTS %s:LOCKED", D), 0); /* the client's lock is not touched */
    /* the same digest while a runs: not run (no strategy) */
    double t0 = uh_mono();
    assert_int_equal(hh__unique_before(&f->env, b, &ub), HH_UNIQUE_SKIP);
    assert_true(uh_mono() - t0 < 0.9); /* the gem gives up at once, without the token wait */
    hh__unique_after(&f->env, &ub, HH_UNIQUE_SUCCEEDED);
    assert_true(locked_by(D ":RUN", "a"));
    /* a failure releases it too */
    hh__unique_after(&f->env, &ua, HH_UNIQUE_FAILED);
    assert_freed(D ":RUN");
    assert_int_equal(hh__unique_before(&f->env, b, &ub), HH_UNIQUE_RUN);
    hh__unique_after(&f->env, &ub, HH_UNIQUE_SUCCEEDED);
    assert_freed(D ":RUN");
    hh__job_free(a);
    hh__job_free(b);
}

static void test_while_executing_conflicts(void **s) {
    fixture *f = *s;
    hh__unique_lock ua, ub;
    hh_job *a = job_of("while_executing", "a", NULL);
    assert_int_equal(hh__unique_before(&f->env, a, &ua), HH_UNIQUE_RUN);
    hh_job *b = job_of("while_executing", "b", ",\"on_conflict\":\"raise\"");
    assert_int_equal(hh__unique_before(&f->env, b, &ub), HH_UNIQUE_FAIL);
    assert_string_equal(b->error_class, "SidekiqUniqueJobs::Conflict");
    hh__unique_after(&f->env, &ub, HH_UNIQUE_FAILED);
    assert_true(locked_by(D ":RUN", "a"));
    hh__job_free(b);
    b = job_of("while_executing_reject", "c", NULL);
    assert_int_equal(hh__unique_before(&f->env, b, &ub), HH_UNIQUE_SKIP);
    hh__unique_after(&f->env, &ub, HH_UNIQUE_SUCCEEDED);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 1);
    assert_true(uh_int(&srv, "ZSCORE dead %b", b->payload, b->len) > 1700000000); /* the payload as fetched */
    hh__job_free(b);
    hh__unique_after(&f->env, &ua, HH_UNIQUE_SUCCEEDED);
    hh__job_free(a);
}

static void test_until_and_while_executing(void **s) {
    fixture *f = *s;
    hh__unique_lock u;
    client_locked("a");
    hh_job *j = job_of("until_and_while_executing", "a", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    assert_false(locked_by(D, "a"));
    assert_true(locked_by(D ":RUN", "a"));
    hh__unique_after(&f->env, &u, HH_UNIQUE_SUCCEEDED);
    assert_freed(D ":RUN");
    assert_false(locked_by(D, "a"));
    hh__job_free(j);
    /* a failure: :RUN released, the until lock taken back */
    uh_flushall(&srv);
    client_locked("b");
    j = job_of("until_and_while_executing", "b", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_RUN);
    hh__unique_after(&f->env, &u, HH_UNIQUE_FAILED);
    assert_true(locked_by(D, "b"));
    assert_false(locked_by(D ":RUN", "b"));
    hh__job_free(j);
    /* the until lock held by another job: the unlock yields, the job is not run */
    j = job_of("until_and_while_executing", "c", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_SKIP);
    hh__unique_after(&f->env, &u, HH_UNIQUE_SUCCEEDED);
    assert_true(locked_by(D, "b"));
    hh__job_free(j);
}

static void test_unknown_lock_fails(void **s) {
    fixture *f = *s;
    hh__unique_lock u;
    hh_job *j = job_of("my_custom_lock", "a", NULL);
    assert_int_equal(hh__unique_before(&f->env, j, &u), HH_UNIQUE_FAIL);
    assert_string_equal(j->error_class, "SidekiqUniqueJobs::UnknownLock");
    hh__unique_after(&f->env, &u, HH_UNIQUE_FAILED);
    hh__job_free(j);
}

static void test_death_handler(void **s) {
    fixture *f = *s;
    client_locked("a");
    run("HSET %s:RUN:LOCKED x 1", D);
    run("SET %s:RUN x", D);
    run("SET %s:INFO x", D); /* the gem's delete_by_digest leaves INFO: so does hiredhand */
    hh_job *j = job_of("until_executed", "a", NULL);
    hh__unique_dead(&f->env, j);
    assert_int_equal(uh_int(&srv, "EXISTS %s %s:LOCKED %s:RUN %s:RUN:LOCKED", D, D, D, D), 0);
    assert_int_equal(uh_int(&srv, "ZCARD uniquejobs:digests"), 0);
    assert_int_equal(uh_int(&srv, "EXISTS %s:INFO", D), 1);
    hh__job_free(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_conflict_names),
        cmocka_unit_test(test_keys),
        cmocka_unit_test_setup_teardown(test_until_executed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_until_expired, setup, teardown),
        cmocka_unit_test_setup_teardown(test_until_executing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_while_executing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_while_executing_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_until_and_while_executing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_lock_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_death_handler, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
