/* job_metrics.c -- see job_metrics.h. Owns the per-class counts of the
 * runs since the last flush (a small hash table under one mutex: a worker
 * thread holds it for one lookup and a few additions per job) and their
 * write, which follows Sidekiq's ExecutionTracker#flush and
 * Histogram#persist of 7.3 and 8.1 key for key.
 * Keys written (keys.c spells them), each for the UTC minute of the flush:
 *   7.x: <Class>-<DD>-<HH>:<M>  (BITFIELD OVERFLOW SAT INCRBY u16, EXPIRE 8 h)
 *        j|<YYYYMMDD>|<H>:<M>   (HINCRBY <Class>|p|f|ms, EXPIRE 8 h)
 *   8.x: h|<Class>-<D>-<H>:<M>  (as 7.x's histogram)
 *        j|<YYMMDD>|<H>:<M0>    (ten minutes: HINCRBY, EXPIRE 3 days)
 *        j|<YYMMDD>|<H>:<MM>    (HINCRBY, EXPIRE 8 h)
 * Sidekiq processes add into the same fields and bitfields, so the Metrics
 * tab shows the sum of the Ruby and hiredhand runs of a class. */
#include "job_metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t edges[HH_JM_BUCKETS - 1] = {
    20,   30,   45,   65,    100,   150,   225,   335,   500,    750,    1100,   1700,   2500,
    3800, 5750, 8500, 13000, 20000, 30000, 45000, 65000, 100000, 150000, 225000, 335000,
};

uint64_t hh__job_metrics_edge(int i) { return i >= 0 && i < HH_JM_BUCKETS - 1 ? edges[i] : UINT64_MAX; }

int hh__job_metrics_bucket(uint64_t ms) {
    int i = 0;
    while (i < HH_JM_BUCKETS - 1 && ms >= edges[i]) i++;
    return i;
}

/* One class's counts since the last flush. */
typedef struct jm_class {
    struct jm_class *chain; /* same hash slot */
    struct jm_class *next;  /* recording order: a flush writes in it */
    uint64_t p, f, ms, ok;  /* runs, failures, ms and count of the successful */
    uint64_t hist[HH_JM_BUCKETS];
    size_t len;
    char name[]; /* len bytes, then NUL */
} jm_class;

typedef struct jm_table {
    jm_class **slots;
    size_t nslots, n;
    jm_class *first, *last;
} jm_table;

struct hh__job_metrics {
    pthread_mutex_t mu; /* guards cur and last_error */
    jm_table cur;
    const hh__keys *keys;
    const hh__logger *log;
    int layouts;
    char last_error[256]; /* the flushes' run of errors; "" when none */
};

