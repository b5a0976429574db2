/* manager.c -- the embeddable worker: options, handlers, middleware, and
 * the lifecycle that drives the worker threads (processor.c), heartbeat.c,
 * scheduler.c and recovery.c: start, quiet, stop with a grace period and
 * hard-shutdown push-back, as Sidekiq's launcher does (docs/design.md).
 * It hands every file it drives a narrow view of itself (hh_processor_env,
 * hh_fetch_env, hh_lease_env, hh_pickup_env, hh_heartbeat_env,
 * hh_scheduler_env, hh_recovery_env, hh_http_source) and wakes its
 * threads through wake.h. Keys: only through the files it drives (push back
 * and acks through fetch.c, unregistering through heartbeat.c), plus INFO
 * at start. */
#include "manager.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/auxv.h>
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
#include "metrics.h"
#include "options.h"
#include "lease.h"
#include "pickup.h"
#include "abi.h"
#include "error.h"

/* The Redis work after the grace period (push back, acks, leaving the Busy
 * page) gets one command timeout, at most this long: with -t 25 a stop ends
 * within Kubernetes' default 30 s grace whatever Redis does. */
#define HH_STOP_BUDGET_MAX 3.0

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
        hh_log(&m->log, HH_LOG_WARN,
               "%d threads still running after the stop (in a handler or a Redis call): manager not freed",
               atomic_load(&m->detached));
        return;
    }
    for (int i = 0; m->procs && i < m->opts.concurrency; i++) {
        hh_processor *p = &m->procs[i];
        hh_conn_close(&p->conn);
        pthread_mutex_destroy(&p->mu);
    }
    free(m->procs);
    hh_lease_free(m->lease_env.lease);
    hh_fetcher_free(m->fetch_env.fetcher);
    hh_pickup_free(&m->pickup_env);
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
    hh_metrics_free(m->metrics);
    hh_job_metrics_free(m->job_metrics);
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
    hh_keys_free(&m->keys);
    hh_redis_config_free(&m->cfg);
    pthread_mutex_destroy(&m->lock);
    hh_batch_destroy(&m->batch);
    hh_wake_destroy(&m->wake);
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
    if (!m->cron_ns) return hh_fail(HH_ERR_NOMEM, "out of memory");
    m->ncron_ns = n;
    for (size_t i = 0; i < n; i++)
        if (!(m->cron_ns[i] =
                  strdup(opts->cron_namespaces && opts->ncron_namespaces ? opts->cron_namespaces[i] : "default")))
            return hh_fail(HH_ERR_NOMEM, "out of memory");
    return HH_OK;
}

/* The queues, in configuration order, repeated names merged; "default"
 * when none is given. Their per-queue counters start here too. */
