/* outcome.h -- writing what became of a job: the retry or dead entry and
 * its removal from where it was held, in one atomic step that writes first
 * and removes last, so a write Redis refuses (OOM, WRONGTYPE...) leaves the
 * job where it was. Used by the worker threads, the scheduler (entries that
 * are not jobs) and the client (kill). */
#ifndef HH_OUTCOME_H
#define HH_OUTCOME_H

#include <stddef.h>
#include "keys.h"
#include "redis.h"

#define HH_DEAD_TIMEOUT 15552000.0 /* 180 days, Sidekiq's dead_timeout_in_seconds */
#define HH_DEAD_MAX_JOBS 10000     /* Sidekiq's dead_max_jobs */

typedef enum hh_outcome_mode {
    HH_OUTCOME_DROP = 0, /* nothing written: the job only leaves its source */
    HH_OUTCOME_RETRY,    /* ZADD retry */
    HH_OUTCOME_DEAD,     /* ZADD dead, with Sidekiq's trims */
} hh_outcome_mode;

typedef enum hh_outcome_source {
    HH_SOURCE_NONE = 0, /* held in memory only (basic fetch, a kill) */
    HH_SOURCE_LIST,     /* an in-progress list */
    HH_SOURCE_ZSET,     /* a sorted set (retry or schedule) */
} hh_outcome_source;

typedef struct hh_outcome {
    hh_outcome_mode mode;
    hh_outcome_source source;
    const char *source_key;  /* full key (namespaced) unless HH_SOURCE_NONE */
    const char *member;      /* exact bytes held in the source */
    size_t member_len;
    const char *entry;       /* what goes into retry or dead */
    size_t entry_len;
    double score;            /* epoch seconds, float */
    double dead_timeout;     /* seconds; <= 0: Sidekiq's 180 days */
    long dead_max_jobs;      /* <= 0: Sidekiq's 10,000 */
} hh_outcome;

/* Writes one outcome (HH_LUA_OUTCOME). Returns 1 written, 0 when the
 * member was no longer in its source (nothing written: somebody else took
 * it), -1 when Redis failed or refused it, with Redis' own message (or the
 * connection's error) in why. Never retries: callers decide. */
int hh_outcome_write(hh_conn *c, const hh_keys *k, const hh_outcome *o, char *why, size_t whylen);

#endif
