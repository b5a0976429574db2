/* processor.c -- worker threads (see processor.h). Owns the run of one job
 * and the choice of its outcome; the writes themselves are outcome.c's.
 * Keys written, through outcome.c: retry (ZADD), dead (ZADD + trims) and
 * the in-progress list the job leaves (LREM); through fetch.c: the
 * in-progress lists (LREM ack) and queue:<q> (push back); through
 * unique.c: sidekiq-unique-jobs' uniquejobs:* keys around the run. Each run
 * is recorded for Sidekiq's Metrics tab (job_metrics.c), which the heartbeat
 * writes. */
#include "processor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fetch.h"
#include "lease.h"
#include "retry.h"
#include "outcome.h"
#include "metrics.h"
#include "unique.h"

struct hh_chain {
    const hh__processor_env *env;
    size_t next;
    const hh__handler *handler;
};

int hh_chain_next(hh_chain *chain, hh_job *job) {
    const hh__processor_env *env = chain->env;
    if (chain->next < env->nmiddleware) {
        const hh__middleware *mw = &env->middleware[chain->next++];
        return mw->fn(job, chain, mw->udata);
    }
    if (!chain->handler) {
        /* Sidekiq raises NameError for a class it cannot constantize (for
         * Active Job, the wrapped class, when the wrapper deserializes it).
         * The class goes in whole, as its bytes: a NUL or control
         * character in it is escaped where the message is shown, not in
         * the retry set (Sidekiq stores the raw name). */
        static const char prefix[] = "uninitialized constant ";
        size_t len;
        const char *klass = hh_job_handler_class(job, &len);
        char *msg = malloc(sizeof(prefix) + len);
        if (msg) {
            memcpy(msg, prefix, sizeof(prefix) - 1);
            memcpy(msg + sizeof(prefix) - 1, klass, len);
        }
        hh__job_fail_bytes(job, "NameError", msg, msg ? sizeof(prefix) - 1 + len : 0);
        free(msg);
        return -1;
    }
    return chain->handler->fn(job, chain->handler->udata);
}

int hh_job_cancelled(const hh_job *job) {
    const hh__processor *p = job->processor;
    return p ? atomic_load(&p->cancelled) : 0;
}

/* The whole class, not its C string: "T\u0000Evil" is not T. Active Job
 * payloads go by their wrapped class; an exact handler wins over the
 * catch-all "*", which wins over the default handler. */
static const hh__handler *find_handler(const hh__processor_env *env, const hh_job *job) {
    size_t len;
    const char *klass = hh_job_handler_class(job, &len);
    const hh__handler *any = NULL;
    for (size_t i = 0; i < env->nhandlers; i++) {
        if (strlen(env->handlers[i].klass) == len && memcmp(env->handlers[i].klass, klass, len) == 0)
            return &env->handlers[i];
        if (!strcmp(env->handlers[i].klass, "*")) any = &env->handlers[i];
    }
    if (any) return any;
    return env->default_handler.fn ? &env->default_handler : NULL;
}

/* Writes a job's outcome until Redis takes it (outcome.c): the job stays
 * in its in-progress list until then, and its owner, alive and beating,
 * keeps it from recoverers. When the stop gives up on Redis the job stays
 * in its list for the next start or a peer (reliable fetch), or is logged
 * whole (basic fetch, where nothing else holds it). Returns 1 written, 0 the
 * job was no longer in this process's list (taken over by a recovery), -1
 * given up. */
static int write_outcome(hh__processor *p, const hh_job *job, hh__outcome *o, const char *what) {
    const hh__processor_env *env = p->env;
    const char *klass = job->klass ? job->klass : "-", *jid = job->jid ? job->jid : "-";
    char *subject = NULL; /* whole, however long the class: the logs name the job */
    if (asprintf(&subject, "class=%s jid=%s: %s", klass, jid, what) < 0) subject = NULL;
    hh__until_done u = {.conn = &p->conn,
                        .log = env->ctx->log,
                        .giving_up = &env->ctx->flags->giving_up,
                        .subject = subject ? subject : what,
                        .refused = &env->ctx->counters->outcomes_refused};
    int rc = hh__outcome_write_until_done(&u, env->ctx->keys, o);
    /* Gone from the list: recovered by another process while this one
     * could not beat, unless an earlier attempt whose reply was lost wrote
     * it already. */
    if (rc == 0 && o->source == HH_SOURCE_LIST && !u.uncertain && !hh__lease_lost(env->lease, &p->conn, job)) {
        /* Redis lost the entry, nobody recovered the job: write its
         * outcome all the same (nothing else will). */
        o->source = HH_SOURCE_NONE;
        rc = hh__outcome_write_until_done(&u, env->ctx->keys, o);
    }
    if (rc < 0 && o->source == HH_SOURCE_LIST)
        hh__log(env->ctx->log, HH_LOG_ERROR,
                "%s not written before the shutdown deadline: "
                "left in the in-progress list for recovery",
                u.subject);
    else if (rc < 0) {
        hh__log(env->ctx->log, HH_LOG_ERROR,
                "%s not written before the shutdown deadline (%s); "
                "the job is lost unless re-pushed: %.*s",
                u.subject, u.why, (int)job->len, job->payload);
        atomic_fetch_add(&env->ctx->counters->not_pushed_back, 1);
    }
    free(subject);
    return rc;
}

