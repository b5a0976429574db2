/* processor.h -- the worker threads: fetch, run the middleware chain and
 * the handler, write the outcome together with the ack (Sidekiq 6.4
 * lib/sidekiq/processor.rb). */
#ifndef HH_PROCESSOR_H
#define HH_PROCESSOR_H

#include "manager.h"

/* Thread entry point; arg is the hh_processor. */
void *hh_processor_main(void *arg);

/* Hard shutdown: if p still runs a job, mark it abandoned and push it back
 * to its queue with conn (exact bytes, once). Returns 1 when a job was
 * pushed back, 0 when idle, -1 on a Redis error. */
int hh_processor_abandon(hh_processor *p, hh_conn *conn);

#endif
