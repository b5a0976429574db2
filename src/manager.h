/* manager.h -- the manager's internal state. Only manager.c, registry.c
 * and shutdown.c create, free or read it: every file it drives (the worker
 * threads, the fetcher, the lease, pickup, the heartbeat, the scheduler,
 * cron, recovery, the HTTP server) reads the one read-only context
 * (context.h) filled here, plus an env of its own state, so none of them
 * includes this one (docs/design.md). No Redis keys of its own. */
#ifndef HH_MANAGER_H
#define HH_MANAGER_H

#include <pthread.h>
#include <stdatomic.h>
#include "batch.h"
#include "buffer.h"
#include "context.h"
#include "fetch.h"
#include "finish.h"
#include "heartbeat.h"
#include "hiredhand.h"
#include "job.h"
#include "keys.h"
#include "lease.h"
#include "pickup.h"
#include "processor.h"
#include "recovery.h"
#include "redis.h"
#include "scheduler.h"
#include "cron.h"
#include "util.h"
#include "wake.h"
#include "worker.h"

#define HH_MANAGER_UNREADY_MAX 16 /* sources of hh_manager_set_unready() at once */

struct hh_manager {
    hh_manager_options opts; /* strings below are owned copies */
    hh__redis_config cfg;
    hh__keys keys;
    hh__logger log;
    char identity[256];
    char hostname[200];
    int fixed_identity;

    size_t nqueues;
    char **queues;    /* names, configuration order, duplicates removed */
    sds *queue_keys;  /* queue:<q>, namespaced, per queue */
    sds *inprog_keys; /* this identity's in-progress list per queue */
    int *weights;
    int weighted; /* any weight > 0: shuffle per fetch */
    char **labels;
    char *tag, *version;

    hh__handler *handlers;
    size_t nhandlers;
    hh__handler default_handler;
    /* The first hh_manager_register() that failed (0: none) and its reason:
     * hh_manager_start refuses to start after one, so a plug-in that
     * ignores the error does not run with another handler in its place. */
    int register_error;
    char register_why[1024];
    hh__middleware *middleware;
    size_t nmiddleware;
    hh_heartbeat_hook_fn hook;
    void *hook_udata;

    hh__processor *procs;
    hh__fetch_env fetch_env;   /* fetch.c's env; .fetcher: buffer, idle waits */
    hh__finish_env finish_env; /* finish.c's env; .acks: the queued acks */
    hh__buffer *buffer;        /* buffer.c: fetched jobs not started, sleepers, queue marks */
    hh__pickup_env pickup_env; /* pickup.c's env; wakes idle threads when a queue is written */
    pthread_t heartbeat_thread, scheduler_thread, recovery_thread, supervisor_thread;
    int heartbeat_started, scheduler_started, recovery_started, supervisor_started;
    pthread_t cron_thread; /* the periodic-job poller (cron.c), when cron_poll_interval > 0 */
    int cron_started;

    atomic_int started;
    atomic_int detached; /* threads left in a handler or a Redis call at the stop's deadline */
    hh__flags flags;     /* quiet, stopping, booted ... (context.h) */
    /* Wakes the threads waiting for a change of the flags above (wake.h):
     * whoever sets one calls hh__wake_all(), or hh__wake_poke() where it may
     * run in a signal handler (the supervisor relays those). */
    hh__wake wake;
    hh__counters counters; /* processed, failed, fetched[] ... (context.h) */
    /* What every loop reads (context.h): filled once by hh_manager_new,
     * its started_at by hh_manager_start; points into the fields here. */
    hh__ctx ctx;

    hh__batch batch;         /* jobs of Sidekiq Pro batches: counted, logged once a batch */
    hh__lease_env lease_env; /* lease.c's env; .lease: held jobs, reconciliation, outage rule */

    hh__board board;      /* what the beats learned (heartbeat.h), for the stats */
    pthread_mutex_t lock; /* guards unready below */
    struct {
        char source[64], reason[190];  /* source "": a free slot; "source: reason" fits the stats */
        unsigned long long seq;        /* set order: the oldest is shown */
    } unready[HH_MANAGER_UNREADY_MAX]; /* guarded by lock (hh_manager_set_unready) */
    unsigned long long unready_seq;
    struct hh__http *http;         /* NULL unless http_bind */
    struct hh__metrics *metrics;   /* per-class counts and set sizes for /metrics; NULL unless http_bind */
    hh__job_metrics *job_metrics;  /* Sidekiq's Metrics tab (job_metrics.h); NULL when opts.job_metrics is 0 */
    hh__recovery_env recovery_env; /* the recovery thread's env (recovery.h) */
    hh__cron_env cron_env;         /* the cron poller's env (cron.h) */
    hh__cron_counts cron_counts;   /* what its last poll saw */
    char **cron_ns;                /* namespaces polled (copied; "default" when none given) */
    size_t ncron_ns;
    hh__heartbeat_env heartbeat_env; /* the heartbeat thread's env (heartbeat.h) */
    hh__processor_env processor_env; /* the worker threads' env (processor.h), filled at start */
};

/* manager.c */
/* The stats snapshot behind hh_manager_get_stats(); no I/O. Queues go to
 * out->queues, up to out->queues_cap (both kept). */
void hh__manager_fill_stats(struct hh_manager *m, hh_manager_stats *out);
/* The heartbeat thread's env (heartbeat.h); points into m. Fill it
 * after started_at and the HTTP server are set. */
void hh__manager_heartbeat_env(struct hh_manager *m, hh__heartbeat_env *out);
/* The cron poller's env (cron.h); points into m. */
void hh__manager_cron_env(struct hh_manager *m, hh__cron_env *out);
/* The recovery thread's env (recovery.h); points into m. */
void hh__manager_recovery_env(struct hh_manager *m, hh__recovery_env *out);

/* The supervisor thread (shutdown.c), started by hh_manager_start with the
 * manager as arg: waits for the stop, then runs it. */
void *hh__manager_supervisor_main(void *arg);

#endif
