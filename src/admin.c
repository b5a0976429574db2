/* admin.c -- job management of queues and running jobs on a client: what
 * Sidekiq's Ruby API (6.4 lib/sidekiq/api.rb: Queue, Queue#clear, WorkSet)
 * and its Web UI show and do, for `hiredhand queues`, `busy` and
 * `jobs find` (which also looks in the sorted sets, through jobset.c).
 *
 * Keys read: queues (SMEMBERS), queue:<q> (LLEN, LRANGE), processes
 * (SMEMBERS), <id> (EXISTS), <id>:work and <id>:workers (HGETALL),
 * hiredhand:inprogress:<id>|<q> (SCAN, LRANGE) for jobs find.
 * stat:processed:<date>, stat:failed:<date> (GET) and INFO for the history;
 * j|<date>|<minute> (HGETALL, Sidekiq 8.x's then 7.x's) for the metrics.
 * Keys written: queue:<q> (UNLINK) and queues (SREM) for a queue clear,
 * queue:<q> (LREM 1) for the delete of one job.
 * Queues are read in pages of HH_ADMIN_PAGE entries, never whole. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "admin.h"
#include "error.h"
#include "job.h"
#include "util.h"

/* The class Sidekiq's Web UI shows (Job#display_class: Active Job's
 * wrapped class, a mailer's Mailer#method...): a new JSON string, dflt
 * when the payload has no class. */
static json_t *shown_class(const json_t *item, const char *dflt) {
    json_t *k = json_is_object(item) ? hh__item_web_class(item) : NULL;
    return k ? k : json_string(dflt);
}

#define HH_QUEUE_HEAD 10 /* jobs whose classes hh_queues_list() counts */

/* -------------------------------------------------------------- queues */

static int cmp_reply_str(const void *a, const void *b) {
    return strcmp((*(redisReply *const *)a)->str, (*(redisReply *const *)b)->str);
}

/* SMEMBERS of a set, checked element by element and sorted. */
static redisReply *sorted_members(hh_client *c, const char *name) {
    sds k = hh__key(hh__client_keys(c), name);
    redisReply *r = hh__conn_cmd(hh__client_conn(c), "SMEMBERS %s", k);
    sdsfree(k);
    int ok = r && r->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; ok && i < r->elements; i++) ok = r->element[i]->type == REDIS_REPLY_STRING;
    if (!ok) {
        hh__admin_bad_reply(c, r, "SMEMBERS");
        if (r) freeReplyObject(r);
        return NULL;
    }
    if (r->elements) qsort(r->element, r->elements, sizeof(redisReply *), cmp_reply_str);
    return r;
}

static long long int_reply(const redisReply *r, int *ok) {
    if (r && r->type == REDIS_REPLY_INTEGER) return r->integer;
    *ok = 0;
    return 0;
}

/* Queue#latency from the entry that runs next: now - enqueued_at (either
 * encoding), 0 when there is none or it has none. */
static double latency_of(const redisReply *e, double now) {
    if (!e || e->type != REDIS_REPLY_STRING) return 0;
    int lossy;
    json_t *j = hh__json_load_payload(e->str, e->len, &lossy);
    double t = hh__payload_time(j, lossy, e->str, e->len, "enqueued_at");
    json_decref(j);
    return t > 0 ? now - t : 0;
}

static char *dump_out(json_t *v) {
    char *s = hh__json_dump(v); /* key order kept, reals as payloads are written */
    json_decref(v);
    return s;
}

