/* processor.h -- the worker threads: fetch, run the middleware chain and
 * the handler, then have the outcome written (outcome.c) or the ack queued
 * (fetch.c), as Sidekiq's processor does (docs/design.md). */
#ifndef HH_PROCESSOR_H
#define HH_PROCESSOR_H

#include <stdatomic.h>
#include "batch.h"
#include "fetch.h"
#include "hiredhand.h"
#include "job.h"
#include "job_metrics.h"
#include "keys.h"
#include "lease.h"
#include "metrics.h"
#include "util.h"
#include "wake.h"
#include "worker.h"

typedef struct hh__handler {
    char *klass;
    hh_handler_fn fn;
    void *udata;
} hh__handler;

typedef struct hh__middleware {
    hh_middleware_fn fn;
    void *udata;
} hh__middleware;

/* The worker threads' env: the manager's context and what only they use
 * (handlers, middleware, metrics), filled by manager.c at start (the
 * handlers and middleware are final then); each thread reaches it through
 * its hh__processor.env. */
typedef struct hh__processor_env {
    const hh__ctx *ctx; /* the manager's (context.h): queues, options, flags, counters */
    const hh__handler *handlers;
    size_t nhandlers;
    hh__handler default_handler; /* fn NULL: none */
    const hh__middleware *middleware;
    size_t nmiddleware;
    hh__metrics *metrics;         /* per-class counts for /metrics; NULL without HTTP */
    hh__job_metrics *job_metrics; /* Sidekiq's Metrics tab; NULL when off */
    hh__batch *batch;             /* jobs of Sidekiq Pro batches (batch.h) */
    const hh__lease_env *lease;
    const hh__fetch_env *fetch;
} hh__processor_env;

/* Thread entry point; arg is the hh__processor. */
void *hh__processor_main(void *arg);

/* A job the hard shutdown pushes back: a copy of its exact bytes, owned by
 * the holder (hh__unfinished_free), and its queue. */
typedef struct hh__unfinished {
    char *payload;
    size_t len;
    size_t queue; /* index into the queues */
} hh__unfinished;

/* Hard shutdown, no I/O: if p still runs a job, marks it abandoned (the
 * handler's outcome will be ignored) and cancelled (hh_job_cancelled(),
 * --exec kills its process group), and copies it into *out for the push
 * back. Returns 1 when it copied a job, 0 when idle or out of memory (the
 * job is cancelled then, not abandoned: its outcome is written as usual). */
int hh__processor_abandon(hh__processor *p, hh__unfinished *out);

/* Takes every fetched job no thread has started yet; *out is malloc'd.
 * Returns how many (0 and *out NULL when none). No I/O. */
size_t hh__processor_take_pending(const hh__fetch_env *f, hh__unfinished **out);

void hh__unfinished_free(hh__unfinished *u);

#endif