static int copy_queues(hh_manager *m, const hh_manager_options *opts) {
    size_t nq = opts->nqueues ? opts->nqueues : 1;
    m->queues = calloc(nq, sizeof(char *));
    m->weights = calloc(nq, sizeof(int));
    m->fetched = calloc(nq, sizeof(*m->fetched));
    m->queue_size = calloc(nq, sizeof(*m->queue_size));
    m->queue_latency = calloc(nq, sizeof(*m->queue_latency));
    if (!m->queues || !m->weights || !m->fetched || !m->queue_size || !m->queue_latency) return HH_ERR_NOMEM;
    for (size_t i = 0; i < nq; i++) m->queue_size[i] = -1;
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
                hh_log(&m->log, HH_LOG_WARN,
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
    if (dyno && *dyno) hh_strlcpy(m->hostname, dyno, sizeof(m->hostname));
    else if (gethostname(m->hostname, sizeof(m->hostname) - 1) != 0)
        hh_strlcpy(m->hostname, "localhost", sizeof(m->hostname));
    if (opts->identity && *opts->identity) {
        hh_strlcpy(m->identity, opts->identity, sizeof(m->identity));
        m->fixed_identity = 1;
        return HH_OK;
    }
    char nonce[13];
    if (hh_random_hex(nonce, 6) != 0)
        return hh_fail(HH_ERR_INVALID, "no random bytes for the identity (getrandom failed)");
    snprintf(m->identity, sizeof(m->identity), "%s:%d:%s", m->hostname, (int)getpid(), nonce);
    if (bad_name(m, HH_NAME_IDENTITY, m->identity)) { /* a host named "queue", say */
        hh_fail(HH_ERR_INVALID, "the identity %s made from the host name is refused: give one (--identity)",
                m->identity);
        hh_log(&m->log, HH_LOG_ERROR, "%s", hh_last_error());
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
        m->queue_keys[i] = hh_key_queue(&m->keys, m->queues[i]);
        m->inprog_keys[i] = hh_key_inprogress(&m->keys, m->identity, m->queues[i]);
        if (!m->queue_keys[i] || !m->inprog_keys[i]) return HH_ERR_NOMEM;
    }
    return HH_OK;
}

/* What pickup.c sees of m: a write to a queue goes on to fetch.c. */
static void pickup_queue_written(void *udata, size_t q) { hh_fetch_queue_written(udata, q); }
static void pickup_queues_written(void *udata) { hh_fetch_queues_written(udata); }
static void pickup_tracking(void *udata, int on) { hh_fetch_tracking(udata, on); }
static void pickup_env(hh_manager *m) {
    m->pickup_env = (hh_pickup_env){.keys = &m->keys,
                                    .cfg = &m->cfg,
                                    .log = &m->log,
                                    .nqueues = m->nqueues,
                                    .queue_keys = m->queue_keys,
                                    .quiet = &m->quiet,
                                    .udata = &m->fetch_env,
                                    .queue_written = pickup_queue_written,
                                    .queues_written = pickup_queues_written,
                                    .tracking = pickup_tracking};
}

/* The fetchers' shared state: fetched-but-unclaimed jobs, idle waiters,
 * acks to send (fetch.c). */
static int alloc_fetch_state(hh_manager *m) {
    hh_fetch_env *e = &m->fetch_env;
    *e = (hh_fetch_env){.keys = &m->keys,
                        .log = &m->log,
                        .identity = m->identity,
                        .nqueues = m->nqueues,
                        .queues = m->queues,
                        .queue_keys = m->queue_keys,
                        .inprog_keys = m->inprog_keys,
                        .weights = m->weights,
                        .weighted = m->weighted,
                        .quiet = &m->quiet,
                        .giving_up = &m->giving_up,
                        .fetched = m->fetched,
                        .not_pushed_back = &m->not_pushed_back,
                        .procs = m->procs,
                        .lease = &m->lease_env,
                        .pickup = &m->pickup_env};
    e->opts.concurrency = m->opts.concurrency;
    e->opts.fetch = m->opts.fetch;
    return (e->fetcher = hh_fetcher_new(e)) ? HH_OK : HH_ERR_NOMEM;
}

/* What lease.c sees of m (lease.h); the fetcher's buffer through fetch.c. */
static size_t lease_pending_each(void *udata, void (*fn)(const hh_fetched *, void *), void *arg) {
    return hh_fetch_pending_each(udata, fn, arg);
}
static int lease_pending_has(void *udata, const char *payload, uint64_t lease) {
    return hh_fetch_pending_has(udata, payload, lease);
}
static int lease_pending_drop(void *udata, const char *payload, uint64_t lease, hh_fetched *out) {
    return hh_fetch_pending_drop(udata, payload, lease, out);
}
static size_t lease_pending_cap(void *udata) { return hh_fetch_pending_cap(udata); }
static void lease_env(hh_manager *m) {
    hh_lease_env *e = &m->lease_env;
    *e = (hh_lease_env){.keys = &m->keys,
                        .log = &m->log,
                        .cfg = &m->cfg,
                        .identity = m->identity,
                        .nqueues = m->nqueues,
                        .queues = m->queues,
                        .queue_keys = m->queue_keys,
                        .inprog_keys = m->inprog_keys,
                        .quiet = &m->quiet,
                        .lease_lost = &m->lease_lost,
                        .reconciled = &m->reconciled,
                        .procs = m->procs,
                        .udata = &m->fetch_env,
                        .pending_each = lease_pending_each,
                        .pending_has = lease_pending_has,
                        .pending_drop = lease_pending_drop,
                        .pending_cap = lease_pending_cap};
    e->opts.concurrency = m->opts.concurrency;
    e->opts.fetch = m->opts.fetch;
    e->opts.heartbeat_interval = m->opts.heartbeat_interval;
    e->opts.recovery_interval = m->opts.recovery_interval;
    e->opts.lease_lost = m->opts.lease_lost;
}

/* One processor (worker thread state, not started) per unit of concurrency. */
static int init_processors(hh_manager *m) {
    m->procs = calloc((size_t)m->opts.concurrency, sizeof(hh_processor));
    if (!m->procs) return HH_ERR_NOMEM;
    for (int i = 0; i < m->opts.concurrency; i++) {
        hh_processor *p = &m->procs[i];
        p->m = &m->processor_env;
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
        hh_rng_seed(&p->rng);
        hh_conn_init(&p->conn, &m->cfg, &m->log, "fetch", &m->giving_up);
    }
    return HH_OK;
}

/* The manager with the caller's options and logger, nothing else yet. */
static hh_manager *manager_alloc(const hh_manager_options *opts) {
    hh_manager *m = calloc(1, sizeof(*m));
    if (!m) return NULL;
    if (hh_wake_init(&m->wake) != 0) {
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
    hh_batch_init(&m->batch, opts->batch_jobs, &m->log);
    return m;
}

hh_manager *hh_manager_new(const hh_manager_options *caller_opts, int *err) {
    hh_manager_options copy; /* the caller's struct_size bytes on the defaults */
    hh_manager_options_read(&copy, caller_opts);
    const hh_manager_options *opts = &copy;
    hh_manager *m = manager_alloc(opts);
    if (!m) {
        if (err) *err = hh_fail(HH_ERR_NOMEM, "out of memory creating the manager");
        return NULL;
    }
    char msg[512];
    int e = hh_options_check(opts, 0, msg, sizeof(msg)); /* the reason is in hh_last_error() */
    if (e != HH_OK) hh_log(&m->log, HH_LOG_ERROR, "%s", msg);
    if (e == HH_OK && hh_redis_config_parse(&m->cfg, &opts->redis, msg, sizeof(msg)) != 0)
        e = hh_fail(HH_ERR_INVALID, "%s", msg);
    if (e == HH_OK) {
        hh_keys_init(&m->keys, opts->redis.ns);
        apply_defaults(m);
        e = copy_queues(m, opts);
    }
    if (e == HH_OK) e = copy_strings(m, opts);
    if (e == HH_OK) e = copy_cron_namespaces(m, opts);
    if (e == HH_OK) e = make_identity(m, opts);
    if (e == HH_OK) {
        forget_caller_pointers(m);
        e = make_queue_keys(m);
    }
    if (e == HH_OK) pickup_env(m);
    if (e == HH_OK) e = init_processors(m);
    if (e == HH_OK) e = alloc_fetch_state(m);
    if (e == HH_OK) lease_env(m);
    if (e == HH_OK && !(m->lease_env.lease = hh_lease_new(&m->lease_env))) e = HH_ERR_NOMEM;
    if (e == HH_OK && m->opts.job_metrics &&
        !(m->job_metrics = hh_job_metrics_new(&m->keys, &m->log, m->opts.job_metrics)))
        e = HH_ERR_NOMEM;
    if (e == HH_ERR_NOMEM) hh_fail(e, "out of memory creating the manager");
    if (err) *err = e;
    if (e == HH_OK) return m;
    hh_manager_free(m);
    return NULL;
}

const char *hh_manager_identity(const hh_manager *m) { return m->identity; }

int hh_manager_detached(const hh_manager *m) { return m ? atomic_load(&m->detached) : 0; }

/* Where a handler's code lives, for the error of a class registered twice:
 * two plug-ins, or one loaded twice, both calling hh_manager_register() for
 * it are told apart only by their files. "the program itself" for code in
 * the executable (the CLI's --exec and --serve handlers). */
static void handler_origin(hh_handler_fn fn, char *buf, size_t len) {
    Dl_info fi, main_fi;
    void *code = (void *)(uintptr_t)fn;
    const void *phdr = (const void *)(uintptr_t)getauxval(AT_PHDR);
    if (!dladdr(code, &fi) || !fi.dli_fname) {
        hh_strlcpy(buf, "unknown code", len);
        return;
    }
    if (phdr && dladdr(phdr, &main_fi) && main_fi.dli_fbase == fi.dli_fbase) {
        hh_strlcpy(buf, "the program itself", len);
        return;
    }
    hh_strlcpy(buf, *fi.dli_fname ? fi.dli_fname : "the program itself", len);
}

/* Remembers the first failed registration (hh_fail has set its reason)
 * for hh_manager_start. Returns e. */
static int register_failed(hh_manager *m, int e) {
    if (!m->register_error) {
        m->register_error = e;
        hh_strlcpy(m->register_why, hh_last_error(), sizeof(m->register_why));
    }
    return e;
}

int hh_manager_register(hh_manager *m, const char *klass, hh_handler_fn fn, void *udata) {
    if (!m) return hh_fail(HH_ERR_INVALID, "register: the manager is missing");
    if (!klass || !*klass || !fn)
        return register_failed(
            m, hh_fail(HH_ERR_INVALID, "register: %s is missing", !fn ? "the handler" : "the class name"));
    if (atomic_load(&m->started)) return hh_fail(HH_ERR_STATE, "register %s: the manager has started", klass);
    for (size_t i = 0; i < m->nhandlers; i++) {
        if (strcmp(m->handlers[i].klass, klass) != 0) continue;
        char had[512], now[512];
        handler_origin(m->handlers[i].fn, had, sizeof(had));
        handler_origin(fn, now, sizeof(now));
        if (strcmp(had, now) == 0)
            return register_failed(m,
                                   hh_fail(HH_ERR_EXISTS,
                                           "register %s: that class has a handler already, registered from %s "
                                           "too (the same plug-in loaded twice?)",
                                           klass, had));
        return register_failed(m,
                               hh_fail(HH_ERR_EXISTS,
                                       "register %s: that class has a handler already, registered from %s (this "
                                       "one is from %s)",
                                       klass, had, now));
    }
    hh_handler *h = realloc(m->handlers, (m->nhandlers + 1) * sizeof(*h));
    if (!h) return register_failed(m, hh_fail(HH_ERR_NOMEM, "register %s: out of memory", klass));
    m->handlers = h;
    if (!(h[m->nhandlers].klass = strdup(klass)))
        return register_failed(m, hh_fail(HH_ERR_NOMEM, "register %s: out of memory", klass));
    h[m->nhandlers].fn = fn;
    h[m->nhandlers].udata = udata;
    m->nhandlers++;
    return HH_OK;
}

int hh_manager_register_default(hh_manager *m, hh_handler_fn fn, void *udata) {
    if (!m || !fn)
        return hh_fail(HH_ERR_INVALID, "register_default: %s is missing", !m ? "the manager" : "the handler");
    if (atomic_load(&m->started)) return hh_fail(HH_ERR_STATE, "register_default: the manager has started");
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
    if (!m || !fn) return hh_fail(HH_ERR_INVALID, "use: %s is missing", !m ? "the manager" : "the middleware");
    if (atomic_load(&m->started)) return hh_fail(HH_ERR_STATE, "use: the manager has started");
    hh_middleware *mw = realloc(m->middleware, (m->nmiddleware + 1) * sizeof(*mw));
    if (!mw) return hh_fail(HH_ERR_NOMEM, "use: out of memory");
    m->middleware = mw;
    mw[m->nmiddleware].fn = fn;
    mw[m->nmiddleware].udata = udata;
    m->nmiddleware++;
    return HH_OK;
}

int hh_manager_on_heartbeat(hh_manager *m, hh_heartbeat_hook_fn fn, void *udata) {
    if (!m) return hh_fail(HH_ERR_INVALID, "on_heartbeat: the manager is missing");
    if (atomic_load(&m->started)) return hh_fail(HH_ERR_STATE, "on_heartbeat: the manager has started");
    m->hook = fn;
    m->hook_udata = udata;
    return HH_OK;
}

int hh_manager_set_unready(hh_manager *m, const char *source, const char *reason) {
    if (!m || !source || !source[0])
        return hh_fail(HH_ERR_INVALID, "set_unready: %s", !m ? "the manager is missing" : "the source is missing");
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
            hh_strlcpy(m->unready[slot].source, source, sizeof(m->unready[slot].source));
            m->unready[slot].seq = ++m->unready_seq;
        }
        hh_strlcpy(m->unready[slot].reason, reason, sizeof(m->unready[slot].reason));
    }
    pthread_mutex_unlock(&m->lock);
    if (rc == HH_ERR_NOMEM)
        return hh_fail(rc, "set_unready: %d sources already hold a problem; '%s' not recorded", HH_MANAGER_UNREADY_MAX,
                       source);
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
        hh_log(&m->log, HH_LOG_WARN, "Redis %d.%d is older than 4.0, which Sidekiq requires", c->version / 100,
               c->version % 100);
}

