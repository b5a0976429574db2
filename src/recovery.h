/* recovery.h -- reliable fetch's other half: jobs left in in-progress
 * lists by a process that died (kill -9, OOM, a vanished node) go back to
 * the front of their queues; a job that keeps killing its process goes to
 * the dead set after max_recoveries. */
#ifndef HH_RECOVERY_H
#define HH_RECOVERY_H

#include "manager.h"

/* At start: refuse (HH_ERR_EXISTS) when this identity is live in another
 * process, else push back what a previous incarnation of this identity left
 * and register it in hiredhand:fetchers. Returns HH_OK, HH_ERR_EXISTS, or
 * HH_ERR_REDIS when Redis is unreachable (then the recovery thread calls it
 * again until it answers, and no worker fetches before). */
int hh_recovery_boot(struct hh_manager *m, hh_conn *c);

/* Scans for in-progress lists whose owner's heartbeat hash has expired and
 * pushes their jobs back, under a short fleet-wide lock. Returns jobs
 * recovered, or -1 (lock held elsewhere or a Redis error). */
int hh_recovery_scan(struct hh_manager *m, hh_conn *c);

/* Thread entry: hh_recovery_scan() every recovery_interval (with jitter)
 * until the manager is quiet. */
void *hh_recovery_main(void *arg);

#endif
