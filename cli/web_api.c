/* web_api.c -- the JSON API of `hiredhand web`: one function per /api/
 * route, each standing on the public API (hiredhand.h) exactly as the
 * admin commands do, so a button of the dashboard and `hiredhand retries
 * retry JID` change Redis alike (the same library calls: hh_jobset_act,
 * hh_jobset_act_all, hh_jobset_clear, hh_queue_clear, hh_client_signal;
 * for periodic jobs those of `hiredhand cron`: hh_cron_list,
 * hh_cron_enqueue_now, hh_cron_set_enabled, hh_cron_delete).
 * Keys: those of the library functions called (hiredhand.h); nothing here
 * names a key itself.
 *
 * One hh_client serves every request, from MHD's single polling thread
 * (web.c), so a request's choice of sidekiq-cron layout
 * (hh_cron_use_layout) is set for its calls and put back to 0 before the
 * next request: one request's layout never reaches another's.
 *
 * Every string read from Redis goes out as JSON text; bytes that are not
 * UTF-8 are replaced by U+FFFD (JSON cannot carry them), so hostile job
 * data reaches the page as data and is shown with textContent only. */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "web.h"

#define PAGE_DEFAULT 25
#define PAGE_MAX 500
/* Characters of a job's args (or of an entry that is no job) a list shows,
 * as Sidekiq's Web UI truncates them (its helpers' truncate(..., 2000)):
 * a 5 MB argument must not make a 5 MB page. A job's own page shows all. */
#define SHOWN_MAX 2000
/* Queue entries one step of a delete by digest reads (hh_queue_page). */
#define DELETE_SCAN_PAGE 100

static int reply_json(cli_web_reply *out, unsigned int status, json_t *v) {
    out->status = status;
    out->body = json_dumps(v, CLI_JSON_FLAGS);
    json_decref(v);
    return 0;
}

static int reply_error(cli_web_reply *out, unsigned int status, const char *why) {
    reply_json(out, status, json_pack("{s:s}", "error", why ? why : "error"));
    return 0;
}

static json_t *text(const char *s, size_t len);

/* The library's answer for error e as a status: 404 not found, 400 a bad
 * request, 502 Redis failing. */
