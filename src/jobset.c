/* jobset.c -- job management of Sidekiq's three sorted sets on a client:
 * what Sidekiq's Ruby API (6.4 lib/sidekiq/api.rb: ScheduledSet, RetrySet,
 * DeadSet, SortedEntry#retry/#add_to_queue/#delete/#kill, SortedSet#clear)
 * and its Web UI do, for operators without Ruby (`hiredhand retries`,
 * `scheduled`, `dead`).
 *
 * Keys read: schedule, retry, dead (ZRANGE/ZREVRANGE, ZSCAN, ZCARD; by rank
 * for hh_jobset_page).
 * Keys written: in HH_LUA_ADMIN_MOVE, the sorted set (ZREM), queue:<q>
 * (LPUSH), queues (SADD), dead (ZADD + trims); schedule, retry or dead
 * (UNLINK, for a clear).
 *
 * Every move of an entry is one script acting only while the exact member
 * is in its set (write first, remove last), so two operators, or an
 * operator and a scheduler, never move one job twice. Sidekiq's own
 * SortedEntry#retry removes the entry and then pushes it in two steps, and
 * drops it when the push raises (a payload that is not a job): here such an
 * entry is refused and stays where it was. Sets are read in pages of
 * HH_ADMIN_PAGE entries, never whole. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "error.h"
#include "job.h"
#include "outcome.h"
#include "util.h"

static const char *set_name(hh_jobset s) {
    switch (s) {
    case HH_JOBSET_SCHEDULED: return HH_K_SCHEDULE;
    case HH_JOBSET_RETRY: return HH_K_RETRY;
    case HH_JOBSET_DEAD: return HH_K_DEAD;
    default: return NULL;
    }
}

static void set_error(hh_client *c, const char *why) { hh__conn_set_error(hh__client_conn(c), "%s", why); }

/* A Redis reply that is no reply, an error or the wrong shape: the error is
 * kept for hh_client_last_error(). Returns HH_ERR_REDIS. */
int hh__admin_bad_reply(hh_client *c, const redisReply *r, const char *what) {
    char why[256];
    if (!r) return HH_ERR_REDIS; /* the connection's own message is there */
    if (r->type == REDIS_REPLY_ERROR) snprintf(why, sizeof(why), "%s: %s", what, r->str);
    else snprintf(why, sizeof(why), "unexpected reply to %s", what);
    set_error(c, why);
    return HH_ERR_REDIS;
}

int hh__admin_fail(hh_client *c, int rc, const char *what) {
    const char *said = hh__conn_last_error(hh__client_conn(c));
    switch (rc) {
    case HH_OK: return HH_OK;
    case HH_ERR_REDIS:
    case HH_ERR_REFUSED: return hh__fail(rc, "%s: %s: %s", what, hh_strerror(rc), *said ? said : "no reply");
    case HH_ERR_INVALID: /* an entry refused: move_entry set why */
        return *said ? hh__fail(rc, "%s: %s", what, said) : hh__fail(rc, "%s: %s", what, hh_strerror(rc));
    default: return hh__fail(rc, "%s: %s", what, hh_strerror(rc));
    }
}

int hh__admin_bad_key_reply(hh_client *c, const redisReply *r, const char *what, const char *key, const char *want) {
    json_t *why = key ? hh__client_key_problem(c, key, want, r) : NULL;
    if (!why) return hh__admin_bad_reply(c, r, what);
    char msg[512];
    snprintf(msg, sizeof(msg), "%s: %s", what, json_string_value(why));
    json_decref(why);
    set_error(c, msg);
    return HH_ERR_REDIS;
}

