/* fetch.c -- fetching jobs (see fetch.h).
 * Keys: queue:<q> (LMOVE/RPOPLPUSH/BRPOP from, RPUSH back),
 * hiredhand:inprogress:<identity>|<q> (LMOVE into, LREM on ack). */
#include "fetch.h"
#include "lease.h"

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
    unsigned char seen[HH_MAX_QUEUES] = {0};
    for (size_t i = 0; i < total && m < n; i++)
        if (!seen[rep[i]]) seen[rep[i]] = 1, out[m++] = rep[i];
    if (rep != stackbuf) free(rep);
    return m;
}

static int take(hh_fetched *out, const redisReply *v, size_t q) {
    out->payload = malloc(v->len + 1);
    if (!out->payload) return -1;
    memcpy(out->payload, v->str, v->len);
    out->payload[v->len] = '\0';
    out->len = v->len;
    out->queue = q;
    return 1;
}

static int fetch_basic(hh_processor *p, const size_t *order, hh_fetched *out) {
    struct hh_manager *m = p->m;
    size_t n = m->nqueues, argc = n + 2;
    const char *argv[HH_MAX_QUEUES + 2];
    size_t lens[HH_MAX_QUEUES + 2];
    argv[0] = "BRPOP", lens[0] = 5;
    for (size_t i = 0; i < n; i++)
        argv[1 + i] = m->queue_keys[order[i]], lens[1 + i] = sdslen(m->queue_keys[order[i]]);
    argv[n + 1] = "2", lens[n + 1] = 1;
    redisReply *r = hh_conn_cmdargv_blocking(&p->conn, HH_FETCH_BLOCK_SECONDS, (int)argc, argv, lens);
    int rc = r ? 0 : -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
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

/* An LREM that removed nothing on its first attempt: another process took
 * the job while this one was paused past its heartbeat TTL (lease.c). */
static void acks_check(struct hh_manager *m, hh_job **jobs, size_t n, redisReply **r, int nr) {
    if (m->opts.fetch == HH_FETCH_BASIC || (size_t)nr < n) return;
    for (size_t i = 0; i < n; i++) {
        if (r[i]->type == REDIS_REPLY_INTEGER && r[i]->integer == 0 && !jobs[i]->ack_uncertain)
            hh_lease_lost(m, jobs[i]);
        else if (r[i]->type == REDIS_REPLY_ERROR)
            hh_log(&m->log, HH_LOG_ERROR, "jid=%s: ack: %s", jobs[i]->jid, r[i]->str);
    }
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

/* Sends acks (pipelined LREMs), retrying through outages until done or the
 * stop gave up (then the jobs stay in progress and may run again: at least
 * once). Frees them. With once, a failed send puts them back instead. */
static void acks_send(struct hh_manager *m, hh_conn *c, hh_job **jobs, size_t n, int once) {
    while (n) {
        hh_pipe pipe;
        hh_pipe_begin(&pipe, c);
        for (size_t i = 0; i < n; i++) hh_fetch_ack_append(m, &pipe, jobs[i]);
        redisReply **r = hh_pipe_exec(&pipe);
        if (r) {
            acks_check(m, jobs, n, r, pipe.n);
            hh_replies_free(r, pipe.n);
            break;
        }
        /* Whether those LREMs ran is unknown now: a retry's 0 proves nothing. */
        for (size_t i = 0; i < n; i++) jobs[i]->ack_uncertain = 1;
        /* An outage (or a READONLY primary): keep the outcome, retry (B14). */
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

/* The fetch script's arguments: every queue's key pair in configuration
 * order, then one queue order per job wanted (drawn per job, so weights keep
 * their meaning inside a batch). Returns the argument count. */
static int fetch_args(hh_processor *p, size_t max, const char **keys, size_t *klen, const char **args,
                      size_t *alen, char (*ord)[4 * HH_MAX_QUEUES]) {
    struct hh_manager *m = p->m;
    size_t n = m->nqueues, order[HH_MAX_QUEUES];
    for (size_t i = 0; i < n; i++) {
        keys[2 * i] = m->queue_keys[i], klen[2 * i] = sdslen(m->queue_keys[i]);
        keys[2 * i + 1] = m->inprog_keys[i], klen[2 * i + 1] = sdslen(m->inprog_keys[i]);
    }
    args[0] = p->conn.version >= 602 ? "1" : "0", alen[0] = 1;
    for (size_t j = 0; j < max; j++) {
        if (j == 0 || m->weighted) { /* strict order: one string serves every job */
            hh_queue_order(m->weights, n, m->weighted, &p->rng, order);
            size_t o = 0;
            for (size_t i = 0; i < n; i++)
                o += (size_t)snprintf(ord[j] + o, sizeof(ord[j]) - o, i ? ",%zu" : "%zu", order[i] + 1);
            args[1 + j] = ord[j], alen[1 + j] = o;
        } else {
            args[1 + j] = args[1], alen[1 + j] = alen[1];
        }
    }
    return (int)(1 + max);
}

static int fetch_reliable(hh_processor *p, hh_fetched *out, size_t max) {
    struct hh_manager *m = p->m;
    size_t n = m->nqueues;
    if (max > HH_FETCH_BATCH_MAX) max = HH_FETCH_BATCH_MAX;
    if (hh_conn_ready(&p->conn) != 0) return -1;
    const char *keys[2 * HH_MAX_QUEUES], *args[1 + HH_FETCH_BATCH_MAX];
    size_t klen[2 * HH_MAX_QUEUES], alen[1 + HH_FETCH_BATCH_MAX];
    char ord[HH_FETCH_BATCH_MAX][4 * HH_MAX_QUEUES];
    int nargs = fetch_args(p, max, keys, klen, args, alen, ord);
    /* One round trip: the queued acks, then the fetch script. */
    if (!p->conn.shas[HH_SCRIPT_FETCH][0]) hh_fetch_flush_acks(m, &p->conn);
    /* From here until its reply is read, what the script moves is in our
     * list but held by no thread (lease.c). */
    hh_lease_fetch_begin(m, p, 0);
    redisReply *r = NULL;
    size_t nacks = 0;
    hh_job **acks = p->conn.shas[HH_SCRIPT_FETCH][0] ? acks_take(m, &nacks) : NULL;
    if (acks) {
        const char *argv[3 + 2 * HH_MAX_QUEUES + 1 + HH_FETCH_BATCH_MAX];
        size_t lens[3 + 2 * HH_MAX_QUEUES + 1 + HH_FETCH_BATCH_MAX];
        char nk[24];
        snprintf(nk, sizeof(nk), "%zu", 2 * n);
        int argc = 0;
        argv[argc] = "EVALSHA", lens[argc++] = 7;
        argv[argc] = p->conn.shas[HH_SCRIPT_FETCH], lens[argc++] = 40;
        argv[argc] = nk, lens[argc++] = strlen(nk);
        for (size_t i = 0; i < 2 * n; i++) argv[argc] = keys[i], lens[argc++] = klen[i];
        for (int i = 0; i < nargs; i++) argv[argc] = args[i], lens[argc++] = alen[i];
        hh_pipe pipe;
        hh_pipe_begin(&pipe, &p->conn);
        for (size_t i = 0; i < nacks; i++) hh_fetch_ack_append(m, &pipe, acks[i]);
        hh_pipe_addargv(&pipe, argc, argv, lens);
        redisReply **rs = hh_pipe_exec(&pipe);
        if (!rs) {
            hh_lease_fetch_end(m, p, out, 0, 1);
            for (size_t i = 0; i < nacks; i++) acks[i]->ack_uncertain = 1;
            acks_send(m, &p->conn, acks, nacks, 0); /* retries the acks alone */
            return -1;
        }
        acks_check(m, acks, nacks, rs, pipe.n);
        acks_free(m, acks, nacks);
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
            const redisReply *qi = r->element[i], *v = r->element[i + 1];
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
        hh_lease_fetch_end(m, p, out, 0, 0);
        /* Every queue empty: block on one of them with an atomic move, so a new
         * job wakes us at once. Threads spread over the queues so each queue
         * has a waiter when concurrency >= queues, otherwise they rotate. */
        size_t q = (size_t)p->block_queue % n;
        int rotate = (size_t)m->opts.concurrency < n;
        if (rotate) p->block_queue = (int)((q + 1) % n);
        freeReplyObject(r);
        r = NULL;
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
        /* A long wait only where every queue has its own waiter and quiet
         * can cut the wait short (CLIENT UNBLOCK needs Redis 5). */
        double block = !rotate && p->conn.version >= 500 ? HH_FETCH_IDLE_BLOCK_SECONDS : HH_FETCH_BLOCK_SECONDS;
        char bs[24];
        snprintf(bs, sizeof(bs), "%.0f", block);
        sds src = m->queue_keys[q], dst = m->inprog_keys[q];
        int lmove = p->conn.version >= 602;
        const char *bargv[6] = {lmove ? "BLMOVE" : "BRPOPLPUSH", src, dst, "RIGHT", "LEFT", bs};
        size_t blens[6] = {strlen(bargv[0]), sdslen(src), sdslen(dst), 5, 4, strlen(bs)};
        if (!lmove) bargv[3] = bs, blens[3] = strlen(bs);
        if (!atomic_load(&m->quiet)) {
            hh_lease_fetch_begin(m, p, 1);
            r = hh_conn_cmdargv_blocking(&p->conn, block, lmove ? 6 : 4, bargv, blens);
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
    }
    if (r) freeReplyObject(r);
    return rc;
}

void hh_fetch_wake(struct hh_manager *m, hh_conn *c) {
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
    int rc;
    if (m->opts.fetch == HH_FETCH_BASIC) {
        size_t order[HH_MAX_QUEUES];
        hh_queue_order(m->weights, m->nqueues, m->weighted, &p->rng, order);
        rc = fetch_basic(p, order, out);
    } else {
        rc = fetch_reliable(p, out, max ? max : 1);
    }
    for (int i = 0; i < rc; i++) atomic_fetch_add(&m->fetched[out[i].queue], 1);
    if (rc < 0 && !p->conn.ctx) hh_conn_ready(&p->conn); /* waits out the backoff */
    else if (rc < 0) hh_sleep(1.0); /* an error reply: as Sidekiq, pause 1 s */
    return rc;
}

void hh_fetch_ack_append(struct hh_manager *m, hh_pipe *pipe, const hh_job *job) {
    if (m->opts.fetch == HH_FETCH_BASIC) return;
    sds k = hh_key_inprogress(&m->keys, m->identity, job->queue);
    hh_pipe_add(pipe, "LREM %s -1 %b", k, job->payload, job->len);
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
