/* options.c -- the one check of hh_manager_options (hiredhand.h): every
 * limit and name rule a worker's options must meet, with the reason when
 * one is not met. hh_manager_new() applies it, and the CLI calls it to
 * print that reason, so the command line and the library never hold two
 * sets of limits. No Redis keys (the URL is parsed, not connected to). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "abi.h"
#include "error.h"
#include "http.h"
#include "options.h"
#include "redis.h"
#include "util.h"

/* the limits are hiredhand.h's: the CLI states the same ranges */
#define POLL_MIN 0.1 /* seconds: the shortest scheduler poll interval */
#define WEIGHT_MAX HH_WEIGHT_LIMIT
#define CONCURRENCY_MAX HH_CONCURRENCY_LIMIT
#define HEARTBEAT_MIN HH_HEARTBEAT_INTERVAL_MIN
#define HEARTBEAT_MAX HH_HEARTBEAT_INTERVAL_MAX
#define COUNT_MAX HH_RETRIES_LIMIT /* max_retries, max_recoveries */
#define DEAD_MAX_JOBS_MAX HH_DEAD_MAX_JOBS_LIMIT

static int why(char *errbuf, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int why(char *errbuf, size_t errlen, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    hh__vsnprintf_c(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (errbuf && errlen) hh__strlcpy(errbuf, msg, errlen);
    return hh__fail(HH_ERR_INVALID, "%s", msg);
}

/* hh_name_check with the reason passed on. */
static int name_ok(hh_name_kind kind, const char *name, char *errbuf, size_t errlen) {
    char msg[512];
    if (hh_name_check(kind, name, msg, sizeof(msg)) == HH_OK) return HH_OK;
    return why(errbuf, errlen, "%s", msg);
}

static int check_queues(const hh_manager_options *o, char *errbuf, size_t errlen) {
    if (o->nqueues > HH_QUEUES_LIMIT)
        return why(errbuf, errlen, "too many queues: at most %d per worker (%zu given)", HH_QUEUES_LIMIT, o->nqueues);
    if (o->nqueues && !o->queues) return why(errbuf, errlen, "nqueues is %zu but queues is NULL", o->nqueues);
    for (size_t i = 0; i < o->nqueues; i++) {
        const hh_queue_weight *q = &o->queues[i];
        if (name_ok(HH_NAME_QUEUE, q->name, errbuf, errlen) != HH_OK) return HH_ERR_INVALID;
        if (q->weight < 0 || q->weight > WEIGHT_MAX)
            return why(errbuf, errlen, "queue %s: weight %d, want 0 to %d", q->name, q->weight, WEIGHT_MAX);
    }
    return HH_OK;
}

static int check_numbers(const hh_manager_options *o, char *errbuf, size_t errlen) {
    if (o->concurrency < 1 || o->concurrency > CONCURRENCY_MAX)
        return why(errbuf, errlen, "concurrency %d: want 1 to %d threads", o->concurrency, CONCURRENCY_MAX);
    if (!(o->shutdown_timeout >= 0) || !isfinite(o->shutdown_timeout))
        return why(errbuf, errlen, "shutdown timeout %g: want seconds >= 0", o->shutdown_timeout);
    if (!(o->heartbeat_interval >= HEARTBEAT_MIN && o->heartbeat_interval <= HEARTBEAT_MAX))
        return why(errbuf, errlen, "heartbeat interval %g: want %g to %g seconds", o->heartbeat_interval, HEARTBEAT_MIN,
                   (double)HEARTBEAT_MAX);
    if (o->max_retries > COUNT_MAX) return why(errbuf, errlen, "max retries %d: at most %d", o->max_retries, COUNT_MAX);
    if (o->max_recoveries < 0 || o->max_recoveries > COUNT_MAX)
        return why(errbuf, errlen, "max recoveries %d: want 0 to %d", o->max_recoveries, COUNT_MAX);
    if (o->dead_max_jobs > DEAD_MAX_JOBS_MAX)
        return why(errbuf, errlen, "dead set limit %ld jobs: at most %ld", o->dead_max_jobs, DEAD_MAX_JOBS_MAX);
    /* 0 (or less) means the default for these; NaN never does */
    if (isnan(o->dead_timeout) || isnan(o->poll_interval_average) || isnan(o->recovery_interval) ||
        isnan(o->liveness_max_age) || o->poll_interval_average < 0 || isnan(o->average_scheduled_poll_interval) ||
        o->average_scheduled_poll_interval < 0)
        return why(errbuf, errlen,
                   "dead timeout, poll interval, recovery interval and liveness max age are "
                   "seconds (0: the default; the poll intervals not negative)");
    /* a poll every few ms is a busy loop on Redis (1e-9 s made 7,000
     * polls a second), not a schedule */
    if ((o->poll_interval_average > 0 && o->poll_interval_average < POLL_MIN) ||
        (o->average_scheduled_poll_interval > 0 && o->average_scheduled_poll_interval < POLL_MIN))
        return why(errbuf, errlen, "poll interval %g: want %g seconds or more (0: the default)",
                   o->poll_interval_average > 0 && o->poll_interval_average < POLL_MIN
                       ? o->poll_interval_average
                       : o->average_scheduled_poll_interval,
                   POLL_MIN);
    if (isnan(o->cron_poll_interval) || o->cron_poll_interval < 0 ||
        (o->cron_poll_interval > 0 && o->cron_poll_interval < POLL_MIN) || o->cron_poll_interval > 86400)
        return why(errbuf, errlen, "cron poll interval %g: want 0 (off) or %g to 86400 seconds", o->cron_poll_interval,
                   POLL_MIN);
    /* /healthz calls a worker dead once its last beat is older than this:
     * not above one interval, a healthy worker flaps to 503 between beats */
    double live = o->liveness_max_age > 0 ? o->liveness_max_age : 30;
    if (o->http_bind && *o->http_bind && live <= o->heartbeat_interval)
        return why(errbuf, errlen,
                   "liveness max age %g s is not above the heartbeat interval %g s: /healthz would fail a healthy "
                   "worker between beats; set --liveness-max-age to %g or more (3 beats)",
                   live, o->heartbeat_interval, 3 * o->heartbeat_interval);
    return HH_OK;
}

static int check_choices(const hh_manager_options *o, char *errbuf, size_t errlen) {
    if (o->fetch != HH_FETCH_RELIABLE && o->fetch != HH_FETCH_BASIC)
        return why(errbuf, errlen, "fetch mode %d: want HH_FETCH_RELIABLE or HH_FETCH_BASIC", (int)o->fetch);
    if (o->lease_lost != HH_LEASE_LOST_STOP && o->lease_lost != HH_LEASE_LOST_FINISH)
        return why(errbuf, errlen, "lease_lost %d: want HH_LEASE_LOST_STOP or HH_LEASE_LOST_FINISH",
                   (int)o->lease_lost);
    if (o->job_metrics & ~(HH_JOB_METRICS_7 | HH_JOB_METRICS_8))
        return why(errbuf, errlen, "job_metrics %d: want a set of HH_JOB_METRICS_7 and HH_JOB_METRICS_8 (0: none)",
                   o->job_metrics);
    if (o->batch_jobs != HH_BATCH_JOBS_RUN && o->batch_jobs != HH_BATCH_JOBS_SKIP)
        return why(errbuf, errlen, "batch_jobs %d: want HH_BATCH_JOBS_RUN or HH_BATCH_JOBS_SKIP", (int)o->batch_jobs);
    return HH_OK;
}

static int check_names(const hh_manager_options *o, char *errbuf, size_t errlen) {
    if (o->tag && name_ok(HH_NAME_TAG, o->tag, errbuf, errlen) != HH_OK) return HH_ERR_INVALID;
    for (size_t i = 0; o->labels && o->labels[i]; i++)
        if (name_ok(HH_NAME_LABEL, o->labels[i], errbuf, errlen) != HH_OK) return HH_ERR_INVALID;
    if (o->identity && *o->identity && name_ok(HH_NAME_IDENTITY, o->identity, errbuf, errlen) != HH_OK)
        return HH_ERR_INVALID;
    for (size_t i = 0; o->cron_namespaces && i < o->ncron_namespaces; i++) {
        const char *ns = o->cron_namespaces[i];
        size_t len = ns ? strlen(ns) : 0;
        if (!len || len > 255 || strpbrk(ns, ": \t\r\n") || !strcmp(ns, "*"))
            return why(errbuf, errlen, "cron namespace \"%s\": want 1-255 bytes without ':', spaces or a lone '*'",
                       ns ? ns : "(null)");
    }
    if (o->http_token && !hh__http_token_valid(o->http_token))
        return why(errbuf, errlen, "bad http_token: want 1-4096 visible ASCII characters, no space");
    return HH_OK;
}

static int check_http(const hh_manager_options *o, int try_bind, char *errbuf, size_t errlen) {
    char msg[512];
    if (o->http_bind && hh__http_bind_check(o->http_bind, try_bind, msg, sizeof(msg)) != 0)
        return why(errbuf, errlen, "http: %s", msg);
    return HH_OK;
}

static int check_redis(const hh_redis_options *r, char *errbuf, size_t errlen) {
    char msg[512];
    hh__redis_config cfg;
    if (hh__redis_config_parse(&cfg, r, msg, sizeof(msg)) != 0) return why(errbuf, errlen, "%s", msg);
    hh__redis_config_free(&cfg);
    if (r->ns && *r->ns && name_ok(HH_NAME_NAMESPACE, r->ns, errbuf, errlen) != HH_OK) return HH_ERR_INVALID;
    return HH_OK;
}

int hh__options_check(const hh_manager_options *caller_opts, int try_bind, char *errbuf, size_t errlen) {
    if (!caller_opts) return why(errbuf, errlen, "no options given");
    hh_manager_options o; /* the caller's struct_size bytes on the defaults */
    hh__manager_options_read(&o, caller_opts);
    int rc = check_numbers(&o, errbuf, errlen);
    if (rc == HH_OK) rc = check_choices(&o, errbuf, errlen);
    if (rc == HH_OK) rc = check_redis(&o.redis, errbuf, errlen);
    if (rc == HH_OK) rc = check_queues(&o, errbuf, errlen);
    if (rc == HH_OK) rc = check_names(&o, errbuf, errlen);
    if (rc == HH_OK) rc = check_http(&o, try_bind, errbuf, errlen); /* last: it may bind */
    if (rc == HH_OK && errbuf && errlen) errbuf[0] = '\0';
    return rc;
}

int hh_manager_options_check(const hh_manager_options *caller_opts, char *errbuf, size_t errlen) {
    return hh__options_check(caller_opts, 1, errbuf, errlen);
}
