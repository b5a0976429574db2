/* abi.c -- the struct_size rule of hiredhand.h ("Structs that can grow"):
 * a caller built against an older header hands in a shorter struct, so the
 * library copies only the bytes the caller's struct_size covers onto the
 * defaults, and writes only that many back. struct_size 0 means the first
 * layout with the rule (the *_V1 sizes below, frozen: never change them).
 * The defaults themselves (hh_*_options_init) live here too, so that the
 * bottom of the library reads a caller's struct without calling up into
 * client.c or manager.c. No Redis keys. */
#include "abi.h"

#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
/* The layouts of version 0.1, the first with struct_size. */
#define REDIS_V1 END_OF(hh_redis_options, sentinel_password)
#define PUSH_V1 END_OF(hh_push_options, extra_json)
#define MANAGER_V1 END_OF(hh_manager_options, http_token)
#define STATS_V1 END_OF(hh_manager_stats, reconciled)

static size_t caller_size(size_t given, size_t v1, size_t ours) {
    size_t n = given ? given : v1;
    return n < ours ? n : ours;
}

/* The defaults: what a field the caller's struct does not reach holds. */
void hh_redis_options_init(hh_redis_options *o) {
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->connect_timeout = 5;
    o->command_timeout = 5;
    o->timestamps = HH_TS_FLOAT;
}

void hh_push_options_init(hh_push_options *o) {
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
}

void hh_manager_options_init(hh_manager_options *o) {
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    hh_redis_options_init(&o->redis);
    o->concurrency = 10;
    o->shutdown_timeout = 25;
    o->fetch = HH_FETCH_RELIABLE;
    o->heartbeat_interval = 5;
    o->max_retries = 25;
    o->dead_max_jobs = 10000;
    o->dead_timeout = 15552000;
    o->recovery_interval = 60;
    o->cron_poll_interval = 30;
    o->max_recoveries = 3;
    o->version = "6.4.1";
    o->log_level = HH_LOG_INFO;
    o->liveness_max_age = 30;
    o->job_metrics = HH_JOB_METRICS_7 | HH_JOB_METRICS_8;
}

void hh__redis_options_read(hh_redis_options *dst, const hh_redis_options *src) {
    hh_redis_options_init(dst);
    if (!src) return;
    memcpy(dst, src, caller_size(src->struct_size, REDIS_V1, sizeof(*dst)));
    dst->struct_size = sizeof(*dst);
}

void hh__push_options_read(hh_push_options *dst, const hh_push_options *src) {
    hh_push_options_init(dst);
    if (!src) return;
    memcpy(dst, src, caller_size(src->struct_size, PUSH_V1, sizeof(*dst)));
    dst->struct_size = sizeof(*dst);
}

/* The caller's hh_manager_options holds its own hh_redis_options, whose
 * struct_size may differ from ours: the fields after it start where the
 * caller's redis ends (rounded up to a pointer's alignment, as the
 * compiler lays out the pointer that follows it), not where ours does. */
void hh__manager_options_read(hh_manager_options *dst, const hh_manager_options *src) {
    hh_manager_options_init(dst);
    if (!src) return;
    size_t total = src->struct_size ? src->struct_size : MANAGER_V1;
    size_t redis_at = offsetof(hh_manager_options, redis);
    size_t redis_size = src->redis.struct_size ? src->redis.struct_size : REDIS_V1;
    hh__redis_options_read(&dst->redis, &src->redis);
    size_t tail_src = redis_at + redis_size;
    tail_src = (tail_src + alignof(void *) - 1) / alignof(void *) * alignof(void *);
    size_t tail_dst = offsetof(hh_manager_options, queues);
    if (total > tail_src) {
        size_t n = total - tail_src, room = sizeof(*dst) - tail_dst;
        memcpy((char *)dst + tail_dst, (const char *)src + tail_src, n < room ? n : room);
    }
    dst->struct_size = sizeof(*dst);
}

void hh__manager_stats_write(hh_manager_stats *out, const hh_manager_stats *full) {
    size_t given = out->struct_size;
    memcpy(out, full, caller_size(given, STATS_V1, sizeof(*out)));
    out->struct_size = given;
}
