/* client.c -- pushing jobs like Sidekiq::Client (6.4 lib/sidekiq/client.rb)
 * and the read-only API the CLI shows (Sidekiq::Stats, ProcessSet), plus
 * remote signals and kills.
 * Keys written: queues (SADD), queue:<q> (LPUSH), schedule (ZADD),
 * dead (ZADD + trims), <id>-signals (LPUSH + EXPIRE), processes (SREM of
 * expired members, as ProcessSet.new does). Keys read: stat:processed,
 * stat:failed, retry, processes, <id>, queue:<q>. */
#include "client.h"
#include "abi.h"
#include "error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "job.h"
#include "outcome.h"
#include "util.h"

struct hh_client {
    hh__redis_config cfg;
    hh__keys keys;
    hh__logger log;
    hh__conn conn;
    hh_timestamps ts;
    long long max_bulk; /* Redis' proto-max-bulk-len, 0 unknown, -1 unreadable */
    int cron_layout;    /* hh_cron_use_layout: 0, 1 or 2 */
};

/* Redis drops the connection on an argument over proto-max-bulk-len, so
 * the client usually sees only "connection reset": a payload over 1 MiB
 * (the setting's minimum) is checked against it first. Returns 0 or
 * -1 with last_error set. */
static int check_bulk_len(hh_client *c, size_t len) {
    if (len <= 1024 * 1024) return 0;
    if (c->max_bulk == 0) {
        redisReply *r = hh__conn_cmd(&c->conn, "CONFIG GET proto-max-bulk-len");
        c->max_bulk = -1; /* CONFIG may be denied (ACLs, managed Redis) */
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
            c->max_bulk = strtoll(r->element[1]->str, NULL, 10);
        if (r) freeReplyObject(r);
    }
    if (c->max_bulk > 0 && (long long)len > c->max_bulk) {
        hh__conn_set_error(
            &c->conn, "job payload of %zu bytes is over Redis' proto-max-bulk-len (%lld bytes): invalid bulk length",
            len, c->max_bulk);
        return -1;
    }
    return 0;
}

/* Parses the options as a connection would, without connecting: the
 * reason goes to errbuf (may be NULL) and to hh_last_error(). */
static int check_config(const hh_redis_options *o, char *errbuf, size_t errlen) {
    char msg[512] = "";
    hh__redis_config cfg;
    if (hh__redis_config_parse(&cfg, o, msg, sizeof(msg)) != 0) {
        if (errbuf && errlen) hh__strlcpy(errbuf, msg, errlen);
        return hh__fail(HH_ERR_INVALID, "%s", *msg ? msg : "bad Redis options");
    }
    hh__redis_config_free(&cfg);
    return HH_OK;
}

int hh_redis_url_check(const char *url, char *errbuf, size_t errlen) {
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    return check_config(&o, errbuf, errlen);
}

int hh_redis_options_check(const hh_redis_options *caller_opts, char *errbuf, size_t errlen) {
    hh_redis_options o; /* the caller's struct_size bytes on the defaults */
    hh__redis_options_read(&o, caller_opts);
    return check_config(&o, errbuf, errlen);
}

static void discard_log(hh_log_level level, const char *msg, void *udata) { (void)level, (void)msg, (void)udata; }

hh_client *hh_client_new(const hh_redis_options *caller_opts, int *err) {
    hh_redis_options copy; /* the caller's struct_size bytes on the defaults */
    hh__redis_options_read(&copy, caller_opts);
    const hh_redis_options *opts = &copy;
    int e = HH_OK;
    hh_client *c = calloc(1, sizeof(*c));
    if (!c) {
        e = hh__fail(HH_ERR_NOMEM, "out of memory creating the client");
        goto out;
    }
    char msg[256];
    if (hh__redis_config_parse(&c->cfg, opts, msg, sizeof(msg)) != 0) {
        free(c);
        c = NULL;
        e = hh__fail(HH_ERR_INVALID, "%s", msg);
        goto out;
    }
    /* A client has no log sink of its own: what goes wrong reaches the
     * caller as a return code with hh_last_error() and
     * hh_client_last_error(), never as lines on the caller's stderr. */
    c->log.fn = discard_log;
    c->log.level = HH_LOG_ERROR;
    if (opts->ns && *opts->ns && hh_name_check(HH_NAME_NAMESPACE, opts->ns, msg, sizeof(msg)) != HH_OK) {
        hh__redis_config_free(&c->cfg);
        free(c);
        c = NULL;
        e = hh__fail(HH_ERR_INVALID, "%s", msg);
        goto out;
    }
    hh__keys_init(&c->keys, opts->ns);
    c->ts = opts->timestamps;
    hh__conn_init(&c->conn, &c->cfg, &c->log, "client", NULL);
    if (hh__conn_ready(&c->conn) != 0) { /* one attempt: the caller decides whether to try again */
        e = hh__redis_refused(&c->cfg) ? HH_ERR_REFUSED : HH_ERR_REDIS;
        if (e == HH_ERR_REFUSED)
            hh__fail(e, "redis %s refused the connection settings: %s", c->cfg.display, hh__conn_last_error(&c->conn));
        else hh__fail(e, "cannot connect to redis %s: %s", c->cfg.display, hh__conn_last_error(&c->conn));
        hh_client_free(c);
        c = NULL;
    }
out:
    if (err) *err = e;
    return c;
}

