/* test_lease.c -- src/lease.c against a private redis-server: reconciliation
 * pushes back exactly the copies of this process's in-progress list that no
 * thread holds (copies of one payload counted), never a held one, never one
 * moved by a fetch still in flight when the list was read; the outage rule's
 * gate; the registry key. No worker threads run: the fetch hooks are called
 * by hand, as fetch.c calls them. */
#include "unit_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include "fetch.h"
#include "lease.h"
#include "manager.h"

static uh_redis srv;

static int setup(void **s) {
    (void)s;
    return uh_redis_start(&srv) == 0 ? 0 : -1;
}

static int teardown(void **s) {
    (void)s;
    uh_redis_stop(&srv);
    return 0;
}

static hh_manager *new_manager(void) {
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = srv.url;
    o.concurrency = 2;
    o.identity = "lease-test";
    o.log_level = HH_LOG_ERROR;
    int err;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    return m;
}

#define LIST "hiredhand:inprogress:lease-test|default"

/* Registers payloads as held by processor p, as a fetch reply would. */
static void hold(hh_manager *m, int p, hh__fetched *out, const char **payloads, int n) {
    for (int i = 0; i < n; i++) {
        out[i].payload = strdup(payloads[i]);
        out[i].len = strlen(payloads[i]);
        out[i].queue = 0;
    }
    hh__lease_fetch_begin(&m->lease_env, &m->procs[p], 0);
    hh__lease_fetch_end(&m->lease_env, &m->procs[p], out, n, HH_FETCH_END_OK);
}

static long long count_in(const char *key, const char *payload) {
    redisReply *r = uh_cmd(&srv, "LRANGE %s 0 -1", key);
    long long n = 0;
    for (size_t i = 0; r && i < r->elements; i++) n += strcmp(r->element[i]->str, payload) == 0;
    if (r) freeReplyObject(r);
    return n;
}

static void test_pushes_back_only_unheld_copies(void **s) {
    (void)s;
    uh_flushall(&srv);
    hh_manager *m = new_manager();
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    /* list: X, Y, Y, Z (Y twice: the same bytes pushed twice) */
    const char *X = "{\"class\":\"A\",\"jid\":\"x\",\"args\":[]}", *Y = "{\"class\":\"A\",\"jid\":\"y\",\"args\":[]}";
    const char *Z = "{\"class\":\"A\",\"jid\":\"z\",\"args\":[]}";
    freeReplyObject(uh_cmd(&srv, "LPUSH %s %s %s %s %s", LIST, X, Y, Y, Z));
    hh__fetched held[2];
    const char *mine[2] = {X, Y};
    hold(m, 0, held, mine, 2);
    assert_int_equal(hh__lease_reconcile(&m->lease_env, &c, 0), 2);
    assert_int_equal(count_in(LIST, X), 1);
    assert_int_equal(count_in(LIST, Y), 1);
    assert_int_equal(count_in(LIST, Z), 0);
    assert_int_equal(count_in("queue:default", Y), 1);
    assert_int_equal(count_in("queue:default", Z), 1);
    assert_int_equal(atomic_load(&m->counters.reconciled), 2);
    /* nothing more to do: the held ones stay */
    assert_int_equal(hh__lease_reconcile(&m->lease_env, &c, 0), 0);
    assert_int_equal(count_in(LIST, X), 1);
    /* X acked (LREM), then released: still nothing pushed back */
    freeReplyObject(uh_cmd(&srv, "LREM %s -1 %s", LIST, X));
    hh__lease_release(&m->lease_env, &held[0].lease);
    assert_int_equal(held[0].lease, 0);
    hh__lease_release(&m->lease_env, &held[0].lease); /* twice: a no-op */
    assert_int_equal(hh__lease_reconcile(&m->lease_env, &c, 0), 0);
    /* Y dropped without its removal (as when an ack is given up): pushed back */
    hh__lease_release(&m->lease_env, &held[1].lease);
    assert_int_equal(hh__lease_reconcile(&m->lease_env, &c, 0), 1);
    assert_int_equal(count_in(LIST, Y), 0);
    assert_int_equal(count_in("queue:default", Y), 2);
    for (int i = 0; i < 2; i++) free(held[i].payload);
    hh__conn_close(&c);
    hh_manager_free(m);
}

typedef struct late_fetch {
    hh_manager *m;
    hh__fetched out[1];
    const char *payload;
    redisContext *blocked; /* stands for the fetcher's blocked connection */
    atomic_int ended;
} late_fetch;

/* The reply of a fetch that moved W before the list was read arrives while
 * the reconciliation waits for it. The fetch "blocks" on a connection of its
 * own: the reconciliation, once it waits, unblocks it with CLIENT UNBLOCK,
 * and only then does the fetch end, so the test waits for that event rather
 * than for a fixed time. */
static void *finish_fetch_late(void *arg) {
    late_fetch *lf = arg;
    double t0 = uh_mono();
    redisReply *r = redisCommand(lf->blocked, "BLPOP hh-test-never 30");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    assert_true(uh_mono() - t0 < 25); /* unblocked, not timed out */
    freeReplyObject(r);
    atomic_store(&lf->ended, 1);
    lf->out[0].payload = strdup(lf->payload);
    lf->out[0].len = strlen(lf->payload);
    lf->out[0].queue = 0;
    hh__lease_fetch_end(&lf->m->lease_env, &lf->m->procs[1], lf->out, 1, HH_FETCH_END_OK);
    return NULL;
}