static void *supervisor_main(void *arg);

/* What the worker threads see of m (processor.h): filled at start, once
 * the handlers, the middleware and the metrics are final. */
static void processor_env(hh_manager *m) {
    hh_processor_env *e = &m->processor_env;
    *e = (hh_processor_env){.keys = &m->keys,
                            .log = &m->log,
                            .identity = m->identity,
                            .nqueues = m->nqueues,
                            .queues = m->queues,
                            .inprog_keys = m->inprog_keys,
                            .handlers = m->handlers,
                            .nhandlers = m->nhandlers,
                            .default_handler = m->default_handler,
                            .middleware = m->middleware,
                            .nmiddleware = m->nmiddleware,
                            .quiet = &m->quiet,
                            .booted = &m->booted,
                            .giving_up = &m->giving_up,
                            .busy = &m->busy,
                            .outcomes_refused = &m->outcomes_refused,
                            .not_pushed_back = &m->not_pushed_back,
                            .workers_done = &m->workers_done,
                            .processed = &m->processed,
                            .failed = &m->failed,
                            .unflushed_processed = &m->unflushed_processed,
                            .unflushed_failed = &m->unflushed_failed,
                            .wake = &m->wake,
                            .metrics = m->metrics,
                            .job_metrics = m->job_metrics,
                            .batch = &m->batch,
                            .lease = &m->lease_env,
                            .fetch = &m->fetch_env,
                            .self = m};
    e->opts.fetch = m->opts.fetch;
    e->opts.max_retries = m->opts.max_retries;
    e->opts.dead_max_jobs = m->opts.dead_max_jobs;
    e->opts.dead_timeout = m->opts.dead_timeout;
    e->opts.redis.timestamps = m->opts.redis.timestamps;
}

