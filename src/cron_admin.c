/* cron_admin.c -- hh_cron_*: periodic jobs defined, listed, switched,
 * deleted and run now on a client, writing what sidekiq-cron writes so the
 * Web UI's Cron tab and Ruby's Sidekiq::Cron::Job read them.
 *
 * Keys read and written: cron_jobs:<namespace> (SADD/SREM/SMEMBERS),
 * cron_job:<namespace>:<name> (HSET/HGETALL/DEL) and its :enqueued (ZADD
 * at a first save, DEL) and :jid_history (DEL); cron_jobs and
 * cron_job:<name> (the 1.x layout) read in the namespace "default"; a run
 * now writes as the poller does (HH_LUA_CRON_ENQUEUE); :jid_history read
 * (LRANGE) by hh_cron_history; the namespace '*' of a listing: the keys
 * cron_jobs:<namespace> found by SCAN; TYPE of a set's or a member's key
 * of another type, to name it. */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "client.h"
#include "cron.h"
#include "error.h"
#include "job.h"

static const char *ns_of(const char *ns) { return ns ? ns : "default"; }

/* The empty namespace is refused, not read as "default": sidekiq-cron
 * keeps "" as given (keys cron_jobs: and cron_job::<name>), so reading
 * it as "default" would save or touch another namespace's job than the
 * caller named, and `--cron-namespace "$NS"` with NS unset would pass
 * unnoticed. Returns HH_OK or HH_ERR_INVALID (recorded). */
static int check_ns(const char *ns) {
    return ns && !*ns ? hh__fail(HH_ERR_INVALID, "the cron namespace is empty: give a name, or NULL for default")
                      : HH_OK;
}

/* A JSON string of len bytes; bytes that are not UTF-8 (a job a script
 * wrote by hand) as the text \xNN, so the field still shows and is not
 * silently dropped (JSON cannot hold them). */
static json_t *text(const char *s, size_t len) {
    json_t *v = json_stringn(s, len);
    if (v) return v;
    size_t n = 0;
    char *esc = hh__utf8_escape_len(s, len, &n);
    v = esc ? json_stringn(esc, n) : NULL;
    free(esc);
    return v;
}

/* Sets j's "name" to the name's len bytes: text() of them, and when they
 * are not UTF-8 their exact bytes as "name_base64" too, since the \xNN
 * text then names no job (or, worse, another one whose name is that text). */
static void set_name(json_t *j, const char *s, size_t len) {
    json_object_set_new(j, "name", text(s, len));
    if (!hh__utf8_valid(s, len)) json_object_set_new(j, "name_base64", hh__json_base64(s, len));
}

/* The hash's fields as an object of strings ({} when there is no key).
 * wrongtype non-NULL: a key of another type sets it (no error, NULL).
 * raw non-NULL: each field whose value is not UTF-8 (shown as \xNN) also
 * gets its exact bytes there, as base64. */
static json_t *hgetall_ex(hh__conn *c, const hh__keys *k, const char *hash_key, int *rc, int *wrongtype, json_t *raw) {
    sds key = hh__key(k, hash_key);
    redisReply *r = hh__conn_cmd(c, "HGETALL %s", key);
    sdsfree(key);
    json_t *o = NULL;
    if (wrongtype && r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "WRONGTYPE", 9)) {
        *wrongtype = 1;
        *rc = HH_OK;
    } else if (r && r->type == REDIS_REPLY_ARRAY && r->elements % 2 == 0) {
        o = json_object();
        for (size_t i = 0; i + 1 < r->elements; i += 2)
            if (r->element[i]->type == REDIS_REPLY_STRING && r->element[i + 1]->type == REDIS_REPLY_STRING) {
                const redisReply *v = r->element[i + 1];
                json_object_set_new(o, r->element[i]->str, text(v->str, v->len));
                if (raw && !hh__utf8_valid(v->str, v->len))
                    json_object_set_new(raw, r->element[i]->str, hh__json_base64(v->str, v->len));
            }
        *rc = HH_OK;
    } else {
        *rc = hh__fail(HH_ERR_REDIS, "HGETALL %s: %s", hash_key,
                       !r                                 ? hh__conn_last_error(c)
                           : r->type == REDIS_REPLY_ERROR ? r->str
                                                          : "unexpected reply");
    }
    if (r) freeReplyObject(r);
    return o;
}

static json_t *hgetall(hh__conn *c, const hh__keys *k, const char *hash_key, int *rc) {
    return hgetall_ex(c, k, hash_key, rc, NULL, NULL);
}

