/* retry.h -- what happens to a failed job, as Sidekiq's job retry decides
 * it (docs/protocol.md): the retry set with Sidekiq's fields
 * and backoff, the dead set with its limits, or nothing (retry: false). */
#ifndef HH_RETRY_H
#define HH_RETRY_H

#include "job.h"
#include "util.h"

typedef enum hh__failure_kind {
    HH_FAIL_RETRY = 0,  /* ZADD retry <score> <payload> */
    HH_FAIL_DEAD = 1,   /* ZADD dead <now> <payload> + trims */
    HH_FAIL_DISCARD = 2 /* nothing written: retry false, or dead: false */
} hh__failure_kind;

typedef struct hh__failure_plan {
    hh__failure_kind kind;
    double score;       /* retry: next attempt time; dead: now */
    char *payload;      /* new payload (free()); NULL for discard */
    const char *reason; /* static text for logs */
} hh__failure_plan;

typedef struct hh__retry_config {
    int max_retries; /* for "retry": true; 25 */
    hh_timestamps timestamps;
    int class_known; /* the class has a handler: an absent "retry" means true */
} hh__retry_config;

/* Decides a failed job's fate and builds the payload to store, from the
 * job as fetched plus job->error_class/error_message/backtrace. `now` is
 * epoch seconds. A job holding an integer beyond 64 bits (job->lossy) is
 * planned from its stored numbers and its payload is its stored text with
 * only the changed members rewritten, so every digit is kept, as Sidekiq's
 * Ruby integers keep them. Returns 0, or -1 when out of memory. */
int hh__retry_plan(const hh_job *job, const hh__retry_config *cfg, double now, hh__rng *rng, hh__failure_plan *out);

/* Sidekiq 6.4's delay for retry_count c: c^4 + 15 + rand(10) * (c + 1),
 * computed without overflow for any count (long double holds every int64
 * exactly); always finite. */
double hh__retry_delay(long double count, hh__rng *rng);
/* Sidekiq 8.x's: c^4 + 15 + rand(10 * (c + 1)), the jitter any integer
 * below 10 (c + 1); the plan uses it with millisecond timestamps. */
double hh__retry_delay8(long double count, hh__rng *rng);

/* zlib + strict base64 of a JSON array of lines, as error_backtrace is
 * stored. Free with free(). */
char *hh__backtrace_encode(char *const *lines, size_t n);

#endif
