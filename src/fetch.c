/* fetch.c -- fetching jobs and the fetcher's state (see fetch.h).
 * Keys: queue:<q> (LMOVE/RPOPLPUSH/BRPOP/RPOP, or LRANGE+LTRIM for several
 * jobs, from), hiredhand:inprogress:<identity>|<q> (LMOVE or LPUSH into;
 * acks and push backs are finish.c's), the moves in scripts allowed over
 * maxmemory;
 * both (TYPE) once a fetch fails with WRONGTYPE, and a wrong-typed one
 * again every HH_FETCH_BAD_RECHECK_US until it is a list. */
#include "fetch.h"
#include "buffer.h"
#include "finish.h"
#include "lease.h"
#include "outcome.h"
#include "pickup.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One worker thread's fetch state. */
typedef struct fetch_thread {
    /* First: a sleeper popped off the buffer's stack is its thread. */
    hh__sleeper sleeper;           /* waiting for the buffer or a fetch in flight */
    int batch;                     /* jobs wanted per fetch in a dry spell (want_locked) */
    int per_job;                   /* weighted: draw each job's queue (slow jobs; want_locked) */
    int block_queue;               /* which queue this thread blocks on when idle (no pickup) */
    double spent;                  /* handler seconds since the last fetch */
    int ran;                       /* jobs run since the last fetch */
    hh__fetched *held;             /* one fetch's replies */
    struct fetch_scratch *scratch; /* argument space, sized for every queue */
} fetch_thread;

struct hh__fetcher {
    const hh__fetch_env *env;
    /* Jobs fetched in a batch and not started yet, shared by every worker
     * thread (a slow job never holds others hostage), taken in fetch order
     * (buffer.h), and the idle threads sleeping on them. The fields below
     * up to `dry` are under its mutex b->mu. `promised` counts jobs asked
     * for by fetches in flight; an idle thread sleeps while buffered jobs
     * or a fetch in flight cover it (want_locked). */
    hh__buffer *b;
    size_t promised;
    int idle;       /* threads in hh__fetch_next without a job */
    int batch;      /* jobs wanted per fetch, adapted to job speed (want_locked) */
    atomic_int dry; /* the last fetch found every queue empty */
    /* Idle fetching without pickup.c: waiters[q] threads block on queue q
     * in Redis, the other idle threads sleep on idle_cv. */
    pthread_mutex_t idle_mu;
    pthread_cond_t idle_cv;
    int *waiters;
    /* Strict order: how many queues a fetch names (candidates()): those
     * the last batch emptied and two more, doubled after a batch that ran
     * out of queues, so a batch over queues that each hold a few jobs
     * names enough of them, and one over a long queue names two. */
    atomic_uint span;
    hh__err_run fetch_errors;
    /* A dry spell's check (dry_check), under b->mu. */
    pthread_cond_t check_cv; /* the check in flight ended */
    unsigned long check_gen; /* pickup generation of its ticket */
    int check_busy;          /* in flight */
    int check_empty;         /* it (or a fetch of that generation) found every queue empty */
    double check_at;         /* when */
    fetch_thread *threads;   /* per worker thread, by hh__processor.index */
};

#define HH_FETCH_EMPTY_RECHECK_US 100000 /* see hh__empty_mark (buffer.h) */
/* A trusted mark's bound: the idle poller's period (pickup.h), so a write
 * whose notice never came (a broken subscriber connection not noticed yet)
 * is found as soon as an idle worker's safety poll would find it. */
#define HH_FETCH_EMPTY_TRUST_US ((long long)(HH_PICKUP_POLL_SECONDS * 1e6))
/* 3 s: with a blocking fetch's 2 s on top (basic fetch's BRPOP), a queue
 * fixed by hand is served again within 5 s in every mode (see hh__bad_mark) */
#define HH_FETCH_BAD_RECHECK_US 3000000
#define HH_FETCH_BAD_LOG_US 60000000

size_t hh__queue_order(const int *weights, size_t n, int weighted, hh__rng *rng, size_t *out) {
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
        size_t j = (size_t)hh__rng_below(rng, i + 1), t = rep[i];
        rep[i] = rep[j], rep[j] = t;
    }
    size_t got = 0;
    unsigned char seenbuf[256] = {0};
    unsigned char *seen = n <= sizeof(seenbuf) ? seenbuf : calloc(n, 1);
    if (!seen) { /* degrade to strict rather than fail a fetch */
        if (rep != stackbuf) free(rep);
        for (size_t i = 0; i < n; i++) out[i] = i;
        return n;
    }
    for (size_t i = 0; i < total && got < n; i++)
        if (!seen[rep[i]]) seen[rep[i]] = 1, out[got++] = rep[i];
    if (seen != seenbuf) free(seen);
    if (rep != stackbuf) free(rep);
    return got;
}

/* Takes the payload out of the reply (hiredis allocated it with a NUL
 * after it; freeReplyObject then frees NULL): a big payload is not
 * copied once more. */
static int take(hh__fetched *out, redisReply *v, size_t q) {
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
    const char **argv; /* EVALSHA sha nkeys keys... args..., or BRPOP keys... timeout */
    size_t *lens;
    size_t *order; /* one queue order (indexes into cand) */
    size_t *cand;  /* queues this fetch tries (not known empty) */
    int *cweights; /* their weights */
    char *ord;     /* order strings, back to back */
    size_t ordcap;
    uint64_t *prefix;       /* weighted: running weight totals over cand */
    long *pos;              /* weighted: a candidate's place among the keys, or -1 */
    size_t *place;          /* weighted: the queue at each place */
    size_t *count;          /* per place: at most how many jobs the batch takes from it */
    int basic;              /* this call pops (basic fetch): no in-progress list, no lease */
    unsigned long long seq; /* the write sequence before this call (hh__empty_mark) */
    int recheck;            /* candidates() names every queue, all known empty */
} fetch_scratch;

/* Weighted order: a batch is cut into at most HH_FETCH_DRAWS near-equal
 * parts (one job each for a batch that small) and the queue of each part
 * is drawn over the queues not known to be empty, with probability in
 * proportion to its weight, independently per part: each non-empty
 * queue's expected share of the jobs is the share Sidekiq's per-BRPOP
 * weighted shuffle gives it (the first non-empty queue of that shuffle is
 * a uniform pick among the non-empty queues' weight units), counted in
 * parts of a batch rather than single jobs, so a batch names a few queues
 * and moves each part with a few commands, not one command per job. A
 * part drawn on a queue that turns out empty (or holds fewer jobs) is
 * dropped, as Sidekiq's shuffle passes over an empty queue, so such a
 * batch comes back short (and the next fetch knows that queue is empty).
 * With few candidates, or when every queue is tried (idle, or after a
 * fetch that found nothing), the other candidates follow in one weighted
 * shuffle, each for the rest of the batch, so a fetch that finds nothing
 * proves every queue empty. 4 parts: each part costs the script three
 * list commands and the worker's acks another list, about 0.1 us of Redis
 * per job of a full batch with many queues, while a run of a quarter
 * batch (24 fast jobs) from one queue lasts a few milliseconds. */
#define HH_FETCH_DRAWS 4
#define HH_FETCH_TAIL 8

static fetch_thread *thread_of(hh__processor *p) { return &p->fetch->fetcher->threads[p->index]; }

static void scratch_free(fetch_scratch *s);

