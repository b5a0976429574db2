/* heartbeat.h -- the process registry the Web UI reads: every
 * beat flushes the stats, rewrites the running-jobs hashes, refreshes the
 * process hash with its TTL and pops one remote signal, all in one
 * MULTI/EXEC. */
#ifndef HH_HEARTBEAT_H
#define HH_HEARTBEAT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "context.h"
#include "hiredhand.h"
#include "job.h"
#include "job_metrics.h"
#include "lease.h"
#include "metrics.h"
#include "keys.h"
#include "redis.h"
#include "util.h"
#include "wake.h"

/* Called for each worker thread, under that thread's lock: its tid, the
 * job it runs (NULL when idle) and whether the hard shutdown took it. */
typedef void (*hh__heartbeat_thread_fn)(void *ctx, const char *tid, const hh_job *job, int abandoned);

/* What the beats learned, for the stats snapshot and /healthz: the
 * heartbeat writes it after each beat, hh__manager_fill_stats reads it,
 * both under mu. The manager owns it (hh__board_init/_destroy). */
typedef struct hh__board {
    pthread_mutex_t mu;
    double last_pushed_at; /* the last beat Redis took; 0: none yet */
    char last_error[256];  /* the last beat's error; "": it went in */
    int connected;         /* the heartbeat's connection is up */
    size_t nqueues;
    int64_t *queue_size;   /* per queue, read at each beat; -1: not read */
    double *queue_latency; /* per queue, seconds */
} hh__board;

/* Returns 0, or -1 out of memory. */
int hh__board_init(hh__board *b, size_t nqueues);
void hh__board_destroy(hh__board *b);

/* The heartbeat's env: the manager's context and its own fields; the
 * manager fills it and keeps it alive while the thread runs. What a beat
 * learns goes on the board; the lease's upkeep after a beat and a take-over
 * are direct calls (lease.c is below this file); a remote signal and the
 * user's hook go up through hh__ctx.signal. */
typedef struct hh__heartbeat_env {
    const hh__ctx *ctx; /* the manager's (context.h): identity, queues, options, flags, counters */
    int reads_queues;   /* someone reads queue sizes (HTTP, the hook): read them each beat */
    /* For tests, NULL otherwise: bumped each time the thread finds boot not
     * done yet and waits for it, so a test can tell the thread reached the
     * wait (and has not beaten) without sleeping. */
    atomic_int *boot_waits;
    hh__job_metrics *job_metrics; /* written after each beat Redis took; NULL: off */
    hh__metrics *metrics;         /* retry/schedule/dead sizes for /metrics; NULL: not read */
    hh__board *board;             /* what the beats learned, for the stats */
    const hh__lease_env *lease;   /* lease.c: upkeep after each beat, identity taken over; NULL: none */
} hh__heartbeat_env;

/* Thread entry point; arg is an hh__heartbeat_env. Beats every interval
 * until beats_off is set. */
void *hh__heartbeat_main(void *arg);

/* The info JSON. Free with free(). */
char *hh__heartbeat_info(const hh__heartbeat_env *e);

/* Clean stop: leave `processes`, delete both running-jobs
 * hashes, flush the counters not yet flushed. Returns 0 or -1. */
int hh__heartbeat_unregister(const hh__heartbeat_env *e, hh__conn *c);

/* The command writing a running job into a work hash, in RESP: HSET key tid
 * {"queue":..,"payload":"<payload as a JSON string>","run_at":N}, the value
 * byte for byte what jansson's json_dumps gives, built in one buffer. NULL
 * when the payload is not valid UTF-8 or out of memory. */
sds hh__heartbeat_work_hset(const char *key, const char *tid, const hh_job *job);

/* Resident set size in KB from /proc/self/status (0 when unknown). */
long hh__rss_kb(void);

#endif