static int queues_list_run(hh_client *c, char **json_out) {
    if (!c || !json_out) return HH_ERR_INVALID;
    *json_out = NULL;
    redisReply *qs = sorted_members(c, HH_K_QUEUES);
    if (!qs) return HH_ERR_REDIS;
    json_t *arr = json_array();
    int rc = HH_OK;
    /* A pipeline per page of queues: a few thousand queues never make one
     * reply of every queue's head at once. */
    for (size_t from = 0; from < qs->elements && rc == HH_OK; from += 100) {
        size_t to = from + 100 < qs->elements ? from + 100 : qs->elements;
        hh__pipe p;
        hh__pipe_begin(&p, hh__client_conn(c));
        for (size_t i = from; i < to; i++) {
            sds k = hh__key_queue(hh__client_keys(c), qs->element[i]->str);
            hh__pipe_add(&p, "LLEN %s", k);
            hh__pipe_add(&p, "LRANGE %s %d -1", k, -HH_QUEUE_HEAD);
            sdsfree(k);
        }
        redisReply **r = hh__pipe_exec(&p);
        if (!r) {
            rc = HH_ERR_REDIS;
            break;
        }
        double now = hh__now();
        for (size_t i = from; i < to; i++) {
            const redisReply *len = r[2 * (i - from)], *head = r[2 * (i - from) + 1];
            int ok = 1;
            long long size = int_reply(len, &ok);
            if (!ok && len->type == REDIS_REPLY_ERROR) {
                /* one queue key a client wrote with another type: that
                 * queue shows the problem, the others are listed */
                sds k = hh__key_queue(hh__client_keys(c), qs->element[i]->str);
                json_t *q = json_object();
                json_object_set_new(q, "name", json_string(qs->element[i]->str));
                json_object_set_new(q, "size", json_null());
                json_object_set_new(q, "latency", json_real(0));
                json_object_set_new(q, "paused", json_false());
                json_object_set_new(q, "head", json_object());
                json_object_set_new(q, "error", hh__client_key_problem(c, k, "list", len));
                json_array_append_new(arr, q);
                sdsfree(k);
                continue;
            }
            if (!ok || head->type != REDIS_REPLY_ARRAY) {
                rc = hh__admin_bad_reply(c, !ok ? len : head, !ok ? "LLEN" : "LRANGE");
                break;
            }
            json_t *classes = json_object();
            for (size_t j = head->elements; j-- > 0;) {
                const redisReply *e = head->element[j];
                if (e->type != REDIS_REPLY_STRING) continue;
                int lossy;
                json_t *it = hh__json_load_payload(e->str, e->len, &lossy);
                json_t *shown = json_is_object(it) ? shown_class(it, "?") : json_string("(not a job)");
                const char *k = shown ? json_string_value(shown) : "?";
                json_t *n = json_object_get(classes, k);
                json_object_set_new(classes, k, json_integer(n ? json_integer_value(n) + 1 : 1));
                json_decref(shown);
                json_decref(it);
            }
            json_t *q = json_object();
            json_object_set_new(q, "name", json_string(qs->element[i]->str));
            json_object_set_new(q, "size", json_integer(size));
            json_object_set_new(q, "latency",
                                json_real(head->elements ? latency_of(head->element[head->elements - 1], now) : 0));
            json_object_set_new(q, "paused", json_false()); /* Sidekiq Pro only; 6.4's Queue#paused? */
            json_object_set_new(q, "head", classes);
            json_array_append_new(arr, q);
        }
        hh__replies_free(r, p.n);
    }
    freeReplyObject(qs);
    if (rc != HH_OK) {
        json_decref(arr);
        return rc;
    }
    *json_out = dump_out(arr);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_queues_list(hh_client *c, char **json_out) {
    const char *bad = !c ? "the client is missing" : !json_out ? "json_out is NULL" : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "queues list: %s", bad);
    return hh__admin_fail(c, queues_list_run(c, json_out), "queues list");
}

/* The job object for a list entry: its item parsed when it can be without
 * loss, else the payload as a string. An entry whose bytes are not UTF-8
 * (JSON cannot carry them, and a fetch buries it as no job) is shown as
 * a browser decodes it: "payload", "jid" and "class" read from its text
 * with U+FFFD for each such byte, its exact bytes in "payload_base64" and
 * their number in "bytes". */
static json_t *job_json(const char *s, size_t len) {
    json_t *o = json_object();
    int lossy, lossy2;
    json_t *it = hh__json_load_payload(s, len, &lossy), *seen = it;
    char *fixed = NULL;
    size_t flen = len;
    if (!it && !hh__utf8_valid(s, len) && (fixed = hh__utf8_replace_len(s, len, &flen)) != NULL)
        seen = hh__json_load_payload(fixed, flen, &lossy2);
    json_object_set_new(o, "jid", json_string(json_is_object(seen) ? hh__admin_str(seen, "jid", "") : ""));
    json_object_set_new(o, "class", shown_class(seen, ""));
    double ea = json_is_object(it) ? hh__payload_time(it, lossy, s, len, "enqueued_at") : 0;
    json_object_set_new(o, "enqueued_at", ea > 0 ? json_real(ea) : json_null());
    if (json_is_object(it) && !lossy) json_object_set(o, "item", it);
    else json_object_set_new(o, "payload", json_stringn(fixed ? fixed : s, flen));
    if (fixed) {
        json_object_set_new(o, "payload_base64", hh__json_base64(s, len));
        json_object_set_new(o, "bytes", json_integer((json_int_t)len));
    }
    /* not JSON, or no object: what a fetch would bury as not a valid job */
    if (!json_is_object(it)) json_object_set_new(o, "valid", json_false());
    if (seen != it) json_decref(seen);
    json_decref(it);
    free(fixed);
    return o;
}