static void table_free(jm_table *t) {
    for (jm_class *c = t->first, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static uint64_t hash(const char *s, size_t len) { /* FNV-1a */
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* Doubles the slots once a table holds as many classes as slots. */
static int grow(jm_table *t) {
    size_t n = t->nslots ? t->nslots * 2 : 16;
    jm_class **slots = calloc(n, sizeof(*slots));
    if (!slots) return -1;
    for (jm_class *c = t->first; c; c = c->next) {
        size_t i = hash(c->name, c->len) & (n - 1);
        c->chain = slots[i];
        slots[i] = c;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

/* The class's entry, created if new; NULL when out of memory. */
static jm_class *lookup(jm_table *t, const char *klass, size_t len) {
    if (t->n >= t->nslots && grow(t) != 0 && !t->nslots) return NULL;
    size_t i = hash(klass, len) & (t->nslots - 1);
    for (jm_class *c = t->slots[i]; c; c = c->chain)
        if (c->len == len && memcmp(c->name, klass, len) == 0) return c;
    jm_class *c = calloc(1, sizeof(*c) + len + 1);
    if (!c) return NULL;
    memcpy(c->name, klass, len);
    c->len = len;
    c->chain = t->slots[i];
    t->slots[i] = c;
    if (t->last) t->last->next = c;
    else t->first = c;
    t->last = c;
    t->n++;
    return c;
}

hh__job_metrics *hh__job_metrics_new(const hh__keys *keys, const hh__logger *log, int layouts) {
    hh__job_metrics *jm = calloc(1, sizeof(*jm));
    if (!jm) return NULL;
    pthread_mutex_init(&jm->mu, NULL);
    jm->keys = keys;
    jm->log = log;
    jm->layouts = layouts;
    return jm;
}

void hh__job_metrics_free(hh__job_metrics *jm) {
    if (!jm) return;
    table_free(&jm->cur);
    pthread_mutex_destroy(&jm->mu);
    free(jm);
}

void hh__job_metrics_record(hh__job_metrics *jm, const char *klass, size_t len, uint64_t ms, int failed) {
    if (!jm || !klass) return;
    pthread_mutex_lock(&jm->mu);
    jm_class *c = lookup(&jm->cur, klass, len);
    if (c) { /* out of memory: this run is not counted, as a dropped flush */
        c->p++;
        if (failed) {
            c->f++;
        } else {
            /* Sidekiq times only successful runs: a failure's time says
             * little about the job's speed */
            c->ok++;
            c->ms += ms;
            c->hist[hh__job_metrics_bucket(ms)]++;
        }
    }
    pthread_mutex_unlock(&jm->mu);
}

/* Sidekiq's wrappers for Active Job (job.c knows their names): the class
 * the handler was chosen by differs from "class" only for them. */
static int run_by_wrapper(const hh_job *job) {
    size_t len;
    const char *shown = hh_job_handler_class(job, &len);
    return shown && job->klass && (len != job->klass_len || memcmp(shown, job->klass, len) != 0);
}

void hh__job_metrics_ran(hh__job_metrics *jm, const hh_job *job, int has_handler, double elapsed_s, int failed) {
    if (!jm || !job->item || (!has_handler && !run_by_wrapper(job))) return;
    /* hash["wrapped"] || hash["class"]: "wrapped" of any job, if a string */
    json_t *w = json_object_get(job->item, "wrapped");
    const char *klass = json_is_string(w) ? json_string_value(w) : job->klass;
    size_t len = json_is_string(w) ? json_string_length(w) : job->klass_len;
    uint64_t ms = elapsed_s > 0 ? (uint64_t)(elapsed_s * 1000.0) : 0;
    hh__job_metrics_record(jm, klass, len, ms, failed);
}

/* --------------------------------------------------------------- commands */

typedef struct cmds {
    hh__jm_cmd *v;
    int n, cap, oom;
} cmds;

/* Starts a command of up to max arguments with the first one, verb. */
static hh__jm_cmd *cmd_new(cmds *cs, const char *verb, int max) {
    if (cs->oom) return NULL;
    if (cs->n == cs->cap) {
        int cap = cs->cap ? cs->cap * 2 : 32;
        hh__jm_cmd *v = realloc(cs->v, (size_t)cap * sizeof(*v));
        if (!v) {
            cs->oom = 1;
            return NULL;
        }
        cs->v = v;
        cs->cap = cap;
    }
    hh__jm_cmd *c = &cs->v[cs->n];
    c->argc = 0;
    if (!(c->argv = calloc((size_t)max, sizeof(sds)))) {
        cs->oom = 1;
        return NULL;
    }
    cs->n++;
    if (!(c->argv[c->argc++] = sdsnew(verb))) cs->oom = 1;
    return c;
}

/* Appends an argument (a copy of len bytes). */
static void arg(cmds *cs, hh__jm_cmd *c, const char *s, size_t len) {
    if (!c || cs->oom) return;
    if (!(c->argv[c->argc++] = sdsnewlen(s, len))) cs->oom = 1;
}

static void arg_str(cmds *cs, hh__jm_cmd *c, const char *s) { arg(cs, c, s, strlen(s)); }

static void arg_u64(cmds *cs, hh__jm_cmd *c, uint64_t v) {
    char buf[24];
    int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    arg(cs, c, buf, (size_t)n);
}

/* Takes ownership of key (NULL: out of memory). */
static void expire(cmds *cs, sds key, int ttl) {
    hh__jm_cmd *c = key ? cmd_new(cs, "EXPIRE", 3) : NULL;
    if (!key) cs->oom = 1;
    if (c) {
        arg(cs, c, key, sdslen(key));
        arg_u64(cs, c, (uint64_t)ttl);
    }
    sdsfree(key);
}

/* Histogram#persist: the non-zero buckets in one BITFIELD, unsigned 16-bit
 * counters that saturate at 65535 rather than wrap, then the TTL. */
static void histogram(cmds *cs, const jm_class *k, sds key) {
    hh__jm_cmd *c = key ? cmd_new(cs, "BITFIELD", 4 + 4 * HH_JM_BUCKETS) : NULL;
    if (!key) cs->oom = 1;
    if (c) {
        arg(cs, c, key, sdslen(key));
        arg_str(cs, c, "OVERFLOW");
        arg_str(cs, c, "SAT");
        for (int i = 0; i < HH_JM_BUCKETS; i++) {
            if (!k->hist[i]) continue;
            char at[8];
            snprintf(at, sizeof(at), "#%d", i);
            arg_str(cs, c, "INCRBY");
            arg_str(cs, c, "u16");
            arg_str(cs, c, at);
            arg_u64(cs, c, k->hist[i]);
        }
    }
    expire(cs, key, HH_JM_TTL);
}

/* One counters hash: HINCRBY of each class's fields, then the TTL. The
 * fields are Sidekiq's: <Class>|p for every class, <Class>|f once one
 * failed, <Class>|ms once one succeeded (even at 0 ms). */
static void counters(cmds *cs, const jm_table *t, sds key, int ttl) {
    if (!key) cs->oom = 1;
    for (const jm_class *k = t->first; key && k; k = k->next) {
        const char *suffix[3] = {"|p", "|f", "|ms"};
        uint64_t v[3] = {k->p, k->f, k->ms};
        int has[3] = {1, k->f > 0, k->ok > 0};
        for (int i = 0; i < 3; i++) {
            if (!has[i]) continue;
            hh__jm_cmd *c = cmd_new(cs, "HINCRBY", 4);
            if (!c) break;
            arg(cs, c, key, sdslen(key));
            sds field = sdsnewlen(k->name, k->len);
            if (field) field = sdscat(field, suffix[i]);
            if (!field) cs->oom = 1;
            else arg(cs, c, field, sdslen(field));
            sdsfree(field);
            arg_u64(cs, c, v[i]);
        }
    }
    expire(cs, key, ttl);
}

void hh__jm_cmds_free(hh__jm_cmd *v, int n) {
    for (int i = 0; v && i < n; i++) {
        for (int j = 0; j < v[i].argc; j++) sdsfree(v[i].argv[j]);
        free(v[i].argv);
    }
    free(v);
}

hh__jm_cmd *hh__job_metrics_take(hh__job_metrics *jm, double now, int *n) {
    *n = 0;
    if (!jm) return NULL;
    pthread_mutex_lock(&jm->mu);
    jm_table t = jm->cur;
    memset(&jm->cur, 0, sizeof(jm->cur));
    pthread_mutex_unlock(&jm->mu);
    if (!t.n || !jm->layouts) {
        table_free(&t);
        return NULL;
    }
    time_t at = (time_t)now;
    const hh__keys *keys = jm->keys;
    int v7 = jm->layouts & HH_JOB_METRICS_7, v8 = jm->layouts & HH_JOB_METRICS_8;
    cmds cs = {0};
    /* the histograms first, then the counters, as Sidekiq's flush */
    for (const jm_class *k = t.first; k && !cs.oom; k = k->next) {
        if (!k->ok) continue; /* only successful runs are timed */
        if (v7) histogram(&cs, k, hh__key_jm_hist7(keys, k->name, k->len, at));
        if (v8) histogram(&cs, k, hh__key_jm_hist8(keys, k->name, k->len, at));
    }
    if (v7 && !cs.oom) counters(&cs, &t, hh__key_jm_counts7(keys, at), HH_JM_TTL);
    if (v8 && !cs.oom) counters(&cs, &t, hh__key_jm_rollup8(keys, at), HH_JM_ROLLUP_TTL);
    if (v8 && !cs.oom) counters(&cs, &t, hh__key_jm_counts8(keys, at), HH_JM_TTL);
    table_free(&t);
    if (cs.oom) {
        hh__jm_cmds_free(cs.v, cs.n);
        hh__log(jm->log, HH_LOG_WARN, "job metrics: out of memory: this interval's counts dropped");
        return NULL;
    }
    *n = cs.n;
    return cs.v;
}

/* ------------------------------------------------------------------ flush */

/* Logs the start of a run of refusals and each change of error, then its
 * end. Locked: the stop's flush may meet a heartbeat stuck in a late one. */
static void note(hh__job_metrics *jm, const char *err) {
    pthread_mutex_lock(&jm->mu);
    if (!err) {
        if (jm->last_error[0])
            hh__log(jm->log, HH_LOG_INFO, "job metrics: written again (the Metrics tab misses the runs of the gap)");
        jm->last_error[0] = '\0';
    } else {
        if (strcmp(jm->last_error, err) != 0)
            hh__log(jm->log, HH_LOG_WARN, "job metrics not written (dropped, as Sidekiq drops them): %s", err);
        hh__strlcpy(jm->last_error, err, sizeof(jm->last_error));
    }
    pthread_mutex_unlock(&jm->mu);
}

int hh__job_metrics_flush(hh__job_metrics *jm, hh__conn *c, double now) {
    int n = 0;
    hh__jm_cmd *v = hh__job_metrics_take(jm, now, &n);
    if (!v) return 0;
    /* In a transaction, so a refusal (OOM over maxmemory) writes nothing
     * rather than some of the keys, and a reader never sees half a flush. */
    hh__pipe pipe;
    hh__pipe_begin(&pipe, c);
    hh__pipe_add(&pipe, "MULTI");
    for (int i = 0; i < n; i++) {
        size_t lens[4 + 4 * HH_JM_BUCKETS];
        for (int j = 0; j < v[i].argc; j++) lens[j] = sdslen(v[i].argv[j]);
        hh__pipe_addargv(&pipe, v[i].argc, (const char **)v[i].argv, lens);
    }
    hh__pipe_add(&pipe, "EXEC");
    hh__jm_cmds_free(v, n);
    redisReply **r = hh__pipe_exec(&pipe);
    char why[256];
    int rc = 0;
    if (!r) {
        note(jm, hh__conn_error_or(c, "Redis unreachable"));
        return -1;
    }
    if (hh__tx_check(r, 0, pipe.n - 1, why, sizeof(why), NULL) != 0) rc = -1;
    note(jm, rc ? why : NULL);
    hh__replies_free(r, pipe.n);
    return rc;
}
