/* processor.c -- worker threads (see processor.h).
 * Keys written: retry (ZADD), dead (ZADD + trims), and through fetch.c
 * the in-progress lists (LREM ack) and queue:<q> (push back). */
#include "processor.h"

#include <stdlib.h>
#include <string.h>
#include "fetch.h"
#include "lease.h"
#include "retry.h"
#include "client.h"
#include "outcome.h"

struct hh_chain {
    struct hh_manager *m;
    size_t next;
    const hh_handler *handler;
};

int hh_chain_next(hh_chain *chain, hh_job *job) {
    struct hh_manager *m = chain->m;
    if (chain->next < m->nmiddleware) {
        const hh_middleware *mw = &m->middleware[chain->next++];
        return mw->fn(job, chain, mw->udata);
    }
    if (!chain->handler) {
        /* Sidekiq raises NameError for a class it cannot constantize. */
        char *shown = hh_escape_ctl(job->klass, job->klass_len);
        hh_job_fail(job, "NameError", "uninitialized constant %s", shown ? shown : job->klass);
        free(shown);
        return -1;
    }
    return chain->handler->fn(job, chain->handler->udata);
}

int hh_job_cancelled(const hh_job *job) {
    const hh_processor *p = job->processor;
    return p ? atomic_load(&p->cancelled) : 0;
}

/* The whole class, not its C string: "T\u0000Evil" is not T. */
static const hh_handler *find_handler(struct hh_manager *m, const hh_job *job) {
    for (size_t i = 0; i < m->nhandlers; i++)
        if (strlen(m->handlers[i].klass) == job->klass_len &&
            memcmp(m->handlers[i].klass, job->klass, job->klass_len) == 0)
            return &m->handlers[i];
    return m->default_handler.fn ? &m->default_handler : NULL;
}

/* Writes a job's outcome until Redis takes it, whatever the error (an
 * outage, OOM, a wrong-typed key): the job stays in its in-progress list
 * until then, so a refused write never loses it and its owner, alive and
 * beating, keeps it from recoverers. Each change of error is logged once.
 * Stops only when the shutdown gave up on Redis: the job then stays in its
 * list for the next start or a peer (reliable fetch), or is logged whole
 * (basic fetch, where nothing else holds it). Returns 1 written, 0 the job
 * was no longer in this process's list (taken over by a recovery), -1
 * given up. */
static int write_outcome(hh_processor *p, const hh_job *job, hh_outcome *o, const char *what) {
    struct hh_manager *m = p->m;
    const char *klass = job->klass ? job->klass : "-", *jid = job->jid ? job->jid : "-";
    char why[256], last[256] = "";
    double backoff = 0.05;
    int attempts = 0, uncertain = 0;
    for (;;) {
        int rc = hh_outcome_write(&p->conn, &m->keys, o, why, sizeof(why));
        if (rc >= 0) {
            if (attempts)
                hh_log(&m->log, HH_LOG_INFO, "class=%s jid=%s: %s written after %d refused attempts", klass,
                       jid, what, attempts);
            /* Gone from the list: recovered by another process while this
             * one could not beat, unless an earlier attempt whose reply was
             * lost wrote it already. */
            if (rc == 0 && o->source == HH_SOURCE_LIST && !uncertain) hh_lease_lost(m, job);
            return rc;
        }
        attempts++;
        if (!p->conn.ctx) uncertain = 1; /* the script may have run */
        if (strcmp(why, last) != 0) {
            hh_log(&m->log, HH_LOG_WARN, "class=%s jid=%s: %s not written, retrying until Redis takes it: %s",
                   klass, jid, what, why);
            hh_strlcpy(last, why, sizeof(last));
        }
        if (atomic_load(&m->giving_up)) {
            if (o->source == HH_SOURCE_LIST)
                hh_log(&m->log, HH_LOG_ERROR, "class=%s jid=%s: %s not written before the shutdown deadline: "
                       "left in the in-progress list for recovery", klass, jid, what);
            else
                hh_log(&m->log, HH_LOG_ERROR, "class=%s jid=%s: %s not written before the shutdown deadline (%s); "
                       "the job is lost unless re-pushed: %.*s", klass, jid, what, why,
                       (int)job->len, job->payload);
            return -1;
        }
        if (!p->conn.ctx) {
            hh_conn_ready(&p->conn); /* waits out the reconnect backoff */
        } else {
            double until = hh_mono() + backoff;
            while (hh_mono() < until && !atomic_load(&m->giving_up)) hh_sleep(0.02);
            backoff = backoff * 2 > 2.0 ? 2.0 : backoff * 2;
        }
    }
}