/* A queue that exists may have any name a client wrote: control
 * characters and '|' included (hh_name_check() keeps them out of the
 * queues hiredhand fetches from, not out of what it can show or clear),
 * and the empty name too: a job whose "queue" is "" lands in `queue:`,
 * which only these reach. */
static int existing_queue_name(const char *name) { return name && strlen(name) <= HH_NAME_QUEUE_MAX; }

static int queue_show_run(hh_client *c, const char *name, size_t n, char **json_out) {
    if (!c || !json_out || !existing_queue_name(name) || n > 100000) return HH_ERR_INVALID;
    *json_out = NULL;
    sds k = hh__key_queue(hh__client_keys(c), name);
    hh__pipe p;
    hh__pipe_begin(&p, hh__client_conn(c));
    hh__pipe_add(&p, "LLEN %s", k);
    hh__pipe_add(&p, "LRANGE %s -1 -1", k);
    hh__pipe_add(&p, "LRANGE %s %lld -1", k, -(long long)(n ? n : 1));
    sdsfree(k);
    redisReply **r = hh__pipe_exec(&p);
    if (!r) return HH_ERR_REDIS;
    int ok = 1, rc = HH_OK;
    long long size = int_reply(r[0], &ok);
    if (!ok || r[1]->type != REDIS_REPLY_ARRAY || r[2]->type != REDIS_REPLY_ARRAY) {
        rc = hh__admin_bad_reply(c, !ok ? r[0] : r[1]->type != REDIS_REPLY_ARRAY ? r[1] : r[2], "LLEN/LRANGE");
        hh__replies_free(r, p.n);
        return rc;
    }
    json_t *o = json_object(), *jobs = json_array();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "size", json_integer(size));
    json_object_set_new(o, "latency", json_real(r[1]->elements ? latency_of(r[1]->element[0], hh__now()) : 0));
    for (size_t j = n ? r[2]->elements : 0; j-- > 0;) { /* the next to run first */
        const redisReply *e = r[2]->element[j];
        if (e->type == REDIS_REPLY_STRING) json_array_append_new(jobs, job_json(e->str, e->len));
    }
    json_object_set_new(o, "jobs", jobs);
    hh__replies_free(r, p.n);
    *json_out = dump_out(o);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_queue_show(hh_client *c, const char *name, size_t n, char **json_out) {
    const char *bad = !c             ? "the client is missing"
        : !json_out                  ? "json_out is NULL"
        : !name                      ? "the queue name is NULL"
        : !existing_queue_name(name) ? "the queue name is over HH_NAME_QUEUE_MAX bytes"
        : n > 100000                 ? "n is over 100000 jobs"
                                     : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "queue show: %s", bad);
    return hh__admin_fail(c, queue_show_run(c, name, n, json_out), "queue show");
}

static int queue_clear_run(hh_client *c, const char *name, long long *removed) {
    if (!c || !existing_queue_name(name)) return HH_ERR_INVALID;
    sds k = hh__key_queue(hh__client_keys(c), name);
    int rc = k ? hh__admin_clear_key(c, "LLEN", k, name, removed) : HH_ERR_NOMEM;
    sdsfree(k);
    return rc;
}

int hh_queue_clear(hh_client *c, const char *name, long long *removed) {
    const char *bad = !c             ? "the client is missing"
        : !name                      ? "the queue name is NULL"
        : !existing_queue_name(name) ? "the queue name is over HH_NAME_QUEUE_MAX bytes"
                                     : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "queue clear: %s", bad);
    return hh__admin_fail(c, queue_clear_run(c, name, removed), "queue clear");
}

#define HH_QUEUE_PAGE_MAX 1000 /* jobs one hh_queue_page call reads */

