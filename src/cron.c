/* cron.c -- the periodic-job poller: sidekiq-cron's Poller in C, on the
 * same keys, so Ruby processes running sidekiq-cron (2.x or 1.8) and
 * hiredhand processes can poll one Redis and each tick is enqueued once.
 *
 * Keys read: cron_jobs:<namespace> (2.x, SMEMBERS, one per namespace
 * polled; the namespace "auto": those found by SCAN MATCH cron_jobs:*),
 * cron_jobs (1.x layout, SMEMBERS), the job hashes named there
 * (cron_job:<namespace>:<name> or cron_job:<name>, HGETALL); TYPE of a
 * set key of another type, to name it in the WARN line. A job of
 * namespace "default" in both layouts runs from its 1.x copy only.
 * Keys written, only on a due tick (HH_LUA_CRON_ENQUEUE): <hash>:enqueued
 * (ZADD guard, ZREMRANGEBYSCORE of entries older than 24 h), queue:<q>
 * (LPUSH), queues (SADD), <hash> (HSET last_enqueue_time),
 * <hash>:jid_history (LPUSH, LTRIM to 10).
 *
 * Exactly once. sidekiq-cron's rule is the guard: every poller, Ruby or
 * not, runs `ZADD <hash>:enqueued <tick.to_f> <tick.iso8601>` and pushes
 * only when that added the member. The member bytes are the whole rule:
 * hh__cron_member() writes them as Ruby's Time#iso8601 of the UTC tick
 * ("2026-12-04T06:30:00Z"), so a Ruby poller and this one race on one
 * member and one of them wins. Ruby then pushes and writes its bookkeeping
 * in separate commands (a kill between the ZADD and the push loses that
 * tick there). Here the guard, the push and the bookkeeping are one Lua
 * script: Redis runs a script whole or not at all, and a client killed
 * (kill -9) after sending it cannot stop it, so a kill mid-poll neither
 * loses a tick (no guard without its push) nor doubles it (no push without
 * its guard). MULTI would not do: the push depends on the ZADD's reply.
 * A Redis restart between ticks keeps what its persistence kept; a tick
 * whose guard was lost with the data is enqueued again only if the job's
 * last_enqueue_time (in the same hash, lost or kept with it) is before the
 * tick, sidekiq-cron's enqueued_after? rule, which hh__cron_due_tick keeps.
 *
 * Which tick: fugit's previous_time(now), within the reschedule grace
 * period (60 s, sidekiq-cron's default and 1.8's fixed value): a tick
 * older than that (the fleet was down) is skipped, as Ruby skips it.
 *
 * Cost per poll and process: one SMEMBERS per namespace plus the 1.x set,
 * one HGETALL per job; writes only for a due tick, one script call, of
 * which one process wins. */
#include "cron.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "job.h"
#include "scripts.h"

/* ---- pure parts ---- */

void hh__cron_member(int64_t t, char buf[32]) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void hh__cron_score(int64_t t, char buf[32]) { snprintf(buf, 32, "%lld.0", (long long)t); }

void hh__cron_enqueue_time(double now, char buf[32]) {
    time_t tt = (time_t)floor(now);
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, 32, "%Y-%m-%d %H:%M:%S +0000", &tm);
}

static int64_t days_from_civil(int y, int m, int d) { /* Howard Hinnant's algorithm */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int64_t hh__cron_parse_time(const char *s) {
    if (!s || !*s) return -1;
    int y, mo, d, h, mi, se, n = 0;
    char sep;
    if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &se, &n) != 7 || (sep != ' ' && sep != 'T'))
        return -1;
    const char *p = s + n;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    while (*p == ' ') p++;
    int off = 0;
    if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1])) {
        int oh = 0, om = 0;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2 && sscanf(p + 1, "%2d%2d", &oh, &om) != 2) return -1;
        off = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
    } else if (*p && *p != 'Z' && strncmp(p, "UTC", 3) != 0) {
        return -1;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return -1;
    return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
}

int64_t hh__cron_due_tick(const hh__cron_expr *x, double now, int64_t last, double grace) {
    int64_t t = (int64_t)floor(now);
    int64_t prev = hh__cron_expr_prev(x, t);
    if (prev < 0) return -1;
    if ((double)(t - prev) > grace) return -1; /* past_scheduled_time? */
    if (last >= 0 && last >= prev) return -1;  /* enqueued_after? */
    return prev;
}