/* The hash of job `name`: the 2.x key, or in "default" the 1.x one when
 * only that exists. A name saved in both layouts (two hashes, each run
 * each tick) is refused unless layout (hh_cron_use_layout: 1 or 2) picks
 * one: acting on one copy alone (a disable) would leave the other
 * running unseen. *rc: HH_ERR_NOTFOUND when no chosen key holds a job. */
static sds job_key(hh__conn *c, const hh__keys *k, const char *ns, const char *name, int layout, json_t **fields,
                   int *rc) {
    *fields = NULL;
    if ((*rc = check_ns(ns)) != HH_OK) return NULL;
    if (!strcmp(ns_of(ns), "*")) { /* sidekiq-cron's Job.find takes one namespace */
        *rc = hh__fail(HH_ERR_INVALID, "namespace '*' is for a listing: name the job's namespace");
        return NULL;
    }
    int dflt = !strcmp(ns_of(ns), "default");
    if (layout == 1 && !dflt) {
        *rc = hh__fail(HH_ERR_INVALID, "layout 1: sidekiq-cron 1.x has no namespace %s, only default", ns_of(ns));
        return NULL;
    }
    /* [0]: 2.x's key, [1]: 1.x's (namespace "default" only) */
    sds hk[2] = {sdscatprintf(sdsempty(), "cron_job:%s:%s", ns_of(ns), name),
                 dflt ? sdscatprintf(sdsempty(), "cron_job:%s", name) : NULL};
    json_t *f[2] = {NULL, NULL};
    for (int i = 0; i < 2 && *rc == HH_OK; i++)
        if (hk[i] && layout != 1 + i) f[i] = hgetall(c, k, hk[i], rc);
    int has[2] = {json_object_size(f[0]) > 0, json_object_size(f[1]) > 0};
    int pick = -1;
    if (*rc != HH_OK) {
    } else if (has[0] && has[1]) {
        *rc = hh__fail(HH_ERR_INVALID,
                       "periodic job %s is saved in both sidekiq-cron layouts (%s and %s), each run each tick: "
                       "choose one with layout 1 or 2 (the CLI's --layout)",
                       name, hk[1], hk[0]);
    } else if (has[0] || has[1]) {
        pick = has[0] ? 0 : 1;
    } else {
        *rc = layout
            ? hh__fail(HH_ERR_NOTFOUND, "no periodic job %s in namespace %s in layout %d", name, ns_of(ns), layout)
            : hh__fail(HH_ERR_NOTFOUND, "no periodic job %s in namespace %s", name, ns_of(ns));
    }
    sds out = NULL;
    for (int i = 0; i < 2; i++) {
        if (i == pick) {
            out = hk[i], *fields = f[i];
        } else {
            sdsfree(hk[i]);
            json_decref(f[i]);
        }
    }
    return out;
}

static int redis_ok(hh__conn *c, redisReply *r, const char *what) {
    int ok = r && r->type != REDIS_REPLY_ERROR;
    int rc = ok ? HH_OK : hh__fail(HH_ERR_REDIS, "%s: %s", what, r ? r->str : hh__conn_last_error(c));
    if (r) freeReplyObject(r);
    return rc;
}

/* Whether a job of namespace "default" is saved in sidekiq-cron 1.x's
 * layout (cron_jobs, cron_job:<name>, no namespace field): when a 1.x job
 * of that name exists and no 2.x one, so that it is updated rather than
 * doubled (two hashes of one name would both run each tick), or when the
 * Redis holds a 1.x fleet's jobs and no 2.x "default" set, so that 1.x
 * processes (which read nothing else) see the job. *rc: a Redis error. */
static int legacy_layout(hh__conn *c, const hh__keys *k, const char *name, int *rc) {
    sds k1 = sdscatprintf(hh__key(k, "cron_job:"), "%s", name);
    sds k2 = sdscatprintf(hh__key(k, "cron_job:default:"), "%s", name);
    sds s1 = hh__key(k, "cron_jobs"), s2 = hh__key(k, "cron_jobs:default");
    long long v[4] = {0, 0, 0, 0};
    const char *keys[4] = {k1, k2, s1, s2};
    for (int i = 0; i < 4 && *rc == HH_OK; i++) {
        redisReply *r = hh__conn_cmd(c, "EXISTS %s", keys[i]);
        if (r && r->type == REDIS_REPLY_INTEGER) v[i] = r->integer;
        else *rc = hh__fail(HH_ERR_REDIS, "EXISTS: %s", r && r->str ? r->str : hh__conn_last_error(c));
        if (r) freeReplyObject(r);
    }
    sdsfree(k1), sdsfree(k2), sdsfree(s1), sdsfree(s2);
    if (*rc != HH_OK || v[1]) return 0;
    return v[0] || (v[2] && !v[3]);
}

