/* fetch.c -- fetching jobs (see fetch.h).
 * Keys: queue:<q> (LMOVE/RPOPLPUSH/BRPOP from, RPUSH back),
 * hiredhand:inprogress:<identity>|<q> (LMOVE into, LREM on ack). */
#include "fetch.h"

#include <stdlib.h>
#include <string.h>

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
    sds keys[HH_MAX_QUEUES];
    argv[0] = "BRPOP", lens[0] = 5;
    for (size_t i = 0; i < n; i++) {
        keys[i] = hh_key_queue(&m->keys, m->queues[order[i]]);
        argv[1 + i] = keys[i], lens[1 + i] = sdslen(keys[i]);
    }
    argv[n + 1] = "2", lens[n + 1] = 1;
    redisReply *r = hh_conn_cmdargv_blocking(&p->conn, HH_FETCH_BLOCK_SECONDS, (int)argc, argv, lens);
    int rc = r ? 0 : -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        for (size_t i = 0; i < n; i++)
            if (r->element[0]->len == sdslen(keys[i]) && memcmp(r->element[0]->str, keys[i], sdslen(keys[i])) == 0)
                rc = take(out, r->element[1], order[i]);
    } else if (r && r->type == REDIS_REPLY_ERROR) {
        hh_log(&m->log, HH_LOG_ERROR, "fetch: %s", r->str);
        rc = -1;
    }
    if (r) freeReplyObject(r);
    for (size_t i = 0; i < n; i++) sdsfree(keys[i]);
    return rc;
}

static int fetch_reliable(hh_processor *p, const size_t *order, hh_fetched *out) {
    struct hh_manager *m = p->m;
    size_t n = m->nqueues;
    const char *keys[2 * HH_MAX_QUEUES];
    size_t klen[2 * HH_MAX_QUEUES];
    sds own[2 * HH_MAX_QUEUES];
    for (size_t i = 0; i < n; i++) {
        own[2 * i] = hh_key_queue(&m->keys, m->queues[order[i]]);
        own[2 * i + 1] = hh_key_inprogress(&m->keys, m->identity, m->queues[order[i]]);
    }
    for (size_t i = 0; i < 2 * n; i++) keys[i] = own[i], klen[i] = sdslen(own[i]);
    const char *args[2] = {"1", NULL};
    int rc = 0;
    redisReply *r = NULL;
    if (hh_conn_ready(&p->conn) == 0) {
        args[1] = p->conn.version >= 602 ? "1" : "0";
        r = hh_conn_eval(&p->conn, HH_SCRIPT_FETCH, (int)(2 * n), keys, klen, 2, args, NULL);
    }
    if (!r) {
        rc = -1;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
        size_t pair = (size_t)r->element[0]->integer - 1;
        rc = pair < n ? take(out, r->element[1], order[pair]) : -1;
    } else if (r->type == REDIS_REPLY_ERROR) {
        hh_log(&m->log, HH_LOG_ERROR, "fetch: %s", r->str);
        rc = -1;
    } else {
        /* Every queue empty: block on one of them with an atomic move, so a new
         * job wakes us at once. Threads spread over the queues so each queue
         * has a waiter when concurrency >= queues, otherwise they rotate. */
        size_t q = (size_t)p->block_queue % n;
        if ((size_t)m->opts.concurrency < n) p->block_queue = (int)((q + 1) % n);
        sds src = hh_key_queue(&m->keys, m->queues[q]);
        sds dst = hh_key_inprogress(&m->keys, m->identity, m->queues[q]);
        int lmove = p->conn.version >= 602;
        const char *argv[6] = {lmove ? "BLMOVE" : "BRPOPLPUSH", src, dst, "RIGHT", "LEFT", "2"};
        size_t lens[6] = {strlen(argv[0]), sdslen(src), sdslen(dst), 5, 4, 1};
        if (!lmove) argv[3] = "2", lens[3] = 1;
        freeReplyObject(r);
        r = hh_conn_cmdargv_blocking(&p->conn, HH_FETCH_BLOCK_SECONDS, lmove ? 6 : 4, argv, lens);
        if (!r) rc = -1;
        else if (r->type == REDIS_REPLY_STRING) rc = take(out, r, q);
        else if (r->type == REDIS_REPLY_ERROR) {
            hh_log(&m->log, HH_LOG_ERROR, "fetch: %s", r->str);
            rc = -1;
        }
        sdsfree(src);
        sdsfree(dst);
    }
    if (r) freeReplyObject(r);
    for (size_t i = 0; i < 2 * n; i++) sdsfree(own[i]);
    return rc;
}

int hh_fetch(hh_processor *p, hh_fetched *out) {
    struct hh_manager *m = p->m;
    size_t order[HH_MAX_QUEUES];
    hh_queue_order(m->weights, m->nqueues, m->weighted, &p->rng, order);
    int rc = m->opts.fetch == HH_FETCH_BASIC ? fetch_basic(p, order, out)
                                             : fetch_reliable(p, order, out);
    if (rc == 1) atomic_fetch_add(&m->fetched[out->queue], 1);
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

int hh_fetch_ack(hh_processor *p, const hh_job *job) {
    struct hh_manager *m = p->m;
    if (m->opts.fetch == HH_FETCH_BASIC) return 0;
    for (;;) {
        hh_pipe pipe;
        hh_pipe_begin(&pipe, &p->conn);
        hh_fetch_ack_append(m, &pipe, job);
        redisReply **r = hh_pipe_exec(&pipe);
        if (r) {
            hh_replies_free(r, pipe.n);
            return 0;
        }
        /* An outage (or a READONLY primary): keep the outcome, retry (B14). */
        if (atomic_load(&m->done)) return -1;
        hh_conn_ready(&p->conn);
    }
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