static int reply_failure(cli_web_reply *out, hh_client *c, int e) {
    const char *why = hh_client_last_error(c);
    if (!why || !*why) why = hh_last_error();
    unsigned int st = e == HH_ERR_NOTFOUND ? 404 : e == HH_ERR_INVALID ? 400 : 502;
    char buf[600];
    snprintf(buf, sizeof buf, "%s%s%s", hh_strerror(e), why && *why ? ": " : "", why ? why : "");
    json_t *v = json_object();
    json_object_set_new(v, "error", text(buf, strlen(buf)));
    reply_json(out, st, v);
    return 0;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    if (s[0] < 0x80) return 1;
    size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2
        : s[0] >= 0xe0 && s[0] <= 0xef        ? 3
        : s[0] >= 0xf0 && s[0] <= 0xf4        ? 4
                                              : 0;
    if (!len || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, surrogate */
    if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
    return len;
}

/* A JSON string of s's len bytes, invalid UTF-8 replaced by U+FFFD. */
static json_t *text(const char *s, size_t len) {
    if (!s) return json_null();
    json_t *v = json_stringn(s, len);
    if (v) return v;
    char *buf = malloc(len * 3 + 1);
    if (!buf) return json_null();
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq((const unsigned char *)s + i, len - i);
        if (k) {
            memcpy(buf + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    v = json_stringn(buf, o);
    free(buf);
    return v ? v : json_null();
}

static json_t *text0(const char *s) { return s ? text(s, strlen(s)) : json_null(); }

/* s (len bytes) as a list shows it: its first SHOWN_MAX characters, then
 * "..." when there were more (Sidekiq's truncate). */
static json_t *shown(const char *s, size_t len) {
    if (!s) return json_null();
    size_t i = 0, chars = 0;
    while (i < len && chars < SHOWN_MAX) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80) i++; /* the rest of one character */
        chars++;
    }
    if (i >= len) return text(s, len);
    char *buf = malloc(i + 4);
    if (!buf) return json_null();
    memcpy(buf, s, i);
    memcpy(buf + i, "...", 4);
    json_t *v = text(buf, i + 3);
    free(buf);
    return v;
}

/* The hex SHA-256 of an entry's bytes: what a list gives for each queue
 * entry and a delete names it by, so the request stays small however big
 * the entry. Returns 0, or -1 when OpenSSL fails. */
static int digest_hex(const char *s, size_t len, char out[2 * EVP_MAX_MD_SIZE + 1]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(s, len, md, &n, EVP_sha256(), NULL) != 1) return -1;
    for (unsigned int i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* A non-negative integer argument, dflt when absent, -1 when malformed. */
static long long int_arg(cli_web_arg_fn arg, void *ctx, const char *name, long long dflt, long long max) {
    const char *v = arg(ctx, name);
    if (!v || !*v) return dflt;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || n < 0 || n > max) return -1;
    return n;
}

static const char *set_word(hh_jobset s) {
    return s == HH_JOBSET_RETRY ? "retry" : s == HH_JOBSET_SCHEDULED ? "scheduled" : "dead";
}

static int set_of(const char *w, hh_jobset *out) {
    if (!w) return 0;
    if (!strcmp(w, "retry")) *out = HH_JOBSET_RETRY;
    else if (!strcmp(w, "scheduled")) *out = HH_JOBSET_SCHEDULED;
    else if (!strcmp(w, "dead")) *out = HH_JOBSET_DEAD;
    else return 0;
    return 1;
}

/* Replies with the library's JSON text as it is (already ours to send). */
static int reply_text(cli_web_reply *out, char *json) {
    out->status = 200;
    out->body = json;
    return 0;
}

/* A slice [start, start+count) of the JSON array text json (freed), as
 * {"total": n, "start": s, key: [...]}: Busy's processes and running
 * jobs, a thousand processes shown a page at a time. */
static int reply_slice(cli_web_reply *out, char *json, const char *key, long long start, long long count) {
    json_t *arr = json_loads(json, 0, NULL);
    free(json);
    if (!json_is_array(arr)) {
        json_decref(arr);
        reply_error(out, 502, "unreadable reply");
        return 0;
    }
    json_t *page = json_array();
    for (size_t i = (size_t)start; i < json_array_size(arr) && i < (size_t)(start + count); i++)
        json_array_append(page, json_array_get(arr, i));
    json_t *o = json_pack("{s:I,s:I}", "total", (json_int_t)json_array_size(arr), "start", (json_int_t)start);
    json_object_set_new(o, key, page);
    json_decref(arr);
    reply_json(out, 200, o);
    return 0;
}

/* ---------------------------------------------------------- job sets */

typedef struct set_page {
    json_t *rows;
    const char *klass, *queue, *error; /* filters, NULL: none */
    size_t want, matched, scanned;
    int full; /* one payload per row (the job page) */
} set_page;

static int has(const char *hay, const char *needle) { return hay && strstr(hay, needle); }

static json_t *entry_json(const hh_jobset_entry *e, int full) {
    json_t *o = json_object();
    json_object_set_new(o, "jid", text0(e->jid));
    json_object_set_new(o, "score", json_real(e->score));
    json_object_set_new(o, "class", text(e->display_class, e->display_class_len));
    json_object_set_new(o, "queue", text0(e->queue));
    json_object_set_new(o, "error_class", text0(e->error_class));
    json_object_set_new(o, "error_message", text0(e->error_message));
    json_object_set_new(o, "retry_count", e->retry_count >= 0 ? json_integer(e->retry_count) : json_null());
    json_object_set_new(o, "failed_at", e->failed_at > 0 ? json_real(e->failed_at) : json_null());
    json_object_set_new(o, "enqueued_at", e->enqueued_at > 0 ? json_real(e->enqueued_at) : json_null());
    json_object_set_new(o, "valid", json_boolean(e->valid));
    char *args = hh_jobset_entry_get(e, "args");
    json_object_set_new(o, "args", args ? (full ? text0(args) : shown(args, strlen(args))) : json_null());
    free(args);
    /* an entry that is no job object (not JSON, not UTF-8) shows its bytes */
    if (!full && !e->valid) json_object_set_new(o, "payload", shown(e->payload, e->len));
    if (full) {
        json_object_set_new(o, "payload", text(e->payload, e->len));
        char *bt = hh_jobset_entry_get(e, "error_backtrace");
        json_t *btv = bt ? json_loads(bt, JSON_DECODE_ANY, NULL) : NULL;
        free(bt);
        json_t *lines = NULL;
        if (json_is_string(btv)) {
            char *dec = hh_backtrace_decode(json_string_value(btv), json_string_length(btv));
            lines = dec ? json_loads(dec, 0, NULL) : NULL;
            free(dec);
        } else if (json_is_array(btv)) {
            lines = json_incref(btv); /* Sidekiq 6.x before compression: a plain array */
        }
        json_decref(btv);
        json_object_set_new(o, "backtrace", lines ? lines : json_null());
    }
    return o;
}

static int page_cb(const hh_jobset_entry *e, void *udata) {
    set_page *p = udata;
    p->scanned++;
    if (p->klass && (!e->valid || strcmp(e->display_class, p->klass) != 0) && strcmp(e->klass, p->klass) != 0) return 0;
    if (p->queue && strcmp(e->queue, p->queue) != 0) return 0;
    if (p->error && !has(e->error_class, p->error) && !has(e->error_message, p->error)) return 0;
    json_array_append_new(p->rows, entry_json(e, p->full));
    return ++p->matched >= p->want;
}

static const char *filter_arg(cli_web_arg_fn arg, void *ctx, const char *name) {
    const char *v = arg(ctx, name);
    return v && *v ? v : NULL;
}

/* GET /api/set?set=retry&start=0&count=25[&reverse=1][&class=&queue=&error=]
 * Without a filter: one page by rank (ZRANGE by index), whatever the set's
 * size. With one: a scan from rank start of at most CLI_WEB_FILTER_SCAN
 * entries; "next" is the rank to go on from, "complete" whether the scan
 * reached the end of the set. */
static int api_set(hh_client *c, cli_web_arg_fn arg, void *ctx, cli_web_reply *out) {
    hh_jobset set;
    if (!set_of(arg(ctx, "set"), &set)) return reply_error(out, 400, "set is retry, scheduled or dead");
    long long start = int_arg(arg, ctx, "start", 0, INT64_MAX / 2),
              count = int_arg(arg, ctx, "count", PAGE_DEFAULT, PAGE_MAX);
    int reverse = arg(ctx, "reverse") && !strcmp(arg(ctx, "reverse"), "1");
    if (start < 0 || count <= 0) return reply_error(out, 400, "start or count out of range (count 1..500)");
    set_page p = {json_array(),
                  filter_arg(arg, ctx, "class"),
                  filter_arg(arg, ctx, "queue"),
                  filter_arg(arg, ctx, "error"),
                  (size_t)count,
                  0,
                  0,
                  0};
    int filtered = p.klass || p.queue || p.error;
    long long size = 0;
    int e = hh_jobset_size(c, set, &size);
    long long at = start;
    if (e == HH_OK && !filtered) {
        e = hh_jobset_page(c, set, start, (size_t)count, reverse, page_cb, &p);
        at = start + (long long)p.scanned;
    } else if (e == HH_OK) {
        /* pages of 500 until count matches or the scan bound */
        while (e == HH_OK && p.matched < p.want && at - start < CLI_WEB_FILTER_SCAN) {
            size_t before = p.scanned;
            e = hh_jobset_page(c, set, at, 500, reverse, page_cb, &p);
            at += (long long)(p.scanned - before);
            if (p.scanned - before < 500 && p.matched < p.want) break; /* the end of the set */
        }
    }
    if (e != HH_OK) {
        json_decref(p.rows);
        return reply_failure(out, c, e);
    }
    json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:b}", "set", set_word(set), "size", (json_int_t)size, "start",
                          (json_int_t)start, "next", (json_int_t)at, "complete", at >= size);
    json_object_set_new(o, "filtered", json_boolean(filtered));
    json_object_set_new(o, "scan_limit", json_integer(CLI_WEB_FILTER_SCAN));
    json_object_set_new(o, "entries", p.rows);
    reply_json(out, 200, o);
    return 0;
}

