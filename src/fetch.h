/* fetch.h -- taking jobs off queues: the queue order (strict or weighted,
 * Sidekiq 6.4 lib/sidekiq/fetch.rb), reliable fetch into a private
 * in-progress list, basic BRPOP fetch, acknowledging and pushing back. */
#ifndef HH_FETCH_H
#define HH_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include "manager.h"

#define HH_FETCH_BATCH_MAX 32 /* jobs one thread may take per fetch (fast jobs only) */
#define HH_FETCH_BLOCK_SECONDS 2.0 /* Sidekiq's BRPOP timeout: quiet noticed within 2 s */
/* An idle thread that is the waiter for its queue blocks this long: idle
 * processes cost a few commands a second. Quiet ends the wait at once with
 * CLIENT UNBLOCK (hh_fetch_wake). */
#define HH_FETCH_IDLE_BLOCK_SECONDS 10.0
/* Idle threads beyond one waiter per queue sleep in the process this long
 * at most; a waiter that gets a job (or leaves) wakes them at once. */
#define HH_FETCH_SLEEPER_SECONDS 30
#define HH_FETCH_JOIN_GRACE 3.0 /* s for idle threads to leave their blocking fetch */

/* Writes the order in which to try the n queues into out (indexes), as
 * Sidekiq does: strict keeps configuration order; weighted repeats queue i
 * max(weights[i], 1) times, shuffles, keeps each queue's first occurrence.
 * Returns n. Thread-safe with a per-caller rng. */
size_t hh_queue_order(const int *weights, size_t n, int weighted, hh_rng *rng, size_t *out);

typedef struct hh_fetched {
    char *payload; /* malloc'd, NUL-terminated */
    size_t len;
    size_t queue;  /* index into m->queues */
    uint64_t lease; /* key in the held-jobs registry, 0 when not held (lease.c) */
} hh_fetched;

/* Fetches up to max jobs (each job's queue drawn in Sidekiq's order) for
 * processor p into out[], blocking when every queue is empty. Queued acks
 * go out in the same round trip. Returns
 * the number of jobs, 0 when nothing came, -1 on a Redis error (already
 * logged and backed off). */
int hh_fetch(hh_processor *p, hh_fetched *out, size_t max);

/* Queues the ack of a finished job (which it then owns and frees); sends
 * the queue with connection c when it is full. Thread-safe. */
void hh_fetch_queue_ack(struct hh_manager *m, hh_job *job, hh_conn *c);

/* Sends every queued ack (pipelined LREMs) with connection c, retrying
 * through outages until done or the stop gave up. Thread-safe. */
void hh_fetch_flush_acks(struct hh_manager *m, hh_conn *c);
/* The same, one attempt: what fails stays queued (for the supervisor, which
 * must never block on an outage). */
void hh_fetch_try_acks(struct hh_manager *m, hh_conn *c);

/* Appends the ack (LREM of the exact payload) to a pipeline; nothing in
 * basic fetch. */
void hh_fetch_ack_append(struct hh_manager *m, hh_pipe *pipe, const hh_job *job);

/* Pushes a fetched job back to the tail of its queue (runs next), exact
 * bytes, once: LREM+RPUSH in one script for reliable fetch, RPUSH for basic.
 * Returns 1 pushed, 0 it was no longer in progress, -1 Redis error. */
int hh_fetch_requeue(struct hh_manager *m, hh_conn *c, const char *queue, const char *payload,
                     size_t len);

/* Ends the blocking fetch of every worker thread now (CLIENT UNBLOCK on a
 * connection of its own), so quiet and stop take effect at once. */
void hh_fetch_wake(struct hh_manager *m, hh_conn *c);

#endif