static fetch_scratch *scratch(hh__processor *p) {
    fetch_thread *t = thread_of(p);
    if (t->scratch) return t->scratch;
    size_t n = p->fetch->ctx->nqueues, argc = 3 + 2 * n + 2 + 2 * n;
    fetch_scratch *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->argv = malloc(argc * sizeof(*s->argv));
    s->lens = malloc(argc * sizeof(*s->lens));
    s->order = malloc(n * sizeof(*s->order));
    s->cand = malloc(n * sizeof(*s->cand));
    s->cweights = malloc(n * sizeof(*s->cweights));
    s->prefix = malloc(n * sizeof(*s->prefix));
    s->pos = malloc(n * sizeof(*s->pos));
    s->place = malloc(n * sizeof(*s->place));
    s->count = malloc(n * sizeof(*s->count));
    if (!s->argv || !s->lens || !s->order || !s->cand || !s->cweights || !s->prefix || !s->pos || !s->place ||
        !s->count) {
        scratch_free(s);
        return NULL;
    }
    return t->scratch = s;
}

static void scratch_free(fetch_scratch *s) {
    if (!s) return;
    free(s->argv), free(s->lens), free(s->order), free(s->cand), free(s->cweights), free(s->ord);
    free(s->prefix), free(s->pos), free(s->place), free(s->count), free(s);
}

/* ------------------------------------------------------------ the fetcher */

hh__fetcher *hh__fetcher_new(const hh__fetch_env *env) {
    hh__fetcher *f = calloc(1, sizeof(*f));
    if (!f) return NULL;
    size_t c = (size_t)env->ctx->opts.concurrency;
    f->env = env;
    f->b = env->buffer;
    pthread_mutex_init(&f->idle_mu, NULL);
    hh__err_run_init(&f->fetch_errors);
    pthread_cond_init(&f->idle_cv, NULL);
    pthread_cond_init(&f->check_cv, NULL);
    atomic_init(&f->span, 2);
    f->batch = 1;
    f->waiters = calloc(env->ctx->nqueues, sizeof(*f->waiters));
    f->threads = calloc(c, sizeof(*f->threads));
    if (!f->b || !f->waiters || !f->threads) {
        hh__fetcher_free(f);
        return NULL;
    }
    for (size_t i = 0; i < c; i++) pthread_cond_init(&f->threads[i].sleeper.wake, NULL);
    for (size_t i = 0; i < c; i++) {
        f->threads[i].block_queue = (int)(i % env->ctx->nqueues);
        f->threads[i].batch = 1;
        if (!(f->threads[i].held = calloc(HH_FETCH_BATCH_MAX, sizeof(hh__fetched)))) {
            hh__fetcher_free(f);
            return NULL;
        }
    }
    return f;
}

void hh__fetcher_free(hh__fetcher *f) {
    if (!f) return;
    for (int i = 0; f->threads && i < f->env->ctx->opts.concurrency; i++) {
        free(f->threads[i].held);
        scratch_free(f->threads[i].scratch);
        pthread_cond_destroy(&f->threads[i].sleeper.wake);
    }
    free(f->threads), free(f->waiters);
    pthread_mutex_destroy(&f->idle_mu);
    hh__err_run_destroy(&f->fetch_errors);
    pthread_cond_destroy(&f->idle_cv);
    pthread_cond_destroy(&f->check_cv);
    free(f);
}

/* ------------------------------------------------------------ known-empty queues */

static long long now_us(void) { return (long long)(hh__mono() * 1e6); }

/* What known_empty() says of a queue. */
enum {
    EMPTY_NO = 0,  /* may hold jobs: try it */
    EMPTY_MARKED,  /* a mark that is not trusted, still holding */
    EMPTY_TRUSTED, /* a trusted mark */
    EMPTY_STALE    /* a trusted mark past HH_FETCH_EMPTY_TRUST_US: tried by the next check of every queue */
};

/* Whether queue q is known to be empty (track: track_from, read once by
 * the caller). A mark that is not trusted and ran out is claimed by one
 * thread, which tries the queue again, while the others keep leaving it
 * out: one recheck per queue per period, however many threads fetch. A
 * trusted mark that ran out is left for the check of every queue that
 * ends a fetch that finds nothing (one EXISTS over them all, which finds
 * them empty but for a notice lost, and marks them again): a strict fetch
 * never passes over thousands of such queues, one list command each, to
 * reach a job in a queue after them. */
static int known_empty(hh__fetcher *f, size_t q, unsigned long long track, long long now) {
    unsigned long long seq = atomic_load(&f->b->empty[q].seq);
    if (!seq || atomic_load(&f->b->empty[q].written) > seq || atomic_load(&f->b->flushed) > seq) return EMPTY_NO;
    if (track && track <= seq) return atomic_load(&f->b->empty[q].trust_until) > now ? EMPTY_TRUSTED : EMPTY_STALE;
    long long until = atomic_load(&f->b->empty[q].until);
    if (until > now) return EMPTY_MARKED;
    return atomic_compare_exchange_strong(&f->b->empty[q].until, &until, now + HH_FETCH_EMPTY_RECHECK_US)
        ? EMPTY_NO
        : EMPTY_MARKED;
}

/* seq: f->b->wseq read before the fetch that found q empty was sent. */
static void mark_empty(hh__fetcher *f, size_t q, unsigned long long seq, long long now) {
    atomic_store(&f->b->empty[q].until, now + HH_FETCH_EMPTY_RECHECK_US);
    atomic_store(&f->b->empty[q].trust_until, now + HH_FETCH_EMPTY_TRUST_US);
    atomic_store(&f->b->empty[q].seq, seq);
}

/* ------------------------------------------------------------ wrong-typed queues */

static int queue_bad(hh__fetcher *f, size_t q) {
    return atomic_load(&f->b->nbad) > 0 && atomic_load(&f->b->bad[q].until) != 0;
}

/* TYPE of queue q's keys on c: 1 both lists (or absent), 0 one is not (its
 * key and type into key/type), -1 no answer. */
static int queue_types(hh__processor *p, size_t q, const char **key, char *type, size_t tlen) {
    const hh__fetch_env *env = p->fetch;
    int basic = env->ctx->opts.fetch == HH_FETCH_BASIC;
    hh__pipe pipe;
    hh__pipe_begin(&pipe, &p->conn);
    hh__pipe_add(&pipe, "TYPE %s", env->ctx->queue_keys[q]);
    if (!basic) hh__pipe_add(&pipe, "TYPE %s", env->ctx->inprog_keys[q]);
    redisReply **r = hh__pipe_exec(&pipe);
    if (!r) return -1;
    int rc = 1;
    for (int i = 0; i < pipe.n && rc == 1; i++) {
        if (r[i]->type != REDIS_REPLY_STATUS) {
            rc = -1;
        } else if (strcmp(r[i]->str, "list") != 0 && strcmp(r[i]->str, "none") != 0) {
            *key = i == 0 ? env->ctx->queue_keys[q] : env->ctx->inprog_keys[q];
            hh__strlcpy(type, r[i]->str, tlen);
            rc = 0;
        }
    }
    hh__replies_free(r, pipe.n);
    return rc;
}

static void bad_log(hh__processor *p, size_t q, const char *key, const char *type, long long now) {
    hh__fetcher *f = p->fetch->fetcher;
    long long last = atomic_load(&f->b->bad[q].logged);
    if (last && now - last < HH_FETCH_BAD_LOG_US) return;
    if (!atomic_compare_exchange_strong(&f->b->bad[q].logged, &last, now)) return; /* another thread logs it */
    hh__log(p->fetch->ctx->log, HH_LOG_ERROR,
            "fetch: %s is a %s, not a list (WRONGTYPE): queue %s is skipped until it is a list again; the other "
            "queues are served (logged once a minute)",
            key, type, p->fetch->ctx->queues[q]);
}

/* After a WRONGTYPE reply: finds the wrong-typed queues (Redis's error does
 * not name the key) and leaves them out. Returns how many were found. */