const char *hh__admin_str(const json_t *o, const char *key, const char *dflt) {
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* Fills *e from a member; returns the parsed item (json_decref it), NULL
 * when the payload is not a JSON object (e->valid 0). *shown holds
 * e->display_class (json_decref it too; NULL when there is none). A member
 * whose bytes are not UTF-8 (no JSON parser takes them) is read as the
 * queue page reads one: from its text with U+FFFD for each such byte, so
 * its jid, class and fields are shown and it can be named by its jid; it
 * stays e->valid 0 (its bytes are no job), e->payload keeps its exact
 * bytes (what a delete removes), and that text's item is returned. */
static json_t *entry_fill(hh_jobset_entry *e, hh_jobset set, const char *payload, size_t len, double score,
                          json_t **shown) {
    memset(e, 0, sizeof(*e));
    *shown = NULL;
    e->display_class = "";
    e->set = set;
    e->score = score;
    e->payload = payload;
    e->len = len;
    e->jid = e->klass = e->queue = "";
    e->retry_count = -1;
    int lossy = 0;
    json_t *item = hh__json_load_payload(payload, len, &lossy);
    char *fixed = NULL;
    size_t flen = 0;
    if (!item && !hh__utf8_valid(payload, len) && (fixed = hh__utf8_replace_len(payload, len, &flen)) != NULL) {
        item = hh__json_load_payload(fixed, flen, &lossy);
        payload = fixed, len = flen; /* for the times below; e->payload keeps the exact bytes */
    }
    if (!json_is_object(item)) {
        json_decref(item);
        free(fixed);
        return NULL;
    }
    e->valid = fixed == NULL;
    e->jid = hh__admin_str(item, "jid", "");
    e->klass = hh__admin_str(item, "class", "");
    if ((*shown = hh__item_web_class(item)) != NULL) {
        e->display_class = json_string_value(*shown);
        e->display_class_len = json_string_length(*shown);
    }
    e->queue = hh__admin_str(item, "queue", "");
    e->error_class = hh__admin_str(item, "error_class", NULL);
    e->error_message = hh__admin_str(item, "error_message", NULL);
    json_t *rc = json_object_get(item, "retry_count");
    /* beyond an int (a bignum, 1e20) it is not an int: hh_jobset_entry_get() has its text */
    if (json_is_number(rc) && json_number_value(rc) >= 0 && json_number_value(rc) <= INT_MAX)
        e->retry_count = (int)json_number_value(rc);
    e->enqueued_at = hh__payload_time(item, lossy, payload, len, "enqueued_at");
    e->created_at = hh__payload_time(item, lossy, payload, len, "created_at");
    e->failed_at = hh__payload_time(item, lossy, payload, len, "failed_at");
    e->retried_at = hh__payload_time(item, lossy, payload, len, "retried_at");
    free(fixed);
    return item;
}

/* Whether item's string key equals want, over the string's whole length:
 * a JSON string may hold NUL ("T\u0000Evil" is not "T"). An absent key
 * (or an entry that is no job object, item NULL) reads as "", as the
 * entry's fields do. */
static int str_is(const json_t *item, const char *key, const char *want) {
    const json_t *v = json_object_get(item, key);
    size_t n = strlen(want);
    if (!json_is_string(v)) return n == 0;
    return json_string_length(v) == n && memcmp(json_string_value(v), want, n) == 0;
}

/* Whether item's string key holds needle anywhere in its whole length:
 * text after a NUL in an error message is searched too. */
static int str_has(const json_t *item, const char *key, const char *needle) {
    const json_t *v = json_object_get(item, key);
    return json_is_string(v) && memmem(json_string_value(v), json_string_length(v), needle, strlen(needle)) != NULL;
}

/* Whether item has key as a string equal to want: unlike str_is, an absent
 * key is no match (a job without Active Job's "wrapped" has no wrapped
 * class, not an empty one: --class '' would otherwise match every job). */
static int str_present_is(const json_t *item, const char *key, const char *want) {
    return json_is_string(json_object_get(item, key)) && str_is(item, key, want);
}

/* An empty error filter would match every entry: refused (HH_ERR_INVALID)
 * by the functions taking a filter, so a caller's unset text never turns
 * a filtered delete into a delete of everything. */
static int filter_ok(const hh_jobset_filter *f) { return !f || !f->error || *f->error; }

static int filter_match(const hh_jobset_filter *f, const hh_jobset_entry *e, const json_t *item) {
    if (!f) return 1;
    if (f->klass && !str_is(item, "class", f->klass) && !str_present_is(item, "wrapped", f->klass) &&
        !(e->display_class_len == strlen(f->klass) && !memcmp(e->display_class, f->klass, e->display_class_len)))
        return 0;
    if (f->queue && !str_is(item, "queue", f->queue)) return 0;
    if (f->error && !str_has(item, "error_class", f->error) && !str_has(item, "error_message", f->error)) return 0;
    return 1;
}

char *hh_jobset_entry_get(const hh_jobset_entry *e, const char *key) {
    if (!e || !key) return NULL;
    size_t n, flen = 0;
    /* bytes that are not UTF-8: read from the text entry_fill read the jid from */
    char *fixed =
        !e->valid && !hh__utf8_valid(e->payload, e->len) ? hh__utf8_replace_len(e->payload, e->len, &flen) : NULL;
    const char *raw = e->valid ? hh__json_get_raw(e->payload, e->len, key, &n)
        : fixed                ? hh__json_get_raw(fixed, flen, key, &n)
                               : NULL;
    char *out = raw ? malloc(n + 1) : NULL;
    if (out) {
        memcpy(out, raw, n);
        out[n] = '\0';
    }
    free(fixed);
    return out;
}

/* ----------------------------------------------------------- the push */

/* The payload Sidekiq::Client.push(msg) writes for an entry taken out of a
 * sorted set (SortedEntry#retry with decrement, #add_to_queue without):
 * retry_count - 1 when present, Sidekiq.default_worker_options ("retry"
 * true, "queue" "default") under the item's own keys, a jid and created_at
 * when absent, enqueued_at now. NULL with why set when Sidekiq's client
 * would refuse it (it then loses the job; it stays here). */
static char *push_payload(hh_client *c, const char *member, size_t len, int decrement, char **queue_out, size_t *outlen,
                          char *why, size_t whylen) {
    int lossy = 0;
    json_t *item = hh__json_load_payload(member, len, &lossy);
    char *out = NULL, *rc_text = NULL; /* rc_text: an integer's new text (Ruby's Integer has no 64-bit limit) */
    *queue_out = NULL;
    const char *problem = item ? hh__job_problem(item) : "payload is not valid JSON";
    if (problem) { /* the worker's own rule: pushed, it would only be buried */
        snprintf(why, whylen, "the entry is not a job: %s", problem);
        goto done;
    }
    json_t *k = json_object_get(item, "class");
    json_t *q = json_object_get(item, "queue"), *rc = json_object_get(item, "retry_count");
    json_t *ec = json_object_get(item, "error_class");
    if (!strcmp(json_string_value(k), "hiredhand::InvalidJob") ||
        (json_is_string(ec) && !strcmp(json_string_value(ec), "hiredhand::InvalidJob"))) {
        /* a payload the worker buried as not a job, kept as it came (a
         * wrapper holds its exact text in args[0]): pushed, it fails again
         * with no handler, retry false, and its bytes are gone */
        hh__strlcpy(why,
                    "the entry is a payload that was not a valid job, kept as it came (hiredhand::InvalidJob): pushing "
                    "it would lose it; fix it and push it yourself",
                    whylen);
        goto done;
    }
    if (json_object_get(item, "at")) {
        hh__strlcpy(why, "the entry holds \"at\": Sidekiq's client would schedule it again", whylen);
        goto done;
    }
    const char *queue = q ? (json_is_string(q) ? json_string_value(q) : NULL) : "default";
    /* Any name Sidekiq's client takes, as the scheduler moves the same
     * entry: "" and control characters included (queue:"" is a key like
     * any); only a NUL, which no C string carries, or a name beyond the
     * limit is refused. */
    if (!queue || (q && json_string_length(q) != strlen(queue)) || strlen(queue) > HH_NAME_QUEUE_MAX) {
        hh__strlcpy(why, "the entry's \"queue\" is not a queue name (not a string, holds a NUL or is too long)",
                    whylen);
        goto done;
    }
    json_t *new_rc = NULL;
    if (decrement && rc && !json_is_null(rc) && !json_is_false(rc)) {
        size_t tl = 0;
        const char *tok = json_is_number(rc) ? hh__json_get_raw(member, len, "retry_count", &tl) : NULL;
        /* An integer as stored, digit by digit: 100000000000000000000 - 1
         * is 99999999999999999999 in Sidekiq (a lossy parse read it as a
         * real, and int64 arithmetic would wrap at its ends). The key keeps
         * its place; its value text is put in once the payload is built. */
        if (tok && (rc_text = hh__json_int_step(tok, tl, -1))) new_rc = json_null();
        else if (json_is_real(rc)) new_rc = json_real(json_real_value(rc) - 1);
        else {
            hh__strlcpy(why, "the entry's \"retry_count\" is not a number", whylen);
            goto done;
        }
    }
    double now = hh__now();
    hh_timestamps ts = hh__client_timestamps(c);
    json_t *jid = json_object_get(item, "jid"), *ca = json_object_get(item, "created_at");
    int need_jid = !jid || json_is_null(jid) || json_is_false(jid);
    int need_ca = !ca || json_is_null(ca) || json_is_false(ca);
    char fresh[HH_JID_SIZE];
    if (need_jid && hh__new_jid(fresh) != 0) {
        hh__strlcpy(why, "no randomness for a jid", whylen);
        json_decref(new_rc);
        goto done;
    }
    if (!(*queue_out = strdup(queue))) {
        json_decref(new_rc);
        goto nomem;
    }
    if (lossy) { /* only the keys that change are rewritten */
        out = malloc(len + 1);
        if (!out) {
            json_decref(new_rc);
            goto nomem;
        }
        memcpy(out, member, len);
        out[len] = '\0';
        *outlen = len;
        if (rc_text) {
            char *set = hh__json_set_raw(out, *outlen, "retry_count", rc_text, outlen);
            free(out);
            out = set;
            json_decref(new_rc);
        } else if (new_rc) out = hh__json_set_raw_take(out, outlen, "retry_count", new_rc);
        if (out && !json_object_get(item, "retry")) out = hh__json_set_raw_take(out, outlen, "retry", json_true());
        if (out && !q) out = hh__json_set_raw_take(out, outlen, "queue", json_string("default"));
        if (out && need_jid) out = hh__json_set_raw_take(out, outlen, "jid", json_string(fresh));
        if (out && need_ca) out = hh__json_set_raw_take(out, outlen, "created_at", hh__json_time_new(now, ts));
        if (out) out = hh__json_set_raw_take(out, outlen, "enqueued_at", hh__json_time_new(now, ts));
        if (!out) goto nomem;
        goto done;
    }
    /* defaults.merge(item): "retry" and "queue" first, the item's values. */
    json_t *o = json_object();
    json_t *r = json_object_get(item, "retry");
    json_object_set(o, "retry", r ? r : json_true());
    json_object_set_new(o, "queue", json_string(queue));
    const char *key;
    json_t *v;
    json_object_foreach(item, key, v) {
        if (!strcmp(key, "retry") || !strcmp(key, "queue")) continue;
        if (!strcmp(key, "retry_count") && new_rc) json_object_set(o, key, new_rc);
        else json_object_set(o, key, v);
    }
    json_decref(new_rc);
    if (need_jid) json_object_set_new(o, "jid", json_string(fresh));
    if (need_ca) json_object_set_new(o, "created_at", hh__json_time_new(now, ts));
    json_object_set_new(o, "enqueued_at", hh__json_time_new(now, ts));
    out = hh__json_dump(o);
    json_decref(o);
    if (!out) goto nomem;
    *outlen = strlen(out);
    if (rc_text) {
        char *set = hh__json_set_raw(out, *outlen, "retry_count", rc_text, outlen);
        free(out);
        if (!(out = set)) goto nomem;
    }
    goto done;
nomem:
    hh__strlcpy(why, "out of memory", whylen);
    free(out);
    out = NULL;
done:
    free(rc_text);
    if (!out) {
        free(*queue_out);
        *queue_out = NULL;
    }
    json_decref(item);
    return out;
}

/* ---------------------------------------------------------------- moves */

/* One entry moved by HH_LUA_ADMIN_MOVE. Returns 1 moved, 0 gone (another
 * client took it), HH_ERR_INVALID (not a job that can be pushed; why set),
 * HH_ERR_REDIS, HH_ERR_NOMEM. */
static int move_entry(hh_client *c, hh_jobset set, const char *member, size_t mlen, hh_jobset_action a,
                      const hh_jobset_options *opts, char *why, size_t whylen) {
    const hh__keys *k = hh__client_keys(c);
    sds sk = hh__key(k, set_name(set)), qs = hh__key(k, HH_K_QUEUES), target = NULL;
    char *payload = NULL, *queue = NULL;
    size_t plen = 0;
    char score[32], cutoff[32], maxr[32];
    const char *args[7];
    size_t alen[7];
    int nargs = 2, rc;
    args[0] = member, alen[0] = mlen;
    switch (a) {
    case HH_JOBSET_RETRY_NOW:
    case HH_JOBSET_ENQUEUE:
        payload = push_payload(c, member, mlen, a == HH_JOBSET_RETRY_NOW, &queue, &plen, why, whylen);
        if (!payload) {
            rc = HH_ERR_INVALID;
            goto out;
        }
        target = hh__key_queue(k, queue);
        args[1] = "queue", alen[1] = 5;
        args[2] = payload, alen[2] = plen;
        args[3] = queue, alen[3] = strlen(queue);
        nargs = 4;
        break;
    case HH_JOBSET_KILL: {
        double now = hh__now();
        double timeout = opts && opts->dead_timeout > 0 ? opts->dead_timeout : HH_DEAD_TIMEOUT;
        long max = opts && opts->dead_max_jobs > 0 ? opts->dead_max_jobs : HH_DEAD_MAX_JOBS;
        hh__fmt_double(score, sizeof(score), now);
        hh__fmt_double(cutoff, sizeof(cutoff), now - timeout);
        snprintf(maxr, sizeof(maxr), "%ld", -max);
        target = hh__key(k, HH_K_DEAD);
        args[1] = "dead", alen[1] = 4;
        args[2] = member, alen[2] = mlen; /* DeadSet#kill(message): the bytes as they are */
        args[3] = "", alen[3] = 0;
        args[4] = score, alen[4] = strlen(score);
        args[5] = cutoff, alen[5] = strlen(cutoff);
        args[6] = maxr, alen[6] = strlen(maxr);
        nargs = 7;
        break;
    }
    case HH_JOBSET_DELETE:
        target = sdsdup(sk);
        args[1] = "drop", alen[1] = 4;
        break;
    default:
        hh__strlcpy(why, "unknown action", whylen);
        rc = HH_ERR_INVALID;
        goto out;
    }
    if (!sk || !qs || !target) {
        rc = HH_ERR_NOMEM;
        goto out;
    }
    const char *keys[3] = {sk, target, qs};
    size_t klen[3] = {sdslen(sk), sdslen(target), sdslen(qs)};
    redisReply *r = hh__conn_eval(hh__client_conn(c), HH_SCRIPT_ADMIN_MOVE, 3, keys, klen, nargs, args, alen);
    if (r && r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
        rc = (int)r->integer;
    } else {
        rc = hh__admin_bad_reply(c, r, "the move script");
        hh__strlcpy(why, hh_client_last_error(c), whylen);
    }
    if (r) freeReplyObject(r);
out:
    sdsfree(sk);
    sdsfree(qs);
    sdsfree(target);
    free(payload);
    free(queue);
    return rc;
}

/* ------------------------------------------------------------- reading */

static int jobset_size_run(hh_client *c, hh_jobset set, long long *size_out) {
    if (!c || !set_name(set) || !size_out) return HH_ERR_INVALID;
    sds sk = hh__key(hh__client_keys(c), set_name(set));
    redisReply *r = hh__conn_cmd(hh__client_conn(c), "ZCARD %s", sk);
    int rc = HH_OK;
    if (r && r->type == REDIS_REPLY_INTEGER) *size_out = r->integer;
    else rc = hh__admin_bad_key_reply(c, r, "ZCARD", sk, "zset");
    if (r) freeReplyObject(r);
    sdsfree(sk);
    return rc;
}

int hh_jobset_size(hh_client *c, hh_jobset set, long long *size_out) {
    const char *bad = !c ? "the client is missing"
        : !set_name(set) ? "no such set"
        : !size_out      ? "size_out is NULL"
                         : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobset size: %s", bad);
    return hh__admin_fail(c, jobset_size_run(c, set, size_out), "jobset size");
}

/* Whether a flat [member, score, ...] array holds only strings. */
int hh__admin_pairs_ok(const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2) return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING) return 0;
    return 1;
}

