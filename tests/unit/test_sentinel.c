/* test_sentinel.c -- finding the master through Redis Sentinel
 * (sentinel.c) against real sentinels (redis-server --sentinel) that
 * monitor "mymaster" at different addresses, a plain Redis that answers
 * SENTINEL with an error, and a closed port:
 *   - the master's address comes from the first sentinel that knows it, a
 *     dead one is skipped, and the one that answered is asked first next;
 *   - a name every answering sentinel says it does not know is -2 (a name
 *     to fix, at start), with the silent ones listed; any other answer
 *     (an error, a refused AUTH) or none at all is -1 (an outage);
 *   - the +switch-master / +promoted-slave listener moves connections (the
 *     master epoch) only for messages about its own master name (a plain
 *     Redis publishes them: sentinels take no PUBLISH from clients).
 * The options' parsing is test_redis.c's. */
#include "unit_helpers.h"

#include "conn.h"
#include "redis.h"
#include "sentinel.h"

static uh_redis s1, s2, plain;
static char conf1[64], conf2[64];
static int closed_port;

static int group_setup(void **s) {
    (void)s;
    if (uh_sentinel_start(&s1, "mymaster", 6391, conf1, sizeof(conf1)) != 0) return -1;
    if (uh_sentinel_start(&s2, "mymaster", 6392, conf2, sizeof(conf2)) != 0) return -1;
    if (uh_redis_start(&plain) != 0) return -1;
    closed_port = uh_pick_port();
    return closed_port > 0 ? 0 : -1;
}

static int group_teardown(void **s) {
    (void)s;
    uh_redis_stop(&s1);
    uh_redis_stop(&s2);
    uh_redis_stop(&plain);
    unlink(conf1);
    unlink(conf2);
    return 0;
}

typedef struct fx {
    hh__redis_config cfg;
    hh__logger log;
    hh__conn conn;
    char host[256];
    int port;
} fx;

/* A configuration whose sentinels are the given ports, in order. */
static void fx_open(fx *f, const char *master, const char *password, const int *ports, int n) {
    char list[256] = "", err[256];
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s127.0.0.1:%d", i ? "," : "", ports[i]);
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = "redis://mymaster/0";
    o.sentinels = list;
    o.sentinel_master = master;
    o.sentinel_password = password;
    if (hh__redis_config_parse(&f->cfg, &o, err, sizeof(err)) != 0) fail_msg("config refused: %s", err);
    memset(&f->log, 0, sizeof(f->log));
    f->log.level = HH_LOG_ERROR + 1; /* silent */
    hh__conn_init(&f->conn, &f->cfg, &f->log, "test", NULL);
    f->host[0] = '\0';
    f->port = 0;
}

static int fx_discover(fx *f) { return hh__sentinel_discover(&f->conn, f->host, sizeof(f->host), &f->port); }

static void fx_close(fx *f) {
    hh__conn_close(&f->conn);
    hh__redis_config_free(&f->cfg);
}

static void test_master_from_first_that_knows(void **s) {
    (void)s;
    fx f;
    fx_open(&f, NULL, NULL, (int[]){s1.port}, 1);
    assert_int_equal(fx_discover(&f), 0);
    assert_string_equal(f.host, "127.0.0.1");
    assert_int_equal(f.port, 6391);
    fx_close(&f);

    /* a dead sentinel is skipped; the one that answered goes first next */
    fx_open(&f, NULL, NULL, (int[]){closed_port, s2.port, s1.port}, 3);
    assert_int_equal(fx_discover(&f), 0);
    assert_int_equal(f.port, 6392);
    assert_int_equal(atomic_load(&f.cfg.sentinel_last), 1);
    assert_int_equal(fx_discover(&f), 0);
    assert_int_equal(f.port, 6392);
    fx_close(&f);

    /* asked first: s1 (index 1) answers, not s2 after it */
    fx_open(&f, NULL, NULL, (int[]){s2.port, s1.port}, 2);
    atomic_store(&f.cfg.sentinel_last, 1);
    assert_int_equal(fx_discover(&f), 0);
    assert_int_equal(f.port, 6391);
    fx_close(&f);
}

/* Every sentinel that answered does not know the name: -2, the answering
 * ones and the silent ones named apart. */