/* GET /api/job?set=retry&jid=J: every entry with that jid, whole (the
 * payload, decoded backtrace). */
static int api_job(hh_client *c, cli_web_arg_fn arg, void *ctx, cli_web_reply *out) {
    hh_jobset set;
    const char *jid = arg(ctx, "jid");
    if (!set_of(arg(ctx, "set"), &set) || !jid || !*jid) return reply_error(out, 400, "want set and jid");
    set_page p = {json_array(), NULL, NULL, NULL, 100, 0, 0, 1};
    int e = hh_jobset_find(c, set, jid, page_cb, &p);
    if (e != HH_OK) {
        json_decref(p.rows);
        return reply_failure(out, c, e);
    }
    json_t *o = json_pack("{s:s}", "set", set_word(set));
    json_object_set_new(o, "entries", p.rows);
    reply_json(out, 200, o);
    return 0;
}

/* ------------------------------------------------------------ queues */

/* The exact bytes of queue entry j of hh_queue_page: its "payload", or
 * for an entry that is not UTF-8 the decoding of its "payload_base64"
 * (*owned set, free it). NULL when it has neither or out of memory. */
static const char *entry_bytes(json_t *j, size_t *len, char **owned) {
    json_t *pl = json_object_get(j, "payload");
    *owned = NULL;
    if (!json_object_get(j, "payload_base64")) {
        *len = json_string_length(pl);
        return json_string_value(pl);
    }
    return cli_base64_field(j, "payload_base64", owned, len) == 0 ? *owned : NULL;
}