int hh__cron_truthy(const char *v) {
    if (!v) return 0;
    static const char *yes[] = {"true", "t", "yes", "y", "1"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
        if (strcasecmp(v, yes[i]) == 0) return 1;
    return 0;
}

static const char *field(const json_t *fields, const char *name) {
    return json_string_value(json_object_get(fields, name));
}

/* parse_args: the `args` field is JSON; unreadable, it is one string
 * argument ([*args]); absent, none. */
static json_t *job_args(const json_t *fields) {
    const char *a = field(fields, "args");
    if (!a) return json_array();
    json_t *v = json_loads(a, JSON_DECODE_ANY, NULL);
    if (!v) {
        v = json_array();
        json_array_append_new(v, json_string(a));
        return v;
    }
    if (!json_is_array(v)) {
        json_t *w = json_array();
        json_array_append_new(w, v);
        return w;
    }
    return v;
}

static void uuid4(char out[37]) {
    unsigned char b[16];
    hh__random_bytes(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

char *hh__cron_payload(const json_t *fields, double now, hh_timestamps ts, const char *jid, char **queue_out, char *why,
                       size_t whylen) {
    *queue_out = NULL;
    const char *msg_s = field(fields, "message");
    json_t *msg = msg_s ? json_loads(msg_s, 0, NULL) : NULL;
    if (!json_is_object(msg)) {
        json_decref(msg);
        snprintf(why, whylen, "its message is not a JSON object");
        return NULL;
    }
    json_t *q = json_object_get(msg, "queue");
    const char *queue = json_is_string(q) && json_string_length(q) ? json_string_value(q) : "default";
    json_t *args = job_args(fields);
    if (hh__cron_truthy(field(fields, "date_as_argument"))) json_array_append_new(args, json_real(now));
    json_t *item = json_object();
    json_object_set_new(item, "retry", json_true()); /* Sidekiq's client defaults first */
    json_object_set_new(item, "queue", json_string("default"));
    char *qname = NULL;
    if (hh__cron_truthy(field(fields, "active_job"))) {
        const char *klass = field(fields, "klass");
        if (!klass || !*klass) klass = json_string_value(json_object_get(msg, "class"));
        if (!klass || !*klass) {
            json_decref(msg), json_decref(args), json_decref(item);
            snprintf(why, whylen, "it names no class");
            return NULL;
        }
        const char *pre = field(fields, "queue_name_prefix"), *del = field(fields, "queue_name_delimiter");
        if (pre && *pre) {
            size_t n = strlen(pre) + strlen(queue) + (del && *del ? strlen(del) : 1) + 1;
            qname = malloc(n);
            if (qname) snprintf(qname, n, "%s%s%s", pre, del && *del ? del : "_", queue);
        } else {
            qname = strdup(queue);
        }
        const char *desc = field(fields, "description");
        char uuid[37];
        uuid4(uuid);
        json_object_set_new(item, "class", json_string("ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper"));
        json_object_set_new(item, "wrapped", json_string(klass));
        json_object_set_new(item, "queue", json_string(qname ? qname : queue));
        json_object_set_new(item, "description", desc ? json_string(desc) : json_null());
        json_t *env = json_object();
        json_object_set_new(env, "job_class", json_string(klass));
        json_object_set_new(env, "job_id", json_string(uuid));
        json_object_set_new(env, "queue_name", json_string(qname ? qname : queue));
        json_object_set_new(env, "arguments", args);
        json_t *wrapped = json_array();
        json_array_append_new(wrapped, env);
        json_object_set_new(item, "args", wrapped);
    } else {
        const char *key;
        json_t *v;
        json_object_foreach(msg, key, v) json_object_set(item, key, v);
        json_object_set_new(item, "args", args);
        qname = strdup(queue);
    }
    json_decref(msg);
    const char *problem = hh__job_problem(item);
    if (problem || !qname) {
        snprintf(why, whylen, "its job is not valid: %s", problem ? problem : "out of memory");
        free(qname);
        json_decref(item);
        return NULL;
    }
    json_object_set_new(item, "jid", json_string(jid));
    json_object_set_new(item, "created_at", hh__json_time_new(now, ts));
    json_object_set_new(item, "enqueued_at", hh__json_time_new(now, ts));
    char *out = hh__json_dump(item);
    json_decref(item);
    if (!out) {
        free(qname);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    *queue_out = qname;
    return out;
}

char *hh__cron_history_entry(const char *jid, double now, int legacy) {
    time_t tt = (time_t)floor(now);
    struct tm tm;
    gmtime_r(&tt, &tm);
    char when[40];
    strftime(when, sizeof(when), legacy ? "%Y-%m-%d %H:%M:%S +0000" : "%Y-%m-%d %H:%M:%S UTC", &tm);
    json_t *o = json_object();
    json_object_set_new(o, "jid", json_string(jid));
    json_object_set_new(o, "enqueued", json_string(when));
    char *s = hh__json_dump(o);
    json_decref(o);
    return s;
}

/* ---- Redis ---- */

int hh__cron_enqueue(hh__conn *c, const hh__keys *k, hh_timestamps ts, const char *hash_key, const json_t *fields,
                     int64_t guard_tick, double now, int only_enabled, char *jid_out, char *why, size_t whylen) {
    char jid[HH_JID_SIZE];
    hh__new_jid(jid);
    char *queue = NULL;
    char *payload = hh__cron_payload(fields, now, ts, jid, &queue, why, whylen);
    if (!payload) return -3;
    /* 2.x saves a namespace field; 1.8 does not, and writes the history's
     * time in its own format. */
    char *hist = hh__cron_history_entry(jid, now, json_object_get(fields, "namespace") == NULL);
    char score[32] = "", member[32] = "", last[32], cut[40], keep[16];
    if (guard_tick >= 0) {
        hh__cron_score(guard_tick, score);
        hh__cron_member(guard_tick, member);
    }
    hh__cron_enqueue_time(now, last);
    snprintf(cut, sizeof(cut), "(%.6f", now - HH_CRON_REMEMBER);
    snprintf(keep, sizeof(keep), "%d", HH_CRON_HISTORY - 1);
    sds hk = hh__key(k, hash_key);
    sds ek = sdscatlen(sdsdup(hk), ":enqueued", 9), jk = sdscatlen(sdsdup(hk), ":jid_history", 12);
    sds qs = hh__key(k, HH_K_QUEUES), qk = hh__key_queue(k, queue);
    const char *keys[5] = {hk, ek, jk, qs, qk};
    size_t klen[5] = {sdslen(hk), sdslen(ek), sdslen(jk), sdslen(qs), sdslen(qk)};
    const char *args[9] = {score, member, payload, queue, last, hist ? hist : "", keep, cut, only_enabled ? "1" : "0"};
    size_t alen[9];
    for (int i = 0; i < 9; i++) alen[i] = strlen(args[i]);
    redisReply *r = hh__conn_eval(c, HH_SCRIPT_CRON_ENQUEUE, 5, keys, klen, 9, args, alen);
    int rc;
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer >= -2 && r->integer <= 1) {
        rc = (int)r->integer;
    } else {
        rc = -4;
        snprintf(why, whylen, "%s",
                 !r                                 ? hh__conn_last_error(c)
                     : r->type == REDIS_REPLY_ERROR ? r->str
                                                    : "unexpected reply to the cron script");
    }
    if (r) freeReplyObject(r);
    if (rc == 1 && jid_out) memcpy(jid_out, jid, HH_JID_SIZE);
    sdsfree(hk), sdsfree(ek), sdsfree(jk), sdsfree(qs), sdsfree(qk);
    free(payload), free(queue), free(hist);
    return rc;
}

/* HGETALL's flat reply as an object of strings; NULL for anything else. */
static json_t *hash_fields(const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2) return NULL;
    json_t *o = json_object();
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *f = r->element[i], *v = r->element[i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        json_t *s = json_stringn(v->str, v->len);
        if (s) json_object_set_new(o, f->str, s);
    }
    return o;
}

/* Appends the members of set `name` (unprefixed) to *out. A key of
 * another type (a script's string) holds none: it is named in *bad (a
 * "; "-separated list, with its type) and counted in *nbad, for the
 * poll's WARN line, rather than passed over in silence. */
static int set_members(hh__conn *c, const hh__keys *k, const char *name, sds **out, size_t *n, sds *err, sds *bad,
                       long *nbad) {
    sds key = hh__key(k, name);
    redisReply *r = hh__conn_cmd(c, "SMEMBERS %s", key);
    int rc = 0;
    if (r && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *m = r->element[i];
            if (m->type != REDIS_REPLY_STRING) continue;
            sds *grown = realloc(*out, (*n + 1) * sizeof(sds));
            if (!grown) break;
            *out = grown;
            (*out)[(*n)++] = sdsnewlen(m->str, m->len);
        }
    } else if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) == 0) {
        /* not a set: no job of it can be read (sidekiq-cron's poll fails
         * on it); the type, one more round trip on this rare path */
        redisReply *t = hh__conn_cmd(c, "TYPE %s", key);
        (*nbad)++;
        if (sdslen(*bad) < 2000)
            *bad = sdscatprintf(*bad, "%s%s: its key is a %s, not a set", sdslen(*bad) ? "; " : "", name,
                                t && t->type == REDIS_REPLY_STATUS ? t->str : "key of another type");
        if (t) freeReplyObject(t);
    } else {
        *err = sdscatprintf(sdsempty(), "SMEMBERS %s: %s", name,
                            !r                                 ? hh__conn_last_error(c)
                                : r->type == REDIS_REPLY_ERROR ? r->str
                                                               : "unexpected reply");
        rc = -1;
    }
    if (r) freeReplyObject(r);
    sdsfree(key);
    return rc;
}

