/* job_metrics.h -- what Sidekiq 7.x/8.x's Metrics tab reads (the Web UI's
 * /metrics pages, Sidekiq::Metrics::Query): per job class and UTC minute,
 * how many runs, how many failed, the milliseconds of the successful ones
 * and a histogram of their durations. Worker threads record each job as its
 * run ends; the heartbeat (and the stop, once more) writes what was recorded
 * since, in one MULTI/EXEC, in the key layout of each Sidekiq generation
 * asked for (hh_manager_options.job_metrics), as Sidekiq's own metrics
 * middleware and its flush on every beat do. Not the Prometheus /metrics of
 * the HTTP server: that is metrics.h. */
#ifndef HH_JOB_METRICS_H
#define HH_JOB_METRICS_H

#include <stdint.h>
#include "job.h"
#include "keys.h"
#include "redis.h"
#include "util.h"

/* Sidekiq's Histogram::BUCKET_INTERVALS: a run of ms milliseconds counts in
 * the first bucket whose edge is above ms (19 ms in bucket 0, 20 ms in 1);
 * the last bucket ("Slow", edge 1e20 in Sidekiq) takes the rest. */
#define HH_JM_BUCKETS 26
/* Bucket i's edge in ms, for i < HH_JM_BUCKETS - 1; UINT64_MAX for the last. */
uint64_t hh__job_metrics_edge(int i);
/* The bucket of a run of ms milliseconds. */
int hh__job_metrics_bucket(uint64_t ms);

/* TTLs, seconds: the minute counters and histograms of both generations
 * (Sidekiq's SHORT_TERM and HISTOGRAM_TTL, 8 h), and 8.x's ten-minute
 * counters (MID_TERM, 3 days). */
#define HH_JM_TTL 28800
#define HH_JM_ROLLUP_TTL 259200

typedef struct hh__job_metrics hh__job_metrics;

/* layouts: HH_JOB_METRICS_7 | HH_JOB_METRICS_8 (hiredhand.h); keys and log
 * must outlive it. NULL when out of memory. */
hh__job_metrics *hh__job_metrics_new(const hh__keys *keys, const hh__logger *log, int layouts);
void hh__job_metrics_free(hh__job_metrics *jm);

/* A job's run ended: counted under its "wrapped" class, else its "class",
 * as Sidekiq's metrics middleware counts: one run, a failure when failed,
 * and, when it succeeded, elapsed_s (truncated to whole ms) in the
 * milliseconds and the histogram. Sidekiq looks the class up before its
 * middleware runs, so a job whose class it lacks (NameError) is never
 * counted: a job no handler took (has_handler 0) is not counted either,
 * unless Active Job's wrapper ran it (the wrapper exists in Sidekiq and
 * fails inside). jm NULL: nothing. Thread-safe; no I/O. */
void hh__job_metrics_ran(hh__job_metrics *jm, const hh_job *job, int has_handler, double elapsed_s, int failed);

/* The same for a class of len bytes (it may hold NUL) and ms milliseconds. */
void hh__job_metrics_record(hh__job_metrics *jm, const char *klass, size_t len, uint64_t ms, int failed);

/* One Redis command as arguments (binary-safe sds). */
typedef struct hh__jm_cmd {
    int argc;
    sds *argv;
} hh__jm_cmd;

/* Takes what was recorded (the next record starts afresh) and returns the
 * commands that write it at `now` (epoch seconds), in the order sent: per
 * class with successful runs and per layout, BITFIELD <hist> OVERFLOW SAT
 * INCRBY u16 #<bucket> <n>... and EXPIRE <hist> 28800; then per counters
 * key (7.x's minute, 8.x's ten minutes, 8.x's minute) HINCRBY <key>
 * <Class>|p|f|ms <n>... and its EXPIRE. *n gets their number; NULL (n 0)
 * when nothing was recorded or out of memory (then dropped). Free with
 * hh__jm_cmds_free. Thread-safe. */
hh__jm_cmd *hh__job_metrics_take(hh__job_metrics *jm, double now, int *n);
void hh__jm_cmds_free(hh__jm_cmd *cmds, int n);

/* Takes what was recorded and writes it on c in one MULTI/EXEC (one round
 * trip). Returns 0 when written or nothing to write; -1 when Redis refused
 * it or is unreachable: the counts are dropped, as Sidekiq drops them, and
 * the first refusal of a run (and each change of error, and the end of the
 * run) is logged. jm NULL: 0. Thread-safe (c is the caller's). */
int hh__job_metrics_flush(hh__job_metrics *jm, hh__conn *c, double now);

#endif
