/* fetch.c -- fetching jobs (see fetch.h).
 * Keys: queue:<q> (LMOVE/RPOPLPUSH/BRPOP from, RPUSH back),
 * hiredhand:inprogress:<identity>|<q> (LMOVE into, LREM on ack). */
#include "fetch.h"
#include "lease.h"
#include "pickup.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t hh_queue_order(const int *weights, size_t n, int weighted, hh_rng *rng, size_t *out) {
    if (!weighted) {
        for (size_t i = 0; i < n; i++) out[i] = i;
        return n;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += (size_t)(weights[i] > 1 ? weights[i] : 1);
    size_t stackbuf[256];
    size_t *rep = total <= 256 ? stackbuf : malloc(total * sizeof(size_t));
    if (!rep) { /* degrade to strict rather than fail a fetch */
        for (size_t i = 0; i < n; i++) out[i] = i;
        return n;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (int w = 0; w < (weights[i] > 1 ? weights[i] : 1); w++) rep[k++] = i;
    for (size_t i = total - 1; i > 0; i--) { /* Fisher-Yates */
        size_t j = (size_t)hh_rng_below(rng, i + 1), t = rep[i];
        rep[i] = rep[j], rep[j] = t;
    }
    size_t m = 0;
    unsigned char seenbuf[256] = {0};
    unsigned char *seen = n <= sizeof(seenbuf) ? seenbuf : calloc(n, 1);
    if (!seen) { /* degrade to strict rather than fail a fetch */
        if (rep != stackbuf) free(rep);
        for (size_t i = 0; i < n; i++) out[i] = i;
        return n;
    }
    for (size_t i = 0; i < total && m < n; i++)
        if (!seen[rep[i]]) seen[rep[i]] = 1, out[m++] = rep[i];
    if (seen != seenbuf) free(seen);
    if (rep != stackbuf) free(rep);
    return m;
}

/* Takes the payload out of the reply (hiredis allocated it with a NUL
 * after it; freeReplyObject then frees NULL): a big payload is not
 * copied once more. */
static int take(hh_fetched *out, redisReply *v, size_t q) {
    /* a payload is a bulk string; anything else (a broken or hostile
     * server) is not taken: the job, if moved, stays in progress for the
     * recovery */
    if (v->type != REDIS_REPLY_STRING || !v->str) return -1;
    out->payload = v->str;
    v->str = NULL;
    out->len = v->len;
    out->queue = q;
    return 1;
}

/* Per-thread argument space for the fetch commands, sized for the number of
 * queues once (any number: no fixed cap) and reused by every fetch. */
typedef struct fetch_scratch {
    const char **argv;  /* EVALSHA sha nkeys keys... args..., or BRPOP keys... timeout */
    size_t *lens;
    size_t *order;      /* one queue order */
    char *ord;          /* order strings, back to back */
    size_t ordcap;
} fetch_scratch;

static fetch_scratch *scratch(hh_processor *p) {
    if (p->fetch_scratch) return p->fetch_scratch;
    size_t n = p->m->nqueues, argc = 3 + 2 * n + 1 + HH_FETCH_BATCH_MAX;
    fetch_scratch *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->argv = malloc(argc * sizeof(*s->argv));
    s->lens = malloc(argc * sizeof(*s->lens));
    s->order = malloc(n * sizeof(*s->order));
    if (!s->argv || !s->lens || !s->order) {
        free(s->argv), free(s->lens), free(s->order), free(s);
        return NULL;
    }
    return p->fetch_scratch = s;
}

void hh_fetch_scratch_free(hh_processor *p) {
    fetch_scratch *s = p->fetch_scratch;
    if (!s) return;
    free(s->argv), free(s->lens), free(s->order), free(s->ord), free(s);
    p->fetch_scratch = NULL;
}

static int fetch_basic(hh_processor *p, hh_fetched *out) {
    struct hh_manager *m = p->m;
    fetch_scratch *s = scratch(p);
    if (!s) return -1;
    size_t n = m->nqueues, argc = n + 2;
    const size_t *order = s->order;
    hh_queue_order(m->weights, n, m->weighted, &p->rng, s->order);
    const char **argv = s->argv;
    size_t *lens = s->lens;
    argv[0] = "BRPOP", lens[0] = 5;
    for (size_t i = 0; i < n; i++)
        argv[1 + i] = m->queue_keys[order[i]], lens[1 + i] = sdslen(m->queue_keys[order[i]]);
    argv[n + 1] = "2", lens[n + 1] = 1;
    redisReply *r = hh_conn_cmdargv_blocking(&p->conn, HH_FETCH_BLOCK_SECONDS, (int)argc, argv, lens);
    int rc = r ? 0 : -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING) {
        for (size_t i = 0; i < n; i++) {
            sds k = m->queue_keys[i];
            if (r->element[0]->len == sdslen(k) && memcmp(r->element[0]->str, k, sdslen(k)) == 0)
                rc = take(out, r->element[1], i);
        }
    } else if (r && r->type == REDIS_REPLY_ERROR) {
        hh_log(&m->log, HH_LOG_ERROR, "fetch: %s", r->str);
        rc = -1;
    }
    if (r) freeReplyObject(r);
    return rc;
}