static int find_bad(hh__processor *p) {
    const hh__fetch_env *env = p->fetch;
    hh__fetcher *f = env->fetcher;
    int found = 0;
    long long now = now_us();
    for (size_t q = 0; q < env->ctx->nqueues; q++) {
        const char *key = NULL;
        char type[32];
        if (queue_bad(f, q) || queue_types(p, q, &key, type, sizeof(type)) != 0) continue;
        long long zero = 0;
        if (atomic_compare_exchange_strong(&f->b->bad[q].until, &zero, now + HH_FETCH_BAD_RECHECK_US))
            atomic_fetch_add(&f->b->nbad, 1);
        bad_log(p, q, key, type, now);
        found++;
    }
    return found;
}

/* Asks TYPE again of each bad queue whose recheck is due (one thread per
 * queue claims it): a list again is served again. */
static void bad_recheck(hh__processor *p) {
    const hh__fetch_env *env = p->fetch;
    hh__fetcher *f = env->fetcher;
    if (atomic_load(&f->b->nbad) == 0) return;
    long long now = now_us();
    for (size_t q = 0; q < env->ctx->nqueues; q++) {
        long long until = atomic_load(&f->b->bad[q].until);
        if (until == 0 || until > now) continue;
        if (!atomic_compare_exchange_strong(&f->b->bad[q].until, &until, now + HH_FETCH_BAD_RECHECK_US)) continue;
        const char *key = NULL;
        char type[32];
        int rc = queue_types(p, q, &key, type, sizeof(type));
        if (rc == 0) {
            bad_log(p, q, key, type, now);
        } else if (rc == 1) {
            atomic_store(&f->b->bad[q].until, 0);
            atomic_store(&f->b->bad[q].logged, 0);
            atomic_fetch_sub(&f->b->nbad, 1);
            hh__log(env->ctx->log, HH_LOG_INFO, "fetch: queue %s is a list again: served again", env->ctx->queues[q]);
        }
    }
}

/* Seconds until the first wrong-typed queue's TYPE is due (0: none is
 * bad): an idle thread waits no longer, so a queue fixed by hand without a
 * wake-up (tracking was off at the write) is still served again within the
 * recheck period. */
static double bad_wait(hh__fetcher *f) {
    if (atomic_load(&f->b->nbad) == 0) return 0;
    long long first = 0, now = now_us();
    for (size_t q = 0; q < f->env->ctx->nqueues; q++) {
        long long until = atomic_load(&f->b->bad[q].until);
        if (until && (!first || until < first)) first = until;
    }
    if (!first) return 0;
    return first <= now ? 0.001 : (double)(first - now) / 1e6 + 0.001;
}

/* An error reply to a fetch: WRONGTYPE finds and leaves out the bad queues
 * (logged there); anything else is logged as is. */
static void fetch_error(hh__processor *p, const char *err) {
    if (strncmp(err, "WRONGTYPE", 9) == 0 && find_bad(p) > 0) return;
    hh__err_run_fail(p->fetch->ctx->log, &p->fetch->fetcher->fetch_errors, HH_LOG_ERROR, "fetch", err);
}

/* The queues one fetch of max jobs tries, in configuration order, into
 * s->cand (and their weights): those not known to be empty, and in strict
 * order only the first few of them (max jobs come from the first max
 * queues that hold any; unless wide, only as many as the last fetches
 * needed: `span`); every queue when all are known empty, unless every mark
 * is trusted (then none: 0, with nothing to ask Redis). Sets s->seq, the
 * write sequence the fetch's marks keep. Returns how many, and *all whether
 * every queue is tried or has a trusted mark. */
static size_t candidates(hh__processor *p, fetch_scratch *s, size_t max, int wide, int *all) {
    const hh__fetch_env *env = p->fetch;
    hh__fetcher *f = env->fetcher;
    s->seq = atomic_load(&f->b->wseq);
    unsigned long long track = atomic_load(&f->b->track_from);
    long long now = now_us();
    size_t k = 0, trusted = 0;
    size_t limit = env->ctx->weighted || *all || wide ? env->ctx->nqueues : max + 1;
    size_t span = (size_t)atomic_load_explicit(&f->span, memory_order_relaxed);
    if (!env->ctx->weighted && !*all && !wide && span < limit) limit = span;
    size_t good = env->ctx->nqueues, i = 0;
    for (; i < env->ctx->nqueues && k < limit; i++) {
        if (queue_bad(f, i)) {
            good--;
            continue;
        }
        int known = *all ? EMPTY_NO : known_empty(f, i, track, now);
        if (known == EMPTY_NO) s->cand[k] = i, s->cweights[k++] = env->ctx->weights[i];
        else if (known == EMPTY_TRUSTED) trusted++;
    }
    s->recheck = k == 0 && trusted < good;
    if (s->recheck) { /* all known empty, some not trusted: a full check */
        for (i = 0; i < env->ctx->nqueues; i++)
            if (!queue_bad(f, i)) s->cand[k] = i, s->cweights[k++] = env->ctx->weights[i];
        good = k, trusted = 0;
    }
    *all = i == env->ctx->nqueues && k + trusted == good;
    return k;
}

/* ------------------------------------------------------------ basic fetch */

static int fetch_batch(hh__processor *p, hh__fetched *out, size_t max, int basic);

/* Basic fetch: BRPOP, as Sidekiq's BasicFetch, one job. When more than one
 * thread is idle and jobs are fast (max > 1), one script call pops a job for
 * each of them instead (RPOP, same queue order); it waits for nothing, so
 * an empty result falls back to the BRPOP. The jobs popped are only in
 * memory, as with BRPOP: a crash loses them, and no more of them wait than
 * one per thread (want_locked). */
static int fetch_basic(hh__processor *p, hh__fetched *out, size_t max) {
    const hh__fetch_env *env = p->fetch;
    if (max > 1) {
        int rc = fetch_batch(p, out, max, 1);
        if (rc != 0) return rc;
    }
    fetch_scratch *s = scratch(p);
    if (!s) return -1;
    size_t n = env->ctx->nqueues, argc = n + 2;
    const size_t *order = s->order;
    hh__queue_order(env->ctx->weights, n, env->ctx->weighted, &p->rng, s->order);
    const char **argv = s->argv;
    size_t *lens = s->lens;
    argv[0] = "BRPOP", lens[0] = 5;
    size_t good = 0; /* the queues not wrong-typed */
    for (size_t i = 0; i < n; i++)
        if (!queue_bad(env->fetcher, order[i]))
            argv[1 + good] = env->ctx->queue_keys[order[i]], lens[1 + good] = sdslen(env->ctx->queue_keys[order[i]]),
                     good++;
    if (good == 0) { /* every queue wrong-typed: wait as an empty BRPOP would */
        hh__sleep(HH_FETCH_BLOCK_SECONDS);
        return 0;
    }
    argv[good + 1] = "2", lens[good + 1] = 1;
    argc = good + 2;
    redisReply *r = hh__conn_cmdargv_blocking(&p->conn, HH_FETCH_BLOCK_SECONDS, (int)argc, argv, lens);
    int rc = r ? 0 : -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING) {
        for (size_t i = 0; i < n; i++) {
            sds k = env->ctx->queue_keys[i];
            if (r->element[0]->len == sdslen(k) && memcmp(r->element[0]->str, k, sdslen(k)) == 0)
                rc = take(out, r->element[1], i);
        }
    } else if (r && r->type == REDIS_REPLY_ERROR) {
        fetch_error(p, r->str);
        rc = -1;
    }
    if (r) freeReplyObject(r);
    return rc;
}

/* ------------------------------------------------------------ reliable fetch */

/* Weighted: draws the queue of each part of the max jobs over the ncand
 * candidates (see HH_FETCH_DRAWS), then keeps as candidates only the queues
 * drawn, in s->cand in the order first drawn, with their number of draws
 * in s->count; with tail, the other candidates follow in one weighted
 * shuffle, each for the whole batch. Returns the new candidate count. */