static int push_ns(sds **out, size_t *n, const char *ns, size_t len) {
    for (size_t i = 0; i < *n; i++)
        if (sdslen((*out)[i]) == len && memcmp((*out)[i], ns, len) == 0) return 0;
    sds *grown = realloc(*out, (*n + 1) * sizeof(sds));
    if (!grown) return -1;
    *out = grown;
    (*out)[(*n)++] = sdsnewlen(ns, len);
    return 0;
}

int hh__cron_namespaces_found(hh__conn *c, const hh__keys *k, sds **out, size_t *n, sds *err) {
    sds prefix = hh__key(k, "cron_jobs:"), pattern = sdsempty(), cursor = sdsnew("0");
    for (const char *p = prefix; *p; p++) { /* the key prefix's glob characters are literal */
        if (strchr("*?[]\\", *p)) pattern = sdscatlen(pattern, "\\", 1);
        pattern = sdscatlen(pattern, p, 1);
    }
    pattern = sdscatlen(pattern, "*", 1);
    int rc = push_ns(out, n, "default", 7);
    do {
        redisReply *r = hh__conn_cmd(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            *err = sdscatprintf(sdsempty(), "SCAN %s: %s", "cron_jobs:*",
                                !r                                 ? hh__conn_last_error(c)
                                    : r->type == REDIS_REPLY_ERROR ? r->str
                                                                   : "unexpected reply");
            if (r) freeReplyObject(r);
            rc = -1;
            break;
        }
        sdsfree(cursor);
        cursor = sdsnewlen(r->element[0]->str, r->element[0]->len);
        const redisReply *ks = r->element[1];
        for (size_t i = 0; i < ks->elements && !rc; i++) {
            const redisReply *key = ks->element[i];
            if (key->type != REDIS_REPLY_STRING || key->len <= sdslen(prefix)) continue;
            const char *ns = key->str + sdslen(prefix);
            size_t len = key->len - sdslen(prefix);
            if (memchr(ns, ':', len)) continue;
            rc = push_ns(out, n, ns, len);
        }
        freeReplyObject(r);
    } while (!rc && strcmp(cursor, "0") != 0);
    if (rc && !*err) *err = sdsnew("out of memory");
    sdsfree(prefix), sdsfree(pattern), sdsfree(cursor);
    return rc;
}

