/* manager.c -- the embeddable worker: options, handlers, middleware, and
 * the lifecycle that drives the worker threads (processor.c), heartbeat.c,
 * scheduler.c and recovery.c: start, quiet, stop with a grace period and
 * hard-shutdown push-back (Sidekiq 6.4 lib/sidekiq/launcher.rb,
 * manager.rb). Keys: only through the files it drives, plus INFO at start. */
#include "manager.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "heartbeat.h"
#include "processor.h"
#include "recovery.h"
#include "scheduler.h"
#include "fetch.h"
#include "http.h"
#include "lease.h"
#include "pickup.h"

/* The Redis work after the grace period (push back, acks, leaving the Busy
 * page) gets one command timeout, at most this long: with -t 25 a stop ends
 * within Kubernetes' default 30 s grace whatever Redis does. */
#define HH_STOP_BUDGET_MAX 3.0

void hh_manager_options_init(hh_manager_options *o) {
    memset(o, 0, sizeof(*o));
    hh_redis_options_init(&o->redis);
    o->concurrency = 10;
    o->shutdown_timeout = 25;
    o->fetch = HH_FETCH_RELIABLE;
    o->heartbeat_interval = 5;
    o->max_retries = 25;
    o->dead_max_jobs = 10000;
    o->dead_timeout = 15552000;
    o->recovery_interval = 60;
    o->max_recoveries = 3;
    o->version = "6.4.1";
    o->log_level = HH_LOG_INFO;
    o->liveness_max_age = 30;
}

/* Logs why a name is refused (hh_name_check's rule); 0 when it is fine. */
static int bad_name(hh_manager *m, hh_name_kind kind, const char *name) {
    char why[512];
    if (hh_name_check(kind, name, why, sizeof(why)) == HH_OK) return 0;
    hh_log(&m->log, HH_LOG_ERROR, "%s", why);
    return 1;
}