static int queue_page_run(hh_client *c, const char *name, long long start, size_t count, char **json_out) {
    if (!c || !json_out || !existing_queue_name(name) || start < 0 || !count || count > HH_QUEUE_PAGE_MAX)
        return HH_ERR_INVALID;
    *json_out = NULL;
    sds k = hh__key_queue(hh__client_keys(c), name);
    /* LPUSH adds at the head and BRPOP takes from the tail: rank 0, the
     * next to run, is index -1 */
    long long hi = -1 - start, lo = -(start + (long long)count);
    hh__pipe p;
    hh__pipe_begin(&p, hh__client_conn(c));
    hh__pipe_add(&p, "LLEN %s", k);
    hh__pipe_add(&p, "LRANGE %s -1 -1", k);
    hh__pipe_add(&p, "LRANGE %s %lld %lld", k, lo, hi);
    sdsfree(k);
    redisReply **r = hh__pipe_exec(&p);
    if (!r) return HH_ERR_REDIS;
    int ok = 1, rc = HH_OK;
    long long size = int_reply(r[0], &ok);
    if (!ok || r[1]->type != REDIS_REPLY_ARRAY || r[2]->type != REDIS_REPLY_ARRAY) {
        rc = hh__admin_bad_reply(c, !ok ? r[0] : r[1]->type != REDIS_REPLY_ARRAY ? r[1] : r[2], "LLEN/LRANGE");
        hh__replies_free(r, p.n);
        return rc;
    }
    json_t *o = json_object(), *jobs = json_array();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "size", json_integer(size));
    json_object_set_new(o, "latency", json_real(r[1]->elements ? latency_of(r[1]->element[0], hh__now()) : 0));
    json_object_set_new(o, "start", json_integer(start));
    for (size_t j = r[2]->elements; j-- > 0;) { /* the next to run first */
        const redisReply *e = r[2]->element[j];
        if (e->type != REDIS_REPLY_STRING) continue;
        json_t *job = job_json(e->str, e->len);
        if (job && !json_object_get(job, "payload")) {
            json_t *raw = json_stringn(e->str, e->len);
            if (raw) json_object_set_new(job, "payload", raw);
        }
        json_array_append_new(jobs, job);
    }
    json_object_set_new(o, "jobs", jobs);
    hh__replies_free(r, p.n);
    *json_out = dump_out(o);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_queue_page(hh_client *c, const char *name, long long start, size_t count, char **json_out) {
    const char *bad = !c                      ? "the client is missing"
        : !json_out                           ? "json_out is NULL"
        : !name                               ? "the queue name is NULL"
        : !existing_queue_name(name)          ? "the queue name is over HH_NAME_QUEUE_MAX bytes"
        : start < 0                           ? "start is negative"
        : !count || count > HH_QUEUE_PAGE_MAX ? "count is not 1..1000"
                                              : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "queue page: %s", bad);
    return hh__admin_fail(c, queue_page_run(c, name, start, count, json_out), "queue page");
}

static int queue_delete_run(hh_client *c, const char *name, const char *payload, size_t len) {
    if (!c || !existing_queue_name(name) || !payload || !len) return HH_ERR_INVALID;
    sds k = hh__key_queue(hh__client_keys(c), name);
    redisReply *r = hh__conn_cmd(hh__client_conn(c), "LREM %s 1 %b", k, payload, len);
    int rc = HH_OK;
    if (!r || r->type != REDIS_REPLY_INTEGER) rc = hh__admin_bad_key_reply(c, r, "LREM", k, "list");
    else if (r->integer == 0) rc = HH_ERR_NOTFOUND;
    if (r) freeReplyObject(r);
    sdsfree(k);
    return rc;
}

int hh_queue_delete_job(hh_client *c, const char *name, const char *payload, size_t len) {
    const char *bad = !c             ? "the client is missing"
        : !name                      ? "the queue name is NULL"
        : !existing_queue_name(name) ? "the queue name is over HH_NAME_QUEUE_MAX bytes"
        : !payload || !len           ? "the payload is empty"
                                     : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "queue delete: %s", bad);
    return hh__admin_fail(c, queue_delete_run(c, name, payload, len), "queue delete");
}

/* ------------------------------------------------------------ metrics */

#define HH_METRICS_MAX_MINUTES 480

/* Adds one per-minute hash (field "<Class>|p|f|ms" => integer) into per. */
static void metrics_add(json_t *per, const redisReply *h) {
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *f = h->element[i], *v = h->element[i + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        const char *bar = NULL;
        for (size_t j = f->len; j-- > 0;)
            if (f->str[j] == '|') {
                bar = f->str + j;
                break;
            }
        if (!bar) continue;
        const char *kind = bar + 1;
        size_t klen = (size_t)(f->str + f->len - kind);
        const char *field = klen == 1 && *kind == 'p' ? "processed"
            : klen == 1 && *kind == 'f'               ? "failed"
            : klen == 2 && !memcmp(kind, "ms", 2)     ? "ms"
                                                      : NULL;
        if (!field) continue;
        json_t *name = json_stringn(f->str, (size_t)(bar - f->str));
        if (!name) continue; /* a class that is not UTF-8: not shown */
        json_t *row = json_object_get(per, json_string_value(name));
        if (!row) {
            row = json_pack("{s:O,s:I,s:I,s:I}", "class", name, "processed", (json_int_t)0, "failed", (json_int_t)0,
                            "ms", (json_int_t)0);
            json_object_set_new(per, json_string_value(name), row);
        }
        json_decref(name);
        json_object_set_new(row, field,
                            json_integer(json_integer_value(json_object_get(row, field)) + strtoll(v->str, NULL, 10)));
    }
}