/* Acks are queued per manager, not per thread: the thread that fetches
 * next sends them all in its fetch round trip, and the supervisor sends
 * what is left every 50 ms, so a job that finished is acknowledged soon
 * even while its thread runs a slow job or idles in a blocking fetch. */
void hh_fetch_queue_ack(struct hh_manager *m, hh_job *job, hh_conn *c) {
    pthread_mutex_lock(&m->acks_mu);
    m->acks[m->nacks++] = job;
    int full = m->nacks == m->acks_cap;
    pthread_mutex_unlock(&m->acks_mu);
    if (full) hh_fetch_flush_acks(m, c);
}

/* Takes every queued ack; *n set; the array is the caller's to free. */
static hh_job **acks_take(struct hh_manager *m, size_t *n) {
    pthread_mutex_lock(&m->acks_mu);
    *n = m->nacks;
    hh_job **out = NULL;
    if (*n && (out = malloc(*n * sizeof(*out)))) {
        memcpy(out, m->acks, *n * sizeof(*out));
        m->nacks = 0;
    } else {
        *n = 0;
    }
    pthread_mutex_unlock(&m->acks_mu);
    return out;
}

/* Frees sent (or abandoned) acks; their jobs are no longer held here. */
static void acks_free(struct hh_manager *m, hh_job **jobs, size_t n) {
    hh_lease_release_jobs(m, jobs, n);
    for (size_t i = 0; i < n; i++) hh_job_free(jobs[i]);
    free(jobs);
}

/* Puts acks that could not be sent back in the queue. */
static void acks_return(struct hh_manager *m, hh_job **jobs, size_t n) {
    pthread_mutex_lock(&m->acks_mu);
    if (m->nacks + n > m->acks_cap) {
        hh_job **grown = realloc(m->acks, (m->nacks + n) * sizeof(*grown));
        if (grown) m->acks = grown, m->acks_cap = m->nacks + n;
    }
    size_t k = 0;
    for (; k < n && m->nacks < m->acks_cap; k++) m->acks[m->nacks++] = jobs[k];
    pthread_mutex_unlock(&m->acks_mu);
    /* out of memory: those jobs stay in progress; reconciliation pushes them back */
    for (; k < n; k++) {
        hh_lease_release(m, &jobs[k]->lease);
        hh_job_free(jobs[k]);
    }
    free(jobs);
}

/* Reads the replies of n pipelined acks (LREMs) in order: an ack Redis
 * refused goes back in the queue for the next send; an LREM that removed
 * nothing on its first attempt means another process took the job while
 * this one was paused past its heartbeat TTL (lease.c). The rest are freed
 * (no longer held here). Returns how many were refused. */