static size_t draw_weighted(hh__processor *p, fetch_scratch *s, size_t max, size_t ncand, int tail) {
    uint64_t total = 0;
    for (size_t i = 0; i < ncand; i++) {
        total += (uint64_t)(s->cweights[i] > 1 ? s->cweights[i] : 1);
        s->prefix[i] = total;
        s->pos[i] = -1;
    }
    size_t kept = 0, draws = max < HH_FETCH_DRAWS || thread_of(p)->per_job ? max : HH_FETCH_DRAWS;
    for (size_t j = 0; j < draws; j++) {
        uint64_t r = hh__rng_below(&p->rng, total);
        size_t lo = 0, hi = ncand - 1;
        while (lo < hi) { /* first prefix above r */
            size_t mid = lo + (hi - lo) / 2;
            if (s->prefix[mid] > r) hi = mid;
            else lo = mid + 1;
        }
        if (s->pos[lo] < 0) s->pos[lo] = (long)kept, s->place[kept] = s->cand[lo], s->count[kept++] = 0;
        s->count[s->pos[lo]] += max / draws + (j < max % draws); /* the batch in draws near-equal parts */
    }
    if (tail) {
        size_t no = hh__queue_order(s->cweights, ncand, 1, &p->rng, s->order);
        for (size_t k = 0; k < no; k++) {
            size_t i = s->order[k];
            if (s->pos[i] < 0) s->pos[i] = (long)kept, s->place[kept] = s->cand[i], s->count[kept++] = max;
        }
    }
    memcpy(s->cand, s->place, kept * sizeof(*s->cand));
    return kept;
}

/* The fetch script's arguments, written into s->argv from index 3 on: the
 * key pairs of the queues to try, then the mode, the jobs wanted and one
 * (queue, at most how many jobs) pair per queue (scripts.h): in strict
 * order every candidate for the whole batch, weighted the queues drawn for
 * it (draw_weighted). full: the queues named are likely empty (a retry
 * after a fetch that found nothing, or every queue known empty).
 * Returns the argument count after the keys, or -1 out of memory. */
static int fetch_args(hh__processor *p, fetch_scratch *s, size_t max, size_t *ncandp, int full) {
    const hh__fetch_env *env = p->fetch;
    size_t n = env->ctx->nqueues, ncand = *ncandp;
    if (env->ctx->weighted) *ncandp = ncand = draw_weighted(p, s, max, ncand, full || ncand <= HH_FETCH_TAIL);
    else
        for (size_t i = 0; i < ncand; i++) s->count[i] = max;
    const char **keys = s->argv + 3, **args = s->argv + 3 + 2 * ncand;
    size_t *klen = s->lens + 3, *alen = s->lens + 3 + 2 * ncand;
    for (size_t i = 0; i < ncand; i++) {
        size_t q = s->cand[i];
        keys[2 * i] = env->ctx->queue_keys[q], klen[2 * i] = sdslen(env->ctx->queue_keys[q]);
        keys[2 * i + 1] = env->ctx->inprog_keys[q], klen[2 * i + 1] = sdslen(env->ctx->inprog_keys[q]);
    }
    size_t need = (1 + 2 * ncand) * 24;
    if (s->ordcap < need) {
        char *grown = realloc(s->ord, need);
        if (!grown) return -1;
        s->ord = grown, s->ordcap = need;
    }
    /* "1"/"0": reliable, or "b": pop (basic fetch); then "x" to skip the
     * EXISTS check */
    static const char *modes[3][2] = {{"1x", "1"}, {"0x", "0"}, {"bx", "b"}};
    /* EXISTS first when the queues named are likely empty: every queue
     * while idle, or a retry after a fetch that found nothing (full: every
     * queue, or in strict order the others not known empty), where passing
     * over thousands of empty queues one list command each would cost
     * Redis milliseconds */
    int check = full || (ncand == n && p->fetch->fetcher->dry),
        mode = s->basic                     ? 2
        : hh__conn_version(&p->conn) >= 602 ? 0
                                            : 1;
    args[0] = modes[mode][check], alen[0] = strlen(args[0]);
    char *o = s->ord;
    int len = snprintf(o, 24, "%zu", max);
    args[1] = o, alen[1] = (size_t)len, o += 24;
    for (size_t i = 0; i < ncand; i++) {
        len = snprintf(o, 24, "%zu", i + 1);
        args[2 + 2 * i] = o, alen[2 + 2 * i] = (size_t)len, o += 24;
        len = snprintf(o, 24, "%zu", s->count[i]);
        args[3 + 2 * i] = o, alen[3 + 2 * i] = (size_t)len, o += 24;
    }
    return (int)(2 + 2 * ncand);
}

/* Sends the queued acks and the fetch script in one round trip (the
 * script alone when its sha is not known yet: EVAL then loads it). Returns
 * the script's reply, or NULL when the connection failed (the acks are
 * then retried alone, the lease told). */
static redisReply *fetch_exchange(hh__processor *p, fetch_scratch *s, size_t n, int nargs, hh__fetched *out) {
    const hh__fetch_env *env = p->fetch;
    const char **keys = s->argv + 3, **args = s->argv + 3 + 2 * n;
    size_t *klen = s->lens + 3, *alen = s->lens + 3 + 2 * n;
    if (!hh__conn_script_sha(&p->conn, HH_SCRIPT_FETCH)[0]) hh__finish_flush_acks(env->finish, &p->conn);
    /* From here until its reply is read, what the script moves is in our
     * list but held by no thread (lease.c). */
    if (!s->basic) hh__lease_fetch_begin(env->lease, p, 0);
    redisReply *r = NULL;
    size_t nacks = 0;
    hh_job **acks =
        hh__conn_script_sha(&p->conn, HH_SCRIPT_FETCH)[0] ? hh__finish_take_acks(env->finish, &nacks) : NULL;
    if (acks) {
        char nk[24];
        snprintf(nk, sizeof(nk), "%zu", 2 * n);
        s->argv[0] = "EVALSHA", s->lens[0] = 7;
        s->argv[1] = hh__conn_script_sha(&p->conn, HH_SCRIPT_FETCH), s->lens[1] = 40;
        s->argv[2] = nk, s->lens[2] = strlen(nk);
        int argc = 3 + (int)(2 * n) + nargs;
        hh__pipe pipe;
        hh__pipe_begin(&pipe, &p->conn);
        for (size_t i = 0; i < nacks; i++) hh__finish_ack_append(env->finish, &pipe, acks[i]);
        hh__pipe_addargv(&pipe, argc, s->argv, s->lens);
        redisReply **rs = hh__pipe_exec(&pipe);
        if (!rs) {
            if (!s->basic) hh__lease_fetch_end(env->lease, p, out, 0, HH_FETCH_END_LOST);
            for (size_t i = 0; i < nacks; i++) acks[i]->ack_uncertain = 1;
            hh__finish_send_acks(env->finish, &p->conn, acks, nacks); /* retries the acks alone */
            return NULL;
        }
        hh__finish_acks_settle(env->finish, &p->conn, acks, rs, nacks, NULL, 0);
        r = rs[pipe.n - 1];
        rs[pipe.n - 1] = NULL;
        hh__replies_free(rs, pipe.n);
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(r);
            r = NULL;
            hh__conn_forget_script(&p->conn, HH_SCRIPT_FETCH);
        }
    }
    if (!r) r = hh__conn_eval(&p->conn, HH_SCRIPT_FETCH, (int)(2 * n), keys, klen, nargs, args, alen);
    if (!r && !s->basic) hh__lease_fetch_end(env->lease, p, out, 0, HH_FETCH_END_LOST);
    return r;
}

