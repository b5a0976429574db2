/* cron.h -- periodic jobs on sidekiq-cron's data model: the poller that
 * enqueues each due tick once fleet-wide, beside Ruby processes running
 * sidekiq-cron's own poller (docs/periodic-jobs.md). */
#ifndef HH_CRON_H
#define HH_CRON_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>
#include "context.h"
#include "cron_expr.h"
#include "keys.h"
#include "redis.h"
#include "util.h"
#include "wake.h"

#define HH_CRON_GRACE 60         /* sidekiq-cron's reschedule_grace_period (1.8: fixed 60) */
#define HH_CRON_HISTORY 10       /* sidekiq-cron's cron_history_size */
#define HH_CRON_REMEMBER 86400.0 /* REMEMBER_THRESHOLD: guard entries kept 24 h */

/* What the last poll saw, for /metrics, /stats and `top`. */
typedef struct hh__cron_counts {
    atomic_long jobs;     /* job hashes read */
    atomic_long disabled; /* status "disabled" */
    atomic_long broken;   /* expression (or message) hiredhand cannot read */
    atomic_llong next;    /* earliest next tick of an enabled job, Unix s; 0: none */
    atomic_ullong pushed; /* ticks this process enqueued since start */
} hh__cron_counts;

/* All the poller knows of its manager. */
typedef struct hh__cron_env {
    const hh__ctx *ctx;            /* the manager's (context.h): opts.cron_poll_interval > 0 */
    const char *const *namespaces; /* sidekiq-cron 2.x namespaces polled */
    size_t nnamespaces;
    double clock_skew;       /* seconds added to the clock: tests only (HH_TEST_CLOCK_SKEW_MS) */
    hh__cron_counts *counts; /* what the last poll saw, for the stats */
} hh__cron_env;

void *hh__cron_main(void *arg);

/* The namespace value that polls every namespace found in Redis, as
 * sidekiq-cron 2.x's `available_namespaces = :auto`. */
#define HH_CRON_NS_AUTO "auto"

/* sidekiq-cron 2.x's Namespace.all under `available_namespaces = :auto`:
 * the namespace of every key cron_jobs:<namespace> (SCAN, where Ruby runs
 * KEYS), plus "default", each once. A key whose rest holds a ':' names no
 * namespace hiredhand saves and is left out (Ruby would take the part
 * after its last ':'). Appends to *out (*n entries, new sds each);
 * returns 0, or -1 with *err (new sds) on a Redis error. */
int hh__cron_namespaces_found(hh__conn *c, const hh__keys *k, sds **out, size_t *n, sds *err);

/* One poll at time now (Unix seconds, fractional) over every namespace
 * and the 1.x set. Returns ticks enqueued by this call, -1 on a Redis
 * error. Exposed for tests. */
int hh__cron_poll(const hh__cron_env *e, hh__conn *c, double now);

/* ---- pure parts (tests/unit/test_cron.c) ---- */

/* The guard's member for tick t: Time#iso8601 of a UTC time,
 * "2026-12-04T06:30:00Z" (20 bytes + NUL; buf needs 21). */
void hh__cron_member(int64_t t, char buf[32]);
/* The guard's score: Float#to_s of the tick, "1796358600.0". */
void hh__cron_score(int64_t t, char buf[32]);
/* last_enqueue_time as sidekiq-cron writes it: "%Y-%m-%d %H:%M:%S +0000". */
void hh__cron_enqueue_time(double now, char buf[32]);
/* Parses a last_enqueue_time back (that format, or ISO 8601 with Z or an
 * offset); -1 when absent or unreadable. */
int64_t hh__cron_parse_time(const char *s);

/* sidekiq-cron's should_enqueue? before the guard: the tick to enqueue at
 * now, or -1. prev = the expression's last tick strictly before floor(now)
 * (fugit's previous_time(now)); none when now - prev > grace, or when
 * last (last_enqueue_time, -1 if none) is at or after prev. */
int64_t hh__cron_due_tick(const hh__cron_expr *x, double now, int64_t last, double grace);

/* Ruby's "true|t|yes|y|1" (any case) reading of a flag field. */
int hh__cron_truthy(const char *v);

/* The job payload sidekiq-cron's enqueue! pushes for the job hash
 * `fields` (an object of the hash's field => string): its `message` with
 * `args` (plus now as a float when date_as_argument), or with active_job
 * the ActiveJob envelope; then Sidekiq's client defaults, jid, created_at
 * and enqueued_at (now, in ts). Returns the JSON (malloc'd) and the queue
 * in queue_out (malloc'd), or NULL with a reason in why. */
char *hh__cron_payload(const json_t *fields, double now, hh_timestamps ts, const char *jid, char **queue_out, char *why,
                       size_t whylen);

/* The jid_history entry: {"jid":..,"enqueued":..} with the time as
 * sidekiq-cron 2.x writes it (Time#to_s, "... UTC") or, legacy (1.x
 * layout), as 1.8 does ("... +0000"). */
char *hh__cron_history_entry(const char *jid, double now, int legacy);

/* Runs one tick (guard_tick >= 0) or a run now (guard_tick < 0: no guard,
 * as the Web UI's "Enqueue now") of the job whose hash is `hash_key` (a
 * member of cron_jobs[:<ns>], unprefixed) with fields `fields`. Returns 1
 * pushed, 0 tick already taken, -1 job gone, -2 disabled, -3 payload
 * refused (why), -4 Redis error (why). jid_out (HH_JID_SIZE) gets the jid. */
int hh__cron_enqueue(hh__conn *c, const hh__keys *k, hh_timestamps ts, const char *hash_key, const json_t *fields,
                     int64_t guard_tick, double now, int only_enabled, char *jid_out, char *why, size_t whylen);

#endif
