/* scheduler.h -- moves due jobs from the retry and schedule sets to their
 * queues (Sidekiq 6.4 lib/sidekiq/scheduled.rb), each move atomic
 * and done once however many processes poll. */
#ifndef HH_SCHEDULER_H
#define HH_SCHEDULER_H

#include "manager.h"

/* Thread entry point; arg is the manager. Polls until quiet. */
void *hh_scheduler_main(void *arg);

/* One poll over both sets with connection c. Returns jobs enqueued, or -1
 * on a Redis error. Exposed for tests. */
int hh_scheduler_poll(struct hh_manager *m, hh_conn *c);

/* Sidekiq's wait between polls: with average a (= processes x 5 s, or the
 * configured poll_interval_average) and p processes, a*r + a/2 when p < 10,
 * else a*r, r uniform in [0,1). */
double hh_scheduler_wait(double average, long processes, double r);

#endif
