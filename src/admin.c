/* admin.c -- job management on a client: what Sidekiq's Ruby API (6.4
 * lib/sidekiq/api.rb) and its Web UI do to the sorted sets, the queues and
 * the running jobs, for operators without Ruby (`hiredhand retries`,
 * `scheduled`, `dead`, `queues`, `busy`, `jobs find`).
 *
 * Keys read: schedule, retry, dead (ZRANGE, ZSCAN, ZCARD), queues
 * (SMEMBERS), queue:<q> (LLEN, LRANGE), processes (SMEMBERS), <id>
 * (EXISTS), <id>:work and <id>:workers (HGETALL).
 * Keys written: in HH_LUA_ADMIN_MOVE, the sorted set (ZREM), queue:<q>
 * (LPUSH), queues (SADD), dead (ZADD + trims); schedule, retry or dead
 * (UNLINK, for a clear); queue:<q> (UNLINK) and queues (SREM) for a queue
 * clear.
 *
 * Every move of an entry is one script acting only while the exact member
 * is in its set (write first, remove last), so two operators, or an
 * operator and a scheduler, never move one job twice. Sidekiq's own
 * SortedEntry#retry removes the entry and then pushes it in two steps, and
 * drops it when the push raises (a payload that is not a job): here such an
 * entry is refused and stays where it was. Everything is read in pages of
 * HH_ADMIN_PAGE entries, never a whole set or queue at once. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client.h"
#include "job.h"
#include "outcome.h"
#include "util.h"

#define HH_ADMIN_PAGE 500
#define HH_QUEUE_HEAD 10 /* jobs whose classes hh_queues_list() counts */

static const char *set_name(hh_jobset s) {
    switch (s) {
    case HH_JOBSET_SCHEDULED: return HH_K_SCHEDULE;
    case HH_JOBSET_RETRY: return HH_K_RETRY;
    case HH_JOBSET_DEAD: return HH_K_DEAD;
    default: return NULL;
    }
}

static void set_error(hh_client *c, const char *why) {
    hh_strlcpy(hh_client_conn(c)->last_error, why, sizeof(hh_client_conn(c)->last_error));
}

/* A Redis reply that is no reply, an error or the wrong shape: the error is
 * kept for hh_client_last_error(). Returns HH_ERR_REDIS. */
static int bad_reply(hh_client *c, const redisReply *r, const char *what) {
    char why[256];
    if (!r) return HH_ERR_REDIS; /* the connection's own message is there */
    if (r->type == REDIS_REPLY_ERROR) snprintf(why, sizeof(why), "%s: %s", what, r->str);
    else snprintf(why, sizeof(why), "unexpected reply to %s", what);
    set_error(c, why);
    return HH_ERR_REDIS;
}