const char *hh_client_last_error(const hh_client *c) { return c ? hh__conn_last_error(&c->conn) : ""; }

void hh_client_free(hh_client *c) {
    if (!c) return;
    hh__conn_close(&c->conn);
    hh__keys_free(&c->keys);
    hh__redis_config_free(&c->cfg);
    free(c);
}

/* ------------------------------------------------------ shared sequences */

void hh__enqueue_append(hh__pipe *p, const hh__keys *k, const char *queue, const char *const *payloads,
                        const size_t *lens, size_t n) {
    sds qs = hh__key(k, HH_K_QUEUES), ql = hh__key_queue(k, queue);
    hh__pipe_add(p, "SADD %s %s", qs, queue);
    size_t argc = n + 2;
    const char **argv = malloc(argc * sizeof(*argv));
    size_t *alen = malloc(argc * sizeof(*alen));
    if (argv && alen) {
        argv[0] = "LPUSH", alen[0] = 5;
        argv[1] = ql, alen[1] = sdslen(ql);
        for (size_t i = 0; i < n; i++) argv[2 + i] = payloads[i], alen[2 + i] = lens[i];
        hh__pipe_addargv(p, (int)argc, argv, alen);
    } else {
        p->failed = 1;
    }
    free(argv);
    free(alen);
    sdsfree(qs);
    sdsfree(ql);
}

/* ---------------------------------------------------------------- pushing */

static int valid_queue(const char *q) { return hh_name_check(HH_NAME_QUEUE, q, NULL, 0) == HH_OK; }

/* Builds the payload as Sidekiq's client does: defaults first ("retry",
 * "queue"), then the item's keys in order, then jid and created_at when
 * absent. `at` is removed and returned in *at (0 when absent). */
static json_t *normalize(json_t *item, double *at, char *why, size_t whylen) {
    json_t *k = json_object_get(item, "class"), *a = json_object_get(item, "args");
    json_t *q = json_object_get(item, "queue"), *t = json_object_get(item, "at");
    if (!json_is_string(k) || !json_string_length(k)) {
        hh__strlcpy(why, "job needs a non-empty \"class\" string", whylen);
        return NULL;
    }
    if (!json_is_array(a)) {
        hh__strlcpy(why, "job \"args\" must be a JSON array", whylen);
        return NULL;
    }
    if (q && (!json_is_string(q) || !valid_queue(json_string_value(q)))) {
        hh__strlcpy(why, "job \"queue\" must be a non-empty string without '|'", whylen);
        return NULL;
    }
    if (t && !json_is_number(t)) {
        hh__strlcpy(why, "job \"at\" must be a number (epoch seconds)", whylen);
        return NULL;
    }
    json_t *tags = json_object_get(item, "tags");
    if (tags && !json_is_array(tags)) {
        hh__strlcpy(why, "job \"tags\" must be an array", whylen);
        return NULL;
    }
    *at = t ? json_number_value(t) : 0;
    json_t *out = json_object();
    json_object_set_new(out, "retry", json_true());
    json_object_set_new(out, "queue", json_string("default"));
    const char *key;
    json_t *v;
    json_object_foreach(item, key, v) {
        if (strcmp(key, "at") != 0) json_object_set(out, key, v);
    }
    return out;
}

static void stamp(json_t *job, double now, hh_timestamps ts, int scheduled) {
    json_t *j = json_object_get(job, "jid");
    if (!json_is_string(j) || !json_string_length(j)) {
        char jid[HH_JID_SIZE];
        hh__new_jid(jid);
        json_object_set_new(job, "jid", json_string(jid));
    }
    if (!json_object_get(job, "created_at")) json_object_set_new(job, "created_at", hh__json_time_new(now, ts));
    if (scheduled) json_object_del(job, "enqueued_at");
    else json_object_set_new(job, "enqueued_at", hh__json_time_new(now, ts));
}

/* Writes serialised payloads: one pipelined SADD+LPUSH, or ZADDs, as
 * Sidekiq's client does. Reconnects once on a lost connection, as Ruby's client does. */
