/* lease.c -- the held-jobs registry, reconciliation of stranded fetches, the
 * outage rule and lease loss (see lease.h).
 * Keys read: hiredhand:inprogress:<identity>|<q> of this process (LRANGE),
 * hiredhand:recoveries:<jid> (EXISTS). Keys written: the same lists (LREM) and
 * queue:<q> (RPUSH), both in HH_LUA_REQUEUE; hiredhand:fetchers (SADD).
 *
 * Why reconciliation never pushes back a job this process holds
 * ---------------------------------------------------------------
 * An entry of our list either belongs to a job some thread holds (its fetch
 * reply was read; it is running, buffered, or its ack/outcome/push back has
 * not answered yet) or is stranded: the fetch that moved it never delivered
 * its reply, and since a failed command always closes its connection, never
 * will. Held jobs are counted in `held`, a multiset of payload keys: added
 * under `mu` when a fetch reply is read, removed only after the command
 * that took the entry out of the list has answered. So a held job's entry
 * leaves the list before its key leaves `held`, never after.
 *
 * One pass, for every list of ours (a queue index and a key identify an
 * entry; copies of one payload are counted, not told apart):
 *   a. under mu: start recording every key released from now on (`removed`);
 *   b. LRANGE every list; call T the moment Redis ran it;
 *   c. under mu: note, per worker thread, the number of fetches it has begun
 *      (`begun`); an entry is a candidate when, counting copies, it is in
 *      excess of held + removed; from now on record the candidates' keys
 *      that fetches add to held (`added`);
 *   d. wait until every fetch begun before c has ended (blocked BLMOVEs are
 *      ended at once with CLIENT UNBLOCK ... TIMEOUT, which moves nothing);
 *   e. under mu: per key, push back candidates - added copies;
 *   f. each copy with HH_LUA_REQUEUE (LREM one copy, RPUSH it only if the
 *      LREM removed one), so a copy already gone is never pushed twice.
 * A held job whose entry was in the list at T was held at some moment of
 * [a, c] (then held + removed counted it at c) or had its fetch in flight
 * at c (then d waited for that fetch, which counted it in added). So the
 * copies left at e are stranded ones. Stranded copies leave a list only
 * through this (single) reconciler, a peer's recovery, or an operator, so
 * pushing back at most that many copies never takes the entry of a held
 * job. A fetch that moves entries after T is seen by the next pass.
 *
 * The outage rule
 * ---------------
 * A peer is judged dead by its missing heartbeat hash. After an outage
 * longer than the hash TTL, or any time Redis refused our own beats (OOM,
 * READONLY: the peers could not beat either), or after this process was
 * paused, every hash may be gone while its owner is alive and about to
 * beat. So recovery.c scans only once our own beats have succeeded without
 * a gap (no two successes further apart than 2 x interval + command
 * timeout) for hh__lease_gate_seconds(): max(2 x own interval, 10 s) + 2 s
 * (the reconnect backoff cap) + 1 s. A peer beating at any interval up to
 * max(2 x ours, 10 s) has beaten by then.
 *
 * Lease loss
 * ----------
 * A process paused past the TTL (SIGSTOP, a VM freeze) may find, on waking,
 * that a peer recovered (and runs) its jobs. Its first beat sees that its
 * hash had expired; the beat re-creates the hash, and HH_LUA_RECOVER
 * refuses to take jobs of an owner whose hash exists, so a check made after
 * that beat sees every recovery there will be. The check: every running or
 * buffered job whose entry is no longer in the list (counting copies) is
 * lost if hiredhand:recoveries:<jid> exists (a peer recovered it);
 * otherwise Redis lost the entry (FLUSHALL, a restart without persistence)
 * and the job simply finishes here.
 *
 * Takeover
 * --------
 * With a fixed identity the peer that recovers our jobs may be a newer
 * process of that identity: it runs them from the very lists we check, so
 * the check above sees nothing gone. The beat reads the hash's info before
 * writing its own; info naming a later started_at means a newer owner, and
 * hh__lease_identity_lost() gives up everything at once: every job loses its
 * lease, reconciliation stops, and the stop pushes back, acks and
 * unregisters nothing (the lists are the new owner's). */
#include "lease.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEASE_BACKOFF_CAP 2.0 /* redis.c's reconnect backoff cap */
#define LEASE_MARGIN 1.0
#define LEASE_SAMPLE 4096 /* bytes hashed at each end of a large payload */

/* ------------------------------------------------------------- multiset */

typedef struct lease_ent {
    uint64_t key;
    long count;
    struct lease_ent *next;
} lease_ent;

typedef struct lease_set {
    lease_ent **b;
    size_t nb, n;
} lease_set;