/* One page of a set in the Web UI's order (the dead set newest first, the
 * others by when they run next) from rank start: the checked reply (free
 * it), or NULL with *rc set. */
static redisReply *list_page(hh_client *c, hh_jobset set, const char *sk, long long start, int *rc) {
    const char *cmd = set == HH_JOBSET_DEAD ? "ZREVRANGE" : "ZRANGE";
    redisReply *r =
        hh__conn_cmd(hh__client_conn(c), "%s %s %lld %lld WITHSCORES", cmd, sk, start, start + HH_ADMIN_PAGE - 1);
    if (hh__admin_pairs_ok(r)) return r;
    *rc = hh__admin_bad_key_reply(c, r, cmd, sk, "zset");
    if (r) freeReplyObject(r);
    return NULL;
}

static int jobset_each_run(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_fn fn, void *udata) {
    if (!c || !set_name(set) || !fn || !filter_ok(f)) return HH_ERR_INVALID;
    sds sk = hh__key(hh__client_keys(c), set_name(set));
    size_t seen = 0;
    int rc = HH_OK, stop = 0;
    for (long long start = 0; !stop; start += HH_ADMIN_PAGE) {
        redisReply *r = list_page(c, set, sk, start, &rc);
        if (!r) break;
        for (size_t i = 0; i + 1 < r->elements && !stop; i += 2) {
            hh_jobset_entry e;
            json_t *shown,
                *item = entry_fill(&e, set, r->element[i]->str, r->element[i]->len,
                                   hh__strtod_c(r->element[i + 1]->str, NULL), &shown);
            if (filter_match(f, &e, item)) {
                if (fn(&e, udata) != 0) stop = 1;
                if (f && f->limit && ++seen >= f->limit) stop = 1;
            }
            json_decref(item);
            json_decref(shown);
        }
        if (r->elements < 2 * HH_ADMIN_PAGE) stop = 1;
        freeReplyObject(r);
    }
    sdsfree(sk);
    return rc;
}

