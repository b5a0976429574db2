/* http.c -- see http.h. Owns the optional libmicrohttpd daemon of one
 * manager: parses the --http bind address, runs one internal polling thread
 * (started in hh_manager_start, stopped at the end of shutdown) and answers
 * GET/HEAD /healthz, /readyz, /stats and /metrics from the snapshots its
 * hh__http_source gives (the manager's, filled in memory); anything else is a JSON 404 (405 for other methods). With a
 * token, /stats and /metrics want "Authorization: Bearer <token>" (401).
 * The port may face a network (a probe of an orchestrator): connections are
 * limited per client address and in total, and a watchdog thread cuts any
 * connection whose request headers take longer than a few seconds, so slow
 * clients cannot starve /healthz (docs/security.md).
 * Keys: none -- it never talks to Redis; queue sizes and latencies are the
 * ones the heartbeat read at its last beat. */
#include "http.h"

#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "keys.h" /* HH_MAX_QUEUES */
#include "metrics.h"

static char *metrics_more(const hh__http *h, char *body);
#include "util.h"

/* Slow or idle clients must not starve a liveness probe. One address gets
 * a few connections (a probe and a scraper need one or two each), all of
 * them together at most HH_HTTP_CONNECTION_MAX or a quarter of the
 * descriptor limit, whichever is lower (the rest is for Redis and --exec
 * pipes). The idle timeout alone does not stop a client that sends one
 * header byte a second: HH_HTTP_HEADER_DEADLINE bounds the time from
 * connect (or from the end of the previous request on a kept-alive
 * connection) to the end of the request headers. */
#define HH_HTTP_PER_IP_LIMIT 16
#define HH_HTTP_CONNECTION_MAX 512
#define HH_HTTP_CONNECTION_MIN 32
#define HH_HTTP_CONNECTION_TIMEOUT 5 /* seconds an idle connection is kept */
#define HH_HTTP_HEADER_DEADLINE 3.0  /* seconds to send a request's headers */
#define HH_HTTP_WATCHDOG_TICK_MS 200
#define HH_HTTP_TOKEN_MAX 4096
#define HH_HTTP_LOG_EVERY 10 /* seconds between two of MHD's messages */
#define HH_HTTP_ALLOW "GET, HEAD"
#define HH_HTTP_JSON "application/json"
#define HH_HTTP_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"
/* Epoch seconds to 10 µs, ages without %.17g noise (0.009, not 0.0089999...). */
#define HH_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/* libmicrohttpd is loaded when an endpoint starts, not with the program: it
 * pulls in GnuTLS, about 1.4 MiB of resident pages that every worker
 * without --http would otherwise carry. */
typedef struct mhd_api {
    void *so;
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                       MHD_AccessHandlerCallback, void *, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
} mhd_api;

#define HH_MHD_SONAME "libmicrohttpd.so.12"

static int mhd_load(mhd_api *api, char *err, size_t errlen) {
    api->so = dlopen(HH_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!api->so) {
        snprintf(err, errlen, "cannot load %s (Debian package libmicrohttpd12): %s", HH_MHD_SONAME, dlerror());
        return -1;
    }
#define HH_MHD_SYM(field, name)                                    \
    if (!(*(void **)(&api->field) = dlsym(api->so, name))) {       \
        snprintf(err, errlen, "%s lacks %s", HH_MHD_SONAME, name); \
        dlclose(api->so);                                          \
        return -1;                                                 \
    }
    HH_MHD_SYM(start_daemon, "MHD_start_daemon")
    HH_MHD_SYM(stop_daemon, "MHD_stop_daemon")
    HH_MHD_SYM(create_response_from_buffer, "MHD_create_response_from_buffer")
    HH_MHD_SYM(add_response_header, "MHD_add_response_header")
    HH_MHD_SYM(queue_response, "MHD_queue_response")
    HH_MHD_SYM(destroy_response, "MHD_destroy_response")
    HH_MHD_SYM(get_connection_info, "MHD_get_connection_info")
    HH_MHD_SYM(lookup_connection_value, "MHD_lookup_connection_value")
#undef HH_MHD_SYM
    return 0;
}

/* One open connection, for the header deadline. Created and freed by MHD's
 * connection notifications (its polling thread); the watchdog thread reads
 * the list. Both hold hh__http.mu. MHD closes the descriptor only after the
 * "closed" notification, so a descriptor on the list is still this
 * connection's: shutdown() on it cannot hit a reused number. */
typedef struct http_conn {
    struct http_conn *prev, *next;
    int fd;
    double since; /* hh__mono() when the current request's headers began */
    int reading;  /* 1 until the current request's headers are in */
    int cut;      /* the watchdog shut it down already */
} http_conn;

struct hh__http {
    mhd_api api;
    hh__http_source src; /* the snapshots and the log: all it knows of the manager */
    struct MHD_Daemon *daemon;
    double max_age;
    char *token;                         /* NULL: /stats and /metrics are open */
    char display[INET6_ADDRSTRLEN + 16]; /* "127.0.0.1:8080", "[::1]:8080" */
    atomic_int serving;                  /* 0 while starting: MHD messages are kept, not logged */
    char start_msg[256];                 /* MHD's last message while starting */
    unsigned int conn_limit;
    pthread_mutex_t mu; /* conns, stopping */
    pthread_cond_t cv;
    http_conn *conns;
    int stopping;
    int watchdog_running;
    pthread_t watchdog;
    atomic_ulong cut_total; /* connections cut at the header deadline */
    double log_next;        /* MHD's messages: only its thread logs them */
    unsigned long log_suppressed;
};