/* What the HTTP server sees of the manager (http.h). */
static void http_stats(void *udata, hh_manager_stats *out) { hh_manager_fill_stats(udata, out); }
static char *http_metrics(void *udata) { return hh_metrics_text(((hh_manager *)udata)->metrics); }

int hh_manager_start(hh_manager *m) {
    if (!m) return hh_fail(HH_ERR_INVALID, "start: the manager is missing");
    int expected = 0;
    if (!atomic_compare_exchange_strong(&m->started, &expected, 1))
        return hh_fail(HH_ERR_STATE, "start: the manager was started already");
    m->started_at = hh_now();
    if (m->register_error) { /* e.g. a plug-in whose init went on after it */
        hh_log(&m->log, HH_LOG_ERROR, "not starting: a handler registration failed: %s", m->register_why);
        atomic_store(&m->done, 1);
        return hh_fail(HH_ERR_INVALID, "not starting: a handler registration failed: %s", m->register_why);
    }
    if (m->opts.http_bind) {
        char err[256];
        hh_http_source src = {http_stats, m, &m->log, http_metrics};
        if (!(m->metrics = hh_metrics_new())) {
            atomic_store(&m->done, 1);
            return hh_fail(HH_ERR_NOMEM, "http: out of memory");
        }
        if (!(m->http = hh_http_start(&src, m->opts.http_bind, m->opts.liveness_max_age, m->opts.http_token, err,
                                      sizeof(err)))) {
            hh_log(&m->log, HH_LOG_ERROR, "http: %s", err);
            atomic_store(&m->done, 1);
            return hh_fail(HH_ERR_INVALID, "http: %s", err);
        }
    }
    hh_manager_recovery_env(m, &m->recovery_env);
    hh_conn c;
    hh_conn_init(&c, &m->cfg, &m->log, "start", NULL);
    /* One attempt now: Redis being down is not fatal, the threads reconnect;
     * Redis refusing the password or db is, since retrying cannot help. */
    if (hh_conn_ready(&c) != 0 && hh_redis_refused(&m->cfg)) {
        hh_http_stop(m->http);
        m->http = NULL;
        atomic_store(&m->done, 1);
        return hh_fail(HH_ERR_REFUSED, "redis %s refused the connection settings: %s", m->cfg.display, c.last_error);
    }
    if (c.ctx) {
        check_redis(m, &c);
        int rc = hh_recovery_boot(&m->recovery_env, &c);
        if (rc == HH_OK) atomic_store(&m->booted, 1); /* no thread waits yet */
        if (rc == HH_ERR_EXISTS) {
            hh_log(&m->log, HH_LOG_ERROR, "identity %s is live in another process; refusing to start", m->identity);
            hh_conn_close(&c);
            hh_http_stop(m->http);
            m->http = NULL;
            atomic_store(&m->done, 1);
            return hh_fail(HH_ERR_EXISTS, "identity %s is live in another process", m->identity);
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
    hh_log(&m->log, HH_LOG_INFO, "hiredhand %s starting: identity=%s concurrency=%d fetch=%s redis=%s", HH_VERSION,
           m->identity, m->opts.concurrency, m->opts.fetch == HH_FETCH_BASIC ? "basic" : "reliable", m->cfg.display);
    hh_pickup_start(&m->pickup_env); /* on failure idle threads fall back, logged */
    processor_env(m);
    int failed = 0;
    for (int i = 0; i < m->opts.concurrency && !failed; i++) {
        failed = pthread_create(&m->procs[i].thread, NULL, hh_processor_main, &m->procs[i]) != 0;
        if (!failed) m->procs[i].thread_started = 1;
    }
    hh_manager_heartbeat_env(m, &m->heartbeat_env);
    if (!failed) failed = pthread_create(&m->heartbeat_thread, NULL, hh_heartbeat_main, &m->heartbeat_env) != 0;
    if (!failed) m->heartbeat_started = 1;
    hh_manager_scheduler_env(m, &m->scheduler_env);
    if (!failed) failed = pthread_create(&m->scheduler_thread, NULL, hh_scheduler_main, &m->scheduler_env) != 0;
    if (!failed) m->scheduler_started = 1;
    hh_manager_cron_env(m, &m->cron_env);
    if (!failed && m->opts.cron_poll_interval > 0) {
        failed = pthread_create(&m->cron_thread, NULL, hh_cron_main, &m->cron_env) != 0;
        if (!failed) m->cron_started = 1;
    }
    if (!failed && m->opts.fetch == HH_FETCH_RELIABLE) {
        failed = pthread_create(&m->recovery_thread, NULL, hh_recovery_main, &m->recovery_env) != 0;
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
            hh_wake_all(&m->wake); /* no supervisor relays the stop's poke */
        }
        return hh_fail(HH_ERR_IO, "cannot create the worker threads (pthread_create failed)");
    }
    return HH_OK;
}

/* These three may run in a signal handler: flag, then poke (wake.h). */
void hh_manager_quiet(hh_manager *m) {
    atomic_store(&m->quiet, 1);
    hh_wake_poke(&m->wake);
}

void hh_manager_stop(hh_manager *m) {
    atomic_store(&m->quiet, 1);
    atomic_store(&m->stopping, 1);
    hh_wake_poke(&m->wake);
}

void hh_manager_dump(hh_manager *m) {
    atomic_store(&m->dump_requested, 1);
    hh_wake_poke(&m->wake);
}

/* The Redis chores of a running manager, off the supervisor so that it never
 * waits on Redis: acks left by idle or busy threads, and once quiet, ending
 * the idle threads' blocking fetches: woken a few times at first, then every
 * 250 ms any thread still inside a blocking call is unblocked again, for as
 * long as one is (a thread descheduled just before its BRPOP, or reconnecting
 * after an outage, blocks late, and would hold up a stop by its 2 s).
 * Ends when the stop gives up on Redis. */
static void *chores_main(void *arg) {
    hh_manager *m = arg;
    int wakes = 0;
    double next_unblock = 0;
    hh_conn c;
    hh_conn_init(&c, &m->cfg, &m->log, "acks", &m->giving_up);
    while (!atomic_load(&m->giving_up)) {
        if (atomic_load(&m->quiet) && wakes < 5) {
            hh_fetch_wake(&m->fetch_env, &c);
            wakes++;
        } else if (atomic_load(&m->quiet) && hh_mono() >= next_unblock) {
            hh_fetch_unblock(&m->fetch_env, &c);
            next_unblock = hh_mono() + 0.25;
        }
        hh_fetch_try_acks(&m->fetch_env, &c);
        hh_sleep(0.05);
    }
    hh_conn_close(&c);
    return NULL;
}

/* Idle threads sleeping in the process see quiet at once (no Redis). */
static void wake_sleepers(hh_manager *m) { hh_fetch_wake_sleepers(&m->fetch_env); }

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
static void push_back(hh_manager *m, hh_conn *c, hh_unfinished *u, size_t n, size_t nrun, hh_job **acks, size_t nacks) {
    hh_pipe pipe;
    hh_pipe_begin(&pipe, c);
    for (size_t i = 0; i < n; i++) hh_fetch_requeue_append(&m->fetch_env, &pipe, u[i].queue, u[i].payload, u[i].len);
    for (size_t i = 0; i < nacks; i++) hh_fetch_ack_append(&m->fetch_env, &pipe, acks[i]);
    redisReply **r = hh_pipe_exec(&pipe);
    int pushed = 0, pend_pushed = 0, left = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *x = r ? r[i] : NULL;
        json_t *item = json_loadb(u[i].payload, u[i].len, JSON_ALLOW_NUL, NULL);
        const char *jid = json_string_value(json_object_get(item, "jid"));
        const char *klass = json_string_value(json_object_get(item, "class"));
        const char *queue = m->queues[u[i].queue];
        char why[300];
        snprintf(why, sizeof(why), "%s",
                 !x                                 ? (c->last_error[0] ? c->last_error : "Redis unreachable")
                     : x->type == REDIS_REPLY_ERROR ? x->str
                                                    : "unexpected reply");
        if (x && x->type == REDIS_REPLY_INTEGER && x->integer > 0) {
            if (i < nrun) {
                hh_log(&m->log, HH_LOG_WARN,
                       "class=%s jid=%s: still running at the shutdown timeout; pushed back to queue %s",
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
            hh_fetch_report_unreturned(&m->fetch_env, u[i].queue, u[i].payload, u[i].len, why);
        }
        json_decref(item);
    }
    if (pushed) hh_log(&m->log, HH_LOG_WARN, "pushed %d unfinished jobs back to their queues", pushed);
    if (pend_pushed)
        hh_log(&m->log, HH_LOG_INFO, "pushed %d fetched jobs that had not started back to their queues", pend_pushed);
    if (left && m->opts.fetch == HH_FETCH_RELIABLE)
        hh_log(&m->log, HH_LOG_WARN, "%d jobs left in this process's in-progress lists for recovery", left);
    if (nacks && !r)
        hh_log(&m->log, HH_LOG_WARN,
               "%zu finished jobs not acknowledged (%s): they stay in progress and run again after recovery", nacks,
               c->last_error[0] ? c->last_error : "Redis unreachable");
    hh_replies_free(r, pipe.n);
}

/* Until the stop request: a refusal of Redis at start stops the manager;
 * the first quiet is announced and wakes the idle threads. Returns whether
 * quiet was announced. */
static int wait_for_stop(hh_manager *m) {
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
        /* Until a first connection works Redis may still refuse us for
         * good, which only a look every 20 ms sees; after that a refusal is
         * never reported (hh_redis_refused), and the supervisor sleeps until
         * a stop, quiet or dump pokes it (1 s: a late look for a refusal
         * decided just as the first connection worked). */
        hh_wake_relay(&m->wake, atomic_load(&m->cfg.ever_ready) ? 1.0 : 0.02);
    }
    return announced_quiet;
}

/* The grace period: a thread leaves once its job's outcome is written
 * (retried through an outage until the grace period ends) and its fetched
 * jobs are back. Returns at grace_end or when every worker left. */
static void wait_grace(hh_manager *m, double grace_end) {
    int started = 0;
    for (int i = 0; i < m->opts.concurrency; i++) started += m->procs[i].thread_started != 0;
    for (;;) {
        int running = 0;
        for (int i = 0; i < m->opts.concurrency; i++) {
            hh_processor *p = &m->procs[i];
            if (!p->thread_started) continue;
            if (pthread_tryjoin_np(p->thread, NULL) == 0) p->thread_started = 0;
            else running++;
        }
        if (running && atomic_load(&m->workers_done) >= started) {
            /* Every worker poked on its way out and is returning: a join
             * waits only for that return. */
            for (int i = 0; i < m->opts.concurrency; i++) {
                hh_processor *p = &m->procs[i];
                if (p->thread_started) pthread_join(p->thread, NULL);
                p->thread_started = 0;
            }
            running = 0;
        }
        /* One look at the clock: with two, it may pass grace_end between
         * them (a loaded machine) and the wait below get nothing left. */
        double left = grace_end - hh_mono();
        if (!running || left <= 0) break;
        /* Each worker pokes as it leaves; dumps asked meanwhile are relayed. */
        hh_wake_relay(&m->wake, left);
    }
}

/* Until every cancelled handler returned (its run of the job is over) or
 * `until`. A job pushed back while its handler still runs can start in a
 * peer next to it: an --exec handler that ignores SIGTERM runs on until
 * its SIGKILL, 2 s later. */
static void wait_cancelled(hh_manager *m, const unsigned long *runs, double until) {
    for (;;) {
        int running = 0;
        for (int i = 0; i < m->opts.concurrency; i++) {
            hh_processor *p = &m->procs[i];
            if (!runs[i]) continue;
            pthread_mutex_lock(&p->mu);
            if (p->job && p->runs == runs[i]) running++;
            pthread_mutex_unlock(&p->mu);
        }
        if (!running || hh_mono() >= until) return;
        hh_sleep(0.01);
    }
}

/* The hard shutdown's first part: cancels every running handler before
 * any Redis I/O, waits (until wait_until) for them to return, then pushes
 * back on c what ran and what was fetched but not started, with the queued
 * acks, in one pipeline. */
static void cancel_and_push_back(hh_manager *m, hh_conn *c, double wait_until) {
    size_t cap = (size_t)m->opts.concurrency, n = 0, nrun = 0;
    hh_unfinished *u = calloc(cap, sizeof(*u));
    unsigned long *runs = calloc(cap, sizeof(*runs)); /* of the cancelled runs; 0: none */
    for (int i = 0; u && i < m->opts.concurrency; i++)
        if (hh_processor_abandon(&m->procs[i], &u[n]) == 1) {
            n++;
            if (runs) {
                pthread_mutex_lock(&m->procs[i].mu);
                runs[i] = m->procs[i].job ? m->procs[i].runs : 0;
                pthread_mutex_unlock(&m->procs[i].mu);
            }
        }
    if (!u) /* out of memory: still cancel them; their jobs stay in progress */
        for (int i = 0; i < m->opts.concurrency; i++) atomic_store(&m->procs[i].cancelled, 1);
    if (n && runs) wait_cancelled(m, runs, wait_until);
    free(runs);
    nrun = n;
    hh_unfinished *pend = NULL;
    size_t npend = hh_processor_take_pending(&m->fetch_env, &pend);
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
    hh_job **acks = hh_fetch_take_acks(&m->fetch_env, &nacks);
    if (n || nacks) push_back(m, c, u, n, nrun, acks, nacks);
    for (size_t i = 0; i < n; i++) hh_unfinished_free(&u[i]);
    for (size_t i = 0; i < npend; i++) hh_unfinished_free(&pend[i]); /* not taken: stay in progress */
    free(u);
    free(pend);
    hh_fetch_acks_free(&m->fetch_env, acks, nacks);
}

/* The hard shutdown's second part, by `end`: the heartbeat off, leftovers
 * of our lists back, the process unregistered, every thread joined or left
 * behind. */
static void leave_redis(hh_manager *m, hh_conn *c, pthread_t chores, int chores_started, double end) {
    /* The heartbeat must be off before leaving the process set. */
    int beats_joined = !m->heartbeat_started || join_by(m, m->heartbeat_thread, end);
    /* What our lists still hold that no thread has (lost fetch replies) goes
     * back now, not when this identity next starts. Skipped when Redis just
     * failed us or our last beat (a hung Redis costs no extra time), and when
     * the identity was never checked (its lists may be a live process's). */
    pthread_mutex_lock(&m->lock);
    int beats_failing = m->heartbeat_last_error[0] != '\0';
    pthread_mutex_unlock(&m->lock);
    if (atomic_load(&m->booted) && !beats_failing && (c->ctx || !c->last_error[0]) &&
        m->opts.fetch == HH_FETCH_RELIABLE)
        hh_lease_reconcile(&m->lease_env, c, 1);
    /* Never booted, or taken over: the identity is another process's; leave it. */
    int lost = hh_lease_identity_is_lost(&m->lease_env);
    if (lost) {
        hh_log(&m->log, HH_LOG_WARN, "identity %s taken over: not unregistering (the entry is the new owner's)",
               m->identity);
    } else if (atomic_load(&m->booted) && hh_heartbeat_unregister(&m->heartbeat_env, c) != 0)
        hh_log(&m->log, HH_LOG_WARN, "could not unregister from Redis (%s): the process hash expires in 60 s",
               c->last_error[0] ? c->last_error : "Redis unreachable");
    else if (!beats_joined)
        hh_log(&m->log, HH_LOG_WARN, "heartbeat stuck in a Redis call: a late beat may show this process for 60 s");
    int stuck = 0;
    for (int i = 0; i < m->opts.concurrency; i++) {
        hh_processor *p = &m->procs[i];
        if (p->thread_started && !join_by(m, p->thread, end)) stuck++;
        p->thread_started = 0;
    }
    if (stuck)
        hh_log(&m->log, HH_LOG_WARN,
               "%d worker threads still in a handler or a Redis call at the deadline: left behind", stuck);
    /* The runs since the last beat, the cancelled ones included, as
     * Sidekiq 8 flushes at its exit; one try within the stop's budget. */
    hh_job_metrics_flush(m->job_metrics, c, hh_now());
    if (!hh_pickup_stop_by(&m->pickup_env, end)) atomic_fetch_add(&m->detached, 1);
    if (m->scheduler_started) join_by(m, m->scheduler_thread, end);
    if (m->cron_started) join_by(m, m->cron_thread, end);
    if (m->recovery_started) join_by(m, m->recovery_thread, end);
    if (chores_started) join_by(m, chores, end);
    m->scheduler_started = m->recovery_started = m->heartbeat_started = m->cron_started = 0;
    hh_fetch_flush_acks(&m->fetch_env, c); /* left by threads that ended late; one try within the budget */
}

/* Waits for the stop request, then up to the grace period for the worker
 * threads to finish their jobs and leave; then the hard shutdown: running
 * handlers are cancelled at once, and the Redis work left (push back, acks,
 * leaving the Busy page) shares one bounded budget, so the stop ends by
 * grace + budget whatever Redis does (docs/running-workers.md, Signals; docs/design.md).
 * The supervisor itself never waits on Redis before that point. */
static void *supervisor_main(void *arg) {
    hh_manager *m = arg;
    pthread_t chores;
    int chores_started = pthread_create(&chores, NULL, chores_main, m) == 0;
    if (!chores_started) hh_log(&m->log, HH_LOG_WARN, "cannot create the acks thread: acks ride with fetches only");
    int announced_quiet = wait_for_stop(m);
    double grace_end = hh_mono() + m->opts.shutdown_timeout;
    if (!announced_quiet) hh_log(&m->log, HH_LOG_INFO, "quiet: no new jobs will be fetched");
    hh_log(&m->log, HH_LOG_INFO, "stopping: waiting up to %.0f s for %d running jobs", m->opts.shutdown_timeout,
           atomic_load(&m->busy));
    wake_sleepers(m);
    wait_grace(m, grace_end);

    /* Hard shutdown. From here writes that fail are tried once, not retried:
     * those jobs stay in their in-progress lists for recovery. */
    atomic_store(&m->giving_up, 1);
    atomic_store(&m->beats_off, 1);
    hh_wake_all(&m->wake);
    double budget = m->cfg.command_timeout < HH_STOP_BUDGET_MAX ? m->cfg.command_timeout : HH_STOP_BUDGET_MAX;
    double end = hh_mono() + budget;
    hh_conn c;
    hh_conn_init(&c, &m->cfg, &m->log, "shutdown", NULL);
    c.deadline = end;
    /* the cancelled handlers may take most of the budget to end (an --exec
     * handler's SIGKILL comes 2 s after its SIGTERM); what Redis needs on a
     * healthy day, a few round trips, gets the rest */
    cancel_and_push_back(m, &c, end - (budget / 6 < 0.5 ? budget / 6 : 0.5));
    leave_redis(m, &c, chores, chores_started, end);
    hh_conn_close(&c);
    hh_log(&m->log, HH_LOG_INFO, "stopped: processed=%llu failed=%llu", (unsigned long long)atomic_load(&m->processed),
           (unsigned long long)atomic_load(&m->failed));
    hh_http_stop(m->http);
    m->http = NULL;
    atomic_store(&m->done, 1);
    hh_wake_all(&m->wake);
    return NULL;
}

/* HH_TEST_CLOCK_SKEW_MS: milliseconds added to the cron poller's clock.
 * For tests of a fleet whose clocks disagree; documented as such. */
static double test_clock_skew(void) {
    const char *s = getenv("HH_TEST_CLOCK_SKEW_MS");
    return s && *s ? strtod(s, NULL) / 1000.0 : 0;
}

void hh_manager_cron_env(hh_manager *m, hh_cron_env *out) {
    *out = (hh_cron_env){.keys = &m->keys,
                         .log = &m->log,
                         .cfg = &m->cfg,
                         .timestamps = m->opts.redis.timestamps,
                         .poll_interval = m->opts.cron_poll_interval,
                         .namespaces = (const char *const *)m->cron_ns,
                         .nnamespaces = m->ncron_ns,
                         .clock_skew = test_clock_skew(),
                         .counts = &m->cron_counts,
                         .quiet = &m->quiet,
                         .wake = &m->wake};
}

void hh_manager_scheduler_env(hh_manager *m, hh_scheduler_env *out) {
    *out = (hh_scheduler_env){&m->keys,
                              &m->log,
                              &m->cfg,
                              m->opts.redis.timestamps,
                              m->opts.poll_interval_average,
                              m->opts.average_scheduled_poll_interval,
                              m->opts.dead_timeout,
                              m->opts.dead_max_jobs,
                              &m->quiet,
                              &m->wake};
}

/* The heartbeat's callbacks: the worker threads, the stats it records,
 * and what follows a beat. */
static void heartbeat_each_thread(void *udata, hh_heartbeat_thread_fn fn, void *ctx) {
    hh_manager *m = udata;
    for (int i = 0; i < m->opts.concurrency; i++) {
        hh_processor *p = &m->procs[i];
        pthread_mutex_lock(&p->mu);
        fn(ctx, p->tid, p->job, p->abandoned);
        pthread_mutex_unlock(&p->mu);
    }
}

static int heartbeat_publish(void *udata, double now, int ok, const char *err, int connected, char *prev,
                             size_t prevlen) {
    hh_manager *m = udata;
    pthread_mutex_lock(&m->lock);
    int was_error = m->heartbeat_last_error[0] != '\0';
    hh_strlcpy(prev, m->heartbeat_last_error, prevlen);
    if (ok) {
        m->heartbeat_last_pushed_at = now;
        m->heartbeat_last_error[0] = '\0';
    } else {
        hh_strlcpy(m->heartbeat_last_error, err, sizeof(m->heartbeat_last_error));
    }
    m->redis_connected = connected;
    pthread_mutex_unlock(&m->lock);
    return was_error;
}

static void heartbeat_publish_queues(void *udata, const int64_t *size, const double *latency, size_t n) {
    hh_manager *m = udata;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < n && i < m->nqueues; i++) {
        m->queue_size[i] = size[i];
        m->queue_latency[i] = latency[i];
    }
    pthread_mutex_unlock(&m->lock);
}