/* GET /api/queue?name&start&count: hh_queue_page's object, each job as a
 * list shows it: "args" as JSON text cut to SHOWN_MAX characters (no
 * "item"), an entry that is no job as its "payload" cut alike, and the
 * "digest" of its exact bytes a Delete names it by. An entry that is not
 * UTF-8 shows U+FFFD for those bytes, as the retry set does; when its
 * text is a job object, its args are shown as read from that text. */
static int api_queue(hh_client *c, const char *name, long long start, long long count, cli_web_reply *out) {
    char *json = NULL;
    int e = hh_queue_page(c, name, start, (size_t)count, &json);
    if (e != HH_OK) return reply_failure(out, c, e);
    json_t *o = json_loads(json, JSON_ALLOW_NUL, NULL);
    free(json);
    json_t *jobs = json_object_get(o, "jobs"), *j;
    if (!json_is_array(jobs)) {
        json_decref(o);
        return reply_error(out, 502, "unreadable queue page");
    }
    size_t i;
    json_array_foreach(jobs, i, j) {
        json_t *pl = json_object_get(j, "payload"), *item = json_object_get(j, "item");
        char *owned, hex[2 * EVP_MAX_MD_SIZE + 1];
        size_t len = 0;
        const char *raw = entry_bytes(j, &len, &owned);
        if (raw && digest_hex(raw, len, hex) == 0) json_object_set_new(j, "digest", json_string(hex));
        free(owned);
        json_t *seen = NULL;
        if (json_is_string(json_object_get(j, "payload_base64"))) /* not UTF-8: its text with U+FFFD */
            seen = json_loadb(json_string_value(pl), json_string_length(pl), JSON_ALLOW_NUL, NULL);
        json_t *from = json_is_object(item) ? item : json_is_object(seen) ? seen : NULL;
        json_t *args = from ? json_object_get(from, "args") : NULL;
        if (args) {
            char *a = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
            json_object_set_new(j, "args", a ? shown(a, strlen(a)) : json_null());
            free(a);
        }
        json_decref(seen);
        if (json_is_object(item) || !json_is_string(pl)) json_object_del(j, "payload");
        else json_object_set_new(j, "payload", shown(json_string_value(pl), json_string_length(pl)));
        json_object_del(j, "item");
        json_object_del(j, "payload_base64");
    }
    return reply_json(out, 200, o);
}

/* POST /api/queue/delete {"name","digest"}: the first entry of queue:name
 * (by rank, the next to run first) whose SHA-256 is digest, deleted by
 * LREM 1 of its exact bytes (hh_queue_delete_job, as the Web UI's Delete):
 * the request names a 2 MiB entry in 64 characters, and exactly one
 * entry equal to it goes, bytes that are not UTF-8 included. 404 when no
 * entry has that digest any more. */