static size_t acks_settle(struct hh_manager *m, hh_job **jobs, redisReply **r, size_t n) {
    size_t refused = 0, done = 0;
    char why[256] = "";
    hh_job **ok = malloc((n ? n : 1) * sizeof(*ok));
    for (size_t i = 0; i < n; i++) {
        if (!r[i] || r[i]->type != REDIS_REPLY_INTEGER) {
            if (!refused) hh_strlcpy(why, r[i] && r[i]->type == REDIS_REPLY_ERROR ? r[i]->str : "unexpected reply", sizeof(why));
            jobs[refused++] = jobs[i];
            continue;
        }
        if (r[i]->integer == 0 && !jobs[i]->ack_uncertain) hh_lease_lost(m, jobs[i]);
        if (ok) {
            ok[done++] = jobs[i];
        } else { /* out of memory: one at a time */
            hh_lease_release(m, &jobs[i]->lease);
            hh_job_free(jobs[i]);
        }
    }
    if (ok) acks_free(m, ok, done);
    if (refused) {
        hh_log(&m->log, HH_LOG_WARN, "%zu acknowledgements refused, kept for the next try: %s", refused, why);
        acks_return(m, jobs, refused);
    } else {
        free(jobs);
    }
    return refused;
}

/* Sends acks (pipelined LREMs), retrying through outages and refusals until
 * done or the stop gave up (then the jobs stay in progress and may run
 * again: at least once). With once, what fails is put back instead. */
static void acks_send(struct hh_manager *m, hh_conn *c, hh_job **jobs, size_t n, int once) {
    while (n) {
        hh_pipe pipe;
        hh_pipe_begin(&pipe, c);
        for (size_t i = 0; i < n; i++) hh_fetch_ack_append(m, &pipe, jobs[i]);
        redisReply **r = hh_pipe_exec(&pipe);
        if (r) {
            size_t refused = acks_settle(m, jobs, r, n);
            hh_replies_free(r, pipe.n);
            if (refused && !once && !atomic_load(&m->giving_up)) { /* take them again and retry */
                hh_sleep(0.1);
                jobs = acks_take(m, &n);
                continue;
            }
            return;
        }
        /* Whether those LREMs ran is unknown now: a retry's 0 proves nothing. */
        for (size_t i = 0; i < n; i++) jobs[i]->ack_uncertain = 1;
        /* An outage (or a READONLY primary): keep the outcome, retry. */
        if (once && !atomic_load(&m->giving_up)) {
            acks_return(m, jobs, n);
            return;
        }
        if (atomic_load(&m->giving_up)) break;
        hh_conn_ready(c);
    }
    acks_free(m, jobs, n);
}

void hh_fetch_flush_acks(struct hh_manager *m, hh_conn *c) {
    size_t n;
    hh_job **jobs = acks_take(m, &n);
    if (jobs) acks_send(m, c, jobs, n, 0);
}

void hh_fetch_try_acks(struct hh_manager *m, hh_conn *c) {
    size_t n;
    hh_job **jobs = acks_take(m, &n);
    if (jobs) acks_send(m, c, jobs, n, 1);
}

/* The fetch script's arguments, written into s->argv from index 3 on: every
 * queue's key pair in configuration order, then "1"/"0" (LMOVE or not) and
 * one queue order per job wanted (drawn per job, so weights keep their
 * meaning inside a batch). Returns the argument count after the keys, or -1
 * out of memory. */
