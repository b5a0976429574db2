/* unique.c -- sidekiq-unique-jobs' server side (see unique.h). Owns the
 * gem's keys for the jobs hiredhand runs: uniquejobs:<digest>[:RUN] and its
 * :QUEUED, :PRIMED, :LOCKED, :INFO, and uniquejobs:digests,
 * uniquejobs:expiring_digests, uniquejobs:changelog, all written only
 * through the gem's own scripts (unique_lua.h) with the arguments its
 * Locksmith passes; plus the dead set (ZADD + Sidekiq's trims) for the
 * reject strategy. Mirrors, per lock class, the gem's Lock::*#execute, its
 * Locksmith#execute/#lock/#unlock and Server's death handler. */
#include "unique.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "redis.h"

/* The arguments the gem appends to every script call (Script::Caller):
 * now, debug_lua (false), max_history (the gem's default 1,000: the
 * changelog is trimmed to it), the script's name, the Redis version (read
 * by none of these four scripts' effects). */
#define MAX_HISTORY "1000"
#define REDIS_VERSION "7.0.0"

static const hh__unique_rules rules[] = {
    [HH_LOCK_NONE] = {0, 0, 0, 0, 0, 0},
    [HH_LOCK_UNTIL_EXECUTED] = {.lock_whole = 1, .unlock_on_success = 1},
    [HH_LOCK_UNTIL_EXECUTING] = {.unlock_before = 1, .relock_on_failure = 1},
    [HH_LOCK_WHILE_EXECUTING] = {.lock_run = 1},
    [HH_LOCK_UNTIL_AND_WHILE_EXECUTING] = {.unlock_before = 1,
                                           .skip_if_not_freed = 1,
                                           .lock_run = 1,
                                           .relock_on_failure = 1},
    [HH_LOCK_UNTIL_EXPIRED] = {.lock_whole = 1},
    [HH_LOCK_UNKNOWN] = {0, 0, 0, 0, 0, 0},
};

const hh__unique_rules *hh__unique_rules_of(hh__lock_kind kind) {
    return &rules[kind <= HH_LOCK_UNKNOWN ? kind : HH_LOCK_UNKNOWN];
}

hh__lock_kind hh__unique_kind(const char *type) {
    static const struct {
        const char *name;
        hh__lock_kind kind;
    } names[] = {
        /* the gem's Config::LOCKS */
        {"until_executed", HH_LOCK_UNTIL_EXECUTED},
        {"until_completed", HH_LOCK_UNTIL_EXECUTED},
        {"until_performed", HH_LOCK_UNTIL_EXECUTED},
        {"until_processed", HH_LOCK_UNTIL_EXECUTED},
        {"until_successfully_completed", HH_LOCK_UNTIL_EXECUTED},
        {"until_executing", HH_LOCK_UNTIL_EXECUTING},
        {"while_enqueued", HH_LOCK_UNTIL_EXECUTING},
        {"while_executing", HH_LOCK_WHILE_EXECUTING},
        {"around_perform", HH_LOCK_WHILE_EXECUTING},
        {"while_busy", HH_LOCK_WHILE_EXECUTING},
        {"while_working", HH_LOCK_WHILE_EXECUTING},
        {"while_executing_reject", HH_LOCK_WHILE_EXECUTING},
        {"until_and_while_executing", HH_LOCK_UNTIL_AND_WHILE_EXECUTING},
        {"until_expired", HH_LOCK_UNTIL_EXPIRED},
    };
    if (!type) return HH_LOCK_NONE;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(type, names[i].name)) return names[i].kind;
    return HH_LOCK_UNKNOWN;
}

static hh__unique_conflict conflict_named(const char *name) {
    if (!name) return HH_CONFLICT_NONE;
    if (!strcmp(name, "log")) return HH_CONFLICT_LOG;
    if (!strcmp(name, "raise")) return HH_CONFLICT_RAISE;
    if (!strcmp(name, "reject")) return HH_CONFLICT_REJECT;
    if (!strcmp(name, "reschedule") || !strcmp(name, "replace")) return HH_CONFLICT_RETRY;
    return HH_CONFLICT_NONE; /* the gem falls back to its null strategy */
}

hh__unique_conflict hh__unique_conflict_of(const json_t *item, const char *type) {
    if (type && !strcmp(type, "while_executing_reject")) return HH_CONFLICT_REJECT;
    const char *name = json_string_value(json_object_get(item, "on_server_conflict"));
    if (!name) {
        const json_t *oc = json_object_get(item, "on_conflict");
        name = json_is_object(oc) ? json_string_value(json_object_get(oc, "server")) : json_string_value(oc);
    }
    return conflict_named(name);
}

