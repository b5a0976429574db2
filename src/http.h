/* http.h -- the optional HTTP endpoints of a worker, served with
 * libmicrohttpd on the manager's own threads:
 *   GET /healthz  200 while the last acknowledged heartbeat is younger than
 *                 liveness_max_age (and, before the first beat, until that
 *                 long after start); 503 with a JSON reason otherwise.
 *   GET /stats    the hh_manager_stats snapshot as JSON.
 *   GET /metrics  the snapshot in Prometheus text format.
 * Reads only the in-memory snapshot: no Redis round trip per request. */
#ifndef HH_HTTP_H
#define HH_HTTP_H

#include <stddef.h>
#include "hiredhand.h"

struct hh_manager;
typedef struct hh_http hh_http;

/* Starts serving on bind ("HOST:PORT", "[::1]:PORT" or "PORT" meaning
 * 127.0.0.1:PORT). Returns NULL with a message in err on a bad address or
 * a port in use. */
hh_http *hh_http_start(struct hh_manager *m, const char *bind, double liveness_max_age, char *err,
                       size_t errlen);
void hh_http_stop(hh_http *h);

/* The liveness rule, pure for tests: 1 healthy, 0 not (reason filled). */
int hh_http_healthy(const hh_manager_stats *st, double now, double max_age, char *reason,
                    size_t len);
/* The /stats JSON and /metrics text for a snapshot; free() the result. */
char *hh_http_stats_json(const hh_manager_stats *st, double now, double max_age);
char *hh_http_metrics_text(const hh_manager_stats *st, double now);

#endif
