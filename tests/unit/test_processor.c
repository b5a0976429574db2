/* test_processor.c -- src/processor.c against a private redis-server: one
 * worker thread (hh__processor_main on a manager made with hh_manager_new,
 * not started; its env filled here as manager.c fills it) takes jobs off
 * queue:default and runs each through the middleware and its handler to
 * its outcome:
 *   - a success is counted and acknowledged (its in-progress entry gone,
 *     nothing written);
 *   - a failure is counted and goes to the retry set with Sidekiq's fields
 *     (error_class, error_message, retry_count 0, failed_at, queue), the
 *     handler's own error or hiredhand::JobFailed with its return code;
 *   - a class without a handler fails with Sidekiq's NameError; an exact
 *     handler wins over the catch-all "*", which wins over the default;
 *   - "retry": false drops a failed job, an exhausted one goes dead;
 *   - a malformed payload goes to the dead set with the reason, where the
 *     Web UI shows it, never dropped;
 *   - middleware runs in order around the handler and may end the chain.
 * And without I/O: the hard shutdown's abandon of a running job and the
 * take of the fetched jobs no thread started. */
#include "unit_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include "manager.h"
#include "processor.h"

UH_REDIS_GROUP()

#define IDENT "proc-test"
#define INPROG "hiredhand:inprogress:" IDENT "|default"

/* ------------------------------------------------------------ the log */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[65536];

static void capture(hh_log_level level, const char *msg, void *udata) {
    (void)udata;
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    pthread_mutex_lock(&log_mu);
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof(log_text) - n, "%s %s\n", names[level], msg);
    pthread_mutex_unlock(&log_mu);
}

static void expect_logged(const char *needle) {
    pthread_mutex_lock(&log_mu);
    int found = strstr(log_text, needle) != NULL;
    pthread_mutex_unlock(&log_mu);
    if (!found) fail_msg("no log line holds '%s'; the log:\n%s", needle, log_text);
}

/* ------------------------------------------------------------ handlers */

static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;
static char trace[512]; /* what ran, in order */

static void note(const char *what) {
    pthread_mutex_lock(&trace_mu);
    strncat(trace, what, sizeof(trace) - strlen(trace) - 1);
    pthread_mutex_unlock(&trace_mu);
}

/* Notes "<udata>:<class>;" and returns the job's first argument. */
static int noting_handler(hh_job *job, void *udata) {
    char buf[128];
    snprintf(buf, sizeof(buf), "%s:%s;", (const char *)udata, hh_job_class(job));
    note(buf);
    json_t *args = json_loads(hh_job_args(job), 0, NULL);
    int rc = (int)json_integer_value(json_array_get(args, 0));
    json_decref(args);
    if (rc == 7) {
        hh_job_fail(job, "RuntimeError", "boom %d", rc);
        return -1;
    }
    return rc;
}

/* "mw<udata>(" before the rest of the chain, ")" after; ends the chain
 * with 0 for class "Skip". */
static int noting_mw(hh_job *job, hh_chain *chain, void *udata) {
    char buf[32];
    snprintf(buf, sizeof(buf), "mw%s(", (const char *)udata);
    note(buf);
    int rc = strcmp(hh_job_class(job), "Skip") == 0 ? 0 : hh_chain_next(chain, job);
    note(")");
    return rc;
}

/* ------------------------------------------------------------ fixture */

typedef struct fx {
    hh_manager *m;
    hh__handler handlers[3];
    hh__middleware mw[2];
    pthread_t thread;
} fx;

/* A manager whose one worker thread knows handlers "Ok" and "Boom" (plus
 * the catch-all "*" and a default handler when `fallbacks`) and two
 * middleware. */