static void free_strv(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

void hh_manager_free(hh_manager *m) {
    if (!m) return;
    if (atomic_load(&m->started) && !atomic_load(&m->done)) {
        hh_manager_stop(m);
        hh_manager_wait(m, -1);
    }
    if (atomic_load(&m->detached)) {
        hh_log(&m->log, HH_LOG_WARN, "%d threads still running after the stop (in a handler or a Redis call): manager not freed",
               atomic_load(&m->detached));
        return;
    }
    for (int i = 0; m->procs && i < m->opts.concurrency; i++) {
        hh_processor *p = &m->procs[i];
        hh_conn_close(&p->conn);
        pthread_mutex_destroy(&p->mu);
    }
    free(m->procs);
    hh_lease_free(m->lease);
    hh_fetcher_free(m->fetcher);
    hh_pickup_free(m);
    for (size_t i = 0; i < m->nqueues; i++) {
        if (m->queue_keys) sdsfree(m->queue_keys[i]);
        if (m->inprog_keys) sdsfree(m->inprog_keys[i]);
    }
    free(m->queue_keys);
    free(m->inprog_keys);
    free_strv(m->queues, m->nqueues);
    free(m->weights);
    free(m->fetched);
    free(m->queue_size);
    free(m->queue_latency);
    free((char *)m->opts.http_bind);
    free((char *)m->opts.http_token);
    size_t nl = 0;
    while (m->labels && m->labels[nl]) nl++;
    free_strv(m->labels, nl);
    free(m->tag);
    free(m->version);
    for (size_t i = 0; i < m->nhandlers; i++) free(m->handlers[i].klass);
    free(m->handlers);
    free(m->middleware);
    hh_keys_free(&m->keys);
    hh_redis_config_free(&m->cfg);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

hh_manager *hh_manager_new(const hh_manager_options *opts, int *err) {
    hh_manager_options def;
    if (!opts) {
        hh_manager_options_init(&def);
        opts = &def;
    }
    int e = HH_ERR_INVALID;
    hh_manager *m = calloc(1, sizeof(*m));
    if (!m) {
        if (err) *err = HH_ERR_NOMEM;
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    m->opts = *opts;
    m->opts.http_bind = NULL; /* our copies, made below: never free the caller's on an early failure */
    m->opts.http_token = NULL;
    m->log.fn = opts->log;
    m->log.udata = opts->log_udata;
    m->log.level = opts->log_level;
    char msg[256];
    if (opts->nqueues > HH_QUEUES_LIMIT) {
        hh_log(&m->log, HH_LOG_ERROR, "%zu queues: at most %d queues per worker", opts->nqueues, HH_QUEUES_LIMIT);
        goto fail;
    }
    if (opts->concurrency < 1 || opts->concurrency > 1000 ||
        opts->shutdown_timeout < 0 || opts->heartbeat_interval <= 0 || opts->heartbeat_interval > 30 ||
        (opts->lease_lost != HH_LEASE_LOST_STOP && opts->lease_lost != HH_LEASE_LOST_FINISH))
        goto fail;
    if (hh_redis_config_parse(&m->cfg, &opts->redis, msg, sizeof(msg)) != 0) {
        hh_log(&m->log, HH_LOG_ERROR, "%s", msg);
        goto fail;
    }
    if (opts->redis.ns && *opts->redis.ns && bad_name(m, HH_NAME_NAMESPACE, opts->redis.ns)) goto fail;
    hh_keys_init(&m->keys, opts->redis.ns);
    /* defaults for fields an embedder left zero */
    if (m->opts.max_retries < 0) m->opts.max_retries = 25;
    if (m->opts.dead_max_jobs <= 0) m->opts.dead_max_jobs = 10000;
    if (m->opts.dead_timeout <= 0) m->opts.dead_timeout = 15552000;
    if (m->opts.recovery_interval <= 0) m->opts.recovery_interval = 60;

    size_t nq = opts->nqueues ? opts->nqueues : 1;
    m->queues = calloc(nq, sizeof(char *));
    m->weights = calloc(nq, sizeof(int));
    m->fetched = calloc(nq, sizeof(*m->fetched));
    m->queue_size = calloc(nq, sizeof(*m->queue_size));
    m->queue_latency = calloc(nq, sizeof(*m->queue_latency));
    if (!m->queues || !m->weights || !m->fetched || !m->queue_size || !m->queue_latency) goto nomem;
    for (size_t i = 0; i < nq; i++) m->queue_size[i] = -1;
    if (m->opts.liveness_max_age <= 0) m->opts.liveness_max_age = 30;
    if (!opts->nqueues) {
        m->queues[0] = strdup("default");
        m->nqueues = 1;
    }
    for (size_t i = 0; i < opts->nqueues; i++) {
        const hh_queue_weight *q = &opts->queues[i];
        if (bad_name(m, HH_NAME_QUEUE, q->name) || q->weight < 0) goto fail;
        size_t j = 0;
        while (j < m->nqueues && strcmp(m->queues[j], q->name)) j++;
        if (j < m->nqueues) { /* repeated "-q a -q a": Sidekiq adds the weights */
            m->weights[j] += q->weight;
            continue;
        }
        m->queues[m->nqueues] = strdup(q->name);
        m->weights[m->nqueues++] = q->weight;
        if (q->weight > 0) m->weighted = 1;
    }
    if (m->weighted)
        for (size_t i = 0; i < m->nqueues; i++)
            if (m->weights[i] == 0)
                hh_log(&m->log, HH_LOG_WARN, "queue %s has no weight while others do: it gets weight 1, as in Sidekiq", m->queues[i]);
    size_t nl = 0;
    while (opts->labels && opts->labels[nl])
        if (bad_name(m, HH_NAME_LABEL, opts->labels[nl++])) goto fail;
    if (opts->tag && bad_name(m, HH_NAME_TAG, opts->tag)) goto fail;
    m->labels = calloc(nl + 1, sizeof(char *));
    for (size_t i = 0; m->labels && i < nl; i++) m->labels[i] = strdup(opts->labels[i]);
    m->tag = strdup(opts->tag ? opts->tag : "");
    m->version = strdup(opts->version ? opts->version : "6.4.1");
    if (!m->labels || !m->tag || !m->version) goto nomem;

    const char *dyno = getenv("DYNO");
    if (dyno && *dyno) hh_strlcpy(m->hostname, dyno, sizeof(m->hostname));
    else if (gethostname(m->hostname, sizeof(m->hostname) - 1) != 0) hh_strlcpy(m->hostname, "localhost", sizeof(m->hostname));
    if (opts->identity && *opts->identity) {
        if (bad_name(m, HH_NAME_IDENTITY, opts->identity)) goto fail;
        hh_strlcpy(m->identity, opts->identity, sizeof(m->identity));
        m->fixed_identity = 1;
    } else {
        char nonce[13];
        if (hh_random_hex(nonce, 6) != 0) goto fail;
        snprintf(m->identity, sizeof(m->identity), "%s:%d:%s", m->hostname, (int)getpid(), nonce);
        if (bad_name(m, HH_NAME_IDENTITY, m->identity)) { /* a host named "queue", say */
            hh_log(&m->log, HH_LOG_ERROR, "the identity made from the host name is refused: give one with --identity");
            goto fail;
        }
    }
    m->opts.identity = m->identity;
    m->opts.tag = m->tag;
    m->opts.version = m->version;
    m->opts.queues = NULL;
    m->opts.labels = NULL;
    m->opts.redis.url = NULL;
    m->opts.redis.ns = NULL;
    m->opts.redis.password = NULL; /* the copy in m->cfg is what is used */
    if (opts->http_bind && !(m->opts.http_bind = strdup(opts->http_bind))) goto nomem;
    if (opts->http_token && !hh_http_token_valid(opts->http_token)) {
        hh_log(&m->log, HH_LOG_ERROR, "bad http_token: want 1-4096 visible ASCII characters, no space");
        goto fail;
    }
    if (opts->http_token && !(m->opts.http_token = strdup(opts->http_token))) goto nomem;

    m->queue_keys = calloc(m->nqueues, sizeof(sds));
    m->inprog_keys = calloc(m->nqueues, sizeof(sds));
    if (!m->queue_keys || !m->inprog_keys) goto nomem;
    for (size_t i = 0; i < m->nqueues; i++) {
        m->queue_keys[i] = hh_key_queue(&m->keys, m->queues[i]);
        m->inprog_keys[i] = hh_key_inprogress(&m->keys, m->identity, m->queues[i]);
        if (!m->queue_keys[i] || !m->inprog_keys[i]) goto nomem;
    }
    if (!(m->fetcher = hh_fetcher_new(m))) goto nomem;
    m->procs = calloc((size_t)opts->concurrency, sizeof(hh_processor));
    if (!m->procs) goto nomem;
    for (int i = 0; i < opts->concurrency; i++) {
        hh_processor *p = &m->procs[i];
        p->m = m;
        p->index = i;
        pthread_mutex_init(&p->mu, NULL);
        /* A short base-36 tid, unique in the process, like Sidekiq's. */
        unsigned long v = ((unsigned long)getpid() * 2654435761ul) ^ ((unsigned long)(i + 1) * 40503ul);
        char tmp[16];
        int k = 0;
        do { tmp[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]; v /= 36; } while (v && k < 6);
        for (int j = 0; j < k; j++) p->tid[j] = tmp[k - 1 - j];
        p->tid[k] = '\0';
        hh_rng_seed(&p->rng);
        hh_conn_init(&p->conn, &m->cfg, &m->log, "fetch", &m->giving_up);
    }
    if (!(m->lease = hh_lease_new(m))) goto nomem;
    if (err) *err = HH_OK;
    return m;
nomem:
    e = HH_ERR_NOMEM;
fail:
    if (err) *err = e;
    hh_manager_free(m);
    return NULL;
}

const char *hh_manager_identity(const hh_manager *m) { return m->identity; }

int hh_manager_detached(const hh_manager *m) { return m ? atomic_load(&m->detached) : 0; }

int hh_manager_register(hh_manager *m, const char *klass, hh_handler_fn fn, void *udata) {
    if (!m || !klass || !*klass || !fn) return HH_ERR_INVALID;
    if (atomic_load(&m->started)) return HH_ERR_STATE;
    if (hh_manager_has_handler(m, klass)) return HH_ERR_EXISTS;
    hh_handler *h = realloc(m->handlers, (m->nhandlers + 1) * sizeof(*h));
    if (!h) return HH_ERR_NOMEM;
    m->handlers = h;
    if (!(h[m->nhandlers].klass = strdup(klass))) return HH_ERR_NOMEM;
    h[m->nhandlers].fn = fn;
    h[m->nhandlers].udata = udata;
    m->nhandlers++;
    return HH_OK;
}

int hh_manager_register_default(hh_manager *m, hh_handler_fn fn, void *udata) {
    if (!m || !fn) return HH_ERR_INVALID;
    if (atomic_load(&m->started)) return HH_ERR_STATE;
    m->default_handler.fn = fn;
    m->default_handler.udata = udata;
    return HH_OK;
}

int hh_manager_has_handler(const hh_manager *m, const char *klass) {
    for (size_t i = 0; klass && i < m->nhandlers; i++)
        if (strcmp(m->handlers[i].klass, klass) == 0) return 1;
    return 0;
}

int hh_manager_use(hh_manager *m, hh_middleware_fn fn, void *udata) {
    if (!m || !fn) return HH_ERR_INVALID;
    if (atomic_load(&m->started)) return HH_ERR_STATE;
    hh_middleware *mw = realloc(m->middleware, (m->nmiddleware + 1) * sizeof(*mw));
    if (!mw) return HH_ERR_NOMEM;
    m->middleware = mw;
    mw[m->nmiddleware].fn = fn;
    mw[m->nmiddleware].udata = udata;
    m->nmiddleware++;
    return HH_OK;
}

int hh_manager_on_heartbeat(hh_manager *m, hh_heartbeat_hook_fn fn, void *udata) {
    if (!m) return HH_ERR_INVALID;
    if (atomic_load(&m->started)) return HH_ERR_STATE;
    m->hook = fn;
    m->hook_udata = udata;
    return HH_OK;
}

void hh_manager_log(hh_manager *m, hh_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hh_vlog(&m->log, level, fmt, ap);
    va_end(ap);
}

/* Sidekiq warns when Redis may evict keys: eviction silently drops jobs. */
static void check_redis(hh_manager *m, hh_conn *c) {
    redisReply *r = hh_conn_cmd(c, "INFO memory");
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "maxmemory_policy:");
        if (p && strncmp(p + 17, "noeviction", 10) != 0)
            hh_log(&m->log, HH_LOG_WARN, "Redis maxmemory_policy is not noeviction: Redis may evict jobs");
    }
    if (r) freeReplyObject(r);
    if (c->version && c->version < 400)
        hh_log(&m->log, HH_LOG_WARN, "Redis %d.%d is older than 4.0, which Sidekiq requires", c->version / 100, c->version % 100);
}

static void *supervisor_main(void *arg);

int hh_manager_start(hh_manager *m) {
    if (!m) return HH_ERR_INVALID;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&m->started, &expected, 1)) return HH_ERR_STATE;
    m->started_at = hh_now();
    if (m->opts.http_bind) {
        char err[256];
        if (!(m->http = hh_http_start(m, m->opts.http_bind, m->opts.liveness_max_age, m->opts.http_token, err,
                                     sizeof(err)))) {
            hh_log(&m->log, HH_LOG_ERROR, "http: %s", err);
            atomic_store(&m->done, 1);
            return HH_ERR_INVALID;
        }
    }
    hh_conn c;
    hh_conn_init(&c, &m->cfg, &m->log, "start", NULL);
    /* One attempt now: Redis being down is not fatal, the threads reconnect;
     * Redis refusing the password or db is, since retrying cannot help. */
    if (hh_conn_ready(&c) != 0 && hh_redis_refused(&m->cfg)) {
        hh_http_stop(m->http);
        m->http = NULL;
        atomic_store(&m->done, 1);
        return HH_ERR_REFUSED;
    }
    if (c.ctx) {
        check_redis(m, &c);
        int rc = hh_recovery_boot(m, &c);
        if (rc == HH_OK) atomic_store(&m->booted, 1);
        if (rc == HH_ERR_EXISTS) {
            hh_log(&m->log, HH_LOG_ERROR, "identity %s is live in another process (fresh heartbeat); refusing to start", m->identity);
            hh_conn_close(&c);
            hh_http_stop(m->http);
            m->http = NULL;
            atomic_store(&m->done, 1);
            return HH_ERR_EXISTS;
        }
    }
    hh_conn_close(&c);
    /* A fixed identity must pass its checks (not live elsewhere, leftovers
     * pushed back) before it fetches or beats: with Redis down now, the
     * recovery thread does them once Redis answers. A random identity is
     * new, so nothing can hold it. */
    if (!m->fixed_identity || m->opts.fetch == HH_FETCH_BASIC) atomic_store(&m->booted, 1);
    if (!atomic_load(&m->booted))
        hh_log(&m->log, HH_LOG_WARN, "Redis unreachable: identity %s checks and recovery wait for it", m->identity);
    hh_log(&m->log, HH_LOG_INFO, "hiredhand %s starting: identity=%s concurrency=%d fetch=%s redis=%s",
           HH_VERSION, m->identity, m->opts.concurrency,
           m->opts.fetch == HH_FETCH_BASIC ? "basic" : "reliable", m->cfg.display);
    hh_pickup_start(m); /* on failure idle threads fall back, logged */
    int failed = 0;
    for (int i = 0; i < m->opts.concurrency && !failed; i++) {
        failed = pthread_create(&m->procs[i].thread, NULL, hh_processor_main, &m->procs[i]) != 0;
        if (!failed) m->procs[i].thread_started = 1;
    }
    if (!failed) failed = pthread_create(&m->heartbeat_thread, NULL, hh_heartbeat_main, m) != 0;
    if (!failed) m->heartbeat_started = 1;
    if (!failed) failed = pthread_create(&m->scheduler_thread, NULL, hh_scheduler_main, m) != 0;
    if (!failed) m->scheduler_started = 1;
    if (!failed && m->opts.fetch == HH_FETCH_RELIABLE) {
        failed = pthread_create(&m->recovery_thread, NULL, hh_recovery_main, m) != 0;
        if (!failed) m->recovery_started = 1;
    }
    if (!failed) failed = pthread_create(&m->supervisor_thread, NULL, supervisor_main, m) != 0;
    if (!failed) m->supervisor_started = 1;
    if (failed) {
        hh_log(&m->log, HH_LOG_ERROR, "cannot create threads");
        hh_manager_stop(m);
        if (!m->supervisor_started) { /* stop what did start, here */
            atomic_store(&m->quiet, 1);
            atomic_store(&m->beats_off, 1);
            atomic_store(&m->done, 1);
        }
        return HH_ERR_IO;
    }
    return HH_OK;
}

