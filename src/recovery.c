/* recovery.c -- see recovery.h. It sees the manager only through its
 * context (context.h) and calls the lease (lease.h) directly.
 * Keys read: hiredhand:inprogress:* (SCAN, LINDEX), <id> (EXISTS, HMGET),
 * processes (SISMEMBER), hiredhand:fetchers (SMEMBERS). Keys written: hiredhand:fetchers (SADD,
 * SREM), hiredhand:recovery-lock (SET NX PX), hiredhand:recoveries:<jid>
 * (GET, SET EX), <owner> (EXISTS, also inside HH_LUA_RECOVER), queue:<q>
 * (RPUSH in HH_LUA_REQUEUE), dead (in HH_LUA_RECOVER), the in-progress
 * lists (LREM, last in each script). */
#include "recovery.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "job.h"
#include "retry.h"

#define HH_RECOVERY_LOCK_MS 30000
#define HH_RECOVERY_COUNT_TTL (7 * 86400)

/* The dead-set entry for a poison pill: the job with Sidekiq's error fields
 * saying why. NULL when the payload is not a JSON object (stored as is). */
static char *poison_entry(const hh__recovery_env *e, const char *payload, size_t len, double now) {
    char why[160];
    /* the script buries a job on the first recovery past the limit */
    snprintf(why, sizeof(why), "job was running when its process died %d times (max_recoveries %d)",
             e->ctx->opts.max_recoveries + 1, e->ctx->opts.max_recoveries);
    int lossy;
    json_t *item = hh__json_load_payload(payload, len, &lossy);
    char *entry = NULL;
    if (json_is_object(item) && !lossy) {
        json_object_set_new(item, "error_class", json_string("hiredhand::PoisonPill"));
        json_object_set_new(item, "error_message", json_string(why));
        if (!json_object_get(item, "failed_at"))
            json_object_set_new(item, "failed_at", hh__json_time_new(now, e->ctx->opts.timestamps));
        entry = hh__json_dump(item);
    } else if (json_is_object(item) && (entry = malloc(len + 1))) {
        /* integers beyond 64 bits: the stored bytes with the error fields
         * set in them, every other byte kept (a re-serialised bignum would
         * come back as a real) */
        memcpy(entry, payload, len);
        entry[len] = '\0';
        size_t n = len;
        entry = hh__json_set_raw_take(entry, &n, "error_class", json_string("hiredhand::PoisonPill"));
        if (entry) entry = hh__json_set_raw_take(entry, &n, "error_message", json_string(why));
        if (entry && !json_object_get(item, "failed_at"))
            entry = hh__json_set_raw_take(entry, &n, "failed_at", hh__json_time_new(now, e->ctx->opts.timestamps));
    }
    json_decref(item);
    return entry;
}

/* Pushes every job of one in-progress list back to its queue, oldest first,
 * each move atomic, done and counted once (HH_LUA_RECOVER); poison pills go
 * to the dead set. Returns jobs pushed back, or -1. */
