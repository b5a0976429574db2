/* job.c -- the job payload (see job.h). No Redis keys. */
#include "job.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/sds.h>
#include "util.h"

#define HH_ERROR_MESSAGE_MAX 10000 /* Sidekiq truncates error_message here */

static char *dupn(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

hh_job *hh__job_new(const char *payload, size_t len, const char *queue, char *why, size_t whylen) {
    char *copy = dupn(payload, len);
    return copy ? hh__job_adopt(copy, len, queue, why, whylen) : NULL;
}

/* Parsing a payload with jansson holds it three times at its peak (the
 * bytes, the lexer's copy of a string token, the decoded string): big
 * payloads are parsed one at a time, so threads fetching several at once
 * add their payloads, not three times each. */
static pthread_mutex_t big_parse = PTHREAD_MUTEX_INITIALIZER;

static json_t *parse(const char *payload, size_t len, size_t flags, json_error_t *err) {
    int big = len >= HH_JOB_SLIM_BYTES;
    if (big) pthread_mutex_lock(&big_parse);
    json_t *item = json_loadb(payload, len, flags, err);
    if (big) pthread_mutex_unlock(&big_parse);
    return item;
}

/* jansson's errors for an integer beyond 64 bits, positive or negative. */
static int too_big(const json_error_t *err) {
    return strstr(err->text, "too big integer") || strstr(err->text, "too big negative integer");
}

json_t *hh__json_load_payload(const char *payload, size_t len, int *lossy) {
    json_error_t err;
    *lossy = 0;
    json_t *item = json_loadb(payload, len, JSON_ALLOW_NUL, &err);
    if (!item && too_big(&err)) {
        item = json_loadb(payload, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
        *lossy = item != NULL;
    }
    return item;
}

hh_job *hh__job_adopt(char *payload, size_t len, const char *queue, char *why, size_t whylen) {
    /* the queue name lives in the same block: one allocation per job less,
     * freed by whichever thread sends the ack (processor.c) */
    if (!queue) queue = "default";
    size_t ql = strlen(queue);
    hh_job *job = calloc(1, sizeof(*job) + ql + 1);
    if (!job) {
        free(payload);
        return NULL;
    }
    job->payload = payload;
    job->len = len;
    job->queue = memcpy((char *)(job + 1), queue, ql + 1);
    job->retry_count = -1;
    job->queue_index = -1;
    job->jid = "";
    if (!job->payload) {
        hh__job_free(job);
        return NULL;
    }
    if (why && whylen) why[0] = '\0';
    json_error_t err;
    json_t *item = parse(payload, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);
    if (!item && too_big(&err)) {
        /* Ruby's JSON reads bignums, so Sidekiq runs such jobs: read the
         * metadata with every integer as a real and keep the bytes as they
         * are (jansson has no bignums). */
        item = parse(payload, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
        job->lossy = item != NULL;
    }
    if (!item) {
        if (why)
            snprintf(why, whylen, "payload is not valid JSON: %s (line %d, column %d)", err.text, err.line, err.column);
        return job;
    }
    const char *problem = hh__job_problem(item);
    json_t *k = json_object_get(item, "class");
    if (problem) {
        if (why) hh__strlcpy(why, problem, whylen);
        json_decref(item);
        return job;
    }
    job->item = item;
    job->klass = json_string_value(k);
    job->klass_len = json_string_length(k);
    json_t *j = json_object_get(item, "jid");
    if (json_is_string(j)) job->jid = json_string_value(j);
    json_t *rc = json_object_get(item, "retry_count");
    if (json_is_number(rc)) {
        double v = json_number_value(rc);
        job->retry_count = v < 0 ? -1 : v > INT_MAX ? INT_MAX : (int)v;
    }
    if (len >= HH_JOB_SLIM_BYTES && !job->lossy && json_object_set_new(item, "args", json_array()) == 0)
        job->slim = 1; /* same key, same place; the args are parsed again when asked for */
    return job;
}

const char *hh__job_problem(const json_t *item) {
    json_t *k = json_object_get(item, "class");
    if (!json_is_object(item)) return "payload is not a JSON object";
    if (!json_is_string(k)) return "payload has no \"class\" string";
    if (json_string_length(k) == 0) return "payload has an empty \"class\"";
    if (!json_is_array(json_object_get(item, "args"))) return "payload has no \"args\" array";
    return NULL;
}

json_t *hh__job_item_full(const hh_job *job) {
    if (!job->item) return NULL;
    if (!job->slim) return json_incref(job->item);
    return parse(job->payload, job->len, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
}

void hh__job_reset_error(hh_job *job) {
    free(job->error_class);
    free(job->error_message);
    for (size_t i = 0; i < job->nbacktrace; i++) free(job->backtrace[i]);
    free(job->backtrace);
    job->error_class = job->error_message = NULL;
    job->error_message_len = 0;
    job->backtrace = NULL;
    job->nbacktrace = 0;
}

void hh__job_shed(hh_job *job) {
    hh__job_reset_error(job);
    json_decref(job->item);
    job->item = NULL;
    job->klass = NULL;
    job->klass_len = 0;
    job->jid = "";
    free(job->args_json);
    job->args_json = NULL;
}

void hh__job_free(hh_job *job) {
    if (!job) return;
    hh__job_reset_error(job);
    json_decref(job->item);
    free(job->payload);
    free(job->args_json);
    free(job);
}

double hh__json_time(const json_t *v) {
    if (json_is_real(v)) return json_real_value(v);
    if (json_is_integer(v)) return (double)json_integer_value(v) / 1000.0;
    return 0;
}

double hh__payload_time(const json_t *item, int lossy, const char *payload, size_t len, const char *key) {
    const json_t *v = json_object_get(item, key);
    if (!lossy || !json_is_real(v)) return hh__json_time(v);
    size_t n;
    const char *tok = hh__json_get_raw(payload, len, key, &n);
    int integer = tok && n && !memchr(tok, '.', n) && !memchr(tok, 'e', n) && !memchr(tok, 'E', n);
    return integer ? json_real_value(v) / 1000.0 : json_real_value(v);
}

json_t *hh__json_time_new(double epoch, hh_timestamps ts) {
    if (ts == HH_TS_MILLIS) return json_integer((json_int_t)llround(epoch * 1000.0));
    return json_real(epoch);
}

/* Shortest text that reads back as the same double, as Ruby's Float#to_s
 * writes it, so a real stored by Sidekiq (1795962157.061338, 0.1) keeps its
 * exact token through a retry or the scheduler. jansson only offers a
 * fixed precision, which would print 1795962157.0613379. */
static void fmt_real(char *buf, size_t len, double v) {
    for (int prec = 15; prec <= 17; prec++) {
        hh__snprintf_c(buf, len, "%.*g", prec, v); /* '.' whatever the locale */
        if (hh__strtod_c(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".eEn")) { /* keep it a real: 1.0 stays 1.0 */
        size_t l = strlen(buf);
        if (l + 2 < len) memcpy(buf + l, ".0", 3);
    }
}

/* Writes v into *out. Strings, integers and literals are printed by jansson
 * itself (escaping stays jansson's); only containers are walked here, so
 * reals can be printed in their shortest form. Returns 0 or -1. */
static int dump_into(const json_t *v, sds *out) {
    char num[40];
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d)) return -1;
        fmt_real(num, sizeof(num), d);
        *out = sdscat(*out, num);
    } else if (json_is_object(v)) {
        const char *key;
        json_t *val;
        int first = 1;
        *out = sdscatlen(*out, "{", 1);
        json_object_foreach((json_t *)v, key, val) {
            json_t *k = json_string(key);
            char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
            json_decref(k);
            if (!ks) return -1;
            if (!first) *out = sdscatlen(*out, ",", 1);
            first = 0;
            *out = sdscat(*out, ks);
            *out = sdscatlen(*out, ":", 1);
            free(ks);
            if (!*out || dump_into(val, out) != 0) return -1;
        }
        *out = sdscatlen(*out, "}", 1);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *val;
        *out = sdscatlen(*out, "[", 1);
        json_array_foreach(v, i, val) {
            if (i) *out = sdscatlen(*out, ",", 1);
            if (!*out || dump_into(val, out) != 0) return -1;
        }
        *out = sdscatlen(*out, "]", 1);
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        if (!s) return -1;
        *out = sdscat(*out, s);
        free(s);
    }
    return *out ? 0 : -1;
}

char *hh__json_dump(const json_t *v) {
    sds out = sdsempty();
    if (!out || dump_into(v, &out) != 0) {
        sdsfree(out);
        return NULL;
    }
    char *s = malloc(sdslen(out) + 1);
    if (s) memcpy(s, out, sdslen(out) + 1);
    sdsfree(out);
    return s;
}

/* One JSON value at s: how many bytes it takes (jansson says where it ended,
 * JSON_DISABLE_EOF_CHECK letting text follow it), or 0 when there is none.
 * *str, when non-NULL, receives the value if it is a string. */
static size_t value_len(const char *s, size_t len, json_t **str) {
    json_error_t err;
    json_t *v =
        json_loadb(s, len, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
    if (!v) return 0;
    size_t n = err.position > 0 ? (size_t)err.position : 0;
    if (str && json_is_string(v)) *str = json_incref(v);
    json_decref(v);
    return n <= len ? n : 0;
}

static size_t skip_ws(const char *s, size_t len, size_t i) {
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

/* Finds the top-level member `key` of the JSON object text obj: [*vs, *ve)
 * is its value's text (the last occurrence wins, as when the text is
 * parsed), *last the end of the last member's value (or the '}' of an
 * empty object), *members how many there are. Returns 1 found, 0 not
 * found, -1 when obj is not an object. */
static int find_member(const char *obj, size_t len, const char *key, size_t *vs, size_t *ve, size_t *last,
                       int *members) {
    size_t i = skip_ws(obj, len, 0), klen = strlen(key);
    int found = 0;
    *vs = *ve = *last = 0;
    *members = 0;
    if (i >= len || obj[i] != '{') return -1;
    i = skip_ws(obj, len, i + 1);
    if (i < len && obj[i] == '}') {
        *last = i;
        return 0;
    }
    for (;;) { /* each member: "key" : value, then ',' or '}' */
        json_t *k = NULL;
        size_t n = value_len(obj + i, len - i, &k);
        int match = k && json_string_length(k) == klen && memcmp(json_string_value(k), key, klen) == 0;
        json_decref(k);
        if (!n || !k) return -1;
        i = skip_ws(obj, len, i + n);
        if (i >= len || obj[i] != ':') return -1;
        i = skip_ws(obj, len, i + 1);
        if (!(n = value_len(obj + i, len - i, NULL))) return -1;
        if (match) {
            found = 1;
            *vs = i, *ve = i + n;
        }
        (*members)++;
        *last = i + n;
        i = skip_ws(obj, len, *last);
        if (i < len && obj[i] == ',') {
            i = skip_ws(obj, len, i + 1);
            continue;
        }
        if (i < len && obj[i] == '}') return found;
        return -1;
    }
}

const char *hh__json_get_raw(const char *obj, size_t len, const char *key, size_t *vlen) {
    size_t vs, ve, last;
    int members;
    if (find_member(obj, len, key, &vs, &ve, &last, &members) != 1) return NULL;
    *vlen = ve - vs;
    return obj + vs;
}

/* Adds 1 to (up) or takes 1 from a magnitude of decimal digits in place;
 * d has room for one more digit in front (d[-1] is writable). Returns the
 * new start. */
static char *digits_step(char *d, size_t n, int up) {
    size_t i = n;
    if (up) {
        while (i > 0 && d[i - 1] == '9') d[--i] = '0';
        if (i > 0) {
            d[i - 1]++;
            return d;
        }
        *--d = '1';
        return d;
    }
    while (i > 0 && d[i - 1] == '0') d[--i] = '9';
    if (i > 0) d[i - 1]--;
    while (d[0] == '0' && d[1]) d++; /* 10 - 1 = 9, not 09 */
    return d;
}

char *hh__json_int_step(const char *tok, size_t n, int delta) {
    int neg = n > 0 && tok[0] == '-';
    size_t m = n - (size_t)neg;
    if (m == 0 || (delta != 1 && delta != -1)) return NULL;
    for (size_t i = 0; i < m; i++)
        if (tok[neg + i] < '0' || tok[neg + i] > '9') return NULL; /* a real (1.5, 1e3) or not a number */
    char *buf = malloc(m + 3);                                     /* sign, a carry digit, the NUL */
    if (!buf) return NULL;
    char *d = buf + 2;
    memcpy(d, tok + neg, m);
    d[m] = '\0';
    while (d[0] == '0' && d[1]) d++, m--; /* -0 and 007 read as Ruby reads them: 0 and 7 */
    int zero = d[0] == '0';
    if (zero) neg = 0;
    /* v + delta: the magnitude grows when the signs agree, else shrinks
     * (0 - 1 = -1 crosses zero) */
    int grow = zero ? 1 : (delta > 0) != neg;
    if (zero && delta < 0) neg = 1;
    d = digits_step(d, m, grow);
    if (d[0] == '0') neg = 0; /* -1 + 1 = 0 */
    if (neg) *--d = '-';
    memmove(buf, d, strlen(d) + 1);
    return buf;
}

char *hh__json_set_raw_take(char *obj, size_t *len, const char *key, json_t *v) {
    char *text = v ? hh__json_dump(v) : NULL;
    json_decref(v);
    char *out = text ? hh__json_set_raw(obj, *len, key, text, len) : NULL;
    free(text);
    free(obj);
    return out;
}

char *hh__json_set_raw(const char *obj, size_t len, const char *key, const char *value, size_t *outlen) {
    size_t vs, ve, last;
    int members;
    int found = find_member(obj, len, key, &vs, &ve, &last, &members);
    if (found < 0) return NULL;
    sds out = sdsempty();
    if (found) {
        out = sdscatlen(out, obj, vs);
        if (out) out = sdscat(out, value);
        if (out) out = sdscatlen(out, obj + ve, len - ve);
    } else { /* appended after the last member, as Ruby's Hash#[]= appends */
        json_t *k = json_string(key);
        char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
        json_decref(k);
        if (!ks) {
            sdsfree(out);
            return NULL;
        }
        if (out) out = sdscatlen(out, obj, last);
        if (out && members) out = sdscatlen(out, ",", 1);
        if (out) out = sdscat(out, ks);
        if (out) out = sdscatlen(out, ":", 1);
        if (out) out = sdscat(out, value);
        if (out) out = sdscatlen(out, obj + last, len - last);
        free(ks);
    }
    if (!out) return NULL;
    char *s = malloc(sdslen(out) + 1);
    if (s) {
        memcpy(s, out, sdslen(out) + 1);
        if (outlen) *outlen = sdslen(out);
    }
    sdsfree(out);
    return s;
}

/* ------------------------------------------------------- public accessors */

const char *hh_job_jid(const hh_job *job) { return job->jid; }
const char *hh_job_class(const hh_job *job) { return job->klass; }

/* Rails' Sidekiq adapter pushes every Active Job under one wrapper class
 * (the 6.x adapter's name, still accepted by Sidekiq 8, and the name
 * Sidekiq 7.x/8.x ship), the job's own class in "wrapped": that is the
 * class Sidekiq's Web UI shows, and the one a handler is chosen by. */
static const char *const aj_wrappers[] = {"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
                                          "Sidekiq::ActiveJob::Wrapper"};

const char *hh__item_display_class(const json_t *item, size_t *len) {
    json_t *k = json_object_get(item, "class");
    if (!json_is_string(k)) return NULL;
    const char *klass = json_string_value(k);
    size_t klen = json_string_length(k);
    for (size_t i = 0; i < sizeof(aj_wrappers) / sizeof(*aj_wrappers); i++) {
        if (strlen(aj_wrappers[i]) != klen || memcmp(aj_wrappers[i], klass, klen) != 0) continue;
        json_t *w = json_object_get(item, "wrapped");
        if (json_is_string(w) && json_string_length(w) > 0) {
            if (len) *len = json_string_length(w);
            return json_string_value(w);
        }
    }
    if (len) *len = klen;
    return klass;
}

/* Sidekiq's Job#display_class (what its Web UI and API show): the
 * payload's own "display_class"; for Active Job's wrappers the wrapped
 * class ("wrapped", else args[0]), and for Action Mailer's delivery jobs
 * "Mailer#method" from the job's first two arguments; else "class".
 * Sidekiq::Extensions::Delayed* payloads hold YAML, which is not read
 * here: they show their class, as Sidekiq does when its YAML load fails. */
json_t *hh__item_web_class(const json_t *item) {
    json_t *k = json_object_get(item, "class"), *dc = json_object_get(item, "display_class");
    if (json_is_string(dc)) return json_stringn(json_string_value(dc), json_string_length(dc));
    if (!json_is_string(k)) return NULL;
    int wrapper = 0;
    for (size_t i = 0; i < sizeof(aj_wrappers) / sizeof(*aj_wrappers); i++)
        if (strlen(aj_wrappers[i]) == json_string_length(k) &&
            !memcmp(aj_wrappers[i], json_string_value(k), json_string_length(k)))
            wrapper = 1;
    json_t *a0 = json_array_get(json_object_get(item, "args"), 0), *job = json_object_get(item, "wrapped");
    if (wrapper && (!job || json_is_null(job) || json_is_false(job))) job = a0;
    if (wrapper && json_is_string(job)) {
        const char *jc = json_string_value(job);
        json_t *av = json_object_get(a0, "arguments");
        if ((!strcmp(jc, "ActionMailer::DeliveryJob") || !strcmp(jc, "ActionMailer::MailDeliveryJob")) &&
            json_is_string(json_array_get(av, 0)) && json_is_string(json_array_get(av, 1))) {
            /* arguments[0..1].join("#"): "UserMailer#welcome" */
            const json_t *m = json_array_get(av, 0), *meth = json_array_get(av, 1);
            size_t ml = json_string_length(m), tl = json_string_length(meth);
            char *buf = malloc(ml + tl + 1);
            if (!buf) return NULL;
            memcpy(buf, json_string_value(m), ml);
            buf[ml] = '#';
            memcpy(buf + ml + 1, json_string_value(meth), tl);
            json_t *out = json_stringn(buf, ml + tl + 1);
            free(buf);
            return out;
        }
        return json_stringn(jc, json_string_length(job));
    }
    return json_stringn(json_string_value(k), json_string_length(k));
}

const char *hh_job_handler_class(const hh_job *job, size_t *len) {
    const char *shown = job->item ? hh__item_display_class(job->item, len) : NULL;
    if (shown) return shown;
    if (len) *len = job->klass_len;
    return job->klass;
}
const char *hh_job_queue(const hh_job *job) { return job->queue; }
int hh_job_retry_count(const hh_job *job) { return job->retry_count; }

const char *hh_job_payload(const hh_job *job, size_t *len) {
    if (len) *len = job->len;
    return job->payload;
}

const char *hh_job_args(const hh_job *job) {
    hh_job *j = (hh_job *)job; /* lazily cached; the job belongs to one thread */
    if (!j->args_json && j->item) {
        json_t *full = hh__job_item_full(j);
        j->args_json = hh__json_dump(json_object_get(full, "args"));
        json_decref(full);
    }
    return j->args_json ? j->args_json : "[]";
}

char *hh_job_get(const hh_job *job, const char *key) {
    if (job->lossy) { /* read with every integer as a real: the stored text is the value */
        size_t n;
        const char *raw = hh__json_get_raw(job->payload, job->len, key, &n);
        return raw ? dupn(raw, n) : NULL;
    }
    json_t *full = job->slim && strcmp(key, "args") == 0 ? hh__job_item_full(job) : NULL;
    json_t *v = json_object_get(full ? full : job->item, key);
    char *out = v ? hh__json_dump(v) : NULL;
    json_decref(full);
    return out;
}

void hh__job_fail_bytes(hh_job *job, const char *error_class, const char *msg, size_t len) {
    free(job->error_class);
    free(job->error_message);
    /* JSON holds only UTF-8: a byte that is not is kept as the text \xNN,
     * as the log shows it (Sidekiq scrubs such bytes away; the text says
     * which they were, in the retry set, the Web UI and the CLI alike) */
    const char *ec = error_class ? error_class : "StandardError";
    job->error_class = hh__utf8_escape_len(ec, strlen(ec), NULL);
    char *clean = msg ? hh__utf8_escape_len(msg, len, &len) : NULL;
    if (clean && len > HH_ERROR_MESSAGE_MAX) {
        /* cut on a UTF-8 boundary, and not inside a \xNN */
        len = HH_ERROR_MESSAGE_MAX;
        while (len > 0 && ((unsigned char)clean[len] & 0xC0) == 0x80) len--;
        for (size_t back = 1; back <= 3 && back <= len; back++)
            if (clean[len - back] == '\\' && clean[len - back + 1] == 'x') {
                len -= back;
                break;
            }
        clean[len] = '\0';
    }
    job->error_message = clean;
    job->error_message_len = clean ? len : 0;
}

void hh_job_fail(hh_job *job, const char *error_class, const char *fmt, ...) {
    char *msg = NULL;
    if (!fmt) {
        msg = strdup("");
    } else {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
        va_end(ap);
    }
    hh__job_fail_bytes(job, error_class, msg, msg ? strlen(msg) : 0);
    free(msg);
}

void hh_job_set_backtrace(hh_job *job, const char *const *lines, size_t n) {
    for (size_t i = 0; i < job->nbacktrace; i++) free(job->backtrace[i]);
    free(job->backtrace);
    job->backtrace = n ? calloc(n, sizeof(char *)) : NULL;
    job->nbacktrace = 0;
    if (!job->backtrace) return;
    for (size_t i = 0; i < n; i++) {
        job->backtrace[i] = hh__utf8_escape_len(lines[i] ? lines[i] : "", lines[i] ? strlen(lines[i]) : 0, NULL);
        if (!job->backtrace[i]) break;
        job->nbacktrace++;
    }
}
