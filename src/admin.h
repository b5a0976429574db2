/* admin.h -- helpers shared by the job management files (jobset.c for the
 * sorted sets, admin.c for queues and running jobs); the API itself is in
 * hiredhand.h. Touches no key by itself. */
#ifndef HH_ADMIN_H
#define HH_ADMIN_H

#include <jansson.h>
#include "client.h"

#define HH_ADMIN_PAGE 500 /* entries per ZRANGE, ZSCAN or LRANGE page */

/* For a reply that is NULL (the connection's error is kept), an error or
 * the wrong shape: keeps "<what>: <error>" for hh_client_last_error().
 * Returns HH_ERR_REDIS. */
int hh__admin_bad_reply(hh_client *c, const redisReply *r, const char *what);
/* The same for a command on one key that wants a want ("zset", "list"):
 * Redis's WRONGTYPE becomes "<what>: key <key> holds a <type>, not a
 * <want>" (hh__client_key_problem), so the operator learns which key. */
int hh__admin_bad_key_reply(hh_client *c, const redisReply *r, const char *what, const char *key, const char *want);
/* The end of every exported call of jobset.c and admin.c: rc as given,
 * and when it is a failure, the reason in hh_last_error() ("<what>: Redis
 * error: <what the connection or the reply said>", or "<what>: <why>" for
 * an entry refused, or "<what>: not found"), so that none fails without
 * one (hiredhand.h, "errors that say why"). */
int hh__admin_fail(hh_client *c, int rc, const char *what);
/* A string member of a JSON object, or dflt. */
const char *hh__admin_str(const json_t *o, const char *key, const char *dflt);
/* Whether a flat [member, score, ...] or [field, value, ...] array holds
 * only strings, in pairs. */
int hh__admin_pairs_ok(const redisReply *r);
/* A jid an operator may ask for: non-empty, at most 1,024 bytes. */
int hh__admin_jid_ok(const char *jid);
/* MULTI, TYPE key, <count_cmd> key, UNLINK key [, SREM queues <queue>],
 * EXEC: how many the key held goes to *removed (may be NULL), in the same
 * transaction. A key of another type is deleted all the same (as Sidekiq
 * clears): HH_OK, *removed -1, and hh_client_last_error() says what it was
 * ("key queue:q held a string, not a list"). */
int hh__admin_clear_key(hh_client *c, const char *count_cmd, sds key, const char *queue, long long *removed);

#endif