static fx *fx_new(int fallbacks) {
    uh_flushall(&srv);
    pthread_mutex_lock(&log_mu);
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_mu);
    pthread_mutex_lock(&trace_mu);
    trace[0] = '\0';
    pthread_mutex_unlock(&trace_mu);
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = srv.url;
    o.concurrency = 1;
    o.identity = IDENT;
    o.max_retries = 3;
    o.log = capture;
    o.log_level = HH_LOG_DEBUG;
    fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    int err = 99;
    f->m = hh_manager_new(&o, &err);
    assert_non_null(f->m);
    f->handlers[0] = (hh__handler){"Ok", noting_handler, "ok"};
    f->handlers[1] = (hh__handler){"Boom", noting_handler, "boom"};
    f->handlers[2] = (hh__handler){"*", noting_handler, "any"};
    f->mw[0] = (hh__middleware){noting_mw, "1"};
    f->mw[1] = (hh__middleware){noting_mw, "2"};
    hh_manager *m = f->m;
    m->processor_env = (hh__processor_env){.ctx = &m->ctx,
                                           .handlers = f->handlers,
                                           .nhandlers = fallbacks ? 3 : 2,
                                           .default_handler = {NULL, fallbacks ? noting_handler : NULL, "default"},
                                           .middleware = f->mw,
                                           .nmiddleware = 2,
                                           .job_metrics = m->job_metrics,
                                           .batch = &m->batch,
                                           .lease = &m->lease_env,
                                           .fetch = &m->fetch_env};
    atomic_store(&m->flags.booted, 1);
    return f;
}

static void push(const char *payload) { uh_int(&srv, "LPUSH queue:default %s", payload); }

static void start(fx *f) { assert_int_equal(pthread_create(&f->thread, NULL, hh__processor_main, &f->m->procs[0]), 0); }

/* Waits until the thread has run n jobs to their end (counted, outcome
 * written: busy back to 0) and queue:default is empty. */
static void wait_ran(fx *f, unsigned long long n) {
    double deadline = uh_mono() + 10;
    while (uh_mono() < deadline) {
        if (atomic_load(&f->m->counters.processed) >= n && atomic_load(&f->m->counters.busy) == 0 &&
            uh_int(&srv, "LLEN queue:default") == 0)
            return;
        uh_sleep(0.005);
    }
    fail_msg("%llu jobs not run in 10 s (processed %llu)", n, atomic_load(&f->m->counters.processed));
}

/* Quiet, as the stop does: the thread leaves its blocking fetch (CLIENT
 * UNBLOCK), sends its queued acks and ends. */
static void stop(fx *f) {
    hh__conn c;
    hh__conn_init(&c, &f->m->cfg, &f->m->log, "test-stop", NULL);
    atomic_store(&f->m->flags.quiet, 1);
    hh__wake_all(&f->m->wake);
    double deadline = uh_mono() + 10;
    while (atomic_load(&f->m->counters.workers_done) < 1 && uh_mono() < deadline) {
        hh__fetch_wake(&f->m->fetch_env, &c);
        uh_sleep(0.01);
    }
    hh__conn_close(&c);
    pthread_join(f->thread, NULL);
}

static void fx_free(fx *f) {
    hh_manager_free(f->m);
    free(f);
}

static void expect_trace(const char *want) {
    pthread_mutex_lock(&trace_mu);
    int same = strcmp(trace, want) == 0;
    pthread_mutex_unlock(&trace_mu);
    if (!same) fail_msg("ran '%s', want '%s'", trace, want);
}

/* The only member of a sorted set, parsed. */
static json_t *only_entry(const char *zset) {
    assert_int_equal(uh_int(&srv, "ZCARD %s", zset), 1);
    redisReply *r = uh_cmd(&srv, "ZRANGE %s 0 -1", zset);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    json_t *e = json_loadb(r->element[0]->str, r->element[0]->len, 0, NULL);
    if (!e) fail_msg("%s holds '%s', not JSON", zset, r->element[0]->str);
    freeReplyObject(r);
    return e;
}

static const char *str_of(json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "<missing>";
}

/* ------------------------------------------------------------ runs */