int hh__cron_poll(const hh__cron_env *e, hh__conn *c, double now) {
    sds *members = NULL, err = NULL;
    size_t n = 0;
    int rc = 0;
    /* the namespaces named, "auto" standing for those found in Redis now */
    sds *nss = NULL;
    size_t nns = 0;
    for (size_t i = 0; i < e->nnamespaces && !rc; i++) {
        if (!strcmp(e->namespaces[i], HH_CRON_NS_AUTO)) {
            rc = hh__cron_namespaces_found(c, e->ctx->keys, &nss, &nns, &err);
        } else if (push_ns(&nss, &nns, e->namespaces[i], strlen(e->namespaces[i]))) {
            err = sdsnew("out of memory");
            rc = -1;
        }
    }
    /* a set whose key is of another type counts as one broken job and is
     * named in the poll's WARN line, beside the broken jobs */
    long jobs = 0, disabled = 0, broken = 0;
    sds broken_list = sdsempty();
    for (size_t i = 0; i < nns && !rc; i++) {
        sds name = sdscatprintf(sdsempty(), "cron_jobs:%s", nss[i]);
        rc = set_members(c, e->ctx->keys, name, &members, &n, &err, &broken_list, &broken);
        sdsfree(name);
    }
    for (size_t i = 0; i < nns; i++) sdsfree(nss[i]);
    free(nss);
    size_t n2 = n; /* members before n2: 2.x sets; from n2 on: the 1.x set */
    if (!rc)       /* sidekiq-cron 1.x */
        rc = set_members(c, e->ctx->keys, "cron_jobs", &members, &n, &err, &broken_list, &broken);
    /* A job of namespace "default" saved in both layouts (cron_job:NAME
     * and cron_job:default:NAME: sidekiq-cron 1.8 saves its own copy of a
     * job it cannot see in 2.x's keys) is two hashes with two guards
     * (<hash>:enqueued), so each would be pushed every tick. This poller
     * runs one: the 1.x copy, because its guard is the one sidekiq-cron
     * 1.8's pollers race on (they read nothing else), so a fleet of 1.8
     * and hiredhand processes pushes each tick once. A sidekiq-cron 2.x
     * poller runs the 2.x copy on its own guard and hiredhand cannot stop
     * it, hence the WARN each poll naming both keys until one is deleted
     * (`hiredhand cron delete NAME --layout 1|2`). */
    unsigned char *twin = n > n2 ? calloc(n, 1) : NULL;
    sds twins = sdsempty();
    long ntwins = 0;
    for (size_t i = 0; twin && i < n2; i++) {
        if (strncmp(members[i], "cron_job:default:", 17)) continue;
        for (size_t j = n2; j < n; j++)
            if (!strncmp(members[j], "cron_job:", 9) && !strcmp(members[j] + 9, members[i] + 17)) {
                twin[i] = 1;
                ntwins++;
                if (sdslen(twins) < 2000)
                    twins = sdscatprintf(twins, "%s%s (%s and %s)", sdslen(twins) ? "; " : "", members[i] + 17,
                                         members[j], members[i]);
                break;
            }
    }
    jobs = broken;
    long long next = 0;
    int pushed = 0;
    for (size_t i = 0; i < n && !rc && !atomic_load(&e->ctx->flags->quiet); i++) {
        if (twin && twin[i]) {
            jobs++; /* listed and counted, run through its 1.x copy */
            continue;
        }
        sds hk = hh__key(e->ctx->keys, members[i]);
        redisReply *r = hh__conn_cmd(c, "HGETALL %s", hk);
        sdsfree(hk);
        json_t *f = hash_fields(r);
        if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "WRONGTYPE", 9)) {
            /* a member naming a key that is no hash (a script's string):
             * sidekiq-cron's Job.all raises on it and skips the whole
             * poll; here it is one broken job and the others run */
            jobs++, broken++;
            if (sdslen(broken_list) < 2000)
                broken_list = sdscatprintf(broken_list, "%s%s: its key is not a hash", sdslen(broken_list) ? "; " : "",
                                           members[i]);
        } else if (!r || r->type == REDIS_REPLY_ERROR) {
            err = sdscatprintf(sdsempty(), "HGETALL %s: %s", members[i], r ? r->str : hh__conn_last_error(c));
            rc = -1;
        }
        if (r) freeReplyObject(r);
        if (!f || !json_object_size(f)) { /* gone since SMEMBERS (a save or delete in flight), or not a hash */
            json_decref(f);
            continue;
        }
        jobs++;
        const char *name = field(f, "name") ? field(f, "name") : members[i];
        const char *status = field(f, "status");
        int enabled = !status || strcmp(status, "enabled") == 0;
        if (!enabled) disabled++;
        char reason[256] = "";
        const char *text = field(f, "cron");
        hh__cron_expr *x = text ? hh__cron_expr_parse(text, NULL, reason, sizeof(reason)) : NULL;
        if (!text) snprintf(reason, sizeof(reason), "no cron expression");
        if (!x) {
            broken++;
            if (sdslen(broken_list) < 2000)
                broken_list = sdscatprintf(broken_list, "%s%s (\"%s\"): %s", sdslen(broken_list) ? "; " : "", name,
                                           text ? text : "", reason);
            json_decref(f);
            continue;
        }
        int64_t nt = hh__cron_expr_next(x, (int64_t)floor(now));
        if (enabled && nt > 0 && (!next || nt < next)) next = nt;
        int64_t tick =
            enabled ? hh__cron_due_tick(x, now, hh__cron_parse_time(field(f, "last_enqueue_time")), HH_CRON_GRACE) : -1;
        hh__cron_expr_free(x);
        if (tick >= 0) {
            char why[256], jid[HH_JID_SIZE] = "";
            int got = hh__cron_enqueue(c, e->ctx->keys, e->ctx->opts.timestamps, members[i], f, tick, now, 1, jid, why,
                                       sizeof(why));
            if (got == 1) {
                pushed++;
                char m[32];
                hh__cron_member(tick, m);
                hh__log(e->ctx->log, HH_LOG_INFO, "cron: enqueued %s for %s: jid=%s", name, m, jid);
            } else if (got == -3) {
                broken++;
                if (sdslen(broken_list) < 2000)
                    broken_list = sdscatprintf(broken_list, "%s%s: %s", sdslen(broken_list) ? "; " : "", name, why);
            } else if (got == -4) {
                err = sdscatprintf(sdsempty(), "%s: %s", name, why);
                rc = -1;
            }
        }
        json_decref(f);
    }
    if (!rc && e->counts) {
        atomic_store(&e->counts->jobs, jobs);
        atomic_store(&e->counts->disabled, disabled);
        atomic_store(&e->counts->broken, broken);
        atomic_store(&e->counts->next, next);
    }
    if (e->counts && pushed) atomic_fetch_add(&e->counts->pushed, (unsigned long long)pushed);
    /* One line per poll for every job it cannot run, naming each and why:
     * a broken job is never skipped in silence, nor logged per job per
     * second. */
    if (broken)
        hh__log(e->ctx->log, HH_LOG_WARN, "cron: %ld periodic job%s not run: %s", broken, broken == 1 ? "" : "s",
                broken_list);
    if (ntwins)
        hh__log(e->ctx->log, HH_LOG_WARN,
                "cron: %ld periodic job%s saved in both sidekiq-cron layouts, run here from the 1.x copy only "
                "(a sidekiq-cron 2.x process runs the other: delete one copy): %s",
                ntwins, ntwins == 1 ? "" : "s", twins);
    if (rc) hh__log(e->ctx->log, HH_LOG_WARN, "cron: poll failed, next poll retries: %s", err ? err : "?");
    sdsfree(broken_list);
    sdsfree(twins);
    free(twin);
    sdsfree(err);
    for (size_t i = 0; i < n; i++) sdsfree(members[i]);
    free(members);
    return rc ? -1 : pushed;
}

static int is_quiet(const void *arg) { return atomic_load(&((const hh__cron_env *)arg)->ctx->flags->quiet); }

void *hh__cron_main(void *arg) {
    const hh__cron_env *e = arg;
    hh__conn c;
    hh__conn_init(&c, e->ctx->cfg, e->ctx->log, "cron", &e->ctx->flags->quiet);
    hh__rng rng;
    hh__rng_seed(&rng);
    double iv = e->ctx->opts.cron_poll_interval;
    /* Sidekiq's poller waits avg * r + avg / 2 between polls (r uniform in
     * [0, 1)); the first poll comes within one interval of the start. */
    hh__wake_wait(e->ctx->wake, hh__mono() + iv * hh__rng_double(&rng), is_quiet, e);
    while (!atomic_load(&e->ctx->flags->quiet)) {
        hh__cron_poll(e, &c, hh__now() + e->clock_skew);
        hh__wake_wait(e->ctx->wake, hh__mono() + iv * hh__rng_double(&rng) + iv / 2, is_quiet, e);
    }
    hh__conn_close(&c);
    return NULL;
}