int hh_cron_save(hh_client *cl, const hh_cron_spec *s) {
    if (!cl || !s) return hh__fail(HH_ERR_INVALID, "hh_cron_save: NULL client or spec");
    if (!s->name || !*s->name || strlen(s->name) > 255)
        return hh__fail(HH_ERR_INVALID, "'name' must be set (1-255 bytes)");
    if (!s->klass || !*s->klass) return hh__fail(HH_ERR_INVALID, "'klass' (or class) must be set");
    if (!s->cron || !*s->cron) return hh__fail(HH_ERR_INVALID, "'cron' must be set");
    /* "" is refused, not read as "default": an unset variable or an empty
     * config value would otherwise put the job in a queue nobody named */
    if (s->queue && !*s->queue) return hh__fail(HH_ERR_INVALID, "'queue' is empty: give a name, or none for default");
    if (check_ns(s->cron_namespace)) return HH_ERR_INVALID;
    const char *ns = ns_of(s->cron_namespace);
    if (strchr(ns, ':') || !strcmp(ns, "*")) return hh__fail(HH_ERR_INVALID, "namespace %s: no ':' and not '*'", ns);
    /* a caller built against a header without layout passes a shorter struct */
    int layout = s->struct_size >= offsetof(hh_cron_spec, layout) + sizeof(s->layout) ? s->layout : 0;
    if (layout < 0 || layout > 2)
        return hh__fail(HH_ERR_INVALID, "layout %d: want 0 (chosen by what Redis holds), 1 or 2", layout);
    if (layout == 1 && strcmp(ns, "default"))
        return hh__fail(HH_ERR_INVALID, "layout 1: sidekiq-cron 1.x has no namespace %s, only default", ns);
    char why[256];
    hh__cron_expr *x = hh__cron_expr_parse(s->cron, NULL, why, sizeof(why));
    if (!x) return hh__fail(HH_ERR_INVALID, "'cron' -> \"%s\": %s", s->cron, why);
    json_t *args = json_loads(s->args_json ? s->args_json : "[]", JSON_DECODE_ANY, NULL);
    json_t *retry = s->retry_json ? json_loads(s->retry_json, JSON_DECODE_ANY, NULL) : NULL;
    if (!json_is_array(args) || (s->retry_json && !retry)) {
        int rc = json_is_array(args) ? hh__fail(HH_ERR_INVALID, "retry %.60s is not JSON", s->retry_json)
                                     : hh__fail(HH_ERR_INVALID, "args must be a JSON array");
        json_decref(args), json_decref(retry), hh__cron_expr_free(x);
        return rc;
    }
    if (json_is_null(retry)) { /* as sidekiq-cron's `retry: nil`: Sidekiq's default */
        json_decref(retry);
        retry = NULL;
    }
    /* sidekiq-cron 2.x stores any retry it is given (1.8 takes none: it
     * pushes whatever its message holds); Sidekiq
     * reads false as no retry, an Integer as that many, and any other
     * truthy value as its default of 25: "abc", "false" (a string) or 2.5
     * would retry 25 times, -5 would send the first failure to the dead
     * set. Refused here, so that a saved job runs as it reads. */
    if (retry && !json_is_boolean(retry) && !(json_is_integer(retry) && json_integer_value(retry) >= 0)) {
        int rc = hh__fail(HH_ERR_INVALID, "retry %.60s: want true, false or a count of retries (an integer, 0 or more)",
                          s->retry_json);
        json_decref(args), json_decref(retry), hh__cron_expr_free(x);
        return rc;
    }
    /* The message as Job.new builds it for a class Ruby may not know:
     * {"queue"=>"default"} merged with class and args, then queue and
     * retry when given. */
    json_t *msg = json_object();
    json_object_set_new(msg, "queue", json_string(s->queue ? s->queue : "default"));
    json_object_set_new(msg, "class", json_string(s->klass));
    json_object_set(msg, "args", args);
    if (retry) json_object_set(msg, "retry", retry);
    char *msg_s = hh__json_dump(msg), *args_s = hh__json_dump(args), *retry_s = retry ? hh__json_dump(retry) : NULL;
    json_decref(msg), json_decref(args);
    hh__conn *c = hh__client_conn(cl);
    const hh__keys *k = hh__client_keys(cl);
    int rc = HH_OK;
    int legacy = layout == 1 || (layout == 0 && !strcmp(ns, "default") && legacy_layout(c, k, s->name, &rc));
    if (layout && !strcmp(ns, "default")) {
        /* the other layout's hash of the same name would run beside this one, each tick */
        sds other = layout == 2 ? sdscatprintf(hh__key(k, "cron_job:"), "%s", s->name)
                                : sdscatprintf(hh__key(k, "cron_job:default:"), "%s", s->name);
        redisReply *r = hh__conn_cmd(c, "EXISTS %s", other);
        sdsfree(other);
        if (!r || r->type != REDIS_REPLY_INTEGER)
            rc = hh__fail(HH_ERR_REDIS, "EXISTS: %s", r && r->str ? r->str : hh__conn_last_error(c));
        else if (r->integer)
            rc = hh__fail(HH_ERR_INVALID,
                          "layout %d: a sidekiq-cron %s job %s exists, and both would run each tick: delete it "
                          "first, or save it in layout %d",
                          layout, layout == 2 ? "1.x" : "2.x", s->name, 3 - layout);
        if (r) freeReplyObject(r);
    }
    sds hk = legacy ? sdscatprintf(sdsempty(), "cron_job:%s", s->name)
                    : sdscatprintf(sdsempty(), "cron_job:%s:%s", ns, s->name);
    sds key = hh__key(k, hk), set = legacy ? hh__key(k, "cron_jobs") : sdscatprintf(hh__key(k, "cron_jobs:"), "%s", ns);
    sds ek = sdscatlen(sdsdup(key), ":enqueued", 9);
    int e;
    json_t *old = hgetall(c, k, hk, &e);
    if (e) rc = e;
    const char *old_status = old ? json_string_value(json_object_get(old, "status")) : NULL;
    const char *old_last = old ? json_string_value(json_object_get(old, "last_enqueue_time")) : NULL;
    const char *status = s->disabled ? "disabled" : old_status && *old_status ? old_status : "enabled";
    /* retry as Job#to_hash writes it: the number, or true/false's to_s */
    const char *retry_field = !retry ? "" : json_is_boolean(retry) ? (json_is_true(retry) ? "true" : "false") : retry_s;
    if (!retry_field) retry_field = "";
    if (!msg_s || !args_s) rc = hh__fail(HH_ERR_NOMEM, "out of memory");
    if (rc == HH_OK) rc = redis_ok(c, hh__conn_cmd(c, "SADD %s %s", set, hk), "SADD");
    /* a 1.x hash has no namespace field (hh_cron_delete tells the layouts
     * apart by it): there the pair repeats name, keeping one command */
    if (rc == HH_OK)
        rc =
            redis_ok(c,
                     hh__conn_cmd(c,
                                  "HSET %s name %s %s %s klass %s cron %s description %s source %s args %s "
                                  "date_as_argument %s message %s status %s active_job %s queue_name_prefix %s "
                                  "queue_name_delimiter %s retry %s last_enqueue_time %s symbolize_args %s",
                                  key, s->name, legacy ? "name" : "namespace", legacy ? s->name : ns, s->klass, s->cron,
                                  s->description ? s->description : "", s->from_schedule ? "schedule" : "dynamic",
                                  args_s, s->date_as_argument ? "1" : "0", msg_s, status, s->active_job ? "1" : "0", "",
                                  "", retry_field, old_last ? old_last : "", "0"),
                     "HSET");
    if (rc == HH_OK) { /* a new job does not run the tick just past (Job#save) */
        double now = hh__now();
        int64_t prev = hh__cron_expr_prev(x, (int64_t)floor(now));
        char member[32], score[40];
        hh__cron_member(prev, member);
        hh__fmt_double(score, sizeof(score), now);
        redisReply *r = hh__conn_cmd(c, "EXISTS %s", ek);
        int exists = r && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
        rc = redis_ok(c, r, "EXISTS");
        if (rc == HH_OK && !exists && prev >= 0)
            rc = redis_ok(c, hh__conn_cmd(c, "ZADD %s %s %s", ek, score, member), "ZADD");
    }
    json_decref(old), json_decref(retry);
    free(msg_s), free(args_s), free(retry_s);
    sdsfree(hk), sdsfree(key), sdsfree(set), sdsfree(ek);
    hh__cron_expr_free(x);
    return rc;
}