/* A success: counted, acknowledged (its entry leaves the in-progress
 * list), nothing written; the handler ran inside both middleware. */
static void test_success_counted_and_acked(void **s) {
    (void)s;
    fx *f = fx_new(0);
    push("{\"class\":\"Ok\",\"args\":[0],\"jid\":\"ok1\",\"queue\":\"default\",\"retry\":true}");
    start(f);
    wait_ran(f, 1);
    stop(f);
    expect_trace("mw1(mw2(ok:Ok;))");
    assert_int_equal(atomic_load(&f->m->counters.failed), 0);
    assert_int_equal(uh_int(&srv, "LLEN %s", INPROG), 0);
    assert_int_equal(uh_int(&srv, "EXISTS retry dead schedule"), 0);
    expect_logged("INFO done");
    fx_free(f);
}

/* A failure: counted, into the retry set with Sidekiq's fields, scored at
 * Sidekiq's first delay (15 to 24 s), out of the in-progress list. */
static void test_failure_to_retry_with_sidekiq_fields(void **s) {
    (void)s;
    fx *f = fx_new(0);
    push("{\"class\":\"Boom\",\"args\":[7],\"jid\":\"b1\",\"queue\":\"default\",\"retry\":true}");
    push("{\"class\":\"Boom\",\"args\":[3],\"jid\":\"b2\",\"queue\":\"default\",\"retry\":true}");
    double t0 = hh__now();
    start(f);
    wait_ran(f, 2);
    stop(f);
    assert_int_equal(atomic_load(&f->m->counters.failed), 2);
    assert_int_equal(uh_int(&srv, "LLEN %s", INPROG), 0);
    assert_int_equal(uh_int(&srv, "ZCARD retry"), 2);
    for (int i = 0; i < 2; i++) {
        const char *jid = i ? "b2" : "b1";
        redisReply *r = uh_cmd(&srv, "ZRANGE retry 0 -1 WITHSCORES");
        assert_non_null(r);
        json_t *e = NULL;
        double score = 0;
        for (size_t k = 0; k + 1 < r->elements; k += 2) {
            json_t *c = json_loads(r->element[k]->str, 0, NULL);
            if (c && !strcmp(str_of(c, "jid"), jid)) e = c, score = strtod(r->element[k + 1]->str, NULL);
            else json_decref(c);
        }
        freeReplyObject(r);
        assert_non_null(e);
        assert_string_equal(str_of(e, "class"), "Boom");
        assert_string_equal(str_of(e, "queue"), "default");
        assert_string_equal(str_of(e, "error_class"), i ? "hiredhand::JobFailed" : "RuntimeError");
        assert_string_equal(str_of(e, "error_message"), i ? "handler returned 3" : "boom 7");
        assert_int_equal(json_integer_value(json_object_get(e, "retry_count")), 0);
        assert_true(json_is_number(json_object_get(e, "failed_at")));
        UH_ASSERT_DBL_IN(score, t0 + 15, hh__now() + 25);
        json_decref(e);
    }
    expect_logged("WARN class=Boom jid=b1: failed in ");
    expect_logged(": RuntimeError: boom 7");
    fx_free(f);
}

/* No handler for the class: Sidekiq's NameError, retried like any failure. */
static void test_missing_handler_is_name_error(void **s) {
    (void)s;
    fx *f = fx_new(0);
    push("{\"class\":\"Nope\",\"args\":[0],\"jid\":\"n1\",\"queue\":\"default\",\"retry\":true}");
    start(f);
    wait_ran(f, 1);
    stop(f);
    expect_trace("mw1(mw2())"); /* the middleware ran, no handler */
    assert_int_equal(atomic_load(&f->m->counters.failed), 1);
    json_t *e = only_entry("retry");
    assert_string_equal(str_of(e, "error_class"), "NameError");
    assert_string_equal(str_of(e, "error_message"), "uninitialized constant Nope");
    json_decref(e);
    assert_int_equal(uh_int(&srv, "LLEN %s", INPROG), 0);
    fx_free(f);
}