static int queue_delete_digest(hh_client *c, const char *name, const char *digest, cli_web_reply *out) {
    for (long long at = 0;; at += DELETE_SCAN_PAGE) {
        char *json = NULL;
        int e = hh_queue_page(c, name, at, DELETE_SCAN_PAGE, &json);
        if (e != HH_OK) return reply_failure(out, c, e);
        json_t *o = json_loads(json, JSON_ALLOW_NUL, NULL), *j;
        free(json);
        json_t *jobs = json_object_get(o, "jobs");
        if (!json_is_array(jobs)) {
            json_decref(o);
            return reply_error(out, 502, "unreadable queue page");
        }
        size_t i, n = json_array_size(jobs);
        json_array_foreach(jobs, i, j) {
            char *owned, hex[2 * EVP_MAX_MD_SIZE + 1];
            size_t len = 0;
            const char *raw = entry_bytes(j, &len, &owned);
            if (!raw || digest_hex(raw, len, hex) != 0 || strcmp(hex, digest) != 0) {
                free(owned);
                continue;
            }
            e = hh_queue_delete_job(c, name, raw, len);
            free(owned);
            json_decref(o);
            if (e == HH_ERR_NOTFOUND) return reply_error(out, 404, "no such job in the queue any more");
            if (e != HH_OK) return reply_failure(out, c, e);
            return reply_json(out, 200, json_pack("{s:i}", "done", 1));
        }
        json_decref(o);
        if (n < DELETE_SCAN_PAGE) return reply_error(out, 404, "no such job in the queue any more");
    }
}

/* ------------------------------------------------------ periodic jobs */

/* A request's sidekiq-cron layout, from the query's "layout" or the
 * body's (a number or a string): 1 or 2, 0 when absent, -1 when it is
 * anything else. */
static int layout_of(const char *v) {
    if (!v || !*v) return 0;
    return (v[0] == '1' || v[0] == '2') && !v[1] ? v[0] - '0' : -1;
}

/* GET /api/cron/job?name=N[&namespace=NS][&layout=1|2]: the job as
 * `hiredhand cron show` finds it in hh_cron_list, with "history"
 * (hh_cron_history). A job whose name is not UTF-8 (listed with
 * "name_base64") is never the one found: its \xNN text is another job's
 * name. A job saved in both sidekiq-cron layouts is refused (400) unless
 * layout names the copy, as `cron show --layout`. */
static int api_cron_job(hh_client *c, cli_web_arg_fn arg, void *ctx, cli_web_reply *out) {
    const char *name = arg(ctx, "name"), *ns = filter_arg(arg, ctx, "namespace");
    int layout = layout_of(arg(ctx, "layout"));
    if (!name || !*name) return reply_error(out, 400, "want name");
    if (layout < 0) return reply_error(out, 400, "layout is 1 (sidekiq-cron 1.x) or 2 (2.x)");
    char *json = NULL;
    int e = hh_cron_list(c, ns, &json);
    if (e != HH_OK) return reply_failure(out, c, e);
    json_t *all = json_loads(json, 0, NULL), *j, *found = NULL;
    free(json);
    size_t i;
    int nfound = 0;
    json_array_foreach(all, i, j) {
        const char *n = json_string_value(json_object_get(j, "name"));
        /* a name that is not UTF-8 shows as \xNN text, which names another job (or none): never resolved */
        if (!n || json_object_get(j, "name_base64") || strcmp(n, name)) continue;
        if (layout && json_integer_value(json_object_get(j, "layout")) != layout) continue;
        json_decref(found);
        found = json_incref(j), nfound++;
    }
    json_decref(all);
    if (nfound > 1) {
        json_decref(found);
        return reply_error(out, 400,
                           "this periodic job is saved in both sidekiq-cron layouts, each run each tick: "
                           "choose one with layout=1 or layout=2");
    }
    if (!found) return reply_error(out, 404, "no such periodic job");
    char *hist = NULL;
    hh_cron_use_layout(c, layout); /* 0, 1 or 2: checked above */
    e = hh_cron_history(c, ns, name, &hist);
    hh_cron_use_layout(c, 0);
    if (e != HH_OK) {
        json_decref(found);
        return reply_failure(out, c, e);
    }
    json_t *h = json_loads(hist, 0, NULL);
    free(hist);
    json_object_set_new(found, "history", h ? h : json_array());
    return reply_json(out, 200, found);
}