/* ------------------------------------------------------------ helpers */

/* Seconds since the last acknowledged beat, or -1 before the first one. */
static double heartbeat_age(const hh_manager_stats *st, double now) {
    if (st->heartbeat_last_pushed_at <= 0) return -1;
    double age = now - st->heartbeat_last_pushed_at;
    return age < 0 ? 0 : age; /* the wall clock stepped back */
}

static double round_ms(double x) { return round(x * 1000.0) / 1000.0; }

static json_int_t json_u64(uint64_t v) {
    return v > (uint64_t)LLONG_MAX ? (json_int_t)LLONG_MAX : (json_int_t)v; /* json_int_t is long long */
}

/* json_string() refuses invalid UTF-8; an error message from Redis or a
 * hostname should still show, so bytes >= 0x80 become '?' in that case. */
static json_t *jstr(const char *s) {
    if (!s) return json_null();
    json_t *j = json_string(s);
    if (j) return j;
    char *copy = strdup(s);
    if (!copy) return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80) *p = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

/* ------------------------------------------------------- pure functions */

int hh__http_healthy(const hh_manager_stats *st, double now, double max_age, char *reason, size_t len) {
    char tmp[256];
    int healthy;
    if (st->heartbeat_last_pushed_at > 0) {
        double age = heartbeat_age(st, now);
        healthy = age < max_age;
        hh__snprintf_c(tmp, sizeof(tmp), "last heartbeat acknowledged by Redis %.1f s ago (liveness max age %g s)", age,
                       max_age);
    } else if (st->started_at > 0) {
        double since = now - st->started_at;
        healthy = since < max_age;
        hh__snprintf_c(tmp, sizeof(tmp),
                       "no heartbeat acknowledged by Redis in the %.1f s since start (liveness max age %g s)",
                       since < 0 ? 0 : since, max_age);
    } else {
        healthy = 0;
        snprintf(tmp, sizeof(tmp), "the manager has not started");
    }
    if (reason && len) hh__strlcpy(reason, healthy ? "" : tmp, len);
    return healthy;
}

int hh__http_ready(const hh_manager_stats *st, char *reason, size_t len) {
    const char *why = NULL;
    if (st->started_at <= 0) why = "the manager has not started";
    else if (st->stopping) why = "stopping";
    else if (st->quiet) why = "quiet: not fetching";
    /* Redis lost: as soon as any call (a fetch, most often) fails to reach
     * it, not at the next beat; and ready again once calls go through, even
     * if the beat that failed during the outage is not retried yet. */
    else if (!st->redis_reachable) why = "not connected to Redis";
    else if (st->heartbeat_last_pushed_at <= 0) why = "no heartbeat acknowledged by Redis yet";
    /* the beat reached Redis and was refused (OOM, a script error) */
    else if (st->redis_connected && st->heartbeat_last_error[0]) why = "the last heartbeat failed";
    /* a retry or dead set Redis refuses (a wrong-typed key, OOM): the
     * threads writing those outcomes are held until it takes them */
    else if (st->outcomes_refused > 0) why = "Redis refuses job outcomes (retry or dead entries): see the log";
    /* a handler's own resources (hh_manager_set_unready) */
    else if (st->unready[0]) why = st->unready;
    if (reason && len) hh__strlcpy(reason, why ? why : "", len);
    return why == NULL;
}

