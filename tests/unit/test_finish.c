/* test_finish.c -- src/finish.c against a private redis-server, through its
 * hh__finish_* functions on a manager made with hh_manager_new (not
 * started: no worker thread runs, the test is the worker):
 *   - hh__finish_acks_free gives back the jobs' leases (a reconciliation
 *     then pushes their entries back) and frees them;
 *   - acks wait in the queue until its threshold, then go in one pipeline,
 *     each an LREM of one copy of the exact payload from its own list, the
 *     list of a job fetched by no queue index included; basic fetch sends
 *     none;
 *   - an ack Redis refuses once is retried and written; one attempt
 *     (try_acks) keeps a refused or unanswered ack queued, and drops an
 *     unanswered one once the stop gave up;
 *   - an ack whose entry is gone is a lease loss only when a recovery is
 *     recorded for its jid, and never after an attempt that lost its reply
 *     (that attempt may have removed the entry);
 *   - a push back puts the exact payload at the end of its queue that is
 *     fetched next, once (gone from the in-progress list: nothing pushed),
 *     leaves the entry where it was when Redis refuses, is retried until
 *     Redis takes it, and once the stop gave up says where the job is and
 *     why (Redis' own refusal, not "Redis unreachable"): its in-progress
 *     list (reliable fetch), or nowhere, with the whole payload in an
 *     ERROR line and counted (basic fetch). */
#include "unit_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include "finish.h"
#include "manager.h"

UH_REDIS_GROUP()

#define IDENT "fin-test"
#define INPROG "hiredhand:inprogress:" IDENT "|"

/* ------------------------------------------------------------ the log */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char *log_text; /* every line, "LEVEL msg\n" */
static size_t log_len;
/* Run once, from the logging thread, on the first line holding `needle`. */
static const char *hook_needle;
static void (*hook_fn)(void);

static void capture(hh_log_level level, const char *msg, void *udata) {
    (void)udata;
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    size_t n = strlen(msg), add = n + 8;
    pthread_mutex_lock(&log_mu);
    char *grown = realloc(log_text, log_len + add + 1);
    if (grown) {
        log_text = grown;
        log_len += (size_t)snprintf(log_text + log_len, add + 1, "%s %s\n", names[level], msg);
    }
    void (*fn)(void) = NULL;
    if (hook_needle && strstr(msg, hook_needle)) fn = hook_fn, hook_needle = NULL;
    pthread_mutex_unlock(&log_mu);
    if (fn) fn();
}

static int logged(const char *needle) {
    pthread_mutex_lock(&log_mu);
    int found = log_text && strstr(log_text, needle) != NULL;
    pthread_mutex_unlock(&log_mu);
    return found;
}

static void expect_logged(const char *needle) {
    if (!logged(needle)) fail_msg("no log line holds '%s'; the log:\n%s", needle, log_text ? log_text : "");
}

/* ------------------------------------------------------------ fixture */

typedef struct fx {
    hh_manager *m;
    hh__conn c;
    hh__finish_env env; /* the manager's, or one with acks of our own */
} fx;

/* command_timeout: seconds, 0 the default (a test that makes Redis hold a
 * command sets it short, so the reply is lost). */
static fx *fx_new_cto(hh_fetch_mode fetch, double command_timeout) {
    uh_flushall(&srv);
    pthread_mutex_lock(&log_mu);
    free(log_text);
    log_text = NULL, log_len = 0, hook_needle = NULL, hook_fn = NULL;
    pthread_mutex_unlock(&log_mu);
    static const hh_queue_weight queues[] = {{"default", 0}, {"other", 0}};
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = srv.url;
    o.concurrency = 1;
    o.identity = IDENT;
    o.fetch = fetch;
    o.queues = queues;
    o.nqueues = 2;
    o.log = capture;
    o.log_level = HH_LOG_DEBUG;
    if (command_timeout > 0) o.redis.command_timeout = command_timeout;
    fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    int err = 99;
    f->m = hh_manager_new(&o, &err);
    assert_non_null(f->m);
    assert_int_equal(err, HH_OK);
    hh__conn_init(&f->c, &f->m->cfg, &f->m->log, "test", NULL);
    f->env = f->m->finish_env;
    return f;
}