/* The outcome of a failed job, per its plan. */
static void write_failure(hh_processor *p, hh_job *job, const hh_failure_plan *plan) {
    struct hh_manager *m = p->m;
    int reliable = m->opts.fetch != HH_FETCH_BASIC;
    if (plan->kind == HH_FAIL_DISCARD && !reliable) return; /* nothing holds it */
    sds list = reliable ? hh_key_inprogress(&m->keys, m->identity, job->queue) : NULL;
    hh_outcome o = {plan->kind == HH_FAIL_RETRY  ? HH_OUTCOME_RETRY
                    : plan->kind == HH_FAIL_DEAD ? HH_OUTCOME_DEAD
                                                 : HH_OUTCOME_DROP,
                    reliable ? HH_SOURCE_LIST : HH_SOURCE_NONE, list, job->payload, job->len, plan->payload,
                    plan->payload ? strlen(plan->payload) : 0, plan->score, m->opts.dead_timeout,
                    m->opts.dead_max_jobs};
    write_outcome(p, job, &o, plan->kind == HH_FAIL_RETRY ? "retry entry" : plan->kind == HH_FAIL_DEAD ? "dead entry" : "removal");
    sdsfree(list);
}

/* A malformed payload goes to the dead set with the reason, never dropped. */
static void bury_malformed(hh_processor *p, const hh_job *job, size_t qi, const char *why) {
    struct hh_manager *m = p->m;
    const char *queue = m->queues[qi];
    size_t len = 0;
    double now = hh_now();
    char *entry = hh_malformed_dead_payload(job->payload, job->len, why, now, m->opts.redis.timestamps, &len);
    hh_log(&m->log, HH_LOG_WARN, "queue=%s: malformed job moved to the dead set: %s", queue, why);
    if (!entry) return; /* out of memory: it stays in progress and is recovered */
    int reliable = m->opts.fetch != HH_FETCH_BASIC;
    hh_outcome o = {HH_OUTCOME_DEAD, reliable ? HH_SOURCE_LIST : HH_SOURCE_NONE, m->inprog_keys[qi], job->payload,
                    job->len, entry, len, now, m->opts.dead_timeout, m->opts.dead_max_jobs};
    write_outcome(p, job, &o, "dead entry");
    free(entry);
}