static json_t *stats_object(const hh_manager_stats *st, double now, double max_age) {
    json_t *o = json_object(), *queues = json_array();
    if (!o || !queues) {
        json_decref(o);
        json_decref(queues);
        return NULL;
    }
    double age = heartbeat_age(st, now);
    int ok = 1;
    ok &= !json_object_set_new(o, "identity", jstr(st->identity));
    ok &= !json_object_set_new(o, "version", json_string(HH_VERSION));
    ok &= !json_object_set_new(o, "started_at", json_real(st->started_at));
    ok &= !json_object_set_new(o, "concurrency", json_integer(st->concurrency));
    ok &= !json_object_set_new(o, "busy", json_integer(st->busy));
    ok &= !json_object_set_new(o, "quiet", json_boolean(st->quiet));
    ok &= !json_object_set_new(o, "stopping", json_boolean(st->stopping));
    ok &= !json_object_set_new(o, "processed", json_integer(json_u64(st->processed)));
    ok &= !json_object_set_new(o, "failed", json_integer(json_u64(st->failed)));
    ok &= !json_object_set_new(o, "recovered", json_integer(json_u64(st->recovered)));
    ok &= !json_object_set_new(o, "reconciled", json_integer(json_u64(st->reconciled)));
    ok &= !json_object_set_new(o, "lease_lost", json_integer(json_u64(st->lease_lost)));
    ok &= !json_object_set_new(o, "outcomes_refused", json_integer(st->outcomes_refused));
    ok &= !json_object_set_new(o, "not_pushed_back", json_integer(json_u64(st->not_pushed_back)));
    ok &= !json_object_set_new(o, "batch_jobs", json_integer(json_u64(st->batch_jobs)));
    json_t *cron = json_object();
    ok &= !json_object_set_new(cron, "jobs", json_integer(st->cron_jobs));
    ok &= !json_object_set_new(cron, "disabled", json_integer(st->cron_disabled));
    ok &= !json_object_set_new(cron, "broken", json_integer(st->cron_broken));
    ok &= !json_object_set_new(cron, "next_tick", st->cron_next > 0 ? json_integer(st->cron_next) : json_null());
    ok &= !json_object_set_new(cron, "enqueued", json_integer(json_u64(st->cron_enqueued)));
    ok &= !json_object_set_new(o, "cron", cron);
    ok &= !json_object_set_new(o, "unready", st->unready[0] ? jstr(st->unready) : json_null());
    ok &= !json_object_set_new(o, "heartbeat_last_pushed_at", json_real(st->heartbeat_last_pushed_at));
    ok &= !json_object_set_new(o, "heartbeat_age", age < 0 ? json_null() : json_real(round_ms(age)));
    ok &= !json_object_set_new(o, "heartbeat_last_error", jstr(st->heartbeat_last_error));
    ok &= !json_object_set_new(o, "redis_connected", json_boolean(st->redis_connected));
    ok &= !json_object_set_new(o, "healthy", json_boolean(hh__http_healthy(st, now, max_age, NULL, 0)));
    ok &= !json_object_set_new(o, "liveness_max_age", json_real(max_age));
    size_t nq = st->nqueues < st->queues_cap ? st->nqueues : st->queues_cap;
    for (size_t i = 0; i < nq && ok; i++) {
        json_t *q = json_object();
        ok &= q != NULL;
        if (!q) break;
        int read = st->queues[i].size >= 0; /* size and latency come from the same beat */
        ok &= !json_object_set_new(q, "name", jstr(st->queues[i].name));
        ok &= !json_object_set_new(q, "fetched", json_integer(json_u64(st->queues[i].fetched)));
        ok &= !json_object_set_new(q, "size", read ? json_integer((json_int_t)st->queues[i].size) : json_null());
        ok &= !json_object_set_new(q, "latency", read ? json_real(round_ms(st->queues[i].latency)) : json_null());
        ok &= !json_array_append_new(queues, q);
    }
    ok &= !json_object_set_new(o, "queues", queues);
    /* "queues" lists the first queues_cap (HH_MAX_QUEUES, manager.h); this counts all */
    ok &= !json_object_set_new(o, "queues_total", json_integer((json_int_t)st->nqueues));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *hh__http_stats_json(const hh_manager_stats *st, double now, double max_age) {
    json_t *o = stats_object(st, now, max_age);
    char *s = o ? json_dumps(o, HH_JSON_FLAGS) : NULL;
    json_decref(o);
    return s;
}

char *hh__http_metrics_text(const hh_manager_stats *st, double now) {
    hh__prom b = {0};
    size_t nq = st->nqueues < st->queues_cap ? st->nqueues : st->queues_cap;

    hh__prom_header(&b, "hiredhand_info", "gauge", "Identity and version of this worker process (always 1).");
    hh__prom_printf(&b, "hiredhand_info{identity=\"");
    hh__prom_label(&b, st->identity);
    hh__prom_printf(&b, "\",version=\"");
    hh__prom_label(&b, HH_VERSION);
    hh__prom_printf(&b, "\"} 1\n");

    hh__prom_header(&b, "hiredhand_jobs_processed_total", "counter",
                    "Jobs finished by this process since start, failures included.");
    hh__prom_printf(&b, "hiredhand_jobs_processed_total %llu\n", (unsigned long long)st->processed);
    hh__prom_header(&b, "hiredhand_jobs_failed_total", "counter", "Jobs that failed in this process since start.");
    hh__prom_printf(&b, "hiredhand_jobs_failed_total %llu\n", (unsigned long long)st->failed);
    hh__prom_header(&b, "hiredhand_jobs_recovered_total", "counter",
                    "Orphaned jobs this process pushed back to their queues.");
    hh__prom_printf(&b, "hiredhand_jobs_recovered_total %llu\n", (unsigned long long)st->recovered);
    hh__prom_header(&b, "hiredhand_jobs_reconciled_total", "counter",
                    "Entries of this process's in-progress lists held by no thread (lost fetch replies), pushed back.");
    hh__prom_printf(&b, "hiredhand_jobs_reconciled_total %llu\n", (unsigned long long)st->reconciled);
    hh__prom_header(&b, "hiredhand_lease_lost_total", "counter",
                    "Jobs of this process recovered by another process while this one still had them.");
    hh__prom_printf(&b, "hiredhand_lease_lost_total %llu\n", (unsigned long long)st->lease_lost);
    hh__prom_header(&b, "hiredhand_cron_jobs", "gauge", "Periodic jobs (sidekiq-cron's) the last cron poll read.");
    hh__prom_printf(&b, "hiredhand_cron_jobs %ld\n", st->cron_jobs);
    hh__prom_header(&b, "hiredhand_cron_jobs_disabled", "gauge", "Periodic jobs disabled, at the last cron poll.");
    hh__prom_printf(&b, "hiredhand_cron_jobs_disabled %ld\n", st->cron_disabled);
    hh__prom_header(&b, "hiredhand_cron_jobs_broken", "gauge",
                    "Periodic jobs hiredhand cannot run (expression or message refused), at the last cron poll.");
    hh__prom_printf(&b, "hiredhand_cron_jobs_broken %ld\n", st->cron_broken);
    hh__prom_header(&b, "hiredhand_cron_next_tick_seconds", "gauge",
                    "Unix time of the earliest next tick of an enabled periodic job (0: none).");
    hh__prom_printf(&b, "hiredhand_cron_next_tick_seconds %lld\n", (long long)st->cron_next);
    hh__prom_header(&b, "hiredhand_cron_enqueued_total", "counter", "Periodic-job ticks this process enqueued.");
    hh__prom_printf(&b, "hiredhand_cron_enqueued_total %llu\n", (unsigned long long)st->cron_enqueued);
    hh__prom_header(&b, "hiredhand_jobs_not_pushed_back_total", "counter",
                    "Jobs basic fetch took out of Redis that Redis did not take back (payloads logged at ERROR).");
    hh__prom_printf(&b, "hiredhand_jobs_not_pushed_back_total %llu\n", (unsigned long long)st->not_pushed_back);
    hh__prom_header(&b, "hiredhand_batch_jobs_total", "counter",
                    "Jobs of Sidekiq Pro batches (with a bid) fetched: run or skipped per --batch-jobs; their batches' "
                    "books are kept by Sidekiq Pro only.");
    hh__prom_printf(&b, "hiredhand_batch_jobs_total %llu\n", (unsigned long long)st->batch_jobs);

    hh__prom_header(&b, "hiredhand_busy", "gauge", "Jobs running now (a failed one until its outcome is written).");
    hh__prom_printf(&b, "hiredhand_busy %d\n", st->busy);
    hh__prom_header(&b, "hiredhand_outcomes_refused", "gauge",
                    "Failed jobs whose retry or dead entry Redis refuses now (retried until written).");
    hh__prom_printf(&b, "hiredhand_outcomes_refused %d\n", st->outcomes_refused);
    hh__prom_header(&b, "hiredhand_concurrency", "gauge", "Worker threads.");
    hh__prom_printf(&b, "hiredhand_concurrency %d\n", st->concurrency);
    hh__prom_header(&b, "hiredhand_quiet", "gauge", "1 once the process is quiet or stopping (fetches no new jobs).");
    hh__prom_printf(&b, "hiredhand_quiet %d\n", st->quiet ? 1 : 0);
    hh__prom_header(&b, "hiredhand_redis_connected", "gauge", "1 when the heartbeat connection to Redis is up.");
    hh__prom_printf(&b, "hiredhand_redis_connected %d\n", st->redis_connected ? 1 : 0);
    hh__prom_header(&b, "hiredhand_start_time_seconds", "gauge", "When the worker started, epoch seconds.");
    hh__prom_printf(&b, "hiredhand_start_time_seconds");
    hh__prom_value(&b, st->started_at);

    hh__prom_header(&b, "hiredhand_heartbeat_last_pushed_timestamp_seconds", "gauge",
                    "When Redis last acknowledged a heartbeat, epoch seconds (0 before the first).");
    hh__prom_printf(&b, "hiredhand_heartbeat_last_pushed_timestamp_seconds");
    hh__prom_value(&b, st->heartbeat_last_pushed_at > 0 ? st->heartbeat_last_pushed_at : 0);
    /* No sample before the first acknowledged beat: there is no age yet. */
    hh__prom_header(&b, "hiredhand_heartbeat_age_seconds", "gauge",
                    "Seconds since Redis last acknowledged a heartbeat.");
    double age = heartbeat_age(st, now);
    if (age >= 0) {
        hh__prom_printf(&b, "hiredhand_heartbeat_age_seconds");
        hh__prom_value(&b, age);
    }

    /* Per-queue series cover the first HH_MAX_QUEUES queues (manager.h). */
    hh__prom_header(&b, "hiredhand_queues", "gauge",
                    "Queues this process fetches from; the per-queue series cover the first 64.");
    hh__prom_printf(&b, "hiredhand_queues %zu\n", st->nqueues);
    /* Sizes and latencies are read at each beat: none before the first. */
    hh__prom_header(&b, "hiredhand_queue_size", "gauge",
                    "Jobs waiting in the queue, read at the last heartbeat. The same on every process "
                    "(scope=\"cluster\"): aggregate with max(), not sum().");
    for (size_t i = 0; i < nq; i++) {
        if (st->queues[i].size < 0) continue;
        hh__prom_printf(&b, "hiredhand_queue_size{queue=\"");
        hh__prom_label(&b, st->queues[i].name);
        hh__prom_printf(&b, "\",scope=\"cluster\"} %lld\n", (long long)st->queues[i].size);
    }
    hh__prom_header(&b, "hiredhand_queue_latency_seconds", "gauge",
                    "Age of the oldest job in the queue, read at the last heartbeat; the same on every process "
                    "(scope=\"cluster\").");
    for (size_t i = 0; i < nq; i++) {
        if (st->queues[i].size < 0) continue;
        hh__prom_printf(&b, "hiredhand_queue_latency_seconds{queue=\"");
        hh__prom_label(&b, st->queues[i].name);
        hh__prom_printf(&b, "\",scope=\"cluster\"}");
        hh__prom_value(&b, st->queues[i].latency);
    }
    hh__prom_header(&b, "hiredhand_queue_fetched_total", "counter",
                    "Jobs this process took from the queue since start.");
    for (size_t i = 0; i < nq; i++) {
        hh__prom_printf(&b, "hiredhand_queue_fetched_total{queue=\"");
        hh__prom_label(&b, st->queues[i].name);
        hh__prom_printf(&b, "\"} %llu\n", (unsigned long long)st->queues[i].fetched);
    }
    return hh__prom_take(&b);
}

/* ------------------------------------------------------------ routing */

/* Whether authorization is "Bearer <token>". The scheme is matched without
 * case (RFC 7235); the token compare takes the same time wherever the first
 * difference is, so the answer's timing does not leak the token byte by
 * byte (only its length). */
int hh__http_token_ok(const char *authorization, const char *token) {
    if (!token) return 1;
    if (!authorization || strncasecmp(authorization, "Bearer", 6) != 0) return 0;
    const char *given = authorization + 6;
    if (*given != ' ' && *given != '\t') return 0;
    while (*given == ' ' || *given == '\t') given++;
    size_t glen = strlen(given), wlen = strlen(token);
    while (glen && (given[glen - 1] == ' ' || given[glen - 1] == '\t')) glen--;
    volatile unsigned char diff = glen != wlen;
    for (size_t i = 0; i < wlen; i++) diff |= (unsigned char)(token[i] ^ (i < glen ? given[i] : 0));
    return diff == 0;
}

hh__http_route hh__http_route_of(const char *method, const char *url, const char *authorization, const char *token) {
    if (!method || (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0))
        return HH_HTTP_ROUTE_METHOD;
    if (!url) return HH_HTTP_ROUTE_NOT_FOUND;
    /* /healthz stays open: a probe carries no credentials, and it tells
     * only the status and the heartbeat's age. */
    if (!strcmp(url, "/healthz")) return HH_HTTP_ROUTE_HEALTHZ;
    if (!strcmp(url, "/readyz")) return HH_HTTP_ROUTE_READYZ; /* open too: status only */
    int stats = !strcmp(url, "/stats"), metrics = !strcmp(url, "/metrics");
    if (!stats && !metrics) return HH_HTTP_ROUTE_NOT_FOUND;
    if (!hh__http_token_ok(authorization, token)) return HH_HTTP_ROUTE_UNAUTHORIZED;
    return stats ? HH_HTTP_ROUTE_STATS : HH_HTTP_ROUTE_METRICS;
}

static char *dump_new(json_t *o) {
    char *s = o ? json_dumps(o, HH_JSON_FLAGS) : NULL;
    json_decref(o);
    return s;
}

/* Status and ages only: the probe port may face a network without a token,
 * so no identity, host or Redis error here (those are in /stats). */
static char *healthz_json(const hh_manager_stats *st, double now, double max_age, int *healthy) {
    char reason[256];
    *healthy = hh__http_healthy(st, now, max_age, reason, sizeof(reason));
    double age = heartbeat_age(st, now);
    json_t *o = json_object();
    if (o) {
        json_object_set_new(o, "status", json_string(*healthy ? "ok" : "unhealthy"));
        if (!*healthy) json_object_set_new(o, "reason", jstr(reason));
        json_object_set_new(o, "heartbeat_age", age < 0 ? json_null() : json_real(round_ms(age)));
        json_object_set_new(o, "liveness_max_age", json_real(max_age));
    }
    return dump_new(o);
}

/* Readiness for a load balancer or Kubernetes: status and reason only, as
 * /healthz (the Redis error itself is in /stats). */
static char *readyz_json(const hh_manager_stats *st, int *ready) {
    char reason[128];
    *ready = hh__http_ready(st, reason, sizeof(reason));
    return dump_new(*ready ? json_pack("{s:s}", "status", "ready")
                           : json_pack("{s:s, s:s}", "status", "not ready", "reason", reason));
}

void hh__http_reply_for(hh__http_route route, const hh_manager_stats *st, double now, double max_age,
                        hh__http_reply *r) {
    int healthy = 0;
    memset(r, 0, sizeof(*r));
    r->type = HH_HTTP_JSON;
    switch (route) {
    case HH_HTTP_ROUTE_HEALTHZ:
        r->body = healthz_json(st, now, max_age, &healthy);
        r->status = healthy ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        break;
    case HH_HTTP_ROUTE_READYZ:
        r->body = readyz_json(st, &healthy);
        r->status = healthy ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        break;
    case HH_HTTP_ROUTE_STATS:
        r->status = MHD_HTTP_OK;
        r->body = hh__http_stats_json(st, now, max_age);
        break;
    case HH_HTTP_ROUTE_METRICS:
        r->status = MHD_HTTP_OK;
        r->type = HH_HTTP_PROMETHEUS;
        r->body = hh__http_metrics_text(st, now);
        break;
    case HH_HTTP_ROUTE_UNAUTHORIZED:
        r->status = MHD_HTTP_UNAUTHORIZED;
        r->header = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
        r->value = "Bearer realm=\"hiredhand\"";
        r->body = dump_new(
            json_pack("{s:s}", "error", "unauthorized: /stats and /metrics want Authorization: Bearer <token>"));
        break;
    case HH_HTTP_ROUTE_METHOD:
        r->status = MHD_HTTP_METHOD_NOT_ALLOWED;
        r->header = MHD_HTTP_HEADER_ALLOW;
        r->value = HH_HTTP_ALLOW;
        r->body = dump_new(json_pack("{s:s, s:s}", "error", "method not allowed", "allow", HH_HTTP_ALLOW));
        break;
    case HH_HTTP_ROUTE_NOT_FOUND:
    default:
        r->status = MHD_HTTP_NOT_FOUND;
        r->body = dump_new(json_pack("{s:s, s:[s,s,s,s]}", "error", "not found", "paths", "/healthz", "/readyz",
                                     "/stats", "/metrics"));
        break;
    }
}

/* ------------------------------------------------------------- serving */

static enum MHD_Result respond(const hh__http *h, struct MHD_Connection *conn, hh__http_reply *rp) {
    static const char oom[] = "{\"error\":\"out of memory\"}";
    struct MHD_Response *r;
    unsigned int status = rp->status;
    const char *type = rp->type;
    if (rp->body) {
        r = h->api.create_response_from_buffer(strlen(rp->body), rp->body, MHD_RESPMEM_MUST_FREE);
        if (!r) free(rp->body);
    } else {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        type = HH_HTTP_JSON;
        r = h->api.create_response_from_buffer(sizeof(oom) - 1, (void *)(uintptr_t)oom, MHD_RESPMEM_PERSISTENT);
    }
    rp->body = NULL;
    if (!r) return MHD_NO; /* MHD closes the connection */
    h->api.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    h->api.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (rp->header) h->api.add_response_header(r, rp->header, rp->value);
    enum MHD_Result rc = h->api.queue_response(conn, status, r);
    h->api.destroy_response(r);
    return rc;
}

static http_conn *conn_of(const hh__http *h, struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = h->api.get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The headers of this connection's current request are in (reading 0), or
 * a request ended and the next one's headers start now (reading 1). */
static void conn_phase(hh__http *h, struct MHD_Connection *conn, int reading) {
    http_conn *c = conn_of(h, conn);
    if (!c) return;
    pthread_mutex_lock(&h->mu);
    if (reading && !c->reading) c->since = hh__mono();
    c->reading = reading;
    pthread_mutex_unlock(&h->mu);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    hh__http *h = cls;
    hh__http_reply r;
    (void)version, (void)upload_data;
    if (!*con_cls) conn_phase(h, conn, 0); /* MHD calls us once the headers are in */
    const char *auth =
        h->token ? h->api.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION) : NULL;
    hh__http_route route = hh__http_route_of(method, url, auth, h->token);
    /* Other methods are answered at once, on the first call: MHD discards
     * the request body and closes that connection after the response. */
    if (route == HH_HTTP_ROUTE_METHOD) {
        hh__http_reply_for(route, NULL, 0, h->max_age, &r);
        return respond(h, conn, &r);
    }
    /* GET/HEAD: wait for the whole request (skipping any body) so that the
     * connection can be kept alive. *con_cls only marks "headers seen". */
    if (!*con_cls) {
        *con_cls = h;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (route != HH_HTTP_ROUTE_HEALTHZ && route != HH_HTTP_ROUTE_READYZ && route != HH_HTTP_ROUTE_STATS &&
        route != HH_HTTP_ROUTE_METRICS) {
        hh__http_reply_for(route, NULL, 0, h->max_age, &r);
        return respond(h, conn, &r);
    }
    /* The snapshot with its queues is a few KB: keep it off the MHD thread's stack. */
    hh_manager_stats *st = calloc(1, sizeof(*st) + HH_MAX_QUEUES * sizeof(hh_queue_stats));
    if (st) {
        st->queues = (hh_queue_stats *)(st + 1);
        st->queues_cap = HH_MAX_QUEUES;
    }
    if (!st) {
        memset(&r, 0, sizeof(r)); /* no body: a 500 "out of memory" */
        return respond(h, conn, &r);
    }
    h->src.fill_stats(h->src.udata, st);
    hh__http_reply_for(route, st, hh__now(), h->max_age, &r);
    free(st);
    if (route == HH_HTTP_ROUTE_METRICS && r.body) r.body = metrics_more(h, r.body);
    return respond(h, conn, &r);
}

/* body, then the source's series and the process metrics; NULL (a 500)
 * when out of memory. */
static char *metrics_more(const hh__http *h, char *body) {
    char *more = h->src.metrics ? hh__metrics_text(h->src.metrics) : NULL;
    char *proc = hh__metrics_process_text();
    size_t bl = strlen(body), ml = more ? strlen(more) : 0, pl = proc ? strlen(proc) : 0;
    char *all = (h->src.metrics && !more) || !proc ? NULL : malloc(bl + ml + pl + 1);
    if (all) {
        memcpy(all, body, bl);
        if (ml) memcpy(all + bl, more, ml);
        memcpy(all + bl + ml, proc, pl + 1);
    }
    free(body);
    free(more);
    free(proc);
    return all;
}

/* A request ended (answered, or the client left): a kept-alive connection
 * starts reading the next request's headers, under a new deadline. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)con_cls, (void)toe;
    conn_phase(cls, conn, 1);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    hh__http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = h->api.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        http_conn *c = ci ? calloc(1, sizeof(*c)) : NULL;
        if (!c) return; /* no deadline for this one; the idle timeout still applies */
        c->fd = ci->connect_fd;
        c->since = hh__mono();
        c->reading = 1;
        pthread_mutex_lock(&h->mu);
        c->next = h->conns;
        if (h->conns) h->conns->prev = c;
        h->conns = c;
        pthread_mutex_unlock(&h->mu);
        *socket_context = c;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_conn *c = *socket_context;
        if (!c) return;
        pthread_mutex_lock(&h->mu);
        if (c->prev) c->prev->next = c->next;
        else h->conns = c->next;
        if (c->next) c->next->prev = c->prev;
        pthread_mutex_unlock(&h->mu);
        free(c);
        *socket_context = NULL;
    }
}