static fx *fx_new(hh_fetch_mode fetch) { return fx_new_cto(fetch, 0); }

static void fx_free(fx *f) {
    if (f->env.acks != f->m->finish_env.acks) hh__acks_free(f->env.acks);
    hh__conn_close(&f->c);
    hh_manager_free(f->m);
    free(f);
}

static char *payload_of(const char *jid) {
    static char buf[128];
    snprintf(buf, sizeof(buf), "{\"class\":\"Fin\",\"args\":[1],\"jid\":\"%s\",\"queue\":\"default\"}", jid);
    return buf;
}

/* A job as a fetch of queue index q hands it over: held in the lease
 * registry (its lease set), queue_index q; q -1: known by its queue name
 * only. */
static hh_job *held_job(fx *f, long q, const char *queue, const char *jid) {
    char why[128];
    const char *p = payload_of(jid);
    hh_job *j = hh__job_new(p, strlen(p), queue, why, sizeof(why));
    assert_non_null(j);
    j->queue_index = q;
    if (q >= 0) {
        hh__fetched fe = {strdup(p), strlen(p), (size_t)q, 0};
        hh__lease_fetch_begin(&f->m->lease_env, &f->m->procs[0], 0);
        hh__lease_fetch_end(&f->m->lease_env, &f->m->procs[0], &fe, 1, HH_FETCH_END_OK);
        assert_true(fe.lease != 0);
        j->lease = fe.lease;
        free(fe.payload);
    }
    return j;
}

static long long llen(const char *key) { return uh_int(&srv, "LLEN %s", key); }

/* ------------------------------------------------------------ acks */

/* The one release+free helper: a held job's entry is left alone by a
 * reconciliation; once hh__finish_acks_free ended it, it is not held any
 * more, so the next reconciliation pushes it back to its queue. */
static void test_acks_free_releases_leases(void **s) {
    (void)s;
    fx *f = fx_new(HH_FETCH_RELIABLE);
    hh_job **jobs = malloc(2 * sizeof(*jobs));
    jobs[0] = held_job(f, 0, "default", "free-1");
    jobs[1] = held_job(f, 0, "default", "free-2");
    uh_int(&srv, "LPUSH %s %s %s", INPROG "default", jobs[0]->payload, jobs[1]->payload);
    assert_int_equal(hh__lease_reconcile(&f->m->lease_env, &f->c, 1), 0); /* both held */
    assert_int_equal(llen(INPROG "default"), 2);
    hh__finish_acks_free(&f->env, jobs, 2); /* never sent: they stay in progress */
    assert_int_equal(llen(INPROG "default"), 2);
    assert_int_equal(hh__lease_reconcile(&f->m->lease_env, &f->c, 1), 2);
    assert_int_equal(llen(INPROG "default"), 0);
    assert_int_equal(llen("queue:default"), 2);
    fx_free(f);
}

/* Acks wait until the queue holds flush_at of them, then all go at once:
 * each removes one copy of its exact payload, from its queue's list (by
 * index, or by name for a job no fetch indexed). */
static void test_acks_batched_until_threshold(void **s) {
    (void)s;
    fx *f = fx_new(HH_FETCH_RELIABLE);
    f->env.acks = hh__acks_new(3);
    assert_non_null(f->env.acks);
    hh_job *a = held_job(f, 0, "default", "batch-a");
    hh_job *b = held_job(f, 1, "other", "batch-b");
    hh_job *c = held_job(f, -1, "other", "batch-c");
    /* two copies of a (one must stay), b, c, and a bystander */
    uh_int(&srv, "RPUSH %s %s %s %s", INPROG "default", a->payload, "bystander", a->payload);
    uh_int(&srv, "RPUSH %s %s %s", INPROG "other", b->payload, c->payload);
    hh__finish_queue_ack(&f->env, a, &f->c);
    hh__finish_queue_ack(&f->env, b, &f->c);
    assert_int_equal(llen(INPROG "default"), 3); /* queued, not sent */
    assert_int_equal(llen(INPROG "other"), 2);
    hh__finish_queue_ack(&f->env, c, &f->c); /* the third: all three go */
    assert_int_equal(llen(INPROG "default"), 2);
    assert_int_equal(llen(INPROG "other"), 0);
    char *first = uh_str(&srv, "LINDEX %s 0", INPROG "default");
    assert_string_equal(first, payload_of("batch-a"));
    free(first);
    size_t n = 99;
    assert_null(hh__finish_take_acks(&f->env, &n)); /* nothing left queued */
    assert_int_equal(n, 0);
    assert_int_equal(atomic_load(&f->m->counters.lease_lost), 0);
    fx_free(f);
}