static lease_ent *set_find(const lease_set *s, uint64_t key) {
    if (!s->nb) return NULL;
    for (lease_ent *e = s->b[key & (s->nb - 1)]; e; e = e->next)
        if (e->key == key) return e;
    return NULL;
}

static long set_get(const lease_set *s, uint64_t key) {
    lease_ent *e = set_find(s, key);
    return e ? e->count : 0;
}

static void set_grow(lease_set *s) {
    size_t nb = s->nb ? s->nb * 2 : 64;
    lease_ent **b = calloc(nb, sizeof(*b));
    if (!b) return; /* keep the old table: slower, still right */
    for (size_t i = 0; i < s->nb; i++) {
        lease_ent *e = s->b[i];
        while (e) {
            lease_ent *next = e->next;
            e->next = b[e->key & (nb - 1)];
            b[e->key & (nb - 1)] = e;
            e = next;
        }
    }
    free(s->b);
    s->b = b, s->nb = nb;
}

/* Adds d (may be negative) to key's count; an entry at 0 or below is
 * dropped. Returns -1 when out of memory. */
static int set_add(lease_set *s, uint64_t key, long d) {
    if (s->n >= s->nb) set_grow(s);
    if (!s->nb) return -1;
    lease_ent **pp = &s->b[key & (s->nb - 1)];
    for (; *pp; pp = &(*pp)->next) {
        if ((*pp)->key != key) continue;
        (*pp)->count += d;
        if ((*pp)->count <= 0) {
            lease_ent *e = *pp;
            *pp = e->next;
            free(e);
            s->n--;
        }
        return 0;
    }
    if (d <= 0) return 0;
    lease_ent *e = malloc(sizeof(*e));
    if (!e) return -1;
    e->key = key, e->count = d, e->next = s->b[key & (s->nb - 1)];
    s->b[key & (s->nb - 1)] = e;
    s->n++;
    return 0;
}

static void set_clear(lease_set *s) {
    for (size_t i = 0; i < s->nb; i++) {
        lease_ent *e = s->b[i];
        while (e) {
            lease_ent *next = e->next;
            free(e);
            e = next;
        }
    }
    free(s->b);
    memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------- state */

enum { REC_OFF = 0, REC_ALL, REC_WATCHED };

struct hh__lease {
    pthread_mutex_t mu; /* guards everything below */
    lease_set held;
    lease_set removed; /* keys released while REC_ALL */
    lease_set watch;   /* candidates' keys (REC_WATCHED) */
    lease_set added;   /* candidates' keys fetched while REC_WATCHED */
    int recording;
    unsigned long *begun, *ended; /* per worker thread: fetches */
    int *blocking;                /* its fetch in flight is a blocking move */
    double reconcile_at;          /* monotonic: next reconciliation */
    double again_at;              /* one more after a failed fetch (0: none) */
    unsigned failures;            /* bit (1 << how) of each failed fetch since the last reconciliation */
    /* the outage rule, on the boot clock (counts a suspended machine) */
    double streak_since; /* first beat of the current run of good beats; 0 none */
    double last_ok;
    int check_beats;              /* lease checks still to run after an expiry */
    int fetchers_dirty;           /* hiredhand:fetchers must get our identity again */
    atomic_int identity_lost;     /* a newer process took our identity (hh__lease_identity_lost) */
    pthread_mutex_t reconcile_mu; /* one reconciliation at a time */
};

static double boot_clock(void) {
    struct timespec ts;
#ifdef CLOCK_BOOTTIME
    if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0) return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
#endif
    return hh__mono();
}

struct hh__lease *hh__lease_new(const hh__lease_env *env) {
    struct hh__lease *l = calloc(1, sizeof(*l));
    if (!l) return NULL;
    size_t n = (size_t)env->ctx->opts.concurrency;
    l->begun = calloc(n, sizeof(*l->begun));
    l->ended = calloc(n, sizeof(*l->ended));
    l->blocking = calloc(n, sizeof(*l->blocking));
    if (!l->begun || !l->ended || !l->blocking) {
        free(l->begun), free(l->ended), free(l->blocking), free(l);
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->reconcile_mu, NULL);
    l->reconcile_at = hh__mono() + env->ctx->opts.recovery_interval;
    return l;
}

void hh__lease_free(struct hh__lease *l) {
    if (!l) return;
    set_clear(&l->held);
    set_clear(&l->removed);
    set_clear(&l->watch);
    set_clear(&l->added);
    free(l->begun), free(l->ended), free(l->blocking);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->reconcile_mu);
    free(l);
}