/* Cuts connections still sending headers past the deadline. shutdown()
 * (not close()) leaves the descriptor to MHD, which sees the end of the
 * stream at its next poll and closes the connection the usual way. */
static void *watchdog_main(void *arg) {
    hh__http *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += HH_HTTP_WATCHDOG_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
        double now = hh__mono();
        for (http_conn *c = h->conns; c && !h->stopping; c = c->next) {
            if (!c->reading || c->cut || now - c->since < HH_HTTP_HEADER_DEADLINE) continue;
            shutdown(c->fd, SHUT_RDWR);
            c->cut = 1;
            atomic_fetch_add(&h->cut_total, 1);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* MHD's own messages: kept while starting (for the error), logged after. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    hh__http *h = cls;
    char msg[256];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    if (!atomic_load(&h->serving)) {
        hh__strlcpy(h->start_msg, msg, sizeof(h->start_msg));
        return;
    }
    /* Each refused or cut connection makes a message: at most one every
     * HH_HTTP_LOG_EVERY seconds, or slow clients would flood the log. */
    double now = hh__mono();
    if (now < h->log_next) {
        h->log_suppressed++;
        return;
    }
    h->log_next = now + HH_HTTP_LOG_EVERY;
    if (h->log_suppressed)
        hh__log(h->src.log, HH_LOG_WARN, "http: %s (and %lu more messages in the last %d s)", msg, h->log_suppressed,
                HH_HTTP_LOG_EVERY);
    else hh__log(h->src.log, HH_LOG_WARN, "http: %s", msg);
    h->log_suppressed = 0;
}

/* ---------------------------------------------------------- start, stop */

/* Splits "PORT", "HOST:PORT" or "[V6]:PORT" and resolves it into *ss. */
static int parse_bind(const char *bind, struct sockaddr_storage *ss, socklen_t *sslen, int *v6, char *err,
                      size_t errlen) {
    char host[256], port[16];
    const char *colon;
    *v6 = 0;
    if (!bind || !*bind) {
        snprintf(err, errlen, "empty --http address (want PORT, HOST:PORT or [IPV6]:PORT)");
        return -1;
    }
    if (bind[0] == '[') {
        const char *close = strchr(bind, ']');
        if (!close || close[1] != ':' || close == bind + 1 || (size_t)(close - bind - 1) >= sizeof(host)) {
            snprintf(err, errlen, "bad --http address '%s' (want [IPV6]:PORT, e.g. [::1]:9090)", bind);
            return -1;
        }
        memcpy(host, bind + 1, (size_t)(close - bind - 1));
        host[close - bind - 1] = '\0';
        colon = close + 1;
        *v6 = 1;
    } else if ((colon = strchr(bind, ':'))) {
        if (strchr(colon + 1, ':')) {
            snprintf(err, errlen, "bad --http address '%s' (put an IPv6 address in brackets: [::1]:PORT)", bind);
            return -1;
        }
        if (colon == bind || (size_t)(colon - bind) >= sizeof(host)) {
            snprintf(err, errlen, "bad --http address '%s' (want PORT or HOST:PORT)", bind);
            return -1;
        }
        memcpy(host, bind, (size_t)(colon - bind));
        host[colon - bind] = '\0';
    } else {
        hh__strlcpy(host, "127.0.0.1", sizeof(host));
        colon = bind - 1; /* the whole string is the port */
    }
    const char *p = colon + 1;
    size_t plen = strlen(p);
    long portnum = 0;
    int digits = plen > 0 && plen < 6;
    for (size_t i = 0; digits && i < plen; i++) {
        if (p[i] < '0' || p[i] > '9') digits = 0;
        else portnum = portnum * 10 + (p[i] - '0');
    }
    if (!digits || portnum < 1 || portnum > 65535) {
        snprintf(err, errlen, "bad --http port in '%s' (want 1-65535)", bind);
        return -1;
    }
    snprintf(port, sizeof(port), "%ld", portnum);

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = *v6 ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    /* Literals only, plus "localhost" (127.0.0.1): no DNS lookup at start. */
    if (*v6 || strcmp(host, "localhost") != 0) hints.ai_flags |= AI_NUMERICHOST;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "bad --http address '%s': %s (want PORT, IPV4:PORT, localhost:PORT or [IPV6]:PORT)", bind,
                 rc == EAI_NONAME ? (*v6 ? "not an IPv6 address" : "not an IPv4 address or localhost")
                                  : gai_strerror(rc));
        if (res) freeaddrinfo(res);
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sslen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* Why MHD could not listen: try the same bind ourselves for a precise errno.
 * Returns 0 when the probe bound fine (then MHD's message is all we have). */
static int probe_bind(const struct sockaddr_storage *ss, socklen_t sslen, int v6) {
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int one = 1, e = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* as MHD does */
    if (v6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)ss, sslen) != 0) e = errno;
    close(fd);
    return e;
}