static int cmp_processed(const void *a, const void *b) {
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "processed"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "processed"));
    return x < y ? 1 : x > y ? -1 : 0;
}

static int metrics_run(hh_client *c, int minutes, char **json_out) {
    if (!c || !json_out || minutes < 1 || minutes > HH_METRICS_MAX_MINUTES) return HH_ERR_INVALID;
    *json_out = NULL;
    time_t now = time(NULL);
    hh__pipe p;
    hh__pipe_begin(&p, hh__client_conn(c));
    for (int m = 0; m < minutes; m++) {
        sds k8 = hh__key_jm_counts8(hh__client_keys(c), now - 60 * m);
        sds k7 = hh__key_jm_counts7(hh__client_keys(c), now - 60 * m);
        hh__pipe_add(&p, "HGETALL %s", k8);
        hh__pipe_add(&p, "HGETALL %s", k7);
        sdsfree(k8);
        sdsfree(k7);
    }
    redisReply **r = hh__pipe_exec(&p);
    if (!r) return HH_ERR_REDIS;
    json_t *per = json_object();
    for (int m = 0; m < minutes; m++) {
        const redisReply *h8 = r[2 * m], *h7 = r[2 * m + 1];
        if (h8->type == REDIS_REPLY_ARRAY && h8->elements) metrics_add(per, h8);
        else if (h7->type == REDIS_REPLY_ARRAY) metrics_add(per, h7);
    }
    hh__replies_free(r, p.n);
    size_t n = json_object_size(per), i = 0;
    json_t **rows = calloc(n ? n : 1, sizeof *rows), *row;
    const char *name;
    if (!rows) {
        json_decref(per);
        return HH_ERR_NOMEM;
    }
    json_object_foreach(per, name, row) {
        json_int_t ok =
            json_integer_value(json_object_get(row, "processed")) - json_integer_value(json_object_get(row, "failed"));
        json_object_set_new(
            row, "avg_ms", json_real(ok > 0 ? (double)json_integer_value(json_object_get(row, "ms")) / (double)ok : 0));
        rows[i++] = row;
    }
    qsort(rows, n, sizeof *rows, cmp_processed);
    json_t *arr = json_array();
    for (i = 0; i < n; i++) json_array_append(arr, rows[i]);
    free(rows);
    json_decref(per);
    *json_out = dump_out(json_pack("{s:i,s:o}", "minutes", minutes, "classes", arr));
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_job_metrics_summary(hh_client *c, int minutes, char **json_out) {
    const char *bad = !c                                  ? "the client is missing"
        : !json_out                                       ? "json_out is NULL"
        : minutes < 1 || minutes > HH_METRICS_MAX_MINUTES ? "minutes is not 1..480"
                                                          : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "job metrics summary: %s", bad);
    return hh__admin_fail(c, metrics_run(c, minutes, json_out), "job metrics summary");
}

/* ------------------------------------------------------------ history */

#define HH_HISTORY_MAX_DAYS 180

/* The value of INFO's "field:" line as a new JSON string, or NULL. */
static json_t *info_field(const char *info, const char *field) {
    size_t n = strlen(field);
    for (const char *l = info; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (!strncmp(l, field, n) && l[n] == ':') {
            const char *v = l + n + 1;
            size_t vl = strcspn(v, "\r\n");
            return json_stringn(v, vl);
        }
    }
    return NULL;
}

