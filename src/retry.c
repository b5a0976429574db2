/* retry.c -- failure handling (see retry.h). Builds payloads only; the
 * writes (ZADD retry / dead, together with the ack) are made by
 * processor.c, so the outcome and the ack go in one transaction. */
#include "retry.h"

#include <hiredis/sds.h>
#include <jansson.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* In long double: a count up to 2^63 is exact and c^4 (up to about 7e75)
 * stays finite, so the delay is Sidekiq's exact integer rounded once to a
 * double, however large; no int conversion anywhere (a count of 2^32 once
 * wrapped to 0 and gave a 15 s delay). A float count (3.0 read as Ruby
 * reads it) is computed the same way; a float so big that c^4 overflows
 * gives the largest finite delay, never inf. */
double hh_retry_delay(long double c, hh_rng *rng) {
    long double d = c * c * c * c + 15.0L + (long double)hh_rng_below(rng, 10) * (c + 1.0L);
    return d <= DBL_MAX ? (double)d : DBL_MAX; /* also for inf and NaN */
}

static char *base64(const unsigned char *in, size_t n) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = i + 1 < n ? tbl[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tbl[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

char *hh_backtrace_encode(char *const *lines, size_t n) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_string(lines[i]));
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    if (!text) return NULL;
    uLong srclen = (uLong)strlen(text);
    uLongf dstlen = compressBound(srclen);
    unsigned char *z = malloc(dstlen);
    char *out = NULL;
    if (z && compress2(z, &dstlen, (const Bytef *)text, srclen, Z_DEFAULT_COMPRESSION) == Z_OK)
        out = base64(z, dstlen);
    free(z);
    free(text);
    return out;
}

/* How many backtrace lines the payload asks for: "backtrace": true = all,
 * N = first N, absent/false = none. */
static size_t backtrace_wanted(const json_t *item, size_t have) {
    json_t *b = json_object_get(item, "backtrace");
    if (json_is_true(b)) return have;
    if (json_is_integer(b) && json_integer_value(b) > 0)
        return (size_t)json_integer_value(b) < have ? (size_t)json_integer_value(b) : have;
    return 0;
}

int hh_retry_plan(const hh_job *job, const hh_retry_config *cfg, double now, hh_rng *rng,
                  hh_failure_plan *out) {
    memset(out, 0, sizeof(*out));
    /* the original, not middleware's edits; a slim job's parse is its own */
    json_t *full = hh_job_item_full(job);
    json_t *msg = full && job->slim ? json_incref(full) : json_deep_copy(full);
    json_decref(full);
    if (!msg) return -1;
    json_t *retry = json_object_get(msg, "retry");
    /* Absent/null: the class's own option (true for every registered
     * handler); an unknown class has none, so only the payload counts and
     * the job is discarded. */
    int falsy = json_is_false(retry) || ((!retry || json_is_null(retry)) && !cfg->class_known);
    if (falsy) {
        json_decref(msg);
        out->kind = HH_FAIL_DISCARD;
        out->reason = retry ? "retry is false" : "unknown class and no retry option";
        return 0;
    }
    json_t *rq = json_object_get(msg, "retry_queue");
    json_object_set_new(msg, "queue", json_string(json_is_string(rq) ? json_string_value(rq) : job->queue));
    json_object_set_new(msg, "error_message", json_string(job->error_message ? job->error_message : ""));
    json_object_set_new(msg, "error_class", json_string(job->error_class ? job->error_class : "StandardError"));
    /* retry_count as Sidekiq 6.4 reads it (`msg["retry_count"] += 1` when
     * truthy): absent, null or false is a first failure; an integer gains 1
     * (negative ones too, as in Ruby); a float stays a float (3.0 -> 4.0).
     * Anything else ("3", true, [], {}) makes Ruby raise TypeError there: 6.4
     * writes no retry and drops the job. hiredhand writes no retry either,
     * but keeps the job in the dead set with the reason, untouched. */
    json_t *rc = json_object_get(msg, "retry_count");
    json_int_t count = 0;
    double fcount = 0;
    int is_real = 0, unusable = 0, present = rc && !json_is_null(rc) && !json_is_false(rc);
    if (json_is_integer(rc)) {
        json_int_t prev = json_integer_value(rc);
        count = prev == LLONG_MAX ? prev : prev + 1; /* Ruby goes to a bignum: saturate */
    } else if (json_is_real(rc)) {
        is_real = 1;
        fcount = json_real_value(rc) + 1.0;
        json_object_set_new(msg, "retry_count", json_real(fcount));
    } else if (present) {
        unusable = 1;
    }
    if (unusable) {
        char *shown = json_dumps(rc, JSON_ENCODE_ANY | JSON_COMPACT);
        sds why = sdscatprintf(sdsempty(), "%s [not retried: retry_count %.64s%s is not a number]",
                               job->error_message ? job->error_message : "", shown ? shown : "?",
                               shown && strlen(shown) > 64 ? "..." : "");
        free(shown);
        if (why) json_object_set_new(msg, "error_message", json_stringn(why, sdslen(why)));
        sdsfree(why);
        json_object_set_new(msg, "retried_at", hh_json_time_new(now, cfg->timestamps));
    } else if (present) {
        json_object_set_new(msg, "retried_at", hh_json_time_new(now, cfg->timestamps));
        if (!is_real) json_object_set_new(msg, "retry_count", json_integer(count));
    } else {
        json_object_set_new(msg, "failed_at", hh_json_time_new(now, cfg->timestamps));
        json_object_set_new(msg, "retry_count", json_integer(count));
    }
    size_t nb = backtrace_wanted(msg, job->nbacktrace);
    if (nb) {
        char *bt = hh_backtrace_encode(job->backtrace, nb);
        if (bt) json_object_set_new(msg, "error_backtrace", json_string(bt));
        free(bt);
    }
    json_int_t max = json_is_integer(retry) ? json_integer_value(retry) : cfg->max_retries;
    int exhausted = is_real ? !(fcount < (double)max) : count >= max;
    if (unusable) {
        out->kind = HH_FAIL_DEAD;
        out->score = now;
        out->reason = "retry_count is not a number";
    } else if (exhausted) {
        if (json_is_false(json_object_get(msg, "dead"))) {
            out->kind = HH_FAIL_DISCARD;
            out->reason = "retries exhausted and dead is false";
        } else {
            out->kind = HH_FAIL_DEAD;
            out->score = now;
            out->reason = "retries exhausted";
        }
    } else {
        out->kind = HH_FAIL_RETRY;
        double delay = hh_retry_delay(is_real ? (long double)fcount : (long double)count, rng);
        out->score = now + delay;
        if (!isfinite(out->score)) out->score = DBL_MAX;
        out->reason = "will retry";
    }
    if (out->kind != HH_FAIL_DISCARD && !(out->payload = hh_json_dump(msg))) {
        json_decref(msg);
        return -1;
    }
    json_decref(msg);
    return 0;
}