/* Reads the script's reply: {{empty queue indexes}, queue index, payload,
 * ...} or false (every queue empty). Marks the empty queues; takes the
 * jobs and ends the lease's fetch window. Returns the number of jobs, or
 * -1 on an error reply (logged). A malformed element ends the parse: what
 * it moved is stranded and reconciliation pushes it back. */
static int fetch_parse(hh__processor *p, const fetch_scratch *s, size_t n, redisReply *r, hh__fetched *out) {
    const hh__fetch_env *env = p->fetch;
    int rc = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_ARRAY) {
        const redisReply *e = r->element[0];
        long long now = now_us();
        for (size_t i = 0; i < e->elements; i++)
            if (e->element[i]->type == REDIS_REPLY_INTEGER && e->element[i]->integer >= 1 &&
                (size_t)e->element[i]->integer <= n)
                mark_empty(env->fetcher, s->cand[e->element[i]->integer - 1], s->seq, now);
        for (size_t i = 1; i + 1 < r->elements; i += 2) {
            const redisReply *qi = r->element[i];
            redisReply *v = r->element[i + 1];
            if (qi->type != REDIS_REPLY_INTEGER || v->type != REDIS_REPLY_STRING) break;
            size_t q = (size_t)qi->integer - 1;
            if (q >= n || take(&out[rc], v, s->cand[q]) < 0) break;
            rc++;
        }
        if (!s->basic)
            hh__lease_fetch_end(env->lease, p, out, rc,
                                (size_t)rc * 2 + 1 != r->elements ? HH_FETCH_END_PARTIAL : HH_FETCH_END_OK);
    } else if (r->type == REDIS_REPLY_ERROR) {
        fetch_error(p, r->str);
        rc = -1;
        if (!s->basic) hh__lease_fetch_end(env->lease, p, out, 0, HH_FETCH_END_ERROR);
    } else {
        /* nil: every queue named was empty (the script's EXISTS, or every
         * queue passed over), so each is marked as one it reports empty */
        long long now = now_us();
        for (size_t i = 0; r->type == REDIS_REPLY_NIL && i < n; i++) mark_empty(env->fetcher, s->cand[i], s->seq, now);
        if (!s->basic)
            hh__lease_fetch_end(env->lease, p, out, 0,
                                r->type != REDIS_REPLY_NIL ? HH_FETCH_END_PARTIAL : HH_FETCH_END_OK);
    }
    return rc;
}

/* Basic fetch's batch from one queue: one RPOP with a count (Redis 6.2 and
 * later), which costs Redis a fraction of a script call: basic fetch takes
 * no more jobs than idle threads, so its batches are small and a call's
 * fixed cost weighs on each job. Returns the number of jobs (the
 * queue is marked empty when it gave fewer than max), or -1 on an error. */
static int pop_count(hh__processor *p, size_t q, unsigned long long seq, hh__fetched *out, size_t max) {
    const hh__fetch_env *env = p->fetch;
    char nb[24];
    snprintf(nb, sizeof(nb), "%zu", max);
    const char *argv[3] = {"RPOP", env->ctx->queue_keys[q], nb};
    size_t lens[3] = {4, sdslen(env->ctx->queue_keys[q]), strlen(nb)};
    redisReply *r = hh__conn_cmdargv(&p->conn, 3, argv, lens);
    if (!r) return -1;
    int rc = 0;
    if (r->type == REDIS_REPLY_ARRAY) {
        /* a popped job is only in memory from here (as with BRPOP); an
         * element that is not a payload (a broken server) is dropped */
        for (size_t i = 0; i < r->elements && (size_t)rc < max; i++)
            if (take(&out[rc], r->element[i], q) > 0) rc++;
    } else if (r->type == REDIS_REPLY_ERROR) {
        fetch_error(p, r->str);
        rc = -1;
    }
    if (rc >= 0 && (size_t)rc < max) mark_empty(env->fetcher, q, seq, now_us());
    freeReplyObject(r);
    return rc;
}

/* One run of the fetch script over the queues not known to be empty (all
 * of them with all set), with the queued acks in front: returns the number
 * of jobs, 0 when every queue tried was empty, -1 on an error. *all says
 * on return whether every queue was tried. basic: pop the jobs (RPOP, no
 * in-progress list), for basic fetch's batches. wide: in strict order, try
 * every queue not known to be empty, not only the first few. */
static int fetch_batch_once(hh__processor *p, hh__fetched *out, size_t max, int *all, int basic, int wide) {
    const hh__fetch_env *env = p->fetch;
    if (hh__conn_ready(&p->conn) != 0) return -1;
    fetch_scratch *s = scratch(p);
    if (!s) return -1;
    s->basic = basic;
    int full = *all;
    if (max > HH_FETCH_BATCH_MAX) max = HH_FETCH_BATCH_MAX;
    size_t ncand = candidates(p, s, max, wide, all);
    if (ncand == 0) { /* every queue has a trusted mark: nothing to ask; the acks go alone */
        if (!basic) hh__finish_try_acks(env->finish, &p->conn);
        return 0;
    }
    if (basic && !env->ctx->weighted && ncand >= 1 && hh__conn_version(&p->conn) >= 602) {
        /* strict order: the first queue that holds jobs gives what it has
         * (a short batch when it runs out: the next fetch goes on); only
         * when it is empty does the script try the others */
        int got = pop_count(p, s->cand[0], s->seq, out, max);
        if (got != 0 || ncand == 1) return got;
        memmove(s->cand, s->cand + 1, --ncand * sizeof(*s->cand));
        memmove(s->cweights, s->cweights + 1, ncand * sizeof(*s->cweights));
    }
    size_t named = ncand;
    int nargs = fetch_args(p, s, max, &ncand, full || wide || s->recheck);
    if (ncand < named) *all = 0; /* some queues were not drawn */
    if (nargs < 0) return -1;
    redisReply *r = fetch_exchange(p, s, ncand, nargs, out);
    if (!r) return -1;
    int rc = fetch_parse(p, s, ncand, r, out);
    if (!env->ctx->weighted && !*all && !wide && rc >= 0) { /* the next strict fetch's span */
        size_t gone = r->type == REDIS_REPLY_ARRAY && r->elements && r->element[0]->type == REDIS_REPLY_ARRAY
            ? r->element[0]->elements
            : ncand;
        size_t span = (size_t)rc < max && gone >= ncand ? 2 * ncand + 2 : gone + 2;
        if (span > HH_FETCH_BATCH_MAX + 1) span = HH_FETCH_BATCH_MAX + 1;
        atomic_store_explicit(&env->fetcher->span, (unsigned)span, memory_order_relaxed);
    }
    freeReplyObject(r);
    return rc;
}

/* A batch fetch (reliable, or basic's pops): a fetch that left queues out
 * and found nothing tries the other queues not known to be empty, then
 * every queue, before the caller goes idle (only writes after that are
 * waited for). */
static int fetch_batch(hh__processor *p, hh__fetched *out, size_t max, int basic) {
    if (max > HH_FETCH_BATCH_MAX) max = HH_FETCH_BATCH_MAX;
    int all = 0;
    int rc = fetch_batch_once(p, out, max, &all, basic, 0);
    if (rc == 0 && !all && !p->fetch->ctx->weighted) rc = fetch_batch_once(p, out, max, &all, basic, 1);
    if (rc == 0 && !all) rc = fetch_batch_once(p, out, max, &(int){1}, basic, 0);
    return rc;
}

/* ------------------------------------------------------------ idle */

/* Every queue empty and no wake-up from pickup.c (Redis without CLIENT
 * TRACKING): block on one queue with an atomic move, so a job there wakes
 * us at once. Threads spread over the queues so each queue has a waiter
 * when concurrency >= queues, otherwise they rotate; the blocks last
 * Sidekiq's 2 s, so a job in a queue without a waiter waits 2 s at most. */
