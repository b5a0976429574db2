/* outcome.h -- the one home of what becomes of a job once it ran or could
 * not: the retry or dead entry and its removal from where it was held, in
 * one atomic step that writes first and removes last (so a write Redis
 * refuses, OOM or WRONGTYPE, leaves the job where it was); the dead entry of
 * a malformed payload; the policy for payloads holding integers beyond 64
 * bits; and the one loop that writes until Redis takes it. Used by the
 * worker threads, the scheduler (entries that are not jobs) and the client
 * (kill). The ack of a success (LREM) is batched with the next fetch, in
 * fetch.c, and uses the same loop's rules. Keys: see outcome.c. */
#ifndef HH_OUTCOME_H
#define HH_OUTCOME_H

#include <stdatomic.h>
#include <stddef.h>
#include "keys.h"
#include "redis.h"
#include "retry.h"

#define HH_DEAD_TIMEOUT 15552000.0 /* 180 days, Sidekiq's dead_timeout_in_seconds */
#define HH_DEAD_MAX_JOBS 10000     /* Sidekiq's dead_max_jobs */

typedef enum hh__outcome_mode {
    HH_OUTCOME_DROP = 0, /* nothing written: the job only leaves its source */
    HH_OUTCOME_RETRY,    /* ZADD retry */
    HH_OUTCOME_DEAD,     /* ZADD dead, with Sidekiq's trims */
    HH_OUTCOME_SCHEDULE, /* ZADD schedule (a job left to other processes) */
} hh__outcome_mode;

typedef enum hh__outcome_source {
    HH_SOURCE_NONE = 0, /* held in memory only (basic fetch, a kill) */
    HH_SOURCE_LIST,     /* an in-progress list */
    HH_SOURCE_ZSET,     /* a sorted set (retry or schedule) */
} hh__outcome_source;

typedef struct hh__outcome {
    hh__outcome_mode mode;
    hh__outcome_source source;
    const char *source_key; /* full key (namespaced) unless HH_SOURCE_NONE */
    const char *member;     /* exact bytes held in the source */
    size_t member_len;
    const char *entry; /* what goes into retry or dead */
    size_t entry_len;
    double score;        /* epoch seconds, float */
    double dead_timeout; /* seconds; <= 0: Sidekiq's 180 days */
    long dead_max_jobs;  /* <= 0: Sidekiq's 10,000 */
} hh__outcome;

/* Writes one outcome (HH_LUA_OUTCOME). Returns 1 written, 0 when the
 * member was no longer in its source (nothing written: somebody else took
 * it), -1 when Redis failed or refused it, with Redis' own message (or the
 * connection's error) in why. Never retries: callers decide. */
int hh__outcome_write(hh__conn *c, const hh__keys *k, const hh__outcome *o, char *why, size_t whylen);

/* The outcome a failure plan (retry.h) asks for. `source_key` is the job's
 * in-progress list, or NULL when nothing in Redis holds the job (basic
 * fetch). Points into plan and job: keep both alive while o is used. */
void hh__outcome_of_plan(hh__outcome *o, const hh__failure_plan *plan, const char *source_key, const char *member,
                         size_t member_len, double dead_timeout, long dead_max_jobs);

/* The payload for a malformed job going to the dead set: JSON objects keep
 * every key and gain error_class/error_message with the reason; other JSON
 * values (arrays, numbers...) are wrapped in a hiredhand::InvalidJob object
 * whose args hold their exact text (stored bare they break Sidekiq's Dead
 * page); anything that is not JSON is stored as fetched (as Sidekiq does,
 * Sidekiq's Web UI shows it as args). Returns a malloc'd copy;
 * *len set. */
char *hh__malformed_dead_payload(const char *payload, size_t len, const char *why, double now, hh_timestamps ts,
                                 size_t *outlen);

/* One attempt of a write: >= 0 when Redis took it (passed back as the
 * result), -1 when refused or unreachable, with the reason in why. */
typedef int (*hh__attempt_fn)(void *ctx, hh__conn *c, char *why, size_t whylen);

/* State of one write-until-done. Set conn, log, giving_up and subject;
 * the rest is filled in. */
typedef struct hh__until_done {
    hh__conn *conn;
    const hh__logger *log;
    const atomic_int *giving_up; /* the stop gave up on Redis: stop trying */
    const char *subject;         /* "class=X jid=Y: retry entry" for logs; NULL: silent */
    char why[256];               /* the last refusal */
    int attempts;                /* refused attempts before the end */
    int uncertain;               /* an attempt lost its connection: it may have run */
    /* Counts this write while Redis refuses it (from the first refusal to
     * the end), for readiness and the stats; NULL: not counted. */
    atomic_int *refused;
} hh__until_done;

/* Writes until Redis takes it, whatever the error (an outage reconnects
 * with the connection's backoff; a refusal such as OOM or a wrong-typed key
 * backs off from 50 ms to 2 s): a job stays where it is held until then, so
 * a refused write never loses it. Each change of error is logged once.
 * Returns fn's result, or -1 once *giving_up is set (u->why says why). */
int hh__write_until_done(hh__until_done *u, hh__attempt_fn fn, void *ctx);

/* hh__outcome_write() until done. */
int hh__outcome_write_until_done(hh__until_done *u, const hh__keys *k, const hh__outcome *o);

#endif