static void heartbeat_publish_sets(void *udata, int64_t retry, int64_t scheduled, int64_t dead) {
    hh_metrics_set_sizes(((hh_manager *)udata)->metrics, retry, scheduled, dead);
}

/* A newer process took our identity: every running job lost its lease
 * (lease.c); the buffered jobs' entries are the new owner's to run or
 * recover, so they are dropped here, and the manager stops. */
static int heartbeat_taken_over(void *udata, const char *by) {
    hh_manager *m = udata;
    int rc = hh_lease_identity_lost(&m->lease_env, by);
    if (rc != 1) return rc != 0;
    hh_fetched *f = NULL;
    size_t n = hh_fetch_take_pending(&m->fetch_env, &f);
    for (size_t i = 0; i < n; i++) {
        hh_lease_release(&m->lease_env, &f[i].lease);
        free(f[i].payload);
    }
    free(f);
    if (n) {
        atomic_fetch_add(&m->lease_lost, n);
        hh_log(&m->log, HH_LOG_WARN, "lease lost: %zu fetched jobs that had not started dropped (identity taken over)",
               n);
    }
    /* as a refused start: the identity is live elsewhere, and a supervisor
     * that restarted this process with it would take it back */
    atomic_store(&m->taken_over, 1);
    atomic_store(&m->start_error, HH_ERR_EXISTS);
    hh_manager_stop(m);
    return 1;
}