static int drain(const hh__recovery_env *e, hh__conn *c, const char *key, const char *owner, const char *queue,
                 int boot) {
    sds list = sdsnew(key), qk = hh__key_queue(e->ctx->keys, queue), dk = hh__key(e->ctx->keys, HH_K_DEAD);
    sds hk = hh__key_process(e->ctx->keys, owner);
    int moved = 0;
    for (int guard = 0; guard < 1000000; guard++) {
        redisReply *r = hh__conn_cmd(c, "LINDEX %s -1", list);
        if (!r) {
            moved = -1;
            break;
        }
        if (r->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            break;
        }
        json_t *item = json_loadb(r->str, r->len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
        json_t *j = json_object_get(item, "jid"), *k = json_object_get(item, "class");
        const char *jid = json_is_string(j) ? json_string_value(j) : "";
        const char *klass = json_is_string(k) ? json_string_value(k) : "?";
        double now = hh__now();
        char *entry = poison_entry(e, r->str, r->len, now);
        char score[32], cutoff[32], maxrank[24], max[24], ttl[24];
        hh__fmt_double(score, sizeof(score), now);
        hh__fmt_double(cutoff, sizeof(cutoff), now - e->ctx->opts.dead_timeout);
        snprintf(maxrank, sizeof(maxrank), "%ld", -e->ctx->opts.dead_max_jobs);
        /* without a jid there is nothing to count by: no poison-pill limit */
        snprintf(max, sizeof(max), "%d", *jid ? e->ctx->opts.max_recoveries : 0);
        snprintf(ttl, sizeof(ttl), "%d", HH_RECOVERY_COUNT_TTL);
        sds ck = hh__key(e->ctx->keys, HH_K_RECOVERIES);
        ck = sdscatfmt(ck, ":%s", *jid ? jid : "-");
        const char *keys[5] = {list, qk, ck, dk, hk};
        size_t klen[5] = {sdslen(list), sdslen(qk), sdslen(ck), sdslen(dk), sdslen(hk)};
        const char *args[8] = {r->str, max, entry ? entry : r->str, score, cutoff, maxrank, ttl, boot ? "0" : "1"};
        size_t alen[8] = {r->len,
                          strlen(max),
                          entry ? strlen(entry) : r->len,
                          strlen(score),
                          strlen(cutoff),
                          strlen(maxrank),
                          strlen(ttl),
                          1};
        redisReply *x = hh__conn_eval(c, HH_SCRIPT_RECOVER, 5, keys, klen, 8, args, alen);
        int rc = -1;
        long long count = 0;
        if (x && x->type == REDIS_REPLY_ARRAY && x->elements == 2 && x->element[0]->type == REDIS_REPLY_INTEGER &&
            x->element[1]->type == REDIS_REPLY_INTEGER && x->element[0]->integer >= 0 && x->element[0]->integer <= 3) {
            rc = (int)x->element[0]->integer;
            count = x->element[1]->integer;
        } else {
            hh__log(e->ctx->log, HH_LOG_ERROR,
                    "recovery: owner=%s queue=%s: not pushed back, left for the next scan: %s", owner, queue,
                    x && x->type == REDIS_REPLY_ERROR ? x->str
                        : x                           ? "unexpected reply to the recovery script"
                                                      : hh__conn_last_error(c));
        }
        if (x) freeReplyObject(x);
        if (rc == 3) hh__log(e->ctx->log, HH_LOG_INFO, "recovery: owner=%s beat again: leaving its jobs to it", owner);
        if (rc == 1)
            hh__log(e->ctx->log, HH_LOG_WARN,
                    "recovery: class=%s jid=%s owner=%s queue=%s: pushed back to the queue (recovery %lld)", klass, jid,
                    owner, queue, count);
        else if (rc == 2)
            hh__log(e->ctx->log, HH_LOG_WARN,
                    "recovery: class=%s jid=%s owner=%s: recovered %d times, moved to the dead set", klass, jid, owner,
                    e->ctx->opts.max_recoveries + 1);
        sdsfree(ck);
        free(entry);
        json_decref(item);
        freeReplyObject(r);
        if (rc < 0) {
            moved = -1;
            break;
        }
        if (rc >= 3) break;
        if (rc >= 1) atomic_fetch_add(&e->ctx->counters->recovered, 1);
        if (rc == 1) moved++; /* the callers log how many went back to queues */
    }
    sdsfree(list);
    sdsfree(qk);
    sdsfree(dk);
    sdsfree(hk);
    return moved;
}

/* Whether an owner is alive: its heartbeat hash exists. */
static int owner_alive(const hh__recovery_env *e, hh__conn *c, const char *owner) {
    sds hk = hh__key_process(e->ctx->keys, owner);
    redisReply *r = hh__conn_cmd(c, "EXISTS %s", hk);
    sdsfree(hk);
    int alive = r && r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : -1;
    if (r) freeReplyObject(r);
    return alive;
}

/* SCANs for in-progress lists and drains those whose owner matches `only`
 * (boot) or, when only is NULL, whose owner is dead (orphans). */
static int scan_lists(const hh__recovery_env *e, hh__conn *c, const char *only) {
    sds pattern = hh__key_inprogress_pattern(e->ctx->keys);
    sds cursor = sdsnew("0");
    int total = 0;
    do {
        redisReply *r = cursor ? hh__conn_cmd(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern) : NULL;
        /* {cursor, [keys...]}: anything else ends this scan */
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[0]->len == 0 || r->element[1]->type != REDIS_REPLY_ARRAY) {
            if (r)
                hh__log(e->ctx->log, HH_LOG_WARN, "recovery: unexpected reply to SCAN%s%s",
                        r->type == REDIS_REPLY_ERROR ? ": " : "", r->type == REDIS_REPLY_ERROR ? r->str : "");
            if (r) freeReplyObject(r);
            total = -1;
            break;
        }
        sdsfree(cursor);
        cursor = sdsnewlen(r->element[0]->str, r->element[0]->len);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            sds owner, queue;
            if (keys->element[i]->type != REDIS_REPLY_STRING) continue;
            if (hh__key_inprogress_parse(e->ctx->keys, keys->element[i]->str, &owner, &queue) != 0) continue;
            int mine = strcmp(owner, e->ctx->identity) == 0;
            int take = only ? strcmp(owner, only) == 0 : (!mine && owner_alive(e, c, owner) == 0);
            if (take) {
                int n = drain(e, c, keys->element[i]->str, owner, queue, only != NULL);
                if (n > 0) total += n;
            }
            sdsfree(owner);
            sdsfree(queue);
        }
        freeReplyObject(r);
    } while (cursor && strcmp(cursor, "0") != 0);
    sdsfree(cursor);
    sdsfree(pattern);
    return total;
}