int hh_jobset_each(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_fn fn, void *udata) {
    const char *bad = !c ? "the client is missing"
        : !set_name(set) ? "no such set"
        : !fn            ? "fn is NULL"
        : !filter_ok(f)  ? "the error filter is empty (it would match every entry)"
                         : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobset each: %s", bad);
    return hh__admin_fail(c, jobset_each_run(c, set, f, fn, udata), "jobset each");
}

#define HH_JOBSET_PAGE_MAX 1000 /* entries one hh_jobset_page call reads */

static int jobset_page_run(hh_client *c, hh_jobset set, long long start, size_t count, int reverse, hh_jobset_fn fn,
                           void *udata) {
    if (!c || !set_name(set) || !fn || start < 0 || !count || count > HH_JOBSET_PAGE_MAX) return HH_ERR_INVALID;
    sds sk = hh__key(hh__client_keys(c), set_name(set));
    /* the Web UI's order is ZRANGE, the dead set's ZREVRANGE; reverse flips it */
    int desc = (set == HH_JOBSET_DEAD) != (reverse != 0);
    const char *cmd = desc ? "ZREVRANGE" : "ZRANGE";
    redisReply *r =
        hh__conn_cmd(hh__client_conn(c), "%s %s %lld %lld WITHSCORES", cmd, sk, start, start + (long long)count - 1);
    int rc = HH_OK;
    if (!hh__admin_pairs_ok(r)) {
        rc = hh__admin_bad_key_reply(c, r, cmd, sk, "zset");
    } else {
        for (size_t i = 0; i + 1 < r->elements; i += 2) {
            hh_jobset_entry e;
            json_t *shown,
                *item = entry_fill(&e, set, r->element[i]->str, r->element[i]->len,
                                   hh__strtod_c(r->element[i + 1]->str, NULL), &shown);
            int stop = fn(&e, udata);
            json_decref(item);
            json_decref(shown);
            if (stop) break;
        }
    }
    if (r) freeReplyObject(r);
    sdsfree(sk);
    return rc;
}

