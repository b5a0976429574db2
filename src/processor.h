/* processor.h -- the worker threads: fetch, run the middleware chain and
 * the handler, then have the outcome written (outcome.c) or the ack queued
 * (fetch.c), as Sidekiq's processor does (docs/design.md). */
#ifndef HH_PROCESSOR_H
#define HH_PROCESSOR_H

#include "manager.h"

/* Thread entry point; arg is the hh_processor. */
void *hh_processor_main(void *arg);

/* A job the hard shutdown pushes back: a copy of its exact bytes, owned by
 * the holder (hh_unfinished_free), and its queue. */
typedef struct hh_unfinished {
    char *payload;
    size_t len;
    size_t queue; /* index into m->queues */
} hh_unfinished;

/* Hard shutdown, no I/O: if p still runs a job, marks it abandoned (the
 * handler's outcome will be ignored) and cancelled (hh_job_cancelled(),
 * --exec kills its process group), and copies it into *out for the push
 * back. Returns 1 when it copied a job, 0 when idle or out of memory (the
 * job is cancelled then, not abandoned: its outcome is written as usual). */
int hh_processor_abandon(hh_processor *p, hh_unfinished *out);

/* Takes every fetched job no thread has started yet; *out is malloc'd.
 * Returns how many (0 and *out NULL when none). No I/O. */
size_t hh_processor_take_pending(struct hh_manager *m, hh_unfinished **out);

void hh_unfinished_free(hh_unfinished *u);

#endif