/* "127.0.0.1:8080" or "[::1]:8080": the resolved address as logs show it. */
static void bind_display(const struct sockaddr_storage *ss, socklen_t sslen, int v6, char *out, size_t n) {
    char addr[INET6_ADDRSTRLEN] = "?", port[16] = "?";
    getnameinfo((const struct sockaddr *)ss, sslen, addr, sizeof(addr), port, sizeof(port),
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, n, v6 ? "[%s]:%s" : "%s:%s", addr, port);
}

int hh__http_bind_check(const char *bind, int try_bind, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    int v6 = 0;
    memset(&ss, 0, sizeof(ss));
    if (parse_bind(bind, &ss, &sslen, &v6, err, errlen) != 0) return -1;
    int e = try_bind ? probe_bind(&ss, sslen, v6) : 0;
    if (e) {
        char display[INET6_ADDRSTRLEN + 16];
        bind_display(&ss, sslen, v6, display, sizeof(display));
        snprintf(err, errlen, "cannot listen on %s: %s", display, strerror(e));
        return -1;
    }
    return 0;
}

/* The total connection limit: below a quarter of the descriptor budget. */
static unsigned int connection_limit(void) {
    struct rlimit rl;
    rlim_t lim = HH_HTTP_CONNECTION_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < lim)
        lim = rl.rlim_cur / 4;
    return lim < HH_HTTP_CONNECTION_MIN ? HH_HTTP_CONNECTION_MIN : (unsigned int)lim;
}