static int stats_history_run(hh_client *c, int days, char **json_out) {
    if (!c || !json_out || days < 1 || days > HH_HISTORY_MAX_DAYS) return HH_ERR_INVALID;
    *json_out = NULL;
    double now = hh__now();
    hh__pipe p;
    hh__pipe_begin(&p, hh__client_conn(c));
    for (int d = 0; d < days; d++) {
        sds kp = hh__key_stat_daily(hh__client_keys(c), "stat:processed", now - 86400.0 * d);
        sds kf = hh__key_stat_daily(hh__client_keys(c), "stat:failed", now - 86400.0 * d);
        hh__pipe_add(&p, "GET %s", kp);
        hh__pipe_add(&p, "GET %s", kf);
        sdsfree(kp);
        sdsfree(kf);
    }
    hh__pipe_add(&p, "INFO");
    redisReply **r = hh__pipe_exec(&p);
    if (!r) return HH_ERR_REDIS;
    json_t *o = json_object(), *hist = json_array(), *redis = json_object();
    for (int d = 0; d < days; d++) {
        char date[16];
        time_t t = (time_t)(now - 86400.0 * d);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(date, sizeof date, "%Y-%m-%d", &tm);
        long long v[2] = {0, 0};
        for (int j = 0; j < 2; j++) {
            const redisReply *e = r[2 * d + j];
            if (e->type == REDIS_REPLY_STRING) {
                char *end;
                long long x = strtoll(e->str, &end, 10);
                if (end != e->str && !*end) v[j] = x;
            }
        }
        json_array_append_new(
            hist, json_pack("{s:s,s:I,s:I}", "date", date, "processed", (json_int_t)v[0], "failed", (json_int_t)v[1]));
    }
    const redisReply *info = r[2 * days];
    if (info->type == REDIS_REPLY_STRING || info->type == REDIS_REPLY_STATUS) {
        static const char *const fields[] = {"redis_version", "uptime_in_days", "connected_clients",
                                             "used_memory_human", "used_memory_peak_human"};
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            json_t *v = info_field(info->str, fields[i]);
            if (v) json_object_set_new(redis, fields[i], v);
        }
    }
    json_object_set_new(o, "history", hist);
    json_object_set_new(o, "redis", redis);
    hh__replies_free(r, p.n);
    *json_out = dump_out(o);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_stats_history(hh_client *c, int days, char **json_out) {
    const char *bad = !c                         ? "the client is missing"
        : !json_out                              ? "json_out is NULL"
        : days < 1 || days > HH_HISTORY_MAX_DAYS ? "days is not 1..180"
                                                 : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "stats history: %s", bad);
    return hh__admin_fail(c, stats_history_run(c, days, json_out), "stats history");
}

/* ------------------------------------------------------- running jobs */

/* Calls fn for each running job of each live process: the <id>:work hash
 * (hiredhand, Sidekiq 6.5+), else <id>:workers (Sidekiq 6.4). The value
 * is {"queue","payload" (a JSON string, or an object from old
 * versions),"run_at"}. */
typedef void (*work_fn)(const char *identity, const char *thread, json_t *work, json_t *payload, void *udata);

static int each_work(hh_client *c, work_fn fn, void *udata) {
    redisReply *procs = sorted_members(c, HH_K_PROCESSES);
    if (!procs) return HH_ERR_REDIS;
    int rc = HH_OK;
    for (size_t i = 0; i < procs->elements && rc == HH_OK; i++) {
        const char *id = procs->element[i]->str;
        sds hk = hh__key_process(hh__client_keys(c), id), wk = hh__key_work(hh__client_keys(c), id),
            wsk = hh__key_workers(hh__client_keys(c), id);
        hh__pipe p;
        hh__pipe_begin(&p, hh__client_conn(c));
        hh__pipe_add(&p, "EXISTS %s", hk);
        hh__pipe_add(&p, "HGETALL %s", wk);
        hh__pipe_add(&p, "HGETALL %s", wsk);
        sdsfree(hk), sdsfree(wk), sdsfree(wsk);
        redisReply **r = hh__pipe_exec(&p);
        if (!r) {
            rc = HH_ERR_REDIS;
            break;
        }
        int ok = 1;
        long long live = int_reply(r[0], &ok);
        if (!ok || !hh__admin_pairs_ok(r[1]) || !hh__admin_pairs_ok(r[2])) {
            rc = hh__admin_bad_reply(c, !ok ? r[0] : !hh__admin_pairs_ok(r[1]) ? r[1] : r[2], "EXISTS/HGETALL");
        } else if (live) {
            const redisReply *h = r[1]->elements ? r[1] : r[2];
            for (size_t j = 0; j + 1 < h->elements; j += 2) {
                json_t *w = json_loadb(h->element[j + 1]->str, h->element[j + 1]->len, JSON_ALLOW_NUL, NULL);
                if (!json_is_object(w)) {
                    json_decref(w);
                    continue;
                }
                json_t *pl = json_object_get(w, "payload"), *item = NULL;
                int lossy;
                if (json_is_string(pl))
                    item = hh__json_load_payload(json_string_value(pl), json_string_length(pl), &lossy);
                else if (json_is_object(pl)) item = json_incref(pl);
                fn(id, h->element[j]->str, w, item, udata);
                json_decref(item);
                json_decref(w);
            }
        }
        hh__replies_free(r, p.n);
    }
    freeReplyObject(procs);
    return rc;
}