/* Runs one fetched job; returns the seconds its handler took. */
static double run_job(hh_processor *p, hh_fetched *f) {
    struct hh_manager *m = p->m;
    char why[256];
    hh_job *job = hh_job_adopt(f->payload, f->len, m->queues[f->queue], why, sizeof(why));
    f->payload = NULL; /* the job owns it now */
    if (!job) { /* out of memory: the job stays in progress, reconciliation pushes it back */
        hh_lease_release(m, &f->lease);
        return 0;
    }
    job->lease = f->lease;
    f->lease = 0;
    if (!job->item) {
        bury_malformed(p, job, f->queue, why);
        hh_lease_release(m, &job->lease);
        hh_job_free(job);
        return 0;
    }
    job->manager = m;
    job->processor = p;
    job->run_at = hh_now();
    pthread_mutex_lock(&p->mu);
    p->job = job;
    p->abandoned = 0;
    p->lease_lost = 0;
    p->runs++;
    atomic_store(&p->cancelled, 0);
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add(&m->busy, 1);
    hh_log(&m->log, HH_LOG_DEBUG, "class=%s jid=%s queue=%s: start", job->klass, job->jid, job->queue);

    const hh_handler *h = find_handler(m, job);
    hh_chain chain = {m, 0, h};
    double t0 = hh_mono();
    int rc = hh_chain_next(&chain, job);
    double elapsed = hh_mono() - t0;

    pthread_mutex_lock(&p->mu);
    int abandoned = p->abandoned, lost = p->lease_lost;
    p->job = NULL;
    p->lease_lost = 0;
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_sub(&m->busy, 1);
    if (abandoned || lost) {
        /* Pushed back by the hard shutdown, or recovered by another process
         * (lease.c): the job belongs elsewhere now, so no outcome here. */
        if (lost)
            hh_log(&m->log, HH_LOG_WARN, "class=%s jid=%s: handler ended (%s) after the lease was lost; outcome not written",
                   job->klass, job->jid, rc == 0 ? "success" : "failure");
        hh_lease_release(m, &job->lease);
        hh_job_free(job);
        return elapsed;
    }
    atomic_fetch_add(&m->processed, 1);
    atomic_fetch_add(&m->unflushed_processed, 1);
    if (rc == 0) {
        hh_log(&m->log, HH_LOG_DEBUG, "class=%s jid=%s: done in %.3f s", job->klass, job->jid, elapsed);
        if (m->opts.fetch == HH_FETCH_BASIC) {
            hh_job_free(job);
        } else {
            /* The ack rides with the next fetch (one round trip, not two). */
            hh_fetch_queue_ack(m, job, &p->conn);
        }
        return elapsed;
    }
    atomic_fetch_add(&m->failed, 1);
    atomic_fetch_add(&m->unflushed_failed, 1);
    if (!job->error_class) hh_job_fail(job, "hiredhand::JobFailed", "handler returned %d", rc);
    hh_retry_config rcfg = {m->opts.max_retries, m->opts.redis.timestamps,
                            h != NULL && h != &m->default_handler};
    hh_failure_plan plan;
    if (job->lossy) {
        /* Cannot be re-serialised without changing its numbers: no retry
         * entry; the exact bytes go to the dead set unless retry is false. */
        json_t *retry = json_object_get(job->item, "retry");
        int falsy = json_is_false(retry) || (!retry && !rcfg.class_known);
        plan = (hh_failure_plan){falsy ? HH_FAIL_DISCARD : HH_FAIL_DEAD, hh_now(),
                                 falsy ? NULL : strdup(job->payload),
                                 "integers beyond 64 bits: kept byte for byte in the dead set, not retried"};
        hh_log(&m->log, HH_LOG_WARN, "class=%s jid=%s: failed: %s: %s (%s)", job->klass, job->jid, job->error_class,
               job->error_message ? job->error_message : "", plan.reason);
        if (plan.kind == HH_FAIL_DISCARD || plan.payload) write_failure(p, job, &plan);
        free(plan.payload);
    } else if (hh_retry_plan(job, &rcfg, hh_now(), &p->rng, &plan) == 0) {
        hh_log(&m->log, HH_LOG_WARN, "class=%s jid=%s: failed in %.3f s: %s: %s (%s)", job->klass,
               job->jid, elapsed, job->error_class, job->error_message ? job->error_message : "",
               plan.reason);
        write_failure(p, job, &plan);
        free(plan.payload);
    }
    hh_lease_release(m, &job->lease);
    hh_job_free(job);
    return elapsed;
}

void *hh_processor_main(void *arg) {
    hh_processor *p = arg;
    struct hh_manager *m = p->m;
    while (!atomic_load(&m->booted) && !atomic_load(&m->quiet)) hh_sleep(0.05);
    while (!atomic_load(&m->quiet)) {
        hh_fetched f;
        if (hh_fetch_next(p, &f) != 1) continue;
        if (atomic_load(&m->quiet)) { /* fetched after quiet: straight back */
            hh_fetch_push_back(m, &p->conn, &f);
            hh_lease_release(m, &f.lease);
            free(f.payload);
            break;
        }
        hh_fetch_ran(p, run_job(p, &f));
        free(f.payload);
    }
    hh_fetch_push_back_pending(m, &p->conn);
    hh_fetch_flush_acks(m, &p->conn);
    hh_conn_close(&p->conn);
    return NULL;
}

void hh_unfinished_free(hh_unfinished *u) {
    free(u->payload);
    u->payload = NULL;
}

int hh_processor_abandon(hh_processor *p, hh_unfinished *out) {
    int rc = 0;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&p->mu);
    if (p->job && !p->abandoned) {
        struct hh_manager *m = p->m;
        size_t q = 0;
        while (q + 1 < m->nqueues && strcmp(m->queues[q], p->job->queue) != 0) q++;
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

size_t hh_processor_take_pending(struct hh_manager *m, hh_unfinished **out) {
    *out = NULL;
    hh_fetched *f = NULL;
    size_t n = hh_fetch_take_pending(m, &f);
    if (n && !(*out = calloc(n, sizeof(**out)))) { /* out of memory: said where each one is */
        for (size_t i = 0; i < n; i++) {
            hh_fetch_report_unreturned(m, f[i].queue, f[i].payload, f[i].len, "out of memory");
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