/* A word at a time: byte-wise FNV-1a cost a multiply per payload byte, 2 %
 * of a no-op job's CPU. Each 8-byte word is folded in with a multiply and
 * a shift, the tail word zero-padded and the length mixed last, so every
 * hashed byte and the length reach all 64 bits of the key: two held jobs
 * (their jids differ in 12 bytes) share one only by a 64-bit chance. Keys
 * live in this process's memory only. */
static uint64_t mix_words(uint64_t h, const unsigned char *p, size_t n) {
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        h = (h ^ w ^ ((uint64_t)n << 59)) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h;
}

uint64_t hh__lease_key(size_t q, const char *payload, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)q * 0x9E3779B97F4A7C15ull);
    const unsigned char *p = (const unsigned char *)payload;
    if (len <= 2 * LEASE_SAMPLE) {
        h = mix_words(h, p, len);
    } else {
        h = mix_words(h, p, LEASE_SAMPLE);
        h = mix_words(h, p + len - LEASE_SAMPLE, LEASE_SAMPLE);
    }
    h ^= (uint64_t)len;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
}

static void ask_reconcile(struct hh__lease *l, double at) {
    if (at < l->reconcile_at) l->reconcile_at = at;
}

void hh__lease_fetch_begin(const hh__lease_env *env, hh__processor *p, int blocking) {
    struct hh__lease *l = env->lease;
    pthread_mutex_lock(&l->mu);
    l->begun[p->index]++;
    l->blocking[p->index] = blocking;
    pthread_mutex_unlock(&l->mu);
}

void hh__lease_fetch_end(const hh__lease_env *env, hh__processor *p, hh__fetched *out, int n, hh__fetch_end_how how) {
    struct hh__lease *l = env->lease;
    for (int i = 0; i < n; i++) out[i].lease = hh__lease_key(out[i].queue, out[i].payload, out[i].len);
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < n; i++) {
        if (set_add(&l->held, out[i].lease, 1) != 0) {
            out[i].lease = 0; /* unheld: pushed back later */
            continue;
        }
        if (l->recording == REC_WATCHED && set_find(&l->watch, out[i].lease)) set_add(&l->added, out[i].lease, 1);
    }
    l->ended[p->index] = l->begun[p->index];
    l->blocking[p->index] = 0;
    if (how != HH_FETCH_END_OK) {
        l->failures |= 1u << how;
        /* Now, and once more when the lost command has surely run or been
         * dropped by Redis (it may still be waiting in a socket buffer). */
        double now = hh__mono();
        ask_reconcile(l, now);
        l->again_at = now + env->ctx->cfg->command_timeout + 1;
    }
    pthread_mutex_unlock(&l->mu);
}

void hh__lease_release(const hh__lease_env *env, uint64_t *lease) {
    if (!lease || !*lease || !env->lease) return;
    struct hh__lease *l = env->lease;
    pthread_mutex_lock(&l->mu);
    set_add(&l->held, *lease, -1);
    if (l->recording == REC_ALL) set_add(&l->removed, *lease, 1);
    pthread_mutex_unlock(&l->mu);
    *lease = 0;
}

void hh__lease_finish(const hh__lease_env *env, hh_job *job) {
    if (!job) return;
    hh__lease_release(env, &job->lease);
    hh__job_free(job);
}

void hh__lease_finish_fetched(const hh__lease_env *env, hh__fetched *f) {
    hh__lease_release(env, &f->lease);
    free(f->payload);
    f->payload = NULL;
}

void hh__lease_release_jobs(const hh__lease_env *env, hh_job **jobs, size_t n) {
    struct hh__lease *l = env->lease;
    if (!l || !n) return;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < n; i++) {
        if (!jobs[i]->lease) continue;
        set_add(&l->held, jobs[i]->lease, -1);
        if (l->recording == REC_ALL) set_add(&l->removed, jobs[i]->lease, 1);
        jobs[i]->lease = 0;
    }
    pthread_mutex_unlock(&l->mu);
}

static int recovered_by_peer(const hh__lease_env *env, hh__conn *c, const char *jid);

static void job_names(const char *payload, size_t len, char *klass, size_t kl, char *jid, size_t jl);

int hh__lease_lost(const hh__lease_env *env, hh__conn *c, const hh_job *job) {
    char kbuf[256], jbuf[64];
    const char *klass = job->klass ? job->klass : "?", *jid = job->jid ? job->jid : "";
    if (!job->item) { /* shed after it ran (job.h): the names are in the payload */
        job_names(job->payload, job->len, kbuf, sizeof(kbuf), jbuf, sizeof(jbuf));
        klass = kbuf, jid = jbuf;
    }
    if (recovered_by_peer(env, c, jid) == 0) {
        hh__log(env->ctx->log, HH_LOG_WARN,
                "class=%s jid=%s: its in-progress entry is gone but no process recovered it (Redis lost its "
                "data?): not a lease loss, its outcome is written here",
                klass, jid);
        return 0;
    }
    atomic_fetch_add(&env->ctx->counters->lease_lost, 1);
    hh__log(env->ctx->log, HH_LOG_WARN,
            "class=%s jid=%s: lease lost: the job was recovered by another process (this process was "
            "paused or cut off past its heartbeat TTL); it may have run twice",
            klass, jid);
    return 1;
}