static int idle_fallback(hh__processor *p, hh__fetched *out) {
    const hh__fetch_env *env = p->fetch;
    hh__fetcher *f = env->fetcher;
    fetch_thread *t = thread_of(p);
    size_t n = env->ctx->nqueues;
    size_t q = (size_t)t->block_queue % n;
    int rotate = (size_t)env->ctx->opts.concurrency < n;
    for (size_t i = 0; i < n && queue_bad(f, q); i++) q = (q + 1) % n; /* a wrong-typed one: the next */
    if (queue_bad(f, q)) {                                             /* all wrong-typed: wait as a block would */
        hh__sleep(HH_FETCH_BLOCK_SECONDS);
        return 0;
    }
    if (rotate) t->block_queue = (int)((q + 1) % n);
    redisReply *r = NULL;
    int rc = 0;
    /* One waiter per queue is enough: other idle threads sleep in the
     * process, at no Redis cost, until a waiter gets a job (or leaves). */
    if (!rotate) {
        pthread_mutex_lock(&f->idle_mu);
        size_t pick = n;
        if (f->waiters[q] == 0) pick = q;
        for (size_t i = 0; i < n && pick == n; i++)
            if (f->waiters[i] == 0 && !queue_bad(f, i)) pick = i;
        if (pick == n) {
            if (!atomic_load(&env->ctx->flags->quiet)) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += HH_FETCH_SLEEPER_SECONDS;
                pthread_cond_timedwait(&f->idle_cv, &f->idle_mu, &until);
            }
            pthread_mutex_unlock(&f->idle_mu);
            return 0;
        }
        q = pick;
        f->waiters[q]++;
        pthread_mutex_unlock(&f->idle_mu);
    }
    const char *bs = "2"; /* HH_FETCH_BLOCK_SECONDS */
    sds src = env->ctx->queue_keys[q], dst = env->ctx->inprog_keys[q];
    int lmove = hh__conn_version(&p->conn) >= 602;
    const char *bargv[6] = {lmove ? "BLMOVE" : "BRPOPLPUSH", src, dst, "RIGHT", "LEFT", bs};
    size_t blens[6] = {strlen(bargv[0]), sdslen(src), sdslen(dst), 5, 4, strlen(bs)};
    if (!lmove) bargv[3] = bs, blens[3] = strlen(bs);
    if (!atomic_load(&env->ctx->flags->quiet)) {
        hh__lease_fetch_begin(env->lease, p, 1);
        r = hh__conn_cmdargv_blocking(&p->conn, HH_FETCH_BLOCK_SECONDS, lmove ? 6 : 4, bargv, blens);
        if (!r) rc = atomic_load(&env->ctx->flags->quiet) ? 0 : -1;
        if (r && r->type == REDIS_REPLY_STRING) rc = take(out, r, q);
        hh__lease_fetch_end(env->lease, p, out, rc > 0 ? rc : 0,
                            !r                                 ? HH_FETCH_END_LOST
                                : r->type == REDIS_REPLY_ERROR ? HH_FETCH_END_ERROR
                                : rc < 0                       ? HH_FETCH_END_PARTIAL
                                                               : HH_FETCH_END_OK);
    }
    if (!rotate) {
        /* Leaving the post. After a job (more may follow) or an error,
         * wake the sleepers to fetch and take over; after a plain
         * timeout this thread comes straight back to it. */
        pthread_mutex_lock(&f->idle_mu);
        f->waiters[q]--;
        if (rc != 0 || (r && r->type == REDIS_REPLY_STRING)) pthread_cond_broadcast(&f->idle_cv);
        pthread_mutex_unlock(&f->idle_mu);
    }
    if (r && r->type == REDIS_REPLY_ERROR) {
        fetch_error(p, r->str);
        rc = -1;
    }
    if (r) freeReplyObject(r);
    return rc;
}

/* ------------------------------------------------------------ waiting threads */

/* The buffer's sleepers (buffer.h), as this file's threads; f->b->mu held. */
static void sleep_locked(hh__fetcher *f, fetch_thread *t) { hh__buffer_sleep_locked(f->b, &t->sleeper); }
static fetch_thread *pop_sleeper_locked(hh__fetcher *f) {
    return (fetch_thread *)(void *)hh__buffer_pop_sleeper_locked(f->b); /* the sleeper is its first member */
}
static void wake_all_locked(hh__fetcher *f) { hh__buffer_wake_all_locked(f->b); }

void hh__fetch_wake_sleepers(const hh__fetch_env *env) {
    hh__fetcher *f = env->fetcher;
    hh__pickup_poke(env->pickup); /* idle threads waiting for a wake-up see quiet */
    if (!f) return;
    pthread_mutex_lock(&f->idle_mu);
    pthread_cond_broadcast(&f->idle_cv); /* sleepers see quiet */
    pthread_mutex_unlock(&f->idle_mu);
    pthread_mutex_lock(&f->b->mu);
    wake_all_locked(f); /* threads waiting on a fetch in flight */
    pthread_mutex_unlock(&f->b->mu);
}

void hh__fetch_unblock(const hh__fetch_env *env, hh__conn *c) {
    for (int i = 0; i < env->ctx->opts.concurrency; i++) {
        long long id = hh__conn_client_id(&env->ctx->procs[i].conn);
        if (!id || !hh__conn_blocking(&env->ctx->procs[i].conn)) continue;
        redisReply *r = hh__conn_cmd(c, "CLIENT UNBLOCK %lld TIMEOUT", id);
        if (r) freeReplyObject(r);
    }
}

void hh__fetch_wake(const hh__fetch_env *env, hh__conn *c) {
    hh__fetch_wake_sleepers(env);
    hh__fetch_unblock(env, c);
}

/* A dry spell (the queues ran dry) with hundreds of idle threads: each
 * one would send a fetch of its own to find the queues still empty before
 * it waits, when the spell starts and again when tracking comes on (which
 * wakes every waiter): hundreds of script calls each time a burst drains.
 * One fetch per pickup generation does: a write after its ticket is a new
 * generation (with tracking on; while tracking comes on, a write is caught
 * by the fetch its switch-on wakes), which wakes a waiter. So a thread
 * whose ticket is of the generation of a check in flight waits for its
 * outcome (every queue empty: this thread waits for a write with its own
 * ticket; jobs: it joins the flow of batches), and one whose ticket is of
 * the generation of a fetch that found every queue empty less than
 * HH_FETCH_CHECK_SECONDS ago waits for a write at once. Only with wake-ups
 * available (the ticket says so), and never past the window: the poller's
 * safety poll and every timed recheck still fetch. */
#define HH_FETCH_CHECK_SECONDS 0.1
enum { DRY_FETCH, DRY_CHECK, DRY_WAIT, DRY_JOIN };

static int dry_check(hh__fetcher *f, const hh__pickup_ticket *t) {
    if (!t->wakes || !atomic_load(&f->dry)) return DRY_FETCH;
    int rc = DRY_FETCH;
    pthread_mutex_lock(&f->b->mu);
    if (f->check_busy && f->check_gen == t->gen) {
        while (f->check_busy && f->check_gen == t->gen) pthread_cond_wait(&f->check_cv, &f->b->mu);
        rc = f->check_gen == t->gen && f->check_empty ? DRY_WAIT : DRY_JOIN;
    } else if (f->check_empty && f->check_gen == t->gen && hh__mono() - f->check_at < HH_FETCH_CHECK_SECONDS) {
        rc = DRY_WAIT;
    } else if (!f->check_busy) {
        f->check_busy = 1, f->check_empty = 0, f->check_gen = t->gen;
        rc = DRY_CHECK;
    }
    pthread_mutex_unlock(&f->b->mu);
    return rc;
}

