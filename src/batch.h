/* batch.h -- jobs of Sidekiq Pro batches (a "bid" in the payload). Pro
 * keeps each batch's books (pending and failure counts, callbacks) in keys
 * whose layout is closed, so hiredhand cannot keep them: such a job is
 * counted, its batch logged once at WARN, and run or left to Ruby processes
 * as hh_manager_options.batch_jobs says (docs/running-workers.md). No Redis I/O here: the
 * processor writes a skipped job into the schedule set (outcome.c). */
#ifndef HH_BATCH_H
#define HH_BATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "hiredhand.h"
#include "job.h"
#include "util.h"

/* Batches already logged: a bounded table of bid hashes (a full table logs
 * no new batch, which costs only log lines). */
#define HH_BATCH_SEEN_SLOTS 4096
#define HH_BATCH_SKIP_DELAY 5.0 /* seconds a skipped job waits in schedule */

typedef struct hh__batch {
    hh_batch_jobs mode;
    const hh__logger *log;
    atomic_ullong jobs; /* jobs with a bid, since start */
    pthread_mutex_t mu;
    uint64_t seen[HH_BATCH_SEEN_SLOTS]; /* 0: empty */
    size_t nseen;
} hh__batch;

void hh__batch_init(hh__batch *b, hh_batch_jobs mode, const hh__logger *log);
void hh__batch_destroy(hh__batch *b);

/* The "bid" of a parsed payload (a non-empty string), or NULL. */
const char *hh__batch_id(const json_t *item);

/* Whether a fetched job is one of a batch: 0 not, 1 run it, 2 skip it (the
 * caller moves it to the schedule set). Counts it and logs its batch the
 * first time. Thread-safe. */
int hh__batch_check(hh__batch *b, const hh_job *job);

#endif