static void http_free(hh__http *h) {
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h->token);
    free(h);
}

static void watchdog_stop(hh__http *h) {
    if (!h->watchdog_running) return;
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->watchdog, NULL);
    h->watchdog_running = 0;
}

hh__http *hh__http_start(const hh__http_source *src, const char *bind, double liveness_max_age, const char *token,
                         char *err, size_t errlen) {
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    int v6 = 0;
    char tmp[256];
    if (!err || !errlen) {
        err = tmp;
        errlen = sizeof(tmp);
    }
    err[0] = '\0';
    if (!src || !src->fill_stats || !src->log) {
        snprintf(err, errlen, "no stats source");
        return NULL;
    }
    memset(&ss, 0, sizeof(ss));
    if (parse_bind(bind, &ss, &sslen, &v6, err, errlen) != 0) return NULL;

    hh__http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->src = *src;
    h->max_age = liveness_max_age > 0 ? liveness_max_age : 30;
    h->conn_limit = connection_limit();
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (token && !(h->token = strdup(token))) {
        snprintf(err, errlen, "out of memory");
        http_free(h);
        return NULL;
    }
    bind_display(&ss, sslen, v6, h->display, sizeof(h->display));

    unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    if (mhd_load(&h->api, err, errlen) != 0) {
        http_free(h);
        return NULL;
    }
    if (pthread_create(&h->watchdog, NULL, watchdog_main, h) != 0) {
        snprintf(err, errlen, "cannot start the http watchdog thread");
        dlclose(h->api.so);
        http_free(h);
        return NULL;
    }
    h->watchdog_running = 1;
    h->daemon = h->api.start_daemon(
        flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, h->conn_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned int)HH_HTTP_PER_IP_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HH_HTTP_CONNECTION_TIMEOUT,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    if (!h->daemon) {
        int e = probe_bind(&ss, sslen, v6);
        if (e) snprintf(err, errlen, "cannot listen on %s: %s", h->display, strerror(e));
        else
            snprintf(err, errlen, "cannot listen on %s: %s", h->display,
                     h->start_msg[0] ? h->start_msg : "libmicrohttpd could not start");
        watchdog_stop(h);
        dlclose(h->api.so);
        http_free(h);
        return NULL;
    }
    atomic_store(&h->serving, 1);
    hh__log(h->src.log, HH_LOG_INFO,
            "http: serving /healthz, /readyz, /stats and /metrics on http://%s (liveness max age %g s; %s; at most %u "
            "connections, %d per client address, %g s to send request headers)",
            h->display, h->max_age, h->token ? "/stats and /metrics need the bearer token" : "no token", h->conn_limit,
            HH_HTTP_PER_IP_LIMIT, HH_HTTP_HEADER_DEADLINE);
    return h;
}

void hh__http_stop(hh__http *h) {
    if (!h) return;
    watchdog_stop(h);
    h->api.stop_daemon(h->daemon); /* joins the polling thread, closes every connection */
    dlclose(h->api.so);
    http_free(h);
}

int hh__http_token_valid(const char *token) {
    if (!token || !*token) return 0;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)token; *p; p++, n++)
        if (*p <= 0x20 || *p >= 0x7f || n >= HH_HTTP_TOKEN_MAX) return 0;
    return 1;
}