/* An ack is an LREM in reliable fetch only: basic fetch has no list. */
static void test_ack_append_basic_sends_nothing(void **s) {
    (void)s;
    for (int basic = 0; basic < 2; basic++) {
        fx *f = fx_new(basic ? HH_FETCH_BASIC : HH_FETCH_RELIABLE);
        hh_job *j = held_job(f, basic ? -1 : 0, "default", "append");
        assert_int_equal(hh__conn_ready(&f->c), 0);
        hh__pipe p;
        hh__pipe_begin(&p, &f->c);
        hh__finish_ack_append(&f->env, &p, j);
        assert_int_equal(p.n, basic ? 0 : 1);
        if (p.n) hh__replies_free(hh__pipe_exec(&p), p.n);
        hh_job **one = malloc(sizeof(*one));
        one[0] = j;
        hh__finish_acks_free(&f->env, one, 1);
        fx_free(f);
    }
}

static void fix_wrong_typed_list(void) {
    uh_int(&srv, "DEL %s", INPROG "default");
    uh_int(&srv, "RPUSH %s %s", INPROG "default", payload_of("refused-once"));
}

/* Redis refuses the ack (its list is a string): it is kept and retried
 * until Redis takes it; the refusal and the recovery are logged once. */
static void test_ack_refused_once_is_retried(void **s) {
    (void)s;
    fx *f = fx_new(HH_FETCH_RELIABLE);
    freeReplyObject(uh_cmd(&srv, "SET %s %s", INPROG "default", "not a list"));
    hh_job *j = held_job(f, 0, "default", "refused-once");
    pthread_mutex_lock(&log_mu);
    hook_needle = "acknowledgements refused", hook_fn = fix_wrong_typed_list;
    pthread_mutex_unlock(&log_mu);
    hh_job **one = malloc(sizeof(*one));
    one[0] = j;
    hh__finish_send_acks(&f->env, &f->c, one, 1);
    expect_logged("WARN acknowledgements refused, kept for the next try: WRONGTYPE");
    expect_logged("INFO acknowledgements restored");
    assert_int_equal(llen(INPROG "default"), 0); /* the retry removed it */
    assert_int_equal(atomic_load(&f->m->counters.lease_lost), 0);
    size_t n;
    assert_null(hh__finish_take_acks(&f->env, &n));
    fx_free(f);
}

/* Redis holds writes (CLIENT PAUSE) longer than the command timeout: the
 * attempt's reply is lost. */
static void pause_writes(int ms) { freeReplyObject(uh_cmd(&srv, "CLIENT PAUSE %d WRITE", ms)); }
static void unpause(void) { freeReplyObject(uh_cmd(&srv, "CLIENT UNPAUSE")); }

/* One attempt (the supervisor's, which must never block): an ack Redis
 * refuses, or whose reply is lost, stays queued for the next one; once the
 * stop gave up, one whose reply is lost is dropped instead (the job stays
 * in progress, its lease released, for the next start or a recovery). */
