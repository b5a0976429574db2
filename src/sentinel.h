/* sentinel.h -- Redis Sentinel: the sentinel list and master name of a
 * configuration, asking the sentinels for the master's address, and the
 * +switch-master listener that makes connections move after a failover.
 * Touches no key. */
#ifndef HH_SENTINEL_H
#define HH_SENTINEL_H

#include "conn.h"

/* Reads the Sentinel options (else HIREDHAND_SENTINELS,
 * HIREDHAND_SENTINEL_MASTER, HIREDHAND_SENTINEL_PASSWORD) into cfg, after
 * the URL was parsed. No sentinels: nothing to do. Returns 0, or -1 with a
 * message in err. */
int hh__sentinel_config(hh__redis_config *cfg, const hh_redis_options *o, char *err, size_t errlen);
/* Stops the listener (waits for its thread) and frees the Sentinel fields. */
void hh__sentinel_config_free(hh__redis_config *cfg);

/* Asks the sentinels in turn, the one that answered last first, for the
 * master's address. Returns 0 with host and port; else why in
 * c->last_error, and -2 when every sentinel that answered (one at least)
 * said it does not know the master's name, -1 otherwise. */
int hh__sentinel_discover(hh__conn *c, char *host, size_t hostlen, int *port);

/* Starts, once per configuration, the thread that listens to the sentinels'
 * +switch-master and bumps cfg->master_epoch (hh__conn_ready then reconnects
 * every connection opened before). log must outlive the configuration. */
void hh__sentinel_watch(hh__redis_config *cfg, const hh__logger *log);

#endif