static void heartbeat_after_beat(void *udata, hh_conn *c, int ok, int hash_expired) {
    hh_manager *m = udata;
    hh_lease_beat(&m->lease_env, c, ok, hash_expired); /* the outage rule, lease loss, hiredhand:fetchers */
    if (m->hook) {
        hh_queue_stats qs[HH_MAX_QUEUES];
        hh_manager_stats st = {.queues = qs, .queues_cap = HH_MAX_QUEUES};
        hh_manager_fill_stats(m, &st);
        m->hook(ok, &st, m->hook_udata);
    }
}

/* A remote signal (Sidekiq's <identity>-signals list) does what the public
 * call of the same name does. */
static void heartbeat_remote_signal(void *udata, hh_remote_signal sig) {
    hh_manager *m = udata;
    switch (sig) {
    case HH_REMOTE_QUIET: hh_manager_quiet(m); break;
    case HH_REMOTE_STOP: hh_manager_stop(m); break;
    case HH_REMOTE_DUMP: hh_manager_dump(m); break;
    }
}

void hh_manager_heartbeat_env(hh_manager *m, hh_heartbeat_env *out) {
    *out = (hh_heartbeat_env){.keys = &m->keys,
                              .log = &m->log,
                              .cfg = &m->cfg,
                              .identity = m->identity,
                              .hostname = m->hostname,
                              .tag = m->tag,
                              .version = m->version,
                              .started_at = m->started_at,
                              .interval = m->opts.heartbeat_interval,
                              .concurrency = m->opts.concurrency,
                              .nqueues = m->nqueues,
                              .queues = m->queues,
                              .weights = m->weights,
                              .weighted = m->weighted,
                              .labels = m->labels,
                              .reads_queues = m->http != NULL || m->hook != NULL,
                              .quiet = &m->quiet,
                              .booted = &m->booted,
                              .beats_off = &m->beats_off,
                              .dump_requested = &m->dump_requested,
                              .unflushed_processed = &m->unflushed_processed,
                              .unflushed_failed = &m->unflushed_failed,
                              .job_metrics = m->job_metrics,
                              .wake = &m->wake,
                              .udata = m,
                              .remote_signal = heartbeat_remote_signal,
                              .each_thread = heartbeat_each_thread,
                              .publish = heartbeat_publish,
                              .publish_queues = heartbeat_publish_queues,
                              .publish_sets = m->http ? heartbeat_publish_sets : NULL,
                              .after_beat = heartbeat_after_beat,
                              .taken_over = heartbeat_taken_over};
}