static int cmp_name(const void *a, const void *b) {
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    const char *p = json_string_value(json_object_get(x, "name")), *q = json_string_value(json_object_get(y, "name"));
    int d = strcmp(p ? p : "", q ? q : "");
    if (d) return d;
    p = json_string_value(json_object_get(x, "namespace")), q = json_string_value(json_object_get(y, "namespace"));
    return strcmp(p ? p : "", q ? q : "");
}

/* The entry of a member whose key holds no job (another type, or no key:
 * a member left by a script or a crash): listed with its reason, so that
 * an operator sees it and the other jobs still list. Its name: the key
 * less cron_job:<ns>: (or 1.x's cron_job:). */
static json_t *broken_entry(const char *member, size_t len, const char *set, const char *ns, const char *why) {
    sds p2 = sdscatprintf(sdsempty(), "cron_job:%s:", ns);
    const char *name = member;
    if (len > sdslen(p2) && !strncmp(member, p2, sdslen(p2))) name = member + sdslen(p2);
    else if (len > 9 && !strncmp(member, "cron_job:", 9)) name = member + 9;
    sdsfree(p2);
    json_t *j = json_object();
    set_name(j, name, len - (size_t)(name - member));
    json_object_set_new(j, "namespace", json_string(ns));
    const char *fl[] = {"cron", "status", "source", "description", "args", "class", "queue", "last_enqueue_time",
                        "next"};
    for (size_t n = 0; n < sizeof(fl) / sizeof(*fl); n++) json_object_set_new(j, fl[n], json_null());
    json_t *t = text(member, len);
    sds e = sdscatprintf(sdsempty(), "%s of %s %s", json_string_value(t) ? json_string_value(t) : "?", set, why);
    json_decref(t);
    json_object_set_new(j, "error", text(e, sdslen(e)));
    sdsfree(e);
    return j;
}

