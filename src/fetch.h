/* fetch.h -- taking jobs off queues: the queue order (strict or weighted,
 * Sidekiq 6.4 lib/sidekiq/fetch.rb), reliable fetch into a private
 * in-progress list, basic BRPOP fetch, the buffer of fetched jobs the
 * worker threads share. Acks ride with a fetch; they and push backs are
 * finish.h's. */
#ifndef HH_FETCH_H
#define HH_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include "hiredhand.h"
#include "job.h"
#include "buffer.h"
#include "finish.h"
#include "keys.h"
#include "lease.h"
#include "pickup.h"
#include "redis.h"
#include "util.h"
#include "worker.h"

#define HH_FETCH_BATCH_MAX 96 /* jobs one thread may take per fetch (fast jobs only) */
/* Idle threads wait for pickup.c's wake-up. Without one (no CLIENT
 * TRACKING), idle reliable fetchers block on one queue each for
 * HH_FETCH_BLOCK_SECONDS; idle threads beyond one waiter per queue sleep in
 * the process this long at most, a waiter that gets a job (or leaves) wakes
 * them at once. */
#define HH_FETCH_SLEEPER_SECONDS 30

/* Writes the order in which to try the n queues into out (indexes), as
 * Sidekiq does: strict keeps configuration order; weighted repeats queue i
 * max(weights[i], 1) times, shuffles, keeps each queue's first occurrence.
 * Returns n. Thread-safe with a per-caller rng. */
size_t hh__queue_order(const int *weights, size_t n, int weighted, hh__rng *rng, size_t *out);

/* fetch.c's env: the manager's context, the files it drives and its own
 * state, filled by manager.c (which keeps it alive while the fetcher
 * lives); every worker thread
 * reaches it through its hh__processor.fetch. */
typedef struct hh__fetch_env {
    const hh__ctx *ctx;           /* the manager's (context.h): queues, weights, quiet, fetched, procs */
    const hh__lease_env *lease;   /* lease.c: the held jobs of every fetch */
    const hh__finish_env *finish; /* finish.c: acks (sent with each fetch), push backs */
    hh__buffer *buffer;           /* buffer.c: fetched jobs not started, sleepers, queue marks */
    hh__pickup_env *pickup;       /* pickup.c: idle threads' wake-up */
    struct hh__fetcher *fetcher;  /* the state below: hh__fetcher_new's, set by manager.c */
} hh__fetch_env;

/* The fetcher's state, owned here: the idle threads' waits (the buffer of
 * fetched jobs not started yet is buffer.h's, used under its mutex), the queues known to be empty and each
 * thread's fetch space. Created and freed by manager.c (env->fetcher). */
typedef struct hh__fetcher hh__fetcher;
hh__fetcher *hh__fetcher_new(const hh__fetch_env *env);
void hh__fetcher_free(hh__fetcher *f);

/* The next job for worker thread p: the oldest buffered one, else a fetch
 * for this thread and the idle ones (the rest buffered), waiting while
 * every queue is empty. Returns 1 with *out set, 0 when nothing came (quiet,
 * or look again), -1 on a Redis error (logged, backed off). */
int hh__fetch_next(hh__processor *p, hh__fetched *out);
/* Tells the fetcher thread p ran a job that took seconds (batch sizing). */
void hh__fetch_ran(hh__processor *p, double seconds);
/* Pushes every buffered job back to its queue (finish.c's push back). */
void hh__fetch_push_back_pending(const hh__fetch_env *env, hh__conn *conn);
/* Wakes idle threads sleeping in the process (quiet, stop): no Redis. */
void hh__fetch_wake_sleepers(const hh__fetch_env *env);

/* Ends the blocking fetch of every worker thread now (CLIENT UNBLOCK on a
 * connection of its own), so quiet and stop take effect at once. */
void hh__fetch_wake(const hh__fetch_env *env, hh__conn *c);
/* Only the CLIENT UNBLOCK part, for the threads inside a blocking call. */
void hh__fetch_unblock(const hh__fetch_env *env, hh__conn *c);

#endif