static int write_payloads(hh_client *c, const char *queue, char *const *dumps, const size_t *lens, size_t n,
                          double at) {
    int rc = HH_ERR_REDIS;
    for (size_t i = 0; i < n; i++)
        if (check_bulk_len(c, lens[i]) != 0) return HH_ERR_REDIS;
    for (int attempt = 0; attempt < 2; attempt++) {
        hh__pipe p;
        hh__pipe_begin(&p, &c->conn);
        if (at > 0) {
            sds zk = hh__key(&c->keys, HH_K_SCHEDULE);
            char score[32];
            hh__fmt_double(score, sizeof(score), at);
            for (size_t i = 0; i < n; i++) hh__pipe_add(&p, "ZADD %s %s %b", zk, score, dumps[i], lens[i]);
            sdsfree(zk);
        } else {
            hh__enqueue_append(&p, &c->keys, queue, (const char *const *)dumps, lens, n);
        }
        hh__conn_clear_error(&c->conn);
        redisReply **r = hh__pipe_exec(&p);
        if (!r) continue;
        rc = HH_OK;
        for (int i = 0; i < p.n; i++)
            if (r[i]->type == REDIS_REPLY_ERROR) {
                hh__conn_set_error(&c->conn, "%s", r[i]->str);
                rc = HH_ERR_REDIS;
            }
        hh__replies_free(r, p.n);
        break;
    }
    return rc;
}

static void free_dumps(char **dumps, size_t *lens, size_t n) {
    for (size_t i = 0; dumps && i < n; i++) free(dumps[i]);
    free(dumps);
    free(lens);
}

/* Writes already-normalised jobs. */
static int write_jobs(hh_client *c, json_t **jobs, size_t n, double at, char (*jids_out)[HH_JID_SIZE]) {
    double now = hh__now();
    char **dumps = calloc(n, sizeof(char *));
    size_t *lens = calloc(n, sizeof(size_t));
    int rc = HH_ERR_NOMEM;
    if (!dumps || !lens) goto done;
    for (size_t i = 0; i < n; i++) {
        stamp(jobs[i], now, c->ts, at > 0);
        if (!(dumps[i] = hh__json_dump(jobs[i]))) goto done;
        lens[i] = strlen(dumps[i]);
        if (jids_out) hh__strlcpy(jids_out[i], json_string_value(json_object_get(jobs[i], "jid")), HH_JID_SIZE);
    }
    rc = write_payloads(c, json_string_value(json_object_get(jobs[0], "queue")), dumps, lens, n, at);
done:
    free_dumps(dumps, lens, n);
    return rc;
}

/* Keys the fast bulk path writes itself; extra_json naming one of them
 * takes the general path instead. */
static int reserved_key(const char *k) {
    static const char *const keys[] = {"retry", "queue",      "class",       "args", "at",
                                       "jid",   "created_at", "enqueued_at", NULL};
    for (int i = 0; keys[i]; i++)
        if (strcmp(k, keys[i]) == 0) return 1;
    return 0;
}

/* push_bulk without a JSON tree per job: jobs of one call share every key
 * but args and jid, so the shared parts are serialised once (by jansson)
 * and each payload is those pieces around its own args. Returns 1 when
 * the options need the general path. */
static int bulk_fast(hh_client *c, const char *klass, const char *const *args_json, size_t n, const hh_push_options *o,
                     char (*jids_out)[HH_JID_SIZE], double at) {
    json_t *head = json_object(), *extra = NULL;
    const char *key;
    json_t *v;
    int rc = 1;
    char **dumps = NULL;
    size_t *lens = NULL;
    char *head_s = NULL, *extra_s = NULL, *stamp_s = NULL;
    unsigned char *raw = NULL;
    if (o && o->extra_json) {
        extra = json_loads(o->extra_json, JSON_ALLOW_NUL, NULL);
        if (!json_is_object(extra)) goto out;
        json_object_foreach(extra, key, v) if (reserved_key(key)) goto out;
    }
    const char *q = o && o->queue ? o->queue : "default";
    if (!klass || !*klass || !valid_queue(q) || (o && o->retry == HH_RETRY_COUNT && o->retry_max < 0)) {
        rc = HH_ERR_INVALID;
        goto out;
    }
    switch (o ? o->retry : HH_RETRY_DEFAULT) {
    case HH_RETRY_FALSE: json_object_set_new(head, "retry", json_false()); break;
    case HH_RETRY_COUNT: json_object_set_new(head, "retry", json_integer(o->retry_max)); break;
    default: json_object_set_new(head, "retry", json_true()); break;
    }
    if (json_object_set_new(head, "queue", json_string(q)) || json_object_set_new(head, "class", json_string(klass))) {
        rc = HH_ERR_INVALID; /* not UTF-8 */
        goto out;
    }
    double now = hh__now();
    json_t *t = hh__json_time_new(now, c->ts);
    head_s = hh__json_dump(head); /* {"retry":…,"queue":…,"class":…} */
    extra_s = extra ? hh__json_dump(extra) : strdup("{}");
    stamp_s = hh__json_dump(t);
    json_decref(t);
    rc = HH_ERR_NOMEM;
    dumps = calloc(n, sizeof(char *));
    lens = calloc(n, sizeof(size_t));
    raw = malloc(12 * n);
    if (!head_s || !extra_s || !stamp_s || !dumps || !lens || !raw) goto out;
    if (hh__random_bytes(raw, 12 * n) != 0) goto out;
    size_t hl = strlen(head_s) - 1, el = strlen(extra_s) - 2; /* without '}', without braces */
    for (size_t i = 0; i < n; i++) {
        json_t *args = json_loads(args_json[i] ? args_json[i] : "[]", JSON_ALLOW_NUL, NULL);
        int is_array = json_is_array(args);
        char *a = is_array ? hh__json_dump(args) : NULL;
        json_decref(args);
        if (!a) {
            rc = is_array ? HH_ERR_NOMEM : HH_ERR_INVALID;
            goto out;
        }
        char jid[HH_JID_SIZE];
        hh__hex(jid, raw + 12 * i, 12);
        if (jids_out) memcpy(jids_out[i], jid, HH_JID_SIZE);
        sds p = sdsnewlen(head_s, hl);
        p = sdscat(p, ",\"args\":");
        p = sdscat(p, a);
        free(a);
        if (el) {
            p = sdscatlen(p, ",", 1);
            p = sdscatlen(p, extra_s + 1, el);
        }
        p = sdscatfmt(p, ",\"jid\":\"%s\",\"created_at\":%s", jid, stamp_s);
        if (at <= 0) p = sdscatfmt(p, ",\"enqueued_at\":%s", stamp_s);
        p = sdscatlen(p, "}", 1);
        if (!p || !(dumps[i] = malloc(sdslen(p) + 1))) {
            sdsfree(p);
            goto out;
        }
        memcpy(dumps[i], p, sdslen(p) + 1);
        lens[i] = sdslen(p);
        sdsfree(p);
    }
    rc = write_payloads(c, q, dumps, lens, n, at);
out:
    free_dumps(dumps, lens, n);
    free(raw);
    free(head_s);
    free(extra_s);
    free(stamp_s);
    json_decref(head);
    json_decref(extra);
    return rc;
}

