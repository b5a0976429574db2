/* client.h -- internal side of the client: payload building and the
 * enqueue command sequence shared by the client, the scheduler and the
 * retry path, so a job is always enqueued the same way. */
#ifndef HH_CLIENT_H
#define HH_CLIENT_H

#include <jansson.h>
#include "keys.h"
#include "redis.h"

/* Appends SADD queues <q> + LPUSH queue:<q> <payload...> to a pipeline. */
void hh__enqueue_append(hh__pipe *p, const hh__keys *k, const char *queue, const char *const *payloads,
                        const size_t *lens, size_t n);

/* For admin.c (job management on a client): its connection, key names
 * and timestamp encoding. */
hh__conn *hh__client_conn(hh_client *c);
const hh__keys *hh__client_keys(const hh_client *c);
hh_timestamps hh__client_timestamps(const hh_client *c);
/* hh_cron_use_layout's choice (0, 1 or 2), for cron_admin.c. */
int hh__client_cron_layout(const hh_client *c);

/* For Redis's error about one key: WRONGTYPE (a client wrote another type
 * there) as "key <key> holds a <type>, not a <want>", the type read with
 * TYPE; another error as "key <key>: <error>". A new JSON string, NULL
 * when r is no error reply. The caller shows the problem in place of the
 * figure and goes on with the other keys. */
json_t *hh__client_key_problem(hh_client *c, const char *key, const char *want, const redisReply *r);

#endif