/* Recovery's callbacks into the fetcher's leases and the stop. */
static int recovery_peers_judgeable(void *udata, double *left) {
    return hh_lease_peers_judgeable(&((hh_manager *)udata)->lease_env, left);
}
static void recovery_tick(void *udata, hh_conn *c) { hh_lease_tick(&((hh_manager *)udata)->lease_env, c); }
static void recovery_stop(void *udata) { hh_manager_stop(udata); }

void hh_manager_recovery_env(hh_manager *m, hh_recovery_env *out) {
    *out = (hh_recovery_env){.keys = &m->keys,
                             .log = &m->log,
                             .cfg = &m->cfg,
                             .identity = m->identity,
                             .hostname = m->hostname,
                             .fixed_identity = m->fixed_identity,
                             .fetch = m->opts.fetch,
                             .timestamps = m->opts.redis.timestamps,
                             .recovery_interval = m->opts.recovery_interval,
                             .heartbeat_interval = m->opts.heartbeat_interval,
                             .dead_timeout = m->opts.dead_timeout,
                             .dead_max_jobs = m->opts.dead_max_jobs,
                             .max_recoveries = m->opts.max_recoveries,
                             .quiet = &m->quiet,
                             .booted = &m->booted,
                             .start_error = &m->start_error,
                             .recovered = &m->recovered,
                             .wake = &m->wake,
                             .udata = m,
                             .peers_judgeable = recovery_peers_judgeable,
                             .tick = recovery_tick,
                             .stop = recovery_stop};
}

