/* worker.h -- one worker thread's state, shared by the files that serve
 * the worker threads (processor.c runs the job, fetch.c fetches for it,
 * lease.c watches what it holds, the heartbeat lists it) and owned by
 * manager.c, which makes one per unit of concurrency; the array is in the
 * manager's context (context.h). It sits below all of them and includes
 * none. No Redis keys. */
#ifndef HH_WORKER_H
#define HH_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include "job.h"
#include "redis.h"
#include "util.h"

/* Sidekiq's BRPOP timeout: an idle thread blocked in Redis notices quiet
 * within it. fetch.c blocks this long without pickup.c's wake-up, and
 * lease.c waits for fetches in flight no longer than it (plus timeouts). */
#define HH_FETCH_BLOCK_SECONDS 2.0

/* One worker thread: its connection, its fetch state and the job it runs.
 * `mu` guards job/abandoned against the heartbeat and the shutdown path. */
typedef struct hh__processor {
    const struct hh__processor_env *env; /* processor.c's env (its ->ctx: the manager's context) */
    const struct hh__fetch_env *fetch;   /* fetch.c's env */
    int index;
    char tid[16];
    pthread_t thread;
    int thread_started;
    hh__conn conn;
    hh__rng rng;
    pthread_mutex_t mu;
    hh_job *job;          /* running job, NULL when idle */
    int abandoned;        /* hard shutdown pushed `job` back already */
    atomic_int cancelled; /* read by hh_job_cancelled() */
    unsigned long runs;   /* jobs started (tells one run of `job` from the next); mu */
    int lease_lost;       /* another process recovered `job` (lease.c); mu */
} hh__processor;

#endif