/* ------------------------------------------------------------- reconcile */

typedef struct cand {
    size_t q;
    uint64_t key;
    const redisReply *v; /* into the LRANGE replies */
    int go;              /* push back */
} cand;

static void job_names(const char *payload, size_t len, char *klass, size_t kl, char *jid, size_t jl) {
    json_t *item = json_loadb(payload, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
    const char *k = json_string_value(json_object_get(item, "class"));
    const char *j = json_string_value(json_object_get(item, "jid"));
    hh__strlcpy(klass, k ? k : "?", kl);
    hh__strlcpy(jid, j ? j : "", jl);
    json_decref(item);
}

static void stop_recording(struct hh__lease *l) {
    pthread_mutex_lock(&l->mu);
    l->recording = REC_OFF;
    set_clear(&l->removed);
    set_clear(&l->watch);
    set_clear(&l->added);
    pthread_mutex_unlock(&l->mu);
}

/* Reads every list of ours in one pipeline; NULL on a Redis error or a
 * reply of the wrong shape (logged). */
static redisReply **read_lists(const hh__lease_env *env, hh__conn *c, const char *why) {
    hh__pipe pipe;
    hh__pipe_begin(&pipe, c);
    for (size_t q = 0; q < env->ctx->nqueues; q++) hh__pipe_add(&pipe, "LRANGE %s 0 -1", env->ctx->inprog_keys[q]);
    redisReply **r = hh__pipe_exec(&pipe);
    if (!r) return NULL;
    for (size_t q = 0; q < env->ctx->nqueues; q++) {
        int ok = r[q]->type == REDIS_REPLY_ARRAY;
        for (size_t i = 0; ok && i < r[q]->elements; i++) ok = r[q]->element[i]->type == REDIS_REPLY_STRING;
        if (!ok) {
            hh__log(env->ctx->log, HH_LOG_ERROR, "%s: LRANGE %s: %s", why, env->ctx->inprog_keys[q],
                    r[q]->type == REDIS_REPLY_ERROR ? r[q]->str : "unexpected reply");
            hh__replies_free(r, pipe.n);
            return NULL;
        }
    }
    return r;
}

/* The causes a reconciliation's log line gives for a stranded job: the
 * failed fetches since the one before. None recorded means the reply of a
 * fetch that looked fine was lost on the way (or came after its timeout). */
static const char *stranded_why(unsigned failures) {
    unsigned lost = failures & (1u << HH_FETCH_END_LOST), err = failures & (1u << HH_FETCH_END_ERROR),
             part = failures & (1u << HH_FETCH_END_PARTIAL);
    if (err && !lost && !part) return "a fetch script failed midway with an error reply";
    if (part && !lost && !err) return "a fetch reply was read only in part";
    if (lost && !err && !part) return "a fetch reply was lost";
    if (failures) return "fetches failed: a reply lost, read only in part or an error";
    return "a fetch reply was lost";
}

int hh__lease_reconcile(const hh__lease_env *env, hh__conn *c, int final) {
    if (env->ctx->opts.fetch == HH_FETCH_BASIC || !env->lease) return 0;
    /* our lists are the new owner's now: what no thread here holds is its */
    if (atomic_load(&env->lease->identity_lost)) return 0;
    struct hh__lease *l = env->lease;
    int nproc = env->ctx->opts.concurrency, pushed = 0;
    pthread_mutex_lock(&l->reconcile_mu);
    /* a */
    pthread_mutex_lock(&l->mu);
    set_clear(&l->removed);
    set_clear(&l->watch);
    set_clear(&l->added);
    l->recording = REC_ALL;
    pthread_mutex_unlock(&l->mu);
    /* b */
    redisReply **lists = read_lists(env, c, "reconcile");
    if (!lists) {
        stop_recording(l);
        pthread_mutex_unlock(&l->reconcile_mu);
        return -1;
    }
    size_t total = 0;
    for (size_t q = 0; q < env->ctx->nqueues; q++) total += lists[q]->elements;
    cand *cs = total ? calloc(total, sizeof(*cs)) : NULL;
    unsigned long *mark = calloc((size_t)nproc, sizeof(*mark));
    double *unblocked = calloc((size_t)nproc, sizeof(*unblocked)); /* when, 0 never */
    int *unblock = calloc((size_t)nproc, sizeof(*unblock));
    size_t nc = 0;
    int rc = 0;
    unsigned failures = 0; /* the failed fetches the log lines below give as causes */
    if ((total && !cs) || !mark || !unblocked || !unblock) {
        rc = -1;
        goto done;
    }
    for (size_t q = 0, k = 0; q < env->ctx->nqueues; q++)
        for (size_t i = 0; i < lists[q]->elements; i++, k++) {
            const redisReply *v = lists[q]->element[i];
            cs[k] = (cand){q, hh__lease_key(q, v->str, v->len), v, 0};
        }
    /* c */
    {
        lease_set budget = {0};
        pthread_mutex_lock(&l->mu);
        for (int i = 0; i < nproc; i++) mark[i] = l->begun[i];
        for (size_t k = 0; k < total && rc == 0; k++) {
            lease_ent *b = set_find(&budget, cs[k].key);
            if (!b) {
                long have = set_get(&l->held, cs[k].key) + set_get(&l->removed, cs[k].key);
                /* the count kept is have + 1 so that the entry exists at 0 */
                if (set_add(&budget, cs[k].key, have + 1) != 0) rc = -1;
                b = set_find(&budget, cs[k].key);
                if (!b) break;
            }
            if (b->count > 1) {
                b->count--;
            } else {
                cs[nc++] = cs[k];
                if (set_add(&l->watch, cs[k].key, 1) != 0) rc = -1;
            }
        }
        set_clear(&l->removed);
        l->recording = REC_WATCHED;
        pthread_mutex_unlock(&l->mu);
        set_clear(&budget);
    }
    if (rc != 0 || nc == 0) goto done;
    /* d */
    double deadline = hh__mono() + HH_FETCH_BLOCK_SECONDS + env->ctx->cfg->command_timeout + 2;
    for (;;) {
        int waiting = 0;
        double now = hh__mono();
        pthread_mutex_lock(&l->mu);
        for (int i = 0; i < nproc; i++) {
            unblock[i] = 0;
            if (l->ended[i] >= mark[i]) continue;
            waiting = 1;
            /* again every 0.5 s: the first may reach Redis before the BLMOVE */
            unblock[i] = l->blocking[i] && now - unblocked[i] > 0.5;
        }
        pthread_mutex_unlock(&l->mu);
        if (!waiting) break;
        for (int i = 0; i < nproc; i++) {
            if (!unblock[i]) continue;
            unblocked[i] = now;
            long long id = hh__conn_client_id(&env->ctx->procs[i].conn);
            redisReply *r = id ? hh__conn_cmd(c, "CLIENT UNBLOCK %lld TIMEOUT", id) : NULL;
            if (r) freeReplyObject(r);
        }
        if (hh__mono() > deadline || (!final && atomic_load(&env->ctx->flags->quiet))) {
            rc = -1;
            goto done;
        }
        hh__sleep(0.02);
    }
    /* e */
    {
        lease_set togo = {0};
        pthread_mutex_lock(&l->mu);
        /* every fetch in flight at (b) has ended by now: their failures are
         * the causes of what is pushed back here; later ones get the next */
        failures = l->failures;
        l->failures = 0;
        for (size_t k = 0; k < nc; k++) {
            lease_ent *t = set_find(&togo, cs[k].key);
            if (!t) {
                long n = set_get(&l->watch, cs[k].key) - set_get(&l->added, cs[k].key);
                set_add(&togo, cs[k].key, n + 1); /* + 1: the entry exists at 0 */
                t = set_find(&togo, cs[k].key);
            }
            if (t && t->count > 1) {
                cs[k].go = 1;
                t->count--;
            }
        }
        l->recording = REC_OFF;
        set_clear(&l->removed);
        set_clear(&l->watch);
        set_clear(&l->added);
        pthread_mutex_unlock(&l->mu);
        set_clear(&togo);
    }
    /* f */
    for (size_t k = 0; k < nc; k++) {
        if (!cs[k].go) continue;
        const redisReply *v = cs[k].v;
        size_t q = cs[k].q;
        const char *keys[2] = {env->ctx->inprog_keys[q], env->ctx->queue_keys[q]};
        size_t klen[2] = {sdslen(env->ctx->inprog_keys[q]), sdslen(env->ctx->queue_keys[q])};
        const char *args[1] = {v->str};
        size_t alen[1] = {v->len};
        redisReply *r = hh__conn_eval(c, HH_SCRIPT_REQUEUE, 2, keys, klen, 1, args, alen);
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            hh__log(env->ctx->log, HH_LOG_ERROR, "reconcile: pushing back to queue %s failed: %s", env->ctx->queues[q],
                    r && r->type == REDIS_REPLY_ERROR ? r->str : hh__conn_last_error(c));
            if (r) freeReplyObject(r);
            rc = -1;
            break;
        }
        long long moved = r->integer;
        freeReplyObject(r);
        if (moved != 1) continue;
        char klass[128], jid[64];
        job_names(v->str, v->len, klass, sizeof(klass), jid, sizeof(jid));
        hh__log(env->ctx->log, HH_LOG_WARN,
                "reconcile: class=%s jid=%s queue=%s: in this process's in-progress list but held by no "
                "thread (%s%s); pushed back to the queue",
                klass, jid, env->ctx->queues[q], stranded_why(failures), final ? ", or the stop left it" : "");
        atomic_fetch_add(&env->ctx->counters->reconciled, 1);
        pushed++;
    }
done:
    stop_recording(l);
    free(cs);
    free(mark);
    free(unblocked);
    free(unblock);
    hh__replies_free(lists, (int)env->ctx->nqueues);
    pthread_mutex_unlock(&l->reconcile_mu);
    return rc != 0 ? -1 : pushed;
}