static json_t *simple_item(const char *klass, const char *args_json, const hh_push_options *o, int *err) {
    *err = HH_ERR_INVALID;
    if (!klass || !*klass) return NULL;
    json_t *args = json_loads(args_json ? args_json : "[]", JSON_ALLOW_NUL, NULL);
    if (!json_is_array(args)) {
        json_decref(args);
        return NULL;
    }
    json_t *item = json_object();
    switch (o ? o->retry : HH_RETRY_DEFAULT) {
    case HH_RETRY_FALSE: json_object_set_new(item, "retry", json_false()); break;
    case HH_RETRY_COUNT:
        if (o->retry_max < 0) goto bad;
        json_object_set_new(item, "retry", json_integer(o->retry_max));
        break;
    default: json_object_set_new(item, "retry", json_true()); break;
    }
    const char *q = o && o->queue ? o->queue : "default";
    if (!valid_queue(q)) goto bad;
    json_object_set_new(item, "queue", json_string(q));
    json_object_set_new(item, "class", json_string(klass));
    json_object_set_new(item, "args", args);
    args = NULL;
    if (o && o->extra_json) {
        json_t *extra = json_loads(o->extra_json, JSON_ALLOW_NUL, NULL);
        if (!json_is_object(extra)) {
            json_decref(extra);
            goto bad;
        }
        const char *key;
        json_t *v;
        json_object_foreach(extra, key, v) {
            if (strcmp(key, "class") && strcmp(key, "args") && strcmp(key, "at")) json_object_set(item, key, v);
        }
        json_decref(extra);
    }
    *err = HH_OK;
    return item;
bad:
    json_decref(args);
    json_decref(item);
    return NULL;
}

/* perform_at semantics: a time not in the future means now. */
static double effective_at(const hh_push_options *o) { return (o && o->at > hh__now()) ? o->at : 0; }

int hh_client_push(hh_client *c, const char *klass, const char *args_json, const hh_push_options *opts,
                   char jid_out[HH_JID_SIZE]) {
    return hh_client_push_bulk(c, klass, &args_json, 1, opts, (char(*)[HH_JID_SIZE])jid_out);
}

static int push_bulk(hh_client *c, const char *klass, const char *const *args_json, size_t n,
                     const hh_push_options *caller_opts, char (*jids_out)[HH_JID_SIZE]);

/* The reason a push of these arguments is refused (run only once it was:
 * a push that succeeds parses nothing twice). */
static int explain_push(const char *klass, const char *const *args_json, size_t n, const hh_push_options *o) {
    char msg[512];
    json_error_t je;
    if (!klass || !*klass) return hh__fail(HH_ERR_INVALID, "push: the class is %s", klass ? "empty" : "missing");
    if (hh_name_check(HH_NAME_QUEUE, o->queue ? o->queue : "default", msg, sizeof(msg)) != HH_OK)
        return hh__fail(HH_ERR_INVALID, "push: %s", msg);
    if (o->retry == HH_RETRY_COUNT && o->retry_max < 0)
        return hh__fail(HH_ERR_INVALID, "push: retry_max %d with HH_RETRY_COUNT: want 0 or more", o->retry_max);
    if (o->extra_json) {
        json_t *extra = json_loads(o->extra_json, JSON_ALLOW_NUL, &je);
        int obj = json_is_object(extra);
        json_decref(extra);
        if (!extra)
            return hh__fail(HH_ERR_INVALID, "push: extra_json is not JSON: %s near line %d, column %d", je.text,
                            je.line, je.column);
        if (!obj) return hh__fail(HH_ERR_INVALID, "push: extra_json must be a JSON object");
    }
    for (size_t i = 0; i < n; i++) {
        json_t *args = json_loads(args_json[i] ? args_json[i] : "[]", JSON_ALLOW_NUL, &je);
        int arr = json_is_array(args);
        json_decref(args);
        const char *which = n > 1 ? "args_json[" : "args_json", *close = n > 1 ? "]" : "";
        char idx[32] = "";
        if (n > 1) snprintf(idx, sizeof(idx), "%zu", i);
        if (!args)
            return hh__fail(HH_ERR_INVALID, "push: %s%s%s is not JSON: %s near line %d, column %d", which, idx, close,
                            je.text, je.line, je.column);
        if (!arr) return hh__fail(HH_ERR_INVALID, "push: %s%s%s must be a JSON array", which, idx, close);
    }
    return hh__fail(HH_ERR_INVALID, "push: the class, queue or a key of extra_json is not valid UTF-8");
}

