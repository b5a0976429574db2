/* scheduler.c -- see scheduler.h.
 * Keys read: retry, schedule (ZRANGEBYSCORE), processes (SCARD).
 * It reads the manager's context (context.h) and keeps no state of its own.
 * Keys written (in HH_LUA_ENQUEUE_DUE): queue:<q> (LPUSH), queues (SADD),
 * retry/schedule (ZREM); dead (ZADD, in HH_LUA_OUTCOME) for members that are
 * not job JSON; schedule (ZADD, in HH_LUA_OUTCOME) for a member whose own
 * "at" is still ahead. */
#include "scheduler.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "retry.h"
#include "job.h"
#include "outcome.h"

#define HH_POLL_AVERAGE 5.0 /* Sidekiq's average_scheduled_poll_interval */
#define HH_POLL_BATCH 100

double hh__scheduler_average(double fixed, double per_process, long processes) {
    if (fixed > 0) return fixed;
    return (per_process > 0 ? per_process : HH_POLL_AVERAGE) * (double)(processes < 1 ? 1 : processes);
}

double hh__scheduler_wait(double average, long processes, double r) {
    return processes < 10 ? average * r + average / 2 : average * r;
}

/* A member that is not a job by the fetch's own rule (hh__job_problem)
 * goes to the dead set with the reason, once, as the fetch would bury it:
 * moved to its queue it would only be buried there, and left here it would
 * be polled forever. Written first, removed last, so a refused write keeps
 * it where it was. */
static int bury(const hh__ctx *ctx, hh__conn *c, const char *set, const redisReply *member, const char *problem,
                char *why, size_t whylen) {
    double now = hh__now();
    size_t len;
    char *entry = hh__malformed_dead_payload(member->str, member->len, problem, now, ctx->opts.timestamps, &len);
    if (!entry) {
        hh__strlcpy(why, "out of memory", whylen);
        return -1;
    }
    sds sk = hh__key(ctx->keys, set);
    hh__outcome o = {HH_OUTCOME_DEAD,        HH_SOURCE_ZSET,         sk, member->str, member->len, entry, len, now,
                     ctx->opts.dead_timeout, ctx->opts.dead_max_jobs};
    int rc = hh__outcome_write(c, ctx->keys, &o, why, whylen);
    if (rc == 1) hh__log(ctx->log, HH_LOG_WARN, "%s: malformed entry moved to the dead set: %s", set, problem);
    sdsfree(sk);
    free(entry);
    return rc;
}

/* Logs a refused scheduler write once per change of error, and its end. */
static void note_error(const hh__ctx *ctx, const char *set, const char *why) {
    static _Thread_local char last[256];
    if (!why) {
        if (last[0]) hh__log(ctx->log, HH_LOG_INFO, "scheduler: writes accepted again");
        last[0] = '\0';
        return;
    }
    if (strcmp(last, why) == 0) return;
    hh__strlcpy(last, why, sizeof(last));
    hh__log(ctx->log, HH_LOG_WARN, "scheduler: %s: due jobs stay where they are until Redis takes the write: %s", set,
            why);
}