int cli_web_api_get(hh_client *c, const char *path, cli_web_arg_fn arg, void *ctx, cli_web_reply *out) {
    char *json = NULL;
    int e = HH_OK;
    long long start = int_arg(arg, ctx, "start", 0, INT32_MAX),
              count = int_arg(arg, ctx, "count", PAGE_DEFAULT, PAGE_MAX);
    if (!strcmp(path, "stats")) e = hh_client_stats(c, &json);
    else if (!strcmp(path, "history")) {
        long long days = int_arg(arg, ctx, "days", 30, 180);
        if (days < 1) return reply_error(out, 400, "days is 1..180");
        e = hh_stats_history(c, (int)days, &json);
    } else if (!strcmp(path, "metrics")) {
        long long minutes = int_arg(arg, ctx, "minutes", 60, 480);
        if (minutes < 1) return reply_error(out, 400, "minutes is 1..480");
        e = hh_job_metrics_summary(c, (int)minutes, &json);
    } else if (!strcmp(path, "queues")) e = hh_queues_list(c, &json);
    else if (!strcmp(path, "queue")) {
        const char *name = arg(ctx, "name");
        if (!name || start < 0 || count <= 0) return reply_error(out, 400, "want name, start, count 1..500");
        return api_queue(c, name, start, count, out);
    } else if (!strcmp(path, "processes") || !strcmp(path, "busy")) {
        if (start < 0 || count <= 0) return reply_error(out, 400, "start or count out of range (count 1..500)");
        e = path[0] == 'p' ? hh_client_processes(c, &json) : hh_busy(c, &json);
        if (e == HH_OK) return reply_slice(out, json, path[0] == 'p' ? "processes" : "jobs", start, count);
    } else if (!strcmp(path, "set")) return api_set(c, arg, ctx, out);
    else if (!strcmp(path, "job")) return api_job(c, arg, ctx, out);
    else if (!strcmp(path, "cron")) e = hh_cron_list(c, filter_arg(arg, ctx, "namespace"), &json);
    else if (!strcmp(path, "cron/job")) return api_cron_job(c, arg, ctx, out);
    else return reply_error(out, 404, "no such API route");
    if (e != HH_OK) return reply_failure(out, c, e);
    reply_text(out, json);
    return 0;
}

/* ------------------------------------------------------------- POST */