/* Seconds a process's start (from /proc, whose boot time drifts with the
 * clock) may lie after the started_at it wrote and still be that process. */
#define HH_START_SLACK 10.0

/* Whether the identity's heartbeat hash belongs to a live process. The
 * hash must exist and the identity be a member of `processes` (a clean stop
 * leaves it at once, so a restart right after one is never refused). Then,
 * on this host, the pid in the hash decides: gone, a zombie, our own pid (a
 * container restarted as pid 1) or a process started after the hash's
 * started_at (the pid was reused) is dead; else it is live, however old its
 * last beat: a paused process (SIGSTOP, a frozen VM) keeps its jobs until
 * its hash expires. On another host nothing can be asked: the hash decides
 * alone, until its TTL ends it. Returns 1 live (logged, naming the pid), 0
 * free, -1 Redis error. */
static int identity_in_use(const hh__recovery_env *e, hh__conn *c) {
    sds hk = hh__key_process(e->ctx->keys, e->ctx->identity);
    redisReply *r = hh__conn_cmd(c, "HMGET %s info beat", hk);
    sdsfree(hk);
    if (!r) return -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r); /* no hash (or not one of ours): nothing holds the identity */
        return 0;
    }
    json_t *info = json_loadb(r->element[0]->str, r->element[0]->len, 0, NULL);
    const char *h = json_string_value(json_object_get(info, "hostname"));
    sds host = sdsnew(h ? h : "?");
    json_t *pj = json_object_get(info, "pid"), *sj = json_object_get(info, "started_at");
    long pid = json_is_integer(pj) ? (long)json_integer_value(pj) : 0;
    double started = json_is_number(sj) ? json_number_value(sj) : 0;
    double beat = r->element[1]->type == REDIS_REPLY_STRING ? hh__strtod_c(r->element[1]->str, NULL) : 0;
    json_decref(info);
    freeReplyObject(r);

    sds pk = hh__key(e->ctx->keys, HH_K_PROCESSES);
    r = hh__conn_cmd(c, "SISMEMBER %s %s", pk, e->ctx->identity);
    sdsfree(pk);
    if (!r) {
        sdsfree(host);
        return -1;
    }
    int live = r->type == REDIS_REPLY_INTEGER ? r->integer == 1 : 1; /* unsure: refuse */
    freeReplyObject(r);
    char why[160] = "";
    if (live && strcmp(host, e->ctx->hostname) == 0) {
        hh__proc_info pi;
        if (pid <= 0) {
            snprintf(why, sizeof(why), "its hash names no pid");
        } else if (pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
            live = 0;
        } else if (hh__proc_stat(pid, &pi) != 0 || pi.start <= 0) {
            snprintf(why, sizeof(why), "pid %ld on this host is alive", pid); /* /proc hidden: assume it */
        } else if (pi.state == 'Z' || (started > 0 && pi.start > started + HH_START_SLACK)) {
            live = 0; /* exited, or the pid now names a later process */
        } else {
            snprintf(why, sizeof(why), "pid %ld on this host is alive", pid);
        }
    } else if (live) {
        snprintf(why, sizeof(why), "pid %ld on host %s, its heartbeat hash not expired", pid, host);
    }
    if (live)
        hh__log(e->ctx->log, HH_LOG_ERROR, "identity %s is live in another process: %s (last beat %.0f s ago)",
                e->ctx->identity, why, beat > 0 ? hh__now() - beat : -1.0);
    sdsfree(host);
    return live;
}

