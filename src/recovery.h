/* recovery.h -- reliable fetch's other half: jobs left in in-progress
 * lists by a process that died (kill -9, OOM, a vanished node) go back to
 * the front of their queues; a job that keeps killing its process goes to
 * the dead set after max_recoveries. */
#ifndef HH_RECOVERY_H
#define HH_RECOVERY_H

#include "context.h"
#include "lease.h"
#include "redis.h"

/* Recovery's env: the manager's context and the lease (below this file:
 * the outage rule and this process's own reconciliation are called
 * directly); the manager keeps both alive while the thread runs. An
 * identity proved live elsewhere goes up as HH_SIGNAL_STOP. */
typedef struct hh__recovery_env {
    const hh__ctx *ctx;         /* the manager's (context.h): identity, options, flags, recovered */
    const hh__lease_env *lease; /* lease.c: hh__lease_peers_judgeable, hh__lease_tick */
} hh__recovery_env;

/* At start: refuse (HH_ERR_EXISTS) when this identity is live in another
 * process, else push back what a previous incarnation of this identity left
 * and register it in hiredhand:fetchers. Returns HH_OK, HH_ERR_EXISTS, or
 * HH_ERR_REDIS when Redis is unreachable (then the recovery thread calls it
 * again until it answers, and no worker fetches before). */
int hh__recovery_boot(const hh__recovery_env *e, hh__conn *c);

/* Scans for in-progress lists whose owner's heartbeat hash has expired and
 * pushes their jobs back, under a short fleet-wide lock. Returns jobs
 * recovered, or -1 (lock held elsewhere or a Redis error). */
int hh__recovery_scan(const hh__recovery_env *e, hh__conn *c);

/* Thread entry; arg is an hh__recovery_env. Finishes the identity checks
 * when Redis was down at start, then hh__recovery_scan() every
 * recovery_interval (with jitter) until quiet. */
void *hh__recovery_main(void *arg);

#endif