void hh_manager_quiet(hh_manager *m) { atomic_store(&m->quiet, 1); }

void hh_manager_stop(hh_manager *m) {
    atomic_store(&m->quiet, 1);
    atomic_store(&m->stopping, 1);
}

void hh_manager_dump(hh_manager *m) { atomic_store(&m->dump_requested, 1); }

/* The Redis chores of a running manager, off the supervisor so that it never
 * waits on Redis: acks left by idle or busy threads, and once quiet, ending
 * the idle threads' blocking fetches (repeated a few times for a thread that
 * was just about to block). Ends when the stop gives up on Redis. */
static void *chores_main(void *arg) {
    hh_manager *m = arg;
    int wakes = 0;
    hh_conn c;
    hh_conn_init(&c, &m->cfg, &m->log, "acks", &m->giving_up);
    while (!atomic_load(&m->giving_up)) {
        if (atomic_load(&m->quiet) && wakes < 5) {
            hh_fetch_wake(m, &c);
            wakes++;
        }
        hh_fetch_try_acks(m, &c);
        hh_sleep(0.05);
    }
    hh_conn_close(&c);
    return NULL;
}

/* Idle threads sleeping in the process see quiet at once (no Redis). */
static void wake_sleepers(hh_manager *m) {
    hh_fetch_wake_sleepers(m);
}