/* The entry of a namespace's set whose key is of another type (a string
 * or a list a script wrote): no job of it can be read, and sidekiq-cron
 * fails on it (its SMEMBERS raises WRONGTYPE). Listed, as a broken member
 * is, with "key" (the set's key, its name too) and the reason in "error",
 * so that a listing shows it rather than an empty namespace. */
static json_t *broken_set_entry(hh__conn *c, const hh__keys *k, const char *set, const char *ns) {
    sds key = hh__key(k, set);
    redisReply *t = hh__conn_cmd(c, "TYPE %s", key);
    sdsfree(key);
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(set));
    json_object_set_new(j, "namespace", json_string(ns));
    const char *fl[] = {"cron", "status", "source", "description", "args", "class", "queue", "last_enqueue_time",
                        "next"};
    for (size_t n = 0; n < sizeof(fl) / sizeof(*fl); n++) json_object_set_new(j, fl[n], json_null());
    json_object_set_new(j, "key", json_string(set));
    sds e = sdscatprintf(sdsempty(), "key %s is a %s, not a set: no periodic job of it can be read", set,
                         t && t->type == REDIS_REPLY_STATUS ? t->str : "key of another type");
    json_object_set_new(j, "error", text(e, sdslen(e)));
    sdsfree(e);
    if (t) freeReplyObject(t);
    return j;
}