static int poll_set(const hh__ctx *ctx, hh__conn *c, const char *set) {
    sds sk = hh__key(ctx->keys, set), qs = hh__key(ctx->keys, HH_K_QUEUES);
    int moved = 0, failed = 0;
    for (;;) {
        char now_s[32];
        double now = hh__now();
        hh__fmt_double(now_s, sizeof(now_s), now);
        redisReply *r = hh__conn_cmd(c, "ZRANGEBYSCORE %s -inf %s LIMIT 0 %d", sk, now_s, HH_POLL_BATCH);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            note_error(ctx, set,
                       !r                                 ? hh__conn_last_error(c)
                           : r->type == REDIS_REPLY_ERROR ? r->str
                                                          : "unexpected reply to ZRANGEBYSCORE");
            if (r) freeReplyObject(r);
            moved = -1;
            break;
        }
        size_t n = r->elements;
        for (size_t i = 0; i < n && !atomic_load(&ctx->flags->quiet); i++) {
            const redisReply *mem = r->element[i];
            if (mem->type != REDIS_REPLY_STRING) continue;
            int lossy;
            json_t *item = hh__json_load_payload(mem->str, mem->len, &lossy);
            json_t *q = json_object_get(item, "queue");
            const char *queue = json_is_string(q) ? json_string_value(q) : "default";
            char *fresh = NULL;
            const char *problem = item ? hh__job_problem(item) : "payload is not valid JSON";
            json_t *at = problem || lossy ? NULL : json_object_get(item, "at");
            double when = json_is_number(at) ? json_number_value(at) : 0;
            if (json_is_number(at)) {
                /* A member carrying its own "at": Sidekiq's enqueuer pushes it
                 * through its client, which puts a payload with "at" back into
                 * schedule at that time, without "at" and (7.x, 8.x) the old
                 * enqueued_at; once due it reaches its queue with a fresh
                 * enqueued_at at the end. Here in one step when "at" is past. */
                json_object_del(item, "at");
                json_object_del(item, "enqueued_at");
            }
            if (!problem && when > now) { /* not due by its own "at": back into schedule then */
                char why[256];
                fresh = hh__json_dump(item);
                hh__outcome o = {HH_OUTCOME_SCHEDULE,       HH_SOURCE_ZSET, sk, mem->str, mem->len, fresh,
                                 fresh ? strlen(fresh) : 0, when,           0,  0};
                int rc = fresh ? hh__outcome_write(c, ctx->keys, &o, why, sizeof(why)) : 0;
                free(fresh);
                json_decref(item);
                if (rc < 0) {
                    note_error(ctx, set, why);
                    failed = 1;
                    break;
                }
                continue;
            }
            if (!problem) { /* enqueued_at refreshed in place or appended, all else kept */
                json_t *ea = hh__json_time_new(now, ctx->opts.timestamps);
                if (lossy) { /* integers beyond 64 bits: only enqueued_at's bytes change */
                    char *v = hh__json_dump(ea);
                    fresh = v ? hh__json_set_raw(mem->str, mem->len, "enqueued_at", v, NULL) : NULL;
                    free(v);
                    json_decref(ea);
                } else {
                    json_object_set_new(item, "enqueued_at", ea);
                    fresh = hh__json_dump(item);
                }
            }
            char why[256];
            int rc;
            if (problem || !fresh) { /* !fresh: enqueued_at could not be set; left, it would block the set */
                rc = bury(ctx, c, set, mem, problem ? problem : "enqueued_at could not be set in the payload", why,
                          sizeof(why));
            } else {
                sds qk = hh__key_queue(ctx->keys, queue);
                const char *keys[3] = {sk, qs, qk};
                size_t klen[3] = {sdslen(sk), sdslen(qs), sdslen(qk)};
                const char *args[3] = {mem->str, fresh, queue};
                size_t alen[3] = {mem->len, strlen(fresh), strlen(queue)};
                redisReply *x = hh__conn_eval(c, HH_SCRIPT_ENQUEUE_DUE, 3, keys, klen, 3, args, alen);
                rc = x && x->type == REDIS_REPLY_INTEGER && (x->integer == 0 || x->integer == 1) ? (int)x->integer : -1;
                if (rc == 1) moved++;
                if (rc < 0)
                    hh__strlcpy(why,
                                !x                                 ? hh__conn_last_error(c)
                                    : x->type == REDIS_REPLY_ERROR ? x->str
                                                                   : "unexpected reply",
                                sizeof(why));
                if (x) freeReplyObject(x);
                sdsfree(qk);
            }
            free(fresh);
            json_decref(item);
            if (rc < 0) { /* refused (OOM...) or unreachable: the rest waits for the next poll */
                note_error(ctx, set, why);
                failed = 1;
                break;
            }
        }
        freeReplyObject(r);
        if (failed) {
            moved = -1;
            break;
        }
        if (n) note_error(ctx, set, NULL);
        if (n < HH_POLL_BATCH || atomic_load(&ctx->flags->quiet)) break;
    }
    sdsfree(sk);
    sdsfree(qs);
    return moved;
}

int hh__scheduler_poll(const hh__ctx *ctx, hh__conn *c) {
    int a = poll_set(ctx, c, HH_K_RETRY);
    int b = poll_set(ctx, c, HH_K_SCHEDULE);
    if (a < 0 || b < 0) return -1;
    if (a + b) hh__log(ctx->log, HH_LOG_DEBUG, "scheduler: enqueued %d due jobs", a + b);
    return a + b;
}

static long process_count(const hh__ctx *ctx, hh__conn *c) {
    sds pk = hh__key(ctx->keys, HH_K_PROCESSES);
    redisReply *r = hh__conn_cmd(c, "SCARD %s", pk);
    sdsfree(pk);
    long n = r && r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 1;
    if (r) freeReplyObject(r);
    return n < 1 ? 1 : n;
}

static int is_quiet(const void *arg) { return atomic_load(&((const hh__ctx *)arg)->flags->quiet); }

/* Sleeps, but a quiet or stop ends the nap at once. */
static void nap(const hh__ctx *ctx, double seconds) { hh__wake_wait(ctx->wake, hh__mono() + seconds, is_quiet, ctx); }

void *hh__scheduler_main(void *arg) {
    const hh__ctx *ctx = arg;
    hh__conn c;
    hh__conn_init(&c, ctx->cfg, ctx->log, "scheduler", &ctx->flags->quiet);
    hh__rng rng;
    hh__rng_seed(&rng);
    double fixed = ctx->opts.poll_interval_average;
    /* Initial wait: let the heartbeat register us, spread a fleet's polls. */
    nap(ctx, fixed > 0 ? fixed * hh__rng_double(&rng) : 10 + 5 * hh__rng_double(&rng));
    while (!atomic_load(&ctx->flags->quiet)) {
        hh__scheduler_poll(ctx, &c);
        long procs = fixed > 0 ? 1 : process_count(ctx, &c);
        double avg = hh__scheduler_average(fixed, ctx->opts.average_scheduled_poll_interval, procs);
        nap(ctx, hh__scheduler_wait(avg, procs, hh__rng_double(&rng)));
    }
    hh__conn_close(&c);
    return NULL;
}
