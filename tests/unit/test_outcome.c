/* test_outcome.c -- src/outcome.c against a private redis-server: a job's
 * outcome is written first and the job removed from its source last, only
 * when it was still there; a refused write (OOM, a wrong-typed key) leaves
 * everything where it was and says why with Redis' own message. Also the
 * transaction checker of src/redis.c that the other writers use. */
#include "unit_helpers.h"

#include "keys.h"
#include "outcome.h"
#include "redis.h"
#include "util.h"

#include "conn_fixture.h" /* after the library headers it uses */

UH_REDIS_GROUP()

#define run(cmd) freeReplyObject(uh_cmd(&srv, cmd))

typedef uh_conn_fixture fixture;

static int setup(void **s) {
    fixture *f = calloc(1, sizeof(*f));
    if (uh_conn_fixture_open(f, srv.url, NULL) != 0) return -1;
    uh_flushall(&srv);
    run("CONFIG SET maxmemory 0");
    *s = f;
    return 0;
}

static int teardown(void **s) {
    fixture *f = *s;
    run("CONFIG SET maxmemory 0");
    uh_conn_fixture_close(f);
    free(f);
    return 0;
}

static hh__outcome retry_from(const char *list, const char *payload, const char *entry) {
    hh__outcome o = {HH_OUTCOME_RETRY, HH_SOURCE_LIST, list, payload, strlen(payload), entry,
                     strlen(entry),    1700000000.5,   0,    0};
    return o;
}

static void test_writes_then_removes(void **s) {
    fixture *f = *s;
    uh_int(&srv, "RPUSH ip a {\"jid\":\"1\"} b");
    hh__outcome o = retry_from("ip", "{\"jid\":\"1\"}", "{\"jid\":\"1\",\"retry_count\":0}");
    char why[256] = "";
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), 1);
    assert_int_equal(uh_int(&srv, "LLEN ip"), 2);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 1);
    char *score = uh_str(&srv, "ZSCORE retry %s", "{\"jid\":\"1\",\"retry_count\":0}");
    assert_string_equal(score, "1700000000.5");
    free(score);
    /* gone from the list (a recovery took it): nothing written */
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), 0);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 1);
}

static void test_one_copy_of_duplicates(void **s) {
    fixture *f = *s;
    uh_int(&srv, "RPUSH ip x x");
    hh__outcome o = {HH_OUTCOME_DROP, HH_SOURCE_LIST, "ip", "x", 1, NULL, 0, 1, 0, 0};
    char why[256];
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), 1);
    assert_int_equal(uh_int(&srv, "LLEN ip"), 1);
    assert_int_equal(uh_int(&srv, "EXISTS retry dead"), 0);
}

static void test_refused_under_oom_keeps_the_job(void **s) {
    fixture *f = *s;
    uh_int(&srv, "RPUSH ip job");
    run("CONFIG SET maxmemory 1");
    hh__outcome o = retry_from("ip", "job", "entry");
    char why[256] = "";
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "OOM"));
    run("CONFIG SET maxmemory 0");
    assert_int_equal(uh_int(&srv, "LLEN ip"), 1);
    assert_int_equal(uh_int(&srv, "EXISTS retry"), 0);
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), 1);
    assert_int_equal(uh_int(&srv, "LLEN ip"), 0);
}

static void test_wrong_type_keeps_the_job(void **s) {
    fixture *f = *s;
    uh_int(&srv, "RPUSH ip job");
    run("SET dead str");
    hh__outcome o = {HH_OUTCOME_DEAD, HH_SOURCE_LIST, "ip", "job", 3, "entry", 5, 10, 0, 0};
    char why[256] = "";
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "WRONGTYPE"));
    assert_int_equal(uh_int(&srv, "LLEN ip"), 1);
}

static void test_dead_trims_and_sorted_set_source(void **s) {
    fixture *f = *s;
    uh_int(&srv, "ZADD schedule 5 bad");
    uh_int(&srv, "ZADD dead 1 old 2 older 100 recent");
    /* cutoff = score - dead_timeout = 100 - 50: "old" and "older" go; max 3 keeps the newest two
     * (Sidekiq trims ranks 0..-max_jobs) */
    hh__outcome o = {HH_OUTCOME_DEAD, HH_SOURCE_ZSET, "schedule", "bad", 3, "buried", 6, 100, 50, 3};
    char why[256];
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), 1);
    assert_int_equal(uh_int(&srv, "ZCARD schedule"), 0);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 2);
    assert_int_equal(uh_int(&srv, "EXISTS dead"), 1);
    char *score = uh_str(&srv, "ZSCORE dead buried");
    assert_string_equal(score, "100");
    free(score);
    /* a member no longer there: nothing written */
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), 0);
}

static void test_source_none(void **s) {
    fixture *f = *s;
    hh__outcome o = {HH_OUTCOME_RETRY, HH_SOURCE_NONE, NULL, "job", 3, "entry", 5, 7, 0, 0};
    char why[256];
    assert_int_equal(hh__outcome_write(&f->conn, &f->keys, &o, why, sizeof(why)), 1);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 1);
}

/* hh__tx_check: element by element */
static void test_tx_check(void **s) {
    fixture *f = *s;
    char why[256];
    int at;
    run("SET str x");
    hh__pipe p;
    hh__pipe_begin(&p, &f->conn);
    hh__pipe_add(&p, "MULTI");
    hh__pipe_add(&p, "SET a 1");
    hh__pipe_add(&p, "LPUSH str y"); /* WRONGTYPE inside EXEC: the SET still applies */
    hh__pipe_add(&p, "EXEC");
    redisReply **r = hh__pipe_exec(&p);
    assert_non_null(r);
    assert_int_equal(hh__tx_check(r, 0, 3, why, sizeof(why), &at), -1);
    assert_int_equal(at, 1);
    assert_non_null(strstr(why, "WRONGTYPE"));
    hh__replies_free(r, p.n);
    assert_int_equal(uh_int(&srv, "EXISTS a"), 1);

    run("CONFIG SET maxmemory 1");
    hh__pipe_begin(&p, &f->conn);
    hh__pipe_add(&p, "MULTI");
    hh__pipe_add(&p, "SET b 1"); /* refused when queued: EXECABORT, the reason is OOM */
    hh__pipe_add(&p, "EXEC");
    r = hh__pipe_exec(&p);
    run("CONFIG SET maxmemory 0");
    assert_non_null(r);
    assert_int_equal(hh__tx_check(r, 0, 2, why, sizeof(why), &at), -1);
    assert_int_equal(at, -1);
    assert_non_null(strstr(why, "OOM"));
    hh__replies_free(r, p.n);
    assert_int_equal(uh_int(&srv, "EXISTS b"), 0);

    hh__pipe_begin(&p, &f->conn);
    hh__pipe_add(&p, "MULTI");
    hh__pipe_add(&p, "SET c 1");
    hh__pipe_add(&p, "EXEC");
    r = hh__pipe_exec(&p);
    assert_int_equal(hh__tx_check(r, 0, 2, why, sizeof(why), &at), 0);
    hh__replies_free(r, p.n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_writes_then_removes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_copy_of_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_under_oom_keeps_the_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_type_keeps_the_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_trims_and_sorted_set_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tx_check, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