static void list_set(hh__conn *c, const hh__keys *k, const char *set, const char *ns, json_t *out, int *rc) {
    sds key = hh__key(k, set);
    redisReply *r = hh__conn_cmd(c, "SMEMBERS %s", key);
    sdsfree(key);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "WRONGTYPE", 9))
            json_array_append_new(out, broken_set_entry(c, k, set, ns));
        else *rc = hh__fail(HH_ERR_REDIS, "SMEMBERS %s: %s", set, r ? (r->str ? r->str : "?") : hh__conn_last_error(c));
        if (r) freeReplyObject(r);
        return;
    }
    double now = hh__now();
    for (size_t i = 0; i < r->elements && !*rc; i++) {
        const redisReply *m = r->element[i];
        if (m->type != REDIS_REPLY_STRING) continue;
        /* sidekiq-cron's Job.all raises at a member whose key is no hash
         * and skips one with no key: here each lists as broken (once: a
         * set holds a member once), the others as they are */
        int wrongtype = 0;
        json_t *raw = json_object();
        json_t *f = hgetall_ex(c, k, m->str, rc, &wrongtype, raw);
        if (wrongtype) {
            sds mk = hh__key(k, m->str);
            redisReply *t = hh__conn_cmd(c, "TYPE %s", mk);
            sdsfree(mk);
            sds why = sdscatprintf(sdsempty(), "is a %s, not a job's hash",
                                   t && t->type == REDIS_REPLY_STATUS ? t->str : "key of another type");
            if (t) freeReplyObject(t);
            json_array_append_new(out, broken_entry(m->str, m->len, set, ns, why));
            sdsfree(why);
            json_decref(raw);
            continue;
        }
        if (!f || !json_object_size(f)) {
            if (f) json_array_append_new(out, broken_entry(m->str, m->len, set, ns, "names no key (no job there)"));
            json_decref(f);
            json_decref(raw);
            continue;
        }
        json_t *j = json_object();
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *msg_s = json_string_value(json_object_get(f, "message"));
        json_t *msg = msg_s ? json_loads(msg_s, 0, NULL) : NULL;
        json_t *q = json_object_get(msg, "queue");
        if (name) json_object_set_new(j, "name", json_string(name));
        else set_name(j, r->element[i]->str, r->element[i]->len);
        json_t *raw_name = json_object_get(raw, "name");
        if (name && raw_name) json_object_set(j, "name_base64", raw_name);
        json_object_set_new(j, "namespace", json_string(ns));
        json_object_set_new(j, "layout", json_integer(strcmp(set, "cron_jobs") ? 2 : 1));
        const char *fl[] = {"cron", "status", "source", "description", "args"};
        for (size_t n = 0; n < sizeof(fl) / sizeof(*fl); n++) {
            json_t *v = json_object_get(f, fl[n]);
            json_object_set(j, fl[n], v ? v : json_null());
        }
        json_t *kl = json_object_get(f, "klass");
        json_object_set(j, "class", kl ? kl : json_null());
        json_object_set_new(j, "queue", json_is_string(q) ? json_copy(q) : json_string("default"));
        const char *last = json_string_value(json_object_get(f, "last_enqueue_time"));
        json_object_set_new(j, "last_enqueue_time", last && *last ? json_string(last) : json_null());
        char why[256] = "";
        const char *cron = json_string_value(json_object_get(f, "cron"));
        hh__cron_expr *x = cron ? hh__cron_expr_parse(cron, NULL, why, sizeof(why)) : NULL;
        if (!cron) hh__strlcpy(why, "no cron expression", sizeof(why));
        else if (x && !json_is_object(msg)) hh__strlcpy(why, "its message is not a JSON object", sizeof(why));
        int64_t nt = x ? hh__cron_expr_next(x, (int64_t)floor(now)) : -1;
        json_object_set_new(j, "next", nt > 0 ? json_integer(nt) : json_null());
        json_object_set_new(j, "error", *why ? json_string(why) : json_null());
        hh__cron_expr_free(x);
        json_decref(msg);
        json_decref(f);
        json_decref(raw);
        json_array_append_new(out, j);
    }
    freeReplyObject(r);
}

