/* heartbeat.h -- the process registry the Web UI reads: every
 * beat flushes the stats, rewrites the running-jobs hashes, refreshes the
 * process hash with its TTL and pops one remote signal, all in one
 * MULTI/EXEC. */
#ifndef HH_HEARTBEAT_H
#define HH_HEARTBEAT_H

#include <stdatomic.h>
#include <stdint.h>
#include "context.h"
#include "hiredhand.h"
#include "job.h"
#include "job_metrics.h"
#include "keys.h"
#include "redis.h"
#include "util.h"
#include "wake.h"

/* Called for each worker thread, under that thread's lock: its tid, the
 * job it runs (NULL when idle) and whether the hard shutdown took it. */
typedef void (*hh__heartbeat_thread_fn)(void *ctx, const char *tid, const hh_job *job, int abandoned);

/* What a remote signal popped from <identity>-signals asks for: TSTP
 * quiets, TERM and INT stop, TTIN and INFO dump the threads. */
typedef enum { HH_REMOTE_QUIET, HH_REMOTE_STOP, HH_REMOTE_DUMP } hh__remote_signal;

/* The heartbeat's env: the manager's context and its own fields; the
 * manager fills it and keeps it alive while the thread runs. What the beat learns goes back through
 * the callbacks (udata is their argument). */
typedef struct hh__heartbeat_env {
    const hh__ctx *ctx; /* the manager's (context.h): identity, queues, options, flags, counters */
    int reads_queues;   /* someone reads queue sizes (HTTP, the hook): read them each beat */
    /* For tests, NULL otherwise: bumped each time the thread finds boot not
     * done yet and waits for it, so a test can tell the thread reached the
     * wait (and has not beaten) without sleeping. */
    atomic_int *boot_waits;
    hh__job_metrics *job_metrics; /* written after each beat Redis took; NULL: off */
    void *udata;
    /* Acts on a remote signal as the Unix one would, before returning (the
     * beat reads the quiet flag right after). A callback, not a call into
     * the manager: heartbeat sits below it (scripts/check-calls.sh). */
    void (*remote_signal)(void *udata, hh__remote_signal sig);
    /* Visits every worker thread (for the running-jobs hashes and dumps). */
    void (*each_thread)(void *udata, hh__heartbeat_thread_fn fn, void *ctx);
    /* Records a beat's result for the stats; returns whether the previous
     * beat had failed, with its error in prev. */
    int (*publish)(void *udata, double now, int ok, const char *err, int connected, char *prev, size_t prevlen);
    /* The queue sizes and latencies read this beat (the first n queues). */
    void (*publish_queues)(void *udata, const int64_t *size, const double *latency, size_t n);
    /* The sizes of retry, schedule and dead read this beat (-1: not read),
     * in the same round trip as the queues'. NULL: not read (only /metrics
     * shows them). */
    void (*publish_sets)(void *udata, int64_t retry, int64_t scheduled, int64_t dead);
    /* After each beat: the outage rule and lease upkeep, and the hook. */
    void (*after_beat)(void *udata, hh__conn *c, int ok, int hash_expired);
    /* A beat found the process hash written by a newer process with our
     * identity (`by` names it). Returns 1 to beat no more. May be NULL. */
    int (*taken_over)(void *udata, const char *by);
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