static const char *str_field(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* POST /api/set: {"set","action": retry|enqueue|delete|kill, "jids": [...]}
 * or {"set","action","all": true[, "class","queue","error"]}, as
 * `hiredhand retries ACTION JID` and `... ACTION --all [filters]` do; a
 * delete of all with no filter is the set's clear, as there. */
static int post_set(hh_client *c, json_t *b, cli_web_reply *out) {
    hh_jobset set;
    const char *act = str_field(b, "action");
    if (!set_of(str_field(b, "set"), &set) || !act) return reply_error(out, 400, "want set and action");
    hh_jobset_action action;
    if (!strcmp(act, "retry") && set != HH_JOBSET_SCHEDULED) action = HH_JOBSET_RETRY_NOW;
    else if (!strcmp(act, "enqueue") && set == HH_JOBSET_SCHEDULED) action = HH_JOBSET_ENQUEUE;
    else if (!strcmp(act, "delete")) action = HH_JOBSET_DELETE;
    else if (!strcmp(act, "kill") && set != HH_JOBSET_DEAD) action = HH_JOBSET_KILL;
    else return reply_error(out, 400, "no such action for this set");
    hh_jobset_options opts = {0, 0};
    size_t done = 0, skipped = 0, missing = 0;
    int e = HH_OK;
    if (json_is_true(json_object_get(b, "all"))) {
        hh_jobset_filter f = {str_field(b, "class"), str_field(b, "queue"), str_field(b, "error"), 0};
        if (f.error && !*f.error) f.error = NULL;
        if (action == HH_JOBSET_DELETE && !f.klass && !f.queue && !f.error) {
            long long removed = 0;
            e = hh_jobset_clear(c, set, &removed);
            done = removed > 0 ? (size_t)removed : 0;
        } else {
            e = hh_jobset_act_all(c, set, &f, action, &opts, &done, &skipped);
        }
    } else {
        json_t *jids = json_object_get(b, "jids"), *j;
        size_t i;
        if (!json_is_array(jids) || !json_array_size(jids) || json_array_size(jids) > 1000)
            return reply_error(out, 400, "want jids (1..1000) or all");
        json_array_foreach(jids, i, j) {
            if (!json_is_string(j)) return reply_error(out, 400, "a jid is not a string");
            int r = hh_jobset_act(c, set, json_string_value(j), action, &opts);
            if (r == HH_OK) done++;
            else if (r == HH_ERR_NOTFOUND) missing++;
            else if (r == HH_ERR_INVALID) skipped++;
            else {
                e = r;
                break;
            }
        }
    }
    if (e != HH_OK) return reply_failure(out, c, e);
    reply_json(out, 200,
               json_pack("{s:I,s:I,s:I}", "done", (json_int_t)done, "skipped", (json_int_t)skipped, "notfound",
                         (json_int_t)missing));
    return 0;
}

/* POST /api/cron: {"name","action": enqueue|enable|disable|delete
 * [,"namespace"][,"layout": 1|2]}, as `hiredhand cron ACTION NAME
 * [--layout N]`: the same call each. A job saved in both sidekiq-cron
 * layouts is refused by the library (400) unless layout names the copy. */
static int post_cron(hh_client *c, json_t *b, cli_web_reply *out) {
    const char *name = str_field(b, "name"), *act = str_field(b, "action"), *ns = str_field(b, "namespace");
    if (!name || !*name || !act) return reply_error(out, 400, "want name and action");
    if (ns && !*ns) ns = NULL;
    json_t *lv = json_object_get(b, "layout");
    int layout = !lv || json_is_null(lv) ? 0
        : json_is_integer(lv)
        ? (json_integer_value(lv) == 1 || json_integer_value(lv) == 2 ? (int)json_integer_value(lv) : -1)
        : json_is_string(lv) ? layout_of(json_string_value(lv))
                             : -1;
    if (layout < 0) return reply_error(out, 400, "layout is 1 (sidekiq-cron 1.x) or 2 (2.x)");
    if (strcmp(act, "enqueue") && strcmp(act, "enable") && strcmp(act, "disable") && strcmp(act, "delete"))
        return reply_error(out, 400, "action is enqueue, enable, disable or delete");
    char jid[HH_JID_SIZE] = "";
    int e;
    hh_cron_use_layout(c, layout); /* put back to 0 below: the client serves every request */
    if (!strcmp(act, "enqueue")) e = hh_cron_enqueue_now(c, ns, name, jid);
    else if (!strcmp(act, "delete")) e = hh_cron_delete(c, ns, name);
    else e = hh_cron_set_enabled(c, ns, name, act[0] == 'e');
    hh_cron_use_layout(c, 0);
    if (e != HH_OK) return reply_failure(out, c, e);
    json_t *o = json_pack("{s:i}", "done", 1);
    if (*jid) json_object_set_new(o, "jid", json_string(jid));
    return reply_json(out, 200, o);
}

int cli_web_api_post(hh_client *c, const char *path, const char *body, size_t len, cli_web_reply *out) {
    json_t *b = json_loadb(body, len, 0, NULL);
    if (!json_is_object(b)) {
        json_decref(b);
        return reply_error(out, 400, "the body is not a JSON object");
    }
    int e = HH_OK;
    long long removed = 0;
    if (!strcmp(path, "set")) post_set(c, b, out);
    else if (!strcmp(path, "cron")) post_cron(c, b, out);
    else if (!strcmp(path, "queue/clear")) {
        const char *name = str_field(b, "name");
        if (!name) reply_error(out, 400, "want name");
        else if ((e = hh_queue_clear(c, name, &removed)) != HH_OK) reply_failure(out, c, e);
        else reply_json(out, 200, json_pack("{s:I}", "removed", (json_int_t)removed));
    } else if (!strcmp(path, "queue/delete")) {
        const char *name = str_field(b, "name"), *digest = str_field(b, "digest");
        json_t *pl = json_object_get(b, "payload");
        if (name && digest) queue_delete_digest(c, name, digest, out);
        else if (!name || !json_is_string(pl)) reply_error(out, 400, "want name and digest (or payload)");
        else if ((e = hh_queue_delete_job(c, name, json_string_value(pl), json_string_length(pl))) != HH_OK)
            reply_failure(out, c, e);
        else reply_json(out, 200, json_pack("{s:i}", "done", 1));
    } else if (!strcmp(path, "process")) {
        const char *id = str_field(b, "identity"), *sig = str_field(b, "signal");
        const char *s = !sig ? NULL : !strcmp(sig, "quiet") ? "TSTP" : !strcmp(sig, "stop") ? "TERM" : NULL;
        if (!id || !s) reply_error(out, 400, "want identity and signal quiet or stop");
        else if ((e = hh_client_signal(c, id, s)) != HH_OK) reply_failure(out, c, e);
        else reply_json(out, 200, json_pack("{s:i}", "done", 1));
    } else reply_error(out, 404, "no such API route");
    json_decref(b);
    return 0;
}