typedef struct busy_ctx {
    json_t *arr;
    double now;
    const char *jid; /* hh_jobs_find: only this jid */
} busy_ctx;

static void busy_row(const char *identity, const char *thread, json_t *w, json_t *item, void *udata) {
    busy_ctx *b = udata;
    const char *jid = json_is_object(item) ? hh__admin_str(item, "jid", "") : "";
    if (b->jid && strcmp(jid, b->jid) != 0) return;
    json_t *o = json_object();
    if (b->jid) json_object_set_new(o, "where", json_string("running"));
    json_object_set_new(o, "identity", json_string(identity));
    json_object_set_new(o, "thread", json_string(thread));
    json_object_set_new(o, "queue", json_string(hh__admin_str(w, "queue", "")));
    if (!b->jid) {
        json_object_set_new(o, "class", shown_class(item, ""));
        json_object_set_new(o, "jid", json_string(jid));
    }
    json_t *ra = json_object_get(w, "run_at");
    double run_at = json_is_number(ra) ? json_number_value(ra) : 0;
    json_object_set_new(o, "run_at", json_real(run_at));
    json_object_set_new(o, "run_time", json_real(run_at > 0 ? b->now - run_at : 0));
    json_array_append_new(b->arr, o);
}

static int cmp_run_at(const void *a, const void *b) {
    double x = json_real_value(json_object_get(*(json_t *const *)a, "run_at"));
    double y = json_real_value(json_object_get(*(json_t *const *)b, "run_at"));
    return x < y ? -1 : x > y;
}

static int busy_run(hh_client *c, char **json_out) {
    if (!c || !json_out) return HH_ERR_INVALID;
    *json_out = NULL;
    busy_ctx b = {json_array(), hh__now(), NULL};
    int rc = each_work(c, busy_row, &b);
    if (rc != HH_OK) {
        json_decref(b.arr);
        return rc;
    }
    /* WorkSet#each: sorted by run_at. */
    size_t n = json_array_size(b.arr);
    json_t **rows = n ? malloc(n * sizeof(*rows)) : NULL;
    if (n && !rows) {
        json_decref(b.arr);
        return HH_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) rows[i] = json_incref(json_array_get(b.arr, i));
    if (n) qsort(rows, n, sizeof(*rows), cmp_run_at);
    json_array_clear(b.arr);
    for (size_t i = 0; i < n; i++) json_array_append_new(b.arr, rows[i]);
    free(rows);
    *json_out = dump_out(b.arr);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_busy(hh_client *c, char **json_out) {
    const char *bad = !c ? "the client is missing" : !json_out ? "json_out is NULL" : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "busy: %s", bad);
    return hh__admin_fail(c, busy_run(c, json_out), "busy");
}

/* ------------------------------------------------------------ finding */

typedef struct find_ctx {
    json_t *arr;
    const char *where;
} find_ctx;

static int found_in_set(const hh_jobset_entry *e, void *udata) {
    find_ctx *f = udata;
    json_t *o = json_object();
    json_object_set_new(o, "where", json_string(f->where));
    json_object_set_new(o, "score", json_real(e->score));
    json_object_set_new(o, "queue", json_string(e->queue));
    json_object_set_new(o, "class", json_stringn(e->display_class, e->display_class_len));
    json_array_append_new(f->arr, o);
    return 0;
}

/* Finds jid in one queue, reading it in pages from the end that runs next;
 * positions count from there (0 runs next). */
/* Adds an entry to arr for each element of the list at key holding jid
 * (a cheap substring test first, then the payload's own "jid"): where,
 * queue, position from the end a fetch takes first, class, and owner for an
 * in-progress list. Paged: never the whole list in memory. */