static int fetch_args(hh_processor *p, fetch_scratch *s, size_t max) {
    struct hh_manager *m = p->m;
    size_t n = m->nqueues;
    const char **keys = s->argv + 3, **args = s->argv + 3 + 2 * n;
    size_t *klen = s->lens + 3, *alen = s->lens + 3 + 2 * n;
    for (size_t i = 0; i < n; i++) {
        keys[2 * i] = m->queue_keys[i], klen[2 * i] = sdslen(m->queue_keys[i]);
        keys[2 * i + 1] = m->inprog_keys[i], klen[2 * i + 1] = sdslen(m->inprog_keys[i]);
    }
    size_t digits = 1;
    for (size_t v = n; v >= 10; v /= 10) digits++;
    size_t per = n * (digits + 1) + 1, nstr = m->weighted ? max : 1;
    if (s->ordcap < per * nstr) {
        char *grown = realloc(s->ord, per * nstr);
        if (!grown) return -1;
        s->ord = grown, s->ordcap = per * nstr;
    }
    args[0] = p->conn.version >= 602 ? "1" : "0", alen[0] = 1;
    for (size_t j = 0; j < max; j++) {
        if (j == 0 || m->weighted) { /* strict order: one string serves every job */
            char *o = s->ord + (m->weighted ? j : 0) * per;
            hh_queue_order(m->weights, n, m->weighted, &p->rng, s->order);
            size_t len = 0;
            for (size_t i = 0; i < n; i++)
                len += (size_t)snprintf(o + len, per - len, i ? ",%zu" : "%zu", s->order[i] + 1);
            args[1 + j] = o, alen[1 + j] = len;
        } else {
            args[1 + j] = args[1], alen[1 + j] = alen[1];
        }
    }
    return (int)(1 + max);
}

/* One run of the fetch script (with the queued acks in front): returns the
 * number of jobs, 0 when every queue was empty, -1 on an error. */
static int fetch_reliable(hh_processor *p, hh_fetched *out, size_t max) {
    struct hh_manager *m = p->m;
    size_t n = m->nqueues;
    if (max > HH_FETCH_BATCH_MAX) max = HH_FETCH_BATCH_MAX;
    /* One weighted order string per job: bound their total size with very
     * many queues (a batch is an optimisation, one job per fetch is fine). */
    if (m->weighted && n * max > 65536) max = n >= 65536 ? 1 : 65536 / n;
    if (hh_conn_ready(&p->conn) != 0) return -1;
    fetch_scratch *s = scratch(p);
    if (!s) return -1;
    int nargs = fetch_args(p, s, max);
    if (nargs < 0) return -1;
    const char **keys = s->argv + 3, **args = s->argv + 3 + 2 * n;
    size_t *klen = s->lens + 3, *alen = s->lens + 3 + 2 * n;
    /* One round trip: the queued acks, then the fetch script. */
    if (!p->conn.shas[HH_SCRIPT_FETCH][0]) hh_fetch_flush_acks(m, &p->conn);
    /* From here until its reply is read, what the script moves is in our
     * list but held by no thread (lease.c). */
    hh_lease_fetch_begin(m, p, 0);
    redisReply *r = NULL;
    size_t nacks = 0;
    hh_job **acks = p->conn.shas[HH_SCRIPT_FETCH][0] ? acks_take(m, &nacks) : NULL;
    if (acks) {
        char nk[24];
        snprintf(nk, sizeof(nk), "%zu", 2 * n);
        s->argv[0] = "EVALSHA", s->lens[0] = 7;
        s->argv[1] = p->conn.shas[HH_SCRIPT_FETCH], s->lens[1] = 40;
        s->argv[2] = nk, s->lens[2] = strlen(nk);
        int argc = 3 + (int)(2 * n) + nargs;
        hh_pipe pipe;
        hh_pipe_begin(&pipe, &p->conn);
        for (size_t i = 0; i < nacks; i++) hh_fetch_ack_append(m, &pipe, acks[i]);
        hh_pipe_addargv(&pipe, argc, s->argv, s->lens);
        redisReply **rs = hh_pipe_exec(&pipe);
        if (!rs) {
            hh_lease_fetch_end(m, p, out, 0, 1);
            for (size_t i = 0; i < nacks; i++) acks[i]->ack_uncertain = 1;
            acks_send(m, &p->conn, acks, nacks, 0); /* retries the acks alone */
            return -1;
        }
        acks_settle(m, acks, rs, nacks);
        r = rs[pipe.n - 1];
        rs[pipe.n - 1] = NULL;
        hh_replies_free(rs, pipe.n);
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(r);
            r = NULL;
            p->conn.shas[HH_SCRIPT_FETCH][0] = '\0';
        }
    }
    if (!r) r = hh_conn_eval(&p->conn, HH_SCRIPT_FETCH, (int)(2 * n), keys, klen, nargs, args, alen);
    int rc = 0;
    if (!r) {
        rc = -1;
        hh_lease_fetch_end(m, p, out, 0, 1);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
        /* A malformed element ends the parse: what it moved is stranded and
         * reconciliation pushes it back. */
        for (size_t i = 0; i + 1 < r->elements && rc >= 0; i += 2) {
            const redisReply *qi = r->element[i];
            redisReply *v = r->element[i + 1];
            if (qi->type != REDIS_REPLY_INTEGER || v->type != REDIS_REPLY_STRING) break;
            size_t q = (size_t)qi->integer - 1;
            if (q >= n || take(&out[rc], v, q) < 0) break;
            rc++;
        }
        hh_lease_fetch_end(m, p, out, rc, (size_t)rc * 2 != r->elements);
    } else if (r->type == REDIS_REPLY_ERROR) {
        hh_log(&m->log, HH_LOG_ERROR, "fetch: %s", r->str);
        rc = -1;
        hh_lease_fetch_end(m, p, out, 0, 1);
    } else {
        hh_lease_fetch_end(m, p, out, 0, 0); /* every queue empty */
    }
    if (r) freeReplyObject(r);
    return rc;
}