/* Joins t by the monotonic deadline, or detaches it: a thread still inside
 * a handler or a Redis call must not hold up the exit (the process may end
 * under it; the manager is then never freed). Returns 1 when joined. */
static int join_by(hh_manager *m, pthread_t t, double deadline) {
    if (hh_join_by(t, deadline)) return 1;
    atomic_fetch_add(&m->detached, 1);
    return 0;
}

/* Pushes back, in one pipeline on c (whose deadline bounds the wait), the
 * jobs still running at the end of the grace period (the first nrun of u)
 * and those fetched but not started, together with the queued acks. What
 * Redis did not confirm stays where it is: in this identity's in-progress
 * list with reliable fetch, recovered later; with basic fetch the job is
 * no longer in Redis, so its payload goes to the log for a manual push. */
static void push_back(hh_manager *m, hh_conn *c, hh_unfinished *u, size_t n, size_t nrun, hh_job **acks,
                      size_t nacks) {
    hh_pipe pipe;
    hh_pipe_begin(&pipe, c);
    for (size_t i = 0; i < n; i++) hh_fetch_requeue_append(m, &pipe, u[i].queue, u[i].payload, u[i].len);
    for (size_t i = 0; i < nacks; i++) hh_fetch_ack_append(m, &pipe, acks[i]);
    redisReply **r = hh_pipe_exec(&pipe);
    int pushed = 0, pend_pushed = 0, left = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *x = r ? r[i] : NULL;
        json_t *item = json_loadb(u[i].payload, u[i].len, JSON_ALLOW_NUL, NULL);
        const char *jid = json_string_value(json_object_get(item, "jid"));
        const char *klass = json_string_value(json_object_get(item, "class"));
        const char *queue = m->queues[u[i].queue];
        char why[300];
        snprintf(why, sizeof(why), "%s", !x ? (c->last_error[0] ? c->last_error : "Redis unreachable")
                                        : x->type == REDIS_REPLY_ERROR ? x->str : "unexpected reply");
        if (x && x->type == REDIS_REPLY_INTEGER && x->integer > 0) {
            if (i < nrun) {
                hh_log(&m->log, HH_LOG_WARN, "class=%s jid=%s: still running at the shutdown timeout; pushed back to queue %s",
                       klass ? klass : "?", jid ? jid : "?", queue);
                pushed++;
            } else {
                pend_pushed++;
            }
        } else if (x && x->type == REDIS_REPLY_INTEGER) {
            hh_log(&m->log, HH_LOG_WARN, "class=%s jid=%s: no longer in %s at the stop: not pushed back",
                   klass ? klass : "?", jid ? jid : "?", m->inprog_keys[u[i].queue]);
        } else {
            left++;
            hh_fetch_report_unreturned(m, u[i].queue, u[i].payload, u[i].len, why);
        }
        json_decref(item);
    }
    if (pushed) hh_log(&m->log, HH_LOG_WARN, "pushed %d unfinished jobs back to their queues", pushed);
    if (pend_pushed) hh_log(&m->log, HH_LOG_INFO, "pushed %d fetched jobs that had not started back to their queues", pend_pushed);
    if (left && m->opts.fetch == HH_FETCH_RELIABLE)
        hh_log(&m->log, HH_LOG_WARN, "%d jobs left in this process's in-progress lists for recovery", left);
    if (nacks && !r)
        hh_log(&m->log, HH_LOG_WARN, "%zu finished jobs not acknowledged (%s): they stay in progress and run again after recovery",
               nacks, c->last_error[0] ? c->last_error : "Redis unreachable");
    hh_replies_free(r, pipe.n);
}