static int find_in_list(hh_client *c, const char *key, const char *where, const char *queue, const char *owner,
                        const char *jid, json_t *arr) {
    size_t jl = strlen(jid);
    int rc = HH_OK;
    for (long long pos = 0;; pos += HH_ADMIN_PAGE) {
        redisReply *r = hh__conn_cmd(hh__client_conn(c), "LRANGE %s %lld %lld", key, -pos - HH_ADMIN_PAGE, -pos - 1);
        int ok = r && r->type == REDIS_REPLY_ARRAY;
        for (size_t i = 0; ok && i < r->elements; i++) ok = r->element[i]->type == REDIS_REPLY_STRING;
        if (!ok) {
            rc = hh__admin_bad_reply(c, r, "LRANGE");
            if (r) freeReplyObject(r);
            break;
        }
        for (size_t i = r->elements; i-- > 0;) {
            const redisReply *e = r->element[i];
            if (!memmem(e->str, e->len, jid, jl)) continue;
            int lossy;
            json_t *it = hh__json_load_payload(e->str, e->len, &lossy);
            if (json_is_object(it) && strcmp(hh__admin_str(it, "jid", ""), jid) == 0) {
                json_t *o = json_object();
                json_object_set_new(o, "where", json_string(where));
                json_object_set_new(o, "queue", json_string(queue));
                if (owner) json_object_set_new(o, "identity", json_string(owner));
                json_object_set_new(o, "position", json_integer(pos + (long long)(r->elements - 1 - i)));
                json_object_set_new(o, "class", shown_class(it, ""));
                json_array_append_new(arr, o);
            }
            json_decref(it);
        }
        size_t got = r->elements;
        freeReplyObject(r);
        if (got < HH_ADMIN_PAGE) break;
    }
    return rc;
}

static int find_in_queue(hh_client *c, const char *queue, const char *jid, json_t *arr) {
    sds k = hh__key_queue(hh__client_keys(c), queue);
    int rc = find_in_list(c, k, "queue", queue, NULL, jid, arr);
    sdsfree(k);
    return rc;
}

/* The in-progress lists of every process (reliable fetch): a job fetched
 * and not finished, running or left by a process that died, until a
 * recovery pushes it back. */
static int find_in_progress(hh_client *c, const char *jid, json_t *arr) {
    const hh__keys *keys = hh__client_keys(c);
    sds pattern = hh__key_inprogress_pattern(keys), cursor = sdsnew("0");
    int rc = HH_OK;
    do {
        redisReply *r = hh__conn_cmd(hh__client_conn(c), "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            rc = hh__admin_bad_reply(c, r, "SCAN");
            if (r) freeReplyObject(r);
            break;
        }
        sdsfree(cursor);
        cursor = sdsnewlen(r->element[0]->str, r->element[0]->len);
        const redisReply *ks = r->element[1];
        for (size_t i = 0; i < ks->elements && rc == HH_OK; i++) {
            sds owner, queue;
            if (ks->element[i]->type != REDIS_REPLY_STRING ||
                hh__key_inprogress_parse(keys, ks->element[i]->str, &owner, &queue) != 0)
                continue;
            rc = find_in_list(c, ks->element[i]->str, "in progress", queue, owner, jid, arr);
            sdsfree(owner);
            sdsfree(queue);
        }
        freeReplyObject(r);
    } while (rc == HH_OK && strcmp(cursor, "0") != 0);
    sdsfree(cursor);
    sdsfree(pattern);
    return rc;
}

static int jobs_find_run(hh_client *c, const char *jid, char **json_out) {
    if (!c || !json_out || !hh__admin_jid_ok(jid)) return HH_ERR_INVALID;
    *json_out = NULL;
    json_t *arr = json_array();
    redisReply *qs = sorted_members(c, HH_K_QUEUES);
    int rc = qs ? HH_OK : HH_ERR_REDIS;
    for (size_t i = 0; qs && i < qs->elements && rc == HH_OK; i++) rc = find_in_queue(c, qs->element[i]->str, jid, arr);
    if (qs) freeReplyObject(qs);
    if (rc == HH_OK) rc = find_in_progress(c, jid, arr);
    static const struct {
        hh_jobset set;
        const char *where;
    } sets[] = {{HH_JOBSET_SCHEDULED, "scheduled"}, {HH_JOBSET_RETRY, "retry"}, {HH_JOBSET_DEAD, "dead"}};
    for (size_t i = 0; i < 3 && rc == HH_OK; i++) {
        find_ctx f = {arr, sets[i].where};
        rc = hh_jobset_find(c, sets[i].set, jid, found_in_set, &f);
        if (rc == HH_ERR_NOTFOUND) rc = HH_OK;
    }
    if (rc == HH_OK) {
        busy_ctx b = {arr, hh__now(), jid};
        rc = each_work(c, busy_row, &b);
    }
    if (rc != HH_OK) {
        json_decref(arr);
        return rc;
    }
    *json_out = dump_out(arr);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_jobs_find(hh_client *c, const char *jid, char **json_out) {
    const char *bad = !c         ? "the client is missing"
        : !json_out              ? "json_out is NULL"
        : !hh__admin_jid_ok(jid) ? "the jid is missing, empty or over 1024 bytes"
                                 : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobs find: %s", bad);
    return hh__admin_fail(c, jobs_find_run(c, jid, json_out), "jobs find");
}