/* sidekiq-unique-jobs' server side writes on this thread's connection. */
static hh__unique_env unique_env(hh__processor *p) {
    const hh__processor_env *env = p->env;
    return (hh__unique_env){&p->conn, env->ctx->log, env->ctx->keys, env->ctx->opts.dead_timeout,
                            env->ctx->opts.dead_max_jobs};
}

/* The outcome of a failed job, per its plan. */
static void write_plan(hh__processor *p, hh_job *job, const hh__failure_plan *plan) {
    const hh__processor_env *env = p->env;
    int reliable = env->ctx->opts.fetch != HH_FETCH_BASIC;
    if (plan->kind == HH_FAIL_DISCARD && !reliable) return; /* nothing holds it */
    sds list = reliable ? hh__key_inprogress(env->ctx->keys, env->ctx->identity, job->queue) : NULL;
    hh__outcome o;
    hh__outcome_of_plan(&o, plan, list, job->payload, job->len, env->ctx->opts.dead_timeout,
                        env->ctx->opts.dead_max_jobs);
    write_outcome(p, job, &o,
                  plan->kind == HH_FAIL_RETRY      ? "retry entry"
                      : plan->kind == HH_FAIL_DEAD ? "dead entry"
                                                   : "removal");
    sdsfree(list);
}

/* A job of a Sidekiq Pro batch left to Ruby processes (--batch-jobs skip):
 * into the schedule set, unchanged, HH_BATCH_SKIP_DELAY from now, leaving
 * its in-progress list in the same step; back on its queue then. */
static void skip_batch_job(hh__processor *p, const hh_job *job) {
    const hh__processor_env *env = p->env;
    int reliable = env->ctx->opts.fetch != HH_FETCH_BASIC;
    hh__outcome o = {HH_OUTCOME_SCHEDULE,
                     reliable ? HH_SOURCE_LIST : HH_SOURCE_NONE,
                     env->ctx->inprog_keys[job->queue_index],
                     job->payload,
                     job->len,
                     job->payload,
                     job->len,
                     hh__now() + HH_BATCH_SKIP_DELAY,
                     0,
                     0};
    write_outcome(p, job, &o, "schedule entry (batch job skipped)");
}

/* A malformed payload goes to the dead set with the reason, never dropped. */
static void bury_malformed(hh__processor *p, const hh_job *job, size_t qi, const char *why) {
    const hh__processor_env *env = p->env;
    const char *queue = env->ctx->queues[qi];
    size_t len = 0;
    double now = hh__now();
    char *entry = hh__malformed_dead_payload(job->payload, job->len, why, now, env->ctx->opts.timestamps, &len);
    hh__log(env->ctx->log, HH_LOG_WARN, "queue=%s: malformed job moved to the dead set: %s", queue, why);
    if (!entry) return; /* out of memory: it stays in progress and is recovered */
    int reliable = env->ctx->opts.fetch != HH_FETCH_BASIC;
    hh__outcome o = {HH_OUTCOME_DEAD,
                     reliable ? HH_SOURCE_LIST : HH_SOURCE_NONE,
                     env->ctx->inprog_keys[qi],
                     job->payload,
                     job->len,
                     entry,
                     len,
                     now,
                     env->ctx->opts.dead_timeout,
                     env->ctx->opts.dead_max_jobs};
    write_outcome(p, job, &o, "dead entry");
    free(entry);
}

/* A failed job: counted, planned (retry, dead or nothing, as Sidekiq's
 * retry rules say; outcome.h for integers beyond 64 bits) and written. */