int hh_cron_list(hh_client *cl, const char *cron_namespace, char **json_out) {
    if (!cl || !json_out) return hh__fail(HH_ERR_INVALID, "hh_cron_list: NULL argument");
    *json_out = NULL;
    if (check_ns(cron_namespace)) return HH_ERR_INVALID;
    hh__conn *c = hh__client_conn(cl);
    const hh__keys *k = hh__client_keys(cl);
    const char *ns = ns_of(cron_namespace);
    json_t *out = json_array();
    int rc = HH_OK;
    /* "*": every namespace, as Job.all('*') under sidekiq-cron 2.x's
     * `available_namespaces = :auto` (the namespaces of the cron_jobs:*
     * keys, and "default") */
    sds *nss = NULL, err = NULL;
    size_t nns = 0;
    if (!strcmp(ns, "*")) {
        if (hh__cron_namespaces_found(c, k, &nss, &nns, &err))
            rc = hh__fail(HH_ERR_REDIS, "%s", err ? err : "namespaces: out of memory");
        sdsfree(err);
    } else if ((nss = malloc(sizeof(sds)))) {
        nss[nns++] = sdsnew(ns);
    }
    for (size_t i = 0; i < nns && !rc; i++) {
        sds set = sdscatprintf(sdsempty(), "cron_jobs:%s", nss[i]);
        list_set(c, k, set, nss[i], out, &rc);
        sdsfree(set);
        if (!rc && !strcmp(nss[i], "default")) list_set(c, k, "cron_jobs", nss[i], out, &rc);
    }
    for (size_t i = 0; i < nns; i++) sdsfree(nss[i]);
    free(nss);
    /* a job of "default" in both layouts: each copy names the other */
    size_t i1, i2;
    json_t *a, *b;
    json_array_foreach(out, i1, a) {
        if (!json_integer_value(json_object_get(a, "layout"))) continue;
        json_array_foreach(out, i2, b) {
            const char *na = json_string_value(json_object_get(a, "name")),
                       *nb = json_string_value(json_object_get(b, "name"));
            json_int_t la = json_integer_value(json_object_get(a, "layout")),
                       lb = json_integer_value(json_object_get(b, "layout"));
            const char *sa = json_string_value(json_object_get(a, "namespace")),
                       *sb = json_string_value(json_object_get(b, "namespace"));
            if (lb && la != lb && na && nb && sa && sb && !strcmp(na, nb) && !strcmp(sa, "default") &&
                !strcmp(sb, "default"))
                json_object_set_new(a, "also_in_layout", json_integer(lb));
        }
    }
    if (!rc && !nns) rc = hh__fail(HH_ERR_NOMEM, "out of memory");
    if (rc) {
        json_decref(out);
        return rc;
    }
    size_t n = json_array_size(out);
    json_t **v = malloc((n ? n : 1) * sizeof(*v));
    if (!v) {
        json_decref(out);
        return hh__fail(HH_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(out, i));
    qsort(v, n, sizeof(*v), cmp_name);
    json_array_clear(out);
    for (size_t i = 0; i < n; i++) json_array_append_new(out, v[i]);
    free(v);
    *json_out = hh__json_dump(out);
    json_decref(out);
    return *json_out ? HH_OK : hh__fail(HH_ERR_NOMEM, "out of memory");
}

int hh_cron_set_enabled(hh_client *cl, const char *ns, const char *name, int enabled) {
    if (!cl || !name) return hh__fail(HH_ERR_INVALID, "hh_cron_set_enabled: NULL argument");
    hh__conn *c = hh__client_conn(cl);
    json_t *f;
    int rc;
    sds hk = job_key(c, hh__client_keys(cl), ns, name, hh__client_cron_layout(cl), &f, &rc);
    if (!hk) return rc;
    sds key = hh__key(hh__client_keys(cl), hk);
    rc = redis_ok(c, hh__conn_cmd(c, "HSET %s status %s", key, enabled ? "enabled" : "disabled"), "HSET");
    sdsfree(key), sdsfree(hk);
    json_decref(f);
    return rc;
}

/* Takes a member `cron list` shows as broken (its key missing, or not a
 * hash) out of its set: the sidekiq-cron key names of `name` in namespace
 * ns (and sidekiq-cron 1.x's in "default"; only the layout chosen, if
 * one is: 1 or 2). The key itself is left alone:
 * it is no job's hash, and may be somebody else's. Returns how many
 * members went, or -1 on a Redis error (recorded). */
static int drop_broken_member(hh__conn *c, const hh__keys *k, const char *ns, const char *name, int layout) {
    int removed = 0;
    for (int v1 = 0; v1 < 2 && removed >= 0; v1++) {
        if (v1 && strcmp(ns_of(ns), "default")) break;
        if (layout == 1 + v1) continue; /* hh_cron_use_layout: only the chosen layout's set */
        sds set = v1 ? hh__key(k, "cron_jobs") : sdscatprintf(hh__key(k, "cron_jobs:"), "%s", ns_of(ns));
        sds member = v1 ? sdscatprintf(sdsempty(), "cron_job:%s", name)
                        : sdscatprintf(sdsempty(), "cron_job:%s:%s", ns_of(ns), name);
        redisReply *r = hh__conn_cmd(c, "SREM %s %s", set, member);
        if (r && r->type == REDIS_REPLY_INTEGER) removed += (int)r->integer;
        else {
            hh__fail(HH_ERR_REDIS, "SREM: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : hh__conn_last_error(c));
            removed = -1;
        }
        if (r) freeReplyObject(r);
        sdsfree(set), sdsfree(member);
    }
    return removed;
}

int hh_cron_delete(hh_client *cl, const char *ns, const char *name) {
    if (!cl || !name) return hh__fail(HH_ERR_INVALID, "hh_cron_delete: NULL argument");
    hh__conn *c = hh__client_conn(cl);
    const hh__keys *k = hh__client_keys(cl);
    json_t *f;
    int rc;
    sds hk = job_key(c, k, ns, name, hh__client_cron_layout(cl), &f, &rc);
    if (!hk && (rc == HH_ERR_NOTFOUND || (rc == HH_ERR_REDIS && strstr(hh_last_error(), "WRONGTYPE")))) {
        /* no job's hash: a set member listed as broken goes, as SREM by hand would */
        char why[512];
        hh__strlcpy(why, hh_last_error(), sizeof(why));
        int removed = drop_broken_member(c, k, ns, name, hh__client_cron_layout(cl));
        if (removed < 0) return HH_ERR_REDIS;
        return removed ? HH_OK : hh__fail(rc, "%s", why);
    }
    if (!hk) return rc;
    /* the 1.x hash has no namespace field and sits in cron_jobs */
    sds set = json_object_get(f, "namespace") ? sdscatprintf(hh__key(k, "cron_jobs:"), "%s", ns_of(ns))
                                              : hh__key(k, "cron_jobs");
    sds key = hh__key(k, hk);
    rc = redis_ok(c, hh__conn_cmd(c, "SREM %s %s", set, hk), "SREM");
    if (rc == HH_OK) rc = redis_ok(c, hh__conn_cmd(c, "DEL %s:enqueued %s:jid_history %s", key, key, key), "DEL");
    sdsfree(set), sdsfree(key), sdsfree(hk);
    json_decref(f);
    return rc;
}

int hh_cron_enqueue_now(hh_client *cl, const char *ns, const char *name, char *jid_out) {
    if (!cl || !name) return hh__fail(HH_ERR_INVALID, "hh_cron_enqueue_now: NULL argument");
    hh__conn *c = hh__client_conn(cl);
    const hh__keys *k = hh__client_keys(cl);
    json_t *f;
    int rc;
    sds hk = job_key(c, k, ns, name, hh__client_cron_layout(cl), &f, &rc);
    if (!hk) return rc;
    char why[256], jid[HH_JID_SIZE] = "";
    int got = hh__cron_enqueue(c, k, hh__client_timestamps(cl), hk, f, -1, hh__now(), 0, jid, why, sizeof(why));
    rc = got == 1   ? HH_OK
        : got == -1 ? hh__fail(HH_ERR_NOTFOUND, "periodic job %s was deleted", name)
        : got == -3 ? hh__fail(HH_ERR_INVALID, "periodic job %s: %s", name, why)
                    : hh__fail(HH_ERR_REDIS, "periodic job %s: %s", name, why);
    if (rc == HH_OK && jid_out) memcpy(jid_out, jid, HH_JID_SIZE);
    sdsfree(hk);
    json_decref(f);
    return rc;
}

int hh_cron_history(hh_client *cl, const char *ns, const char *name, char **json_out) {
    if (!cl || !name || !json_out) return hh__fail(HH_ERR_INVALID, "hh_cron_history: NULL argument");
    *json_out = NULL;
    hh__conn *c = hh__client_conn(cl);
    const hh__keys *k = hh__client_keys(cl);
    json_t *f;
    int rc;
    sds hk = job_key(c, k, ns, name, hh__client_cron_layout(cl), &f, &rc);
    if (!hk) return rc;
    json_decref(f);
    sds key = sdscatlen(hh__key(k, hk), ":jid_history", 12);
    sdsfree(hk);
    redisReply *r = hh__conn_cmd(c, "LRANGE %s 0 -1", key);
    sdsfree(key);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        rc = hh__fail(HH_ERR_REDIS, "LRANGE jid_history: %s",
                      !r                                 ? hh__conn_last_error(c)
                          : r->type == REDIS_REPLY_ERROR ? r->str
                                                         : "unexpected reply");
        if (r) freeReplyObject(r);
        return rc;
    }
    json_t *out = json_array();
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING) continue;
        /* sidekiq-cron writes {"jid","enqueued"}; anything else is shown
         * as the text it is */
        json_t *v = json_loadb(e->str, e->len, 0, NULL);
        if (!json_is_object(v)) {
            json_decref(v);
            v = text(e->str, e->len);
        }
        if (v) json_array_append_new(out, v);
    }
    freeReplyObject(r);
    *json_out = hh__json_dump(out);
    json_decref(out);
    return *json_out ? HH_OK : hh__fail(HH_ERR_NOMEM, "out of memory");
}