/* Waits for the stop request, then up to the grace period for the worker
 * threads to finish their jobs and leave; then the hard shutdown: running
 * handlers are cancelled at once, and the Redis work left (push back, acks,
 * leaving the Busy page) shares one bounded budget, so the stop ends by
 * grace + budget whatever Redis does (docs: README, Signals). The
 * supervisor itself never waits on Redis before that point. */
static void *supervisor_main(void *arg) {
    hh_manager *m = arg;
    pthread_t chores;
    int chores_started = pthread_create(&chores, NULL, chores_main, m) == 0;
    if (!chores_started) hh_log(&m->log, HH_LOG_WARN, "cannot create the acks thread: acks ride with fetches only");
    int announced_quiet = 0;
    while (!atomic_load(&m->stopping)) {
        if (hh_redis_refused(&m->cfg)) { /* Redis was down at start, then refused us */
            atomic_store(&m->start_error, HH_ERR_REFUSED);
            hh_manager_stop(m);
            break;
        }
        if (!announced_quiet && atomic_load(&m->quiet)) {
            announced_quiet = 1;
            hh_log(&m->log, HH_LOG_INFO, "quiet: no new jobs will be fetched");
            wake_sleepers(m);
        }
        hh_sleep(0.02);
    }
    double grace_end = hh_mono() + m->opts.shutdown_timeout;
    if (!announced_quiet) hh_log(&m->log, HH_LOG_INFO, "quiet: no new jobs will be fetched");
    hh_log(&m->log, HH_LOG_INFO, "stopping: waiting up to %.0f s for %d running jobs", m->opts.shutdown_timeout,
           atomic_load(&m->busy));
    wake_sleepers(m);
    /* A thread leaves once its job's outcome is written (retried through an
     * outage until the grace period ends) and its fetched jobs are back. */
    for (;;) {
        int running = 0;
        for (int i = 0; i < m->opts.concurrency; i++) {
            hh_processor *p = &m->procs[i];
            if (!p->thread_started) continue;
            if (pthread_tryjoin_np(p->thread, NULL) == 0) p->thread_started = 0;
            else running++;
        }
        if (!running || hh_mono() >= grace_end) break;
        hh_sleep(0.02);
    }

    /* Hard shutdown. From here writes that fail are tried once, not retried:
     * those jobs stay in their in-progress lists for recovery. */
    atomic_store(&m->giving_up, 1);
    atomic_store(&m->beats_off, 1);
    double budget = m->cfg.command_timeout < HH_STOP_BUDGET_MAX ? m->cfg.command_timeout : HH_STOP_BUDGET_MAX;
    double end = hh_mono() + budget;
    /* Cancel every running handler first, before any Redis I/O. */
    size_t cap = (size_t)m->opts.concurrency, n = 0, nrun = 0;
    hh_unfinished *u = calloc(cap, sizeof(*u));
    for (int i = 0; u && i < m->opts.concurrency; i++)
        if (hh_processor_abandon(&m->procs[i], &u[n]) == 1) n++;
    if (!u) /* out of memory: still cancel them; their jobs stay in progress */
        for (int i = 0; i < m->opts.concurrency; i++) atomic_store(&m->procs[i].cancelled, 1);
    nrun = n;
    hh_unfinished *pend = NULL;
    size_t npend = hh_processor_take_pending(m, &pend);
    if (npend && u) {
        hh_unfinished *all = realloc(u, (n + npend) * sizeof(*u));
        if (all) {
            u = all;
            memcpy(u + n, pend, npend * sizeof(*pend));
            n += npend;
            free(pend);
            pend = NULL, npend = 0;
        }
    }
    size_t nacks = 0;
    hh_job **acks = hh_fetch_take_acks(m, &nacks);
    hh_conn c;
    hh_conn_init(&c, &m->cfg, &m->log, "shutdown", NULL);
    c.deadline = end;
    if (n || nacks) push_back(m, &c, u, n, nrun, acks, nacks);
    for (size_t i = 0; i < n; i++) hh_unfinished_free(&u[i]);
    for (size_t i = 0; i < npend; i++) hh_unfinished_free(&pend[i]); /* not taken: stay in progress */
    free(u);
    free(pend);
    hh_fetch_acks_free(m, acks, nacks);

    /* The heartbeat must be off before leaving the process set. */
    int beats_joined = !m->heartbeat_started || join_by(m, m->heartbeat_thread, end);
    /* What our lists still hold that no thread has (lost fetch replies) goes
     * back now, not when this identity next starts. Skipped when Redis just
     * failed us or our last beat (a hung Redis costs no extra time), and when
     * the identity was never checked (its lists may be a live process's). */
    pthread_mutex_lock(&m->lock);
    int beats_failing = m->heartbeat_last_error[0] != '\0';
    pthread_mutex_unlock(&m->lock);
    if (atomic_load(&m->booted) && !beats_failing && (c.ctx || !c.last_error[0]) &&
        m->opts.fetch == HH_FETCH_RELIABLE)
        hh_lease_reconcile(m, &c, 1);
    /* Never booted: the identity may belong to a live process; leave it. */
    if (atomic_load(&m->booted) && hh_heartbeat_unregister(m, &c) != 0)
        hh_log(&m->log, HH_LOG_WARN, "could not unregister from Redis (%s): the process hash expires in 60 s",
               c.last_error[0] ? c.last_error : "Redis unreachable");
    else if (!beats_joined)
        hh_log(&m->log, HH_LOG_WARN, "heartbeat stuck in a Redis call: a late beat may show this process for 60 s");
    int stuck = 0;
    for (int i = 0; i < m->opts.concurrency; i++) {
        hh_processor *p = &m->procs[i];
        if (p->thread_started && !join_by(m, p->thread, end)) stuck++;
        p->thread_started = 0;
    }
    if (stuck)
        hh_log(&m->log, HH_LOG_WARN, "%d worker threads still in a handler or a Redis call at the deadline: left behind", stuck);
    if (!hh_pickup_stop_by(m, end)) atomic_fetch_add(&m->detached, 1);
    if (m->scheduler_started) join_by(m, m->scheduler_thread, end);
    if (m->recovery_started) join_by(m, m->recovery_thread, end);
    if (chores_started) join_by(m, chores, end);
    m->scheduler_started = m->recovery_started = m->heartbeat_started = 0;
    hh_fetch_flush_acks(m, &c); /* left by threads that ended late; one try within the budget */
    hh_conn_close(&c);
    hh_log(&m->log, HH_LOG_INFO, "stopped: processed=%llu failed=%llu", (unsigned long long)atomic_load(&m->processed),
           (unsigned long long)atomic_load(&m->failed));
    hh_http_stop(m->http);
    m->http = NULL;
    atomic_store(&m->done, 1);
    return NULL;
}

