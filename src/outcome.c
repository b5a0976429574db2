/* outcome.c -- what becomes of a job (see outcome.h).
 * Keys written: retry, dead (ZADD; dead trimmed by age and count) or
 * schedule (a skipped batch job), and the
 * source the job leaves: an in-progress list (LREM) or retry/schedule (ZREM),
 * all in HH_LUA_OUTCOME. The payloads follow docs/protocol.md. */
#include "outcome.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hh__outcome_write(hh__conn *c, const hh__keys *k, const hh__outcome *o, char *why, size_t whylen) {
    static const char *modes[] = {"drop", "retry", "dead", "schedule"};
    static const char *sources[] = {"none", "list", "zset"};
    double dead_timeout = o->dead_timeout > 0 ? o->dead_timeout : HH_DEAD_TIMEOUT;
    long max_jobs = o->dead_max_jobs > 0 ? o->dead_max_jobs : HH_DEAD_MAX_JOBS;
    char score[32], cutoff[32], maxrank[32];
    hh__fmt_double(score, sizeof(score), o->score);
    hh__fmt_double(cutoff, sizeof(cutoff), o->score - dead_timeout);
    snprintf(maxrank, sizeof(maxrank), "%ld", -max_jobs);
    sds target = hh__key(k,
                         o->mode == HH_OUTCOME_RETRY          ? HH_K_RETRY
                             : o->mode == HH_OUTCOME_SCHEDULE ? HH_K_SCHEDULE
                                                              : HH_K_DEAD);
    const char *src = o->source == HH_SOURCE_NONE ? target : o->source_key;
    const char *keys[2] = {src, target};
    size_t klen[2] = {strlen(src), sdslen(target)};
    const char *member = o->member ? o->member : "";
    const char *entry = o->entry ? o->entry : "";
    const char *args[7] = {member, entry, score, modes[o->mode], cutoff, maxrank, sources[o->source]};
    size_t alen[7] = {o->member ? o->member_len : 0,
                      o->entry ? o->entry_len : 0,
                      strlen(score),
                      strlen(modes[o->mode]),
                      strlen(cutoff),
                      strlen(maxrank),
                      strlen(sources[o->source])};
    redisReply *r = hh__conn_eval(c, HH_SCRIPT_OUTCOME, 2, keys, klen, 7, args, alen);
    sdsfree(target);
    int rc = -1;
    if (!r) {
        snprintf(why, whylen, "%s", hh__conn_error_or(c, "connection lost"));
    } else if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
        rc = (int)r->integer;
    } else {
        snprintf(why, whylen, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply to the outcome script");
    }
    if (r) freeReplyObject(r);
    return rc;
}

void hh__outcome_of_plan(hh__outcome *o, const hh__failure_plan *plan, const char *source_key, const char *member,
                         size_t member_len, double dead_timeout, long dead_max_jobs) {
    *o = (hh__outcome){plan->kind == HH_FAIL_RETRY      ? HH_OUTCOME_RETRY
                           : plan->kind == HH_FAIL_DEAD ? HH_OUTCOME_DEAD
                                                        : HH_OUTCOME_DROP,
                       source_key ? HH_SOURCE_LIST : HH_SOURCE_NONE,
                       source_key,
                       member,
                       member_len,
                       plan->payload,
                       plan->payload ? strlen(plan->payload) : 0,
                       plan->score,
                       dead_timeout,
                       dead_max_jobs};
}

/* A malformed object holding an integer beyond 64 bits (jansson has no
 * bignums): its reason goes in as text spliced before the closing brace, so
 * every byte of it, the bignum included, stays as it was. NULL when it is
 * not such an object. */