static void test_try_acks_keeps_or_drops(void **s) {
    (void)s;
    fx *f = fx_new_cto(HH_FETCH_RELIABLE, 0.2);
    f->env.acks = hh__acks_new(8);
    freeReplyObject(uh_cmd(&srv, "SET %s %s", INPROG "default", "not a list"));
    hh__finish_queue_ack(&f->env, held_job(f, 0, "default", "try-1"), &f->c);
    hh__finish_try_acks(&f->env, &f->c); /* refused */
    size_t n = 0;
    hh_job **back = hh__finish_take_acks(&f->env, &n);
    assert_non_null(back);
    assert_int_equal(n, 1);
    assert_string_equal(back[0]->jid, "try-1");
    hh__finish_queue_ack(&f->env, back[0], &f->c);
    free(back);
    uh_int(&srv, "DEL %s", INPROG "default");
    uh_int(&srv, "RPUSH %s %s", INPROG "default", payload_of("try-1"));
    pause_writes(5000);
    hh__finish_try_acks(&f->env, &f->c); /* its reply lost */
    back = hh__finish_take_acks(&f->env, &n);
    assert_int_equal(n, 1);
    hh__finish_queue_ack(&f->env, back[0], &f->c);
    free(back);
    atomic_store(&f->m->flags.giving_up, 1);
    hh__finish_try_acks(&f->env, &f->c); /* its reply lost, and the stop gave up */
    unpause();
    assert_null(hh__finish_take_acks(&f->env, &n));
    assert_int_equal(n, 0);
    /* dropped with its lease released: a reconciliation pushes it back */
    assert_int_equal(llen(INPROG "default"), 1);
    assert_int_equal(hh__lease_reconcile(&f->m->lease_env, &f->c, 1), 1);
    assert_int_equal(llen("queue:default"), 1);
    fx_free(f);
}

/* An ack that removes nothing: a lease loss when a recovery of its jid is
 * recorded (another process took the job), not when there is no record
 * (Redis lost its data), and never when an earlier attempt lost its
 * connection (that attempt may have removed the entry itself). */
static void test_ack_of_gone_entry(void **s) {
    (void)s;
    fx *f = fx_new(HH_FETCH_RELIABLE);
    /* no record: not a lease loss */
    hh_job **one = malloc(sizeof(*one));
    one[0] = held_job(f, 0, "default", "gone-1");
    hh__finish_send_acks(&f->env, &f->c, one, 1);
    assert_int_equal(atomic_load(&f->m->counters.lease_lost), 0);
    expect_logged("jid=gone-1: its in-progress entry is gone but no process recovered it");
    /* recovered by a peer: a lease loss */
    freeReplyObject(uh_cmd(&srv, "SET hiredhand:recoveries:gone-2 1"));
    one = malloc(sizeof(*one));
    one[0] = held_job(f, 0, "default", "gone-2");
    hh__finish_send_acks(&f->env, &f->c, one, 1);
    assert_int_equal(atomic_load(&f->m->counters.lease_lost), 1);
    expect_logged("jid=gone-2: lease lost");
    fx_free(f);
}

/* Lets Redis go on once the ack's first attempt has timed out. */
static void *unpause_after_timeout(void *arg) {
    (void)arg;
    double deadline = uh_mono() + 10;
    while (!logged("Redis call timed out") && uh_mono() < deadline) uh_sleep(0.005);
    unpause();
    return NULL;
}

/* The same gone entry with a recovery recorded, but the first attempt lost
 * its reply (Redis held the LREM past the command timeout): whether that
 * LREM ran is unknown, so the retry's empty LREM is no lease loss. */
static void test_ack_after_lost_reply_is_no_lease_loss(void **s) {
    (void)s;
    fx *f = fx_new_cto(HH_FETCH_RELIABLE, 0.2);
    freeReplyObject(uh_cmd(&srv, "SET hiredhand:recoveries:gone-3 1"));
    hh_job **one = malloc(sizeof(*one));
    one[0] = held_job(f, 0, "default", "gone-3");
    pause_writes(5000);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, unpause_after_timeout, NULL), 0);
    hh__finish_send_acks(&f->env, &f->c, one, 1);
    pthread_join(t, NULL);
    expect_logged("Redis call timed out");
    assert_int_equal(atomic_load(&f->m->counters.lease_lost), 0);
    assert_false(logged("jid=gone-3"));
    fx_free(f);
}

/* ------------------------------------------------------------ push back */