static void write_failed(hh__processor *p, hh_job *job, const hh__handler *h, int rc, double elapsed) {
    const hh__processor_env *env = p->env;
    size_t shown_len;
    const char *shown = hh_job_handler_class(job, &shown_len); /* Active Job: the wrapped class */
    /* whole, NUL bytes included ("T\u0000Evil" is not T), as run_job's lines show it */
    char *nul_class = memchr(shown, '\0', shown_len) ? hh__escape_ctl(shown, shown_len) : NULL;
    if (nul_class) shown = nul_class;
    char *nul_msg = NULL; /* the message too: a NameError's holds the class */
    atomic_fetch_add(&env->ctx->counters->failed, 1);
    atomic_fetch_add(&env->ctx->counters->unflushed_failed, 1);
    if (!job->error_class) hh_job_fail(job, "hiredhand::JobFailed", "handler returned %d", rc);
    hh__retry_config rcfg = {env->ctx->opts.max_retries, env->ctx->opts.timestamps,
                             h != NULL && h != &env->default_handler};
    hh__failure_plan plan;
    const char *msg = job->error_message ? job->error_message : "";
    if (job->error_message && memchr(msg, '\0', job->error_message_len))
        msg = nul_msg = hh__escape_ctl(job->error_message, job->error_message_len);
    if (!msg) msg = "?"; /* out of memory */
    if (hh__retry_plan(job, &rcfg, hh__now(), &p->rng, &plan) == 0) {
        hh__log(env->ctx->log, HH_LOG_WARN, "class=%s jid=%s: failed in %.3f s: %s: %s (%s)", shown, job->jid, elapsed,
                job->error_class, msg, plan.reason);
        write_plan(p, job, &plan);
        hh__unique_env uenv = unique_env(p);
        if (plan.kind != HH_FAIL_RETRY) hh__unique_dead(&uenv, job); /* the gem's death handler */
        free(plan.payload);
    }
    free(nul_class);
    free(nul_msg);
}

/* Runs one fetched job; returns the seconds its handler took. */
static double run_job(hh__processor *p, hh__fetched *f) {
    const hh__processor_env *env = p->env;
    char why[256];
    hh_job *job = hh__job_adopt(f->payload, f->len, env->ctx->queues[f->queue], why, sizeof(why));
    f->payload = NULL; /* the job owns it now */
    if (!job) {        /* out of memory: the job stays in progress, reconciliation pushes it back */
        hh__lease_release(env->lease, &f->lease);
        return 0;
    }
    job->lease = f->lease;
    job->queue_index = (long)f->queue;
    f->lease = 0;
    if (!job->item) {
        bury_malformed(p, job, f->queue, why);
        hh__lease_finish(env->lease, job);
        return 0;
    }
    if (hh__batch_check(env->batch, job) == 2) { /* a batch job left to Ruby processes */
        skip_batch_job(p, job);
        hh__lease_finish(env->lease, job);
        return 0;
    }
    job->processor = p;
    job->run_at = hh__now();
    pthread_mutex_lock(&p->mu);
    p->job = job;
    p->abandoned = 0;
    p->lease_lost = 0;
    p->runs++;
    atomic_store(&p->cancelled, 0);
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add(&env->ctx->counters->busy, 1);
    /* Sidekiq's JobLogger: "start", then "done" or "fail" with elapsed, at
     * INFO, in the job's log context (Active Job's wrapped class as its
     * class, as Sidekiq's Web UI shows it). */
    size_t shown_len;
    const char *shown = hh_job_handler_class(job, &shown_len);
    /* whole, NUL bytes included ("T\u0000Evil" is not T), as the other lines show it */
    char *ctx_class = memchr(shown, '\0', shown_len) ? hh__escape_ctl(shown, shown_len) : NULL;
    hh__log_job_begin(p->tid, ctx_class ? ctx_class : shown, job->jid);
    free(ctx_class);
    hh__log(env->ctx->log, HH_LOG_INFO, "start");

    const hh__handler *h = find_handler(env, job);
    hh_chain chain = {env, 0, h};
    double t0 = hh__mono();
    hh__unique_env uenv = unique_env(p);
    hh__unique_lock ulock; /* the job's sidekiq-unique-jobs lock, taken or released around the run */
    hh__unique_verdict uv = hh__unique_before(&uenv, job, &ulock);
    int rc = uv == HH_UNIQUE_RUN ? hh_chain_next(&chain, job) : uv == HH_UNIQUE_FAIL ? -1 : 0;
    double elapsed = hh__mono() - t0;
    hh__log_job_elapsed(elapsed);
    hh__log(env->ctx->log, HH_LOG_INFO, rc == 0 ? "done" : "fail");
    hh__log_job_end();
    hh__job_metrics_ran(env->job_metrics, job, h != NULL, elapsed, rc != 0); /* Sidekiq's Metrics tab */

    pthread_mutex_lock(&p->mu);
    int abandoned = p->abandoned, lost = p->lease_lost;
    p->job = NULL;
    p->lease_lost = 0;
    pthread_mutex_unlock(&p->mu);
    hh__unique_after(&uenv, &ulock,
                     abandoned || lost ? HH_UNIQUE_INTERRUPTED
                         : rc          ? HH_UNIQUE_FAILED
                                       : HH_UNIQUE_SUCCEEDED);
    /* A failed job's thread stays busy until Redis takes its outcome: a
     * retry set Redis refuses (a wrong-typed key, OOM) holds the thread,
     * and the busy count, the stop's wait and readiness say so. */
    if (rc == 0 || abandoned || lost) atomic_fetch_sub(&env->ctx->counters->busy, 1);
    if (abandoned || lost) {
        /* Pushed back by the hard shutdown, or recovered by another process
         * (lease.c): the job belongs elsewhere now, so no outcome here. */
        if (lost)
            hh__log(env->ctx->log, HH_LOG_WARN,
                    "class=%s jid=%s: handler ended (%s) after the lease was lost; outcome not written", shown,
                    job->jid, rc == 0 ? "success" : "failure");
        hh__lease_finish(env->lease, job);
        return elapsed;
    }
    atomic_fetch_add(&env->ctx->counters->processed, 1);
    atomic_fetch_add(&env->ctx->counters->unflushed_processed, 1);
    hh__metrics_job(env->metrics, shown, elapsed, rc != 0); /* /metrics per class; no-op without HTTP */
    if (rc == 0) {
        hh__log(env->ctx->log, HH_LOG_DEBUG, "class=%s jid=%s: done in %.3f s", shown, job->jid, elapsed);
        if (env->ctx->opts.fetch == HH_FETCH_BASIC) {
            hh__lease_finish(env->lease, job); /* no lease in basic fetch: only freed */
        } else {
            /* The ack rides with the next fetch (one round trip, not two). */
            hh__job_shed(job);
            hh__finish_queue_ack(env->fetch->finish, job, &p->conn);
        }
        return elapsed;
    }
    write_failed(p, job, h, rc, elapsed);
    atomic_fetch_sub(&env->ctx->counters->busy, 1);
    hh__lease_finish(env->lease, job);
    return elapsed;
}