static char *splice_reason(const char *payload, size_t len, const char *why, double now, hh_timestamps ts,
                           size_t *outlen) {
    json_t *probe = json_loadb(payload, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
    size_t close = len;
    while (close > 0 &&
           (payload[close - 1] == ' ' || payload[close - 1] == '\t' || payload[close - 1] == '\r' ||
            payload[close - 1] == '\n'))
        close--;
    if (!json_is_object(probe) || close == 0 || payload[close - 1] != '}') {
        json_decref(probe);
        return NULL;
    }
    close--;
    json_t *add = json_object();
    json_object_set_new(add, "error_class", json_string("hiredhand::InvalidJob"));
    json_object_set_new(add, "error_message", json_string(why));
    if (!json_object_get(probe, "failed_at")) json_object_set_new(add, "failed_at", hh__json_time_new(now, ts));
    char *inner = hh__json_dump(add); /* {"error_class":...}: its braces dropped below */
    int empty = json_object_size(probe) == 0;
    json_decref(add);
    json_decref(probe);
    if (!inner) return NULL;
    size_t ilen = strlen(inner);
    char *out = ilen >= 2 ? malloc(len + ilen + 1) : NULL; /* payload, a comma, inner without braces, NUL */
    if (out) {
        size_t n = 0;
        memcpy(out, payload, close);
        n = close;
        if (!empty) out[n++] = ',';
        memcpy(out + n, inner + 1, ilen - 2);
        n += ilen - 2;
        memcpy(out + n, payload + close, len - close);
        n += len - close;
        out[n] = '\0';
        *outlen = n; /* not strlen: jansson took a NUL byte in a number */
    }
    free(inner);
    return out;
}

char *hh__malformed_dead_payload(const char *payload, size_t len, const char *why, double now, hh_timestamps ts,
                                 size_t *outlen) {
    json_error_t jerr;
    json_t *item = json_loadb(payload, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
    char *out = NULL;
    /* jansson: "too big integer", "too big negative integer" */
    if (!item && strstr(jerr.text, "too big ")) {
        if ((out = splice_reason(payload, len, why, now, ts, outlen))) return out;
        /* not an object (a bare bignum, an array of them): wrapped below,
         * which keeps its exact text */
        item = json_loadb(payload, len, JSON_ALLOW_NUL | JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, NULL);
        if (json_is_object(item)) {
            json_decref(item);
            item = NULL;
        }
    }
    if (json_is_object(item)) {
        json_object_set_new(item, "error_class", json_string("hiredhand::InvalidJob"));
        json_object_set_new(item, "error_message", json_string(why));
        if (!json_object_get(item, "failed_at")) json_object_set_new(item, "failed_at", hh__json_time_new(now, ts));
        out = hh__json_dump(item);
    } else if (item) {
        /* Valid JSON that is not an object (an array, a number...): stored as
         * is it would break Sidekiq's Dead page (JobRecord indexes it like a
         * hash), so it goes in as an object holding the exact text. */
        char jid[HH_JID_SIZE];
        json_t *w = json_object();
        json_t *args = json_array();
        json_array_append_new(args, json_stringn(payload, len));
        json_object_set_new(w, "class", json_string("hiredhand::InvalidJob"));
        json_object_set_new(w, "args", args);
        if (hh__new_jid(jid) == 0) json_object_set_new(w, "jid", json_string(jid));
        json_object_set_new(w, "retry", json_false());
        json_object_set_new(w, "error_class", json_string("hiredhand::InvalidJob"));
        json_object_set_new(w, "error_message", json_string(why));
        json_object_set_new(w, "failed_at", hh__json_time_new(now, ts));
        out = hh__json_dump(w);
        json_decref(w);
    }
    json_decref(item);
    if (out) {
        *outlen = strlen(out);
        return out;
    }
    out = malloc(len + 1);
    if (out) {
        memcpy(out, payload, len);
        out[len] = '\0';
    }
    *outlen = len;
    return out;
}

int hh__write_until_done(hh__until_done *u, hh__attempt_fn fn, void *ctx) {
    char last[256] = "";
    double backoff = 0.05;
    u->attempts = 0;
    u->uncertain = 0;
    u->why[0] = '\0';
    for (;;) {
        int rc = fn(ctx, u->conn, u->why, sizeof(u->why));
        if (rc >= 0) {
            if (u->attempts && u->subject)
                hh__log(u->log, HH_LOG_INFO, "%s written after %d refused attempts", u->subject, u->attempts);
            if (u->attempts && u->refused) atomic_fetch_sub(u->refused, 1);
            return rc;
        }
        if (!u->attempts && u->refused) atomic_fetch_add(u->refused, 1);
        u->attempts++;
        if (!hh__conn_connected(u->conn)) u->uncertain = 1; /* the write may have run before the link broke */
        if (u->subject && strcmp(u->why, last) != 0) {
            hh__log(u->log, HH_LOG_WARN, "%s not written, retrying until Redis takes it: %s", u->subject, u->why);
            hh__strlcpy(last, u->why, sizeof(last));
        }
        if (atomic_load(u->giving_up)) {
            if (u->refused) atomic_fetch_sub(u->refused, 1);
            return -1;
        }
        if (!hh__conn_connected(u->conn)) {
            hh__conn_ready(u->conn); /* waits out the reconnect backoff */
        } else {
            /* In slices, so a stop that gives up is seen within 20 ms. */
            double until = hh__mono() + backoff;
            while (hh__mono() < until && !atomic_load(u->giving_up)) hh__sleep(0.02);
            backoff = backoff * 2 > 2.0 ? 2.0 : backoff * 2;
        }
    }
}

struct outcome_attempt {
    const hh__keys *k;
    const hh__outcome *o;
};

static int outcome_attempt(void *ctx, hh__conn *c, char *why, size_t whylen) {
    struct outcome_attempt *a = ctx;
    return hh__outcome_write(c, a->k, a->o, why, whylen);
}

int hh__outcome_write_until_done(hh__until_done *u, const hh__keys *k, const hh__outcome *o) {
    struct outcome_attempt a = {k, o};
    return hh__write_until_done(u, outcome_attempt, &a);
}