int hh_jobset_page(hh_client *c, hh_jobset set, long long start, size_t count, int reverse, hh_jobset_fn fn,
                   void *udata) {
    const char *bad = !c                       ? "the client is missing"
        : !set_name(set)                       ? "no such set"
        : !fn                                  ? "fn is NULL"
        : start < 0                            ? "start is negative"
        : !count || count > HH_JOBSET_PAGE_MAX ? "count is not 1..1000"
                                               : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobset page: %s", bad);
    return hh__admin_fail(c, jobset_page_run(c, set, start, count, reverse, fn, udata), "jobset page");
}

/* "*<jid with glob characters escaped>*" for ZSCAN MATCH. */
static sds match_pattern(const char *jid) {
    sds p = sdsnew("*");
    for (const char *s = jid; p && *s; s++) {
        if (strchr("*?[]\\", *s)) p = sdscatlen(p, "\\", 1);
        if (p) p = sdscatlen(p, s, 1);
    }
    return p ? sdscatlen(p, "*", 1) : NULL;
}

/* One ZSCAN step: fills *r with the reply (free it) after checking its
 * shape; returns the next cursor in cursor. */
static int zscan_step(hh_client *c, const char *key, char *cursor, size_t clen, const char *pattern, redisReply **out) {
    redisReply *r = pattern
        ? hh__conn_cmd(hh__client_conn(c), "ZSCAN %s %s MATCH %s COUNT %d", key, cursor, pattern, HH_ADMIN_PAGE)
        : hh__conn_cmd(hh__client_conn(c), "ZSCAN %s %s COUNT %d", key, cursor, HH_ADMIN_PAGE);
    *out = NULL;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        !hh__admin_pairs_ok(r->element[1])) {
        int rc = hh__admin_bad_key_reply(c, r, "ZSCAN", key, "zset");
        if (r) freeReplyObject(r);
        return rc;
    }
    hh__strlcpy(cursor, r->element[0]->str, clen);
    *out = r;
    return HH_OK;
}

int hh__admin_jid_ok(const char *jid) { return jid && *jid && strlen(jid) <= 1024; }

/* Walks entries whose "jid" equals jid, in ZSCAN's order; fn as
 * hh_jobset_fn, and a negative return (an hh_err) is returned. */