static int is_done(const void *arg) { return atomic_load(&((const hh_manager *)arg)->done); }

int hh_manager_wait(hh_manager *m, double timeout) {
    if (!m) return hh_fail(HH_ERR_INVALID, "wait: the manager is missing");
    if (!atomic_load(&m->started)) return HH_OK;
    if (!hh_wake_wait(&m->wake, timeout >= 0 ? hh_mono() + timeout : -1, is_done, m))
        return hh_fail(HH_ERR_STATE, "still running after %g s", timeout);
    if (m->supervisor_started) {
        pthread_join(m->supervisor_thread, NULL);
        m->supervisor_started = 0;
    }
    int e = atomic_load(&m->start_error);
    if (e == HH_ERR_EXISTS && atomic_load(&m->taken_over))
        hh_fail(e, "identity %s was taken over by a newer process: stopped", m->identity);
    else if (e == HH_ERR_EXISTS)
        hh_fail(e, "identity %s is live in another process (found once Redis answered): stopped", m->identity);
    else if (e == HH_ERR_REFUSED)
        hh_fail(e, "redis %s refused the connection settings (password, user, db or Sentinel master name): stopped",
                m->cfg.display);
    return e;
}

void hh_manager_fill_stats(hh_manager *m, hh_manager_stats *out) {
    hh_queue_stats *qs = out->queues;
    size_t cap = qs ? out->queues_cap : 0;
    memset(out, 0, sizeof(*out));
    out->struct_size = sizeof(*out);
    out->queues = qs;
    out->queues_cap = cap;
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
    out->outcomes_refused = atomic_load(&m->outcomes_refused);
    out->not_pushed_back = atomic_load(&m->not_pushed_back);
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
        return hh_fail(HH_ERR_INVALID, "get_stats: %s is missing", !m ? "the manager" : "the output struct");
    hh_manager_stats full; /* this library's layout; the caller's may be shorter */
    memset(&full, 0, sizeof(full));
    full.queues = out->queues; /* both in the first layout: always the caller's */
    full.queues_cap = out->queues_cap;
    hh_manager_fill_stats(m, &full);
    hh_manager_stats_write(out, &full);
    return HH_OK;
}