static const char *str_or(const json_t *o, const char *key, const char *dflt) {
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* Fills *e from a member; returns the parsed item (json_decref it), NULL
 * when the payload is not a JSON object (e->valid 0). */
static json_t *entry_fill(hh_jobset_entry *e, hh_jobset set, const char *payload, size_t len,
                          double score) {
    memset(e, 0, sizeof(*e));
    e->set = set;
    e->score = score;
    e->payload = payload;
    e->len = len;
    e->jid = e->klass = e->queue = "";
    e->retry_count = -1;
    int lossy = 0;
    json_t *item = hh_json_load_payload(payload, len, &lossy);
    if (!json_is_object(item)) {
        json_decref(item);
        return NULL;
    }
    e->valid = 1;
    e->jid = str_or(item, "jid", "");
    e->klass = str_or(item, "class", "");
    e->queue = str_or(item, "queue", "");
    e->error_class = str_or(item, "error_class", NULL);
    e->error_message = str_or(item, "error_message", NULL);
    json_t *rc = json_object_get(item, "retry_count");
    if (json_is_number(rc)) e->retry_count = (int)json_number_value(rc);
    e->enqueued_at = hh_json_time(json_object_get(item, "enqueued_at"));
    e->created_at = hh_json_time(json_object_get(item, "created_at"));
    e->failed_at = hh_json_time(json_object_get(item, "failed_at"));
    e->retried_at = hh_json_time(json_object_get(item, "retried_at"));
    return item;
}

static int filter_match(const hh_jobset_filter *f, const hh_jobset_entry *e, const json_t *item) {
    if (!f) return 1;
    if (f->klass && strcmp(e->klass, f->klass) != 0 && strcmp(str_or(item, "wrapped", ""), f->klass) != 0)
        return 0;
    if (f->queue && strcmp(e->queue, f->queue) != 0) return 0;
    if (f->error && *f->error) {
        int hit = (e->error_class && strstr(e->error_class, f->error)) ||
                  (e->error_message && strstr(e->error_message, f->error));
        if (!hit) return 0;
    }
    return 1;
}

/* ----------------------------------------------------------- the push */

/* Sets key to the JSON text of v in a payload that cannot be re-serialised
 * (integers beyond 64 bits), keeping every other byte. Takes v. */
static char *raw_set(char *payload, size_t *len, const char *key, json_t *v) {
    char *text = v ? hh_json_dump(v) : NULL;
    json_decref(v);
    if (!text) {
        free(payload);
        return NULL;
    }
    char *out = hh_json_set_raw(payload, *len, key, text, len);
    free(text);
    free(payload);
    return out;
}

/* The payload Sidekiq::Client.push(msg) writes for an entry taken out of a
 * sorted set (SortedEntry#retry with decrement, #add_to_queue without):
 * retry_count - 1 when present, Sidekiq.default_worker_options ("retry"
 * true, "queue" "default") under the item's own keys, a jid and created_at
 * when absent, enqueued_at now. NULL with why set when Sidekiq's client
 * would refuse it (it then loses the job; it stays here). */
static char *push_payload(hh_client *c, const char *member, size_t len, int decrement,
                          char **queue_out, size_t *outlen, char *why, size_t whylen) {
    int lossy = 0;
    json_t *item = hh_json_load_payload(member, len, &lossy);
    char *out = NULL;
    *queue_out = NULL;
    if (!json_is_object(item)) {
        hh_strlcpy(why, "the entry is not a JSON object", whylen);
        goto done;
    }
    json_t *k = json_object_get(item, "class"), *a = json_object_get(item, "args");
    json_t *q = json_object_get(item, "queue"), *rc = json_object_get(item, "retry_count");
    if (!json_is_string(k) || !json_is_array(a)) {
        hh_strlcpy(why, "the entry is not a job: it needs a \"class\" string and an \"args\" array", whylen);
        goto done;
    }
    if (json_object_get(item, "at")) {
        hh_strlcpy(why, "the entry holds \"at\": Sidekiq's client would schedule it again", whylen);
        goto done;
    }
    const char *queue = q ? (json_is_string(q) ? json_string_value(q) : NULL) : "default";
    if (!queue || hh_name_check(HH_NAME_QUEUE, queue, NULL, 0) != HH_OK) {
        hh_strlcpy(why, "the entry's \"queue\" is not a valid queue name", whylen);
        goto done;
    }
    json_t *new_rc = NULL;
    if (decrement && rc && !json_is_null(rc) && !json_is_false(rc)) {
        if (json_is_integer(rc)) new_rc = json_integer(json_integer_value(rc) - 1);
        else if (json_is_real(rc) && lossy && json_real_value(rc) == floor(json_real_value(rc)) &&
                 fabs(json_real_value(rc)) < 1e15)
            new_rc = json_integer((json_int_t)json_real_value(rc) - 1); /* read as a real by the lossy parse */
        else if (json_is_real(rc)) new_rc = json_real(json_real_value(rc) - 1);
        else {
            hh_strlcpy(why, "the entry's \"retry_count\" is not a number", whylen);
            goto done;
        }
    }
    double now = hh_now();
    hh_timestamps ts = hh_client_timestamps(c);
    json_t *jid = json_object_get(item, "jid"), *ca = json_object_get(item, "created_at");
    int need_jid = !jid || json_is_null(jid) || json_is_false(jid);
    int need_ca = !ca || json_is_null(ca) || json_is_false(ca);
    char fresh[HH_JID_SIZE];
    if (need_jid && hh_new_jid(fresh) != 0) {
        hh_strlcpy(why, "no randomness for a jid", whylen);
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
        if (new_rc) out = raw_set(out, outlen, "retry_count", new_rc);
        if (out && !json_object_get(item, "retry")) out = raw_set(out, outlen, "retry", json_true());
        if (out && !q) out = raw_set(out, outlen, "queue", json_string("default"));
        if (out && need_jid) out = raw_set(out, outlen, "jid", json_string(fresh));
        if (out && need_ca) out = raw_set(out, outlen, "created_at", hh_json_time_new(now, ts));
        if (out) out = raw_set(out, outlen, "enqueued_at", hh_json_time_new(now, ts));
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
    if (need_ca) json_object_set_new(o, "created_at", hh_json_time_new(now, ts));
    json_object_set_new(o, "enqueued_at", hh_json_time_new(now, ts));
    out = hh_json_dump(o);
    json_decref(o);
    if (!out) goto nomem;
    *outlen = strlen(out);
    goto done;
nomem:
    hh_strlcpy(why, "out of memory", whylen);
    free(out);
    out = NULL;
done:
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
    const hh_keys *k = hh_client_keys(c);
    sds sk = hh_key(k, set_name(set)), qs = hh_key(k, HH_K_QUEUES), target = NULL;
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
        target = hh_key_queue(k, queue);
        args[1] = "queue", alen[1] = 5;
        args[2] = payload, alen[2] = plen;
        args[3] = queue, alen[3] = strlen(queue);
        nargs = 4;
        break;
    case HH_JOBSET_KILL: {
        double now = hh_now();
        double timeout = opts && opts->dead_timeout > 0 ? opts->dead_timeout : HH_DEAD_TIMEOUT;
        long max = opts && opts->dead_max_jobs > 0 ? opts->dead_max_jobs : HH_DEAD_MAX_JOBS;
        hh_fmt_double(score, sizeof(score), now);
        hh_fmt_double(cutoff, sizeof(cutoff), now - timeout);
        snprintf(maxr, sizeof(maxr), "%ld", -max);
        target = hh_key(k, HH_K_DEAD);
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
        hh_strlcpy(why, "unknown action", whylen);
        rc = HH_ERR_INVALID;
        goto out;
    }
    if (!sk || !qs || !target) {
        rc = HH_ERR_NOMEM;
        goto out;
    }
    const char *keys[3] = {sk, target, qs};
    size_t klen[3] = {sdslen(sk), sdslen(target), sdslen(qs)};
    redisReply *r = hh_conn_eval(hh_client_conn(c), HH_SCRIPT_ADMIN_MOVE, 3, keys, klen, nargs, args, alen);
    if (r && r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
        rc = (int)r->integer;
    } else {
        rc = bad_reply(c, r, "the move script");
        hh_strlcpy(why, hh_client_last_error(c), whylen);
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

int hh_jobset_size(hh_client *c, hh_jobset set, long long *size_out) {
    if (!c || !set_name(set) || !size_out) return HH_ERR_INVALID;
    sds sk = hh_key(hh_client_keys(c), set_name(set));
    redisReply *r = hh_conn_cmd(hh_client_conn(c), "ZCARD %s", sk);
    sdsfree(sk);
    int rc = HH_OK;
    if (r && r->type == REDIS_REPLY_INTEGER) *size_out = r->integer;
    else rc = bad_reply(c, r, "ZCARD");
    if (r) freeReplyObject(r);
    return rc;
}

/* Whether a flat [member, score, ...] array holds only strings. */
static int pairs_ok(const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2) return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING) return 0;
    return 1;
}

int hh_jobset_each(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_fn fn,
                   void *udata) {
    if (!c || !set_name(set) || !fn) return HH_ERR_INVALID;
    sds sk = hh_key(hh_client_keys(c), set_name(set));
    /* The Web UI's order: the dead set newest first, the others by when
     * they run next. */
    const char *cmd = set == HH_JOBSET_DEAD ? "ZREVRANGE" : "ZRANGE";
    size_t seen = 0;
    int rc = HH_OK, stop = 0;
    for (long long start = 0; !stop; start += HH_ADMIN_PAGE) {
        redisReply *r = hh_conn_cmd(hh_client_conn(c), "%s %s %lld %lld WITHSCORES", cmd, sk, start,
                                    start + HH_ADMIN_PAGE - 1);
        if (!pairs_ok(r)) {
            rc = bad_reply(c, r, cmd);
            if (r) freeReplyObject(r);
            break;
        }
        for (size_t i = 0; i + 1 < r->elements && !stop; i += 2) {
            hh_jobset_entry e;
            json_t *item = entry_fill(&e, set, r->element[i]->str, r->element[i]->len,
                                      hh_strtod_c(r->element[i + 1]->str, NULL));
            if (filter_match(f, &e, item)) {
                if (fn(&e, udata) != 0) stop = 1;
                if (f && f->limit && ++seen >= f->limit) stop = 1;
            }
            json_decref(item);
        }
        if (r->elements < 2 * HH_ADMIN_PAGE) stop = 1;
        freeReplyObject(r);
    }
    sdsfree(sk);
    return rc;
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
static int zscan_step(hh_client *c, const char *key, char *cursor, size_t clen, const char *pattern,
                      redisReply **out) {
    redisReply *r = pattern ? hh_conn_cmd(hh_client_conn(c), "ZSCAN %s %s MATCH %s COUNT %d", key, cursor,
                                          pattern, HH_ADMIN_PAGE)
                            : hh_conn_cmd(hh_client_conn(c), "ZSCAN %s %s COUNT %d", key, cursor, HH_ADMIN_PAGE);
    *out = NULL;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        !pairs_ok(r->element[1])) {
        int rc = bad_reply(c, r, "ZSCAN");
        if (r) freeReplyObject(r);
        return rc;
    }
    hh_strlcpy(cursor, r->element[0]->str, clen);
    *out = r;
    return HH_OK;
}

static int jid_ok(const char *jid) { return jid && *jid && strlen(jid) <= 1024; }

/* Walks entries whose "jid" equals jid; fn as hh_jobset_fn. Sets *found. */
static int find_each(hh_client *c, hh_jobset set, const char *jid, hh_jobset_fn fn, void *udata,
                     int *found, int propagate) {
    sds sk = hh_key(hh_client_keys(c), set_name(set)), pat = match_pattern(jid);
    char cursor[32] = "0";
    int rc = HH_OK, stop = 0;
    *found = 0;
    if (!sk || !pat) rc = HH_ERR_NOMEM;
    while (rc == HH_OK && !stop) {
        redisReply *r;
        if ((rc = zscan_step(c, sk, cursor, sizeof(cursor), pat, &r)) != HH_OK) break;
        const redisReply *a = r->element[1];
        for (size_t i = 0; i + 1 < a->elements && !stop; i += 2) {
            hh_jobset_entry e;
            json_t *item = entry_fill(&e, set, a->element[i]->str, a->element[i]->len,
                                      hh_strtod_c(a->element[i + 1]->str, NULL));
            if (e.valid && strcmp(e.jid, jid) == 0) {
                (*found)++;
                int x = fn(&e, udata);
                if (x) stop = 1, rc = x < 0 && propagate ? x : HH_OK;
            }
            json_decref(item);
        }
        freeReplyObject(r);
        if (!strcmp(cursor, "0")) break;
    }
    sdsfree(sk);
    sdsfree(pat);
    return rc;
}

int hh_jobset_find(hh_client *c, hh_jobset set, const char *jid, hh_jobset_fn fn, void *udata) {
    if (!c || !set_name(set) || !jid_ok(jid) || !fn) return HH_ERR_INVALID;
    int found = 0, rc = find_each(c, set, jid, fn, udata, &found, 0);
    if (rc == HH_OK && !found) rc = HH_ERR_NOTFOUND;
    return rc;
}

/* ------------------------------------------------------------- actions */

typedef struct act_ctx {
    hh_client *c;
    hh_jobset_action action;
    const hh_jobset_options *opts;
    int result; /* 1 moved */
    char why[256];
} act_ctx;

/* Returns 1 to stop once moved, a negative error to stop with it, 0 to try
 * the next entry with that jid (this one was taken meanwhile). */
static int act_one(const hh_jobset_entry *e, void *udata) {
    act_ctx *x = udata;
    int rc = move_entry(x->c, e->set, e->payload, e->len, x->action, x->opts, x->why, sizeof(x->why));
    if (rc == 1) x->result = 1;
    return rc == 0 ? 0 : rc == 1 ? 1 : rc;
}

static int action_allowed(hh_jobset set, hh_jobset_action a) {
    if (!set_name(set) || a < HH_JOBSET_RETRY_NOW || a > HH_JOBSET_KILL) return 0;
    return !(a == HH_JOBSET_KILL && set == HH_JOBSET_DEAD);
}

int hh_jobset_act(hh_client *c, hh_jobset set, const char *jid, hh_jobset_action action,
                  const hh_jobset_options *opts) {
    if (!c || !jid_ok(jid) || !action_allowed(set, action)) return HH_ERR_INVALID;
    act_ctx x = {c, action, opts, 0, ""};
    int found = 0, rc = find_each(c, set, jid, act_one, &x, &found, 1);
    if (rc == HH_ERR_INVALID) set_error(c, x.why);
    if (rc != HH_OK) return rc;
    return x.result ? HH_OK : HH_ERR_NOTFOUND;
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

int hh_jobset_act_all(hh_client *c, hh_jobset set, const hh_jobset_filter *f,
                      hh_jobset_action action, const hh_jobset_options *opts, size_t *done,
                      size_t *skipped) {
    size_t nd = 0, ns = 0;
    int rc = HH_OK;
    if (done) *done = 0;
    if (skipped) *skipped = 0;
    if (!c || !action_allowed(set, action)) return HH_ERR_INVALID;
    sds sk = hh_key(hh_client_keys(c), set_name(set));
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
        for (size_t i = 0; i < n; i++) order[i] = i, scores[i] = hh_strtod_c(a->element[2 * i + 1]->str, NULL);
        /* insertion sort: a batch is a few hundred entries */
        for (size_t i = 1; i < n; i++) {
            size_t x = order[i], j = i;
            while (j > 0 && before(a, scores, x, order[j - 1])) order[j] = order[j - 1], j--;
            order[j] = x;
        }
        for (size_t oi = 0; oi < n && !stop; oi++) {
            size_t i = 2 * order[oi];
            hh_jobset_entry e;
            json_t *item = entry_fill(&e, set, a->element[i]->str, a->element[i]->len, scores[order[oi]]);
            if (filter_match(f, &e, item)) {
                int m = move_entry(c, set, e.payload, e.len, action, opts, why, sizeof(why));
                if (m == 1) nd++;
                else if (m == HH_ERR_INVALID) ns++;
                else if (m < 0) rc = m, stop = 1;
                if (f && f->limit && nd >= f->limit) stop = 1;
            }
            json_decref(item);
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

/* MULTI, <count>, UNLINK <key>[, SREM queues <name>], EXEC: the count and the
 * removal in one transaction. */
static int clear_key(hh_client *c, const char *count_cmd, sds key, const char *queue, long long *removed) {
    hh_pipe p;
    hh_pipe_begin(&p, hh_client_conn(c));
    hh_pipe_add(&p, "MULTI");
    hh_pipe_add(&p, "%s %s", count_cmd, key);
    hh_pipe_add(&p, "UNLINK %s", key);
    sds qs = NULL;
    if (queue) {
        qs = hh_key(hh_client_keys(c), HH_K_QUEUES);
        hh_pipe_add(&p, "SREM %s %s", qs, queue);
    }
    hh_pipe_add(&p, "EXEC");
    sdsfree(qs);
    redisReply **r = hh_pipe_exec(&p);
    if (!r) return HH_ERR_REDIS;
    char why[256];
    int rc = HH_OK;
    if (hh_tx_check(r, 0, p.n - 1, why, sizeof(why), NULL) != 0) {
        set_error(c, why);
        rc = HH_ERR_REDIS;
    } else {
        const redisReply *x = r[p.n - 1];
        if (x->type != REDIS_REPLY_ARRAY || x->elements < 1 || x->element[0]->type != REDIS_REPLY_INTEGER) {
            rc = bad_reply(c, x, "EXEC");
        } else if (removed) {
            *removed = x->element[0]->integer;
        }
    }
    hh_replies_free(r, p.n);
    return rc;
}

int hh_jobset_clear(hh_client *c, hh_jobset set, long long *removed) {
    if (!c || !set_name(set)) return HH_ERR_INVALID;
    sds sk = hh_key(hh_client_keys(c), set_name(set));
    int rc = sk ? clear_key(c, "ZCARD", sk, NULL, removed) : HH_ERR_NOMEM;
    sdsfree(sk);
    return rc;
}

/* -------------------------------------------------------------- queues */

static int cmp_reply_str(const void *a, const void *b) {
    return strcmp((*(redisReply *const *)a)->str, (*(redisReply *const *)b)->str);
}

/* SMEMBERS of a set, checked element by element and sorted. */
static redisReply *sorted_members(hh_client *c, const char *name) {
    sds k = hh_key(hh_client_keys(c), name);
    redisReply *r = hh_conn_cmd(hh_client_conn(c), "SMEMBERS %s", k);
    sdsfree(k);
    int ok = r && r->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; ok && i < r->elements; i++) ok = r->element[i]->type == REDIS_REPLY_STRING;
    if (!ok) {
        bad_reply(c, r, "SMEMBERS");
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
    json_t *j = hh_json_load_payload(e->str, e->len, &lossy);
    double t = hh_json_time(json_object_get(j, "enqueued_at"));
    json_decref(j);
    return t > 0 ? now - t : 0;
}

static char *dump_out(json_t *v) {
    char *s = hh_json_dump(v); /* key order kept, reals as payloads are written */
    json_decref(v);
    return s;
}

int hh_queues_list(hh_client *c, char **json_out) {
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
        hh_pipe p;
        hh_pipe_begin(&p, hh_client_conn(c));
        for (size_t i = from; i < to; i++) {
            sds k = hh_key_queue(hh_client_keys(c), qs->element[i]->str);
            hh_pipe_add(&p, "LLEN %s", k);
            hh_pipe_add(&p, "LRANGE %s %d -1", k, -HH_QUEUE_HEAD);
            sdsfree(k);
        }
        redisReply **r = hh_pipe_exec(&p);
        if (!r) {
            rc = HH_ERR_REDIS;
            break;
        }
        double now = hh_now();
        for (size_t i = from; i < to; i++) {
            const redisReply *len = r[2 * (i - from)], *head = r[2 * (i - from) + 1];
            int ok = 1;
            long long size = int_reply(len, &ok);
            if (!ok || head->type != REDIS_REPLY_ARRAY) {
                rc = bad_reply(c, !ok ? len : head, !ok ? "LLEN" : "LRANGE");
                break;
            }
            json_t *classes = json_object();
            for (size_t j = head->elements; j-- > 0;) {
                const redisReply *e = head->element[j];
                if (e->type != REDIS_REPLY_STRING) continue;
                int lossy;
                json_t *it = hh_json_load_payload(e->str, e->len, &lossy);
                const char *k = json_is_object(it) ? str_or(it, "class", "?") : "(not a job)";
                json_t *n = json_object_get(classes, k);
                json_object_set_new(classes, k, json_integer(n ? json_integer_value(n) + 1 : 1));
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
        hh_replies_free(r, p.n);
    }
    freeReplyObject(qs);
    if (rc != HH_OK) {
        json_decref(arr);
        return rc;
    }
    *json_out = dump_out(arr);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

/* The job object for a list entry: its item parsed when it can be without
 * loss, else the payload as a string. */
static json_t *job_json(const char *s, size_t len) {
    json_t *o = json_object();
    int lossy;
    json_t *it = hh_json_load_payload(s, len, &lossy);
    json_object_set_new(o, "jid", json_string(json_is_object(it) ? str_or(it, "jid", "") : ""));
    json_object_set_new(o, "class", json_string(json_is_object(it) ? str_or(it, "class", "") : ""));
    double ea = json_is_object(it) ? hh_json_time(json_object_get(it, "enqueued_at")) : 0;
    json_object_set_new(o, "enqueued_at", ea > 0 ? json_real(ea) : json_null());
    if (json_is_object(it) && !lossy) json_object_set(o, "item", it);
    else json_object_set_new(o, "payload", json_stringn(s, len));
    json_decref(it);
    return o;
}

int hh_queue_show(hh_client *c, const char *name, size_t n, char **json_out) {
    if (!c || !json_out || !name || hh_name_check(HH_NAME_QUEUE, name, NULL, 0) != HH_OK || n > 100000)
        return HH_ERR_INVALID;
    *json_out = NULL;
    sds k = hh_key_queue(hh_client_keys(c), name);
    hh_pipe p;
    hh_pipe_begin(&p, hh_client_conn(c));
    hh_pipe_add(&p, "LLEN %s", k);
    hh_pipe_add(&p, "LRANGE %s -1 -1", k);
    hh_pipe_add(&p, "LRANGE %s %lld -1", k, -(long long)(n ? n : 1));
    sdsfree(k);
    redisReply **r = hh_pipe_exec(&p);
    if (!r) return HH_ERR_REDIS;
    int ok = 1, rc = HH_OK;
    long long size = int_reply(r[0], &ok);
    if (!ok || r[1]->type != REDIS_REPLY_ARRAY || r[2]->type != REDIS_REPLY_ARRAY) {
        rc = bad_reply(c, !ok ? r[0] : r[1]->type != REDIS_REPLY_ARRAY ? r[1] : r[2], "LLEN/LRANGE");
        hh_replies_free(r, p.n);
        return rc;
    }
    json_t *o = json_object(), *jobs = json_array();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "size", json_integer(size));
    json_object_set_new(o, "latency", json_real(r[1]->elements ? latency_of(r[1]->element[0], hh_now()) : 0));
    for (size_t j = n ? r[2]->elements : 0; j-- > 0;) { /* the next to run first */
        const redisReply *e = r[2]->element[j];
        if (e->type == REDIS_REPLY_STRING) json_array_append_new(jobs, job_json(e->str, e->len));
    }
    json_object_set_new(o, "jobs", jobs);
    hh_replies_free(r, p.n);
    *json_out = dump_out(o);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}

int hh_queue_clear(hh_client *c, const char *name, long long *removed) {
    if (!c || !name || hh_name_check(HH_NAME_QUEUE, name, NULL, 0) != HH_OK) return HH_ERR_INVALID;
    sds k = hh_key_queue(hh_client_keys(c), name);
    int rc = k ? clear_key(c, "LLEN", k, name, removed) : HH_ERR_NOMEM;
    sdsfree(k);
    return rc;
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
        sds hk = hh_key_process(hh_client_keys(c), id), wk = hh_key_work(hh_client_keys(c), id),
            wsk = hh_key_workers(hh_client_keys(c), id);
        hh_pipe p;
        hh_pipe_begin(&p, hh_client_conn(c));
        hh_pipe_add(&p, "EXISTS %s", hk);
        hh_pipe_add(&p, "HGETALL %s", wk);
        hh_pipe_add(&p, "HGETALL %s", wsk);
        sdsfree(hk), sdsfree(wk), sdsfree(wsk);
        redisReply **r = hh_pipe_exec(&p);
        if (!r) {
            rc = HH_ERR_REDIS;
            break;
        }
        int ok = 1;
        long long live = int_reply(r[0], &ok);
        if (!ok || !pairs_ok(r[1]) || !pairs_ok(r[2])) {
            rc = bad_reply(c, !ok ? r[0] : !pairs_ok(r[1]) ? r[1] : r[2], "EXISTS/HGETALL");
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
                    item = hh_json_load_payload(json_string_value(pl), json_string_length(pl), &lossy);
                else if (json_is_object(pl))
                    item = json_incref(pl);
                fn(id, h->element[j]->str, w, item, udata);
                json_decref(item);
                json_decref(w);
            }
        }
        hh_replies_free(r, p.n);
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
    const char *jid = json_is_object(item) ? str_or(item, "jid", "") : "";
    if (b->jid && strcmp(jid, b->jid) != 0) return;
    json_t *o = json_object();
    if (b->jid) json_object_set_new(o, "where", json_string("running"));
    json_object_set_new(o, "identity", json_string(identity));
    json_object_set_new(o, "thread", json_string(thread));
    json_object_set_new(o, "queue", json_string(str_or(w, "queue", "")));
    if (!b->jid) {
        json_object_set_new(o, "class", json_string(json_is_object(item) ? str_or(item, "class", "") : ""));
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

int hh_busy(hh_client *c, char **json_out) {
    if (!c || !json_out) return HH_ERR_INVALID;
    *json_out = NULL;
    busy_ctx b = {json_array(), hh_now(), NULL};
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
    json_object_set_new(o, "class", json_string(e->klass));
    json_array_append_new(f->arr, o);
    return 0;
}

/* Finds jid in one queue, reading it in pages from the end that runs next;
 * positions count from there (0 runs next). */
static int find_in_queue(hh_client *c, const char *queue, const char *jid, json_t *arr) {
    sds k = hh_key_queue(hh_client_keys(c), queue);
    size_t jl = strlen(jid);
    int rc = HH_OK;
    for (long long pos = 0;; pos += HH_ADMIN_PAGE) {
        redisReply *r = hh_conn_cmd(hh_client_conn(c), "LRANGE %s %lld %lld", k, -pos - HH_ADMIN_PAGE, -pos - 1);
        int ok = r && r->type == REDIS_REPLY_ARRAY;
        for (size_t i = 0; ok && i < r->elements; i++) ok = r->element[i]->type == REDIS_REPLY_STRING;
        if (!ok) {
            rc = bad_reply(c, r, "LRANGE");
            if (r) freeReplyObject(r);
            break;
        }
        for (size_t i = r->elements; i-- > 0;) {
            const redisReply *e = r->element[i];
            if (!memmem(e->str, e->len, jid, jl)) continue;
            int lossy;
            json_t *it = hh_json_load_payload(e->str, e->len, &lossy);
            if (json_is_object(it) && strcmp(str_or(it, "jid", ""), jid) == 0) {
                json_t *o = json_object();
                json_object_set_new(o, "where", json_string("queue"));
                json_object_set_new(o, "queue", json_string(queue));
                json_object_set_new(o, "position", json_integer(pos + (long long)(r->elements - 1 - i)));
                json_object_set_new(o, "class", json_string(str_or(it, "class", "")));
                json_array_append_new(arr, o);
            }
            json_decref(it);
        }
        size_t got = r->elements;
        freeReplyObject(r);
        if (got < HH_ADMIN_PAGE) break;
    }
    sdsfree(k);
    return rc;
}

int hh_jobs_find(hh_client *c, const char *jid, char **json_out) {
    if (!c || !json_out || !jid_ok(jid)) return HH_ERR_INVALID;
    *json_out = NULL;
    json_t *arr = json_array();
    redisReply *qs = sorted_members(c, HH_K_QUEUES);
    int rc = qs ? HH_OK : HH_ERR_REDIS;
    for (size_t i = 0; qs && i < qs->elements && rc == HH_OK; i++) rc = find_in_queue(c, qs->element[i]->str, jid, arr);
    if (qs) freeReplyObject(qs);
    static const struct { hh_jobset set; const char *where; } sets[] = {
        {HH_JOBSET_SCHEDULED, "scheduled"}, {HH_JOBSET_RETRY, "retry"}, {HH_JOBSET_DEAD, "dead"}};
    for (size_t i = 0; i < 3 && rc == HH_OK; i++) {
        find_ctx f = {arr, sets[i].where};
        int found;
        rc = find_each(c, sets[i].set, jid, found_in_set, &f, &found, 0);
    }
    if (rc == HH_OK) {
        busy_ctx b = {arr, hh_now(), jid};
        rc = each_work(c, busy_row, &b);
    }
    if (rc != HH_OK) {
        json_decref(arr);
        return rc;
    }
    *json_out = dump_out(arr);
    return *json_out ? HH_OK : HH_ERR_NOMEM;
}
