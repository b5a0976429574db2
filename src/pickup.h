/* pickup.h -- waking idle worker threads the moment a job lands in any of
 * their queues, whoever pushed it (hiredhand, Sidekiq's Ruby client, a bare
 * LPUSH), with no waiting on one queue at a time.
 *
 * The wake-up is Redis' own client-side-caching invalidation (Redis >= 6):
 * while some thread of the process is idle, one connection has
 * CLIENT TRACKING on in broadcast mode for the prefix <ns>queue:, redirected
 * to a second connection subscribed to __redis__:invalidate. Any write to a
 * queue list then arrives as a message naming the key; the waker thread
 * (pickup.c) matches it against this process's queues and wakes one idle
 * thread per queue written, which runs the ordinary fetch. Tracking is on
 * only while threads are idle, so a busy process pays nothing per job.
 *
 * Without CLIENT TRACKING (Redis < 6, or refused by an ACL) hh__pickup_wait
 * says so and the fetcher falls back to blocking on one queue per thread
 * (fetch.c), logged once. Keys: none written; tracks <ns>queue:*. */
#ifndef HH_PICKUP_H
#define HH_PICKUP_H

#include "buffer.h"
#include "context.h"
#include <stdatomic.h>
#include "keys.h"
#include "redis.h"
#include "util.h"
#include "worker.h"

/* An idle thread that is the process' one poller re-runs the fetch this often
 * even without a wake-up, as a safety net; the other idle threads wait for a
 * wake-up only (idle costs a few Redis commands a minute). */
#define HH_PICKUP_POLL_SECONDS 10.0
/* Tracking is switched off once no thread has been idle for this long:
 * while it is on, every write to a queue costs Redis a little (a message
 * per event-loop round), measurable when jobs flow at full speed. Switching
 * it on again costs one command and one fetch per idle thread. */
#define HH_PICKUP_OFF_AFTER 0.25

/* Taken before every fetch; then exactly one of hh__pickup_wait (the fetch
 * found nothing) or hh__pickup_done. */
typedef struct hh__pickup_ticket {
    unsigned long gen;
    /* hh__pickup_wait can wake this thread for a write made after the
     * ticket (tracking on, or being switched on); 0: no wake-up (no
     * pickup, or no CLIENT TRACKING) */
    int wakes;
} hh__pickup_ticket;

/* pickup.c's env: the manager's context and its own state, filled by
 * manager.c and kept alive while the waker runs. What a write means for the fetch goes into the
 * shared buffer's queue marks (buffer.h), below this file. */
typedef struct hh__pickup_env {
    const hh__ctx *ctx; /* the manager's (context.h): queue keys, quiet */
    /* Told when queue q was written (it may hold jobs again), every key
     * (FLUSHALL), and when tracking comes on (every write to a queue is
     * seen from now on) or goes off (writes may go unseen from now on).
     * NULL: nobody to tell. */
    hh__buffer *buffer;
    struct hh__pickup *pickup; /* the state: set by hh__pickup_start, NULL without */
} hh__pickup_env;

/* Creates the pickup state and starts the waker thread (env->pickup). Returns
 * 0, or -1 when it could not (then every wait falls back). */
int hh__pickup_start(hh__pickup_env *env);
/* Jobs flow again (a batch came in): wakes up to n threads waiting for a
 * write, so they join the flow rather than wait for the writes their
 * queues may never see again (a burst that landed in one write). */
void hh__pickup_wake(hh__pickup_env *env, long n);
/* Wakes the waker and every idle thread (quiet, stop): they see the quiet flag. */
void hh__pickup_poke(hh__pickup_env *env);
/* Joins the waker thread (call after quiet); idempotent. */
void hh__pickup_stop(hh__pickup_env *env);
/* The same, waiting only until deadline (hh__mono() seconds): returns 1
 * joined, 0 the waker was left behind (still in a Redis call). */
int hh__pickup_stop_by(hh__pickup_env *env, double deadline);
/* Stops, then frees the state (env->pickup NULL). */
void hh__pickup_free(hh__pickup_env *env);

void hh__pickup_ticket_take(hh__pickup_env *env, hh__pickup_ticket *t);
/* After a fetch taken with ticket t found every queue empty: waits until a
 * queue of this process may have been written since the ticket, the poll
 * interval passed, `cap` seconds passed (cap > 0: the fetcher has a check
 * due then, such as a wrong-typed queue's), or quiet. Returns 1: fetch
 * again; 0: no wake-up is available (no CLIENT TRACKING), the caller must
 * wait its own way. */
int hh__pickup_wait(hh__pickup_env *env, const hh__pickup_ticket *t, double cap);
/* After a fetch taken with ticket t that got `got` jobs (or -1: an error),
 * instead of hh__pickup_wait: wakes idle threads for a batch's other jobs,
 * and hands on a wake-up that came while this thread was fetching. */
void hh__pickup_done(hh__pickup_env *env, const hh__pickup_ticket *t, int got);

#endif