int hh_manager_wait(hh_manager *m, double timeout) {
    if (!m) return HH_ERR_INVALID;
    if (!atomic_load(&m->started)) return HH_OK;
    double until = hh_mono() + timeout;
    while (!atomic_load(&m->done)) {
        if (timeout >= 0 && hh_mono() >= until) return HH_ERR_STATE;
        hh_sleep(0.02);
    }
    if (m->supervisor_started) {
        pthread_join(m->supervisor_thread, NULL);
        m->supervisor_started = 0;
    }
    return atomic_load(&m->start_error);
}

void hh_manager_fill_stats(hh_manager *m, hh_manager_stats *out) {
    memset(out, 0, sizeof(*out));
    hh_strlcpy(out->identity, m->identity, sizeof(out->identity));
    out->started_at = m->started_at;
    out->concurrency = m->opts.concurrency;
    out->busy = atomic_load(&m->busy);
    out->quiet = atomic_load(&m->quiet);
    out->stopping = atomic_load(&m->stopping);
    out->processed = atomic_load(&m->processed);
    out->failed = atomic_load(&m->failed);
    out->recovered = atomic_load(&m->recovered);
    out->lease_lost = atomic_load(&m->lease_lost);
    out->reconciled = atomic_load(&m->reconciled);
    out->nqueues = m->nqueues;
    size_t shown = m->nqueues < HH_MAX_QUEUES ? m->nqueues : HH_MAX_QUEUES; /* see hiredhand.h */
    for (size_t i = 0; i < shown; i++) {
        hh_strlcpy(out->queues[i].name, m->queues[i], sizeof(out->queues[i].name));
        out->queues[i].fetched = atomic_load(&m->fetched[i]);
    }
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < shown; i++) {
        out->queues[i].size = m->queue_size[i];
        out->queues[i].latency = m->queue_latency[i];
    }
    out->heartbeat_last_pushed_at = m->heartbeat_last_pushed_at;
    hh_strlcpy(out->heartbeat_last_error, m->heartbeat_last_error, sizeof(out->heartbeat_last_error));
    out->redis_connected = m->redis_connected;
    pthread_mutex_unlock(&m->lock);
}

int hh_manager_get_stats(hh_manager *m, hh_manager_stats *out) {
    if (!m || !out) return HH_ERR_INVALID;
    hh_manager_fill_stats(m, out);
    return HH_OK;
}