static void test_never_takes_a_fetch_in_flight(void **s) {
    (void)s;
    uh_flushall(&srv);
    hh_manager *m = new_manager();
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    const char *W = "{\"class\":\"A\",\"jid\":\"w\",\"args\":[]}", *S = "{\"class\":\"A\",\"jid\":\"s\",\"args\":[]}";
    /* S is stranded (its fetch failed); W was moved by a fetch whose reply is
     * still on its way */
    hh__lease_fetch_begin(&m->lease_env, &m->procs[0], 0);
    hh__lease_fetch_end(&m->lease_env, &m->procs[0], NULL, 0, HH_FETCH_END_LOST);
    hh__lease_fetch_begin(&m->lease_env, &m->procs[1], 1);
    freeReplyObject(uh_cmd(&srv, "LPUSH %s %s %s", LIST, S, W));
    late_fetch lf = {m, {{0}}, W, uh_connect(srv.port), 0};
    assert_non_null(lf.blocked);
    struct timeval long_tv = {30, 0};
    redisSetTimeout(lf.blocked, long_tv);
    redisReply *id = redisCommand(lf.blocked, "CLIENT ID");
    assert_non_null(id);
    assert_int_equal(id->type, REDIS_REPLY_INTEGER);
    atomic_store(&m->procs[1].conn.client_id, id->integer);
    freeReplyObject(id);
    pthread_t t;
    pthread_create(&t, NULL, finish_fetch_late, &lf);
    assert_int_equal(hh__lease_reconcile(&m->lease_env, &c, 0), 1);
    assert_int_equal(atomic_load(&lf.ended), 1); /* it waited for the fetch */
    pthread_join(t, NULL);
    atomic_store(&m->procs[1].conn.client_id, 0);
    redisFree(lf.blocked);
    assert_int_equal(count_in(LIST, W), 1);
    assert_int_equal(count_in(LIST, S), 0);
    assert_int_equal(count_in("queue:default", S), 1);
    assert_int_equal(count_in("queue:default", W), 0);
    free(lf.out[0].payload);
    hh__conn_close(&c);
    hh_manager_free(m);
}

static void test_gate_after_failed_beats(void **s) {
    (void)s;
    hh_manager *m = new_manager();
    double left = -1;
    /* before any beat: closed for the whole gate */
    assert_int_equal(hh__lease_peers_judgeable(&m->lease_env, &left), 0);
    UH_ASSERT_DBL_IN(left, hh__lease_gate_seconds(&m->lease_env) - 0.01, hh__lease_gate_seconds(&m->lease_env));
    /* default 5 s interval: max(10, 10) + 2 + 1 */
    UH_ASSERT_DBL_IN(hh__lease_gate_seconds(&m->lease_env), 13, 13);
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    hh__lease_beat(&m->lease_env, &c, 1, 0);
    assert_int_equal(hh__lease_peers_judgeable(&m->lease_env, &left), 0);
    UH_ASSERT_DBL_IN(left, 12, 13);
    hh__lease_beat(&m->lease_env, &c, 0, 0); /* a refused beat closes it again */
    assert_int_equal(hh__lease_peers_judgeable(&m->lease_env, &left), 0);
    UH_ASSERT_DBL_IN(left, 12.9, 13);
    hh__conn_close(&c);
    hh_manager_free(m);
}

static void test_key(void **s) {
    (void)s;
    char big[20000];
    memset(big, 'a', sizeof(big));
    assert_true(hh__lease_key(0, "x", 1) != 0);
    assert_true(hh__lease_key(0, "x", 1) == hh__lease_key(0, "x", 1));
    assert_true(hh__lease_key(0, "x", 1) != hh__lease_key(1, "x", 1));
    assert_true(hh__lease_key(0, big, sizeof(big)) != hh__lease_key(0, big, sizeof(big) - 1));
    uint64_t k = hh__lease_key(0, big, sizeof(big));
    big[sizeof(big) - 1] = 'b'; /* the tail is hashed */
    assert_true(k != hh__lease_key(0, big, sizeof(big)));
    /* every byte of a small payload counts, in the words and in the tail */
    char p1[] = "{\"class\":\"A\",\"jid\":\"0123456789ab\"}", p2[sizeof(p1)];
    uint64_t k1 = hh__lease_key(0, p1, sizeof(p1) - 1);
    for (size_t i = 0; i < sizeof(p1) - 1; i++) {
        memcpy(p2, p1, sizeof(p1));
        p2[i] ^= 1;
        assert_true(hh__lease_key(0, p2, sizeof(p1) - 1) != k1);
    }
    assert_true(hh__lease_key(0, "ab", 2) != hh__lease_key(0, "ab\0", 3)); /* the zero-padded tail */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_gate_after_failed_beats),
        cmocka_unit_test(test_pushes_back_only_unheld_copies),
        cmocka_unit_test(test_never_takes_a_fetch_in_flight),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