void hh__lease_tick(const hh__lease_env *env, hh__conn *c) {
    struct hh__lease *l = env->lease;
    if (!l || env->ctx->opts.fetch == HH_FETCH_BASIC) return;
    double now = hh__mono();
    pthread_mutex_lock(&l->mu);
    int due = now >= l->reconcile_at;
    if (due) {
        l->reconcile_at = now + env->ctx->opts.recovery_interval;
        if (l->again_at > 0) {
            ask_reconcile(l, l->again_at);
            l->again_at = 0;
        }
    }
    pthread_mutex_unlock(&l->mu);
    if (!due) return;
    if (hh__lease_reconcile(env, c, 0) < 0) {
        pthread_mutex_lock(&l->mu);
        ask_reconcile(l, hh__mono() + 1); /* try again soon */
        pthread_mutex_unlock(&l->mu);
    }
}

/* ------------------------------------------------------------- outage rule */

double hh__lease_gate_seconds(const hh__lease_env *env) {
    double two = 2 * env->ctx->opts.heartbeat_interval;
    return (two > 10 ? two : 10) + LEASE_BACKOFF_CAP + LEASE_MARGIN;
}

int hh__lease_peers_judgeable(const hh__lease_env *env, double *left) {
    struct hh__lease *l = env->lease;
    if (!l) return 1;
    double now = boot_clock(), gate = hh__lease_gate_seconds(env);
    double gap = 2 * env->ctx->opts.heartbeat_interval + env->ctx->cfg->command_timeout;
    pthread_mutex_lock(&l->mu);
    double since = l->streak_since, last = l->last_ok;
    pthread_mutex_unlock(&l->mu);
    double wait;
    if (!since || now - last > gap) wait = gate; /* beats failing or stale */
    else wait = gate - (now - since);
    if (left) *left = wait > 0 ? wait : 0;
    return wait <= 0;
}

