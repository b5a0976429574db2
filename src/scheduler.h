/* scheduler.h -- moves due jobs from the retry and schedule sets to their
 * queues, as Sidekiq's scheduled poller does (docs/protocol.md), each move
 * atomic and done once however many processes poll. */
#ifndef HH_SCHEDULER_H
#define HH_SCHEDULER_H

#include "context.h"
#include "redis.h"

/* Thread entry point; arg is the manager's hh__ctx (context.h), alive
 * while the thread runs. Polls until quiet. */
void *hh__scheduler_main(void *arg);

/* One poll over both sets with connection c. Returns jobs enqueued, or -1
 * on a Redis error. Exposed for tests. */
int hh__scheduler_poll(const hh__ctx *ctx, hh__conn *c);

/* Sidekiq's wait between polls: with average a (= processes x
 * average_scheduled_poll_interval, or the configured poll_interval_average) and p processes, a*r + a/2 when p < 10,
 * else a*r, r uniform in [0,1). */
double hh__scheduler_wait(double average, long processes, double r);
/* That average a: the fixed poll_interval_average when above 0, else
 * Sidekiq's scaled_poll_interval, per_process (0: 5 s) x processes, so a
 * fleet polls about every per_process seconds in all. */
double hh__scheduler_average(double fixed, double per_process, long processes);

#endif