static int find_each(hh_client *c, hh_jobset set, const char *jid, hh_jobset_fn fn, void *udata) {
    sds sk = hh__key(hh__client_keys(c), set_name(set)), pat = match_pattern(jid);
    char cursor[32] = "0";
    int rc = HH_OK, stop = 0;
    if (!sk || !pat) rc = HH_ERR_NOMEM;
    while (rc == HH_OK && !stop) {
        redisReply *r;
        if ((rc = zscan_step(c, sk, cursor, sizeof(cursor), pat, &r)) != HH_OK) break;
        const redisReply *a = r->element[1];
        for (size_t i = 0; i + 1 < a->elements && !stop; i += 2) {
            hh_jobset_entry e;
            json_t *shown,
                *item = entry_fill(&e, set, a->element[i]->str, a->element[i]->len,
                                   hh__strtod_c(a->element[i + 1]->str, NULL), &shown);
            /* an entry that is not UTF-8 has the jid of its U+FFFD text (e.valid 0): found
             * too, and acted on by its exact bytes; one that is no job has jid "" */
            if (*e.jid && strcmp(e.jid, jid) == 0) {
                int x = fn(&e, udata);
                if (x) stop = 1, rc = x < 0 ? x : HH_OK;
            }
            json_decref(item);
            json_decref(shown);
        }
        freeReplyObject(r);
        if (!strcmp(cursor, "0")) break;
    }
    sdsfree(sk);
    sdsfree(pat);
    return rc;
}

/* Member bytes in Redis's order for equal scores (memcmp, then length). */
static int member_cmp(const char *x, size_t lx, const char *y, size_t ly) {
    size_t l = lx < ly ? lx : ly;
    int c = memcmp(x, y, l);
    return c ? c : (lx > ly) - (lx < ly);
}

/* Entry x against entry y in hh_jobset_each's order (list's): < 0 when x
 * comes first, 0 for the same member at the same score. By score, equal
 * scores by member bytes (ZRANGE's order); the dead set the other way
 * round (ZREVRANGE, newest first). ZSCAN, which finds a jid, has no order
 * once a set outgrows a listpack: what it finds is put in this one. */
static int list_order(hh_jobset set, double sx, const char *x, size_t lx, double sy, const char *y, size_t ly) {
    int c = sx != sy ? (sx < sy ? -1 : 1) : member_cmp(x, lx, y, ly);
    return set == HH_JOBSET_DEAD ? -c : c;
}

/* The entries found with a jid, copied out of the ZSCAN replies. */
typedef struct found_entry {
    hh_jobset set;
    double score;
    char *member; /* NUL-terminated, as a reply's string is */
    size_t len;
} found_entry;

typedef struct found_list {
    found_entry *v;
    size_t n, cap;
} found_list;

static int found_cmp(const void *a, const void *b) {
    const found_entry *x = a, *y = b;
    return list_order(x->set, x->score, x->member, x->len, y->score, y->member, y->len);
}

static int keep_found(const hh_jobset_entry *e, void *udata) {
    found_list *l = udata;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        found_entry *v = realloc(l->v, cap * sizeof(*v));
        if (!v) return HH_ERR_NOMEM;
        l->v = v, l->cap = cap;
    }
    char *m = malloc(e->len + 1);
    if (!m) return HH_ERR_NOMEM;
    memcpy(m, e->payload, e->len);
    m[e->len] = '\0';
    found_entry *f = &l->v[l->n++];
    f->set = e->set, f->score = e->score, f->member = m, f->len = e->len;
    return 0;
}

static int jobset_find_run(hh_client *c, hh_jobset set, const char *jid, hh_jobset_fn fn, void *udata) {
    if (!c || !set_name(set) || !hh__admin_jid_ok(jid) || !fn) return HH_ERR_INVALID;
    found_list l = {NULL, 0, 0};
    int rc = find_each(c, set, jid, keep_found, &l);
    if (rc == HH_OK && !l.n) rc = HH_ERR_NOTFOUND;
    if (rc == HH_OK) qsort(l.v, l.n, sizeof(*l.v), found_cmp);
    for (size_t i = 0; rc == HH_OK && i < l.n; i++) {
        if (i && found_cmp(&l.v[i - 1], &l.v[i]) == 0) continue; /* ZSCAN may return an entry twice */
        hh_jobset_entry e;
        json_t *shown, *item = entry_fill(&e, set, l.v[i].member, l.v[i].len, l.v[i].score, &shown);
        int stop = fn(&e, udata);
        json_decref(item);
        json_decref(shown);
        if (stop) break;
    }
    for (size_t i = 0; i < l.n; i++) free(l.v[i].member);
    free(l.v);
    return rc;
}

int hh_jobset_find(hh_client *c, hh_jobset set, const char *jid, hh_jobset_fn fn, void *udata) {
    const char *bad = !c         ? "the client is missing"
        : !set_name(set)         ? "no such set"
        : !hh__admin_jid_ok(jid) ? "the jid is missing, empty or over 1024 bytes"
        : !fn                    ? "fn is NULL"
                                 : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobset find: %s", bad);
    return hh__admin_fail(c, jobset_find_run(c, set, jid, fn, udata), "jobset find");
}

/* ------------------------------------------------------------- actions */

/* The entry with a jid that hh_jobset_each lists first: with duplicate
 * jids, ZSCAN's order is the set's hash order once it outgrows a
 * listpack, so the first found is not the one list shows first. */
typedef struct first_ctx {
    char *member; /* a copy; NULL until one is found */
    size_t len;
    double score;
} first_ctx;

static int keep_first(const hh_jobset_entry *e, void *udata) {
    first_ctx *x = udata;
    if (x->member && list_order(e->set, e->score, e->payload, e->len, x->score, x->member, x->len) >= 0) return 0;
    char *m = malloc(e->len ? e->len : 1);
    if (!m) return HH_ERR_NOMEM;
    memcpy(m, e->payload, e->len);
    free(x->member);
    x->member = m, x->len = e->len, x->score = e->score;
    return 0;
}

static int action_allowed(hh_jobset set, hh_jobset_action a) {
    if (!set_name(set) || a < HH_JOBSET_RETRY_NOW || a > HH_JOBSET_KILL) return 0;
    return !(a == HH_JOBSET_KILL && set == HH_JOBSET_DEAD);
}