static void test_unknown_name(void **s) {
    (void)s;
    fx f;
    fx_open(&f, "nosuch", NULL, (int[]){s1.port, closed_port, s2.port}, 3);
    assert_int_equal(fx_discover(&f), -2);
    char want[128];
    snprintf(want, sizeof(want), "no sentinel knows a master named nosuch (asked 127.0.0.1:%d, 127.0.0.1:%d; ", s1.port,
             s2.port);
    if (!strstr(hh__conn_last_error(&f.conn), want))
        fail_msg("last_error '%s', want '%s'", hh__conn_last_error(&f.conn), want);
    snprintf(want, sizeof(want), "no answer from 127.0.0.1:%d", closed_port);
    if (!strstr(hh__conn_last_error(&f.conn), want))
        fail_msg("last_error '%s', want '%s'", hh__conn_last_error(&f.conn), want);
    fx_close(&f);
}

/* Anything but "unknown name" from some sentinel, or no answer at all:
 * an outage (-1), never the name to fix. */
static void test_other_answers_are_outages(void **s) {
    (void)s;
    fx f;
    /* a plain Redis answers SENTINEL with an error */
    fx_open(&f, "nosuch", NULL, (int[]){s1.port, plain.port}, 2);
    assert_int_equal(fx_discover(&f), -1);
    assert_non_null(strstr(hh__conn_last_error(&f.conn), "no sentinel gave the master nosuch: "));
    fx_close(&f);

    fx_open(&f, NULL, NULL, (int[]){closed_port}, 1);
    assert_int_equal(fx_discover(&f), -1);
    fx_close(&f);

    /* a password the sentinels do not take: the AUTH error, said */
    fx_open(&f, NULL, "wrong", (int[]){s1.port}, 1);
    assert_int_equal(fx_discover(&f), -1);
    if (!strstr(hh__conn_last_error(&f.conn), "AUTH failed")) fail_msg("last_error '%s'", hh__conn_last_error(&f.conn));
    fx_close(&f);
}

static void publish(const char *chan, const char *msg) {
    redisReply *r = uh_cmd(&plain, "PUBLISH %s %s", chan, msg);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

/* The epoch once it reached `want` and then held still for 0.3 s (a
 * message counted by mistake before the awaited one shows as more). */
static int settled_epoch(fx *f, int want) {
    for (double until = uh_mono() + 10; atomic_load(&f->cfg.master_epoch) < want && uh_mono() < until;) uh_sleep(0.02);
    int e = atomic_load(&f->cfg.master_epoch);
    for (double still = uh_mono() + 0.3; uh_mono() < still; uh_sleep(0.02))
        if (atomic_load(&f->cfg.master_epoch) != e) e = atomic_load(&f->cfg.master_epoch), still = uh_mono() + 0.3;
    return e;
}

/* The listener bumps the master epoch for its own master's failover
 * messages only: another name, or a name it is a prefix of, changes
 * nothing. A sentinel lets no client PUBLISH there: the plain Redis
 * stands in for it (the listener only SUBSCRIBEs). */
static void test_watch_own_master_only(void **s) {
    (void)s;
    fx f;
    fx_open(&f, NULL, NULL, (int[]){plain.port}, 1);
    hh__sentinel_watch(&f.cfg, &f.log);
    /* until the listener is subscribed, a message reaches no one: repeat */
    for (double until = uh_mono() + 10; atomic_load(&f.cfg.master_epoch) == 0 && uh_mono() < until; uh_sleep(0.05))
        publish("+switch-master", "mymaster 127.0.0.1 6391 127.0.0.1 7000");
    int e0 = settled_epoch(&f, 1);
    assert_true(e0 > 0);
    publish("+switch-master", "other 127.0.0.1 1 127.0.0.1 2");
    publish("+switch-master", "mymasterx 127.0.0.1 1 127.0.0.1 2");
    publish("+switch-master", "mymaster 127.0.0.1 7000 127.0.0.1 6391");
    assert_int_equal(settled_epoch(&f, e0 + 1), e0 + 1);
    publish("+promoted-slave", "slave 127.0.0.1:7000 127.0.0.1 7000 @ other 127.0.0.1 6391");
    publish("+promoted-slave", "slave 127.0.0.1:7000 127.0.0.1 7000 @ mymasterx 127.0.0.1 6391");
    publish("+promoted-slave", "slave 127.0.0.1:7000 127.0.0.1 7000 no-at mymaster 127.0.0.1 6391");
    publish("+sdown", "master mymaster 127.0.0.1 6391");
    publish("+promoted-slave", "slave 127.0.0.1:7000 127.0.0.1 7000 @ mymaster 127.0.0.1 6391");
    assert_int_equal(settled_epoch(&f, e0 + 2), e0 + 2);
    fx_close(&f); /* stops the listener */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_master_from_first_that_knows),
        cmocka_unit_test(test_unknown_name),
        cmocka_unit_test(test_other_answers_are_outages),
        cmocka_unit_test(test_watch_own_master_only),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