/* A push back puts the exact bytes at the end of the queue fetched next
 * (the right: Sidekiq pushes on the left and pops on the right), once. */
static void test_requeue_reliable(void **s) {
    (void)s;
    fx *f = fx_new(HH_FETCH_RELIABLE);
    char why[256] = "";
    const char *p = payload_of("rq-1");
    uh_int(&srv, "RPUSH queue:default older newer");
    uh_int(&srv, "RPUSH %s %s", INPROG "default", p);
    assert_int_equal(hh__finish_requeue(&f->env, &f->c, "default", p, strlen(p), why, sizeof(why)), 1);
    assert_int_equal(llen(INPROG "default"), 0);
    assert_int_equal(llen("queue:default"), 3);
    char *next = uh_str(&srv, "LINDEX queue:default -1");
    assert_string_equal(next, p);
    free(next);
    /* gone from the in-progress list: nothing pushed (never twice) */
    assert_int_equal(hh__finish_requeue(&f->env, &f->c, "default", p, strlen(p), why, sizeof(why)), 0);
    assert_int_equal(llen("queue:default"), 3);
    /* Redis refuses (the queue is not a list): the entry stays where it was */
    const char *q = payload_of("rq-2");
    uh_int(&srv, "RPUSH %s %s", INPROG "other", q);
    freeReplyObject(uh_cmd(&srv, "SET queue:other x"));
    assert_int_equal(hh__finish_requeue(&f->env, &f->c, "other", q, strlen(q), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "WRONGTYPE")); /* Redis' own words, not an outage */
    assert_int_equal(llen(INPROG "other"), 1);
    /* the pipelined form: one reply each, 1 pushed, 0 gone */
    uh_int(&srv, "DEL queue:other");
    hh__pipe pipe;
    assert_int_equal(hh__conn_ready(&f->c), 0);
    hh__pipe_begin(&pipe, &f->c);
    hh__finish_requeue_append(&f->env, &pipe, 1, q, strlen(q));
    hh__finish_requeue_append(&f->env, &pipe, 1, q, strlen(q));
    redisReply **r = hh__pipe_exec(&pipe);
    assert_non_null(r);
    assert_int_equal(r[0]->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r[0]->integer, 1);
    assert_int_equal(r[1]->integer, 0);
    hh__replies_free(r, pipe.n);
    assert_int_equal(llen(INPROG "other"), 0);
    assert_int_equal(llen("queue:other"), 1);
    fx_free(f);
}

/* Basic fetch holds nothing in Redis: the push back is an RPUSH alone. */
static void test_requeue_basic(void **s) {
    (void)s;
    fx *f = fx_new(HH_FETCH_BASIC);
    char why[256] = "";
    const char *p = payload_of("rqb-1");
    uh_int(&srv, "RPUSH queue:default older");
    assert_int_equal(hh__finish_requeue(&f->env, &f->c, "default", p, strlen(p), why, sizeof(why)), 1);
    char *next = uh_str(&srv, "LINDEX queue:default -1");
    assert_string_equal(next, p);
    free(next);
    hh__pipe pipe;
    assert_int_equal(hh__conn_ready(&f->c), 0);
    hh__pipe_begin(&pipe, &f->c);
    hh__finish_requeue_append(&f->env, &pipe, 0, "raw", 3);
    redisReply **r = hh__pipe_exec(&pipe);
    assert_non_null(r);
    assert_int_equal(r[0]->type, REDIS_REPLY_INTEGER);
    hh__replies_free(r, pipe.n);
    next = uh_str(&srv, "LINDEX queue:default -1");
    assert_string_equal(next, "raw");
    free(next);
    assert_int_equal(llen(INPROG "default"), 0);
    fx_free(f);
}

/* Waits for Redis to have refused a command with WRONGTYPE, then makes
 * queue:default a list again. */
static void *fix_queue_after_refusal(void *arg) {
    (void)arg;
    double deadline = uh_mono() + 10;
    while (uh_mono() < deadline) {
        char *info = uh_str(&srv, "INFO errorstats");
        int refused = info && strstr(info, "errorstat_WRONGTYPE:count=") != NULL;
        free(info);
        if (refused) {
            uh_int(&srv, "DEL queue:default");
            break;
        }
        uh_sleep(0.005);
    }
    return NULL;
}