static int jobset_act_run(hh_client *c, hh_jobset set, const char *jid, hh_jobset_action action,
                          const hh_jobset_options *opts) {
    if (!c || !hh__admin_jid_ok(jid) || !action_allowed(set, action)) return HH_ERR_INVALID;
    char why[256];
    for (;;) { /* again when another client moved the first one meanwhile */
        first_ctx x = {NULL, 0, 0};
        int rc = find_each(c, set, jid, keep_first, &x);
        if (rc == HH_OK && !x.member) rc = HH_ERR_NOTFOUND;
        if (rc == HH_OK) rc = move_entry(c, set, x.member, x.len, action, opts, why, sizeof(why));
        free(x.member);
        if (rc == 1) return HH_OK;
        if (rc == HH_ERR_INVALID) set_error(c, why);
        if (rc != 0) return rc;
    }
}

int hh_jobset_act(hh_client *c, hh_jobset set, const char *jid, hh_jobset_action action,
                  const hh_jobset_options *opts) {
    const char *bad = !c         ? "the client is missing"
        : !hh__admin_jid_ok(jid) ? "the jid is missing, empty or over 1024 bytes"
        : !set_name(set)         ? "no such set"
        : !action_allowed(set, action)
        ? (action == HH_JOBSET_KILL ? "a dead job cannot be killed again" : "no such action")
        : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobset act: %s", bad);
    return hh__admin_fail(c, jobset_act_run(c, set, jid, action, opts), "jobset act");
}

/* Whether member x comes before member y in JobSet#each's order: higher
 * score first, and among equal scores the member later in byte order
 * (ZRANGE sorts them by bytes; #each walks them in reverse). */
static int before(const redisReply *a, const double *scores, size_t x, size_t y) {
    if (scores[x] != scores[y]) return scores[x] > scores[y];
    const redisReply *mx = a->element[2 * x], *my = a->element[2 * y];
    size_t l = mx->len < my->len ? mx->len : my->len;
    int c = memcmp(mx->str, my->str, l);
    return c ? c > 0 : mx->len > my->len;
}

/* --all --limit N: the first N matching entries in hh_jobset_each's order,
 * the ones list --limit N shows (ZSCAN's order is not the scores' once the
 * set outgrows a listpack). Read by rank in pages as list reads; each entry
 * that leaves the set (moved here, or by another client first) moves the
 * ranks after it down by one, so the next page starts that much earlier.
 * An entry that cannot be pushed stays and counts as one of the N. */
static int act_listed(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_action action,
                      const hh_jobset_options *opts, size_t *nd, size_t *ns) {
    sds sk = hh__key(hh__client_keys(c), set_name(set));
    char why[256];
    size_t seen = 0;
    int rc = sk ? HH_OK : HH_ERR_NOMEM, stop = !sk;
    for (long long start = 0; !stop;) {
        redisReply *r = list_page(c, set, sk, start, &rc);
        if (!r) break;
        long long gone = 0;
        for (size_t i = 0; i + 1 < r->elements && !stop; i += 2) {
            hh_jobset_entry e;
            json_t *shown,
                *item = entry_fill(&e, set, r->element[i]->str, r->element[i]->len,
                                   hh__strtod_c(r->element[i + 1]->str, NULL), &shown);
            if (filter_match(f, &e, item)) {
                int m = move_entry(c, set, e.payload, e.len, action, opts, why, sizeof(why));
                if (m == 1) (*nd)++, gone++;
                else if (m == 0) gone++;
                else if (m == HH_ERR_INVALID) (*ns)++;
                else rc = m, stop = 1;
                if (++seen >= f->limit) stop = 1;
            }
            json_decref(item);
            json_decref(shown);
        }
        if (r->elements < 2 * HH_ADMIN_PAGE) stop = 1;
        freeReplyObject(r);
        start += HH_ADMIN_PAGE - gone;
    }
    sdsfree(sk);
    return rc;
}

static int jobset_act_all_run(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_action action,
                              const hh_jobset_options *opts, size_t *done, size_t *skipped) {
    size_t nd = 0, ns = 0;
    int rc = HH_OK;
    if (done) *done = 0;
    if (skipped) *skipped = 0;
    if (!c || !action_allowed(set, action) || !filter_ok(f)) return HH_ERR_INVALID;
    if (f && f->limit) {
        rc = act_listed(c, set, f, action, opts, &nd, &ns);
        if (done) *done = nd;
        if (skipped) *skipped = ns;
        return rc;
    }
    sds sk = hh__key(hh__client_keys(c), set_name(set));
    char cursor[32] = "0", why[256];
    int stop = 0;
    /* ZSCAN returns every member present from the first call to the last
     * at least once, and never loads the set whole; one it returns twice,
     * or one another client moved first, is no longer there for the
     * script, which then does nothing. Entries that come back meanwhile
     * (a retried job failing again) are new members a later batch may
     * return: the walk still ends, unlike a loop on the set's size. Each
     * batch is acted on in Sidekiq's order (JobSet#each: highest score
     * first), so a set that fits in one batch is moved exactly as
     * RetrySet#retry_all moves it. */
    while (rc == HH_OK && !stop) {
        redisReply *r;
        if ((rc = zscan_step(c, sk, cursor, sizeof(cursor), NULL, &r)) != HH_OK) break;
        const redisReply *a = r->element[1];
        size_t n = a->elements / 2;
        size_t *order = n ? malloc(n * sizeof(*order)) : NULL;
        double *scores = n ? malloc(n * sizeof(*scores)) : NULL;
        if (n && (!order || !scores)) {
            free(order), free(scores);
            freeReplyObject(r);
            rc = HH_ERR_NOMEM;
            break;
        }
        for (size_t i = 0; i < n; i++) order[i] = i, scores[i] = hh__strtod_c(a->element[2 * i + 1]->str, NULL);
        /* insertion sort: a batch is a few hundred entries */
        for (size_t i = 1; i < n; i++) {
            size_t x = order[i], j = i;
            while (j > 0 && before(a, scores, x, order[j - 1])) order[j] = order[j - 1], j--;
            order[j] = x;
        }
        for (size_t oi = 0; oi < n && !stop; oi++) {
            size_t i = 2 * order[oi];
            hh_jobset_entry e;
            json_t *shown,
                *item = entry_fill(&e, set, a->element[i]->str, a->element[i]->len, scores[order[oi]], &shown);
            if (filter_match(f, &e, item)) {
                int m = move_entry(c, set, e.payload, e.len, action, opts, why, sizeof(why));
                if (m == 1) nd++;
                else if (m == HH_ERR_INVALID) ns++;
                else if (m < 0) rc = m, stop = 1;
            }
            json_decref(item);
            json_decref(shown);
        }
        free(order);
        free(scores);
        freeReplyObject(r);
        if (!strcmp(cursor, "0")) break;
    }
    sdsfree(sk);
    if (done) *done = nd;
    if (skipped) *skipped = ns;
    return rc;
}

