/* retry.c -- the arithmetic of a failed job's plan (see retry.h): Sidekiq's
 * retry delay and fields, the dead set's payload. Builds payloads only and
 * touches no Redis key: outcome.c writes them. */
#include "retry.h"

#include <hiredis/sds.h>
#include <jansson.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <openssl/evp.h>
#include "error.h"

/* In long double: a count up to 2^63 is exact and c^4 (up to about 7e75)
 * stays finite, so the delay is Sidekiq's exact integer rounded once to a
 * double, however large; no int conversion anywhere (a count of 2^32 once
 * wrapped to 0 and gave a 15 s delay). A float count (3.0 read as Ruby
 * reads it) is computed the same way; a float so big that c^4 overflows
 * gives the largest finite delay, never inf. */
double hh__retry_delay(long double c, hh__rng *rng) {
    long double d = c * c * c * c + 15.0L + (long double)hh__rng_below(rng, 10) * (c + 1.0L);
    return d <= DBL_MAX ? (double)d : DBL_MAX; /* also for inf and NaN */
}

double hh__retry_delay8(long double c, hh__rng *rng) {
    long double d = c * c * c * c + 15.0L + floorl((long double)hh__rng_double(rng) * 10.0L * (c + 1.0L));
    return d <= DBL_MAX && d >= 0 ? (double)d : d < 0 ? 15.0 : DBL_MAX; /* also for inf and NaN */
}

static char *base64(const unsigned char *in, size_t n) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = i + 1 < n ? tbl[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tbl[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

char *hh__backtrace_encode(char *const *lines, size_t n) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_string(lines[i]));
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    if (!text) return NULL;
    uLong srclen = (uLong)strlen(text);
    uLongf dstlen = compressBound(srclen);
    unsigned char *z = malloc(dstlen);
    char *out = NULL;
    if (z && compress2(z, &dstlen, (const Bytef *)text, srclen, Z_DEFAULT_COMPRESSION) == Z_OK) out = base64(z, dstlen);
    free(z);
    free(text);
    return out;
}

#define HH_BACKTRACE_MAX (16u << 20) /* inflated bytes hh_backtrace_decode accepts */

