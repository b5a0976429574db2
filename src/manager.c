/* manager.c -- the embeddable worker: options, and the lifecycle that
 * drives the worker threads (processor.c), heartbeat.c, scheduler.c and
 * recovery.c: create, start, stats, free, as Sidekiq's launcher does
 * (docs/design.md). Handlers and middleware are registry.c's; quiet, stop
 * with a grace period and hard-shutdown push-back are shutdown.c's.
 * It fills the one read-only context every file it drives reads (hh__ctx,
 * context.h: identity, queues, options, flags, counters), once, and answers
 * the loops' one upward callback (manager_signal); each loop's env
 * (hh__processor_env, hh__fetch_env, hh__finish_env, hh__lease_env,
 * hh__pickup_env, hh__heartbeat_env, hh__cron_env, hh__recovery_env,
 * hh__http_source) holds only its own state. It wakes its threads through
 * wake.h. Keys: only through the files it drives, plus
 * INFO at start. */
#include "manager.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "heartbeat.h"
#include "processor.h"
#include "recovery.h"
#include "scheduler.h"
#include "fetch.h"
#include "http.h"
#include "metrics.h"
#include "options.h"
#include "lease.h"
#include "pickup.h"
#include "abi.h"
#include "error.h"

/* Logs why a name is refused (hh_name_check's rule); 0 when it is fine. */
static int bad_name(hh_manager *m, hh_name_kind kind, const char *name) {
    char why[512];
    if (hh_name_check(kind, name, why, sizeof(why)) == HH_OK) return 0;
    hh__log(&m->log, HH_LOG_ERROR, "%s", why);
    return 1;
}

