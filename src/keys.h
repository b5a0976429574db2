/* keys.h -- every Redis key name hiredhand reads or writes, built in one
 * place and namespaced exactly once. Other files never
 * format a key themselves; grep for a HH_K_ constant to find its users.
 *
 * Sidekiq's keys:            hiredhand's own keys:
 *   queues               set            hiredhand:inprogress:<id>|<q>  list
 *   queue:<q>            list           hiredhand:fetchers             set
 *   schedule retry dead  zset           hiredhand:recovery-lock        string
 *   processes            set            hiredhand:recoveries:<jid>     string
 *   <id>                 hash
 *   <id>:work <id>:workers  hash
 *   <id>-signals         list
 *   stat:processed[:<date>] stat:failed[:<date>]  string
 *   j|<YYYYMMDD>|<H>:<M>  hash  (7.x)   <Class>-<DD>-<HH>:<M>    bitfield (7.x)
 *   j|<YYMMDD>|<H>:<MM>   hash  (8.x)   h|<Class>-<D>-<H>:<M>    bitfield (8.x)
 *   j|<YYMMDD>|<H>:<M0>   hash  (8.x, ten minutes; <M0> is the tens digit)
 * Sidekiq 7/8, Pro and Enterprise add more (process_cleanup, it-<jid>,
 * paused, dear-leader...): hh_name_check() in keys.c
 * keeps identities and namespaces off all of them. What each key holds:
 * docs/protocol.md.
 */
#ifndef HH_KEYS_H
#define HH_KEYS_H

#include <hiredis/sds.h>
#include <time.h>
#include "hiredhand.h"

#define HH_K_QUEUES "queues"
#define HH_K_QUEUE_PREFIX "queue:"
#define HH_K_SCHEDULE "schedule"
#define HH_K_RETRY "retry"
#define HH_K_DEAD "dead"
#define HH_K_PROCESSES "processes"
#define HH_K_WORK_SUFFIX ":work"       /* 6.5+/7.x/8.x readers */
#define HH_K_WORKERS_SUFFIX ":workers" /* 6.4 and older readers */
#define HH_K_SIGNALS_SUFFIX "-signals"
#define HH_K_STAT_PROCESSED "stat:processed"
#define HH_K_STAT_FAILED "stat:failed"
/* Reliable fetch: one list per (owner identity, source queue). Not named
 * queue:* and not like Sidekiq Pro's queue:sq|..., never in `queues`.
 * The identity may not contain '|'. */
#define HH_K_INPROGRESS_PREFIX "hiredhand:inprogress:"
#define HH_K_INPROGRESS_SEP "|"
/* Identities that have owned in-progress lists: what recovery reads. Kept
 * apart from `processes`, which is what the Web UI reads. */
#define HH_K_FETCHERS "hiredhand:fetchers"
#define HH_K_RECOVERY_LOCK "hiredhand:recovery-lock"
/* Prefix of hiredhand:recoveries:<jid>, one integer string per job (TTL 7
 * days): times the job was recovered from a dead owner (poison pills). */
#define HH_K_RECOVERIES "hiredhand:recoveries"

typedef struct hh__keys {
    sds ns; /* "" or "ns:" */
} hh__keys;

int hh__keys_init(hh__keys *k, const char *ns);
void hh__keys_free(hh__keys *k);

/* Each returns a new sds (sdsfree it); NULL only when out of memory. */
sds hh__key(const hh__keys *k, const char *name);
sds hh__key_queue(const hh__keys *k, const char *queue);
sds hh__key_process(const hh__keys *k, const char *identity);
sds hh__key_work(const hh__keys *k, const char *identity);
sds hh__key_workers(const hh__keys *k, const char *identity);
sds hh__key_signals(const hh__keys *k, const char *identity);
/* stat:processed:<date> / stat:failed:<date>, UTC date of `epoch`. */
sds hh__key_stat_daily(const hh__keys *k, const char *stat, double epoch);
sds hh__key_inprogress(const hh__keys *k, const char *identity, const char *queue);
/* Sidekiq 7.x/8.x's execution metrics (job_metrics.c), for the UTC minute
 * of t, each generation's own spelling: 7.x's counters j|20261203|9:5 and
 * histograms <Class>-03-09:5; 8.x's counters j|261203|9:05, their
 * ten-minute rollup j|261203|9:0 and histograms h|<Class>-3-9:5. klass is
 * len bytes (it may hold NUL). */
sds hh__key_jm_counts7(const hh__keys *k, time_t t);
sds hh__key_jm_counts8(const hh__keys *k, time_t t);
sds hh__key_jm_rollup8(const hh__keys *k, time_t t);
sds hh__key_jm_hist7(const hh__keys *k, const char *klass, size_t len, time_t t);
sds hh__key_jm_hist8(const hh__keys *k, const char *klass, size_t len, time_t t);
/* SCAN MATCH pattern for every in-progress list (glob chars in ns escaped). */
sds hh__key_inprogress_pattern(const hh__keys *k);
/* Splits an in-progress key back into owner identity and queue; returns 0,
 * or -1 when the key is not one. *identity and *queue are new sds. */
int hh__key_inprogress_parse(const hh__keys *k, const char *key, sds *identity, sds *queue);
/* Strips the namespace from a full key, returning a pointer into key, or
 * NULL when the key lacks it. */
const char *hh__key_strip(const hh__keys *k, const char *key);

/* Queues whose size and latency the heartbeat reads, and that /stats and
 * /metrics list: with thousands of queues, reading them all would cost
 * thousands of commands a beat. */
#define HH_MAX_QUEUES 64

#endif