/* Ruby's to_i of a payload value: integers as they are, reals truncated,
 * strings by their leading digits, anything else (nil) 0, as the gem's
 * argument normalising leaves it. */
static long long ruby_to_i(const json_t *v, long long absent) {
    if (!v) return absent;
    if (json_is_integer(v)) return json_integer_value(v);
    if (json_is_real(v)) {
        double d = json_real_value(v);
        return isfinite(d) && fabs(d) < 9e18 ? (long long)d : 0;
    }
    if (json_is_string(v)) return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

void hh__unique_ruby_float(char *buf, size_t len, double v) {
    hh__fmt_double(buf, len, v);
    /* Ruby writes an integral float with ".0", and no exponent below 1e16 */
    if (!strpbrk(buf, ".eEni") && strlen(buf) + 2 < len) strcat(buf, ".0");
}

int hh__unique_parse(const json_t *item, double now, hh__unique_lock *u) {
    memset(u, 0, sizeof(*u));
    const char *type = json_string_value(json_object_get(item, "lock"));
    const char *digest = json_string_value(json_object_get(item, "lock_digest"));
    const json_t *resched = json_object_get(item, "rescheduled");
    if (!type || !digest || (resched && !json_is_false(resched) && !json_is_null(resched))) return 0;
    u->kind = hh__unique_kind(type);
    u->type = type;
    u->item = item;
    const char *jid = json_string_value(json_object_get(item, "jid"));
    u->jid = jid ? jid : "";
    const json_t *ttl = json_object_get(item, "lock_ttl");
    if (!ttl) ttl = json_object_get(item, "lock_expiration");
    long long secs = ruby_to_i(ttl, 0);
    const json_t *at = json_object_get(item, "at");
    if (json_is_number(at) && secs > 0) { /* LockTTL: plus the time until the job is due */
        double until = floor(json_number_value(at)) - floor(now);
        if (until > 0 && until < 1e12) secs += (long long)until;
    }
    u->pttl = secs > 0 && secs < 9000000000000000LL ? secs * 1000 : 0;
    u->limit = ruby_to_i(json_object_get(item, "lock_limit"), 1);
    u->timeout = ruby_to_i(json_object_get(item, "lock_timeout"), 0);
    if (json_is_integer(at)) snprintf(u->score, sizeof(u->score), "%lld", (long long)json_integer_value(at));
    else if (json_is_real(at)) hh__unique_ruby_float(u->score, sizeof(u->score), json_real_value(at));
    u->lock_info = json_is_true(json_object_get(item, "lock_info"));
    u->conflict = hh__unique_conflict_of(item, type);
    u->digest = sdsnew(digest);
    size_t dl = strlen(digest);
    u->run_digest = dl >= 4 && !strcmp(digest + dl - 4, ":RUN") ? sdsnew(digest) : sdscat(sdsnew(digest), ":RUN");
    if (!u->digest || !u->run_digest) {
        hh__unique_lock_free(u);
        return -1;
    }
    return 1;
}

void hh__unique_lock_free(hh__unique_lock *u) {
    sdsfree(u->digest);
    sdsfree(u->run_digest);
    u->digest = u->run_digest = NULL;
}

int hh__unique_keys(const char *digest, sds keys[HH_UNIQUE_NKEYS]) {
    static const char *const suffix[] = {"", ":QUEUED", ":PRIMED", ":LOCKED", ":INFO"};
    memset(keys, 0, sizeof(sds) * HH_UNIQUE_NKEYS);
    for (int i = 0; i < 5; i++) keys[i] = sdscat(sdsnew(digest), suffix[i]);
    keys[5] = sdsnew("uniquejobs:changelog");
    keys[6] = sdsnew("uniquejobs:digests");
    keys[7] = sdsnew("uniquejobs:expiring_digests");
    for (int i = 0; i < HH_UNIQUE_NKEYS; i++)
        if (!keys[i]) {
            hh__unique_keys_free(keys);
            return -1;
        }
    return 0;
}

void hh__unique_keys_free(sds keys[HH_UNIQUE_NKEYS]) {
    for (int i = 0; i < HH_UNIQUE_NKEYS; i++) {
        sdsfree(keys[i]);
        keys[i] = NULL;
    }
}

/* ------------------------------------------------------------ Redis steps */

/* A reply the scripts give: the jid (or "1", a freed lock's token), or nil. */
static int reply_is(const redisReply *r, const char *a, const char *b) {
    if (!r || r->type != REDIS_REPLY_STRING) return 0;
    return (strlen(a) == r->len && !memcmp(r->str, a, r->len)) ||
        (b && strlen(b) == r->len && !memcmp(r->str, b, r->len));
}

/* Checks a reply: 0 a value or nil, -1 a failure (logged). */
static int reply_ok(const hh__unique_env *env, const redisReply *r, const char *what, const char *digest) {
    if (r && r->type != REDIS_REPLY_ERROR) return 0;
    hh__log(env->log, HH_LOG_ERROR, "unique lock %s (%s): %s", digest, what, r ? r->str : "Redis unreachable");
    return -1;
}

/* One of the gem's scripts with Locksmith's arguments (job_id, pttl, type,
 * limit, lock_score[, sync flag 0]) and the caller's five. */
static redisReply *call_lock_script(const hh__unique_env *env, const hh__unique_lock *u, hh__script_id id,
                                    const char *name, sds keys[HH_UNIQUE_NKEYS], int unlock) {
    char pttl[32], limit[32], now[32];
    snprintf(pttl, sizeof(pttl), "%lld", u->pttl);
    snprintf(limit, sizeof(limit), "%lld", u->limit);
    hh__fmt_double(now, sizeof(now), hh__now());
    const char *args[11];
    int n = 0;
    args[n++] = u->jid;
    args[n++] = pttl;
    args[n++] = u->type;
    args[n++] = limit;
    args[n++] = u->score;
    if (unlock) args[n++] = "0"; /* a server's Locksmith never took the lock itself in one step */
    args[n++] = now;
    args[n++] = "0";
    args[n++] = MAX_HISTORY;
    args[n++] = name;
    args[n++] = REDIS_VERSION;
    return hh__conn_eval(env->conn, id, HH_UNIQUE_NKEYS, (const char **)keys, NULL, n, args, NULL);
}

/* Locksmith#write_lock_info: the INFO key, when the job asks for it. */
static void write_lock_info(const hh__unique_env *env, const hh__unique_lock *u, const char *info_key) {
    const json_t *it = u->item;
    json_t *o = json_object();
    const char *names[][2] = {{"worker", "class"},
                              {"queue", "queue"},
                              {"limit", "lock_limit"},
                              {"timeout", "lock_timeout"},
                              {"ttl", "lock_ttl"}};
    for (size_t i = 0; o && i < sizeof(names) / sizeof(names[0]); i++) {
        json_t *v = json_object_get(it, names[i][1]);
        json_object_set(o, names[i][0], v ? v : json_null());
    }
    json_t *la = json_object_get(it, "lock_args");
    json_t *at = json_object_get(it, "at");
    char *s = NULL;
    if (o && !json_object_set_new(o, "type", json_string(u->type)) &&
        !json_object_set(o, "lock_args", la ? la : json_null()) &&
        !json_object_set_new(o, "time", json_real(hh__now())) && !json_object_set(o, "at", at ? at : json_null()))
        s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s) return;
    redisReply *r = hh__conn_cmd(env->conn, "SET %s %s", info_key, s);
    reply_ok(env, r, "lock info", u->digest);
    if (r) freeReplyObject(r);
    free(s);
}