/* A malformed object holding an integer beyond 64 bits (jansson has no
 * bignums): its reason goes in as text spliced before the closing brace, so
 * every byte of it, the bignum included, stays as it was. NULL when it is
 * not such an object. */
static char *splice_reason(const char *payload, size_t len, const char *why, double now, hh_timestamps ts,
                           size_t *outlen) {
    json_t *probe = json_loadb(payload, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
    size_t close = len;
    while (close > 0 && (payload[close - 1] == ' ' || payload[close - 1] == '\t' || payload[close - 1] == '\r' || payload[close - 1] == '\n')) close--;
    if (!json_is_object(probe) || close == 0 || payload[close - 1] != '}') {
        json_decref(probe);
        return NULL;
    }
    close--;
    json_t *add = json_object();
    json_object_set_new(add, "error_class", json_string("hiredhand::InvalidJob"));
    json_object_set_new(add, "error_message", json_string(why));
    if (!json_object_get(probe, "failed_at")) json_object_set_new(add, "failed_at", hh_json_time_new(now, ts));
    char *inner = hh_json_dump(add); /* {"error_class":...}: its braces dropped below */
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

char *hh_malformed_dead_payload(const char *payload, size_t len, const char *why, double now,
                                hh_timestamps ts, size_t *outlen) {
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
        if (!json_object_get(item, "failed_at"))
            json_object_set_new(item, "failed_at", hh_json_time_new(now, ts));
        out = hh_json_dump(item);
    }
    else if (item) {
        /* Valid JSON that is not an object (an array, a number...): stored as
         * is it would break Sidekiq's Dead page (JobRecord indexes it like a
         * hash), so it goes in as an object holding the exact text. */
        char jid[HH_JID_SIZE];
        json_t *w = json_object();
        json_t *args = json_array();
        json_array_append_new(args, json_stringn(payload, len));
        json_object_set_new(w, "class", json_string("hiredhand::InvalidJob"));
        json_object_set_new(w, "args", args);
        if (hh_new_jid(jid) == 0) json_object_set_new(w, "jid", json_string(jid));
        json_object_set_new(w, "retry", json_false());
        json_object_set_new(w, "error_class", json_string("hiredhand::InvalidJob"));
        json_object_set_new(w, "error_message", json_string(why));
        json_object_set_new(w, "failed_at", hh_json_time_new(now, ts));
        out = hh_json_dump(w);
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