/* Every queue empty and no wake-up from pickup.c (Redis without CLIENT
 * TRACKING): block on one queue with an atomic move, so a job there wakes
 * us at once. Threads spread over the queues so each queue has a waiter
 * when concurrency >= queues, otherwise they rotate; the blocks last
 * Sidekiq's 2 s, so a job in a queue without a waiter waits 2 s at most. */
static int idle_fallback(hh_processor *p, hh_fetched *out) {
    struct hh_manager *m = p->m;
    size_t n = m->nqueues;
    size_t q = (size_t)p->block_queue % n;
    int rotate = (size_t)m->opts.concurrency < n;
    if (rotate) p->block_queue = (int)((q + 1) % n);
    redisReply *r = NULL;
    int rc = 0;
    /* One waiter per queue is enough: other idle threads sleep in the
     * process, at no Redis cost, until a waiter gets a job (or leaves). */
    if (!rotate) {
        pthread_mutex_lock(&m->idle_mu);
        size_t pick = n;
        if (m->waiters[q] == 0) pick = q;
        for (size_t i = 0; i < n && pick == n; i++)
            if (m->waiters[i] == 0) pick = i;
        if (pick == n) {
            if (!atomic_load(&m->quiet)) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += HH_FETCH_SLEEPER_SECONDS;
                pthread_cond_timedwait(&m->idle_cv, &m->idle_mu, &until);
            }
            pthread_mutex_unlock(&m->idle_mu);
            return 0;
        }
        q = pick;
        m->waiters[q]++;
        pthread_mutex_unlock(&m->idle_mu);
    }
    const char *bs = "2"; /* HH_FETCH_BLOCK_SECONDS */
    sds src = m->queue_keys[q], dst = m->inprog_keys[q];
    int lmove = p->conn.version >= 602;
    const char *bargv[6] = {lmove ? "BLMOVE" : "BRPOPLPUSH", src, dst, "RIGHT", "LEFT", bs};
    size_t blens[6] = {strlen(bargv[0]), sdslen(src), sdslen(dst), 5, 4, strlen(bs)};
    if (!lmove) bargv[3] = bs, blens[3] = strlen(bs);
    if (!atomic_load(&m->quiet)) {
        hh_lease_fetch_begin(m, p, 1);
        r = hh_conn_cmdargv_blocking(&p->conn, HH_FETCH_BLOCK_SECONDS, lmove ? 6 : 4, bargv, blens);
        if (!r) rc = atomic_load(&m->quiet) ? 0 : -1;
        if (r && r->type == REDIS_REPLY_STRING) rc = take(out, r, q);
        hh_lease_fetch_end(m, p, out, rc > 0 ? rc : 0, !r || rc < 0 || r->type == REDIS_REPLY_ERROR);
    }
    if (!rotate) {
        /* Leaving the post. After a job (more may follow) or an error,
         * wake the sleepers to fetch and take over; after a plain
         * timeout this thread comes straight back to it. */
        pthread_mutex_lock(&m->idle_mu);
        m->waiters[q]--;
        if (rc != 0 || (r && r->type == REDIS_REPLY_STRING)) pthread_cond_broadcast(&m->idle_cv);
        pthread_mutex_unlock(&m->idle_mu);
    }
    if (r && r->type == REDIS_REPLY_ERROR) {
        hh_log(&m->log, HH_LOG_ERROR, "fetch: %s", r->str);
        rc = -1;
    }
    if (r) freeReplyObject(r);
    return rc;
}