static void free_strv(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

void hh_manager_free(hh_manager *m) {
    if (!m) return;
    if (atomic_load(&m->started) && !atomic_load(&m->flags.done)) {
        hh_manager_stop(m);
        hh_manager_wait(m, -1);
    }
    if (atomic_load(&m->detached)) {
        hh__log(&m->log, HH_LOG_WARN,
                "%d threads still running after the stop (in a handler or a Redis call): manager not freed",
                atomic_load(&m->detached));
        return;
    }
    for (int i = 0; m->procs && i < m->opts.concurrency; i++) {
        hh__processor *p = &m->procs[i];
        hh__conn_close(&p->conn);
        pthread_mutex_destroy(&p->mu);
    }
    free(m->procs);
    hh__lease_free(m->lease_env.lease);
    hh__fetcher_free(m->fetch_env.fetcher);
    hh__buffer_free(m->buffer);
    hh__acks_free(m->finish_env.acks);
    hh__pickup_free(&m->pickup_env);
    for (size_t i = 0; i < m->nqueues; i++) {
        if (m->queue_keys) sdsfree(m->queue_keys[i]);
        if (m->inprog_keys) sdsfree(m->inprog_keys[i]);
    }
    free(m->queue_keys);
    free(m->inprog_keys);
    free_strv(m->queues, m->nqueues);
    free(m->weights);
    free(m->counters.fetched);
    hh__board_destroy(&m->board);
    hh__metrics_free(m->metrics);
    hh__job_metrics_free(m->job_metrics);
    free((char *)m->opts.http_bind);
    free((char *)m->opts.http_token);
    size_t nl = 0;
    while (m->labels && m->labels[nl]) nl++;
    free_strv(m->labels, nl);
    free(m->tag);
    free(m->version);
    free_strv(m->cron_ns, m->ncron_ns);
    for (size_t i = 0; i < m->nhandlers; i++) free(m->handlers[i].klass);
    free(m->handlers);
    free(m->middleware);
    hh__keys_free(&m->keys);
    hh__redis_config_free(&m->cfg);
    pthread_mutex_destroy(&m->lock);
    hh__batch_destroy(&m->batch);
    hh__wake_destroy(&m->wake);
    free(m);
}

/* Fields an embedder left zero (or negative) take their defaults. */
static void apply_defaults(hh_manager *m) {
    if (m->opts.max_retries < 0) m->opts.max_retries = 25;
    if (m->opts.dead_max_jobs <= 0) m->opts.dead_max_jobs = 10000;
    if (m->opts.dead_timeout <= 0) m->opts.dead_timeout = 15552000;
    if (m->opts.recovery_interval <= 0) m->opts.recovery_interval = 60;
    if (m->opts.liveness_max_age <= 0) m->opts.liveness_max_age = 30;
}

/* sidekiq-cron's namespaces to poll; "default" (its own default) when
 * none is given. */
static int copy_cron_namespaces(hh_manager *m, const hh_manager_options *opts) {
    size_t n = opts->cron_namespaces && opts->ncron_namespaces ? opts->ncron_namespaces : 1;
    m->cron_ns = calloc(n, sizeof(char *));
    if (!m->cron_ns) return hh__fail(HH_ERR_NOMEM, "out of memory");
    m->ncron_ns = n;
    for (size_t i = 0; i < n; i++)
        if (!(m->cron_ns[i] =
                  strdup(opts->cron_namespaces && opts->ncron_namespaces ? opts->cron_namespaces[i] : "default")))
            return hh__fail(HH_ERR_NOMEM, "out of memory");
    return HH_OK;
}

/* The queues, in configuration order, repeated names merged; "default"
 * when none is given. Their per-queue counters start here too. */
static int copy_queues(hh_manager *m, const hh_manager_options *opts) {
    size_t nq = opts->nqueues ? opts->nqueues : 1;
    m->queues = calloc(nq, sizeof(char *));
    m->weights = calloc(nq, sizeof(int));
    m->counters.fetched = calloc(nq, sizeof(*m->counters.fetched));
    if (!m->queues || !m->weights || !m->counters.fetched) return HH_ERR_NOMEM;
    if (!opts->nqueues) {
        if (!(m->queues[0] = strdup("default"))) return HH_ERR_NOMEM;
        m->nqueues = 1;
    }
    for (size_t i = 0; i < opts->nqueues; i++) {
        const hh_queue_weight *q = &opts->queues[i];
        size_t j = 0;
        /* queues[j] is never NULL below nqueues; the test tells the analyzer,
         * which loses nqueues across calls that take &m->lock or &m->log */
        while (j < m->nqueues && m->queues[j] && strcmp(m->queues[j], q->name)) j++;
        if (j < m->nqueues) { /* repeated "-q a -q a": Sidekiq adds the weights */
            m->weights[j] += q->weight;
            continue;
        }
        if (!(m->queues[m->nqueues] = strdup(q->name))) return HH_ERR_NOMEM;
        m->weights[m->nqueues++] = q->weight;
        if (q->weight > 0) m->weighted = 1;
    }
    if (m->weighted)
        for (size_t i = 0; i < m->nqueues; i++)
            if (m->weights[i] == 0)
                hh__log(&m->log, HH_LOG_WARN,
                        "queue %s has no weight while others do: it gets weight 1, as in Sidekiq (weight 0 "
                        "is no weight, not a paused queue)",
                        m->queues[i]);
    return HH_OK;
}

/* Our copies of the caller's strings (labels, tag, version, HTTP). */
static int copy_strings(hh_manager *m, const hh_manager_options *opts) {
    size_t nl = 0;
    while (opts->labels && opts->labels[nl]) nl++;
    m->labels = calloc(nl + 1, sizeof(char *));
    for (size_t i = 0; m->labels && i < nl; i++)
        if (!(m->labels[i] = strdup(opts->labels[i]))) return HH_ERR_NOMEM;
    m->tag = strdup(opts->tag ? opts->tag : "");
    m->version = strdup(opts->version ? opts->version : "6.4.1");
    if (!m->labels || !m->tag || !m->version) return HH_ERR_NOMEM;
    if (opts->http_bind && !(m->opts.http_bind = strdup(opts->http_bind))) return HH_ERR_NOMEM;
    if (opts->http_token && !(m->opts.http_token = strdup(opts->http_token))) return HH_ERR_NOMEM;
    return HH_OK;
}

/* The host name ($DYNO first) and the identity: the caller's, fixed, or
 * "<host>:<pid>:<12 hex>". */
static int make_identity(hh_manager *m, const hh_manager_options *opts) {
    const char *dyno = getenv("DYNO");
    if (dyno && *dyno) hh__strlcpy(m->hostname, dyno, sizeof(m->hostname));
    else if (gethostname(m->hostname, sizeof(m->hostname) - 1) != 0)
        hh__strlcpy(m->hostname, "localhost", sizeof(m->hostname));
    if (opts->identity && *opts->identity) {
        hh__strlcpy(m->identity, opts->identity, sizeof(m->identity));
        m->fixed_identity = 1;
        return HH_OK;
    }
    char nonce[13];
    if (hh__random_hex(nonce, 6) != 0)
        return hh__fail(HH_ERR_INVALID, "no random bytes for the identity (getrandom failed)");
    snprintf(m->identity, sizeof(m->identity), "%s:%d:%s", m->hostname, (int)getpid(), nonce);
    if (bad_name(m, HH_NAME_IDENTITY, m->identity)) { /* a host named "queue", say */
        hh__fail(HH_ERR_INVALID, "the identity %s made from the host name is refused: give one (--identity)",
                 m->identity);
        hh__log(&m->log, HH_LOG_ERROR, "%s", hh_last_error());
        return HH_ERR_INVALID;
    }
    return HH_OK;
}

/* m->opts keeps no pointer into the caller's memory: ours or NULL. */
static void forget_caller_pointers(hh_manager *m) {
    m->opts.identity = m->identity;
    m->opts.tag = m->tag;
    m->opts.version = m->version;
    m->opts.queues = NULL;
    m->opts.labels = NULL;
    m->opts.cron_namespaces = NULL; /* m->cron_ns is what is used */
    m->opts.redis.url = NULL;
    m->opts.redis.ns = NULL;
    m->opts.redis.password = NULL; /* the copy in m->cfg is what is used */
}

/* queue:<q> and this identity's in-progress list of each queue. */
static int make_queue_keys(hh_manager *m) {
    m->queue_keys = calloc(m->nqueues, sizeof(sds));
    m->inprog_keys = calloc(m->nqueues, sizeof(sds));
    if (!m->queue_keys || !m->inprog_keys) return HH_ERR_NOMEM;
    for (size_t i = 0; i < m->nqueues; i++) {
        m->queue_keys[i] = hh__key_queue(&m->keys, m->queues[i]);
        m->inprog_keys[i] = hh__key_inprogress(&m->keys, m->identity, m->queues[i]);
        if (!m->queue_keys[i] || !m->inprog_keys[i]) return HH_ERR_NOMEM;
    }
    return HH_OK;
}

static void heartbeat_hook(hh_manager *m, int ok);

/* The one way up from the loops (hh__ctx.signal): what a loop asks of the
 * manager, done as the public call of the same name does. */
static void manager_signal(void *udata, hh__signal what) {
    hh_manager *m = udata;
    switch (what) {
    case HH_SIGNAL_QUIET: hh_manager_quiet(m); break;
    case HH_SIGNAL_STOP: hh_manager_stop(m); break;
    case HH_SIGNAL_DUMP: hh_manager_dump(m); break;
    case HH_SIGNAL_BEAT_OK: heartbeat_hook(m, 1); break;
    case HH_SIGNAL_BEAT_FAILED: heartbeat_hook(m, 0); break;
    }
}

/* The context every loop reads (context.h), filled once: after the queue
 * keys, before any loop's env points at it. */
static void fill_ctx(hh_manager *m) {
    hh__ctx *c = &m->ctx;
    *c = (hh__ctx){.keys = &m->keys,
                   .log = &m->log,
                   .cfg = &m->cfg,
                   .identity = m->identity,
                   .hostname = m->hostname,
                   .tag = m->tag,
                   .version = m->version,
                   .labels = m->labels,
                   .fixed_identity = m->fixed_identity,
                   .nqueues = m->nqueues,
                   .queues = m->queues,
                   .queue_keys = m->queue_keys,
                   .inprog_keys = m->inprog_keys,
                   .weights = m->weights,
                   .weighted = m->weighted,
                   .flags = &m->flags,
                   .counters = &m->counters,
                   .wake = &m->wake,
                   .signal = manager_signal,
                   .signal_udata = m};
    c->opts.concurrency = m->opts.concurrency;
    c->opts.fetch = m->opts.fetch;
    c->opts.timestamps = m->opts.redis.timestamps;
    c->opts.heartbeat_interval = m->opts.heartbeat_interval;
    c->opts.recovery_interval = m->opts.recovery_interval;
    c->opts.poll_interval_average = m->opts.poll_interval_average;
    c->opts.average_scheduled_poll_interval = m->opts.average_scheduled_poll_interval;
    c->opts.dead_timeout = m->opts.dead_timeout;
    c->opts.dead_max_jobs = m->opts.dead_max_jobs;
    c->opts.max_retries = m->opts.max_retries;
    c->opts.max_recoveries = m->opts.max_recoveries;
    c->opts.lease_lost = m->opts.lease_lost;
    c->opts.cron_poll_interval = m->opts.cron_poll_interval;
}

/* What pickup.c sees of m (its .buffer is set with the buffer, below). */
static void pickup_env(hh_manager *m) { m->pickup_env = (hh__pickup_env){.ctx = &m->ctx}; }

/* The fetchers' shared state: fetched-but-unclaimed jobs, their sleepers
 * and the queue marks (buffer.c), idle waiters (fetch.c); the acks to send
 * (finish.c). */
static int alloc_fetch_state(hh_manager *m) {
    /* A thread fetches only while the buffer and the fetches in flight do
     * not cover the idle threads, so the buffer holds at most one job per
     * thread plus the batches in flight; twice that is room to spare (and
     * the fetcher never asks for more than fits). */
    size_t c = (size_t)m->opts.concurrency;
    if (!(m->buffer = hh__buffer_new(2 * (c + HH_FETCH_BATCH_MAX), m->nqueues))) return HH_ERR_NOMEM;
    m->pickup_env.buffer = m->buffer;
    hh__finish_env *fe = &m->finish_env;
    *fe = (hh__finish_env){.ctx = &m->ctx, .lease = &m->lease_env};
    if (!(fe->acks = hh__acks_new((size_t)m->opts.concurrency + HH_FETCH_BATCH_MAX))) return HH_ERR_NOMEM;
    hh__fetch_env *e = &m->fetch_env;
    *e = (hh__fetch_env){.ctx = &m->ctx,
                         .lease = &m->lease_env,
                         .finish = &m->finish_env,
                         .buffer = m->buffer,
                         .pickup = &m->pickup_env};
    return (e->fetcher = hh__fetcher_new(e)) ? HH_OK : HH_ERR_NOMEM;
}

/* What lease.c sees of m (lease.h); the fetcher's buffer directly. */
static void lease_env(hh_manager *m) {
    hh__lease_env *e = &m->lease_env;
    *e = (hh__lease_env){.ctx = &m->ctx, .buffer = m->buffer};
}

/* One processor (worker thread state, not started) per unit of concurrency. */
static int init_processors(hh_manager *m) {
    m->procs = calloc((size_t)m->opts.concurrency, sizeof(hh__processor));
    if (!m->procs) return HH_ERR_NOMEM;
    m->ctx.procs = m->procs;
    for (int i = 0; i < m->opts.concurrency; i++) {
        hh__processor *p = &m->procs[i];
        p->env = &m->processor_env;
        p->fetch = &m->fetch_env;
        p->index = i;
        pthread_mutex_init(&p->mu, NULL);
        /* A short base-36 tid, unique in the process, like Sidekiq's. */
        unsigned long v = ((unsigned long)getpid() * 2654435761ul) ^ ((unsigned long)(i + 1) * 40503ul);
        char tmp[16];
        int k = 0;
        do {
            tmp[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
            v /= 36;
        } while (v && k < 6);
        for (int j = 0; j < k; j++) p->tid[j] = tmp[k - 1 - j];
        p->tid[k] = '\0';
        hh__rng_seed(&p->rng);
        hh__conn_init(&p->conn, &m->cfg, &m->log, "fetch", &m->flags.giving_up);
    }
    return HH_OK;
}

/* The manager with the caller's options and logger, nothing else yet. */
static hh_manager *manager_alloc(const hh_manager_options *opts) {
    hh_manager *m = calloc(1, sizeof(*m));
    if (!m) return NULL;
    if (hh__wake_init(&m->wake) != 0) {
        free(m);
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    m->opts = *opts;
    m->opts.http_bind = NULL; /* our copies, made later: never free the caller's on an early failure */
    m->opts.http_token = NULL;
    m->log.fn = opts->log;
    m->log.udata = opts->log_udata;
    m->log.level = opts->log_level;
    hh__batch_init(&m->batch, opts->batch_jobs, &m->log);
    return m;
}

hh_manager *hh_manager_new(const hh_manager_options *caller_opts, int *err) {
    hh_manager_options copy; /* the caller's struct_size bytes on the defaults */
    hh__manager_options_read(&copy, caller_opts);
    const hh_manager_options *opts = &copy;
    hh_manager *m = manager_alloc(opts);
    if (!m) {
        if (err) *err = hh__fail(HH_ERR_NOMEM, "out of memory creating the manager");
        return NULL;
    }
    char msg[512];
    int e = hh__options_check(opts, 0, msg, sizeof(msg)); /* the reason is in hh_last_error() */
    if (e != HH_OK) hh__log(&m->log, HH_LOG_ERROR, "%s", msg);
    if (e == HH_OK && hh__redis_config_parse(&m->cfg, &opts->redis, msg, sizeof(msg)) != 0)
        e = hh__fail(HH_ERR_INVALID, "%s", msg);
    if (e == HH_OK) {
        hh__keys_init(&m->keys, opts->redis.ns);
        apply_defaults(m);
        e = copy_queues(m, opts);
    }
    if (e == HH_OK && hh__board_init(&m->board, m->nqueues) != 0) e = HH_ERR_NOMEM;
    if (e == HH_OK) e = copy_strings(m, opts);
    if (e == HH_OK) e = copy_cron_namespaces(m, opts);
    if (e == HH_OK) e = make_identity(m, opts);
    if (e == HH_OK) {
        forget_caller_pointers(m);
        e = make_queue_keys(m);
    }
    if (e == HH_OK) fill_ctx(m);
    if (e == HH_OK) pickup_env(m);
    if (e == HH_OK) e = init_processors(m);
    if (e == HH_OK) e = alloc_fetch_state(m);
    if (e == HH_OK) lease_env(m);
    if (e == HH_OK && !(m->lease_env.lease = hh__lease_new(&m->lease_env))) e = HH_ERR_NOMEM;
    if (e == HH_OK && m->opts.job_metrics &&
        !(m->job_metrics = hh__job_metrics_new(&m->keys, &m->log, m->opts.job_metrics)))
        e = HH_ERR_NOMEM;
    if (e == HH_ERR_NOMEM) hh__fail(e, "out of memory creating the manager");
    if (err) *err = e;
    if (e == HH_OK) return m;
    hh_manager_free(m);
    return NULL;
}

const char *hh_manager_identity(const hh_manager *m) { return m->identity; }

int hh_manager_detached(const hh_manager *m) { return m ? atomic_load(&m->detached) : 0; }

int hh_manager_set_unready(hh_manager *m, const char *source, const char *reason) {
    if (!m || !source || !source[0])
        return hh__fail(HH_ERR_INVALID, "set_unready: %s", !m ? "the manager is missing" : "the source is missing");
    int rc = HH_OK;
    pthread_mutex_lock(&m->lock);
    int slot = -1, free_slot = -1;
    for (int i = 0; i < HH_MANAGER_UNREADY_MAX; i++) {
        /* compared as stored: a long source is cut the same way each time */
        if (m->unready[i].source[0] && strncmp(m->unready[i].source, source, sizeof(m->unready[i].source) - 1) == 0)
            slot = i;
        else if (!m->unready[i].source[0] && free_slot < 0) free_slot = i;
    }
    if (!reason) {
        if (slot >= 0) m->unready[slot].source[0] = '\0';
    } else if (slot < 0 && free_slot < 0) {
        rc = HH_ERR_NOMEM;
    } else {
        if (slot < 0) {
            slot = free_slot;
            hh__strlcpy(m->unready[slot].source, source, sizeof(m->unready[slot].source));
            m->unready[slot].seq = ++m->unready_seq;
        }
        hh__strlcpy(m->unready[slot].reason, reason, sizeof(m->unready[slot].reason));
    }
    pthread_mutex_unlock(&m->lock);
    if (rc == HH_ERR_NOMEM)
        return hh__fail(rc, "set_unready: %d sources already hold a problem; '%s' not recorded", HH_MANAGER_UNREADY_MAX,
                        source);
    return HH_OK;
}

void hh_manager_log(hh_manager *m, hh_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hh__vlog(&m->log, level, fmt, ap);
    va_end(ap);
}

/* Sidekiq warns when Redis may evict keys: eviction silently drops jobs. */
static void check_redis(hh_manager *m, hh__conn *c) {
    redisReply *r = hh__conn_cmd(c, "INFO memory");
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "maxmemory_policy:");
        if (p && strncmp(p + 17, "noeviction", 10) != 0)
            hh__log(&m->log, HH_LOG_WARN, "Redis maxmemory_policy is not noeviction: Redis may evict jobs");
    }
    if (r) freeReplyObject(r);
    int version = hh__conn_version(c);
    if (version && version < 400)
        hh__log(&m->log, HH_LOG_WARN, "Redis %d.%d is older than 4.0, which Sidekiq requires", version / 100,
                version % 100);
}

/* What the worker threads see of m (processor.h): filled at start, once
 * the handlers, the middleware and the metrics are final. */
static void processor_env(hh_manager *m) {
    hh__processor_env *e = &m->processor_env;
    *e = (hh__processor_env){.ctx = &m->ctx,
                             .handlers = m->handlers,
                             .nhandlers = m->nhandlers,
                             .default_handler = m->default_handler,
                             .middleware = m->middleware,
                             .nmiddleware = m->nmiddleware,
                             .metrics = m->metrics,
                             .job_metrics = m->job_metrics,
                             .batch = &m->batch,
                             .lease = &m->lease_env,
                             .fetch = &m->fetch_env};
}

/* The HTTP server's one way up (http.h): the stats snapshot. */
static void http_stats(void *udata, hh_manager_stats *out) { hh__manager_fill_stats(udata, out); }

int hh_manager_start(hh_manager *m) {
    if (!m) return hh__fail(HH_ERR_INVALID, "start: the manager is missing");
    int expected = 0;
    if (!atomic_compare_exchange_strong(&m->started, &expected, 1))
        return hh__fail(HH_ERR_STATE, "start: the manager was started already");
    m->ctx.started_at = hh__now();
    if (m->register_error) { /* e.g. a plug-in whose init went on after it */
        hh__log(&m->log, HH_LOG_ERROR, "not starting: a handler registration failed: %s", m->register_why);
        atomic_store(&m->flags.done, 1);
        return hh__fail(HH_ERR_INVALID, "not starting: a handler registration failed: %s", m->register_why);
    }
    if (m->opts.http_bind) {
        char err[256];
        hh__http_source src = {http_stats, m, &m->log, NULL};
        if (!(m->metrics = hh__metrics_new())) {
            atomic_store(&m->flags.done, 1);
            return hh__fail(HH_ERR_NOMEM, "http: out of memory");
        }
        src.metrics = m->metrics;
        if (!(m->http = hh__http_start(&src, m->opts.http_bind, m->opts.liveness_max_age, m->opts.http_token, err,
                                       sizeof(err)))) {
            hh__log(&m->log, HH_LOG_ERROR, "http: %s", err);
            atomic_store(&m->flags.done, 1);
            return hh__fail(HH_ERR_INVALID, "http: %s", err);
        }
    }
    hh__manager_recovery_env(m, &m->recovery_env);
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "start", NULL);
    /* One attempt now: Redis being down is not fatal, the threads reconnect;
     * Redis refusing the password or db is, since retrying cannot help. */
    if (hh__conn_ready(&c) != 0 && hh__redis_refused(&m->cfg)) {
        hh__http_stop(m->http);
        m->http = NULL;
        atomic_store(&m->flags.done, 1);
        return hh__fail(HH_ERR_REFUSED, "redis %s refused the connection settings: %s", m->cfg.display,
                        hh__conn_last_error(&c));
    }
    if (hh__conn_connected(&c)) {
        check_redis(m, &c);
        int rc = hh__recovery_boot(&m->recovery_env, &c);
        if (rc == HH_OK) atomic_store(&m->flags.booted, 1); /* no thread waits yet */
        if (rc == HH_ERR_EXISTS) {
            hh__log(&m->log, HH_LOG_ERROR, "identity %s is live in another process; refusing to start", m->identity);
            hh__conn_close(&c);
            hh__http_stop(m->http);
            m->http = NULL;
            atomic_store(&m->flags.done, 1);
            return hh__fail(HH_ERR_EXISTS, "identity %s is live in another process", m->identity);
        }
    }
    hh__conn_close(&c);
    /* A fixed identity must pass its checks (not live elsewhere, leftovers
     * pushed back) before it fetches or beats: with Redis down now, the
     * recovery thread does them once Redis answers. A random identity is
     * new, so nothing can hold it. */
    if (!m->fixed_identity || m->opts.fetch == HH_FETCH_BASIC) atomic_store(&m->flags.booted, 1);
    if (!atomic_load(&m->flags.booted))
        hh__log(&m->log, HH_LOG_WARN, "Redis unreachable: identity %s checks and recovery wait for it", m->identity);
    hh__log(&m->log, HH_LOG_INFO, "hiredhand %s starting: identity=%s concurrency=%d fetch=%s redis=%s", HH_VERSION,
            m->identity, m->opts.concurrency, m->opts.fetch == HH_FETCH_BASIC ? "basic" : "reliable", m->cfg.display);
    hh__pickup_start(&m->pickup_env); /* on failure idle threads fall back, logged */
    processor_env(m);
    int failed = 0;
    for (int i = 0; i < m->opts.concurrency && !failed; i++) {
        failed = pthread_create(&m->procs[i].thread, NULL, hh__processor_main, &m->procs[i]) != 0;
        if (!failed) m->procs[i].thread_started = 1;
    }
    hh__manager_heartbeat_env(m, &m->heartbeat_env);
    if (!failed) failed = pthread_create(&m->heartbeat_thread, NULL, hh__heartbeat_main, &m->heartbeat_env) != 0;
    if (!failed) m->heartbeat_started = 1;
    if (!failed) failed = pthread_create(&m->scheduler_thread, NULL, hh__scheduler_main, (void *)&m->ctx) != 0;
    if (!failed) m->scheduler_started = 1;
    hh__manager_cron_env(m, &m->cron_env);
    if (!failed && m->opts.cron_poll_interval > 0) {
        failed = pthread_create(&m->cron_thread, NULL, hh__cron_main, &m->cron_env) != 0;
        if (!failed) m->cron_started = 1;
    }
    if (!failed && m->opts.fetch == HH_FETCH_RELIABLE) {
        failed = pthread_create(&m->recovery_thread, NULL, hh__recovery_main, &m->recovery_env) != 0;
        if (!failed) m->recovery_started = 1;
    }
    if (!failed) failed = pthread_create(&m->supervisor_thread, NULL, hh__manager_supervisor_main, m) != 0;
    if (!failed) m->supervisor_started = 1;
    if (failed) {
        hh__log(&m->log, HH_LOG_ERROR, "cannot create threads");
        hh_manager_stop(m);
        if (!m->supervisor_started) { /* stop what did start, here */
            atomic_store(&m->flags.quiet, 1);
            atomic_store(&m->flags.beats_off, 1);
            atomic_store(&m->flags.done, 1);
            hh__wake_all(&m->wake); /* no supervisor relays the stop's poke */
        }
        return hh__fail(HH_ERR_IO, "cannot create the worker threads (pthread_create failed)");
    }
    return HH_OK;
}