int hh__recovery_boot(const hh__recovery_env *e, hh__conn *c) {
    if (e->ctx->opts.fetch == HH_FETCH_BASIC) return HH_OK;
    if (e->ctx->fixed_identity) {
        int used = identity_in_use(e, c);
        if (used < 0) return HH_ERR_REDIS;
        if (used) return HH_ERR_EXISTS;
    }
    sds fk = hh__key(e->ctx->keys, HH_K_FETCHERS);
    redisReply *r = hh__conn_cmd(c, "SADD %s %s", fk, e->ctx->identity);
    sdsfree(fk);
    if (!r) return HH_ERR_REDIS;
    /* the registry only names fetchers: a refused write (OOM) is logged, not fatal */
    if (r->type != REDIS_REPLY_INTEGER)
        hh__log(e->ctx->log, HH_LOG_WARN, "recovery: SADD hiredhand:fetchers: %s",
                r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    if (!e->ctx->fixed_identity) return HH_OK; /* a fresh random identity owns nothing */
    int n = scan_lists(e, c, e->ctx->identity);
    if (n > 0)
        hh__log(e->ctx->log, HH_LOG_WARN, "recovery: pushed back %d jobs left by a previous run of %s", n,
                e->ctx->identity);
    return n < 0 ? HH_ERR_REDIS : HH_OK;
}

int hh__recovery_scan(const hh__recovery_env *e, hh__conn *c) {
    /* The outage rule (lease.c): a missing heartbeat hash means a dead
     * owner only once this process has itself beaten long enough for every
     * live peer to have beaten too. */
    double left = 0;
    if (!hh__lease_peers_judgeable(e->lease, &left)) {
        hh__log(e->ctx->log, HH_LOG_DEBUG,
                "recovery: scan deferred %.1f s: this process's own heartbeats have not "
                "run long enough since start or since Redis failed them",
                left);
        return -1;
    }
    sds lk = hh__key(e->ctx->keys, HH_K_RECOVERY_LOCK);
    long ms = (long)(e->ctx->opts.recovery_interval * 500);
    if (ms > HH_RECOVERY_LOCK_MS) ms = HH_RECOVERY_LOCK_MS;
    if (ms < 100) ms = 100;
    redisReply *r = hh__conn_cmd(c, "SET %s %s NX PX %ld", lk, e->ctx->identity, ms);
    int got = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    if (!got) {
        sdsfree(lk);
        return -1;
    }
    int n = scan_lists(e, c, NULL);
    /* Forget registered fetchers that are dead and own nothing any more. */
    sds fk = hh__key(e->ctx->keys, HH_K_FETCHERS);
    redisReply *mem = hh__conn_cmd(c, "SMEMBERS %s", fk);
    for (size_t i = 0; mem && mem->type == REDIS_REPLY_ARRAY && i < mem->elements; i++) {
        if (mem->element[i]->type != REDIS_REPLY_STRING) continue;
        const char *owner = mem->element[i]->str;
        if (strcmp(owner, e->ctx->identity) != 0 && owner_alive(e, c, owner) == 0) {
            redisReply *x = hh__conn_cmd(c, "SREM %s %s", fk, owner);
            if (x) freeReplyObject(x);
        }
    }
    if (mem) freeReplyObject(mem);
    sdsfree(fk);
    /* The lock is not released: it expires, so the fleet scans at most
     * once per lock period however many processes run. */
    sdsfree(lk);
    if (n > 0) hh__log(e->ctx->log, HH_LOG_WARN, "recovery: pushed back %d orphaned jobs", n);
    return n;
}

static int is_quiet(const void *arg) { return atomic_load(&((const hh__recovery_env *)arg)->ctx->flags->quiet); }

void *hh__recovery_main(void *arg) {
    const hh__recovery_env *e = arg;
    hh__conn c;
    hh__conn_init(&c, e->ctx->cfg, e->ctx->log, "recovery", &e->ctx->flags->quiet);
    hh__rng rng;
    hh__rng_seed(&rng);
    double next = hh__mono() + 1 + hh__rng_double(&rng) * 2; /* soon after boot */
    /* Redis was down at start: the identity checks come first, then the
     * workers and the heartbeat may go. */
    while (!atomic_load(&e->ctx->flags->booted) && !atomic_load(&e->ctx->flags->quiet)) {
        int rc = hh__conn_ready(&c) == 0 ? hh__recovery_boot(e, &c) : HH_ERR_REDIS;
        if (rc == HH_OK) {
            atomic_store(&e->ctx->flags->booted, 1);
            hh__wake_all(e->ctx->wake); /* the workers and the heartbeat wait for it */
        } else if (rc == HH_ERR_EXISTS) {
            hh__log(e->ctx->log, HH_LOG_ERROR, "identity %s is live in another process; stopping", e->ctx->identity);
            atomic_store(&e->ctx->flags->start_error, HH_ERR_EXISTS);
            e->ctx->signal(e->ctx->signal_udata, HH_SIGNAL_STOP);
        } else {
            hh__wake_wait(e->ctx->wake, hh__mono() + 0.2, is_quiet, e);
        }
    }
    while (!atomic_load(&e->ctx->flags->quiet)) {
        if (hh__mono() >= next) {
            double left = 0, iv = e->ctx->opts.recovery_interval;
            if (!hh__lease_peers_judgeable(e->lease, &left) && left < iv) {
                next = hh__mono() + left + 0.1; /* scan as soon as the rule allows */
            } else {
                hh__recovery_scan(e, &c);
                next = hh__mono() + iv * (0.75 + 0.5 * hh__rng_double(&rng));
            }
        }
        hh__lease_tick(e->lease, &c); /* reconciliation of this process's own lists */
        /* lease.c's tick wants a call every 100 ms; a quiet ends the wait. */
        hh__wake_wait(e->ctx->wake, hh__mono() + 0.1, is_quiet, e);
    }
    hh__conn_close(&c);
    return NULL;
}