char *hh_backtrace_decode(const char *encoded, size_t len) {
    if (!encoded || !len || len > HH_BACKTRACE_MAX) {
        hh__fail(HH_ERR_INVALID, "backtrace decode: empty or over 16 MiB");
        return NULL;
    }
    /* Sidekiq 6.x wrote Base64.encode64 (a line end every 60 characters),
     * 7.x and later strict base64: line ends are dropped first */
    char *b64 = malloc(len + 1);
    unsigned char *z = malloc(len / 4 * 3 + 4);
    size_t bn = 0;
    for (size_t i = 0; b64 && i < len; i++)
        if (encoded[i] != '\n' && encoded[i] != '\r') b64[bn++] = encoded[i];
    int zn = b64 && z && bn && bn % 4 == 0 ? EVP_DecodeBlock(z, (const unsigned char *)b64, (int)bn) : -1;
    /* EVP_DecodeBlock counts the '=' padding as zero bytes: drop them */
    if (zn >= 0 && b64[bn - 1] == '=') zn--;
    if (zn >= 0 && b64[bn - 2] == '=') zn--;
    free(b64);
    if (zn < 0) {
        free(z);
        hh__fail(HH_ERR_INVALID, "backtrace decode: not base64");
        return NULL;
    }
    z_stream st;
    memset(&st, 0, sizeof st);
    if (inflateInit(&st) != Z_OK) {
        free(z);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *out = malloc(cap);
    if (!out) {
        inflateEnd(&st);
        free(z);
        return NULL;
    }
    int zr = Z_OK;
    st.next_in = z;
    st.avail_in = (uInt)zn;
    while (zr == Z_OK) {
        if (cap - n < 2) {
            char *bigger = cap < HH_BACKTRACE_MAX ? realloc(out, cap * 2) : NULL;
            if (!bigger) break;
            out = bigger;
            cap *= 2;
        }
        st.next_out = (Bytef *)out + n;
        st.avail_out = (uInt)(cap - n - 1);
        zr = inflate(&st, Z_NO_FLUSH);
        n = cap - 1 - st.avail_out;
    }
    inflateEnd(&st);
    free(z);
    if (zr != Z_STREAM_END) {
        free(out);
        hh__fail(HH_ERR_INVALID, "backtrace decode: not zlib data (or over 16 MiB)");
        return NULL;
    }
    out[n] = '\0';
    json_t *arr = json_loadb(out, n, 0, NULL);
    free(out);
    char *text = json_is_array(arr) ? json_dumps(arr, JSON_COMPACT) : NULL;
    if (!json_is_array(arr)) hh__fail(HH_ERR_INVALID, "backtrace decode: not a JSON array of lines");
    json_decref(arr);
    return text;
}

/* How many backtrace lines the payload asks for, as Sidekiq (6.4 to 8.x)
 * reads "backtrace": absent, null or false: none (-1, no error_backtrace);
 * true: all; anything else is Ruby's `backtrace[0...value.to_i]`: the first
 * N lines, N < 0 all but the last -N, 0 none (an empty list is still
 * written). A string counts by its leading digits, a real truncated. */
static long backtrace_wanted(const json_t *item, size_t have) {
    json_t *b = json_object_get(item, "backtrace");
    if (!b || json_is_null(b) || json_is_false(b)) return -1;
    if (json_is_true(b)) return (long)have;
    long long n;
    if (json_is_integer(b)) n = json_integer_value(b);
    else if (json_is_real(b))
        n = isfinite(json_real_value(b)) && fabs(json_real_value(b)) < 9e18 ? (long long)json_real_value(b) : 0;
    else if (json_is_string(b)) n = strtoll(json_string_value(b), NULL, 10);
    else return -1; /* Ruby raises on [].to_i: nothing it could store */
    if (n < 0) n = (long long)have + n > 0 ? (long long)have + n : 0;
    return n < (long long)have ? (long)n : (long)have;
}

/* A lossy job (read with every integer as a real: it holds one beyond 64
 * bits, job.h): msg's key set back to the integer its stored text is, when
 * that text is an integer within 64 bits, so the arithmetic below sees
 * what Sidekiq sees (retry_count 3, not 3.0). Returns the stored text of
 * an integer beyond 64 bits (malloc'd), for retry_count's step; else NULL. */
static char *lossy_int(const hh_job *job, json_t *msg, const char *key) {
    size_t n;
    const char *t = hh__json_get_raw(job->payload, job->len, key, &n);
    if (!t || !n) return NULL;
    size_t i = t[0] == '-' ? 1 : 0;
    if (i == n) return NULL;
    for (size_t k = i; k < n; k++)
        if (t[k] < '0' || t[k] > '9') return NULL; /* a real, a string...: as read */
    char buf[24];
    if (n < sizeof(buf)) {
        memcpy(buf, t, n);
        buf[n] = '\0';
        errno = 0;
        char *end;
        long long v = strtoll(buf, &end, 10);
        if (errno == 0 && *end == '\0') {
            json_object_set_new(msg, key, json_integer((json_int_t)v));
            return NULL;
        }
    }
    return strndup(t, n);
}

/* The payload of a lossy job's plan: its stored text with only the members
 * the plan changed rewritten in place (or appended), so every integer
 * beyond 64 bits keeps its digits. rc_text: retry_count's new digits when
 * it is beyond 64 bits itself. malloc'd; NULL when out of memory. */
static char *lossy_payload(const hh_job *job, const json_t *orig, const json_t *msg, const char *rc_text) {
    static const char *const keys[] = {"queue",      "error_message", "error_class",    "failed_at",
                                       "retried_at", "retry_count",   "error_backtrace"};
    size_t len = job->len;
    char *out = malloc(len + 1);
    if (!out) return NULL;
    memcpy(out, job->payload, len);
    out[len] = '\0';
    for (size_t i = 0; out && i < sizeof(keys) / sizeof(keys[0]); i++) {
        const json_t *v = json_object_get(msg, keys[i]);
        int rc = !strcmp(keys[i], "retry_count") && rc_text;
        if (!v || (!rc && json_equal((json_t *)v, json_object_get(orig, keys[i])))) continue;
        char *text = rc ? strdup(rc_text) : hh__json_dump(v);
        char *set = text ? hh__json_set_raw(out, len, keys[i], text, &len) : NULL;
        free(text);
        free(out);
        out = set;
    }
    return out;
}

int hh__retry_plan(const hh_job *job, const hh__retry_config *cfg, double now, hh__rng *rng, hh__failure_plan *out) {
    memset(out, 0, sizeof(*out));
    /* the original, not middleware's edits; a slim job's parse is its own */
    json_t *full = hh__job_item_full(job);
    json_t *msg = full && job->slim ? json_incref(full) : json_deep_copy(full);
    if (!msg) {
        json_decref(full);
        return -1;
    }
    /* A job holding an integer beyond 64 bits was read with every integer
     * as a real: the numbers the plan reads are taken from their stored
     * text, and its payload is the stored text with only the changed
     * members rewritten (lossy_payload), as Ruby's Integer keeps them. */
    char *rc_big = NULL;
    if (job->lossy) {
        char *huge = lossy_int(job, msg, "retry");
        if (huge && huge[0] != '-') json_object_set_new(msg, "retry", json_integer(LLONG_MAX)); /* never runs out */
        free(huge);
        free(lossy_int(job, msg, "backtrace"));
        rc_big = lossy_int(job, msg, "retry_count");
    }
    json_t *retry = json_object_get(msg, "retry");
    /* Absent/null: the class's own option (true for every registered
     * handler); an unknown class has none, so only the payload counts and
     * the job is discarded. */
    int falsy = json_is_false(retry) || ((!retry || json_is_null(retry)) && !cfg->class_known);
    if (falsy) {
        json_decref(msg);
        json_decref(full);
        free(rc_big);
        out->kind = HH_FAIL_DISCARD;
        out->reason = retry ? "retry is false" : "unknown class and no retry option";
        return 0;
    }
    json_t *rq = json_object_get(msg, "retry_queue");
    json_object_set_new(msg, "queue", json_string(json_is_string(rq) ? json_string_value(rq) : job->queue));
    /* length-aware: an unknown class's NameError holds its name whole, NUL included */
    json_object_set_new(msg, "error_message",
                        job->error_message ? json_stringn(job->error_message, job->error_message_len)
                                           : json_string(""));
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
    int big = 0, is_real = 0, unusable = 0, present = rc && !json_is_null(rc) && !json_is_false(rc);
    if (json_is_integer(rc)) {
        json_int_t prev = json_integer_value(rc);
        count = prev == LLONG_MAX ? prev : prev + 1; /* saturated for the arithmetic below */
        big = prev == LLONG_MAX;                     /* Ruby goes to a bignum: written as its digits below */
    } else if (json_is_real(rc)) {
        is_real = 1;
        fcount = json_real_value(rc) + 1.0;
        json_object_set_new(msg, "retry_count", json_real(fcount));
    } else if (present) {
        unusable = 1;
    }
    if (unusable) {
        char *shown = json_dumps(rc, JSON_ENCODE_ANY | JSON_COMPACT);
        sds why = sdscatlen(sdsempty(), job->error_message ? job->error_message : "", job->error_message_len);
        if (why)
            why = sdscatprintf(why, " [not retried: retry_count %.64s%s is not a number]", shown ? shown : "?",
                               shown && strlen(shown) > 64 ? "..." : "");
        free(shown);
        if (why) json_object_set_new(msg, "error_message", json_stringn(why, sdslen(why)));
        sdsfree(why);
        json_object_set_new(msg, "retried_at", hh__json_time_new(now, cfg->timestamps));
    } else if (present) {
        json_object_set_new(msg, "retried_at", hh__json_time_new(now, cfg->timestamps));
        if (!is_real) json_object_set_new(msg, "retry_count", json_integer(count));
    } else {
        json_object_set_new(msg, "failed_at", hh__json_time_new(now, cfg->timestamps));
        json_object_set_new(msg, "retry_count", json_integer(count));
    }
    long nb = backtrace_wanted(msg, job->nbacktrace);
    if (nb >= 0) {
        char *bt = hh__backtrace_encode(job->backtrace, (size_t)nb);
        if (bt) json_object_set_new(msg, "error_backtrace", json_string(bt));
        free(bt);
    }
    json_int_t max = json_is_integer(retry) ? json_integer_value(retry) : cfg->max_retries;
    int exhausted = is_real ? !(fcount < (double)max) : count >= max;
    /* retry_for (Sidekiq 7.1+): retries end once failed_at + retry_for is
     * past. 7.x checks it besides the count; 8.x (millisecond timestamps)
     * instead of the count. */
    const json_t *rf = json_object_get(msg, "retry_for");
    int window_over = 0;
    if (json_is_number(rf)) {
        double failed_at = present ? hh__payload_time(full, job->lossy, job->payload, job->len, "failed_at") : now;
        window_over = failed_at + json_number_value(rf) < now;
        exhausted = cfg->timestamps == HH_TS_MILLIS ? window_over : exhausted || window_over;
    }
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
            out->reason = window_over ? "retry_for window over" : "retries exhausted";
        }
    } else {
        out->kind = HH_FAIL_RETRY;
        long double c = is_real ? (long double)fcount : (long double)count;
        double delay = cfg->timestamps == HH_TS_MILLIS ? hh__retry_delay8(c, rng) : hh__retry_delay(c, rng);
        out->score = now + delay;
        if (!isfinite(out->score)) out->score = DBL_MAX;
        out->reason = "will retry";
    }
    if (out->kind != HH_FAIL_DISCARD) {
        if (job->lossy) {
            char *rc_text = rc_big ? hh__json_int_step(rc_big, strlen(rc_big), 1) : NULL;
            out->payload = (!rc_big || rc_text) ? lossy_payload(job, full, msg, rc_text) : NULL;
            free(rc_text);
        } else {
            out->payload = hh__json_dump(msg);
        }
    }
    free(rc_big);
    json_decref(full);
    if (out->kind != HH_FAIL_DISCARD && !out->payload) {
        json_decref(msg);
        return -1;
    }
    if (out->payload && big) { /* 9223372036854775807 + 1, as Sidekiq writes it */
        char *set = hh__json_set_raw(out->payload, strlen(out->payload), "retry_count", "9223372036854775808", NULL);
        free(out->payload);
        if (!(out->payload = set)) {
            json_decref(msg);
            return -1;
        }
    }
    json_decref(msg);
    return 0;
}