/* Locksmith#execute (and #lock(wait: 0), the same steps): held already, or
 * queued (queue.lua), its token moved to PRIMED (BLMOVE, waiting 1 to 5 s
 * as the gem's primed_async does) and locked (lock.lua). Returns 1 held, 0
 * another job holds it, -1 Redis failed. */
static int take(const hh__unique_env *env, const hh__unique_lock *u, const char *digest) {
    sds k[HH_UNIQUE_NKEYS];
    if (hh__unique_keys(digest, k) != 0) return -1;
    int rc = -1;
    redisReply *r = hh__conn_cmd(env->conn, "HEXISTS %s %s", k[3], u->jid);
    if (reply_ok(env, r, "HEXISTS", digest) != 0) goto out;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
        rc = 1;
        goto out;
    }
    freeReplyObject(r);
    r = call_lock_script(env, u, HH_SCRIPT_UNIQUE_QUEUE, "queue", k, 0);
    if (reply_ok(env, r, "queue", digest) != 0) goto out;
    rc = 0;
    if (!reply_is(r, u->jid, "1")) goto out;
    if (u->lock_info) write_lock_info(env, u, k[4]);
    freeReplyObject(r);
    long long wait = u->timeout > 0 ? (u->timeout < 5 ? u->timeout : 5) : 1;
    char ws[24];
    snprintf(ws, sizeof(ws), "%lld", wait);
    const char *argv[] = {"BLMOVE", k[1], k[2], "RIGHT", "LEFT", ws};
    r = hh__conn_cmdargv_blocking(env->conn, (double)wait, 6, argv, NULL);
    if (reply_ok(env, r, "BLMOVE", digest) != 0) {
        rc = -1;
        goto out;
    }
    if (!reply_is(r, u->jid, "1")) goto out;
    freeReplyObject(r);
    r = call_lock_script(env, u, HH_SCRIPT_UNIQUE_LOCK, "lock", k, 0);
    if (reply_ok(env, r, "lock", digest) != 0) {
        rc = -1;
        goto out;
    }
    rc = r->type == REDIS_REPLY_STRING;
