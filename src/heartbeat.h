/* heartbeat.h -- the process registry the Web UI reads: every
 * beat flushes the stats, rewrites the running-jobs hashes, refreshes the
 * process hash with its TTL and pops one remote signal, all in one
 * MULTI/EXEC. */
#ifndef HH_HEARTBEAT_H
#define HH_HEARTBEAT_H

#include "manager.h"

/* Thread entry point; arg is the manager. Beats every heartbeat_interval
 * until m->beats_off is set. */
void *hh_heartbeat_main(void *arg);

/* The info JSON. Free with free(). */
char *hh_heartbeat_info(struct hh_manager *m);

/* Clean stop: leave `processes`, delete both running-jobs
 * hashes, flush the counters not yet flushed. Returns 0 or -1. */
int hh_heartbeat_unregister(struct hh_manager *m, hh_conn *c);

/* The command writing a running job into a work hash, in RESP: HSET key tid
 * {"queue":..,"payload":"<payload as a JSON string>","run_at":N}, the value
 * byte for byte what jansson's json_dumps gives, built in one buffer. NULL
 * when the payload is not valid UTF-8 or out of memory. */
sds hh_heartbeat_work_hset(const char *key, const char *tid, const hh_job *job);

/* Resident set size in KB from /proc/self/status (0 when unknown). */
long hh_rss_kb(void);

#endif
