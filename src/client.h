/* client.h -- internal side of the client: payload building and the
 * enqueue command sequence shared by the client, the scheduler and the
 * retry path, so a job is always enqueued the same way (spec §3.2). */
#ifndef HH_CLIENT_H
#define HH_CLIENT_H

#include <jansson.h>
#include "keys.h"
#include "redis.h"

/* Appends SADD queues <q> + LPUSH queue:<q> <payload...> to a pipeline. */
void hh_enqueue_append(hh_pipe *p, const hh_keys *k, const char *queue, const char *const *payloads,
                       const size_t *lens, size_t n);

/* Appends the dead-set insert with Sidekiq's trims (spec §6.4) to a
 * pipeline, inside MULTI/EXEC issued by the caller. */
void hh_dead_append(hh_pipe *p, const hh_keys *k, const char *payload, size_t len, double now,
                    double dead_timeout, long dead_max_jobs);

/* Moves a job from an in-progress list to the dead set as `entry`, with the
 * same trims, only if the exact payload was still in the list
 * (HH_LUA_KILL_FROM). Returns 1 moved, 0 it was gone, -1 Redis error. */
int hh_dead_move(hh_conn *c, const hh_keys *k, const char *list, const char *payload, size_t len,
                 const char *entry, size_t elen, double now, double dead_timeout, long dead_max_jobs);

#endif