/* HH_TEST_CLOCK_SKEW_MS: milliseconds added to the cron poller's clock.
 * For tests of a fleet whose clocks disagree; documented as such. */
static double test_clock_skew(void) {
    const char *s = getenv("HH_TEST_CLOCK_SKEW_MS");
    return s && *s ? strtod(s, NULL) / 1000.0 : 0;
}

void hh__manager_cron_env(hh_manager *m, hh__cron_env *out) {
    *out = (hh__cron_env){.ctx = &m->ctx,
                          .namespaces = (const char *const *)m->cron_ns,
                          .nnamespaces = m->ncron_ns,
                          .clock_skew = test_clock_skew(),
                          .counts = &m->cron_counts};
}

/* The user's heartbeat hook (hh_manager_on_heartbeat), after each beat,
 * with the stats as of now. */
static void heartbeat_hook(hh_manager *m, int ok) {
    if (!m->hook) return;
    hh_queue_stats qs[HH_MAX_QUEUES];
    hh_manager_stats st = {.queues = qs, .queues_cap = HH_MAX_QUEUES};
    hh__manager_fill_stats(m, &st);
    m->hook(ok, &st, m->hook_udata);
}

void hh__manager_heartbeat_env(hh_manager *m, hh__heartbeat_env *out) {
    *out = (hh__heartbeat_env){.ctx = &m->ctx,
                               .reads_queues = m->http != NULL || m->hook != NULL,
                               .job_metrics = m->job_metrics,
                               .metrics = m->http ? m->metrics : NULL,
                               .board = &m->board,
                               .lease = &m->lease_env};
}