void hh_fetch_wake(struct hh_manager *m, hh_conn *c) {
    hh_pickup_poke(m); /* idle threads waiting for a wake-up see quiet */
    pthread_mutex_lock(&m->idle_mu);
    pthread_cond_broadcast(&m->idle_cv); /* sleepers see quiet */
    pthread_mutex_unlock(&m->idle_mu);
    for (int i = 0; i < m->opts.concurrency; i++) {
        long long id = atomic_load(&m->procs[i].conn.client_id);
        if (!id) continue;
        redisReply *r = hh_conn_cmd(c, "CLIENT UNBLOCK %lld TIMEOUT", id);
        if (r) freeReplyObject(r);
    }
}

int hh_fetch(hh_processor *p, hh_fetched *out, size_t max) {
    struct hh_manager *m = p->m;
    int rc, basic = m->opts.fetch == HH_FETCH_BASIC;
    /* Taken before the fetch: a write to any queue after it (the fetch
     * included) shows as a new generation, so nothing is missed between
     * an empty fetch and the wait. */
    hh_pickup_ticket ticket;
    hh_pickup_ticket_take(m, &ticket);
    rc = basic ? fetch_basic(p, out) : fetch_reliable(p, out, max ? max : 1);
    if (rc != 0 || atomic_load(&m->quiet)) {
        hh_pickup_done(m, &ticket, rc);
    } else if (!hh_pickup_wait(m, &ticket) && !basic) {
        /* No wake-up available. Basic fetch's BRPOP covered every queue
         * for 2 s already; reliable fetch blocks on one queue. */
        rc = idle_fallback(p, out);
    }
    for (int i = 0; i < rc; i++) atomic_fetch_add(&m->fetched[out[i].queue], 1);
    if (rc < 0 && !p->conn.ctx) hh_conn_ready(&p->conn); /* waits out the backoff */
    else if (rc < 0) hh_sleep(1.0); /* an error reply: as Sidekiq, pause 1 s */
    return rc;
}

void hh_fetch_ack_append(struct hh_manager *m, hh_pipe *pipe, const hh_job *job) {
    if (m->opts.fetch == HH_FETCH_BASIC) return;
    sds k = hh_key_inprogress(&m->keys, m->identity, job->queue);
    const char *argv[4] = {"LREM", k, "-1", job->payload};
    size_t lens[4] = {4, sdslen(k), 2, job->len}; /* argv: a big payload is held once (redis.c) */
    hh_pipe_addargv(pipe, 4, argv, lens);
    sdsfree(k);
}