/* Refused, the push back is retried until Redis takes it. */
static void test_push_back_retried_until_taken(void **s) {
    (void)s;
    fx *f = fx_new(HH_FETCH_RELIABLE);
    const char *p = payload_of("pb-1");
    uh_int(&srv, "RPUSH %s %s", INPROG "default", p);
    freeReplyObject(uh_cmd(&srv, "SET queue:default x"));
    freeReplyObject(uh_cmd(&srv, "CONFIG RESETSTAT"));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fix_queue_after_refusal, NULL), 0);
    hh__fetched fe = {strdup(p), strlen(p), 0, 0};
    hh__finish_push_back(&f->env, &f->c, &fe);
    pthread_join(t, NULL);
    free(fe.payload);
    assert_int_equal(llen(INPROG "default"), 0);
    char *next = uh_str(&srv, "LINDEX queue:default -1");
    assert_string_equal(next, p);
    free(next);
    assert_false(logged("not pushed back"));
    assert_false(logged("NOT PUSHED BACK"));
    fx_free(f);
}

/* The stop gave up and Redis refuses: reliable fetch leaves the job in its
 * in-progress list and says so at WARN; basic fetch has nothing left in
 * Redis, so the ERROR line holds the whole payload (longer than a log
 * line) and the job is counted as not pushed back. */
static void test_push_back_given_up_reports(void **s) {
    (void)s;
    for (int basic = 0; basic < 2; basic++) {
        fx *f = fx_new(basic ? HH_FETCH_BASIC : HH_FETCH_RELIABLE);
        size_t big = 6000;
        char *p = malloc(big + 64);
        int n = snprintf(p, big + 64, "{\"class\":\"Fin\",\"jid\":\"gu-%d\",\"args\":[\"", basic);
        memset(p + n, 'x', big);
        strcpy(p + n + big, "\"]}");
        size_t len = strlen(p);
        if (!basic) uh_int(&srv, "RPUSH %s %b", INPROG "default", p, len);
        freeReplyObject(uh_cmd(&srv, "SET queue:default x"));
        atomic_store(&f->m->flags.giving_up, 1);
        hh__fetched fe = {p, len, 0, 0};
        hh__finish_push_back(&f->env, &f->c, &fe);
        if (basic) {
            expect_logged("ERROR class=Fin jid=gu-1: NOT PUSHED BACK to queue default (WRONGTYPE");
            pthread_mutex_lock(&log_mu);
            char *line = strstr(log_text, "NOT PUSHED BACK");
            char *end = line ? strchr(line, '\n') : NULL;
            int whole = end && (size_t)(end - line) > len && memcmp(end - len, p, len) == 0;
            pthread_mutex_unlock(&log_mu);
            assert_true(whole); /* ends with the whole payload */
            assert_int_equal(atomic_load(&f->m->counters.not_pushed_back), 1);
        } else {
            expect_logged("WARN class=Fin jid=gu-0: not pushed back to queue default (WRONGTYPE");
            expect_logged("it stays in " INPROG "default for the next start with --identity " IDENT);
            assert_int_equal(llen(INPROG "default"), 1);
            assert_int_equal(atomic_load(&f->m->counters.not_pushed_back), 0);
        }
        free(p);
        fx_free(f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acks_free_releases_leases),
        cmocka_unit_test(test_acks_batched_until_threshold),
        cmocka_unit_test(test_ack_append_basic_sends_nothing),
        cmocka_unit_test(test_ack_refused_once_is_retried),
        cmocka_unit_test(test_try_acks_keeps_or_drops),
        cmocka_unit_test(test_ack_of_gone_entry),
        cmocka_unit_test(test_ack_after_lost_reply_is_no_lease_loss),
        cmocka_unit_test(test_requeue_reliable),
        cmocka_unit_test(test_requeue_basic),
        cmocka_unit_test(test_push_back_retried_until_taken),
        cmocka_unit_test(test_push_back_given_up_reports),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