out:
    if (r) freeReplyObject(r);
    hh__unique_keys_free(k);
    return rc;
}

/* Locksmith#unlock (unlock.lua). Returns 1 unlocked (the script's jid), 0
 * other jobs hold it (nil), -1 Redis failed. */
static int release(const hh__unique_env *env, const hh__unique_lock *u, const char *digest) {
    sds k[HH_UNIQUE_NKEYS];
    if (hh__unique_keys(digest, k) != 0) return -1;
    redisReply *r = call_lock_script(env, u, HH_SCRIPT_UNIQUE_UNLOCK, "unlock", k, 1);
    int rc = -1;
    if (reply_ok(env, r, "unlock", digest) == 0 && r) rc = r->type == REDIS_REPLY_STRING;
    if (r) freeReplyObject(r);
    hh__unique_keys_free(k);
    return rc;
}

/* The reject strategy: DeadSet#kill of the payload, without death handlers
 * (the gem passes notify_failure: false). */
static int reject(const hh__unique_env *env, const hh_job *job) {
    sds dead = hh__key(env->keys, HH_K_DEAD);
    if (!dead) return -1;
    double now = hh__now();
    double timeout = env->dead_timeout > 0 ? env->dead_timeout : 15552000.0;
    long max = env->dead_max_jobs > 0 ? env->dead_max_jobs : 10000;
    char score[32], cut[32], rank[32];
    hh__fmt_double(score, sizeof(score), now);
    hh__fmt_double(cut, sizeof(cut), now - timeout);
    snprintf(rank, sizeof(rank), "%ld", -max);
    hh__pipe pipe;
    hh__pipe_begin(&pipe, env->conn);
    hh__pipe_add(&pipe, "MULTI");
    hh__pipe_add(&pipe, "ZADD %s %s %b", dead, score, job->payload, job->len);
    hh__pipe_add(&pipe, "ZREMRANGEBYSCORE %s -inf %s", dead, cut);
    hh__pipe_add(&pipe, "ZREMRANGEBYRANK %s 0 %s", dead, rank);
    hh__pipe_add(&pipe, "EXEC");
    sdsfree(dead);
    int n = pipe.n;
    redisReply **r = hh__pipe_exec(&pipe);
    if (!r) return -1;
    char why[256];
    int rc = hh__tx_check(r, 0, n - 1, why, sizeof(why), NULL);
    if (rc != 0) hh__log(env->log, HH_LOG_ERROR, "unique conflict reject: %s", why);
    hh__replies_free(r, n);
    return rc;
}

static hh__unique_verdict fail(hh_job *job, const char *klass, const char *digest, const char *why) {
    hh_job_fail(job, klass, "%s: %s", digest, why);
    return HH_UNIQUE_FAIL;
}