/* After a fetch (rc jobs, -1 an error) taken with ticket t; check: it was
 * the generation's check. */
static void dry_check_end(hh__fetcher *f, const hh__pickup_ticket *t, int check, int rc) {
    if (!t->wakes) return;
    pthread_mutex_lock(&f->b->mu);
    if (check) {
        f->check_busy = 0;
        pthread_cond_broadcast(&f->check_cv);
    }
    if (rc == 0 && (check || !f->check_busy)) f->check_gen = t->gen, f->check_empty = 1, f->check_at = hh__mono();
    else if (rc != 0 && (check || !f->check_busy)) f->check_empty = 0; /* a write it did not see as one */
    if (rc > 0) atomic_store(&f->dry, 0); /* before the waiters look (hh__fetch_next sets it again) */
    pthread_mutex_unlock(&f->b->mu);
}

/* Fetches up to max jobs (each job's queue drawn in Sidekiq's order) for
 * processor p into out[], waiting when every queue is empty until a queue
 * may hold a job (pickup.h) or quiet. Queued acks go out in the same round
 * trip. Returns the number of jobs, 0 when nothing came, -1 on a Redis
 * error (already logged and backed off); *waited says whether a 0 came
 * after a wait (or another thread's check): it then says nothing of the
 * queues now. */
static int fetch(hh__processor *p, hh__fetched *out, size_t max, size_t *promise, int *waited) {
    const hh__fetch_env *env = p->fetch;
    int rc, basic = env->ctx->opts.fetch == HH_FETCH_BASIC;
    /* Taken before the fetch: a write to any queue after it (the fetch
     * included) shows as a new generation, so nothing is missed between
     * an empty fetch and the wait. */
    hh__pickup_ticket ticket;
    hh__pickup_ticket_take(env->pickup, &ticket);
    unsigned long failures = hh__conn_failures(&p->conn);
    bad_recheck(p);
    int dry = basic ? DRY_FETCH : dry_check(env->fetcher, &ticket);
    if (dry == DRY_JOIN) { /* another thread's check found jobs */
        hh__pickup_done(env->pickup, &ticket, 0);
        *waited = 1;
        return 0;
    }
    if (dry == DRY_WAIT) rc = 0;
    else if (basic) rc = fetch_basic(p, out, max ? max : 1);
    else rc = fetch_batch(p, out, max ? max : 1, 0);
    if (dry != DRY_WAIT && !basic) dry_check_end(env->fetcher, &ticket, dry == DRY_CHECK, rc);
    if (rc == 0) {
        /* The queues ran dry: threads waiting for this fetch's jobs go
         * their own way to the idle wait (want_locked). This thread's
         * promise ends here: while it waits for a write, it brings no job,
         * and a promise held through the wait would keep the others from
         * fetching once another thread's fetch ends the dry spell. */
        hh__fetcher *f = env->fetcher;
        pthread_mutex_lock(&f->b->mu);
        f->promised -= *promise;
        *promise = 0;
        if (!atomic_load(&f->dry)) {
            atomic_store(&f->dry, 1);
            wake_all_locked(f);
        }
        pthread_mutex_unlock(&f->b->mu);
    }
    *waited = 0;
    if (rc != 0 || atomic_load(&env->ctx->flags->quiet)) {
        hh__pickup_done(env->pickup, &ticket, rc);
    } else {
        *waited = 1;
        if (!hh__pickup_wait(env->pickup, &ticket, bad_wait(env->fetcher)) && !basic) {
            /* No wake-up available. Basic fetch's BRPOP covered every
             * queue for 2 s already; reliable fetch blocks on one queue. */
            rc = idle_fallback(p, out);
        }
    }
    for (int i = 0; i < rc; i++) atomic_fetch_add(&env->ctx->counters->fetched[out[i].queue], 1);
    if (rc >= 0) hh__err_run_ok(env->ctx->log, &env->fetcher->fetch_errors, "fetch");
    /* A broken link waits out the reconnect's backoff (none after a link
     * that worked: the acks may have reconnected already); an error reply
     * pauses 1 s, as Sidekiq does. */
    if (rc < 0 && (!hh__conn_connected(&p->conn) || hh__conn_failures(&p->conn) != failures)) hh__conn_ready(&p->conn);
    else if (rc < 0) hh__sleep(1.0);
    return rc;
}

/* ------------------------------------------------------------ the shared buffer */

void hh__fetch_ran(hh__processor *p, double seconds) {
    fetch_thread *t = thread_of(p);
    t->spent += seconds;
    t->ran++;
}

/* The batch sizes, after the jobs this thread ran since its last fetch
 * (want_locked). Call with f->b->mu. */
static void adapt_locked(hh__fetcher *f, fetch_thread *t) {
    if (t->ran && t->spent < 0.001 * t->ran) {
        f->batch = f->batch * 2 > HH_FETCH_BATCH_MAX ? HH_FETCH_BATCH_MAX : f->batch * 2;
        t->batch = t->batch * 2 > HH_FETCH_BATCH_MAX ? HH_FETCH_BATCH_MAX : t->batch * 2;
    } else if (t->ran) {
        f->batch = 1, t->batch = 1;
    }
    t->spent = 0, t->ran = 0;
}

/* How many jobs this thread asks for: the batch, shared by the threads
 * (doubled by each fetch of a thread whose jobs since its last fetch took
 * under 1 ms each, back to 1 after slower ones: with hundreds of threads
 * each fetches seldom, and a batch of its own would stay small); in a dry
 * spell, when every idle thread fetches, the thread's own batch, adapted
 * the same way (hundreds of threads each taking a full batch would fill
 * the in-progress list that every ack's LREM searches). While jobs flow,
 * one fetch at a time is in flight, and only when the buffer does not
 * cover every idle thread: so batches land in the buffer in the order
 * Redis moved them (a queue's order holds), and the buffer (with it the
 * in-progress list) holds the idle threads' jobs and one batch at most,
 * not a batch per thread. 0: this thread waits for the buffer or the fetch
 * in flight (or prefetch() brings the next batch before the buffer runs
 * out). Once the queues run dry, every idle thread fetches (and waits) on
 * its own. Call with f->b->mu. */
static size_t want_locked(hh__processor *p, fetch_thread *t) {
    hh__fetcher *f = p->fetch->fetcher;
    adapt_locked(f, t);
    size_t covered = f->promised + f->b->npending;
    /* While the queues run dry every idle thread goes its own way to the
     * idle wait (pickup.h, or one blocking move per queue). */
    if ((covered >= (size_t)f->idle || f->promised) && !f->dry) return 0;
    size_t want = (size_t)(f->dry ? t->batch : f->batch);
    /* Jobs flowing: at least one job per idle thread not covered yet, so
     * slow jobs (batch 1) do not wait behind a single fetch of one job at
     * a time (every idle thread gets its job from one round trip); each
     * job has a thread ready for it, so none waits in the buffer. */
    if (!f->dry && covered < (size_t)f->idle && want < (size_t)f->idle - covered) want = (size_t)f->idle - covered;
    t->per_job = f->batch == 1;
    if (want > f->b->cap - covered) want = f->b->cap - covered; /* never more than the buffer takes */
    /* basic fetch: popped jobs are only in memory (a crash loses them), so
     * no more of them wait than one per thread */
    size_t c = (size_t)p->fetch->ctx->opts.concurrency;
    if (p->fetch->ctx->opts.fetch == HH_FETCH_BASIC) want = covered < c && want > c - covered ? c - covered : want;
    return want ? want : 1;
}

/* Jobs fetched that did not fit into the buffer (cannot happen: a fetch
 * never asks for more than its room), pushed back rather than lost. */