int hh_fetch_requeue(struct hh_manager *m, hh_conn *c, const char *queue, const char *payload,
                     size_t len) {
    sds qk = hh_key_queue(&m->keys, queue);
    redisReply *r;
    if (m->opts.fetch == HH_FETCH_BASIC) {
        r = hh_conn_cmd(c, "RPUSH %s %b", qk, payload, len);
    } else {
        sds ik = hh_key_inprogress(&m->keys, m->identity, queue);
        const char *keys[2] = {ik, qk};
        size_t klen[2] = {sdslen(ik), sdslen(qk)};
        const char *args[1] = {payload};
        size_t alen[1] = {len};
        r = hh_conn_eval(c, HH_SCRIPT_REQUEUE, 2, keys, klen, 1, args, alen);
        sdsfree(ik);
    }
    sdsfree(qk);
    if (!r) return -1;
    int rc = r->type == REDIS_REPLY_INTEGER ? (r->integer > 0) : -1;
    freeReplyObject(r);
    return rc;
}

void hh_fetch_requeue_append(struct hh_manager *m, hh_pipe *pipe, size_t queue, const char *payload,
                             size_t len) {
    if (m->opts.fetch == HH_FETCH_BASIC)
        hh_pipe_add(pipe, "RPUSH %s %b", m->queue_keys[queue], payload, len);
    else
        hh_pipe_add(pipe, "EVAL %s 2 %s %s %b", HH_LUA_REQUEUE, m->inprog_keys[queue], m->queue_keys[queue],
                    payload, len);
}

hh_job **hh_fetch_take_acks(struct hh_manager *m, size_t *n) { return acks_take(m, n); }

void hh_fetch_acks_free(struct hh_manager *m, hh_job **jobs, size_t n) { acks_free(m, jobs, n); }

/* Logs a message that may be longer than the logger's line buffer (a job's
 * full payload), through the same sink. */
static void log_long(struct hh_manager *m, hh_log_level level, const char *head, const char *payload, size_t len) {
    if (level < m->log.level) return;
    size_t hl = strlen(head);
    char *msg = malloc(hl + len + 1);
    if (!msg) {
        hh_log(&m->log, level, "%s%.*s", head, (int)(len > 1000 ? 1000 : len), payload);
        return;
    }
    memcpy(msg, head, hl);
    memcpy(msg + hl, payload, len);
    msg[hl + len] = '\0';
    hh_log_line(&m->log, level, msg, hl + len); /* escaped: a payload may hold anything */
    free(msg);
}

void hh_fetch_report_unreturned(struct hh_manager *m, size_t queue, const char *payload, size_t len,
                                const char *why) {
    json_t *item = json_loadb(payload, len, JSON_ALLOW_NUL, NULL);
    const char *jid = json_string_value(json_object_get(item, "jid"));
    const char *klass = json_string_value(json_object_get(item, "class"));
    if (m->opts.fetch == HH_FETCH_RELIABLE) {
        hh_log(&m->log, HH_LOG_WARN, "class=%s jid=%s: not pushed back to queue %s (%s): it stays in %s for the "
               "next start with --identity %s or a peer's recovery", klass ? klass : "?", jid ? jid : "?",
               m->queues[queue], why, m->inprog_keys[queue], m->identity);
    } else {
        char head[700];
        snprintf(head, sizeof(head), "class=%s jid=%s: NOT PUSHED BACK to queue %s (%s); with basic fetch it is "
                 "no longer in Redis unless the push back landed late: check %s and push this payload again if "
                 "it is missing: ", klass ? klass : "?", jid ? jid : "?", m->queues[queue], why,
                 m->queue_keys[queue]);
        log_long(m, HH_LOG_ERROR, head, payload, len);
    }
    json_decref(item);
}
