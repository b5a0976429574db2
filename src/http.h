/* http.h -- the optional HTTP endpoints of a worker, served with
 * libmicrohttpd on the manager's own threads:
 *   GET /healthz  200 while the last acknowledged heartbeat is younger than
 *                 liveness_max_age (and, before the first beat, until that
 *                 long after start); 503 with a JSON reason otherwise.
 *   GET /stats    the hh_manager_stats snapshot as JSON.
 *   GET /metrics  the snapshot in Prometheus text format, then the source's
 *                 own series and the process_* metrics (metrics.c).
 * With a token, /stats and /metrics answer 401 unless the request carries
 * "Authorization: Bearer <token>"; /healthz is always open and tells only
 * the status and the heartbeat's age.
 * Reads only the in-memory snapshot: no Redis round trip per request. */
#ifndef HH_HTTP_H
#define HH_HTTP_H

#include <stddef.h>
#include "hiredhand.h"

typedef struct hh__http hh__http;

/* All the server knows of its manager: a snapshot on demand (the one
 * callback up: the stats are the manager's), where to log, and the
 * per-class metrics (metrics.c, below this file, read directly).
 * fill_stats is called from the server's threads and must be thread-safe;
 * it does no I/O. */
typedef struct hh__http_source {
    void (*fill_stats)(void *udata, hh_manager_stats *out);
    void *udata;
    struct hh__logger *log;
    /* Its hh__metrics_text is appended to /metrics after the snapshot's
     * (the per-class series and the set sizes). NULL: none. */
    struct hh__metrics *metrics;
} hh__http_source;

/* Starts serving on bind ("HOST:PORT", "[::1]:PORT" or "PORT" meaning
 * 127.0.0.1:PORT). Returns NULL with a message in err on a bad address or
 * a port in use. */
hh__http *hh__http_start(const hh__http_source *src, const char *bind, double liveness_max_age, const char *token,
                         char *err, size_t errlen);
void hh__http_stop(hh__http *h);
/* The checks hh__http_start makes of bind before it serves, without
 * serving: the address parsed and resolved and, with try_bind, a socket
 * bound to it and closed at once (a port in use, an address not local).
 * 0, or -1 with the message hh__http_start would give in err. */
int hh__http_bind_check(const char *bind, int try_bind, char *err, size_t errlen);

/* The liveness rule, pure for tests: 1 healthy, 0 not (reason filled). */
int hh__http_healthy(const hh_manager_stats *st, double now, double max_age, char *reason, size_t len);
/* The /stats JSON and /metrics text for a snapshot; free() the result. */
char *hh__http_stats_json(const hh_manager_stats *st, double now, double max_age);
char *hh__http_metrics_text(const hh_manager_stats *st, double now);

/* A bearer token: 1..4096 visible ASCII characters (no space). */
int hh__http_token_valid(const char *token);
/* Whether authorization ("Bearer <token>", the header's value or NULL)
 * carries token; 1 when token is NULL. Constant time in the given value. */
int hh__http_token_ok(const char *authorization, const char *token);

/* Readiness (/readyz): 1 when the heartbeat connection is up, the last beat
 * reached Redis and the worker fetches (neither quiet nor stopping); else 0
 * with why in reason (len bytes; "" when ready). */
int hh__http_ready(const hh_manager_stats *st, char *reason, size_t len);

/* What a request gets, decided without a socket (and fuzzed so). */
typedef enum hh__http_route {
    HH_HTTP_ROUTE_HEALTHZ,
    HH_HTTP_ROUTE_STATS,
    HH_HTTP_ROUTE_METRICS,
    HH_HTTP_ROUTE_NOT_FOUND,
    HH_HTTP_ROUTE_METHOD,
    HH_HTTP_ROUTE_UNAUTHORIZED,
    HH_HTTP_ROUTE_READYZ
} hh__http_route;
hh__http_route hh__http_route_of(const char *method, const char *url, const char *authorization, const char *token);

typedef struct hh__http_reply {
    unsigned int status;
    char *body;         /* malloc()ed; NULL: out of memory (a 500) */
    const char *type;   /* Content-Type */
    const char *header; /* one more header (Allow, WWW-Authenticate) or NULL */
    const char *value;
} hh__http_reply;
/* The answer to a route; st is read for HEALTHZ, READYZ, STATS and METRICS only. */
void hh__http_reply_for(hh__http_route route, const hh_manager_stats *st, double now, double max_age,
                        hh__http_reply *reply);

#endif