/* ------------------------------------------------------------- lease loss */

typedef struct suspect {
    int proc;            /* running on this thread, or -1: in the pending buffer */
    unsigned long runs;  /* the thread's run serial at the snapshot */
    const char *payload; /* pending: the buffered payload (identity only) */
    uint64_t key;
    char klass[128], jid[64];
    int lost;
} suspect;

/* Whether a peer recovered the job: HH_LUA_RECOVER counts every recovery
 * in hiredhand:recoveries:<jid>. 1 yes, 0 no, -1 Redis error. */
static int recovered_by_peer(const hh__lease_env *env, hh__conn *c, const char *jid) {
    if (!*jid) return 1; /* nothing to ask by; an entry gone while we live: assume a peer */
    sds ck = hh__key(env->ctx->keys, HH_K_RECOVERIES);
    ck = sdscatfmt(ck, ":%s", jid);
    redisReply *r = hh__conn_cmd(c, "EXISTS %s", ck);
    sdsfree(ck);
    int rc = r && r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : -1;
    if (r) freeReplyObject(r);
    return rc;
}

typedef struct suspects_add {
    suspect *s;
    size_t *ns, cap;
} suspects_add;

/* For hh__buffer_each: a buffered held job is a suspect. */
static void add_buffered(const hh__fetched *f, void *udata) {
    suspects_add *a = udata;
    if (!f->lease || *a->ns >= a->cap) return;
    suspect *x = &a->s[(*a->ns)++];
    *x = (suspect){.proc = -1, .payload = f->payload, .key = f->lease};
    job_names(f->payload, f->len, x->klass, sizeof(x->klass), x->jid, sizeof(x->jid));
}