static int booted_or_quiet(const void *arg) {
    const hh__processor_env *env = arg;
    return atomic_load(&env->ctx->flags->booted) || atomic_load(&env->ctx->flags->quiet);
}

void *hh__processor_main(void *arg) {
    hh__processor *p = arg;
    const hh__processor_env *env = p->env;
    hh__wake_wait(env->ctx->wake, -1, booted_or_quiet, env); /* the identity checks come first */
    while (!atomic_load(&env->ctx->flags->quiet)) {
        hh__fetched f;
        if (hh__fetch_next(p, &f) != 1) continue;
        if (atomic_load(&env->ctx->flags->quiet)) { /* fetched after quiet: straight back */
            hh__finish_push_back(env->fetch->finish, &p->conn, &f);
            hh__lease_finish_fetched(env->lease, &f);
            break;
        }
        hh__fetch_ran(p, run_job(p, &f));
        free(f.payload);
    }
    hh__fetch_push_back_pending(env->fetch, &p->conn);
    hh__finish_flush_acks(env->fetch->finish, &p->conn);
    hh__conn_close(&p->conn);
    /* The supervisor's grace period waits for this: counted first, since
     * the thread is not joinable yet when the poke is read. */
    atomic_fetch_add(&env->ctx->counters->workers_done, 1);
    hh__wake_poke(env->ctx->wake);
    return NULL;
}

void hh__unfinished_free(hh__unfinished *u) {
    free(u->payload);
    u->payload = NULL;
}

int hh__processor_abandon(hh__processor *p, hh__unfinished *out) {
    int rc = 0;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&p->mu);
    if (p->job && !p->abandoned && p->lease_lost) {
        p->abandoned = 1; /* its entry is another process's now: cancel, never push back */
        atomic_store(&p->cancelled, 1);
    } else if (p->job && !p->abandoned) {
        const hh__processor_env *env = p->env;
        size_t q = 0;
        while (q + 1 < env->ctx->nqueues && strcmp(env->ctx->queues[q], p->job->queue) != 0) q++;
        if ((out->payload = malloc(p->job->len + 1))) {
            memcpy(out->payload, p->job->payload, p->job->len);
            out->payload[p->job->len] = '\0';
            out->len = p->job->len;
            out->queue = q;
            p->abandoned = 1;
            rc = 1;
        }
        atomic_store(&p->cancelled, 1);
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

size_t hh__processor_take_pending(const hh__fetch_env *env, hh__unfinished **out) {
    *out = NULL;
    hh__fetched *f = NULL;
    size_t n = hh__buffer_take_all(env->buffer, &f);
    if (n && !(*out = calloc(n, sizeof(**out)))) { /* out of memory: said where each one is */
        for (size_t i = 0; i < n; i++) {
            hh__finish_report_unreturned(env->finish, f[i].queue, f[i].payload, f[i].len, "out of memory");
            free(f[i].payload);
        }
        n = 0;
    }
    for (size_t i = 0; i < n; i++) { /* in fetch order */
        (*out)[i].payload = f[i].payload;
        (*out)[i].len = f[i].len;
        (*out)[i].queue = f[i].queue;
    }
    free(f);
    return n;
}