static void unbuffered(hh__processor *p, hh__fetched *jobs, size_t from, size_t to) {
    const hh__fetch_env *env = p->fetch;
    for (size_t i = from; i < to; i++) {
        hh__finish_push_back(env->finish, &p->conn, &jobs[i]);
        hh__lease_finish_fetched(env->lease, &jobs[i]);
    }
}

/* Fast jobs flowing (reliable fetch): the thread that would take a job
 * and leave a batch or less in the buffer fetches the next batch before
 * it takes its own job, so the others run the rest of the buffer meanwhile
 * instead of all waiting out the round trip once it is empty (and no job
 * waits in this thread's hands through the round trip: jobs start in
 * buffer order). A whole batch ahead, not half: the round trip includes
 * Redis moving the batch (a few µs a job), and threads ran half a batch
 * dry before it came back. Still one fetch in flight at a time (the
 * buffer keeps fetch order), and the buffer holds two batches (and a job)
 * at most. The batch goes into the buffer whole; a fetch that finds every
 * queue empty starts the dry spell as a regular one does; an error is
 * left to the next regular fetch, which backs off (this thread takes a
 * buffered job if one is left, and does not wait). */
static void prefetch(hh__processor *p, size_t want) {
    const hh__fetch_env *env = p->fetch;
    hh__fetcher *f = env->fetcher;
    fetch_thread *t = thread_of(p);
    t->per_job = 0;
    bad_recheck(p);
    int got = fetch_batch(p, t->held, want, 0);
    for (int i = 0; i < got; i++) atomic_fetch_add(&env->ctx->counters->fetched[t->held[i].queue], 1);
    if (got >= 0) hh__err_run_ok(env->ctx->log, &f->fetch_errors, "fetch");
    pthread_mutex_lock(&f->b->mu);
    f->promised -= want;
    size_t taken = got > 0 ? hh__buffer_push_locked(f->b, t->held, (size_t)got) : 0;
    fetch_thread *next = NULL;
    if (got == 0 && !atomic_load(&f->dry)) {
        atomic_store(&f->dry, 1);
        wake_all_locked(f);
    } else if (got > 0) {
        next = pop_sleeper_locked(f);
    }
    pthread_mutex_unlock(&f->b->mu);
    if (next) pthread_cond_signal(&next->sleeper.wake);
    /* threads still waiting for a write since the burst began join too, a
     * batch's worth at a time (as a regular fetch's jobs wake them) */
    if (got > 1) hh__pickup_wake(env->pickup, got - 1);
    if (got > 0) unbuffered(p, t->held, taken, (size_t)got);
}

int hh__fetch_next(hh__processor *p, hh__fetched *out) {
    const hh__fetch_env *env = p->fetch;
    hh__fetcher *f = env->fetcher;
    fetch_thread *t = thread_of(p);
    pthread_mutex_lock(&f->b->mu);
    if (f->b->npending) {
        /* A batch or less left besides this thread's job: fetch the next
         * batch first, then take the oldest job. Taking the job first
         * would hold it through the round trip while the others run the
         * rest of the buffer, so it would start up to two batches after
         * its place in the queue. */
        if (!f->promised && !atomic_load(&f->dry) && f->b->npending <= (size_t)f->batch + 1 &&
            env->ctx->opts.fetch != HH_FETCH_BASIC && !atomic_load(&env->ctx->flags->quiet)) {
            adapt_locked(f, t); /* this thread fetches: the batch size follows its jobs' speed */
            size_t ahead = f->batch > 1 ? (size_t)f->batch : 0;
            if (ahead > f->b->cap - f->b->npending) ahead = f->b->cap - f->b->npending;
            if (ahead) {
                f->promised += ahead;
                pthread_mutex_unlock(&f->b->mu);
                prefetch(p, ahead);
                pthread_mutex_lock(&f->b->mu);
            }
        }
        if (hh__buffer_pop_locked(f->b, out)) {
            pthread_mutex_unlock(&f->b->mu);
            return 1;
        }
        /* the others took every job meanwhile: wait or fetch as any idle
         * thread does */
    }
    f->idle++;
    size_t want;
    while (!(want = want_locked(p, t)) && !atomic_load(&env->ctx->flags->quiet)) {
        sleep_locked(f, t); /* a fetch in flight brings this thread's job */
        if (hh__buffer_pop_locked(f->b, out)) {
            /* Pass the wake-up on while jobs are left (see the end of
             * this function). */
            fetch_thread *next = f->b->npending ? pop_sleeper_locked(f) : NULL;
            f->idle--;
            pthread_mutex_unlock(&f->b->mu);
            if (next) pthread_cond_signal(&next->sleeper.wake);
            return 1;
        }
    }
    if (atomic_load(&env->ctx->flags->quiet)) {
        f->idle--;
        pthread_mutex_unlock(&f->b->mu);
        return 0;
    }
    f->promised += want;
    pthread_mutex_unlock(&f->b->mu);

    size_t promise = want;
    int waited;
    int got = fetch(p, t->held, want, &promise, &waited);

    pthread_mutex_lock(&f->b->mu);
    f->promised -= promise;
    f->idle--;
    /* Nothing after a wait (a wake-up, a timed poll) says nothing of the
     * queues now: another thread's fetch may have ended the dry spell
     * meanwhile, and this thread then joins the flow (want_locked) rather
     * than restart the spell, where every woken thread would fetch on its
     * own (hundreds of fetches when a burst lands on an idle process). */
    if (got != 0 || !waited) f->dry = got == 0;
    size_t rest = got > 1 ? (size_t)got - 1 : 0;
    size_t taken = rest ? hh__buffer_push_locked(f->b, t->held + 1, rest) : 0;
    /* Fast jobs (batch > 1): wake-ups are passed on, one at a time. This
     * thread wakes one waiting thread (to run a buffered job, or to fetch
     * next), and a thread woken that finds jobs left after taking its own
     * wakes the next (sleep_locked: the warmest). So waiting threads join
     * only while the buffer outlasts a wake-up: jobs that take less than
     * a wake-up are run by the threads already awake instead of costing a
     * sleep and a wake-up each (hundreds of threads on a few cores), and
     * jobs that wait on I/O still bring every thread in. Slow jobs (batch
     * 1): one thread per job at once, and one more to fetch next. After a
     * fetch that brought nothing, every waiting thread looks again (not
     * after a wait that ended with the dry spell over: the flow wakes
     * them). Woken after the unlock: a thread woken while the mutex is held
     * would block on it at once. */
    fetch_thread *wake[HH_FETCH_BATCH_MAX + 1];
    size_t nwake = 0;
    if (got < 0 || (got == 0 && f->dry)) wake_all_locked(f);
    else if (got > 0 && f->batch > 1) wake[nwake++] = pop_sleeper_locked(f);
    else if (got > 0) /* slow jobs: every job's thread at once */
        while (nwake <= taken && (wake[nwake] = pop_sleeper_locked(f))) nwake++;
    pthread_mutex_unlock(&f->b->mu);
    for (size_t i = 0; i < nwake; i++)
        if (wake[i]) pthread_cond_signal(&wake[i]->sleeper.wake);
    unbuffered(p, t->held, 1 + taken, 1 + rest);
    if (got <= 0) return got;
    *out = t->held[0];
    return 1;
}

void hh__fetch_push_back_pending(const hh__fetch_env *env, hh__conn *conn) {
    hh__fetcher *f = env->fetcher;
    for (;;) {
        hh__fetched x;
        pthread_mutex_lock(&f->b->mu);
        int got = hh__buffer_pop_locked(f->b, &x);
        pthread_mutex_unlock(&f->b->mu);
        if (!got) return;
        hh__finish_push_back(env->finish, conn, &x);
        hh__lease_finish_fetched(env->lease, &x);
    }
}