/* Checks every running and buffered job against our lists (see the top of
 * the file). Returns 0, or -1 to try again at the next beat. */
static int lease_check(const hh__lease_env *env, hh__conn *c) {
    int nproc = env->ctx->opts.concurrency;
    size_t cap = (size_t)nproc + hh__buffer_cap(env->buffer), ns = 0;
    suspect *s = calloc(cap ? cap : 1, sizeof(*s));
    if (!s) return -1;
    for (int i = 0; i < nproc; i++) {
        hh__processor *p = &env->ctx->procs[i];
        pthread_mutex_lock(&p->mu);
        if (p->job && !p->abandoned && !p->lease_lost && p->job->lease) {
            s[ns] = (suspect){.proc = i, .runs = p->runs, .key = p->job->lease};
            hh__strlcpy(s[ns].klass, p->job->klass ? p->job->klass : "?", sizeof(s[ns].klass));
            hh__strlcpy(s[ns].jid, p->job->jid ? p->job->jid : "", sizeof(s[ns].jid));
            ns++;
        }
        pthread_mutex_unlock(&p->mu);
    }
    suspects_add sa = {s, &ns, cap};
    hh__buffer_each(env->buffer, add_buffered, &sa);
    if (!ns) {
        free(s);
        return 0;
    }
    redisReply **lists = read_lists(env, c, "lease check");
    if (!lists) {
        free(s);
        return -1;
    }
    lease_set want = {0}, found = {0};
    for (size_t k = 0; k < ns; k++) set_add(&want, s[k].key, 1);
    for (size_t q = 0; q < env->ctx->nqueues; q++)
        for (size_t i = 0; i < lists[q]->elements; i++) {
            uint64_t key = hh__lease_key(q, lists[q]->element[i]->str, lists[q]->element[i]->len);
            if (set_find(&want, key)) set_add(&found, key, 1);
        }
    hh__replies_free(lists, (int)env->ctx->nqueues);
    set_clear(&want);
    /* Only jobs still where they were (no removal of theirs can have been in
     * flight) are judged; running ones take the copies first. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < ns; k++) {
            if ((pass == 0) != (s[k].proc >= 0)) continue;
            int stable = 0;
            if (s[k].proc >= 0) {
                hh__processor *p = &env->ctx->procs[s[k].proc];
                pthread_mutex_lock(&p->mu);
                stable = p->job && p->runs == s[k].runs && !p->abandoned;
                pthread_mutex_unlock(&p->mu);
            } else {
                stable = hh__buffer_has(env->buffer, s[k].payload, s[k].key);
            }
            if (!stable) continue;
            lease_ent *e = set_find(&found, s[k].key);
            if (e && e->count > 0) e->count--;
            else s[k].lost = 1;
        }
    }
    set_clear(&found);
    int rc = 0;
    for (size_t k = 0; k < ns && rc == 0; k++) {
        if (!s[k].lost) continue;
        int peer = recovered_by_peer(env, c, s[k].jid);
        if (peer < 0) {
            rc = -1;
            break;
        }
        if (!peer) {
            hh__log(env->ctx->log, HH_LOG_WARN,
                    "class=%s jid=%s: its in-progress entry is gone but no process recovered it (Redis lost "
                    "its data?): it %s here",
                    s[k].klass, s[k].jid, s[k].proc >= 0 ? "keeps running" : "runs");
            if (s[k].proc >= 0) { /* its ack will remove nothing: not a lease loss */
                hh__processor *p = &env->ctx->procs[s[k].proc];
                pthread_mutex_lock(&p->mu);
                if (p->job && p->runs == s[k].runs) p->job->ack_uncertain = 1;
                pthread_mutex_unlock(&p->mu);
            }
            continue;
        }
        int stop = env->ctx->opts.lease_lost == HH_LEASE_LOST_STOP;
        if (s[k].proc >= 0) {
            hh__processor *p = &env->ctx->procs[s[k].proc];
            int marked = 0;
            pthread_mutex_lock(&p->mu);
            if (p->job && p->runs == s[k].runs && !p->abandoned) {
                p->lease_lost = 1;
                if (stop) atomic_store(&p->cancelled, 1);
                marked = 1;
            }
            pthread_mutex_unlock(&p->mu);
            if (!marked) continue; /* it finished meanwhile: its ack reports it */
            atomic_fetch_add(&env->ctx->counters->lease_lost, 1);
            hh__log(env->ctx->log, HH_LOG_WARN,
                    "class=%s jid=%s: lease lost: the job was recovered by another process; %s", s[k].klass, s[k].jid,
                    stop ? "its handler here is told to stop (--lease-lost stop), its outcome is not written"
                         : "its handler here runs to the end (--lease-lost finish), its outcome is not written");
        } else {
            hh__fetched dropped = {0};
            hh__buffer_drop(env->buffer, s[k].payload, s[k].key, &dropped);
            if (!dropped.payload) continue; /* a thread took it meanwhile */
            hh__lease_finish_fetched(env, &dropped);
            atomic_fetch_add(&env->ctx->counters->lease_lost, 1);
            hh__log(env->ctx->log, HH_LOG_WARN,
                    "class=%s jid=%s: lease lost: the job was recovered by another process; dropped from "
                    "this process's buffer before it started",
                    s[k].klass, s[k].jid);
        }
    }
    free(s);
    return rc;
}