/* The reason for a failing client call, from its code and the connection. */
static int client_fail(hh_client *c, int rc, const char *what) {
    if (rc == HH_ERR_REDIS || rc == HH_ERR_REFUSED)
        return hh__fail(rc, "%s: %s: %s", what, hh_strerror(rc), hh__conn_error_or(&c->conn, "no reply"));
    return hh__fail(rc, "%s: %s", what, hh_strerror(rc));
}

int hh_client_push_bulk(hh_client *c, const char *klass, const char *const *args_json, size_t n,
                        const hh_push_options *caller_opts, char (*jids_out)[HH_JID_SIZE]) {
    if (!c || n == 0 || !args_json)
        return hh__fail(HH_ERR_INVALID, "push: %s",
                        !c           ? "the client is missing"
                            : n == 0 ? "no jobs (n is 0)"
                                     : "args_json is NULL");
    int rc = push_bulk(c, klass, args_json, n, caller_opts, jids_out);
    if (rc == HH_ERR_INVALID) {
        hh_push_options o;
        hh__push_options_read(&o, caller_opts);
        return explain_push(klass, args_json, n, &o);
    }
    return rc == HH_OK ? rc : client_fail(c, rc, "push");
}

static int push_bulk(hh_client *c, const char *klass, const char *const *args_json, size_t n,
                     const hh_push_options *caller_opts, char (*jids_out)[HH_JID_SIZE]) {
    hh_push_options copy; /* the caller's struct_size bytes on the defaults */
    hh__push_options_read(&copy, caller_opts);
    const hh_push_options *opts = &copy;
    int fast = bulk_fast(c, klass, args_json, n, opts, jids_out, effective_at(opts));
    if (fast != 1) return fast;
    json_t **jobs = calloc(n, sizeof(json_t *));
    if (!jobs) return HH_ERR_NOMEM;
    int rc = HH_OK;
    for (size_t i = 0; i < n && rc == HH_OK; i++) jobs[i] = simple_item(klass, args_json[i], opts, &rc);
    if (rc == HH_OK) rc = write_jobs(c, jobs, n, effective_at(opts), jids_out);
    for (size_t i = 0; i < n; i++) json_decref(jobs[i]);
    free(jobs);
    return rc;
}

int hh_client_push_item(hh_client *c, const char *item_json, char jid_out[HH_JID_SIZE]) {
    if (!c || !item_json) return hh__fail(HH_ERR_INVALID, "push_item: %s is missing", !c ? "the client" : "the item");
    json_error_t je;
    json_t *item = json_loads(item_json, JSON_ALLOW_NUL, &je);
    if (!item)
        return hh__fail(HH_ERR_INVALID, "push_item: the item is not JSON: %s near line %d, column %d", je.text, je.line,
                        je.column);
    if (!json_is_object(item)) {
        json_decref(item);
        return hh__fail(HH_ERR_INVALID, "push_item: the item must be a JSON object");
    }
    char why[128];
    double at = 0;
    json_t *job = normalize(item, &at, why, sizeof(why));
    json_decref(item);
    if (!job) return hh__fail(HH_ERR_INVALID, "push_item: %s", why);
    int rc = write_jobs(c, &job, 1, at, (char(*)[HH_JID_SIZE])jid_out);
    json_decref(job);
    return rc == HH_OK ? rc : client_fail(c, rc, "push_item");
}

/* -------------------------------------------------------------- reading */

static long long reply_ll(const redisReply *r) {
    if (!r) return 0;
    if (r->type == REDIS_REPLY_INTEGER) return r->integer;
    if (r->type == REDIS_REPLY_STRING) return strtoll(r->str, NULL, 10);
    return 0;
}

/* Latency of a queue from its oldest job's enqueued_at (either encoding). */
static double latency_of(const redisReply *tail, double now) {
    if (!tail || tail->type != REDIS_REPLY_ARRAY || tail->elements == 0) return 0;
    const redisReply *e = tail->element[0];
    if (e->type != REDIS_REPLY_STRING) return 0;
    int lossy; /* a job holding a bignum still has its latency */
    json_t *j = hh__json_load_payload(e->str, e->len, &lossy);
    double t = hh__payload_time(j, lossy, e->str, e->len, "enqueued_at");
    json_decref(j);
    return t > 0 ? now - t : 0;
}

