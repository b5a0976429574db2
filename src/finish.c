/* finish.c -- a fetched job's end when no outcome is written: the ack, the
 * push back, the report of a job not pushed back (see finish.h).
 * Keys: hiredhand:inprogress:<identity>|<q> (LREM of the exact payload on
 * ack; LREM in HH_LUA_REQUEUE on push back), queue:<q> (RPUSH in
 * HH_LUA_REQUEUE, or HH_LUA_PUSH_BACK for basic fetch: both allowed over
 * maxmemory). */
#include "finish.h"
#include "lease.h"
#include "outcome.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Finished jobs whose ack (LREM) is not sent yet, shared by the worker
 * threads. */
struct hh__acks {
    pthread_mutex_t mu;
    hh_job **jobs;
    size_t n, cap;
    size_t flush_at;    /* queued acks that make the thread adding one send them all */
    hh__err_run errors; /* refusals, logged once per run */
};

struct hh__acks *hh__acks_new(size_t flush_at) {
    struct hh__acks *a = calloc(1, sizeof(*a));
    if (!a) return NULL;
    a->cap = a->flush_at = flush_at ? flush_at : 1;
    if (!(a->jobs = calloc(a->cap, sizeof(*a->jobs)))) {
        free(a);
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    hh__err_run_init(&a->errors);
    return a;
}

void hh__acks_free(struct hh__acks *a) {
    if (!a) return;
    for (size_t k = 0; k < a->n; k++) hh__job_free(a->jobs[k]);
    free(a->jobs);
    pthread_mutex_destroy(&a->mu);
    hh__err_run_destroy(&a->errors);
    free(a);
}

/* ------------------------------------------------------------ acks */

static void acks_once(const hh__finish_env *env, hh__conn *c, hh_job **jobs, size_t n);

/* Acks are queued per manager, not per thread: the thread that fetches
 * next sends them all in its fetch round trip, and the chores thread sends
 * what is left every 50 ms, so a job that finished is acknowledged soon
 * even while its thread runs a slow job or idles in a blocking fetch.
 * Jobs are taken in fetch order, so acks come mostly oldest first: each
 * LREM (which searches from the oldest end of the list) finds its entry
 * within the first few. */
void hh__finish_queue_ack(const hh__finish_env *env, hh_job *job, hh__conn *c) {
    struct hh__acks *a = env->acks;
    pthread_mutex_lock(&a->mu);
    /* The queue can be full: acks Redis refused come back (acks_return),
     * and other threads add theirs between one thread finding it full and
     * its flush taking them. It grows then; the flush threshold stays. */
    if (a->n == a->cap) {
        hh_job **grown = realloc(a->jobs, 2 * a->cap * sizeof(*grown));
        if (grown) a->jobs = grown, a->cap *= 2;
    }
    int added = a->n < a->cap;
    if (added) a->jobs[a->n++] = job;
    int full = a->n >= a->flush_at;
    pthread_mutex_unlock(&a->mu);
    if (!added) {
        /* out of memory: this ack goes at once, alone, rather than leave
         * the job in progress for the reconciliation to run it again; only
         * when even that fails (no memory for its array, or Redis refuses
         * it and the queue still cannot take it back) is it dropped */
        hh_job **one = malloc(sizeof(*one));
        if (one) {
            one[0] = job;
            acks_once(env, c, one, 1);
        } else {
            hh__lease_finish(env->lease, job);
        }
    }
    if (full) hh__finish_flush_acks(env, c);
}

hh_job **hh__finish_take_acks(const hh__finish_env *env, size_t *n) {
    struct hh__acks *a = env->acks;
    pthread_mutex_lock(&a->mu);
    *n = a->n;
    hh_job **out = NULL;
    if (*n && (out = malloc(*n * sizeof(*out)))) {
        memcpy(out, a->jobs, *n * sizeof(*out));
        a->n = 0;
    } else {
        *n = 0;
    }
    pthread_mutex_unlock(&a->mu);
    return out;
}

void hh__finish_acks_free(const hh__finish_env *env, hh_job **jobs, size_t n) {
    hh__lease_release_jobs(env->lease, jobs, n);
    for (size_t i = 0; i < n; i++) hh__job_free(jobs[i]);
    free(jobs);
}

/* Puts acks that could not be sent back in the queue (the array is freed). */
static void acks_return(const hh__finish_env *env, hh_job **jobs, size_t n) {
    struct hh__acks *a = env->acks;
    pthread_mutex_lock(&a->mu);
    if (a->n + n > a->cap) {
        hh_job **grown = realloc(a->jobs, (a->n + n) * sizeof(*grown));
        if (grown) a->jobs = grown, a->cap = a->n + n;
    }
    size_t k = 0;
    for (; k < n && a->n < a->cap; k++) a->jobs[a->n++] = jobs[k];
    pthread_mutex_unlock(&a->mu);
    /* out of memory: those jobs stay in progress; reconciliation pushes them back */
    for (; k < n; k++) hh__lease_finish(env->lease, jobs[k]);
    free(jobs);
}

size_t hh__finish_acks_settle(const hh__finish_env *env, hh__conn *c, hh_job **jobs, redisReply **r, size_t n,
                              char *why, size_t whylen) {
    size_t refused = 0, done = 0;
    char first[256] = "";
    hh_job **ok = malloc((n ? n : 1) * sizeof(*ok));
    for (size_t i = 0; i < n; i++) {
        if (!r[i] || r[i]->type != REDIS_REPLY_INTEGER) {
            if (!refused)
                hh__strlcpy(first, r[i] && r[i]->type == REDIS_REPLY_ERROR ? r[i]->str : "unexpected reply",
                            sizeof(first));
            jobs[refused++] = jobs[i];
            continue;
        }
        if (r[i]->integer == 0 && !jobs[i]->ack_uncertain) hh__lease_lost(env->lease, c, jobs[i]);
        if (ok) ok[done++] = jobs[i];
        else hh__lease_finish(env->lease, jobs[i]); /* out of memory: one at a time */
    }
    if (ok) hh__finish_acks_free(env, ok, done);
    if (refused) {
        /* the count is not part of the message: it changes at every try */
        hh__err_run_fail(env->ctx->log, &env->acks->errors, HH_LOG_WARN,
                         "acknowledgements refused, kept for the next try", first);
        if (why) hh__strlcpy(why, first, whylen);
        acks_return(env, jobs, refused);
    } else {
        hh__err_run_ok(env->ctx->log, &env->acks->errors, "acknowledgements");
        free(jobs);
    }
    return refused;
}

/* One attempt of an ack send, for hh__write_until_done: sends the acks in
 * hand (the queued ones when none: after a refusal the refused ones went
 * back to the queue, and the retry takes them with any queued since).
 * Refused acks go back to the queue; acks whose connection failed stay in
 * hand, marked uncertain (whether those LREMs ran is unknown, so a retry's
 * 0 proves nothing). Returns 0 all sent, -1 otherwise with why set. */
typedef struct acks_attempt {
    const hh__finish_env *env;
    hh_job **jobs; /* in hand; NULL: take the queued ones */
    size_t n;
} acks_attempt;

static int acks_attempt_fn(void *ctx, hh__conn *c, char *why, size_t whylen) {
    acks_attempt *a = ctx;
    if (!a->jobs && !(a->jobs = hh__finish_take_acks(a->env, &a->n))) return 0;
    hh__pipe pipe;
    hh__pipe_begin(&pipe, c);
    for (size_t i = 0; i < a->n; i++) hh__finish_ack_append(a->env, &pipe, a->jobs[i]);
    redisReply **r = hh__pipe_exec(&pipe);
    if (!r) {
        for (size_t i = 0; i < a->n; i++) a->jobs[i]->ack_uncertain = 1;
        hh__strlcpy(why, hh__conn_error_or(c, "Redis unreachable"), whylen);
        return -1;
    }
    size_t refused = hh__finish_acks_settle(a->env, c, a->jobs, r, a->n, why, whylen);
    hh__replies_free(r, pipe.n);
    a->jobs = NULL, a->n = 0;
    return refused ? -1 : 0;
}

/* Sends acks (pipelined LREMs) through outcome.c's write-until-done: an
 * outage reconnects, a refusal backs off from 50 ms to 2 s, until done or
 * the stop gave up (then the jobs stay in progress and may run again: at
 * least once). Logged by the acks' error run, not per attempt. */
static void acks_until_done(const hh__finish_env *env, hh__conn *c, hh_job **jobs, size_t n) {
    hh__until_done u = {.conn = c, .log = env->ctx->log, .giving_up = &env->ctx->flags->giving_up, .subject = NULL};
    acks_attempt a = {env, jobs, n};
    hh__write_until_done(&u, acks_attempt_fn, &a);
    if (a.jobs) hh__finish_acks_free(env, a.jobs, a.n); /* gave up with acks in hand */
}

/* One attempt. Acks Redis refused go back to the queue (settled by the
 * attempt), even after the stop gave up: its last flush takes them. Acks
 * whose reply was lost stay in hand: back to the queue, or, once the stop
 * gave up, dropped with their leases (the jobs stay in progress). */
static void acks_once(const hh__finish_env *env, hh__conn *c, hh_job **jobs, size_t n) {
    char why[256];
    acks_attempt a = {env, jobs, n};
    acks_attempt_fn(&a, c, why, sizeof(why));
    if (!a.jobs) return;
    if (atomic_load(&env->ctx->flags->giving_up)) hh__finish_acks_free(env, a.jobs, a.n);
    else acks_return(env, a.jobs, a.n);
}

void hh__finish_send_acks(const hh__finish_env *env, hh__conn *c, hh_job **jobs, size_t n) {
    if (jobs) acks_until_done(env, c, jobs, n);
}

void hh__finish_flush_acks(const hh__finish_env *env, hh__conn *c) {
    size_t n;
    hh_job **jobs = hh__finish_take_acks(env, &n);
    if (jobs) acks_until_done(env, c, jobs, n);
}

void hh__finish_try_acks(const hh__finish_env *env, hh__conn *c) {
    size_t n;
    hh_job **jobs = hh__finish_take_acks(env, &n);
    if (jobs) acks_once(env, c, jobs, n);
}

/* ------------------------------------------------------------ push back */

struct push_back_attempt {
    const hh__finish_env *env;
    const hh__fetched *f;
};

static int push_back_attempt(void *ctx, hh__conn *c, char *why, size_t whylen) {
    struct push_back_attempt *a = ctx;
    int rc = hh__finish_requeue(a->env, c, a->env->ctx->queues[a->f->queue], a->f->payload, a->f->len, why, whylen);
    return rc >= 0 ? 0 : -1;
}

/* Pushes a fetched job that will not run here back to the front of its
 * queue until Redis takes it (outcome.c's write-until-done: an outage
 * reconnects, a refusal such as OOM backs off) or the stop gives up; then
 * says where it is, with the reason of the last attempt. */
void hh__finish_push_back(const hh__finish_env *env, hh__conn *conn, const hh__fetched *f) {
    hh__until_done u = {.conn = conn, .log = env->ctx->log, .giving_up = &env->ctx->flags->giving_up, .subject = NULL};
    struct push_back_attempt a = {env, f};
    if (hh__write_until_done(&u, push_back_attempt, &a) < 0)
        hh__finish_report_unreturned(env, f->queue, f->payload, f->len, u.why);
}

/* ------------------------------------------------------------ ack and push back commands */

void hh__finish_ack_append(const hh__finish_env *env, hh__pipe *pipe, const hh_job *job) {
    if (env->ctx->opts.fetch == HH_FETCH_BASIC) return;
    int known = job->queue_index >= 0 && (size_t)job->queue_index < env->ctx->nqueues;
    sds k = known ? env->ctx->inprog_keys[job->queue_index]
                  : hh__key_inprogress(env->ctx->keys, env->ctx->identity, job->queue);
    const char *argv[4] = {"LREM", k, "-1", job->payload};
    size_t lens[4] = {4, sdslen(k), 2, job->len}; /* argv: a big payload is held once (redis.c) */
    hh__pipe_addargv(pipe, 4, argv, lens);
    if (!known) sdsfree(k);
}

int hh__finish_requeue(const hh__finish_env *env, hh__conn *c, const char *queue, const char *payload, size_t len,
                       char *why, size_t whylen) {
    sds qk = hh__key_queue(env->ctx->keys, queue);
    redisReply *r;
    if (env->ctx->opts.fetch == HH_FETCH_BASIC) {
        const char *keys[1] = {qk};
        size_t klen[1] = {sdslen(qk)};
        const char *args[1] = {payload};
        size_t alen[1] = {len};
        r = hh__conn_eval(c, HH_SCRIPT_PUSH_BACK, 1, keys, klen, 1, args, alen);
    } else {
        sds ik = hh__key_inprogress(env->ctx->keys, env->ctx->identity, queue);
        const char *keys[2] = {ik, qk};
        size_t klen[2] = {sdslen(ik), sdslen(qk)};
        const char *args[1] = {payload};
        size_t alen[1] = {len};
        r = hh__conn_eval(c, HH_SCRIPT_REQUEUE, 2, keys, klen, 1, args, alen);
        sdsfree(ik);
    }
    sdsfree(qk);
    if (!r) {
        hh__strlcpy(why, hh__conn_error_or(c, "Redis unreachable"), whylen);
        return -1;
    }
    int rc = r->type == REDIS_REPLY_INTEGER ? (r->integer > 0) : -1;
    /* Redis' own words (WRONGTYPE...): the report of a job not pushed back
     * must not call a refusal an outage */
    if (rc < 0) hh__strlcpy(why, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply to the push back", whylen);
    freeReplyObject(r);
    return rc;
}

void hh__finish_requeue_append(const hh__finish_env *env, hh__pipe *pipe, size_t queue, const char *payload,
                               size_t len) {
    /* Both allowed over maxmemory (scripts.h): they put back what a fetch
     * took. Plain text while the server is not known to take script flags. */
    int plain = hh__conn_version(pipe->c) < 700 || hh__conn_plain_scripts(pipe->c);
    if (env->ctx->opts.fetch == HH_FETCH_BASIC)
        hh__pipe_add(pipe, "EVAL %s 1 %s %b", hh__script_source(HH_SCRIPT_PUSH_BACK, plain),
                     env->ctx->queue_keys[queue], payload, len);
    else
        hh__pipe_add(pipe, "EVAL %s 2 %s %s %b", hh__script_source(HH_SCRIPT_REQUEUE, plain),
                     env->ctx->inprog_keys[queue], env->ctx->queue_keys[queue], payload, len);
}

/* ------------------------------------------------------------ the unreturned report */

/* Logs a message that may be longer than the logger's line buffer (a job's
 * full payload), through the same sink. */
static void log_long(const hh__finish_env *env, hh_log_level level, const char *head, const char *payload, size_t len) {
    if (level < env->ctx->log->level) return;
    size_t hl = strlen(head);
    char *msg = malloc(hl + len + 1);
    if (!msg) {
        hh__log(env->ctx->log, level, "%s%.*s", head, (int)(len > 1000 ? 1000 : len), payload);
        return;
    }
    memcpy(msg, head, hl);
    memcpy(msg + hl, payload, len);
    msg[hl + len] = '\0';
    hh__log_line(env->ctx->log, level, msg, hl + len); /* escaped: a payload may hold anything */
    free(msg);
}

void hh__finish_report_unreturned(const hh__finish_env *env, size_t queue, const char *payload, size_t len,
                                  const char *why) {
    json_t *item = json_loadb(payload, len, JSON_ALLOW_NUL, NULL);
    const char *jid = json_string_value(json_object_get(item, "jid"));
    const char *klass = json_string_value(json_object_get(item, "class"));
    if (env->ctx->opts.fetch == HH_FETCH_RELIABLE) {
        hh__log(env->ctx->log, HH_LOG_WARN,
                "class=%s jid=%s: not pushed back to queue %s (%s): it stays in %s for the "
                "next start with --identity %s or a peer's recovery",
                klass ? klass : "?", jid ? jid : "?", env->ctx->queues[queue], why, env->ctx->inprog_keys[queue],
                env->ctx->identity);
    } else {
        char head[700];
        snprintf(head, sizeof(head),
                 "class=%s jid=%s: NOT PUSHED BACK to queue %s (%s); with basic fetch it is "
                 "no longer in Redis unless the push back landed late: check %s and push this payload again if "
                 "it is missing: ",
                 klass ? klass : "?", jid ? jid : "?", env->ctx->queues[queue], why, env->ctx->queue_keys[queue]);
        log_long(env, HH_LOG_ERROR, head, payload, len);
        atomic_fetch_add(&env->ctx->counters->not_pushed_back, 1);
    }
    json_decref(item);
}