/* An exact handler wins over the catch-all "*", which wins over the
 * default handler (that one serves only when no "*" is registered); a
 * middleware may end the chain without the handler. */
static void test_handler_choice_and_chain_end(void **s) {
    (void)s;
    fx *f = fx_new(1);
    push("{\"class\":\"Ok\",\"args\":[0],\"jid\":\"h1\",\"queue\":\"default\"}");
    push("{\"class\":\"Other\",\"args\":[0],\"jid\":\"h2\",\"queue\":\"default\"}");
    push("{\"class\":\"Skip\",\"args\":[0],\"jid\":\"h3\",\"queue\":\"default\"}");
    start(f);
    wait_ran(f, 3);
    stop(f);
    expect_trace("mw1(mw2(ok:Ok;))mw1(mw2(any:Other;))mw1()"); /* mw1 ended Skip's chain */
    assert_int_equal(atomic_load(&f->m->counters.failed), 0);
    assert_int_equal(uh_int(&srv, "LLEN %s", INPROG), 0);
    fx_free(f);
    /* without "*", the default handler */
    f = fx_new(1);
    f->m->processor_env.nhandlers = 2;
    push("{\"class\":\"Other\",\"args\":[0],\"jid\":\"h4\",\"queue\":\"default\"}");
    start(f);
    wait_ran(f, 1);
    stop(f);
    expect_trace("mw1(mw2(default:Other;))");
    fx_free(f);
}

/* "retry": false drops the failed job (nothing written, its entry gone);
 * one whose retries are used up goes to the dead set. */
static void test_no_retry_dropped_exhausted_dead(void **s) {
    (void)s;
    fx *f = fx_new(0);
    push("{\"class\":\"Boom\",\"args\":[7],\"jid\":\"r1\",\"queue\":\"default\",\"retry\":false}");
    push("{\"class\":\"Boom\",\"args\":[7],\"jid\":\"r2\",\"queue\":\"default\",\"retry\":true,\"retry_count\":2}");
    start(f);
    wait_ran(f, 2);
    stop(f);
    assert_int_equal(atomic_load(&f->m->counters.failed), 2);
    assert_int_equal(uh_int(&srv, "EXISTS retry"), 0);
    json_t *e = only_entry("dead");
    assert_string_equal(str_of(e, "jid"), "r2");
    assert_int_equal(json_integer_value(json_object_get(e, "retry_count")), 3);
    json_decref(e);
    assert_int_equal(uh_int(&srv, "LLEN %s", INPROG), 0);
    fx_free(f);
}

/* Malformed payloads go to the dead set, where an operator sees them: an
 * object gains the reason, bytes that are not JSON are stored as fetched.
 * Neither runs nor counts. */
static void test_malformed_to_dead(void **s) {
    (void)s;
    fx *f = fx_new(1);
    push("{\"class\":\"Ok\",\"jid\":\"m1\"}"); /* no args */
    push("not json at all");
    start(f);
    double deadline = uh_mono() + 10;
    while (uh_int(&srv, "ZCARD dead") < 2 && uh_mono() < deadline) uh_sleep(0.005);
    stop(f);
    expect_trace(""); /* nothing ran, not even the middleware */
    assert_int_equal(atomic_load(&f->m->counters.processed), 0);
    assert_int_equal(uh_int(&srv, "LLEN %s", INPROG), 0);
    assert_int_equal(uh_int(&srv, "ZCARD dead"), 2);
    assert_int_equal(uh_int(&srv, "ZSCORE dead %s", "not json at all") > 0, 1);
    redisReply *r = uh_cmd(&srv, "ZRANGE dead 0 -1");
    json_t *e = NULL;
    for (size_t k = 0; r && k < r->elements && !e; k++) e = json_loads(r->element[k]->str, 0, NULL);
    freeReplyObject(r);
    assert_non_null(e);
    assert_string_equal(str_of(e, "jid"), "m1");
    assert_string_equal(str_of(e, "error_class"), "hiredhand::InvalidJob");
    assert_non_null(strstr(str_of(e, "error_message"), "args"));
    json_decref(e);
    expect_logged("WARN queue=default: malformed job moved to the dead set");
    fx_free(f);
}

