/* scheduler.h -- moves due jobs from the retry and schedule sets to their
 * queues, as Sidekiq's scheduled poller does (docs/protocol.md), each move
 * atomic and done once however many processes poll. */
#ifndef HH_SCHEDULER_H
#define HH_SCHEDULER_H

#include <stdatomic.h>
#include "keys.h"
#include "redis.h"
#include "util.h"
#include "wake.h"

/* All the scheduler knows of its manager; the manager fills it and keeps
 * it alive while the thread runs. */
typedef struct hh__scheduler_env {
    const hh__keys *keys;
    const hh__logger *log;
    hh__redis_config *cfg;
    hh_timestamps timestamps;     /* enqueued_at and failed_at as Sidekiq 6/7 or 8 write them */
    double poll_interval_average; /* > 0: fixed; else per_process x processes */
    double per_process;           /* average_scheduled_poll_interval; 0: 5 s */
    double dead_timeout;          /* for entries that are not jobs (outcome.h) */
    long dead_max_jobs;
    const atomic_int *quiet; /* set: stop moving jobs and leave */
    hh__wake *wake;          /* broadcast when quiet is set */
} hh__scheduler_env;

/* Thread entry point; arg is an hh__scheduler_env. Polls until quiet. */
void *hh__scheduler_main(void *arg);

/* One poll over both sets with connection c. Returns jobs enqueued, or -1
 * on a Redis error. Exposed for tests. */
int hh__scheduler_poll(const hh__scheduler_env *e, hh__conn *c);

/* Sidekiq's wait between polls: with average a (= processes x
 * average_scheduled_poll_interval, or the configured poll_interval_average) and p processes, a*r + a/2 when p < 10,
 * else a*r, r uniform in [0,1). */
double hh__scheduler_wait(double average, long processes, double r);
/* That average a: the fixed poll_interval_average when above 0, else
 * Sidekiq's scaled_poll_interval, per_process (0: 5 s) x processes, so a
 * fleet polls about every per_process seconds in all. */
double hh__scheduler_average(double fixed, double per_process, long processes);

#endif