static redisReply *members(hh_client *c, const char *name) {
    sds k = hh__key(&c->keys, name);
    redisReply *r = hh__conn_cmd(&c->conn, "SMEMBERS %s", k);
    sdsfree(k);
    int ok = r && r->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; ok && i < r->elements; i++) ok = r->element[i]->type == REDIS_REPLY_STRING;
    if (r && !ok) { /* the key named: "processes" is what to look at */
        hh__conn_set_error(&c->conn, "SMEMBERS %s: %s", name,
                           r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp((*(redisReply *const *)a)->str, (*(redisReply *const *)b)->str);
}

static int client_stats(hh_client *c, char **json_out);
int hh_client_stats(hh_client *c, char **json_out) {
    if (!c || !json_out) return hh__fail(HH_ERR_INVALID, "stats: %s is missing", !c ? "the client" : "json_out");
    int rc = client_stats(c, json_out);
    return rc == HH_OK ? rc : client_fail(c, rc, "stats");
}

static int client_stats(hh_client *c, char **json_out) {
    if (!c || !json_out) return HH_ERR_INVALID;
    *json_out = NULL;
    redisReply *procs = members(c, HH_K_PROCESSES), *queues = members(c, HH_K_QUEUES);
    if (!procs || !queues) {
        if (procs) freeReplyObject(procs);
        if (queues) freeReplyObject(queues);
        return HH_ERR_REDIS;
    }
    if (queues->elements) qsort(queues->element, queues->elements, sizeof(redisReply *), cmp_str);
    sds kp = hh__key(&c->keys, HH_K_STAT_PROCESSED), kf = hh__key(&c->keys, HH_K_STAT_FAILED);
    sds ks = hh__key(&c->keys, HH_K_SCHEDULE), kr = hh__key(&c->keys, HH_K_RETRY);
    sds kd = hh__key(&c->keys, HH_K_DEAD), kpr = hh__key(&c->keys, HH_K_PROCESSES);
    hh__pipe p;
    hh__pipe_begin(&p, &c->conn);
    hh__pipe_add(&p, "GET %s", kp);
    hh__pipe_add(&p, "GET %s", kf);
    hh__pipe_add(&p, "ZCARD %s", ks);
    hh__pipe_add(&p, "ZCARD %s", kr);
    hh__pipe_add(&p, "ZCARD %s", kd);
    hh__pipe_add(&p, "SCARD %s", kpr);
    for (size_t i = 0; i < procs->elements; i++) {
        sds k = hh__key_process(&c->keys, procs->element[i]->str);
        hh__pipe_add(&p, "HGET %s busy", k);
        sdsfree(k);
    }
    for (size_t i = 0; i < queues->elements; i++) {
        sds k = hh__key_queue(&c->keys, queues->element[i]->str);
        hh__pipe_add(&p, "LLEN %s", k);
        hh__pipe_add(&p, "LRANGE %s -1 -1", k);
        sdsfree(k);
    }
    sdsfree(kp), sdsfree(kf), sdsfree(ks), sdsfree(kr), sdsfree(kd), sdsfree(kpr);
    redisReply **r = hh__pipe_exec(&p);
    if (!r) {
        freeReplyObject(procs);
        freeReplyObject(queues);
        return HH_ERR_REDIS;
    }
    double now = hh__now();
    json_t *o = json_object(), *problems = json_object();
    static const struct {
        const char *field, *key, *type;
    } figures[] = {{"processed", HH_K_STAT_PROCESSED, "string"},
                   {"failed", HH_K_STAT_FAILED, "string"},
                   {"scheduled_size", HH_K_SCHEDULE, "zset"},
                   {"retry_size", HH_K_RETRY, "zset"},
                   {"dead_size", HH_K_DEAD, "zset"},
                   {"processes_size", HH_K_PROCESSES, "set"}};
    for (size_t i = 0; i < 6; i++) {
        /* a key of another type is no 0: null, and the problem named */
        sds k = hh__key(&c->keys, figures[i].key);
        json_t *why = hh__client_key_problem(c, k, figures[i].type, r[i]);
        sdsfree(k);
        json_object_set_new(o, figures[i].field, why ? json_null() : json_integer(reply_ll(r[i])));
        if (why) json_object_set_new(problems, figures[i].field, why);
    }
    long long busy = 0, enqueued = 0;
    size_t at = 6;
    for (size_t i = 0; i < procs->elements; i++) busy += reply_ll(r[at++]);
    json_t *qs = json_array();
    double default_latency = 0;
    for (size_t i = 0; i < queues->elements; i++) {
        sds k = hh__key_queue(&c->keys, queues->element[i]->str);
        json_t *why = hh__client_key_problem(c, k, "list", r[at]);
        sdsfree(k);
        long long size = why ? 0 : reply_ll(r[at]);
        double lat = why ? 0 : latency_of(r[at + 1], now);
        at += 2;
        enqueued += size;
        if (strcmp(queues->element[i]->str, "default") == 0) default_latency = lat;
        json_t *q = json_object();
        json_object_set_new(q, "name", json_string(queues->element[i]->str));
        json_object_set_new(q, "size", why ? json_null() : json_integer(size));
        json_object_set_new(q, "latency", json_real(lat));
        if (why) json_object_set_new(q, "error", why);
        json_array_append_new(qs, q);
    }
    json_object_set_new(o, "workers_size", json_integer(busy));
    json_object_set_new(o, "enqueued", json_integer(enqueued));
    json_object_set_new(o, "default_queue_latency", json_real(default_latency));
    json_object_set_new(o, "queues", qs);
    if (json_object_size(problems)) json_object_set(o, "errors", problems);
    json_decref(problems);
    hh__replies_free(r, p.n);
    freeReplyObject(procs);
    freeReplyObject(queues);
    *json_out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(o);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

static int client_processes(hh_client *c, char **json_out);
int hh_client_processes(hh_client *c, char **json_out) {
    if (!c || !json_out) return hh__fail(HH_ERR_INVALID, "processes: %s is missing", !c ? "the client" : "json_out");
    int rc = client_processes(c, json_out);
    return rc == HH_OK ? rc : client_fail(c, rc, "processes");
}

static int client_processes(hh_client *c, char **json_out) {
    if (!c || !json_out) return HH_ERR_INVALID;
    *json_out = NULL;
    redisReply *procs = members(c, HH_K_PROCESSES);
    if (!procs) return HH_ERR_REDIS;
    if (procs->elements) qsort(procs->element, procs->elements, sizeof(redisReply *), cmp_str);
    hh__pipe p;
    hh__pipe_begin(&p, &c->conn);
    for (size_t i = 0; i < procs->elements; i++) {
        sds k = hh__key_process(&c->keys, procs->element[i]->str);
        hh__pipe_add(&p, "HMGET %s info busy beat quiet rss rtt_us concurrency", k);
        sdsfree(k);
    }
    redisReply **r = hh__pipe_exec(&p);
    if (!r && procs->elements) {
        freeReplyObject(procs);
        return HH_ERR_REDIS;
    }
    double now = hh__now();
    json_t *arr = json_array();
    for (size_t i = 0; i < procs->elements; i++) {
        redisReply *h = r[i];
        if (h->type != REDIS_REPLY_ARRAY || h->elements < 7 || h->element[0]->type != REDIS_REPLY_STRING) {
            /* ProcessSet.new prunes members whose hash expired. */
            sds pk = hh__key(&c->keys, HH_K_PROCESSES);
            redisReply *x = hh__conn_cmd(&c->conn, "SREM %s %s", pk, procs->element[i]->str);
            if (x) freeReplyObject(x);
            sdsfree(pk);
            continue;
        }
        json_t *info = json_loadb(h->element[0]->str, h->element[0]->len, 0, NULL);
        if (!json_is_object(info)) {
            json_decref(info);
            continue;
        }
        json_t *o = json_object();
        const char *fields[] = {"identity", "hostname", "pid", "tag", "queues", "labels", "started_at", "version"};
        for (size_t f = 0; f < sizeof(fields) / sizeof(*fields); f++) {
            json_t *v = json_object_get(info, fields[f]);
            if (v) json_object_set(o, fields[f], v);
        }
        json_t *conc = json_object_get(info, "concurrency");
        long long cc =
            h->element[6]->type == REDIS_REPLY_STRING ? reply_ll(h->element[6]) : (conc ? json_integer_value(conc) : 0);
        json_object_set_new(o, "concurrency", json_integer(cc));
        json_object_set_new(o, "busy", json_integer(reply_ll(h->element[1])));
        double beat = h->element[2]->type == REDIS_REPLY_STRING ? hh__strtod_c(h->element[2]->str, NULL) : 0;
        json_object_set_new(o, "beat", json_real(beat));
        json_object_set_new(o, "beat_age", json_real(beat > 0 ? now - beat : 0));
        json_object_set_new(
            o, "quiet",
            json_boolean(h->element[3]->type == REDIS_REPLY_STRING && strcmp(h->element[3]->str, "true") == 0));
        json_object_set_new(o, "rss", json_integer(reply_ll(h->element[4])));
        json_object_set_new(o, "rtt_us", json_integer(reply_ll(h->element[5])));
        json_array_append_new(arr, o);
        json_decref(info);
    }
    hh__replies_free(r, p.n);
    freeReplyObject(procs);
    /* 15 digits: beat to 10 us without 17 digits' binary noise (as /stats) */
    *json_out = json_dumps(arr, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(arr);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

static int client_signal(hh_client *c, const char *identity, const char *signal);
int hh_client_signal(hh_client *c, const char *identity, const char *signal) {
    if (!c || !identity || !signal)
        return hh__fail(HH_ERR_INVALID, "signal: %s is missing",
                        !c              ? "the client"
                            : !identity ? "the identity"
                                        : "the signal");
    int rc = client_signal(c, identity, signal);
    if (rc == HH_ERR_INVALID) return hh__fail(rc, "signal %s: want TSTP, TERM or TTIN", signal);
    if (rc == HH_ERR_NOTFOUND)
        return hh__fail(rc, "signal: no live process %s (not in processes, or its heartbeat expired)", identity);
    return rc == HH_OK ? rc : client_fail(c, rc, "signal");
}

static int client_signal(hh_client *c, const char *identity, const char *signal) {
    if (!c || !identity || !signal) return HH_ERR_INVALID;
    if (strcmp(signal, "TSTP") && strcmp(signal, "TERM") && strcmp(signal, "TTIN")) return HH_ERR_INVALID;
    sds pk = hh__key(&c->keys, HH_K_PROCESSES), hk = hh__key_process(&c->keys, identity);
    sds sk = hh__key_signals(&c->keys, identity);
    int rc = HH_ERR_REDIS;
    hh__pipe p;
    hh__pipe_begin(&p, &c->conn);
    hh__pipe_add(&p, "SISMEMBER %s %s", pk, identity);
    hh__pipe_add(&p, "EXISTS %s", hk);
    redisReply **r = hh__pipe_exec(&p);
    if (r) {
        int live = reply_ll(r[0]) == 1 && reply_ll(r[1]) == 1;
        hh__replies_free(r, p.n);
        rc = HH_ERR_NOTFOUND;
        if (live) {
            hh__pipe_begin(&p, &c->conn);
            hh__pipe_add(&p, "MULTI");
            hh__pipe_add(&p, "LPUSH %s %s", sk, signal);
            hh__pipe_add(&p, "EXPIRE %s 60", sk);
            hh__pipe_add(&p, "EXEC");
            r = hh__pipe_exec(&p);
            char why[256];
            rc = r && hh__tx_check(r, 0, 3, why, sizeof(why), NULL) == 0 ? HH_OK : HH_ERR_REDIS;
            if (r && rc != HH_OK) hh__conn_set_error(&c->conn, "%s", why);
            hh__replies_free(r, p.n);
        }
    }
    sdsfree(pk), sdsfree(hk), sdsfree(sk);
    return rc;
}

static int client_kill(hh_client *c, const char *payload, size_t len, double dead_timeout, long dead_max_jobs);
int hh_client_kill(hh_client *c, const char *payload, size_t len, double dead_timeout, long dead_max_jobs) {
    if (!c || !payload) return hh__fail(HH_ERR_INVALID, "kill: %s is missing", !c ? "the client" : "the payload");
    int rc = client_kill(c, payload, len, dead_timeout, dead_max_jobs);
    return rc == HH_OK ? rc : client_fail(c, rc, "kill");
}

static int client_kill(hh_client *c, const char *payload, size_t len, double dead_timeout, long dead_max_jobs) {
    if (!c || !payload) return HH_ERR_INVALID;
    hh__outcome o = {HH_OUTCOME_DEAD, HH_SOURCE_NONE, NULL,         NULL, 0, payload, len,
                     hh__now(),       dead_timeout,   dead_max_jobs};
    char why[256];
    if (hh__outcome_write(&c->conn, &c->keys, &o, why, sizeof(why)) == 1) return HH_OK;
    hh__conn_set_error(&c->conn, "%s", why);
    return HH_ERR_REDIS;
}

hh__conn *hh__client_conn(hh_client *c) { return &c->conn; }
const hh__keys *hh__client_keys(const hh_client *c) { return &c->keys; }
hh_timestamps hh__client_timestamps(const hh_client *c) { return c->ts; }

int hh__client_cron_layout(const hh_client *c) { return c->cron_layout; }

int hh_cron_use_layout(hh_client *c, int layout) {
    if (!c) return hh__fail(HH_ERR_INVALID, "hh_cron_use_layout: NULL client");
    if (layout < 0 || layout > 2)
        return hh__fail(HH_ERR_INVALID, "layout %d: want 0 (the one that exists), 1 or 2", layout);
    c->cron_layout = layout;
    return HH_OK;
}

json_t *hh__client_key_problem(hh_client *c, const char *key, const char *want, const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ERROR) return NULL;
    /* the key's type says what a client wrote there; one more round trip,
     * on this rare path only */
    redisReply *t = strncmp(r->str, "WRONGTYPE", 9) ? NULL : hh__conn_cmd(hh__client_conn(c), "TYPE %s", key);
    const char *type = t && t->type == REDIS_REPLY_STATUS ? t->str : NULL;
    json_t *why =
        type ? json_sprintf("key %s holds a %s, not a %s", key, type, want) : json_sprintf("key %s: %s", key, r->str);
    if (!why) /* a key name that is not UTF-8 (JSON holds only UTF-8) */
        why = type ? json_sprintf("the key holds a %s, not a %s", type, want) : json_sprintf("%s", r->str);
    if (t) freeReplyObject(t);
    return why;
}