/* The runtime lock was not taken: the gem's server conflict strategy. */
static hh__unique_verdict conflict(const hh__unique_env *env, hh_job *job, hh__unique_lock *u) {
    switch (u->conflict) {
    case HH_CONFLICT_RAISE: return fail(job, "SidekiqUniqueJobs::Conflict", u->run_digest, "already locked");
    case HH_CONFLICT_RETRY:
        return fail(job, "SidekiqUniqueJobs::Conflict", u->run_digest,
                    "already locked (reschedule and replace need Ruby: retried instead)");
    case HH_CONFLICT_REJECT:
        if (reject(env, job) != 0)
            return fail(job, "RedisClient::ConnectionError", u->run_digest, "reject not written");
        hh__log(env->log, HH_LOG_INFO, "class=%s jid=%s: lock %s held by another job: moved to the dead set (reject)",
                job->klass, u->jid, u->run_digest);
        return HH_UNIQUE_SKIP;
    case HH_CONFLICT_LOG:
        hh__log(env->log, HH_LOG_INFO, "Skipping job with id (%s) because lock_digest: (%s) already exists", u->jid,
                u->run_digest);
        return HH_UNIQUE_SKIP;
    default:
        hh__log(env->log, HH_LOG_DEBUG, "class=%s jid=%s: lock %s held by another job: not run", job->klass, u->jid,
                u->run_digest);
        return HH_UNIQUE_SKIP;
    }
}

hh__unique_verdict hh__unique_before(const hh__unique_env *env, hh_job *job, hh__unique_lock *u) {
    int p = job->item ? hh__unique_parse(job->item, hh__now(), u) : 0;
    if (p < 0) return fail(job, "NoMemoryError", "unique lock", "out of memory");
    if (p == 0) return HH_UNIQUE_RUN;
    if (u->kind == HH_LOCK_UNKNOWN) /* the gem raises the same for a lock it has no class for */
        return fail(job, "SidekiqUniqueJobs::UnknownLock", u->type, "no implementation for this lock");
    const hh__unique_rules *ru = hh__unique_rules_of(u->kind);
    if (ru->unlock_before) {
        int rc = release(env, u, u->digest);
        if (rc < 0) return fail(job, "RedisClient::ConnectionError", u->digest, "unlock failed");
        if (rc == 0 && ru->skip_if_not_freed) {
            hh__log(env->log, HH_LOG_WARN, "class=%s jid=%s: lock %s held by other jobs: not run", job->klass, u->jid,
                    u->digest);
            return HH_UNIQUE_SKIP;
        }
    }
    if (ru->lock_whole) {
        int rc = take(env, u, u->digest);
        if (rc < 0) return fail(job, "RedisClient::ConnectionError", u->digest, "lock failed");
        if (rc == 0) {
            hh__log(env->log, HH_LOG_WARN, "class=%s jid=%s: lock %s held by another job: not run", job->klass, u->jid,
                    u->digest);
            return HH_UNIQUE_SKIP;
        }
    }
    if (ru->lock_run) {
        int rc = take(env, u, u->run_digest);
        if (rc < 0) return fail(job, "RedisClient::ConnectionError", u->run_digest, "lock failed");
        if (rc == 0) return conflict(env, job, u);
        u->run_held = 1;
    }
    return HH_UNIQUE_RUN;
}

void hh__unique_after(const hh__unique_env *env, hh__unique_lock *u, hh__unique_end end) {
    if (!u->digest) return;
    const hh__unique_rules *ru = hh__unique_rules_of(u->kind);
    if (u->run_held) release(env, u, u->run_digest); /* the gem's `ensure` */
    if (end == HH_UNIQUE_SUCCEEDED && ru->unlock_on_success) release(env, u, u->digest);
    if (end == HH_UNIQUE_FAILED && ru->relock_on_failure) take(env, u, u->digest);
    hh__unique_lock_free(u);
}

void hh__unique_dead(const hh__unique_env *env, const hh_job *job) {
    const char *digest = job->item ? json_string_value(json_object_get(job->item, "lock_digest")) : NULL;
    if (!digest) return;
    static const char *const suffix[] = {"",     ":QUEUED",     ":PRIMED",     ":LOCKED",
                                         ":RUN", ":RUN:QUEUED", ":RUN:PRIMED", ":RUN:LOCKED"};
    sds k[9] = {0};
    int ok = 1;
    for (int i = 0; i < 8; i++) ok &= (k[i] = sdscat(sdsnew(digest), suffix[i])) != NULL;
    ok &= (k[8] = sdsnew("uniquejobs:digests")) != NULL;
    if (ok) {
        char now[32];
        hh__fmt_double(now, sizeof(now), hh__now());
        const char *args[] = {now, "0", MAX_HISTORY, "delete_by_digest", REDIS_VERSION};
        redisReply *r = hh__conn_eval(env->conn, HH_SCRIPT_UNIQUE_DELETE, 9, (const char **)k, NULL, 5, args, NULL);
        reply_ok(env, r, "delete_by_digest", digest);
        if (r) freeReplyObject(r);
    }
    for (int i = 0; i < 9; i++) sdsfree(k[i]);
}