/* ------------------------------------------------------------ no I/O */

/* The hard shutdown: a running job is copied for the push back (exact
 * bytes, its queue's index) and cancelled, once; an idle thread gives
 * nothing; a job whose lease is lost is cancelled, never pushed back. */
static void test_abandon(void **s) {
    (void)s;
    static const hh_queue_weight queues[] = {{"default", 0}, {"other", 0}};
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = srv.url;
    o.concurrency = 1;
    o.queues = queues;
    o.nqueues = 2;
    o.log = capture;
    int err;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    m->processor_env = (hh__processor_env){.ctx = &m->ctx, .lease = &m->lease_env, .fetch = &m->fetch_env};
    hh__processor *p = &m->procs[0];
    hh__unfinished u;
    assert_int_equal(hh__processor_abandon(p, &u), 0); /* idle */
    assert_null(u.payload);
    char why[64];
    const char *payload = "{\"class\":\"Ok\",\"args\":[],\"jid\":\"a1\"}";
    hh_job *job = hh__job_new(payload, strlen(payload), "other", why, sizeof(why));
    job->processor = p;
    p->job = job;
    assert_int_equal(hh_job_cancelled(job), 0);
    assert_int_equal(hh__processor_abandon(p, &u), 1);
    assert_int_equal(u.len, strlen(payload));
    assert_memory_equal(u.payload, payload, u.len);
    assert_int_equal(u.queue, 1);
    assert_int_equal(hh_job_cancelled(job), 1);
    hh__unfinished_free(&u);
    assert_int_equal(hh__processor_abandon(p, &u), 0); /* once */
    /* its lease lost: cancelled, not copied */
    p->abandoned = 0, p->lease_lost = 1;
    atomic_store(&p->cancelled, 0);
    assert_int_equal(hh__processor_abandon(p, &u), 0);
    assert_null(u.payload);
    assert_int_equal(hh_job_cancelled(job), 1);
    p->job = NULL;
    hh__job_free(job);
    hh_manager_free(m);
}

/* The fetched jobs no thread started come out in fetch order, whole. */
static void test_take_pending(void **s) {
    (void)s;
    fx *f = fx_new(0);
    hh__unfinished *u = NULL;
    assert_int_equal(hh__processor_take_pending(&f->m->fetch_env, &u), 0);
    assert_null(u);
    hh__fetched in[2] = {{strdup("first"), 5, 0, 0}, {strdup("second"), 6, 0, 0}};
    pthread_mutex_lock(&f->m->buffer->mu);
    assert_int_equal(hh__buffer_push_locked(f->m->buffer, in, 2), 2);
    pthread_mutex_unlock(&f->m->buffer->mu);
    assert_int_equal(hh__processor_take_pending(&f->m->fetch_env, &u), 2);
    assert_string_equal(u[0].payload, "first");
    assert_int_equal(u[0].len, 5);
    assert_string_equal(u[1].payload, "second");
    hh__unfinished_free(&u[0]);
    hh__unfinished_free(&u[1]);
    free(u);
    assert_int_equal(hh__processor_take_pending(&f->m->fetch_env, &u), 0); /* taken */
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_counted_and_acked),
        cmocka_unit_test(test_failure_to_retry_with_sidekiq_fields),
        cmocka_unit_test(test_missing_handler_is_name_error),
        cmocka_unit_test(test_handler_choice_and_chain_end),
        cmocka_unit_test(test_no_retry_dropped_exhausted_dead),
        cmocka_unit_test(test_malformed_to_dead),
        cmocka_unit_test(test_abandon),
        cmocka_unit_test(test_take_pending),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
