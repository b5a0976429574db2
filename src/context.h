/* context.h -- what the manager shares with every loop it drives (the
 * worker threads, the fetcher, finish, the lease, pickup, the heartbeat,
 * the scheduler, the cron poller, recovery): one read-only hh__ctx the
 * manager fills once, in hh_manager_new and hh_manager_start, and hands
 * to each loop by pointer. It holds the identity, the Redis settings, the
 * queues and the options the loops read, and points at the state they
 * share and change: the flags (hh__flags), the counters (hh__counters)
 * and the wake. A loop's own env keeps only its own state and callbacks,
 * so no field is copied twice (docs/design.md, Layering). Owns no
 * memory and no Redis keys; below every loop file. */
#ifndef HH_CONTEXT_H
#define HH_CONTEXT_H

#include <stdatomic.h>
#include <stddef.h>
#include "hiredhand.h"
#include "keys.h"
#include "redis.h"
#include "util.h"
#include "wake.h"

/* The flags the loops read and set. Whoever sets one calls hh__wake_all()
 * on the context's wake (or hh__wake_poke() in a signal handler). */
typedef struct hh__flags {
    atomic_int quiet;       /* stop fetching */
    atomic_int stopping;    /* stop requested */
    atomic_int beats_off;   /* heartbeat thread must exit */
    atomic_int booted;      /* identity checked and own leftovers recovered */
    atomic_int start_error; /* HH_ERR_EXISTS when the identity proved live elsewhere */
    atomic_int taken_over;  /* a newer process took the identity over (then start_error is HH_ERR_EXISTS) */
    atomic_int giving_up;   /* stop timed out: stop retrying writes, leave jobs to recovery */
    atomic_int done;        /* fully stopped */
    atomic_int dump_requested;
} hh__flags;

/* The counters: totals since start, and those not yet flushed to Redis. */
typedef struct hh__counters {
    atomic_int busy;                                     /* jobs running now */
    atomic_int outcomes_refused;                         /* job outcomes Redis refuses now, retried (outcome.h) */
    atomic_int workers_done;                             /* worker threads past their last use of Redis */
    atomic_ullong processed, failed, recovered;          /* totals */
    atomic_ullong unflushed_processed, unflushed_failed; /* not yet in Redis's stat:* */
    atomic_ullong not_pushed_back;                       /* basic fetch's jobs gone from Redis (fetch.c) */
    atomic_ullong lease_lost, reconciled;                /* lease.c */
    atomic_ullong *fetched;                              /* per queue (nqueues) */
} hh__counters;

/* What a loop asks of the manager above it, through hh__ctx.signal: the
 * one way up (a loop never calls the public API). QUIET, STOP and DUMP do
 * what hh_manager_quiet, _stop and _dump do (a remote signal, an identity
 * live elsewhere); BEAT_OK and BEAT_FAILED follow each beat (the user's
 * heartbeat hook, with the stats). */
typedef enum {
    HH_SIGNAL_QUIET,
    HH_SIGNAL_STOP,
    HH_SIGNAL_DUMP,
    HH_SIGNAL_BEAT_OK,
    HH_SIGNAL_BEAT_FAILED,
} hh__signal;

/* Read-only once the manager has started its threads. */
typedef struct hh__ctx {
    const hh__keys *keys;
    const hh__logger *log;
    hh__redis_config *cfg; /* not const: its reachability flag is atomic */
    const char *identity, *hostname, *tag, *version;
    char *const *labels; /* NULL-terminated, may be NULL */
    int fixed_identity;  /* a stable identity: may own leftovers of an earlier run */
    double started_at;   /* set by hh_manager_start */

    size_t nqueues;
    char *const *queues; /* names, configuration order, duplicates removed */
    sds *queue_keys;     /* queue:<q>, namespaced, per queue */
    sds *inprog_keys;    /* this identity's in-progress list per queue */
    const int *weights;
    int weighted; /* any weight > 0: shuffle per fetch */

    /* The options the loops read, with their defaults applied. */
    struct {
        int concurrency;
        hh_fetch_mode fetch;
        hh_timestamps timestamps;
        double heartbeat_interval, recovery_interval;
        double poll_interval_average, average_scheduled_poll_interval;
        double dead_timeout;
        long dead_max_jobs;
        int max_retries, max_recoveries;
        hh_lease_lost_policy lease_lost;
        double cron_poll_interval;
    } opts;

    struct hh__processor *procs; /* opts.concurrency worker threads (worker.h) */

    hh__flags *flags;       /* the manager's */
    hh__counters *counters; /* the manager's */
    hh__wake *wake;         /* wakes the threads waiting for a flag */

    /* The manager's answer to hh__signal; signal_udata is its argument.
     * May run on any loop's thread; never NULL once the manager is made. */
    void (*signal)(void *signal_udata, hh__signal what);
    void *signal_udata;
} hh__ctx;

#endif