void hh__manager_recovery_env(hh_manager *m, hh__recovery_env *out) {
    *out = (hh__recovery_env){.ctx = &m->ctx, .lease = &m->lease_env};
}

void hh__manager_fill_stats(hh_manager *m, hh_manager_stats *out) {
    hh_queue_stats *qs = out->queues;
    size_t cap = qs ? out->queues_cap : 0;
    memset(out, 0, sizeof(*out));
    out->struct_size = sizeof(*out);
    out->queues = qs;
    out->queues_cap = cap;
    hh__strlcpy(out->identity, m->identity, sizeof(out->identity));
    out->started_at = m->ctx.started_at;
    out->concurrency = m->opts.concurrency;
    out->busy = atomic_load(&m->counters.busy);
    out->quiet = atomic_load(&m->flags.quiet);
    out->stopping = atomic_load(&m->flags.stopping);
    out->processed = atomic_load(&m->counters.processed);
    out->failed = atomic_load(&m->counters.failed);
    out->recovered = atomic_load(&m->counters.recovered);
    out->lease_lost = atomic_load(&m->counters.lease_lost);
    out->reconciled = atomic_load(&m->counters.reconciled);
    out->outcomes_refused = atomic_load(&m->counters.outcomes_refused);
    out->not_pushed_back = atomic_load(&m->counters.not_pushed_back);
    out->batch_jobs = atomic_load(&m->batch.jobs);
    out->cron_jobs = atomic_load(&m->cron_counts.jobs);
    out->cron_disabled = atomic_load(&m->cron_counts.disabled);
    out->cron_broken = atomic_load(&m->cron_counts.broken);
    out->cron_next = (int64_t)atomic_load(&m->cron_counts.next);
    out->cron_enqueued = atomic_load(&m->cron_counts.pushed);
    out->nqueues = m->nqueues;
    size_t shown = m->nqueues < cap ? m->nqueues : cap;
    for (size_t i = 0; i < shown; i++) {
        out->queues[i].name = m->queues[i];
        out->queues[i].fetched = atomic_load(&m->counters.fetched[i]);
    }
    pthread_mutex_lock(&m->board.mu); /* what the beats learned (heartbeat.h) */
    for (size_t i = 0; i < shown; i++) {
        out->queues[i].size = m->board.queue_size[i];
        out->queues[i].latency = m->board.queue_latency[i];
    }
    out->heartbeat_last_pushed_at = m->board.last_pushed_at;
    hh__strlcpy(out->heartbeat_last_error, m->board.last_error, sizeof(out->heartbeat_last_error));
    out->redis_connected = m->board.connected;
    pthread_mutex_unlock(&m->board.mu);
    pthread_mutex_lock(&m->lock);
    int oldest = -1;
    for (int i = 0; i < HH_MANAGER_UNREADY_MAX; i++)
        if (m->unready[i].source[0] && (oldest < 0 || m->unready[i].seq < m->unready[oldest].seq)) oldest = i;
    if (oldest >= 0)
        snprintf(out->unready, sizeof(out->unready), "%s: %s", m->unready[oldest].source, m->unready[oldest].reason);
    pthread_mutex_unlock(&m->lock);
    /* set by the first call of any connection that fails to reach Redis,
     * cleared by one that goes through (redis.c): fresher than a beat */
    out->redis_reachable = atomic_load(&m->cfg.unreachable) == 0;
}

int hh_manager_get_stats(hh_manager *m, hh_manager_stats *out) {
    if (!m || !out)
        return hh__fail(HH_ERR_INVALID, "get_stats: %s is missing", !m ? "the manager" : "the output struct");
    hh_manager_stats full; /* this library's layout; the caller's may be shorter */
    memset(&full, 0, sizeof(full));
    full.queues = out->queues; /* both in the first layout: always the caller's */
    full.queues_cap = out->queues_cap;
    hh__manager_fill_stats(m, &full);
    hh__manager_stats_write(out, &full);
    return HH_OK;
}