int hh_jobset_act_all(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_action action,
                      const hh_jobset_options *opts, size_t *done, size_t *skipped) {
    if (done) *done = 0; /* set even on error */
    if (skipped) *skipped = 0;
    const char *bad = !c ? "the client is missing"
        : !set_name(set) ? "no such set"
        : !action_allowed(set, action)
        ? (action == HH_JOBSET_KILL ? "a dead job cannot be killed again" : "no such action")
        : !filter_ok(f) ? "the error filter is empty (it would match every entry)"
                        : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobset act all: %s", bad);
    return hh__admin_fail(c, jobset_act_all_run(c, set, f, action, opts, done, skipped), "jobset act all");
}

/* MULTI, <count>, UNLINK <key>[, SREM queues <name>], EXEC: the count and the
 * removal in one transaction. */
int hh__admin_clear_key(hh_client *c, const char *count_cmd, sds key, const char *queue, long long *removed) {
    hh__pipe p;
    hh__pipe_begin(&p, hh__client_conn(c));
    hh__pipe_add(&p, "MULTI");
    hh__pipe_add(&p, "TYPE %s", key); /* what went, when it was no list or zset */
    hh__pipe_add(&p, "%s %s", count_cmd, key);
    hh__pipe_add(&p, "UNLINK %s", key);
    sds qs = NULL;
    if (queue) {
        qs = hh__key(hh__client_keys(c), HH_K_QUEUES);
        hh__pipe_add(&p, "SREM %s %s", qs, queue);
    }
    hh__pipe_add(&p, "EXEC");
    sdsfree(qs);
    redisReply **r = hh__pipe_exec(&p);
    if (!r) return HH_ERR_REDIS;
    char why[256];
    int rc = HH_OK, at = -1;
    if (removed) *removed = 0;
    if (hh__tx_check(r, 0, p.n - 1, why, sizeof(why), &at) != 0) {
        /* A key of another type: the count fails (WRONGTYPE) but a
         * transaction runs every command, so UNLINK removed it, as
         * Sidekiq's Queue#clear and SortedSet#clear remove any key. That
         * is the clear done: said so, with what the key was. */
        const redisReply *x = r[p.n - 1];
        int deleted =
            at == 1 && x->element[1]->type == REDIS_REPLY_ERROR && !strncmp(x->element[1]->str, "WRONGTYPE", 9);
        for (size_t i = 2; deleted && i < x->elements; i++) deleted = x->element[i]->type == REDIS_REPLY_INTEGER;
        if (deleted) {
            const char *type = x->element[0]->type == REDIS_REPLY_STATUS ? x->element[0]->str : "value";
            snprintf(why, sizeof(why), "key %s held a %s, not a %s", key, type,
                     !strcmp(count_cmd, "LLEN") ? "list" : "zset");
            if (removed) *removed = -1;
        } else {
            rc = HH_ERR_REDIS;
        }
        set_error(c, why);
    } else {
        const redisReply *x = r[p.n - 1];
        if (x->element[1]->type != REDIS_REPLY_INTEGER) {
            rc = hh__admin_bad_reply(c, x, "EXEC");
        } else if (removed) {
            *removed = x->element[1]->integer;
        }
    }
    hh__replies_free(r, p.n);
    return rc;
}

static int jobset_clear_run(hh_client *c, hh_jobset set, long long *removed) {
    if (!c || !set_name(set)) return HH_ERR_INVALID;
    sds sk = hh__key(hh__client_keys(c), set_name(set));
    int rc = sk ? hh__admin_clear_key(c, "ZCARD", sk, NULL, removed) : HH_ERR_NOMEM;
    sdsfree(sk);
    return rc;
}

int hh_jobset_clear(hh_client *c, hh_jobset set, long long *removed) {
    const char *bad = !c ? "the client is missing" : !set_name(set) ? "no such set" : NULL;
    if (bad) return hh__fail(HH_ERR_INVALID, "jobset clear: %s", bad);
    return hh__admin_fail(c, jobset_clear_run(c, set, removed), "jobset clear");
}