int hh__lease_identity_lost(const hh__lease_env *env, const char *by) {
    struct hh__lease *l = env->lease;
    if (!l || env->ctx->opts.fetch == HH_FETCH_BASIC) return 0; /* no lists to share */
    if (atomic_exchange(&l->identity_lost, 1)) return 2;
    int stop = env->ctx->opts.lease_lost == HH_LEASE_LOST_STOP;
    hh__log(env->ctx->log, HH_LOG_ERROR,
            "identity %s was taken over by a newer process (%s): every job here has lost its lease; this process "
            "stops beating and stops, writing nothing more to its in-progress lists",
            env->ctx->identity, by);
    for (int i = 0; i < env->ctx->opts.concurrency; i++) {
        hh__processor *p = &env->ctx->procs[i];
        char klass[128] = "?", jid[64] = "";
        int marked = 0;
        pthread_mutex_lock(&p->mu);
        if (p->job && !p->abandoned && !p->lease_lost) {
            p->lease_lost = 1;
            if (stop) atomic_store(&p->cancelled, 1);
            hh__strlcpy(klass, p->job->klass ? p->job->klass : "?", sizeof(klass));
            hh__strlcpy(jid, p->job->jid ? p->job->jid : "", sizeof(jid));
            marked = 1;
        }
        pthread_mutex_unlock(&p->mu);
        if (!marked) continue;
        atomic_fetch_add(&env->ctx->counters->lease_lost, 1);
        hh__log(env->ctx->log, HH_LOG_WARN, "class=%s jid=%s: lease lost: identity %s taken over; %s", klass, jid,
                env->ctx->identity,
                stop ? "its handler here is told to stop (--lease-lost stop), its outcome is not written"
                     : "its handler here runs to the end (--lease-lost finish), its outcome is not written");
    }
    return 1;
}

int hh__lease_identity_is_lost(const hh__lease_env *env) {
    return env->lease && atomic_load(&env->lease->identity_lost);
}

void hh__lease_beat(const hh__lease_env *env, hh__conn *c, int ok, int hash_expired) {
    struct hh__lease *l = env->lease;
    if (!l) return;
    double now = boot_clock(), gap = 2 * env->ctx->opts.heartbeat_interval + env->ctx->cfg->command_timeout;
    pthread_mutex_lock(&l->mu);
    if (!ok) {
        l->streak_since = 0;
    } else {
        if (!l->streak_since || now - l->last_ok > gap) l->streak_since = now;
        l->last_ok = now;
    }
    if (ok && hash_expired) {
        /* This beat and the next two: a recovery that was running when the
         * hash came back is seen by the later checks. */
        l->check_beats = 3;
        l->fetchers_dirty = 1;
        ask_reconcile(l, hh__mono());
    }
    int check = ok && l->check_beats > 0, fetchers = ok && l->fetchers_dirty;
    pthread_mutex_unlock(&l->mu);
    if (env->ctx->opts.fetch == HH_FETCH_BASIC) return;
    if (fetchers) {
        sds fk = hh__key(env->ctx->keys, HH_K_FETCHERS);
        redisReply *r = hh__conn_cmd(c, "SADD %s %s", fk, env->ctx->identity);
        sdsfree(fk);
        if (r && r->type == REDIS_REPLY_INTEGER) {
            pthread_mutex_lock(&l->mu);
            l->fetchers_dirty = 0;
            pthread_mutex_unlock(&l->mu);
            if (r->integer > 0)
                hh__log(env->ctx->log, HH_LOG_INFO, "registered %s in hiredhand:fetchers again", env->ctx->identity);
        }
        if (r) freeReplyObject(r);
    }
    if (check && lease_check(env, c) == 0) {
        pthread_mutex_lock(&l->mu);
        if (l->check_beats > 0) l->check_beats--;
        pthread_mutex_unlock(&l->mu);
    }
}
